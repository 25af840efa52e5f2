"""The bracket's statuses where the deadline decides, and the multipliers reported with the bound.

Two small instances (two models, two clusters, communication time):

* ``LATE``: ω = 0.9 is reached by some policy when the deadline is ignored (P ≈ 1), but
  within Tmax = 4 no policy succeeds with probability above ≈ 0.011 — every epoch at
  capacity takes ≥ 4 of the 4 time units on model a, and model b needs a switch first.
  It must be reported ``unreachable`` with its one line: up front where the carried grid
  proves it, and with the deadline priced only from the proven bound, which then exceeds
  the dearest run any policy can have.
* ``TIGHT``: two deterministic epochs at t = c/r fill Tmax exactly; the carried bound beats
  the priced one, and the multipliers and rounding bound reported must be the carried pass's.
"""

from __future__ import annotations

import copy
import json
import math
import re

import numpy as np
import pytest

from deplbench.formulations import adaptive as A
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.jsonio import number_text

_CLUSTERS = [{"name": "C0", "capacity": 0.5, "unit_cost": 3.0, "bandwidth": 2.0},
             {"name": "C1", "capacity": 0.5, "unit_cost": 3.0, "bandwidth": 2.0}]
LATE = {
    "format_version": 1, "name": "late", "initial_loss": 1.0, "loss_max": 0.25, "omega": 0.9, "time_max": 4.0,
    "horizon": 5, "transfer_cost_mode": "once", "data_rule": "intended",
    "models": [{"name": "a", "size": 0.5, "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0, "decay": "none",
                "improvement": {"kind": "lognormal", "mu": 0.5, "sigma": 0.8}},
               {"name": "b", "size": 0.0, "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0, "decay": "none",
                "improvement": {"kind": "normal", "mean": 2.0, "std": 0.5}}],
    "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0.125}}],
    "clusters": _CLUSTERS, "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}], "transfer_costs": [],
    "provenance": {"generator": "manual", "parameters": {}, "seed": None, "assumptions": []},
}
TIGHT = copy.deepcopy(LATE)
TIGHT.update(name="tight", omega=0.875, time_max=2.0, horizon=2,
             clusters=[{"name": "C0", "capacity": 0.5, "unit_cost": 1.0, "bandwidth": 0.5},
                       {"name": "C1", "capacity": 1.0, "unit_cost": 3.0, "bandwidth": 4.0}])
TIGHT["models"][0].update(size=1.0, improvement={"kind": "empirical", "samples": [4.0, 4.0]})
TIGHT["models"][1].update(improvement={"kind": "empirical", "samples": [4.0, 4.0]})


@pytest.mark.slow
def test_target_the_deadline_makes_unreachable_is_unreachable():
    inst = parse_instance(LATE)
    chain = A.Chain(inst, 24, optimistic=True)
    reach, err = A.best_success(chain)
    assert reach + err >= inst.omega                      # reachable if the deadline is ignored
    b = A.adaptive_bounds(inst, buckets=24, runs=500, tune_runs=500, time_points=32)
    assert b.status == "unreachable" and not b.certified and b.lower_bound == math.inf
    assert b.message.startswith("no policy reaches P(success) ≥ ω = 0.9 within Tmax = 4: the optimistic "
                                "chain's best is 0.0111")
    assert b.messages == [b.message] and b.refinement["best_success"] < 0.02
    # the grid relaxes the deadline: a finer grid can only lower the best P(success)
    assert A.timed_best_success(chain, 64)[0] <= b.refinement["best_success"] + 1e-9


def test_unreachable_line_states_omega_and_tmax_as_they_are():
    """ω and Tmax as they are: with six digits (``:g``) ω = 0.999999999 would read "ω = 1" (refused by the format)."""
    inst = parse_instance(dict(LATE, omega=0.999999999, time_max=0.1234567891))
    b = A.adaptive_bounds(inst, buckets=6, runs=200, tune_runs=200)
    assert b.status == "unreachable"
    assert b.message.startswith("no policy reaches P(success) ≥ ω = 0.999999999 within Tmax = 0.1234567891: "
                                "no epoch fits in it")


