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
confidence ≥ 1 − β (union bound). When the stage-1 bracket is wider than
``target_width`` (default 2 %), a second stage spends more: M₂ fresh
replications at S₂ = 10·S scenarios (a second LB; the larger is kept), and
N′₂ = 10⁶ fresh draws on the few cheapest plans that could be certified there
(:mod:`.certified_refine`). Half of β_L and of β_U is reserved for it before
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
>>> from deplbench.solvers.certified import certify          # doctest: +SKIP
>>> b = certify(instance, replications=10, scenarios=2000)    # doctest: +SKIP
>>> b["lower_bound"]["value"], b["upper_bound"]["value"], b["width"]   # doctest: +SKIP
(1821.3, 1853.9, 0.0176)
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import ClassVar

from deplbench.errors import SolverError
from deplbench.formulations.plan import Plan, parse_plan
from deplbench.formulations.result import SolveResult
from deplbench.params import Param
from deplbench.solvers.base import PlotStyle, Solver, solve
from deplbench.solvers.certified_refine import (add_saa_plans, judge, lower_from_replications, run_saa,
                                                saa_tasks, select_for_refinement, split_beta)
from deplbench.solvers.certified_tasks import (SAA_HEURISTIC_TIME, Mapper, _add_candidate, _sequential_map,
                                               _validate_candidates, dask_map, is_deterministic,
                                               parse_risk_grid, process_map, saa_task, validation_task)

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
#: Stage 2 runs when the stage-1 bracket is wider than this (issue 13's target:
#: 2 % at confidence 0.95 on the realistic instances).
DEFAULT_TARGET_WIDTH = 0.02
#: Share of β_L and of β_U reserved for stage 2 (certified_refine.split_beta).
DEFAULT_REFINE_SHARE = 0.5
#: N′₂: with 10⁶ draws a plan with true violation 0.0097 is certified ≤ 0.01
#: at the per-test level of six stage-2 tests.
DEFAULT_REFINE_VALIDATION = 1_000_000
DEFAULT_REFINE_CANDIDATES = 6
#: M₂ = 80 replications of S₂ = 10·S = 20 000 scenarios. Plans whose violation
#: probability sits just above α (AlexNet ℓmax = 11: a plan costing 939.73
#: violates with probability ≈ 0.0104) still pass an SAA at S₂ = 20 000 in
#: about 30 % of the replications (9 of 30 measured), as often as the order
#: L₂/M₂ = 9/30 allows at M₂ = 30; at M₂ = 80, L₂ = 32 (40 %), so they no
#: longer hold LB down. About 3 CPU-seconds per solve there (AlexNet ℓmax = 11:
#: 309 CPU-s for the whole bracket, docs/certify.md).
DEFAULT_REFINE_REPLICATIONS = 80
DEFAULT_REFINE_SCENARIOS_FACTOR = 10
#: Mildly tightened stage-2 levels: at S₂ = 10·S a plan overfits less, so γ
#: close to α already gives plans whose true violation is below α.
DEFAULT_REFINE_RISK_GRID = (0.95, 0.9)
DEFAULT_REFINE_GRID_SEEDS = 2


