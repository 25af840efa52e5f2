"""Hostile input: a memory estimate before every large allocation
and ``--time-limit`` in every solver (docs/DESIGN.md, "Limits").

No test measures wall-clock time: an expired deadline is a limit so small
that the first check in a loop has passed it, and a memory refusal is shown
with :mod:`tracemalloc` to happen before the arrays exist.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from deplbench import limits
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.depl import quantile_transform as qt
from deplbench.solvers.run import solve
from tests.instance_data import two_model_data

EXPIRED = 1e-12


@pytest.fixture(scope="module")
def knapsack():
    return generate("knapsack", n_items=8, seed=1)


# ---- finding 1: the expanded graph's (K̄, M, M) tables are estimated first -----------------------

def test_build_spec_refuses_horizon_x_models_squared_before_allocating():
    from deplbench.solvers.expanded.spec import build_spec

    K, M = 100_000, 60             # six (K̄, M, M) float64 tables: about 16 GiB
    run_phi = np.full((K, M), 0.01)
    jump = np.zeros((M, M))
    tracemalloc.start()
    try:
        with pytest.raises(limits.MemoryLimitExceeded, match=r"shift tables \(K̄ = 100000 × \|M\|² = 3600\) "
                                                             r"would need about 16\.09 GiB > memory budget 2\.00"):
            build_spec(np.ones(M), np.ones(M), 10.0, run_phi, jump, np.ones((M, M), bool), 10.0, 1.0, eta=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**28             # refused before any table was built (256 MiB)


@pytest.mark.parametrize("algo", ["depl", "best-exp"])
def test_memory_limit_is_a_cap_the_user_can_raise(knapsack, algo):
    low = solve(knapsack, algo, memory_limit=1e-7, evaluate=False)
    assert low.status == "error"
    assert "GiB > memory budget 1e-07 GiB (parameter memory_limit raises it)" in low.message
    ok = solve(knapsack, algo, evaluate=False)
    assert ok.status in ("optimal", "feasible"), ok.message


def test_memory_budget_scope_nests_and_resets():
    assert limits.memory_budget_gib() == limits.MEMORY_BUDGET_GIB
    with limits.memory_budget(5.0):
        assert limits.memory_budget_gib() == 5.0
        limits.check_memory(4 * 2**30, "x", "y")            # 4 GiB fits a 5 GiB cap
        with limits.memory_budget(None):
            assert limits.memory_budget_gib() == 5.0
    with pytest.raises(limits.MemoryLimitExceeded):
        limits.check_memory(4 * 2**30, "x", "y")
    assert limits.memory_budget_gib() == limits.MEMORY_BUDGET_GIB


def test_covering_dp_tables_estimated_first():
    from deplbench.formulations.exact.knapsack import covering_dp

    with limits.memory_budget(1e-4), pytest.raises(limits.MemoryLimitExceeded, match="covering DP's tables"):
        covering_dp(np.arange(1, 201), np.arange(1, 201), target=5000, max_items=100)


def test_pact_graph_estimated_first(knapsack):
    res = solve(generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0),
                "pact", memory_limit=1e-7, evaluate=False)
    assert res.status == "error" and "PACT's" in res.message and "memory_limit" in res.message


# ---- finding 10: every solver honours time_limit ----------------------------------------------------

@pytest.mark.parametrize("algo,instance", [("pact", "vgg"), ("brute-force", "tiny"), ("knapsack-dp", "knapsack")])
def test_pact_brute_force_knapsack_dp_honour_time_limit(knapsack, algo, instance):
    inst = {"vgg": lambda: generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0),
            "tiny": lambda: parse_instance(two_model_data()), "knapsack": lambda: knapsack}[instance]()
    res = solve(inst, algo, time_limit=EXPIRED, evaluate=False)
    assert res.status == "time_limit", res.message
    assert res.plan is None and res.message.startswith("time limit 1e-12 s reached (")


def test_allocation_dp_checks_the_deadline_inside_a_layer():
    """20,000 clusters: the options of one epoch and the DP over them are
    checked while they are built, not only between epochs."""
    from deplbench.solvers.depl import vnf_allocation as va

    n = 3000
    kappa, cap, comm = np.linspace(1.0, 2.0, n), np.full(n, 10.0), np.zeros(n)
    with limits.deadline(EXPIRED), pytest.raises(limits.TimeLimitReached, match=r"allocation options, cluster 0"):
        va._options(1.0, comm, kappa, cap, list(range(n)), 10.0, 0.05)



def test_allocation_dp_checks_inside_the_option_loop_of_one_epoch(monkeypatch):
    """The per-option loop of a large table (options × buckets above the
    gather limit) checks every 256 options, not only once per epoch."""
    from deplbench.solvers.depl import vnf_allocation as va

    seen = []
    monkeypatch.setattr(va, "check_time", seen.append)
    o = 600
    t = np.linspace(1.0, 0.1, o)
    groups = [(t, np.linspace(1.0, 2.0, o), np.arange(o), np.ones(o))]
    picks, *_ = va._dp(groups, [0], 1.0, 1e-3, 1.0, 2.0)       # buckets × 600 options > _GATHER_MAX
    assert picks is not None
    assert [w for w in seen if "option" in w] == [f"(1+ε) allocation DP, epoch 0 of 1, option {i} of {o}"
                                                  for i in (0, 256, 512)]


def test_milp_certified_total_time_limit_bounds_the_whole_bracket():
    """A total limit already used up: no SAA solve starts, no test certifies;
    the result is error with the reason, never a bound from nothing."""
    inst = parse_instance(two_model_data())
    res = solve(inst, "milp-certified", total_time_limit=EXPIRED, replications=3, risk_grid="0.9",
                evaluate=False)
    bracket = res.diagnostics["bracket"]
    assert res.status == "error" and "total_time_limit reached before this SAA solve" in res.message
    assert {r["status"] for r in bracket["replications"]} == {"time_limit"}
    assert bracket["settings"]["total_time_limit"] == EXPIRED
    assert json.dumps(bracket, default=str)


def test_milp_certified_total_time_limit_skips_late_tests_only():
    import time

    from deplbench.solvers.certify.tasks import validation_task

    inst = parse_instance(two_model_data())
    plan = solve(inst, "brute-force", evaluate=False).plan
    task = {"instance": inst.model_dump(mode="json", by_alias=True), "plan": plan.to_dict(),
            "validation": 5000, "seed": 1, "confidence": 0.99}
    late = validation_task({**task, "ends_at": time.time() - 1})
    on_time = validation_task({**task, "ends_at": time.time() + 3600})
    assert late["certified"] is False and late["draws"] == 100 and "skipped" in late
    assert on_time["draws"] == 5000 and "skipped" not in on_time
    assert late["cost"] == pytest.approx(on_time["cost"])


# ---- many switches: every per-switch loop reads the deadline ----------------------------------------

@pytest.fixture(scope="module")
def many_switches():
    """66 switch laws (Student's t), each with its own parameters."""
    return generate("scaling", n_models=12, n_clusters=1, horizon=4)


def _ticking(step: float = 1.0):
    """A clock that advances ``step`` seconds at every read: a deadline of ``n`` s passes at the
    ``n``-th read after it opened, whatever the machine's speed."""
    t = [0.0]

    def clock():
        t[0] += step
        return t[0]
    return clock


def test_switch_laws_are_not_frozen_scipy_laws_and_give_their_values(many_switches, monkeypatch):
    """A frozen SciPy law costs about a millisecond to build (20 s for 20,000 switches): the laws
    call SciPy's shared distribution objects instead, with the frozen law's values."""
    from scipy import stats

    law = many_switches.switches[0].jump
    frozen = stats.t(law.df, loc=law.loc, scale=law.scale)
    q = np.array([0.0, 1e-12, 0.05, 0.5, 0.95, 1.0 - 1e-4, 1.0])
    x = np.array([-50.0, -1.0, 0.0, 0.3, 7.0])

    def no_freeze(*args, **kwds):
        raise AssertionError("a SciPy law was frozen")
    monkeypatch.setattr(stats.t, "freeze", no_freeze)
    fresh = type(law)(df=law.df, loc=law.loc, scale=law.scale + 1e-9)      # not in the law cache
    assert np.isfinite(fresh.ppf(0.5))
    assert np.array_equal(law.ppf(q), frozen.ppf(q))
    for name in ("cdf", "sf", "pdf"):
        assert np.array_equal(getattr(law, name)(x), getattr(frozen, name)(x))


def test_chernoff_transform_checks_the_deadline_per_switch(many_switches, monkeypatch):
    """Each switch's support and quantile grid (ppf calls) is preceded by a check; before,
    the first check came after all of them (depl: 48 s past a 2 s limit on 250,000 switches)."""
    lm = qt.LossModel.from_instance(many_switches, 1.0)
    n = len(lm.jumps)
    with limits.use_clock(_ticking()), limits.deadline(5.0), \
            pytest.raises(limits.TimeLimitReached, match=rf"quantile transform, support of switch 4 of {n}\)"):
        qt.chernoff_bound(lm, 1.0, 0.1)
    seen = []
    monkeypatch.setattr(qt, "check_time", seen.append)
    qt.chernoff_bound(qt.LossModel.from_instance(many_switches, 1.0), 1.0, 0.1)
    assert [w for w in seen if w.startswith("quantile transform, switch")] == [
        f"quantile transform, switch {i} of {n}" for i in range(n)]


def test_heuristics_scenario_draws_check_the_deadline_per_column(many_switches):
    """The heuristics' draws (baselines.common) read the deadline per law; the MILP's do not
    (its time limit goes to the solver, which keeps a dual bound)."""
    from deplbench.formulations.model.scenarios import ScenarioSampler
    from deplbench.solvers.baselines.common import in_sample_scenarios

    n = len(many_switches.switches)
    with limits.use_clock(_ticking()), limits.deadline(12 + 20.0), \
            pytest.raises(limits.TimeLimitReached, match=rf"drawing scenarios, switch 19 of {n}\)"):
        in_sample_scenarios(many_switches, 10, 0)
    with limits.use_clock(_ticking()), limits.deadline(5.0):
        ScenarioSampler(many_switches, 0).in_sample(10)


def test_draws_are_the_same_with_a_deadline(many_switches):
    from deplbench.formulations.model.scenarios import ScenarioSampler

    free = ScenarioSampler(many_switches, 3).in_sample(20)
    with limits.deadline(1e6):
        timed = ScenarioSampler(many_switches, 3).in_sample(20, checked=True)
    assert np.array_equal(free.jump, timed.jump) and np.array_equal(free.improvement, timed.improvement)


def test_each_law_is_drawn_into_its_own_contiguous_block(many_switches):
    """A law's draws fill their own pages: the first law's write does not fault in the whole
    (S, K̄, laws) array before the next deadline check (1.6 GB with 20,100 switch laws)."""
    from deplbench.formulations.model.scenarios import ScenarioSampler

    sc = ScenarioSampler(many_switches, 3).in_sample(20, checked=True)
    assert sc.jump.shape == (20, many_switches.horizon, len(many_switches.switches))
    assert all(sc.jump[:, :, j].flags.c_contiguous for j in range(sc.jump.shape[2]))
    assert all(sc.improvement[:, :, m].flags.c_contiguous for m in range(sc.improvement.shape[2]))
    # the values: each law's own draws, in the stream's order (same generator calls as a direct draw)
    rng = ScenarioSampler(many_switches, 3).generator(0)
    first = [m.improvement.sample(rng, (20, many_switches.horizon)) for m in many_switches.models]
    assert np.array_equal(sc.improvement[:, :, 0], first[0])


def test_pact_estimates_its_scenarios_before_drawing_them(many_switches):
    """PACT's in-sample scenarios are weighed against the memory budget like the baselines'."""
    tracemalloc.start()
    try:
        res = solve(many_switches, "pact", scenarios=200_000, memory_limit=0.01, evaluate=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.status == "error" and "PACT's in-sample scenarios" in res.message
    assert "memory budget" in res.message and peak < 50 * 2**20


def test_the_solve_deadline_counts_the_instance_copy(many_switches, monkeypatch):
    """The time limit bounds the whole solve: the deep copy of the instance (which grows with the
    switches) is inside the deadline, so a copy that uses it up leaves the solver none."""
    clock = [0.0]
    real_copy = type(many_switches).model_copy

    def slow_copy(self, *args, **kwds):
        clock[0] += 10.0                  # the copy takes 10 s on this clock
        return real_copy(self, *args, **kwds)
    monkeypatch.setattr(type(many_switches), "model_copy", slow_copy)
    with limits.use_clock(lambda: clock[0]):
        res = solve(many_switches, "depl", time_limit=5.0, evaluate=False)
    assert res.status == "time_limit" and "time limit 5 s reached" in res.message


def test_pact_jump_estimates_and_adaptive_jump_headroom_check_per_switch(many_switches, monkeypatch):
    from deplbench.formulations.adaptive import chain
    from deplbench.solvers.pact import graph

    n = len(many_switches.switches)
    monkeypatch.setattr(chain, "JUMP_CHECK_STRIDE", 10)
    for module, fn, what, at in (
            (graph, lambda: graph._jump_estimates(many_switches, 0.95), "PACT switch-jump estimates", range(n)),
            (chain, lambda: chain.jump_rise(many_switches, 12), "adaptive-opt's jump headroom", range(10, n, 10))):
        seen = []
        monkeypatch.setattr(module, "check_time", seen.append)
        fn()
        assert seen == [f"{what}, switch {i} of {n}" for i in at]


def test_static_learn_refuses_more_models_than_epochs_before_drawing(many_switches, monkeypatch):
    from deplbench.solvers.baselines import static

    def no_draw(*args, **kwargs):
        raise AssertionError("scenarios drawn for a run refused up front")
    monkeypatch.setattr(static, "in_sample_scenarios_checked", no_draw)
    res = solve(many_switches, "static-learn", evaluate=False)
    assert res.status == "no_solution" and res.message == "StaticLearn uses all 12 models but K̄ = 4"


def test_saa_replications_stop_after_the_first_memory_refusal(many_switches, monkeypatch):
    """Scenario arrays beyond the MILP's memory_limit: one SAA solve is refused and the other
    replications are not run; each gets the same refusal, unsolved."""
    from deplbench.formulations.milp.solve import SCENARIO_MEMORY_REFUSAL, _scenario_message
    from deplbench.solvers.certify import refine

    calls = []
    refusal = _scenario_message(many_switches, 10**9, 2.0)          # the MILP's own text, whatever its wording
    assert refusal.startswith(SCENARIO_MEMORY_REFUSAL)

    def fake(task):
        calls.append(task["seed"])
        return {"role": task["role"], "factor": task.get("factor"), "seed": task["seed"], "omega": task["omega"],
                "scenarios": task["scenarios"], "status": "error", "message": refusal, "cost": None,
                "lower_bound": None, "plan": None, "runtime_s": 1.0, "cpu_s": 1.0}
    monkeypatch.setattr(refine, "saa_task", fake)
    tasks = refine.saa_tasks({}, 0.9, 0.1, 5, 10**8, (0.5,), 2, 7, 1.0, 1e-4, stage=1)
    results, _ = refine.run_saa(lambda fn, ts: [fn(t) for t in ts], tasks, many_switches)
    assert calls == [7]
    assert [r["seed"] for r in results] == [t["seed"] for t in tasks]
    assert all(r["status"] == "error" and r["message"] == refusal and r["stage"] == 1 for r in results)
    assert all("skipped" in r for r in results[1:])
    calls.clear()
    small, _ = refine.run_saa(lambda fn, ts: [fn(t) for t in ts],
                              refine.saa_tasks({}, 0.9, 0.1, 5, 100, (), 1, 7, 1.0, 1e-4, stage=1), many_switches)
    assert calls == [7, 8, 9, 10, 11] and not any("skipped" in r for r in small)


@pytest.mark.parametrize("value", [float("inf"), 1e308, 2.0**20 * 1.5])
def test_a_memory_limit_beyond_any_byte_count_is_refused_naming_it(value):
    """memory_limit is counted in bytes as an integer: inf or 1e308 is no byte count (an OverflowError
    inside a solver's evaluation), so it is refused up front for every solver that takes it."""
    from deplbench.errors import SolverError
    from deplbench.solvers.registry import available, get_solver

    inst = parse_instance(two_model_data())
    takers = [n for n in available() if "memory_limit" in get_solver(n).parameters]
    assert {"depl", "pact", "one-switch", "milp"} <= set(takers)
    for name in takers:
        with pytest.raises(SolverError, match=r"memory_limit.*must be <= 1048576"):
            solve(inst, name, memory_limit=value, evaluate=False)
    assert solve(inst, "depl", memory_limit=2.0**20, evaluate=False).status in ("optimal", "feasible")
    with limits.memory_budget(float("inf")):          # a scope opened from code: no OverflowError either
        from deplbench.formulations.evaluation.memory import budget_bytes
        assert budget_bytes() == 2**50


def test_a_milp_whose_time_went_to_the_copy_says_so(many_switches, monkeypatch):
    """The MILP's first check names no stage it did not reach: the time went before the build."""
    clock = [0.0]
    real_copy = type(many_switches).model_copy

    def slow_copy(self, *args, **kwds):
        clock[0] += 10.0
        return real_copy(self, *args, **kwds)
    monkeypatch.setattr(type(many_switches), "model_copy", slow_copy)
    with limits.use_clock(lambda: clock[0]):
        res = solve(many_switches, "milp", time_limit=5.0, evaluate=False)
    assert res.status == "time_limit" and "no time was left when the build began" in res.message, res.message
    assert "drawing" not in res.message
