"""Estimate a sweep's CPU time from a stratified sample of its tasks.

Run::

    python perf/reproduce_estimate.py                        # paper.toml, 2 tasks per group
    python perf/reproduce_estimate.py --sweep quick --per-group 1 --workers 2 4 8

The sweep's tasks are grouped by (sweep entry, instance group) — one
algorithm configuration on one ``[[instances]]`` block: the seeded variants
of a set, or the targets of the paper's instance. From each group
``--per-group`` tasks are run (the first and the last, so the hardest and
the easiest target of a block, or evenly spaced ones), in this process,
through the runner's own task function (``benchmarks.tasks.run_task``:
instance build, solve, out-of-sample and closed-loop evaluation). A group's
CPU time is estimated as its size × the mean CPU seconds of its sampled
tasks; the sweep's as the sum. Wall time on W workers is then estimated as
max(total / W, the longest sampled task): an estimate (the group means come
from two tasks; packing is assumed perfect), stated as one.

CPU seconds are this process's (``time.process_time``, every thread): a
task runs single-threaded in the runner, so they grow far less with the
machine's load than wall time; both are recorded with the 1-minute load
average at the start and the end. Writes ``results/bench/reproduce_estimate.json``
(every sampled task, every group's estimate) and prints a Markdown summary.
Resumable: tasks already in the output's ``tasks`` are not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

from deplbench.benchmarks.sweep import load_sweep
from deplbench.benchmarks.tasks import run_task


def sample(tasks, per_group: int) -> list[tuple[tuple[str, str], int, object]]:
    """[(group, group size, task)]: ``per_group`` tasks per (entry, instance group), spread evenly."""
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for t in tasks:
        groups[(t.label or t.algorithm, t.group)].append(t)
    out = []
    for g, ts in groups.items():
        n = len(ts)
        k = min(per_group, n)
        idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
        out += [(g, n, ts[i]) for i in idx]
    return out


def estimate(rows: list[dict], workers: list[int]) -> dict:
    """Per group: size, sampled tasks, mean CPU s, estimate; the total and wall on each W."""
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by[(r["entry"], r["group"])].append(r)
    groups = []
    for (entry, group), rs in by.items():
        mean = sum(r["cpu_s"] for r in rs) / len(rs)
        groups.append({"entry": entry, "group": group, "size": rs[0]["group_size"], "sampled": len(rs),
                       "cpu_s_mean": mean, "cpu_s_max": max(r["cpu_s"] for r in rs),
                       "cpu_s_estimate": mean * rs[0]["group_size"]})
    groups.sort(key=lambda g: -g["cpu_s_estimate"])
    total = sum(g["cpu_s_estimate"] for g in groups)
    longest = max((r["cpu_s"] for r in rows), default=0.0)
    return {"groups": groups, "cpu_s_total": total, "tasks": sum(g["size"] for g in groups),
            "wall_s_estimate": {str(w): max(total / w, longest) for w in workers}, "longest_task_cpu_s": longest}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default="paper", help="sweep name or file (default paper)")
    ap.add_argument("--per-group", type=int, default=2, help="tasks run per group (default 2)")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8], help="worker counts to estimate for")
    ap.add_argument("--out", default="results/bench/reproduce_estimate.json")
    a = ap.parse_args(argv)
    if a.per_group < 1:
        ap.error("--per-group: must be at least 1")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.exists() else {}
    done = {r["key"]: r for r in old.get("tasks", [])}
    tasks = load_sweep(a.sweep).tasks()
    plan = sample(tasks, a.per_group)
    print(f"{a.sweep}: {len(tasks)} tasks; sampling {len(plan)}", file=sys.stderr, flush=True)
    load_start = os.getloadavg()[0]
    rows = []
    for (entry, group), n, t in plan:
        if t.key in done:
            rows.append(done[t.key])
            continue
        c0, w0 = time.process_time(), time.perf_counter()
        rec = run_task(t.to_dict())
        rows.append({"key": t.key, "entry": entry, "group": group, "group_size": n,
                     "loss_max": t.targets.get("loss_max"), "seed": t.instance_seed, "status": rec.get("status"),
                     "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0})
        print(f"{entry} on {group}: {rows[-1]['cpu_s']:.1f} CPU-s ({rows[-1]['status']})", file=sys.stderr,
              flush=True)
        out.write_text(json.dumps({"sweep": a.sweep, "tasks": rows}, indent=1))
    est = estimate(rows, a.workers)
    result = {"sweep": a.sweep, "per_group": a.per_group, "load_1min_start": load_start,
              "load_1min_end": os.getloadavg()[0], **est, "tasks": rows}
    out.write_text(json.dumps(result, indent=1))
    print(f"| {a.sweep} | tasks | sampled | CPU-s (estimate) |\n|---|---|---|---|\n"
          f"| total | {est['tasks']} | {len(rows)} | {est['cpu_s_total']:.0f} |")
    for w, s in est["wall_s_estimate"].items():
        print(f"wall on {w} workers (estimate): {s / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