def test_timed_best_success_is_the_untimed_one_when_the_deadline_is_loose():
    inst = parse_instance(dict(LATE, time_max=1e6))
    chain = A.Chain(inst, 12, optimistic=True)
    p, e = A.timed_best_success(chain, 16)
    q, _ = A.best_success(chain)
    assert abs(p - q) <= 1e-9 and 0 < e < 1e-8


def test_a_proven_bound_above_the_dearest_run_proves_unreachable():
    # With the deadline priced only there is no carried grid to prove ω out of reach up front,
    # but the bound then exceeds the dearest run any policy can have: weak duality proves
    # that no policy is feasible.
    inst = parse_instance(LATE)
    b = A.adaptive_bounds(inst, buckets=6, runs=200, tune_runs=200, time_points=0, iters_lam=1, iters_mu=1)
    assert b.status == "unreachable" and not b.certified
    assert b.lower_bound > A.largest_cost(inst)
    assert b.message.startswith("no policy reaches P(success) ≥ ω = 0.9 within Tmax = 4: the proven lower bound")
    assert f"exceeds {number_text(A.largest_cost(inst))}, the dearest run any policy can have" in b.message


def _printed_after(text: str, prefix: str) -> float:
    return float(re.search(re.escape(prefix) + r" ([-+0-9.eE]+)", text).group(1))


def test_a_bound_just_above_the_dearest_run_prints_above_it(monkeypatch):
    # six significant digits would print a bound 1e-9 above the ceiling as the same number: "1234.57 exceeds 1234.57"
    from deplbench.formulations.adaptive import bracket

    inst = parse_instance(LATE)
    kw = dict(buckets=6, runs=200, tune_runs=200, time_points=0, iters_lam=1, iters_mu=1)
    lower = A.adaptive_bounds(inst, **kw).lower_bound
    ceiling = lower * (1 - 1e-9)
    monkeypatch.setattr(bracket, "largest_cost", lambda instance: ceiling)
    b = A.adaptive_bounds(inst, **kw)
    assert b.status == "unreachable" and b.lower_bound == lower
    assert _printed_after(b.message, "the proven lower bound") > _printed_after(b.message, ") exceeds")
    assert f"exceeds {number_text(ceiling)}," in b.message


def test_a_runaway_bound_just_below_the_dearest_run_prints_below_it(monkeypatch):
    from deplbench.formulations.adaptive import bracket, search

    monkeypatch.setattr(bracket, "RUNAWAY", 0.0)
    monkeypatch.setattr(search, "MU_CAP", 1e-12)
    monkeypatch.setattr(bracket, "largest_cost", lambda instance: math.inf)
    inst = parse_instance(LATE)
    kw = dict(buckets=6, runs=200, tune_runs=200, time_points=0, iters_lam=1, iters_mu=1)
    lower = A.adaptive_bounds(inst, **kw).lower_bound
    ceiling = lower * (1 + 1e-9)
    monkeypatch.setattr(bracket, "largest_cost", lambda instance: ceiling)
    b = A.adaptive_bounds(inst, **kw)
    assert b.status == "multipliers_ran_away" and b.lower_bound == lower
    assert _printed_after(b.message, "): the bound") < _printed_after(b.message, "and not above")
    assert f"not above {number_text(ceiling)}, the dearest run (" in b.message


def test_runaway_multipliers_below_the_dearest_run_are_a_distinct_status(monkeypatch):
    # μ held at its cap (here: a tiny one) with ω missed, and a bound that proves nothing (no
    # ceiling to compare with): the distinct status, which claims no unreachability.
    from deplbench.formulations.adaptive import bracket, search

    monkeypatch.setattr(bracket, "largest_cost", lambda instance: math.inf)
    monkeypatch.setattr(bracket, "RUNAWAY", 0.0)
    monkeypatch.setattr(search, "MU_CAP", 1e-12)
    inst = parse_instance(LATE)
    b = A.adaptive_bounds(inst, buckets=6, runs=200, tune_runs=200, time_points=0, iters_lam=1, iters_mu=1)
    assert b.status == "multipliers_ran_away" and not b.certified
    assert "ran away" in b.message and "is valid but no cost estimate" in b.message
    assert "that is not proven" in b.message


