"""Targets of the adaptive reference (formulations/adaptive.py): bracket width and time.

Run::

    python benchmarks/adaptive_targets.py                      # targets + grid table
    python benchmarks/adaptive_targets.py --only grid          # the grid-step table only
    python benchmarks/adaptive_targets.py --buckets 600        # the targets at another grid (default: per family)

Targets (bracket width (UB − LB)/LB and wall time, each instance alone):

* PACT-VGG11 (``deplbench generate realistic --family pact-vgg11``),
  ℓmax 0.15 / 0.3 / 0.45: width ≤ 3 %, ≤ 2 minutes each;
* AlexNet and MobileNet (``--family alexnet`` / ``mobilenet``), ℓmax 9,
  K̄ = 100: width ≤ 5 %, ≤ 10 minutes each.

The grid table runs PACT-VGG11 ℓmax 0.3 at several loss steps h: the width
that does not shrink with h is what pricing the deadline (instead of
carrying the remaining time in the state) and the policy's time rescaling
cost, plus the Monte-Carlo interval.

Every row records the wall and CPU seconds and the 1-minute load average
before and after (``os.getloadavg``): on a shared machine wall time is
inflated by the load; CPU seconds are not. Writes
``results/bench/adaptive_targets.json`` (``--out``) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from deplbench.formulations.adaptive import adaptive_bounds
from deplbench.instances.generators import generate

ROOT = Path(__file__).resolve().parent.parent
#: (family, ℓmax, target width, target wall seconds, loss buckets of the target run)
TARGETS = [("pact-vgg11", 0.15, 0.03, 120.0, 9600), ("pact-vgg11", 0.3, 0.03, 120.0, 9600),
           ("pact-vgg11", 0.45, 0.03, 120.0, 9600), ("alexnet", 9.0, 0.05, 600.0, 4800),
           ("mobilenet", 9.0, 0.05, 600.0, 4800)]
GRID = (150, 300, 600, 1200, 2400, 4800, 9600)


def measure(family: str, loss_max: float, buckets: int, runs: int, tune_runs: int) -> dict:
    inst = generate("realistic", family=family, loss_max=loss_max)
    load0 = os.getloadavg()[0]
    w0, c0 = time.perf_counter(), time.process_time()
    b = adaptive_bounds(inst, buckets=buckets, runs=runs, tune_runs=tune_runs)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"family": family, "loss_max": loss_max, "buckets": buckets, "loss_step": b.grid["loss_step"],
            "lower_bound": b.lower_bound, "upper_bound": b.upper_bound, "width": b.width,
            "p_success_lo": b.p_success_lo, "certified": b.certified, "dp_passes": b.work["dp_passes"],
            "wall_s": wall, "cpu_s": cpu, "load_before": load0, "load_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("targets", "grid"), help="run one part only")
    ap.add_argument("--families", default="pact-vgg11,alexnet,mobilenet",
                    help="targets: comma-separated families to run (default all)")
    ap.add_argument("--buckets", type=int, default=None,
                    help="grid of the target runs (default per family: 9600 for PACT-VGG11, 4800 for AlexNet and "
                         "MobileNet, the grids that meet the widths)")
    ap.add_argument("--runs", type=int, default=100_000, help="certification runs (default 100000)")
    ap.add_argument("--tune-runs", type=int, default=50_000, help="runs per tuning simulation (default 50000)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "adaptive_targets.json"))
    args = ap.parse_args()
    out = {"targets": [], "grid": []}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)

    def save():       # after every row: a long run interrupted keeps what it measured
        path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")

    if args.only in (None, "targets"):
        for family, lm, width, wall, buckets in [t for t in TARGETS if t[0] in args.families.split(",")]:
            r = measure(family, lm, args.buckets or buckets, args.runs, args.tune_runs)
            r.update(target_width=width, target_wall_s=wall,
                     met=bool(r["width"] <= width and r["wall_s"] <= wall))
            out["targets"].append(r)
            save()
            _print(r)
    if args.only in (None, "grid"):
        for buckets in GRID:
            r = measure("pact-vgg11", 0.3, buckets, args.runs, args.tune_runs)
            out["grid"].append(r)
            save()
            _print(r)


def _print(r: dict) -> None:
    met = "" if "met" not in r else ("  target met" if r["met"] else "  target NOT met")
    print(f"{r['family']:<11} ℓmax {r['loss_max']:<5g} buckets {r['buckets']:>5} (h {r['loss_step']:.2e})  "
          f"LB {r['lower_bound']:9.2f}  UB {r['upper_bound']:9.2f}  width {100 * r['width']:6.2f} %  "
          f"P(success) ≥ {r['p_success_lo']:.4f}  {r['wall_s']:7.1f} s wall, {r['cpu_s']:7.1f} s CPU, "
          f"load {r['load_before']:.1f}→{r['load_after']:.1f}{met}", flush=True)


if __name__ == "__main__":
    main()
