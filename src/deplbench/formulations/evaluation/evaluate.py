"""Exact evaluation of a plan: objective (2), constraints (4)–(6), and the
quantile constraint (3) judged out-of-sample.

Every plan from every algorithm goes through :func:`evaluate_plan`. The hard
constraints are checked exactly; the ω-quantile of the final loss ℓ(K) is
estimated from fresh Monte-Carlo trajectories (the out-of-sample stream of
:class:`~deplbench.formulations.model.scenarios.ScenarioSampler`) together with a
distribution-free confidence interval from order statistics, and the plan
gets a verdict:

``feasible``   the whole interval lies at or below ℓmax;
``infeasible`` the whole interval lies above ℓmax;
``undecided``  the interval straddles ℓmax (more samples would tell).

With too few draws for an end (:mod:`~deplbench.formulations.evaluation.quantile_ci`)
that end is infinite: a one-sided interval never says ``feasible`` (no upper end).

That verdict is a Monte Carlo *estimate* (``mc_verdict``). A plan whose
random terms are all point masses is evaluated exactly (one trajectory, an
interval of zero width).

Beside it, ``mc_certified_verdict`` states at the same confidence what the
exact Clopper–Pearson bounds on the violation probability P(ℓ(K) > ℓmax)
certify: ``certified feasible`` / ``not certified`` / ``certified
infeasible`` (``formulations.evaluation.binomial``; Luedtke & Ahmed 2008,
Sec. 4). Each such statement is one-sided at level ``confidence``: it is
wrong with probability at most 1 − ``confidence`` for that one plan, so over
many plans up to about a share 1 − ``confidence`` of the certificates may be
wrong (a plan whose violation probability is just below 1 − ω is now and
then "certified infeasible" by chance). It is about (3) alone: a broken
(4)–(6) is certain, at no level (``verdict_basis`` ``"constraints"``).

With ``exact=True`` the rigorous bounds of
:mod:`~deplbench.formulations.evaluation.exact_violation` (no sampling) are
added, and where they decide, the proof wins: ``verdict``,
``certified_verdict`` and ``feasible`` follow it (``verdict_basis`` =
``"exact"``), while ``mc_verdict`` and ``mc_certified_verdict`` keep the
Monte Carlo statements as the independent cross-check. Otherwise
``verdict``/``certified_verdict`` are the Monte Carlo ones
(``verdict_basis`` = ``"monte_carlo"``; ``"deterministic"`` for a plan of
point masses, whose one trajectory is exact; ``"constraints"`` for a plan
breaking (4)–(6), infeasible whatever its quantile).

The per-epoch mean and 1st/99th percentiles of ℓ(k), k = 0..K, are returned
for the paper's Fig. 9.

References
----------
DepL paper, eqs. (1)–(6) and (8). The interval: Hahn & Meeker, *Statistical
Intervals*, distribution-free quantile intervals from the binomial law of the
number of samples below the quantile.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.evaluation.binomial import (
    CERTIFIED_FEASIBLE,
    CERTIFIED_INFEASIBLE,
    NOT_CERTIFIED,
    clopper_pearson_lower,
    clopper_pearson_upper,
)
from deplbench.formulations.evaluation.exact_violation import (
    PROVEN_FEASIBLE,
    PROVEN_INFEASIBLE,
    UNDECIDED,
    ExactSettings,
    ExactUnavailable,
    violation_bounds,
)
from deplbench.formulations.evaluation.instance_check import check_instance
from deplbench.formulations.evaluation.means import mark_undefined_mean
from deplbench.formulations.evaluation.memory import (
    MEMORY_BUDGET,
    band_chunk,
    bands_kept,
    block_size,
    budget_bytes,
    check_evaluation_memory,
    chunked_bands,
)
from deplbench.formulations.evaluation.quantile_ci import CI_METHOD, QuantileInterval, order_statistic_ci
from deplbench.formulations.evaluation.settings import EVALUATE_SAMPLES as SAMPLES
from deplbench.formulations.evaluation.settings import MIN_SAMPLES, check_evaluation, check_seed
from deplbench.formulations.model.allocation import TIME_RTOL, epoch_parameters
from deplbench.formulations.model.plan import Plan, check_allocations, check_plan_names, datasets_loc, parse_plan
from deplbench.formulations.model.scenarios import OUT_OF_SAMPLE, loss_threshold, quantile_rank

#: ``ci_method`` of a plan whose random terms are all point masses.
CI_METHOD_DETERMINISTIC = "exact (every random term a point mass: one trajectory)"
#: ``violation_bounds_method``: how ``violation_lb``/``violation_ub`` are built.
VIOLATION_BOUNDS_METHOD = "Clopper-Pearson (exact binomial), each bound one-sided at confidence"
#: ``verdict_basis``: what decided ``verdict`` and ``certified_verdict``.
BASIS_EXACT = "exact"                  # the rigorous bounds of exact_violation (a proof)
BASIS_DETERMINISTIC = "deterministic"  # point masses only: the one trajectory is exact
BASIS_MONTE_CARLO = "monte_carlo"      # the Monte Carlo statements (estimate / certificate at a level)
BASIS_CONSTRAINTS = "constraints"      # a hard constraint (4)-(6) is broken: infeasible, checked exactly


@dataclass
class Evaluation:
    """Everything :func:`evaluate_plan` measured. ``to_dict()`` is JSON-ready.

    Attributes
    ----------
    cost, compute_cost, transfer_cost : float
        Objective (2) and its two parts.
    time : float
        The plan's training time, constraint (4).
    epochs : int
    violations : list of str
        The broken constraints among (4)–(6), one message each.
    constraints_ok : bool
    quantile : float
        The out-of-sample ω-quantile of ℓ(K) (a Monte Carlo estimate).
    expected_loss, expected_loss_note : float or None, str or None
        The Monte Carlo mean of ℓ(K), an estimate; None, the note naming the law, when a law the
        loss sums has no finite mean (E[ℓ(K)] does not exist; ``mean`` None from where it enters).
    quantile_ci, quantile_ci_level : tuple of float, float
        Its interval as ``ci_method`` says (zero width when exact; an end infinite when the draws are too
        few for it) and a coverage it is guaranteed: ``confidence``, or the exact one (≥ it) if one-sided.
    verdict : str
        ``"feasible"`` / ``"infeasible"`` / ``"undecided"``: ``"infeasible"`` when the plan breaks
        (4)–(6) (basis ``"constraints"``), else the quantile constraint (3), decided by the
        exact bounds where they decide (basis ``"exact"``), else the estimate ``mc_verdict``.
    feasible : bool
        The constraints (4)–(6) hold and ``verdict`` is ``"feasible"``.
    mc_verdict : str
        The Monte Carlo estimate: the interval against ℓmax (module docstring).
    samples, seed, confidence : int, int, float
        The out-of-sample stream and the intervals' level.
    ci_method : str
        How ``quantile_ci`` is built (:data:`CI_METHOD`).
    violation_count, violation_lb, violation_ub : int, float, float
        Draws with ℓ(K) > ℓmax and the Clopper–Pearson bounds on the
        violation probability, each one-sided at ``confidence``
        (``violation_bounds_method``); ``mc_certified_verdict`` says what
        they certify at that level.
    certified_verdict : str
        ``mc_certified_verdict``, unless something certain decides: a broken
        constraint (4)–(6) ("certified infeasible", with certainty rather than
        at a level; basis ``"constraints"``), or the exact bounds, a proof
        ("certified feasible" when proven feasible, "certified infeasible"
        when proven infeasible).
    violation_lo, violation_hi, quantile_lo, quantile_hi, exact_verdict
        Bounds computed without sampling (``exact=True``): proofs, no level.
    verdict_basis : str
        What decided ``verdict`` and ``certified_verdict``: ``"constraints"`` (a broken
        constraint (4)–(6)), ``"exact"``, ``"deterministic"`` or ``"monte_carlo"``. Every
        Clopper–Pearson certificate holds at its level for its one plan only (module docstring).
    """

    cost: float
    compute_cost: float
    transfer_cost: float
    time: float
    epochs: int
    violations: list[str]
    constraints_ok: bool
    quantile: float
    quantile_ci: tuple[float, float]
    verdict: str
    feasible: bool
    expected_loss: float | None
    loss_max: float
    omega: float
    samples: int
    seed: int
    confidence: float
    exact: bool
    mean: list[float | None] = field(default_factory=list)
    p01: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    epochs_per_model: dict[str, int] = field(default_factory=dict)
    cost_per_model: dict[str, float] = field(default_factory=dict)
    #: Draws with ℓ(K) > ℓmax, and the exact Clopper–Pearson bounds on the
    #: violation probability at ``confidence`` (``formulations.evaluation.binomial``).
    violation_count: int | None = None
    violation_ub: float | None = None
    violation_lb: float | None = None
    violation_ub_level: float | None = None
    certified_verdict: str | None = None
    #: Rigorous bounds on P(ℓ(K) > ℓmax) and on the ω-quantile, computed with no
    #: sampling (``formulations.evaluation.exact_violation``; ``exact=True``), and the
    #: deterministic verdict "proven feasible" / "proven infeasible" /
    #: "undecided" (a plan breaking (4)–(6) is "proven infeasible"). None, with
    #: ``exact_reason``, when not requested or not computable within the budget.
    violation_lo: float | None = None
    violation_hi: float | None = None
    quantile_lo: float | None = None
    quantile_hi: float | None = None
    exact_verdict: str | None = None
    exact_reason: str | None = None
    #: Whether the exact bounds' precision budget (``ExactSettings.max_work``)
    #: ran out before their width reached ``exact_target_width`` or before the
    #: verdict was decided: the interval then holds but is wider than promised
    #: (``exact_reason`` says by how much).
    exact_budget_exhausted: bool | None = None
    exact_target_width: float | None = None
    #: The Clopper–Pearson verdict at ``confidence`` on the chance constraint (3)
    #: alone: "certified feasible" (upper bound ≤ 1 − ω), "certified infeasible"
    #: (lower bound > 1 − ω) or "not certified". A broken (4)–(6) is certain, no
    #: statement at a level: ``verdict`` and ``certified_verdict`` carry it.
    mc_certified_verdict: str | None = None
    mc_verdict: str | None = None
    ci_method: str = CI_METHOD
    quantile_ci_level: float | None = None
    violation_bounds_method: str = VIOLATION_BOUNDS_METHOD
    verdict_basis: str = BASIS_MONTE_CARLO
    #: Why ``expected_loss`` is None ("undefined: ... has no finite mean"; ``formulations.evaluation.means``).
    expected_loss_note: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["quantile_ci"] = list(self.quantile_ci)
        return d


def plan_indices(instance, plan: Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model index, cluster index, data multiplier γ) of each epoch.

    Raises
    ------
    PlanError
        If the plan names a model, cluster or dataset the instance lacks.
    """
    check_plan_names(instance, plan)
    models = np.array([instance.model_index[e.model] for e in plan.epochs], dtype=int)
    clusters = np.array([instance.cluster_index[e.cluster] for e in plan.epochs], dtype=int)
    gammas = np.array([instance.data_effect(plan.datasets.get(e.cluster, []))[1] for e in plan.epochs], dtype=float)
    return models, clusters, gammas


