"""Bad arguments of the MILP library's build, check and MPS solve.

The three entry points share one seconds check and one (0, 1) check
(``library/mps.py``); each refusal is one line naming the argument, before
any file is written or solver started. Building and checking a library
itself is in tests/benchmarks/test_library.py (integration).
"""

from __future__ import annotations

import math

import pytest

from deplbench.benchmarks.library.build import build_library
from deplbench.benchmarks.library.check import check_library
from deplbench.benchmarks.library.mps import solve_mps
from deplbench.errors import SolverError

_SECONDS = [0, -1.0, math.inf, math.nan, True, "60", None]
_FRACTIONS = [0, 1, 1.5, -0.1, math.nan, False, "0.1"]


@pytest.mark.parametrize("arg,value", [("time_limit", v) for v in _SECONDS]
                         # solve_time_limit=None means "as time_limit"
                         + [("solve_time_limit", v) for v in _SECONDS if v is not None])
def test_build_refuses_bad_seconds_before_writing(tmp_path, arg, value):
    out = tmp_path / "lib"
    with pytest.raises(SolverError, match=rf"^{arg}: must be a positive number of seconds, got ") as err:
        build_library(str(out), **{arg: value})
    assert "\n" not in str(err.value)
    assert not out.exists()


@pytest.mark.parametrize("value", _FRACTIONS)
def test_build_and_check_refuse_a_gap_outside_the_open_unit_interval(tmp_path, value):
    with pytest.raises(SolverError, match=r"^gap: must be a relative gap in \(0, 1\), got "):
        build_library(str(tmp_path / "lib"), gap=value)
    with pytest.raises(SolverError, match=r"^gap: must be a relative gap in \(0, 1\), got "):
        check_library(str(tmp_path), gap=value)
    with pytest.raises(SolverError, match=r"^tolerance: must be a relative tolerance in \(0, 1\), got "):
        check_library(str(tmp_path), rel_tol=value)
    assert not (tmp_path / "lib").exists()


@pytest.mark.parametrize("value", _SECONDS)
def test_check_and_mps_solve_refuse_bad_seconds(tmp_path, value):
    mps = tmp_path / "m.mps"
    mps.write_text("NAME m\nENDATA\n")
    with pytest.raises(SolverError, match=r"^time_limit: must be a positive number of seconds, got "):
        check_library(str(tmp_path), time_limit=value)
    with pytest.raises(SolverError, match=r"^time_limit: must be a positive number of seconds, got "):
        solve_mps(str(mps), time_limit=value)


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
    with pytest.raises(SolverError, match=r"^gap: must be a relative gap in \[0, 1\), got "):
        solve_mps(str(mps), gap=value)
