"""milp-certified's clock: ``time_limit`` bounds each SAA solve, ``total_time_limit`` the bracket.

The one deadline of a solve (:mod:`deplbench.limits`) is opened from the
solver's :attr:`~deplbench.solvers.base.Solver.clock` parameter; for
``milp-certified`` that is ``total_time_limit``, so a per-solve limit never
cuts the whole bracket short.
"""

from __future__ import annotations

import math

import pytest

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.instances.generators import generate
from deplbench.solvers.certify import certified
from deplbench.solvers.certify.certified import MilpCertified
from deplbench.solvers.run import solve


@pytest.fixture
def seen_deadline(monkeypatch):
    """Replace certify by a probe that records the deadline it runs under."""
    seen = []

    def probe(*args, **kwargs):
        seen.append(limits.time_left())
        raise SolverError("probe: stop here")

    monkeypatch.setattr(certified, "certify", probe)
    return seen


@pytest.mark.parametrize("front", ["solve", "run"])
def test_time_limit_is_per_saa_solve_not_the_bracket_deadline(seen_deadline, front):
    inst = generate("knapsack", seed=0, n_items=4)
    if front == "solve":
        solve(inst, "milp-certified", time_limit=5.0, evaluate=False)
    else:
        with pytest.raises(SolverError):
            MilpCertified().run(inst, time_limit=5.0)
    assert seen_deadline and math.isinf(seen_deadline[0])


@pytest.mark.parametrize("front", ["solve", "run"])
def test_total_time_limit_is_the_bracket_deadline(seen_deadline, front):
    inst = generate("knapsack", seed=0, n_items=4)
    if front == "solve":
        solve(inst, "milp-certified", time_limit=5.0, total_time_limit=1000.0, evaluate=False)
    else:
        with pytest.raises(SolverError):
            MilpCertified().run(inst, time_limit=5.0, total_time_limit=1000.0)
    assert seen_deadline and 5.0 < seen_deadline[0] <= 1000.0


def test_every_solver_clock_is_one_of_its_parameters():
    from deplbench.solvers import registry
    for name in registry.available():
        cls = registry.get_solver(name)
        assert cls.clock in cls.parameters or "time_limit" not in cls.parameters, name


