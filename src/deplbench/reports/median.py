"""Verdicts over distinct instances: a distribution-free interval on the median.

One value per instance (or a bracket per instance: lower and upper ends), an
exact binomial order-statistic interval on the population median, its level
stated with its method, and the verdict against a threshold. Pure functions,
so every claim's numbers can be recomputed and tested without a report.

References
----------
Meeker, Hahn & Escobar, *Statistical Intervals* (2nd ed., Wiley, 2017):
distribution-free confidence intervals for a quantile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from deplbench.formulations.evaluation.binomial import quantile_ci_ranks
from deplbench.jsonio import level_percent

#: Level of every interval on a median in the claims and the glance.
MEDIAN_LEVEL = 0.95
#: How the interval is computed, as the report states it.
MEDIAN_METHOD = "exact binomial order-statistic interval (distribution-free)"
#: The method as an interval's text names it.
MEDIAN_METHOD_SHORT = "exact binomial order-statistic interval"
#: The asymptotic standard error of a sample median is √(π/2)·σ/√n for
#: normal data; used only to say how many instances would decide a verdict.
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)


@dataclass(frozen=True)
class MedianInterval:
    """A distribution-free interval on the median of one value per instance.

    Attributes
    ----------
    median : float
        Sample median of point values. For bracket-valued observations
        [lo, hi] the true sample median is only known to lie in
        [``median_low``, ``median_high``]; ``median`` is then the middle of
        that bracket, used by :func:`instances_to_decide` only and never
        printed as an estimate.
    low, high : float
        The interval's ends; ±inf when ``n`` is too small for the level
        (fewer than 6 instances at 95 %).
    n : int
        Distinct instances.
    level : float
        The interval's guaranteed coverage (≥ the nominal level): the
        order-statistic event's exact probability; after
        :func:`with_bracket_failures` the joint level, NaN when it is not
        computable (a bracket without a stated confidence).
    spread : float
        Sample standard deviation (NaN for n < 2), used by
        :func:`instances_to_decide`.
    median_low, median_high : float, optional
        The sample median's bracket: the medians of the lower and of the
        upper ends (both ``median`` for point values).
    nominal : float, optional
        The level the interval was built for (:data:`MEDIAN_LEVEL`).
    level_note : str, optional
        Replaces the printed level when the interval's coverage is not the
        order-statistic event's alone (a union bound over the per-instance
        statements it rests on, e.g. the PACT matched-risk claim).
    """

    median: float
    low: float
    high: float
    n: int
    level: float
    spread: float
    median_low: float = math.nan
    median_high: float = math.nan
    nominal: float = MEDIAN_LEVEL
    level_note: str = ""

    def __post_init__(self) -> None:
        if math.isnan(self.median_low) and math.isnan(self.median_high):
            object.__setattr__(self, "median_low", self.median)
            object.__setattr__(self, "median_high", self.median)

    @property
    def exists(self) -> bool:
        """Whether there is an interval: n ≥ 1 and not both ends infinite (an upper end
        of +inf, from brackets without a positive lower bound, leaves a one-sided one)."""
        return self.n > 0 and not (math.isnan(self.low) or math.isnan(self.high)
                                   or (math.isinf(self.low) and math.isinf(self.high)))

    @property
    def bracketed(self) -> bool:
        """Whether the sample median is known only within a bracket (bracket-valued observations)."""
        return bool(self.median_low != self.median_high) and not math.isnan(self.median_low)

    def negated(self) -> MedianInterval:
        """The interval on the median of −x (to decide "at least" against a threshold)."""
        return replace(self, median=-self.median, low=-self.high, high=-self.low,
                       median_low=-self.median_high, median_high=-self.median_low)

    def level_text(self) -> str:
        """``"≥ 95 % (exact 97.8 %) exact binomial order-statistic interval over 10 distinct instances"``."""
        if self.level_note:
            return self.level_note
        nom = f"{level_percent(self.nominal, 0)} %"
        if not self.exists:
            return f"no {nom} order-statistic interval exists with {self.n} distinct instance(s) (6 are needed)"
        exact = f"{level_percent(self.level)} %"
        lv = nom if exact == f"{level_percent(self.nominal)} %" else f"≥ {nom} (exact {exact})"
        return f"{lv} {MEDIAN_METHOD_SHORT} over {self.n} distinct instances"

    def text(self, scale: float = 1.0, unit: str = "", digits: int = 2) -> str:
        """``"1.23 [1.10, 1.40] (≥ 95 % (exact 97.8 %) exact binomial order-statistic interval over 10
        distinct instances)"``; for bracket-valued observations ``"within [1.20, 1.26], interval
        [1.10, 1.40] (…)"`` (the sample median's bracket, then the interval on the population median)."""
        def f(x: float) -> str:
            return "−∞" if x == -math.inf else "∞" if x == math.inf else f"{scale * x:.{digits}f}"
        point = (f"within [{f(self.median_low)}{unit}, {f(self.median_high)}{unit}], interval"
                 if self.bracketed else f"{f(self.median)}{unit}")
        return f"{point} [{f(self.low)}{unit}, {f(self.high)}{unit}] ({self.level_text()})"


