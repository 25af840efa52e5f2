"""Exact binomial bounds (formulations/evaluation/binomial.py) against hand-computed values.

Every expected number below is derived by hand from the defining equation
(closed forms for n ≤ 3 or zero/all violations) or from sums of
``math.comb`` terms, never from scipy, which the module itself uses.
"""

import math

import pytest

from deplbench.formulations.evaluation import binomial as b


def _binom_cdf(k, n, p):
    """P(Bin(n, p) <= k) by direct summation (independent of scipy)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


# ---------------------------------------------------------------- Clopper–Pearson


def test_upper_zero_violations_closed_form():
    # P(Bin(n, p) <= 0) = (1 - p)^n = beta  =>  p = 1 - beta^(1/n)
    assert b.clopper_pearson_upper(0, 10, 0.95) == pytest.approx(0.2588655508930523, rel=1e-12)
    assert b.clopper_pearson_upper(0, 1, 0.95) == pytest.approx(0.95, rel=1e-12)
    # large N': the "rule of three", 1 - 0.05^(1/N') ~ 2.9957/N'
    assert b.clopper_pearson_upper(0, 200_000, 0.95) == pytest.approx(-math.expm1(math.log(0.05) / 2e5), rel=1e-12)


def test_upper_small_n_hand_values():
    # n = 2, k = 1: 1 - p^2 = 0.05  =>  p = sqrt(0.95)
    assert b.clopper_pearson_upper(1, 2, 0.95) == pytest.approx(math.sqrt(0.95), rel=1e-10)
    # all violated: the bound is 1
    assert b.clopper_pearson_upper(3, 3, 0.95) == 1.0


def test_lower_small_n_hand_values():
    assert b.clopper_pearson_lower(0, 5, 0.95) == 0.0
    # n = 2, k = 1: 1 - (1 - p)^2 = 0.05  =>  p = 1 - sqrt(0.95)
    assert b.clopper_pearson_lower(1, 2, 0.95) == pytest.approx(1 - math.sqrt(0.95), rel=1e-9)
    # k = n = 3: p^3 = 0.05
    assert b.clopper_pearson_lower(3, 3, 0.95) == pytest.approx(0.05 ** (1 / 3), rel=1e-12)


@pytest.mark.parametrize("k,n", [(5, 100), (17, 1000), (1, 40)])
def test_upper_solves_defining_equation(k, n):
    p = b.clopper_pearson_upper(k, n, 0.95)
    assert _binom_cdf(k, n, p) == pytest.approx(0.05, abs=1e-9)
    lo = b.clopper_pearson_lower(k, n, 0.95)
    assert 1 - _binom_cdf(k - 1, n, lo) == pytest.approx(0.05, abs=1e-9)
    assert lo < k / n < p


@pytest.mark.parametrize("p", [0.01, 0.05, 0.2, 0.5])
def test_upper_bound_exact_coverage(p):
    """P(p <= p̄(V)) >= 0.95 summed exactly over V ~ Bin(n, p)."""
    n = 60
    cover = sum(math.comb(n, k) * p**k * (1 - p) ** (n - k)
                for k in range(n + 1) if b.clopper_pearson_upper(k, n, 0.95) >= p)
    assert cover >= 0.95 - 1e-12


def test_verdicts_including_tiny_draws():
    # 0 of 1000: p̄ = 1 - 0.05^(1/1000) = 0.002991 <= 0.01
    assert b.violation_verdict(0, 1000, 0.01) == b.CERTIFIED_FEASIBLE
    # 30 of 1000 (3 %): p̲ ~ 0.0218 > 0.01
    assert b.violation_verdict(30, 1000, 0.01) == b.CERTIFIED_INFEASIBLE
    assert b.violation_verdict(10, 1000, 0.01) == b.NOT_CERTIFIED
    # tiny N': 10 clean draws cannot certify 1 % (p̄ = 0.259), nor refute it
    assert b.violation_verdict(0, 10, 0.01) == b.NOT_CERTIFIED
    # one draw that violates: p̲ = 0.05 > 0.01 is a (weak) refutation
    assert b.violation_verdict(1, 1, 0.01) == b.CERTIFIED_INFEASIBLE


def test_max_certifiable_violations_matches_scan():
    n, risk = 5000, 0.01
    k = b.max_certifiable_violations(n, risk)
    assert b.clopper_pearson_upper(k, n) <= risk < b.clopper_pearson_upper(k + 1, n)
    assert b.max_certifiable_violations(10, 0.01) == -1          # nothing certifiable


def test_bonferroni():
    assert b.bonferroni(0.05, 10) == pytest.approx(0.005)


@pytest.mark.parametrize("call,field", [
    (lambda: b.clopper_pearson_upper(5, 3), "violations"),
    (lambda: b.clopper_pearson_upper(0, 0), "draws"),
    (lambda: b.clopper_pearson_upper(1, 10, 1.0), "confidence"),
    (lambda: b.clopper_pearson_lower(-1, 10), "violations"),
    (lambda: b.violation_verdict(0, 10, 0.0), "risk"),
    (lambda: b.lower_bound_order(0, 100, 0.1), "replications"),
    (lambda: b.lower_bound_order(5, 100, 1.5), "risk"),
])
def test_bad_arguments_name_the_field(call, field):
    with pytest.raises(b.BoundError, match=f"^{field}:"):
        call()


# ------------------------------------------------- Luedtke–Ahmed lower bound order


def test_rho_hand_value():
    # S = 10, α = γ = 0.1, ⌊γS⌋ = 1:  ρ = 0.9^10 + 10·0.1·0.9^9
    rho = 0.9**10 + 10 * 0.1 * 0.9**9
    assert b.saa_feasibility_probability(10, 0.1) == pytest.approx(rho, rel=1e-12)
    # γ = 0 (no violation allowed): ρ = (1 - α)^S
    assert b.saa_feasibility_probability(10, 0.1, saa_risk=0.0) == pytest.approx(0.9**10, rel=1e-12)


def test_order_hand_value():
    # M = 5, ρ as above, β = 0.05: B(0) = (1-ρ)^5 = 0.0013, B(1) = 0.0191, B(2) = 0.119
    rho = 0.9**10 + 10 * 0.1 * 0.9**9
    cdf = [_binom_cdf(j, 5, rho) for j in range(5)]
    assert cdf[1] <= 0.05 < cdf[2]
    lb = b.lower_bound_order(5, 10, 0.1, confidence=0.95)
    assert lb.order == 2
    assert lb.achieved_confidence == pytest.approx(1 - cdf[1], rel=1e-9)


def test_order_realistic_defaults():
    # S = 1000, α = 0.01: ρ = P(Bin(1000, 0.01) <= 10) = 0.5830
    rho = _binom_cdf(10, 1000, 0.01)
    lb = b.lower_bound_order(10, 1000, 0.01, confidence=0.95)
    assert lb.rho == pytest.approx(rho, rel=1e-9)
    cdf = [_binom_cdf(j, 10, rho) for j in range(10)]
    expected = max(j + 1 for j in range(10) if cdf[j] <= 0.05)
    assert lb.order == expected == 3


def test_too_few_replications_give_no_bound():
    # (1 - 0.583)^3 = 0.0725 > 0.05: no order statistic reaches 95 %
    assert b.lower_bound_order(3, 1000, 0.01, confidence=0.95).order is None
    assert b.min_replications(1000, 0.01, confidence=0.95) == 4
    assert b.lower_bound_order(4, 1000, 0.01, confidence=0.95).order == 1


def test_deterministic_rho_one_uses_the_largest_value():
    lb = b.lower_bound_order(3, 1, 0.01, rho=1.0)
    assert lb.order == 3 and lb.achieved_confidence == 1.0


def test_order_statistic_bound():
    vals = [5.0, math.inf, 1.0, 3.0]
    assert b.order_statistic_bound(vals, 2) == 3.0
    assert b.order_statistic_bound(vals, 4) == math.inf
    assert b.order_statistic_bound(vals, None) == -math.inf


@pytest.mark.parametrize("risk", [0.01, 0.05, 0.1])
def test_a_plan_seen_above_the_risk_is_never_certified(risk):
    """Whenever the observed violation frequency V/N′ exceeds the risk (so the
    empirical ω-quantile is above ℓmax), the Clopper–Pearson upper bound does
    too — such a plan is never certified feasible. Checked at the smallest
    such V (p̄ grows with V) for every N′ ≤ 60 and a few larger ones."""
    for n in [*range(1, 61), 99, 100, 101, 199, 200, 999, 1000, 1001]:
        v = math.floor(risk * n + 1e-9) + 1
        if v > n:
            continue
        assert v / n > risk
        for conf in (0.5, 0.95, 0.999):
            assert b.clopper_pearson_upper(v, n, conf) > risk
            assert b.violation_verdict(v, n, risk, conf) != b.CERTIFIED_FEASIBLE


def test_saa_feasibility_counts_violations_like_the_milp_at_extreme_risk():
    """At ω = 1e-12 (γ = α = 1 − 1e-12) and S = 200 the MILP allows ⌊αS⌋ = 199 violations,
    and ρ = P(Bin(200, α) ≤ 199) ≈ 2e-10 counts the same 199: a count of 200 (ρ = 1)
    would let certify prove a lower bound above a certified plan's cost ("inconsistent")."""
    from scipy import stats as st

    from deplbench.formulations.evaluation.binomial import saa_feasibility_probability
    from deplbench.formulations.model.scenarios import allowed_violations

    alpha = 1.0 - 1e-12
    assert allowed_violations(1e-12, 200) == 199
    assert saa_feasibility_probability(200, alpha) == pytest.approx(st.binom.cdf(199, 200, alpha))
    assert saa_feasibility_probability(200, alpha) < 1e-9
    # the usual levels keep the MILP's count: (1 − 0.9)·10 = 1, (1 − 0.99)·100 = 1
    assert saa_feasibility_probability(10, 1 - 0.9) == pytest.approx(st.binom.cdf(1, 10, 1 - 0.9))
    assert saa_feasibility_probability(100, 1 - 0.99) == pytest.approx(st.binom.cdf(1, 100, 1 - 0.99))
