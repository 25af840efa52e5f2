"""The MPS instance library (issue 15 item 2): build, .solu, re-solve by HiGHS and SCIP, check.

A tiny library (a knapsack instance, a random scaling instance with a cyclic
switch graph, and the |D| = 10 instance that has no MPS) is built once per
module; every test reads it or a copy of it.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deplbench.benchmarks.library import (
    SOLU,
    SoluError,
    agrees,
    build_library,
    check_library,
    entries,
    read_solu,
    shifted_geomean,
    solve_mps,
)
from deplbench.cli import main
from deplbench.errors import SolverError
from deplbench.instances.model import load_instance
from deplbench.solvers.run import solve

TINY = ["knapsack-uncorrelated-n10", "scaling-any-m2-n2-k8"]
WITH_MPS = TINY
CLI = [sys.executable, "-m", "deplbench"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lib")
    build_library(str(root), only=TINY, time_limit=120.0, overwrite=True)
    return root


def _copy(lib: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(lib, dst)
    return dst


def test_catalog_covers_the_issue_sets():
    names = {e.name for e in entries("small")}
    groups = {e.group for e in entries("full")}
    assert {"realistic-alexnet", "realistic-mobilenet", "knapsack", "scaling", "datasets", "general"} <= groups
    assert set(TINY) <= names
    assert {e.name for e in entries("small")} < {e.name for e in entries("full")}
    assert any(e.params.get("switches") == "any" for e in entries("small"))
    assert any(e.params.get("n_datasets") == 10 for e in entries("small"))
    with pytest.raises(SolverError, match="size"):
        entries("huge")


def test_files_manifest_and_solu_parse(lib):
    manifest = json.loads((lib / "manifest.json").read_text())
    assert [e["name"] for e in manifest["entries"]] == [e.name for e in entries("full") if e.name in TINY]
    solu = read_solu(str(lib / SOLU))
    assert sorted(solu) == sorted(WITH_MPS)
    for name in WITH_MPS:
        assert solu[name].tag == "=opt="
        assert (lib / "mps" / f"{name}.mps").is_file()
    for e in manifest["entries"]:
        inst = load_instance(lib / e["instance"])       # every instance file validates
        assert inst.n_datasets == e["n_datasets"]
    csv_lines = (lib / "library.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + len(TINY) and csv_lines[0].startswith("name,group,n_models")
    assert "| name | group |" in (lib / "library.md").read_text()


def test_instance_without_a_milp_has_json_but_no_mps(tmp_path):
    """|D| = 10 exceeds the MILP's dataset enumeration: instance JSON only, no
    .solu line. (The real-x solve's time limit only affects its table columns.)"""
    name = "datasets-d10-n2-k50"
    build_library(str(tmp_path), only=[name], solve_time_limit=1.0)
    assert load_instance(tmp_path / "instances" / f"{name}.json").n_datasets == 10
    assert not (tmp_path / "mps" / f"{name}.mps").exists()
    assert read_solu(str(tmp_path / SOLU)) == {}
    (e,) = json.loads((tmp_path / "manifest.json").read_text())["entries"]
    assert e["mps"] is None and e["note"].startswith("no MPS") and e["solu_tag"] is None


def test_highs_solves_the_file_it_failed_on_by_retrying(tmp_path):
    """knapsack-weakly-n10: HiGHS 1.16 ends its first run on this MPS in
    'Solve error' (HiGHS #2782: a λ-cut row violated by 1.00001e-6 > 1e-6);
    solve_mps runs it again with tighter row tolerances, so HiGHS itself
    proves the file's optimum, which SCIP confirms independently."""
    name = "knapsack-weakly-n10"
    build_library(str(tmp_path), only=[name], time_limit=600.0)
    (e,) = json.loads((tmp_path / "manifest.json").read_text())["entries"]
    line = read_solu(str(tmp_path / SOLU))[name]
    assert line.tag == "=opt=" and e["mps_status"] == "optimal" and e["solu_solver"] == "highs"
    highs = solve_mps(str(tmp_path / "mps" / f"{name}.mps"), "highs", time_limit=600.0, gap=1e-6)
    assert highs.status == "optimal" and highs.primal == line.value
    assert highs.retries == e["mps_retries"] and ("Solve error" in highs.message) == (highs.retries > 0)
    res = check_library(str(tmp_path), "highs", time_limit=600.0)
    assert res["summary"]["mismatches"] == 0 and res["summary"]["solved"] == 1
    pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    scip = solve_mps(str(tmp_path / "mps" / f"{name}.mps"), "scip", time_limit=600.0, gap=1e-7)
    assert scip.status == "optimal" and scip.primal == pytest.approx(line.value, rel=1e-6)


class _FakeHighs:
    """highspy.Highs stand-in: 'Solve error' on the first ``fails`` runs."""

    def __init__(self, fails):
        import highspy

        self.S = highspy.HighsModelStatus
        self.fails, self.runs, self.options, self.cleared = fails, 0, [], 0

    def setOptionValue(self, key, value):
        self.options.append((self.runs, key, value))

    def clearSolver(self):
        self.cleared += 1

    def run(self):
        self.runs += 1

    def getInfo(self):
        return type("I", (), {"mip_node_count": 3})()

    def getModelStatus(self):
        return self.S.kSolveError if self.runs <= self.fails else self.S.kOptimal


@pytest.mark.parametrize("fails,runs", [(0, 1), (1, 2), (2, 3), (5, 3)])
def test_highs_retries_a_solve_error_with_tighter_tolerances(fails, runs):
    """Each retry starts afresh with the row tolerances ten times tighter;
    at most SOLVE_ERROR_RETRIES retries; the first run keeps HiGHS's defaults."""
    from deplbench.benchmarks.library.mps import _highs_runs

    h = _FakeHighs(fails)
    _, nodes, retries = _highs_runs(h, 600.0, 1e-6)
    assert h.runs == runs and retries == runs - 1 and h.cleared == runs - 1 and nodes == 3 * runs
    feas = {r: v for r, k, v in h.options if k == "mip_feasibility_tolerance"}
    assert 0 not in feas                                      # defaults on the first run
    assert [feas[r] for r in sorted(feas)] == pytest.approx([1e-7, 1e-8][:runs - 1])


def test_mps_names_are_meaningful(lib):
    text = (lib / "mps" / "scaling-any-m2-n2-k8.mps").read_text()
    inst = load_instance(lib / "instances" / "scaling-any-m2-n2-k8.json")
    # N(model, cluster, data class) columns carry the instance's own names.
    for m in inst.models:
        assert f"N_{m.name}_{inst.clusters[0].name}_" in text


@pytest.mark.parametrize("solver", ["highs", "scip"])
@pytest.mark.parametrize("name", WITH_MPS)
def test_mps_resolved_gives_the_solu_value(lib, solver, name):
    v = read_solu(str(lib / SOLU))[name].value
    out = solve_mps(str(lib / "mps" / f"{name}.mps"), solver, time_limit=600.0, gap=1e-7)
    assert out.status == "optimal"
    assert out.primal == pytest.approx(v, rel=1e-6)
    assert out.rows > 0 and out.cols > 0 and out.integers > 0


def test_mps_optimum_is_a_relaxation_of_the_real_x_optimum(lib):
    """The .solu value (first master, initial λ cuts) never exceeds deplbench's
    real-x SAA optimum, and is within the cut grid's 2.5e-5 of it."""
    manifest = json.loads((lib / "manifest.json").read_text())
    for e in manifest["entries"]:
        if not e["mps"]:
            continue
        assert e["deplbench_status"] == "optimal"
        assert e["solu_value"] <= e["deplbench_cost"] * (1 + 1e-9)
        assert e["solu_value"] >= e["deplbench_cost"] * (1 - 1e-4)


def test_knapsack_real_x_optimum_matches_the_dp(lib):
    """Independent ground truth: the covering-knapsack DP (Property 1)."""
    manifest = json.loads((lib / "manifest.json").read_text())
    e = next(e for e in manifest["entries"] if e["name"] == "knapsack-uncorrelated-n10")
    dp = solve(load_instance(lib / e["instance"]), "knapsack-dp", evaluate=False)
    assert dp.status == "optimal"
    assert e["deplbench_cost"] == pytest.approx(dp.cost, rel=1e-4)


def test_mps_files_are_deterministic(lib, tmp_path):
    """Same code, same instance and S: the same bytes (no wall-clock limit while writing)."""
    build_library(str(tmp_path / "again"), only=WITH_MPS)
    for name in WITH_MPS:
        path = f"mps/{name}.mps"
        assert (tmp_path / "again" / path).read_bytes() == (lib / path).read_bytes()


def test_check_agrees_on_the_built_library(lib):
    res = check_library(str(lib), "highs", time_limit=600.0)
    assert [r["agrees"] for r in res["instances"]] == [True, True]
    s = res["summary"]
    assert (s["instances"], s["solved"], s["mismatches"]) == (2, 2, 0)
    assert s["shifted_geomean_s"] >= 0


@pytest.mark.parametrize("factor", [1.01, 0.99])
def test_check_reports_a_tampered_solu_value(lib, tmp_path, factor):
    root = _copy(lib, tmp_path)
    solu = read_solu(str(root / SOLU))
    name = "knapsack-uncorrelated-n10"
    text = (root / SOLU).read_text().replace(repr(solu[name].value), repr(solu[name].value * factor))
    (root / SOLU).write_text(text)
    res = check_library(str(root), "highs", time_limit=600.0, only=[name])
    (row,) = res["instances"]
    assert row["agrees"] is False
    assert res["summary"]["mismatches"] == 1 and res["summary"]["solved"] == 0
    word = "better than" if factor > 1 else "bound"
    assert word in row["reason"]


def test_cli_check_json_both_solvers(lib):
    """A real process: solver output must not reach file descriptor 1."""
    p = subprocess.run([*CLI, "library", "check", str(lib), "--solver", "highs", "--solver", "scip",
                        "--time-limit", "600", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)                           # one JSON object, nothing else on stdout
    assert [s["solver"] for s in obj["summary"]] == ["highs", "scip"]
    assert all(s["solved"] == 2 and s["mismatches"] == 0 for s in obj["summary"])


def test_cli_tampered_value_exit_status_1(lib, tmp_path, capfd):
    root = _copy(lib, tmp_path)
    v = read_solu(str(root / SOLU))["scaling-any-m2-n2-k8"].value
    (root / SOLU).write_text((root / SOLU).read_text().replace(repr(v), repr(v * 1.5)))
    assert main(["library", "check", str(root), "--time-limit", "600"]) == 1
    assert "mismatch: scaling-any-m2-n2-k8" in capfd.readouterr().out


def test_cli_bad_input_is_one_line(tmp_path, capfd):
    assert main(["library", "check", str(tmp_path / "nope")]) == 2
    err = capfd.readouterr().err.strip()
    assert err.startswith("error: library: no directory") and len(err.splitlines()) == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert main(["library", "build", "--out", str(tmp_path / "full")]) == 2
    err = capfd.readouterr().err
    assert "out: directory" in err and "not empty" in err
    (tmp_path / "bad.solu").write_text("=opt= a x\n")
    (tmp_path / "full" / "manifest.json").write_text('{"entries": []}')
    shutil.copy(tmp_path / "bad.solu", tmp_path / "full" / SOLU)
    assert main(["library", "check", str(tmp_path / "full")]) == 2
    assert "line 1: value 'x' is not a number" in capfd.readouterr().err


def test_read_solu_rejects_bad_lines(tmp_path):
    f = tmp_path / "x.solu"
    f.write_text("# comment\n=opt= a 1.5\n=inf= b\n=best= c 2\n=unkn= d\n")
    got = read_solu(str(f))
    assert (got["a"].value, got["b"].value, got["c"].tag, got["d"].tag) == (1.5, None, "=best=", "=unkn=")
    for bad, what in [("=opt= a x\n", "not a number"), ("=opt a 1\n", "unknown tag"),
                      ("=opt= a 1\n=opt= a 2\n", "twice"), ("=opt= a\n", "exactly"),
                      ("=opt= a nan\n", "not finite")]:
        f.write_text(bad)
        with pytest.raises(SoluError, match=what):
            read_solu(str(f))


def test_agreement_rule():
    from deplbench.benchmarks.library.solu import SoluEntry

    opt = SoluEntry("=opt=", "a", 100.0)
    assert agrees(opt, "optimal", 100.0, 100.0)[0] is True
    assert agrees(opt, "optimal", 99.0, 99.0)[0] is False          # solver found better
    assert agrees(opt, "time_limit", 105.0, 101.0)[0] is False     # bound proves more
    assert agrees(opt, "time_limit", 105.0, 90.0)[0] is True       # consistent, unfinished
    assert agrees(opt, "infeasible", None, None)[0] is False
    inf = SoluEntry("=inf=", "b")
    assert agrees(inf, "infeasible", None, None)[0] is True
    assert agrees(inf, "time_limit", 3.0, 1.0)[0] is False
    best = SoluEntry("=best=", "c", 50.0)
    assert agrees(best, "optimal", 40.0, 40.0)[0] is True          # =best= may be improved on


def test_shifted_geometric_mean():
    assert shifted_geomean([0.0, 0.0]) == pytest.approx(0.0, abs=1e-12)
    assert shifted_geomean([10.0, 30.0]) == pytest.approx(math.sqrt(20 * 40) - 10)
    assert shifted_geomean([5.0]) == pytest.approx(5.0)
    assert math.isnan(shifted_geomean([]))
