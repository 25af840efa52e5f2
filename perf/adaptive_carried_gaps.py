"""The carried-deadline, water-filling and priced lower bounds against independent exact optima.

Run (from the repository root)::

    PYTHONPATH=src python perf/adaptive_carried_gaps.py

On the tiny lattice instances of :mod:`tests.formulations.adaptive.exact_lattice`
(every law and scale there, ω the highest reachable P(success) and 1/8 below
it): how far below the exact optimum the carried bound on ``--time-points``
time points, the water-filling bound on ``--slopes`` slopes (its failure
price searched as the bracket searches it) and the priced bound (E[T] ≤
Tmax) are, with ``--buckets`` loss buckets, as a range (and median) over the
instances. Figures quoted in docs/adaptive.md.
The script puts the repository root on ``sys.path`` for that test helper.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deplbench.formulations import adaptive as A  # noqa: E402 - after the path set-up
from deplbench.formulations.adaptive.waterfill import grid_passes  # noqa: E402 - after the path set-up
from tests.formulations.adaptive.exact_lattice import boundary_cases  # noqa: E402 - after the path set-up


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--time-points", type=int, default=256, help="time points of the carried bound (default 256)")
    ap.add_argument("--slopes", type=int, default=64, help="slopes of the water-filling bound (default 64)")
    ap.add_argument("--buckets", type=int, default=6, help="loss buckets of the bounds (default 6)")
    args = ap.parse_args(argv)
    gaps: dict[str, list[float]] = {"carried": [], "water-filling": [], "priced": []}
    for iw, _, o in boundary_cases():
        ch = A.Chain(iw, args.buckets, optimistic=True)
        gaps["carried"].append((o - A.timed_search(ch, iw.omega, args.time_points).bound()) / o)
        priced = A.lower_bound_search(ch, iw.omega, 6, 6)
        wps, _ = grid_passes(ch, iw.omega, priced.best, args.slopes, None)
        gaps["water-filling"].append((o - max(p.bound(iw.omega, ch.st.time_max) for p in wps)) / o)
        gaps["priced"].append((o - priced.bound()) / o)
    what = {"carried": f"G = {args.time_points}", "water-filling": f"J = {args.slopes}", "priced": "E[T] ≤ Tmax"}
    print(f"{len(gaps['priced'])} instances; below the exact optimum: " + ", ".join(
        f"{k} ({what[k]}) {100 * min(v):.2f}-{100 * max(v):.2f} % (median {100 * statistics.median(v):.2f} %)"
        for k, v in gaps.items()))


if __name__ == "__main__":
    main()
