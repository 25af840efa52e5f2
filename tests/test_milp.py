"""The exact MILP (formulations/milp.py) against independent ground truths."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from deplbench.errors import SolverError
from deplbench.formulations import milp
from deplbench.formulations.allocation import allocate
from deplbench.formulations.evaluate import evaluate_plan
from deplbench.formulations.knapsack import knapsack_optimum_from_instance
from deplbench.formulations.scenarios import ScenarioSampler, allowed_violations
from deplbench.solvers.base import solve
from deplbench.solvers.brute_force import search as brute_force_search
from deplbench.instances.generators import generate
from milp_instances import tiny_instance


def _close(a, b, rtol=1e-6):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


# --------------------------------------------------------------------- cuts


@pytest.mark.parametrize("seed", range(6))
def test_cut_slope_is_the_gradient_of_F(seed):
    """g(λ*) at the KKT price of allocate() equals ∂F/∂N by central differences,
    the cut is tight at N and below F everywhere else (weak duality)."""
    rng = np.random.default_rng(seed)
    J = int(rng.integers(2, 5))
    c, kap = rng.uniform(0.5, 4, J), rng.uniform(0.2, 2, J)
    r, comm = rng.uniform(0.5, 3, J), rng.uniform(0, 0.2, J)
    N = rng.uniform(1, 4, J)
    T = float(np.sum(N * (c / r + comm)) * rng.uniform(1.05, 3))

    def F(n):  # real counts: allocate with every configuration scaled by its count
        return allocate(n * c, n * comm, n * kap, r, T)

    base = F(N)
    lam = base.time_price
    g = milp._phi(lam, c, kap, r) + lam * comm
    assert _close(float(N @ g - lam * T), base.cost, 1e-9)
    h = 1e-5
    for j in range(J):
        e = np.zeros(J)
        e[j] = h
        fd = (F(N + e).cost - F(N - e).cost) / (2 * h)
        assert abs(fd - g[j]) <= 1e-4 * max(1.0, abs(g[j])), (j, fd, g[j])
    for _ in range(20):
        other = rng.uniform(0.2, 4, J)
        f = F(other)
        if f.feasible:
            assert float(other @ g - lam * T) <= f.cost * (1 + 1e-9) + 1e-9


# ------------------------------------------------------------ brute force


CASES = [(seed, nd, tr, rule, seed % 2 == 1)
         for seed in range(3)
         for nd in (1, 2)
         for tr, rule in (("once", "intended"), ("per_epoch", "printed"))]


@pytest.mark.parametrize("seed,n_datasets,transfer,rule,cyclic", CASES)
def test_milp_equals_brute_force(seed, n_datasets, transfer, rule, cyclic):
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, transfer=transfer, rule=rule,
                         all_switches=cyclic)
    S = 40
    bf_cost, bf_plan, _ = brute_force_search(inst, S, seed)
    res = milp.solve_milp(inst, scenarios=S, seed=seed, time_limit=60)
    if bf_plan is None:
        assert res.status == "infeasible" and res.message
        return
    assert res.status == "optimal", res.message
    assert _close(res.cost, bf_cost), (res.cost, bf_cost)
    assert res.lower_bound <= res.cost * (1 + 1e-9) and res.gap <= 1e-4
    # the plan is what the result says: exact cost, constraints, in-sample SAA
    ev = evaluate_plan(inst, res.plan, samples=200, seed=1, trajectory=False)
    assert ev.constraints_ok, ev.violations
    assert _close(ev.cost, res.cost)
    sc = ScenarioSampler(inst, seed).in_sample(S)
    models = [inst.model_index[e.model] for e in res.plan.epochs]
    gammas = [inst.data_effect(res.plan.datasets[e.cluster])[1] for e in res.plan.epochs]
    assert sc.violations(models, gammas, inst.loss_max) <= allowed_violations(inst.omega, S)


def _handover_instance(rule: str):
    """3 deterministic epochs are needed; cheap cluster A is too slow for all
    three within Tmax, so the optimum hands over to the fast, dear cluster B."""
    from deplbench.instances.model import parse_instance

    return parse_instance({
        "name": "handover", "initial_loss": 10.0, "loss_max": 7.0, "omega": 0.9, "time_max": 2.5,
        "horizon": 4, "data_rule": rule,
        "models": [{"name": "m", "size": 0.0, "compute": 1.0, "loss_scale": 1.0, "decay": "none",
                    "improvement": {"kind": "point", "value": 1.0}}],
        "clusters": [{"name": "A", "capacity": 1.0, "unit_cost": 1.0, "bandwidth": 1.0},
                     {"name": "B", "capacity": 10.0, "unit_cost": 3.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    })


def test_data_rule_changes_the_optimum_and_both_solvers_follow():
    """Hand-checked: intended (6) lets A train two epochs at x = 1 and B one at
    x = 2 (cost 2 + 6 = 8); printed (6) keeps one cluster, all on B:
    (3·sqrt 3)²/2.5 = 10.8."""
    expected = {"intended": 8.0, "printed": 10.8}
    for rule, cost in expected.items():
        inst = _handover_instance(rule)
        bf_cost, bf_plan, _ = brute_force_search(inst, 20, 0)
        for form in ("fast", "flow", "naive"):
            res = milp.solve_milp(inst, scenarios=20, formulation=form)
            assert res.status == "optimal", (rule, form, res.message)
            assert _close(res.cost, cost, 1e-7) and _close(bf_cost, cost, 1e-7), (rule, form, res.cost, bf_cost)
        assert len({e.cluster for e in res.plan.epochs}) == (2 if rule == "intended" else 1)


# --------------------------------------------------------- formulations agree


@pytest.mark.parametrize("seed,n_datasets,cyclic", [(0, 1, False), (1, 2, True)])
def test_fast_flow_naive_and_pyomo_agree(seed, n_datasets, cyclic):
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, all_switches=cyclic,
                         transfer="per_epoch" if seed else "once")
    out = {}
    for form, backend in (("fast", "highs"), ("flow", "highs"), ("flow", "pyomo"), ("naive", "highs")):
        r = milp.solve_milp(inst, scenarios=30, seed=seed, formulation=form, backend=backend)
        assert r.status == "optimal", (form, backend, r.message)
        out[(form, backend)] = r.cost
    costs = list(out.values())
    assert all(_close(c, costs[0]) for c in costs), out


def test_realistic_enumeration_equals_flow():
    inst = generate("realistic", family="alexnet", loss_max=13)
    fast = milp.solve_milp(inst, scenarios=40, seed=3)
    flow = milp.solve_milp(inst, scenarios=40, seed=3, formulation="flow")
    assert fast.diagnostics["variant"] == "enumeration" and flow.diagnostics["variant"] == "flow"
    assert fast.status == flow.status == "optimal"
    assert _close(fast.cost, flow.cost)


# ------------------------------------------------------------- knapsack DP


@pytest.mark.parametrize("item_class,seed", [("uncorrelated", 0), ("strongly", 1), ("subset-sum", 2),
                                             ("inverse-strongly", 3)])
def test_knapsack_dp_between_bound_and_cost(item_class, seed):
    inst = generate("knapsack", item_class=item_class, n_items=10, R=100, horizon=10, seed=seed)
    dp = knapsack_optimum_from_instance(inst)
    for form in ("fast", "flow"):
        r = milp.solve_milp(inst, scenarios=1000, formulation=form, gap=1e-4)
        assert r.status == "optimal", r.message
        assert r.lower_bound <= dp * (1 + 1e-9) <= r.cost * (1 + 2e-9)
        assert r.gap <= 1e-4
        assert r.diagnostics["deterministic"] is True


# ---------------------------------------------------- bounds are valid


@pytest.mark.parametrize("seed,cyclic", [(0, False), (1, True), (2, True)])
def test_structural_bounds_hold_for_every_cheap_feasible_plan(seed, cyclic):
    """K_min, K_max and the tight big-M hold for every SAA-feasible plan with
    cost ≤ the incumbent (checked by enumerating every single-cluster plan)."""
    inst = tiny_instance(seed, horizon=5, n_clusters=1, all_switches=cyclic)
    data = milp._Data(inst, 60, seed)
    b = milp._structural_bounds(data, deadline=math.inf)
    assert not b.infeasible and b.incumbent is not None
    ub = b.incumbent.cost
    bigm = milp._tight_bigm(data, b.k_min, b.k_max, ub, b.lam)
    crude = data.l0 + np.maximum(0, data.J.max(axis=2)).sum(axis=1) - data.lmax
    assert np.all(bigm <= crude + 1e-9)        # tighter than ℓ(0) + all jumps
    assert np.mean(bigm) < 0.8 * np.mean(crude)
    checked = 0
    for K in range(1, inst.horizon + 1):
        for seq in itertools.product(range(inst.n_models), repeat=K):
            if any(not inst.allowed[a, b2] for a, b2 in zip(seq, seq[1:])):
                continue
            ch = data.evaluate(np.array(seq), np.zeros(K, int), np.zeros(K, int), {0: 0})
            if not ch.feasible_time or ch.violations > data.p or ch.cost > ub:
                continue
            checked += 1
            assert b.k_min <= K <= b.k_max
            assert np.all(ch.losses - data.lmax <= bigm + 1e-9)
    assert checked >= 1


# ------------------------------------------------------ statuses, options


def test_infeasible_quantile_has_a_reason():
    inst = tiny_instance(0, horizon=3, loss_max=0.5)       # far below what 3 epochs can reach
    r = milp.solve_milp(inst, scenarios=50)
    assert r.status == "infeasible" and r.plan is None
    assert "quantile" in r.message and "ℓmax" in r.message


def test_infeasible_time_has_a_reason():
    inst = tiny_instance(0, horizon=4, time_max=0.05)
    r = milp.solve_milp(inst, scenarios=50)
    assert r.status == "infeasible"
    assert "Tmax" in r.message


def test_tiny_time_limit_returns_without_raising():
    inst = generate("realistic", family="alexnet", loss_max=9)
    r = milp.solve_milp(inst, scenarios=300, formulation="flow", time_limit=1.0)
    assert r.status in ("time_limit", "optimal")
    if r.status == "time_limit":
        assert r.plan is None or r.cost >= (r.lower_bound or 0.0)
    assert r.diagnostics["total_s"] < 15


def test_solve_through_registry_evaluates_the_plan():
    inst = tiny_instance(2, horizon=4)
    r = solve(inst, "milp", scenarios=40, seed=2, eval_samples=2000)
    assert r.status == "optimal" and r.evaluation is not None
    assert r.params["scenarios"] == 40 and r.variants["data_rule"] == "intended"
    assert "cost_mismatch" not in r.diagnostics


@pytest.mark.parametrize("ext", [".lp", ".mps"])
def test_write_lp(tmp_path, ext):
    import highspy

    inst = tiny_instance(1, horizon=4, all_switches=True)
    path = tmp_path / f"model{ext}"
    r = milp.solve_milp(inst, scenarios=20, write_lp=str(path))
    assert r.status == "optimal" and path.stat().st_size > 0
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    assert h.getNumCol() == r.diagnostics["n_vars"] and h.getNumRow() == r.diagnostics["n_cons"]


@pytest.mark.parametrize("kwargs,field", [
    ({"scenarios": 0}, "scenarios"), ({"gap": 0.0}, "gap"), ({"time_limit": -1.0}, "time_limit"),
    ({"threads": 0}, "threads"), ({"formulation": "dense"}, "formulation"),
    ({"write_lp": "model.txt"}, "write_lp"), ({"write_lp": "/no/such/dir/m.lp"}, "write_lp"),
])
def test_bad_options_name_the_option(kwargs, field):
    with pytest.raises(SolverError, match=field):
        milp.solve_milp(tiny_instance(0), **kwargs)


def test_too_many_datasets_is_an_error_result():
    inst = tiny_instance(0, n_datasets=milp.MAX_DATASETS + 1)
    r = milp.solve_milp(inst, scenarios=10)
    assert r.status == "error" and "datasets" in r.message


def test_cli_solve_with_dedicated_flags(tmp_path):
    path = tmp_path / "tiny.json"
    tiny_instance(2, horizon=4).save(path)
    cmd = [sys.executable, "-m", "deplbench", "solve", str(path), "--algo", "milp", "--scenarios", "30",
           "--seed", "2", "--time-limit", "30", "--gap", "1e-4", "--formulation", "fast",
           "--eval-samples", "1000", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["status"] == "optimal" and record["params"]["scenarios"] == 30
    bad_cmd = [sys.executable, "-m", "deplbench", "solve", str(path), "--algo", "milp", "--param", "gap=2"]
    bad = subprocess.run(bad_cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "gap" in bad.stderr and "Traceback" not in bad.stderr