def transfer_cost(instance, plan: Plan) -> float:
    """The β term of objective (2) under the instance's ``transfer_cost_mode``."""
    beta = instance.transfer_matrix
    once = sum(beta[instance.dataset_index[d], instance.cluster_index[c]]
               for c, held in plan.datasets.items() for d in held)
    # The printed eq. (2) has β inside Σ_k: paid again every active epoch.
    return float(once * (plan.n_epochs if instance.transfer_cost_mode == "per_epoch" else 1))


def _check_constraints(instance, plan: Plan, models, clusters) -> tuple[list[str], float]:
    violations: list[str] = []
    K = plan.n_epochs
    if K > instance.horizon:
        violations.append(f"epochs: {K} epochs exceed the horizon K̄ = {instance.horizon}")
    allowed = instance.allowed
    for k in range(1, K):
        if not allowed[models[k - 1], models[k]]:
            violations.append(f"epochs[{k}].model: switch {plan.epochs[k - 1].model!r} -> "
                              f"{plan.epochs[k].model!r} is not allowed")
    compute, comm, _, capacity, _ = epoch_parameters(instance, plan.models, plan.clusters, plan.datasets)
    x = np.array(plan.allocations, dtype=float)
    for k in range(K):
        if compute[k] <= 0:
            violations.append(f"epochs[{k}].cluster: cluster {plan.epochs[k].cluster!r} trains but holds no dataset")
        if x[k] > capacity[k] * (1 + 1e-12):     # x > 0: check_allocations refused the rest
            violations.append(
                f"epochs[{k}].allocation: {x[k]:.6g} exceeds capacity r = {capacity[k]:.6g} (eq. (5))"
            )
    # An allocation of 5e-324 or 1e308 gives an infinite time or cost: a
    # number to report (the plan violates (4)/(5)), not a warning on stderr.
    with np.errstate(divide="ignore", over="ignore"):
        time = float(np.sum(np.where(x > 0, compute / np.where(x > 0, x, 1.0), np.inf)) + comm.sum()) if K else 0.0
    if time > instance.time_max * (1 + TIME_RTOL):
        violations.append(f"time: total {time:.6g} exceeds Tmax = {instance.time_max:.6g} (eq. (4))")
    active = set(plan.clusters)
    for cluster, held in plan.datasets.items():
        if not held:
            continue
        if instance.data_rule == "intended" and cluster not in active:
            violations.append(f"{datasets_loc(cluster)}: holds data but never trains (eq. (6), intended reading)")
        if instance.data_rule == "printed" and any(c != cluster for c in plan.clusters):
            violations.append(f"{datasets_loc(cluster)}: holds data but does not train in every epoch "
                              "(eq. (6) as printed)")
    return violations, time


