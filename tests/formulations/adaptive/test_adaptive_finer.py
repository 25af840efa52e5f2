"""The time a stopped refinement has left, spent on the lower bound alone (budget.finer_bounds), and
the stop by a stalled policy (budget.policy_stalled, budget.best_tuned).

After the certification, finer grids get one water-filling pass each (the certified policy does not
change): each pass is a valid bound on the same optimum, so the bracket may only gain; a pass the
time limit stops is dropped and the certified bracket stays as it was; each pass goes to the coarsest
grid ×2^j estimated to meet the width, else the finest whose predicted time FINER_GROWTH^j × the last
pass's seconds fits the time left, and passes continue only while they keep raising the bound and
the width is not met. Run on an injected clock, so every decision holds at any load.
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


def test_each_pass_goes_to_the_finest_grid_predicted_to_fit_and_the_best_is_returned(start):
    """Time left 100 s, the last pass 10 s: ×2 is predicted at 25 s, ×4 at 62.5 s, ×8 at 156.25 s, so
    the first pass jumps from 50 to 200 buckets; it takes no time on this clock, so the next goes
    straight to the cap (800). The first raises the bound here; the grid returned is the best one's."""
    inst, ch, _, lb = start
    clock = FakeClock()
    with limits.use_clock(clock), limits.deadline(100.0):
        fine, tried, keep, lines = _run(start, last_s=10.0)
    assert FINER_GROWTH ** 2 * 10.0 <= 100.0 < FINER_GROWTH ** 3 * 10.0
    assert [r["buckets"] for r in tried] == [200, 800] and all(r["finished"] for r in tried)
    bounds = [r["lower_bound"] for r in tried]
    assert lb < bounds[0]                                   # a finer grid raises the bound here
    assert fine.i0 == tried[bounds.index(max(bounds))]["buckets"] and fine.optimistic
    assert len(keep) == len(tried) and len(lines) == len(tried)
    for p, r in zip(keep, tried):
        assert p.bound(inst.omega) == r["lower_bound"]


def test_the_jump_stops_below_a_grid_beyond_the_memory_budget(start, monkeypatch):
    """The budget fits the 200-bucket pass's estimate and the certification's runs held, but not the
    400-bucket one's: no time limit, yet the pass goes to 200 buckets and no further."""
    _, ch, _, _ = start
    per = waterfill.waterfill_memory(ch, 64) / ch.i0
    alive = budget.RUN_BYTES * 1000                      # the certification's runs, still held
    monkeypatch.setattr(budget, "memory_budget_gib", lambda: (per * 300 + alive) / 2**30)
    _, tried, _, _ = _run(start)
    assert [r["buckets"] for r in tried] == [200]
    # room for a 200-bucket pass but not for it and the runs held: the pass goes to 100 only
    monkeypatch.setattr(budget, "memory_budget_gib", lambda: (per * 200 + alive / 2) / 2**30)
    _, tried, _, _ = _run(start)
    assert [r["buckets"] for r in tried] == [100]


def test_a_bound_only_grid_is_not_refused_for_the_policy_tables_it_never_builds(start, monkeypatch):
    """The refinement's memory estimate counts the policy tables a tuned grid builds; a pass of the
    lower bound alone builds none: with that estimate beyond any budget, the passes still go to the
    cap."""
    monkeypatch.setattr(budget, "memory_estimate", lambda *a, **k: math.inf)
    _, tried, _, _ = _run(start)
    assert [r["buckets"] for r in tried] == [800] and tried[0]["finished"]


def test_a_grid_beyond_the_budget_once_built_is_recorded_and_the_pass_goes_one_coarser(start, monkeypatch):
    """The per-bucket estimate fits the cap (800 buckets, no time limit) but the chain built at 800
    needs more: that grid is recorded unfinished, the pass runs at 400 and no later pass goes back to
    800."""
    real = waterfill.waterfill_memory
    monkeypatch.setattr(budget, "waterfill_memory", lambda ch, j: math.inf if ch.i0 >= 800 else real(ch, j))
    _, tried, keep, _ = _run(start)
    assert [(r["buckets"], r["finished"]) for r in tried] == [(800, False), (400, True)]
    assert tried[0]["lower_bound"] is None and len(keep) == 1


