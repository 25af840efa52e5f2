"""The exhaustive solver: hand-checked optima, refusals, independence."""

from __future__ import annotations

import ast
import inspect
import math

import numpy as np
import pytest

from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.instances.model import parse_instance
from deplbench.solvers.exact import brute_force
from deplbench.solvers.run import solve
from tests.milp_instances import tiny_instance


def _one_model(loss_max=7.0, time_max=3.0, horizon=5, point=True):
    improvement = ({"kind": "point", "value": 1.0} if point
                   else {"kind": "normal", "mean": 1.0, "std": 0.3})
    return parse_instance({
        "name": "one", "initial_loss": 10.0, "loss_max": loss_max, "omega": 0.9, "time_max": time_max,
        "horizon": horizon,
        "models": [{"name": "m", "size": 0.0, "compute": 4.0, "loss_scale": 1.0, "decay": "none",
                    "improvement": improvement}],
        "clusters": [{"name": "A", "capacity": 100.0, "unit_cost": 1.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    })


def test_hand_checked_optimum():
    # 3 epochs of c = 4 on one uncapped cluster: (3·sqrt 4)² / Tmax = 36 / 3 = 12
    r = solve(_one_model(), "brute-force", scenarios=10, evaluate=False)
    assert r.status == "optimal" and r.plan.n_epochs == 3
    assert math.isclose(r.cost, 12.0, rel_tol=1e-12) and r.gap == 0.0


def test_random_loss_uses_the_saa_rule_on_the_given_scenarios():
    inst = _one_model(point=False, horizon=6)
    S, seed = 50, 4
    r = solve(inst, "brute-force", scenarios=S, seed=seed, evaluate=False)
    assert r.status == "optimal"
    K = r.plan.n_epochs
    sc = ScenarioSampler(inst, seed).in_sample(S)
    p = allowed_violations(inst.omega, S)
    assert sc.violations([0] * K, [1.0] * K, inst.loss_max) <= p
    # one epoch fewer fails the same SAA rule (the cost grows with K)
    assert K == 1 or sc.violations([0] * (K - 1), [1.0] * (K - 1), inst.loss_max) > p
    assert math.isclose(r.cost, (K * 2.0) ** 2 / inst.time_max, rel_tol=1e-9)


def test_infeasible_instance_has_a_reason():
    r = solve(_one_model(loss_max=1.0, horizon=4), "brute-force", scenarios=10, evaluate=False)
    assert r.status == "infeasible" and "quantile" in r.message and r.plan is None


def test_declines_instances_too_big_to_enumerate():
    """applies() says no exactly beyond LIMITS, naming the dimension; solve()
    then records ``skipped`` with that reason instead of running."""
    assert brute_force.BruteForce.applies(tiny_instance(0, horizon=6)) == (True, "")
    for inst, named in ((tiny_instance(0, horizon=7), "horizon = 7"),
                        (tiny_instance(0, n_clusters=3), "clusters = 3")):
        applies, reason = brute_force.BruteForce.applies(inst)
        assert not applies and named in reason
        r = solve(inst, "brute-force", scenarios=10, evaluate=False)
        assert r.status == "skipped" and r.message == reason and r.plan is None and r.runtime_s == 0.0


@pytest.mark.parametrize("rule", ["intended", "printed"])
def test_plans_respect_the_data_rule(rule):
    inst = tiny_instance(3, horizon=4, n_datasets=2, rule=rule, transfer="per_epoch")
    r = solve(inst, "brute-force", scenarios=30, seed=3, eval_samples=500)
    assert r.status == "optimal"
    trained = {e.cluster for e in r.plan.epochs}
    held = {c for c, ds in r.plan.datasets.items() if ds}
    assert trained <= held
    if rule == "printed":
        assert len(held) == 1
    else:
        assert held <= trained
    assert r.evaluation is not None and not r.evaluation["violations"]


def test_shares_no_code_with_the_milp():
    tree = ast.parse(inspect.getsource(brute_force))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported and not any("milp" in name for name in imported), imported


def test_enumeration_counts_every_allowed_sequence():
    inst = tiny_instance(1, horizon=3, n_clusters=1, all_switches=False)
    # m0→m1, m1→m2, m0→m2 plus staying: sequences of length 1..3
    allowed = inst.allowed
    expected = sum(1 for K in range(1, 4)
                   for seq in np.ndindex(*(3,) * K)
                   if all(allowed[a, b] for a, b in zip(seq, seq[1:])))
    got = sum(len(brute_force._model_sequences(inst, K)) for K in range(1, 4))
    assert got == expected


def test_bounds_of_all_cluster_sequences_are_each_plans_own():
    """``plan_bounds`` bounds every cluster sequence of a model sequence at once; each row —
    compute, communication, slack and bound — is bit for bit the one computed from that plan's
    own 1-D arrays (the sum of K terms squared as a scalar), so the search prunes as plan by
    plan. Over these rows x·x and pow(x, 2) differ on some sums (counted), so squaring the
    array would fail here."""
    import itertools

    from deplbench.formulations.model.allocation import sqrt_product

    inst = tiny_instance(seed=0, n_datasets=2, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    rng = np.random.default_rng(11)
    rows = differ = 0
    for K in (1, 6):
        C = np.array(list(itertools.product(range(inst.n_clusters), repeat=K)))
        for volume in rng.uniform(0.3, 30.0, (120 if K == 6 else 5, inst.n_clusters)):
            m = rng.integers(0, inst.n_models, K)
            computes, comms, slacks, bounds = brute_force.plan_bounds(inst, m, C, volume, 0.25)
            for row, c in enumerate(C):
                compute = inst.model_compute[m] * volume[c]
                comm = inst.model_size[m] / inst.bandwidth[c]
                slack = inst.time_max - comm.sum()
                root = np.sum(sqrt_product(compute, inst.unit_cost[c]))
                assert np.array_equal(computes[row], compute) and np.array_equal(comms[row], comm)
                assert slacks[row] == slack
                if slack > 0:
                    rows += 1
                    assert bounds[row] == root ** 2 / slack + 0.25
                    differ += float(root) * float(root) != float(root ** 2)
    assert rows > 1000 and differ > 0
