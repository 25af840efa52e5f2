"""Targets of the adaptive reference (formulations/adaptive/): bracket width and time.

Run::

    python perf/adaptive_targets.py                        # every part
    python perf/adaptive_targets.py --only default         # `deplbench adaptive INST`, no options
    python perf/adaptive_targets.py --only targets         # the width targets
    python perf/adaptive_targets.py --only grid            # one grid at several loss steps
    python perf/adaptive_targets.py --only default --cases pact-vgg11:0.3,alexnet:9

Targets (bracket width (UB − LB)/LB with UB the upper confidence bound,
joint level 95 %, and wall time, each instance alone, refinement from 600
buckets as ``deplbench adaptive`` does):

* PACT-VGG11 (``deplbench generate realistic --family pact-vgg11``),
  ℓmax 0.15 / 0.3 / 0.45: width ≤ 1 % within 120 s each;
* AlexNet and MobileNet (``--family alexnet`` / ``mobilenet``), ℓmax
  5 / 9 / 13: width ≤ 2 % within 5 minutes each;
* ``deplbench adaptive INST`` with no options (width 3 %, 300 s): ≤ 3 % on
  all of the above.

The grid table runs PACT-VGG11 ℓmax 0.3 on one grid at several loss steps h:
the width that does not shrink with h is what the policy's time rescaling
and the lower bound's remaining relaxations (capacity, the communication
tangent, the slopes of the water-filling bound) cost, plus the confidence
bounds.

Every row records the status, what stopped the refinement, the grids, the
wall and CPU seconds and the 1-minute load average before and after
(``os.getloadavg``): on a shared machine wall time is inflated by the load;
CPU seconds are not. ``--threads`` (default 0: one per core, as ``deplbench
adaptive``) sets the water-filling pass's threads: the numbers are the same
for any value, the wall time is not (CPU seconds count every thread's). Writes ``results/bench/adaptive_targets.json``
(``--out``) after every row and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from deplbench.formulations.adaptive import START_BUCKETS, adaptive_bounds
from deplbench.formulations.adaptive.settings import CLI_THREADS, threads_for
from deplbench.instances.generators import generate

ROOT = Path(__file__).resolve().parent.parent
CASES = [("pact-vgg11", 0.15), ("pact-vgg11", 0.3), ("pact-vgg11", 0.45), ("alexnet", 5.0), ("alexnet", 9.0),
         ("alexnet", 13.0), ("mobilenet", 5.0), ("mobilenet", 9.0), ("mobilenet", 13.0)]
#: family → (target width, seconds) of the targets part.
TARGETS = {"pact-vgg11": (0.01, 120.0), "alexnet": (0.02, 300.0), "mobilenet": (0.02, 300.0)}
#: ``deplbench adaptive INST`` with no options (cli/adaptive.py).
DEFAULT = (0.03, 300.0)
GRID = (150, 300, 600, 1200, 2400, 4800, 9600)


def measure(family: str, loss_max: float, runs: int, tune_runs: int, width: float | None = None,
            time_limit: float | None = None, buckets: int = START_BUCKETS, threads: int = CLI_THREADS) -> dict:
    inst = generate("realistic", family=family, loss_max=loss_max)
    load0 = os.getloadavg()[0]
    w0, c0 = time.perf_counter(), time.process_time()
    b = adaptive_bounds(inst, buckets=buckets, runs=runs, tune_runs=tune_runs, width=width, time_limit=time_limit,
                        threads=threads)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    ref = b.refinement
    return {"family": family, "loss_max": loss_max, "status": b.status, "buckets": b.grid["buckets"],
            "grids": [lv["buckets"] for lv in ref.get("levels", [])], "stopped_by": ref.get("stopped_by"),
            "bound_only": [(r["buckets"], r["finished"]) for r in ref.get("bound_only", [])],
            "loss_step": b.grid["loss_step"], "buckets_policy": b.multipliers.get("buckets_policy"),
            "lower_bound": b.lower_bound, "upper_bound": b.upper_bound,
            "cost_mean": b.cost_mean, "width": b.width, "p_success_lo": b.p_success_lo, "certified": b.certified,
            "dp_passes": b.work["dp_passes"], "threads": threads_for(threads), "wall_s": wall, "cpu_s": cpu,
            "load_before": load0, "load_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("default", "targets", "grid"), help="run one part only")
    ap.add_argument("--cases", help="comma-separated family:ℓmax pairs (default: all nine)")
    ap.add_argument("--runs", type=int, default=100_000, help="certification runs (default 100000)")
    ap.add_argument("--tune-runs", type=int, default=50_000, help="runs per tuning simulation (default 50000)")
    ap.add_argument("--threads", type=int, default=CLI_THREADS,
                    help="threads of the water-filling pass (default 0: one per core, as `deplbench adaptive`)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "adaptive_targets.json"))
    args = ap.parse_args()
    cases = CASES if not args.cases else [(f, float(lm)) for f, lm in (c.split(":") for c in args.cases.split(","))]
    out: dict = {"default": [], "targets": [], "grid": []}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)

    def save():       # after every row: a long run interrupted keeps what it measured
        path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")

    parts = [("default", lambda f: DEFAULT), ("targets", lambda f: TARGETS[f])]
    for part, goal in parts:
        if args.only not in (None, part):
            continue
        for family, lm in cases:
            width, seconds = goal(family)
            r = measure(family, lm, args.runs, args.tune_runs, width, seconds, threads=args.threads)
            r.update(part=part, target_width=width, target_wall_s=seconds,
                     met=bool(r["width"] <= width and r["wall_s"] <= seconds))
            out[part].append(r)
            save()
            _print(r)
    if args.only in (None, "grid"):
        for buckets in GRID:
            r = measure("pact-vgg11", 0.3, args.runs, args.tune_runs, buckets=buckets, threads=args.threads)
            r["part"] = "grid"
            out["grid"].append(r)
            save()
            _print(r)


def _print(r: dict) -> None:
    met = "" if "met" not in r else ("  target met" if r["met"] else "  target NOT met")
    print(f"{r['part']:<8} {r['family']:<11} ℓmax {r['loss_max']:<5g} {r['status']:<12} buckets {r['buckets']:>5} "
          f"(stopped by {r['stopped_by']})  LB {r['lower_bound']:9.2f}  UB {r['upper_bound']:9.2f}  width "
          f"{100 * r['width']:6.2f} %  P(success) ≥ {r['p_success_lo']:.4f}  {r['wall_s']:7.1f} s wall, "
          f"{r['cpu_s']:7.1f} s CPU, {r['threads']} threads, load {r['load_before']:.1f}→{r['load_after']:.1f}{met}",
          flush=True)


if __name__ == "__main__":
    main()
