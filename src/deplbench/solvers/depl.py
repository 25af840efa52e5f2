"""The DepL heuristic (DepL paper Sec. IV, Fig. 3) and the *best-exp* baseline.

DepL decouples the decisions of problem (2)–(6) and iterates between them:

1. **Datasets** (Sec. IV-A, :mod:`.dataset_selection`): minimise
   K̂(D̂)·T̂(D̂) over non-empty D̂ ⊆ D by the Fujishige–Wolfe minimum-norm
   point (the most complex model on the most capable cluster at full
   capacity; K̂ from the *expected* loss, see that module). The instance's
   submodularity is checked and reported.
2. **Models** (Sec. IV-B, :mod:`.expanded_graph`): minimum-cost path over the
   expanded graph (m, k, time bucket, loss bucket) at resolution η, a DAG
   solved by a layer-vectorised DP. The loss axis tracks an *additive*
   quantile surrogate (:mod:`.quantile_transform`; default: the Chernoff
   bound — the log of the Laplace transform, the paper's trick — which
   proves P(ℓ(K) > ℓmax) ≤ 1 − ω for every path it accepts). θ (or s) is
   tried on a small grid, centre first; the centre's path weight prunes the
   other graphs, and every feasible path is kept as a candidate, ranked by
   its exact water-filling cost on the most capable cluster. The default
   loss axis (``rounding="label"``) carries exact surrogate values (no
   accumulated rounding); ``"up"`` is the paper's conservatively rounded
   graph, ``"nearest"`` a rounded graph whose paths are verified exactly.
   Edge weight: w_m = sqrt(κ*·c(m, D̂)) + λ·comm_m — the square-root cost
   whose squared path sum is the water-filling cost W²/(Tmax − C) on the
   most capable cluster, plus the tangent of that cost in the communication
   time C at the stage-1 reference path.
3. **Clusters and allocation** (Sec. IV-C, :mod:`.vnf_allocation`): a (1+ε)
   scheme (geometric allocation levels + cost-rounding DP), then exact
   closed-form re-optimisation of x for the chosen clusters.
4. **Backtracking** (Fig. 3): no feasible model path → the dataset choice is
   blacklisted and the next one (Lawler ranking) is tried; no feasible
   allocation for a path → that path is blacklisted (the next candidate is
   tried) and, when none is left, model selection is re-run with the
   deadline given to the graph tightened by 10 % (bounded by ``max_backtracks``).
5. **Out-of-sample check**: every plan goes through
   ``formulations.evaluate.evaluate_plan``. A plan that fails (verdict not
   ``feasible``) makes DepL lower its effective ℓmax by the observed excess
   (upper end of the quantile interval minus ℓmax, plus the interval's
   width) and retry, at most ``max_retries`` times; then it reports
   ``infeasible`` rather than return a plan that fails.

6. **Calibration** (``calibrate=True``; off by default). The proven
   surrogate is conservative: on the realistic AlexNet instance the plan's
   checked quantile sits 0.15–0.8 below ℓmax and the plan costs up to ~17 %
   more than best-exp. After the proven plan P₀ is accepted, each surrogate
   parameter θ gets its own bounded search (≤ ``CALIBRATION_STEPS`` = 6
   probes: expansion then bisection) over a *looser* stage-2 target,
   re-running stage 2; a probe's path is screened by simulation on an
   estimation stream shared by all probes. The screened paths go through
   stage 3 and are then *tested*, cheapest first, each on fresh draws of
   DepL's own check streams (never the suite's evaluation seed), at most 6
   tests, each at level 1 − 0.05/6; the first that passes replaces P₀,
   otherwise P₀ is kept. See :func:`_calibrate` for why one search per θ
   (a common looser target over-relaxes the large-θ graphs, which price
   Student-t switches far above their mean). ``diagnostics["calibration"]``
   lists every probe and test; ``diagnostics["guarantee"]`` says which
   guarantee the returned plan has.

What is guaranteed: with ``quantile_method="chernoff"`` (or ``"cantelli"``)
and ``calibrate=False`` (the default, the paper's DepL) the returned plan's
ω-quantile is *proven* ≤ ℓmax under the instance's laws (independent
increments) — up to floating point — and the time constraint holds exactly;
the out-of-sample check is then a confirmation (``guarantee: "proven"``).
With ``"normal"`` only the out-of-sample check stands behind the plan.
With ``calibrate=True`` a calibrated plan (``guarantee: "statistical"``)
keeps the exact time constraint but only a *statistical* quantile
guarantee: the tests' union bound gives P(true ω-quantile > ℓmax) ≤ 0.025
over the tests' draws, for the instance's laws — what the check's
confidence interval can say, not a proof; the suite's separate evaluation
judges it on yet other draws. When no calibrated plan passes, the proven
P₀ is returned and the guarantee stays ``"proven"``.

Where DepL's cost gap to the optimum comes from (AlexNet, ℓmax 5–13,
``benchmarks/depl_targets.py --only gap``): the (1+ε) allocation stage
0.1–0.9 % (its (1+ε) worst case is far from reached, so ε = 0.1 stays the
default), the η discretisation ≤ 0.4 % (η = 200 vs 800), the conservatism of
the proven surrogate 1–17 % (the Chernoff offset ln(1/α)/θ, the θ grid, and
heavy-tailed switch jumps priced far above their mean) — the part
``calibrate=True`` recovers.

The reported cost is the evaluated cost of the final plan (objective (2),
transfer included). DepL's own out-of-sample check uses a seed derived from
``seed`` (:func:`_check_seed`), so the suite's separate evaluation judges the
plan on draws the retry loop never saw.

*best-exp* (Sec. VI-B, inspired by ref. [4] = PACT) makes the same three
decisions driven by the *expected* loss (surrogate φ = E[Δ], no quantile),
then "trains on until the quantile target is actually met": it appends epochs
of its best expected-loss model (largest expected loss decrease in that
epoch, switch jump included) until the simulated ω-quantile is ≤ ℓmax,
re-allocates x exactly, and confirms with the evaluator (adding epochs while
the evaluator disagrees); horizon or deadline exhausted → ``infeasible``.

Diagnostics (``SolveResult.diagnostics``): dataset choice and its objective,
submodularity check, min-norm vs exhaustive, per-θ graph sizes
(vertices/edges), stage timings, backtracks, retries, stage-3 grid cost and
lower bound, the quantile bound of the plan and its guarantee.

References
----------
DepL paper Sec. IV (Fig. 3), Sec. V (Properties 2–3), Sec. VI-B (best-exp).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from deplbench.errors import SolverError
from deplbench.formulations.allocation import allocate
from deplbench.formulations.evaluate import evaluate_plan, simulate_trajectories, transfer_cost
from deplbench.formulations.plan import Epoch, Plan
from deplbench.formulations.result import SolveResult
from deplbench.formulations.scenarios import ScenarioSampler, quantile_rank
from deplbench.solvers.base import Param, Solver
from deplbench.solvers.dataset_selection import (
    EXHAUSTIVE_MIN_MAX,
    DataObjective,
    SubsetRanker,
    all_masks,
    exhaustive_minimum,
    submodularity_check,
)
from deplbench.solvers.expanded_graph import build_spec, solve_dp, solve_dp_labels
from deplbench.solvers.quantile_transform import METHODS, LossModel, build_bounds, validate_method
from deplbench.solvers.vnf_allocation import place_and_allocate, validate_epsilon


# ----------------------------------------------------------------------------- helpers
def _jsonable(obj):
    """Diagnostics as plain Python (numpy scalars/arrays would break ``json``)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def _check_seed(seed: int) -> int:
    """Seed of DepL's own out-of-sample check: derived from ``seed`` but never
    equal to it, so the suite's evaluation (``eval_seed``, default 0) judges
    the plan on draws the retry loop has not seen."""
    return int(seed) * 7919 + 104729


