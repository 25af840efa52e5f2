"""The time a stopped refinement has left, spent on the lower bound alone (budget.finer_bounds).

After the certification, finer grids get one water-filling pass each (the certified policy does not
change): each pass is a valid bound on the same optimum, so the bracket may only gain; a pass the
time limit stops is dropped and the certified bracket stays as it was; a grid starts only while
FINER_GROWTH × the last pass's seconds fits the time left, and only while the passes keep raising the
bound. Run on an injected clock, so every decision holds at any load.
"""

from __future__ import annotations

import math

import pytest

from deplbench import limits
from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive import budget, waterfill
from deplbench.formulations.adaptive.budget import FINER_GROWTH, finer_bounds
from deplbench.instances.generators import generate
from tests.formulations.adaptive.test_adaptive_clock import FakeClock


@pytest.fixture(scope="module")
def start():
    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0)
    ch = A.Chain(inst, 50, optimistic=True)
    s = A.lower_bound_search(ch, inst.omega, 3, 3)
    wp = waterfill.waterfill_pass(ch, 0.6 * s.best.mu, s.best.lam)
    return inst, ch, s.best, max(s.bound(), wp.bound(inst.omega))


def _run(start, last_s=0.0, cap=800):
    inst, ch, warm, lb = start
    keep: list = []
    lines: list[str] = []
    fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, 64, 0.6, keep, 1, cap, last_s, 1000, 1000, lines.append)
    return fine, tried, keep, lines


def test_each_finer_grid_raises_the_bound_and_the_finest_that_did_is_returned(start):
    inst, ch, _, lb = start
    fine, tried, keep, lines = _run(start)
    assert [r["buckets"] for r in tried][:2] == [100, 200] and all(r["finished"] for r in tried)
    bounds = [r["lower_bound"] for r in tried]
    assert bounds[0] > lb                                   # a finer grid raises the bound here
    raised = [r["buckets"] for r, prev in zip(tried, [lb, *bounds]) if r["lower_bound"] > prev * (1 + 1e-6)]
    assert fine.i0 == max(raised) and fine.optimistic
    assert len(keep) == len(tried) and len(lines) == len(tried)
    assert tried[-1]["buckets"] <= 800
    for p, r in zip(keep, tried):
        assert p.bound(inst.omega) == r["lower_bound"]


def test_a_gain_below_the_threshold_still_names_the_grid_of_the_best_bound(start):
    """A pass that raises the bound by less than FINER_GAIN ends the loop, but its grid is the one
    the bracket reports (its bound is the highest): ``grid`` and the bound's pass never disagree."""
    inst, ch, warm, _ = start
    # the pass finer_bounds makes on 100 buckets: the ratio times LEAN, as every grid after the first
    fine100 = A.Chain(inst, 100, optimistic=True)
    first = waterfill.waterfill_pass(fine100, 0.6 * waterfill.LEAN * warm.mu, warm.lam).bound(inst.omega)
    lb = first * (1 - budget.FINER_GAIN / 2)           # below the pass's bound by less than the threshold
    fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, 64, 0.6, [], 1, 800, 0.0, 1000, 1000, print)
    assert [r["buckets"] for r in tried] == [100] and tried[0]["lower_bound"] == first
    assert fine.i0 == 100


def test_no_grid_starts_when_growth_times_the_last_pass_does_not_fit_the_time_left(start):
    clock = FakeClock()
    with limits.use_clock(clock), limits.deadline(10.0):
        fine, tried, keep, _ = _run(start, last_s=10.0 / FINER_GROWTH + 0.01)
    assert tried == [] and keep == [] and fine is start[1]