def simulate_trajectories(instance, models, gammas, n: int, rng: np.random.Generator) -> np.ndarray:
    """Loss trajectories ℓ(0..K), shape (n, K+1), for a fixed model sequence.

    Draws are grouped by model (one vectorised draw per model version and per switch pair), in
    model/switch index order so the stream is reproducible. Step k is −γ A_m decay_m(k) X plus the
    switch jump (eq. (8)), summed from ℓ(0); the draws are scaled in place, the jumps added to them, and
    moved into the trajectory and summed there: at most two values per value held
    (``memory.BLOCK_BYTES_PER_VALUE``)."""
    models = np.asarray(models, dtype=int)
    K = models.size
    draws: list[tuple[np.ndarray, np.ndarray]] = []
    by_pair: dict[int, list[int]] = {}
    if K:
        scale = gammas * instance.run_scale_for(K)[np.arange(K), models]
        for m in np.unique(models):
            cols = np.nonzero(models == m)[0]
            d = np.asarray(instance.models[m].improvement.sample(rng, (n, cols.size)), dtype=float)
            np.subtract(0.0, np.multiply(scale[cols], d, out=d), out=d)    # as from a zero step array
            draws.append((cols, d))
        for k in range(1, K):
            # a forbidden switch has no jump law: the plan is reported infeasible, simulated without it
            p = instance.switch_index.get((int(models[k - 1]), int(models[k]))) if models[k] != models[k - 1] else None
            if p is not None:
                by_pair.setdefault(p, []).append(k)
    at = {int(c): (i, j) for i, (cols, _) in enumerate(draws) for j, c in enumerate(cols)}
    for p in sorted(by_pair):     # into the model draws, before the trajectory exists: a pair has ≤ K/2 jumps
        jumps = instance.switches[p].jump.sample(rng, (n, len(by_pair[p])))
        for jj, k in enumerate(by_pair[p]):
            i, j = at[k]
            draws[i][1][:, j] += jumps[:, jj]
        del jumps
    traj = np.empty((n, K + 1))
    traj[:, 0] = instance.initial_loss
    while draws:                                       # every epoch is one model's: each column set once
        cols, d = draws.pop(0)
        traj[:, 1 + cols] = d
        del d
    np.cumsum(traj[:, 1:], axis=1, out=traj[:, 1:])
    traj[:, 1:] += instance.initial_loss
    return traj