def order_statistic_rank(n: int, level: float = MEDIAN_LEVEL) -> tuple[int, float]:
    """(r, coverage): [x₍r₎, x₍n−r+1₎] covers the median with probability
    1 − 2·P(B ≤ r − 1), B ~ Binomial(n, ½), the largest r whose coverage is
    ≥ ``level``; r = 0 when no such interval exists (n too small).

    References
    ----------
    W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., Wiley
    1999, Sec. 3.2 (confidence interval for a quantile).
    """
    if n < 1:
        return 0, math.nan
    if level >= 1.0:        # no finite interval reaches certainty
        return 0, 1.0
    # the one rank rule of every order-statistic interval (formulations.evaluation.binomial):
    # at ω = ½ its upper rank is n − r + 1 by symmetry
    ranks = quantile_ci_ranks(n, 0.5, level)
    if ranks.low < 1:
        return 0, 1.0
    return ranks.low, ranks.coverage


def median_interval(values, high_values=None, level: float = MEDIAN_LEVEL) -> MedianInterval:
    """Interval on the median of one value per distinct instance.

    Parameters
    ----------
    values : array_like
        One value per instance (NaN dropped). With ``high_values``: the
        lower ends of per-instance brackets [lo, hi] that contain the true
        value (a ratio to a certified bracket).
    high_values : array_like, optional
        The upper ends, paired with ``values``. The interval is then
        [lo₍r₎, hi₍n−r+1₎]: since each true value lies in its bracket, its
        order statistics lie between those of the ends.
    level : float
        Nominal coverage.

    Returns
    -------
    MedianInterval
    """
    lo = np.asarray(values, dtype=float)
    hi = lo if high_values is None else np.asarray(high_values, dtype=float)
    # an upper end may be +inf (a bracket with no positive lower bound): the
    # instance still counts, and the interval's upper end is then +inf when
    # its order statistic falls there
    ok = np.isfinite(lo) & (np.isfinite(hi) | (hi == math.inf))
    lo, hi = np.sort(lo[ok]), np.sort(hi[ok])
    n = int(lo.size)
    if n == 0:
        return MedianInterval(math.nan, math.nan, math.nan, 0, level, math.nan, nominal=level)
    # the sample median of the true values lies between the medians of the ends
    # (the ends are sorted separately: the order statistics of the true values lie
    # between theirs); its middle is no estimate and is not printed
    m_lo, m_hi = float(np.median(lo)), float(np.median(hi))
    mid = 0.5 * (lo + hi)
    med = 0.5 * (m_lo + m_hi) if m_lo != m_hi else m_lo
    with np.errstate(invalid="ignore"):
        spread = float(np.std(mid, ddof=1)) if n > 1 and np.isfinite(mid).all() else math.nan
    r, cover = order_statistic_rank(n, level)
    if r == 0:
        return MedianInterval(med, -math.inf, math.inf, n, level, spread, m_lo, m_hi, level)
    return MedianInterval(med, float(lo[r - 1]), float(hi[n - r]), n, cover, spread, m_lo, m_hi, level)


