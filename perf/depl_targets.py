"""DepL performance targets, measured side by side.

Run::

    python perf/depl_targets.py            # full (a few minutes)
    python perf/depl_targets.py --quick    # smaller networkx sweep

Measures, on the realistic AlexNet instance (``generate("realistic",
family="alexnet")``, K̄ = 100):

1. DepL end to end at η = 200 (its own out-of-sample check with 2·10⁴
   samples included; the suite's separate evaluation excluded): median wall
   time over repeats, and peak memory (tracemalloc peak of the run and the
   process's max RSS). Target: ≤ 0.5 s, ≤ 1 GB.
2. DepL at η = 800: completes (time, cost).
3. The layer-vectorised DAG DP against the networkx reference (explicit
   graph + Dijkstra to Ω) on the *same* expanded graph (stage 2's graph at the
   centre θ, conservative rounding): both must return the same path weight;
   η grows until networkx needs more than 60 s (or would, extrapolating the
   last two sizes). Target: DP ≥ 100× faster at the largest η the reference
   finishes within 60 s.
4. For context: DepL and best-exp cost per ℓmax ∈ {5, 7, 9, 13}, the effect
   of the loss-axis rounding mode and of the quantile surrogate.
5. Where DepL's gap to the optimum comes from (``--only gap`` runs this
   alone, ~1 min): per ℓmax ∈ {5, 7, 9, 13}, a chain of variants that each
   remove one source — (c) the (1+ε) allocation stage (``reoptimize``),
   (b) the η discretisation (η = 800), (a) the conservatism of the proven
   quantile surrogate (``calibrate``) — against the optimum proxies: the
   MILP's SAA optimum at S = 300 and S = 2000 scenarios (exact for its
   scenarios, optimistic out of sample) and best-exp (feasible, near-optimal
   here). Every plan is judged on 10⁵ out-of-sample trajectories (seed 0).

Writes ``results/bench/depl_targets.json`` (``--only gap``:
``results/bench/depl_gap.json``) and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from deplbench.instances.generators import generate
from deplbench.solvers.depl.depl import most_capable_cluster
from deplbench.solvers.depl.quantile_transform import LossModel, build_bounds
from deplbench.solvers.expanded.graph import build_spec, solve_dp
from deplbench.solvers.expanded.reference import solve_networkx
from deplbench.solvers.run import solve

NX_LIMIT_S = 60.0


def stage2_spec(instance, eta: int, rounding: str = "up"):
    """Stage 2's expanded graph (centre θ of the Chernoff grid, γ = 1)."""
    n = most_capable_cluster(instance)
    comp = instance.model_compute
    comm = instance.model_size / instance.bandwidth[n]
    tau = comp / instance.capacity[n] + comm
    w = np.sqrt(comp * instance.unit_cost[n])
    lm = LossModel.from_instance(instance, 1.0)
    b = build_bounds(lm, "chernoff", 1, ref_model=0, ref_epochs=60)[0]
    return build_spec(w, tau, instance.time_max, b.run_phi, b.jump_phi, instance.allowed,
                      instance.initial_loss, instance.loss_max - b.offset, eta, rounding=rounding)


def time_depl(instance, eta: int, repeats: int, **params) -> dict:
    times, res = [], None
    for _ in range(repeats):
        res = solve(instance, "depl", evaluate=False, eta=eta, check_samples=20_000, **params)
        times.append(res.runtime_s)
    tracemalloc.start()
    solve(instance, "depl", evaluate=False, eta=eta, check_samples=20_000, **params)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "eta": eta, "status": res.status, "cost": res.cost, "epochs": res.plan.n_epochs if res.plan else None,
        "median_s": statistics.median(times), "min_s": min(times), "repeats": repeats,
        "peak_traced_mb": peak / 2**20,
        "stage_seconds": res.diagnostics.get("stage_seconds"),
        "graph_vertices": res.diagnostics.get("graph_vertices"),
    }


