"""PACT's parameters: a combination that cannot work is the caller's error, before any work.

``min_robust_quantile`` bounds the quantile search that runs down from
``robust_quantile`` (:meth:`deplbench.solvers.pact.pact.Pact._robust_graph`),
so a minimum above the start is refused by
:meth:`~deplbench.solvers.base.Solver.resolve_params` (through
:meth:`Pact.check_params`), as any out-of-range value is, not returned as a
result with status ``error``.
"""

from __future__ import annotations

import pytest

from deplbench.errors import SolverError, SweepError
from deplbench.instances.generators import generate
from deplbench.solvers.pact.pact import Pact
from deplbench.solvers.run import solve

BAD = {"min_robust_quantile": 0.9, "robust_quantile": 0.6}


def test_resolve_params_refuses_a_minimum_above_the_start_naming_the_field():
    with pytest.raises(SolverError, match=r"^parameter 'min_robust_quantile': must be <= robust_quantile "
                                          r"\(0\.6\), got 0\.9$"):
        Pact.resolve_params(BAD)
    # the caller's error class, as for a value out of its own range (a sweep's)
    with pytest.raises(SweepError, match="min_robust_quantile"):
        Pact.resolve_params(BAD, strict=True, error=SweepError)
    # equal is the search's degenerate case, not an error
    assert Pact.resolve_params({"min_robust_quantile": 0.6, "robust_quantile": 0.6})["min_robust_quantile"] == 0.6


@pytest.mark.parametrize("call", ["solve", "run"])
def test_solve_and_run_raise_before_any_solve_work(monkeypatch, call):
    def no_work(*args, **kwargs):
        raise AssertionError("the solve started")

    monkeypatch.setattr(Pact, "run_settings", no_work)
    monkeypatch.setattr("deplbench.solvers.run.reduce_instance", no_work)
    inst = generate("scaling", n_models=2, horizon=4, seed=0)
    with pytest.raises(SolverError, match="parameter 'min_robust_quantile'"):
        if call == "solve":
            solve(inst, "pact", **BAD)
        else:
            Pact().run(inst, **BAD)
