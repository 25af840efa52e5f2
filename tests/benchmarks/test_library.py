"""The instance library: full SAA models (MINLP, PWL MILP), .solu files, check, verify, true optima.

A tiny library (a knapsack instance and a random scaling instance with a
cyclic switch graph) is built once per module; every test reads it or a
copy of it. The |D| = 10 instance (no model file) is built on its own.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deplbench.benchmarks.library import (
    SOLU,
    SoluError,
    agrees,
    build_library,
    check_library,
    entries,
    read_sol,
    read_solu,
    shifted_geomean,
    solve_mps,
    verify_solution,
)
from deplbench.benchmarks.library.build import KINDS, TRUTH, difficulty
from deplbench.cli import main
from deplbench.errors import SolverError
from deplbench.formulations.milp.saa_model import PWL_TOLERANCE, pwl_ratio
from deplbench.instances.model import load_instance
from deplbench.solvers.run import solve

#: End to end as a whole (builds a library, re-solves MPS files with HiGHS and SCIP): `make test-fast` leaves it out.
pytestmark = pytest.mark.integration

TINY = ["knapsack-uncorrelated-n10", "scaling-any-m2-n2-k8"]
WITH_MODEL = TINY
CLI = [sys.executable, "-m", "deplbench"]
#: Light certify settings for the true-optimum brackets of the tiny library.
CERTIFY = {"replications": 4, "validation": 2000}


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lib")
    build_library(str(root), only=TINY, time_limit=120.0, overwrite=True, certify_settings=CERTIFY)
    return root


def _copy(lib: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(lib, dst)
    return dst


def _manifest(lib: Path) -> dict:
    return json.loads((lib / "manifest.json").read_text())


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
    manifest = _manifest(lib)
    assert [e["name"] for e in manifest["entries"]] == [e.name for e in entries("full") if e.name in TINY]
    for folder, suffixes, solu_name in KINDS.values():
        solu = read_solu(str(lib / solu_name))
        assert sorted(solu) == sorted(WITH_MODEL)
        for name in WITH_MODEL:
            assert solu[name].tag == "=opt="
            for suffix in suffixes:
                with gzip.open(lib / folder / f"{name}{suffix}") as fh:   # compressed, readable
                    assert fh.read(64)
    assert SOLU == "pwl.solu"
    for e in manifest["entries"]:
        inst = load_instance(lib / e["instance"])       # every instance file validates
        assert inst.n_datasets == e["n_datasets"]
        assert e["pwl_difficulty"] == "easy" and e["minlp_difficulty"] == "easy"
    csv_lines = (lib / "library.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + len(TINY) and csv_lines[0].startswith("name,group,n_models")
    assert "| name | group |" in (lib / "library.md").read_text()


def test_difficulty_tags_follow_miplib():
    assert difficulty(5.0, True, 60.0) == "easy"
    assert difficulty(4000.0, True, 7200.0) == "hard"       # solved, but after an hour
    assert difficulty(None, False, 60.0) == "open"
    assert difficulty(61.0, True, 60.0) == "open"           # not within the build's limit


def test_instance_without_a_model_has_json_but_no_files(tmp_path):
    """|D| = 10 exceeds the matrix models' dataset enumeration: instance JSON
    only, no .solu line, and one progress line saying why (the real-x
    solve's time limit only affects its table columns)."""
    name = "datasets-d10-n2-k50"
    lines = []
    build_library(str(tmp_path), only=[name], solve_time_limit=1.0, progress=lines.append)
    assert load_instance(tmp_path / "instances" / f"{name}.json").n_datasets == 10
    assert not list((tmp_path / "pwl").iterdir()) and not list((tmp_path / "minlp").iterdir())
    for _, _, solu_name in KINDS.values():
        assert read_solu(str(tmp_path / solu_name)) == {}
    (e,) = json.loads((tmp_path / "manifest.json").read_text())["entries"]
    assert e["pwl"] is None and e["minlp"] is None and e["note"].startswith("no model file: |D| = 10")
    assert lines[0] == f"[1/1] {name}: building"
    assert "no model file: |D| = 10 datasets exceed" in lines[1] and "None None" not in lines[1]
    assert e["true_optimum"]["status"] == "skipped" and "deplbench certify" in e["true_optimum"]["note"]
    assert "skipped" in (tmp_path / TRUTH).read_text()


def test_pwl_tolerance_bound_is_tight_and_valid():
    """Independent check of the proof in saa_model: over rays between two
    grid points the best tangent of a·N²/t is within ε = ((q−1)/(q+1))² of
    it, never above it, and the worst ray comes within 1 % of ε."""
    q = pwl_ratio(PWL_TOLERANCE)
    assert ((q - 1) / (q + 1)) ** 2 == pytest.approx(PWL_TOLERANCE, rel=1e-12)
    rng = np.random.default_rng(0)
    a, lo, hi = 3.7, 0.02, 50.0
    n = math.ceil(math.log(hi / lo) / math.log(q)) + 1
    rho = hi * q ** -np.arange(n)
    N = rng.integers(1, 40, 20000).astype(float)
    t = N / rng.uniform(lo, hi, N.size)
    f = a * N ** 2 / t
    best = np.max(a * (2 * rho[None, :] * N[:, None] - rho[None, :] ** 2 * t[:, None]), axis=1)
    assert np.all(best <= f * (1 + 1e-12))
    rel = (f - best) / f
    assert rel.max() <= PWL_TOLERANCE * (1 + 1e-9)
    assert rel.max() >= 0.99 * PWL_TOLERANCE


def test_pwl_and_minlp_optima_bracket_the_real_x_saa_optimum(lib):
    """pwl.solu ≤ SAA optimum ≤ pwl.solu / (1 − ε); the MINLP's .solu is
    deplbench's real-x SAA optimum; on the knapsack it is the DP's optimum."""
    for e in _manifest(lib)["entries"]:
        assert e["deplbench_status"] == "optimal"
        assert e["pwl_value"] <= e["deplbench_cost"] * (1 + 1e-9)
        assert e["pwl_value"] >= (1 - PWL_TOLERANCE) * e["deplbench_lower"] * (1 - 1e-9)
        assert e["minlp_value"] == e["deplbench_cost"]
    e = next(e for e in _manifest(lib)["entries"] if e["name"] == "knapsack-uncorrelated-n10")
    dp = solve(load_instance(lib / e["instance"]), "knapsack-dp", evaluate=False)
    assert dp.status == "optimal" and e["minlp_value"] == pytest.approx(dp.cost, rel=1e-6)


@pytest.mark.parametrize("name", WITH_MODEL)
def test_scip_solves_the_minlp_file_to_its_solu_value(lib, name):
    """SCIP reads the exact MINLP (.nl, cones kept) and proves the real-x SAA optimum."""
    pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    v = read_solu(str(lib / "minlp.solu"))[name].value
    out = solve_mps(str(lib / "minlp" / f"{name}.nl.gz"), "scip", time_limit=600.0, gap=1e-8)
    assert out.status == "optimal" and out.primal == pytest.approx(v, rel=1e-6)


@pytest.mark.parametrize("solver", ["highs", "scip"])
@pytest.mark.parametrize("name", WITH_MODEL)
def test_pwl_file_resolved_gives_the_solu_value(lib, solver, name):
    if solver == "scip":
        pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    v = read_solu(str(lib / "pwl.solu"))[name].value
    out = solve_mps(str(lib / "pwl" / f"{name}.mps.gz"), solver, time_limit=600.0, gap=1e-7)
    assert out.status == "optimal"
    assert out.primal == pytest.approx(v, rel=1e-6)
    assert out.rows > 0 and out.cols > 0 and out.integers > 0


def test_true_optimum_table_values_lie_in_their_brackets(lib):
    """Each row: lower ≤ value ≤ upper at its stated confidence; on the
    deterministic knapsack the bracket is exact and equals the SAA optimum
    (one scenario is the distribution), which the DP confirms."""
    import csv

    rows = {r["name"]: r for r in csv.DictReader((lib / TRUTH).open())}
    assert sorted(rows) == sorted(TINY)
    for e in _manifest(lib)["entries"]:
        t = e["true_optimum"]
        assert t["lower"] <= t["value"] * (1 + 1e-9) and t["value"] <= t["upper"] * (1 + 1e-9)
        assert 0 < t["confidence"] <= 1 and t["method"] in ("exact", "certified")
        assert float(rows[e["name"]]["lower"]) == t["lower"]
    knap = next(e for e in _manifest(lib)["entries"] if e["name"] == "knapsack-uncorrelated-n10")
    t = knap["true_optimum"]
    assert t["method"] == "exact" and t["confidence"] == 1.0
    assert t["value"] == pytest.approx(knap["deplbench_cost"], rel=1e-6)
    assert t["lower"] == pytest.approx(t["upper"], rel=1e-6)
    rand = next(e for e in _manifest(lib)["entries"] if e["name"] == "scaling-any-m2-n2-k8")["true_optimum"]
    assert rand["settings"]["replications"] == CERTIFY["replications"] or rand["settings"]["algorithm"] != "certify"


def test_model_files_are_deterministic(lib, tmp_path):
    """Same code, same instance and S: the same bytes (no wall-clock limit, gzip without a time stamp)."""
    build_library(str(tmp_path / "again"), only=WITH_MODEL, true_optimum=False)
    for name in WITH_MODEL:
        for folder, suffixes, _ in KINDS.values():
            for suffix in suffixes:
                path = f"{folder}/{name}{suffix}"
                assert (tmp_path / "again" / path).read_bytes() == (lib / path).read_bytes(), path


def test_model_names_are_meaningful(lib):
    with gzip.open(lib / "pwl" / "scaling-any-m2-n2-k8.mps.gz", "rt") as fh:
        text = fh.read()
    inst = load_instance(lib / "instances" / "scaling-any-m2-n2-k8.json")
    for m in inst.models:
        assert f"N_{m.name}_{inst.clusters[0].name}_" in text
    assert "tangent_" in text and "speed_" in text and "compute_cost" in text
    assert "cone_" in (lib / "minlp" / "scaling-any-m2-n2-k8.row").read_text()


# ------------------------------------------------------------------ verify
def _highs_sol(lib: Path, name: str, path: Path) -> Path:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(lib / "pwl" / f"{name}.mps.gz"))
    h.run()
    h.writeSolution(str(path), 0)
    return path