#: Why an interval whose level is not computable decides nothing (:func:`with_bracket_failures`).
_NO_LEVEL_TEXT = ("its level is not computable (a bracket it rests on states no confidence), so it decides "
                  "nothing; a stated confidence on every bracket would decide it")


def with_bracket_failures(ci: MedianInterval, alphas) -> MedianInterval:
    """``ci`` at its true level when its observations are brackets that each hold only
    with probability 1 − α_i (a certified bracket's confidence): the interval holds when
    the order-statistic event and every bracket hold, so at ≥ level − Σ α_i (union bound).

    Parameters
    ----------
    ci : MedianInterval
        From :func:`median_interval` over the brackets' ends.
    alphas : array_like
        One failure probability per bracket the interval rests on: 0 for a
        proven bracket, NaN for one whose confidence is not stated (unproven:
        its failure probability is unknown).

    Returns
    -------
    MedianInterval
        ``ci`` unchanged when every bracket is proven (Σ α = 0) or no interval
        exists; else with ``level`` the joint level and a ``level_note`` saying so.
        With a NaN α the joint level is not computable: ``level`` is NaN and
        ``level_note`` says why (:func:`decide` then decides nothing).

    Notes
    -----
    The union bound needs every bracket's failure probability; leaving out an
    unknown one would state a level the interval does not have.
    """
    a = np.asarray(alphas, dtype=float).ravel()
    if not ci.exists:                  # a one-sided interval [x, ∞] rests on the brackets too
        return ci
    unknown = int((~np.isfinite(a)).sum())
    if unknown:
        note = (f"level not computable: {unknown} of its {a.size} bracket(s) without a stated confidence "
                f"(unproven, failure probability unknown; the union bound needs every one): "
                f"{MEDIAN_METHOD_SHORT} over {ci.n} distinct instances")
        return replace(ci, level=math.nan, level_note=note)
    total = float(a[a > 0].sum())
    if total <= 0:
        return ci
    joint = ci.level - total
    k = int((a > 0).sum())
    below = "" if joint >= ci.nominal - 1e-12 else f", below {level_percent(ci.nominal, 0)} %"
    note = (f"≥ {level_percent(max(joint, 0.0))} % jointly{below} (union bound: the order-statistic event "
            f"{level_percent(ci.level)} % and {k} certified bracket(s) at their confidence): "
            f"{MEDIAN_METHOD_SHORT} over {ci.n} distinct instances")
    return replace(ci, level=max(joint, 0.0), level_note=note)     # a level, never below 0


def level_caveat(ci: MedianInterval) -> str:
    """``"; the verdict is at that joint level (42.9 %), not at 95 %"`` when a union
    bound (:func:`with_bracket_failures`) left ``ci`` below its nominal level, why it
    decides nothing when that level is not computable, else ``""``."""
    if ci.level_note and math.isnan(ci.level):
        return "; " + _NO_LEVEL_TEXT
    if ci.level_note and math.isfinite(ci.level) and ci.level < ci.nominal - 1e-12:
        return (f"; the verdict is at that joint level ({level_percent(max(ci.level, 0.0))} %), "
                f"not at {level_percent(ci.nominal, 0)} %")
    return ""


#: Verdicts of :func:`decide` (the claims audit's words).
DECIDE_HOLDS, DECIDE_FAILS, DECIDE_OPEN = "holds", "does not hold", "not decided"


