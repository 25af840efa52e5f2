"""A certified bracket on the optimum of the chance-constrained problem (2)–(6).

The exact MILP proves optimality only for the sample-average problem (SAA)
on its S in-sample scenarios; its plan may miss ℓmax out of sample, so its
cost is not a yardstick for plans that meet the true constraint (3).
:func:`certify` brackets the *true* optimum z* instead:

LB  — M independent SAA replications at the nominal risk α = 1 − ω, each
      solved exactly by the registered ``milp`` solver (its proven dual bound
      is used, a valid lower bound on that SAA optimum); the L-th smallest is
      ≤ z* with confidence 1 − β_L, L from the binomial formula of
      Luedtke & Ahmed (2008, Sec. 4) / Pagnoncelli, Ahmed & Shapiro (2009,
      Sec. 4) (``formulations.binomial.lower_bound_order``).
UB  — the cheapest candidate plan whose violation probability P(ℓ(K) > ℓmax)
      is certified ≤ α by an exact one-sided Clopper–Pearson bound on N′ fresh
      draws. Candidates: the M replication plans, SAA optima at tightened
      risk levels γ = f·α for f in a grid (Luedtke & Ahmed 2008, Sec. 3: a
      smaller risk level yields feasible plans with high probability), and
      any plans handed in (other algorithms'). The draws come from the
      evaluator's out-of-sample stream with a seed no SAA and no sweep uses,
      so they are independent of every candidate; the T distinct candidates
      are each tested at β_U/T (Bonferroni), so the kept plan is feasible
      with confidence ≥ 1 − β_U whatever the tests' dependence.

By default β_L = β_U = β/2, so the bracket LB ≤ z* ≤ UB holds *jointly* with
confidence ≥ 1 − β (union bound). On an instance whose random terms are all
point masses the SAA with one scenario is the true problem: one replication
gives LB = UB = the MILP optimum, with certainty.

Replications run through a ``map`` callable (``map(fn, tasks) -> results``
in order): sequential by default, :func:`process_map` for a local process
pool, :func:`dask_map` for a Dask cluster; the benchmark runner may pass its
own. Each task is a plain dict (the instance as JSON-ready data), so it
pickles to any worker.

References
----------
J. Luedtke and S. Ahmed, SIAM J. Optim. 19 (2008), Secs. 3–4.
B. K. Pagnoncelli, S. Ahmed and A. Shapiro, J. Optim. Theory Appl. 142
(2009), Sec. 4. Clopper & Pearson, Biometrika 26 (1934). docs/certify.md.

Examples
--------
>>> from deplbench.solvers.certified import certify          # doctest: +SKIP
>>> b = certify(instance, replications=10, scenarios=2000)    # doctest: +SKIP
>>> b["lower_bound"]["value"], b["upper_bound"]["value"], b["width"]   # doctest: +SKIP
(1821.3, 1853.9, 0.0176)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

from deplbench.errors import SolverError
from deplbench.formulations.binomial import (CERTIFIED_FEASIBLE, lower_bound_order,
                                             order_statistic_bound)
from deplbench.formulations.evaluate import evaluate_plan
from deplbench.formulations.plan import Plan, parse_plan
from deplbench.formulations.result import SolveResult
from deplbench.params import Param
from deplbench.solvers.base import PlotStyle, Solver, solve

DEFAULT_CONFIDENCE = 0.95
#: M: with S = 2000 and β_L = 0.025, ρ ≈ 0.56 and L = 7 (the 7th smallest of
#: 20); more replications raise L/M towards ρ and so the LB (each solve of a
#: realistic instance takes about 1.5 CPU-seconds).
DEFAULT_REPLICATIONS = 20
DEFAULT_SCENARIOS = 2000
#: N′: with 2·10⁵ draws a plan with true violation 0.0093 is certified ≤ 0.01.
DEFAULT_VALIDATION = 200_000
#: Tightened SAA risk levels for UB candidates, as fractions f of α (γ = f·α).
DEFAULT_RISK_GRID = (0.9, 0.8, 0.7, 0.6)
#: SAA solves (independent seeds) per tightened level: SAA plans overfit their
#: scenarios, so their true violation varies a lot between seeds; more draws
#: of the same level give more chances of a cheap certifiable plan.
DEFAULT_GRID_SEEDS = 4
#: Wall seconds per SAA solve. Generous: a replication stopped without a proven
#: bound contributes only the trivial bound 0 to LB.
DEFAULT_TIME_LIMIT = 300.0
#: Validation seed = seed + this offset: a seed that neither the replications
#: (seed, seed + 1, …) nor the sweeps' evaluation (seed 0) use, so the
#: validation draws are independent of every candidate plan.
VALIDATION_SEED_OFFSET = 1_000_003

Mapper = Callable[[Callable[[dict], dict], list], Iterable[dict]]


def _sequential_map(fn, tasks):
    return [fn(t) for t in tasks]


def process_map(workers: int) -> Mapper:
    """A ``map`` running tasks on a local pool of ``workers`` processes."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SolverError(f"workers: must be an integer >= 1, got {workers!r}")

    def run(fn, tasks):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        tasks = list(tasks)
        if workers == 1 or len(tasks) <= 1:
            return _sequential_map(fn, tasks)
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)),
                                 mp_context=mp.get_context("forkserver")) as pool:
            return list(pool.map(fn, tasks))

    return run


