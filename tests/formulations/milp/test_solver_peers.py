"""Solver peers: ``--solver``, Pyomo SolverFactory peers, their exactness.

Every peer runs deplbench's cut loop, so the exactness contract is checked the
same way for each: the brute-force (or covering-knapsack DP) optimum is
found and proven, the bound is the solver's, and a solver that reports no
dual bound never says ``optimal``. ``pyomo:appsi_highs`` (highspy, in the
lockfile) always runs; CBC (``coinor-cbc``, installed by ``.ci/run``) runs
where its executable exists and the tests say so when it does not.
"""

from __future__ import annotations

import json
import math
import shutil
import sys

import pytest

from deplbench.cli import main as cli_main
from deplbench.errors import SolverError
from deplbench.formulations import milp
from deplbench.formulations.exact.knapsack import knapsack_optimum_from_instance
from deplbench.formulations.milp.peers import (
    PYOMO_FAMILIES,
    availability,
    available_solvers,
    check_solver,
    known_solvers,
    lookup,
    pyomo_family,
    solver_table,
)
from deplbench.formulations.milp.pyomo_peer import PyomoPeerBackend
from deplbench.formulations.peer_lookup import PYOMO_NEEDS, lookup_table
from deplbench.instances.generators import generate
from deplbench.solvers.exact.brute_force import search as brute_force_search
from tests.milp_instances import tiny_instance

CBC = pytest.mark.skipif(shutil.which("cbc") is None,
                         reason="the CBC executable is absent (Debian package coinor-cbc; .ci/run installs it)")

#: Every test here depends on which solvers the machine has: `.ci/run` runs
#: them a second time with CBC hidden from PATH (marker `system_packages`).
pytestmark = pytest.mark.system_packages


def _close(a, b, rtol):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


# ------------------------------------------------------------------ names


def test_known_names_and_families():
    names = known_solvers()
    assert names[:2] == ["highs", "scip"]
    assert {"pyomo:cbc", "pyomo:appsi_highs", "pyomo:gurobi", "pyomo:cplex"} <= set(names)
    for fam, spec in PYOMO_FAMILIES.items():
        assert all(pyomo_family(n) == fam for n in spec["names"])
    assert pyomo_family("nosuchsolver") is None


def test_appsi_highs_is_available_wherever_the_lock_is_installed():
    """CI must run at least one Pyomo peer: highspy is a locked dependency,
    so Pyomo's appsi_highs interface is always there."""
    ok, version = availability("pyomo:appsi_highs")
    assert ok, version
    assert version.startswith("pyomo ") and "appsi_highs" in version
    assert "pyomo:appsi_highs" in available_solvers()
    table = {r["name"]: r for r in solver_table()}
    assert table["highs"]["available"] and table["pyomo:appsi_highs"]["available"]
    assert all(("version" in r) == r["available"] and ("reason" in r) != r["available"] for r in table.values())


def test_lookup_agrees_with_asking_each_solver():
    """The quick look-up (no import, nothing run) and the full test agree on
    this machine, for every name (CI runs this with and without CBC)."""
    assert set(PYOMO_NEEDS) == {n for spec in PYOMO_FAMILIES.values() for n in spec["names"]}
    quick = {r["name"]: r["available"] for r in lookup_table()}
    full = {r["name"]: r["available"] for r in solver_table()}
    assert quick == full
    assert all(not r["checked"] for r in lookup_table()) and all(r["checked"] for r in solver_table())


def test_lookup_finds_what_each_name_needs_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    ok, why = lookup("pyomo:cbc")
    assert not ok and why == "needs executable cbc on PATH"
    assert lookup("pyomo:scip") == (False, "needs executable scip on PATH or executable scipampl on PATH")
    exe = tmp_path / "cbc"
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    ok, what = lookup("pyomo:cbc")
    assert ok and what.startswith("pyomo ") and what.endswith(str(exe))   # found, not run (it would fail)
    assert lookup("pyomo:appsi_cbc")[0] and not lookup("pyomo:glpk")[0]
    assert lookup("pyomo:appsi_highs")[0]                                  # a package, not a PATH entry


