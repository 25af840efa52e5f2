"""Work counters in diagnostics: exact and deterministic.

DepL/best-exp report the expanded graph's size (nominal, reachable — equal to
the networkx reference, see test_expanded_graph — DP states made live, edges
relaxed), the dataset oracle calls and the (1+ε) DP's cells; PACT its graph
vertices and shortest-path calls per re-plan; brute force the plans it
enumerated. Same instance and seed ⇒ the same counts.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks.store import COLUMNS as STORE_COLUMNS
from deplbench.instances.generators import generate
from deplbench.reports import complexity as cx
from deplbench.reports.data import prepare
from deplbench.reports.stats import loglog_fit
from deplbench.solvers.run import solve


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


# --------------------------------------------------------------------------
# the report's counter fits (reports/complexity.py)
# --------------------------------------------------------------------------


def _row(**kw) -> dict:
    r = {c: None for c in STORE_COLUMNS}
    r.update(status="feasible", cost=1.0, exact=False, family="synthetic")
    r.update(kw)
    r["label"] = kw.get("label", kw.get("algorithm"))
    for c in ("instance_params", "params", "diagnostics"):
        if isinstance(r[c], dict):
            r[c] = json.dumps(r[c])
    return r


def _eta_frame(counts_label=None):
    """Three instances (different constants C_i) × η; counts C_i·η^1.7 exactly,
    runtimes noisy; optionally extra "-counts" rows at larger η."""
    rng = np.random.default_rng(3)
    rows = []
    for i, c in enumerate((10.0, 300.0, 7000.0)):
        for eta in (10, 20, 40, 80):
            rows.append(_row(key=f"k{i}-{eta}", instance_sha=f"sha{i}", instance_seed=i,
                             instance_params={"n_models": 3}, n_models=3, algorithm="depl",
                             params={"eta": eta}, eta=eta,
                             runtime_s=0.01 * eta ** 0.5 * np.exp(rng.normal(0, 0.2)),
                             diagnostics={"work": {"vertices": c * eta ** 1.7}}))
        if counts_label:
            for eta in (160, 320):
                rows.append(_row(key=f"c{i}-{eta}", instance_sha=f"sha{i}", instance_seed=i,
                                 instance_params={"n_models": 3}, n_models=3,
                                 algorithm="depl", label=counts_label, params={"eta": eta},
                                 eta=eta, runtime_s=1e3,
                                 diagnostics={"work": {"vertices": c * eta ** 1.7}}))
    return prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df


def test_within_instance_fit_recovers_a_known_exponent_tightly():
    df = _eta_frame()
    fits = cx.complexity_fits(df)
    v = fits[(fits["measure"] == "vertices") & (fits["parameter"] == "eta")].iloc[0]
    assert v["method"] == "within-instance OLS"
    assert v["slope"] == pytest.approx(1.7, abs=0.01)
    assert v["ci_high"] - v["ci_low"] < 0.01
    # pooling the three instances into one intercept: the same data, a wide interval
    pooled = loglog_fit(df["eta"], [json.loads(d)["work"]["vertices"] for d in df["diagnostics"]])
    assert pooled.ci_high - pooled.ci_low > 1.0


def test_within_fit_drops_singleton_groups_and_counts_degrees_of_freedom():
    x = np.array([1.0, 2.0, 4.0, 1.0, 2.0, 4.0, 8.0])
    y = np.array([3.0, 6.0, 12.0, 5.0, 10.0, 20.0, 999.0])
    g = ["a", "a", "a", "b", "b", "b", "c"]          # "c" is a single point
    fit = cx.within_fit(x, y, g)
    assert fit.slope == pytest.approx(1.0, abs=1e-12) and fit.n == 6
    assert fit.ci_high - fit.ci_low == pytest.approx(0.0, abs=1e-9)
    assert cx.within_fit([1.0, 2.0], [1.0, 2.0], ["a", "b"]) is None


def test_counts_only_rows_enter_counter_fits_but_not_time_fits():
    df = _eta_frame(counts_label="depl-counts")
    fits = cx.complexity_fits(df)
    t = fits[(fits["measure"] == cx.TIME) & (fits["parameter"] == "eta")]
    v = fits[(fits["measure"] == "vertices") & (fits["parameter"] == "eta")]
    assert len(t) == 1 and t["max_value"].iloc[0] == 80 and t["points"].iloc[0] == 12
    assert v["max_value"].iloc[0] == 320 and v["points"].iloc[0] == 18
    assert t["slope"].iloc[0] < 1.0  # the counts rows' 1000 s runtimes would steepen it


def test_pact_graph_gets_its_own_implied_exponent(small):
    res = solve(small, "pact", scenarios=100, check_samples=1000, evaluate=False)
    declared = res.diagnostics["work_exponents"]
    assert declared["graph_vertices"]["horizon"] == 2.0
    # the report uses the declaration, and never DepL's |M|·K·η² for PACT
    assert cx._implied("horizon", "graph_vertices", declared) == 2.0
    assert cx._implied("eta", "graph_vertices", declared) is None
    # an undeclared counter has no implied exponent, whatever its name
    assert cx._implied("eta", "graph_vertices_reachable", {}) is None


def test_depl_declares_its_graph_exponents(small):
    """DepL's counters carry Sec. V's |M|·K·η² in the result, and the report
    reads them from there (per-graph counters take their total's)."""
    res = solve(small, "depl", evaluate=False)
    declared = res.diagnostics["work_exponents"]
    assert set(declared) <= set(res.diagnostics["work"])
    assert cx._implied("eta", "graph_vertices_reachable", declared) == 2.0
    assert cx._implied("eta", "graph_vertices_nominal_per_graph", declared) == 2.0
    assert cx._implied("n_models", "graph_edges_relaxed", declared) == 1.0
    assert cx._implied("n_clusters", "graph_edges_relaxed", declared) is None


def test_per_graph_counters_divide_by_the_graphs_built():
    """DepL's totals depend on how many graphs it built (retries change with
    η); the per-graph counters are the size Sec. V's vertex count describes."""
    from deplbench.reports.complexity import work_counters

    got = work_counters({"work": {"graphs": 10, "graph_vertices_nominal": 1950010, "allocation_calls": 3,
                                  "flag": True}})
    assert got["graph_vertices_nominal_per_graph"] == 195001.0
    assert "allocation_calls_per_graph" not in got and "flag" not in got
    assert "graph_vertices_nominal_per_graph" not in work_counters({"work": {"graph_vertices_nominal": 5}})