def test_a_pass_the_time_limit_stops_is_dropped_and_the_chain_kept(start, monkeypatch):
    clock = FakeClock()
    real = waterfill.waterfill_pass

    def slow(*args, **kwargs):
        clock.advance(100.0)                 # past the deadline: the pass's first epoch sees it
        return real(*args, **kwargs)

    monkeypatch.setattr(waterfill, "waterfill_pass", slow)
    with limits.use_clock(clock), limits.deadline(10.0):
        fine, tried, keep, _ = _run(start, last_s=1.0)
    assert fine is start[1] and keep == []
    assert tried == [{"buckets": 100, "lower_bound": None, "finished": False, "seconds": 100.0}]


def test_nothing_runs_without_slopes_or_a_failure_price_ratio(start):
    inst, ch, warm, lb = start
    for slopes, ratio in ((0, 0.6), (64, None)):
        fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, slopes, ratio, [], 1, 800, 0.0, 1000, 1000, print)
        assert fine is ch and tried == []
    assert math.isfinite(lb) and budget.FINER_GAIN < 1e-3


def test_a_refinement_stopped_by_its_time_limit_spends_the_time_left_on_the_bound(monkeypatch):
    """Searches of 1 and 4 s and tunings of 1 s on an injected clock: after the second grid the
    third is predicted past the 20-s limit, the policy is certified, and the time left goes to
    lower-bound-only water-filling passes (free on this clock) on finer grids up to the cap: the
    bracket reports the best of them, on the grid that gave it, and the same certification."""
    from deplbench.formulations.adaptive import bracket
    from tests.formulations.adaptive.test_adaptive_clock import _certification_at_tuning_rate, _timed_searches

    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0)
    clock, rate = FakeClock(), {}
    real_tune = bracket._tune

    def tune(*args, **kwargs):
        out = real_tune(*args, **kwargs)
        clock.advance(1.0)
        rate["runs/s"] = sum(t["runs"] for t in out[1]) / 1.0
        return out

    with limits.use_clock(clock):
        grids = _timed_searches(monkeypatch, clock, 4.0)
        monkeypatch.setattr(bracket, "_tune", tune)
        _certification_at_tuning_rate(monkeypatch, clock, rate)
        b = A.adaptive_bounds(inst, buckets=50, runs=1000, tune_runs=500, width=1e-6, time_limit=20.0,
                              max_buckets=400, time_points=0)
        # the same under an earlier outer stop (a sweep task's): its margin is kept, no bound-only grid
        grids.clear()
        with limits.deadline(19.5):
            start_t = clock.t
            outer = A.adaptive_bounds(inst, buckets=50, runs=1000, tune_runs=500, width=1e-6, time_limit=20.0,
                                      max_buckets=400, time_points=0)
    assert outer.refinement["stopped_by"] == "time_limit" and outer.refinement["bound_only"] == []
    assert outer.status == "certified" and clock.t - start_t <= 19.5
    ref = b.refinement
    assert grids == [50, 100] and ref["stopped_by"] == "time_limit" and b.status == "certified"
    finer = ref["bound_only"]
    assert [r["buckets"] for r in finer][:1] == [200] and all(r["finished"] for r in finer)
    assert all(r["buckets"] <= 400 for r in finer)
    searched = max(lv["lower_bound"] for lv in ref["levels"])
    assert finer[0]["lower_bound"] > searched               # the finer grid raised the bound
    assert b.lower_bound == max(searched, *(r["lower_bound"] for r in finer))
    assert b.grid["buckets"] == max(r["buckets"] for r in finer if r["lower_bound"] == b.lower_bound)
    assert b.multipliers["lower_bound_source"] == "waterfill" and b.multipliers["buckets_policy"] == 100


def test_grid_limit_names_what_keeps_the_refinement_from_a_grid(start):
    _, ch, _, _ = start
    assert budget.grid_limit(ch, 100, 800, 1000, 1000) == ""
    assert budget.grid_limit(ch, 1600, 800, 1000, 1000) == "max_buckets"
    assert budget.grid_limit(ch, 100, 800, 1000, 1000, extra_bytes=1e30) == "memory_limit"
    assert budget.grid_limit(ch, 100, 800, 10**12, 1000) == "memory_limit"      # the runs' records
