"""The water-filling lower bound (formulations/adaptive/waterfill.py): valid in floating point, sharp.

Validity is checked against the independent exact optima of
``tests/formulations/adaptive/exact_lattice.py`` (fractions and 60-digit
decimals) on every law and scale at ω = the highest reachable P(success) —
where the unguarded priced search once pushed μ to ~10¹⁵ and its bound above
the optimum — at failure prices from 0.05 to 10¹⁵ times the priced search's.
The epoch's step is checked against a brute-force minimum over the time share.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive.waterfill import (
    envelope,
    epoch_support,
    lines,
    segments,
    tangent_terms,
    waterfill_pass,
)
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from tests.formulations.adaptive.exact_lattice import boundary_cases

RATIOS = [*np.geomspace(0.05, 20.0, 9), 1e6, 1e12, 1e15]


@pytest.mark.slow
def test_the_bound_never_exceeds_the_exact_optimum_at_any_failure_price_or_scale():
    cases = 0
    gaps = []
    for iw, _, opt in boundary_cases():
        ch = A.Chain(iw, 6, optimistic=True)
        pri = A.lower_bound_search(ch, iw.omega, 6, 6)
        mu0 = max(pri.best.mu, 1e-9)
        bounds = [waterfill_pass(ch, r * mu0, pri.best.lam).bound(iw.omega, ch.st.time_max) for r in RATIOS]
        assert max(bounds) <= opt, (iw.time_max, iw.omega, max(bounds), opt)
        gaps.append(((opt - max(bounds)) / opt, (opt - pri.bound()) / opt))
        cases += 1
    assert cases >= 40
    # and it is useful: on the whole closer to the optimum than the priced bound (up to 34 % below)
    wf, pr = np.mean(gaps, axis=0)
    assert wf < 0.5 * pr, (wf, pr)


def _brute(S_col: np.ndarray, nus: np.ndarray, a: float, nu: float) -> float:
    """min over a fine grid of t of A/t + L(ν(1 − t))/(1 − t), L the linear interpolation:
    at least the exact minimum (a grid), the reference the step must stay below."""
    t = np.concatenate([np.geomspace(1e-9, 0.5, 20001), 1.0 - np.geomspace(1e-9, 0.5, 20001)])
    return float(np.min(a / t + np.interp(nu * (1.0 - t), nus, S_col) / (1.0 - t)))


@pytest.mark.parametrize("seed", range(4))
def test_the_epoch_step_stays_below_the_least_over_the_time_share_and_close_to_it(seed):
    rng = np.random.default_rng(seed)
    J = 24
    nus = np.concatenate([[0.0], np.geomspace(1e-2, 1.0, J - 1)])
    # a concave support function through 0: the least of a few lines W + νG, G possibly negative
    W = rng.uniform(0.0, 3.0, 6)
    G = rng.uniform(-0.5, 1.0, 6)
    W[0], G[0] = 0.0, 1.0                                    # the stop
    S = np.min(W[:, None] + nus[None, :] * G[:, None], axis=0)
    a = float(rng.uniform(0.1, 2.0))
    out = epoch_support(S[None, :, None], nus, np.array([a]))[0, :, 0]
    assert out[0] == 0.0
    for i in range(1, J):
        ref = _brute(S, nus, a, nus[i])
        assert out[i] <= ref
        assert out[i] >= ref - 1e-6 * max(1.0, abs(ref))


def test_segments_lines_and_envelope_round_downwards_on_rough_input():
    """Non-concave input (as rounding may leave it) still gives values below the brute-force least."""
    rng = np.random.default_rng(7)
    J = 16
    nus = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, J - 1)])
    S = np.cumsum(rng.uniform(-0.2, 1.0, J)) * nus              # rough, through 0
    seg = segments(S[:, None], nus)
    out = envelope(*lines(seg, 0.7), nus)[:, 0]
    for i in range(1, J):
        assert out[i] <= _brute(S, nus, 0.7, nus[i])


def test_the_envelope_is_the_least_candidate_of_the_segments_below_each_slope():
    """envelope's value at ν_i is min over c < i of H_c + ν_i P_c, lowered by its rounding slack only,
    and no row c ≥ i enters it (an unusable row, H = inf, included)."""
    rng = np.random.default_rng(11)
    J, C = 20, 37
    nus = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, J - 1)])
    H = rng.uniform(0.0, 5.0, (J, C))
    P = rng.normal(0.0, 2.0, (J, C))
    H[rng.random((J, C)) < 0.1] = math.inf
    out = envelope(H, P, nus)
    ref = np.array([np.min(H[:i] + nus[i] * P[:i], axis=0) if i else np.zeros(C) for i in range(J)])
    finite = np.isfinite(ref)
    assert np.array_equal(np.isinf(out), ~finite)
    assert np.all(out[finite] <= ref[finite])
    assert np.all(out[finite] >= ref[finite] - 1e-12 * (1.0 + np.abs(ref[finite])))
    for i in (1, 7, J - 1):
        low = H.copy()
        low[i:] = -1e9                                           # rows of segments at or above ν_i
        assert np.array_equal(envelope(low, P, nus)[:i + 1], out[:i + 1])


def test_an_unusable_epoch_offers_nothing():
    nus = np.concatenate([[0.0], np.geomspace(1e-2, 1.0, 7)])
    S = np.minimum(nus, 0.5)
    out = epoch_support(S[None, :, None], nus, np.array([math.inf]))[0, :, 0]
    assert out[0] == 0.0 and np.all(np.isinf(out[1:]))


@pytest.mark.slow
@pytest.mark.parametrize("family, lam", [("alexnet", 5.0), ("pact-vgg11", 1.2)])
def test_the_communication_tangent_lies_below_an_epochs_money(family, lam):
    """A/d + b ≤ κc/(d − s) for every duration d > s of every (model, cluster), touching at the
    priced epoch's d₀ = c/x*(λ) + s with the capacity left out, x* = √(λc/κ), as the pass leaves it
    out (AlexNet: communication 0.1–1 time units an epoch; PACT-VGG11 at λ = 1.2: the capacity caps
    x* on some pairs)."""
    inst = generate("realistic", family=family, loss_max=9 if family == "alexnet" else 0.15)
    ch = A.Chain(inst, 20, optimistic=True)
    st = ch.st
    a, b = tangent_terms(ch, lam)
    kc, s = st.kappa[None, :] * st.compute, st.comm
    tc = st.compute / np.sqrt(lam * st.compute / st.kappa[None, :])
    assert np.all(s > 0)
    if family == "pact-vgg11":
        assert np.any(st.priced(lam)[1] > tc * 1.01)           # the capacity binds on some pair
    d = s[..., None] + np.geomspace(1e-3, 1e3, 400) * tc[..., None]
    money = kc[..., None] / (d - s[..., None])
    assert np.all(a[..., None] / d + b[..., None] <= money)
    np.testing.assert_allclose(a / (tc + s) + b, kc / tc, rtol=1e-12)


def test_the_tangent_stays_below_the_money_in_exact_arithmetic_at_extreme_magnitudes():
    """κ, c, s over 1e±150 and λ over 1e±300: every pair (A, b) as computed satisfies A/d + b ≤ κc/(d − s)
    exactly (fractions) at durations around its tangent point and near s — where κc·s/tc² underflows
    the pair must not keep a b that lost more than its margin covers."""
    from fractions import Fraction as Fr
    from types import SimpleNamespace

    rng = np.random.default_rng(5)
    checked = 0
    for trial in range(400):
        N = 8
        kappa, compute, comm = (10.0 ** rng.uniform(-150, 150, (1, N)) for _ in range(3))
        comm[0, 0] = 0.0
        lam = float(10.0 ** rng.uniform(-300, 300)) if trial % 7 else 0.0
        st = SimpleNamespace(kappa=kappa[0], compute=compute, comm=comm, usable=np.ones((1, N), bool))
        a, b = tangent_terms(SimpleNamespace(st=st), lam)
        for j in range(N):
            kc, s = Fr(float(kappa[0, j])) * Fr(float(compute[0, j])), Fr(float(comm[0, j]))
            with np.errstate(all="ignore"):
                tc = float(np.sqrt(kappa[0, j] * compute[0, j] / lam)) if lam > 0 else 0.0
            ds = [s + Fr(tc) * Fr(f) for f in (1e-3, 0.5, 1.0, 2.0, 1e3)] if 0 < tc < math.inf else []
            ds += [s + Fr(1, 10**6) * (s or 1), s + 1, 2 * s + 1]
            for d in ds:
                if d > s:
                    assert Fr(float(a[0, j])) / d + Fr(float(b[0, j])) <= kc / (d - s), (trial, j)
                    checked += 1
    assert checked > 20000


@pytest.mark.slow
def test_a_cluster_that_differs_only_in_capacity_leaves_the_pass_as_it_is():
    """The pass relaxes the capacity, so a copy of a cluster with a smaller r offers nothing new: its
    epochs share the cluster's tangent (one class), and the bound is the same to the last bit."""
    inst = generate("realistic", family="pact-vgg11", loss_max=0.15)
    one = json.loads(inst.to_json())
    one["clusters"] = one["clusters"][:1]
    two = dict(one, clusters=[one["clusters"][0], dict(one["clusters"][0], name="small", capacity=5.0)])
    chains = [A.Chain(parse_instance(d), 60, optimistic=True) for d in (one, two)]
    s = A.lower_bound_search(chains[0], inst.omega, 3, 3).best
    tc = chains[1].st.priced(s.lam)[1]
    assert np.all(tc[:, 1] > tc[:, 0])                          # the small r binds on every model
    p1, p2 = (waterfill_pass(ch, 0.6 * s.mu, s.lam) for ch in chains)
    assert (p1.value, p1.eta) == (p2.value, p2.eta)


@pytest.mark.slow
def test_on_pact_vgg11_it_gains_on_the_priced_bound_of_the_same_grid():
    inst = generate("realistic", family="pact-vgg11", loss_max=0.3)
    ch = A.Chain(inst, 150, optimistic=True)
    s = A.lower_bound_search(ch, inst.omega)
    w = waterfill_pass(ch, 0.6 * s.best.mu, s.best.lam).bound(inst.omega, ch.st.time_max)
    assert w > s.bound() * 1.005


def test_bad_arguments_are_refused_with_the_field_named():
    inst = generate("realistic", family="pact-vgg11", loss_max=0.3)
    ch = A.Chain(inst, 20, optimistic=True)
    with pytest.raises(ValueError, match="mu"):
        waterfill_pass(ch, 0.0, 1.0)
    with pytest.raises(ValueError, match="slopes"):
        waterfill_pass(ch, 1.0, 1.0, slopes=4, span=1e6)