@pytest.mark.parametrize("name", WITH_MODEL)
def test_verify_accepts_the_reference_solution(lib, tmp_path, name):
    sol = _highs_sol(lib, name, tmp_path / "ref.sol")
    res = verify_solution(str(lib), name, str(sol), "pwl", samples=500)
    assert res["feasible"] and res["violations"] == []
    assert res["gap"] == pytest.approx(0.0, abs=1e-9)
    plan = res["plan"]
    assert plan["decoded"] and plan["in_sample_violations"] <= plan["allowed_violations"]
    # the plan's exact real-x cost is the SAA optimum (the PWL optimum's plan is optimal here)
    e = next(e for e in _manifest(lib)["entries"] if e["name"] == name)
    assert plan["exact_cost"] == pytest.approx(e["deplbench_cost"], rel=PWL_TOLERANCE)
    assert plan["out_of_sample"]["verdict"] in ("feasible", "infeasible")


def test_verify_accepts_scips_minlp_solution(lib, tmp_path):
    """SCIP's own .sol on the decompressed .nl (names from the .col file)."""
    pyscipopt = pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    name = "scaling-any-m2-n2-k8"
    nl = tmp_path / f"{name}.nl"
    with gzip.open(lib / "minlp" / f"{name}.nl.gz") as fh:
        nl.write_bytes(fh.read())
    for ext in (".col", ".row"):
        shutil.copy(lib / "minlp" / f"{name}{ext}", tmp_path / f"{name}{ext}")
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(str(nl))
    m.optimize()
    m.writeBestSol(str(tmp_path / "scip.sol"))
    assert read_sol(str(tmp_path / "scip.sol"))            # names, not indices
    res = verify_solution(str(lib), name, str(tmp_path / "scip.sol"), "minlp", samples=500)
    assert res["feasible"] and abs(res["gap"]) < 1e-6


