"""Proven plans replayed on held-out real training runs (docs/measured.md).

A plan of the measured family says which version to train in each epoch.
Under the instance's loss law (eq. (8) as fitted) its probability of
violating the target, P(ℓ(K) > ℓmax), is bounded rigorously by
:func:`deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`. Here
the plan is *trained*: its model sequence (switch epochs and pruning as
planned) runs for N seeds that no fit ever saw (from
:data:`~deplbench.measure.experiment.REPLAY_SEED_BASE` on), and the share of
runs whose final test loss exceeds ℓmax is reported with its exact
Clopper–Pearson interval beside the model's P(violation).

Per plan the verdict on "meets ℓmax with probability ≥ ω in real training":
*holds* when the interval's upper end is ≤ 1 − ω, *does not hold* when its
lower end is > 1 − ω, *not decided* otherwise.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from deplbench.formulations.evaluation.binomial import clopper_pearson_lower, clopper_pearson_upper
from deplbench.formulations.model.scenarios import loss_threshold
from deplbench.jsonio import number_text

#: Level of the Clopper–Pearson intervals.
LEVEL = 0.95
HOLDS, FAILS, UNDECIDED = "holds", "does not hold", "not decided"
#: The solvers replayed by default (an exact optimum, the proven DepL variant, DepL, the baseline).
DEFAULT_SOLVERS = ("milp-exact", "depl-proven", "depl", "best-exp", "one-switch", "milp")
#: Solver parameters of the replay: the exact solver's enumeration is bounded in time (its incumbent is
#: replayed, with its status, when the limit stops it).
SOLVER_PARAMS: dict[str, dict[str, Any]] = {"milp-exact": {"time_limit": 300.0}}


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided interval for a binomial proportion k/n:
    the one-sided bounds of :mod:`deplbench.formulations.evaluation.binomial`, each at
    1 − (1 − level)/2."""
    if n <= 0 or not (0 <= k <= n):
        raise ValueError(f"clopper_pearson: need 0 <= k <= n and n > 0, got k={k}, n={n}")
    side = 1 - (1 - level) / 2
    return clopper_pearson_lower(k, n, side), clopper_pearson_upper(k, n, side)


def count_violations(final_losses: np.ndarray, loss_max: float) -> int:
    """Runs whose final loss exceeds ℓmax (constraint (3) reads ℓ(K) ≤ ℓmax), with the
    evaluators' round-off tolerance (:func:`~deplbench.formulations.model.scenarios.loss_threshold`)."""
    return int(np.count_nonzero(np.asarray(final_losses, dtype=float) > loss_threshold(loss_max)))


def judge(violations: int, n: int, omega: float, level: float = LEVEL) -> dict:
    """The violation rate, its Clopper–Pearson interval and the verdict against 1 − ω."""
    lo, hi = clopper_pearson(violations, n, level)
    risk = 1.0 - omega
    verdict = HOLDS if hi <= risk else FAILS if lo > risk else UNDECIDED
    return {"runs": int(n), "violations": int(violations), "rate": violations / n, "ci": [lo, hi],
            "level": level, "method": "Clopper-Pearson (exact binomial)", "risk": risk, "verdict": verdict}


def plan_factors(plan, instance) -> list[float]:
    """The pruning factor trained in each epoch of ``plan`` (model names → factors of the measurement)."""
    from deplbench.instances.generators.measured import measured_versions

    versions = measured_versions()
    missing = sorted({m for m in plan.models if m not in versions})
    if missing:
        raise ValueError(f"plan: models {missing} are not versions of the measured network")
    return [float(versions[m]["factor"]) for m in plan.models]


def train_finals(factors: list[float], seeds: list[int], *, chunk: int = 500) -> np.ndarray:
    """Final test losses of ``factors`` trained for every seed (batches of ``chunk`` seeds)."""
    from deplbench.measure import network as net

    data = net.load_data()
    out = [net.train_sequence(seeds[i:i + chunk], factors, data)[:, -1] for i in range(0, len(seeds), chunk)]
    return np.concatenate(out)


