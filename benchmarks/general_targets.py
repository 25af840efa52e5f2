"""Issue 14's targets for the ``general`` formulation, measured side by side in one run.

Usage::

    .venv/bin/python benchmarks/general_targets.py [--time-limit 60] [--out results/bench/general_targets.json]
                                                   [--skip-scaling]

Runs (every solve gets the same wall-clock limit, build included; the
machine's load is printed with the results):

1. realistic AlexNet with ``switches="any"`` (cyclic), K̄ = 100, S = 1000,
   ω = 0.99, ℓmax = 9, 2 clusters: ``general`` (target: optimal, gap ≤ 1e-4,
   ≤ 60 s); the same with ℓmax = 13 (the top of the paper's range);
2. the datasets family, |D| = 10, 2 clusters, K̄ = 50, S = 200: ``general``
   (target: optimal ≤ 60 s);
3. the cyclic AlexNet at S = 300: ``general`` and ``flow`` (target: general
   ≥ 10× faster);
4. solve time against S (100, 300, 1000, 3000) and K̄ (20..60: the cyclic
   AlexNet with horizon K̄ and ℓmax, Tmax moved with K̄; see
   ``_horizon_instance``), and against S on the K̄ = 30 member, with fitted
   log-log slopes over the runs that finished (a run stopped by the limit is
   reported with its gap and left out of the fit, never extrapolated);
   ``flow`` on the K̄ = 20 and 30 members at S = 300 for the speed-up.

Prints one line per run and a closing note; ``--out`` writes all numbers as
JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from deplbench.formulations.milp import solve_milp
from deplbench.formulations.milp.general import solve_general
from deplbench.instances.generators import generate


def _alexnet_any(**kw):
    return generate("realistic", family="alexnet", switches="any", **kw)


def _horizon_instance(horizon: int):
    """The cyclic AlexNet with K̄ = horizon and ℓmax moved linearly with K̄
    (ℓ(0) − ℓmax = 12·K̄/100, i.e. ℓmax = 9 at K̄ = 100), Tmax scaled alike."""
    inst = _alexnet_any(horizon=horizon, time_max=200.0 * horizon / 100.0)
    return inst.with_changes(loss_max=float(inst.initial_loss) - 12.0 * horizon / 100.0)


def _run(label, inst, S, formulation, time_limit):
    t0 = time.perf_counter()
    if formulation == "general":
        res = solve_general(inst, scenarios=S, time_limit=time_limit)
    else:
        res = solve_milp(inst, scenarios=S, time_limit=time_limit, formulation=formulation)
    wall = time.perf_counter() - t0
    row = {"label": label, "instance": inst.name, "horizon": int(inst.horizon), "S": int(S),
           "formulation": formulation, "status": res.status, "cost": res.cost, "lower_bound": res.lower_bound,
           "gap": res.gap, "seconds": round(wall, 3), "nodes": res.diagnostics.get("nodes"),
           "message": res.message}
    gap = "—" if res.gap is None else f"{res.gap:.2e}"
    cost = "—" if res.cost is None else f"{res.cost:.4f}"
    print(f"{label:<34} S={S:<5} {formulation:<8} {res.status:<11} cost={cost:<12} gap={gap:<9} "
          f"{wall:7.2f} s", flush=True)
    return row


def _slope(xs, ts):
    if len(xs) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ts), 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-scaling", action="store_true")
    args = ap.parse_args(argv)
    tl = args.time_limit
    print(f"# general_targets: time limit {tl:g} s per solve; load average {os.getloadavg()}", flush=True)
    rows = []
    cyc = _alexnet_any()
    rows.append(_run("T1 alexnet-any K=100", cyc, 1000, "general", tl))
    rows.append(_run("T1b alexnet-any K=100 lmax=13", cyc.with_changes(loss_max=13.0), 1000, "general", tl))
    d10 = generate("datasets", n_datasets=10, n_clusters=2, horizon=50, seed=0)
    rows.append(_run("T2 datasets D=10 N=2 K=50", d10, 200, "general", tl))
    g300 = _run("T3 alexnet-any K=100", cyc, 300, "general", tl)
    f300 = _run("T3 alexnet-any K=100", cyc, 300, "flow", tl)
    rows += [g300, f300]
    scale_S, scale_K, small = [], [], []
    if not args.skip_scaling:
        for S in (100, 3000):
            scale_S.append(_run("T4 alexnet-any K=100 (vs S)", cyc, S, "general", tl))
        for K in (20, 30, 40, 50, 60):
            scale_K.append(_run(f"T4 alexnet-any K={K} (vs K̄)", _horizon_instance(K), 300, "general", tl))
        k30 = _horizon_instance(30)
        for S in (100, 1000, 3000):
            small.append(_run("T4 alexnet-any K=30 (vs S)", k30, S, "general", tl))
        small.append(scale_K[1])
        for K in (20, 30):
            rows.append(_run(f"T3' alexnet-any K={K} (flow)", _horizon_instance(K), 300, "flow", tl))
    rows += scale_S + scale_K + small[:-1]
    by_S = sorted([r for r in [rows[0], g300] + scale_S if r["status"] == "optimal"], key=lambda r: r["S"])
    by_K = sorted([r for r in scale_K if r["status"] == "optimal"], key=lambda r: r["horizon"])
    slope_S = _slope([r["S"] for r in by_S], [r["seconds"] for r in by_S])
    by_S30 = sorted([r for r in small if r["status"] == "optimal"], key=lambda r: r["S"])
    slope_S30 = _slope([r["S"] for r in by_S30], [r["seconds"] for r in by_S30])
    slope_K = _slope([r["horizon"] for r in by_K], [r["seconds"] for r in by_K])
    speedup = (f300["seconds"] / g300["seconds"]
               if g300["status"] == "optimal" and f300["status"] == "optimal" else None)
    print("\n# closing note")
    t1, t1b, t2 = rows[0], rows[1], rows[2]
    for name, r in (("T1 cyclic AlexNet S=1000", t1), ("T1b the same with ℓmax = 13", t1b),
                    ("T2 datasets |D|=10 S=200", t2)):
        met = r["status"] == "optimal" and r["seconds"] <= 60.0
        print(f"{name}: {'MET' if met else 'NOT MET'} ({r['status']}, gap {r['gap']}, {r['seconds']} s)")
    if speedup is not None:
        print(f"T3 speed-up over flow at S=300: {speedup:.1f}x ({'MET' if speedup >= 10 else 'NOT MET'})")
    else:
        print(f"T3 speed-up over flow at S=300: not measurable (general {g300['status']} "
              f"gap {g300['gap']}, flow {f300['status']} gap {f300['gap']})")
    print(f"T4 log-log slope of time vs S over finished runs: "
          f"{'not fitted (fewer than 2 finished runs)' if slope_S is None else f'{slope_S:.2f}'}; "
          f"vs K̄: {'not fitted (fewer than 2 finished runs)' if slope_K is None else f'{slope_K:.2f}'}")
    print(f"T4' log-log slope of time vs S on the K̄ = 30 instance: "
          f"{'not fitted' if slope_S30 is None else f'{slope_S30:.2f}'}")
    for K in (20, 30):
        g = next((r for r in scale_K if r["horizon"] == K), None)
        f = next((r for r in rows if r["label"].startswith(f"T3' alexnet-any K={K}")), None)
        if g and f and g["status"] == "optimal":
            ratio = f["seconds"] / g["seconds"]
            print(f"T3' K̄ = {K}, S = 300: flow {f['status']} in {f['seconds']} s, general optimal in "
                  f"{g['seconds']} s: {'≥ ' if f['status'] != 'optimal' else ''}{ratio:.1f}x")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"time_limit": tl, "rows": rows, "slope_S": slope_S,
                                              "slope_S_K30": slope_S30,
                                              "slope_K": slope_K, "speedup_S300": speedup}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