def test_verify_rejects_a_perturbed_solution_naming_the_row(lib, tmp_path):
    name = "scaling-any-m2-n2-k8"
    ref = read_sol(str(_highs_sol(lib, name, tmp_path / "ref.sol")))
    # one more epoch of a configuration: the time budget or a flow row breaks
    key = next(k for k, v in ref.items() if k.startswith("N_") and v >= 1)
    bad = dict(ref, **{key: ref[key] + 1})
    (tmp_path / "bad.sol").write_text("".join(f"{k} {v!r}\n" for k, v in bad.items()))
    res = verify_solution(str(lib), name, str(tmp_path / "bad.sol"), "pwl", samples=500)
    assert not res["feasible"] and res["n_violations"] >= 1
    assert all(v.startswith(("row ", "bound", "integrality")) for v in res["violations"])
    assert "plan" not in res
    # a compute cost below the cone: the MINLP names that cone row, the PWL a tangent row
    cc = next(k for k, v in ref.items() if k.startswith("cc_") and v > 1)
    low = dict(ref, **{cc: ref[cc] * 0.9})
    (tmp_path / "low.sol").write_text("".join(f"{k} {v!r}\n" for k, v in low.items()))
    lab = cc[3:]
    res = verify_solution(str(lib), name, str(tmp_path / "low.sol"), "minlp", samples=500)
    assert res["violations"] == [m for m in res["violations"] if m.startswith(f"row cone_{lab}")] != []
    res = verify_solution(str(lib), name, str(tmp_path / "low.sol"), "pwl", samples=500)
    assert res["violations"] and all(m.startswith(f"row tangent_{lab}_") for m in res["violations"])
    # fractional integer column
    frac = dict(ref, **{key: ref[key] + 0.5})
    (tmp_path / "frac.sol").write_text("".join(f"{k} {v!r}\n" for k, v in frac.items()))
    res = verify_solution(str(lib), name, str(tmp_path / "frac.sol"), "pwl", samples=500)
    assert any(m == f"integrality: {key} = {ref[key] + 0.5!r} is not integer" for m in res["violations"])


