"""The carried-deadline and priced lower bounds against independent exact optima.

Run (from the repository root)::

    PYTHONPATH=src:. python perf/adaptive_carried_gaps.py

On the tiny lattice instances of ``tests/formulations/adaptive/test_adaptive_deadline.py``
(every law and scale of ``test_adaptive_exact``, ω the highest reachable P(success) and
1/8 below it; 6 loss buckets): how far below the exact optimum the carried bound on 256
time points and the priced bound (E[T] ≤ Tmax) are, as a range over the instances.
Figures quoted in docs/adaptive.md.
"""

from __future__ import annotations

from fractions import Fraction

from deplbench.formulations import adaptive as A
from tests.formulations.adaptive.test_adaptive_exact import LAWS, SCALES, _boundary, exact_optimum


def main() -> None:
    car, pri = [], []
    for law in LAWS:
        for kappa, tm in SCALES:
            inst, pmax = _boundary(*law, kappa, tm)
            for w in (pmax, pmax - Fraction(1, 8)):
                iw = inst.with_changes(omega=float(w))
                opt = exact_optimum(iw, w)
                if opt is None:
                    continue
                o = float(opt)
                ch = A.Chain(iw, 6, optimistic=True)
                car.append((o - A.timed_search(ch, iw.omega, 256).bound()) / o)
                pri.append((o - A.lower_bound_search(ch, iw.omega, 6, 6).bound()) / o)
    print(f"{len(car)} instances; below the exact optimum: carried (G = 256) {100 * min(car):.2f}-"
          f"{100 * max(car):.2f} %, priced {100 * min(pri):.2f}-{100 * max(pri):.2f} %")


if __name__ == "__main__":
    main()