def most_capable_cluster(instance) -> int:
    """Index of the cluster with the largest capacity (ties: larger bandwidth)."""
    cap = np.asarray(instance.capacity)
    bw = np.asarray(instance.bandwidth)
    return int(np.lexsort((-bw, -cap))[0])


@dataclass
class Candidate:
    """A model path found by stage 2."""

    models: list
    weight: float
    estimate: float
    bound: object
    quantile_bound: float


@dataclass
class Stage2:
    candidates: list = field(default_factory=list)
    graphs: list = field(default_factory=list)
    seconds: float = 0.0


def _reference_model(instance) -> int:
    """m*: the most complex model (largest compute, ties: largest size), stage 1's reference."""
    return int(np.lexsort((-instance.model_size, -instance.model_compute))[0])


def _surrogates(instance, gamma: float, method: str, n_theta: int, tail_share: float, ref_epochs: int) -> list:
    """The additive quantile surrogates stage 2 tries (one graph each), centred on m* for ``ref_epochs``."""
    lm = LossModel.from_instance(instance, gamma)
    return build_bounds(lm, method, n_theta, ref_model=_reference_model(instance), ref_epochs=ref_epochs,
                        tail_share=tail_share)


def _stage2(instance, gamma: float, volume: float, method: str, eta: int, n_theta: int,
            tail_share: float, ref_epochs: int, loss_max: float, time_max: float,
            rounding: str = "up", verify_rounds: int = 4, bounds=None,
            weight_bound: float = math.inf) -> Stage2:
    """Model selection: one expanded graph per surrogate parameter.

    With ``rounding="nearest"`` a recovered path is verified with its exact
    surrogate value; if it exceeds ``loss_max`` the graph's target is lowered
    by the excess and the DP re-run (``verify_rounds`` times), after which
    the conservative ``"up"`` graph is used for that parameter.

    ``bounds`` (default: :func:`_surrogates`) lets the calibration run one
    surrogate's graph alone; ``weight_bound`` (an incumbent path weight)
    makes the graphs look only for strictly lighter paths.
    """
    t0 = time.perf_counter()
    n_star = most_capable_cluster(instance)
    comp = instance.model_compute * volume
    comm = instance.model_size / instance.bandwidth[n_star]
    tau = comp / instance.capacity[n_star] + comm
    kappa = float(instance.unit_cost[n_star])
    # κ* = 0 would make every path free: keep sqrt(c) as the tie-breaking proxy.
    root = np.sqrt(comp * (kappa if kappa > 0 else 1.0))
    m_star = _reference_model(instance)
    # The water-filling cost of a path is W²/(Tmax − C), C its communication
    # time: not additive. Its tangent at a reference path (W0, C0) is, up to a
    # constant factor, W + W0/(2(Tmax − C0))·C — additive, so the edge weight
    # is w_m = sqrt(κ*·c_m) + λ·comm_m with λ = W0/(2(Tmax − C0)) taken at the
    # stage-1 reference (m* for K̂ epochs). λ = 0 without communication time,
    # where W²/Tmax is exact (the knapsack instances).
    budget0 = time_max - ref_epochs * comm[m_star]
    lam = ref_epochs * root[m_star] / (2.0 * budget0) if budget0 > 0 else 0.0
    weights = root + lam * comm
    if bounds is None:
        bounds = _surrogates(instance, gamma, method, n_theta, tail_share, ref_epochs)
    out = Stage2()
    seen = set()
    # Centre of the θ grid first: its path's weight then prunes the other
    # graphs (the weights are the same in every graph, only the loss axis
    # changes), which mostly stop after a few layers.
    mid = (len(bounds) - 1) / 2.0
    order = sorted(range(len(bounds)), key=lambda i: abs(i - mid))
    incumbent = float(weight_bound)
    for i in order:
        b = bounds[i]
        lmax_b = loss_max
        target = lmax_b - b.offset
        entry = {"method": b.method, "param": b.param, "target": target, "rounding": rounding}
        cap_target = instance.initial_loss - 1e-9 * max(1.0, abs(instance.initial_loss))
        mode = rounding
        rounds = 0
        while True:
            spec = build_spec(weights, tau, time_max, b.run_phi, b.jump_phi, instance.allowed,
                              instance.initial_loss, min(target, cap_target), eta, rounding=mode)
            solver = solve_dp_labels if mode == "label" else solve_dp
            res = solver(spec, bound=incumbent)
            entry["vertices"] = entry.get("vertices", 0) + res.vertices
            entry["edges"] = entry.get("edges", 0) + res.edges
            entry["seconds"] = entry.get("seconds", 0.0) + res.seconds
            if mode == "up" or not res.feasible:
                break
            excess = b.path_bound(instance.initial_loss, res.models) - lmax_b
            if excess <= 0:
                break
            if mode == "label":  # exact labels already checked u <= 0; only round-off can get here
                res.feasible = excess <= 1e-8 * max(1.0, abs(lmax_b), abs(instance.initial_loss))
                break
            rounds += 1
            if rounds > verify_rounds:
                mode = "up"
                target = lmax_b - b.offset
            else:
                # Accelerating steps: a re-run path carries fresh rounding
                # error, so lowering by the last excess alone can oscillate.
                target -= rounds * excess + 1e-12 * max(1.0, abs(lmax_b))
        entry.update(nominal_vertices=spec.nominal_vertices, layers=res.layers, feasible=res.feasible,
                     weight=float(res.weight) if res.feasible else None, verify_rounds=rounds,
                     final_rounding=mode)
        entry["incumbent"] = incumbent if math.isfinite(incumbent) else None
        out.graphs.append(entry)
        if not res.feasible:
            continue
        incumbent = min(incumbent, float(res.weight))
        key = tuple(res.models)
        if key in seen:
            continue
        seen.add(key)
        # Rank candidates by their exact water-filling cost on n* (captures
        # capacity binding and communication time, which W alone does not).
        k = len(res.models)
        m = np.asarray(res.models)
        alloc = allocate(comp[m], comm[m], np.full(k, kappa), np.full(k, instance.capacity[n_star]), instance.time_max)
        est = alloc.cost if alloc.feasible else math.inf
        out.candidates.append(Candidate(list(res.models), float(res.weight), est, b,
                                        b.path_bound(instance.initial_loss, res.models)))
    out.candidates.sort(key=lambda c: (c.estimate, c.weight))
    out.seconds = time.perf_counter() - t0
    return out


