"""``adaptive-opt`` under a sweep task's outer stop (:func:`deplbench.benchmarks.tasks.solver_stop_s`).

On an injected clock (:func:`deplbench.limits.use_clock`) that advances one
second per DP pass of the multiplier search: no real timing.
"""

from __future__ import annotations

import pytest

from deplbench import limits
from deplbench.benchmarks import tasks as task_mod
from deplbench.formulations.adaptive import search


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _pass_clock(monkeypatch) -> _Clock:
    """A clock that one DP pass of the multiplier search advances by one second."""
    clock, real = _Clock(), search.dp

    def dp(*args, **kwargs):
        clock.t += 1.0
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "dp", dp)
    return clock


@pytest.mark.slow
def test_adaptive_opt_honours_the_sweep_tasks_stop(monkeypatch):
    clock = _pass_clock(monkeypatch)
    task = {"key": "k-adaptive", "sweep": "s", "group": "g", "family": "scaling",
            "instance_params": {"n_models": 1, "n_clusters": 1, "horizon": 6}, "instance_seed": 0, "targets": {},
            "algorithm": "adaptive-opt", "label": "adaptive-opt",
            "params": {"buckets": 60, "runs": 1000, "tune_runs": 500}, "evaluation": {}, "time_limit_s": 10.0}
    stop = task_mod.solver_stop_s(10.0)
    assert stop == 9.0
    with limits.use_clock(clock):
        rec = task_mod.run_task(task)
    assert rec["status"] == "time_limit" and not rec["error"], rec["message"]
    assert clock.t == 9.0           # the ninth pass's first epoch saw the stop: no epoch more
    assert rec["lower_bound"] is not None and rec["lower_bound"] > 0 and rec.get("cost") is None
    assert rec["message"].startswith("time limit 9 s reached (adaptive-opt's DP pass on 60 buckets, backward step 1 "
                                     "of 6)")
    assert "stopped at 9 s by the task's hard limit of 10 s (sweep time_limit_s), before the solver's own " \
           "refine_time" in rec["message"]
    assert rec["diagnostics"]["task_stop_s"] == 9.0


def test_a_stopped_run_has_no_closed_loop_policy_to_simulate(monkeypatch):
    """A run the time limit stopped keeps the bound's multipliers but tuned no policy: the
    closed-loop simulation (``deplbench simulate``, a sweep's closed_loop) has no policy
    series, rather than failing on the policy's missing prices."""
    from deplbench.formulations.model.result import SolveResult
    from deplbench.instances.model import parse_instance
    from deplbench.solvers.run import closed_loop, solve
    from tests.cli.test_cli_adaptive_options import TINY

    clock = _pass_clock(monkeypatch)
    inst = parse_instance(TINY)
    with limits.use_clock(clock):
        res = solve(inst, "adaptive-opt", evaluate=False, refine_time=5.5, buckets=60, runs=1000, tune_runs=500)
    assert res.status == "time_limit" and res.lower_bound is not None
    assert res.diagnostics["multipliers"] and "mu_policy" not in res.diagnostics["multipliers"]
    out = closed_loop(inst, res, runs=200)
    assert out["policy"] is None and out["plan"] is None
    # read back from its JSON (a sweep's stored record, `simulate`'s solve): the same
    again = closed_loop(inst, SolveResult.from_dict(res.to_dict()), runs=200)
    assert again["policy"] is None
