"""Unusable choices are removed before any solver sees them; extreme numbers never crash a solver.

Regression tests: a model with
compute 1e15/1e20 made the MILP fail and DepL raise ``IndexError`` (a NaN/inf
cast to int64); compute/size/dataset size 1e300, bandwidth 5e-324, Tmax
1e300 and an inverse-gamma shape 1e300 gave ``IndexError``/``OverflowError``;
DepL said ``infeasible`` at ω = 1e-6 and abandoned a cluster of capacity
1e300 (+12 % cost). Each test checks the status and, where the instance is
small, the cost against brute force.
"""

from __future__ import annotations

import copy
import warnings

import pytest

from deplbench.formulations.model.preprocess import reduce_instance
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import solve
from tests.instance_data import two_model_data

SMALL_EVAL = 2000


def small_data(**over):
    return two_model_data(**{"name": "pre", "loss_max": 7.0, "horizon": 4, **over})


def with_huge_model(compute: float):
    data = small_data()
    data["models"].append({**copy.deepcopy(data["models"][0]), "name": "huge", "compute": compute})
    data["switches"].append({"from_model": "huge", "to_model": "small",
                             "jump": {"kind": "normal", "mean": 0.2, "std": 0.05}})
    return parse_instance(data)


# ---------------------------------------------------------------------------- reduce_instance
def test_reduce_instance_removes_only_unusable_choices_and_keeps_names():
    inst = with_huge_model(1e15)
    red = reduce_instance(inst)
    assert [r["name"] for r in red.removed["models"]] == ["huge"]
    assert red.removed["clusters"] == [] and red.removed["datasets"] == []
    assert [m.name for m in red.instance.models] == ["big", "small"]
    assert [(s.from_model, s.to_model) for s in red.instance.switches] == [("big", "small")]
    # nothing unusable: the very same object comes back
    plain = parse_instance(small_data())
    assert reduce_instance(plain).instance is plain and not reduce_instance(plain).changed


def test_reduce_instance_cascades_to_clusters_and_datasets():
    data = small_data()
    # cluster B is too slow for every model; dataset d1 is too large for every (model, cluster)
    data["clusters"][1]["capacity"] = 1e-6
    data["datasets"].append({"name": "d1", "size": 1e9, "usefulness": 1.0})
    red = reduce_instance(parse_instance(data))
    assert [r["name"] for r in red.removed["clusters"]] == ["B"]
    assert [r["name"] for r in red.removed["datasets"]] == ["d1"]
    assert red.instance.n_clusters == 1 and red.instance.n_datasets == 1


def test_nothing_usable_is_infeasible_with_the_reason():
    data = small_data()
    data["datasets"][0]["size"] = 1e300
    res = solve(parse_instance(data), "depl", eval_samples=SMALL_EVAL)
    assert res.status == "infeasible" and "no usable" in res.message
    assert res.diagnostics["preprocess"]["removed"]["datasets"][0]["name"] == "d0"


@pytest.mark.parametrize("compute", [1e15, 1e20, 1e300])
@pytest.mark.parametrize("algo", ["brute-force", "depl", "best-exp", "static-learn", "one-switch", "pact"])
def test_unusable_model_changes_no_result(algo, compute):
    """The huge model cannot run within Tmax: every solver answers as without it."""
    base = solve(parse_instance(small_data()), algo, eval_samples=SMALL_EVAL)
    res = solve(with_huge_model(compute), algo, eval_samples=SMALL_EVAL)
    assert res.status == base.status != "error", res.message
    assert res.diagnostics["preprocess"]["removed"]["models"][0]["name"] == "huge"
    if base.plan is None:  # static-learn finds no plan here, with or without the huge model
        assert res.plan is None
        return
    assert res.cost == pytest.approx(base.cost, rel=1e-9)
    assert all(e.model != "huge" for e in res.plan.epochs)


def test_milp_with_an_unusable_model_matches_brute_force():
    pytest.importorskip("highspy")
    from deplbench.solvers.registry import available

    if "milp" not in available():
        pytest.skip("the MILP is not loadable in this tree right now")
    inst = with_huge_model(1e15)
    milp = solve(inst, "milp", scenarios=200, eval_samples=SMALL_EVAL)
    bf = solve(inst, "brute-force", scenarios=200, eval_samples=SMALL_EVAL)
    assert milp.status == bf.status == "optimal", milp.message
    assert milp.cost == pytest.approx(bf.cost, rel=1e-6)


