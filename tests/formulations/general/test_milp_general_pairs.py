"""Two γ-groups searched over model blocks (general_pairs, general_placement, general_pair_groups).

Independent references:

* ``solvers/brute_force.search`` (every assignment, every model and cluster
  sequence, exact ``allocate``) on tiny two-cluster instances, acyclic and
  cyclic, including instances where a relaxed leaf has no feasible order
  (``unplaceable_cells`` > 0) and optima that interleave the two clusters;
* the interleaving search (``GeneralSettings(pair_search=False)``) and the
  single-assignment search (``pair_groups=False``) on datasets-family
  instances with |D| = 6..10;
* per block, every order of the two groups' epochs enumerated here with
  ``itertools`` (the optimistic block losses, the exact placement search and
  the one-block completion bound are checked against it).

No wall-clock limits: solves get a budget far above what they need and
assert ``optimal``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.formulations.general import placement as general_placement
from deplbench.formulations.general import solve_general
from deplbench.formulations.general.cells import block_cells, block_sums, cell_index
from deplbench.formulations.general.leaves import Leaves
from deplbench.formulations.general.pairs import SCREEN, SCREEN_PER_VIOLATION, PairSearch, pair_applies
from deplbench.formulations.general.placement import feasible, place, sequence
from deplbench.formulations.general.search import Config, Problem
from deplbench.formulations.general.settings import GeneralSettings
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.instances.generators import generate
from deplbench.solvers.exact.brute_force import search as brute_force
from tests.milp_instances import tiny_instance

BUDGET = 3600.0


def _tiny(seed, cyclic, omega):
    return tiny_instance(seed=seed, n_datasets=2, n_clusters=2, horizon=5, n_models=3, all_switches=cyclic,
                         beta_high=0.3, omega=omega)


def _solve(inst, S, pair_search=True, pair_groups=True, **kw):
    settings = GeneralSettings(pair_search=pair_search, pair_groups=pair_groups)
    return solve_general(inst, scenarios=S, time_limit=BUDGET, settings=settings, **kw)


# ------------------------------------------------------ whole solves

# (seed, cyclic switches, ω, a relaxed leaf had no feasible order): found by a scan of
# seeds 0..59; the first four need the exact placement search, the others have optima
# on both clusters ("0111", "1100", "100", "011" epoch by epoch)
BRUTE = [(7, False, 0.8, True), (25, False, 0.9, True), (40, True, 0.9, True), (53, True, 0.9, True),
         (45, False, 0.8, False), (36, False, 0.8, False), (17, False, 0.8, False), (55, True, 0.8, False)]


@pytest.mark.parametrize("seed,cyclic,omega,dead", BRUTE)
@pytest.mark.slow
def test_pair_search_equals_brute_force(seed, cyclic, omega, dead):
    inst = _tiny(seed, cyclic, omega)
    S = 20
    best, _, _ = brute_force(inst, S, 0)
    res = _solve(inst, S)
    assert res.diagnostics["pair_searches"] > 0           # the model-block search ran
    assert (res.diagnostics["unplaceable_cells"] > 0) == dead
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(best, rel=1e-4)
    assert res.lower_bound <= best * (1 + 1e-9)


# (|D|, K̄, seed, also with the interleaving search): the first two optima use both
# clusters; the interleaving search takes 20 s on the |D| = 10 one, so it is left out there
DATASETS = [(6, 6, 0, True), (7, 5, 2, True), (10, 5, 0, False)]


@pytest.mark.parametrize("n_datasets,horizon,seed,with_off", DATASETS)
@pytest.mark.slow
def test_same_optimum_with_pair_search_and_groups_on_and_off(n_datasets, horizon, seed, with_off):
    inst = generate("datasets", n_datasets=n_datasets, n_clusters=2, horizon=horizon, seed=seed)
    S = 30
    runs = {"on": _solve(inst, S), "alone": _solve(inst, S, pair_groups=False)}
    if with_off:
        runs["off"] = _solve(inst, S, pair_search=False, pair_groups=False)
        assert runs["off"].diagnostics["pair_searches"] == 0
    assert runs["on"].diagnostics["pair_searches"] > 0
    assert runs["on"].diagnostics["pair_groups"]["pruned"] > 0
    assert "pair_groups" not in runs["alone"].diagnostics
    best = min(r.cost for r in runs.values())
    for r in runs.values():
        assert r.status == "optimal", r.message
        assert r.cost == pytest.approx(best, rel=1e-4)
        assert r.lower_bound <= best * (1 + 1e-9)


@pytest.mark.parametrize("seed,cyclic,omega", [(7, False, 0.8), (40, True, 0.9), (17, False, 0.8)])
def test_lower_bound_stays_valid_with_a_loose_gap(seed, cyclic, omega):
    """gap = 0.2: the search discards everything within 10 % of the incumbent
    (cells not formed, blocks cut by weight); every such discard must still
    leave a valid bound, so the reported bound never exceeds the optimum."""
    inst = _tiny(seed, cyclic, omega)
    S = 20
    best, _, _ = brute_force(inst, S, 0)
    res = _solve(inst, S, gap=0.2)
    assert res.status == "optimal"
    assert res.lower_bound <= best * (1 + 1e-9)
    assert best <= res.cost <= best / (1 - 0.2) * (1 + 1e-9)


def test_undecided_orders_never_claim_optimal(monkeypatch):
    """When the exact placement search gives up (``place`` answers "undecided",
    as it does beyond ``max_placements``) and the one guess left (γ_hi epochs
    first) fails, the relaxed leaf keeps only its bound, which here is below
    the optimum: the solve must not say ``optimal`` with a wrong cost, and its
    bound stays valid."""
    inst = _tiny(7, False, 0.8)
    S = 20
    best, _, _ = brute_force(inst, S, 0)
    monkeypatch.setattr(general_placement, "place", lambda search, seq: (None, False))
    monkeypatch.setattr(general_placement, "placements", lambda search, seq, loss_opt: [
        [np.arange(j) for (_, _, j, _) in seq]])
    res = _solve(inst, S)
    assert res.diagnostics["unrealised_leaves"] > 0
    assert res.lower_bound <= best * (1 + 1e-9)
    assert res.cost >= best * (1 - 1e-9)
    if res.status == "optimal":
        assert res.cost == pytest.approx(best, rel=1e-4)
    else:
        assert res.status == "feasible" and "could not be ordered" in res.message


# ---------------------------------------------------- one block, every order


def _pair_search(seed=3, S=12, horizon=7, settings=None):
    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=2, horizon=horizon, n_models=3, omega=0.8)
    sc = ScenarioSampler(inst, 0).in_sample(S)
    a = inst.run_scale[None, :, :] * sc.improvement
    prob = Problem(inst, a, sc.jump, allowed_violations(inst.omega, S), settings=settings)
    cfg = Config(np.array([0, 1]), [0, 0], np.array([1.0, 0.4]), np.array([1.0, 0.7]), np.array([0.0, 0.1]))
    assert pair_applies(prob, cfg)
    return prob, PairSearch(prob, cfg, 1.0, horizon, 1.0)


def _orders(ell, j):
    """Every set of γ_hi positions of a block of ℓ epochs with j of them on γ_hi."""
    return [np.array(c, dtype=int) for c in itertools.combinations(range(ell), j)]


def _exact_losses(prob, search, seq, his):
    return prob.losses(search.vm[sequence(search, seq, his)], search.vgamma[sequence(search, seq, his)])


def test_block_cells_are_l_major_and_their_sums_are_the_blocks():
    prob, s = _pair_search()
    for span in (1, 2, 5):
        ll, jj = block_cells(span)
        assert ll.size == span * (span + 3) // 2 and np.all(jj <= ll + 1)
        np.testing.assert_array_equal(cell_index(ll, jj), np.arange(ll.size))
    k, m = 1, 2
    total, top = block_sums(prob, k, m)
    ll, jj = block_cells(prob.K - k)
    for c in range(ll.size):
        win = prob.a[:, k:k + ll[c] + 1, m]                                  # the block's ℓ epochs
        np.testing.assert_allclose(total[:, c], win.sum(axis=1), rtol=1e-12)
        np.testing.assert_allclose(top[:, c], -np.sort(-win, axis=1)[:, :jj[c]].sum(axis=1), rtol=1e-12, atol=0)


def test_optimistic_block_is_the_best_order_scenario_by_scenario():
    prob, s = _pair_search()
    rng = np.random.default_rng(0)
    for _ in range(12):
        m = int(rng.integers(prob.M))
        k = int(rng.integers(0, 3))
        ell = int(rng.integers(1, s.kmax - k + 1))
        j = int(rng.integers(0, ell + 1))
        opt = s._block(k, m, np.full(prob.S, prob.l0), s.kmax - k)[:, cell_index(ell - 1, j)]
        every = []
        for hi in _orders(ell, j):
            gam = np.where(np.isin(np.arange(ell), hi), s.gamma_hi, s.gamma_lo)
            every.append(prob.l0 - (gam[None, :] * prob.a[:, k:k + ell, m]).sum(axis=1))
        every = np.array(every)                                   # (orders, S)
        assert np.all(opt <= every.min(axis=0) + 1e-12)           # a lower bound for every order
        assert np.allclose(opt, every.min(axis=0), atol=1e-12)    # and attained scenario by scenario


@pytest.mark.parametrize("shift", [-0.3, 0.0, 0.3, 0.8])
def test_exact_placement_finds_an_order_exactly_when_one_exists(shift):
    """Two blocks (model 0 then model 1); ℓmax moved around the losses so that
    some count choices have feasible orders and some have none."""
    prob, s = _pair_search()
    for ell0, j0, ell1, j1 in [(3, 1, 2, 1), (4, 2, 3, 1), (2, 0, 3, 2), (4, 1, 2, 2)]:
        seq = ((0, 0, j0, ell0), (1, ell0, j1, ell1))
        losses = [_exact_losses(prob, s, seq, [h0, h1]) for h0 in _orders(ell0, j0) for h1 in _orders(ell1, j1)]
        losses = np.array(losses)
        old = prob.lmax
        prob.lmax = float(np.quantile(losses, 0.5)) + shift
        try:
            viol = np.count_nonzero(losses > prob.lmax + 1e-9, axis=1)
            exists = bool(np.any(viol <= prob.p))
            lo, decided = place(s, seq)
            assert decided
            assert (lo is not None) == exists
            if lo is not None:
                his = [np.setdiff1d(np.arange(L), x) for (_, _, _, L), x in zip(seq, lo)]
                assert feasible(s, sequence(s, seq, his))
        finally:
            prob.lmax = old


def test_placement_search_with_a_tiny_beam_never_refutes_a_feasible_order():
    """max_placements = 1 keeps one partial placement per level: a complete one
    must still be feasible, and "no order" may only be answered when none
    exists (otherwise the answer is "undecided")."""
    prob, s = _pair_search(settings=GeneralSettings(max_placements=1))
    seen = {"found": 0, "undecided": 0}
    for shift in (-0.2, 0.0, 0.2, 0.5):
        for ell0, j0, ell1, j1 in [(4, 2, 3, 1), (4, 1, 3, 1), (5, 2, 2, 0)]:
            seq = ((0, 0, j0, ell0), (1, ell0, j1, ell1))
            losses = np.array([_exact_losses(prob, s, seq, [h0, h1])
                               for h0 in _orders(ell0, j0) for h1 in _orders(ell1, j1)])
            old = prob.lmax
            prob.lmax = float(np.quantile(losses, 0.5)) + shift
            try:
                exists = bool(np.any(np.count_nonzero(losses > prob.lmax + 1e-9, axis=1) <= prob.p))
                lo, decided = place(s, seq)
                if lo is not None:
                    seen["found"] += 1
                    his = [np.setdiff1d(np.arange(L), x) for (_, _, _, L), x in zip(seq, lo)]
                    assert decided and feasible(s, sequence(s, seq, his))
                elif decided:
                    assert not exists
                else:
                    seen["undecided"] += 1
            finally:
                prob.lmax = old
    assert seen["found"] > 0


def _cells_min_weight(prob, s, k0, m, L):
    """By enumeration of every one-block completion cell (every terminal successor,
    optimistic losses), per candidate: the (p+1)-th largest over the scenarios of
    the cheapest cell satisfying that scenario (the value last_block_bound
    computes), and the cheapest cell meeting the quantile itself."""
    exact, feasible_min = [], []
    for c in range(L.shape[1]):
        per = np.full(prob.S, np.inf)
        best = math.inf
        for u in range(prob.M):
            if u == m or not prob.allowed[m, u]:
                continue
            pre = L[:, c] + prob.J[:, k0, prob.switch_index[(m, u)]]
            grid = s._block(k0, u, pre, s.kmax - k0)
            for ell in range(1, s.kmax - k0 + 1):
                for j in range(ell + 1):
                    ok = grid[:, cell_index(ell - 1, j)] <= prob.lmax + 1e-9
                    weight = j * s.w_hi[u] + (ell - j) * s.w_lo[u]
                    per = np.where(ok, np.minimum(per, weight), per)
                    if np.count_nonzero(~ok) <= prob.p:
                        best = min(best, weight)
        exact.append(np.sort(per)[prob.S - prob.p - 1])
        feasible_min.append(best)
    return np.array(exact), np.array(feasible_min)


def test_one_block_bound_is_exact_and_its_screen_is_below_it():
    """After a block of model 1 (whose only successor, model 2, is terminal) the
    bound equals its definition computed by enumeration and never exceeds the
    cheapest cell that meets the quantile. With S = 60 the screen runs (on
    max(SCREEN, SCREEN_PER_VIOLATION·(p + 1)) < S/2 scenarios): the screened
    value is never above the exact one and equals it wherever it does not
    reach the cut."""
    prob, s = _pair_search(S=60, horizon=8)
    m = 1                                        # model 1 → model 2 only (terminal)
    assert s.last_only[m]
    rng = np.random.default_rng(2)
    for k0 in (1, 3):
        # prefix losses a one-block completion can bring to ℓmax, but not always cheaply
        reach = s._gains(k0, 2)[:, -1]                           # every epoch left, all on γ_hi
        L = prob.lmax + rng.uniform(0.1, 0.9, (prob.S, 6)) * reach[:, None]
        exact, feasible_min = _cells_min_weight(prob, s, k0, m, L)
        bound = s.last_block_bound(np.full(6, k0), m, L)
        assert np.allclose(bound, exact, rtol=1e-12, atol=1e-9)
        assert np.all(bound <= feasible_min + 1e-9)          # a bound on every completion
        assert np.any(np.isfinite(exact) & (exact > 0))
        cut = np.median(exact[np.isfinite(exact)]) * np.ones(6)
        fresh = _pair_search(S=60, horizon=8)[1]
        fresh.last_block_bound(np.full(6, k0), m, L, cut=np.zeros(6))      # the screen prunes every one
        assert fresh._last_cache[2]["slots"] == max(SCREEN, SCREEN_PER_VIOLATION * (prob.p + 1)) < prob.S // 2
        screened = s.last_block_bound(np.full(6, k0), m, L, cut=cut)
        assert np.all(screened <= bound + 1e-9)
        below = screened < cut
        assert np.allclose(screened[below], bound[below], rtol=1e-12, atol=1e-9)


def test_a_bound_only_search_stops_at_a_leaf_below_the_incumbent():
    """A box corner searched only for its bound (pair_groups) cannot discard its block
    once one of its leaves is below the incumbent: it stops there (``aborted``),
    with that leaf's bound, below the threshold and at most the optimum."""
    prob, s0 = _pair_search()
    cfg = Config(s0.cfg.clusters, list(s0.cfg.classes), s0.cfg.gamma.copy(), s0.cfg.volume.copy(), np.zeros(2))
    full = Leaves(prob, prob.inst)
    s = PairSearch(prob, cfg, 1.0, s0.kmax, 1.0)
    searched = s.run(math.inf, 1e-12, lambda v: full.evaluate(s, v, 1e-12))
    opt = full.best_cost
    for factor in (1.05, 2.0):
        ub = opt * factor
        st = PairSearch(prob, cfg, full.best_price, s.kmax, 1.0).run(ub, 1e-6, None, bound_only=True)
        assert st.aborted and not st.timeout and st.leaves >= 1
        assert st.lb < ub * (1 - 1e-6) and st.lb <= opt * (1 + 1e-9)
        assert st.nodes < searched.nodes
    # below the optimum's bound nothing stops it early: it ends with its bound
    st = PairSearch(prob, cfg, full.best_price, s.kmax, 1.0).run(opt * 0.5, 1e-6, None, bound_only=True)
    assert not st.aborted and st.lb >= opt * 0.5 * (1 - 1e-6)


