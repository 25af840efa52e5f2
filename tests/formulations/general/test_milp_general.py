"""The ``general`` exact formulation against independent references.

* brute force (``solvers/brute_force.search``: exhaustive, shares no code
  with the formulation) on tiny instances with cyclic switch graphs and
  |D| = 7..10;
* the MILP's enumeration and flow formulations on small stochastic
  instances;
* the covering-knapsack DP on knapsack-derived instances.

No wall-clock limits: every solve gets a budget far above what it needs and
the tests assert the status ``optimal`` (a budget overrun fails loudly).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.errors import SolverError
from deplbench.formulations.exact.knapsack import knapsack_optimum_from_instance
from deplbench.formulations.general import MAX_DATASETS_GENERAL, solve_general
from deplbench.formulations.general.boxes import cluster_classes
from deplbench.formulations.milp import solve_milp
from deplbench.formulations.model.plan import Plan
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.instances.generators import generate
from deplbench.solvers.exact.brute_force import search
from tests.milp_instances import tiny_instance

BUDGET = 3600.0


def _assert_plan_valid(inst, res, S, seed=0):
    """The plan meets Tmax, K̄ and the in-sample quantile; its cost is its exact cost."""
    plan: Plan = res.plan
    assert 1 <= len(plan.epochs) <= inst.horizon
    sc = ScenarioSampler(inst, seed).in_sample(S)
    models = np.array([inst.model_index[e.model] for e in plan.epochs])
    for a, b in zip(models[:-1], models[1:]):
        assert inst.allowed[a, b]
    held = {c: inst.data_effect(ds) for c, ds in plan.datasets.items()}
    gam = np.array([held[e.cluster][1] for e in plan.epochs])
    vol = np.array([held[e.cluster][0] for e in plan.epochs])
    losses = sc.final_losses(models, gam)
    assert np.count_nonzero(losses > inst.loss_max + 1e-9) <= allowed_violations(inst.omega, S)
    n = np.array([inst.cluster_index[e.cluster] for e in plan.epochs])
    x = np.array([e.allocation for e in plan.epochs])
    assert np.all(x <= inst.capacity[n] * (1 + 1e-9))
    t = inst.model_compute[models] * vol / x + inst.model_size[models] / inst.bandwidth[n]
    assert t.sum() <= inst.time_max * (1 + 1e-7)
    beta = inst.transfer_matrix
    once = sum(beta[inst.dataset_index[d], inst.cluster_index[c]] for c, ds in plan.datasets.items() for d in ds)
    transfer = once * (len(plan.epochs) if inst.transfer_cost_mode == "per_epoch" else 1)
    assert math.isclose(float(np.sum(inst.unit_cost[n] * x)) + transfer, res.cost, rel_tol=1e-7, abs_tol=1e-9)
    # every cluster that holds data trains (intended rule) and every training cluster holds data
    assert set(plan.datasets) == {e.cluster for e in plan.epochs}


def _check_against_brute_force(inst, S):
    best, _, _ = search(inst, S, 0)
    res = solve_general(inst, scenarios=S, time_limit=BUDGET)
    if math.isinf(best):
        assert res.status == "infeasible", res.message
        return res
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(best, rel=1e-4, abs=1e-9)
    assert res.lower_bound <= best * (1 + 1e-9) + 1e-12
    _assert_plan_valid(inst, res, S)
    return res


# ----------------------------------------------------------- brute force


@pytest.mark.parametrize("n_datasets,seed", [(7, 1), (8, 2), pytest.param(9, 3, marks=pytest.mark.slow),
                                             pytest.param(10, 4, marks=pytest.mark.slow)])
def test_many_datasets_cyclic_equals_brute_force(n_datasets, seed):
    inst = tiny_instance(seed=seed, n_datasets=n_datasets, n_clusters=1, horizon=3, n_models=2,
                         all_switches=True, beta_high=0.2)
    assert inst.n_datasets == n_datasets
    _check_against_brute_force(inst, 30)


@pytest.mark.slow
def test_seven_datasets_two_clusters_equals_brute_force():
    inst = tiny_instance(seed=5, n_datasets=7, n_clusters=2, horizon=2, n_models=1, all_switches=True)
    _check_against_brute_force(inst, 20)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.slow
def test_cyclic_three_models_two_clusters_equals_brute_force(seed):
    inst = tiny_instance(seed=seed, n_datasets=2, n_clusters=2, horizon=4, n_models=3, all_switches=True)
    _check_against_brute_force(inst, 40)


@pytest.mark.parametrize("transfer,rule", [pytest.param("per_epoch", "intended", marks=pytest.mark.slow),
                                           ("once", "printed")])
def test_variants_equal_brute_force(transfer, rule):
    inst = tiny_instance(seed=7, n_datasets=2, n_clusters=2, horizon=4, n_models=3, all_switches=True,
                         transfer=transfer, rule=rule)
    _check_against_brute_force(inst, 30)


def test_signed_improvements_equal_brute_force():
    """Normal draws that are sometimes negative: no γ-dominance, every block length kept."""
    inst = tiny_instance(seed=4, n_datasets=3, n_clusters=1, horizon=4, n_models=2, all_switches=True)
    models = [m.model_dump() for m in inst.models]
    for m in models:
        m["improvement"] = {"kind": "normal", "mean": 1.0, "std": 1.2}
    inst = inst.with_changes(models=models)
    S = 30
    a = ScenarioSampler(inst, 0).in_sample(S).improvement
    assert (a < 0).any() and (a > 0).any()
    res = _check_against_brute_force(inst, S)
    assert res.status in ("optimal", "infeasible")


def test_infeasible_is_proven():
    inst = tiny_instance(seed=3, n_datasets=1, n_clusters=1, horizon=2, n_models=2, all_switches=True,
                         loss_max=-50.0)
    res = _check_against_brute_force(inst, 20)
    assert res.status == "infeasible" and "no plan" in res.message


# ------------------------------------------------- MILP formulations


@pytest.mark.parametrize("seed,all_switches", [pytest.param(0, False, marks=pytest.mark.slow),
                                                pytest.param(1, False, marks=pytest.mark.slow), (3, True),
                                                pytest.param(4, True, marks=pytest.mark.slow),
                                                pytest.param(5, True, marks=pytest.mark.slow),
                                                pytest.param(6, True, marks=pytest.mark.slow)])
def test_equals_milp_on_small_stochastic(seed, all_switches):
    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=2, horizon=7, n_models=3, all_switches=all_switches)
    S = 150
    ref = solve_milp(inst, scenarios=S, time_limit=BUDGET, formulation="fast")
    res = solve_general(inst, scenarios=S, time_limit=BUDGET)
    if ref.status == "infeasible":     # seed 3: no sequence reaches ℓmax in enough scenarios
        assert res.status == "infeasible", res.message
        return
    assert ref.status == "optimal", ref.message
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(ref.cost, rel=2e-4)
    _assert_plan_valid(inst, res, S)


@pytest.mark.slow
def test_equals_flow_with_two_datasets():
    inst = tiny_instance(seed=11, n_datasets=2, n_clusters=2, horizon=5, n_models=2, all_switches=True)
    S = 40
    ref = solve_milp(inst, scenarios=S, time_limit=BUDGET, formulation="flow")
    assert ref.status == "optimal", ref.message
    res = solve_general(inst, scenarios=S, time_limit=BUDGET)
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(ref.cost, rel=2e-4)


def test_node_limit_is_never_reported_optimal_without_proof():
    inst = tiny_instance(seed=2, n_datasets=1, n_clusters=2, horizon=7, n_models=3, all_switches=True)
    full = solve_general(inst, scenarios=150, time_limit=BUDGET)
    assert full.status == "optimal" and full.diagnostics["nodes"] > 5
    cut = solve_general(inst, scenarios=150, time_limit=BUDGET, node_limit=2)
    assert cut.status in ("feasible", "error")
    if cut.status == "feasible":
        assert cut.cost >= full.cost * (1 - 1e-9)
        assert cut.lower_bound <= full.cost * (1 + 1e-9)


# ------------------------------------------------------------ knapsack DP


@pytest.mark.parametrize("item_class,seed", [("uncorrelated", 0), ("strongly", 1), ("subset-sum", 2)])
def test_knapsack_equals_dp(item_class, seed):
    inst = generate("knapsack", item_class=item_class, n_items=6, R=30, horizon=6, seed=seed)
    opt = knapsack_optimum_from_instance(inst)
    res = solve_general(inst, scenarios=10, time_limit=BUDGET)
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(opt, rel=1e-6)


# ------------------------------------------------------------- interface


def test_dominated_classes_are_dropped_only_when_safe():
    inst = tiny_instance(seed=2, n_datasets=6, n_clusters=2, horizon=2, n_models=1)
    bits, vol, gam, beta, lists = cluster_classes(inst, nonneg=True)
    assert bits.shape[0] == 63
    for n, keep in enumerate(lists):
        assert 0 < len(keep) <= 63
        # no kept class is dominated by any class
        for i in keep:
            dom = (gam >= gam[i]) & (vol <= vol[i]) & (beta[:, n] <= beta[i, n]) & (
                (gam > gam[i]) | (vol < vol[i]) | (beta[:, n] < beta[i, n]))
            assert not dom.any()
    _, _, _, _, all_lists = cluster_classes(inst, nonneg=False)
    assert all(len(x) == 63 for x in all_lists)


def test_too_many_datasets_is_an_error_result():
    inst = tiny_instance(seed=0, n_datasets=MAX_DATASETS_GENERAL + 1, n_clusters=1, horizon=1, n_models=1)
    res = solve_general(inst, scenarios=5, time_limit=10)
    assert res.status == "error" and "datasets" in res.message


@pytest.mark.parametrize("kw,name", [({"scenarios": 0}, "scenarios"), ({"gap": 1.5}, "gap"),
                                     ({"time_limit": -1}, "time_limit"), ({"seed": -2}, "seed"),
                                     ({"threads": 0}, "threads")])
def test_bad_options_name_the_option(kw, name):
    inst = tiny_instance(seed=0, horizon=2)
    with pytest.raises(SolverError, match=name):
        solve_general(inst, **kw)


# ------------------------------------------------- reached through solve()


def test_fast_routes_many_datasets_to_general_and_matches_brute_force():
    """Beyond the matrix formulations' dataset limit, ``fast`` (the default
    of ``solve(instance, "milp")``) must not refuse: it dispatches to
    ``general``, whose optimum equals exhaustive search."""
    from deplbench.formulations.milp import MAX_DATASETS
    from deplbench.solvers.run import solve

    inst = tiny_instance(seed=1, n_datasets=MAX_DATASETS + 1, n_clusters=1, horizon=4, n_models=2,
                         all_switches=True)
    res = solve(inst, "milp", scenarios=30, time_limit=None, evaluate=False)
    assert res.status == "optimal", res.message
    assert res.diagnostics["variant"] == "general"
    ref = _check_against_brute_force(inst, 30)
    assert res.cost == pytest.approx(ref.cost, rel=1e-6)


@pytest.mark.slow
def test_general_is_forceable_and_refuses_scip_by_name():
    from deplbench.solvers.run import solve

    inst = tiny_instance(seed=2, n_datasets=1, n_clusters=2, horizon=5, n_models=2, all_switches=True)
    forced = solve(inst, "milp", scenarios=20, time_limit=None, formulation="general", evaluate=False)
    flow = solve(inst, "milp", scenarios=20, time_limit=None, formulation="flow", evaluate=False)
    assert forced.status == flow.status == "optimal", (forced.message, flow.message)
    assert forced.diagnostics["variant"] == "general"
    assert forced.cost == pytest.approx(flow.cost, rel=2e-4)
    # refused before any build, naming the setting (the CLI's exit 2), not an `error` result after it
    with pytest.raises(SolverError, match="solver: 'scip' cannot run the 'general' formulation"):
        solve(inst, "milp", scenarios=20, time_limit=None, formulation="general", solver="scip", evaluate=False)


# ------------------------------------------- scenario-group bound (general_groups.py)


def _group_setup(seed, S):
    from deplbench.formulations.general.boxes import Box, ClusterTables, box_config
    from deplbench.formulations.general.groups import GroupPool, GroupTables
    from deplbench.formulations.general.search import BlockSearch, Problem

    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=2, horizon=5, n_models=3, all_switches=True)
    sc = ScenarioSampler(inst, 0).in_sample(S)
    p = allowed_violations(inst.omega, S)
    prob = Problem(inst, inst.run_scale[None] * sc.improvement, sc.jump, p)
    _, vol, gam, beta, lists = cluster_classes(inst, prob.nonneg)
    cfg = box_config(Box([(0, len(x)) for x in lists]), ClusterTables(lists, vol, gam, beta))
    search = BlockSearch(prob, cfg, 1.0, inst.horizon, 10.0)
    pool = GroupPool(prob, np.argsort(-search.scenario_root_bounds(), kind="stable"))
    pool.extend(search)
    return prob, search, pool, GroupTables(pool, search)


def _feasible_sequence_weights(prob, search, seqs) -> dict:
    """Those of ``seqs`` (virtual-model sequences of ``search``) that leave at
    most p scenarios above ℓmax, with their weights (tiny instances)."""
    feas = {}
    for seq in seqs:
        v = np.array(seq)
        losses = prob.losses(search.vm[v], search.vgamma[v])
        if np.count_nonzero(losses > prob.lmax + 1e-9) <= prob.p:
            feas[seq] = float(search.w[v].sum())
    return feas


def _all_sequences(search):
    """Every virtual-model sequence of 1..kmax epochs the switch graph allows."""
    out, frontier = [], [(v,) for v in range(search.nv)]
    while frontier:
        out += frontier
        nxt = []
        for seq in frontier:
            if len(seq) < search.kmax:
                nxt += [seq + (u,) for u in [seq[-1]] + [u for u, _ in search.succ[seq[-1]]]]
        frontier = nxt
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_group_bound_is_below_every_feasible_completion(seed):
    """At every prefix node (k, v, L) of a tiny cyclic instance, the group bound,
    its node-level re-optimisation and the full completion bound never exceed
    the cheapest completion that leaves at most p scenarios above ℓmax
    (exhaustive enumeration of all sequences)."""
    S = 40
    prob, search, pool, tables = _group_setup(seed, S)
    assert prob.p >= 1 and len(pool.groups) == prob.p + 1
    assert sorted(np.concatenate(pool.groups).tolist()) == list(range(S))     # a partition
    seqs = _all_sequences(search)
    feas = _feasible_sequence_weights(prob, search, seqs)
    assert feas, "the instance should have feasible plans"
    best_total = min(feas.values())
    assert tables.root() <= best_total + 1e-9
    assert tables.root() > 0.5 * best_total          # and it is not a trivial bound
    assert search.root_bound() - search.const <= best_total + 1e-9
    checked = 0
    for pre in seqs:
        if len(pre) >= search.kmax:
            continue
        rest = [w - float(search.w[list(pre)].sum()) for s, w in feas.items() if s[:len(pre)] == pre]
        if not rest:
            continue
        v = np.array(pre)
        k = len(pre)
        L = prob.losses(search.vm[v], search.vgamma[v])
        b = float(tables.bound(np.array([k]), int(pre[-1]), L[:, None])[0])
        cb = float(search.completion_bound(np.array([k]), int(pre[-1]), L[:, None])[0])
        assert b <= min(rest) + 1e-7 and cb <= min(rest) + 1e-7, (pre, b, cb, min(rest))
        checked += 1
    assert checked > 20


def test_fast_chooses_general_by_structure():
    """``fast`` dispatches to ``general`` for > MAX_DATASETS datasets and for cyclic
    switch graphs with few clusters; acyclic, order-invariant (knapsack) and
    many-cluster instances stay on the matrix chain; forced ``general`` refuses
    too many clusters by name."""
    from deplbench.formulations.general import MAX_CLUSTERS_GENERAL
    from deplbench.formulations.milp import MAX_DATASETS
    from deplbench.formulations.milp.catalog import (
        MAX_CLUSTERS_GENERAL_FAST,
        fast_prefers_general,
    )

    assert fast_prefers_general(generate("realistic", family="alexnet", switches="any"), MAX_DATASETS)[0]
    assert not fast_prefers_general(generate("realistic", family="alexnet"), MAX_DATASETS)[0]
    assert not fast_prefers_general(generate("knapsack", item_class="uncorrelated", n_items=6, R=30, horizon=6,
                                             seed=0), MAX_DATASETS)[0]
    assert fast_prefers_general(tiny_instance(seed=0, n_datasets=MAX_DATASETS + 1, n_clusters=1, horizon=2),
                                MAX_DATASETS)[0]
    many = tiny_instance(seed=0, n_clusters=MAX_CLUSTERS_GENERAL_FAST + 1, horizon=2, all_switches=True)
    assert fast_prefers_general(tiny_instance(seed=0, n_clusters=2, horizon=2, all_switches=True), MAX_DATASETS)[0]
    assert not fast_prefers_general(many, MAX_DATASETS)[0]
    huge = tiny_instance(seed=0, n_clusters=MAX_CLUSTERS_GENERAL + 1, horizon=1, n_models=1)
    res = solve_general(huge, scenarios=5, time_limit=10)
    assert res.status == "error" and "clusters" in res.message
    # acyclic with several data classes: the enumeration needs one, general beats flow
    two = tiny_instance(seed=0, n_clusters=2, horizon=2, n_datasets=2)
    choice, reason = fast_prefers_general(two, MAX_DATASETS)
    assert choice and "datasets" in reason
    assert not fast_prefers_general(tiny_instance(seed=0, n_clusters=2, horizon=2, n_datasets=1), MAX_DATASETS)[0]


def test_fast_keeps_the_matrix_chain_where_general_would_not_serve_the_call():
    """Several datasets prefer general by structure, but a requested LP file,
    another solver or bound tables beyond general's memory budget keep flow
    (general would refuse where flow solves); beyond MAX_DATASETS only general applies."""
    from deplbench.formulations.general.solver import MEMORY_LIMIT_GIB, general_memory_need
    from deplbench.formulations.milp import MAX_DATASETS
    from deplbench.formulations.milp.solve import _fast_uses_general

    two = tiny_instance(seed=0, n_clusters=2, horizon=2, n_datasets=2)
    assert _fast_uses_general(two, 200, None, "highs")
    assert not _fast_uses_general(two, 200, "model.lp", "highs")
    assert not _fast_uses_general(two, 200, None, "scip")
    huge_s = int(MEMORY_LIMIT_GIB * 2**30 / general_memory_need(two, 1)) + 1
    assert not _fast_uses_general(two, huge_s, None, "highs")
    many = tiny_instance(seed=0, n_datasets=MAX_DATASETS + 1, n_clusters=1, horizon=2)
    assert _fast_uses_general(many, 200, None, "scip")     # no matrix model applies: general says why


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow)])   # seed 2: flow takes ~10 s
def test_fast_on_several_data_classes_is_general_and_equals_flow(seed):
    """The route of several datasets on an acyclic graph gives flow's optimum
    (same scenarios), through the general search."""
    inst = tiny_instance(seed=seed, n_clusters=2, horizon=3, n_datasets=2)
    fast = solve_milp(inst, scenarios=60, seed=seed, time_limit=BUDGET, formulation="fast")
    flow = solve_milp(inst, scenarios=60, seed=seed, time_limit=BUDGET, formulation="flow")
    assert fast.diagnostics["variant"] == "general"
    assert fast.status == flow.status
    if flow.status == "optimal":
        assert fast.cost == pytest.approx(flow.cost, rel=1e-6)


# ------------- ≤ 3-block enumeration and the block-counting group bound (general_incumbent.py)


def _switches(seq) -> int:
    return sum(1 for a, b in zip(seq[:-1], seq[1:]) if a != b)


def _completion_value(prob, search, pre, rest, pi, L):
    """W(rest) − Σ_s π_s Δ_s(rest) after the prefix ``pre`` (exhaustive reference)."""
    from deplbench.formulations.general.groups import _delta

    G = np.arange(prob.S)
    if not rest:
        return 0.0
    d = _delta(prob, search, np.array(rest), G, len(pre), pre[-1] if pre else -1)
    return float(search.w[list(rest)].sum() - pi @ d)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.slow
def test_switch_counting_dp_equals_exhaustive_minimum(seed):
    """``_path`` with ``need`` switches (the block-counting DP) returns exactly the
    minimum of W − π·Δ over every completion with at least ``need`` switches, from
    the root and from every prefix, and the sequence it returns attains it; the
    vectorised ``GroupTables`` layers give the same numbers for every pool row."""
    from deplbench.formulations.general.groups import _path

    S = 12
    prob, search, pool, tables = _group_setup(seed, S)
    jidx = search.jump_index()
    seqs = _all_sequences(search)
    rng = np.random.default_rng(seed)
    layers, roots = tables._switch_layers(4)
    for _trial in range(3):
        pi = rng.uniform(0.0, 2.0, S) * search.mu_ref / S
        a = np.einsum("s,skm->km", pi, prob.a)
        J = np.einsum("s,skp->kp", pi, prob.J)
        for need in (1, 2, 3):
            # root: every plan with ≥ need switches
            ref = min([_completion_value(prob, search, (), s, pi, None) for s in seqs if _switches(s) >= need],
                      default=math.inf)
            val, seq = _path(search, jidx, a, J, 0, -1, need)
            assert val == pytest.approx(ref, abs=1e-9)
            if math.isfinite(val):
                assert _switches(tuple(seq)) >= need
                assert _completion_value(prob, search, (), tuple(seq), pi, None) == pytest.approx(val, abs=1e-9)
            for pre in seqs:
                if len(pre) >= search.kmax:
                    continue
                # completions of pre: sequences extending it (staying on pre[-1] allowed, as in the bound)
                rest = [s[len(pre):] for s in seqs if s[:len(pre)] == pre and len(s) > len(pre)]
                ok = [r for r in rest if _switches((pre[-1],) + r) >= need]
                ref = min([_completion_value(prob, search, pre, r, pi, None) for r in ok], default=math.inf)
                val, seq = _path(search, jidx, a, J, len(pre), pre[-1], need)
                assert val == pytest.approx(ref, abs=1e-9), (pre, need)
                if math.isfinite(val):
                    assert _switches((pre[-1],) + tuple(seq)) >= need
    # the tables (every π of the pool at once) against the single-π DP
    for r in range(0, pool.Pi.shape[0], max(1, pool.Pi.shape[0] // 5)):
        for need in (1, 2, 3):
            val, _ = _path(search, jidx, pool.a[r], pool.J[r], 0, -1, need)
            assert roots[need, r] == pytest.approx(val, abs=1e-9)
            for k in range(1, search.kmax):
                for v in range(search.nv):
                    val, _ = _path(search, jidx, pool.a[r], pool.J[r], k, v, need)
                    assert layers[k, v, need, r] == pytest.approx(val, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.slow
def test_switch_counting_group_bound_is_below_every_feasible_completion(seed):
    """With multipliers tuned for ≥ 3-block plans, the group bound counting only
    completions with ≥ c more switches never exceeds the cheapest SAA-feasible
    completion with that many switches (exhaustive), at the root and every prefix."""
    from deplbench.formulations.general.groups import GroupTables

    S = 40
    prob, search, pool, _ = _group_setup(seed, S)
    search.min_blocks = 3
    pool.extend(search)           # Kelley with need = 2 at the root
    tables = GroupTables(pool, search)
    seqs = _all_sequences(search)
    feas = _feasible_sequence_weights(prob, search, seqs)
    for need in (1, 2):
        many = [w for s, w in feas.items() if _switches(s) >= need]
        assert tables.root(need) <= min(many, default=math.inf) + 1e-9
    assert search.root_bound() - search.const <= min(
        [w for s, w in feas.items() if _switches(s) >= 2], default=math.inf) + 1e-9
    checked = 0
    for pre in seqs:
        if len(pre) >= search.kmax:
            continue
        v = np.array(pre)
        L = prob.losses(search.vm[v], search.vgamma[v])
        W = float(search.w[v].sum())
        for need in (1, 2):
            rest = [w - W for s, w in feas.items() if s[:len(pre)] == pre and len(s) > len(pre)
                    and _switches(s[len(pre) - 1:]) >= need]
            if not rest:
                continue
            b = float(tables.bound(np.array([len(pre)]), int(pre[-1]), L[:, None], need)[0])
            cb = float(search.completion_bound(np.array([len(pre)]), int(pre[-1]), L[:, None], need=need)[0])
            assert b <= min(rest) + 1e-7 and cb <= min(rest) + 1e-7, (pre, need, b, min(rest))
            checked += 1
    assert checked > 10


def _short_plan_setup(seed, S, horizon=6):
    from deplbench.formulations.general.boxes import Box, ClusterTables, box_config
    from deplbench.formulations.general.leaves import Leaves
    from deplbench.formulations.general.search import BlockSearch, Problem

    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=2, horizon=horizon, n_models=3, all_switches=True)
    sc = ScenarioSampler(inst, 0).in_sample(S)
    prob = Problem(inst, inst.run_scale[None] * sc.improvement, sc.jump, allowed_violations(inst.omega, S))
    _, vol, gam, beta, lists = cluster_classes(inst, prob.nonneg)
    cfg = box_config(Box([(0, len(x)) for x in lists]), ClusterTables(lists, vol, gam, beta))
    return inst, prob, BlockSearch(prob, cfg, 1.0, inst.horizon, 10.0), Leaves(prob, inst)


@pytest.mark.parametrize("seed", [0, 1, 4])
@pytest.mark.slow
def test_short_plan_enumeration_finds_the_best_short_plan(seed):
    """``cover`` (every plan of ≤ 3 blocks with the shortest feasible last block)
    returns the cheapest SAA-feasible plan of ≤ 3 blocks — checked against every
    sequence of the horizon — and registers the coverage only when complete."""
    from deplbench.formulations.general.incumbent import MAX_BLOCKS, cover, dual_bounds
    from deplbench.formulations.general.leaves import Leaves
    from deplbench.formulations.general.search import config_key

    S = 30
    inst, prob, search, leaves = _short_plan_setup(seed, S, horizon=5)
    out = cover(prob, search, leaves, 1e-6)
    assert out["complete"] and prob.covered[config_key(search.cfg)] == MAX_BLOCKS + 1
    assert search.min_blocks == MAX_BLOCKS + 1
    ref = Leaves(prob, inst)
    best = math.inf
    for seq in _all_sequences(search):
        if _switches(seq) > MAX_BLOCKS - 1:
            continue
        v = np.array(seq)
        losses = prob.losses(search.vm[v], search.vgamma[v])
        if np.count_nonzero(losses > prob.lmax + 1e-9) <= prob.p:
            lb, exact = ref.evaluate(search, v, 1e-6)
            best = min(best, exact)
            # the λ-grid bound that orders the candidates is a lower bound on the cost of every
            # plan that uses all clusters of the assignment (it charges their transfers β)
            counts = np.bincount(v, minlength=search.nv)[None, :].astype(float)
            assert dual_bounds(prob, search, counts)[0] - float(search.cfg.beta.sum()) <= exact * (1 + 1e-9) + 1e-9
    assert leaves.best_cost == pytest.approx(best, rel=1e-9)
    # a second call on the same assignment does not run again
    assert cover(prob, search, leaves, 1e-6)["skipped"] == "seen"


@pytest.mark.parametrize("seed,jump_loc", [(0, None), (3, None), (6, None), (1, -0.4), (5, -0.4)])
@pytest.mark.slow
def test_short_plan_coverage_does_not_change_the_optimum(seed, jump_loc):
    """The solve with the ≤ 3-block enumeration and the block-counting bound equals
    the solve without them and the flow MILP; negative jump means (every switch
    lowers the loss) make optima with four or more blocks, which only the
    block-counting search can find once the short plans are covered."""
    from deplbench.formulations.general.settings import GeneralSettings

    inst = tiny_instance(seed=seed, n_datasets=1, n_clusters=2, horizon=7, n_models=3, all_switches=True)
    if jump_loc is not None:
        sw = [s.model_dump() for s in inst.switches]
        for s in sw:
            s["jump"]["loc"] = jump_loc
        inst = inst.with_changes(switches=sw)
    S = 60
    on = solve_general(inst, scenarios=S, time_limit=BUDGET)
    off = solve_general(inst, scenarios=S, time_limit=BUDGET, settings=GeneralSettings(short_plans=False))
    assert off.params["general_settings"]["short_plans"] is False
    ref = solve_milp(inst, scenarios=S, time_limit=BUDGET, formulation="flow")
    assert on.status == off.status == ref.status, (on.message, off.message, ref.message)
    if on.status == "infeasible":
        return
    assert on.status == "optimal"
    assert on.diagnostics["incumbent_seed"]["complete"]
    assert on.cost == pytest.approx(off.cost, rel=1e-4) and on.cost == pytest.approx(ref.cost, rel=2e-4)
    assert on.lower_bound <= ref.cost * (1 + 1e-4)
    _assert_plan_valid(inst, res=on, S=S)
    if jump_loc is not None:
        models = [e.model for e in on.plan.epochs]
        assert _switches(models) >= 3      # the instance does exercise ≥ 4-block plans


def test_a_covered_assignment_covers_a_subset_only_without_transfers():
    """Coverage passes from an assignment to one of its cluster subsets (same
    classes) only when every left-out cluster has β = 0: the covered run's
    bounds charge the β of all its clusters."""
    from deplbench.formulations.general.boxes import Box, ClusterTables, box_config
    from deplbench.formulations.general.search import config_key, covered_blocks

    inst, prob, search, _ = _short_plan_setup(0, 20, horizon=3)
    _, vol, gam, beta, lists = cluster_classes(inst, prob.nonneg)
    key = config_key(search.cfg)
    only0 = box_config(Box([(0, 1), None]), ClusterTables(lists, vol, gam, beta))
    only1 = box_config(Box([None, (0, 1)]), ClusterTables(lists, vol, gam, beta))
    assert covered_blocks(prob, only0) == covered_blocks(prob, only1) == 1
    prob.covered[key] = 4
    prob.covered_beta[key] = (0.0, 0.3)          # cluster 0 free, cluster 1 paid
    assert covered_blocks(prob, search.cfg) == 4
    assert covered_blocks(prob, only1) == 4      # leaves out cluster 0 (β = 0)
    assert covered_blocks(prob, only0) == 1      # leaves out cluster 1 (β = 0.3): not covered
