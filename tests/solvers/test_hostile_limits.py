"""Hostile input: a memory estimate before every large allocation
and ``--time-limit`` in every solver (docs/DESIGN.md, "Limits").

No test measures wall-clock time: an expired deadline is a limit so small
that the first check in a loop has passed it, and a memory refusal is shown
with :mod:`tracemalloc` to happen before the arrays exist.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from deplbench import limits
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import solve
from tests.instance_data import two_model_data

EXPIRED = 1e-12


@pytest.fixture(scope="module")
def knapsack():
    return generate("knapsack", n_items=8, seed=1)


# ---- finding 1: the expanded graph's (K̄, M, M) tables are estimated first -----------------------

def test_build_spec_refuses_horizon_x_models_squared_before_allocating():
    from deplbench.solvers.expanded.spec import build_spec

    K, M = 100_000, 60             # six (K̄, M, M) float64 tables: about 16 GiB
    run_phi = np.full((K, M), 0.01)
    jump = np.zeros((M, M))
    tracemalloc.start()
    try:
        with pytest.raises(limits.MemoryLimitExceeded, match=r"shift tables \(K̄ = 100000 × \|M\|² = 3600\) "
                                                             r"would need about 16\.09 GiB > memory budget 2\.00"):
            build_spec(np.ones(M), np.ones(M), 10.0, run_phi, jump, np.ones((M, M), bool), 10.0, 1.0, eta=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**28             # refused before any table was built (256 MiB)


@pytest.mark.parametrize("algo", ["depl", "best-exp"])
def test_memory_limit_is_a_cap_the_user_can_raise(knapsack, algo):
    low = solve(knapsack, algo, memory_limit=1e-7, evaluate=False)
    assert low.status == "error"
    assert "GiB > memory budget 1e-07 GiB (parameter memory_limit raises it)" in low.message
    ok = solve(knapsack, algo, evaluate=False)
    assert ok.status in ("optimal", "feasible"), ok.message


def test_memory_budget_scope_nests_and_resets():
    assert limits.memory_budget_gib() == limits.MEMORY_BUDGET_GIB
    with limits.memory_budget(5.0):
        assert limits.memory_budget_gib() == 5.0
        limits.check_memory(4 * 2**30, "x", "y")            # 4 GiB fits a 5 GiB cap
        with limits.memory_budget(None):
            assert limits.memory_budget_gib() == 5.0
    with pytest.raises(limits.MemoryLimitExceeded):
        limits.check_memory(4 * 2**30, "x", "y")
    assert limits.memory_budget_gib() == limits.MEMORY_BUDGET_GIB


def test_covering_dp_tables_estimated_first():
    from deplbench.formulations.exact.knapsack import covering_dp

    with limits.memory_budget(1e-4), pytest.raises(limits.MemoryLimitExceeded, match="covering DP's tables"):
        covering_dp(np.arange(1, 201), np.arange(1, 201), target=5000, max_items=100)


def test_pact_graph_estimated_first(knapsack):
    res = solve(generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0),
                "pact", memory_limit=1e-7, evaluate=False)
    assert res.status == "error" and "PACT's" in res.message and "memory_limit" in res.message


# ---- finding 10: every solver honours time_limit ----------------------------------------------------

@pytest.mark.parametrize("algo,instance", [("pact", "vgg"), ("brute-force", "tiny"), ("knapsack-dp", "knapsack")])
def test_pact_brute_force_knapsack_dp_honour_time_limit(knapsack, algo, instance):
    inst = {"vgg": lambda: generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0),
            "tiny": lambda: parse_instance(two_model_data()), "knapsack": lambda: knapsack}[instance]()
    res = solve(inst, algo, time_limit=EXPIRED, evaluate=False)
    assert res.status == "time_limit", res.message
    assert res.plan is None and res.message.startswith("time limit 1e-12 s reached (")


def test_allocation_dp_checks_the_deadline_inside_a_layer():
    """20,000 clusters: the options of one epoch and the DP over them are
    checked while they are built, not only between epochs."""
    from deplbench.solvers.depl import vnf_allocation as va

    n = 3000
    kappa, cap, comm = np.linspace(1.0, 2.0, n), np.full(n, 10.0), np.zeros(n)
    with limits.deadline(EXPIRED), pytest.raises(limits.TimeLimitReached, match=r"allocation options, cluster 0"):
        va._options(1.0, comm, kappa, cap, list(range(n)), 10.0, 0.05)



def test_allocation_dp_checks_inside_the_option_loop_of_one_epoch(monkeypatch):
    """The per-option loop of a large table (options × buckets above the
    gather limit) checks every 256 options, not only once per epoch."""
    from deplbench.solvers.depl import vnf_allocation as va

    seen = []
    monkeypatch.setattr(va, "check_time", seen.append)
    o = 600
    t = np.linspace(1.0, 0.1, o)
    groups = [(t, np.linspace(1.0, 2.0, o), np.arange(o), np.ones(o))]
    picks, *_ = va._dp(groups, [0], 1.0, 1e-3, 1.0, 2.0)       # buckets × 600 options > _GATHER_MAX
    assert picks is not None
    assert [w for w in seen if "option" in w] == [f"(1+ε) allocation DP, epoch 0 of 1, option {i} of {o}"
                                                  for i in (0, 256, 512)]


def test_milp_certified_total_time_limit_bounds_the_whole_bracket():
    """A total limit already used up: no SAA solve starts, no test certifies;
    the result is error with the reason, never a bound from nothing."""
    inst = parse_instance(two_model_data())
    res = solve(inst, "milp-certified", total_time_limit=EXPIRED, replications=3, risk_grid="0.9",
                evaluate=False)
    bracket = res.diagnostics["bracket"]
    assert res.status == "error" and "total_time_limit reached before this SAA solve" in res.message
    assert {r["status"] for r in bracket["replications"]} == {"time_limit"}
    assert bracket["settings"]["total_time_limit"] == EXPIRED
    assert json.dumps(bracket, default=str)


def test_milp_certified_total_time_limit_skips_late_tests_only():
    import time

    from deplbench.solvers.certify.tasks import validation_task

    inst = parse_instance(two_model_data())
    plan = solve(inst, "brute-force", evaluate=False).plan
    task = {"instance": inst.model_dump(mode="json", by_alias=True), "plan": plan.to_dict(),
            "validation": 5000, "seed": 1, "confidence": 0.99}
    late = validation_task({**task, "ends_at": time.time() - 1})
    on_time = validation_task({**task, "ends_at": time.time() + 3600})
    assert late["certified"] is False and late["draws"] == 100 and "skipped" in late
    assert on_time["draws"] == 5000 and "skipped" not in on_time
    assert late["cost"] == pytest.approx(on_time["cost"])