def dp_vs_networkx(instance, etas, full: bool = False) -> list[dict]:
    """Time the DP and the networkx reference on the same graph for growing η.

    ``full=False``: the reference builds the vertices reachable from the
    source; ``full=True``: every vertex of the paper's definition.
    """
    rows = []
    last = []
    for eta in etas:
        if len(last) >= 2:
            (e1, t1), (e2, t2) = last[-2:]
            slope = math.log(max(t2, 1e-6) / max(t1, 1e-6)) / math.log(e2 / e1)
            predicted = t2 * (eta / e2) ** max(slope, 1.0)
            if predicted > 2 * NX_LIMIT_S:
                print(f"  η={eta}: networkx predicted {predicted:.0f} s > {2 * NX_LIMIT_S:.0f} s, stopping", flush=True)
                break
        spec = stage2_spec(instance, eta)
        t0 = time.perf_counter()
        dp = solve_dp(spec)
        dp_s = time.perf_counter() - t0
        # best of 3 for the (fast) DP
        for _ in range(2):
            t0 = time.perf_counter()
            solve_dp(spec)
            dp_s = min(dp_s, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref = solve_networkx(spec, full=full)
        nx_s = time.perf_counter() - t0
        agree = dp.feasible == ref.feasible and (not dp.feasible or math.isclose(dp.weight, ref.weight, rel_tol=1e-12))
        row = {"eta": eta, "dp_s": dp_s, "networkx_s": nx_s, "speedup": nx_s / dp_s, "agree": agree,
               "weight": dp.weight if dp.feasible else None, "nx_vertices": ref.vertices, "nx_edges": ref.edges,
               "dp_vertices": dp.vertices, "dp_edges": dp.edges, "within_limit": nx_s <= NX_LIMIT_S}
        rows.append(row)
        print(f"  η={eta:4d}  dp {dp_s * 1e3:8.1f} ms  networkx {nx_s:8.2f} s  ×{row['speedup']:8.0f}  "
              f"agree={agree}  nx graph {ref.vertices}/{ref.edges}", flush=True)
        last.append((eta, nx_s))
        if nx_s > NX_LIMIT_S:
            break
    return rows


#: (key, what it removes, algorithm, parameters): each row removes one more source of DepL's gap.
GAP_CHAIN = (
    ("depl", "DepL default: proven Chernoff surrogate, η=200, (1+ε) grid allocation, ε=0.1", "depl", {}),
    ("no_eps", "(c) removed: exact x re-optimised for the chosen clusters", "depl", {"reoptimize": True}),
    ("no_eta", "(b) removed: η=800 (cost no longer changes with η here)", "depl",
     {"reoptimize": True, "eta": 800}),
    ("no_surrogate", "(a) removed as far as calibration can: calibrate=True", "depl",
     {"reoptimize": True, "eta": 800, "calibrate": True}),
)
#: Side variants: not in the chain, reported beside it.
GAP_SIDE = (
    ("theta15", "finer θ grid (n_theta=15) with the proven bound, reoptimize, η=800", "depl",
     {"reoptimize": True, "eta": 800, "n_theta": 15}),
    ("calibrated", "the sweep's depl-calibrated: calibrate=True, defaults otherwise", "depl", {"calibrate": True}),
    ("best_exp", "best-exp (defaults)", "best-exp", {}),
    ("milp300", "MILP, S=300 (SAA optimum)", "milp", {"scenarios": 300, "time_limit": 300.0}),
    ("milp2000", "MILP, S=2000 (SAA optimum)", "milp", {"scenarios": 2000, "time_limit": 300.0}),
)


def gap_decomposition(instance, loss_maxes=(5.0, 7.0, 9.0, 13.0), eval_samples: int = 100_000) -> list[dict]:
    """Split DepL's cost gap to the optimum into its sources (section 5).

    Returns one dict per ℓmax: every variant's cost, runtime, out-of-sample
    quantile and verdict, and the gap shares ``(c) epsilon``, ``(b) eta``,
    ``(a) surrogate`` and ``residual`` as fractions of the optimum proxy
    (MILP S = 300; see the module docstring).
    """
    rows = []
    for lmax in loss_maxes:
        inst = instance.with_changes(loss_max=lmax)
        row: dict = {"loss_max": lmax, "variants": {}}
        for key, what, algo, params in GAP_CHAIN + GAP_SIDE:
            r = solve(inst, algo, eval_samples=eval_samples, **params)
            ev = r.evaluation or {}
            row["variants"][key] = {"what": what, "algorithm": algo, "params": params, "status": r.status,
                                    "cost": r.cost, "runtime_s": r.runtime_s,
                                    "epochs": r.plan.n_epochs if r.plan else None,
                                    "quantile_oos": ev.get("quantile"), "quantile_ci": ev.get("quantile_ci"),
                                    "verdict": ev.get("verdict"),
                                    "guarantee": (r.diagnostics or {}).get("guarantee")}
        v = row["variants"]
        # The SAA optimum is optimistic out of sample (its plan may miss ℓmax
        # on fresh draws); the cheapest plan the evaluation accepts is an
        # upper bound of the true optimum: report both.
        ok = {k: x["cost"] for k, x in v.items() if x["verdict"] == "feasible" and x["cost"] is not None}
        if ok:
            k_best = min(ok, key=ok.get)
            row["best_feasible"] = {"variant": k_best, "cost": ok[k_best]}
        opt = v["milp300"]["cost"]
        costs = [v[k]["cost"] for k, *_ in GAP_CHAIN]
        if opt and all(c is not None for c in costs):
            row["optimum_proxy"] = opt
            row["gap"] = costs[0] / opt - 1.0
            row["shares"] = {"(c) epsilon": (costs[0] - costs[1]) / opt, "(b) eta": (costs[1] - costs[2]) / opt,
                             "(a) surrogate": (costs[2] - costs[3]) / opt, "residual": costs[3] / opt - 1.0}
        rows.append(row)
        fmt = lambda k, v=v: (f"{v[k]['cost']:.1f}" if v[k]["cost"] else v[k]["status"]) + (  # noqa: E731
            "" if v[k]["verdict"] in (None, "feasible") else f"({v[k]['verdict']})")
        print(f"  ℓmax={lmax:4.1f}  " + "  ".join(f"{k} {fmt(k)}" for k, *_ in GAP_CHAIN + GAP_SIDE), flush=True)
        if "shares" in row:
            print("             gap to MILP(S=300) {:+.1%}: ".format(row["gap"]) + ", ".join(
                f"{k} {x:+.1%}" for k, x in row["shares"].items()), flush=True)
        if "best_feasible" in row:
            print(f"             cheapest plan the evaluation accepts: {row['best_feasible']['variant']} "
                  f"{row['best_feasible']['cost']:.1f}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a smaller networkx sweep")
    ap.add_argument("--out", default=None, help="default results/bench/depl_targets.json "
                    "(results/bench/depl_gap.json with --only gap)")
    ap.add_argument("--only", choices=("gap",), help="run only section 5 (gap decomposition)")
    args = ap.parse_args(argv)
    inst = generate("realistic", family="alexnet")
    if args.only == "gap":
        print("5. Where DepL's gap to the optimum comes from (AlexNet)", flush=True)
        out = {"instance": inst.name, "gap_decomposition": gap_decomposition(inst)}
        path = Path(args.out or "results/bench/depl_gap.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2, default=float) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        return 0
    out: dict = {"instance": inst.name, "loss_max": inst.loss_max, "horizon": inst.horizon}
    reps = 3 if args.quick else 7
    solve(inst, "depl", evaluate=False, check_samples=20_000)  # warm imports and caches

    print("1. DepL end to end, η = 200 (target ≤ 0.5 s, ≤ 1 GB)", flush=True)
    out["eta200"] = time_depl(inst, 200, reps)
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  median {out['eta200']['median_s']:.3f} s (min {out['eta200']['min_s']:.3f}), "
          f"traced peak {out['eta200']['peak_traced_mb']:.1f} MB, process max RSS {out['max_rss_mb']:.0f} MB, "
          f"cost {out['eta200']['cost']:.1f}", flush=True)

    print("2. DepL at η = 800", flush=True)
    out["eta800"] = time_depl(inst, 800, 1 if args.quick else 3)
    print(f"  {out['eta800']['status']} in {out['eta800']['median_s']:.2f} s, traced peak "
          f"{out['eta800']['peak_traced_mb']:.1f} MB, cost {out['eta800']['cost']:.1f}", flush=True)

    print("3. DAG DP vs networkx on the same graph (target ≥ 100× at the largest η networkx does in 60 s)",
          flush=True)
    for label, full, etas in (
        ("reachable", False, [20, 50, 100, 150, 200, 400] if args.quick else
         [20, 50, 100, 150, 200, 300, 400, 800, 1600]),
        ("full", True, [5, 10, 15, 20] if args.quick else [10, 20, 30, 40, 60, 80, 100, 120]),
    ):
        print(f"  reference graph: {label} "
              f"({'every vertex (m, k, i, j) of the paper' if full else 'vertices reachable from the source'})",
              flush=True)
        rows = dp_vs_networkx(inst, etas, full=full)
        ok = [r for r in rows if r["within_limit"]]
        entry = {"rows": rows, "all_agree": all(r["agree"] for r in rows)}
        if ok:
            top = ok[-1]
            entry.update(largest_eta_within_60s=top["eta"], speedup_at_largest_eta=top["speedup"],
                         best_speedup=max(r["speedup"] for r in ok),
                         sweep_exhausted=len(ok) == len(rows) and rows[-1]["eta"] == etas[-1])
            print(f"  largest η with networkx ≤ 60 s: {top['eta']}"
                  f"{' (sweep end, not the limit)' if entry['sweep_exhausted'] else ''}, "
                  f"speed-up ×{top['speedup']:.0f} (best ×{entry['best_speedup']:.0f}), "
                  f"all agree: {entry['all_agree']}", flush=True)
        out[f"dp_vs_networkx_{label}"] = entry

    print("4. Cost by ℓmax (DepL default = label axis + Chernoff; the paper's rounded-up graph; the normal "
          "approximation; best-exp)", flush=True)
    table = []
    for lmax in (5.0, 7.0, 9.0, 13.0):
        i2 = inst.with_changes(loss_max=lmax)
        row = {"loss_max": lmax}
        for label, algo, params in (("depl", "depl", {}), ("depl_up", "depl", {"rounding": "up"}),
                                    ("depl_normal", "depl", {"quantile_method": "normal"}),
                                    ("best_exp", "best-exp", {})):
            r = solve(i2, algo, check_samples=20_000, **params)
            row[label] = {"status": r.status, "cost": r.cost, "runtime_s": r.runtime_s,
                          "quantile_oos": (r.evaluation or {}).get("quantile")}
        table.append(row)
        fmt = lambda d: f"{d['cost']:.1f}" if d["cost"] else d["status"]  # noqa: E731
        print(f"  ℓmax={lmax:4.1f}  depl {fmt(row['depl'])}  depl(up) {fmt(row['depl_up'])}  "
              f"depl(normal) {fmt(row['depl_normal'])}  best-exp {fmt(row['best_exp'])}", flush=True)
    out["cost_by_loss_max"] = table

    print("5. Where DepL's gap to the optimum comes from", flush=True)
    out["gap_decomposition"] = gap_decomposition(inst)

    path = Path(args.out or "results/bench/depl_targets.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=float) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
