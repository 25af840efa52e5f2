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
      Sec. 4) (``formulations.evaluation.binomial.lower_bound_order``).
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
confidence ≥ 1 − β (union bound). When the stage-1 bracket is wider than
``target_width`` (default 2 %), a second stage spends more: M₂ fresh
replications at S₂ = 10·S scenarios (a second LB; the larger is kept), and
N′₂ = 10⁶ fresh draws on the few cheapest plans that could be certified there
(:mod:`deplbench.solvers.certify.refine`). Half of β_L and of β_U is reserved for it before
any draw is made (Bonferroni over the stages), so the joint confidence stays
1 − β whether or not stage 2 runs. On an instance whose random terms are all
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
On an instance without randomness (one scenario is the distribution) the
bracket closes with certainty:

>>> from deplbench.instances.generators import generate
>>> knapsack = generate("knapsack", n_items=4, horizon=4, seed=0)
>>> b = certify(knapsack, replications=2, scenarios=20, validation=1000)
>>> b["status"], b["exact"], b["lower_bound"]["value"], b["upper_bound"]["value"], b["width"]
('bracket', True, 29584.0, 29584.0, 0.0)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.model.plan import Plan, parse_plan
from deplbench.formulations.model.result import SolveResult
from deplbench.jsonio import number_text
from deplbench.params import MAX_SEED, Param
from deplbench.solvers.base import PlotStyle, Solver
from deplbench.solvers.certify.refine import (
    add_saa_plans,
    judge,
    lower_from_replications,
    run_saa,
    saa_tasks,
    select_for_refinement,
    split_beta,
)
from deplbench.solvers.certify.result import NAME, bracket_events, bracket_result  # noqa: F401 - re-exported
from deplbench.solvers.certify.settings import (  # noqa: F401 - the defaults, re-exported
    DEFAULT_CONFIDENCE,
    DEFAULT_GRID_SEEDS,
    DEFAULT_REFINE_CANDIDATES,
    DEFAULT_REFINE_GRID_SEEDS,
    DEFAULT_REFINE_REPLICATIONS,
    DEFAULT_REFINE_RISK_GRID,
    DEFAULT_REFINE_SCENARIOS_FACTOR,
    DEFAULT_REFINE_SHARE,
    DEFAULT_REFINE_VALIDATION,
    DEFAULT_REPLICATIONS,
    DEFAULT_RISK_GRID,
    DEFAULT_SCENARIOS,
    DEFAULT_TARGET_WIDTH,
    DEFAULT_TIME_LIMIT,
    DEFAULT_VALIDATION,
    MAX_SEED_OFFSET,
    SETTINGS_PARAMETERS,
    VALIDATION_SEED_OFFSET,
    CertifiedSettings,
    CertifySettings,
)
from deplbench.solvers.certify.tasks import (
    SAA_HEURISTIC_TIME,
    Mapper,
    add_candidate,
    dask_map,
    not_started,
    parse_risk_grid,
    process_map,
    saa_task,
    sequential_map,
    skipped_tests,
    stop_instant,
    validate_candidates,
    validation_task,
)
from deplbench.solvers.exact.milp import Milp
from deplbench.solvers.registry import get_solver
from deplbench.solvers.run import solve


