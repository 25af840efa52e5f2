"""The discrete laws (Empirical, PointMass) are hashable frozen models like
every other law, and their sf/pdf answer without the SciPy law cache; every
law's tails, and the SciPy-free bound on them that validation relies on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from deplbench.instances.distributions import (
    MIN_STUDENT_DF,
    Empirical,
    InverseGamma,
    LogNormal,
    Normal,
    PointMass,
    StudentT,
)
from deplbench.instances.model import parse_instance
from tests.instance_data import base_instance


def test_empirical_is_hashable_and_equal_laws_hash_alike():
    a, b = Empirical(samples=[1.0, 2.0, 2.0]), Empirical(samples=(1.0, 2.0, 2.0))
    assert a == b and hash(a) == hash(b) and len({a, b, Normal(mean=0.0, std=1.0)}) == 2
    assert a.samples == (1.0, 2.0, 2.0)
    assert a.model_dump_json() == '{"kind":"empirical","samples":[1.0,2.0,2.0]}'


def test_empirical_sf_is_the_share_above_and_pdf_is_refused():
    e = Empirical(samples=[3.0, 1.0, 2.0, 2.0])
    x = np.array([0.0, 1.0, 1.5, 2.0, 3.0])
    np.testing.assert_array_equal(e.sf(x), [1.0, 0.75, 0.75, 0.25, 0.0])
    np.testing.assert_allclose(e.sf(x) + e.cdf(x), 1.0)
    with pytest.raises(ValueError, match="no density"):
        e.pdf(1.0)


def test_point_mass_sf_and_pdf():
    p = PointMass(value=2.0)
    np.testing.assert_array_equal(p.sf(np.array([1.0, 2.0, 3.0])), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="no density"):
        p.pdf(2.0)


def test_an_instance_with_an_empirical_law_round_trips_and_hashes():
    data = base_instance()
    data["models"][0]["improvement"] = {"kind": "empirical", "samples": [0.5, 1.0, 1.5]}
    inst = parse_instance(data)
    law = inst.models[0].improvement
    assert hash(law) == hash(Empirical(samples=[0.5, 1.0, 1.5]))
    again = inst.with_changes(omega=inst.omega)
    assert again.models[0].improvement == law and again.to_json() == inst.to_json()


# A spread of parameters for each continuous kind: light and heavy tails,
# tiny and huge scales, and the shapes/df around the moments' thresholds.
_SPREAD = (1e-30, 1e-3, 0.5, 1.0, 2.0, 2.5, 4.0, 30.0, 1e6, 1e300)
TAIL_LAWS = (
    [InverseGamma(shape=a, scale=b) for a in _SPREAD for b in (1e-3, 1.0, 1e6)]
    + [StudentT(df=df, loc=loc, scale=s) for df in (MIN_STUDENT_DF,) + tuple(d for d in _SPREAD if d >= MIN_STUDENT_DF)
       for loc, s in ((0.0, 1.0), (-3.0, 0.05), (1e10, 1e3))]
    + [Normal(mean=m, std=s) for m in (0.0, -1e14) for s in (1e-3, 1.0, 1e13, 1e308)]
    + [LogNormal(mu=m, sigma=s) for m in (-5.0, 0.0, 30.0) for s in (0.01, 1.0, 4.0, 100.0)]
)


def test_tail_bound_holds_for_every_computed_tail():
    # The binary64 check accepts a law on its bound alone: a bound below a
    # computed tail would accept a law whose tails break the line.
    bounded = 0
    for law in TAIL_LAWS:
        lo, hi = law.tails(1e-9)
        assert lo <= hi, law
        bound = law.tail_bound(1e-9)
        assert bound >= 0, law
        if math.isfinite(lo) and math.isfinite(hi):
            assert bound >= max(abs(lo), abs(hi)), law
        bounded += math.isfinite(bound)
    assert bounded >= len(TAIL_LAWS) // 2   # the bound is not just inf


def test_tails_are_the_ppf_and_the_bound_clears_the_papers_laws():
    X = InverseGamma.from_moments(mean=1.02, var=0.031)     # Table I, AlexNet fast-unsteady
    J = StudentT(df=4.0, loc=0.2, scale=0.05)
    for law in (X, J, Normal(mean=1.0, std=0.3), LogNormal(mu=0.1, sigma=0.2)):
        assert law.tails(1e-9) == tuple(float(v) for v in law.ppf([1e-9, 1 - 1e-9]))
        lo, hi = law.tails(1e-9)
        # Markov/Chebyshev for the t is loose (~130x here) but far below the ±1e15 line
        assert max(abs(lo), abs(hi)) <= law.tail_bound(1e-9) <= 1000 * max(abs(lo), abs(hi))


def test_an_atomic_laws_tails_are_its_extreme_atoms_at_any_level():
    e = Empirical(samples=[float(v) for v in range(-3, 2_000_000, 1000)])
    for p in (1e-9, 1e-5, 0.25):
        assert e.tails(p) == (-3.0, 1_999_997.0) and e.tail_bound(p) == 1_999_997.0
    assert PointMass(value=-2.5).tails(0.1) == (-2.5, -2.5) and PointMass(value=-2.5).tail_bound(0.1) == 2.5


@pytest.mark.parametrize("df", [1e-300, 1e-3, 0.1, 0.124])
def test_student_t_below_the_df_floor_is_refused_naming_df(df):
    # SciPy's t.ppf returns finite, wrong quantiles there (6.7e3 at df = 1e-300 for every p ≤ 0.01)
    with pytest.raises(ValidationError) as err:
        StudentT(df=df, scale=1.0)
    assert err.value.errors()[0]["loc"] == ("df",) and f"{MIN_STUDENT_DF:g}" in str(err.value)


@pytest.mark.parametrize("df", [MIN_STUDENT_DF, 0.3, 1.0, 4.0, 1e6])
def test_student_t_quantiles_are_exact_from_the_df_floor_on(df):
    # the floor's promise: t.cdf(t.ppf(p)) = p for every tail mass down to 1e-16
    law = StudentT(df=df, scale=1e-300)
    p = np.logspace(-16, np.log10(0.5), 60)
    q = np.asarray(law.ppf(p))
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(law.cdf(q), p, rtol=1e-12)
    np.testing.assert_allclose(law.sf(-q), p, rtol=1e-12)
