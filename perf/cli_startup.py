"""Start-up time of the ``deplbench`` command, hyperfine-style.

Run::

    python perf/cli_startup.py            # 10 runs per command
    python perf/cli_startup.py --runs 20

Each command runs ``--runs`` times in a fresh process (output discarded)
after one warm-up run; the median, minimum and maximum wall times are
printed with the machine's load average before and after, since the
numbers depend on it. Targets: ``--help``, ``--version``, ``algorithms``
≤ 0.5 s, ``validate`` ≤ 1.5 s. What keeps them there is checked without timing by
``tests/cli/test_cli_startup.py`` (the modules each command imports).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _exe() -> list[str]:
    found = shutil.which("deplbench", path=str(Path(sys.executable).parent)) or shutil.which("deplbench")
    return [found] if found else [sys.executable, "-m", "deplbench"]


def _time(cmd: list[str], runs: int) -> list[float]:
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)   # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    opts = ap.parse_args()
    exe = _exe()
    with tempfile.TemporaryDirectory() as tmp:
        inst = Path(tmp) / "knapsack.json"
        subprocess.run([*exe, "generate", "knapsack", "-o", str(inst)], check=True,
                       stderr=subprocess.DEVNULL)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for args in (["--help"], ["--version"], ["validate", str(inst)], ["algorithms"]):
            t = _time([*exe, *args], opts.runs)
            name = " ".join(args).replace(str(inst), "knapsack.json")
            print(f"deplbench {name:<24} median {statistics.median(t):.3f} s  "
                  f"min {min(t):.3f} s  max {max(t):.3f} s  ({opts.runs} runs)")
        print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
