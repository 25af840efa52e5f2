"""``Solver().run(instance, **params)`` called directly behaves as ``solve()`` does.

Every registered solver's direct ``run`` resolves its parameters against its
one ``Param`` table (a bad value is a :class:`~deplbench.errors.SolverError`
naming it, an omitted one takes its default) and runs under the deadline of
its clock parameter; with the defaults it returns what ``solve()`` returns.
"""

from __future__ import annotations

import pytest

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.instances.generators import generate
from deplbench.solvers import registry
from deplbench.solvers.base import Solver
from deplbench.solvers.run import solve

#: Solvers whose default run on the tiny instance takes more than a fraction of a second.
SLOW = {"milp-certified", "adaptive-opt"}


def _params():
    return [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
            for name in registry.available()]


def _instance(cls: type[Solver]):
    """A tiny instance the solver applies to (a knapsack one for knapsack-dp)."""
    tiny = generate("scaling", n_models=2, n_clusters=1, horizon=4, seed=1)
    return tiny if cls.applies(tiny)[0] else generate("knapsack", n_items=4, seed=0)


@pytest.mark.parametrize("name", registry.available())
def test_a_direct_run_refuses_a_bad_time_limit_by_name(name):
    cls = registry.get_solver(name)
    inst = _instance(cls)
    if "time_limit" in cls.parameters:
        with pytest.raises(SolverError, match="time_limit"):
            cls().run(inst, time_limit=-1)
    else:
        with pytest.raises(SolverError, match="has no parameter 'time_limit'"):
            cls().run(inst, time_limit=-1)
    with pytest.raises(SolverError, match="has no parameter 'no_such_parameter'"):
        cls().run(inst, no_such_parameter=1)


@pytest.mark.parametrize("name", _params())
def test_a_direct_run_with_defaults_matches_solve(name, monkeypatch):
    """Same status and cost as solve(evaluate=False), under the clock's deadline."""
    cls = registry.get_solver(name)
    inst = _instance(cls)
    assert cls.applies(inst)[0]
    expected = solve(inst, name, evaluate=False)

    seen = []
    body = cls.run_settings

    def watching(self, instance, settings):
        seen.append(limits.time_limit_s())
        return body(self, instance, settings)

    monkeypatch.setattr(cls, "run_settings", watching)
    res = cls().run(inst)
    assert (res.status, res.cost) == (expected.status, expected.cost), res.message
    # the base run resolved the parameters and opened the clock's deadline around run_settings
    assert seen == [cls.parameters[cls.clock].default if cls.clock in cls.parameters else None]


def test_every_builtin_solver_runs_through_the_base_run():
    """No built-in solver overrides ``run``: the base one resolves, builds the settings once
    and opens the clock; each implements ``run_settings``."""
    for name in registry.available():
        cls = registry.get_solver(name)
        if cls.__module__.startswith("deplbench."):
            assert cls.run is Solver.run, name
            assert cls.run_settings is not Solver.run_settings, name