def _transfer_fn(instance, dataset_idx, n_epochs: int):
    beta = np.asarray(instance.transfer_matrix)[list(dataset_idx)].sum(axis=0)  # per cluster
    if not np.any(beta > 0):
        return None
    factor = n_epochs if instance.transfer_cost_mode == "per_epoch" else 1

    def cost(clusters):
        return float(factor * beta[list(clusters)].sum())

    return cost


def _stage3(instance, models, dataset_names, dataset_idx, volume, epsilon: float, reoptimize: bool):
    """Cluster selection and allocation; returns (plan or None, info dict)."""
    models = np.asarray(models, dtype=int)
    K = models.size
    comp = instance.model_compute[models] * volume
    comm = instance.model_size[models][:, None] / instance.bandwidth[None, :]
    res = place_and_allocate(
        comp, comm, instance.unit_cost, instance.capacity, instance.time_max, epsilon,
        subset_cost=_transfer_fn(instance, dataset_idx, K),
        single_cluster=instance.data_rule == "printed",
        group_key=models.tolist(),
    )
    info = {"feasible": res.feasible, "grid_cost": res.grid_cost if res.feasible else None,
            "lower_bound_fixed_sequence": res.lower_bound if res.feasible else None,
            "guarantee": res.guarantee, "dp_states": res.states, "buckets": res.buckets,
            "options": res.options, "subsets_tried": res.subsets_tried, "seconds": res.seconds,
            "reason": res.reason}
    if not res.feasible:
        return None, info
    x = res.x
    if reoptimize:
        cl = res.clusters
        alloc = allocate(comp, comm[np.arange(K), cl], instance.unit_cost[cl], instance.capacity[cl],
                         instance.time_max)
        if alloc.feasible:
            x = alloc.x
    names = [instance.models[m].name for m in models]
    cnames = [instance.clusters[n].name for n in res.clusters]
    used = sorted(set(cnames), key=lambda c: instance.cluster_index[c])
    plan = Plan(epochs=[Epoch(model=m, cluster=c, allocation=float(v)) for m, c, v in zip(names, cnames, x)],
                datasets={c: list(dataset_names) for c in used})
    return plan, info


