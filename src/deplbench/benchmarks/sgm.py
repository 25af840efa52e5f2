"""The shifted geometric mean of solve times: the one implementation.

``deplbench library check`` (:mod:`deplbench.benchmarks.library.check`) and
the report (:func:`deplbench.reports.stats.shifted_geometric_mean`, the
solver-vs-solver table of :mod:`deplbench.reports.solvers`) both use it;
it sits in ``benchmarks`` so that both layers may import it (reports import
benchmarks, never the other way).

References
----------
T. Achterberg, "Constraint Integer Programming", PhD thesis, TU Berlin
(2007), App. A (shifted geometric means of solve times); H. Mittelmann,
"Benchmarks for optimization software" (shift 10 s, unsolved instances
counted at the time limit).
"""

from __future__ import annotations

import math

import numpy as np

#: Mittelmann's shift (seconds) for MILP solve times.
SHIFT_S = 10.0


def shifted_geomean(values, shift: float = SHIFT_S, error: type[Exception] = ValueError) -> float:
    """exp(mean(log(t + s))) − s over the finite values.

    Parameters
    ----------
    values : array_like
        Non-negative numbers (solve times in seconds); NaN and infinite
        entries are ignored.
    shift : float, default 10
        s > 0; it damps the weight of tiny times, whose ratios are noise.
    error : exception class, default ValueError
        Raised (naming the argument) for a non-positive shift or a negative value.

    Returns
    -------
    float
        NaN when no finite value is given.
    """
    if isinstance(shift, bool) or not isinstance(shift, (int, float)) or not math.isfinite(shift) or shift <= 0:
        raise error(f"shift: must be a positive number, got {shift!r}")
    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan
    if (v < 0).any():
        raise error("values: shifted geometric mean needs non-negative values")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


__all__ = ["SHIFT_S", "shifted_geomean"]
