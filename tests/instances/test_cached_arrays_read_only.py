"""An instance's cached arrays cannot be changed in place.

``Instance.unit_cost``, ``capacity``, ... are computed once and shared by
every later solve and evaluation; changed in place (``inst.unit_cost *= 2``)
they would silently disagree with the instance's own fields (its JSON), so
a plan's evaluated cost would be that of another instance.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.instances.generators import generate
from deplbench.solvers.run import solve

ARRAYS = ("allowed", "model_compute", "model_size", "capacity", "unit_cost", "bandwidth", "transfer_matrix",
          "decay_matrix", "run_scale")


@pytest.mark.parametrize("name", ARRAYS)
def test_a_cached_array_refuses_an_in_place_change(name):
    inst = generate("datasets", n_datasets=2, horizon=6, seed=0)
    array = getattr(inst, name)
    before = array.copy()
    with pytest.raises(ValueError, match="read-only"):
        array *= 2
    with pytest.raises(ValueError, match="read-only"):
        array[(0,) * array.ndim] = 1
    assert np.array_equal(getattr(inst, name), before)


def test_the_evaluated_cost_stays_the_instances():
    inst = generate("knapsack", n_items=4, horizon=4, seed=0)
    res = solve(inst, "knapsack-dp", evaluate=False)
    with pytest.raises(ValueError, match="read-only"):
        inst.unit_cost[0] = 1000.0
    ev = evaluate_plan(inst, res.plan, samples=100)
    assert ev.cost == pytest.approx(res.cost)
    # a copy is the user's own, free to change
    scaled = inst.unit_cost * 2
    scaled[0] = 3.0
    assert inst.unit_cost[0] == inst.clusters[0].unit_cost
