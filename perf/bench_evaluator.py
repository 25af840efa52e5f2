"""pytest-benchmark suite for the out-of-sample evaluator and the knapsack DP.

Run with ``make bench`` (or ``pytest perf/bench_evaluator.py -o
python_files='bench_*.py'``). Timed regions:

* ``evaluate_plan`` on the realistic AlexNet instance with a 100-epoch plan
  that uses all three models (two switches), 10⁵ trajectories — with and
  without the per-epoch mean/1st/99th-percentile bands of Fig. 9;
* ``simulate_trajectories`` alone (the Monte-Carlo kernel), 10⁵ × 100;
* ``covering_dp`` on knapsack instances of growing target (the exact oracle
  of the DepL paper's Property 1 reduction).

Each evaluator benchmark stores its throughput (epoch-steps simulated per
second) in ``extra_info["steps_per_s"]``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from deplbench.formulations.evaluation.evaluate import evaluate_plan, plan_indices, simulate_trajectories
from deplbench.formulations.exact.knapsack import covering_dp, knapsack_items
from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.instances.generators import generate

TRAJECTORIES = 100_000
EPOCHS = 100


@functools.lru_cache(maxsize=1)
def alexnet_case():
    """AlexNet instance (K̄ = 100) and a feasible 100-epoch three-model plan."""
    inst = generate("realistic", family="alexnet", loss_max=5.0)
    models = ["fast-unsteady"] * 10 + ["intermediate"] * 20 + ["slow-steady"] * 70
    plan = plan_from_choices(inst, models, ["A1"] * EPOCHS, {"A1": ["d0"]})
    assert plan is not None and plan.n_epochs == EPOCHS
    return inst, plan


def _throughput(benchmark, steps: int) -> None:
    mean = benchmark.stats.stats.mean if benchmark.stats else float("nan")
    benchmark.extra_info["steps_per_s"] = steps / mean if mean else float("nan")
    benchmark.extra_info["trajectories"] = TRAJECTORIES
    benchmark.extra_info["epochs"] = EPOCHS


@pytest.mark.parametrize("bands", [False, True], ids=["quantile-only", "with-fig9-bands"])
def test_evaluate_plan_1e5_by_100(benchmark, bands):
    inst, plan = alexnet_case()
    ev = benchmark.pedantic(evaluate_plan, args=(inst, plan),
                            kwargs=dict(samples=TRAJECTORIES, seed=0, trajectory=bands),
                            rounds=3, iterations=1, warmup_rounds=1)
    assert ev.samples == TRAJECTORIES and ev.epochs == EPOCHS and ev.constraints_ok
    _throughput(benchmark, TRAJECTORIES * EPOCHS)


def test_simulate_trajectories_1e5_by_100(benchmark):
    inst, plan = alexnet_case()
    models, _, gammas = plan_indices(inst, plan)

    def run():
        return simulate_trajectories(inst, models, gammas, TRAJECTORIES, np.random.default_rng([0, 1]))

    traj = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    assert traj.shape == (TRAJECTORIES, EPOCHS + 1)
    _throughput(benchmark, TRAJECTORIES * EPOCHS)


@pytest.mark.parametrize("horizon", [10, 40, 100])
def test_covering_dp(benchmark, horizon):
    inst = generate("knapsack", item_class="strongly", n_items=50, R=1000, horizon=horizon, seed=0)
    w, v = knapsack_items(inst)
    target = inst.initial_loss - inst.loss_max
    sol = benchmark.pedantic(covering_dp, args=(w, v, target, horizon), rounds=3, iterations=1)
    assert sol.feasible
    benchmark.extra_info["target"] = int(target)
    benchmark.extra_info["items"] = 50