def certify(instance, settings: CertifySettings | None = None, *, candidates: Mapping[str, Plan] | None = None,
            map: Mapper | None = None, **options: Any) -> dict:
    """Certified bracket [LB, UB] on the true chance-constrained optimum.

    Parameters
    ----------
    instance : Instance
    settings : CertifySettings, optional
        Every setting of the bracket (:mod:`deplbench.solvers.certify.settings`); default:
        built from ``**options``.
    candidates : mapping of str to Plan, optional
        More UB candidates, e.g. other algorithms' plans, by label.
    map : callable, optional
        ``map(fn, tasks)`` executing the SAA solves and the validation
        (default sequential; see :func:`process_map`, :func:`dask_map`).
    **options
        The fields of :class:`CertifySettings` as keywords, when ``settings``
        is not given:

        * ``confidence`` (0.95): 1 − β; the bracket holds jointly with at least
          this confidence, whether or not the refinement (stage 2) runs.
        * ``replications`` (20): M independent SAA replications for LB (seeds
          ``seed … seed + M − 1``); ``scenarios`` (2000): S scenarios per
          stage-1 SAA solve (replications and tightened candidates).
        * ``validation`` (200000): N′ fresh draws judging every stage-1 candidate.
        * ``risk_grid`` ((0.9, 0.8, 0.7, 0.6)): factors f of the tightened SAA
          risk levels γ = f·(1 − ω) whose optimal plans are UB candidates
          (``grid_seeds`` (4) solves per level, seeds ``seed + M``, …).
        * ``time_limit`` (300): seconds per SAA solve (a stopped solve still
          gives a valid bound: the MILP's dual bound at the limit); ``gap``
          (1e-4): MILP relative gap per SAA solve (LB uses the proven bound).
        * ``seed`` (0): base seed; validation uses ``seed + VALIDATION_SEED_OFFSET``
          (stage 1) and that plus 1 (stage 2).
        * ``lb_share`` (0.5): share of β spent on LB (β_L = share·β).
        * ``target_width`` (0.02): relative width (UB − LB)/UB above which
          stage 2 runs; None or 0 disables it (stage 1 then gets the whole β).
        * ``refine_share`` (0.5): share of β_L and of β_U reserved for stage 2
          (:func:`~deplbench.solvers.certify.refine.split_beta`); ``refine_replications``
          (80): M₂; ``refine_scenarios`` (None: 10·S): S₂;
          ``refine_validation`` (10⁶): N′₂ draws per stage-2 test;
          ``refine_candidates`` (6): at most this many stage-2 tests;
          ``refine_risk_grid`` ((0.95, 0.9)) and ``refine_grid_seeds`` (2):
          the stage-2 SAA candidates.
        * ``total_time_limit`` (None): wall seconds for the whole bracket.
          The SAA solves end by 80 % of it (each gets min(``time_limit``,
          time left); one not started counts as a replication without a
          bound, so LB stays valid, only looser); stage 2 starts only while
          time is left; a validation test starting after 90 % of it is
          skipped (its plan is not certified; it still counts in T).

        An outer deadline around the call (:func:`deplbench.limits.deadline`:
        a sweep task's stop, :func:`~deplbench.benchmarks.tasks.solver_stop_s`)
        is honoured the same way when it comes first: no SAA solve or
        validation test starts after it (a test or solve already running
        finishes, a solve within its own limit), stage 2 does not start, and
        the record's ``stopped`` says what was cut; the bracket is then what
        the finished work gives, still valid at its stated confidence.

    Returns
    -------
    dict
        JSON-ready bracket record: ``lower_bound`` (value, confidence, method,
        order L, ρ, ``stages``: each stage's LB), ``upper_bound`` (value, plan,
        source, violation count, draws, Clopper–Pearson bound, per-test
        confidence, tests T, which stage's test certified it), ``width`` =
        (UB − LB)/UB, ``confidence``, ``beta`` (the split of β), ``stages``
        (width after each stage, whether and why stage 2 ran), ``status``,
        ``message``, ``replications`` and ``candidates`` (every SAA optimum,
        bound, test and timing), ``runtime_s`` and ``stopped`` (None, or the
        line saying what an outer deadline cut short).

    Raises
    ------
    SolverError
        For an invalid setting (one line naming it), or ``settings`` and
        ``**options`` both given. Failures inside the
        SAA solves never raise: they weaken the bound (see Notes).

    Notes
    -----
    A replication that fails or stops without a proven bound contributes 0
    (costs are ≥ 0) — LB stays valid, only looser; one stopped by its time
    limit contributes the MILP's dual bound. See
    :mod:`deplbench.formulations.evaluation.binomial` for both bounds' exact statements
    and :mod:`deplbench.solvers.certify.refine` for the two-stage β accounting.
    """
    if settings is None:
        settings = CertifySettings.from_options(**options)
    elif options:
        raise SolverError(f"{sorted(options)[0]}: give certify's settings either as a CertifySettings "
                          "or as keywords, not both")
    t_start = time.perf_counter()
    exact = instance.is_deterministic   # every term a point mass: the SAA is then exact
    if exact:
        # One scenario is the distribution: the SAA is the true problem.
        settings = dataclasses.replace(settings, replications=1, scenarios=1, risk_grid=(),
                                       gap=min(settings.gap, 1e-7))
    target = settings.target_width or 0.0
    refining = target > 0 and not exact
    run = _Run(instance, settings, map or sequential_map, instance.model_dump(mode="json", by_alias=True),
               1.0 - float(instance.omega), exact,
               split_beta(settings.confidence, settings.lb_share, settings.refine_share, refining))
    total = settings.total_time_limit
    if total is not None:
        zero = time.time() - (time.perf_counter() - run.t_start)
        run.ends_at, run.tests_end = zero + 0.8 * total, zero + 0.9 * total
    lower1, upper, judged = _stage_one(run, candidates)
    width1 = _width(lower1["value"], upper)
    lower, lower2 = lower1, None
    need = refining and not (width1 is not None and width1 <= target)
    if need and total is not None and time.perf_counter() - run.t_start >= 0.8 * total:
        need = False
        run.stages.append({"stage": 2, "ran": False, "reason": f"total_time_limit {total:g} s used up by "
                           "stage 1", "beta_lower": run.betas["lower_stages"][1],
                           "beta_upper": run.betas["upper_stages"][1]})
    elif need and limits.expired():
        need = False
        run.cut.append("stage 2 not started")
        run.stages.append({"stage": 2, "ran": False, "reason": f"time limit {limits.time_limit_s():g} s reached "
                           "after stage 1", "beta_lower": run.betas["lower_stages"][1],
                           "beta_upper": run.betas["upper_stages"][1]})
    elif refining and not need and width1 is not None:
        run.stages.append({"stage": 2, "ran": False, "reason": f"stage-1 width {100 * width1:.3g} % ≤ target "
                           f"{100 * target:.3g} %", "beta_lower": run.betas["lower_stages"][1],
                           "beta_upper": run.betas["upper_stages"][1]})
    if need:
        lower2, upper, judged = _stage_two(run, upper, judged, width1)
        lower = lower2 if (lower2["value"] is not None and
                           (lower1["value"] is None or lower2["value"] > lower1["value"])) else lower1
    return _bracket_record(run, _combined_lower(lower, lower1, lower2, run.betas, exact, refining), upper,
                           judged, refining, t_start)


