"""The exact MILP (the package formulations/milp/) against independent ground truths.

No test here depends on the machine's speed: tiny instances run with no time
limit (``time_limit=None``), larger ones with a node limit; the one test that
measures a wall-clock promise (horizon 100000) is named ``*_slow``.
"""

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
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.exact.knapsack import knapsack_optimum_from_instance
from deplbench.formulations.model.allocation import allocate
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.exact.brute_force import search as brute_force_search
from deplbench.solvers.run import solve
from tests.milp_instances import tiny_instance


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
    g = milp.phi(lam, c, kap, r) + lam * comm
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


#: (seed, |D|, transfer mode) of the cases that take under half a second of
#: CPU; the others are marked slow (deselected by `make test-fast`).
_QUICK_CASES = {(0, 1, "once"), (0, 1, "per_epoch"), (1, 1, "per_epoch")}
CASES = [pytest.param(seed, nd, tr, rule, seed % 2 == 1,
                      marks=() if (seed, nd, tr) in _QUICK_CASES else pytest.mark.slow)
         for seed in range(3)
         for nd in (1, 2)
         for tr, rule in (("once", "intended"), ("per_epoch", "printed"))]


@pytest.mark.parametrize("seed,n_datasets,transfer,rule,cyclic", CASES)
def test_milp_equals_brute_force(seed, n_datasets, transfer, rule, cyclic):
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, transfer=transfer, rule=rule,
                         all_switches=cyclic)
    S = 40
    bf_cost, bf_plan, _ = brute_force_search(inst, S, seed)
    res = milp.solve_milp(inst, scenarios=S, seed=seed, time_limit=None)
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


@pytest.mark.slow
def test_data_rule_changes_the_optimum_and_both_solvers_follow():
    """Hand-checked: intended (6) lets A train two epochs at x = 1 and B one at
    x = 2 (cost 2 + 6 = 8); printed (6) keeps one cluster, all on B:
    (3·sqrt 3)²/2.5 = 10.8."""
    expected = {"intended": 8.0, "printed": 10.8}
    for rule, cost in expected.items():
        inst = _handover_instance(rule)
        bf_cost, bf_plan, _ = brute_force_search(inst, 20, 0)
        for form in ("fast", "flow", "naive"):
            res = milp.solve_milp(inst, scenarios=20, formulation=form, time_limit=None)
            assert res.status == "optimal", (rule, form, res.message)
            assert _close(res.cost, cost, 1e-7) and _close(bf_cost, cost, 1e-7), (rule, form, res.cost, bf_cost)
        assert len({e.cluster for e in res.plan.epochs}) == (2 if rule == "intended" else 1)


# --------------------------------------------------------- formulations agree


@pytest.mark.parametrize("seed,n_datasets,cyclic", [(0, 1, False), (1, 2, True)])
@pytest.mark.slow
def test_fast_flow_naive_and_pyomo_agree(seed, n_datasets, cyclic):
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, all_switches=cyclic,
                         transfer="per_epoch" if seed else "once")
    out = {}
    for form, backend in (("fast", "highs"), ("flow", "highs"), ("flow", "pyomo"), ("naive", "highs")):
        r = milp.solve_milp(inst, scenarios=30, seed=seed, formulation=form, backend=backend, time_limit=None)
        assert r.status == "optimal", (form, backend, r.message)
        out[(form, backend)] = r.cost
    costs = list(out.values())
    assert all(_close(c, costs[0]) for c in costs), out


@pytest.mark.slow
def test_realistic_enumeration_equals_flow():
    inst = generate("realistic", family="alexnet", loss_max=13)
    fast = milp.solve_milp(inst, scenarios=40, seed=3, time_limit=None)
    flow = milp.solve_milp(inst, scenarios=40, seed=3, formulation="flow", time_limit=None)
    assert fast.diagnostics["variant"] == "enumeration" and flow.diagnostics["variant"] == "flow"
    assert fast.status == flow.status == "optimal"
    assert _close(fast.cost, flow.cost)