def test_a_gain_below_the_threshold_still_names_the_grid_of_the_best_bound(start):
    """A pass that raises the bound by less than FINER_GAIN ends the loop, but its grid is the one
    the bracket reports (its bound is the highest): ``grid`` and the bound's pass never disagree."""
    inst, ch, warm, _ = start
    # the pass finer_bounds makes on 100 buckets: the ratio times LEAN, as every grid after the first
    fine100 = A.Chain(inst, 100, optimistic=True)
    first = waterfill.waterfill_pass(fine100, 0.6 * waterfill.LEAN * warm.mu, warm.lam).bound(inst.omega)
    lb = first * (1 - budget.FINER_GAIN / 2)           # below the pass's bound by less than the threshold
    clock = FakeClock()
    with limits.use_clock(clock), limits.deadline(10.0):        # 3 s a pass: ×2 fits, ×4 does not
        fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, 64, 0.6, [], 1, 800, 3.0, 1000, 1000, print)
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
        fine, tried, keep, _ = _run(start, last_s=1.0)       # ×4 predicted at 6.25 s: 200 buckets
    assert fine is start[1] and keep == []
    assert tried == [{"buckets": 200, "lower_bound": None, "finished": False, "seconds": 100.0}]


def test_nothing_runs_without_slopes_or_a_failure_price_ratio(start):
    inst, ch, warm, lb = start
    for slopes, ratio in ((0, 0.6), (64, None)):
        fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, slopes, ratio, [], 1, 800, 0.0, 1000, 1000, print)
        assert fine is ch and tried == []
    assert math.isfinite(lb) and budget.FINER_GAIN < 1e-3


def _clocked(monkeypatch, growth: float, ucb) -> tuple:
    """The scaling instance, and stubs on an injected clock: the i-th grid's search takes growth**i s, a
    tuning 1 s, the certification its runs at the tuning's rate; the n-th tuning's predicted upper
    bound is ``ucb(search, n)``. Returns the instance, the clock and the grids searched and tuned."""
    from deplbench.formulations.adaptive import bracket
    from tests.formulations.adaptive.test_adaptive_clock import _certification_at_tuning_rate, _timed_searches

    clock, rate, tuned = FakeClock(), {}, []
    real_tune = bracket._tune

    def tune(instance, b, search, *args, **kwargs):
        out = real_tune(instance, b, search, *args, **kwargs)
        clock.advance(1.0)
        rate["runs/s"] = sum(t["runs"] for t in out.log) / 1.0
        tuned.append(b)
        return out._replace(ucb=ucb(search, len(tuned)))

    grids = _timed_searches(monkeypatch, clock, growth)
    monkeypatch.setattr(bracket, "_tune", tune)
    _certification_at_tuning_rate(monkeypatch, clock, rate)
    return generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0), clock, grids, tuned


def test_a_refinement_stopped_by_its_time_limit_spends_the_time_left_on_the_bound(monkeypatch):
    """Searches of 1 and 4 s and tunings of 1 s on an injected clock: after the second grid the
    third is predicted past the 20-s limit, the policy is certified, and the time left goes to
    lower-bound-only water-filling passes (free on this clock) on finer grids up to the cap: the
    bracket reports the best of them, on the grid that gave it, and the same certification."""
    # predictions far above the bound, each tuning gaining: neither the width nor a policy stall stops it
    inst, clock, grids, _ = _clocked(monkeypatch, 4.0, lambda search, n: search.bound() * (2.0 - 0.1 * n))
    with limits.use_clock(clock):
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
    # the passes take no time on this clock: the first goes straight to the cap
    assert [r["buckets"] for r in finer] == [400] and all(r["finished"] for r in finer)
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