# ------------------------------------------------------------------------ calibration
#: Stage-2 targets tried by ``calibrate=True`` (expansion, then bisection).
CALIBRATION_STEPS = 6
#: Family-wise level of the calibration checks: each check's interval is at
#: level 1 − (1 − CALIBRATION_CONFIDENCE)/CALIBRATION_STEPS (Bonferroni).
CALIBRATION_CONFIDENCE = 0.95


def _calibration_seed(seed: int, step: int) -> int:
    """Seed of the ``step``-th calibration check (0-based): fresh draws for
    every step, disjoint from the first check's seed and from the suite's
    evaluation seed (0 by default), because :func:`_check_seed` ≥ 104729."""
    return _check_seed(seed) + 1 + int(step)


def _quantile_upper(finals: np.ndarray, omega: float, level: float) -> tuple:
    """The ω-quantile of a sample and the upper end of its distribution-free
    interval at ``level`` (the evaluator's rule: order statistics at the
    binomial (1 ± level)/2 ranks)."""
    finals = np.sort(finals)
    n = finals.size
    q = float(finals[quantile_rank(omega, n) - 1])
    hi = int(stats.binom.ppf(1.0 - (1.0 - level) / 2.0, n, omega)) + 1
    return q, float(finals[min(max(hi, 1), n) - 1])


#: Largest scenario table (floats; 16e6 = 128 MB) drawn once for the calibration's estimates;
#: larger instances simulate each probed sequence separately instead.
_SCENARIO_TABLE_MAX = 16_000_000


class _QuantileEstimator:
    """Simulated ω-quantile (and the upper end of its interval) of model sequences.

    When the table of every random term (samples × K̄ × (|M| + |P|)) is
    small enough it is drawn once (``ScenarioSampler``, stream 1 of
    ``seed``) and every sequence is judged on the same scenarios (common
    random numbers make the comparison between probes less noisy);
    otherwise each sequence is simulated from ``default_rng([seed, 2])``
    afresh, which bounds memory by samples × K.
    """

    def __init__(self, instance, gamma: float, samples: int, seed: int, level: float):
        self.instance, self.gamma, self.samples, self.seed, self.level = instance, gamma, int(samples), seed, level
        size = self.samples * instance.horizon * (instance.n_models + len(instance.switches))
        self.scenarios = (ScenarioSampler(instance, seed).out_of_sample(self.samples)
                          if size <= _SCENARIO_TABLE_MAX else None)

    def __call__(self, models) -> tuple:
        models = np.asarray(models, dtype=int)
        gammas = np.full(models.size, self.gamma)
        if self.scenarios is not None:
            finals = self.scenarios.final_losses(models, gammas)
        else:
            rng = np.random.default_rng([int(self.seed), 2])
            finals = simulate_trajectories(self.instance, models, gammas, self.samples, rng)[:, -1]
        return _quantile_upper(finals, self.instance.omega, self.level)


def _estimation_seed(seed: int) -> int:
    """Seed of the calibration's estimation stream (its probes), distinct
    from every test seed :func:`_calibration_seed` and from the first check."""
    return _check_seed(seed) + 1 + CALIBRATION_STEPS


@dataclass
class _Context:
    """What stages 2–3 need to be re-run at another target (fixed datasets)."""

    instance: object
    method: str
    eta: int
    n_theta: int
    tail_share: float
    rounding: str
    epsilon: float
    reoptimize: bool
    gamma: float
    volume: float
    names: list
    subset: tuple
    ref_epochs: int
    time_max_eff: float
    blacklist: set
    check_samples: int
    seed: int


@dataclass
class _Calibration:
    """Outcome of :func:`_calibrate`: the tested plan that replaces P₀ (when
    ``improved``), its test, its (candidate, stage-3 info), the surrogate
    value of its path, and the diagnostics ``info``."""

    improved: bool = False
    plan: object = None
    evaluation: object = None
    chosen: tuple | None = None
    target: float = math.nan
    info: dict = field(default_factory=dict)