def dask_map(client) -> Mapper:
    """A ``map`` submitting tasks to a ``dask.distributed.Client``."""

    def run(fn, tasks):
        futures = client.map(fn, list(tasks), pure=False)
        return client.gather(futures)

    return run


def is_deterministic(instance) -> bool:
    """True when every random loss term is a point mass (the SAA is then exact)."""
    return all(m.improvement.is_deterministic for m in instance.models) and all(
        sw.jump.is_deterministic for sw in instance.switches)


def _check_args(instance, confidence, replications, scenarios, validation, risk_grid, time_limit,
                seed, gap, lb_share, grid_seeds) -> tuple[float, ...]:
    """Validate :func:`certify`'s arguments; return the risk grid as floats."""
    def integer(name, value, low):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SolverError(f"{name}: must be an integer >= {low}, got {value!r}")

    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 < confidence < 1:
        raise SolverError(f"confidence: must be in (0, 1), got {confidence!r}")
    integer("replications", replications, 1)
    integer("scenarios", scenarios, 1)
    integer("validation", validation, 100)
    integer("seed", seed, 0)
    integer("grid_seeds", grid_seeds, 1)
    if not isinstance(time_limit, (int, float)) or not time_limit > 0 or not math.isfinite(time_limit):
        raise SolverError(f"time_limit: must be a positive number of seconds, got {time_limit!r}")
    if not isinstance(gap, (int, float)) or not 0 < gap < 1:
        raise SolverError(f"gap: must be in (0, 1), got {gap!r}")
    if not isinstance(lb_share, (int, float)) or not 0 < lb_share < 1:
        raise SolverError(f"lb_share: must be in (0, 1), got {lb_share!r}")
    grid = tuple(float(f) for f in risk_grid)
    for f in grid:
        if not 0 < f <= 1:
            raise SolverError(f"risk_grid: every factor f (γ = f·α) must be in (0, 1], got {f!r}")
    if not 0 < instance.omega < 1:  # pragma: no cover - the instance model enforces it
        raise SolverError(f"omega: must be in (0, 1), got {instance.omega!r}")
    return grid


