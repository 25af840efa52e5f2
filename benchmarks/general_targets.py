"""Issue 14's targets for the ``general`` formulation, measured side by side in one run.

Usage::

    .venv/bin/python benchmarks/general_targets.py [--time-limit 60] [--out results/bench/general_targets.json]
                                                   [--skip-scaling]

Runs (every solve gets the same wall-clock limit, build included; the
machine's load average is printed before and after every run):

1. realistic AlexNet with ``switches="any"`` (cyclic), K̄ = 100, S = 1000,
   ω = 0.99, ℓmax = 9, 2 clusters: ``general`` (target: optimal, gap ≤ 1e-4,
   ≤ 60 s); the same with ℓmax = 13 (the top of the paper's range);
2. the datasets family, |D| = 10, 2 clusters, K̄ = 50, S = 200: ``general``
   (target: optimal ≤ 60 s);
3. the cyclic AlexNet at S = 300: ``general`` and ``flow`` side by side
   (target: general ≥ 10× faster; when ``flow`` stops at the limit the
   ratio is a lower bound, printed as "≥");
4. solve time against S (100, 300, 1000, 3000) on the K̄ = 100 instance and
   against K̄ (20..60 with ℓmax, Tmax moved with K̄, see
   ``_horizon_instance``, plus the K̄ = 100 run) at S = 300, with fitted
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


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _run(label, inst, S, formulation, time_limit):
    before = _load()
    t0 = time.perf_counter()
    if formulation == "general":
        res = solve_general(inst, scenarios=S, time_limit=time_limit)
    else:
        res = solve_milp(inst, scenarios=S, time_limit=time_limit, formulation=formulation)
    wall = time.perf_counter() - t0
    after = _load()
    row = {"label": label, "instance": inst.name, "horizon": int(inst.horizon), "S": int(S),
           "formulation": formulation, "status": res.status, "cost": res.cost, "lower_bound": res.lower_bound,
           "gap": res.gap, "seconds": round(wall, 3), "nodes": res.diagnostics.get("nodes"),
           "incumbent_seed": res.diagnostics.get("incumbent_seed"),
           "load_before": before, "load_after": after, "message": res.message}
    gap = "—" if res.gap is None else f"{res.gap:.2e}"
    cost = "—" if res.cost is None else f"{res.cost:.4f}"
    print(f"{label:<34} S={S:<5} {formulation:<8} {res.status:<11} cost={cost:<12} gap={gap:<9} "
          f"{wall:7.2f} s  load {before:.1f}→{after:.1f}", flush=True)
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
    t1 = _run("T1 alexnet-any K=100", cyc, 1000, "general", tl)
    t1b = _run("T1b alexnet-any K=100 lmax=13", cyc.with_changes(loss_max=13.0), 1000, "general", tl)
    d10 = generate("datasets", n_datasets=10, n_clusters=2, horizon=50, seed=0)
    t2 = _run("T2 datasets D=10 N=2 K=50", d10, 200, "general", tl)
    g300 = _run("T3 alexnet-any K=100", cyc, 300, "general", tl)
    f300 = _run("T3 alexnet-any K=100", cyc, 300, "flow", tl)
    rows += [t1, t1b, t2, g300, f300]
    scale_S, scale_K, flow_K = [], [], []
    if not args.skip_scaling:
        for S in (100, 3000):
            scale_S.append(_run("T4 alexnet-any K=100 (vs S)", cyc, S, "general", tl))
        for K in (20, 30, 40, 50, 60):
            scale_K.append(_run(f"T4 alexnet-any K={K} (vs K̄)", _horizon_instance(K), 300, "general", tl))
        for K in (20, 30):
            flow_K.append(_run(f"T3' alexnet-any K={K} (flow)", _horizon_instance(K), 300, "flow", tl))
    rows += scale_S + scale_K + flow_K
    by_S = sorted([r for r in [t1, g300] + scale_S if r["status"] == "optimal"], key=lambda r: r["S"])
    by_K = sorted([r for r in scale_K + [g300] if r["status"] == "optimal"], key=lambda r: r["horizon"])
    slope_S = _slope([r["S"] for r in by_S], [r["seconds"] for r in by_S])
    slope_K = _slope([r["horizon"] for r in by_K], [r["seconds"] for r in by_K])

    def ratio(g, f):
        if g["status"] != "optimal":
            return None, f"not measurable (general {g['status']}, gap {g['gap']})"
        x = f["seconds"] / g["seconds"]
        sure = "" if f["status"] == "optimal" else "≥ "
        return x, (f"{sure}{x:.1f}x (flow {f['status']} in {f['seconds']} s, gap {f['gap']}; general optimal in "
                   f"{g['seconds']} s)")

    speedup, speed_txt = ratio(g300, f300)
    print(f"\n# closing note (load average now {_load()})")
    for name, r in (("T1 cyclic AlexNet S=1000", t1), ("T1b the same with ℓmax = 13", t1b),
                    ("T2 datasets |D|=10 S=200", t2)):
        met = r["status"] == "optimal" and r["seconds"] <= 60.0
        print(f"{name}: {'MET' if met else 'NOT MET'} ({r['status']}, gap {r['gap']}, {r['seconds']} s, "
              f"load {r['load_before']}→{r['load_after']})")
    print(f"T3 speed-up over flow at S=300: {speed_txt} "
          f"({'MET' if speedup is not None and speedup >= 10 else 'NOT MET'})")
    def fit(x, xs):
        return "not fitted (fewer than 2 finished runs)" if x is None else f"{x:.2f} over {xs}"

    print(f"T4 log-log slope of time vs S (K̄ = 100): {fit(slope_S, [r['S'] for r in by_S])}; "
          f"vs K̄ (S = 300): {fit(slope_K, [r['horizon'] for r in by_K])}")
    for r in [t1, g300] + scale_S:
        if r["status"] != "optimal":
            print(f"   S = {r['S']}: {r['status']} with gap {r['gap']} (left out of the fit)")
    for K, f in zip((20, 30), flow_K):
        g = next((r for r in scale_K if r["horizon"] == K), None)
        if g:
            print(f"T3' K̄ = {K}, S = 300: {ratio(g, f)[1]}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"time_limit": tl, "rows": rows, "slope_S": slope_S,
                                              "slope_K": slope_K, "speedup_S300": speedup}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
