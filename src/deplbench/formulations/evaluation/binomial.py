"""Exact binomial bounds behind the certified bracket on the chance-constrained optimum.

Two statements, both exact (no normal approximation), both at a stated
confidence 1 − β:

**Upper side — a plan's violation probability (Clopper–Pearson).** A plan
fixed *before* N′ fresh independent draws are made violates ℓ(K) ≤ ℓmax on
V of them, V ~ Bin(N′, p). The one-sided Clopper–Pearson bound

    p̄(V) = the p with P(Bin(N′, p) ≤ V) = β   ( = Beta⁻¹(1 − β; V + 1, N′ − V) ),

with p̄(N′) = 1, satisfies P(p ≤ p̄(V)) ≥ 1 − β for every p. A plan with
p̄(V) ≤ 1 − ω therefore meets the chance constraint (3) with confidence
1 − β; its cost is then an upper bound on the true optimum at that
confidence. The lower bound p̲(V) = Beta⁻¹(β; V, N′ − V + 1), p̲(0) = 0, certifies
*infeasibility* when p̲(V) > 1 − ω. When T candidate plans are tested and the
cheapest certified one is kept, each test runs at β/T (Bonferroni), so that
the probability that *any* infeasible candidate is certified — and hence
that the kept one is wrong — is at most β, whatever the dependence between
the tests (they may share the same draws).

**Lower side — M SAA replications (Luedtke & Ahmed 2008, Sec. 4;
Pagnoncelli, Ahmed & Shapiro 2009, Sec. 4).** Let the true problem require
violation probability ≤ α (α = 1 − ω here) and let x* be an optimal
solution. Solve M independent SAA problems, each on S i.i.d. scenarios with
the SAA risk level γ (at most ⌊γS⌋ scenarios violated), and sort their
optimal values v₍₁₎ ≤ … ≤ v₍M₎ (an infeasible SAA has value +∞). Because the
number of scenarios x* violates is Bin(S, p(x*)) with p(x*) ≤ α and the
binomial c.d.f. decreases in p, x* is feasible for one SAA with probability
at least

    ρ(α, γ, S) = Σ_{i=0}^{⌊γS⌋} C(S, i) αⁱ (1 − α)^{S−i},

and then that SAA's optimum is ≤ z*. The number of replications with
v ≤ z* is thus stochastically at least Bin(M, ρ), and

    P(v₍L₎ ≤ z*) ≥ 1 − Σ_{i=0}^{L−1} C(M, i) ρⁱ (1 − ρ)^{M−i} = 1 − B(L − 1; M, ρ).

The largest L with B(L − 1; M, ρ) ≤ β gives the tightest lower bound valid
with confidence 1 − β (none exists when (1 − ρ)^M > β: too few
replications). Conditions: the scenario sets are independent of each other;
z* is attained (true for the DepL problem: finitely many discrete choices and
a compact set of allocations) — if the problem is infeasible, z* = +∞ and
any bound holds; each v may be replaced by any valid lower bound on that
SAA's optimum (the MILP's proven dual bound), since the order statistic is
monotone in every v. Any γ is allowed: γ = α (the usual choice, ρ → 1/2 as S
grows) or γ > α (larger ρ, hence a larger L, but smaller SAA optima).

References
----------
C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits
illustrated in the case of the binomial", Biometrika 26 (1934).
J. Luedtke and S. Ahmed, "A sample approximation approach for optimization
with probabilistic constraints", SIAM J. Optim. 19 (2008), Sec. 4.
B. K. Pagnoncelli, S. Ahmed and A. Shapiro, "Sample average approximation
method for chance constrained programming: theory and applications", J.
Optim. Theory Appl. 142 (2009), Sec. 4 (lower bounds, eq. for ρ and L).

Examples
--------
>>> round(clopper_pearson_upper(0, 10, 0.95), 4)      # 1 − 0.05**(1/10)
0.2589
>>> lb = lower_bound_order(replications=10, scenarios=1000, risk=0.01, confidence=0.95)
>>> lb.order, round(lb.rho, 3)
(3, 0.583)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np
from scipy import stats

from deplbench.errors import DeplbenchError


class BoundError(DeplbenchError, ValueError):
    """An argument of a binomial bound is out of range (the message names it)."""


def _check_count(name: str, value, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise BoundError(f"{name}: must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_prob(name: str, value, *, open_low: bool = True, open_high: bool = True) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise BoundError(f"{name}: must be a number in (0, 1), got {value!r}") from None
    lo_ok = v > 0 if open_low else v >= 0
    hi_ok = v < 1 if open_high else v <= 1
    if not (math.isfinite(v) and lo_ok and hi_ok):
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise BoundError(f"{name}: must be in {lo}0, 1{hi}, got {value!r}")
    return v


def _check_counts(violations, draws) -> tuple[int, int]:
    n = _check_count("draws", draws, low=1)
    k = _check_count("violations", violations)
    if k > n:
        raise BoundError(f"violations: {k} exceeds the number of draws {n}")
    return k, n


def clopper_pearson_upper(violations: int, draws: int, confidence: float = 0.95) -> float:
    """One-sided exact upper confidence bound on a binomial probability.

    Parameters
    ----------
    violations : int
        Observed successes V (here: draws whose ℓ(K) exceeds ℓmax).
    draws : int
        Independent draws N′ ≥ 1.
    confidence : float, default 0.95
        1 − β.

    Returns
    -------
    float
        p̄ with P(Bin(N′, p̄) ≤ V) = β, i.e. ``Beta.ppf(1 − β, V + 1, N′ − V)``;
        1.0 when V = N′. For V = 0 this is 1 − β^(1/N′).

    Raises
    ------
    BoundError
        If the counts or the confidence are out of range (message names it).
    """
    k, n = _check_counts(violations, draws)
    conf = _check_prob("confidence", confidence)
    if k >= n:
        return 1.0
    if k == 0:
        # Closed form; avoids the beta quantile's round-off for huge N′.
        return float(-math.expm1(math.log1p(-conf) / n))
    return float(stats.beta.ppf(conf, k + 1, n - k))


def clopper_pearson_lower(violations: int, draws: int, confidence: float = 0.95) -> float:
    """One-sided exact lower confidence bound on a binomial probability.

    Returns
    -------
    float
        p̲ with P(Bin(N′, p̲) ≥ V) = β, i.e. ``Beta.ppf(β, V, N′ − V + 1)``;
        0.0 when V = 0. For V = N′ this is β^(1/N′).

    Raises
    ------
    BoundError
        If the counts or the confidence are out of range.
    """
    k, n = _check_counts(violations, draws)
    conf = _check_prob("confidence", confidence)
    if k == 0:
        return 0.0
    if k == n:
        return float(math.exp(math.log1p(-conf) / n))
    return float(stats.beta.ppf(1.0 - conf, k, n - k + 1))


#: Verdicts of :func:`violation_verdict`.
CERTIFIED_FEASIBLE = "certified feasible"
NOT_CERTIFIED = "not certified"
CERTIFIED_INFEASIBLE = "certified infeasible"
VERDICTS = (CERTIFIED_FEASIBLE, NOT_CERTIFIED, CERTIFIED_INFEASIBLE)


def violation_verdict(violations: int, draws: int, risk: float, confidence: float = 0.95) -> str:
    """Certified verdict on P(ℓ(K) > ℓmax) ≤ ``risk`` from ``violations`` of ``draws``.

    ``"certified feasible"`` when the Clopper–Pearson upper bound is ≤ risk,
    ``"certified infeasible"`` when the Clopper–Pearson lower bound is > risk
    (each a one-sided statement at ``confidence``), else ``"not certified"``.
    A verdict is a statement about one plan at that level, not a proof: it
    is wrong with probability at most 1 − ``confidence``, so over many plans
    up to about that share of the verdicts may be wrong.

    Raises
    ------
    BoundError
        If an argument is out of range.
    """
    risk = _check_prob("risk", risk)
    if clopper_pearson_upper(violations, draws, confidence) <= risk:
        return CERTIFIED_FEASIBLE
    if clopper_pearson_lower(violations, draws, confidence) > risk:
        return CERTIFIED_INFEASIBLE
    return NOT_CERTIFIED


def max_certifiable_violations(draws: int, risk: float, confidence: float = 0.95) -> int:
    """Largest V whose Clopper–Pearson upper bound is ≤ ``risk`` (−1 if none).

    Tells a user before sampling how many violations N′ draws can absorb.
    """
    n = _check_count("draws", draws, low=1)
    risk = _check_prob("risk", risk)
    conf = _check_prob("confidence", confidence)
    # p̄(V) ≤ risk  ⇔  P(Bin(N′, risk) ≤ V) ≤ β  (p̄ increases in V).
    k = int(stats.binom.ppf(1.0 - conf, n, risk))
    while k >= 0 and clopper_pearson_upper(k, n, conf) > risk:
        k -= 1
    while k + 1 < n and clopper_pearson_upper(k + 1, n, conf) <= risk:
        k += 1
    return k


def bonferroni(beta: float, tests: int) -> float:
    """Per-test error β/T so that T tests together err with probability ≤ β."""
    beta = _check_prob("beta", beta)
    t = _check_count("tests", tests, low=1)
    return beta / t


def saa_feasibility_probability(scenarios: int, risk: float, saa_risk: float | None = None) -> float:
    """ρ(α, γ, S) = P(Bin(S, α) ≤ ⌊γS⌋): a lower bound on the probability that a
    solution with violation probability ≤ α is feasible for one SAA.

    Parameters
    ----------
    scenarios : int
        S, scenarios per SAA replication.
    risk : float
        α, the true problem's risk level (1 − ω).
    saa_risk : float, optional
        γ, the SAA's risk level (default α). ⌊γS⌋ is computed like the MILP's
        ``allowed_violations`` at ω = 1 − γ: exactly, on ω's shortest decimal
        (a float guard that rounds γS up would count all S at γ = 1 − 1e-12,
        S = 200, making ρ = 1 and the lower bound invalid).
    """
    s = _check_count("scenarios", scenarios, low=1)
    a = _check_prob("risk", risk)
    g = a if saa_risk is None else _check_prob("saa_risk", saa_risk, open_low=False)
    allowed = min(int(math.floor((1 - Fraction(repr(1.0 - g))) * s)), s)
    return float(stats.binom.cdf(allowed, s, a))


@dataclass(frozen=True)
class LowerBoundOrder:
    """Which order statistic of M SAA optima is a lower bound, and how sure.

    Attributes
    ----------
    order : int or None
        L (1-based): v₍L₎ ≤ z* with probability ≥ ``achieved_confidence``.
        None when even L = 1 does not reach the confidence (too few replications).
    rho : float
        ρ(α, γ, S).
    confidence : float
        The confidence asked for (1 − β).
    achieved_confidence : float or None
        1 − B(L − 1; M, ρ) ≥ ``confidence``.
    replications, scenarios : int
    risk, saa_risk : float
        α and γ.
    """

    order: int | None
    rho: float
    confidence: float
    achieved_confidence: float | None
    replications: int
    scenarios: int
    risk: float
    saa_risk: float

    def to_dict(self) -> dict:
        return asdict(self)


def lower_bound_order(replications: int, scenarios: int, risk: float, confidence: float = 0.95,
                      saa_risk: float | None = None, rho: float | None = None) -> LowerBoundOrder:
    """The largest L with B(L − 1; M, ρ) ≤ β (Pagnoncelli et al. 2009, Sec. 4).

    Parameters
    ----------
    replications : int
        M ≥ 1 independent SAA replications.
    scenarios : int
        S per replication.
    risk : float
        α = 1 − ω.
    confidence : float, default 0.95
        1 − β.
    saa_risk : float, optional
        γ of every replication (default α).
    rho : float, optional
        Override ρ (e.g. 1.0 when every plan's violation probability is 0 or
        1, as on deterministic instances where the SAA is the true problem).

    Returns
    -------
    LowerBoundOrder

    Raises
    ------
    BoundError
        If an argument is out of range.
    """
    m = _check_count("replications", replications, low=1)
    s = _check_count("scenarios", scenarios, low=1)
    a = _check_prob("risk", risk)
    conf = _check_prob("confidence", confidence)
    g = a if saa_risk is None else _check_prob("saa_risk", saa_risk, open_low=False)
    r = saa_feasibility_probability(s, a, g) if rho is None else _check_prob(
        "rho", rho, open_low=False, open_high=False)
    beta = 1.0 - conf
    # B(L − 1; M, ρ) increases with L; scan all M values at once.
    cdf = stats.binom.cdf(np.arange(m), m, r)       # cdf[L-1] = B(L − 1; M, ρ)
    ok = np.nonzero(cdf <= beta + 1e-15)[0]
    if ok.size == 0:
        return LowerBoundOrder(None, r, conf, None, m, s, a, g)
    order = int(ok[-1]) + 1
    return LowerBoundOrder(order, r, conf, float(1.0 - cdf[order - 1]), m, s, a, g)


def min_replications(scenarios: int, risk: float, confidence: float = 0.95,
                     saa_risk: float | None = None) -> int:
    """Smallest M for which some order statistic is a valid lower bound:
    (1 − ρ)^M ≤ β, i.e. M = ⌈log β / log(1 − ρ)⌉ (1 when ρ = 1)."""
    conf = _check_prob("confidence", confidence)
    r = saa_feasibility_probability(scenarios, risk, saa_risk)
    if r >= 1.0:
        return 1
    if r <= 0.0:
        raise BoundError("saa_risk: ρ = 0, no number of replications gives a lower bound")
    return max(1, math.ceil(math.log(1.0 - conf) / math.log1p(-r) - 1e-12))


@dataclass(frozen=True)
class QuantileRanks:
    """Ranks of the distribution-free interval [X₍low₎, X₍high₎] on an ω-quantile
    (:func:`quantile_ci_ranks`), with X₍0₎ = −∞ and X₍n+1₎ = +∞.

    Attributes
    ----------
    low : int
        Rank of the lower end, 0 when no sample is low enough (the lower end is −∞).
    high : int
        Rank of the upper end, ``n + 1`` when no sample is high enough (the upper end is +∞).
    coverage : float
        Exact binomial coverage 1 − P(B ≤ low − 1) − P(B ≥ high), B ~ Bin(n, ω):
        the interval's coverage for a continuous law, a lower bound on it otherwise.
    n : int
    """

    low: int
    high: int
    coverage: float
    n: int

    @property
    def two_sided(self) -> bool:
        """Both ends are order statistics (neither is infinite)."""
        return self.low >= 1 and self.high <= self.n


def quantile_ci_ranks(n: int, omega: float, confidence: float = 0.95) -> QuantileRanks:
    """Ranks of the distribution-free two-sided interval on the ω-quantile, α/2 in each tail.

    The lower rank is the largest l with P(B ≤ l − 1) ≤ α/2 and the upper rank
    the smallest u with P(B ≥ u) ≤ α/2, B ~ Bin(n, ω) the number of draws at
    or below the quantile, α = 1 − ``confidence``. When n is too small one of
    them falls outside 1..n: that end is then infinite (rank 0 or n + 1) and
    the interval is one-sided, with the coverage of the tail it keeps (≥ 1 − α/2),
    never the clamped sample extreme at a level it does not have.

    Parameters
    ----------
    n : int
        Number of draws, ≥ 1.
    omega : float
        The quantile's level ω in (0, 1).
    confidence : float, default 0.95
        1 − α, in (0, 1).

    Returns
    -------
    QuantileRanks
        Its ``coverage`` is ≥ ``confidence`` in every case.

    Raises
    ------
    BoundError
        If an argument is out of range.

    References
    ----------
    G. J. Hahn and W. Q. Meeker, *Statistical Intervals*, Wiley 1991, Sec. 5.2
    (distribution-free intervals for a quantile); W. J. Conover, *Practical
    Nonparametric Statistics*, 3rd ed., Wiley 1999, Sec. 3.2.

    Examples
    --------
    >>> r = quantile_ci_ranks(100, 0.99, 0.95)          # X₍101₎ would be needed above
    >>> r.low, r.high, r.two_sided, round(r.coverage, 4)
    (97, 101, False, 0.9816)
    """
    n = _check_count("n", n, low=1)
    w = _check_prob("omega", omega)
    conf = _check_prob("confidence", confidence)
    tail = (1.0 - conf) / 2.0
    cdf, sf = stats.binom.cdf, stats.binom.sf
    # ppf/isf search in floating point and may land one off: settle each rank on the cdf/sf itself
    low = max(0, min(n, int(stats.binom.ppf(tail, n, w))))
    while low >= 1 and cdf(low - 1, n, w) > tail:
        low -= 1
    while low < n and cdf(low, n, w) <= tail:
        low += 1
    high = max(1, min(n + 1, int(stats.binom.isf(tail, n, w)) + 1))
    while high <= n and sf(high - 1, n, w) > tail:        # sf(u − 1) = P(B ≥ u)
        high += 1
    while high >= 2 and sf(high - 2, n, w) <= tail:
        high -= 1
    miss_low = float(cdf(low - 1, n, w)) if low >= 1 else 0.0
    miss_high = float(sf(high - 1, n, w)) if high <= n else 0.0
    return QuantileRanks(low, high, 1.0 - miss_low - miss_high, n)


def order_statistic_bound(values, order: int | None) -> float:
    """v₍L₎ of ``values`` (+∞ entries allowed: infeasible SAAs); −∞ if ``order`` is None."""
    v = np.sort(np.asarray(values, dtype=float))
    if order is None:
        return -math.inf
    if not 1 <= order <= v.size:
        raise BoundError(f"order: must be in [1, {v.size}], got {order}")
    if np.isnan(v).any():
        raise BoundError("values: NaN is not a valid SAA optimum")
    return float(v[order - 1])


__all__ = [
    "BoundError", "clopper_pearson_upper", "clopper_pearson_lower", "violation_verdict",
    "max_certifiable_violations", "bonferroni", "saa_feasibility_probability", "LowerBoundOrder",
    "lower_bound_order", "min_replications", "order_statistic_bound", "QuantileRanks", "quantile_ci_ranks", "VERDICTS",
    "CERTIFIED_FEASIBLE", "NOT_CERTIFIED", "CERTIFIED_INFEASIBLE",
]
