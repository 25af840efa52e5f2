"""The adaptive yardstick's settings: one table of defaults and limits for every front.

:data:`deplbench.formulations.adaptive.settings.SETTINGS` is the one
declaration: ``adaptive_bounds`` (Python), the ``adaptive-opt`` solver
(``deplbench solve --algo adaptive-opt --param``) and ``deplbench adaptive``
refuse the same values for the same reason. The first cases below were
limits the fronts disagreed on (runs and tune_runs ≥ 2 in Python but ≥ 100
in the solver, ρ in (0, 1] against [0.05, 1], a confidence up to 1 against
1 − 1e-9, an infinite width accepted by the solver only).
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from deplbench.cli import build_parser
from deplbench.errors import PlanError
from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive import settings as S
from deplbench.instances.model import parse_instance
from deplbench.solvers.adaptive.optimum import AdaptiveOpt
from tests.cli.test_cli_adaptive_options import TINY


@pytest.fixture(scope="module")
def tiny():
    return parse_instance(TINY)


@pytest.fixture(scope="module")
def tiny_file(tiny, tmp_path_factory):
    path = tmp_path_factory.mktemp("adaptive_settings") / "tiny.json"
    tiny.save(path)
    return path


#: (adaptive_bounds argument, CLI option, value, reason)
CASES = [
    ("runs", "--runs", 50, "must be >= 100, got 50"),
    ("tune_runs", "--tune-runs", 99, "must be >= 100, got 99"),
    ("rho", "--rho", 0.01, "must be >= 0.05, got 0.01"),
    ("confidence", "--confidence", 1 - 1e-10, f"must be <= {1 - 1e-9}, got {1 - 1e-10!r}"),
    ("width", "--width", float("inf"), "must be finite, got inf"),
    ("buckets", "--buckets", 1, "must be >= 2, got 1"),
    ("time_points", "--time-points", 1, "must be 0 (deadline priced) or an integer ≥ 2, got 1"),
    ("confidence", "--confidence", 0.4, "must be >= 0.5, got 0.4"),
    # the closed-loop simulator's cap, refused before any DP work, naming the count given
    ("runs", "--runs", 10**6 + 1, "must be <= 1000000, got 1000001"),
    ("tune_runs", "--tune-runs", 10**6 + 1, "must be <= 1000000, got 1000001"),
    # the tuning draws from seed + 1 and seed + 2: a seed leaving them no room is refused as typed
    ("seed", "--seed", 2**63 - 2, "must be at most 2**63 − 1 − 2 = 9223372036854775805 so that seed + 2, the "
     "tuning's second stream, is a seed, got 9223372036854775806"),
]


@pytest.mark.parametrize("name,option,value,reason", CASES, ids=[f"{c[0]}={c[2]}" for c in CASES])
def test_one_limit_from_the_cli_the_solver_and_the_function(tiny, tiny_file, deplbench_cli, name, option, value,
                                                             reason):
    status, out, err = deplbench_cli("adaptive", tiny_file, option, repr(value), "--quiet")
    assert status == 2 and out == "" and err.count("\n") == 1 and err.startswith(f"error: {option} {value!r}: "), err
    assert reason in err, err
    status, out, err = deplbench_cli("solve", tiny_file, "--algo", "adaptive-opt", "--param", f"{name}={value!r}",
                                     "--json")
    assert status == 2 and out == "" and err.count("\n") == 1 and name in err and reason in err, err
    with pytest.raises(PlanError) as exc:
        A.adaptive_bounds(tiny, **{name: value})
    assert str(exc.value) == f"{name}: {reason}"


def test_the_time_limit_from_every_front(tiny, tiny_file, deplbench_cli):
    status, _, err = deplbench_cli("adaptive", tiny_file, "--time-limit", "-1", "--quiet")
    assert status == 2 and err == "error: --time-limit -1: must be > 0.0, got -1.0\n", err
    status, _, err = deplbench_cli("solve", tiny_file, "--algo", "adaptive-opt", "--param", "refine_time=-1")
    assert status == 2 and "refine_time" in err and "must be > 0.0, got -1.0" in err
    with pytest.raises(PlanError, match=r"^time_limit: must be > 0.0, got -1.0$"):
        A.adaptive_bounds(tiny, time_limit=-1.0)
    assert AdaptiveOpt.parameters["refine_time"] is S.SETTINGS["time_limit"]


def test_a_finest_grid_below_the_first_from_every_front(tiny, tiny_file, deplbench_cli):
    reason = S.refinement_refused(60, 10, 0.1)
    assert reason == "10 is below the first grid's 60 buckets, so the refinement to width = 0.1 could not run"
    assert S.refinement_refused(60, 60, 0.1) == S.refinement_refused(60, 10, None) == ""   # one grid: no cap
    status, _, err = deplbench_cli("adaptive", tiny_file, "--buckets", "60", "--max-buckets", "10", "--width", "0.1",
                                   "--quiet")
    # the one rule, each front naming the setting its own way (the command: its option --width)
    cli_reason = reason.replace("width = 0.1", "--width 0.1")
    assert status == 2 and err == f"error: --max-buckets 10: {cli_reason}; give --max-buckets ≥ --buckets\n", err
    status, _, err = deplbench_cli("solve", tiny_file, "--algo", "adaptive-opt", "--param", "buckets=60",
                                   "--param", "max_buckets=10", "--param", "width=0.1")
    assert status == 2 and err == f"error: --param max_buckets 10: {reason}\n", err
    with pytest.raises(PlanError) as exc:
        A.adaptive_bounds(tiny, buckets=60, max_buckets=10, width=0.1)
    assert str(exc.value) == f"max_buckets: {reason}"


def test_one_set_of_defaults():
    # adaptive_bounds' own defaults are the table's (buckets: the first grid, 600)
    sig = inspect.signature(A.adaptive_bounds).parameters
    for name, param in S.SETTINGS.items():
        expected = None if name == "max_buckets" else param.default     # None: MAX_BUCKETS
        assert sig[name].default == expected, name
    assert S.SETTINGS["buckets"].default == S.START_BUCKETS == 600 and S.MAX_BUCKETS == 38_400
    # the solver holds the very Params
    for name in ("buckets", "runs", "tune_runs", "seed", "confidence", "rho", "iters_lam", "iters_mu", "width",
                 "max_buckets", "time_points"):
        assert AdaptiveOpt.parameters[name] is S.SETTINGS[name], name
    # the command's defaults are read from the table; where it differs, the named constants
    args = build_parser("adaptive").parse_args(["adaptive", "x.json"])
    for name in ("runs", "tune_runs", "seed", "confidence", "rho", "iters_lam", "iters_mu"):
        assert getattr(args, name) == S.SETTINGS[name].default, name
    assert (S.CLI_WIDTH, S.CLI_TIME_LIMIT) == (0.03, 300.0)                  # docs/adaptive.md: 3 %, 300 s


def test_the_cli_applies_its_named_defaults(tiny_file, monkeypatch):
    from deplbench.cli import main

    seen: dict = {}

    def fake(*args, **kwargs):
        seen.update(kwargs, buckets=args[1], runs=args[2])
        raise RuntimeError("stop")

    monkeypatch.setattr(A, "adaptive_bounds", fake)
    with pytest.raises(RuntimeError, match="stop"):
        main(["adaptive", str(tiny_file), "--quiet"])
    assert (seen["width"], seen["time_limit"]) == (S.CLI_WIDTH, S.CLI_TIME_LIMIT)
    assert (seen["buckets"], seen["runs"], seen["max_buckets"]) == (S.START_BUCKETS, S.RUNS, S.MAX_BUCKETS)


def _imported(code: str) -> set[str]:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.integration
def test_the_table_loads_no_numerical_library_nor_does_the_commands_help():
    alone = _imported("import deplbench.formulations.adaptive.settings")
    assert "deplbench.formulations.adaptive.settings" in alone and "numpy" not in alone
    helped = _imported("from deplbench.cli import main\ntry:\n    main(['adaptive', '--help'])\n"
                       "except SystemExit:\n    pass")
    assert "deplbench.formulations.adaptive.settings" in helped
    assert not {"scipy", "deplbench.formulations.adaptive.chain"} & helped


def test_lazy_names_come_from_the_declared_modules():
    """The package imports its names on first use from the modules of ``_MODULES`` (the
    architecture test checks those as import edges): every name's module is one of them,
    and every name resolves."""
    assert set(A._WHERE.values()) <= set(A._MODULES)
    for name in A._WHERE:
        assert getattr(A, name) is not None


def test_solver_omega_follows_the_instance_formats_range():
    """adaptive-opt's ``omega`` (a stricter level than the instance's) is refused where the
    instance format refuses ω (instances.magnitudes), naming the parameter, not later
    as an invalid instance inside the solve."""
    from deplbench.errors import SolverError
    from deplbench.instances.magnitudes import MIN_OMEGA

    assert AdaptiveOpt.resolve_params({"omega": MIN_OMEGA})["omega"] == MIN_OMEGA
    assert AdaptiveOpt.resolve_params({"omega": 1 - MIN_OMEGA})["omega"] == 1 - MIN_OMEGA
    for bad in (MIN_OMEGA / 10, 1 - MIN_OMEGA / 10):
        with pytest.raises(SolverError, match="omega"):
            AdaptiveOpt.resolve_params({"omega": bad})


def test_an_infinite_time_limit_is_no_limit_and_the_brackets_own(tiny, monkeypatch):
    """``time_limit = inf`` (``solve --time-limit inf``) is read as None: the record says no limit,
    and the bracket counts it as its own (``own_limit``), so a stalled policy may end the refinement
    and the time left go to the bound, as with none."""
    import deplbench.formulations.adaptive.bracket as bracket_module

    seen = []
    real = bracket_module.own_limit

    def spy(limit):
        seen.append((limit, real(limit)))
        return real(limit)

    monkeypatch.setattr(bracket_module, "own_limit", spy)
    records = [A.adaptive_bounds(tiny, buckets=6, width=0.5, runs=300, tune_runs=300, time_limit=t).to_dict()
               for t in (float("inf"), None)]
    assert [r["refinement"]["time_limit"] for r in records] == [None, None]
    assert records[0]["lower_bound"] == records[1]["lower_bound"]
    assert seen and all(limit is None and own for limit, own in seen), seen
