"""The interval on a median over distinct instances (reports/stats.py)."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from deplbench.reports.median import (
    DECIDE_FAILS,
    DECIDE_HOLDS,
    DECIDE_OPEN,
    decide,
    instances_to_decide,
    median_interval,
    order_statistic_rank,
)


def _coverage(n: int, r: int) -> float:
    """P(x₍r₎ ≤ median < x₍n−r+1₎) by enumerating which side each draw falls on."""
    hits = 0
    for signs in product((0, 1), repeat=n):   # 1 = below the median
        below = sum(signs)
        hits += r <= below <= n - r
    return hits / 2 ** n


@pytest.mark.parametrize("n", range(1, 15))
def test_rank_is_the_largest_with_coverage_at_least_95(n):
    r, cover = order_statistic_rank(n)
    if r == 0:
        assert n <= 5 and _coverage(n, 1) < 0.95
        return
    assert cover == pytest.approx(_coverage(n, r)) and cover >= 0.95
    assert r + 1 > n - r or _coverage(n, r + 1) < 0.95


def test_interval_ends_and_small_samples():
    ci = median_interval([5, 1, 4, 2, 3, 6, 8, 7, 9, 10])
    assert ci.n == 10 and ci.median == 5.5 and (ci.low, ci.high) == (2.0, 9.0)
    small = median_interval([1.0, 2.0, math.nan])
    assert small.n == 2 and small.low == -math.inf and small.high == math.inf
    assert decide(small, 0.0) == DECIDE_OPEN
    assert median_interval([]).n == 0 and decide(median_interval([]), 1.0) == DECIDE_OPEN


def test_bracketed_observations_widen_the_interval():
    lo = np.arange(1.0, 9.0)
    ci = median_interval(lo, lo + 0.5)
    assert (ci.low, ci.high) == (1.0, 8.5) and ci.median == pytest.approx(np.median(lo + 0.25))


def test_decide_and_instances_to_decide():
    ci = median_interval(np.linspace(0.0, 1.0, 8))
    assert decide(ci, 1.0) == DECIDE_HOLDS and decide(ci, -0.1) == DECIDE_FAILS
    assert decide(ci, 1.0, holds_below=False) == DECIDE_FAILS
    assert decide(ci, 0.3) == DECIDE_OPEN
    near, far = instances_to_decide(ci, 0.45), instances_to_decide(ci, 0.1)
    assert near > far >= 6                       # closer to the threshold: more instances
    assert instances_to_decide(ci, ci.median) == math.inf
    # wide brackets: the distance counts from the threshold to the sample median's bracket
    # [median(lo), median(hi)], not to its middle, and never fewer than the 8 at hand + 1
    wide = median_interval(np.linspace(0.0, 0.07, 8), np.linspace(0.3, 0.6, 8))
    assert decide(wide, 0.02) == DECIDE_OPEN and instances_to_decide(wide, 0.02) > 9
    assert instances_to_decide(wide, 0.2) == math.inf      # inside the median's bracket


def test_undecided_text_gives_the_true_reason_when_no_count_is_estimated():
    """No number of instances would decide it: the text says why (the median on the threshold,
    the threshold inside the median's bracket, a one-sided bracket, too few instances)."""
    from deplbench.reports.median import undecided_text

    def why(ci, threshold):
        assert decide(ci, threshold) == DECIDE_OPEN and instances_to_decide(ci, threshold) == math.inf
        return undecided_text(ci, threshold)

    on = why(median_interval(np.linspace(0.0, 1.0, 9)), 0.5)
    assert on.endswith("no number of instances can be estimated: the median sits on the threshold")
    # one bracket has no finite upper end: the spread is NaN, the median's bracket lies above 0.02
    lo = np.linspace(0.0, 0.07, 8) + 0.05
    hi = lo + 0.02
    hi[-1] = math.inf
    lo[:2] = -0.01                                # the interval reaches below the threshold
    one = median_interval(lo, hi)
    assert one.median_low > 0.02 and math.isnan(one.spread)
    text = why(one, 0.02)
    assert "the spread is not computable, an instance's bracket being one-sided (upper end +∞)" in text
    assert "sits on the threshold" not in text
    # every upper end +∞: the median's bracket [m, ∞] contains the threshold
    all_inf = median_interval(np.linspace(-0.01, 0.03, 8), np.full(8, math.inf))
    text = why(all_inf, 0.02)
    assert "the sample median's bracket contains the threshold, a one-sided bracket (upper end +∞)" in text
    assert "sits on the threshold" not in text
    assert "with 1 distinct instance(s) there is no spread" in why(median_interval([0.01]), 0.02)


def test_bracketed_median_is_printed_as_a_bracket_not_a_midpoint():
    lo = np.array([0.04, 0.06, 0.08, 0.10, 0.10, 0.11, 0.14, 0.17, 0.21, 0.03])
    hi = lo + np.array([0.10, 0.09, 0.07, 0.11, 0.12, 0.11, 0.11, 0.11, 0.12, 0.11])
    ci = median_interval(lo, hi)
    assert ci.bracketed and ci.median_low == pytest.approx(np.median(lo))
    assert ci.median_high == pytest.approx(np.median(hi))
    txt = ci.text(100, " %")
    assert txt.startswith(f"within [{100 * np.median(lo):.2f} %, {100 * np.median(hi):.2f} %], interval [")
    assert f"{100 * 0.5 * (np.median(lo) + np.median(hi)):.2f} %" not in txt
    # the interval's level and method are printed, with the exact coverage at n = 10
    assert "≥ 95 % (exact 97.8 %) exact binomial order-statistic interval over 10 distinct instances" in txt


def test_point_median_text_states_level_and_method():
    ci = median_interval(np.linspace(1.0, 2.0, 8))
    assert not ci.bracketed
    assert ci.text() == ("1.50 [1.00, 2.00] (≥ 95 % (exact 99.2 %) exact binomial order-statistic interval "
                         "over 8 distinct instances)")
    assert "no 95 % order-statistic interval exists" in median_interval([1.0, 2.0]).text()
    neg = ci.negated()
    assert (neg.low, neg.high, neg.median_low, neg.median_high) == (-2.0, -1.0, -1.5, -1.5)


def test_exact_profiles_one_problem_per_instance_failures_infinite():
    import pandas as pd

    from deplbench.reports.data import STORE_COLUMNS, prepare
    from deplbench.reports.population import exact_profile_matrices, exact_profile_table
    from deplbench.reports.reference import plan_ratios
    from tests.reports.test_report_glance import _plan

    rows = []
    for i, (depl, best) in enumerate(((102.0, 100.0), (101.0, 110.0), (105.0, 120.0))):
        key = f"i{i}"
        rows.append(_plan("milp-exact", key, 100.0, reference="exact-static", status="optimal",
                          lower_bound=100.0, exact=True, quantile_oos=8.0))
        # two configurations of DepL on one instance: one problem
        rows += [_plan("depl", key, depl, status="feasible", quantile_oos=8.0, task_key=f"{key}-d{c}",
                       params={"eta": 200, "seed": c}) for c in range(2)]
        ev = {"exact_verdict": "proven infeasible"} if i == 0 else {"exact_verdict": "proven feasible"}
        rows.append(_plan("best-exp", key, best, status="feasible", quantile_oos=8.0, evaluation=ev))
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    mats = exact_profile_matrices(plan_ratios(df), df)
    m = mats["alexnet"]
    assert list(m.index) == ["i0", "i1", "i2"] and "milp-exact" not in m.columns
    assert m.loc["i0", "best-exp"] == np.inf              # cheaper but infeasible: a failure
    assert m.loc["i2", "depl"] == pytest.approx(1.05)
    tab = exact_profile_table(mats).set_index("algorithm")
    assert tab.loc["best-exp", "failures"] == 1 and tab.loc["depl", "instances"] == 3
    assert tab.loc["depl", "rho_at_1_05"] == pytest.approx(1.0)
    assert tab.loc["depl", "rho_at_1_01"] == pytest.approx(1 / 3)


def test_bracket_failures_lower_the_stated_level():
    from deplbench.reports.median import with_bracket_failures

    ci = median_interval(np.arange(1.0, 11.0), np.arange(1.5, 11.5))     # n = 10: 97.85 %
    assert with_bracket_failures(ci, np.zeros(10)) is ci                 # proven brackets: unchanged
    low = with_bracket_failures(ci, np.full(10, 0.05))                    # ten brackets at 95 % each
    assert low.level == pytest.approx(ci.level - 0.5)
    assert "≥ 47.8 % jointly, below 95 % (union bound" in low.text()
    ok = with_bracket_failures(ci, np.full(10, 0.001))
    assert ok.level == pytest.approx(ci.level - 0.01) and "below" not in ok.text()
    none = with_bracket_failures(ci, np.full(10, 0.2))                     # Σα = 2: the union bound says nothing
    assert none.level == 0.0 and "≥ 0.0 % jointly" in none.text()


def test_a_bracket_without_a_stated_confidence_leaves_the_level_not_computable():
    """A NaN failure probability is an unproven bracket, not a proven one: the
    union bound cannot be computed, the interval says so and decides nothing."""
    from deplbench.reports.claims_common import NO_LEVEL, median_verdict
    from deplbench.reports.median import level_caveat, undecided_text, with_bracket_failures

    ci = median_interval(np.arange(1.0, 11.0), np.arange(1.5, 11.5))     # n = 10: 97.85 %
    alphas = np.full(10, 0.001)
    alphas[3] = math.nan                                                  # one bracket states no confidence
    out = with_bracket_failures(ci, alphas)
    assert math.isnan(out.level) and (out.low, out.high) == (ci.low, ci.high)
    assert "level not computable: 1 of its 10 bracket(s) without a stated confidence" in out.text()
    # the interval lies wholly above 0.5, yet no verdict at an unknown level
    assert decide(ci, 0.5) == DECIDE_FAILS and decide(out, 0.5) == DECIDE_OPEN
    assert median_verdict(out, 0.5) == NO_LEVEL
    assert "not computable" in level_caveat(out) and "not computable" in undecided_text(out, 0.5)
    # every bracket stated: the union bound as before
    assert with_bracket_failures(ci, np.full(10, 0.001)).level == pytest.approx(ci.level - 0.01)


def test_a_one_sided_interval_rests_on_the_brackets_too():
    """Brackets without a positive lower bound have upper end +inf; the interval
    [x, ∞] still exists and holds only with every bracket (union bound)."""
    from deplbench.reports.median import with_bracket_failures

    lo = np.arange(1.0, 11.0)
    hi = np.where(lo > 7, math.inf, lo + 0.5)                          # three unbounded brackets
    ci = median_interval(lo, hi)
    assert ci.exists and math.isfinite(ci.low) and ci.high == math.inf
    assert "no 95 % order-statistic interval exists" not in ci.text()
    out = with_bracket_failures(ci, np.full(10, 0.05))
    assert out.level == pytest.approx(ci.level - 0.5) and "≥ 47.8 % jointly, below 95 %" in out.text()
    assert not median_interval([1.0, 2.0, 3.0]).exists                  # n < 6: no interval at all
