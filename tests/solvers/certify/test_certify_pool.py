"""milp-certified's worker pool and the stop: a pool is started only when its work can start in time.

On an injected clock (:func:`deplbench.limits.use_clock`) and a stand-in for
:class:`concurrent.futures.ProcessPoolExecutor` that records being started and runs
the tasks in this process: no real timing, no process started.
"""

from __future__ import annotations

import concurrent.futures
import time

import pytest

from deplbench import limits
from deplbench.solvers.certify import certified
from deplbench.solvers.certify.tasks import POOL_START_S, process_map, seconds_to_stop


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def pools(monkeypatch) -> list:
    """Every pool started: its ``max_workers``."""
    started: list = []

    class Pool:
        def __init__(self, max_workers, mp_context=None):
            started.append(max_workers)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, fn, tasks):
            return map(fn, tasks)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    return started


def _double(task: dict) -> int:
    return 2 * task["x"]


TASKS = [{"x": 1}, {"x": 2}, {"x": 3}]


@pytest.mark.parametrize("now, pool", [(0.0, True),                         # 10 s left: the pool starts
                                       (10.0 - POOL_START_S / 4, False),    # its start-up would pass the stop
                                       (11.0, False)])                      # the stop has passed
def test_a_pool_starts_only_when_its_work_can_start_before_the_deadline(pools, now, pool):
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        clock.t = now
        assert list(process_map(2)(_double, TASKS)) == [2, 4, 6]
    assert pools == ([2] if pool else [])


def test_a_tasks_own_stop_instant_counts_too(pools):
    """No deadline in force; the tasks carry a wall-clock stop (``ends_at``, a share of total_time_limit)."""
    past = [dict(t, ends_at=time.time() - 1.0) for t in TASKS]
    assert seconds_to_stop(past) < 0
    assert list(process_map(2)(_double, past)) == [2, 4, 6] and pools == []
    later = [dict(t, ends_at=time.time() + 1000.0) for t in TASKS]
    assert list(process_map(2)(_double, later)) == [2, 4, 6] and pools == [2]


def test_one_worker_or_one_task_never_starts_a_pool(pools):
    assert list(process_map(1)(_double, TASKS)) == [2, 4, 6]
    assert list(process_map(4)(_double, TASKS[:1])) == [2]
    assert pools == []


def test_milp_certified_starts_no_pool_after_an_outer_stop(pools):
    """A sweep task's stop passed before the bracket: with workers = 2 no pool is started, every
    SAA solve is skipped in this process, and the record says the stop did it."""
    from deplbench.instances.model import parse_instance
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data())
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        clock.t = 11.0
        bracket = certified.certify(inst, map=process_map(2), replications=3, scenarios=50, validation=2000,
                                    risk_grid=(0.9,), grid_seeds=1, target_width=None, time_limit=30.0)
    assert pools == []
    assert bracket["replications"] and all(r["message"] == "time limit 10 s reached before this SAA solve"
                                           for r in bracket["replications"])
    assert certified.bracket_result(bracket).status == "time_limit"
