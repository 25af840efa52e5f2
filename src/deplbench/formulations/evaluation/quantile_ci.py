"""The distribution-free interval on the ω-quantile of Monte Carlo draws.

[X₍l₎, X₍u₎] from the order statistics of n sorted draws, α/2 in each tail
(:func:`~deplbench.formulations.evaluation.binomial.quantile_ci_ranks`). When
the draws are too few for an end at the level (n = 100 at ω = 0.99: the upper
rank would be 101) that end is infinite and the interval states the coverage
of the tail it keeps, never the clamped sample extreme at a level it does not
have (the "0.95" interval [X₍97₎, X₍100₎] covers with probability 0.62).

References
----------
G. J. Hahn and W. Q. Meeker, *Statistical Intervals*, Wiley 1991, Sec. 5.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deplbench.formulations.evaluation.binomial import quantile_ci_ranks

#: ``ci_method`` of a sampled evaluation: the interval [X_(l), X_(u)] of
#: :func:`order_statistic_ci`, α/2 in each tail.
CI_METHOD = "order-statistic (distribution-free, binomial), two-sided"
#: ``ci_method`` when the upper rank would exceed the draws: [X_(l), +inf).
CI_METHOD_LOWER = ("order-statistic (distribution-free, binomial), one-sided lower bound: too few draws "
                   "for an upper end at this level (it would be past the sample maximum)")
#: ``ci_method`` when the lower rank would be below 1: (-inf, X_(u)].
CI_METHOD_UPPER = ("order-statistic (distribution-free, binomial), one-sided upper bound: too few draws "
                   "for a lower end at this level (it would be below the sample minimum)")
#: ``ci_method`` when neither end exists: the whole line, of coverage 1.
CI_METHOD_NONE = ("order-statistic (distribution-free, binomial): too few draws for either end at this "
                  "level, no interval (the whole line)")
@dataclass(frozen=True)
class QuantileInterval:
    """An interval on the ω-quantile, the level it is guaranteed, and how it was built.

    Attributes
    ----------
    low, high : float
        Its ends, −∞ / +∞ where the draws are too few for that end.
    level : float
        A coverage it is guaranteed for every law (``confidence`` when two-sided,
        else the exact binomial coverage of what is left, ≥ ``confidence``).
    method : str
        :data:`CI_METHOD`, :data:`CI_METHOD_LOWER`, :data:`CI_METHOD_UPPER` or :data:`CI_METHOD_NONE`.
    """

    low: float
    high: float
    level: float
    method: str


def order_statistic_ci(sorted_values: np.ndarray, omega: float, confidence: float) -> QuantileInterval:
    """Distribution-free interval [X_(l), X_(u)] for the ω-quantile of sorted draws.

    The ranks are those of :func:`~deplbench.formulations.evaluation.binomial.quantile_ci_ranks`
    (α/2 in each tail). A rank past the draws is not clamped to the sample
    extreme, which would keep the stated level without its coverage (at
    n = 100, ω = 0.99 the "95 %" interval [X_(97), X_(100)] covers with
    probability 0.62): that end becomes infinite and the level is the one-sided
    coverage that remains.

    Parameters
    ----------
    sorted_values : ndarray
        The n ≥ 1 draws in increasing order.
    omega : float
        The quantile's level.
    confidence : float
        The two-sided interval's level 1 − α.

    Returns
    -------
    QuantileInterval

    References
    ----------
    Hahn & Meeker, *Statistical Intervals*, Sec. 5.2.
    """
    n = int(sorted_values.size)
    r = quantile_ci_ranks(n, omega, confidence)
    low = float(sorted_values[r.low - 1]) if r.low >= 1 else -np.inf
    high = float(sorted_values[r.high - 1]) if r.high <= n else np.inf
    if r.two_sided:
        return QuantileInterval(low, high, float(confidence), CI_METHOD)
    method = CI_METHOD_NONE if r.low < 1 and r.high > n else CI_METHOD_LOWER if r.low >= 1 else CI_METHOD_UPPER
    return QuantileInterval(low, high, r.coverage, method)


def check_accepts(ev) -> bool:
    """A heuristic's out-of-sample check of its own candidate plan (DepL Fig. 3's last box,
    best-exp's and the baselines' checks): the plan meets (4)–(6) and its evaluation
    ``ev`` (an :class:`~deplbench.formulations.evaluation.evaluate.Evaluation`) is
    ``feasible`` — the whole interval at or below ℓmax — or, where the draws are too
    few for an upper end at the level (ω close to 1: the interval is one-sided), none
    of the draws misses ℓmax.

    That second rule is the sample maximum at or below ℓmax, what these checks
    applied before the interval stopped clamping its upper rank to the draws: an
    acceptance rule of the algorithm, not a statement at any level. What the draws
    support is stated by the plan's own evaluation, made afterwards on fresh draws.
    """
    if not ev.constraints_ok:
        return False
    if ev.verdict == "feasible":
        return True
    return ev.verdict == "undecided" and not np.isfinite(ev.quantile_ci[1]) and ev.violation_count == 0


def check_excess(ev) -> tuple[float, float]:
    """(how far the check's upper end is above ℓmax, the interval's width), finite: an
    infinite upper end (too few draws) is replaced by the quantile estimate, so a
    heuristic that tightens its target by them (DepL's retry) moves it by a number."""
    lo, hi = ev.quantile_ci
    hi = hi if np.isfinite(hi) else ev.quantile
    lo = lo if np.isfinite(lo) else ev.quantile
    return hi - ev.loss_max, hi - lo


def sample_quantile(a: np.ndarray, q: float) -> float:
    """numpy's (linear) ``q``-quantile of ``a``, where infinite values are kept infinite.

    Costs past binary64 and times of invalid actions are inf; numpy
    interpolates between two order statistics as a + t·(b − a), which is
    inf − inf = nan (and a RuntimeWarning) when both are inf. The quantile of
    such values is inf; strictly between a finite and an infinite one it is
    that infinity too (nan only between −inf and +inf).
    """
    if np.isfinite(a).all():
        return float(np.quantile(a, q))
    s = np.sort(a)
    h = (s.size - 1) * q
    lo, hi = int(math.floor(h)), int(math.ceil(h))
    low, high = float(s[lo]), float(s[hi])
    if low == high:
        return low
    if math.isinf(low) or math.isinf(high):
        return math.nan if math.isinf(low) and math.isinf(high) else (low if math.isinf(low) else high)
    return low + (h - lo) * (high - low)


def _scale(a: np.ndarray) -> float:
    """The largest magnitude in ``a`` (finite values), or 0."""
    return float(np.abs(a).max()) if a.size else 0.0


def finite_mean(a) -> float:
    """Mean of ``a``, finite whenever every value is.

    numpy sums first, so a thousand costs of 1e306 have the mean inf (and an
    overflow RuntimeWarning) though each is finite; such a mean is taken of
    the values divided by the largest magnitude and scaled back. Any other
    mean is numpy's own, bit for bit; with a value ±inf or nan it is numpy's
    (inf, or nan written null).
    """
    a = np.asarray(a, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):     # inf − inf of huge values of both signs
        mean = float(a.mean())
    if math.isfinite(mean) or not np.isfinite(a).all():
        return mean
    scale = _scale(a)
    return float((a / scale).mean()) * scale


def standard_error(a: np.ndarray) -> float:
    """Standard error of the mean of ``a``; nan (written null) when a value is not
    finite: the spread of costs past binary64 is not a number, and numpy would say
    so through a RuntimeWarning (inf − inf).

    Finite values give a finite error: numpy squares the deviations, which
    overflows from about 1e154 on (equal costs of 1e301 would give inf, not
    0), so then the values are divided by the largest magnitude first, as in
    :func:`finite_mean`.
    """
    a = np.asarray(a, dtype=float)
    if not np.isfinite(a).all():
        return math.nan
    with np.errstate(over="ignore", invalid="ignore"):
        sem = float(a.std(ddof=1) / np.sqrt(a.size))
    if math.isfinite(sem):
        return sem
    scale = _scale(a)
    return float((a / scale).std(ddof=1) / np.sqrt(a.size)) * scale


__all__ = ["QuantileInterval", "order_statistic_ci", "check_accepts", "check_excess", "sample_quantile",
           "finite_mean", "standard_error", "CI_METHOD", "CI_METHOD_LOWER", "CI_METHOD_UPPER", "CI_METHOD_NONE"]
