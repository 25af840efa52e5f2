"""pytest-benchmark suite for the exact MILP (the package formulations/milp/).

Run with ``make bench`` (or ``pytest perf/bench_milp.py -o
python_files='bench_*.py'``). Timed regions, all on the realistic AlexNet
instance (``generate("realistic", family="alexnet", loss_max=9)``, K̄ = 100,
ω = 0.99) unless stated:

* build only (scenarios, structural bounds, matrices, hand-over to HiGHS) of
  the fast formulation's two variants — sequence enumeration (the default
  here: the switch graph is acyclic) and flow — at S = 1000, and of the
  naive Pyomo model at S = 100;
* build + solve to proven optimality: fast (enumeration) at S = 1000, flow at
  S = 100, naive at S = 30 (the naive model needs minutes beyond that);
* a knapsack-derived instance (order-invariant: the count variant).

The targets (S = 1000 proven optimal in ≤ 30 s, ≥ 20× faster than
naive at S = 300, build ≤ 10 % of the total) are measured side by side by
``perf/milp_targets.py``.
"""

from __future__ import annotations

import pytest

from deplbench.formulations import milp
from deplbench.instances.generators import generate


def _build(instance, scenarios, formulation):
    """Everything solve_milp does before the first HiGHS run."""
    data = milp.Data(instance, scenarios, 0)
    bounds = milp.structural_bounds(data, tight=formulation != "naive", bigm=False)
    if formulation == "naive":
        model = milp.NaiveModel(data, data.lam_reference(bounds.k_min))
        return milp.PyomoBackend(model.model, model.xvars, 1, 0)
    if formulation == "enumeration":
        model = milp.try_enumeration(data, bounds, {}, {})
    else:
        inc = bounds.incumbent
        bounds.bigm = milp.tight_bigm(data, bounds.k_min, bounds.k_max, inc.cost, bounds.lam)
        model = milp.FastModel(data, bounds)
    return milp.HighsBackend(model.mm, 1, 0)


@pytest.fixture(scope="module")
def alexnet():
    # generated here: the shared make_instance factory's first argument is
    # also called "family", which the realistic generator needs as a keyword
    return generate("realistic", family="alexnet", loss_max=9.0)


@pytest.mark.parametrize("variant", ["enumeration", "flow"])
def test_build_fast_S1000(benchmark, alexnet, variant):
    be = benchmark.pedantic(_build, args=(alexnet, 1000, variant), rounds=3, iterations=1)
    assert be.ncol > 0


def test_build_naive_S100(benchmark, alexnet):
    be = benchmark.pedantic(_build, args=(alexnet, 100, "naive"), rounds=1, iterations=1)
    assert be.ncol > 0


def test_solve_fast_S1000(benchmark, alexnet):
    res = benchmark.pedantic(milp.solve_milp, args=(alexnet,),
                             kwargs={"scenarios": 1000, "time_limit": 60}, rounds=3, iterations=1)
    assert res.status == "optimal" and res.gap <= 1e-4
    benchmark.extra_info.update(cost=res.cost, variant=res.diagnostics["variant"],
                                build_s=res.diagnostics["build_s"])


@pytest.mark.parametrize("formulation, scenarios", [("flow", 100), ("naive", 30)],
                         ids=["flow_S100", "naive_S30"])
def test_solve_slow_formulation(benchmark, alexnet, formulation, scenarios):
    res = benchmark.pedantic(milp.solve_milp, args=(alexnet,),
                             kwargs={"scenarios": scenarios, "time_limit": 120, "formulation": formulation},
                             rounds=1, iterations=1)
    assert res.status in ("optimal", "time_limit")
    benchmark.extra_info.update(status=res.status, gap=res.gap, nodes=res.diagnostics.get("nodes"))


def test_solve_knapsack_counts(benchmark):
    inst = generate("knapsack", item_class="strongly", n_items=40, R=1000, horizon=30)
    res = benchmark.pedantic(milp.solve_milp, args=(inst,), kwargs={"time_limit": 60},
                             rounds=3, iterations=1)
    assert res.status == "optimal" and res.diagnostics["variant"] == "counts"
