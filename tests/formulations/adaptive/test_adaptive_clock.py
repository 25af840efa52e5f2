"""The adaptive bracket's clock: its time limit (and any outer stop) stops the whole solve.

Every test runs on an injected clock (:func:`deplbench.limits.use_clock`) that
only the test advances — by a set number of seconds per DP pass, tuning
simulation or grid — so each decision is proven without real timing and
holds on any machine at any load.
"""

from __future__ import annotations

import math

import pytest

from deplbench import limits
from deplbench.formulations.adaptive import bracket, certify, search
from deplbench.formulations.adaptive.bracket import GROWTH, adaptive_bounds, next_grid_fits
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import solve
from tests.cli.test_cli_adaptive_options import TINY

SMALL = dict(buckets=60, runs=1000, tune_runs=500)


class FakeClock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def inst():
    return parse_instance(TINY)


@pytest.fixture
def clock():
    fake = FakeClock()
    with limits.use_clock(fake):
        yield fake


def _timed_passes(monkeypatch, clock, seconds: float) -> list:
    """Every priced DP pass of the search costs ``seconds`` on ``clock``; the passes made, in order."""
    made = []
    real = search.dp

    def dp(chain, lam, mu, keep=False):
        p = real(chain, lam, mu, keep)
        made.append((chain, p))
        clock.advance(seconds)
        return p

    monkeypatch.setattr(search, "dp", dp)
    return made


def _timed_simulations(monkeypatch, clock, seconds: float) -> list:
    """Every tuning or certification simulation costs ``seconds`` on ``clock``; (runs, seed) of each, in order."""
    made = []
    real = certify.simulate

    def simulate(instance, policy, runs, seed, *args, **kwargs):
        made.append((runs, seed))
        clock.advance(seconds)
        return real(instance, policy, runs, seed, *args, **kwargs)

    monkeypatch.setattr(certify, "simulate", simulate)
    return made


def test_the_time_limit_stops_one_grid_between_dp_passes_and_keeps_the_best_bound(inst, clock, monkeypatch):
    """adaptive-opt's default (one grid, no width): ``solve --time-limit`` stops the search,
    status time_limit, the best proven bound of the passes finished, no upper bound."""
    full = solve(inst, "adaptive-opt", evaluate=False, **SMALL)
    assert full.status == "feasible" and full.lower_bound is not None       # unstopped: certified
    made = _timed_passes(monkeypatch, clock, 1.0)
    res = solve(inst, "adaptive-opt", evaluate=False, refine_time=5.5, **SMALL)
    assert res.status == "time_limit" and res.cost is None and res.plan is None, res.message
    # six passes at 1 s each (the first, μ's probe, is no bound): stopped before the seventh
    assert len(made) == 6 and clock.t == 6.0
    tm = made[0][0].st.time_max
    kept = max(p.bound(inst.omega, tm) for _, p in made[1:])
    assert res.lower_bound == kept and 0 < kept <= full.lower_bound
    assert "\n" not in res.message
    assert res.message.startswith("time limit 5.5 s reached (adaptive-opt's multiplier search, before DP pass 6 "
                                  "on 60 buckets)")
    assert "lower bound" in res.message and "no upper bound (no policy certified)" in res.message
    d = res.diagnostics
    assert d["status"] == "time_limit" and d["certified"] is False and not d["certification"]
    assert d["refinement"]["stopped_by"] == "time_limit"
    # the frontier is proven too: at ω it is the bound kept
    at_omega = [f["lower_bound"] for f in d["frontier"] if f["omega"] == pytest.approx(inst.omega)]
    assert at_omega == [kept]


def test_a_deadline_before_any_pass_keeps_no_bound(inst, clock, monkeypatch):
    _timed_passes(monkeypatch, clock, 1.0)
    clock.advance(100.0)
    with limits.deadline(50.0):
        clock.advance(60.0)
        b = adaptive_bounds(inst, **SMALL)
    assert b.status == "time_limit" and b.lower_bound == -math.inf and not b.certified
    assert "no DP pass finished, so no lower bound" in b.message
    res = solve(inst, "adaptive-opt", evaluate=False, refine_time=1e-9, **SMALL)
    assert res.status == "time_limit" and res.lower_bound is None and res.cost is None


