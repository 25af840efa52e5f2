"""Bad arguments of the MILP library's build, check and MPS solve.

The three entry points declare their numeric arguments once
(``library/mps.py``: ``PARAMETERS``, ``MPS_PARAMETERS``) and check them
through the shared parameter engine (:mod:`deplbench.params`); each refusal
is one line naming the argument and the bound, before any file is written or
solver started, and ``deplbench library`` names the option as typed.
Building and checking a library itself is in
tests/benchmarks/test_library.py (integration).
"""

from __future__ import annotations

import math

import pytest

from deplbench.benchmarks.library.build import build_library
from deplbench.benchmarks.library.check import check_library
from deplbench.benchmarks.library.mps import MPS_PARAMETERS, PARAMETERS, solve_mps
from deplbench.errors import SolverError

#: (value, reason) of a refused number of seconds.
_SECONDS = [(0, "must be > 0.0, got 0.0"), (-1.0, "must be > 0.0, got -1.0"), (math.inf, "must be finite, got inf"),
            (math.nan, "expected a number, got nan"), (True, "expected float, got True"),
            ("60", "expected float, got the string '60'"), (None, "a value is required")]
#: (value, reason) of a refused number in the open interval (0, 1).
_FRACTIONS = [(0, "must be > 0.0, got 0.0"), (1, "must be < 1.0, got 1.0"), (1.5, "must be < 1.0, got 1.5"),
              (-0.1, "must be > 0.0, got -0.1"), (math.nan, "expected a number, got nan"),
              (False, "expected float, got False"), ("0.1", "expected float, got the string '0.1'")]


def test_the_numeric_arguments_are_declared_once_with_their_bounds():
    assert {k: (p.low, p.low_inclusive, p.high, p.high_inclusive) for k, p in PARAMETERS.items()} == {
        "time_limit": (0.0, False, None, True), "solve_time_limit": (0.0, False, None, True),
        "gap": (0.0, False, 1.0, False), "tolerance": (0.0, False, 1.0, False)}
    assert PARAMETERS["time_limit"].finite and PARAMETERS["solve_time_limit"].nullable
    assert MPS_PARAMETERS["time_limit"] is PARAMETERS["time_limit"]
    assert (MPS_PARAMETERS["gap"].low, MPS_PARAMETERS["gap"].low_inclusive) == (0.0, True)


@pytest.mark.parametrize("arg,value,reason", [("time_limit", v, r) for v, r in _SECONDS]
                         # solve_time_limit=None means "as time_limit"
                         + [("solve_time_limit", v, r) for v, r in _SECONDS if v is not None])
def test_build_refuses_bad_seconds_before_writing(tmp_path, arg, value, reason):
    out = tmp_path / "lib"
    with pytest.raises(SolverError) as err:
        build_library(str(out), **{arg: value})
    assert str(err.value) == f"parameter {arg!r}: {reason}"
    assert not out.exists()


@pytest.mark.parametrize("value,reason", _FRACTIONS)
def test_build_and_check_refuse_a_gap_outside_the_open_unit_interval(tmp_path, value, reason):
    with pytest.raises(SolverError) as err:
        build_library(str(tmp_path / "lib"), gap=value)
    assert str(err.value) == f"parameter 'gap': {reason}"
    with pytest.raises(SolverError) as err:
        check_library(str(tmp_path), gap=value)
    assert str(err.value) == f"parameter 'gap': {reason}"
    with pytest.raises(SolverError) as err:
        check_library(str(tmp_path), rel_tol=value)
    assert str(err.value) == f"parameter 'tolerance': {reason}"
    assert not (tmp_path / "lib").exists()


@pytest.fixture
def mps(tmp_path):
    """An empty model file: every refusal comes before it is read."""
    path = tmp_path / "m.mps"
    path.write_text("NAME m\nENDATA\n")
    return path


@pytest.mark.parametrize("value,reason", _SECONDS)
def test_check_and_mps_solve_refuse_bad_seconds(tmp_path, mps, value, reason):
    with pytest.raises(SolverError) as err:
        check_library(str(tmp_path), time_limit=value)
    assert str(err.value) == f"parameter 'time_limit': {reason}"
    with pytest.raises(SolverError) as err:
        solve_mps(str(mps), time_limit=value)
    assert str(err.value) == f"parameter 'time_limit': {reason}"


@pytest.mark.parametrize("value,reason", [(0, "must be >= 1, got 0"), (2.0, "expected int, got the float 2.0"),
                                          (True, "expected int, got True")])
def test_mps_solve_refuses_bad_threads(mps, value, reason):
    with pytest.raises(SolverError) as err:
        solve_mps(str(mps), threads=value)
    assert str(err.value) == f"parameter 'threads': {reason}"


@pytest.mark.parametrize("argv,line", [
    (["build", "--time-limit", "0"], "--time-limit 0: must be > 0.0, got 0.0"),
    (["build", "--solve-time-limit", "inf"], "--solve-time-limit inf: must be finite, got inf"),
    (["build", "--gap", "1"], "--gap 1: must be < 1.0, got 1.0"),
    (["check", "--time-limit", "-5"], "--time-limit -5: must be > 0.0, got -5.0"),
    (["check", "--tolerance", "nan"], "--tolerance nan: expected a number, got nan"),
])
def test_cli_names_the_option_and_the_bound(tmp_path, deplbench_cli, argv, line):
    """One line naming the option as typed and the bound, exit status 2, before anything is built or read."""
    out = tmp_path / "lib"
    where = ["--out", out] if argv[0] == "build" else [tmp_path / "not-a-library"]
    status, stdout, err = deplbench_cli("library", argv[0], *where, *argv[1:])
    assert (status, stdout, err) == (2, "", f"error: {line}\n")
    assert not out.exists()


_MPS = "NAME m\nROWS\n N obj\n G c1\nCOLUMNS\n    x obj 1 c1 1\nRHS\n    rhs c1 2\nBOUNDS\n UP bnd x 10\nENDATA\n"


@pytest.mark.parametrize("value,ok", [(0.0, True), (0.5, True), (1.0, False), (-1e-9, False), (math.nan, False)])
def test_mps_solve_takes_a_zero_gap(tmp_path, value, ok):
    """``solve_mps`` accepts gap 0 (prove exactly), unlike build and check:
    min x s.t. x >= 2 is solved to 2."""
    mps = tmp_path / "m.mps"
    mps.write_text(_MPS)
    if ok:
        out = solve_mps(str(mps), gap=value, time_limit=60.0)
        assert out.status == "optimal" and out.primal == pytest.approx(2.0)
        return
    with pytest.raises(SolverError, match=r"^parameter 'gap': (must be >= 0\.0|must be < 1\.0|expected a number), "
                                          r"got "):
        solve_mps(str(mps), gap=value)