def test_verify_cli_exit_status_and_errors(lib, tmp_path, capfd):
    name = "knapsack-uncorrelated-n10"
    sol = _highs_sol(lib, name, tmp_path / "ref.sol")
    assert main(["library", "verify", str(lib), name, str(sol), "--samples", "500"]) == 0
    out = capfd.readouterr().out
    assert "feasible: yes" in out and ".solu: =opt=" in out
    (tmp_path / "bad.sol").write_text("N_nope 1\n")
    assert main(["library", "verify", str(lib), name, str(tmp_path / "bad.sol")]) == 2
    assert "not in the pwl model" in capfd.readouterr().err
    assert main(["library", "verify", str(lib), "nope", str(sol)]) == 2
    assert "name: 'nope' is not an instance" in capfd.readouterr().err
    (tmp_path / "empty.sol").write_text("# nothing here\n\n")     # read as all zeros, it would be judged
    assert main(["library", "verify", str(lib), name, str(tmp_path / "empty.sol")]) == 2
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"error: solution: {tmp_path / 'empty.sol'}: the file holds no"), captured.err
    ref = read_sol(str(sol))
    (tmp_path / "neg.sol").write_text("".join(f"{k} {-1.0 if k.startswith('t_') else v!r}\n"
                                              for k, v in ref.items()))
    assert main(["library", "verify", str(lib), name, str(tmp_path / "neg.sol")]) == 1
    assert "bound: t_" in capfd.readouterr().out


def test_verify_names_an_edited_instance_file(lib, tmp_path, capfd):
    """An instance edited after the build is named as such (its SHA-256 against the manifest's), not
    blamed on another code version."""
    import shutil

    name = "knapsack-uncorrelated-n10"
    sol = _highs_sol(lib, name, tmp_path / "ref.sol")
    copy = tmp_path / "lib"
    shutil.copytree(lib, copy)
    path = copy / "instances" / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["omega"] = 0.5
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["library", "verify", str(copy), name, str(sol), "--samples", "500"]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and f"instances/{name}.json of {name!r} is not the file the library was built " \
        "with" in err and "another code version" not in err, err


def test_read_sol_formats(tmp_path):
    f = tmp_path / "a.sol"
    f.write_text("solution status: optimal\nobjective value: 3\nx 1 \t(obj:1)\ny 2\n")
    assert read_sol(str(f)) == {"x": 1.0, "y": 2.0}
    f.write_text("=obj= 3\nx 1\n")
    assert read_sol(str(f)) == {"x": 1.0}
    f.write_text("Model status\nOptimal\n\n# Primal solution values\nFeasible\nObjective 3\n# Columns 2\n"
                 "x 1\ny 0\n# Rows 1\nr 1\n# Dual solution values\n")
    assert read_sol(str(f)) == {"x": 1.0, "y": 0.0}
    f.write_text("x one\n")
    with pytest.raises(SolverError, match="line 1: value 'one'"):
        read_sol(str(f))
    f.write_text("x 1\nx 2\n")
    with pytest.raises(SolverError, match="given twice"):
        read_sol(str(f))
    # SCIP lists no variable of an all-zero solution: its objective header makes it one
    f.write_text("solution status: optimal\nobjective value: 0\n")
    assert read_sol(str(f)) == {}
    # nothing a solver wrote is read as "every variable 0"
    for text, what in [("", "is empty"), (" \n\t\n", "holds only blank lines"),
                       ("# a comment\n\n  # another\n", "holds no `name value` line and no objective"),
                       ("solution status: optimal\n", "holds no `name value` line and no objective")]:
        f.write_text(text)
        with pytest.raises(SolverError) as exc:
            read_sol(str(f))
        assert str(exc.value).startswith(f"solution: {f}: the file {what}"), (text, exc.value)


def test_read_sol_refuses_a_line_that_is_not_name_value(tmp_path):
    """A name without its value is refused with its line: skipping it would judge a file of names
    alone as the all-zero solution (exit status 1, variables_given 0)."""
    f = tmp_path / "a.sol"
    f.write_text("objective value: 3\nx 1\ny\nz 2\n")
    with pytest.raises(SolverError) as exc:
        read_sol(str(f))
    assert str(exc.value) == f"solution: {f}, line 3: 'y' is not a `name value` line (a name without a value?)"
    f.write_bytes(b"x 1\nu_k1\x1b[31m_m0\n")                 # the text escaped, never echoed raw
    with pytest.raises(SolverError, match=r"line 2: 'u_k1\\x1b\[31m_m0' is not") as exc:
        read_sol(str(f))
    assert "\x1b" not in str(exc.value)


