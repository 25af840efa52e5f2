"""depl-proven: DepL's plan made cheaper while keeping a proof (exact bound, no sampling)."""

from __future__ import annotations

import pytest

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.instances.generators import generate
from deplbench.solvers.run import solve


@pytest.mark.slow
def test_depl_proven_is_proven_feasible_and_no_dearer_than_depl():
    inst = generate("realistic", family="alexnet", horizon=20, omega=0.9, loss_max=14.0)
    base = solve(inst, "depl", evaluate=False)
    res = solve(inst, "depl-proven", eval_samples=2000)
    assert res.status == "feasible" and res.cost <= base.cost * (1 + 1e-9)
    assert res.evaluation["exact_verdict"] == "proven feasible"
    ev = evaluate_plan(inst, res.plan, samples=1000, exact=True)
    assert ev.violation_hi <= 1 - inst.omega
    # the exact optimum is a lower bound on any proven-feasible plan's cost
    exact = solve(inst, "milp-exact", evaluate=False)
    assert exact.lower_bound <= res.cost * (1 + 1e-9)


def test_finding_no_plan_is_no_solution_not_infeasible():
    """DepL's Chernoff surrogate finds no plan on an instance milp-exact solves
    (ℓmax 0.05 above a boundary): the answer is ``no_solution``, not
    ``infeasible`` — a heuristic that finds nothing has not proven infeasibility."""
    from tests.formulations.test_milp_exact import BOUNDARY_LOSS_MAX, _boundary

    inst = _boundary(BOUNDARY_LOSS_MAX + 0.05)
    res = solve(inst, "depl-proven", evaluate=False)
    assert res.status == "no_solution" and res.plan is None, (res.status, res.message)
    assert "not proven" in res.message
    assert solve(inst, "milp-exact", evaluate=False).status == "optimal"   # a plan exists


def test_a_deadline_in_the_proof_stage_keeps_depls_plan(monkeypatch):
    """The deadline falls in depl-proven's probes (planted at its first check): the
    result is time_limit with DepL's own (Chernoff-proven) plan, not a crash or
    an empty result: the probes read the deadline."""
    from deplbench import limits

    inst = generate("realistic", family="alexnet", horizon=20, omega=0.9, loss_max=14.0)
    real = limits.check_time

    def planted(where):
        if "depl-proven" in where:
            raise limits.TimeLimitReached(f"time limit 1 s reached ({where}); no plan")
        real(where)

    monkeypatch.setattr(limits, "check_time", planted)
    res = solve(inst, "depl-proven", evaluate=False)
    assert res.status == "time_limit" and res.plan is not None, (res.status, res.message)
    assert "DepL's own plan" in res.message