# ------------------------------------------------------------- knapsack DP


@pytest.mark.parametrize("item_class,seed", [("uncorrelated", 0), ("strongly", 1), ("subset-sum", 2),
                                             ("inverse-strongly", 3)])
@pytest.mark.slow
def test_knapsack_dp_between_bound_and_cost(item_class, seed):
    inst = generate("knapsack", item_class=item_class, n_items=10, R=100, horizon=10, seed=seed)
    dp = knapsack_optimum_from_instance(inst)
    for form in ("fast", "flow"):
        r = milp.solve_milp(inst, scenarios=1000, formulation=form, gap=1e-4, time_limit=None)
        assert r.status == "optimal", r.message
        assert r.lower_bound <= dp * (1 + 1e-9) <= r.cost * (1 + 2e-9)
        assert r.gap <= 1e-4
        assert r.diagnostics["deterministic"] is True


@pytest.mark.parametrize("backend", ["highs", "pyomo"])
@pytest.mark.slow
def test_knapsack_weakly_seed0_is_solved_to_the_dp_optimum(backend):
    """HiGHS 1.16 ends this master in "Solve error" (θ accepted 1e-6 below a
    λ cut, then its final check sees 1.00001e-6 > 1e-6), which leaves no plan;
    the master is solved again with tighter tolerances
    (``backends.solver_tolerances``) and reaches the DP optimum."""
    inst = generate("knapsack", item_class="weakly", n_items=10, seed=0)
    dp = knapsack_optimum_from_instance(inst)
    r = milp.solve_milp(inst, scenarios=1, seed=0, time_limit=None, backend=backend)
    assert r.status == "optimal", r.message
    assert r.cost == pytest.approx(dp, rel=1e-9)
    assert r.lower_bound <= dp * (1 + 1e-9) and r.gap <= 1e-4
    assert evaluate_plan(inst, r.plan).cost == pytest.approx(r.cost, rel=1e-9)


def test_solve_error_is_retried_with_tighter_tolerances_and_never_accepted():
    """The retry of a HiGHS "Solve error" (backends._retry_solve_errors):
    each run gets ten times tighter row tolerances, work is summed, and a
    run that keeps failing stays an error (no plan, no bound is kept)."""
    from deplbench.formulations.milp import backends as B

    def fake(fail_times):
        calls = []

        def run(left, rel_gap, nl, tighten):
            calls.append((tighten, B.solver_tolerances(rel_gap, tighten)["mip_feasibility_tolerance"], nl))
            if tighten < fail_times:
                return B.MasterOutcome("error", None, math.inf, 0.0, 3, 10, message="Solve error"), True
            return B.MasterOutcome("optimal", np.zeros(1), 5.0, 5.0, 2, 7), False
        return run, calls

    run, calls = fake(1)
    out = B._retry_solve_errors(run, math.inf, 5e-5, 100)
    assert (out.status, out.retries, out.nodes, out.lp_iterations) == ("optimal", 1, 5, 17)
    assert [c[0] for c in calls] == [0, 1] and calls[1][1] == pytest.approx(1e-7) and calls[1][2] == 97
    run, calls = fake(99)
    out = B._retry_solve_errors(run, math.inf, 5e-5, None)
    assert out.status == "error" and out.retries == B.SOLVE_ERROR_RETRIES == len(calls) - 1
    assert "retries" in out.message
    # never tighter than the 1e-10 HiGHS accepts; the first run keeps the default
    assert B.solver_tolerances(1e-9, 2)["mip_feasibility_tolerance"] == 1e-10
    assert B.solver_tolerances(5e-5, 0)["mip_feasibility_tolerance"] == 1e-6


# ---------------------------------------------------- bounds are valid


