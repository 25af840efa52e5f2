"""Issue 16's limit target: every algorithm on the horizon-100000 instance.

Run::

    python benchmarks/limits_targets.py                  # every registered algorithm
    python benchmarks/limits_targets.py --algos milp depl

The instance is what the issue tried: the realistic AlexNet instance
(``deplbench generate realistic --family alexnet --seed 0``) with its
``horizon`` set to 100000, the largest the format allows. Each algorithm
runs as a user would run it — ``deplbench solve INSTANCE --algo NAME --json``
in a fresh process, with ``--time-limit 10`` where the algorithm declares a
``time_limit`` parameter (the MILP, the certified bracket), default
parameters otherwise — and the script records its exit status, the status
and message of the result, the wall time of the process and its peak
resident memory (``os.wait4``'s ``ru_maxrss``: the process and every child
it waited for, i.e. ``getrusage(RUSAGE_CHILDREN)`` of this one solve).

Target (issue 16, done-when): the MILP with ``--time-limit 10`` returns
within ~15 s with a clear status, under 2 GB. The other algorithms are
reported beside it (those without a time limit are held to the same
memory bound and to ``--hard-timeout``).

To protect a shared machine, a solve is killed when its resident memory
passes ``--rss-cap-gb`` (default 4) or its wall time ``--hard-timeout``
(default 120 s); the row then says so.

Writes ``results/bench/limits_targets.json`` (``--out``) and prints a table.
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


def solve_row(instance: Path, algo: str, has_limit: bool, args) -> dict:
    cmd = [sys.executable, "-m", "deplbench", "solve", str(instance), "--algo", algo, "--json"]
    if has_limit:
        cmd += ["--time-limit", f"{TIME_LIMIT_S:g}"]
    m = measure(cmd, args.hard_timeout, args.rss_cap_gb * 2**30)
    row = {"algorithm": algo, "time_limit_s": TIME_LIMIT_S if has_limit else None,
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

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algos", nargs="*", default=None,
                    help="algorithms (default: every registered one that loads)")
    ap.add_argument("--hard-timeout", type=float, default=120.0,
                    help="kill a solve after this many seconds (default 120)")
    ap.add_argument("--rss-cap-gb", type=float, default=4.0,
                    help="kill a solve whose resident memory passes this (GiB, default 4)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "limits_targets.json")
    args = ap.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
