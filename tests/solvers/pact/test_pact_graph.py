"""PACT's expanded graph (solvers/pact/graph.py): the batched forward search
of the closed-loop policy against one search per source.

``feasible_paths_batch`` promises, per source, exactly what
``feasible_paths`` returns from it; both start from the same first edges
(``ExpandedGraph._first_edges``). The enumeration check of the single search
is in tests/solvers/baselines/test_baselines.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.baselines.static import data_setting
from deplbench.solvers.pact.pact import ExpandedGraph

_KEYS = ("W", "C", "Le", "Lr", "first", "T", "end", "model", "cluster", "time_bucket")


@pytest.fixture(scope="module")
def graph():
    inst = generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0)
    # time resolution 0: the label mode the closed-loop policy uses
    return ExpandedGraph(inst, data_setting(inst, inst.all_datasets), 0.9, 30, 0)


def _by_vertex(paths: dict) -> dict:
    """{(end, model, cluster, time bucket): every label of the path there}."""
    return {tuple(int(paths[k][i]) for k in ("end", "model", "cluster", "time_bucket")):
            tuple(float(paths[k][i]) for k in _KEYS) for i in range(paths["W"].size)}


@pytest.mark.parametrize("e0,m0,n0", [(0, None, None), (3, 0, 0), (5, 1, 0)])
def test_batched_search_is_one_search_per_source(graph, e0, m0, n0):
    b0s = [graph.b0, graph.b0 - 5, graph.b0 - 12, 2]
    time0s = [0.0, 40.0, 120.0, 250.0]
    batch = graph.feasible_paths_batch(e0, m0, n0, b0s, time0s)
    assert len(batch) == len(b0s)
    found = 0
    for b0, time0, got in zip(b0s, time0s, batch):
        one = graph.feasible_paths(e0, m0, n0, b0, 0, time0)
        assert (got is None) == (one is None), (b0, time0)
        if one is None:
            continue
        found += 1
        assert _by_vertex(got) == _by_vertex(one), (b0, time0)
        # the first action is one the current model may take (Alg. 1's edges)
        first_models = one["first"] // graph.N
        if m0 is not None:
            assert graph.allowed[m0, first_models].all()
        assert graph.usable[first_models, one["first"] % graph.N].all()
        assert np.all(one["T"] >= time0)
    assert found >= 1          # the case must compare some paths


@pytest.mark.parametrize("unit_cost", [0.0, 1e-300])
def test_a_weight_tie_keeps_the_faster_path_so_a_free_plan_is_found(unit_cost):
    """With every epoch free (or its cost below the float resolution of the sums) every path ties
    in weight: the forward search keeps the faster of tied paths, so one that meets Tmax is found
    where brute force finds a plan of that cost (the first path found may be too slow)."""
    from deplbench.solvers.exact.brute_force import search as brute_force
    from deplbench.solvers.run import solve

    inst = generate("scaling", n_models=2, horizon=5, seed=0)
    data = inst.model_dump()
    for cluster in data["clusters"]:
        cluster["unit_cost"] = unit_cost
    inst = type(inst).model_validate(data)
    best, _, _ = brute_force(inst, 200, 0)
    assert best < 1e-290
    res = solve(inst, "pact")
    assert res.status == "feasible", res.message
    assert res.cost < 1e-290
    # the kept paths of the single and the batched search agree on the tie
    graph = ExpandedGraph(inst, data_setting(inst, inst.all_datasets), 0.95, 30, 0)
    one = graph.feasible_paths(0, None, None, graph.b0, 0, 0.0)
    assert one is not None and np.all(one["T"] <= graph.time_max)
    assert _by_vertex(graph.feasible_paths_batch(0, None, None, [graph.b0], [0.0])[0]) == _by_vertex(one)