def test_reduced_instance_keeps_the_original_scenarios():
    """The SAA optimum refers to ScenarioSampler(instance given, seed): a reduced instance's
    scenarios are the original's columns. The unusable model comes first, so drawing afresh
    without it would shift every other model's and every switch's draws."""
    import numpy as np

    from deplbench.formulations.model.scenarios import ScenarioSampler

    data = small_data()
    data["models"].insert(0, {**copy.deepcopy(data["models"][0]), "name": "huge", "compute": 1e15,
                              "improvement": {"kind": "normal", "mean": 0.3, "std": 0.1}})
    data["switches"].insert(0, {"from_model": "huge", "to_model": "small",
                                "jump": {"kind": "normal", "mean": 0.2, "std": 0.05}})
    inst = parse_instance(data)
    red = reduce_instance(inst).instance
    assert [m.name for m in red.models] == [m.name for m in inst.models[1:]]
    kept_sw = [j for j, sw in enumerate(inst.switches) if "huge" not in (sw.from_model, sw.to_model)]
    assert len(kept_sw) == len(red.switches) >= 1
    for seed in (0, 7):
        for draw in ("in_sample", "out_of_sample"):
            full = getattr(ScenarioSampler(inst, seed), draw)(50)
            cut = getattr(ScenarioSampler(red, seed), draw)(50)
            np.testing.assert_array_equal(cut.improvement, full.improvement[:, :, 1:])
            np.testing.assert_array_equal(cut.jump, full.jump[:, :, kept_sw])
    moved = red.with_changes(omega=0.8)          # a new target: the same scenarios
    np.testing.assert_array_equal(ScenarioSampler(moved, 3).in_sample(20).improvement,
                                  ScenarioSampler(inst, 3).in_sample(20).improvement[:, :, 1:])
    # the SAA solvers optimise over those scenarios: brute force on the given instance and
    # on the reduced one (whose sampler reads the original) agree
    a = solve(inst, "brute-force", scenarios=40, eval_samples=SMALL_EVAL)
    b = solve(red, "brute-force", scenarios=40, eval_samples=SMALL_EVAL)
    assert a.status == b.status and a.cost == pytest.approx(b.cost, rel=1e-12)


# ---------------------------------------------------------------------------- extreme numbers
def _mutated(path, value):
    data = generate("realistic", family="alexnet", seed=0).model_dump(by_alias=True)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return parse_instance(data)


@pytest.fixture(scope="module")
def alexnet_costs():
    inst = generate("realistic", family="alexnet", seed=0)
    return {a: solve(inst, a, check_samples=5000, eval_samples=SMALL_EVAL) for a in ("depl", "best-exp")}


EXTREMES = [
    (("models", 0, "compute"), 1e20),
    (("models", 0, "compute"), 1e300),
    (("models", 0, "size"), 1e300),
    (("clusters", 0, "bandwidth"), 1e-300),  # a subnormal one is refused at validation
    (("time_max",), 1e300),
    (("models", 0, "improvement", "shape"), 1e300),
]


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["depl", "best-exp"])
@pytest.mark.parametrize("path, value", EXTREMES, ids=[f"{p[-1]}={v:g}" for p, v in EXTREMES])
def test_extreme_values_give_a_status_not_a_crash(algo, path, value):
    inst = _mutated(path, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "invalid value encountered in cast"
        res = solve(inst, algo, check_samples=5000, eval_samples=SMALL_EVAL)
    assert res.status in ("feasible", "no_solution", "infeasible"), res.message
    if res.status == "infeasible":      # a heuristic's proof can only be the preprocessing's
        assert "no usable" in res.message, res.message
    if res.status == "feasible":
        # 2000 evaluation draws may leave best-exp's edge-of-target plan "undecided";
        # never a hard-constraint violation nor a clear miss
        assert res.evaluation["verdict"] in ("feasible", "undecided") and not res.evaluation["violations"]
        assert res.cost > 0


@pytest.mark.slow
def test_huge_capacity_cluster_is_not_abandoned(alexnet_costs):
    """Capacity 1e300 on cluster A1 once pushed every allocation level above
    the useful range, so DepL fell back on the other cluster (+12 %)."""
    base = alexnet_costs["depl"]
    inst = _mutated(("clusters", 0, "capacity"), 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = solve(inst, "depl", check_samples=5000, eval_samples=SMALL_EVAL)
    assert res.status == "feasible"
    # more capacity can only help; the (1+ε) stage may land anywhere within ε
    assert res.cost <= base.cost * (1 + 0.1)
    assert res.cost <= base.cost * 1.01


@pytest.mark.slow
def test_depl_at_tiny_omega_finds_a_plan():
    """ω = 1e-6: the Chernoff θ grid rejected every path; the proven Cantelli
    fallback must find one (the MILP finds a plan there too)."""
    inst = _mutated(("omega",), 1e-6)
    res = solve(inst, "depl", check_samples=5000, eval_samples=SMALL_EVAL)
    assert res.status == "feasible", res.message
    assert res.diagnostics["guarantee"] == "proven"
    assert res.evaluation["verdict"] == "feasible"


def test_tiny_omega_small_instance_matches_brute_force_status():
    data = small_data(omega=1e-6)
    inst = parse_instance(data)
    bf = solve(inst, "brute-force", scenarios=200, eval_samples=SMALL_EVAL)
    res = solve(inst, "depl", check_samples=2000, eval_samples=SMALL_EVAL)
    assert bf.status == "optimal"
    assert res.status == "feasible", res.message
    assert res.evaluation["verdict"] == "feasible"