def test_statuses_are_reported_in_the_documented_order(monkeypatch):
    # a non-finite bound from run-away multipliers: multipliers_ran_away comes before
    # bound_not_positive in BRACKET_STATUSES, whichever was found first
    from deplbench.formulations.adaptive import bracket, search

    monkeypatch.setattr(bracket, "largest_cost", lambda instance: math.inf)
    monkeypatch.setattr(bracket, "RUNAWAY", 0.0)
    monkeypatch.setattr(search, "MU_CAP", 1e-12)
    monkeypatch.setattr(search.Search, "bound", lambda self, omega=None: -math.inf)
    inst = parse_instance(LATE)
    b = A.adaptive_bounds(inst, buckets=6, runs=200, tune_runs=200, time_points=0, iters_lam=1, iters_mu=1)
    assert b.status == "multipliers_ran_away", b.messages
    assert "not a positive finite bound" in b.messages[1]


def test_no_epoch_within_the_deadline_is_unreachable_at_once():
    d = copy.deepcopy(LATE)
    for c in d["clusters"]:
        c["capacity"] = 1e-6                       # every epoch takes far longer than Tmax
    inst = parse_instance(d)
    b = A.adaptive_bounds(inst, buckets=6, runs=200, tune_runs=200, time_points=0)
    assert b.status == "unreachable" and b.work["dp_passes"] == 0
    assert "no epoch fits in it" in b.message


def test_cli_unreachable_within_deadline_exit_1_one_line(tmp_path, capsys):
    from deplbench.cli import main

    path = tmp_path / "late.json"
    path.write_text(json.dumps(LATE))
    assert main(["adaptive", str(path), "--one-grid", "--buckets", "12", "--runs", "300", "--tune-runs", "300",
                 "--time-points", "16", "--json"]) == 1
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert d["status"] == "unreachable" and d["lower_bound"] is None
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("adaptive: unreachable: no policy reaches P(success) ≥ ω = 0.9 "
                                               "within Tmax = 4: the optimistic chain's best is ")


def test_reported_multipliers_are_those_of_the_bound_reported():
    inst = parse_instance(TIGHT)
    b = A.adaptive_bounds(inst, buckets=6, runs=500, tune_runs=500, time_points=64)
    m = b.multipliers
    assert m["lower_bound_carried"] > m["lower_bound_priced"]
    assert m["lower_bound_source"] == "carried" and m["lambda"] == 0.0
    assert b.lower_bound == m["lower_bound_carried"]
    # re-run the pass at the reported μ: it gives the reported bound and rounding bound
    chain = A.Chain(inst, 6, optimistic=True)
    p = A.timed_dp(chain, m["mu"], 64)
    assert p.bound(inst.omega, chain.st.time_max) == b.lower_bound
    assert p.err == m["rounding_bound"]


def test_text_line_names_the_pass_of_the_bound(tmp_path, capsys):
    from deplbench.cli import main

    path = tmp_path / "tight.json"
    path.write_text(json.dumps(TIGHT))
    main(["adaptive", str(path), "--one-grid", "--buckets", "6", "--runs", "300", "--tune-runs", "300",
          "--time-points", "64", "--quiet"])
    lb = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("LB"))
    assert "from the carried pass at λ = 0," in lb