@pytest.mark.parametrize("seed,cyclic", [(0, False), (1, True), (2, True)])
def test_structural_bounds_hold_for_every_cheap_feasible_plan(seed, cyclic):
    """K_min, K_max and the tight big-M hold for every SAA-feasible plan with
    cost ≤ the incumbent (checked by enumerating every single-cluster plan)."""
    inst = tiny_instance(seed, horizon=5, n_clusters=1, all_switches=cyclic)
    data = milp.Data(inst, 60, seed)
    b = milp.structural_bounds(data)
    assert not b.infeasible and b.incumbent is not None
    ub = b.incumbent.cost
    bigm = milp.tight_bigm(data, b.k_min, b.k_max, ub, b.lam)
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
    r = milp.solve_milp(inst, scenarios=50, time_limit=None)
    assert r.status == "infeasible" and r.plan is None
    assert "quantile" in r.message and "ℓmax" in r.message


def test_an_infeasible_saa_says_it_proves_nothing_about_eq3():
    # no plan on these scenarios is a proof about the SAA problem only; with point masses
    # (every scenario the one trajectory) it is a proof about (3) itself
    inst = tiny_instance(0, horizon=3, loss_max=0.5)
    for form in ("fast", "general"):
        r = milp.solve_milp(inst, scenarios=50, time_limit=None, formulation=form)
        assert r.status == "infeasible" and r.diagnostics["infeasibility"] == "saa"
        assert r.message.startswith("no plan meets the quantile constraint on these 50 scenarios (the SAA "
                                    "problem); this does not prove eq. (3) infeasible (no plan of at most"), r.message
        assert "\n" not in r.message
    data = json.loads(inst.to_json())
    for m in data["models"]:
        m["improvement"] = {"kind": "point", "value": 1.0}
    for sw in data["switches"]:
        sw["jump"] = {"kind": "point", "value": 0.0}
    r = milp.solve_milp(parse_instance(data), scenarios=50, time_limit=None)
    assert r.status == "infeasible" and r.diagnostics["infeasibility"] == "instance"
    assert "SAA" not in r.message and "quantile" in r.message


def test_infeasible_time_has_a_reason():
    inst = tiny_instance(0, horizon=4, time_max=0.05)
    r = milp.solve_milp(inst, scenarios=50, time_limit=None)
    assert r.status == "infeasible"
    assert "Tmax" in r.message


@pytest.mark.slow
def test_node_limit_stops_deterministically():
    """A limit that does not depend on the machine: the naive model (no
    incumbent, weak LP) is not proven within one node; the result is a
    feasible plan no cheaper than brute force's optimum, with a valid bound."""
    inst = tiny_instance(1, horizon=4, all_switches=True)
    bf_cost, bf_plan, _ = brute_force_search(inst, 30, 0)
    runs = [milp.solve_milp(inst, scenarios=30, formulation="naive", time_limit=None, node_limit=1)
            for _ in range(2)]
    r = runs[0]
    assert r.status in ("feasible", "optimal", "error"), r.message
    if r.status == "feasible":
        assert "node limit" in r.message and r.plan is not None
        assert r.cost >= bf_cost * (1 - 1e-9)
    if r.status == "error":
        assert r.plan is None and r.cost is None and "node limit" in r.message
    if r.lower_bound is not None:
        assert r.lower_bound <= bf_cost * (1 + 1e-9)
    assert r.diagnostics["nodes"] <= 1
    assert (runs[1].status, runs[1].cost, runs[1].diagnostics["nodes"]) == (r.status, r.cost, r.diagnostics["nodes"])


def test_time_limit_covers_the_build():
    """Any machine needs more than a microsecond to draw scenarios: the
    build itself stops with status time_limit and says where."""
    r = milp.solve_milp(tiny_instance(0), scenarios=50, time_limit=1e-6)
    assert r.status == "time_limit" and r.plan is None and r.cost is None
    assert "building" in r.message and "total_s" in r.diagnostics


def test_solve_through_registry_evaluates_the_plan():
    inst = tiny_instance(2, horizon=4)
    r = solve(inst, "milp", scenarios=40, seed=2, eval_samples=2000, time_limit=None)
    assert r.status == "optimal" and r.evaluation is not None
    assert r.params["scenarios"] == 40 and r.variants["data_rule"] == "intended"
    assert "cost_mismatch" not in r.diagnostics


