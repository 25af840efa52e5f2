"""Targets of the ``general`` branch-and-bound, measured side by side in one run.

Usage::

    .venv/bin/python perf/general_targets.py [--time-limit 60] [--out results/bench/general_targets.json]
                                                   [--only datasets,alexnet,repro] [--scaling]

Runs (every solve gets the same wall-clock limit; the machine's load
average is printed before and after every run, and the results are only
meaningful with it):

1. ``datasets``: the 15 ``datasets-general`` members of
   ``perf/sweeps/complexity.toml`` (|D| = 6..10, seeds 0–2, K̄ = 50,
   2 clusters) at S = 200 — target: each proven optimal within 60 s on the
   2-core machine with another job beside it;
2. ``alexnet``: the cyclic AlexNet (``switches="any"``, K̄ = 100, ℓmax = 9,
   ω = 0.99, 2 clusters) at S = 3000 — target: proven optimal within 60 s;
3. ``repro``: the cyclic AlexNet at S = 1000 twice, the second time with a
   busy single-process Python loop beside it — target: identical node
   counts, bounds and result (every phase is budgeted in work units, the
   wall clock is only the outer stop);
4. ``--scaling``: solve time against S (100, 300, 1000) on the cyclic
   AlexNet, for docs/performance.md.

Why the search is built as it is — the short plans enumerated exactly
(``general_incumbent``), two-group leaves searched over model blocks
(``general_pairs``), OpenBLAS held to one thread (``deplbench.blas_threads``),
node multipliers re-tuned per batch of children (``node_groups``), warm
starts and screens, per-search tables, and every phase budgeted in work
units (``GeneralSettings``) so that node counts do not depend on the load —
is in docs/DESIGN.md; the current numbers are in docs/performance.md and
how they were reached in CHANGELOG.md's history.

Prints one line per run and a closing note; ``--out`` writes all numbers as
JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from deplbench.formulations.general import solve_general
from deplbench.instances.generators import generate


def _alexnet_any(**kw):
    return generate("realistic", family="alexnet", switches="any", **kw)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _busy(stop) -> None:
    """A single-process busy loop (the 'other job' beside a solve)."""
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x + i) % 1_000_003


def _run(label, inst, S, time_limit, busy=False):
    stop = mp.Event()
    proc = mp.Process(target=_busy, args=(stop,), daemon=True) if busy else None
    if proc is not None:
        proc.start()
    before = _load()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        res = solve_general(inst, scenarios=S, time_limit=time_limit)
    finally:
        if proc is not None:
            stop.set()
            proc.join(5)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = _load()
    d = res.diagnostics
    row = {"label": label, "instance": inst.name, "S": int(S), "time_limit": time_limit, "status": res.status,
           "cost": res.cost,
           "lower_bound": res.lower_bound, "gap": res.gap, "seconds": round(wall, 3), "cpu_s": round(cpu, 3),
           "busy_beside": busy,
           "nodes": d.get("nodes"), "leaves": d.get("leaves"), "boxes": d.get("boxes"),
           "leaf_evaluations": d.get("leaf_evaluations"), "group_multipliers": d.get("group_multipliers"),
           "enumeration_steps": d.get("enumeration_steps"), "stopped_in": d.get("stopped_in"),
           "load_before": before, "load_after": after, "message": res.message}
    gap = "—" if res.gap is None else f"{res.gap:.2e}"
    cost = "—" if res.cost is None else f"{res.cost:.4f}"
    print(f"{label:<34} S={S:<5} {res.status:<11} cost={cost:<12} gap={gap:<9} nodes={d.get('nodes')!s:<6} "
          f"{wall:7.2f} s (cpu {cpu:.1f} s)  load {before:.1f}→{after:.1f}{'  (busy loop beside)' if busy else ''}",
          flush=True)
    return row


def _met(r, limit=60.0) -> str:
    """Optimal within the limit: wall seconds, or CPU seconds when the run had no time limit."""
    spent = r["seconds"] if r["time_limit"] is not None else r["cpu_s"]
    return "MET" if r["status"] == "optimal" and spent <= limit else "NOT MET"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=lambda x: None if x == "none" else float(x), default=60.0,
                    help="seconds per solve, or none (then the targets are judged on CPU seconds)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="datasets,alexnet,repro")
    ap.add_argument("--scaling", action="store_true")
    args = ap.parse_args(argv)
    tl, only = args.time_limit, set(args.only.split(","))
    print(f"# general_targets: time limit {tl} s per solve; load average {os.getloadavg()}", flush=True)
    rows: dict = {"datasets": [], "alexnet": [], "repro": [], "scaling": []}
    if "datasets" in only:
        for n_datasets in (6, 7, 8, 9, 10):
            for seed in (0, 1, 2):
                inst = generate("datasets", n_datasets=n_datasets, n_clusters=2, horizon=50, seed=seed)
                rows["datasets"].append(_run(f"datasets D={n_datasets} seed={seed}", inst, 200, tl))
    cyc = _alexnet_any()
    if "alexnet" in only:
        rows["alexnet"].append(_run("alexnet-any K=100 lmax=9", cyc, 3000, tl))
    if "repro" in only:
        rows["repro"] = [_run("repro alexnet-any", cyc, 1000, None), _run("repro alexnet-any", cyc, 1000, None,
                                                                          busy=True)]
    if args.scaling:
        rows["scaling"] = [_run("alexnet-any (vs S)", cyc, S, tl) for S in (100, 300, 1000)]
    print(f"\n# closing note (load average now {_load()})")
    if rows["datasets"]:
        met = [r for r in rows["datasets"] if _met(r) == "MET"]
        print(f"datasets-general: {len(met)} of {len(rows['datasets'])} proven optimal within 60 s "
              f"({'MET' if len(met) == len(rows['datasets']) else 'NOT MET'})")
        for r in rows["datasets"]:
            if _met(r) != "MET":
                print(f"   {r['label']}: {r['status']}, gap {r['gap']}, {r['seconds']} s, stopped in "
                      f"{r['stopped_in']}")
    for r in rows["alexnet"]:
        print(f"alexnet-any S=3000: {_met(r)} ({r['status']}, gap {r['gap']}, {r['seconds']} s)")
    if rows["repro"]:
        keys = ("status", "cost", "lower_bound", "nodes", "leaves", "boxes", "leaf_evaluations",
                "group_multipliers", "enumeration_steps")
        a, b = rows["repro"]
        same = all(a[k] == b[k] for k in keys)
        print(f"reproducible (alone vs busy loop beside): {'MET' if same else 'NOT MET'} "
              f"(nodes {a['nodes']} vs {b['nodes']}; cost {a['cost']} vs {b['cost']}; "
              f"{a['seconds']} s vs {b['seconds']} s)")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"time_limit": tl, **rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