def _check_args(instance, confidence, replications, scenarios, validation, risk_grid, time_limit,
                seed, gap, lb_share, grid_seeds, target_width, refine_share, refine_replications,
                refine_scenarios, refine_validation, refine_candidates, refine_risk_grid,
                refine_grid_seeds) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Validate :func:`certify`'s arguments; return both risk grids as floats."""
    def integer(name, value, low, optional=False):
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SolverError(f"{name}: must be an integer >= {low}, got {value!r}")

    def share(name, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise SolverError(f"{name}: must be in (0, 1), got {value!r}")

    def factors(name, values):
        try:
            out = tuple(float(f) for f in values)
        except (TypeError, ValueError):
            raise SolverError(f"{name}: expected numbers in (0, 1], got {values!r}") from None
        for f in out:
            if not 0 < f <= 1:
                raise SolverError(f"{name}: every factor f (γ = f·α) must be in (0, 1], got {f!r}")
        return out

    share("confidence", confidence)
    integer("replications", replications, 1)
    integer("scenarios", scenarios, 1)
    integer("validation", validation, 100)
    integer("seed", seed, 0)
    integer("grid_seeds", grid_seeds, 1)
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0 \
            or not math.isfinite(time_limit):
        raise SolverError(f"time_limit: must be a positive number of seconds, got {time_limit!r}")
    share("gap", gap)
    share("lb_share", lb_share)
    if target_width is not None and (isinstance(target_width, bool) or not isinstance(target_width, (int, float))
                                     or not 0 <= target_width < 1):
        raise SolverError(f"target_width: must be in [0, 1) (0 or None: no refinement), got {target_width!r}")
    share("refine_share", refine_share)
    integer("refine_replications", refine_replications, 1)
    integer("refine_scenarios", refine_scenarios, 1, optional=True)
    integer("refine_validation", refine_validation, 100)
    integer("refine_candidates", refine_candidates, 1)
    integer("refine_grid_seeds", refine_grid_seeds, 1)
    grid = factors("risk_grid", risk_grid)
    refine_grid = factors("refine_risk_grid", refine_risk_grid)
    if not 0 < instance.omega < 1:  # pragma: no cover - the instance model enforces it
        raise SolverError(f"omega: must be in (0, 1), got {instance.omega!r}")
    return grid, refine_grid


def certify(instance, confidence: float = DEFAULT_CONFIDENCE, replications: int = DEFAULT_REPLICATIONS,
            scenarios: int = DEFAULT_SCENARIOS, validation: int = DEFAULT_VALIDATION,
            risk_grid: Iterable[float] = DEFAULT_RISK_GRID, time_limit: float = DEFAULT_TIME_LIMIT,
            seed: int = 0, gap: float = 1e-4, candidates: Mapping[str, Plan] | None = None,
            map: Mapper | None = None, lb_share: float = 0.5, grid_seeds: int = DEFAULT_GRID_SEEDS,
            target_width: float | None = DEFAULT_TARGET_WIDTH, refine_share: float = DEFAULT_REFINE_SHARE,
            refine_replications: int = DEFAULT_REFINE_REPLICATIONS, refine_scenarios: int | None = None,
            refine_validation: int = DEFAULT_REFINE_VALIDATION,
            refine_candidates: int = DEFAULT_REFINE_CANDIDATES,
            refine_risk_grid: Iterable[float] = DEFAULT_REFINE_RISK_GRID,
            refine_grid_seeds: int = DEFAULT_REFINE_GRID_SEEDS) -> dict:
    """Certified bracket [LB, UB] on the true chance-constrained optimum.

    Parameters
    ----------
    instance : Instance
    confidence : float, default 0.95
        1 − β: the bracket holds jointly with at least this confidence,
        whether or not the refinement (stage 2) runs.
    replications : int, default 20
        M independent SAA replications for LB (seeds ``seed … seed + M − 1``).
    scenarios : int, default 2000
        S scenarios per stage-1 SAA solve (replications and tightened candidates).
    validation : int, default 200000
        N′ fresh draws judging every stage-1 candidate plan.
    risk_grid : iterable of float, default (0.9, 0.8, 0.7, 0.6)
        Factors f of the tightened SAA risk levels γ = f·(1 − ω) whose optimal
        plans are UB candidates (``grid_seeds`` solves per level, seeds
        ``seed + M``, ``seed + M + 1``, …).
    time_limit : float, default 300
        Seconds per SAA solve (a stopped solve still gives a valid bound:
        the MILP's dual bound at the limit).
    seed : int, default 0
        Base seed; validation uses ``seed + VALIDATION_SEED_OFFSET`` (stage 1)
        and that plus 1 (stage 2).
    gap : float, default 1e-4
        MILP relative gap per SAA solve (LB uses the proven bound, not the cost).
    candidates : mapping of str to Plan, optional
        More UB candidates, e.g. other algorithms' plans, by label.
    map : callable, optional
        ``map(fn, tasks)`` executing the SAA solves and the validation
        (default sequential; see :func:`process_map`, :func:`dask_map`).
    lb_share : float, default 0.5
        Share of β spent on LB (β_L = share·β, β_U = (1 − share)·β).
    grid_seeds : int, default 4
        Independent SAA solves per tightened risk level.
    target_width : float or None, default 0.02
        Relative width (UB − LB)/UB above which stage 2 runs; None or 0
        disables stage 2 (then stage 1 gets the whole β).
    refine_share : float, default 0.5
        Share of β_L and of β_U reserved for stage 2 when it may run
        (:func:`~.certified_refine.split_beta`).
    refine_replications : int, default 80
        M₂, stage-2 replications.
    refine_scenarios : int, optional
        S₂, scenarios per stage-2 SAA solve (default 10·S).
    refine_validation : int, default 1000000
        N′₂ fresh draws for each stage-2 test.
    refine_candidates : int, default 6
        At most this many plans get a stage-2 test (T₂ ≤ this).
    refine_risk_grid : iterable of float, default (0.95, 0.9)
        Tightened levels of the stage-2 SAA candidates (``refine_grid_seeds`` each).
    refine_grid_seeds : int, default 2

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
        bound, test and timing) and ``runtime_s``.

    Raises
    ------
    SolverError
        For an invalid argument (the message names it). Failures inside the
        SAA solves never raise: they weaken the bound (see Notes).

    Notes
    -----
    A replication that fails or stops without a proven bound contributes 0
    (costs are ≥ 0) — LB stays valid, only looser; one stopped by its time
    limit contributes the MILP's dual bound. See
    :mod:`deplbench.formulations.binomial` for both bounds' exact statements
    and :mod:`.certified_refine` for the two-stage β accounting.
    """
    grid, refine_grid = _check_args(instance, confidence, replications, scenarios, validation, risk_grid,
                                    time_limit, seed, gap, lb_share, grid_seeds, target_width, refine_share,
                                    refine_replications, refine_scenarios, refine_validation,
                                    refine_candidates, refine_risk_grid, refine_grid_seeds)
    mapper = map or _sequential_map
    t_start = time.perf_counter()
    alpha = 1.0 - float(instance.omega)
    exact = is_deterministic(instance)
    data = instance.model_dump(mode="json", by_alias=True)
    if exact:
        # One scenario is the distribution: the SAA is the true problem.
        replications, scenarios, grid, gap = 1, 1, (), min(gap, 1e-7)
    refining = bool(target_width) and not exact
    m2 = refine_replications
    s2 = DEFAULT_REFINE_SCENARIOS_FACTOR * scenarios if refine_scenarios is None else refine_scenarios
    betas = split_beta(confidence, lb_share, refine_share, refining)
    beta_l1, beta_l2 = betas["lower_stages"]
    beta_u1, beta_u2 = betas["upper_stages"]
    timing = {"saa_solves_wall": 0.0, "validation": 0.0}

    # ---- stage 1: LB from M replications, UB from T₁ tests on N′ draws ------
    tasks = saa_tasks(data, instance.omega, alpha, replications, scenarios, grid, grid_seeds, seed,
                      time_limit, gap, stage=1)
    results, wall = run_saa(mapper, tasks)
    timing["saa_solves_wall"] += wall
    reps1 = [r for r in results if r["role"] == "replication"]
    lower1 = lower_from_replications(reps1, scenarios, alpha, beta_l1, exact, stage=1)
    pool: dict[str, dict] = {}
    add_saa_plans(pool, results, stage=1)
    for label, plan in (candidates or {}).items():
        key = _add_candidate(pool, plan, str(label), "external", None)
        if key is not None:
            pool[key]["stage"] = 1
    vseed1 = seed + VALIDATION_SEED_OFFSET
    t0 = time.perf_counter()
    judged, upper = judge(mapper, data, list(pool.values()), validation, vseed1, beta_u1, exact, "stage 1")
    timing["validation"] += time.perf_counter() - t0
    lb1 = lower1["value"]
    width1 = _width(lb1, upper)
    stages = [{"stage": 1, "lower": lb1, "upper": upper["value"] if upper else None, "width": width1,
               "beta_lower": beta_l1, "beta_upper": beta_u1, "tests": len(judged)}]
    lower, lower2 = lower1, None
    all_reps = reps1

    # ---- stage 2: only when the stage-1 bracket is wider than the target ----
    need = refining and not (width1 is not None and width1 <= target_width)
    if refining and not need:
        stages.append({"stage": 2, "ran": False, "reason": f"stage-1 width {100 * width1:.3g} % ≤ target "
                       f"{100 * target_width:.3g} %", "beta_lower": beta_l2, "beta_upper": beta_u2})
    if need:
        first = seed + replications + len(grid) * grid_seeds
        tasks2 = saa_tasks(data, instance.omega, alpha, m2, s2, refine_grid, refine_grid_seeds, first,
                           time_limit, gap, stage=2)
        results2, wall = run_saa(mapper, tasks2)
        timing["saa_solves_wall"] += wall
        results += results2
        reps2 = [r for r in results2 if r["role"] == "replication"]
        all_reps = reps1 + reps2
        lower2 = lower_from_replications(reps2, s2, alpha, beta_l2, exact, stage=2)
        new_keys = add_saa_plans(pool, results2, stage=2)
        # Screen the new plans on the stage-1 draws (independent of the stage-2
        # draws): a selection aid, never a certificate.
        t0 = time.perf_counter()
        screened = _validate_candidates(mapper, data, [pool[k] for k in new_keys], validation, vseed1,
                                        1.0 - beta_u1)
        for c in screened:
            c["certified"], c["test"] = False, "screened on the stage-1 draws (no certificate)"
        chosen = select_for_refinement(judged + screened, upper["value"] if upper else None, alpha,
                                       refine_validation, beta_u2, refine_candidates)
        vseed2 = vseed1 + 1
        judged2, upper2 = judge(mapper, data, [_unjudged(c) for c in chosen], refine_validation, vseed2,
                                beta_u2, exact, "stage 2") if chosen else ([], None)
        timing["validation"] += time.perf_counter() - t0
        if upper2 is not None and (upper is None or upper2["value"] < upper["value"]):
            upper = upper2
        judged = judged + screened + judged2
        lower = lower2 if (lower2["value"] is not None and
                           (lb1 is None or lower2["value"] > lb1)) else lower1
        stages.append({"stage": 2, "ran": True, "reason": ("no full stage-1 bracket" if width1 is None else
                                                          f"stage-1 width {100 * width1:.3g} % > target "
                                                          f"{100 * target_width:.3g} %"),
                       "lower": lower2["value"], "upper": upper2["value"] if upper2 else None,
                       "beta_lower": beta_l2, "beta_upper": beta_u2, "replications": m2, "scenarios": s2,
                       "validation": refine_validation, "tests": len(judged2), "screened": len(screened)})
    lower = _combined_lower(lower, lower1, lower2, betas, exact, refining)
    if upper is not None:
        upper = {**upper, "confidence": 1.0 if exact else 1.0 - betas["upper"],
                 "beta_stages": betas["upper_stages"]}
    width = _width(lower["value"], upper)
    if refining and stages[-1].get("ran"):
        stages[-1]["width"] = width
    status, message = _status(lower, upper, width, exact, confidence, seed)
    judged.sort(key=lambda c: c["cost"])
    return {
        "instance": instance.name, "omega": float(instance.omega), "risk": alpha,
        "loss_max": float(instance.loss_max), "confidence": 1.0 if exact else float(confidence),
        "exact": exact, "status": status, "message": message,
        "lower_bound": lower, "upper_bound": upper, "width": width,
        "beta": betas, "stages": stages,
        "saa_optima": [r["cost"] for r in reps1],
        "saa_optima_stage2": [r["cost"] for r in all_reps[len(reps1):]],
        "replications": [{k: v for k, v in r.items() if k != "plan"} for r in all_reps],
        "candidates": [{k: v for k, v in c.items() if k != "plan"} for c in judged],
        "settings": {"confidence": float(confidence), "replications": replications, "scenarios": scenarios,
                     "validation": validation, "risk_grid": list(grid), "time_limit": float(time_limit),
                     "seed": seed, "gap": float(gap), "saa_heuristic_time": SAA_HEURISTIC_TIME,
                     "lb_share": float(lb_share),
                     "grid_seeds": grid_seeds, "target_width": float(target_width or 0.0),
                     "refine_share": float(refine_share), "refine_replications": m2, "refine_scenarios": s2,
                     "refine_validation": refine_validation, "refine_candidates": refine_candidates,
                     "refine_risk_grid": list(refine_grid), "refine_grid_seeds": refine_grid_seeds},
        "runtime_s": {"total": time.perf_counter() - t_start, **timing,
                      "saa_solves_sum": sum(r["runtime_s"] for r in results),
                      "cpu": sum(r["cpu_s"] for r in results) + sum(c["cpu_s"] for c in judged)},
    }


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
            out["method"] = (f"max over 2 stages (β_L = {betas['lower_stages'][0]:.4g} + "
                             f"{betas['lower_stages'][1]:.4g}, Bonferroni); from stage {best['stage']}: "
                             + best["method"])
    return out


def fresh_seed(seed: int) -> int:
    """A base seed whose every stream is disjoint from those of a run at ``seed``.

    A run uses seeds ``seed … seed + n`` (replications, grid and stage-2
    solves; n < VALIDATION_SEED_OFFSET) and ``seed + VALIDATION_SEED_OFFSET``
    (+1 for stage 2). ``seed + 1`` would share all but one replication's
    scenario sets; this seed shares none."""
    return int(seed) + 2 * VALIDATION_SEED_OFFSET + 2


def _status(lower, upper, width, exact, confidence, seed: int = 0) -> tuple[str, str]:
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
                                    f"failed (probability ≤ {1 - confidence:.3g}). A valid rerun draws a seed "
                                    f"stream disjoint from this one (--seed {fresh_seed(seed)}; seed + 1 would "
                                    "reuse all but one replication's scenarios) and reports both runs; rerunning "
                                    "until the bracket is consistent voids the stated confidence")
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
    reference: ClassVar[str] = "certified-static"
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
        "target_width": Param(DEFAULT_TARGET_WIDTH, float, "stage 2 runs when the stage-1 width is above "
                              "this (0: never; stage 1 then gets the whole β)", low=0.0, high=0.999999),
        "refine_share": Param(DEFAULT_REFINE_SHARE, float, "share of β_L and β_U reserved for stage 2",
                              low=0.0, low_inclusive=False, high=0.999999),
        "refine_replications": Param(DEFAULT_REFINE_REPLICATIONS, int, "M₂ stage-2 replications", low=1),
        "refine_scenarios": Param(0, int, "S₂ scenarios per stage-2 SAA solve (0: 10·S)", low=0),
        "refine_validation": Param(DEFAULT_REFINE_VALIDATION, int, "N'₂ fresh draws per stage-2 test", low=100),
        "refine_candidates": Param(DEFAULT_REFINE_CANDIDATES, int, "at most this many stage-2 tests", low=1),
    }

    def run(self, instance, **params) -> SolveResult:
        """Run :func:`certify`; bad parameters raise SolverError, the rest becomes data."""
        grid = parse_risk_grid(params["risk_grid"])
        extra, failed = candidate_plans(instance, params["algorithms"])
        bracket = certify(instance, confidence=params["confidence"], replications=params["replications"],
                          scenarios=params["scenarios"], validation=params["validation"], risk_grid=grid,
                          time_limit=params["time_limit"], seed=params["seed"], gap=params["gap"],
                          candidates=extra, map=process_map(params["workers"]),
                          grid_seeds=params["grid_seeds"], **refine_options(params))
        if failed:
            bracket["candidate_failures"] = failed
        return bracket_result(bracket)