@pytest.mark.parametrize("name", ["gurobi", "pyomo:nosuchsolver", "pyomo:bad name", "", 3])
def test_lookup_refuses_unknown_names_as_the_full_test_does(name):
    assert lookup(name) == availability(name) and not lookup(name)[0]


@pytest.mark.parametrize("name,match", [
    ("gurobi", r"^--solver: unknown solver 'gurobi'"),
    ("pyomo:nosuchsolver", r"^--solver: 'pyomo:nosuchsolver' is not available: deplbench does not know"),
    ("pyomo:bad name", r"not a SolverFactory name"),
    ("", r"^--solver: must be a solver name"),
    (3, r"^--solver: must be a solver name"),
])
def test_bad_solver_names_are_refused_naming_the_option(name, match):
    with pytest.raises(SolverError, match=match) as err:
        check_solver(name, "--solver")
    assert "\n" not in str(err.value)


def test_solve_milp_refuses_a_bad_solver_before_building():
    with pytest.raises(SolverError, match=r"^solver: unknown solver 'cbc'"):
        milp.solve_milp(tiny_instance(0), solver="cbc")            # Pyomo's name needs the pyomo: prefix
    with pytest.raises(SolverError, match=r"^solver: 'pyomo:nosuch' is not available"):
        milp.solve_milp(tiny_instance(0), solver="pyomo:nosuch")


def test_scip_refuses_naive_but_pyomo_peers_take_it():
    with pytest.raises(SolverError, match="solver: 'scip' solves the matrix formulations"):
        check_solver("scip", formulation="naive")
    check_solver("pyomo:appsi_highs", formulation="naive")
    with pytest.raises(SolverError, match="backend='pyomo' only routes HiGHS"):
        check_solver("pyomo:appsi_highs", backend="pyomo")


@pytest.mark.parametrize("solver", ["scip", "pyomo:cbc", "pyomo:appsi_highs"])
def test_only_highs_runs_the_general_formulation_refused_before_the_solve(solver):
    """`--formulation general --solver scip` passed the check and ended as status error (exit 1)
    after the scenarios were drawn; like naive with SCIP, it is an input contradiction (exit 2)."""
    with pytest.raises(SolverError, match=f"^solver: '{solver}' cannot run the 'general' formulation"):
        check_solver(solver, formulation="general")
    check_solver("highs", formulation="general")
    inst = tiny_instance(0)
    with pytest.raises(SolverError, match="cannot run the 'general' formulation"):
        milp.solve_milp(inst, formulation="general", solver=solver)


def test_an_absent_solver_is_unavailable_with_the_reason(monkeypatch):
    """A SolverFactory name of a known family whose solver is not installed
    (no GLPK executable on the path here)."""
    monkeypatch.setenv("PATH", "/nonexistent")
    availability.cache_clear()
    try:
        ok, why = availability("pyomo:glpk")
        assert not ok and "not installed" in why
        with pytest.raises(SolverError, match=r"^solver: 'pyomo:glpk' is not available: .*available here: highs"):
            check_solver("pyomo:glpk")
    finally:
        availability.cache_clear()


# -------------------------------------------------- exactness of the peers


def _peers() -> list:
    return ["pyomo:appsi_highs", pytest.param("pyomo:cbc", marks=CBC)]


@pytest.mark.parametrize("solver", _peers())
@pytest.mark.parametrize("seed,n_datasets,cyclic", [(0, 1, False), (1, 2, True)])
@pytest.mark.slow
def test_pyomo_peers_give_the_brute_force_optimum(solver, seed, n_datasets, cyclic):
    """Same cut loop, same certificate as HiGHS: the brute-force optimum,
    proven within the gap by the solver's own bound; solver and version recorded."""
    inst = tiny_instance(seed, horizon=4, n_datasets=n_datasets, all_switches=cyclic)
    bf_cost, bf_plan, _ = brute_force_search(inst, 30, seed)
    r = milp.solve_milp(inst, scenarios=30, seed=seed, formulation="flow", solver=solver, gap=1e-7,
                        time_limit=None)
    if bf_plan is None:
        assert r.status == "infeasible"
        return
    assert r.status == "optimal", r.message
    assert _close(r.cost, bf_cost, 1e-7) and r.gap <= 1e-7
    assert r.lower_bound <= bf_cost * (1 + 1e-9)
    assert r.diagnostics["solver"] == solver == r.params["solver"] == r.diagnostics["backend"]
    assert r.diagnostics["solver_version"].startswith("pyomo ")
    assert solver.split(":")[1] in r.diagnostics["solver_version"]