def _tuned(ucb: float, *args) -> budget.Tuned:
    """A tuning of predicted upper bound ``ucb``: ``(buckets)`` or ``(met, buckets)``."""
    met, buckets = args if len(args) == 2 else (True, args[0])
    return budget.Tuned(ucb, object(), [], buckets, [], met)       # type: ignore[arg-type]


def test_the_policy_certified_is_the_tuning_with_the_least_predicted_upper_bound():
    ts = [_tuned(10.0, 50), _tuned(9.0, 100), _tuned(9.5, 200)]
    assert budget.best_tuned(ts)[3] == 100
    # the others' policies are dropped (their tables would only hold memory), the best's kept
    assert [t.policy is None for t in ts] == [True, False, True]
    assert budget.best_tuned([_tuned(9.0, 50), _tuned(9.0, 100)])[3] == 100     # a tie: the finer grid
    assert budget.best_tuned([_tuned(math.inf, 50)])[3] == 50
    # a tuning that met its target before a cheaper one that did not
    assert budget.best_tuned([_tuned(10.0, 50), _tuned(5.0, False, 100)])[3] == 50


@pytest.mark.parametrize("ucbs, width, stalled", [
    ([10.0], 0.02, False),                        # one tuning: nothing to compare
    ([10.0, 9.0], 0.02, False),                   # −10 %: a gain
    ([10.0, 9.98], 0.02, False),                  # −0.2 %: a gain
    ([10.0, 9.995], 0.02, True),                  # −0.05 %, below POLICY_GAIN: no gain
    ([10.0, 9.0, 9.2], 0.02, True),               # worse than the best earlier one
    ([10.0, 10.0], None, False),                  # no width: no refinement to stop
    ([math.inf, 12.0], 0.02, False),              # no finite estimate before: the first one is a gain
    ([10.0, (10.0, False)], 0.02, False),         # the last tuning missed its target: keep refining
    ([(9.0, False), 10.0], 0.02, False),          # no earlier tuning met its target: nothing to compare
])
def test_a_policy_stalls_when_a_tuning_gains_less_than_a_thousandth(ucbs, width, stalled):
    assert budget.POLICY_GAIN == 1e-3
    ts = [_tuned(*u, 50 * 2 ** i) if isinstance(u, tuple) else _tuned(u, 50 * 2 ** i) for i, u in enumerate(ucbs)]
    assert budget.policy_stalled(ts, width) is stalled


@pytest.mark.parametrize("est_w, gain, lb, width, reach", [
    (0.019, 0.0, 1000.0, 0.01, True),             # within twice the width
    (0.0231, 21.88, 1270.76, 0.01, True),         # PACT-VGG11 ℓmax 0.15 at 4800 buckets: 2.31 % − 1.72 %
    (0.0231, 5.0, 1270.76, 0.01, False),          # a small last gain: 2.31 % − 0.39 % is beyond 1 %
    (0.03, -50.0, 1000.0, 0.01, False),           # a falling bound gains nothing
    (0.0201, 0.0, 1000.0, 0.01, False),           # beyond twice the width, no gain
    (math.inf, 10.0, 1000.0, 0.01, False),        # no estimate of the upper end
    (0.015, 10.0, -3.0, 0.01, False),             # no positive bound: no relative width
    (0.5, math.inf, 1000.0, 0.01, True),          # the grid before had no finite bound: tuned, harmless
])
def test_the_target_looks_within_reach_within_twice_the_width_or_once_the_last_gain_is_repeated(
        est_w, gain, lb, width, reach):
    assert budget.within_reach(est_w, gain, lb, width) is reach


