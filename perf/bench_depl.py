"""pytest-benchmark suite for DepL (solvers/depl/depl.py) and its stages.

Run with ``make bench`` (or ``pytest perf/bench_depl.py -o
python_files='bench_*.py'``). Timed regions:

* DepL end to end on the realistic AlexNet instance (K̄ = 100, ℓmax = 9) at
  η ∈ {50, 200, 800}, its own out-of-sample check at 2·10⁴ samples included;
* DepL with ``calibrate=True`` (η = 200) on the same instance;
* best-exp on the same instance;
* stage 2 alone: one expanded-graph DP at η ∈ {100, 200, 400, 800};
* stage 3 alone: the (1+ε) placement of a 60-epoch sequence at
  ε ∈ {0.4, 0.1, 0.025} (work grows like 1/ε²: see vnf_allocation);
* stage 1 alone: min-norm point on |D| ∈ {4, 8, 16} datasets.

The targets (η = 200 in ≤ 0.5 s, ≤ 1 GB; η = 800 completes; DP ≥ 100× the
networkx reference) are checked side by side by ``perf/depl_targets.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.depl.dataset_selection import DataObjective, SubsetRanker
from deplbench.solvers.depl.depl import most_capable_cluster
from deplbench.solvers.depl.quantile_transform import LossModel, build_bounds
from deplbench.solvers.depl.vnf_allocation import place_and_allocate
from deplbench.solvers.expanded.graph import build_spec, solve_dp
from deplbench.solvers.run import solve


@functools.lru_cache(maxsize=4)
def alexnet(loss_max: float = 9.0):
    """The realistic AlexNet instance (``make_instance`` cannot pass ``family=``:
    its own first argument has that name)."""
    return generate("realistic", family="alexnet", loss_max=loss_max)


def stage2_spec(instance, eta: int):
    """The expanded graph DepL builds for the realistic instance (centre θ)."""
    n = most_capable_cluster(instance)
    comp = instance.model_compute
    tau = comp / instance.capacity[n] + instance.model_size / instance.bandwidth[n]
    w = np.sqrt(comp * instance.unit_cost[n])
    lm = LossModel.from_instance(instance, 1.0)
    b = build_bounds(lm, "chernoff", 1, ref_model=0, ref_epochs=60)[0]
    return build_spec(w, tau, instance.time_max, b.run_phi, b.jump_phi, instance.allowed,
                      instance.initial_loss, instance.loss_max - b.offset, eta, rounding="nearest")


@pytest.mark.parametrize("eta", [50, 200, 800])
def test_depl_end_to_end(benchmark, eta):
    inst = alexnet()
    res = benchmark(solve, inst, "depl", evaluate=False, eta=eta, check_samples=20_000)
    assert res.status == "feasible"
    benchmark.extra_info.update(cost=res.cost, epochs=res.plan.n_epochs,
                                vertices=res.diagnostics["graph_vertices"])


def test_depl_calibrated_end_to_end(benchmark):
    """``calibrate=True`` (η = 200): the proven run plus the per-surrogate
    target search and its out-of-sample tests."""
    inst = alexnet()
    res = benchmark.pedantic(solve, args=(inst, "depl"), kwargs=dict(evaluate=False, calibrate=True,
                                                                     check_samples=20_000),
                             rounds=3, iterations=1)
    assert res.status == "feasible"
    cal = res.diagnostics["calibration"]
    benchmark.extra_info.update(cost=res.cost, base_cost=cal["base_cost"], epochs=res.plan.n_epochs,
                                guarantee=res.diagnostics["guarantee"], tests=len(cal["tests"]))


def test_best_exp_end_to_end(benchmark):
    inst = alexnet()
    res = benchmark(solve, inst, "best-exp", evaluate=False, check_samples=20_000)
    assert res.status == "feasible"
    benchmark.extra_info.update(cost=res.cost, epochs=res.plan.n_epochs)


@pytest.mark.parametrize("eta", [100, 200, 400, 800])
def test_expanded_graph_dp(benchmark, eta):
    spec = stage2_spec(alexnet(), eta)
    res = benchmark(solve_dp, spec)
    assert res.feasible
    benchmark.extra_info.update(vertices=res.vertices, edges=res.edges, layers=res.layers)


@pytest.mark.parametrize("epsilon", [0.4, 0.1, 0.025])
def test_placement_epsilon(benchmark, epsilon):
    rng = np.random.default_rng(0)
    K = 60
    compute = 100.0 * rng.choice([1.0, 1.4, 2.6], K)
    comm = np.column_stack([np.full(K, 0.5), np.full(K, 0.25)])
    kappa, cap = np.array([1.0, 1.2]), np.array([100.0, 50.0])
    res = benchmark(place_and_allocate, compute, comm, kappa, cap, 150.0, epsilon, group_key=compute.tolist())
    assert res.feasible
    benchmark.extra_info.update(grid_cost=res.grid_cost, states=res.states, buckets=res.buckets)


@pytest.mark.parametrize("n_datasets", [4, 8, 16])
def test_dataset_min_norm(benchmark, make_instance, n_datasets):
    obj = DataObjective.from_instance(make_instance("datasets", n_datasets=n_datasets))
    subset, value = benchmark(lambda: SubsetRanker(obj).next())
    benchmark.extra_info.update(subset=list(subset), value=value)