@pytest.mark.slow
def test_the_time_limit_stops_between_tuning_simulations(inst, clock, monkeypatch):
    """The search finished (its bound kept whole); the tuning is stopped between simulations."""
    full = adaptive_bounds(inst, **SMALL)
    sims = _timed_simulations(monkeypatch, clock, 100.0)
    b = adaptive_bounds(inst, time_limit=150.0, **SMALL)
    assert len(sims) == 2 and b.status == "time_limit" and not b.certified
    assert b.message.startswith("time limit 150 s reached (adaptive-opt's policy tuning, before simulation 3 ")
    assert b.lower_bound == full.lower_bound          # every pass of the search finished
    assert b.to_dict()["upper_bound"] is None


@pytest.mark.slow
def test_the_certification_starts_only_when_predicted_to_end_in_time(inst, clock, monkeypatch):
    """Tuning simulations cost 1 s each on the clock: the certification's runs are predicted
    at that rate and it is not started when they would end after the limit."""
    sims = _timed_simulations(monkeypatch, clock, 1.0)
    free = adaptive_bounds(inst, **SMALL)
    assert free.certified
    tuned_at = clock.t                              # tuning took len(sims) s, the rest none
    rate = sum(r for r, _ in sims) / len(sims)      # runs per second
    cert_s = SMALL["runs"] / rate
    clock.t = 0.0
    short = adaptive_bounds(inst, time_limit=tuned_at + 0.5 * cert_s, **SMALL)
    assert short.status == "time_limit" and not short.certified
    assert f"certifying the policy on {SMALL['runs']} runs would take about {cert_s:.3g} s" in short.message
    assert short.lower_bound == free.lower_bound
    clock.t = 0.0
    enough = adaptive_bounds(inst, time_limit=tuned_at + 1.5 * cert_s, **SMALL)
    assert enough.certified and enough.upper_bound == free.upper_bound


@pytest.mark.parametrize("grid_s,tune_s,cert_s,need", [
    ([1.0], [0.5], 1.0, GROWTH * (1.0 + 0.5) + 1.0),          # one grid: the least growth
    ([1.0, 2.0], [0.5], 0.0, GROWTH * (2.0 + 0.5)),           # ×2 measured: still the least growth
    ([1.0, 4.0], [0.5], 0.0, 4.0 * (4.0 + 0.5)),              # ×4 measured (a loaded machine): ×4
    ([1.0, 4.0], [0.5, 1.5], 2.0, 4.0 * (4.0 + 1.5) + 2.0),   # the last tuning's time, the certification's
    ([2.0, 1.0], [], 0.0, GROWTH * 1.0),                      # a faster grid is not extrapolated down
])
def test_the_next_grid_is_started_only_when_predicted_to_end_in_time(grid_s, tune_s, cert_s, need):
    assert next_grid_fits(need, grid_s, tune_s, cert_s) == (True, pytest.approx(need))
    assert next_grid_fits(need * (1 - 1e-9), grid_s, tune_s, cert_s)[0] is False
    assert next_grid_fits(math.inf, grid_s, tune_s, cert_s)[0] is True


def _timed_searches(monkeypatch, clock, growth: float) -> list:
    """The i-th grid's multiplier search costs ``growth``**i s on ``clock``; the grids searched, in order."""
    grids, real = [], bracket._search_at

    def search_at(instance, chain, *args, **kwargs):
        s = real(instance, chain, *args, **kwargs)
        clock.advance(growth ** len(grids))
        grids.append(chain.i0)
        return s

    monkeypatch.setattr(bracket, "_search_at", search_at)
    return grids


def _certification_at_tuning_rate(monkeypatch, clock, rate: dict) -> None:
    """The certification's simulation costs its runs at ``rate["runs/s"]`` (set by the tuning) on ``clock``."""
    real = bracket.simulate

    def simulate(instance, policy, runs, *args, **kwargs):
        clock.advance(runs / rate["runs/s"])
        return real(instance, policy, runs, *args, **kwargs)

    monkeypatch.setattr(bracket, "simulate", simulate)