def evaluate_plan(
    instance,
    plan: Plan,
    samples: int = SAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    trajectory: bool = True,
    exact: bool = False,
) -> Evaluation:
    """Judge a plan: cost (2), constraints (4)–(6) exactly, quantile (3) out-of-sample.

    Parameters
    ----------
    instance : Instance
    plan : Plan
    samples : int, default 100000 (``settings.EVALUATE_SAMPLES``)
        Monte-Carlo trajectories (ignored when every random term is a point mass).
    seed : int, default 0
        Seed of the out-of-sample stream ``default_rng([seed, 1])``.
    confidence : float, default 0.95
        Level of the two-sided order-statistics interval on the quantile and
        of each one-sided Clopper–Pearson bound on the violation probability.
    trajectory : bool, default True
        Also return the per-epoch mean and 1st/99th percentiles (Fig. 9).
    exact : bool, default False
        Also compute the rigorous bounds ``violation_lo/hi``, ``quantile_lo/hi`` and ``exact_verdict``
        (:mod:`deplbench.formulations.evaluation.exact_violation`, default precision).

    Returns
    -------
    Evaluation
        ``verdict`` is the Monte Carlo estimate unless ``exact`` bounds
        decide it (``verdict_basis``); see the module docstring for what
        each statement is and at which level it holds.

    Raises
    ------
    PlanError
        If the plan names models, clusters or datasets the instance lacks, or
        ``samples``/``confidence`` are out of range. Constraint violations are
        not errors: they are listed in ``violations``.

    Examples
    --------
    >>> from deplbench.instances.generators import generate
    >>> from deplbench.formulations.model.plan import Plan
    >>> instance = generate("scaling", n_models=3, horizon=8, seed=0)
    >>> plan = Plan(epochs=[{"model": "m2", "cluster": "c0", "allocation": 18.2}] * 7,
    ...             datasets={"c0": ["d0"]})
    >>> ev = evaluate_plan(instance, plan, samples=20_000)
    >>> ev.verdict, ev.constraints_ok, round(ev.cost, 2)
    ('feasible', True, 139.62)
    """
    checked = _check_arguments(instance, plan, samples, seed, confidence, trajectory, exact)
    plan, samples, seed, confidence, trajectory, exact = checked
    models, clusters, gammas = plan_indices(instance, plan)
    violations, time = _check_constraints(instance, plan, models, clusters)
    x = np.array(plan.allocations, dtype=float)
    with np.errstate(over="ignore"):
        compute_cost = float(np.sum(instance.unit_cost[clusters] * x)) if plan.n_epochs else 0.0
    transfer = transfer_cost(instance, plan)

    used_models = set(models.tolist())
    used_pairs = {
        instance.switch_index.get((int(models[k - 1]), int(models[k])))
        for k in range(1, models.size)
        if models[k] != models[k - 1]
    }
    is_exact = all(instance.models[m].improvement.is_deterministic for m in used_models) and all(
        p is None or instance.switches[p].jump.is_deterministic for p in used_pairs
    )
    rng = np.random.default_rng([int(seed), OUT_OF_SAMPLE])
    n = 1 if is_exact else int(samples)
    check_evaluation_memory(n, plan.n_epochs, trajectory, epochs_field="epochs", least=min(n, MIN_SAMPLES))
    try:
        ev = _simulate_and_judge(instance, plan, models, gammas, n, rng, is_exact, trajectory, seed, confidence,
                                 violations, time, compute_cost, transfer)
    except MemoryError:
        raise PlanError(
            f"samples: {n} trajectories of {plan.n_epochs} epochs do not fit in memory"
            + (" with the per-epoch bands" if trajectory else "") + "; use fewer samples"
        ) from None
    mark_undefined_mean(ev, instance, models)
    if exact:
        attach_exact(ev, instance, models, gammas)
    else:
        ev.exact_reason = "not requested"
    return ev