def refine_options(params: Mapping) -> dict:
    """The stage-2 keyword arguments of :func:`certify` from algorithm/CLI
    parameters (0 for S₂ means "the default", 10·S)."""
    return {"target_width": params["target_width"], "refine_share": params["refine_share"],
            "refine_replications": params["refine_replications"],
            "refine_scenarios": params["refine_scenarios"] or None,
            "refine_validation": params["refine_validation"], "refine_candidates": params["refine_candidates"]}


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


__all__ = ["certify", "MilpCertified", "bracket_result", "candidate_plans", "refine_options", "process_map",
           "dask_map", "saa_task", "validation_task", "is_deterministic", "parse_risk_grid",
           "DEFAULT_CONFIDENCE", "DEFAULT_REPLICATIONS", "DEFAULT_SCENARIOS", "DEFAULT_VALIDATION",
           "DEFAULT_RISK_GRID", "DEFAULT_GRID_SEEDS", "DEFAULT_TIME_LIMIT", "DEFAULT_TARGET_WIDTH",
           "DEFAULT_REFINE_SHARE", "DEFAULT_REFINE_REPLICATIONS", "DEFAULT_REFINE_SCENARIOS_FACTOR", "DEFAULT_REFINE_VALIDATION", "DEFAULT_REFINE_CANDIDATES",
           "DEFAULT_REFINE_RISK_GRID", "DEFAULT_REFINE_GRID_SEEDS", "VALIDATION_SEED_OFFSET", "fresh_seed"]
