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


@pytest.mark.slow
def test_adaptive_opt_honours_the_sweep_tasks_stop(monkeypatch):
    clock = _Clock()
    real = search.dp

    def dp(*args, **kwargs):
        clock.t += 1.0
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "dp", dp)
    task = {"key": "k-adaptive", "sweep": "s", "group": "g", "family": "scaling",
            "instance_params": {"n_models": 1, "n_clusters": 1, "horizon": 6}, "instance_seed": 0, "targets": {},
            "algorithm": "adaptive-opt", "label": "adaptive-opt",
            "params": {"buckets": 60, "runs": 1000, "tune_runs": 500}, "evaluation": {}, "time_limit_s": 10.0}
    stop = task_mod.solver_stop_s(10.0)
    assert stop == 9.0
    with limits.use_clock(clock):
        rec = task_mod.run_task(task)
    assert rec["status"] == "time_limit" and not rec["error"], rec["message"]
    assert clock.t == 9.0           # the check after the ninth pass saw the stop: no pass more
    assert rec["lower_bound"] is not None and rec["lower_bound"] > 0 and rec.get("cost") is None
    assert rec["message"].startswith("time limit 9 s reached (adaptive-opt's multiplier search")
    assert "stopped at 9 s by the task's hard limit of 10 s (sweep time_limit_s), before the solver's own " \
           "refine_time" in rec["message"]
    assert rec["diagnostics"]["task_stop_s"] == 9.0
