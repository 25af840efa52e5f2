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