def test_a_stalled_policy_stops_the_refinement_and_the_time_left_goes_to_the_bound(monkeypatch):
    """Tunings predicting upper bounds X, 0.9 X, 0.95 X (X far above the bound) on grids of 50, 100, 200
    buckets: the third gains nothing, so the refinement stops there ("policy") although the limit
    leaves time, certifies the 100-bucket grid's policy (the least prediction) and spends the time on
    a lower-bound-only pass, at the cap (the passes are free on this clock)."""
    inst, clock, grids, tuned = _clocked(monkeypatch, 1.0, lambda search, n: 1e6 * (1.0, 0.9, 0.95)[n - 1])
    with limits.use_clock(clock):
        b = A.adaptive_bounds(inst, buckets=50, runs=1000, tune_runs=500, width=0.01, time_limit=1000.0,
                              max_buckets=800, time_points=0)
    ref = b.refinement
    assert grids == [50, 100, 200] and tuned == [50, 100, 200]
    assert ref["stopped_by"] == "policy" and b.status == "certified" and clock.t < 1000.0
    assert b.multipliers["buckets_policy"] == 100
    finer = ref["bound_only"]
    assert [r["buckets"] for r in finer] == [800] and finer[0]["finished"]
    assert finer[0]["lower_bound"] > max(lv["lower_bound"] for lv in ref["levels"])
    assert b.lower_bound == finer[0]["lower_bound"] and b.grid["buckets"] == 800
    # the cost range is the certified (100-bucket) policy's own: BUDGET × its tuning's largest cost
    own = [t["cost_max"] for t in b.tuning if t["buckets"] == 100 and t["role"] == "share" and t["cost_max"] > 0]
    last = [t["cost_max"] for t in b.tuning if t["buckets"] == 200 and t["role"] == "share" and t["cost_max"] > 0]
    assert own and last and own[-1] != last[-1]
    assert b.certification["largest_cost"] == min(A.largest_cost(inst), budget.BUDGET * own[-1])


def test_the_pass_goes_to_the_coarsest_grid_estimated_to_meet_the_width_and_stops_there(start):
    """With the last doubling's gain G, ×2 is estimated at LB + G/2 and ×4 at LB + 3G/4: ``enough`` set
    between them takes the pass to 200 buckets (not the cap, 800, though the time allows it), and a
    bound reaching ``enough`` ends the passes. A gain of nothing starts no pass."""
    inst, ch, warm, lb = start
    fine200 = A.Chain(inst, 200, optimistic=True)
    b200 = waterfill.waterfill_pass(fine200, 0.6 * waterfill.LEAN * warm.mu, warm.lam).bound(inst.omega)
    enough = b200 * (1 - 1e-9)
    assert enough > lb
    gain = (enough - lb) / 0.6
    fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, 64, 0.6, [], 1, 800, 0.0, 1000, 1000, print,
                               enough, gain)
    assert [r["buckets"] for r in tried] == [200] and tried[0]["lower_bound"] == b200 and fine.i0 == 200
    fine, tried = finer_bounds(ch, 50, inst.omega, lb, warm, 64, 0.6, [], 1, 800, 0.0, 1000, 1000, print,
                               math.inf, 0.0)
    assert tried == [] and fine is ch


def test_the_bracket_spends_its_time_on_the_bound_only_under_its_own_limit():
    assert budget.own_limit(None)                             # no limit at all
    with limits.deadline(20.0):
        assert budget.own_limit(20.0) and not budget.own_limit(None)
        with limits.deadline(20.0):                           # a solver's scope with the same limit, just before
            assert budget.own_limit(20)
    with limits.deadline(19.5):                               # an earlier outer stop: its margin is kept
        with limits.deadline(20.0):
            assert not budget.own_limit(20.0)


def test_the_text_output_says_a_stalled_policy_stopped_the_refinement(capsys):
    from deplbench.cli.adaptive import _print_refinement

    r = {"refinement": {"width_target": 0.01, "stopped_by": "policy", "levels": [{"buckets": 600}, {"buckets": 1200}],
                        "bound_only": [{"buckets": 4800, "finished": True}]}}
    _print_refinement(r, 0.02)
    out = capsys.readouterr().out
    assert out.startswith("refinement   target 1 % NOT met; stopped by the policy (a finer grid's tuning gained "
                          "nothing) (grids 600, 1200); then the lower bound alone on 4800")
