"""DepL's parameters: one declaration each, enforced identically from every front.

``eta``, ``epsilon``, ``n_theta`` and ``tail_share`` are declared once (a
:class:`~deplbench.params.Param` beside the function that uses them:
:func:`~deplbench.solvers.expanded.spec.build_spec`,
:func:`~deplbench.solvers.depl.vnf_allocation.place_and_allocate`,
:func:`~deplbench.solvers.depl.quantile_transform.build_bounds`). DepL's
table holds those very objects, and a direct call of the lower function
checks its argument with them, so ``deplbench solve --param``,
``solve()`` and the direct call refuse the same values with the same reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.errors import SolverError
from deplbench.instances.generators import generate
from deplbench.solvers.depl.depl import DepL
from deplbench.solvers.depl.quantile_transform import N_THETA, TAIL_SHARE, LossModel, build_bounds
from deplbench.solvers.depl.stages import LOOP_PARAMS
from deplbench.solvers.depl.vnf_allocation import EPSILON, place_and_allocate
from deplbench.solvers.expanded.spec import ETA, build_spec
from deplbench.solvers.run import solve


@pytest.fixture(scope="module")
def inst():
    return generate("knapsack", n_items=4, horizon=5, seed=0)


@pytest.fixture(scope="module")
def inst_file(inst, tmp_path_factory):
    path = tmp_path_factory.mktemp("depl_limits") / "knapsack.json"
    inst.save(path)
    return path


def _build_bounds(inst, name, value):
    lm = LossModel.from_instance(inst, 1.0)
    if name == "n_theta":
        return build_bounds(lm, "chernoff", value)
    return build_bounds(lm, "chernoff", 5, tail_share=value)


def _build_spec(inst, name, value):
    return build_spec([1.0], [1.0], 1.0, np.zeros((2, 1)), np.zeros((1, 1)), np.ones((1, 1), bool), 1.0, 0.0,
                      eta=value)


def _place(inst, name, value):
    return place_and_allocate([1.0], np.ones((1, 1)), [1.0], [1.0], 10.0, value)


# The first three were accepted by the direct call before (it had looser limits
# of its own: n_theta >= 1, tail_share < 1, eta >= 1); all four are refused now.
CASES = [
    ("n_theta", 65, "must be <= 64, got 65", _build_bounds),
    ("tail_share", 0.995, "must be <= 0.99, got 0.995", _build_bounds),
    ("eta", 5001, "must be <= 5000, got 5001", _build_spec),
    ("epsilon", 10.5, "must be <= 10.0, got 10.5", _place),
    ("n_theta", 0, "must be >= 1, got 0", _build_bounds),
    ("tail_share", 0.0, "must be > 0.0, got 0.0", _build_bounds),
    ("eta", 0, "must be >= 1, got 0", _build_spec),
    ("epsilon", 0.0, "must be >= 1e-12, got 0.0", _place),
    # 1 + 1e-16 rounds to 1: the (1+ε') levels had no step and DepL ended in status error (ZeroDivisionError)
    ("epsilon", 1e-16, "must be >= 1e-12, got 1e-16", _place),
]


@pytest.mark.parametrize("name,value,reason,direct", CASES, ids=[f"{c[0]}={c[1]}" for c in CASES])
def test_one_limit_from_the_cli_the_solver_and_the_function(inst, inst_file, deplbench_cli, name, value, reason,
                                                             direct):
    status, out, err = deplbench_cli("solve", inst_file, "--algo", "depl", "--param", f"{name}={value}", "--json")
    assert status == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and name in err and reason in err, err
    with pytest.raises(SolverError, match=f"parameter '{name}': {reason}"):
        solve(inst, "depl", evaluate=False, **{name: value})
    with pytest.raises(SolverError, match=f"parameter '{name}': {reason}"):
        direct(inst, name, value)


def test_the_table_holds_the_declarations_the_functions_check():
    params = DepL.parameters
    assert params["eta"] is ETA and LOOP_PARAMS["eta"] is ETA
    assert params["epsilon"] is EPSILON and LOOP_PARAMS["epsilon"] is EPSILON
    assert params["n_theta"] is N_THETA and params["tail_share"] is TAIL_SHARE


@pytest.mark.parametrize("n_theta,tail_share,eta,epsilon", [(1, 0.99, 1, 10.0), (64, 1e-9, 5000, 1e-9),
                                                                (64, 1e-9, 5000, 1e-12)])
def test_the_limits_themselves_are_accepted_by_the_direct_call(inst, n_theta, tail_share, eta, epsilon):
    assert len(_build_bounds(inst, "n_theta", n_theta)) >= 1
    assert len(_build_bounds(inst, "tail_share", tail_share)) >= 1
    assert _build_spec(inst, "eta", eta).n_time == eta
    assert _place(inst, "epsilon", epsilon).feasible


@pytest.mark.parametrize("algo", ["depl", "best-exp"])
def test_a_dear_most_capable_cluster_does_not_overflow_the_model_path(algo):
    """κ = 1e306 on the most capable cluster (valid: a plan there costs ~1e308 per epoch):
    √(c·κ) overflowed, every edge weight was inf and DepL answered no_solution; the plan
    must be the one found at κ = 1e300, where the cluster is just as unaffordable."""
    from deplbench.formulations.model.allocation import sqrt_product

    base = generate("realistic", family="alexnet")
    results = []
    for kappa in (1e300, 1e306):
        clusters = [c.model_copy(update={"unit_cost": kappa}) if i == 0 else c
                    for i, c in enumerate(base.clusters)]
        results.append(solve(base.with_changes(clusters=clusters), algo, evaluate=False))
    assert [r.status for r in results] == ["feasible", "feasible"], [r.message for r in results]
    assert results[1].cost == results[0].cost and results[1].plan == results[0].plan
    assert sqrt_product([260.0], 1e306)[0] == pytest.approx(np.sqrt(260.0) * 1e153)
    assert sqrt_product([4.0, 9.0], [1.0, 4.0]).tolist() == [2.0, 6.0]