def test_carried_policy_uses_a_plan_that_fills_the_deadline_at_capacity():
    # TIGHT's only successful plans run two epochs at t = c/r, ending exactly at Tmax
    inst = parse_instance(TIGHT)
    pes = A.Chain(inst, 6, optimistic=False)
    grid = A.TimeGrid.of(pes, 64)
    assert inst.time_max < grid.points * grid.delta < grid.deadline == pes.st.time_max
    b = A.adaptive_bounds(inst, buckets=6, runs=1000, tune_runs=500, time_points=64)
    assert b.multipliers["time_points_policy"] == 64
    assert b.certified and b.status == "certified" and b.p_success >= inst.omega
    # the simulator's own verdict: no run of the policy passes the deadline
    assert b.certification["deadline_missed"] == 0
    # the optimum 5.25: two epochs of b at x = r on C1 (6), every run but the 1/8 given up
    assert b.lower_bound <= 5.25 <= b.upper_bound


def test_cost_budget_comes_from_the_certified_policys_own_tuning(monkeypatch):
    """The cost range of the certified policy is BUDGET × the largest cost of *its own* tuning
    runs; when its tuning logged none (here: the finer grid's entries stripped), the range is
    the dearest run any policy can have, never a coarser grid's policy's. (The finer grid's policy
    is certified here although its tuning predicts nothing: ``best_tuned`` would pick the coarser.)"""
    from deplbench.formulations.adaptive import bracket

    real = bracket.tune_policy
    monkeypatch.setattr(bracket, "best_tuned", lambda ts: (ts[-1].ucb, ts[-1].policy, ts[-1].kept, ts[-1].buckets))

    def finer_without_share(instance, chain, *args, **kwargs):
        pol, log, extra = real(instance, chain, *args, **kwargs)
        return pol, ([t for t in log if t["role"] != "share"] if chain.i0 > 6 else log), extra

    monkeypatch.setattr(bracket, "tune_policy", finer_without_share)
    d = copy.deepcopy(TIGHT)                      # a dear cluster no good policy uses: a wide cost range
    d["clusters"].append({"name": "C2", "capacity": 1.0, "unit_cost": 100.0, "bandwidth": 4.0})
    inst = parse_instance(d)
    b = A.adaptive_bounds(inst, buckets=6, runs=300, tune_runs=300, time_points=16, width=1e-9, max_buckets=12)
    assert [lv["buckets"] for lv in b.refinement["levels"]] == [6, 12]
    assert any(t["role"] == "share" and t["buckets"] == 6 for t in b.tuning)     # the coarser grid's entries
    assert b.certification["largest_cost"] == A.largest_cost(inst) == 200.0


def test_adaptive_opt_records_no_bound_from_runaway_multipliers_and_infeasible_when_proven():
    from deplbench.solvers.run import solve

    inst = parse_instance(LATE)
    common = {"buckets": 6, "runs": 200, "tune_runs": 200, "iters_lam": 1, "iters_mu": 1}
    ran = solve(inst, "adaptive-opt", evaluate=False, time_points=0, **common)
    assert ran.status == "infeasible" and ran.lower_bound is None      # proven by the bound above the dearest run
    assert ran.diagnostics["status"] == "unreachable"
    proven = solve(inst, "adaptive-opt", evaluate=False, time_points=16, **common)
    assert proven.status == "infeasible" and "within Tmax" in proven.message


@pytest.mark.slow
def test_refinement_stops_before_a_grid_whose_carried_deadline_exceeds_the_memory_budget():
    # The first grid (150 buckets, 16 time points) fits in 0.03 GiB, the next one's carried
    # passes do not: the refinement must stop there and certify the first grid, not raise
    # after the work is done.
    from deplbench.instances.generators import generate
    from deplbench.limits import memory_budget

    inst = generate("scaling")
    with memory_budget(0.03):
        b = A.adaptive_bounds(inst, buckets=150, runs=2000, tune_runs=2000, width=1e-5, time_limit=100.0,
                              time_points=16)
    assert b.refinement["stopped_by"] == "memory_limit"
    assert [lv["buckets"] for lv in b.refinement["levels"]] == [150]
    assert b.certified and b.multipliers["time_points"] == 16