def test_milp_certified_takes_one_frozen_settings_object(monkeypatch):
    """build_settings returns one frozen object (not a bare tuple) and run_settings reads it by field."""
    import dataclasses

    from deplbench.solvers.certify.certified import CertifiedSettings, CertifySettings

    settings = MilpCertified.build_settings(MilpCertified.resolve_params({"workers": 2, "replications": 3}))
    assert isinstance(settings, CertifiedSettings) and not isinstance(settings, tuple)
    assert isinstance(settings.certify, CertifySettings) and settings.certify.replications == 3
    assert (settings.algorithms, settings.workers) == ("", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.workers = 3  # type: ignore[misc]
    seen = {}

    def probe(instance, certify_settings, candidates, map):
        seen["settings"] = certify_settings
        raise SolverError("probe: stop here")

    monkeypatch.setattr(certified, "certify", probe)
    with pytest.raises(SolverError, match="probe"):
        MilpCertified().run_settings(generate("knapsack", seed=0, n_items=4), settings)
    assert seen["settings"] is settings.certify


class _Clock:
    """An injected clock (:func:`deplbench.limits.use_clock`) that only the test advances."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _map_costing(clock: _Clock, saa_seconds: float):
    """A sequential map on which the SAA solves take ``saa_seconds`` in all on ``clock``."""
    from deplbench.solvers.certify.tasks import saa_task

    def mapper(fn, tasks):
        out = [fn(t) for t in tasks]
        if fn is saa_task:
            clock.t += saa_seconds
        return out
    return mapper


def _two_model():
    from deplbench.instances.model import parse_instance
    from tests.instance_data import two_model_data
    return parse_instance(two_model_data())


SETTINGS = dict(replications=3, scenarios=50, validation=2000, risk_grid=(0.9,), grid_seeds=1, target_width=None,
                time_limit=30.0)


def test_validation_respects_an_outer_stop_passed_during_the_saa_solves():
    """A sweep task's stop (an outer deadline) passed while the SAA solves ran: no validation test
    starts after it, and the result is status time_limit with the bracket the finished work
    gives (its lower bound, no certified plan)."""
    inst = _two_model()
    free = certified.certify(inst, **SETTINGS)
    assert free["upper_bound"] is not None and free["stopped"] is None       # unstopped: a plan is certified
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        bracket = certified.certify(inst, map=_map_costing(clock, 20.0), **SETTINGS)
    cands = bracket["candidates"]
    assert cands and all(c["certified"] is False and c["draws"] == 100 for c in cands)
    assert all(c["skipped"] == "time limit 10 s reached before this test (not certified)" for c in cands)
    assert bracket["upper_bound"] is None and bracket["stopped"] == (
        f"time limit 10 s reached during the bracket: {len(cands)} validation tests not started")
    # the SAA solves finished before the stop: the same lower bound as without it
    assert bracket["lower_bound"]["value"] == free["lower_bound"]["value"]
    res = certified.bracket_result(bracket)
    assert res.status == "time_limit" and res.plan is None and res.cost is None
    assert res.lower_bound == pytest.approx(free["lower_bound"]["value"])
    assert res.message.startswith("time limit 10 s reached during the bracket: ") and "\n" not in res.message


@pytest.mark.slow
def test_an_outer_stop_that_is_not_reached_changes_nothing():
    inst = _two_model()
    free = certified.certify(inst, **SETTINGS)
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(30.0):
        bracket = certified.certify(inst, map=_map_costing(clock, 20.0), **SETTINGS)
    assert bracket["stopped"] is None and bracket["status"] == free["status"]
    assert bracket["upper_bound"]["value"] == free["upper_bound"]["value"]
    assert certified.bracket_result(bracket).status == certified.bracket_result(free).status


def test_stage_two_does_not_start_after_an_outer_stop():
    inst = _two_model()
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        bracket = certified.certify(inst, map=_map_costing(clock, 20.0), **{**SETTINGS, "target_width": 1e-9})
    stage2 = bracket["stages"][-1]
    assert stage2["stage"] == 2 and stage2["ran"] is False
    assert stage2["reason"] == "time limit 10 s reached after stage 1"
    assert bracket["stopped"].endswith("validation tests not started, stage 2 not started")
    assert not bracket["saa_optima_stage2"]


def test_a_stopped_brackets_advice_names_the_time_limit_not_n_prime():
    """Tests skipped by the stop certify nothing whatever N′ or the risk grid: the line says so."""
    inst = _two_model()
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        bracket = certified.certify(inst, map=_map_costing(clock, 20.0), **{**SETTINGS, "replications": 6})
    n = len(bracket["candidates"])
    assert bracket["status"] == "lower bound only" and n > 0
    assert bracket["message"].endswith(f"no candidate plan certified feasible (the tests of {n} candidate(s) were "
                                       "skipped, the time limit having passed; raise it)")
    assert "validation N′" not in bracket["message"]


def test_replications_never_started_are_not_blamed_on_the_per_solve_time_limit():
    """An outer stop passed before any SAA solve: no replication, status error, and the advice is
    the limit that stopped them, not time_limit (per solve), scenarios or the horizon."""
    inst = _two_model()
    clock = _Clock()
    with limits.use_clock(clock), limits.deadline(10.0):
        clock.t = 11.0
        bracket = certified.certify(inst, **SETTINGS)
    assert bracket["status"] == "error" and bracket["upper_bound"] is None
    assert all(r["message"] == "time limit 10 s reached before this SAA solve" for r in bracket["replications"])
    assert bracket["message"].endswith("none was started before the time limit named; raise that limit")
    assert "raise time_limit" not in bracket["message"] and "\n" not in bracket["message"]
    res = certified.bracket_result(bracket)
    assert res.status == "time_limit" and res.plan is None and res.lower_bound is None


def test_the_certify_command_bounds_its_candidates_by_total_time_limit(tmp_path, monkeypatch, capsys):
    """`certify --with ALGO --total-time-limit T`: the candidates' solves and the bracket share the one
    deadline, as in solve(..., "milp-certified"); a fake clock, no wall time."""
    import json

    from deplbench.cli import main
    from deplbench.formulations.model.result import SolveResult

    path = tmp_path / "k.json"
    assert main(["generate", "knapsack", "--n-items", "4", "-o", str(path)]) == 0
    clock, seen = _Clock(), []

    def candidate(instance, name, evaluate=True):
        seen.append(("candidate", limits.time_left()))
        clock.t += 3.0                  # the candidate's solve takes 3 of the 5 seconds
        return SolveResult(algorithm=name, status="time_limit", message="stub: stopped")

    def bracket(*args, **kwargs):
        seen.append(("certify", limits.time_left()))
        return {"status": "none"}

    monkeypatch.setattr(certified, "solve", candidate)
    monkeypatch.setattr(certified, "certify", bracket)
    capsys.readouterr()
    with limits.use_clock(clock):
        status = main(["certify", str(path), "--with", "depl", "--total-time-limit", "5", "--json", "--quiet"])
    assert status == 1 and seen == [("candidate", 5.0), ("certify", 2.0)]
    assert json.loads(capsys.readouterr().out)["candidate_failures"] == {"depl": "time_limit: stub: stopped"}
