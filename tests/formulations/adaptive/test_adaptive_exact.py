"""The adaptive bracket against an independent exact solver of tiny instances
(:mod:`tests.formulations.adaptive.exact_lattice`: any closed-loop policy,
continuous allocations, the deadline on every run, in exact arithmetic)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from deplbench.formulations import adaptive as A
from deplbench.instances.model import parse_instance
from tests.formulations.adaptive.exact_lattice import LAWS, SCALES, boundary, exact_front, exact_optimum, lattice


@pytest.mark.parametrize("law", LAWS, ids=[f"law{i}" for i in range(len(LAWS))])
def test_lower_bound_below_the_exact_optimum_at_the_boundary_omega(law):
    """ω = the highest reachable P(success), exactly: LB ≤ the exact optimum at every
    scale, LB is finite and positive, and the search does not run μ away."""
    a, b, horizon = law
    for kappa, tm in SCALES:
        inst, pmax = boundary(a, b, horizon, kappa, tm)
        opt = exact_optimum(inst, pmax)
        assert opt is not None and opt > 0
        s = A.lower_bound_search(A.Chain(inst, 6, optimistic=True), inst.omega, 6, 6)
        lb = s.bound()
        assert math.isfinite(lb) and lb > 0, (law, kappa, tm, lb)
        assert Decimal(lb) <= opt, (law, kappa, tm, lb, float(opt))
        # every pass, and the frontier at every level, is a bound too
        for w in A.frontier_levels(inst.omega):
            o = exact_optimum(inst, w)
            assert o is None or Decimal(s.bound(w)) <= o
        assert s.best.mu < 1e12 * max(1.0, float(opt))


def test_lower_bound_is_tight_where_the_relaxations_are():
    """Where one epoch decides (K̄ = 2, first law), the chain is exact and the
    deadline relaxation costs nothing: the bound meets the exact optimum to 10⁻⁹
    — the subtracted rounding bound is not vacuous."""
    for kappa, tm in SCALES:
        inst, pmax = boundary(*LAWS[0], kappa, tm)
        opt = float(exact_optimum(inst, pmax))
        lb = A.lower_bound_search(A.Chain(inst, 6, optimistic=True), inst.omega, 6, 6).bound()
        assert opt * (1 - 1e-9) <= lb <= opt


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0.0, 0.5, 2.0])
def test_lower_bounds_below_the_exact_optimum_with_a_decaying_run_term(offset):
    """Eq. (8)'s 1/√(k + B) decay: the chain's kernels change with the epoch, the loss leaves
    the lattice, and the exact solver works in 60-digit decimals. Priced and carried bounds,
    on three grids, at the highest reachable level and at 1/2 (where reachable), stay below the
    exact optimum."""
    best = 0.0
    for a, b, horizon in (LAWS[0][:2] + (3,), LAWS[5]):
        d = lattice(a, b, horizon, 1.0, 50.0)
        for m in d["models"]:
            m["decay"], m["loss_offset"] = "inv_sqrt", offset
        inst = parse_instance(d)
        front = exact_front(inst)
        pmax = max(p for p, _ in front)
        for w in sorted({pmax, min(pmax, Fraction(1, 2))}):
            assert 0 < w < 1 and Fraction(float(w)) == w            # dyadic: exact in binary
            opt = exact_optimum(inst, w)
            iw = inst.with_changes(omega=float(w))
            for buckets in (6, 24, 96):
                chain = A.Chain(iw, buckets, optimistic=True)
                priced = A.lower_bound_search(chain, iw.omega, 6, 6).bound()
                carried = A.timed_search(chain, iw.omega, 32).bound()
                for lb in (priced, carried):
                    assert math.isfinite(lb) and Decimal(lb) <= opt, (a, b, offset, w, buckets, lb, float(opt))
                    best = max(best, lb / float(opt))
    assert best >= 0.9           # and not vacuous: somewhere within 10 % of the optimum


@pytest.mark.slow
@pytest.mark.parametrize("law", LAWS, ids=[f"law{i}" for i in range(len(LAWS))])
def test_bracket_end_to_end_below_the_exact_optimum_at_the_boundary_omega(law):
    """:func:`adaptive_bounds` as users call it — the refinement over four grids, the
    deadline carried where affordable and priced, the best pass reported — at ω = the
    highest reachable P(success), at the smallest and the largest scale: LB ≤ the exact
    optimum, and LB is the best bound of every grid computed, to the rounding bound a
    finer grid's pass carries (a finer grid may afford fewer time points, so its carried
    bound can be lower by a few per cent)."""
    for kappa, tm in (SCALES[0], SCALES[2]):
        inst, pmax = boundary(*law, kappa, tm)
        opt = exact_optimum(inst, pmax)
        b = A.adaptive_bounds(inst, buckets=6, runs=500, tune_runs=500, seed=1, width=0.01, max_buckets=48)
        assert [lv["buckets"] for lv in b.refinement["levels"]] == [6, 12, 24, 48]
        assert math.isfinite(b.lower_bound) and 0 < Decimal(b.lower_bound) <= opt, (law, kappa, tm)
        assert b.lower_bound >= (1 - 1e-9) * max(lv["lower_bound"] for lv in b.refinement["levels"])
        assert b.lower_bound >= 0.95 * float(opt)                    # and not vacuous


def test_large_capacity_gives_a_finite_valid_bound():
    """r = 10⁶: the λ search brackets from a capacity-free first guess."""
    inst, pmax = boundary(*LAWS[1], 1.0, 50.0, cap=1e6)
    s = A.lower_bound_search(A.Chain(inst, 6, optimistic=True), inst.omega, 6, 6)
    opt = float(exact_optimum(inst, pmax))
    assert s.lam_converged
    assert 0.5 * opt <= s.bound() <= opt


def test_fft_error_bound_covers_the_rounding():
    """:func:`correlate`'s error bound against the correlation in exact arithmetic,
    with values of 10¹⁵ (a runaway failure price) beside values of 1."""
    rng = np.random.default_rng(5)
    L1, P = 40, 9
    f = np.empty((2, 2, L1))
    f[:, 0] = rng.uniform(0, 1e15, size=(2, L1))
    f[:, 1] = rng.uniform(0, 1, size=(2, L1))
    ks = []
    for _ in range(2):
        p = rng.dirichlet(np.ones(P))
        ks.append(A.Kernel(-5, p))
    top = np.array([3e15, 1.0])
    out, err, mass = A.correlate(f, ks, top, with_error=True)
    for r, k in enumerate(ks):
        for q in range(2):
            for i in range(L1):
                exact = Fraction(0)
                for t, pt in enumerate(k.p):
                    j = i + k.lo + t
                    v = f[r, q, 0] if j < 0 else (top[q] if j >= L1 else f[r, q, j])
                    exact += Fraction(float(pt)) * Fraction(float(v))
                assert abs(Fraction(float(out[r, q, i])) - exact) <= Fraction(float(err[r, q]))
    assert np.all(err[:, 0] < 1e15 * 1e-11)                 # and not vacuous
    assert mass == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("law", [LAWS[0], LAWS[1], LAWS[5]], ids=["law0", "law1", "law5"])
def test_upper_bound_above_the_exact_optimum(law):
    """The UB (one-sided empirical-Bernstein bound on the certified policy's mean
    cost) is ≥ the exact optimum at the level its P(success) is certified at —
    hence ≥ the optimum at ω when certified — at two scales, ω a step below the
    highest reachable P(success)."""
    for kappa, tm in (SCALES[0], SCALES[2]):
        inst, pmax = boundary(*law, kappa, tm)
        inst = inst.with_changes(omega=float(pmax - Fraction(1, 8)))
        b = A.adaptive_bounds(inst, buckets=6, runs=3000, tune_runs=1500, seed=2)
        assert b.status == "certified", b.message
        assert b.certified and b.p_success_lo >= inst.omega
        opt = exact_optimum(inst, Fraction(b.p_success_lo))
        assert Decimal(b.upper_bound) >= opt >= exact_optimum(inst, inst.omega)
        assert Decimal(b.lower_bound) <= exact_optimum(inst, inst.omega)
        assert b.upper_bound >= b.cost_mean and b.confidence == 0.95


def test_unreachable_target_has_its_status_and_line():
    inst, pmax = boundary(*LAWS[0], 1.0, 50.0)
    inst = inst.with_changes(omega=float(pmax + Fraction(1, 64)))
    assert exact_optimum(inst, inst.omega) is None                # truly out of reach
    b = A.adaptive_bounds(inst, buckets=6, runs=500, tune_runs=500)
    assert b.status == "unreachable" and not b.certified
    assert b.message == ("no policy reaches P(success) ≥ ω = 0.765625: the optimistic chain's best is 0.75 "
                         "(deadline and cost ignored; 6 loss buckets)")
    assert b.lower_bound == math.inf and b.work["dp_passes"] == 0
    # at ω = the best itself it is reachable: not this status
    inst2 = inst.with_changes(omega=float(pmax))
    assert A.adaptive_bounds(inst2, buckets=6, runs=500, tune_runs=500).status != "unreachable"


def test_a_best_just_below_omega_is_printed_below_it(monkeypatch):
    """ω = 0.99 and an optimistic best P(success) of 0.98999999: six significant digits
    would print "best is 0.99" beside ω = 0.99; the line prints a number visibly below ω."""
    from deplbench.formulations.adaptive import bracket
    from deplbench.jsonio import number_beside

    inst = boundary(*LAWS[0], 1.0, 50.0)[0].with_changes(omega=0.99)
    monkeypatch.setattr(bracket, "best_success", lambda chain: (0.98999999, 0.0))
    b = A.adaptive_bounds(inst, buckets=6, runs=500, tune_runs=500)
    assert b.status == "unreachable"
    assert "ω = 0.99: the optimistic chain's best is 0.98999999 (deadline" in b.message
    # the helper keeps the order of value and threshold, with no more digits than that needs
    for v, w in ((0.98999999, 0.99), (0.9899999999999, 0.99), (0.990000001, 0.99), (1 - 1e-12, 1 - 1e-13),
                 (0.989999995, 0.98999999), (4.0000001, 4.0)):
        shown = float(number_beside(v, w))
        assert (shown < w, shown == w, shown > w) == (v < w, v == w, v > w), (v, w)
    assert number_beside(0.75, 0.99) == "0.75" and number_beside(0.123456789, 0.9) == "0.123457"
    assert number_beside(0.99, 0.99) == "0.99" and number_beside(0.98765, 0.99, 4) == "0.9877"


def test_memory_and_run_counts_refused_before_allocation():
    from deplbench.errors import PlanError
    from deplbench.instances.generators import generate
    from deplbench.limits import MemoryLimitExceeded, memory_budget

    vgg = generate("realistic", family="pact-vgg11", loss_max=0.3)
    for kw in ({"buckets": 10**9}, {"buckets": 10**7}):
        with pytest.raises(MemoryLimitExceeded, match="adaptive-opt's loss grid and runs"):
            A.adaptive_bounds(vgg, **kw)
    with pytest.raises(PlanError, match=r"^runs: must be <= 1000000, got 10000000000"):     # a count beyond MAX_RUNS
        A.adaptive_bounds(vgg, runs=10**10)
    # the runs' share of the estimate: 10^6 runs pass a budget that 10^5 fit in
    assert A.memory_estimate(vgg, 600, 100_000, 50_000) < 0.05 * 2**30 < A.memory_estimate(vgg, 600, 10**6, 50_000)
    with memory_budget(0.05), pytest.raises(MemoryLimitExceeded, match="adaptive-opt's loss grid and runs"):
        A.adaptive_bounds(vgg, buckets=600, runs=10**6)
    assert A.memory_estimate(vgg, 9600, 100_000, 50_000) < 2**30
    with memory_budget(1e-3), pytest.raises(MemoryLimitExceeded, match="memory budget 0.001 GiB"):
        A.adaptive_bounds(vgg, buckets=600)


def test_cli_unreachable_target_one_line_and_exit_1(tmp_path, capsys):
    import json

    from deplbench.cli import main

    inst, pmax = boundary(*LAWS[0], 1.0, 50.0)
    path = tmp_path / "far.json"
    inst.with_changes(omega=0.8).save(path)
    assert main(["adaptive", str(path), "--buckets", "6", "--runs", "500", "--tune-runs", "500", "--json"]) == 1
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert d["status"] == "unreachable" and d["lower_bound"] is None and d["width"] is None
    err = cap.err.strip().splitlines()
    assert err == ["adaptive: unreachable: no policy reaches P(success) ≥ ω = 0.8: the optimistic chain's best is "
                   "0.75 (deadline and cost ignored; 6 loss buckets)"]


def test_unreachable_loss_target():
    """ℓmax out of reach within K̄ epochs: the same status, best P(success) 0."""
    inst = parse_instance(lattice(*LAWS[0][:2], 2, 1.0, 50.0, omega=0.5)).with_changes(loss_max=-2.0)
    assert exact_optimum(inst, inst.omega) is None
    b = A.adaptive_bounds(inst, buckets=24, runs=500, tune_runs=500)
    assert b.status == "unreachable"
    assert b.message.startswith("no policy reaches P(success) ≥ ω = 0.5: the optimistic chain's best is 0 ")