def test_a_finest_grid_below_the_first_is_refused_from_python_too():
    from deplbench.errors import PlanError, SolverError
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt

    inst = parse_instance(LATE)
    with pytest.raises(PlanError, match="^max_buckets: 8 is below the first grid's 12 buckets"):
        A.adaptive_bounds(inst, buckets=12, width=0.01, max_buckets=8, runs=200, tune_runs=200)
    with pytest.raises(SolverError, match="parameter 'max_buckets': 8 is below the first grid's 12 buckets"):
        AdaptiveOpt.resolve_params({"buckets": 12, "width": 0.01, "max_buckets": 8})
    assert AdaptiveOpt.resolve_params({"buckets": 12, "max_buckets": 8})["width"] is None   # one grid: no cap used


#: Enough grid and runs for a certified bracket, and no more: the property does not grow with
#: the size. With a cap or a stopping rule of the multiplier search made absolute (not relative
#: to the cost scale), the checks below fail at this size.
_UNIT_COST_BRACKET = dict(buckets=100, runs=1000, tune_runs=1000)


@pytest.fixture(scope="module")
def vgg_unit_bracket():
    """PACT-VGG11 (K̄ = 60) and its bracket at unit cost 1, computed once for every factor below."""
    from deplbench.instances.generators import generate

    base = generate("realistic", family="pact-vgg11").with_changes(horizon=60)
    return base, A.adaptive_bounds(base, **_UNIT_COST_BRACKET)


@pytest.mark.slow
@pytest.mark.parametrize("factor", [1e-6, 1e13])
def test_the_bracket_scales_with_the_unit_cost(factor, vgg_unit_bracket):
    # The multiplier search's caps and first probe are relative to the instance's cost scale:
    # multiplying every κ by a constant multiplies the bracket by it, status unchanged.
    base, b0 = vgg_unit_bracket
    scaled = base.with_changes(clusters=[c.__class__(**{**c.__dict__, "unit_cost": c.unit_cost * factor})
                                         for c in base.clusters])
    b1 = A.adaptive_bounds(scaled, **_UNIT_COST_BRACKET)
    assert b0.status == b1.status == "certified", b1.message
    assert b1.lower_bound / factor == pytest.approx(b0.lower_bound, rel=1e-9)
    assert b1.upper_bound / factor == pytest.approx(b0.upper_bound, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("unit", [1e100, 1e160, 1e300])
def test_a_cost_unit_near_binary64s_limit_changes_no_relative_number(unit):
    """κ scaled by 1e100 to 1e300: λ passes 10³⁰ and the squares of the DP's values and of the
    runs' costs pass binary64, yet the bracket is the unscaled one times the unit (the λ span
    follows the first price; the FFT rounding bound's 2-norm and the cost statistics are computed
    scaled), not a weaker bound, a -inf one or an upper bound at the policy's budget."""
    base = generate("knapsack", seed=0, n_items=3, horizon=4)
    big = base.with_changes(clusters=[c.model_copy(update={"unit_cost": c.unit_cost * unit}) for c in base.clusters])
    kw = dict(buckets=60, runs=2000, tune_runs=1000, time_points=0)
    a, b = A.adaptive_bounds(base, **kw), A.adaptive_bounds(big, **kw)
    assert a.status == b.status == "certified"
    assert b.lower_bound == pytest.approx(a.lower_bound * unit, rel=1e-6)
    assert b.upper_bound == pytest.approx(a.upper_bound * unit, rel=1e-9)


@pytest.mark.parametrize("unit", [1e-170, 1e-60, 1.0, 1e160, 1e300])
def test_cost_moments_follow_the_cost_unit(unit):
    """The runs' mean and deviation behind the upper bound scale with the unit: squares that
    would underflow (a deviation of 0 makes the empirical-Bernstein bound too small) or overflow
    are computed scaled."""
    from deplbench.formulations.adaptive.certify import cost_moments
    mean, sd = cost_moments(np.array([1.0, 2.0, 3.0, 4.0]) * unit)
    assert mean == pytest.approx(2.5 * unit, rel=1e-12)
    assert sd == pytest.approx(math.sqrt(5.0 / 3.0) * unit, rel=1e-12)