def _calibrate(ctx: _Context, start: float, plan0, eval0) -> _Calibration:
    """Loosen the stage-2 target of every surrogate while simulation accepts,
    then test the cheapest plans found on fresh draws.

    Parameters
    ----------
    ctx : _Context
        The datasets, deadline and options of the accepted (proven) plan.
    start : float
        The stage-2 target that produced ``plan0`` (ℓmax, or lower after retries).
    plan0, eval0
        The accepted plan and its check.

    Returns
    -------
    _Calibration
        ``improved`` when a cheaper plan passed its test; ``info`` lists the
        probes of every surrogate and the tests.

    Notes
    -----
    *One search per surrogate.* How far a surrogate over-estimates the
    quantile depends on its parameter (for Chernoff the offset ln(1/α)/θ
    alone ranges over a factor 16 on the θ grid, and a large θ prices a
    Student-t switch far above its mean), so a common looser target
    over-relaxes some graphs (they return short, infeasible paths) and
    under-relaxes the others. Each surrogate θ therefore gets its own
    bounded search over its target t = start + λ·g_θ, with the scale
    g_θ = b_θ(P₀) − q₀ + (ℓmax − start) read off the accepted path P₀
    (b_θ its bound, q₀ its checked quantile): λ = ½ first, then +½ while
    probes pass, then bisection between the last passing and the first
    failing λ, :data:`CALIBRATION_STEPS` probes at most. A probe re-runs
    stage 2 (that surrogate's graph alone) and *estimates* the path's
    quantile by simulation on the calibration's estimation stream (the
    quantile depends on the model sequence only); a probe passes when that
    estimate's interval (at the tests' level) is below ℓmax. Cost is not
    monotone in the target, so every passing path is kept; the
    :data:`CALIBRATION_STEPS` cheapest by stage 2's estimate go through
    stage 3.

    *Tests and the guarantee.* The candidates, cheapest first, are then
    tested on fresh draws (:func:`_calibration_seed`, one stream per test,
    at most :data:`CALIBRATION_STEPS` tests) with the order-statistics
    interval at level 1 − 0.05/CALIBRATION_STEPS; the first that passes is
    returned. Conditionally on everything before it, a test passes a plan
    whose true ω-quantile exceeds ℓmax with probability at most
    0.025/CALIBRATION_STEPS, so by the union bound the returned plan
    violates (3) with probability ≤ 0.025 over the tests' draws (for the
    instance's laws, independent increments). When no candidate passes,
    ``plan0`` (proven) is kept.
    """
    inst = ctx.instance
    loss_max = float(inst.loss_max)
    tol = 1e-9 * max(1.0, abs(loss_max))
    level = 1.0 - (1.0 - CALIBRATION_CONFIDENCE) / CALIBRATION_STEPS
    out = _Calibration(info={"surrogates": [], "tests": [], "start_target": start,
                             "confidence_per_test": level, "family_confidence": CALIBRATION_CONFIDENCE,
                             "max_steps": CALIBRATION_STEPS, "base_cost": eval0.cost, "improved": False,
                             "cost": eval0.cost, "saving": 0.0})
    if eval0.exact:
        out.info["skipped"] = "deterministic plan: the surrogate is the loss itself, nothing to calibrate"
        return out
    if not loss_max - eval0.quantile > tol:
        out.info["skipped"] = "the accepted plan has no room below ℓmax"
        return out
    bounds = _surrogates(inst, ctx.gamma, ctx.method, ctx.n_theta, ctx.tail_share, ctx.ref_epochs)
    models0 = [inst.model_index[e.model] for e in plan0.epochs]
    # Targets at or above ℓ(0) are all equivalent (every path is accepted).
    cap = float(inst.initial_loss)
    estimator = _QuantileEstimator(inst, ctx.gamma, ctx.check_samples, _estimation_seed(ctx.seed), level)
    estimates: dict = {}   # model sequence -> (candidate, quantile estimate, upper end of its interval)

    def probe(b, target, lighter_than):
        """The path surrogate ``b`` accepts at ``target`` and its simulated quantile.

        ``lighter_than`` is the model sequence accepted at a tighter target
        (still accepted here): the graph only looks for lighter paths and
        falls back on it. The quantile depends on the model sequence only
        (not on clusters or allocations), so stage 3 is deferred to the tests."""
        w = estimates[lighter_than][0].weight if lighter_than is not None else math.inf
        s2 = _stage2(inst, ctx.gamma, ctx.volume, ctx.method, ctx.eta, ctx.n_theta, ctx.tail_share,
                     ctx.ref_epochs, target, ctx.time_max_eff, rounding=ctx.rounding, bounds=[b],
                     weight_bound=w * (1.0 + 1e-12))
        cands = [c for c in s2.candidates if tuple(c.models) not in ctx.blacklist]
        if not cands:
            return lighter_than
        key = tuple(cands[0].models)
        if key not in estimates:
            q, upper = estimator(key)
            estimates[key] = (cands[0], q, upper)
        return key

    for b in bounds:
        scale = b.path_bound(inst.initial_loss, models0) - eval0.quantile + (loss_max - start)
        row = {"param": b.param, "scale": scale, "probes": []}
        out.info["surrogates"].append(row)
        if not (math.isfinite(scale) and scale > tol):
            continue
        lo, hi, lo_key = 0.0, math.inf, None
        for _ in range(CALIBRATION_STEPS):
            lam = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 0.5
            target = min(start + lam * scale, cap)
            key = probe(b, target, lo_key)
            passed = key is not None and estimates[key][2] <= loss_max + tol
            p_row = {"lambda": lam, "target": target, "passed": passed}
            if key is not None:
                cand, q, _ = estimates[key]
                p_row.update(epochs=len(key), estimate=cand.estimate, quantile=q)
            row["probes"].append(p_row)
            if passed:
                lo, lo_key = lam, key
                if target >= cap:
                    break
            else:
                hi = lam

    # Stage 3 for the most promising sequences (by stage 2's cost estimate),
    # then tests, cheapest plan first, each on fresh draws.
    models_key0 = tuple(models0)
    passing = sorted((cand.estimate, key) for key, (cand, _, upper) in estimates.items()
                     if upper <= loss_max + tol and key != models_key0)
    pool = []
    for _, key in passing[:CALIBRATION_STEPS]:
        plan, info = _stage3(inst, list(key), ctx.names, ctx.subset, ctx.volume, ctx.epsilon, ctx.reoptimize)
        if plan is None:
            continue
        cost = float(sum(inst.unit_cost[inst.cluster_index[e.cluster]] * e.allocation for e in plan.epochs)
                     + transfer_cost(inst, plan))  # objective (2), as the evaluator computes it
        pool.append((cost, key, plan, info))
    pool.sort(key=lambda r: r[0])
    out.info["stage3_runs"] = len(pool)
    for j, (cost, key, plan, info) in enumerate(
            [r for r in pool if r[0] < eval0.cost * (1 - 1e-12)][:CALIBRATION_STEPS]):
        cand = estimates[key][0]
        ev = evaluate_plan(inst, plan, samples=ctx.check_samples, seed=_calibration_seed(ctx.seed, j),
                           confidence=level, trajectory=False)
        out.info["tests"].append({"seed": _calibration_seed(ctx.seed, j), "samples": ev.samples,
                                  "epochs": plan.n_epochs, "cost": ev.cost, "quantile": ev.quantile,
                                  "quantile_ci": list(ev.quantile_ci), "verdict": ev.verdict,
                                  "param": cand.bound.param, "passed": bool(ev.feasible)})
        if ev.feasible:
            out.improved, out.plan, out.evaluation, out.chosen = True, plan, ev, (cand, info)
            out.target = float(cand.quantile_bound)
            break
    if out.improved:
        out.info.update(improved=True, cost=out.evaluation.cost,
                        saving=1.0 - out.evaluation.cost / eval0.cost if eval0.cost > 0 else 0.0)
    return out