def test_discarded_cells_keep_a_bound_below_the_optimum():
    """Run the model-block search of one assignment with a made-up incumbent
    above its optimum and a loose tolerance: cells and subtrees are then
    discarded by weight (some blocks are not even formed). Whatever the run
    finds or discards, min(best plan found, recorded bound) must stay at or
    below the assignment's optimum, found first by the same search with no
    incumbent and a tight tolerance, at the optimum's own time price.

    No transfer cost here: the search charges every cluster of the
    assignment its β (a plan of this assignment trains on both, eq. (6) as
    intended), while a plan found on one cluster only is costed as the
    one-cluster assignment it is; with β = 0 both agree."""
    prob, s0 = _pair_search()
    cfg = Config(s0.cfg.clusters, list(s0.cfg.classes), s0.cfg.gamma.copy(), s0.cfg.volume.copy(), np.zeros(2))
    s = PairSearch(prob, cfg, 1.0, s0.kmax, 1.0)
    full = Leaves(prob, prob.inst)
    s.run(math.inf, 1e-12, lambda v: full.evaluate(s, v, 1e-12))
    opt = full.best_cost
    assert math.isfinite(opt)
    cut = 0
    for tol in (0.05, 0.2, 0.5):
        for factor in (1.0, 1.1, 1.5):
            s2 = PairSearch(prob, cfg, full.best_price, s.kmax, 1.0)
            found = Leaves(prob, prob.inst)
            st = s2.run(opt * factor, tol, lambda v, s2=s2, found=found, tol=tol: found.evaluate(s2, v, tol))
            assert min(found.best_cost, st.lb) <= opt * (1 + 1e-9)
            cut += found.best_cost > opt * (1 + 1e-9)
    assert cut > 0          # some runs did not reach the optimum: their bound is what is checked
