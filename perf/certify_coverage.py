"""certify checked against the truth: coverage of its bracket over many seeds.

Run::

    python perf/certify_coverage.py --seeds 30

On a small realistic AlexNet instance (K̄ = 20, ω = 0.9, ℓmax chosen so the
problem is feasible) the exact static optimum z* is bracketed by
``milp-exact`` (deterministic, width ~0). ``certify`` then runs at small
budgets (M = 20 replications, S = 200, N′ = 20 000, one risk level, no stage 2)
with seeds spaced by :func:`~deplbench.solvers.certify.certified.fresh_seed` (disjoint
streams). A failure is LB > z* (certify's LB above milp-exact's UB) or a UB
plan that the exact bounds prove infeasible (p_lo > 1 − ω). The failure
rate is reported with its exact 95 % Clopper–Pearson interval; certify
claims ≤ 1 − confidence = 5 % jointly.

Writes ``results/bench/certify_coverage.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from scipy import stats

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.instances.generators import generate
from deplbench.solvers.certify.certified import certify, fresh_seed
from deplbench.solvers.run import solve


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--out", default="results/bench/certify_coverage.json")
    args = ap.parse_args()
    inst = generate("realistic", family="alexnet", horizon=20, omega=0.9, loss_max=14.0)
    load0 = os.getloadavg()[0]
    ex = solve(inst, "milp-exact", evaluate=False)
    print(f"milp-exact: [{ex.lower_bound}, {ex.cost}] {ex.status}", flush=True)
    rows, seed = [], 0
    t0 = time.perf_counter()
    for _ in range(args.seeds):
        b = certify(inst, replications=20, scenarios=200, validation=20_000, risk_grid=(0.8,), grid_seeds=1,
                    time_limit=30.0, target_width=None, seed=seed)
        lb = b["lower_bound"]["value"]
        up = b["upper_bound"]
        verdict = None
        if up is not None:
            verdict = evaluate_plan(inst, up["plan"], samples=1000, exact=True).exact_verdict
        lb_fail = lb is not None and lb > ex.cost * (1 + 1e-9)
        ub_fail = verdict == "proven infeasible"
        rows.append({"seed": seed, "lb": lb, "ub": up["value"] if up else None, "ub_plan_exact": verdict,
                     "status": b["status"], "lb_above_z": lb_fail, "ub_plan_infeasible": ub_fail})
        print(f"seed {seed}: [{lb}, {rows[-1]['ub']}] UB plan {verdict} fail={lb_fail or ub_fail}", flush=True)
        seed = fresh_seed(seed)
    n = len(rows)
    k = sum(r["lb_above_z"] or r["ub_plan_infeasible"] for r in rows)
    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    summary = {"runs": n, "failures": k, "rate": k / n, "clopper_pearson_95": [lo, hi],
               "lb_above_z": sum(r["lb_above_z"] for r in rows),
               "ub_plan_infeasible": sum(r["ub_plan_infeasible"] for r in rows),
               "exact_bracket": [ex.lower_bound, ex.cost], "wall_s": time.perf_counter() - t0,
               "load_start": load0, "load_end": os.getloadavg()[0]}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "runs": rows}, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