def parse_risk_grid(text: str) -> tuple[float, ...]:
    """``"0.9,0.8"`` → (0.9, 0.8); an empty string gives no tightened level."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    try:
        return tuple(float(t) for t in items)
    except ValueError:
        raise SolverError(f"risk_grid: expected comma-separated numbers in (0, 1], got {text!r}") from None


def saa_task(task: dict) -> dict:
    """One SAA solve by the registered exact ``milp`` (runs in any worker).

    ``task`` holds ``instance`` (JSON-ready data), ``omega`` (the SAA's
    quantile level 1 − γ), ``scenarios``, ``seed``, ``time_limit``, ``gap``
    and ``role``/``factor`` labels; returns a JSON-ready dict.
    """
    from deplbench.instances.model import parse_instance

    inst = parse_instance(task["instance"])
    if task["omega"] != inst.omega:
        inst = inst.with_changes(omega=task["omega"])
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(inst, "milp", evaluate=False, scenarios=task["scenarios"], seed=task["seed"],
                time_limit=task["time_limit"], gap=task["gap"])
    return {
        "role": task["role"], "factor": task.get("factor"), "seed": task["seed"],
        "omega": task["omega"], "scenarios": task["scenarios"], "status": res.status,
        "message": res.message, "cost": res.cost, "lower_bound": res.lower_bound,
        "plan": res.plan.to_dict() if res.plan is not None else None,
        "runtime_s": time.perf_counter() - t0,
        # CPU seconds of this process (HiGHS runs single-threaded here): a
        # load-independent measure of the work, next to the wall time.
        "cpu_s": time.process_time() - c0,
    }


def _bound_value(rep: dict) -> tuple[float, str]:
    """A valid lower bound on one replication's SAA optimum, and its kind.

    An SAA proven infeasible has optimum +∞; the MILP's proven bound is used
    when there is one; otherwise (error, stop without a bound) 0 is the only
    safe value, since every cost (2) is ≥ 0.
    """
    if rep["status"] == "infeasible":
        return math.inf, "infeasible"
    if rep["lower_bound"] is not None and math.isfinite(rep["lower_bound"]):
        bound = rep["lower_bound"]
        if rep["cost"] is not None:
            bound = min(bound, rep["cost"])
        return max(0.0, float(bound)), "milp bound"
    return 0.0, "trivial (no bound proven)"


def validation_task(task: dict) -> dict:
    """Judge one candidate plan on the N′ validation draws (runs in any worker).

    Every task uses the same seed, hence the same draws, so the tests may run
    on different workers; Bonferroni needs no independence between them.
    """
    from deplbench.instances.model import parse_instance

    inst = parse_instance(task["instance"])
    t0, c0 = time.perf_counter(), time.process_time()
    ev = evaluate_plan(inst, parse_plan(task["plan"]), samples=task["validation"], seed=task["seed"],
                       confidence=task["confidence"], trajectory=False)
    return {"cost": ev.cost, "constraints_ok": ev.constraints_ok, "violation_count": ev.violation_count,
            "draws": ev.samples, "violation_ub": ev.violation_ub,
            "certified": ev.certified_verdict == CERTIFIED_FEASIBLE and ev.constraints_ok,
            "runtime_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def _validate_candidates(mapper, data, candidates, validation, seed, confidence_each) -> list[dict]:
    """Judge every distinct candidate on the same N′ validation draws."""
    tasks = [{"instance": data, "plan": c["plan"].to_dict(), "validation": validation, "seed": seed,
              "confidence": confidence_each} for c in candidates]
    results = list(mapper(validation_task, tasks)) if tasks else []
    return [{**{k: v for k, v in c.items() if k != "plan"}, "plan": c["plan"].to_dict(), **r}
            for c, r in zip(candidates, results)]


def certify(instance, confidence: float = DEFAULT_CONFIDENCE, replications: int = DEFAULT_REPLICATIONS,
            scenarios: int = DEFAULT_SCENARIOS, validation: int = DEFAULT_VALIDATION,
            risk_grid: Iterable[float] = DEFAULT_RISK_GRID, time_limit: float = DEFAULT_TIME_LIMIT,
            seed: int = 0, gap: float = 1e-4, candidates: Mapping[str, Plan] | None = None,
            map: Mapper | None = None, lb_share: float = 0.5, grid_seeds: int = DEFAULT_GRID_SEEDS) -> dict:
    """Certified bracket [LB, UB] on the true chance-constrained optimum.

    Parameters
    ----------
    instance : Instance
    confidence : float, default 0.95
        1 − β: the bracket holds jointly with at least this confidence.
    replications : int, default 20
        M independent SAA replications for LB (seeds ``seed … seed + M − 1``).
    scenarios : int, default 2000
        S scenarios per SAA solve (replications and tightened candidates).
    validation : int, default 200000
        N′ fresh draws judging every candidate plan.
    risk_grid : iterable of float, default (0.9, 0.8, 0.7, 0.6)
        Factors f of the tightened SAA risk levels γ = f·(1 − ω) whose optimal
        plans are UB candidates (``grid_seeds`` solves per level, seeds
        ``seed + M``, ``seed + M + 1``, …).
    time_limit : float, default 300
        Seconds per SAA solve (a stopped solve still gives a valid bound).
    seed : int, default 0
        Base seed; validation uses ``seed + VALIDATION_SEED_OFFSET``.
    gap : float, default 1e-4
        MILP relative gap per SAA solve (LB uses the proven bound, not the cost).
    candidates : mapping of str to Plan, optional
        More UB candidates, e.g. other algorithms' plans, by label.
    map : callable, optional
        ``map(fn, tasks)`` executing the SAA solves (default sequential; see
        :func:`process_map`, :func:`dask_map`).
    lb_share : float, default 0.5
        Share of β spent on LB (β_L = share·β, β_U = (1 − share)·β).
    grid_seeds : int, default 4
        Independent SAA solves per tightened risk level.

    Returns
    -------
    dict
        JSON-ready bracket record: ``lower_bound`` (value, confidence, method,
        order L, ρ, …), ``upper_bound`` (value, plan, source, violation count,
        draws, Clopper–Pearson bound, per-test confidence, tests T),
        ``width`` = (UB − LB)/UB, ``confidence``, ``status``, ``message``,
        ``replications`` and ``candidates`` (every SAA optimum, bound and
        timing) and ``runtime_s``.

    Raises
    ------
    SolverError
        For an invalid argument (the message names it). Failures inside the
        SAA solves never raise: they weaken the bound (see Notes).

    Notes
    -----
    A replication that fails or stops without a proven bound contributes 0
    (costs are ≥ 0) — LB stays valid, only looser. See
    :mod:`deplbench.formulations.binomial` for both bounds' exact statements.
    """
    grid = _check_args(instance, confidence, replications, scenarios, validation, risk_grid,
                       time_limit, seed, gap, lb_share, grid_seeds)
    mapper = map or _sequential_map
    t_start = time.perf_counter()
    beta = 1.0 - float(confidence)
    beta_l, beta_u = lb_share * beta, (1.0 - lb_share) * beta
    alpha = 1.0 - float(instance.omega)
    exact = is_deterministic(instance)
    data = instance.model_dump(mode="json", by_alias=True)
    if exact:
        # One scenario is the distribution: the SAA is the true problem.
        replications, scenarios, grid, gap = 1, 1, (), min(gap, 1e-7)
    base = {"instance": data, "scenarios": scenarios, "time_limit": float(time_limit), "gap": float(gap)}
    tasks = [{**base, "role": "replication", "omega": float(instance.omega), "seed": seed + i}
             for i in range(replications)]
    levels = [f for f in grid for _ in range(grid_seeds)]
    tasks += [{**base, "role": "tightened", "factor": f, "omega": 1.0 - f * alpha,
               "seed": seed + replications + j} for j, f in enumerate(levels)]
    t0 = time.perf_counter()
    results = list(mapper(saa_task, tasks))
    solve_wall = time.perf_counter() - t0
    reps = [r for r in results if r["role"] == "replication"]
    for rep in reps:
        rep["value"], rep["value_kind"] = _bound_value(rep)

    # ---- LB: order statistic of the replications (binomial formula) -------
    order = lower_bound_order(replications, scenarios, alpha, 1.0 - beta_l,
                              rho=1.0 if exact else None)
    lb_value = order_statistic_bound([r["value"] for r in reps], order.order) if order.order else None
    lower = {
        "value": lb_value,
        "confidence": 1.0 if exact else 1.0 - beta_l,
        "achieved_confidence": 1.0 if exact else order.achieved_confidence,
        "method": ("exact: all random terms are point masses, the one-scenario SAA is the problem "
                   "(proven MILP bound)") if exact else
                  (f"Luedtke-Ahmed/Pagnoncelli-Ahmed-Shapiro: order statistic L = {order.order} of M = "
                   f"{replications} SAA optima (S = {scenarios}, risk γ = α = {alpha:.6g}), "
                   f"ρ = {order.rho:.4f}" if order.order else
                   f"none: M = {replications} replications are too few for confidence {1 - beta_l:.4g} "
                   f"(ρ = {order.rho:.4f})"),
        **{k: v for k, v in order.to_dict().items() if k not in ("confidence", "achieved_confidence")},
        # Replications stopped without a proven bound count as 0: LB stays
        # valid but loosens; a nonzero count here says to raise time_limit.
        "trivial_replications": sum(r["value_kind"].startswith("trivial") for r in reps),
    }

    # ---- UB: cheapest candidate certified on fresh draws (Bonferroni) -----
    pool: dict[str, dict] = {}
    for r in results:
        if r["plan"] is None:
            continue
        label = (f"replication seed {r['seed']}" if r["role"] == "replication"
                 else f"SAA at γ = {r['factor']:g}·α, seed {r['seed']}")
        _add_candidate(pool, parse_plan(r["plan"]), label, r["role"], r["omega"])
    for label, plan in (candidates or {}).items():
        _add_candidate(pool, plan, str(label), "external", None)
    tests = max(1, len(pool))
    conf_each = 1.0 - beta_u / tests
    vseed = seed + VALIDATION_SEED_OFFSET
    t0 = time.perf_counter()
    judged = _validate_candidates(mapper, data, list(pool.values()), validation, vseed, conf_each)
    validate_s = time.perf_counter() - t0
    judged.sort(key=lambda c: c["cost"])
    best = next((c for c in judged if c["certified"]), None)
    upper = None
    if best is not None:
        upper = {"value": best["cost"], "plan": best["plan"], "source": best["source"],
                 "sources": best["sources"], "violation_count": best["violation_count"],
                 "draws": best["draws"], "violation_ub": best["violation_ub"],
                 "confidence": 1.0 if exact else 1.0 - beta_u, "per_test_confidence": conf_each,
                 "tests": tests, "validation_seed": vseed,
                 "method": ("exact: the plan's loss is deterministic" if exact else
                            f"one-sided Clopper-Pearson on N' = {validation} fresh draws (seed {vseed}), "
                            f"each of T = {tests} candidates at {conf_each:.6g} (Bonferroni)")}
    width = None
    if upper is not None and lb_value is not None and math.isfinite(lb_value) and upper["value"] > 0:
        width = (upper["value"] - lb_value) / upper["value"]
    elif upper is not None and lb_value is not None and upper["value"] == 0 == lb_value:
        width = 0.0
    status, message = _status(lower, upper, width, exact, confidence)
    return {
        "instance": instance.name, "omega": float(instance.omega), "risk": alpha,
        "loss_max": float(instance.loss_max), "confidence": 1.0 if exact else float(confidence),
        "exact": exact, "status": status, "message": message,
        "lower_bound": lower, "upper_bound": upper, "width": width,
        "saa_optima": [r["cost"] for r in reps],
        "replications": [{k: v for k, v in r.items() if k != "plan"} for r in reps],
        "candidates": [{k: v for k, v in c.items() if k != "plan"} for c in judged],
        "settings": {"confidence": float(confidence), "replications": replications, "scenarios": scenarios,
                     "validation": validation, "risk_grid": list(grid), "time_limit": float(time_limit),
                     "seed": seed, "gap": float(gap), "lb_share": float(lb_share),
                     "grid_seeds": grid_seeds},
        "runtime_s": {"total": time.perf_counter() - t_start, "saa_solves_wall": solve_wall,
                      "saa_solves_sum": sum(r["runtime_s"] for r in results), "validation": validate_s,
                      "cpu": sum(r["cpu_s"] for r in results) + sum(c["cpu_s"] for c in judged)},
    }


def _add_candidate(pool: dict, plan: Plan, label: str, role: str, omega) -> None:
    """Identical plans are tested once (fewer tests, milder Bonferroni)."""
    key = json.dumps(plan.to_dict(), sort_keys=True)
    if key in pool:
        pool[key]["sources"].append(label)
        return
    pool[key] = {"plan": plan, "source": label, "sources": [label], "role": role, "saa_omega": omega}


def _status(lower, upper, width, exact, confidence) -> tuple[str, str]:
    """``bracket`` / ``upper bound only`` / ``lower bound only`` / ``infeasible`` / ``none``
    (or ``inconsistent``), with a sentence."""
    lb = lower["value"]
    if lb is not None and math.isinf(lb) and upper is None:
        conf = "with certainty" if exact else f"at confidence {lower['confidence']:.4g}"
        return "infeasible", (f"the chance-constrained problem is infeasible {conf}: the order-statistic "
                              "SAA replication has no feasible plan")
    if upper is not None and lb is not None:
        if lb > upper["value"] * (1 + 1e-9):
            return "inconsistent", (f"LB {lb:.6g} > UB {upper['value']:.6g}: one of the two statements "
                                    f"failed (probability ≤ {1 - confidence:.3g}); rerun with another seed")
        conf = "with certainty" if exact else f"jointly at confidence ≥ {confidence:.3g}"
        return "bracket", (f"optimum of the chance-constrained problem in [{lb:.6g}, {upper['value']:.6g}] "
                           f"{conf} (width {100 * width:.3g} %); plan certified feasible")
    if upper is not None:
        return "upper bound only", (f"plan certified feasible (cost {upper['value']:.6g}); no lower bound: "
                                    + lower["method"])
    if lb is not None:
        return "lower bound only", (f"optimum ≥ {lb:.6g} at confidence {lower['confidence']:.4g}; no candidate "
                                    "plan certified feasible (raise validation N′ or tighten the risk grid)")
    return "none", "neither bound could be established: " + lower["method"]


class MilpCertified(Solver):
    """The certified bracket as an algorithm: plan = UB plan, lower_bound = LB.

    ``status`` is ``feasible`` when a plan is certified (``message`` states the
    bracket, its confidence and method; ``diagnostics["bracket"]`` holds the
    full record of :func:`certify`), ``infeasible`` with the reason when no
    candidate could be certified (``lower_bound`` still set when LB exists).
    """

    name: ClassVar[str] = "milp-certified"
    label: ClassVar[str] = "MILP bracket (certified)"
    description: ClassVar[str] = ("certified bracket on the chance-constrained optimum: LB from M SAA "
                                  "replications, plan = cheapest Clopper-Pearson-certified candidate")
    exact: ClassVar[bool] = False
    style: ClassVar[PlotStyle] = PlotStyle("#1f77b4", "*", ":")
    parameters: ClassVar[dict[str, Param]] = {
        "confidence": Param(DEFAULT_CONFIDENCE, float, "joint confidence 1 − β of the bracket",
                            low=0.0, low_inclusive=False, high=0.999999),
        "replications": Param(DEFAULT_REPLICATIONS, int, "M SAA replications for the lower bound", low=1),
        "scenarios": Param(DEFAULT_SCENARIOS, int, "S scenarios per SAA solve", low=1),
        "validation": Param(DEFAULT_VALIDATION, int, "N' fresh draws certifying candidate plans", low=100),
        "risk_grid": Param(",".join(f"{f:g}" for f in DEFAULT_RISK_GRID), str,
                           "tightened SAA risk factors f (γ = f·(1−ω)), comma-separated"),
        "time_limit": Param(DEFAULT_TIME_LIMIT, float, "seconds per SAA solve", low=0.0, low_inclusive=False),
        "seed": Param(0, int, "base seed of the replications (validation: seed + 1000003)", low=0),
        "gap": Param(1e-4, float, "MILP relative gap per SAA solve", low=0.0, low_inclusive=False,
                     high=0.999999),
        "algorithms": Param("", str, "comma-separated algorithms whose plans are also UB candidates"),
        "grid_seeds": Param(DEFAULT_GRID_SEEDS, int, "SAA solves per tightened risk level", low=1),
        "workers": Param(1, int, "local processes for the SAA solves", low=1),
    }

    def run(self, instance, **params) -> SolveResult:
        """Run :func:`certify`; bad parameters raise SolverError, the rest becomes data."""
        grid = parse_risk_grid(params["risk_grid"])
        extra, failed = candidate_plans(instance, params["algorithms"])
        bracket = certify(instance, confidence=params["confidence"], replications=params["replications"],
                          scenarios=params["scenarios"], validation=params["validation"], risk_grid=grid,
                          time_limit=params["time_limit"], seed=params["seed"], gap=params["gap"],
                          candidates=extra, map=process_map(params["workers"]),
                          grid_seeds=params["grid_seeds"])
        if failed:
            bracket["candidate_failures"] = failed
        return bracket_result(bracket)


def candidate_plans(instance, algorithms: str) -> tuple[dict[str, Plan], dict[str, str]]:
    """Run each named algorithm (unevaluated) and collect its plan as a UB candidate."""
    names = [a.strip() for a in str(algorithms).split(",") if a.strip()]
    plans, failed = {}, {}
    for name in names:
        if name == MilpCertified.name:
            raise SolverError("algorithms: 'milp-certified' cannot be its own candidate")
        res = solve(instance, name, evaluate=False)
        if res.plan is not None and res.status in ("optimal", "feasible", "time_limit"):
            plans[f"algorithm {name}"] = res.plan
        else:
            failed[name] = f"{res.status}: {res.message}"
    return plans, failed


def bracket_result(bracket: dict) -> SolveResult:
    """The :class:`SolveResult` of ``milp-certified`` for a :func:`certify` record."""
    upper, lower = bracket["upper_bound"], bracket["lower_bound"]
    lb = lower["value"] if lower["value"] is not None and math.isfinite(lower["value"]) else None
    diag = {"bracket": bracket, "certified": bracket["status"], "width": bracket["width"]}
    if upper is None:
        return SolveResult(algorithm=MilpCertified.name, status="infeasible", message=bracket["message"],
                           lower_bound=lb, diagnostics=diag)
    return SolveResult(algorithm=MilpCertified.name, status="feasible", message=bracket["message"],
                       plan=parse_plan(upper["plan"]), cost=upper["value"], lower_bound=lb,
                       gap=bracket["width"], diagnostics=diag)


__all__ = ["certify", "MilpCertified", "bracket_result", "candidate_plans", "process_map", "dask_map",
           "saa_task", "validation_task", "is_deterministic", "parse_risk_grid", "DEFAULT_CONFIDENCE", "DEFAULT_REPLICATIONS",
           "DEFAULT_SCENARIOS", "DEFAULT_VALIDATION", "DEFAULT_RISK_GRID", "DEFAULT_GRID_SEEDS",
           "VALIDATION_SEED_OFFSET"]