def test_the_refinement_never_starts_a_grid_predicted_to_end_after_the_limit(inst, clock, monkeypatch):
    """Grids whose search takes 1, 4, 16 s (×4 each: a machine under load) and tunings of
    1 s: after the second grid the measured ×4 predicts the third to end after the limit
    of 20 s, so the refinement stops there and certifies, within the limit. (A rule with a
    fixed ×2.5 would have started the third grid and ended past 22 s.)"""
    real_tune, rate, tuned = bracket._tune, {}, []
    grids = _timed_searches(monkeypatch, clock, 4.0)

    def tune(instance, b, search, *args, **kwargs):
        out = real_tune(instance, b, search, *args, **kwargs)
        clock.advance(1.0)
        rate["runs/s"] = sum(t["runs"] for t in out.log) / 1.0
        tuned.append(b)
        # far above the bound, and each tuning gains: neither the width nor a policy stall stops it
        return out._replace(ucb=search.bound() * (2.0 - 0.1 * len(tuned)))

    monkeypatch.setattr(bracket, "_tune", tune)
    _certification_at_tuning_rate(monkeypatch, clock, rate)
    b = adaptive_bounds(inst, buckets=30, runs=1000, tune_runs=500, width=1e-6, time_limit=20.0)
    assert grids == [30, 60] and b.refinement["stopped_by"] == "time_limit"
    assert b.certified and b.status != "time_limit"
    assert clock.t <= 20.0


def test_a_tuning_from_an_earlier_grid_is_scaled_for_every_grid_since():
    # the last grid not tuned: its tuning time is two grids old, and the next grid's grows by g per grid
    assert next_grid_fits(math.inf, [1.0, 2.0], [1.0], 0.5, tune_steps=2)[1] == pytest.approx(
        GROWTH * 2.0 + GROWTH ** 2 * 1.0 + 0.5)
    assert next_grid_fits(math.inf, [1.0, 2.0], [1.0], 0.5)[1] == pytest.approx(GROWTH * (2.0 + 1.0) + 0.5)


def test_the_refinement_scales_a_tuning_skipped_on_the_last_grid(clock, monkeypatch):
    """Searches of 1, 2, 4 s and tunings that grow as they do (1 s at 30 buckets, 4 s at 120):
    the 60-bucket grid is not tuned (the bound gains, the predicted UB is far), so the tuning
    the 120-bucket grid would need is two grids older than its search. Predicted at one
    growth step (7.5 s + the certification) the third grid would start and end past the limit,
    certifying nothing; at two steps (11.25 s + it) the refinement stops and certifies at 60."""
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data())
    real_tune, tuned, rate = bracket._tune, [], {}
    grids = _timed_searches(monkeypatch, clock, 2.0)

    def tune(instance, b, search, *args, **kwargs):
        out = real_tune(instance, b, search, *args, **kwargs)
        cost = 2.0 ** (len(grids) - 1)                          # grows as the search does
        clock.advance(cost)
        tuned.append(b)
        rate["runs/s"] = sum(t["runs"] for t in out.log) / cost
        # a predicted UB 40 % above the bound, lower at every grid: far from the width, yet not stalled
        return out._replace(ucb=1.4 * search.bound() / len(tuned))

    monkeypatch.setattr(bracket, "_tune", tune)
    _certification_at_tuning_rate(monkeypatch, clock, rate)
    # max_buckets: a water-filling pass takes no time on the fake clock, so the bound-only passes
    # after the certification would be predicted to fit on any grid; the cap keeps them small
    b = adaptive_bounds(inst, buckets=30, runs=100, tune_runs=500, width=1e-6, time_limit=11.75, time_points=0,
                        max_buckets=240)
    cert_s = 100 / (sum(t["runs"] for t in b.tuning if t["buckets"] == 30) / 1.0)
    assert cert_s <= 0.25                                      # the window the limit is set in holds
    assert [lv["tuned"] for lv in b.refinement["levels"]] == [True, False]
    assert grids == [30, 60] and tuned == [30, 60] and b.refinement["stopped_by"] == "time_limit"
    assert b.status != "time_limit" and b.certification and clock.t <= 11.75


