"""Every heuristic respects its time limit and refuses what
would not fit in memory (docs/DESIGN.md, "Limits").

The horizon-100000 instance is the realistic AlexNet one with ``horizon``
set to 100000 (as ``perf/limits_targets.py`` builds it). No test
measures wall-clock time: an expired deadline is a ``time_limit`` so small
that the first check in the solver's loop has already passed it.
"""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest

from deplbench import limits
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.baselines.common import scenario_bytes
from deplbench.solvers.depl import quantile_transform as qt
from deplbench.solvers.run import solve

BUDGET = limits.MEMORY_BUDGET_GIB * 2**30
HEURISTICS = ("depl", "depl-receding", "best-exp", "static-learn", "one-switch")
#: A deadline that has passed before the first loop iteration.
EXPIRED = 1e-12


@pytest.fixture(scope="module")
def alexnet():
    return generate("realistic", family="alexnet", loss_max=9)


@pytest.fixture(scope="module")
def huge(alexnet):
    data = json.loads(alexnet.to_json())
    data["horizon"] = 100_000
    return parse_instance(data)


# ------------------------------------------------------------ the helper itself
def test_check_memory_refuses_above_the_budget_only():
    limits.check_memory(BUDGET, "x", "y")  # exactly the budget fits
    with pytest.raises(limits.MemoryLimitExceeded, match=r"^arrays \(horizon = 7\) would need about 3\.00 GiB > "
                       r"memory budget 2\.00 GiB \(parameter memory_limit raises it\); use less$"):
        limits.check_memory(3 * 2**30, "arrays (horizon = 7)", "use less")


def test_deadline_scope_nests_and_resets():
    limits.check_time("no scope: never raises")
    with limits.deadline(None):
        limits.check_time("no limit")
        assert limits.time_left() == float("inf")
    with limits.deadline(1e6):
        with limits.deadline(EXPIRED), pytest.raises(limits.TimeLimitReached,
                                                     match=r"time limit 1e-12 s reached \(here\)"):
            limits.check_time("here")
        limits.check_time("outer scope restored: far from its deadline")
        with limits.deadline(None):  # an inner "no limit" keeps the outer deadline
            assert limits.time_left() < 2e6
    assert limits.time_left() == float("inf")


