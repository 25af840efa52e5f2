"""The certified bracket's stages: SAA solves, the order-statistic LB, the tests on fresh draws.

One job: the statistical pieces that :func:`~deplbench.solvers.certify.certified.certify`
runs once (stage 1) or twice (stage 2, the *refinement*, when the stage-1
bracket is wider than the target width), and the β accounting that keeps the
two stages' statements valid together.

Two stages, one confidence (Bonferroni)
---------------------------------------
β = 1 − confidence is split between the sides, β_L = share·β and
β_U = (1 − share)·β, and each side's β between the stages,

    β_L = β_L1 + β_L2,   β_U = β_U1 + β_U2   (β_·2 = refine_share·β_·),

*before* any draw is made. Stage 2 runs only when the stage-1 bracket is
wider than the target, a decision that depends on the stage-1 data; every
stage-2 draw (its SAA scenarios and its validation draws) comes from seeds
stage 1 never uses, so stage 2's statements hold at their levels whatever
stage 1 saw:

* LB = max(LB₁, LB₂): P(LB > z*) ≤ P(LB₁ > z*) + P(LB₂ > z*) ≤ β_L1 + β_L2;
* UB = min over plans certified in either stage: it is wrong only if some
  infeasible plan is certified, in stage 1 (each of T₁ tests at β_U1/T₁,
  probability ≤ β_U1) or in stage 2 (each of T₂ tests at β_U2/T₂ on fresh
  draws, T₂ fixed before those draws are made, probability ≤ β_U2).

So LB ≤ z* ≤ UB holds jointly with probability ≥ 1 − β_L − β_U = 1 − β
whether or not stage 2 runs; when it does not run its share is simply unused
(the statement stays true, only more conservative than it needed to be).
Conditioning on "stage 2 did not run" is *not* allowed: the stated
confidence is the unconditional one, 1 − β.

What stage 2 spends
-------------------
* **LB:** M₂ fresh replications at S₂ > S scenarios: the SAA optima
  concentrate as S grows (their spread falls like 1/√S), so the order
  statistic moves up towards z* (Luedtke & Ahmed 2008, Sec. 4; Pagnoncelli, Ahmed &
  Shapiro 2009, Sec. 4: the SAA optimal value is consistent as S grows).
* **UB candidates:** the stage-2 replication plans and SAA optima at the
  mildly tightened levels γ = f·α of ``refine_risk_grid``: with S₂
  scenarios a plan overfits less, so its true violation sits closer to γ.
* **UB tests:** the candidates cheaper than the stage-1 UB whose stage-1
  violation frequency p̂ would be certified at N′₂ draws
  (:func:`select_for_refinement`), at most ``refine_candidates`` of them,
  each tested on N′₂ fresh draws at β_U2/T₂. Candidates first seen in stage 2
  are *screened* (not tested) on the stage-1 validation draws, which are
  independent of the stage-2 draws, so the selection uses no β.

References
----------
J. Luedtke and S. Ahmed, SIAM J. Optim. 19 (2008), Secs. 3–4.
B. K. Pagnoncelli, S. Ahmed and A. Shapiro, J. Optim. Theory Appl. 142
(2009), Sec. 4. C. E. Bonferroni (1936) / the union bound. docs/certify.md.
"""

from __future__ import annotations

import math
import time

from deplbench.formulations.evaluation.binomial import clopper_pearson_upper, lower_bound_order, order_statistic_bound
from deplbench.formulations.milp.solve import SCENARIO_MEMORY_REFUSAL
from deplbench.formulations.model.plan import parse_plan
from deplbench.instances.magnitudes import MIN_OMEGA
from deplbench.jsonio import number_text
from deplbench.solvers.certify.tasks import add_candidate, bound_value, saa_task, validate_candidates


def split_beta(confidence: float, lb_share: float, refine_share: float, refining: bool) -> dict:
    """The β budget of every statement, fixed before any draw.

    Parameters
    ----------
    confidence : float
        1 − β, the joint confidence of LB ≤ z* ≤ UB.
    lb_share : float
        Share of β spent on LB (β_L = share·β, β_U = (1 − share)·β).
    refine_share : float
        Share of each side's β reserved for stage 2.
    refining : bool
        Whether stage 2 may run at all (a refinement that is never possible
        reserves nothing, so stage 1 gets the whole β).

    Returns
    -------
    dict
        ``beta``, ``lower`` (β_L), ``upper`` (β_U), ``lower_stages`` (β_L1,
        β_L2) and ``upper_stages`` (β_U1, β_U2); the stage shares sum to the
        side's β, and the sides to β.
    """
    beta = 1.0 - float(confidence)
    r = float(refine_share) if refining else 0.0
    bl, bu = float(lb_share) * beta, (1.0 - float(lb_share)) * beta
    return {"beta": beta, "lower": bl, "upper": bu, "refine_share": r,
            "lower_stages": [(1.0 - r) * bl, r * bl], "upper_stages": [(1.0 - r) * bu, r * bu]}


