"""PACT's least time to ℓmax (solvers/pact/deadline.py) and what it gives the label mode.

The table is checked against a plain recursion over the graph's own edges on
tiny instances (both data rules); the label mode's search is checked to find a
plan where a cheaper, slower cluster would shadow the faster one at every vertex.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.baselines.static import data_setting
from deplbench.solvers.pact.pact import ExpandedGraph


def _recursion(g: ExpandedGraph):
    """The least exact time to bucket 0 from (layer e, model m, cluster n, bucket b), by recursion."""
    @functools.cache
    def least(e: int, m: int, n: int, b: int) -> float:
        if b == 0:
            return 0.0
        if e == g.K:
            return math.inf
        best = math.inf
        for m2 in range(g.M):
            if not g.allowed[m, m2]:
                continue
            for n2 in ([n] if g.printed else range(g.N)):
                b2 = max(b + int(g.db[e, m, m2]), 0)
                if g.usable[m2, n2] and b2 < g.Lb:
                    best = min(best, float(g.tau[m2, n2]) + least(e + 1, m2, n2, b2))
        return best
    return least


@pytest.mark.parametrize("rule", ["intended", "printed"])
@pytest.mark.parametrize("family", ["pact-vgg11", "alexnet"])
def test_the_least_times_are_the_recursions(family, rule):
    inst = generate("realistic", family=family, horizon=6)
    inst = type(inst).model_validate({**inst.model_dump(), "data_rule": rule})
    g = ExpandedGraph(inst, data_setting(inst, inst.all_datasets), 0.9, 12, 0)
    assert g.printed == (rule == "printed")
    least, table = _recursion(g), g.least_times()
    assert len(table) == g.K + 1
    finite = 0
    for e in range(g.K + 1):
        for m in range(g.M):
            for n in range(g.N):
                for b in range(g.Lb):
                    want = least(e, m, n, b)
                    got = float(table[e][m, n if g.printed else 0, b])
                    if math.isinf(want):
                        assert math.isinf(got), (e, m, n, b, got)
                        continue
                    finite += 1
                    assert got == pytest.approx(want, rel=1e-13), (e, m, n, b, got, want)
    assert finite > g.Lb          # the case compares more than the feasible buckets


def test_a_cheaper_slower_cluster_does_not_hide_a_plan_that_meets_the_deadline():
    """AlexNet with its cheaper cluster slowed (capacity 20 of 100) and made cheaper still: the
    least-weight path at every vertex runs there and misses Tmax, while the other cluster meets it.
    Keeping the least-weight path alone, the label mode would find no path within Tmax."""
    from deplbench.solvers.run import solve

    inst = generate("realistic", family="alexnet")
    data = inst.model_dump()
    data["clusters"][0].update(unit_cost=0.5, capacity=20.0)
    inst = type(inst).model_validate(data)
    res = solve(inst, "pact", eval_samples=2000)
    assert res.status == "feasible", res.message
    plan = res.plan
    clusters = {ep.cluster for ep in plan.epochs}
    assert inst.clusters[1].name in clusters              # the faster cluster carries the plan
    g = ExpandedGraph(inst, data_setting(inst, inst.all_datasets), 0.95, 2000, 0)
    paths = g.feasible_paths(0, None, None, g.b0, 0, 0.0)
    assert paths is not None and np.all(paths["T"] <= g.time_max)
    # the least time from the source, which the search must reach within
    source = min(float(g.tau[m2, n2]) + float(g.least_times()[1][m2, 0, max(g.b0 + int(g.db_first[m2]), 0)])
                 for m2 in range(g.M) for n2 in range(g.N) if g.usable[m2, n2])
    assert source <= g.time_max and paths["T"].min() >= source * (1 - 1e-9)


def test_a_path_on_the_knife_edge_of_the_deadline_is_found():
    """Every epoch 1.1 time units on the faster cluster, 3.8·10⁻⁷ more on the cheaper one, and Tmax
    exactly the all-fast path's time: the all-cheap path misses it by 2·10⁻⁵ (far beyond the test's
    10⁻⁹ slack), so at every vertex the kept path must be one that can still finish. A table rounded
    to float32 (a step of 6·10⁻⁸ relative) cannot tell them apart."""
    inst = generate("realistic", family="alexnet")
    g = ExpandedGraph(inst, data_setting(inst, inst.all_datasets), 0.9, 200, 0)
    fast = 1.1
    g.tau = np.full((g.M, g.N), fast)
    g.tau[:, 0] = fast + 3.8e-7
    g.usable = np.ones((g.M, g.N), bool)
    g.weight = np.ones((g.M, g.N))
    g.weight[:, 0] = 0.5                                   # the slower cluster is the cheaper one
    g.time_max, g._least = math.inf, None
    ahead = [float(g.least_times()[1][m2, 0, max(g.b0 + int(g.db_first[m2]), 0)]) for m2 in range(g.M)]
    epochs = 1 + min(round(t / fast) for t in ahead if math.isfinite(t))   # the fewest epochs to ℓmax
    total = 0.0
    for _ in range(epochs):                                # the all-fast path's time, summed as a label is
        total += fast
    g.time_max, g._least = total, None
    paths = g.feasible_paths(0, None, None, g.b0, 0, 0.0)
    assert paths is not None and paths["T"].min() <= g.time_max
    assert g.feasible_paths_batch(0, None, None, [g.b0], [0.0])[0] is not None