@dataclass
class _Run:
    """What every stage of one :func:`certify` call reads, and what they add up."""

    instance: Any
    settings: CertifySettings
    mapper: Mapper
    data: dict
    alpha: float
    exact: bool
    betas: dict
    results: list = field(default_factory=list)
    reps: list = field(default_factory=list)
    pool: dict = field(default_factory=dict)
    stages: list = field(default_factory=list)
    timing: dict = field(default_factory=lambda: {"saa_solves_wall": 0.0, "validation": 0.0})
    n_stage1: int = 0
    t_start: float = field(default_factory=time.perf_counter)
    #: ``total_time_limit`` as wall-clock instants (tasks may run in other
    #: processes): SAA solves end by 80 % of it, no test starts after 90 %.
    ends_at: float | None = None
    tests_end: float | None = None
    #: What an outer deadline cut short (:func:`_stops`), for the record's ``stopped``.
    cut: list = field(default_factory=list)

    @property
    def validation_seed(self) -> int:
        """Seed of the stage-1 draws (stage 2: this plus 1)."""
        return self.settings.seed + VALIDATION_SEED_OFFSET


def _count_cut(run: _Run, stop: str, what: str, n: int) -> None:
    """Record ``n`` SAA solves or tests not started because of an outer deadline (``stop``)."""
    if n and stop != "total_time_limit":
        run.cut.append(f"{n} {what} not started")


def _stage_one(run: _Run, candidates: Mapping[str, Plan] | None) -> tuple[dict, dict | None, list]:
    """LB from M replications, UB from T₁ tests on N′ draws: (LB record, UB or None, judged candidates)."""
    s = run.settings
    beta_l1, beta_u1 = run.betas["lower_stages"][0], run.betas["upper_stages"][0]
    tasks = saa_tasks(run.data, run.instance.omega, run.alpha, s.replications, s.scenarios, s.risk_grid,
                      s.grid_seeds, s.seed, s.time_limit, s.gap, stage=1)
    ends, stop = stop_instant(run.ends_at, run.settings.total_time_limit)
    for task in tasks:
        task["ends_at"], task["stop"] = ends, stop
    results, wall = run_saa(run.mapper, tasks, run.instance)
    _count_cut(run, stop, "SAA solves", not_started(results, stop))
    run.timing["saa_solves_wall"] += wall
    run.results += results
    run.reps = [r for r in results if r["role"] == "replication"]
    run.n_stage1 = len(run.reps)
    lower1 = lower_from_replications(run.reps, s.scenarios, run.alpha, beta_l1, run.exact, stage=1)
    add_saa_plans(run.pool, results, stage=1)
    for label, plan in (candidates or {}).items():
        key = add_candidate(run.pool, plan, str(label), "external", None)
        if key is not None:
            run.pool[key]["stage"] = 1
    t0 = time.perf_counter()
    ends, stop = stop_instant(run.tests_end, run.settings.total_time_limit)
    judged, upper = judge(run.mapper, run.data, list(run.pool.values()), s.validation, run.validation_seed,
                          beta_u1, run.exact, "stage 1", ends, stop)
    _count_cut(run, stop, "validation tests", skipped_tests(judged, stop))
    run.timing["validation"] += time.perf_counter() - t0
    run.stages.append({"stage": 1, "lower": lower1["value"], "upper": upper["value"] if upper else None,
                       "width": _width(lower1["value"], upper), "beta_lower": beta_l1, "beta_upper": beta_u1,
                       "tests": len(judged), "elapsed_s": time.perf_counter() - run.t_start})
    return lower1, upper, judged