@pytest.mark.parametrize("solver", _peers())
@pytest.mark.slow
def test_pyomo_peers_run_the_cut_loop_on_knapsack(solver):
    """The count model starts without an incumbent, so the loop re-solves
    the master with added cuts through Pyomo; the covering-knapsack DP is
    the independent optimum."""
    inst = generate("knapsack", item_class="uncorrelated", n_items=10, R=100, horizon=10, seed=0)
    dp = knapsack_optimum_from_instance(inst)
    r = milp.solve_milp(inst, scenarios=1000, solver=solver, gap=1e-6, time_limit=None)
    assert r.status == "optimal", r.message
    assert r.diagnostics["variant"] == "counts"
    assert r.lower_bound <= dp * (1 + 1e-9) <= r.cost * (1 + 2e-6)
    assert r.diagnostics["rounds"] >= 2 and r.diagnostics["cuts_added"] >= 1


@pytest.mark.slow
def test_pyomo_peer_solves_the_naive_pyomo_model():
    inst = tiny_instance(2, horizon=3)
    ref = milp.solve_milp(inst, scenarios=20, seed=2, formulation="flow", gap=1e-7, time_limit=None)
    r = milp.solve_milp(inst, scenarios=20, seed=2, formulation="naive", solver="pyomo:appsi_highs", gap=1e-7,
                        time_limit=None)
    assert ref.status == r.status == "optimal", r.message
    assert _close(r.cost, ref.cost, 1e-7)


@CBC
@pytest.mark.slow
def test_a_peer_without_a_dual_bound_never_claims_optimal():
    """Pyomo's appsi_cbc interface reports no dual bound (-inf): the plan is
    exact and SAA-feasible, but optimality is unproven and the result says why."""
    inst = tiny_instance(0, horizon=4)
    bf_cost, _, _ = brute_force_search(inst, 30, 0)
    r = milp.solve_milp(inst, scenarios=30, seed=0, formulation="flow", solver="pyomo:appsi_cbc", gap=1e-6,
                        time_limit=None)
    assert r.status == "feasible" and r.lower_bound is None and r.gap is None
    assert "no dual bound" in r.message
    assert r.cost >= bf_cost * (1 - 1e-9)


class _Res:
    """A stand-in for Pyomo's SolverResults (problem.lower_bound only)."""

    def __init__(self, lb):
        self.problem = type("P", (), {"lower_bound": lb})()


@pytest.mark.parametrize("lb,optimal,expect", [
    (None, True, -math.inf), (float("-inf"), True, -math.inf), (float("nan"), False, -math.inf),
    (100.0, False, 100.0), (100.0, True, 100.0 - 1e-3 * 100.0), (90.0, True, 90.0),
])
def test_the_bound_is_the_reported_one_capped_by_the_gap_proof(lb, optimal, expect):
    """No reported bound → -inf (never optimal); a shell interface that
    reports the incumbent as the bound at "optimal" → at most obj − g·|obj|."""
    assert PyomoPeerBackend._bound(_Res(lb), optimal, 100.0, 1e-3) == pytest.approx(expect)