# ------------------------------------------------------------------------------ solver
_PARAMS = {
    "eta": Param(200, int, "expanded-graph resolution η (time and loss buckets)", low=1, high=5000),
    "epsilon": Param(0.1, float, "(1+ε) approximation of the cluster/allocation stage", low=0.0,
                     low_inclusive=False, high=10.0),
    "seed": Param(0, int, "seed of the out-of-sample check and of sampled diagnostics"),
    "check_samples": Param(20_000, int, "trajectories of DepL's own out-of-sample check", low=100),
    "max_retries": Param(3, int, "tightening retries after a failed out-of-sample check", low=0),
    "max_backtracks": Param(8, int, "stage backtracks (dataset blacklists + deadline tightenings)", low=0),
    "quantile_method": Param("chernoff", str, "additive quantile surrogate: " + ", ".join(METHODS),
                             choices=METHODS),
    "n_theta": Param(5, int, "θ (or s) values tried for the surrogate", low=1, high=64),
    "tail_share": Param(0.1, float, "share of 1−ω spent truncating heavy-tailed increments (chernoff)",
                        low=0.0, low_inclusive=False, high=0.99),
    "rounding": Param("label", str, "loss axis of the expanded graph: label (exact loss labels, buckets only "
                      "merge paths), up (increments rounded up: every graph path feasible, the paper's "
                      "graph) or nearest (rounded to nearest, the path is verified exactly)",
                      choices=("label", "up", "nearest")),
    "dataset_method": Param("min-norm", str, "dataset selection: min-norm (Fujishige–Wolfe) or exhaustive",
                            choices=("min-norm", "exhaustive")),
    "calibrate": Param(False, bool, "after the proven plan, search a looser stage-2 target (bounded bisection) and "
                       "keep the cheapest plan DepL's own out-of-sample checks accept: a statistical guarantee "
                       "instead of a proven one (see the module docstring)"),
    "reoptimize": Param(False, bool, "re-optimise x exactly (water-filling) for the chosen clusters after the (1+ε) stage; off by default so the result reflects the paper's (1+ε) scheme"),
}


