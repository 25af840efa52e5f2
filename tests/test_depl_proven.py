"""depl-proven: DepL's plan made cheaper while keeping a proof (exact bound, no sampling)."""

from __future__ import annotations

import pytest

from deplbench.formulations.evaluate import evaluate_plan
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
