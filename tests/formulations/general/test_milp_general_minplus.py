"""The min-plus step of the ``general`` searches taken per model (``minplus``).

* ``step_min`` equals, bit for bit, the minimum over the full virtual-model
  graph (every successor, jumps from ``jump_index``), on random entering
  values with forbidden switches and exact ties between groups;
* ``largest_decrease`` equals its definition's recursion over the full graph;
* an order-invariant search (successors differ by group) takes the full graph;
* transfer costs near the float max (μ near it too) solve to the brute-force
  optimum without a numpy overflow warning; an overflowed bound term bounds nothing.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from deplbench.formulations.general import solve_general
from deplbench.formulations.general.minplus import (
    as_lower_bound,
    jump_table,
    largest_decrease,
    model_jumps,
    step_min,
)
from deplbench.solvers.exact.brute_force import search as brute_force
from tests.formulations.general.test_milp_general_pairs import _pair_search
from tests.milp_instances import tiny_instance


def _full_graph(search, enter, Jk):
    tail = np.broadcast_to(np.array([0.0, np.inf]), Jk.shape[:-1] + (2,))
    Jx = np.concatenate([Jk, tail], axis=-1)[..., search.jump_index()]            # (..., from, to)
    return enter[..., None, :] + Jx


def _random_step(prob, s, rng, lead=(30,)):
    enter = rng.normal(size=lead + (s.nv,))
    enter[..., 1::2] = np.where(rng.random(lead + (prob.M,)) < 0.3, enter[..., 0::2], enter[..., 1::2])  # ties
    Jk = rng.uniform(0.0, 0.5, size=lead + (prob.J.shape[2],))
    return enter, Jk


def test_the_step_per_model_is_the_full_graphs_bit_for_bit():
    prob, s = _pair_search()
    assert model_jumps(s) is not None and not np.all(prob.allowed)       # some switches forbidden
    rng = np.random.default_rng(0)
    for lead in ((30,), (4, 7)):
        enter, Jk = _random_step(prob, s, rng, lead)
        tot = _full_graph(s, enter, Jk)
        assert jump_table(s, Jk).shape == lead + (prob.M, prob.M)
        np.testing.assert_array_equal(step_min(s, enter, jump_table(s, Jk)), tot.min(axis=-1))


def test_largest_decrease_is_the_full_graph_recursion():
    prob, s = _pair_search(S=20)
    ref = np.zeros((s.kmax + 1, prob.S, s.nv))
    for k in range(s.kmax - 1, -1, -1):
        enter = -(s.vgamma[None, :] * prob.a[:, k, s.vm]) + ref[k + 1]
        ref[k] = np.minimum(_full_graph(s, enter, prob.J[:, k, :]).min(axis=-1), 0.0)
    np.testing.assert_array_equal(largest_decrease(s), ref)
    assert np.all(ref[0] < 0)


def test_an_order_invariant_search_takes_the_full_graph():
    prob, s = _pair_search()
    s.order_invariant = True           # its successors would then depend on the group
    assert model_jumps(s) is None
    # successors that differ by group (as an order-invariant search keeps them) are
    # caught by the check against the search's own jump_index, whatever the flag says
    prob, s = _pair_search()
    s.succ = [[(u, p) for u, p in out if u > v] for v, out in enumerate(s.succ)]
    assert model_jumps(s) is None
    enter, Jk = _random_step(prob, s, np.random.default_rng(1))
    tot = _full_graph(s, enter, Jk)
    assert jump_table(s, Jk).shape == (30, s.nv, s.nv)
    np.testing.assert_array_equal(step_min(s, enter, jump_table(s, Jk)), tot.min(axis=-1))
    val = step_min(s, enter, jump_table(s, Jk))
    other = _pair_search()[1]
    assert not np.array_equal(val, step_min(other, enter, jump_table(other, Jk)))   # fewer successors: dearer


def test_pair_searches_with_the_same_gamma_hi_share_their_largest_decrease():
    """PairSearch.Dn depends on γ_hi and kmax only: a search with another γ_lo gets the
    cached table, equal bit for bit to its own recursion; another γ_hi gets its own."""
    from deplbench.formulations.general.pairs import PairSearch
    from deplbench.formulations.general.search import Config

    prob, s = _pair_search(S=20)
    first = s.Dn
    for gamma_lo, gamma_hi in ((0.1, 1.0), (0.9, 1.0), (0.4, 1.2)):
        cfg = Config(np.array([0, 1]), [0, 0], np.array([gamma_hi, gamma_lo]), np.array([1.0, 0.7]),
                     np.array([0.0, 0.1]))
        other = PairSearch(prob, cfg, 1.0, s.kmax, 1.0)
        assert (other.Dn is first) == (gamma_hi == s.gamma_hi)
        np.testing.assert_array_equal(other.Dn, largest_decrease(other))
    assert not first.flags.writeable
    assert not np.array_equal(other.Dn, first)


def test_array_caches_keep_the_newest_within_their_byte_limit():
    from deplbench.formulations.general.caches import ArrayCache, problem_cache

    cache = ArrayCache(limit=3 * 80)                       # three arrays of ten floats
    for i in range(4):
        cache[i] = np.full(10, float(i))
    assert 0 not in cache and list(cache) == [1, 2, 3] and cache.currsize == 240
    cache[5] = (np.zeros(5), np.zeros(5))                  # a tuple counts all its arrays
    assert 1 not in cache and cache.currsize == 240
    cache[6] = np.zeros(31)                                # larger than the whole limit: not kept
    assert 6 not in cache and list(cache) == [2, 3, 5]
    prob = type("P", (), {})()
    assert problem_cache(prob, "_x", 100) is problem_cache(prob, "_x", 100)   # one per problem


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transfer_costs_near_the_float_max_solve_to_brute_force_without_overflow_warnings(seed):
    """The bound tables' sums (μ near 1e308 times the loss terms) pass the float max on a valid
    instance: no "overflow encountered" warning, and the optimum is brute force's."""
    inst = tiny_instance(seed=seed, n_datasets=2, n_clusters=2, horizon=5, n_models=2, all_switches=True)
    data = inst.model_dump()
    for i, row in enumerate(data["transfer_costs"]):
        row["cost"] = 1e308 * (0.2 + 0.1 * i)
    inst = type(inst).model_validate(data)
    best, _, _ = brute_force(inst, 30, 0)
    assert math.isfinite(best) and best > 1e307
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_general(inst, scenarios=30, time_limit=None)
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(best, rel=1e-12)


def test_an_overflowed_bound_term_becomes_minus_infinity():
    """A +inf from a partial sum past the float max, or an inf - inf, must not prune:
    the exact sum may be below the incumbent once the later negative terms are added."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.array([1e308, -1e308, 0.0, -np.inf, np.inf]) + np.array([1e308, -1e308, 1.0, 1.0, -np.inf])
    out = as_lower_bound(x)
    assert out.tolist() == [-np.inf, -np.inf, 1.0, -np.inf, -np.inf]