def test_options_are_passed_in_each_solvers_own_names():
    """Gap, absolute gap 0, threads, seed and node limit in the solver's
    option names; a solver without a node-limit option refuses node_limit
    (the run becomes an error outcome naming it, never an unlimited run)."""
    be = PyomoPeerBackend.__new__(PyomoPeerBackend)    # only the option mapping is exercised
    be.threads, be.seed, be.name = 2, 7, "peer"
    for family, expect in [("highs", {"mip_rel_gap": 1e-4, "mip_abs_gap": 0.0, "threads": 2, "random_seed": 7,
                                      "mip_max_nodes": 5}),
                           ("cbc", {"ratioGap": 1e-4, "allowableGap": 0.0, "threads": 2, "randomCbcSeed": 8,
                                    "maxNodes": 5}),
                           ("gurobi", {"MIPGap": 1e-4, "MIPGapAbs": 0.0, "Threads": 2, "Seed": 7,
                                       "NodeLimit": 5})]:
        be.family, be.spec = family, PYOMO_FAMILIES[family]
        opts = be._options(1e-4, 5, 0)
        assert {k: opts[k] for k in expect} == expect, family
    be.family, be.spec = "glpk", PYOMO_FAMILIES["glpk"]
    assert be._options(1e-4, None, 0) == {"mipgap": 1e-4}
    assert "takes no node limit" in be._options(1e-4, 5, 0)


def test_every_route_to_a_matrix_model_counts_cuts_rows_and_files_alike(tmp_path):
    """highspy, appsi_highs and a SolverFactory peer on one matrix model
    count the same rows and non-zeros before and after the same λ cut and
    reach the same optimum (the cut moves it); the peer writes the highspy
    route's named file, a peer without the matrix Pyomo's own file."""
    from deplbench.formulations.milp.backends import HighsBackend, PyomoBackend, pyomo_from_matrix
    from deplbench.formulations.milp.matrix import MatrixModel

    def matrix():
        mm = MatrixModel()
        x = mm.cols("x", (3,), lb=0.0, ub=10.0, integer=True, cost=[3.0, 2.0, 4.0])
        mm.rows([0, 0, 1, 1], [x[0], x[1], x[1], x[2]], [1.0, 1.0, 1.0, 2.0], [2.0, 1.0], math.inf, name="cover")
        return mm.finish()

    mm = matrix()
    peer_pm, peer_xs = pyomo_from_matrix(mm)
    routes = {"highs": HighsBackend(mm, 1, 0),
              "appsi": PyomoBackend(*pyomo_from_matrix(mm), 1, 0),
              "peer": PyomoPeerBackend("pyomo:appsi_highs", peer_pm, peer_xs, 1, 0, mm=mm)}
    routes["highs"].write(tmp_path / "highs.lp")
    routes["peer"].write(tmp_path / "peer.lp")
    highs_file = (tmp_path / "highs.lp").read_text()
    assert "cover_0" in highs_file and (tmp_path / "peer.lp").read_text() == highs_file
    for name, be in routes.items():
        assert (be.ncol, be.n_rows, be.n_nonzeros) == (3, 2, 4), name
        assert be.solve(math.inf, 1e-9).objective == pytest.approx(4.0), name     # x1 = 2
        be.add_cut([0, 2], [1.0, 1.0], 5.0)                                       # x0 + x2 >= 5
        assert (be.n_rows, be.n_nonzeros) == (3, 6), name
        out = be.solve(math.inf, 1e-9)
        # x0 = 4, x2 = 1 (16) beats x0 = 5, x1 = 1 (17) and x0 = 3, x2 = 2 (17)
        assert out.status == "optimal" and out.objective == pytest.approx(16.0), (name, out.message)
    bare_pm, bare_xs = pyomo_from_matrix(matrix())
    bare = PyomoPeerBackend("pyomo:appsi_highs", bare_pm, bare_xs, 1, 0)
    assert (bare.n_rows, bare.n_nonzeros) == (2, 4)
    bare.write(tmp_path / "bare.lp")
    bare_file = (tmp_path / "bare.lp").read_text()
    assert "cover_0" not in bare_file and "rows" in bare_file


# ---------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def inst_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("peers") / "tiny.json"
    tiny_instance(0, horizon=4).save(path)
    return path