@pytest.mark.parametrize("text", ["objective value: 364.97\n", "=obj= 3\n", "solution status: optimal\n"
                                  "objective value: 1e3\n"])
def test_read_sol_refuses_a_nonzero_objective_without_values(tmp_path, text):
    """Only an objective of 0 (SCIP's all-zero solution) stands for "every variable 0"."""
    f = tmp_path / "a.sol"
    f.write_text(text)
    with pytest.raises(SolverError, match="the file holds no `name value` line, and its objective header is not 0"):
        read_sol(str(f))
    f.write_text("objective value: 0\n")
    assert read_sol(str(f)) == {}


def test_unknown_solution_names_are_escaped():
    from types import SimpleNamespace

    from deplbench.benchmarks.library.verify import _vector

    model = SimpleNamespace(col_names=["x", "y"])
    with pytest.raises(SolverError) as exc:
        _vector(model, "pwl", {"x": 1.0, "u_k1\x1b[31m_m0": 1.0})
    assert "'u_k1\\x1b[31m_m0'" in str(exc.value) and "\x1b" not in str(exc.value)


# ------------------------------------------------------------------- check
def test_pwl_file_solved_by_highs_and_scip_agree(tmp_path):
    """knapsack-weakly-n10 (HiGHS #2782 on a first-master file): the
    PWL file's optimum is proven by HiGHS (after at most the tolerance
    retries of solve_mps) and confirmed independently by SCIP."""
    name = "knapsack-weakly-n10"
    build_library(str(tmp_path), only=[name], time_limit=600.0, true_optimum=False)
    (e,) = json.loads((tmp_path / "manifest.json").read_text())["entries"]
    line = read_solu(str(tmp_path / "pwl.solu"))[name]
    assert line.tag == "=opt=" and e["pwl_status"] == "optimal" and e["pwl_solver"] == "highs"
    res = check_library(str(tmp_path), "highs", time_limit=600.0)
    assert res["summary"]["mismatches"] == 0 and res["summary"]["solved"] == 1
    pytest.importorskip("pyscipopt", reason="SCIP is the optional [peers] extra")
    scip = solve_mps(str(tmp_path / "pwl" / f"{name}.mps.gz"), "scip", time_limit=600.0, gap=1e-7)
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


def test_check_agrees_on_the_built_library(lib):
    res = check_library(str(lib), "highs", time_limit=600.0)
    assert [r["agrees"] for r in res["instances"]] == [True, True]
    s = res["summary"]
    assert (s["instances"], s["solved"], s["mismatches"], s["model"]) == (2, 2, 0, "pwl")
    assert s["shifted_geomean_s"] >= 0
    # HiGHS reads no nonlinear file: skipped with the reason, not a failure
    res = check_library(str(lib), "highs", time_limit=600.0, kind="minlp")
    s = res["summary"]
    assert (s["instances"], s["solved"], s["skipped"], s["mismatches"]) == (0, 0, 2, 0)
    assert "no nonlinear" in s["skip_reason"] and math.isnan(s["shifted_geomean_s"])


def test_check_runs_a_pyomo_solver_on_the_pwl_model(lib):
    """pyomo:appsi_highs is given the PWL MILP (rebuilt, fingerprint checked)
    and agrees with pwl.solu; it solves no cone rows, so the MINLP is skipped."""
    res = check_library(str(lib), "pyomo:appsi_highs", time_limit=600.0)
    s = res["summary"]
    assert (s["instances"], s["solved"], s["mismatches"]) == (2, 2, 0)
    assert s["version"].startswith("pyomo ")
    res = check_library(str(lib), "pyomo:appsi_highs", time_limit=600.0, kind="minlp")
    assert res["summary"]["skipped"] == 2 and "no quadratic" in res["summary"]["skip_reason"]
    res = check_library(str(lib), "pyomo:nosuchsolver", time_limit=600.0)
    assert res["summary"]["skipped"] == 2 and "does not know" in res["summary"]["skip_reason"]


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
    got = [(s["solver"], s["model"], s["solved"], s["skipped"]) for s in obj["summary"]]
    assert got == [("highs", "pwl", 2, 0), ("scip", "pwl", 2, 0), ("highs", "minlp", 0, 2), ("scip", "minlp", 2, 0)]
    assert all(s["mismatches"] == 0 for s in obj["summary"])