def _stage_two(run: _Run, upper: dict | None, judged: list, width1: float | None) -> tuple[dict, dict | None, list]:
    """M₂ replications at S₂ scenarios (a second LB) and N′₂-draw tests of the few
    cheapest plans that could be certified there (:mod:`deplbench.solvers.certify.refine`):
    (stage-2 LB record, best UB, every judged or screened candidate)."""
    s = run.settings
    beta_l2 = run.betas["lower_stages"][1]
    beta_u1, beta_u2 = run.betas["upper_stages"]
    s2 = s.stage2_scenarios
    first = s.seed + s.replications + len(s.risk_grid) * s.grid_seeds
    tasks2 = saa_tasks(run.data, run.instance.omega, run.alpha, s.refine_replications, s2, s.refine_risk_grid,
                       s.refine_grid_seeds, first, s.time_limit, s.gap, stage=2)
    ends, stop = stop_instant(run.ends_at, run.settings.total_time_limit)
    for task in tasks2:
        task["ends_at"], task["stop"] = ends, stop
    results2, wall = run_saa(run.mapper, tasks2, run.instance)
    _count_cut(run, stop, "stage-2 SAA solves", not_started(results2, stop))
    run.timing["saa_solves_wall"] += wall
    run.results += results2
    reps2 = [r for r in results2 if r["role"] == "replication"]
    run.reps = run.reps + reps2
    lower2 = lower_from_replications(reps2, s2, run.alpha, beta_l2, run.exact, stage=2)
    new_keys = add_saa_plans(run.pool, results2, stage=2)
    # Screen the new plans on the stage-1 draws (independent of the stage-2
    # draws): a selection aid, never a certificate.
    t0 = time.perf_counter()
    ends, stop = stop_instant(run.tests_end, run.settings.total_time_limit)
    screened = validate_candidates(run.mapper, run.data, [run.pool[k] for k in new_keys], s.validation,
                                    run.validation_seed, 1.0 - beta_u1, ends, stop)
    for c in screened:
        c["certified"], c["test"] = False, "screened on the stage-1 draws (no certificate)"
    chosen = select_for_refinement(judged + screened, upper["value"] if upper else None, run.alpha,
                                   s.refine_validation, beta_u2, s.refine_candidates)
    ends, stop = stop_instant(run.tests_end, run.settings.total_time_limit)
    judged2, upper2 = judge(run.mapper, run.data, [_unjudged(c) for c in chosen], s.refine_validation,
                            run.validation_seed + 1, beta_u2, run.exact, "stage 2",
                            ends, stop) if chosen else ([], None)
    _count_cut(run, stop, "stage-2 validation tests", skipped_tests(judged2, stop))
    run.timing["validation"] += time.perf_counter() - t0
    if upper2 is not None and (upper is None or upper2["value"] < upper["value"]):
        upper = upper2
    reason = ("no full stage-1 bracket" if width1 is None else
              f"stage-1 width {100 * width1:.3g} % > target {100 * (s.target_width or 0.0):.3g} %")
    run.stages.append({"stage": 2, "ran": True, "reason": reason, "lower": lower2["value"],
                       "upper": upper2["value"] if upper2 else None, "beta_lower": beta_l2, "beta_upper": beta_u2,
                       "replications": s.refine_replications, "scenarios": s2, "validation": s.refine_validation,
                       "tests": len(judged2), "screened": len(screened),
                       "elapsed_s": time.perf_counter() - run.t_start})
    return lower2, upper, judged + screened + judged2


