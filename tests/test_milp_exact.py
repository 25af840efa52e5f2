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


@pytest.mark.parametrize("seed", [0, 1])
def test_spectral_lattice_verdict_never_contradicts_the_refined_bounds(seed):
    """The instance-wide lattice (depl-proven's quick check, milp-exact's scan)
    decides only what the refined bounds of the same sequence agree with."""
    from deplbench.formulations.exact_static import SpectralLattice

    inst = tiny_instance(seed, horizon=6, n_datasets=1)
    gam = inst.data_effect(inst.all_datasets)[1]
    lat = SpectralLattice(inst, gam, inst.horizon, ExactSettings())
    fine = ExactSettings(decide=True, start_steps=256, max_work=4_000_000)
    rng = np.random.default_rng(seed)
    decided = 0
    for _ in range(20):
        K = int(rng.integers(1, inst.horizon + 1))
        seq = [int(rng.integers(inst.n_models))]
        for _ in range(K - 1):   # stay, or move along an allowed switch
            nxt = [b for b in range(inst.n_models) if inst.allowed[seq[-1], b]]
            seq.append(int(rng.choice(nxt)))
        b = violation_bounds(inst, seq, gam, fine)
        v = lat.verdict(seq)
        if v == "proven feasible":
            assert b.p_lo <= 1 - inst.omega, (seq, b)
        elif v == "proven infeasible":
            assert b.p_hi > 1 - inst.omega, (seq, b)
        decided += v != "undecided"
    assert decided >= 8       # the lattice is a useful check, not a shrug


def test_count_floor_never_exceeds_a_plans_cost():
    """Data.count_floor: a valid lower bound (it prunes milp-exact's refinements
    and orders depl-proven's descent), and not a vacuous one."""
    from deplbench.formulations.milp.data import Data
    from deplbench.instances.generators import generate

    inst = generate("realistic", family="alexnet", loss_max=9)
    data = Data(inst, 1, 0)
    for algo in ("depl", "best-exp", "one-switch"):
        res = solve(inst, algo, evaluate=False)
        counts = np.bincount([inst.model_index[e.model] for e in res.plan.epochs], minlength=inst.n_models)
        floor = data.count_floor(counts)
        assert floor <= res.cost * (1 + 1e-9)
        assert floor >= 0.5 * res.cost          # tight enough to rank sequences
    assert data.count_floor(np.zeros(inst.n_models)) <= 0.0


@pytest.mark.parametrize("delta", [1e-3, 5e-3, 1e-2])
def test_spectral_lattice_on_constant_terms_judges_the_true_final_loss(delta):
    """Every term a point mass: the lattice's shift of ℓmax onto the grid must
    not move the verdict (a final loss δ above ℓmax is infeasible, δ below
    feasible), whatever the fractional part φ of the shift."""
    from deplbench.formulations.exact_static import SpectralLattice
    from deplbench.formulations.exact_violation import sequence_terms
    from deplbench.instances.generators import generate

    base = generate("knapsack", item_class="uncorrelated", n_items=6, R=30, horizon=6, seed=0)
    gam = base.data_effect(base.all_datasets)[1]
    seq = [0, 0, 1, 1, 1]
    const, terms = sequence_terms(base, seq, gam)
    assert not terms                                     # a deterministic final loss
    for loss_max, expected in ((const - delta, "proven infeasible"), (const + delta, "proven feasible")):
        inst = base.with_changes(loss_max=loss_max)
        lat = SpectralLattice(inst, gam, inst.horizon, ExactSettings())
        assert lat.verdict(seq) == expected, (loss_max, lat.phi)
        assert violation_bounds(inst, seq, gam).verdict == expected
