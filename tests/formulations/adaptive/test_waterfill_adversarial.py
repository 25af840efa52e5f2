"""Adversarial checks of the water-filling lower bound (formulations/adaptive/waterfill.py).

Every check compares the bound with a value it must not exceed:

* the exact optimum of ``tests/formulations/adaptive/exact_lattice.py`` (no
  communication time) at extreme scales (κ 10⁻⁶…10⁶, Tmax 10⁻³…10⁴), failure
  prices 10⁻¹² to 10¹⁸ in absolute terms and 0.05 to 10¹⁵ times the priced
  search's, tangent prices 10⁻⁶ to 10⁶ times the priced one's, 16 and 1024
  slopes;
* with communication time s > 0 (model size > 0, which the exact solver ignores):
  the exact optimum without it at the deadline Tmax − K̄·s. Every such policy,
  each epoch given s more, meets Tmax, so that value is at least the true optimum
  (equal to it at K̄ = 1); with a second cluster, each cluster's own such value;
* a free cluster (κ = 0): the optimum is 0.

The last tests reproduce defects found in review (a usable pair dropped where
the tangent price made its tangent non-finite; a bad tangent price accepted; NaN
bounds at extreme failure prices) and keep them fixed.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive.waterfill import epoch_support, waterfill_pass
from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.instances.model import parse_instance
from tests.formulations.adaptive.exact_lattice import LAWS, exact_front, exact_optimum, lattice


def _cases(kappa, time_max, cap=1e12, horizon=None, size=0.0, extra_clusters=(), switches=True):
    """Each law at ω = its highest reachable P(success) and 1/8 below: (instance, ω as a fraction).

    ``size`` gives both models that communication time (bandwidth 1); ``extra_clusters``
    are appended after the lattice's single cluster."""
    for a, b, k in LAWS:
        d = lattice(a, b, k if horizon is None else horizon, kappa, time_max, cap)
        for m in d["models"]:
            m["size"] = size
        d["clusters"] += [dict(c) for c in extra_clusters]
        if not switches:
            d["switches"] = []
        inst = parse_instance(d)
        pmax = max(p for p, _ in exact_front(inst))
        for w in (pmax, pmax - Fraction(1, 8)):
            if w > 0:
                yield inst.with_changes(omega=float(w)), w


def _reference(inst, w, deadline_cut=0.0):
    """The exact optimum of the lattice solver (cluster 0, no communication) with the relaxed
    deadline Tmax(1 + TIME_RTOL) shortened by ``deadline_cut``; None when ω is unreachable."""
    opt = exact_optimum(inst, w)
    if opt is None:
        return None
    tau = Decimal(float(inst.time_max)) * (1 + Decimal(TIME_RTOL))
    return float(opt * tau / (tau - Decimal(deadline_cut)))


def _priced(ch, omega):
    pri = A.lower_bound_search(ch, omega, 6, 6)
    return max(pri.best.mu, 1e-9 * ch.st.cost_scale()), pri.best.lam


def _bound(ch, mu, lam, slopes=64):
    return waterfill_pass(ch, mu, lam, slopes=slopes).bound(ch.instance.omega, ch.st.time_max)


@pytest.mark.slow
@pytest.mark.parametrize("kappa, time_max", [(1e-6, 1e-3), (1e6, 1e-3), (1e-6, 1e4), (1e6, 1e4)])
def test_never_above_the_exact_optimum_at_extreme_scales_prices_and_slopes(kappa, time_max):
    gaps = []
    for inst, w in _cases(kappa, time_max):
        opt = _reference(inst, w)
        if opt is None:
            continue
        ch = A.Chain(inst, 6, optimistic=True)
        mu0, lam0 = _priced(ch, inst.omega)
        best = max(_bound(ch, r * mu0, lam0 * f, 16) for r in (0.05, 0.3, 0.6, 1.0, 3.0, 1e6, 1e15)
                   for f in (1e-6, 1.0, 1e6))
        best = max(best, _bound(ch, 0.6 * mu0, lam0, 1024), _bound(ch, mu0, lam0, 1024))
        assert best <= opt, (inst.models[0].improvement, inst.time_max, inst.omega, best, opt)
        gaps.append((opt - best) / opt)
    assert len(gaps) >= 10
    # the comparison has teeth: on some case the bound is within 10⁻⁶ of the optimum
    assert min(gaps) < 1e-6, min(gaps)


@pytest.mark.slow
def test_never_above_the_exact_optimum_at_absolute_failure_prices_from_1e_minus_12_to_1e18():
    n = 0
    for inst, w in _cases(1.0, 50.0):
        opt = _reference(inst, w)
        if opt is None:
            continue
        ch = A.Chain(inst, 6, optimistic=True)
        lam0 = A.lam_guess(ch)
        for mu in (1e-12, 1e-6, 1.0, 1e6, 1e12, 1e18):
            for f in (1e-12, 1.0, 1e12):
                b = _bound(ch, mu, lam0 * f, 16)
                assert b <= opt, (inst.omega, mu, lam0 * f, b, opt)
                n += 1
    assert n >= 200