def test_cli_tampered_value_exit_status_1(lib, tmp_path, capfd):
    root = _copy(lib, tmp_path)
    v = read_solu(str(root / SOLU))["scaling-any-m2-n2-k8"].value
    (root / SOLU).write_text((root / SOLU).read_text().replace(repr(v), repr(v * 1.5)))
    assert main(["library", "check", str(root), "--time-limit", "600"]) == 1
    assert "mismatch: scaling-any-m2-n2-k8" in capfd.readouterr().out


def _stub_manifest() -> str:
    """A manifest of the current version with one entry that has no model file."""
    from deplbench.benchmarks.library import LIBRARY_VERSION

    return json.dumps({"library_version": LIBRARY_VERSION, "entries": [
        {"name": "a", "instance": "instances/a.json", "pwl": None, "minlp": None}]})


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
    (tmp_path / "full" / "manifest.json").write_text(_stub_manifest())
    for _, _, solu_name in KINDS.values():
        shutil.copy(tmp_path / "bad.solu", tmp_path / "full" / solu_name)
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


# ---------------------------------------------- every instance of the small library
@pytest.mark.slow
@pytest.mark.parametrize("entry", entries("small"), ids=lambda e: e.name)
def test_small_library_pwl_optimum_within_tolerance_of_the_saa_optimum(entry, tmp_path):
    """For every instance of the small library: HiGHS on the PWL file (read
    from disk) gives z_pwl with z_pwl ≤ z* and z_pwl ≥ (1 − ε) z*, z* the
    real-x SAA optimum that deplbench's exact solver brackets within 1e-6;
    the instance no matrix model covers says so."""
    from deplbench.formulations.milp import solve_milp
    from deplbench.formulations.milp.saa_model import (
        NoSaaModel,
        build_saa_model,
        write_pwl_mps,
    )
    from deplbench.instances.generators import generate

    inst = generate(entry.family, **entry.params)
    inst = inst.with_changes(**entry.targets) if entry.targets else inst
    if entry.formulation is None:
        with pytest.raises(NoSaaModel, match="datasets exceed"):
            build_saa_model(inst, entry.scenarios, 0)
        return
    model = build_saa_model(inst, entry.scenarios, 0, entry.formulation)
    write_pwl_mps(model, str(tmp_path / "m.mps.gz"))
    pwl = solve_mps(str(tmp_path / "m.mps.gz"), "highs", time_limit=600.0, gap=1e-7)
    real = solve_milp(inst, scenarios=entry.scenarios, seed=0, time_limit=600.0, gap=1e-6)
    assert pwl.status == "optimal" and real.status == "optimal"
    assert pwl.primal <= real.cost * (1 + 1e-7)
    assert pwl.primal >= (1 - PWL_TOLERANCE) * real.lower_bound * (1 - 1e-7)


def test_true_optimum_prefers_milp_exact_where_it_applies(monkeypatch):
    """With an exact solver registered (a stand-in here), a bracket comes
    from it, confidence 1; where it declines, certify brackets at 0.95."""
    from deplbench.benchmarks.library import truth
    from deplbench.formulations.model.result import SolveResult
    from deplbench.instances.generators import generate
    from deplbench.solvers.base import Solver

    class FakeExact(Solver):
        name = "milp-exact"
        parameters = {}

        @classmethod
        def applies(cls, instance):
            return (instance.name.startswith("knapsack"), "not a knapsack instance")

        def run(self, instance, **params):
            return SolveResult(algorithm="milp-exact", status="optimal", cost=10.0, lower_bound=9.5)

    monkeypatch.setattr(truth, "_exact_solver", lambda: FakeExact)
    one = generate("knapsack", n_items=4, seed=0, horizon=4)
    row = truth.true_optimum(one, "k", 1, 60.0)
    assert (row["method"], row["lower"], row["upper"], row["confidence"]) == ("exact", 9.5, 10.0, 1.0)
    many = generate("scaling", n_models=2, n_clusters=1, horizon=4, seed=0)
    row = truth.true_optimum(many, "s", 20, 60.0, settings={"replications": 6, "validation": 500})
    assert row["method"] == "certified" and row["confidence"] == 0.95
    assert row["note"].startswith("not a knapsack instance")
    assert row["lower"] <= row["value"] <= row["upper"]