class DepL(Solver):
    """DepL (Sec. IV): datasets → models → clusters/allocation, with backtracking."""

    name = "depl"
    description = "DepL heuristic: submodular dataset selection, expanded-graph model path, (1+ε) allocation"
    parameters = dict(_PARAMS)
    #: Surrogate used by stage 2 (best-exp overrides with "expected").
    forced_method: str | None = None

    # -------------------------------------------------------------- validation
    @staticmethod
    def _validate(instance, p) -> None:
        """Semantic checks the Param bounds cannot express.

        Raises
        ------
        SolverError
            Naming the offending parameter.
        """
        if "quantile_method" in p:
            validate_method(p["quantile_method"], p["n_theta"], p["tail_share"])
        validate_epsilon(p["epsilon"])
        if p["dataset_method"] == "exhaustive" and instance.n_datasets > EXHAUSTIVE_MIN_MAX:
            raise SolverError(
                f"parameter 'dataset_method': exhaustive needs |D| <= {EXHAUSTIVE_MIN_MAX}, "
                f"the instance has {instance.n_datasets} datasets"
            )

    def run(self, instance, **params) -> SolveResult:
        p = self.resolve_params(params)
        self._validate(instance, p)
        method = self.forced_method or p["quantile_method"]
        n_theta, tail_share = int(p.get("n_theta", 1)), float(p.get("tail_share", 0.1))
        t_start = time.perf_counter()
        diag: dict = {"quantile_method": method, "stage_seconds": {"datasets": 0.0, "models": 0.0,
                                                                   "allocation": 0.0, "evaluation": 0.0},
                      "backtracks": [], "retries": [], "graphs": []}
        rng = np.random.default_rng([int(p["seed"]), 11])

        # ---- stage 1: datasets ------------------------------------------------
        t0 = time.perf_counter()
        obj = DataObjective.from_instance(instance)
        diag["submodularity"] = submodularity_check(obj, rng)
        if p["dataset_method"] == "exhaustive":
            masks = all_masks(obj.n)[1:]
            vals = obj.values(masks)
            order = np.argsort(vals, kind="stable")
            ranking = iter([(tuple(np.nonzero(masks[i])[0].tolist()), float(vals[i])) for i in order])
            next_set = lambda: next(ranking, None)  # noqa: E731
            ranker = None
        else:
            ranker = SubsetRanker(obj)
            next_set = ranker.next
        if obj.n <= EXHAUSTIVE_MIN_MAX:
            ex = exhaustive_minimum(obj)
            diag["dataset_exhaustive"] = {"subset": [instance.datasets[i].name for i in ex.subset],
                                          "value": ex.value}
        diag["stage_seconds"]["datasets"] += time.perf_counter() - t0

        loss_max_eff = float(instance.loss_max)
        backtracks_left = int(p["max_backtracks"])
        retries_left = int(p["max_retries"])
        last_reason = "no dataset choice was tried"
        subset = None
        final_plan = final_eval = None
        chosen = None
        while True:
            # ---- (re)select datasets ---------------------------------------------
            if subset is None:
                t0 = time.perf_counter()
                nxt = next_set()
                diag["stage_seconds"]["datasets"] += time.perf_counter() - t0
                if nxt is None:
                    last_reason += "; every dataset choice has been blacklisted"
                    break
                subset, fval = nxt
                names = [instance.datasets[i].name for i in subset]
                volume, gamma = instance.data_effect(names)
                k_hat = float(obj.epochs_needed(np.array([gamma]))[0])
                diag.setdefault("dataset_choices", []).append({"subset": names, "objective": fval,
                                                               "k_hat": k_hat})
                time_max_eff = float(instance.time_max)
                blacklist: set = set()
            ref_epochs = int(min(instance.horizon, max(1, math.ceil(k_hat)))) if math.isfinite(k_hat) else instance.horizon

            # ---- stage 2: models --------------------------------------------------
            s2 = _stage2(instance, gamma, volume, method, p["eta"], n_theta, tail_share,
                         ref_epochs, loss_max_eff, time_max_eff, rounding=p["rounding"])
            diag["stage_seconds"]["models"] += s2.seconds
            diag["graphs"].extend(s2.graphs)
            cands = [c for c in s2.candidates if tuple(c.models) not in blacklist]
            if not cands:
                last_reason = (f"no model path meets the quantile target within Tmax and K̄ "
                               f"for datasets {names}")
                diag["backtracks"].append({"stage": "models", "action": "blacklist datasets", "datasets": names})
                subset = None
                if backtracks_left == 0:
                    break
                backtracks_left -= 1
                continue

            # ---- stage 3: clusters + allocation ------------------------------------
            plan = None
            t0 = time.perf_counter()
            for cand in cands:
                plan, info = _stage3(instance, cand.models, names, subset, volume, p["epsilon"], p["reoptimize"])
                if plan is not None:
                    chosen = (cand, info)
                    break
                blacklist.add(tuple(cand.models))
                diag["backtracks"].append({"stage": "allocation", "action": "blacklist model path",
                                           "epochs": len(cand.models), "reason": info["reason"]})
            diag["stage_seconds"]["allocation"] += time.perf_counter() - t0
            if plan is None:
                last_reason = "no cluster/allocation fits Tmax for the selected model paths"
                if backtracks_left == 0:
                    break
                backtracks_left -= 1
                time_max_eff *= 0.9  # ask stage 2 for faster model paths
                diag["backtracks"].append({"stage": "allocation", "action": "tighten deadline",
                                           "time_max_eff": time_max_eff})
                continue

            # ---- best-exp only: train on until the quantile is met --------------------
            if self.forced_method == "expected":
                plan, ext = self._train_on(instance, plan, chosen[0].models, names, subset, volume, gamma, p, diag)
                if plan is None:
                    last_reason = ext
                    break

            # ---- out-of-sample check --------------------------------------------------
            t0 = time.perf_counter()
            ev = evaluate_plan(instance, plan, samples=p["check_samples"], seed=_check_seed(p["seed"]),
                               trajectory=False)
            diag["stage_seconds"]["evaluation"] += time.perf_counter() - t0
            if ev.feasible:
                final_plan, final_eval = plan, ev
                break
            excess = ev.quantile_ci[1] - instance.loss_max
            width = ev.quantile_ci[1] - ev.quantile_ci[0]
            diag["retries"].append({"loss_max_eff": loss_max_eff, "quantile": ev.quantile,
                                    "quantile_ci": list(ev.quantile_ci), "verdict": ev.verdict,
                                    "violations": ev.violations})
            last_reason = (f"out-of-sample check failed (verdict {ev.verdict}, quantile {ev.quantile:.6g} "
                           f"vs ℓmax {instance.loss_max:.6g})")
            if ev.violations:
                last_reason += "; " + "; ".join(ev.violations)
            if retries_left == 0 or self.forced_method == "expected":
                break
            retries_left -= 1
            loss_max_eff -= max(excess, 0.0) + width + 1e-9 * max(1.0, abs(instance.loss_max))

        guarantee = "proven" if method in ("chernoff", "cantelli") else "out-of-sample check"
        if final_plan is not None and p.get("calibrate") and not self.forced_method:
            t0 = time.perf_counter()
            ctx = _Context(instance=instance, method=method, eta=p["eta"], n_theta=n_theta, tail_share=tail_share,
                           rounding=p["rounding"], epsilon=p["epsilon"], reoptimize=p["reoptimize"],
                           gamma=gamma, volume=volume, names=names, subset=subset, ref_epochs=ref_epochs,
                           time_max_eff=time_max_eff, blacklist=blacklist,
                           check_samples=p["check_samples"], seed=p["seed"])
            cal = _calibrate(ctx, loss_max_eff, final_plan, final_eval)
            diag["stage_seconds"]["calibration"] = time.perf_counter() - t0
            diag["calibration"] = cal.info
            if cal.improved:
                final_plan, final_eval, chosen = cal.plan, cal.evaluation, cal.chosen
                loss_max_eff = cal.target
                guarantee = "statistical"
        diag["guarantee"] = guarantee
        diag["stage_seconds"]["total"] = time.perf_counter() - t_start
        if ranker is not None:
            diag["min_norm_iterations"] = ranker.iterations
        if final_plan is None:
            return SolveResult(algorithm=self.name, status="infeasible", message=last_reason,
                               diagnostics=_jsonable(diag))
        cand, info = chosen
        diag["allocation"] = info
        diag["loss_max_effective"] = loss_max_eff
        diag["quantile_bound"] = cand.quantile_bound
        diag["bound"] = {"method": cand.bound.method, "param": cand.bound.param,
                         "offset": cand.bound.offset, "guarantee": cand.bound.guarantee,
                         "tail_delta": cand.bound.tail_delta, "notes": list(cand.bound.notes)}
        if guarantee == "statistical":
            # The calibrated path's surrogate value exceeds ℓmax: the bound no
            # longer proves anything; what stands behind the plan is its test.
            diag["bound"]["guarantee"] = (
                f"statistical: passed an out-of-sample test at level {CALIBRATION_CONFIDENCE} family-wise "
                f"(P(quantile > loss_max) <= {(1 - CALIBRATION_CONFIDENCE) / 2:g} over the tests' draws); "
                f"its surrogate value {cand.quantile_bound:.6g} is not a bound at loss_max")
        diag["graph_vertices"] = int(sum(g["vertices"] for g in diag["graphs"]))
        diag["graph_edges"] = int(sum(g["edges"] for g in diag["graphs"]))
        diag["own_evaluation"] = {"quantile": final_eval.quantile, "quantile_ci": list(final_eval.quantile_ci),
                                  "verdict": final_eval.verdict, "samples": final_eval.samples}
        return SolveResult(
            algorithm=self.name, status="feasible",
            message=f"{final_plan.n_epochs} epochs, datasets {names}",
            plan=final_plan, cost=final_eval.cost, diagnostics=_jsonable(diag),
        )

    # ----------------------------------------------------------- best-exp extension
    def _train_on(self, instance, plan, models, names, subset, volume, gamma, p, diag):
        """Overridden by :class:`BestExp`; DepL never trains on."""
        return plan, ""