def _bracket_record(run: _Run, lower: dict, upper: dict | None, judged: list, refining: bool,
                    t_start: float) -> dict:
    """The JSON-ready bracket record (see :func:`certify`, Returns)."""
    s, exact = run.settings, run.exact
    if upper is not None:
        upper = {**upper, "confidence": 1.0 if exact else 1.0 - run.betas["upper"],
                 "beta_stages": run.betas["upper_stages"]}
    width = _width(lower["value"], upper)
    if refining and run.stages[-1].get("ran"):
        run.stages[-1]["width"] = width
    skipped = sum(bool(c.get("skipped")) for c in judged)
    status, message = _status(lower, upper, width, exact, s.confidence, s.seed, skipped)
    if upper is None and not any(not r["value_kind"].startswith("trivial") for r in run.reps):
        status, message = "error", _no_usable_replication(run.reps)
    judged.sort(key=lambda c: c["cost"])
    n1 = run.n_stage1
    return {
        "instance": run.instance.name, "omega": float(run.instance.omega), "risk": run.alpha,
        "loss_max": float(run.instance.loss_max), "confidence": 1.0 if exact else float(s.confidence),
        "exact": exact, "status": status, "message": message,
        "lower_bound": lower, "upper_bound": upper, "width": width,
        "beta": run.betas, "stages": run.stages,
        "saa_optima": [r["cost"] for r in run.reps[:n1]],
        "saa_optima_stage2": [r["cost"] for r in run.reps[n1:]],
        "replications": [{k: v for k, v in r.items() if k != "plan"} for r in run.reps],
        "candidates": [{k: v for k, v in c.items() if k != "plan"} for c in judged],
        "settings": {**s.record(), "saa_heuristic_time": SAA_HEURISTIC_TIME},
        "stopped": (f"time limit {limits.time_limit_s():g} s reached during the bracket: "
                    + ", ".join(run.cut)) if run.cut else None,
        "runtime_s": {"total": time.perf_counter() - t_start, **run.timing,
                      "saa_solves_sum": sum(r["runtime_s"] for r in run.results),
                      "cpu": sum(r["cpu_s"] for r in run.results) + sum(c["cpu_s"] for c in judged)},
    }


def _no_usable_replication(reps: list[dict]) -> str:
    """The reason no bound exists when every SAA replication failed or stopped
    without a proven bound (their 0 would be a vacuous lower bound)."""
    reasons = sorted({f"{r['status']}: {r['message']}" for r in reps})
    # a replication never started (saa_task: total_time_limit or an outer stop had passed) is
    # helped by neither a larger per-solve time_limit nor a smaller model: only by that limit
    if all(str(r.get("message", "")).endswith("reached before this SAA solve") for r in reps):
        advice = "none was started before the time limit named; raise that limit"
    else:
        advice = "raise time_limit, or use fewer scenarios or a smaller horizon"
    return (f"no usable SAA replication: all {len(reps)} replications failed or stopped without a proven "
            f"bound ({'; '.join(reasons[:2])}); {advice}")


def _unjudged(c: dict) -> dict:
    """A judged candidate back as a pool entry (plan object, no test results)."""
    keep = ("source", "sources", "role", "saa_omega", "stage")
    return {**{k: c[k] for k in keep if k in c}, "plan": parse_plan(c["plan"]),
            "stage1_violation_count": c["violation_count"], "stage1_draws": c["draws"]}


def _width(lb, upper) -> float | None:
    """(UB − LB)/UB, 0 when both are 0, None without a finite pair."""
    if upper is None or lb is None or not math.isfinite(lb):
        return None
    if upper["value"] > 0:
        return (upper["value"] - lb) / upper["value"]
    return 0.0 if upper["value"] == 0 == lb else None


def _combined_lower(best: dict, lower1: dict, lower2: dict | None, betas: dict, exact: bool,
                    refining: bool) -> dict:
    """LB = max over the stages, at confidence 1 − β_L (Bonferroni over the stages)."""
    out = {k: v for k, v in best.items() if k != "stage"}
    out["from_stage"] = best["stage"]
    out["stages"] = [lower1] + ([lower2] if lower2 is not None else [])
    out["trivial_replications"] = sum(s["trivial_replications"] for s in out["stages"])
    out["time_limit_bounds"] = sum(s["time_limit_bounds"] for s in out["stages"])
    if not exact:
        out["confidence"] = 1.0 - betas["lower"]
        if refining:
            out["method"] = (f"max over 2 stages (β_L = {number_text(betas['lower_stages'][0])} + "
                             f"{number_text(betas['lower_stages'][1])}, Bonferroni); from stage {best['stage']}: "
                             + best["method"])
    return out


