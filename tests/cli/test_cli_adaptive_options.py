"""``deplbench adaptive``: options that contradict each other are refused, one line naming them.

``--one-grid`` runs no refinement, so ``--width`` or ``--max-buckets`` beside it would be
ignored; a ``--max-buckets`` below the first grid would be passed by that grid itself;
``--time-limit inf`` (or ``none``) means no limit, as for ``deplbench solve``; the help
says what ``--iters-lam`` / ``--iters-mu`` count; every bracket status that exits 1 is
listed in the help and the module docstring.
"""

from __future__ import annotations

import json

import pytest

from deplbench.cli import adaptive as cli_adaptive
from deplbench.cli import main
from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive import search as S
from deplbench.instances.model import parse_instance

#: Two deterministic epochs at t = c/r fill Tmax: a bracket on a handful of buckets in ~0.1 s.
TINY = {
    "format_version": 1, "name": "tiny", "initial_loss": 1.0, "loss_max": 0.25, "omega": 0.875, "time_max": 2.0,
    "horizon": 2, "transfer_cost_mode": "once", "data_rule": "intended",
    "models": [{"name": "a", "size": 1.0, "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0, "decay": "none",
                "improvement": {"kind": "empirical", "samples": [4.0, 4.0]}},
               {"name": "b", "size": 0.0, "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0, "decay": "none",
                "improvement": {"kind": "empirical", "samples": [4.0, 4.0]}}],
    "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0.125}}],
    "clusters": [{"name": "C0", "capacity": 0.5, "unit_cost": 1.0, "bandwidth": 0.5},
                 {"name": "C1", "capacity": 1.0, "unit_cost": 3.0, "bandwidth": 4.0}],
    "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}], "transfer_costs": [],
    "provenance": {"generator": "manual", "parameters": {}, "seed": None, "assumptions": []},
}
SMALL = ["--runs", "300", "--tune-runs", "300", "--quiet"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("adaptive_options") / "tiny.json"
    parse_instance(TINY).save(path)
    return str(path)


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.count("\n") == 0 and err.startswith("error: "), err
    assert cap.out == ""
    return err


@pytest.mark.parametrize("option", [["--width", "0.01"], ["--max-buckets", "100"]])
def test_one_grid_with_a_refinement_option_is_refused(tiny, capsys, option):
    err = _refused(capsys, ["adaptive", tiny, "--one-grid", "--buckets", "6", *option, *SMALL])
    assert "--one-grid" in err and option[0] in err


@pytest.mark.parametrize("argv, first", [(["--buckets", "60", "--max-buckets", "10"], "60"),
                                         (["--max-buckets", "100"], "600")])   # the default first grid
def test_max_buckets_below_the_first_grid_is_refused(tiny, capsys, argv, first):
    err = _refused(capsys, ["adaptive", tiny, *argv, *SMALL])
    assert err.startswith(f"error: --max-buckets {argv[argv.index('--max-buckets') + 1]}: ") and \
        f"first grid's {first} buckets" in err
    # the option that set the first grid is named, default or given
    assert err.endswith("give --max-buckets ≥ --buckets" + ("" if "--buckets" in argv else " (default 600)")), err
    # the width the refinement would aim at is named as the option, a default as one
    assert "refinement to --width 0.03 (the default) could not run" in err and "width =" not in err, err


class _Called(Exception):
    pass


@pytest.fixture
def bounds_args(monkeypatch):
    """The arguments the CLI hands to adaptive_bounds (which is not run)."""
    seen: dict = {}

    def fake(*args, **kwargs):
        seen.update(kwargs, buckets=args[1])
        raise _Called

    monkeypatch.setattr(A, "adaptive_bounds", fake)
    return seen


def test_default_finest_grid_is_never_below_the_first(tiny, bounds_args):
    with pytest.raises(_Called):
        main(["adaptive", tiny, "--buckets", "50000", *SMALL])
    assert bounds_args["buckets"] == 50000 and bounds_args["max_buckets"] == 50000
    with pytest.raises(_Called):
        main(["adaptive", tiny, "--buckets", "60", *SMALL])
    assert bounds_args["max_buckets"] == A.MAX_BUCKETS


def test_threads_default_to_every_core_and_a_bad_count_is_refused(tiny, bounds_args, capsys):
    with pytest.raises(_Called):
        main(["adaptive", tiny, "--buckets", "6", *SMALL])
    assert bounds_args["threads"] == 0                    # one per core: the command runs alone
    with pytest.raises(_Called):
        main(["adaptive", tiny, "--buckets", "6", "--threads", "1", *SMALL])
    assert bounds_args["threads"] == 1
    err = _refused(capsys, ["adaptive", tiny, "--threads", "-1", *SMALL])
    assert err.startswith("error: ") and "threads" in err


@pytest.mark.parametrize("text", ["inf", "none", "INF"])
def test_time_limit_inf_or_none_is_no_limit(tiny, bounds_args, text):
    with pytest.raises(_Called):
        main(["adaptive", tiny, "--buckets", "6", "--time-limit", text, *SMALL])
    # adaptive_bounds reads inf as None (test_time_limit_inf_runs_and_records_no_limit)
    assert bounds_args["time_limit"] is None or bounds_args["time_limit"] == float("inf")


def test_time_limit_inf_runs_and_records_no_limit(tiny, capsys):
    assert main(["adaptive", tiny, "--buckets", "6", "--width", "0.5", "--time-limit", "inf", "--json",
                 *SMALL]) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    assert d["refinement"]["time_limit"] is None and d["refinement"]["stopped_by"] in ("width", "max_buckets")


@pytest.mark.parametrize("text", ["0", "-1", "nan", "-inf", "soon"])
def test_bad_time_limit_is_refused_naming_it(tiny, capsys, text):
    err = _refused(capsys, ["adaptive", tiny, f"--time-limit={text}", *SMALL])
    assert err.startswith(f"error: --time-limit {text}: "), err


@pytest.mark.parametrize("argv, shown", [(["--width", "0"], "--width 0"), (["--width", "0.0"], "--width 0"),
                                         (["--omega", "1"], "--omega 1"), (["--rho", "0"], "--rho 0"),
                                         (["--memory-limit", "0"], "--memory-limit 0")])
def test_a_refused_number_is_shown_in_its_shortest_form(tiny, capsys, argv, shown):
    """argparse reads --width 0 as the float 0.0; the refusal shows it in its shortest form, "--width 0"."""
    err = _refused(capsys, ["adaptive", tiny, *argv, *SMALL])
    assert err.startswith(f"error: {shown}: must be "), err


def _help(capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["adaptive", "--help"])
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_every_failure_status_is_listed_in_the_help_and_the_docstring(capsys):
    assert set(cli_adaptive.FAILURE_STATUSES) == set(A.BRACKET_STATUSES) - {"certified"}
    text = _help(capsys)
    for status in A.BRACKET_STATUSES:
        if status != "certified":
            assert status in text, status
        assert f"``{status}``" in cli_adaptive.__doc__, status


def test_help_says_what_the_search_steps_count(capsys):
    text = _help(capsys)
    lam = text[text.index("--iters-lam N "):text.index("--iters-mu N ")]
    mu = text[text.index("--iters-mu N "):text.index("--json ")]
    # the numbers quoted are the search's own
    assert f"up to {S.BRACKET_STEPS} more steps" in lam and f"{100 * S.LAM_RTOL:g} % of Tmax" in lam
    assert f">= {S.COARSE * 50} buckets" in lam and f"1/{S.COARSE} the buckets" in lam
    assert "0 acts as 1" in mu and "max(2, N - 2)" in mu


def test_the_brackets_own_refusals_name_this_commands_options(tiny, capsys):
    """Refused once the instance is read (a grid beyond the memory budget): the line names
    ``--memory-limit``, not the solver parameter ``memory_limit``."""
    err = _refused(capsys, ["adaptive", tiny, "--one-grid", "--buckets", "100000", "--memory-limit", "0.001",
                            *SMALL])
    assert "(--memory-limit raises it)" in err and "parameter memory_limit" not in err, err
    assert cli_adaptive.bracket_refusal("time_points: too many", {}) == "--time-points: too many"