class BestExp(DepL):
    """*best-exp* (Sec. VI-B): DepL's decisions driven by the expected loss, then
    trained on until the ω-quantile target is met out-of-sample."""

    name = "best-exp"
    description = "best-exp: expected-loss model path, then trains on until the quantile target is met"
    parameters = {k: v for k, v in _PARAMS.items()
                  if k not in ("quantile_method", "n_theta", "tail_share", "calibrate")}
    forced_method = "expected"

    @staticmethod
    def _greedy_extension(instance, last: int, start_epoch: int, count: int, gamma: float) -> list:
        """Models of ``count`` extra epochs, each maximising the expected loss decrease."""
        means = np.array([m.improvement.mean() for m in instance.models])
        jump_mean = np.full((instance.n_models, instance.n_models), np.inf)
        np.fill_diagonal(jump_mean, 0.0)
        for p_idx, (a, b) in enumerate(instance.switch_pairs):
            jump_mean[a, b] = instance.switches[p_idx].jump.mean()
        out = []
        for k in range(start_epoch, start_epoch + count):
            gain = gamma * instance.run_scale[k - 1] * means - jump_mean[last]
            m = int(np.argmax(np.where(np.isfinite(gain), gain, -np.inf)))
            out.append(m)
            last = m
        return out

    def _train_on(self, instance, plan, models, names, subset, volume, gamma, p, diag):
        t0 = time.perf_counter()
        models = [int(m) for m in models]
        K = len(models)
        room = instance.horizon - K
        ext = self._greedy_extension(instance, models[-1], K + 1, room, gamma) if room > 0 else []
        full = np.array(models + ext, dtype=int)
        # Simulate the base plan and every extension length at once (own
        # stream, independent of the evaluator's).
        rng = np.random.default_rng([int(p["seed"]), 23])
        n = int(p["check_samples"])
        traj = simulate_trajectories(instance, full, np.full(full.size, gamma), n, rng)
        rank = quantile_rank(instance.omega, n)
        q = np.partition(traj[:, K:], rank - 1, axis=0)[rank - 1]
        ok = np.nonzero(q <= instance.loss_max)[0]
        extra = int(ok[0]) if ok.size else None
        info = {"base_epochs": K, "quantile_base": float(q[0])}
        diag["train_on"] = info
        if extra is None:
            diag["stage_seconds"]["train_on"] = time.perf_counter() - t0
            return None, (f"best-exp: even {instance.horizon} epochs do not bring the simulated "
                          f"{instance.omega}-quantile below ℓmax")
        # Confirm with the evaluator, adding epochs while it disagrees.
        while True:
            seq = full[: K + extra].tolist()
            new_plan, s3 = _stage3(instance, seq, names, subset, volume, p["epsilon"], p["reoptimize"])
            if new_plan is None:
                diag["stage_seconds"]["train_on"] = time.perf_counter() - t0
                return None, f"best-exp: {K + extra} epochs no longer fit Tmax ({s3['reason']})"
            ev = evaluate_plan(instance, new_plan, samples=n, seed=_check_seed(p["seed"]), trajectory=False)
            if ev.feasible or K + extra >= full.size:
                break
            extra += 1
        info.update(extra_epochs=extra, epochs=K + extra)
        diag["stage_seconds"]["train_on"] = time.perf_counter() - t0
        return new_plan, ""


__all__ = ["DepL", "BestExp", "most_capable_cluster"]