@pytest.mark.slow
@pytest.mark.parametrize("share", [0.01, 0.3])
def test_with_communication_time_never_above_the_optimum_at_the_deadline_less_the_runs_communication(share):
    """s = share·Tmax/K̄. At K̄ = 1 the reference is the true optimum (every run trains at most once)."""
    tight = []
    for horizon in (1, None):
        for kappa, tm in ((1.0, 50.0), (1e-3, 1e3)):
            for inst, w in _cases(kappa, tm, horizon=horizon, size=share * tm / (horizon or 4)):
                s = float(inst.models[0].size)
                ref = _reference(inst, w, inst.horizon * s)
                if ref is None:
                    continue
                ch = A.Chain(inst, 6, optimistic=True)
                assert np.all(ch.st.comm == s)
                mu0, lam0 = _priced(ch, inst.omega)
                best = max(_bound(ch, r * mu0, lam0 * f) for r in (0.05, 0.3, 0.6, 1.0, 3.0, 1e6)
                           for f in (1e-3, 1.0, 1e3))
                assert best <= ref, (inst.horizon, s, inst.omega, best, ref)
                if inst.horizon == 1:
                    tight.append((ref - best) / ref)
    assert tight and min(tight) < 1e-6, tight


@pytest.mark.slow
def test_with_two_clusters_differing_in_price_and_bandwidth_never_above_either_clusters_own_optimum():
    """Cluster B is cheaper but slower to reach (bandwidth 0.25): neither dominates; any policy on
    one cluster alone, at the deadline less its runs' communication, bounds the optimum from above."""
    tm, s = 50.0, 1.0
    slow = {"name": "B", "capacity": 1e3, "unit_cost": 0.5, "bandwidth": 0.25}
    n = 0
    for inst, w in _cases(1.0, tm, size=s, extra_clusters=[slow]):
        ref_a = _reference(inst, w, inst.horizon * s)
        if ref_a is None:
            continue
        # cluster B alone: W scales with κ (0.5), the communication is s/0.25
        tau = Decimal(tm) * (1 + Decimal(TIME_RTOL))
        ref_b = float(exact_optimum(inst, w) * tau * Decimal(0.5) / (tau - Decimal(inst.horizon * 4 * s)))
        ch = A.Chain(inst, 6, optimistic=True)
        mu0, lam0 = _priced(ch, inst.omega)
        best = max(_bound(ch, r * mu0, lam0 * f) for r in (0.05, 0.3, 0.6, 1.0, 3.0, 1e6) for f in (1e-2, 1.0, 1e2))
        assert best <= min(ref_a, ref_b), (inst.omega, best, ref_a, ref_b)
        n += 1
    assert n >= 6


def test_a_free_cluster_gives_a_bound_of_at_most_zero_at_any_price():
    """κ = 0 on a second cluster: the optimum is 0 (A = 0, b = 0 there); at ω = the highest
    P(success) the bound's two terms cancel exactly, so only the rounding keeps it below 0."""
    free = {"name": "F", "capacity": 1e3, "unit_cost": 0.0, "bandwidth": 1.0}
    for inst, _ in list(_cases(1.0, 50.0, extra_clusters=[free]))[:4]:
        ch = A.Chain(inst, 6, optimistic=True)
        for mu in (1e-12, 1.0, 1e9, 1e18):
            for lam in (1e-9, 1e9):
                b = _bound(ch, mu, lam, 16)
                assert b <= 0.0, (inst.omega, mu, lam, b)


def test_no_switches_and_a_dominated_cluster_never_above_the_exact_optimum():
    dear = {"name": "D", "capacity": 1e3, "unit_cost": 2.0, "bandwidth": 1.0}
    n = 0
    for inst, w in list(_cases(1.0, 50.0, extra_clusters=[dear], switches=False))[:6]:
        opt = _reference(inst, w)          # cluster A alone: D is dearer and no faster
        if opt is None:
            continue
        ch = A.Chain(inst, 6, optimistic=True)
        assert not ch.kj
        mu0, lam0 = _priced(ch, inst.omega)
        b = max(_bound(ch, r * mu0, lam0, 16) for r in (0.3, 0.6, 1.0, 1e6))
        assert b <= opt, (inst.omega, b, opt)
        n += 1
    assert n >= 3


# --------------------------------------------------------------------------
# defects found in review (fixed; these keep them fixed)
# --------------------------------------------------------------------------


