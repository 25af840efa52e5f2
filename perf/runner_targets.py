"""The runner's performance targets, measured side by side.

Run::

    python perf/runner_targets.py                 # both parts, 2 repetitions
    python perf/runner_targets.py --part dask --reps 3
    python perf/runner_targets.py --part leases --lease-tasks 48

1. **Dask that pays off**: ``deplbench run`` of
   ``perf/sweeps/quick.toml`` on the local pool (``--workers 2``) and on
   a Dask ``LocalCluster`` of 2 workers (``--dask-local 2``), each into a
   fresh store, alternating which goes first in each repetition. Times are
   end to end, as a user sees them (start-up, sweep validation, cluster
   start, every task, the store). Target: Dask ≤ 1.3× local. The rows of
   both runs are compared too (key, status, and cost where both are exact
   and not stopped by a limit).
2. **Two runners halve the time**: a generated sweep of
   ``--lease-tasks`` short DepL tasks (AlexNet at several
   ℓmax, η and seeds) run once by one ``deplbench run --workers 1`` and once
   by two such runners started together on one store (alternating order
   between repetitions). Target: two runners ≈ 0.5× one; no task is run
   twice and the two stores hold the same keys.

The machine is shared: the load average (``os.getloadavg``) is printed and
stored before and after every run; only the ratios mean anything.

Writes ``results/bench/runner_targets.json`` (``--out``) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "perf" / "sweeps" / "quick.toml"
DEPLBENCH = [sys.executable, "-m", "deplbench"]


def load() -> list[float]:
    """The 1/5/15-minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def run_cli(args: list[str], log: Path) -> subprocess.Popen:
    """Start ``deplbench ARGS`` with stderr/stdout into ``log``."""
    fh = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed by the caller via wait()
    return subprocess.Popen([*DEPLBENCH, *args], stdout=fh, stderr=subprocess.STDOUT,
                            cwd=ROOT)


def timed(procs: list[subprocess.Popen]) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    codes = [p.wait() for p in procs]
    return time.perf_counter() - t0, codes