def test_a_stop_with_no_time_to_tune_the_last_grid_certifies_the_last_tuned_policy(clock, monkeypatch):
    """As above, but tuning the 60-bucket grid is predicted (the growth taken ×10⁶ here) to pass the
    limit: the refinement certifies the 30-bucket grid's policy instead of ending with nothing, says so
    in ``buckets_policy``, and the solver rebuilds that policy on its own grid: run on the certification
    seed, it succeeds on exactly the runs the certificate counted."""
    from types import SimpleNamespace

    from deplbench.formulations.evaluation.closed_loop import simulate
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data())
    real_tune, tuned, rate = bracket._tune, [], {}
    grids = _timed_searches(monkeypatch, clock, 2.0)

    def tune(instance, b, search, *args, **kwargs):
        out = real_tune(instance, b, search, *args, **kwargs)
        clock.advance(1.0)
        tuned.append(b)
        rate["runs/s"] = sum(t["runs"] for t in out.log) / 1.0
        return out._replace(ucb=1.4 * search.bound())

    monkeypatch.setattr(bracket, "_tune", tune)
    monkeypatch.setattr(bracket, "GROWTH", 1e6)
    _certification_at_tuning_rate(monkeypatch, clock, rate)
    b = adaptive_bounds(inst, buckets=30, runs=100, tune_runs=500, width=1e-6, time_limit=11.75, time_points=0,
                        max_buckets=240)                      # the cap: as in the test above
    assert grids == [30, 60] and tuned == [30] and b.refinement["stopped_by"] == "time_limit"
    assert b.status != "time_limit" and b.certified
    # the grid reported is the bound-only pass's, finer than the policy's, which is rebuilt below
    assert b.grid["buckets"] == 240 and b.refinement["bound_only"][0]["finished"]
    assert b.multipliers["buckets_policy"] == 30
    res = SimpleNamespace(diagnostics=b.to_dict())
    pol = AdaptiveOpt().closed_loop_policy(inst, res, buckets=30, runs=100, tune_runs=500, time_points=0)
    assert pol.chain.i0 == 30 and pol.give_up == b.multipliers["give_up"]
    sim = simulate(inst, pol.with_give_up(0.0), b.certification["runs"], b.certification["seed"])
    assert int(sim.success.sum()) == b.certification["successes"]


def test_a_stop_during_the_first_grid_build_is_seen_before_the_reachability_pass(inst, clock, monkeypatch):
    """The first grid's build takes 10 s on the clock: the reachability pass (the optimistic
    chain's best P(success)) does not start, and the line says no bound exists yet."""
    from deplbench.formulations.adaptive import chain as chain_mod

    real, reach = chain_mod.Chain, []

    class SlowChain(real):                       # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            clock.advance(10.0)

    monkeypatch.setattr(chain_mod, "Chain", SlowChain)
    monkeypatch.setattr(bracket, "best_success", lambda chain: reach.append(chain) or (1.0, 0.0))
    b = adaptive_bounds(inst, time_limit=5.0, **SMALL)
    assert b.status == "time_limit" and not reach
    assert b.message.startswith("time limit 5 s reached (adaptive-opt, before the reachability pass (the optimistic "
                                "chain's best P(success)) on 60 buckets); no DP pass finished, so no lower bound")
    assert b.lower_bound == -math.inf and b.grid == {}
    assert b.refinement["stopped_on_grid"]["buckets"] == 60


def test_a_stop_passed_before_the_first_grid_builds_nothing(inst, clock, monkeypatch):
    built = []
    real = bracket.build_chain
    monkeypatch.setattr(bracket, "build_chain", lambda *a, **k: built.append(a) or real(*a, **k))
    with limits.deadline(5.0):
        clock.advance(6.0)
        b = adaptive_bounds(inst, **SMALL)
    assert b.status == "time_limit" and len(built) == 1          # entered, refused before the kernels
    assert b.message.startswith("time limit 5 s reached (adaptive-opt, before building the optimistic loss grid "
                                "of 60 buckets)")
    assert b.grid == {} and b.refinement["stopped_on_grid"] is None