def _first_case(kappa=1.0, time_max=50.0, compute_factor=1.0, cap=1e3):
    a, b, k = LAWS[0]
    d = lattice(a, b, k, kappa, time_max, cap)
    for m in d["models"]:
        m["compute"] *= compute_factor
    inst = parse_instance(d)
    pmax = max(p for p, _ in exact_front(inst))
    inst = inst.with_changes(omega=float(pmax))
    return inst, float(exact_optimum(inst, pmax))


def test_a_zero_tangent_price_on_a_large_compute_need_stays_below_the_optimum():
    # κc = 2 and 1 as in the lattice (compute ×10⁹, κ = 10⁻⁹), capacity far above any allocation
    inst, opt = _first_case(kappa=1e-9, compute_factor=1e9, cap=1e15)
    ch = A.Chain(inst, 6, optimistic=True)
    assert _bound(ch, 1e3, 0.0, 16) <= opt


@pytest.mark.parametrize("lam", [-1.0, math.nan])
def test_a_bad_tangent_price_is_refused_with_the_field_named(lam):
    inst, _ = _first_case()
    ch = A.Chain(inst, 6, optimistic=True)
    with pytest.raises(ValueError, match="lam"):
        waterfill_pass(ch, 1.0, lam)


@pytest.mark.parametrize("nu_star", [1e-321, 5e307])
def test_the_bound_is_never_nan(nu_star):
    inst, _ = _first_case()
    ch = A.Chain(inst, 6, optimistic=True)
    try:
        with np.errstate(all="ignore"):
            b = _bound(ch, nu_star / ch.st.time_max, 0.0032, 16)
    except ValueError:
        return                                  # refused with a message: as good as a number
    assert not math.isnan(b)



def _exact_least(col: np.ndarray, nus: np.ndarray, a: float, i: int) -> Decimal:
    """inf over t ∈ (0, 1) of A/t + L(ν(1 − t))/(1 − t), L the linear interpolation of ``col`` at
    ``nus`` and ν = nus[i], in 50-digit decimals: per segment c < i (the line y + Dν′ of its end
    points, u = 1 − t with ν·u on it) f(u) = A/(1 − u) + y/u + νD, convex for y > 0 (least at
    u* = √y/(√A + √y) clipped to the segment) and increasing in u for y ≤ 0 (least at its left end)."""
    getcontext().prec = 50
    nu, A_ = Decimal(float(nus[i])), Decimal(float(a))
    best = None
    for c in range(i):
        n0, n1 = Decimal(float(nus[c])), Decimal(float(nus[c + 1]))
        s0, s1 = Decimal(float(col[c])), Decimal(float(col[c + 1]))
        slope = (s1 - s0) / (n1 - n0)
        y = s0 - n0 * slope
        lo, hi = n0 / nu, min(n1, nu) / nu
        if y > 0:
            u = min(max(y.sqrt() / (A_.sqrt() + y.sqrt()), lo), hi)
        else:
            u = lo
        v = A_ / (1 - u) + (y / u if u > 0 else Decimal(0)) + nu * slope
        best = v if best is None else min(best, v)
    assert best is not None
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_epoch_step_is_below_the_exact_least_over_the_time_share_to_the_last_bit(seed):
    """Against the exact least in 50-digit decimals (not a grid of t): rough, partly negative input
    (G < 0 where b < 0, as with communication time; non-concave, as rounding may leave it), near
    linear input (the slopes' differences cancel), A from 10⁻⁸ to 10⁸ times the values, the slopes
    at the default ratio or ten times apart (the step does not rest on exact slope differences)."""
    rng = np.random.default_rng(seed)
    for ratio_span, J in ((1e3, 16), (1e6, 7)):
        nus = np.concatenate([[0.0], np.geomspace(1.0 / ratio_span, 1.0, J - 1)]) * 10.0 ** rng.uniform(-6, 6)
        scale = 10.0 ** rng.uniform(-6, 6)
        rough = np.cumsum(rng.uniform(-1.0, 1.0, J)) * nus * scale
        near_linear = (0.7 + 1e-12 * rng.standard_normal(J)) * nus * scale
        concave = np.min(rng.uniform(0.0, 2.0, 5)[:, None] * scale * nus[-1]
                         + nus[None, :] * rng.uniform(-0.5, 1.0, 5)[:, None] * scale, axis=0)
        for col in (rough, near_linear, np.minimum(concave, nus * scale)):
            col = col.copy()
            col[0] = 0.0
            for a in np.array([1e-8, 1e-2, 1.0, 1e2, 1e8]) * scale * nus[-1]:
                out = epoch_support(col[None, :, None], nus, np.array([a]))[0, :, 0]
                assert out[0] == 0.0
                for i in range(1, J):
                    assert Decimal(float(out[i])) <= _exact_least(col, nus, a, i), (a, i)