@pytest.mark.integration
@pytest.mark.slow
def test_library_build_prints_no_highs_banner(tmp_path):
    # docs/usage.md: HiGHS's banner is printed only when a solver log is asked
    # for. A process of its own: highspy prints it once, at the first Highs().
    out = tmp_path / "lib"
    p = subprocess.run([sys.executable, "-m", "deplbench", "library", "build", "--out", str(out),
                        "--only", "knapsack-uncorrelated-n10", "--quiet"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "HiGHS" not in p.stderr and "HiGHS" not in p.stdout, p.stderr
    assert p.stdout.startswith("wrote 1 instances")
    assert (out / "pwl.solu").is_file()


def test_verify_prints_an_end_too_few_draws_fix_as_infinite():
    # an order-statistic end beyond the draws is infinite; in JSON it is null
    from deplbench.benchmarks.library.verify import _monte_carlo_line

    for end in (None, float("inf")):
        line = _monte_carlo_line({"quantile_ci": [0.2867, end], "quantile_ci_level": 0.9816, "confidence": 0.95,
                                  "ci_method": "one-sided lower bound", "samples": 100, "quantile": 0.29,
                                  "mc_verdict": "undecided", "mc_certified_verdict": "not certified"})
        assert "CI [0.2867, +∞) at level 0.9816" in line and "None" not in line and "inf]" not in line


def test_verify_and_the_cli_statements_print_an_interval_alike():
    # one helper (jsonio.interval_text): an infinite end as ±∞, also when a strict JSON file holds null
    from deplbench.benchmarks.library.verify import _monte_carlo_line
    from deplbench.cli.statements import evaluation_statements
    from deplbench.jsonio import interval_text

    for ci in ([0.2867, float("inf")], [0.2867, None], [float("-inf"), 0.5], [None, 0.5], [0.25, 0.5]):
        ev = {"quantile_ci": ci, "quantile_ci_level": 0.9816, "confidence": 0.95, "omega": 0.99, "loss_max": 0.3,
              "ci_method": "order-statistic", "samples": 100, "seed": 0, "quantile": 0.29, "exact": False,
              "mc_verdict": "undecided", "mc_certified_verdict": "not certified", "verdict": "undecided"}
        text = interval_text(*ci)
        assert "inf" not in text and "None" not in text
        assert f"CI {text} at level" in _monte_carlo_line(ev)
        assert dict(evaluation_statements(ev))["interval"].startswith(f"{text} at level 0.9816")


def test_cli_check_that_skips_every_solve_fails_with_one_line(lib, capfd):
    """HiGHS reads no MINLP file, so every solve is skipped; nothing checked is no success for a
    CI job: exit 1 and one line saying why, and no "skipped None" progress lines."""
    assert main(["library", "check", str(lib), "--model", "minlp"]) == 1
    out, err = capfd.readouterr()
    assert "skipped (HiGHS solves no nonlinear" in out
    assert "None" not in err, err
    (last,) = [line for line in err.splitlines() if line.startswith("nothing checked")]
    assert last == ("nothing checked: no solve was compared with a .solu value (of 2: 2 skipped (highs on minlp: "
                    "HiGHS solves no nonlinear (cone) rows: run it on the PWL MILP))")
    assert main(["library", "check", str(lib), "--model", "minlp", "--json"]) == 1
    out, err = capfd.readouterr()
    assert json.loads(out)["nothing_checked"] == last and err.count("nothing checked") == 1
    # one solve compared is a check: the skipped MINLP beside it does not fail it
    assert main(["library", "check", str(lib), "--only", "knapsack-uncorrelated-n10", "--time-limit", "600"]) == 0
    assert "nothing checked" not in capfd.readouterr().err


def test_cli_check_of_a_library_without_model_files_fails(tmp_path, capfd):
    (tmp_path / "manifest.json").write_text(_stub_manifest())       # one entry, no model file
    for _, _, solu_name in KINDS.values():
        (tmp_path / solu_name).write_text("")
    assert main(["library", "check", str(tmp_path)]) == 1
    out, err = capfd.readouterr()
    assert err.strip() == ("nothing checked: no instance of the library has a model file of the kinds asked for "
                           "(minlp.solu, pwl.solu list none)"), err


def test_check_help_documents_the_exit_status_of_an_empty_check(capsys):
    with pytest.raises(SystemExit):
        main(["library", "check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status 1 on any mismatch, and when nothing was checked" in text



# ------------------------------------------- one entry, no true optimum: seconds to build
ONE = "scaling-any-m2-n2-k8"


@pytest.fixture(scope="module")
def one_lib(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("one")
    build_library(str(root), only=[ONE], time_limit=30.0, overwrite=True, true_optimum=False)
    return root


def test_check_reports_a_missing_model_file_as_missing(one_lib, tmp_path):
    """A listed model file that is missing is reported as missing, not solved, in well under the
    time limit: no solver runs, so it is no "highs error" at the limit."""
    root = _copy(one_lib, tmp_path)
    (root / "pwl" / f"{ONE}.mps.gz").unlink()
    lines: list[str] = []
    res = check_library(str(root), time_limit=5.0, kind="pwl", progress=lines.append)
    (row,) = res["instances"]
    assert row["status"] == "missing" and row["agrees"] is False and row["seconds"] < 1.0
    assert row["reason"] == f"listed in pwl.solu but its pwl file pwl/{ONE}.mps.gz is missing"
    assert lines == [f"{ONE} (pwl): MISSING, not solved ({row['reason']})"]
    s = res["summary"]
    assert s["missing"] == 1 and s["mismatches"] == 1 and s["errors"] == 0 and math.isnan(s["shifted_geomean_s"])


@pytest.mark.parametrize("change, message", [
    ({"entries": []}, "manifest.json: entries: the manifest lists no entries"),
    ({"library_version": "99"}, "manifest.json: library_version: '99' is not a library version this deplbench "
                                "reads (known: '2')"),
    ({"library_version": None}, "manifest.json: library_version: None is not a library version"),
])
def test_check_refuses_an_empty_or_unknown_manifest_exit_2(one_lib, tmp_path, capsys, change, message):
    """A manifest listing no entries, or with a library_version this deplbench does not read, is
    refused with exit status 2 and one line naming the field, before any instance is checked."""
    root = _copy(one_lib, tmp_path)
    data = _manifest(root)
    data.update(change)
    (root / "manifest.json").write_text(json.dumps(data))
    assert main(["library", "check", str(root), "--model", "pwl", "--time-limit", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err, captured.err


def test_check_names_a_solu_line_the_manifest_does_not_list(one_lib, tmp_path):
    root = _copy(one_lib, tmp_path)
    data = _manifest(root)
    data["entries"][0]["name"] = "other"
    (root / "manifest.json").write_text(json.dumps(data))
    (row,) = check_library(str(root), time_limit=5.0, kind="pwl")["instances"]
    assert row["status"] == "missing" and row["reason"] == "listed in pwl.solu but not among the entries of " \
        "manifest.json"


def test_build_quiet_prints_no_progress_and_force_removes_a_stale_truth_table(one_lib, tmp_path, capfd):
    """--quiet prints no [1/1] lines; --force --no-true-optimum removes an earlier true_optimum.csv,
    as the manifest says "true_optimum": null."""
    root = _copy(one_lib, tmp_path)
    (root / TRUTH).write_text("name,lower,upper\nstale,1,2\n")
    assert main(["library", "build", "--out", str(root), "--only", ONE, "--time-limit", "30", "--force",
                 "--no-true-optimum", "--quiet"]) == 0
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out.startswith("wrote 1 instances"), captured.err
    assert not (root / TRUTH).exists() and _manifest(root)["true_optimum"] is None


def test_force_keeps_a_file_an_edited_manifest_spells_otherwise(one_lib, tmp_path):
    """A hand-edited manifest naming this build's own file as instances/./A.json is the same file:
    it is compared in one spelling and never removed."""
    root = _copy(one_lib, tmp_path)
    data = _manifest(root)
    (rec,) = data["entries"]
    rec["instance"] = rec["instance"].replace("instances/", "instances/./")
    (root / "manifest.json").write_text(json.dumps(data))
    assert main(["library", "build", "--out", str(root), "--only", ONE, "--time-limit", "30", "--force",
                 "--no-true-optimum", "--quiet"]) == 0
    (new,) = _manifest(root)["entries"]
    assert (root / new["instance"]).is_file() and (root / new["pwl"]).is_file()


def test_force_only_removes_the_files_the_new_manifest_no_longer_lists(one_lib, tmp_path):
    """--force --only A over a library of B leaves exactly the files the new manifest, .solu files and
    tables list: B's instance and model files (and the .col/.row beside its .nl) are removed, a file
    no manifest listed is left alone."""
    root = _copy(one_lib, tmp_path)
    mine = root / "instances" / "mine.json"
    mine.write_text("{}")
    other = "knapsack-uncorrelated-n10"
    assert main(["library", "build", "--out", str(root), "--only", other, "--time-limit", "30", "--force",
                 "--no-true-optimum", "--quiet"]) == 0
    (rec,) = _manifest(root)["entries"]
    listed = {rec["instance"], rec["pwl"], *rec["minlp_files"], f"minlp/{other}.col", f"minlp/{other}.row"}
    on_disk = {p.relative_to(root).as_posix() for sub in ("instances", "pwl", "minlp")
               for p in (root / sub).iterdir()}
    assert on_disk == listed | {"instances/mine.json"}, sorted(on_disk)
    assert not list(root.rglob(f"{ONE}*")) and mine.read_text() == "{}"
