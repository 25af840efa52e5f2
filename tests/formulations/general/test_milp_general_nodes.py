"""Node-level re-tuning of the group bound and assignment dominance in ``general``.

* the multipliers tuned at a batch of nodes (``node_groups``) bound every
  SAA-feasible completion from them, and from every later prefix they are
  read at (exhaustive enumeration on a tiny cyclic instance), and they are
  stronger than the root pool somewhere;
* an assignment is skipped as dominated only when a larger one with a free
  (β = 0) cluster holds all its plans, and never under the printed rule;
* whole solves with both equal brute force.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from deplbench.formulations.general import solve_general
from deplbench.formulations.general.classes import dominated_assignments
from deplbench.formulations.general.node_groups import NodeGroups, combined_bound
from deplbench.solvers.exact.brute_force import search as brute_force
from tests.formulations.general.test_milp_general import (
    _all_sequences,
    _feasible_sequence_weights,
    _group_setup,
    _switches,
)
from tests.milp_instances import tiny_instance


def _prefixes(prob, search, feas, need):
    """Prefixes with at least one feasible completion of ≥ need switches: (pre, L, W, cheapest rest)."""
    out = []
    for pre in _all_sequences(search):
        if len(pre) >= search.kmax:
            continue
        v = np.array(pre)
        W = float(search.w[v].sum())
        rest = [w - W for s, w in feas.items() if s[:len(pre)] == pre and len(s) > len(pre)
                and _switches(s[len(pre) - 1:]) >= need]
        if rest:
            out.append((pre, prob.losses(search.vm[v], search.vgamma[v]), W, min(rest)))
    return out


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("need", [0, 1])
def test_tuned_rows_bound_every_feasible_completion(seed, need):
    """Tuned at a batch of prefixes, the group bound never exceeds the cheapest SAA-feasible
    completion with ≥ need switches, at those prefixes and at every other one it is read
    at; and it beats the root pool's bound at some prefix (the tuning does something)."""
    prob, search, pool, tables = _group_setup(seed, 40)
    search.groups = tables
    feas = _feasible_sequence_weights(prob, search, _all_sequences(search))
    cands = _prefixes(prob, search, feas, need)
    assert len(cands) > 10
    ng = search.node_groups = NodeGroups(search)
    batch = cands[::3]
    k = np.array([len(p) for p, *_ in batch])
    v = np.array([p[-1] for p, *_ in batch])
    L = np.stack([c[1] for c in batch], axis=1)
    h, rows = ng.tune(k, v, L, need, np.full(k.size, 1e12))          # unreachable target: every iteration
    assert rows is not None and ng.rows_tuned == rows.group.size
    pool_h = tables.group_bounds(tables.V[k, v, :] if need == 0 else
                                 tables._switch_layers(need + 1)[0][k, v, need, :], L).min(axis=0)
    tuned = h.min(axis=1)
    rest = np.array([c[3] for c in batch])
    assert np.all(tuned <= rest + 1e-7), (tuned - rest).max()
    assert np.any(tuned > pool_h + 1e-6)
    # the same rows, read at every prefix (valid everywhere, groups item 1)
    for pre, Lp, _, best in cands:
        b = combined_bound(search, np.array([len(pre)]), int(pre[-1]), Lp[:, None], need, (rows,))
        assert float(b[0]) <= best + 1e-7, (pre, float(b[0]), best)


def _tables(lists, beta):
    return SimpleNamespace(lists=lists, beta=np.asarray(beta, dtype=float))


def test_dominance_needs_a_free_extra_cluster_and_the_intended_rule():
    """A one-cluster assignment is dominated by the two-cluster one only when the extra
    cluster's class has β = 0, and nothing is dominated under the printed rule."""
    lists = [np.array([0]), np.array([0])]
    one, two, other = ((0, 1), None), ((0, 1), (0, 1)), (None, (0, 1))
    intended, printed = SimpleNamespace(single_cluster=False), SimpleNamespace(single_cluster=True)
    assert dominated_assignments(intended, [one, two, other], _tables(lists, [[0.0, 0.0]])) == {one, other}
    assert dominated_assignments(intended, [one, two, other], _tables(lists, [[0.3, 0.0]])) == {one}
    assert dominated_assignments(intended, [one, two, other], _tables(lists, [[0.3, 0.2]])) == set()
    assert dominated_assignments(intended, [one, other], _tables(lists, [[0.0, 0.0]])) == set()   # no superset
    assert dominated_assignments(printed, [one, two, other], _tables(lists, [[0.0, 0.0]])) == set()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_free_transfers_dominance_and_node_tuning_equal_brute_force(seed):
    """Instances without transfer costs (every one-cluster assignment dominated) solve to
    the brute-force optimum, with and without the node tuning."""
    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=3, horizon=5, n_models=3, all_switches=True,
                         beta_high=0.0)
    S = 30
    best, _, _ = brute_force(inst, S, 0)
    for settings in ({}, {"node_iterations": 0}):
        res = solve_general(inst, scenarios=S, time_limit=None, settings=settings)
        if math.isinf(best):
            assert res.status == "infeasible"
            continue
        assert res.status == "optimal", res.message
        assert res.cost == pytest.approx(best, rel=1e-4, abs=1e-9)
        assert res.diagnostics["dominated_assignments"] > 0