# ------------------------------------------------------------ memory: refuse before allocating
@pytest.mark.parametrize("algo", ["static-learn", "one-switch"])
def test_baselines_refuse_horizon_100000_before_drawing_scenarios(huge, algo):
    assert scenario_bytes(huge, 1000) > BUDGET
    tracemalloc.start()
    try:
        res = solve(huge, algo, evaluate=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.status == "error" and res.plan is None
    assert f"{algo}'s in-sample scenarios (scenarios = 1000 × horizon = 100000" in res.message
    assert "GiB > memory budget 2.00 GiB" in res.message
    assert peak < 0.05 * BUDGET   # the scenario arrays were never drawn


def test_baseline_estimate_scales_with_scenarios_and_horizon(huge, alexnet):
    # Linear in S and (K̄ + 1), as the arrays are: a wrong estimate fails here.
    assert scenario_bytes(huge, 2000) == 2 * scenario_bytes(huge, 1000)
    ratio = scenario_bytes(huge, 1000) / scenario_bytes(alexnet, 1000)
    assert ratio == pytest.approx((huge.horizon + 1) / (alexnet.horizon + 1))
    # Small scenario counts fit: the same solver then runs normally.
    assert scenario_bytes(huge, 10) < BUDGET


@pytest.mark.slow
def test_best_exp_refuses_train_on_trajectories_at_horizon_100000(huge):
    res = solve(huge, "best-exp", evaluate=False)
    assert res.status == "error" and res.plan is None
    assert "best-exp's train-on trajectories (check_samples = 20000 × 100001 epochs, horizon = 100000)" in res.message
    assert "would need about 59.61 GiB > memory budget 2.00 GiB" in res.message


def test_quantile_transform_blocks_equal_the_whole_matrix(monkeypatch):
    # DepL's Chernoff transform at horizon 100000 held a (K̄, grid) matrix of
    # 1.2 GB three times; it is now computed in row blocks. Same numbers:
    rng = np.random.default_rng(3)
    t = rng.uniform(0.0, 5.0, size=(37, 3))
    x = np.sort(rng.normal(size=50))
    w = rng.uniform(0.1, 1.0, size=50)
    whole = qt._lse(-t[..., None] * x, w)
    monkeypatch.setattr(qt, "_BLOCK_VALUES", 50 * 4)   # 4 rows per block, 28 blocks
    # Equal up to the matrix product's summation order (BLAS blocks).
    np.testing.assert_allclose(qt._lse_outer(t, x, w), whole, rtol=1e-13, atol=0)
    assert qt._lse_outer(np.float64(2.0), x, w).shape == ()


def test_allocation_table_refused_before_allocation():
    from deplbench.solvers.depl import vnf_allocation as va

    # A K × buckets int32 table above the budget is named, not allocated.
    K, buckets = 100_000, va.MAX_BUCKETS
    assert 4 * K * buckets > BUDGET
    with pytest.raises(limits.MemoryLimitExceeded, match=r"the \(1\+ε\) allocation table \(100000 epochs × "):
        limits.check_memory(4 * K * buckets, f"the (1+ε) allocation table ({K} epochs × {buckets} cost buckets)",
                            "use a larger epsilon or a smaller horizon")


# ------------------------------------------------------------ time: every loop checks the deadline
@pytest.mark.parametrize("algo", HEURISTICS)
def test_expired_deadline_gives_status_time_limit(alexnet, algo):
    res = solve(alexnet, algo, time_limit=EXPIRED)
    assert res.status == "time_limit", res.message
    assert res.plan is None and res.cost is None
    assert res.message.startswith("time limit 1e-12 s reached (") and res.message.endswith("); no plan")
    assert res.params["time_limit"] == EXPIRED


def test_depl_horizon_100000_stops_in_its_transform_loop(huge):
    # Bounded memory (blocks) and the deadline checked per block: the
    # horizon-100000 transform stops at the limit rather than running on.
    # (no plan to judge: evaluate=False)
    res = solve(huge, "depl", time_limit=EXPIRED, evaluate=False)
    assert res.status == "time_limit"
    assert "quantile transform" in res.message or "decision loop" in res.message


@pytest.mark.parametrize("algo, default", [("depl", 300.0), ("depl-receding", 300.0), ("depl-proven", 300.0),
                                            ("milp-exact", 300.0), ("one-switch", None)])
def test_default_time_limits(alexnet, algo, default):
    """DepL's family takes the exact solvers' default of 300 s (without a default
    limit a 100,000-epoch horizon runs unbounded)."""
    from deplbench.solvers.registry import get_solver

    assert get_solver(algo).parameters["time_limit"].default == default
    with pytest.raises(Exception, match="time_limit"):
        solve(alexnet, algo, time_limit=-1.0)


def test_loop_checks_use_the_deadline_not_the_clock_alone(alexnet, monkeypatch):
    # A clock that jumps forward after the scope is entered: the first loop
    # check sees the deadline passed (a monkeypatched clock, no waiting).
    import time as time_module

    real = time_module.perf_counter
    calls = {"n": 0}

    def clock():
        calls["n"] += 1
        return real() + (0.0 if calls["n"] == 1 else 1e9)

    monkeypatch.setattr(limits.time, "perf_counter", clock)
    with limits.deadline(100.0), pytest.raises(limits.TimeLimitReached,
                                               match=r"time limit 100 s reached \(expanded-graph DP"):
        limits.check_time("expanded-graph DP, layer 2 of 100")


def test_an_unguarded_memory_error_is_one_line_naming_the_sizes(alexnet, monkeypatch):
    """A MemoryError no estimate caught: one line naming the sizes, not numpy's raw
    text ("MemoryError: Unable to allocate 266. TiB ..."), which names no field."""
    from deplbench.solvers.registry import get_solver

    cls = get_solver("one-switch")

    def run_settings(self, instance, settings):
        raise MemoryError("Unable to allocate 266. TiB for an array with shape (100000, 1000, 365) and data "
                          "type float64")

    monkeypatch.setattr(cls, "run_settings", run_settings)
    res = solve(alexnet, "one-switch", evaluate=False)
    assert res.status == "error" and "\n" not in res.message
    assert res.message.startswith("memory: one-switch could not allocate 266. TiB (array shape (100000, 1000, 365))")
    assert f"horizon = {alexnet.horizon}" in res.message and "scenarios = " in res.message


def test_time_limit_s_is_the_limit_whose_deadline_is_in_force():
    # nested scopes keep the earlier deadline, and the limit reported is that deadline's
    assert limits.time_limit_s() is None
    with limits.deadline(5.0):
        assert limits.time_limit_s() == 5.0
        with limits.deadline(1000.0):       # ends later than the outer: the outer stays in force
            assert limits.time_limit_s() == 5.0
            assert limits.time_left() <= 5.0
        with limits.deadline(None):
            assert limits.time_limit_s() == 5.0
        with limits.deadline(1.0):          # ends sooner: the inner one is in force
            assert limits.time_limit_s() == 1.0
            with limits.deadline(20.0):
                assert limits.time_limit_s() == 1.0
            assert limits.time_limit_s() == 1.0
        assert limits.time_limit_s() == 5.0
    assert limits.time_limit_s() is None


def test_the_stop_message_names_the_limit_that_stopped_the_run():
    with limits.deadline(EXPIRED), limits.deadline(20.0):
        with pytest.raises(limits.TimeLimitReached, match=r"^time limit 1e-12 s reached \(inner loop\)"):
            limits.check_time("inner loop")


def test_eval_samples_beyond_the_budget_are_refused_before_the_solve(alexnet, monkeypatch):
    from deplbench.errors import SolverError
    from deplbench.solvers.registry import get_solver

    def never(*args, **kwargs):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(get_solver("depl"), "run_settings", never)
    # 10^8 trajectories with the per-epoch bands of a plan of K̄ = 100 epochs, in at most 64 epoch
    # chunks: the finals (16 B each), one block of 25,000 × 101 values (16 B each), 2 columns (16 B each)
    # and the plan itself (1152 B an epoch): (2 GiB − 25,000·101·16 − 100·1152)/48 = 43,895,176
    with pytest.raises(SolverError, match=r"^eval_samples: 100000000 trajectories of up to K̄ = 100 epochs \(the "
                                          r"longest plan the instance allows\) need 4.51 GiB with the per-epoch bands "
                                          r"\(budget 2 GiB\); use at most 43895176 samples$"):
        solve(alexnet, "depl", eval_samples=100_000_000)
    # without evaluation nothing is simulated: nothing to refuse, the solver runs (here: crashes, as data)
    res = solve(alexnet, "depl", evaluate=False, eval_samples=100_000_000)
    assert res.status == "error" and "the solver ran" in res.message


def test_eval_samples_too_many_for_a_long_plan_are_refused_before_the_solve(alexnet, monkeypatch):
    # 66·10^6 fit a 1-epoch plan (one column beside a block of 25,000 × 2 values) but not one of
    # K̄ = 100 epochs: sized for K̄ before the solve, never a status error after it with the solve's work lost
    from deplbench.errors import SolverError
    from deplbench.solvers.registry import get_solver
    from deplbench.solvers.run import check_solve_arguments

    def never(*args, **kwargs):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(get_solver("depl"), "run_settings", never)
    with pytest.raises(SolverError, match=r"^eval_samples: 66000000 trajectories of up to K̄ = 100 epochs .*; use at "
                                          r"most 43895176 samples$"):
        solve(alexnet, "depl", eval_samples=66_000_000)
    from deplbench.formulations.evaluation.evaluate import check_evaluation_memory
    check_evaluation_memory(66_000_000, 1, True)
    # the count the message offers is accepted, one more is not
    assert check_solve_arguments(alexnet, "depl", True, 43_895_176, 0) is get_solver("depl")
    with pytest.raises(SolverError, match="use at most 43895176 samples"):
        check_solve_arguments(alexnet, "depl", True, 43_895_177, 0)


def test_the_cli_names_eval_samples_and_the_count_that_fits(tmp_path, alexnet, deplbench_cli):
    path = tmp_path / "alexnet.json"
    alexnet.save(path)
    status, out, err = deplbench_cli("solve", path, "--algo", "depl", "--eval-samples", 66_000_000)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "--eval-samples: 66000000 trajectories of up to K̄ = 100 epochs" in err
    assert "use at most 43895176 samples" in err and "Traceback" not in err


def test_a_deterministic_instance_is_not_refused_for_bands_it_never_draws():
    from tests.formulations.test_evaluate import det_instance

    inst = parse_instance(det_instance())                   # every random term a point mass
    res = solve(inst, "depl", eval_samples=100_000_000)     # one trajectory is evaluated, exactly
    assert res.status != "error" and res.evaluation["samples"] == 1


def test_an_enclosing_deadline_stops_the_solver_but_not_the_judging(alexnet):
    # A sweep task runs solve() under an outer stop (benchmarks.tasks.run_task):
    # it bounds the solver like its own time_limit, while the out-of-sample
    # judging of a returned plan (exact bounds read the deadline) runs outside it.
    from deplbench.formulations.model.result import SolveResult
    from deplbench.solvers.base import Solver

    plan = solve(alexnet, "best-exp", evaluate=False).plan
    assert plan is not None

    class _ReturnsAPlan(Solver):
        name = "returns-a-plan"
        parameters = {}

        def run(self, instance):
            return SolveResult(algorithm=self.name, status="feasible", plan=plan)

    with limits.deadline(EXPIRED):
        judged = solve(alexnet, _ReturnsAPlan, eval_samples=2000)
        stopped = solve(alexnet, "best-exp", eval_samples=2000)
        assert limits.expired()             # the enclosing scope is untouched
    assert judged.status == "feasible", judged.message
    assert judged.evaluation is not None and judged.evaluation["violation_hi"] is not None
    assert stopped.status == "time_limit" and stopped.plan is None
    assert stopped.message.startswith("time limit 1e-12 s reached (")


def test_no_deadline_lifts_every_enclosing_scope_and_restores_it():
    with limits.deadline(EXPIRED):
        with limits.no_deadline():
            assert limits.time_left() == float("inf") and limits.time_limit_s() is None
            limits.check_time("lifted")
            with limits.deadline(1e6):          # a solver's own limit inside still counts
                assert limits.time_limit_s() == 1e6
        assert limits.time_limit_s() == EXPIRED
        with pytest.raises(limits.TimeLimitReached):
            limits.check_time("restored")


def test_an_injected_clock_drives_every_deadline():
    """limits.use_clock: deadline, time_left, expired and check_time read the injected
    clock (no waiting), and the scope restores the real one."""
    t = [100.0]
    with limits.use_clock(lambda: t[0]):
        assert limits.now() == 100.0
        with limits.deadline(10.0):
            assert limits.time_left() == 10.0 and not limits.expired()
            limits.check_time("before")
            t[0] = 110.0
            assert limits.time_left() == 0.0
            with pytest.raises(limits.TimeLimitReached, match=r"time limit 10 s reached \(after\)"):
                limits.check_time("after")
    assert limits.now() != 100.0 and math.isinf(limits.time_left())


def test_the_milp_stops_within_one_law_of_its_scenario_draws(alexnet, monkeypatch):
    """The draw estimate fitted the time left but the draws ran past it (a loaded machine): each
    law's draws cost 1 s on an injected clock, and the MILP stops at the first law past the
    deadline with status time_limit, not after drawing them all."""
    from deplbench.formulations.milp import solve as milp_solve
    from deplbench.formulations.model import scenarios

    clock = {"t": 0.0}
    real = scenarios.check_time

    def check_time(where):
        clock["t"] += 1.0
        real(where)

    monkeypatch.setattr(scenarios, "check_time", check_time)
    monkeypatch.setattr(milp_solve, "draw_seconds", lambda instance, s: 0.0)
    laws = alexnet.n_models + len(alexnet.switches)
    assert laws >= 4
    with limits.use_clock(lambda: clock["t"]):
        res = solve(alexnet, "milp", time_limit=2.5, scenarios=200)
    assert res.status == "time_limit" and "(drawing scenarios, model 2 of 3)" in res.message, res.message
    assert clock["t"] == 3.0                    # the third law's check saw the deadline: no law more
