"""milp-exact (formulations/exact_static.py) against brute force with exact probabilities."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from deplbench.formulations.allocation import plan_from_choices
from deplbench.formulations.evaluate import evaluate_plan, transfer_cost
from deplbench.formulations.exact_violation import ExactSettings, violation_bounds
from deplbench.solvers.run import solve
from deplbench.solvers.registry import get_solver

from milp_instances import tiny_instance


def _brute(inst):
    """(min cost over proven-feasible sequences, min cost over sequences not proven infeasible)."""
    names = [m.name for m in inst.models]
    clusters = [c.name for c in inst.clusters]
    fine = ExactSettings(target_width=1e-6, decide=True, max_work=4_000_000)
    best_u = best_l = np.inf
    for K in range(1, inst.horizon + 1):
        for seq in itertools.product(range(inst.n_models), repeat=K):
            if any(not inst.allowed[a, b] for a, b in zip(seq, seq[1:])):
                continue
            gam = inst.data_effect(inst.all_datasets)[1]
            b = violation_bounds(inst, seq, gam, fine)
            cost = np.inf
            for cl in itertools.product(clusters, repeat=K):
                data = {c: list(inst.all_datasets) for c in set(cl)}
                plan = plan_from_choices(inst, [names[m] for m in seq], list(cl), data)
                if plan is not None:
                    cost = min(cost, sum(inst.unit_cost[inst.cluster_index[e.cluster]] * e.allocation
                                         for e in plan.epochs) + transfer_cost(inst, plan))
            if b.p_hi <= 1 - inst.omega:
                best_u = min(best_u, cost)
            if not b.p_lo > 1 - inst.omega:
                best_l = min(best_l, cost)
    return best_u, best_l


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equals_brute_force_with_exact_probabilities(seed):
    inst = tiny_instance(seed, horizon=4, n_datasets=1)
    res = solve(inst, "milp-exact", eval_samples=1000)
    ub, lb = _brute(inst)
    if not np.isfinite(ub):
        assert res.status in ("infeasible",) or res.cost is None
        return
    assert res.status == "optimal", res.message
    assert res.cost == pytest.approx(ub, rel=1e-6)
    assert res.lower_bound <= ub * (1 + 1e-9)
    assert res.lower_bound == pytest.approx(lb, rel=1e-4)
    # the returned plan is proven feasible by the exact bounds (never reported infeasible)
    assert res.evaluation["exact_verdict"] == "proven feasible"


@pytest.mark.slow
def test_a_plan_proven_feasible_is_never_reported_infeasible():
    inst = tiny_instance(5, horizon=4, n_datasets=1)
    res = solve(inst, "milp-exact", eval_samples=1000)
    assert res.plan is not None
    ev = evaluate_plan(inst, res.plan, samples=1000, exact=True)
    assert ev.violation_hi <= 1 - inst.omega and ev.exact_verdict == "proven feasible"
    assert res.status != "infeasible"


def test_does_not_apply_on_cycles_or_several_datasets_and_says_certify():
    for inst in (tiny_instance(0, all_switches=True), tiny_instance(0, n_datasets=2)):
        ok, why = get_solver("milp-exact").applies(inst)
        assert not ok and "certify" in why
        res = get_solver("milp-exact")().run(inst, time_limit=10.0, gap=1e-4)
        assert res.status == "error" and "certify" in res.message and "\n" not in res.message


def test_registered_as_exact_static_reference():
    cls = get_solver("milp-exact")
    assert cls.exact and cls.reference == "exact-static"


@pytest.mark.slow
def test_bracket_contains_certify_ub_plan_cost_or_explains_why_not():
    from deplbench.solvers.certified import certify

    inst = tiny_instance(1, horizon=4, n_datasets=1)
    res = solve(inst, "milp-exact", evaluate=False)
    b = certify(inst, replications=4, scenarios=200, validation=20_000, risk_grid=(0.8,), grid_seeds=1,
                time_limit=30.0, target_width=None)
    up = b["upper_bound"]
    assert up is not None and res.cost is not None
    ev = evaluate_plan(inst, up["plan"], samples=1000, exact=True)
    if ev.exact_verdict == "proven feasible":
        # a truly feasible plan costs at least the true optimum, hence at least LB
        assert res.lower_bound <= up["value"] * (1 + 1e-9)
    else:
        # certify's statistical statement failed on this seed: its UB plan is not truly feasible
        assert ev.violation_lo > 1 - inst.omega or ev.exact_verdict == "undecided"


def test_inconsistent_bracket_advice_names_a_disjoint_seed():
    from deplbench.solvers.certified import VALIDATION_SEED_OFFSET, _status, fresh_seed

    status, msg = _status({"value": 10.0}, {"value": 9.0}, None, False, 0.95, seed=7)
    assert status == "inconsistent" and f"--seed {fresh_seed(7)}" in msg and "voids" in msg
    used = set(range(7, 7 + 1000)) | {7 + VALIDATION_SEED_OFFSET, 8 + VALIDATION_SEED_OFFSET}
    s = fresh_seed(7)
    assert not used & (set(range(s, s + 1000)) | {s + VALIDATION_SEED_OFFSET, s + VALIDATION_SEED_OFFSET + 1})