def test_the_reachability_pass_checks_the_stop_between_its_steps(inst, clock, monkeypatch):
    """Each correlation of the reachability pass costs 1 s: a limit of 1.5 s stops it after its
    first backward step (TINY: K̄ = 2), not after the whole pass."""
    from deplbench.formulations.adaptive import chain as chain_mod

    real = chain_mod.correlate_rows

    def correlate_rows(*args, **kwargs):
        clock.advance(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(chain_mod, "correlate_rows", correlate_rows)
    b = adaptive_bounds(inst, time_limit=1.5, **SMALL)
    assert b.status == "time_limit"
    assert b.message.startswith("time limit 1.5 s reached (adaptive-opt's reachability pass on 60 buckets, backward "
                                "step 2 of 2)")
    assert "no DP pass finished, so no lower bound" in b.message


def test_the_deadline_aware_reachability_pass_checks_the_stop_between_its_steps(inst, clock, monkeypatch):
    """The deadline carried (TINY affords a time grid by default): each of its correlations costs
    1 s, the optimistic chain's pass none; a limit of 0.5 s stops it after its first step."""
    from deplbench.formulations.adaptive import timed

    real = timed.correlate

    def correlate(*args, **kwargs):
        clock.advance(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(timed, "correlate", correlate)
    b = adaptive_bounds(inst, time_limit=0.5, **SMALL)
    assert b.status == "time_limit", b.message
    assert b.message.startswith("time limit 0.5 s reached (adaptive-opt's deadline-aware reachability pass on 60 "
                                "buckets, backward step 2 of 2)")


def test_a_stopped_record_names_the_grid_of_its_bound_and_the_grid_it_stopped_on(inst, clock, monkeypatch):
    """400 buckets: the multiplier search runs on a grid 8× coarser first (50 buckets); the stop
    passes as that search ends, so the bound kept is a 50-bucket pass while 400 was worked on."""
    real = search.lower_bound_search

    def lower_bound_search(chain, *args, **kwargs):
        s = real(chain, *args, **kwargs)
        if chain.i0 == 50:
            clock.advance(100.0)
        return s

    monkeypatch.setattr(search, "lower_bound_search", lower_bound_search)
    b = adaptive_bounds(inst, buckets=400, runs=1000, tune_runs=500, time_limit=50.0, time_points=0)
    assert b.status == "time_limit" and math.isfinite(b.lower_bound), b.message
    assert b.grid["buckets"] == 50 and b.grid["loss_step"] == pytest.approx(0.75 / 50)
    assert b.refinement["stopped_on_grid"]["buckets"] == 400
    d = b.to_dict()
    assert d["grid"] == b.grid and d["refinement"]["stopped_on_grid"] == b.refinement["stopped_on_grid"]


def test_a_stop_during_the_water_filling_search_keeps_its_finished_passes(inst, clock, monkeypatch):
    """Each water-filling pass costs 1 s (the priced ones none): a limit of 2.5 s stops the search of
    its failure price during its fourth pass; the three finished are proven bounds and kept."""
    from deplbench.formulations.adaptive import waterfill

    real, made = waterfill.waterfill_pass, []

    def waterfill_pass(*args, **kwargs):
        p = real(*args, **kwargs)
        made.append(p)
        clock.advance(1.0)
        return p

    monkeypatch.setattr(waterfill, "waterfill_pass", waterfill_pass)
    b = adaptive_bounds(inst, time_limit=2.5, time_points=0, **SMALL)
    assert b.status == "time_limit" and len(made) == 3
    assert "carried exactly by water-filling" in b.multipliers["deadline"]      # the three are in the record
    best = max(p.bound(inst.omega) for p in made)
    assert b.lower_bound >= best
    assert (b.multipliers["lower_bound_source"] == "waterfill") == (b.lower_bound == best)
    assert b.frontier and b.frontier[-1]["lower_bound"] >= best


@pytest.mark.parametrize("carried", [False, True])
def test_a_stop_inside_a_dp_pass_comes_within_one_epoch_and_keeps_the_finished_passes(inst, clock, monkeypatch,
                                                                                      carried):
    """Each epoch of a DP pass costs 1 s on the clock (read once per epoch): a search stops
    within one epoch of the deadline, not after the pass, and hands over the whole passes
    finished before it, whichever way the deadline is handled; its first (probe) pass too."""
    from deplbench.formulations.adaptive import chain as chain_mod
    from deplbench.formulations.adaptive import timed

    ch = chain_mod.build_chain(inst, 60, optimistic=True)
    mod = timed if carried else chain_mod
    real = mod.check_time

    def check_time(where):
        clock.advance(1.0)
        real(where)

    monkeypatch.setattr(mod, "check_time", check_time)
    s = timed.TimedSearch(ch, inst.omega, points=4) if carried else search.Search(ch, inst.omega)
    limit = 1.5 * ch.K                                   # one whole pass, then the deadline inside the next
    with limits.deadline(limit):
        s.run(0.0 if carried else 1.0, 1.0)
        with pytest.raises(search.SearchStopped) as exc:
            s.run(0.0 if carried else 1.0, 2.0)
    assert clock.t <= limit + 1.0, (clock.t, limit)     # within one epoch of the deadline
    assert "backward step" in str(exc.value)
    assert len(exc.value.passes) == 1 and exc.value.carried == carried
    assert math.isfinite(exc.value.passes[0].bound(inst.omega, inst.time_max))
    # the searches' first pass, which only sets the failure price's scale, stops them the same way
    with limits.deadline(0.5 * ch.K):
        with pytest.raises(search.SearchStopped) as exc:
            if carried:
                timed.timed_search(ch, inst.omega, points=4)
            else:
                search.lower_bound_search(ch, inst.omega)
    assert exc.value.passes == [] and "backward step 1 " in str(exc.value)