@pytest.mark.parametrize("argv,match", [
    (["--algo", "milp", "--solver", "pyomo:nosuchsolver"], "--solver: 'pyomo:nosuchsolver' is not available"),
    (["--algo", "milp", "--solver", "cplexx"], "--solver: unknown solver 'cplexx'"),
    (["--algo", "depl", "--solver", "scip"], "--solver: algorithm 'depl' has no parameter 'solver'"),
])
def test_cli_bad_solver_is_one_line_exit_2(inst_file, capsys, argv, match):
    assert cli_main(["solve", str(inst_file), *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and match in err
    if argv[1] == "milp":
        assert "available here: highs" in err


def test_cli_solve_with_a_pyomo_peer_records_it(inst_file, capsys):
    assert cli_main(["solve", str(inst_file), "--algo", "milp", "--solver", "pyomo:appsi_highs", "--scenarios",
                     "30", "--gap", "1e-7", "--eval-samples", "200", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["status"] == "optimal"
    assert rec["params"]["solver"] == "pyomo:appsi_highs"
    assert rec["diagnostics"]["solver_version"].startswith("pyomo ")


def test_cli_lists_solvers_and_availability(capsys):
    assert cli_main(["algorithms", "--solvers", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["solvers"]}
    assert rows["pyomo:appsi_highs"]["available"] and rows["highs"]["available"]
    assert rows["scip"]["available"] == (availability("scip")[0])
    assert not any(r["checked"] for r in rows.values())        # looked up, not asked
    assert cli_main(["algorithms", "--solvers", "--check", "--json"]) == 0
    checked = {r["name"]: r for r in json.loads(capsys.readouterr().out)["solvers"]}
    assert list(checked) == list(rows) and all(r["checked"] for r in checked.values())
    assert checked["pyomo:appsi_highs"]["version"].startswith("pyomo 6") and "appsi_highs" in \
        checked["pyomo:appsi_highs"]["version"]
    assert cli_main(["algorithms"]) == 0
    # Words, not lines: where the text wraps depends on which solvers are
    # installed (the reasons differ) and must not decide the test.
    text = " ".join(capsys.readouterr().out.split())
    assert "MILP solvers (--solver NAME" in text and "never 'optimal'" in text and "pyomo:appsi_highs" in text
    with pytest.raises(SystemExit):
        cli_main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--solver NAME" in text and "MILP solvers" in text and "pyomo:cbc" in text


# ------------------------------------------------- the report's solver table


def _store_row(key, solver, status, runtime, gap=None, limit=60.0, sha="i1", scenarios=100):
    params = {"solver": solver, "time_limit": limit, "scenarios": scenarios, "gap": 1e-4}
    return {"key": key, "algorithm": "milp", "label": "milp", "exact": True, "family": "scaling",
            "status": status, "runtime_s": runtime, "gap": gap, "cost": 10.0, "instance_sha": sha,
            "params": json.dumps(params), "diagnostics": json.dumps({"solver_version": f"v-{solver}"})}


def test_solver_table_counts_solved_sgm_and_gap_on_common_problems():
    import pandas as pd

    from deplbench.benchmarks.sgm import shifted_geomean
    from deplbench.reports.data import prepare
    from deplbench.reports.solvers import solver_comparison

    rows = [_store_row("a1", "highs", "optimal", 2.0, 0.0), _store_row("a2", "scip", "optimal", 5.0, 0.0),
            _store_row("b1", "highs", "time_limit", 61.0, 0.02, sha="i2"),
            _store_row("b2", "scip", "optimal", 30.0, 0.0, sha="i2"),
            # a problem only HiGHS ran is left out of the comparison
            _store_row("c1", "highs", "optimal", 1.0, 0.0, sha="i3"),
            # the same instance with another S is another problem; only SCIP ran it
            _store_row("d2", "scip", "time_limit", 60.0, 0.5, scenarios=200)]
    df = prepare(pd.DataFrame(rows)).df
    t = solver_comparison(df).set_index("solver")
    assert list(t.index) == ["highs", "scip"] and (t["problems"] == 2).all()
    assert t.loc["highs", "solved"] == 1 and t.loc["scip", "solved"] == 2
    # unsolved at its time limit (60 s, not the measured 61 s), as Mittelmann counts
    assert t.loc["highs", "sgm_time_s"] == pytest.approx(shifted_geomean([2.0, 60.0], 10.0))
    assert t.loc["scip", "sgm_time_s"] == pytest.approx(math.sqrt(15 * 40) - 10)
    assert t.loc["highs", "mean_gap_at_limit"] == pytest.approx(0.02) and math.isnan(t.loc["scip", "mean_gap_at_limit"])
    assert t.loc["scip", "version"] == "v-scip" and (t["shift_s"] == 10.0).all()


def test_solver_table_with_one_solver_is_a_note_not_a_crash():
    import pandas as pd

    from deplbench.reports.data import prepare
    from deplbench.reports.elements import Note, Section, Table
    from deplbench.reports.solvers import add_solver_table

    for rows, says in [([_store_row("a1", "highs", "optimal", 2.0)], "MILP solver highs but no problem"),
                       ([], "no exact run in this store records a MILP solver")]:
        sec = Section("gaps", "2.", "")
        add_solver_table(sec, prepare(pd.DataFrame(rows)).df)
        notes = [e for e in sec.elements if isinstance(e, Note)]
        tables = [e for e in sec.elements if isinstance(e, Table)]
        assert len(tables) == 1 and tables[0].frame.empty
        assert any(says in n.text for n in notes), [n.text for n in notes]


@pytest.mark.integration
def test_sweep_with_a_solver_axis_fills_the_report_table(tmp_path):
    """End to end: a sweep's solvers axis → stored rows with param solver →
    the report's solver table compares them (both prove the DP optimum)."""
    from deplbench.benchmarks.executors import LocalExecutor
    from deplbench.benchmarks.runner import run_sweep
    from deplbench.benchmarks.store import ResultsStore
    from deplbench.benchmarks.sweep import load_sweep
    from deplbench.reports.data import prepare
    from deplbench.reports.solvers import solver_comparison

    path = tmp_path / "peers.toml"
    path.write_text('''
[sweep]
name = "peers"
time_limit_s = 300
evaluation = { samples = 200, seed = 0 }
[[instances]]
id = "ks"
family = "knapsack"
params = { n_items = 6, item_class = "uncorrelated" }
[[algorithms]]
name = "milp"
params = { scenarios = 50, time_limit = 120.0 }
solvers = ["highs", "pyomo:appsi_highs"]
''')
    sweep = load_sweep(path)
    assert [t.params["solver"] for t in sweep.tasks()] == ["highs", "pyomo:appsi_highs"]
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary = run_sweep(sweep, store, LocalExecutor(workers=1), progress=False)
        frame = store.frame(params=False)
    assert summary.ok == 2, summary
    df = prepare(frame).df
    assert sorted(df["params_d"].map(lambda d: d["solver"])) == ["highs", "pyomo:appsi_highs"]
    costs = df["cost"].to_numpy(float)
    assert _close(costs[0], costs[1], 1e-6)
    t = solver_comparison(df).set_index("solver")
    assert list(t.index) == ["highs", "pyomo:appsi_highs"]
    assert (t["problems"] == 1).all() and (t["solved"] == 1).all()
    assert t.loc["pyomo:appsi_highs", "version"].startswith("pyomo ")


@pytest.mark.slow
def test_packaged_peers_sweep_runs_every_milp_task_once_per_solver():
    from deplbench.benchmarks.sweep import load_sweep

    sweep = load_sweep("peers")
    tasks = sweep.tasks()
    milp_tasks = [t for t in tasks if t.algorithm == "milp"]
    by_problem: dict = {}
    for t in milp_tasks:
        by_problem.setdefault((t.group, json.dumps(t.instance_params, sort_keys=True), t.instance_seed,
                               json.dumps(t.targets, sort_keys=True)), []).append(t.params["solver"])
    assert len(by_problem) == 10
    assert all(v == ["highs", "scip", "pyomo:appsi_highs"] for v in by_problem.values())
    assert all("solver" not in t.params for t in tasks if t.algorithm == "knapsack-dp")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
