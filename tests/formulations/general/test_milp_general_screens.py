"""The cheaper paths of the ``general`` search: screens, warm starts, the last-block table.

* the group bound read on each group's best few rows first (``GroupTables.group_bounds``
  with ``skip``) equals the full bound wherever the screen does not prune, and is
  below it (and prunes) where it does; the same through ``combined_bound`` with
  rows tuned at ancestors read first;
* the unreachable-scenario test on the unpruned candidates only marks the same ones;
* the last-block table, filled row by row from the valid cells only, stays sorted and
  equals the one built from the gain table (``_gains``) entry for entry;
* a row started from a stored π (``WarmStarts``) begins at the value the tuning that
  stored it ended with (a cold start does not) and still bounds every SAA-feasible
  completion; the store keeps the newest within its limit; whole solves with and
  without warm starts agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.formulations.general import solve_general
from deplbench.formulations.general.cells import block_cells
from deplbench.formulations.general.groups import SCREEN_ROWS, GroupPool, GroupTables
from deplbench.formulations.general.node_groups import WARM_ENTRY_BYTES, NodeGroups, WarmStarts, combined_bound
from tests.formulations.general.test_milp_general import _all_sequences, _feasible_sequence_weights, _group_setup
from tests.formulations.general.test_milp_general_nodes import _prefixes
from tests.formulations.general.test_milp_general_pairs import _pair_search
from tests.milp_instances import tiny_instance


def _pair_with_pool(S=24, horizon=6):
    prob, s = _pair_search(S=S, horizon=horizon)
    pool = GroupPool(prob, np.arange(prob.S))
    pool.extend(s, iters=12)
    s.groups = GroupTables(pool, s)
    return prob, s


def _random_states(prob, s, n, seed=0):
    """n candidate states (k, L) after random prefixes, reproducibly."""
    rng = np.random.default_rng(seed)
    k = rng.integers(1, s.kmax, size=n)
    L = prob.l0 - rng.uniform(0.0, 1.0, size=(prob.S, n)) * (prob.l0 - prob.lmax) * 1.3
    return k, L


def test_group_bound_screen_is_exact_where_it_does_not_prune():
    prob, s = _pair_with_pool()
    T = s.groups
    assert T._Pi_pad.shape[1] > 2 * SCREEN_ROWS          # the screen is in use
    k, L = _random_states(prob, s, 300)
    Vk = s.pool_values(k, 0)
    full = T.group_bounds(Vk, L)
    # independently, from the pool itself: per group, the largest V^π + π·(L − ℓmax) of its rows
    val = Vk.T + T.Pi @ (L - prob.lmax)                                       # (R, C)
    ref = np.maximum(np.maximum.reduceat(val, T.starts, axis=0), 0.0)
    np.testing.assert_allclose(full, ref, rtol=0, atol=1e-9)
    cut = np.quantile(full.min(axis=0), 0.5)               # about half prunable
    seen = []

    def skip(b):
        seen.append(b.copy())
        return b >= cut

    screened = T.group_bounds(Vk, L, skip=skip)
    assert np.all(screened <= full + 1e-12)
    pruned = screened.min(axis=0) >= cut
    np.testing.assert_allclose(screened[:, ~pruned], full[:, ~pruned], rtol=0, atol=1e-12)
    assert pruned.any() and (~pruned).any()
    assert np.all(seen[0] <= full.min(axis=0) + 1e-12)     # the screen is a weaker bound


def test_combined_bound_reads_tuned_rows_first_and_is_exact_where_it_matters():
    prob, s = _pair_with_pool()
    ng = s.node_groups = NodeGroups(s)
    k_t, L_t = _random_states(prob, s, 60, seed=2)
    k_t[0] = 1                                                                # read from every k on
    _, rows = ng.tune(k_t, np.zeros(k_t.size, dtype=int), L_t, 0, np.full(k_t.size, 1e12))
    assert rows is not None
    k, L = _random_states(prob, s, 200, seed=1)                               # other states
    base = np.random.default_rng(3).uniform(0.0, 1.0, size=k.size)            # per-candidate weight so far
    full = combined_bound(s, k, 0, L, 0, (rows,))
    cut = np.quantile(base + full, 0.4)
    calls = []

    def skip(b):
        calls.append(b.size)
        return base + b >= cut

    part = combined_bound(s, k, 0, L, 0, (rows,), skip=skip)
    keep = base + part < cut
    assert len(calls) >= 2 and calls[0] == k.size          # tuned rows, then the pool's screen
    assert np.all(part <= full + 1e-9) and np.all(base[~keep] + full[~keep] >= cut)
    np.testing.assert_allclose(part[keep], full[keep], rtol=0, atol=1e-12)
    assert keep.any() and (~keep).any()
    # the unreachable test, on the unpruned only, marks the same unpruned candidates
    every = s.mark_unreachable(full.copy(), k, 0, L, None)
    some = s.mark_unreachable(full.copy(), k, 0, L, lambda b: base + b >= cut)
    np.testing.assert_array_equal(some[base + full < cut], every[base + full < cut])


def test_last_block_table_equals_the_one_from_the_gain_table():
    prob, s = _pair_search(S=16, horizon=7)
    for u in range(prob.M):
        # a few scenarios first (the screen's): only their rows are stored, and the array stays sorted
        starts = list(range(1, s.kmax, 2))
        T = s._last_tables(u, starts, rows=np.array([2, 5, 11]))
        assert np.all(np.diff(T["flat"][:T["used"]]) >= 0)
        assert T["slots"] == 3 * len(starts) == (T["slot"] >= 0).sum()
        assert T["used"] == 3 * T["ncell"][starts].sum()
    for u, k in ((u, k) for u in range(prob.M) for k in range(s.kmax)):
        T = s._last_tables(u, range(s.kmax))
        assert np.all(np.diff(T["flat"][:T["used"]]) >= 0) and (T["slot"][:s.kmax] >= 0).all()
        assert T["used"] == T["cap"] == T["flat"].size            # every row, and no more room than that
        G = s._gains(k, u)
        ll, jj = block_cells(s.kmax - k)
        assert G.shape == (prob.S, ll.size)
        weight = jj * s.w_hi[u] + (ll + 1 - jj) * s.w_lo[u]
        order = np.argsort(weight, kind="stable")
        ref = np.maximum.accumulate(G[:, order], axis=1)
        for row in range(prob.S):
            slot = T["slot"][k, row]
            got = T["flat"][T["first"][slot]:T["first"][slot] + T["ncell"][k]]
            np.testing.assert_array_equal(got, ref[row] + slot * T["span"])
        np.testing.assert_array_equal(T["weight"][T["wpos0"][k]:T["wpos0"][k + 1]], weight[order])


def test_last_block_bound_on_a_partly_filled_table_equals_the_full_one():
    """The screen's scenarios fill their rows first; a query then equals a fresh search's
    over a fully filled table, and so does a later full query on the same table."""
    prob, lazy = _pair_search(S=60, horizon=7)
    _, full = _pair_search(S=60, horizon=7)
    m = int(np.nonzero(lazy.last_only)[0][0]) if lazy.last_only.any() else 0
    rng = np.random.default_rng(4)
    kc = rng.integers(1, lazy.kmax, size=40)
    L = prob.l0 - rng.uniform(0.1, 0.8, size=(prob.S, kc.size)) * (prob.l0 - prob.lmax)
    rows = np.argsort(-L.max(axis=1), kind="stable")[:24]                    # more than p + 1 = 13
    for u in lazy.next_models[m]:
        full._last_tables(u, range(full.kmax))                               # every row filled
    screened = lazy._last_block_bound(kc, m, L, rows)
    assert np.isfinite(screened).sum() > 5 and np.all(screened > 0)          # cells found, and bounds
    np.testing.assert_array_equal(screened, full._last_block_bound(kc, m, L, rows))
    assert all(T["slots"] < full._last_cache[u]["slots"] for u, T in lazy._last_cache.items())  # screen rows only
    np.testing.assert_array_equal(lazy._last_block_bound(kc, m, L, None), full._last_block_bound(kc, m, L, None))


def test_warm_starts_keep_the_newest_within_their_limit():
    entry = 4 * 8 + WARM_ENTRY_BYTES
    store = WarmStarts(limit=3 * entry)                    # three π of four floats
    for i in range(4):
        store.put(("s", i), np.full(4, float(i)))
    assert store.get(("s", 0)) is None                      # the oldest went
    assert store.get(("s", 3))[0] == 3.0 and store.started == 1
    store.put(("s", 1), np.full(4, 9.0))                    # a replacement keeps the count
    assert store.bytes == 3 * entry and store.get(("s", 1))[0] == 9.0
    store.put(("s", 4), np.zeros(4))
    assert store.get(("s", 2)) is None and store.get(("s", 1)) is not None


@pytest.mark.parametrize("seed", [0, 2])
def test_warm_started_rows_begin_where_the_last_tuning_ended_and_stay_valid(seed):
    prob, search, pool, tables = _group_setup(seed, 40)
    search.groups = tables
    feas = _feasible_sequence_weights(prob, search, _all_sequences(search))
    cands = _prefixes(prob, search, feas, 0)[::3]
    ng = search.node_groups = NodeGroups(search)
    assert ng.warm is not None
    k = np.array([len(p) for p, *_ in cands])
    v = np.array([p[-1] for p, *_ in cands])
    L = np.stack([c[1] for c in cands], axis=1)
    keys = [("BlockSearch", p) for p, *_ in cands]
    target = np.full(k.size, 1e12)
    ng.iters = 4
    h1, rows1 = ng.tune(k, v, L, 0, target, keys=keys)
    assert ng.warm.started == 0 and len(ng.warm.store) == rows1.group.size
    ng.iters = 1                                           # the first iterate only
    h2, rows2 = ng.tune(k, v, L, 0, target, keys=keys)
    assert ng.warm.started == rows2.group.size > 0
    np.testing.assert_allclose(h2, h1, rtol=0, atol=1e-9)  # it is the π the last tuning kept
    ng.warm = None
    h3, _ = ng.tune(k, v, L, 0, target, keys=keys)         # cold: from the pool's best
    assert np.all(h3 <= h1 + 1e-9) and np.any(h3 < h1 - 1e-6)
    rest = np.array([c[3] for c in cands])
    assert np.all(h2.min(axis=1) <= rest + 1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(3, 2), (2, 3)])
def test_solves_with_and_without_warm_starts_agree(shape):
    """Instances whose searches meet the same nodes again (warm starts happen): the same
    optimum with and without them (brute force checks this instance in
    ``test_milp_general_nodes``, slow)."""
    n_datasets, n_clusters = shape
    inst = tiny_instance(seed=0, n_datasets=n_datasets, n_clusters=n_clusters, horizon=6, n_models=3,
                         all_switches=True)
    warm = solve_general(inst, scenarios=40, time_limit=None)
    cold = solve_general(inst, scenarios=40, time_limit=None, settings={"node_warm_start": False})
    assert warm.diagnostics["node_warm_starts"] > 0 and cold.diagnostics["node_warm_starts"] == 0
    assert warm.params["general_settings"]["node_warm_start"] is True
    assert warm.status == cold.status == "optimal", (warm.message, cold.message)
    assert warm.cost == pytest.approx(cold.cost, rel=1e-6)
    assert max(warm.lower_bound, cold.lower_bound) <= min(warm.cost, cold.cost) * (1 + 1e-9)


@pytest.mark.slow
def test_a_solve_with_warm_starts_is_repeated_exactly():
    """The store lives in one solve: the same instance twice gives the same nodes, warm
    starts, bounds and cost."""
    inst = tiny_instance(seed=0, n_datasets=3, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    a, b = (solve_general(inst, scenarios=40, time_limit=None) for _ in range(2))
    for key in ("nodes", "node_warm_starts", "tuned_rows", "pair_searches"):
        assert a.diagnostics[key] == b.diagnostics[key], key
    assert (a.cost, a.lower_bound) == (b.cost, b.lower_bound)