@pytest.mark.parametrize("ext", [".lp", ".mps"])
def test_write_lp(tmp_path, ext):
    import highspy

    inst = tiny_instance(1, horizon=4, all_switches=True)
    path = tmp_path / f"model{ext}"
    r = milp.solve_milp(inst, scenarios=20, write_lp=str(path), time_limit=None)
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
    # The matrix formulations enumerate dataset subsets per cluster: forced,
    # they refuse beyond MAX_DATASETS with the field named; ``fast`` hands
    # such instances to ``general`` instead (tests/formulations/general/test_milp_general.py),
    # which in turn refuses beyond its own limit.
    from deplbench.formulations.general import MAX_DATASETS_GENERAL

    inst = tiny_instance(0, n_datasets=milp.MAX_DATASETS + 1)
    r = milp.solve_milp(inst, scenarios=10, time_limit=None, formulation="flow")
    assert r.status == "error" and "datasets" in r.message
    huge = tiny_instance(0, n_datasets=MAX_DATASETS_GENERAL + 1)
    r = milp.solve_milp(huge, scenarios=10, time_limit=None)
    assert r.status == "error" and "datasets" in r.message, r.message


@pytest.mark.integration
def test_cli_solve_with_dedicated_flags(tmp_path):
    path = tmp_path / "tiny.json"
    tiny_instance(2, horizon=4).save(path)
    cmd = [sys.executable, "-m", "deplbench", "solve", str(path), "--algo", "milp", "--scenarios", "30",
           "--seed", "2", "--time-limit", "3600", "--gap", "1e-4", "--formulation", "fast",
           "--eval-samples", "1000", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["status"] == "optimal" and record["params"]["scenarios"] == 30
    bad_cmd = [sys.executable, "-m", "deplbench", "solve", str(path), "--algo", "milp", "--param", "gap=2"]
    bad = subprocess.run(bad_cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "gap" in bad.stderr and "Traceback" not in bad.stderr


# ------------------------------------------- regressions


def _mutated(seed=0, base_horizon=3, **changes):
    """tiny_instance(seed) with fields replaced: ``changes`` maps a path such
    as "models.1.compute" or "omega" to the new value."""
    from deplbench.instances.model import parse_instance

    data = json.loads(json.dumps(tiny_instance(seed, horizon=base_horizon).model_dump()))
    for path, value in changes.items():
        keys = path.split(".")
        node = data
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        node[keys[-1]] = value
    return parse_instance(data)


@pytest.mark.parametrize("seed,cyclic", [(0, False), (1, True), (2, True)])
@pytest.mark.slow
def test_naive_at_gap_1e9_equals_brute_force(seed, cyclic):
    """The naive model crashed (no solution_from_choice) whenever its first
    master did not meet the gap; at 1e-9 it must converge to brute force."""
    inst = tiny_instance(seed, horizon=3, all_switches=cyclic)
    bf_cost, bf_plan, _ = brute_force_search(inst, 20, seed)
    r = milp.solve_milp(inst, scenarios=20, seed=seed, formulation="naive", gap=1e-9, time_limit=None)
    if bf_plan is None:
        assert r.status == "infeasible"
        return
    assert r.status == "optimal", r.message
    assert _close(r.cost, bf_cost, 1e-9) and r.gap <= 1e-9


def _stdout_of(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=str(__import__("pathlib").Path(__file__).parents[3]))


@pytest.mark.integration
def test_library_never_writes_to_stdout():
    """highspy ≥ 1.16 prints a banner at Highs() construction; the
    library itself must keep stdout clean (highspy direct, Pyomo, naive, LP)."""
    code = (
        "import sys, tempfile, os\n"
        "sys.path.insert(0, '.')\n"
        "from tests.milp_instances import tiny_instance\n"
        "from deplbench.formulations.milp import solve_milp\n"
        "inst = tiny_instance(1, horizon=3, all_switches=True)\n"
        "lp = os.path.join(tempfile.mkdtemp(), 'm.lp')\n"
        "for form, be in (('flow', 'highs'), ('flow', 'pyomo'), ('naive', 'highs')):\n"
        "    r = solve_milp(inst, scenarios=10, formulation=form, backend=be, time_limit=None, write_lp=lp)\n"
        "    assert r.status == 'optimal', r.message\n"
        "r = solve_milp(inst, scenarios=10, time_limit=None, verbose=True)\n"
        "sys.stderr.write('done')\n"
    )
    out = _stdout_of(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "", out.stdout[:300]
    assert out.stderr.endswith("done")


@pytest.mark.parametrize("form", ["fast", "flow"])
def test_unusable_configuration_is_pruned(form):
    """One model with compute 1e15 (slower than Tmax at full
    capacity) made HiGHS stop with status 'Not Set'; it must be pruned and
    the optimum equal brute force's."""
    inst = _mutated(0, **{"models.1.compute": 1e15})
    bf_cost, bf_plan, _ = brute_force_search(inst, 20, 0)
    r = milp.solve_milp(inst, scenarios=20, formulation=form, time_limit=None)
    assert bf_plan is not None
    assert r.status == "optimal", r.message
    assert _close(r.cost, bf_cost)
    # model 1 on both clusters (plus any cluster dominated by the other)
    assert r.diagnostics["unusable_configurations"] >= 2
    assert all(e.model != "m1" for e in r.plan.epochs)


# ------------------------------------------- hostile values


@pytest.mark.parametrize("path,value", [
    ("clusters.0.unit_cost", 1e300), ("models.1.size", 1e300), ("clusters.0.bandwidth", 1e-300),
    ("datasets.0.size", 1e300), ("clusters.0.capacity", 1e300), ("time_max", 1e300),
])
@pytest.mark.slow
def test_extreme_values_give_the_brute_force_answer(path, value):
    """Magnitudes near the ends of binary64 give optimal = brute force, or
    infeasible with a reason when nothing fits: never a HiGHS status such as
    'Empty' reported with a cost."""
    inst = _mutated(0, **{path: value})
    bf_cost, bf_plan, _ = brute_force_search(inst, 20, 0)
    for form in ("fast", "flow"):
        r = milp.solve_milp(inst, scenarios=20, formulation=form, time_limit=None)
        if bf_plan is None:
            assert r.status == "infeasible" and r.message and r.cost is None, (form, r.message)
        else:
            assert r.status == "optimal", (form, r.message)
            assert _close(r.cost, bf_cost), (form, r.cost, bf_cost)


@pytest.mark.slow
def test_dominated_clusters_are_pruned_exactly():
    """With one data class a cluster no better than another in r, κ, b and β
    is never needed: 300 copies of two clusters (slightly dearer copies) give
    the two-cluster optimum, and only the originals are usable."""
    from deplbench.instances.model import parse_instance

    base = json.loads(json.dumps(tiny_instance(2, horizon=3, all_switches=True).model_dump()))
    clusters = list(base["clusters"])
    for i in range(300):
        c = dict(clusters[i % 2])
        c["name"] = f"copy{i}"
        c["unit_cost"] = c["unit_cost"] * (1 + 1e-3 * (1 + i))
        base["clusters"].append(c)
        base["transfer_costs"].append({"dataset": "d0", "cluster": c["name"], "cost": 1.0})
    many = parse_instance(base)
    ref = milp.solve_milp(tiny_instance(2, horizon=3, all_switches=True), scenarios=20, seed=2, time_limit=None)
    for form in ("fast", "flow"):
        r = milp.solve_milp(many, scenarios=20, seed=2, formulation=form, time_limit=None)
        assert r.status == ref.status == "optimal", (form, r.message)
        assert _close(r.cost, ref.cost), (form, r.cost, ref.cost)
        assert r.diagnostics["dominated_clusters"] >= 300
        assert {e.cluster for e in r.plan.epochs} <= {"c0", "c1"}


@pytest.mark.slow
def test_near_infinite_capacity_and_zero_size():
    """Capacity 1.7e308 and model size 0 make the fastest epoch ~0 (Tmax over
    it overflows); the K range must be guarded, the optimum = brute force."""
    changes = {"clusters.0.capacity": 1.7e308, **{f"models.{i}.size": 0.0 for i in range(3)}}
    inst = _mutated(0, **changes)
    bf_cost, bf_plan, _ = brute_force_search(inst, 20, 0)
    assert bf_plan is not None
    for form in ("fast", "flow", "naive"):
        r = milp.solve_milp(inst, scenarios=20, formulation=form, time_limit=None)
        assert r.status == "optimal", (form, r.message)
        assert _close(r.cost, bf_cost), (form, r.cost, bf_cost)


@pytest.mark.parametrize("omega", [1e-12, 0.01])
@pytest.mark.slow
def test_tiny_omega_makes_the_quantile_vacuous(omega):
    """ω = 1e-12 allows ⌊(1−ω)S⌋ = S − 1 violations (not S: no tolerance rounds
    it up), so the quantile stays in the K range and both formulations give
    the brute-force optimum."""
    inst = _mutated(1, omega=omega)
    S = 20
    assert allowed_violations(omega, S) >= S - 1
    bf_cost, bf_plan, _ = brute_force_search(inst, S, 1)
    for form in ("fast", "flow"):
        r = milp.solve_milp(inst, scenarios=S, seed=1, formulation=form, time_limit=None)
        assert r.status == "optimal", (form, r.message)
        assert _close(r.cost, bf_cost)


def test_memory_is_estimated_before_building():
    """Horizon 100000 at S = 1000: the scenario arrays alone would take ~18 GiB,
    so the solve refuses at once with a message naming the sizes."""
    inst = _mutated(0, horizon=100_000)
    r = milp.solve_milp(inst, scenarios=1000, time_limit=None)
    assert r.status == "error" and r.cost is None
    assert "GiB" in r.message and "memory_limit" in r.message and "100000" in r.message
    # the same instance fits once the limit or the scenarios allow it
    assert milp.data_bytes(inst, 10) < 2**30


def test_model_size_is_checked_against_the_memory_limit():
    """The flow model's estimate (rows, columns, non-zeros) refuses a build
    above memory_limit before allocating it."""
    inst = tiny_instance(1, horizon=4, all_switches=True)
    r = milp.solve_milp(inst, scenarios=40, formulation="flow", time_limit=None, memory_limit=1e-4)
    assert r.status == "error" and "flow model" in r.message and "memory_limit" in r.message
    ok = milp.solve_milp(inst, scenarios=40, formulation="flow", time_limit=None)
    est = ok.diagnostics["size_estimates"]["flow"]
    # the estimate bounds the built model (it is an upper estimate)
    assert est["nonzeros"] >= ok.diagnostics["n_nonzeros"] and est["columns"] >= ok.diagnostics["n_vars"]


@pytest.mark.integration
def test_horizon_100000_returns_within_the_time_limit_slow():
    """Realistic AlexNet with horizon 100000 and a 10 s
    limit returns a clear status (no plan is claimed without proof) and
    stays under 2 GB. Wall-clock promise, hence ``_slow``; measured in a
    subprocess for its peak memory."""
    code = (
        "import json, resource, time\n"
        "from deplbench.instances.generators import generate\n"
        "from deplbench.instances.model import parse_instance\n"
        "from deplbench.formulations.milp import solve_milp\n"
        "d = generate('realistic', family='alexnet', seed=0).model_dump()\n"
        "d['horizon'] = 100000\n"
        "inst = parse_instance(d)\n"
        "out = {}\n"
        "for S in (1000, 50):\n"
        "    t = time.perf_counter(); r = solve_milp(inst, scenarios=S, time_limit=10)\n"
        "    out[S] = [r.status, r.message, time.perf_counter() - t]\n"
        "out['rss_kb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps(out))\n"
    )
    proc = _stdout_of(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["1000"][0] == "error" and "GiB" in out["1000"][1]
    assert out["50"][0] in ("time_limit", "optimal", "feasible", "infeasible"), out["50"]
    assert out["50"][2] < 60, out["50"]           # 10 s limit; generous for a loaded machine
    assert out["rss_kb"] < 2 * 1024 * 1024, out["rss_kb"]


# ------------------------------------------- work counters


@pytest.mark.slow
def test_work_counters_are_exact_and_repeatable():
    """Rows, columns, non-zeros, nodes, LP iterations and cut rounds are
    integers and the same in two runs (HiGHS: one thread, fixed seed)."""
    inst = tiny_instance(2, horizon=3, all_switches=True)
    keys = ("n_vars", "n_cons", "n_nonzeros", "nodes", "lp_iterations", "rounds", "cuts_added")
    for form in ("flow", "naive"):
        a = milp.solve_milp(inst, scenarios=20, seed=2, formulation=form, time_limit=None)
        b = milp.solve_milp(inst, scenarios=20, seed=2, formulation=form, time_limit=None)
        assert a.status == b.status == "optimal"
        ca = {k: a.diagnostics[k] for k in keys}
        assert ca == {k: b.diagnostics[k] for k in keys}, form
        assert all(isinstance(v, int) and v >= 0 for v in ca.values())
        assert ca["rounds"] >= 1 and ca["n_nonzeros"] > ca["n_cons"] > 0


# ------------------------------------------- SCIP as a solver peer


@pytest.mark.parametrize("seed,n_datasets,cyclic", [(0, 1, False), (1, 2, True), (2, 1, True)])
@pytest.mark.slow
def test_scip_and_highs_give_the_brute_force_optimum(seed, n_datasets, cyclic):
    """Same cut loop, same certificate: SCIP and HiGHS both prove the brute
    force optimum; the result records which solver and version ran."""
    pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, all_switches=cyclic)
    bf_cost, bf_plan, _ = brute_force_search(inst, 30, seed)
    for solver in ("highs", "scip"):
        r = milp.solve_milp(inst, scenarios=30, seed=seed, formulation="flow", solver=solver, gap=1e-9,
                            time_limit=None)
        if bf_plan is None:
            assert r.status == "infeasible"
            continue
        assert r.status == "optimal", (solver, r.message)
        assert _close(r.cost, bf_cost, 1e-9) and r.gap <= 1e-9
        assert r.diagnostics["solver"] == solver and r.params["solver"] == solver
        assert r.diagnostics["solver_version"].startswith("pyscipopt" if solver == "scip" else "highspy")


def test_scip_runs_the_cut_loop_on_knapsack():
    """The count model starts without an incumbent, so the loop adds cuts
    (SCIP frees its transformed problem between rounds)."""
    pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    inst = generate("knapsack", item_class="uncorrelated", n_items=10, R=100, horizon=10, seed=0)
    dp = knapsack_optimum_from_instance(inst)
    r = milp.solve_milp(inst, scenarios=1000, solver="scip", gap=1e-6, time_limit=None)
    assert r.status == "optimal" and r.diagnostics["variant"] == "counts"
    assert r.lower_bound <= dp * (1 + 1e-9) <= r.cost * (1 + 2e-9)
    assert r.diagnostics["rounds"] >= 2 and r.diagnostics["cuts_added"] >= 1


def test_written_mps_has_names_and_solves_alike_in_scip_and_highs(tmp_path):
    """The model file names rows and columns by model, cluster,
    epoch and scenario, and SCIP reading it finds HiGHS's master optimum."""
    pyscipopt = pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    import highspy

    inst = tiny_instance(1, horizon=3, all_switches=True)
    path = tmp_path / "flow.mps"
    r = milp.solve_milp(inst, scenarios=20, formulation="flow", write_lp=str(path), time_limit=None)
    assert r.status == "optimal"
    text = path.read_text()
    for name in ("scenario_s", "N_m0_c0_d0", "u_k1_m0", "f_k2_m0_to_m1", "capacity_0", "cut_0"):
        assert name in text, name
    with milp.quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    with milp.quiet_stdout():
        h.run()
    s = pyscipopt.Model()
    s.hideOutput()
    s.readProblem(str(path))
    s.optimize()
    assert s.getStatus() == "optimal"
    highs_obj = h.getInfo().objective_function_value
    assert abs(s.getObjVal() - highs_obj) <= 1e-6 * max(1.0, abs(highs_obj))


@pytest.mark.parametrize("kwargs", [{"solver": "gurobi"}, {"solver": "scip", "formulation": "naive"},
                                    {"solver": "scip", "backend": "pyomo"}, {"node_limit": 0},
                                    {"memory_limit": -1.0}])
def test_bad_solver_options_name_the_option(kwargs):
    field = "solver" if "solver" in kwargs else next(iter(kwargs))
    with pytest.raises(SolverError, match=field):
        milp.solve_milp(tiny_instance(0), **kwargs)


@pytest.mark.slow
def test_heuristic_time_changes_the_work_not_the_optimum():
    """The incumbent heuristic only prunes (``heuristic_time``): off, short
    and unlimited give the same proven optimum; only the run with it on
    records a heuristic incumbent, and that incumbent is never below it."""
    inst = generate("realistic", family="alexnet", loss_max=9.0, horizon=40,
                    time_max=80.0).with_changes(loss_max=float(generate(
                        "realistic", family="alexnet", horizon=40, time_max=80.0).initial_loss) - 4.0)
    runs = {h: milp.solve_milp(inst, scenarios=100, seed=2, time_limit=None, heuristic_time=h)
            for h in (0.0, 0.5, None)}
    costs = {h: r.cost for h, r in runs.items()}
    assert all(r.status == "optimal" for r in runs.values()), {h: r.message for h, r in runs.items()}
    # each is optimal within gap 1e-4 (the plans may differ within it)
    assert max(costs.values()) - min(costs.values()) <= 2e-4 * max(costs.values()), costs
    assert runs[0.0].diagnostics["heuristic_cost"] is None
    assert runs[None].diagnostics["heuristic_cost"] is not None
    assert runs[None].diagnostics["heuristic_cost"] >= runs[None].cost * (1 - 1e-9)
    assert runs[0.5].params["heuristic_time"] == 0.5


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "fast", True])
def test_heuristic_time_rejects_bad_values_naming_the_option(bad):
    with pytest.raises(SolverError, match="^parameter .heuristic_time.:"):
        milp.solve_milp(tiny_instance(), scenarios=10, heuristic_time=bad)


@pytest.mark.slow
def test_enumeration_model_runs_without_presolve_and_matches_flow(monkeypatch):
    """The enumeration model asks HiGHS for presolve off (its probing was
    nearly the whole solve), and HiGHS gets it; the flow model keeps HiGHS's
    default; the optimum must still equal the flow model's."""
    from deplbench.formulations.milp import backends

    seen = []
    real_init = backends.HighsBackend.__init__

    def spy(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        seen.append(self.h.getOptionValue("presolve")[1])   # (status, value)

    monkeypatch.setattr(backends.HighsBackend, "__init__", spy)
    inst = generate("realistic", family="mobilenet", horizon=30, time_max=60.0)
    inst = inst.with_changes(loss_max=float(inst.initial_loss) - 3.0)
    enum = milp.solve_milp(inst, scenarios=50, seed=1, time_limit=None, formulation="enumeration")
    assert seen == ["off"]
    flow = milp.solve_milp(inst, scenarios=50, seed=1, time_limit=None, formulation="flow")
    assert seen[1:] and set(seen[1:]) == {"choose"}
    assert enum.diagnostics["variant"] == "enumeration" and enum.status == flow.status == "optimal"
    assert enum.cost == pytest.approx(flow.cost, rel=1e-4)
