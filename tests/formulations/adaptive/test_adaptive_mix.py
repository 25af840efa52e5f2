"""The certified mix: the share given up at once is read from the certificate of the policy's own runs.

Checked against exact arithmetic (the share keeps (1 − q)·p_lo ≥ ω for the float q) and by coverage:
on many samples of a known law, the mix built from each sample is infeasible no more often than the
Clopper–Pearson level allows, and the tuning's prediction of the certified upper bound errs low
rarely.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from deplbench.formulations.adaptive.budget import predicted_ucb
from deplbench.formulations.adaptive.certify import certify_mix, cost_ucb, give_up_share
from deplbench.formulations.evaluation.binomial import clopper_pearson_lower


@pytest.mark.parametrize("omega", [0.5, 0.9, 0.99, 0.999, 0.999999, 1e-3])
def test_the_share_keeps_the_certified_level_in_exact_arithmetic(omega):
    rng = np.random.default_rng(5)
    lows = [np.nextafter(omega, 1.0), omega + 1e-15, *(omega + (1.0 - omega) * rng.random(300))]
    for p_lo in lows:
        q = give_up_share(float(p_lo), omega)
        assert 0.0 <= q < 1.0
        assert (1 - Fraction(q)) * Fraction(float(p_lo)) >= Fraction(omega)
        assert q == pytest.approx(1.0 - omega / p_lo, abs=2e-12)
    assert give_up_share(omega, omega) == 0.0 and give_up_share(omega / 2, omega) == 0.0


def test_a_share_read_from_the_runs_keeps_the_level():
    """2000 samples of 3000 runs of a policy with P(success) 0.995, ω = 0.99: the mix read from each
    sample succeeds with probability (1 − q)·0.995, below ω only when the Clopper–Pearson bound
    (level 0.975) exceeded 0.995 — at most 2.5 % of the samples, up to sampling noise. A share read
    from the point estimate instead (q = 1 − ω/p̂) would miss ω about half the time."""
    rng = np.random.default_rng(11)
    p, omega, n, trials = 0.995, 0.99, 3000, 2000
    miss = naive = 0
    for _ in range(trials):
        success = rng.random(n) < p
        q, p_lo, k, _, _ = certify_mix(success, np.ones(n), omega, 0.975, 1.0, 0.025)
        assert k == success.sum() and (q == 0.0 or p_lo >= omega)
        miss += (1.0 - q) * p < omega
        naive += (1.0 - give_up_share(k / n, omega)) * p < omega
    assert miss / trials <= 0.025 + 3.0 * np.sqrt(0.025 * 0.975 / trials)
    assert naive / trials > 0.3


def test_the_mix_scales_the_policys_cost_bound_by_one_minus_the_share():
    rng = np.random.default_rng(2)
    success = rng.random(5000) < 0.997
    cost = rng.uniform(0.0, 10.0, 5000)
    q, p_lo, k, mean, ucb = certify_mix(success, cost, 0.99, 0.975, 10.0, 0.025)
    cp = clopper_pearson_lower(k, 5000, 0.975)
    assert q > 0 and p_lo == 0.99 and (1 - q) * cp == pytest.approx(0.99)
    assert (mean, ucb) == (pytest.approx((1 - q) * cost.mean()), pytest.approx(cost_ucb(cost, 1 - q, 10.0, 0.025)[1]))
    # not certified: nothing given up, the bound below ω
    q0, lo0, _, mean0, _ = certify_mix(rng.random(5000) < 0.98, cost, 0.99, 0.975, 10.0, 0.025)
    assert q0 == 0.0 and lo0 < 0.99 and mean0 == pytest.approx(cost.mean())


def test_the_prediction_from_tuning_runs_errs_low_rarely():
    """The tuning's prediction of the certified upper bound (:func:`predicted_ucb`: two standard errors
    on the mean and on P(success)) against the bound a certification of the same law gives: below it
    in a few per cent of 400 trials, and within 3 % of it on average at these sample sizes."""
    rng = np.random.default_rng(8)
    omega, tune, runs, trials = 0.99, 2000, 4000, 400

    def sample(n):
        success = rng.random(n) < 0.996
        return success, np.where(success, rng.gamma(20.0, 5.0, n), rng.uniform(0.0, 50.0, n))

    low, ratio = 0, []
    for _ in range(trials):
        s, c = sample(tune)
        share = {"p_success": s.mean(), "cost_mean": c.mean(), "cost_sd": c.std(ddof=1), "cost_max": c.max(),
                 "runs": tune}
        pred = predicted_ucb(share, omega, runs, 0.025)
        s2, c2 = sample(runs)
        actual = certify_mix(s2, c2, omega, 0.975, 2.0 * c.max(), 0.025)[4]
        low += pred < actual
        ratio.append(pred / actual)
    assert low / trials <= 0.06
    assert 1.0 < np.mean(ratio) < 1.03