def saa_tasks(data: dict, omega: float, alpha: float, replications: int, scenarios: int, grid, grid_seeds: int,
              first_seed: int, time_limit: float | None, gap: float, stage: int) -> list[dict]:
    """M replications at γ = α and ``grid_seeds`` solves per tightened level, seeds
    ``first_seed``, ``first_seed + 1``, …"""
    base = {"instance": data, "scenarios": scenarios, "gap": float(gap),
            "time_limit": None if time_limit is None else float(time_limit),
            "stage": stage}
    tasks = [{**base, "role": "replication", "omega": float(omega), "seed": first_seed + i}
             for i in range(replications)]
    # a level tightened past the instance's ω range (ω within 1e-12 of 1) is not solved: the
    # tightened solves only propose candidates, and such an ω would be refused at validation
    levels = [f for f in grid if 1.0 - f * alpha <= 1.0 - MIN_OMEGA for _ in range(grid_seeds)]
    tasks += [{**base, "role": "tightened", "factor": f, "omega": 1.0 - f * alpha,
               "seed": first_seed + replications + j} for j, f in enumerate(levels)]
    return tasks


def lower_from_replications(reps: list[dict], scenarios: int, alpha: float, beta_l: float, exact: bool,
                            stage: int) -> dict:
    """The order-statistic LB of one stage's replications at confidence 1 − ``beta_l``.

    Each replication's value is a valid lower bound on its SAA optimum
    (:func:`~deplbench.solvers.certify.tasks.bound_value`: the MILP's proven dual bound,
    +∞ for a proven-infeasible SAA, 0 without any bound).
    """
    for rep in reps:
        rep["value"], rep["value_kind"] = bound_value(rep)
    m = len(reps)
    order = lower_bound_order(m, scenarios, alpha, 1.0 - beta_l, rho=1.0 if exact else None)
    value = order_statistic_bound([r["value"] for r in reps], order.order) if order.order else None
    if exact:
        method = ("exact: all random terms are point masses, the one-scenario SAA is the problem "
                  "(proven MILP bound)")
    elif order.order:
        method = (f"Luedtke-Ahmed/Pagnoncelli-Ahmed-Shapiro: order statistic L = {order.order} of M = {m} "
                  f"SAA optima (S = {scenarios}, risk γ = α = {alpha:.6g}), ρ = {order.rho:.4f}")
    else:
        method = (f"none: M = {m} replications are too few for confidence {number_text(1 - beta_l)} "
                  f"(ρ = {order.rho:.4f})")
    return {
        "stage": stage, "value": value,
        "confidence": 1.0 if exact else 1.0 - beta_l,
        "achieved_confidence": 1.0 if exact else order.achieved_confidence,
        "method": method,
        **{k: v for k, v in order.to_dict().items() if k not in ("confidence", "achieved_confidence")},
        # Replications stopped without a proven bound count as 0: LB stays
        # valid but loosens; a nonzero count here says to raise time_limit.
        "trivial_replications": sum(r["value_kind"].startswith("trivial") for r in reps),
        "time_limit_bounds": sum(r["status"] == "time_limit" and r["value_kind"] == "milp bound" for r in reps),
    }


def add_saa_plans(pool: dict, results: list[dict], stage: int) -> list[str]:
    """Put every SAA plan into the candidate pool; the keys of plans new to it."""
    new = []
    for r in results:
        if r["plan"] is None:
            continue
        label = (f"replication seed {r['seed']} (S = {r['scenarios']})" if r["role"] == "replication"
                 else f"SAA at γ = {r['factor']:g}·α, seed {r['seed']} (S = {r['scenarios']})")
        key = add_candidate(pool, parse_plan(r["plan"]), label, r["role"], r["omega"])
        if key is not None:
            pool[key]["stage"] = stage
            new.append(key)
    return new


def judge(mapper, data: dict, entries: list[dict], draws: int, vseed: int, beta_u: float, exact: bool,
          validation_label: str, ends_at: float | None = None,
          stop: str = "total_time_limit") -> tuple[list[dict], dict | None]:
    """Test every entry on the same ``draws`` fresh draws at β_U/T each (Bonferroni);
    the judged entries (cheapest first) and the cheapest certified one as an
    UB record, or None."""
    tests = max(1, len(entries))
    conf_each = 1.0 - beta_u / tests
    judged = validate_candidates(mapper, data, entries, draws, vseed, conf_each, ends_at, stop)
    for c in judged:
        c["test"] = validation_label
    judged.sort(key=lambda c: c["cost"])
    best = next((c for c in judged if c["certified"]), None)
    if best is None:
        return judged, None
    upper = {"value": best["cost"], "plan": best["plan"], "source": best["source"],
             "sources": best["sources"], "violation_count": best["violation_count"],
             "draws": best["draws"], "violation_ub": best["violation_ub"],
             "per_test_confidence": conf_each, "tests": tests, "validation_seed": vseed,
             "test": validation_label,
             "method": ("exact: the plan's loss is deterministic" if exact else
                        f"one-sided Clopper-Pearson on N' = {draws} fresh draws (seed {vseed}), "
                        f"each of T = {tests} candidates at {number_text(conf_each)} (Bonferroni)")}
    return judged, upper


