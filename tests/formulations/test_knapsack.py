"""The covering-knapsack DP oracle and the Property 1 reduction (SPEC §3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.errors import InstanceError
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.exact.knapsack import covering_dp, knapsack_items, knapsack_optimum_from_instance
from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.instances.generators import KNAPSACK_CLASSES, generate
from deplbench.instances.model import parse_instance


def exhaustive(weights, values, target, max_items):
    """Minimum Σw over all multisets of ≤ max_items items with Σv ≥ target."""
    best = math.inf
    n = len(weights)
    for size in range(max_items + 1):
        for combo in itertools.combinations_with_replacement(range(n), size):
            if sum(values[i] for i in combo) >= target:
                best = min(best, sum(weights[i] for i in combo))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_dp_matches_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    max_items = int(rng.integers(0, 5))
    w = rng.integers(1, 30, n)
    v = rng.integers(0, 25, n)
    target = int(rng.integers(0, max(1, max_items) * 25))
    weight, counts = covering_dp(w, v, target, max_items)
    expected = exhaustive(w.tolist(), v.tolist(), target, max_items)
    assert weight == expected
    if math.isfinite(expected):
        # The returned multiset is a witness: it reaches the target within
        # the cardinality bound at exactly the optimal weight.
        assert counts.sum() <= max_items
        assert counts @ v >= target
        assert counts @ w == weight
    else:
        assert counts is None


def test_dp_hand_case_and_edge_cases():
    sol = covering_dp([3, 5], [4, 7], target=11, max_items=2)
    assert sol.feasible and sol.weight == 8 and sol.counts.tolist() == [1, 1]
    # Repetition is allowed: three copies of the light item beat any mix.
    assert covering_dp([2, 7], [5, 9], target=15, max_items=3).counts.tolist() == [3, 0]
    # A non-positive target needs no epoch; a fractional one is rounded up.
    assert covering_dp([4], [3], target=0, max_items=5).weight == 0
    assert covering_dp([4, 1], [3, 2], target=2.5, max_items=5).weight == 2   # needs Σv ≥ 3
    infeasible = covering_dp([1, 2], [3, 4], target=9, max_items=2)
    assert not infeasible.feasible and infeasible.weight == math.inf


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(weights=[float("inf"), 2], values=[1, 1], target=1, max_items=1), "weights"),
        (dict(weights=[1, 2], values=[1.5, 1], target=1, max_items=1), "values"),
        (dict(weights=[1, 2], values=[1e300, 1], target=1, max_items=1), "values"),
        (dict(weights=[0, 2], values=[1, 1], target=1, max_items=1), "weights"),
        (dict(weights=[1, 2], values=[-1, 1], target=1, max_items=1), "values"),
        (dict(weights=[1, 2], values=[1], target=1, max_items=1), "equal length"),
        (dict(weights=[1], values=[1], target=float("nan"), max_items=1), "target"),
        (dict(weights=[1], values=[1], target=1, max_items=-1), "max_items"),
        (dict(weights=[1], values=[1], target=1, max_items=True), "max_items"),
        (dict(weights=[], values=[], target=1, max_items=1), "weights"),
    ],
)
def test_dp_rejects_bad_input(kwargs, field):
    with pytest.raises(InstanceError, match=field):
        covering_dp(**kwargs)


def _plan_for_counts(instance, counts):
    models = [instance.models[i].name for i, c in enumerate(counts) for _ in range(int(c))]
    return plan_from_choices(instance, models, ["C0"] * len(models), {"C0": ["d0"]})


@pytest.mark.parametrize("item_class", KNAPSACK_CLASSES)
def test_reduction_cost_is_square_of_weight_over_tmax(item_class):
    inst = generate("knapsack", item_class=item_class, n_items=8, horizon=6, time_max=3.0, seed=4)
    w, v = knapsack_items(inst)
    sol = covering_dp(w, v, inst.initial_loss - inst.loss_max, inst.horizon)
    assert sol.feasible
    plan = _plan_for_counts(inst, sol.counts)
    ev = evaluate_plan(inst, plan, samples=100)
    # SPEC §3: the optimal real-x cost of the DP's epoch multiset is (Σw)²/Tmax.
    assert ev.cost == pytest.approx(sol.weight**2 / inst.time_max, rel=1e-9)
    assert ev.cost == pytest.approx(knapsack_optimum_from_instance(inst), rel=1e-12)
    assert ev.exact and ev.feasible and ev.quantile <= inst.loss_max
    # Capacity never binds in the reduction (the generator's bound).
    assert max(plan.allocations) < inst.clusters[0].capacity


def test_reduction_hand_checked_instance():
    # Items (w, v) = (3, 4) and (5, 7); target 11 within 2 epochs; Tmax = 2.
    # Optimum: one epoch of each, Σw = 8, cost 8²/2 = 32.
    data = {
        "name": "hand", "initial_loss": 11, "loss_max": 0, "omega": 0.5, "time_max": 2.0, "horizon": 2,
        "models": [
            {"name": "a", "size": 0, "compute": 9, "loss_scale": 4, "decay": "none",
             "improvement": {"kind": "point", "value": 1}},
            {"name": "b", "size": 0, "compute": 25, "loss_scale": 7, "decay": "none",
             "improvement": {"kind": "point", "value": 1}},
        ],
        "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0}},
                     {"from_model": "b", "to_model": "a", "jump": {"kind": "point", "value": 0}}],
        "clusters": [{"name": "C0", "capacity": 1000, "unit_cost": 1, "bandwidth": 1}],
        "datasets": [{"name": "d0", "size": 1, "usefulness": 1}],
        "provenance": {"items": {"weights": [3, 5], "values": [4, 7]}},
    }
    inst = parse_instance(data)
    best = evaluate_plan(inst, plan_from_choices(inst, ["a", "b"], ["C0"] * 2, {"C0": ["d0"]}), samples=100)
    assert best.cost == pytest.approx(32.0) and best.feasible
    # x_k ∝ w_k: 3·8/2 = 12 and 5·8/2 = 20.
    plan = plan_from_choices(inst, ["a", "b"], ["C0"] * 2, {"C0": ["d0"]})
    assert plan.allocations == pytest.approx([12.0, 20.0])
    worse = evaluate_plan(inst, plan_from_choices(inst, ["b", "b"], ["C0"] * 2, {"C0": ["d0"]}), samples=100)
    assert worse.feasible and worse.cost == pytest.approx(50.0)
    short = evaluate_plan(inst, plan_from_choices(inst, ["a", "a"], ["C0"] * 2, {"C0": ["d0"]}), samples=100)
    assert not short.feasible and short.quantile == pytest.approx(3.0)  # 11 − 8
    assert knapsack_optimum_from_instance(inst) == pytest.approx(32.0)


def _brute_force_cost(inst):
    """Cheapest feasible plan over every model sequence (one cluster, one dataset)."""
    names = [m.name for m in inst.models]
    best = math.inf
    for k in range(1, inst.horizon + 1):
        for seq in itertools.product(names, repeat=k):
            plan = plan_from_choices(inst, list(seq), ["C0"] * k, {"C0": ["d0"]})
            ev = evaluate_plan(inst, plan, samples=100, trajectory=False)
            if ev.feasible:
                best = min(best, ev.cost)
    return best


@pytest.mark.parametrize("seed", range(3))
def test_dp_optimum_equals_brute_force_over_all_plans(seed):
    inst = generate("knapsack", item_class="uncorrelated", n_items=3, R=20, horizon=3, seed=seed)
    assert _brute_force_cost(inst) == pytest.approx(knapsack_optimum_from_instance(inst), rel=1e-9)


def test_dp_accepts_real_weights():
    # Only the values index the DP table; real weights sqrt(c) are exact.
    sol = covering_dp([1.5, 2.25], [2, 3], target=4, max_items=2)
    assert sol.weight == pytest.approx(3.0) and sol.counts.tolist() == [2, 0]


def test_optimum_from_instance_refuses_non_knapsack_structure():
    inst = generate("realistic", family="alexnet")
    with pytest.raises(InstanceError, match="knapsack reduction"):
        knapsack_optimum_from_instance(inst)


def test_optimum_from_instance_infeasible_is_inf():
    inst = generate("knapsack", n_items=4, horizon=3, target_fraction=1.0, seed=1)
    assert math.isfinite(knapsack_optimum_from_instance(inst))  # K̄ copies of the best item
    tighter = inst.with_changes(horizon=2)
    assert knapsack_optimum_from_instance(tighter) == math.inf


# --------------------------------------------------------------------------
# the registered knapsack-dp solver derives its data from the instance
# (a stale provenance once produced a wrong ground truth)
# --------------------------------------------------------------------------


def _rescaled(inst, factor):
    data = inst.model_dump()
    for m in data["models"]:
        m["loss_scale"] *= factor
    return parse_instance(data)


def test_knapsack_dp_doubled_loss_scale_is_not_the_old_optimum():
    from deplbench.solvers.run import solve

    inst = generate("knapsack", item_class="uncorrelated", n_items=3, R=20, horizon=4, seed=2)
    old = solve(inst, "knapsack-dp", eval_samples=200)
    doubled = _rescaled(inst, 2.0)
    new = solve(doubled, "knapsack-dp", eval_samples=200)
    assert old.status == new.status == "optimal"
    truth = _brute_force_cost(doubled)
    assert new.cost == pytest.approx(truth, rel=1e-9)
    assert new.cost < old.cost  # twice the improvement per epoch: fewer/cheaper epochs suffice
    assert "provenance_mismatch" in new.diagnostics and "provenance_mismatch" not in old.diagnostics
    # the returned plan is the optimum, judged by the evaluator like any other plan
    assert new.evaluation["verdict"] == "feasible" and new.evaluation["cost"] == pytest.approx(truth, rel=1e-9)
    assert knapsack_optimum_from_instance(doubled) == pytest.approx(truth, rel=1e-9)


def test_knapsack_dp_refuses_what_it_cannot_solve_exactly():
    from deplbench.solvers.exact.knapsack_dp import KnapsackDP
    from deplbench.solvers.run import solve

    realistic = generate("realistic", family="alexnet")
    applies, reason = KnapsackDP.applies(realistic)
    assert not applies and "knapsack reduction" in reason
    res = solve(realistic, "knapsack-dp")
    assert res.status == "skipped" and res.message == reason and res.plan is None
    assert KnapsackDP.applies(generate("knapsack", n_items=3, R=20, horizon=3, seed=0)) == (True, "")
    inst = generate("knapsack", n_items=3, R=20, horizon=3, seed=0)
    half = _rescaled(inst, 0.5 + 1e-3)  # non-integral improvements
    res = solve(half, "knapsack-dp")
    assert res.status == "skipped" and "not an integer" in res.message
    # κ = 0: every plan within the deadline costs the same; the DP declines instead of an error
    free = inst.model_dump(by_alias=True)
    free["clusters"][0]["unit_cost"] = 0.0
    res = solve(parse_instance(free), "knapsack-dp", evaluate=False)
    assert res.status == "skipped" and "clusters[0].unit_cost" in res.message


def test_knapsack_dp_infeasible_and_listed():
    from deplbench.solvers.registry import available, solver_info
    from deplbench.solvers.run import solve

    inst = generate("knapsack", n_items=4, horizon=3, target_fraction=1.0, seed=1).with_changes(horizon=2)
    res = solve(inst, "knapsack-dp")
    assert res.status == "infeasible" and res.plan is None
    assert "knapsack-dp" in available() and solver_info("knapsack-dp")["exact"] is True