@pytest.mark.slow
def test_model_block_search_tunes_its_switch_first_bound_and_equals_brute_force():
    """Two γ-groups (``pairs.PairSearch``, whose completions switch model first): the
    re-tuned rows are used (``tuned_rows``) and the optimum is brute force's, and the
    same without them and without their warm starts (``node_warm_start``)."""
    inst = tiny_instance(seed=0, n_datasets=2, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    S = 40
    best, _, _ = brute_force(inst, S, 0)
    tuned = solve_general(inst, scenarios=S, time_limit=None)
    plain = solve_general(inst, scenarios=S, time_limit=None, settings={"node_iterations": 0})
    cold = solve_general(inst, scenarios=S, time_limit=None, settings={"node_warm_start": False})
    assert tuned.diagnostics["pair_searches"] > 0 and tuned.diagnostics["tuned_rows"] > 0
    assert plain.diagnostics["tuned_rows"] == 0
    assert tuned.diagnostics["node_warm_starts"] > 0 and cold.diagnostics["node_warm_starts"] == 0
    for res in (tuned, plain, cold):
        assert res.status == "optimal", res.message
        assert res.cost == pytest.approx(best, rel=1e-4)
        assert res.lower_bound <= best * (1 + 1e-9)


def test_switch_first_rows_equal_the_model_block_search_tables():
    """For a model-block search the rows' switch-first table (``_forced_table``) and the
    first-epoch value (``_forced_first``), built from the pool's own multipliers, equal
    ``PairSearch._forced_table`` at every epoch and model."""
    from deplbench.formulations.general.groups import GroupPool, GroupTables
    from tests.formulations.general.test_milp_general_pairs import _pair_search

    prob, s = _pair_search(S=24, horizon=6)
    pool = GroupPool(prob, np.arange(prob.S))
    pool.extend(s, iters=5)
    s.groups = GroupTables(pool, s)
    ng = NodeGroups(s)
    assert ng.forced
    group = pool.owner
    pi = np.zeros((group.size, ng.n))
    for i, g in enumerate(group):
        G = pool.groups[g]
        pi[i, :G.size] = pool.Pi[i, G]
    ref = s._forced_table()                                                   # (K+1, M, R)
    for k0 in (0, 2):
        V, _, enter, Jx = ng._table(pi, group, k0, 1)
        Vf = ng._forced_table(V, enter, Jx)                                   # (K+1−k0, R, M)
        assert np.allclose(Vf.transpose(0, 2, 1), ref[k0:], atol=1e-9)
        rows = np.arange(group.size)
        for m in range(prob.M):
            val, _ = ng._forced_first(V, enter, Jx, rows, np.zeros(group.size, dtype=int), np.full(group.size, 2 * m))
            assert np.allclose(val, ref[k0, m], atol=1e-9)


def test_rows_tuned_for_more_switches_bound_completions_with_fewer():
    """Rows tuned with need = 2 (three layers of switches still required) and read at
    need = 1 and 0 (the children and grandchildren of their node) stay below every
    SAA-feasible completion with that many switches."""
    prob, search, pool, tables = _group_setup(0, 40)
    search.groups = tables
    feas = _feasible_sequence_weights(prob, search, _all_sequences(search))
    cands = _prefixes(prob, search, feas, 2)
    ng = search.node_groups = NodeGroups(search)
    k = np.array([len(p) for p, *_ in cands[:8]])
    v = np.array([p[-1] for p, *_ in cands[:8]])
    L = np.stack([c[1] for c in cands[:8]], axis=1)
    _, rows = ng.tune(k, v, L, 2, np.full(k.size, 1e12))
    assert rows is not None and rows.V.shape[3] == 3
    for need in (1, 0):
        for pre, Lp, _, best in _prefixes(prob, search, feas, need):
            if len(pre) < rows.k0:
                continue
            b = combined_bound(search, np.array([len(pre)]), int(pre[-1]), Lp[:, None], need, (rows,))
            assert float(b[0]) <= best + 1e-7, (pre, need, float(b[0]), best)