def fresh_seed(seed: int) -> int:
    """A base seed whose every stream is disjoint from those of a run at ``seed``.

    A run uses seeds ``seed … seed + n`` (replications, grid and stage-2
    solves; n < VALIDATION_SEED_OFFSET) and ``seed + VALIDATION_SEED_OFFSET``
    (+1 for stage 2). ``seed + 1`` would share all but one replication's
    scenario sets; this seed shares none. It lies as far below ``seed`` where above would
    pass the largest seed a run takes (MAX_SEED − MAX_SEED_OFFSET)."""
    up = int(seed) + 2 * VALIDATION_SEED_OFFSET + 2
    return up if up <= MAX_SEED - MAX_SEED_OFFSET else 2 * int(seed) - up


def _status(lower, upper, width, exact, confidence, seed: int = 0, skipped: int = 0) -> tuple[str, str]:
    """``bracket`` / ``upper bound only`` / ``lower bound only`` / ``infeasible`` / ``none``
    (or ``inconsistent``), with a sentence (``skipped``: candidates whose test a time limit skipped)."""
    lb = lower["value"]
    if lb is not None and math.isinf(lb) and upper is None:
        conf = "with certainty" if exact else f"at confidence {number_text(lower['confidence'])}"
        return "infeasible", (f"the chance-constrained problem is infeasible {conf}: the order-statistic "
                              "SAA replication has no feasible plan")
    if upper is not None and lb is not None:
        if lb > upper["value"] * (1 + 1e-9):
            return "inconsistent", (f"LB {lb:.6g} > UB {upper['value']:.6g}: one of the two statements "
                                    f"failed (probability ≤ {number_text(1 - confidence)}). A valid rerun draws a seed "
                                    f"stream disjoint from this one (--seed {fresh_seed(seed)}; seed + 1 would "
                                    "reuse all but one replication's scenarios) and reports both runs; rerunning "
                                    "until the bracket is consistent voids the stated confidence")
        conf = "with certainty" if exact else f"jointly at confidence ≥ {number_text(confidence)}"
        return "bracket", (f"optimum of the chance-constrained problem in [{lb:.6g}, {upper['value']:.6g}] "
                           f"{conf} (width {100 * width:.3g} %); plan certified feasible")
    if upper is not None:
        return "upper bound only", (f"plan certified feasible (cost {upper['value']:.6g}); no lower bound: "
                                    + lower["method"])
    if lb is not None:
        # a test the time limit skipped certifies nothing whatever N′ and the risk grid
        why = (f"the tests of {skipped} candidate(s) were skipped, the time limit having passed; raise it"
               if skipped else "raise validation N′ or tighten the risk grid")
        return "lower bound only", (f"optimum ≥ {lb:.6g} at confidence {number_text(lower['confidence'])}; "
                                    f"no candidate plan certified feasible ({why})")
    return "none", "neither bound could be established: " + lower["method"]


def _names(algorithms: str) -> list[str]:
    return [a.strip() for a in str(algorithms).split(",")] if str(algorithms).strip() else []


def candidate_names_refused(algorithms: str) -> str:
    """Why the comma-separated ``algorithms`` are refused ("" if not): an unknown or empty name, the bracket."""
    for name in _names(algorithms):
        if not name:        # a stray comma is a typo, not a request for fewer candidates
            return "an empty name in the list (separate the algorithms by single commas: depl,best-exp)"
        if name == MilpCertified.name:
            return f"{name!r} cannot be its own candidate"
        try:
            get_solver(name)
        except SolverError as exc:
            return str(exc)
    return ""