def attach_exact(ev: Evaluation, instance, models, gammas, settings: ExactSettings = ExactSettings()) -> Evaluation:
    """Fill the exact fields of ``ev`` (:mod:`deplbench.formulations.evaluation.exact_violation`)."""
    try:
        b = violation_bounds(instance, models, gammas, settings)
    except ExactUnavailable as exc:
        ev.exact_verdict, ev.exact_reason = None, str(exc)
        return ev
    except (ValueError, OverflowError, FloatingPointError, MemoryError) as exc:
        # extreme laws (e.g. a scale of 1e-300) the lattice cannot represent: say so, keep Monte Carlo
        ev.exact_verdict, ev.exact_reason = None, f"exact bounds not computable: {type(exc).__name__}: {exc}"
        return ev
    ev.violation_lo, ev.violation_hi = b.p_lo, b.p_hi
    ev.quantile_lo, ev.quantile_hi = b.q_lo, b.q_hi
    ev.exact_verdict = PROVEN_INFEASIBLE if ev.violations else (
        "undecided" if b.verdict == UNDECIDED else b.verdict)
    ev.exact_budget_exhausted, ev.exact_target_width = b.exhausted, settings.target_width
    _follow_proof(ev, b.verdict)
    ev.exact_reason = "breaks constraints (4)-(6)" if ev.violations else None
    if b.exhausted and not ev.violations:
        ev.exact_reason = (f"precision budget ran out (max_work {settings.max_work:.3g} lattice points × terms): "
                           f"width {b.width:.3g} against the target {settings.target_width:g}"
                           + ("; the verdict is undecided" if b.verdict == UNDECIDED else ""))
    return ev