def instances_to_decide(ci: MedianInterval, threshold: float) -> float:
    """About how many distinct instances would put the interval wholly on
    one side of ``threshold`` at the observed spread: (z·√(π/2)·σ / |median
    − threshold|)², at least 6 (the fewest with a 95 % order-statistic
    interval) and, when the ``ci.n`` instances at hand leave it undecided,
    at least ``ci.n + 1``; inf when the median sits on the threshold or σ
    is unknown.

    Notes
    -----
    An estimate (the normal approximation to the sample median's standard
    error), not a guarantee: it says whether a verdict is a few instances
    or orders of magnitude away. With bracket-valued observations the
    distance is from the threshold to the sample median's bracket (inf
    when the bracket contains it).
    """
    gap = (max(ci.median_low - threshold, threshold - ci.median_high, 0.0) if ci.bracketed
           else abs(ci.median - threshold))
    if not (gap > 0 and math.isfinite(ci.spread)):
        return math.inf
    z = float(sps.norm.ppf(0.5 + MEDIAN_LEVEL / 2.0))
    # the normal approximation ignores the width of bracketed observations:
    # never fewer instances than the ones that did not decide it
    least = ci.n + 1 if decide(ci, threshold) == DECIDE_OPEN else 6
    return float(max(6, least, math.ceil((z * _MEDIAN_SE_FACTOR * ci.spread / gap) ** 2)))


def decide(ci: MedianInterval, threshold: float, holds_below: bool = True) -> str:
    """``holds`` / ``does not hold`` only when the interval lies wholly on
    one side of ``threshold`` (below it holds when ``holds_below``), else
    ``not decided``. An empty interval (n = 0) is not decided, nor one whose
    level is not computable (NaN, :func:`with_bracket_failures`): it states
    nothing at any confidence."""
    if ci.n == 0 or math.isnan(ci.low) or math.isnan(ci.level):
        return DECIDE_OPEN
    if ci.high <= threshold:
        return DECIDE_HOLDS if holds_below else DECIDE_FAILS
    if ci.low > threshold:
        return DECIDE_FAILS if holds_below else DECIDE_HOLDS
    return DECIDE_OPEN


def _no_count_reason(ci: MedianInterval, threshold: float) -> str:
    """Why :func:`instances_to_decide` gives no number (inf), in the order it checks."""
    if ci.n < 2:
        return f"with {ci.n} distinct instance(s) there is no spread to extrapolate from"
    if ci.bracketed and ci.median_low <= threshold <= ci.median_high:
        one_sided = ", a one-sided bracket (upper end +∞)" if ci.median_high == math.inf else ""
        return f"the sample median's bracket contains the threshold{one_sided}"
    if not ci.bracketed and ci.median == threshold:
        return "the median sits on the threshold"
    # with n ≥ 2 the spread is NaN only when a bracket has no finite upper end (median_interval)
    return "the spread is not computable, an instance's bracket being one-sided (upper end +∞)"


def undecided_text(ci: MedianInterval, threshold: float) -> str:
    """``"not decided: the interval contains the threshold; ≈ N distinct
    instances would decide it at the observed spread"``; without a number,
    the reason (the median on the threshold, a one-sided bracket, too few
    instances)."""
    if math.isnan(ci.level) and ci.exists:
        # more instances would not help: the unknown is a bracket's confidence
        return _NO_LEVEL_TEXT
    need = instances_to_decide(ci, threshold)
    more = (f"no number of instances can be estimated: {_no_count_reason(ci, threshold)}"
            if not math.isfinite(need) else
            f"≈ {int(need)} distinct instances would decide it at the observed spread")
    if not ci.exists:
        return (f"with {ci.n} distinct instance(s) no {level_percent(ci.nominal, 0)} % interval on a median "
                f"exists (6 are needed); {more}")
    return f"the interval contains the threshold; {more}"


__all__ = ["DECIDE_FAILS", "DECIDE_HOLDS", "DECIDE_OPEN", "MEDIAN_LEVEL", "MEDIAN_METHOD", "MEDIAN_METHOD_SHORT",
           "MedianInterval", "decide", "instances_to_decide", "level_caveat", "median_interval",
           "order_statistic_rank", "undecided_text", "with_bracket_failures"]