class MilpCertified(Solver):
    """The certified bracket as an algorithm: plan = UB plan, lower_bound = LB.

    ``status`` is ``feasible`` when a plan is certified (``message`` states the
    bracket, its confidence and method; ``diagnostics["bracket"]`` holds the
    full record of :func:`certify`), ``infeasible`` when the lower bound proves
    the problem infeasible (+∞, with certainty or at its stated confidence),
    else ``no_solution`` with the reason when no candidate could be certified
    (``lower_bound`` still set when LB exists).
    ``time_limit`` when an outer deadline (a sweep task's stop) cut the
    bracket short (``diagnostics["bracket"]["stopped"]`` says what): the
    plan and bounds the finished work certifies, if any.
    """

    name: ClassVar[str] = NAME
    label: ClassVar[str] = "MILP bracket (certified)"
    description: ClassVar[str] = ("certified bracket on the chance-constrained optimum: LB from M SAA "
                                  "replications, plan = cheapest Clopper-Pearson-certified candidate")
    exact: ClassVar[bool] = False
    reference: ClassVar[str] = "certified-static"
    style: ClassVar[PlotStyle] = PlotStyle("#1f77b4", "*", ":")
    #: time_limit bounds each SAA solve; the bracket as a whole runs under total_time_limit.
    clock: ClassVar[str] = "total_time_limit"
    #: the instances its SAA solves (the MILP's) apply to
    applies = Milp.applies
    #: certify's settings (the one table, :data:`SETTINGS_PARAMETERS`) and two of the solver's own
    parameters: ClassVar[dict[str, Param]] = {
        **{name: SETTINGS_PARAMETERS[name] for name in (
            "confidence", "replications", "scenarios", "validation", "risk_grid", "time_limit", "total_time_limit",
            "seed", "gap")},
        "algorithms": Param("", str, "comma-separated algorithms whose plans are also UB candidates",
                            check=candidate_names_refused),
        **{name: SETTINGS_PARAMETERS[name] for name in ("grid_seeds",)},
        "workers": Param(1, int, "local processes for the SAA solves", low=1, high=limits.MAX_WORKERS),
        **{name: SETTINGS_PARAMETERS[name] for name in (
            "target_width", "refine_share", "refine_replications", "refine_scenarios", "refine_validation",
            "refine_candidates")},
    }

    @classmethod
    def build_settings(cls, resolved) -> CertifiedSettings:
        """certify's :class:`CertifySettings` from the resolved parameters (no second
        check), with the solver's own ``algorithms`` and ``workers``, as one
        :class:`CertifiedSettings`."""
        return CertifiedSettings(CertifySettings.from_resolved(resolved), resolved["algorithms"],
                                 resolved["workers"])

    def run_settings(self, instance, settings: CertifiedSettings) -> SolveResult:
        """Run :func:`certify`; the rest becomes data."""
        extra, failed = candidate_plans(instance, settings.algorithms)
        bracket = certify(instance, settings.certify, candidates=extra, map=process_map(settings.workers))
        if failed:
            bracket["candidate_failures"] = failed
        return bracket_result(bracket)


def candidate_plans(instance, algorithms: str) -> tuple[dict[str, Plan], dict[str, str]]:
    """Run each named algorithm (unevaluated) and collect its plan as a UB candidate."""
    refused = candidate_names_refused(algorithms)
    if refused:
        raise SolverError(f"algorithms: {refused}")
    plans, failed = {}, {}
    for name in _names(algorithms):
        res = solve(instance, name, evaluate=False)
        if res.plan is not None and res.status in ("optimal", "feasible", "time_limit"):
            plans[f"algorithm {name}"] = res.plan
        else:
            failed[name] = f"{res.status}: {res.message}"
    return plans, failed


__all__ = ["certify", "candidate_names_refused", "CertifySettings", "CertifiedSettings", "MilpCertified",
           "bracket_result", "candidate_plans", "process_map", "dask_map", "saa_task", "validation_task",
           "parse_risk_grid", "DEFAULT_CONFIDENCE", "DEFAULT_REPLICATIONS", "DEFAULT_SCENARIOS",
           "DEFAULT_VALIDATION", "DEFAULT_RISK_GRID", "DEFAULT_GRID_SEEDS", "DEFAULT_TIME_LIMIT",
           "DEFAULT_TARGET_WIDTH", "DEFAULT_REFINE_SHARE", "DEFAULT_REFINE_REPLICATIONS",
           "DEFAULT_REFINE_SCENARIOS_FACTOR", "DEFAULT_REFINE_VALIDATION", "DEFAULT_REFINE_CANDIDATES",
           "DEFAULT_REFINE_RISK_GRID", "DEFAULT_REFINE_GRID_SEEDS", "VALIDATION_SEED_OFFSET", "fresh_seed"]