def _follow_proof(ev: Evaluation, chance_verdict: str) -> None:
    """Let a decided exact verdict on the chance constraint (3) decide ``verdict``, ``feasible``
    and ``certified_verdict`` (in place). The Monte Carlo statements stay in ``mc_verdict`` and
    ``mc_certified_verdict``: an estimate, and a certificate wrong with probability up to
    1 − ``confidence``, whereas the exact bounds are a proof
    (:mod:`~deplbench.formulations.evaluation.exact_violation`)."""
    if chance_verdict not in (PROVEN_FEASIBLE, PROVEN_INFEASIBLE):
        return
    proven_ok = chance_verdict == PROVEN_FEASIBLE
    ev.feasible = ev.constraints_ok and proven_ok
    # broken constraints (4)-(6) are certain too: they keep the plan infeasible
    ev.certified_verdict = CERTIFIED_FEASIBLE if ev.feasible else CERTIFIED_INFEASIBLE
    if ev.constraints_ok:
        ev.verdict = "feasible" if proven_ok else "infeasible"
        ev.verdict_basis = BASIS_EXACT


def _check_arguments(instance, plan, samples, seed, confidence, trajectory, exact):
    """Validated ``(plan, samples, seed, confidence, trajectory, exact)`` of :func:`evaluate_plan`.

    Every refusal names the argument (docs/DESIGN.md, "Input rules"); a
    plan may be given as a JSON-like dict.
    """
    check_instance(instance, full=False, type_error=PlanError)     # one built or changed in code, too
    plan = parse_plan(plan)
    check_allocations(plan)       # a Plan built in code skips parse_plan's check
    samples, confidence, trajectory, exact = check_evaluation(samples, confidence, trajectory, exact)
    seed = check_seed(seed)    # numpy's own message ("expected non-negative integer") names no field
    # the plan and one trajectory before any per-epoch array; samples once the laws say how many are drawn
    check_evaluation_memory(1, plan.n_epochs, trajectory, epochs_field="epochs", least=1)
    return plan, int(samples), int(seed), confidence, trajectory, exact