def predicted_certifiable(violations: int, draws: int, draws2: int, alpha: float, confidence_each: float) -> bool:
    """Would the same violation frequency be certified ≤ α on ``draws2`` draws?

    A selection rule only (it decides which plans get the stage-2 tests): the
    frequency V/N′₁ observed on the stage-1 draws, scaled to N′₂, must give a
    Clopper–Pearson upper bound ≤ α at the per-test confidence of stage 2.
    """
    v2 = int(math.ceil(violations / draws * draws2))
    return clopper_pearson_upper(min(v2, draws2), draws2, confidence_each) <= alpha


def select_for_refinement(candidates: list[dict], ub_value: float | None, alpha: float, draws2: int,
                          beta_u2: float, max_tests: int) -> list[dict]:
    """The plans worth a stage-2 test: cheaper than the current UB, meeting
    (4)–(6), not yet certified, :func:`predicted_certifiable` at β_U2/``max_tests``;
    the ``max_tests`` cheapest of them.

    Uses only stage-1 draws (tests or screens), so the chosen set — and its
    size T₂ — is fixed before the stage-2 draws are made.
    """
    conf = 1.0 - beta_u2 / max(1, max_tests)
    eligible = [c for c in candidates
                if c["constraints_ok"] and not c["certified"]
                and (ub_value is None or c["cost"] < ub_value * (1 - 1e-12))
                and predicted_certifiable(c["violation_count"], c["draws"], draws2, alpha, conf)]
    eligible.sort(key=lambda c: c["cost"])
    return eligible[:max_tests]




def run_saa(mapper, tasks: list[dict], instance=None) -> tuple[list[dict], float]:
    """Run the SAA solves; (results in task order with their stage, wall seconds).

    When the MILP's scenario arrays of ``instance`` (all tasks at one S) are estimated above its
    default ``memory_limit`` (:func:`~deplbench.formulations.milp.data.data_bytes`), every replication
    would be refused alike, each after parsing the instance: the first task runs alone, and if the
    MILP refused it for that memory, the others are recorded with the same refusal, unsolved
    (``skipped``). Any other outcome runs the rest as usual.
    """
    t0 = time.perf_counter()
    results = _first_refusal_for_all(mapper, tasks, instance)
    if results is None:
        results = list(mapper(saa_task, tasks)) if tasks else []
    for t, r in zip(tasks, results):
        r["stage"] = t["stage"]
    return results, time.perf_counter() - t0


def _first_refusal_for_all(mapper, tasks: list[dict], instance) -> list[dict] | None:
    """Every task's result when the scenario arrays are estimated above the MILP's memory_limit: the
    first task's, then, when it was refused for that memory, the same refusal, unsolved, for the
    others, else their own results (run after it); None, running nothing, when the estimate fits."""
    from deplbench.formulations.milp.data import data_bytes
    from deplbench.formulations.milp.options import MEMORY_LIMIT_GIB

    if instance is None or len(tasks) < 2 or len({t["scenarios"] for t in tasks}) != 1:
        return None
    if data_bytes(instance, tasks[0]["scenarios"]) <= MEMORY_LIMIT_GIB * 2**30:
        return None
    first = list(mapper(saa_task, tasks[:1]))[0]
    if first["status"] != "error" or not str(first["message"]).startswith(SCENARIO_MEMORY_REFUSAL):
        return [first] + list(mapper(saa_task, tasks[1:]))
    # the refusal reads S, K̄ and the preprocessed instance's terms, none of them the seed or ω
    skipped = "not solved: the first SAA solve of these scenarios was refused for their memory"
    return [first] + [{"role": t["role"], "factor": t.get("factor"), "seed": t["seed"], "omega": t["omega"],
                       "scenarios": t["scenarios"], "status": "error", "message": first["message"], "cost": None,
                       "lower_bound": None, "plan": None, "runtime_s": 0.0, "cpu_s": 0.0, "skipped": skipped}
                      for t in tasks[1:]]


__all__ = ["split_beta", "saa_tasks", "lower_from_replications", "add_saa_plans", "judge",
           "predicted_certifiable", "select_for_refinement", "run_saa"]
