"""The carried-deadline and priced lower bounds against independent exact optima.

Run (from the repository root)::

    PYTHONPATH=src python perf/adaptive_carried_gaps.py

On the tiny lattice instances of :mod:`tests.formulations.adaptive.exact_lattice`
(every law and scale there, ω the highest reachable P(success) and 1/8 below
it): how far below the exact optimum the carried bound on ``--time-points``
time points and the priced bound (E[T] ≤ Tmax) are, with ``--buckets`` loss
buckets, as a range over the instances. Figures quoted in docs/adaptive.md.
The script puts the repository root on ``sys.path`` for that test helper.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deplbench.formulations import adaptive as A  # noqa: E402 - after the path set-up
from tests.formulations.adaptive.exact_lattice import boundary_cases  # noqa: E402 - after the path set-up


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--time-points", type=int, default=256, help="time points of the carried bound (default 256)")
    ap.add_argument("--buckets", type=int, default=6, help="loss buckets of both bounds (default 6)")
    args = ap.parse_args(argv)
    car, pri = [], []
    for iw, _, o in boundary_cases():
        ch = A.Chain(iw, args.buckets, optimistic=True)
        car.append((o - A.timed_search(ch, iw.omega, args.time_points).bound()) / o)
        pri.append((o - A.lower_bound_search(ch, iw.omega, 6, 6).bound()) / o)
    print(f"{len(car)} instances; below the exact optimum: carried (G = {args.time_points}) "
          f"{100 * min(car):.2f}-{100 * max(car):.2f} %, priced {100 * min(pri):.2f}-{100 * max(pri):.2f} %")


if __name__ == "__main__":
    main()