def rows(db: Path) -> dict[str, dict]:
    """Latest row per key: status, cost, exactness, how often it was stored."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: dict[str, dict] = {}
        for key, status, cost, exact, label in con.execute(
                "SELECT key, status, cost, exact, label FROM results ORDER BY attempt"):
            prev = out.get(key)
            out[key] = {"status": status, "cost": cost, "exact": exact, "label": label,
                        "stored": (prev["stored"] + 1) if prev else 1}
        return out
    finally:
        con.close()


def busy(db: Path) -> dict:
    """Task time in a store: the sum of the tasks' own wall times, and when
    the first task started after the run began (the runner's start-up)."""
    import datetime as dt

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        walls = [r[0] or 0.0 for r in con.execute("SELECT wall_s FROM results")]
        runs = [dt.datetime.fromisoformat(r[0]).timestamp()
                for r in con.execute("SELECT started_at FROM runs")]
        first = con.execute("SELECT MIN(started_at) FROM results").fetchone()[0]
    finally:
        con.close()
    startup = (dt.datetime.fromisoformat(first).timestamp() - min(runs)) if first and runs \
        else float("nan")
    return {"task_s": round(sum(walls), 2), "mean_task_s": round(sum(walls) / max(len(walls), 1), 3),
            "first_task_after_s": round(startup, 2)}


def compare(a: dict[str, dict], b: dict[str, dict]) -> dict:
    """Differences between two stores' rows.

    Costs are compared where both rows are ``optimal``, or ``feasible``
    results of a heuristic (deterministic given its seed); an exact solver
    stopped by its time limit (``feasible``) may legitimately return another
    plan on a loaded machine.
    """
    keys_a, keys_b = set(a), set(b)
    status_diff, cost_diff = [], []
    for k in keys_a & keys_b:
        ra, rb = a[k], b[k]
        comparable = ra["cost"] is not None and rb["cost"] is not None and (
            ra["status"] == "optimal" or (ra["status"] == "feasible" and not ra["exact"]))
        if ra["status"] != rb["status"]:
            status_diff.append((ra["label"], ra["status"], rb["status"]))
        elif comparable and abs(ra["cost"] - rb["cost"]) > 1e-6 * max(1.0, abs(ra["cost"])):
            cost_diff.append((ra["label"], ra["cost"], rb["cost"]))
    return {"only_first": len(keys_a - keys_b), "only_second": len(keys_b - keys_a),
            "status_differs": status_diff, "cost_differs": cost_diff}


def ratios(runs: list[dict], reps: int, base: str, other: str, task_key: str) -> tuple[float, list, float]:
    """``other``/``base`` from the runs of both modes.

    Returns the wall-time ratio of the summed runs, the ratio in each
    repetition (rounded), and the ratio of the tasks' own times ``task_key``
    (a column of :func:`busy`) summed over the runs: how much slower the
    same tasks ran, NaN when ``base`` has none.
    """
    total = {m: sum(x["wall_s"] for x in runs if x["mode"] == m) for m in (base, other)}
    per_rep = []
    for rep in range(reps):
        w = {x["mode"]: x["wall_s"] for x in runs if x["rep"] == rep}
        per_rep.append(round(w[other] / w[base], 3))
    task = {m: sum(x[task_key] for x in runs if x["mode"] == m) for m in (base, other)}
    task_ratio = task[other] / task[base] if task[base] else float("nan")
    return total[other] / total[base], per_rep, task_ratio


# --------------------------------------------------------------------------
# 1. Dask LocalCluster(2) against the local pool
# --------------------------------------------------------------------------


def dask_part(sweep: Path, reps: int, tmp: Path) -> dict:
    modes = {"local": ["--workers", "2"], "dask": ["--dask-local", "2"]}
    # Every run reads one snapshot: the sweep file may change while this runs.
    import hashlib
    import shutil

    name = sweep
    sweep = Path(shutil.copy(sweep, tmp / sweep.name))
    digest = hashlib.sha256(sweep.read_bytes()).hexdigest()[:12]
    runs = []
    for rep in range(reps):
        order = ["local", "dask"] if rep % 2 == 0 else ["dask", "local"]
        for mode in order:
            db = tmp / f"{mode}-{rep}.sqlite"
            before = load()
            wall, codes = timed([run_cli(["run", str(sweep), "--db", str(db), "--no-progress",
                                          *modes[mode]], tmp / f"{mode}-{rep}.log")])
            after = load()
            r = rows(db)
            b = busy(db)
            runs.append({"rep": rep, "mode": mode, "wall_s": round(wall, 2), "exit": codes[0],
                         "tasks": len(r), "failed": sum(x["status"] == "error" for x in r.values()),
                         **b, "load_before": before, "load_after": after})
            print(f"  rep {rep} {mode:5s}: {wall:7.1f} s, {len(r)} rows "
                  f"({runs[-1]['failed']} error), exit {codes[0]}, task time {b['task_s']:.0f} s, "
                  f"first task after {b['first_task_after_s']:.1f} s, load {before} -> {after}",
                  flush=True)
    # The same tasks take longer when the shared machine is busier; the
    # ratio of the tasks' own summed times says by how much, and the wall
    # ratio divided by it is the executor's own overhead (1 = none).
    ratio, per_rep, task_ratio = ratios(runs, reps, "local", "dask", "task_s")
    diff = compare(rows(tmp / "local-0.sqlite"), rows(tmp / "dask-0.sqlite"))
    return {"task_time_ratio": round(task_ratio, 3),
            "ratio_per_task_time": round(ratio / task_ratio, 3),
            "sweep": str(name.relative_to(ROOT) if name.is_relative_to(ROOT) else name),
            "sweep_sha256": digest, "runs": runs, "ratio_per_rep": per_rep, "ratio": round(ratio, 3),
            "target": 1.3, "met": ratio <= 1.3, "rows_compared": diff}


# --------------------------------------------------------------------------
# 2. two runners on one store against one runner
# --------------------------------------------------------------------------


def lease_sweep(n_tasks: int, path: Path) -> Path:
    """A sweep of ``n_tasks`` DepL tasks of ~1–3 s each (AlexNet).

    Distinct tasks come from ℓmax × η × generator seed; DepL at η = 100–200 on
    the realistic AlexNet instance takes one to a few seconds.
    """
    loss_max = [7.0, 9.0, 11.0, 13.0]
    etas = [100, 200]
    n_seeds = max(1, -(-n_tasks // (len(loss_max) * len(etas))))
    text = f"""[sweep]
name = "leases"
description = "runner_targets.py: {n_tasks} DepL tasks of about 1-3 s"
time_limit_s = 120
evaluation = {{ samples = 2000, seed = 0 }}

[[instances]]
id = "alexnet"
family = "realistic"
params = {{ family = "alexnet" }}
seeds = {list(range(n_seeds))}
targets = {{ loss_max = {loss_max}, omega = 0.99 }}

[[algorithms]]
name = "depl"
grid = {{ eta = {etas} }}
"""
    path.write_text(text, encoding="utf-8")
    return path


def leases_part(n_tasks: int, reps: int, tmp: Path) -> dict:
    sweep = lease_sweep(n_tasks, tmp / "leases.toml")
    runs = []
    for rep in range(reps):
        order = ["one", "two"] if rep % 2 == 0 else ["two", "one"]
        for mode in order:
            db = tmp / f"leases-{mode}-{rep}.sqlite"
            n = 1 if mode == "one" else 2
            before = load()
            procs = [run_cli(["run", str(sweep), "--db", str(db), "--no-progress",
                              "--workers", "1"], tmp / f"leases-{mode}-{rep}-{i}.log")
                     for i in range(n)]
            wall, codes = timed(procs)
            after = load()
            r = rows(db)
            dup = sum(x["stored"] > 1 for x in r.values())
            logs = [(tmp / f"leases-{mode}-{rep}-{i}.log").read_text(encoding="utf-8").strip()
                    .splitlines()[-1:] for i in range(n)]
            b = busy(db)
            runs.append({"rep": rep, "mode": mode, "wall_s": round(wall, 2), "exit": codes,
                         "tasks": len(r), "stored_twice": dup, **b,
                         "summaries": [x[0] if x else "" for x in logs],
                         "load_before": before, "load_after": after})
            print(f"  rep {rep} {mode} runner(s): {wall:7.1f} s, {len(r)} rows, "
                  f"{dup} stored twice, exit {codes}, mean task {b['mean_task_s']:.2f} s, "
                  f"first task after {b['first_task_after_s']:.1f} s, "
                  f"load {before} -> {after}", flush=True)
            for s in runs[-1]["summaries"]:
                print(f"      {s}", flush=True)
    # How much slower each task ran with two runners than with one: 1 when
    # the machine had a second core free, 2 when the two runners shared one.
    # The ratio divided by it is what the runners' coordination (leases,
    # start-up) made of the CPU they got: 0.5 = nothing lost.
    ratio, per_rep, slowdown = ratios(runs, reps, "one", "two", "mean_task_s")
    diff = compare(rows(tmp / "leases-one-0.sqlite"), rows(tmp / "leases-two-0.sqlite"))
    return {"tasks": runs[0]["tasks"], "runs": runs, "ratio_per_rep": per_rep, "ratio": round(ratio, 3),
            "task_slowdown": round(slowdown, 3),
            "ratio_per_task_time": round(ratio / slowdown, 3),
            "target": "about 0.5", "rows_compared": diff}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("dask", "leases", "all"), default="all")
    ap.add_argument("--reps", type=int, default=2, help="repetitions (alternating order)")
    ap.add_argument("--sweep", type=Path, default=QUICK, help="sweep of the Dask part")
    ap.add_argument("--lease-tasks", type=int, default=40,
                    help="tasks of the leases part (rounded up to a multiple of 8)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "runner_targets.json")
    ap.add_argument("--keep", action="store_true", help="keep the stores and logs (printed)")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps: must be >= 1")
    result: dict = {"cpu_count": os.cpu_count(), "load_start": load(),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = Path(tempfile.mkdtemp(prefix="runner-targets-"))
    try:
        if args.part in ("leases", "all"):
            print(f"# two runners (1 worker each) vs one runner (1 worker), about "
                  f"{args.lease_tasks} DepL tasks, {args.reps} repetition(s), load {load()}", flush=True)
            d = result["leases"] = leases_part(args.lease_tasks, args.reps, tmp)
            print(f"two/one = {d['ratio']:.3f} (per repetition {d['ratio_per_rep']}); "
                  f"target about 0.5; each task ran {d['task_slowdown']:.2f}x as long with "
                  f"two runners (1 = a second core was free), so per unit of task time "
                  f"two/one = {d['ratio_per_task_time']:.3f}; "
                  f"rows: {d['rows_compared']['only_first']}/"
                  f"{d['rows_compared']['only_second']} keys in one store only, "
                  f"{len(d['rows_compared']['status_differs'])} status and "
                  f"{len(d['rows_compared']['cost_differs'])} cost difference(s)", flush=True)
        if args.part in ("dask", "all"):
            print(f"# Dask LocalCluster(2) vs local pool (2 workers) on {args.sweep}, "
                  f"{args.reps} repetition(s), load {load()}", flush=True)
            d = result["dask"] = dask_part(args.sweep.resolve(), args.reps, tmp)
            print(f"dask/local = {d['ratio']:.3f} (per repetition {d['ratio_per_rep']}); "
                  f"target <= 1.3: {'met' if d['met'] else 'MISSED'}; the tasks' own time "
                  f"dask/local = {d['task_time_ratio']:.3f} (machine load), so per unit of "
                  f"task time {d['ratio_per_task_time']:.3f}; rows: "
                  f"{d['rows_compared']['only_first']}/{d['rows_compared']['only_second']} keys "
                  f"in one store only, {len(d['rows_compared']['status_differs'])} status and "
                  f"{len(d['rows_compared']['cost_differs'])} exact-cost difference(s)", flush=True)
    finally:
        result["load_end"] = load()
        if args.keep:
            print(f"# stores and logs kept in {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"# wrote {args.out}; load at the end {result['load_end']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