def _simulate_and_judge(instance, plan, models, gammas, n, rng, exact, trajectory, seed, confidence,
                        violations, time, compute_cost, transfer) -> Evaluation:
    """The Monte-Carlo part of :func:`evaluate_plan` (inputs already validated).

    The per-epoch bands are kept whole when they fit the budget, else computed in epoch chunks by
    re-simulating every block from its recorded generator state: the same numbers bit for bit, at
    (1 + chunks) × the simulation time (:mod:`~deplbench.formulations.evaluation.memory`).
    """
    finals = np.empty(n)
    mean = np.zeros(plan.n_epochs + 1)
    p01: np.ndarray | None = None
    p99: np.ndarray | None = None
    budget = budget_bytes()
    kept = trajectory and bands_kept(n, plan.n_epochs, budget)
    keep: list[np.ndarray] = []           # the trajectories, when the bands fit whole
    states: list[dict] = []               # each block's generator state, when the bands need chunks
    # Blocks bound the memory: 25,000 trajectories of a 10^5-epoch plan would need 60 GB.
    block = block_size(plan.n_epochs)
    for start in range(0, n, block):
        size = min(block, n - start)
        if trajectory and not kept:
            states.append(rng.bit_generator.state)
        traj = simulate_trajectories(instance, models, gammas, size, rng)
        finals[start:start + size] = traj[:, -1]
        mean += traj.sum(axis=0)
        if kept:
            keep.append(traj)
        del traj                          # one block at a time
    mean /= n
    if kept:
        allt = keep[0] if len(keep) == 1 else np.concatenate(keep)
        p01, p99 = np.percentile(allt, [1, 99], axis=0)
        del allt, keep
    elif trajectory:
        chunk = band_chunk(n, plan.n_epochs, budget)
        p01, p99 = chunked_bands(lambda size, gen: simulate_trajectories(instance, models, gammas, size, gen),
                                 n, plan.n_epochs + 1, block, states, type(rng.bit_generator), chunk)
    finals.sort()
    rank = quantile_rank(instance.omega, n)
    quantile = float(finals[rank - 1])
    qi = QuantileInterval(quantile, quantile, confidence, CI_METHOD_DETERMINISTIC) if exact else (
        order_statistic_ci(finals, instance.omega, confidence))
    ci = (qi.low, qi.high)
    threshold = loss_threshold(instance.loss_max)
    # an infinite end (too few draws for it) never decides: the interval then straddles ℓmax
    if ci[1] <= threshold:
        verdict = "feasible"
    elif ci[0] > threshold:
        verdict = "infeasible"
    else:
        verdict = "undecided"
    n_viol, v_ub, v_lb, certified = _certify(finals, n, exact, instance, threshold, confidence)
    per_model_epochs: dict[str, int] = {}
    per_model_cost: dict[str, float] = {}
    for e, _m in zip(plan.epochs, models):
        per_model_epochs[e.model] = per_model_epochs.get(e.model, 0) + 1
        with np.errstate(over="ignore"):    # κ·x past binary64 is inf, reported as such (JSON null)
            per_model_cost[e.model] = per_model_cost.get(e.model, 0.0) + float(
                instance.unit_cost[instance.cluster_index[e.cluster]] * e.allocation
            )
    return Evaluation(
        cost=compute_cost + transfer,
        compute_cost=compute_cost,
        transfer_cost=transfer,
        time=time,
        epochs=plan.n_epochs,
        violations=violations,
        constraints_ok=not violations,
        quantile=quantile,
        quantile_ci=ci,
        verdict="infeasible" if violations else verdict,     # broken (4)-(6): whatever the quantile
        feasible=(not violations) and verdict == "feasible",
        mc_verdict=verdict,
        expected_loss=float(mean[-1]),
        loss_max=float(instance.loss_max),
        omega=float(instance.omega),
        samples=n,
        seed=int(seed),
        confidence=float(confidence),
        exact=exact,
        mean=mean.tolist() if trajectory else [],
        p01=p01.tolist() if p01 is not None else [],
        p99=p99.tolist() if p99 is not None else [],
        epochs_per_model=per_model_epochs,
        cost_per_model=per_model_cost,
        violation_count=n_viol,
        violation_ub=v_ub,
        violation_lb=v_lb,
        violation_ub_level=float(confidence),
        # a broken (4)-(6) is certain: it decides the plan's verdict, not the certificate on (3)
        certified_verdict=CERTIFIED_INFEASIBLE if violations else certified,
        mc_certified_verdict=certified,
        ci_method=qi.method,
        quantile_ci_level=qi.level,
        verdict_basis=BASIS_CONSTRAINTS if violations else BASIS_DETERMINISTIC if exact else BASIS_MONTE_CARLO,
    )


def _certify(finals, n, exact, instance, threshold, confidence):
    """Violation count and Clopper–Pearson verdict on P(ℓ(K) > ℓmax) ≤ 1 − ω
    (the chance constraint (3) alone; constraints (4)–(6) are judged apart).

    The draws are the evaluator's own, made after the plan was fixed, so the
    exact binomial bounds apply (``formulations.evaluation.binomial``). A plan whose
    random terms are point masses has probability exactly 0 or 1.
    """
    count = int(n - np.searchsorted(finals, threshold, side="right"))
    if exact:
        ub = lb = float(count > 0)
    else:
        ub = clopper_pearson_upper(count, n, confidence)
        lb = clopper_pearson_lower(count, n, confidence)
    risk = 1.0 - float(instance.omega)
    if lb > risk:
        certified = CERTIFIED_INFEASIBLE
    elif ub <= risk:
        certified = CERTIFIED_FEASIBLE
    else:
        certified = NOT_CERTIFIED
    return count, ub, lb, certified


__all__ = ["Evaluation", "evaluate_plan", "check_evaluation_memory", "attach_exact", "plan_indices", "transfer_cost",
           "simulate_trajectories", "MEMORY_BUDGET", "order_statistic_ci", "QuantileInterval", "CI_METHOD",
           "CI_METHOD_DETERMINISTIC",
           "VIOLATION_BOUNDS_METHOD", "BASIS_CONSTRAINTS", "BASIS_EXACT", "BASIS_DETERMINISTIC", "BASIS_MONTE_CARLO"]