def replay_plans(solvers=DEFAULT_SOLVERS, *, n_seeds: int = 1000, threads: int = 1, instance=None,
                 results: dict | None = None, progress=None, on_row=None) -> dict:
    """Plan on the measured instance with each solver and replay every plan on held-out seeds.

    Parameters
    ----------
    solvers : sequence of str
        Registry names.
    n_seeds : int
        Held-out runs per plan (the same seeds for every plan: paired).
    threads : int
        PyTorch threads.
    instance : Instance, optional
        Default ``generate("measured")`` (seed 0).
    results : dict, optional
        solver name → a result record already computed on the same instance
        (``deplbench solve --json`` output: status, message, cost, plan); that
        solver is not run again.
    progress, on_row : callable, optional
        Called with a one-line message / with the partial result (same shape
        as the return value) after each solver, so a long replay can be saved
        as it goes.

    Returns
    -------
    dict
        ``instance`` (name, ℓmax, ω), ``seeds`` (first, count), ``rows`` (one per
        solver: status, cost, sequence, the model's P(violation) bounds, the
        measured rate with its interval and verdict), ``claim`` (the overall
        verdict), ``wall_seconds``.
    """
    from deplbench.formulations.evaluation.exact_violation import plan_violation_bounds
    from deplbench.instances.generators import generate
    from deplbench.measure import experiment
    from deplbench.measure import network as net
    from deplbench.solvers.run import solve

    net.configure(threads)
    inst = instance if instance is not None else generate("measured")
    seeds = list(range(experiment.REPLAY_SEED_BASE, experiment.REPLAY_SEED_BASE + int(n_seeds)))
    start = time.perf_counter()
    rows = []
    for name in solvers:
        t0 = time.perf_counter()
        if results and name in results:
            from deplbench.formulations.model.plan import parse_plan

            rec = results[name]
            status, message, cost = rec.get("status"), rec.get("message", ""), rec.get("cost")
            plan = parse_plan(rec["plan"]) if rec.get("plan") else None
        else:
            res = solve(inst, name, evaluate=False, **SOLVER_PARAMS.get(name, {}))
            status, message, cost, plan = res.status, res.message, res.cost, res.plan
        row = {"solver": name, "status": status, "message": message, "cost": cost}
        if plan is None or not plan.epochs:
            rows.append(row)
            if progress:
                progress(f"{name}: {status}, no plan to replay")
            continue
        bounds = plan_violation_bounds(inst, plan)
        factors = plan_factors(plan, inst)
        finals = train_finals(factors, seeds)
        row.update({
            "epochs": len(factors), "sequence": _runs(plan.models),
            "model_violation": [bounds.p_lo, bounds.p_hi], "model_verdict": bounds.verdict,
            "final_loss_mean": float(finals.mean()), "final_loss_q": float(np.quantile(finals, inst.omega)),
            **judge(count_violations(finals, inst.loss_max), len(finals), inst.omega),
            "wall_seconds": round(time.perf_counter() - t0, 1),
        })
        rows.append(row)
        if on_row:
            on_row(_result(inst, seeds, rows, threads, start))
        if progress:
            progress(f"{name}: {row['epochs']} epochs {row['sequence']}, violations {row['violations']}/"
                     f"{row['runs']} vs proven <= {bounds.p_hi:.3g} ({row['wall_seconds']} s)")
    return _result(inst, seeds, rows, threads, start)


def _result(inst, seeds, rows, threads, start) -> dict:
    return {"instance": {"name": inst.name, "loss_max": inst.loss_max, "omega": inst.omega},
            "seeds": {"first": seeds[0], "count": len(seeds)}, "rows": list(rows), "claim": claim_verdict(rows),
            "threads": threads, "wall_seconds": round(time.perf_counter() - start, 1)}


def merge(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s rows replacing those of the same solver (same instance and seeds)."""
    if old["instance"] != new["instance"] or old["seeds"] != new["seeds"]:
        raise ValueError("merge: the replays differ in instance or seeds")
    solvers = [r["solver"] for r in new["rows"]]
    rows = [r for r in old["rows"] if r["solver"] not in solvers] + new["rows"]
    return {**old, "rows": rows, "claim": claim_verdict(rows),
            "wall_seconds": round(old["wall_seconds"] + new["wall_seconds"], 1)}


def _runs(models: list[str]) -> str:
    """``p25×18 → p50×14`` for a model sequence."""
    out, prev, n = [], None, 0
    for m in [*models, None]:
        if m == prev:
            n += 1
            continue
        if prev is not None:
            out.append(f"{prev}×{n}")
        prev, n = m, 1
    return " → ".join(out)


def claim_verdict(rows: list[dict]) -> dict:
    """"A plan proven feasible under eq. (8) meets ℓmax with probability ≥ ω in real training."

    Over the replayed plans the model proves feasible (``model_verdict ==
    "proven feasible"``): does not hold if any fails, holds if all hold,
    else not decided (and not measured without such a plan).
    """
    proven = [r for r in rows if r.get("model_verdict") == "proven feasible" and "verdict" in r]
    if not proven:
        return {"verdict": "not measured", "plans": 0, "text": "no replayed plan is proven feasible"}
    verdicts = [r["verdict"] for r in proven]
    v = FAILS if FAILS in verdicts else HOLDS if all(x == HOLDS for x in verdicts) else UNDECIDED
    text = "; ".join(f"{r['solver']}: {r['violations']}/{r['runs']} = {r['rate']:.3f} "
                     f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] vs proven <= {r['model_violation'][1]:.3g}"
                     for r in proven)
    return {"verdict": v, "plans": len(proven), "text": text}


def format_table(result: dict) -> str:
    """Text table of :func:`replay_plans`' result."""
    inst = result["instance"]
    lines = [f"{inst['name']}: lmax={number_text(inst['loss_max'])}, omega={number_text(inst['omega'])}; "
             f"{result['seeds']['count']} held-out seeds from {result['seeds']['first']}; {result['wall_seconds']} s"]
    for r in result["rows"]:
        if "verdict" not in r:
            lines.append(f"  {r['solver']:<12} {r['status']}: {r['message']}")
            continue
        lines.append(f"  {r['solver']:<12} {r['sequence']:<30} model P(viol) in [{r['model_violation'][0]:.3g}, "
                     f"{r['model_violation'][1]:.3g}]  measured {r['violations']}/{r['runs']} = {r['rate']:.3f} "
                     f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] -> {r['verdict']}")
    lines.append(f"claim: {result['claim']['verdict']} ({result['claim']['text']})")
    return "\n".join(lines)


__all__ = ["clopper_pearson", "count_violations", "judge", "plan_factors", "train_finals", "replay_plans",
           "claim_verdict", "format_table", "merge", "DEFAULT_SOLVERS", "SOLVER_PARAMS", "LEVEL"]
