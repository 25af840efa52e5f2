"""The limit target: every algorithm on the horizon-100000 instance.

Run::

    python perf/limits_targets.py                  # every registered algorithm
    python perf/limits_targets.py --algos milp depl

The instance is the realistic AlexNet instance
(``deplbench generate realistic --family alexnet --seed 0``) with its
``horizon`` set to 100000, the largest the format allows. Each algorithm
runs as a user would run it — ``deplbench solve INSTANCE --algo NAME --json``
in a fresh process, with ``--time-limit 10`` where the algorithm declares a
``time_limit`` parameter (the MILP, the certified bracket), default
parameters otherwise — and the script records its exit status, the status
and message of the result, the wall time of the process and its peak
resident memory (``os.wait4``'s ``ru_maxrss``: the process and every child
it waited for, i.e. ``getrusage(RUSAGE_CHILDREN)`` of this one solve).

Target: the MILP with ``--time-limit 10`` returns
within ~15 s with a clear status, under 2 GB. The other algorithms are
reported beside it (those without a time limit are held to the same
memory bound and to ``--hard-timeout``).

To protect a shared machine, a solve is killed when its resident memory
passes ``--rss-cap-gb`` (default 4) or its wall time ``--hard-timeout``
(default 120 s); the row then says so.

Writes ``results/bench/limits_targets.json`` (``--out``) and prints a table.

``--cases`` adds the other hostile sizes (every algorithm, ``--time-limit 10``
wherever declared, ``total_time_limit=10`` for the certified bracket):

* ``h100000``: the instance above (the default case);
* ``clusters20000``: AlexNet with 20,000 clusters (capacities and unit costs
  spread deterministically; the (1+ε) allocation DP's largest layers);
* ``s100000``: AlexNet with ``scenarios=100000`` for every algorithm that
  takes ``scenarios``;
* ``knapsack200``: ``deplbench generate knapsack --n-items 200 --param
  horizon=10000`` (the expanded graph's horizon × |M|² tables).

The targets: every row under 2 GB peak resident memory (no ``memory_limit``
raised) and, with a limit, a wall time within 10 % + 1 s of it *plus the
process start-up and instance load*, which the row reports separately
(``load_s``: the same command with ``--time-limit`` but an expired deadline
is not possible for every algorithm, so ``load_s`` is ``deplbench validate``
on the same file).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HORIZON = 100_000
TIME_LIMIT_S = 10.0
TARGET_WALL_S = 15.0
TARGET_RSS_GB = 2.0


def make_instance(path: Path) -> Path:
    """AlexNet (seed 0) with horizon 100000, written as the CLI writes it."""
    subprocess.run([sys.executable, "-m", "deplbench", "generate", "realistic", "--family",
                    "alexnet", "--seed", "0", "-o", str(path)], check=True, cwd=ROOT)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["horizon"] = HORIZON
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


N_CLUSTERS = 20_000
SCENARIOS = 100_000


def make_clusters_instance(path: Path) -> Path:
    """AlexNet (seed 0) with 20,000 clusters: capacity 0.5–2× and unit cost 0.5–2× of the first."""
    subprocess.run([sys.executable, "-m", "deplbench", "generate", "realistic", "--family",
                    "alexnet", "--seed", "0", "-o", str(path)], check=True, cwd=ROOT)
    data = json.loads(path.read_text(encoding="utf-8"))
    first = data["clusters"][0]
    data["clusters"] = [{**first, "name": f"c{i}",
                         "capacity": first["capacity"] * (0.5 + 1.5 * ((i * 7919) % 997) / 996),
                         "unit_cost": first["unit_cost"] * (0.5 + 1.5 * ((i * 104729) % 991) / 990)}
                        for i in range(N_CLUSTERS)]
    data["transfer_costs"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def make_knapsack_instance(path: Path) -> Path:
    """``deplbench generate knapsack --n-items 200 --param horizon=10000``."""
    subprocess.run([sys.executable, "-m", "deplbench", "generate", "knapsack", "--n-items", "200",
                    "--param", "horizon=10000", "-o", str(path)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return path


def load_seconds(instance: Path) -> float:
    """Wall seconds of ``deplbench validate`` on the file: start-up plus instance load."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "deplbench", "validate", str(instance)], check=False, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return round(time.perf_counter() - t0, 2)


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def measure(cmd: list[str], hard_timeout_s: float, rss_cap: float) -> dict:
    """Run ``cmd``; wall time, exit status, peak RSS, stdout; killed past the caps."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        return _measure(cmd, hard_timeout_s, rss_cap, out, err)


def _measure(cmd, hard_timeout_s, rss_cap, out, err) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, start_new_session=True)
    killed: list[str] = []
    done = threading.Event()

    def watchdog() -> None:
        while not done.wait(0.1):
            if time.perf_counter() - t0 > hard_timeout_s:
                killed.append(f"killed after {hard_timeout_s:g} s (hard timeout)")
            elif _rss_bytes(proc.pid) > rss_cap:
                killed.append(f"killed at RSS > {rss_cap / 2**30:g} GiB")
            if killed:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return

    th = threading.Thread(target=watchdog, daemon=True)
    th.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    stdout = out.read().decode("utf-8", "replace")
    stderr = err.read().decode("utf-8", "replace")
    return {"exit": proc.returncode, "wall_s": round(wall, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "killed": killed[0] if killed else "",
            "stdout": stdout, "stderr": stderr.strip()[-400:]}


def solve_row(instance: Path, algo: str, has_limit: bool, args, extra: tuple = ()) -> dict:
    cmd = [sys.executable, "-m", "deplbench", "solve", str(instance), "--algo", algo, "--json", *extra]
    if has_limit:
        cmd += ["--time-limit", f"{TIME_LIMIT_S:g}"]
    m = measure(cmd, args.hard_timeout, args.rss_cap_gb * 2**30)
    row = {"algorithm": algo, "time_limit_s": TIME_LIMIT_S if has_limit else None, "extra": list(extra),
           "exit": m["exit"], "wall_s": m["wall_s"], "peak_rss_mb": m["peak_rss_mb"],
           "killed": m["killed"]}
    try:
        rec = json.loads(m["stdout"])
        row["status"] = rec.get("status")
        row["message"] = (rec.get("message") or "").strip()
    except (json.JSONDecodeError, AttributeError):
        row["status"] = None
        row["message"] = m["stderr"].splitlines()[-1] if m["stderr"] else m["killed"]
    row["within_wall"] = (m["wall_s"] <= TARGET_WALL_S) if has_limit else None
    row["within_memory"] = m["peak_rss_mb"] < TARGET_RSS_GB * 1024 and not m["killed"]
    return row


def main(argv: list[str] | None = None) -> int:
    from deplbench.solvers import registry

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--algos", nargs="*", default=None,
                    help="algorithms (default: every registered one that loads)")
    ap.add_argument("--hard-timeout", type=float, default=120.0,
                    help="kill a solve after this many seconds (default 120)")
    ap.add_argument("--rss-cap-gb", type=float, default=4.0,
                    help="kill a solve whose resident memory passes this (GiB, default 4)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "limits_targets.json")
    ap.add_argument("--cases", nargs="*", default=["h100000"],
                    choices=("h100000", "clusters20000", "s100000", "knapsack200"),
                    help="hostile sizes to run (default: h100000 only)")
    args = ap.parse_args(argv)
    if args.cases != ["h100000"]:
        return run_cases(args, registry)
    algos = args.algos or registry.available()
    tmp = Path(tempfile.mkdtemp(prefix="limits-targets-"))
    inst = make_instance(tmp / "alexnet-h100000.json")
    print(f"# horizon {HORIZON} AlexNet instance; `deplbench solve --json` per algorithm, "
          f"--time-limit {TIME_LIMIT_S:g} where accepted; load {os.getloadavg()}", flush=True)
    print(f"{'algorithm':16s} {'limit':>6s} {'exit':>4s} {'wall s':>7s} {'peak MB':>8s}  "
          f"status: message", flush=True)
    rows = []
    for algo in algos:
        params = registry.solver_info(algo)["parameters"]
        row = solve_row(inst, algo, "time_limit" in params, args)
        row["load_after"] = [round(x, 2) for x in os.getloadavg()]
        rows.append(row)
        lim = f"{TIME_LIMIT_S:g}" if row["time_limit_s"] else "-"
        print(f"{algo:16s} {lim:>6s} {row['exit']:>4d} {row['wall_s']:7.1f} "
              f"{row['peak_rss_mb']:8.0f}  {row['status']}: {row['message'][:110]}"
              + (f" [{row['killed']}]" if row["killed"] else ""), flush=True)
    milp = next((r for r in rows if r["algorithm"] == "milp"), None)
    if milp is not None:
        ok = milp["within_wall"] and milp["within_memory"] and milp["status"] is not None
        print(f"target (milp, --time-limit 10: <= ~{TARGET_WALL_S:g} s, < {TARGET_RSS_GB:g} GB, "
              f"a clear status): {'met' if ok else 'MISSED'}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"horizon": HORIZON, "time_limit_s": TIME_LIMIT_S,
                                    "load_end": os.getloadavg(), "rows": rows}, indent=1),
                        encoding="utf-8")
    print(f"# wrote {args.out}; load {os.getloadavg()}")
    return 0


def _case_rows(case: str, inst: Path, algos, args, registry) -> list[dict]:
    rows = []
    load = load_seconds(inst)
    for algo in algos:
        params = registry.solver_info(algo)["parameters"]
        extra: tuple = ()
        if case == "s100000":
            if "scenarios" not in params:
                continue
            extra = ("--param", f"scenarios={SCENARIOS}")
        if "total_time_limit" in params:
            extra += ("--param", f"total_time_limit={TIME_LIMIT_S:g}")
        row = solve_row(inst, algo, "time_limit" in params, args, extra)
        row.update(case=case, load_s=load, load_after=[round(x, 2) for x in os.getloadavg()])
        # within 10 % + 1 s of the limit, after start-up and instance load
        row["within_limit"] = (row["wall_s"] - load <= 1.1 * TIME_LIMIT_S + 1.0) if row["time_limit_s"] else None
        rows.append(row)
        lim = f"{TIME_LIMIT_S:g}" if row["time_limit_s"] else "-"
        print(f"{case:13s} {algo:16s} {lim:>5s} {row['exit']:>4d} {row['wall_s']:7.1f} {load:6.1f} "
              f"{row['peak_rss_mb']:8.0f}  {row['status']}: {row['message'][:90]}"
              + (f" [{row['killed']}]" if row["killed"] else ""), flush=True)
    return rows


def run_cases(args, registry) -> int:
    """The hostile sizes of ``--cases`` (module docstring), one table."""
    algos = args.algos or registry.available()
    tmp = Path(tempfile.mkdtemp(prefix="limits-targets-"))
    makers = {"h100000": lambda: make_instance(tmp / "alexnet-h100000.json"),
              "clusters20000": lambda: make_clusters_instance(tmp / "alexnet-c20000.json"),
              "s100000": lambda: subprocess.run([sys.executable, "-m", "deplbench", "generate", "realistic",
                                                 "--family", "alexnet", "--seed", "0", "-o",
                                                 str(tmp / "alexnet.json")], check=True, cwd=ROOT)
              and tmp / "alexnet.json",
              "knapsack200": lambda: make_knapsack_instance(tmp / "knapsack-200-h10000.json")}
    print(f"# cases {args.cases}; `deplbench solve --json`, --time-limit {TIME_LIMIT_S:g} where declared; "
          f"load {os.getloadavg()}", flush=True)
    print(f"{'case':13s} {'algorithm':16s} {'limit':>5s} {'exit':>4s} {'wall s':>7s} {'load s':>6s} "
          f"{'peak MB':>8s}  status: message", flush=True)
    rows = []
    for case in args.cases:
        rows += _case_rows(case, makers[case](), algos, args, registry)
    bad = [r for r in rows if not r["within_memory"] or r["within_limit"] is False]
    print(f"targets (< {TARGET_RSS_GB:g} GB; wall − load ≤ 1.1·limit + 1 s): "
          + ("met" if not bad else "MISSED by " + ", ".join(f"{r['case']}/{r['algorithm']}" for r in bad)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"time_limit_s": TIME_LIMIT_S, "load_end": os.getloadavg(), "rows": rows},
                                   indent=1), encoding="utf-8")
    print(f"# wrote {args.out}; load {os.getloadavg()}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
