"""Work counters in diagnostics (issue 18): exact and deterministic.

DepL/best-exp report the expanded graph's size (nominal, reachable — equal to
the networkx reference, see test_expanded_graph — DP states made live, edges
relaxed), the dataset oracle calls and the (1+ε) DP's cells; PACT its graph
vertices and shortest-path calls per re-plan; brute force the plans it
enumerated. Same instance and seed ⇒ the same counts.
"""

from __future__ import annotations

import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.base import solve


@pytest.fixture(scope="module")
def small():
    return generate("scaling", n_models=3, horizon=8, seed=0)


@pytest.mark.parametrize("algo, params", [
    ("depl", {"eta": 40, "check_samples": 2000}),
    ("best-exp", {"eta": 40, "check_samples": 2000}),
    ("pact", {"scenarios": 200, "check_samples": 2000}),
])
def test_counters_identical_across_two_runs(small, algo, params):
    a = solve(small, algo, eval_samples=500, **params)
    b = solve(small, algo, eval_samples=500, **params)
    assert a.diagnostics["work"] == b.diagnostics["work"]
    work = a.diagnostics["work"]
    assert all(isinstance(v, (int, float)) or v is None for v in work.values())
    if algo == "pact":
        assert work["graph_vertices"] > 0 and work["shortest_path_calls"] >= work["replans"] >= 1
    else:
        assert work["graphs"] >= 1
        # the DP only makes reachable states live, and reachable ≤ nominal
        assert 0 < work["graph_vertices_created"] <= work["graph_vertices_reachable"] <= work["graph_vertices_nominal"]
        assert work["graph_edges_relaxed"] <= work["graph_edges_reachable"]


def test_depl_vertex_counters_grow_with_eta(small):
    counts = [solve(small, "depl", eta=eta, check_samples=2000, evaluate=False).diagnostics["work"]
              for eta in (20, 40)]
    assert counts[1]["graph_vertices_nominal"] > counts[0]["graph_vertices_nominal"]
    assert counts[1]["graph_vertices_reachable"] > counts[0]["graph_vertices_reachable"]


def test_brute_force_counts_plans_enumerated():
    inst = generate("knapsack", n_items=2, R=10, horizon=3, seed=0)
    res = solve(inst, "brute-force", scenarios=1, evaluate=False)
    # one cluster, one dataset: every sequence of 1..3 epochs over 2 models
    assert res.diagnostics["work"]["plans_enumerated"] == 2 + 4 + 8
