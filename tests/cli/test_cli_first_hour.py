"""What a new user meets in the first hour: no option abbreviations, a
short algorithm list, a dry run that lists its tasks, a verify line that
states the exact verdict or why there is none, and the SAA hint."""

from __future__ import annotations

import pytest

from deplbench.cli import main as cli_main


@pytest.mark.integration
def test_option_prefixes_are_not_accepted(capsys, tmp_path):
    # --bucket is a prefix of adaptive's --buckets: an error, not --buckets 100
    with pytest.raises(SystemExit) as exc:
        cli_main(["adaptive", str(tmp_path / "none.json"), "--bucket", "100"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--bucket" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        cli_main(["run", "quick", "--db", str(tmp_path / "x.sqlite"), "--dry"])
    assert "--dry" in capsys.readouterr().err


def test_algorithms_short_list_and_one_algorithms_parameters(capsys):
    assert cli_main(["algorithms"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.split("\n\n")[0].splitlines()]
    assert "depl" in names and "milp" in names and len(names) == len(set(names))
    assert "default=" not in out.split("\n\n")[0]        # parameters only on request
    assert cli_main(["algorithms", "depl"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("depl  (heuristic)") and "eta" in one and "default=200" in one
    assert cli_main(["algorithms", "dpel"]) == 2
    assert "did you mean depl" in capsys.readouterr().err
    assert cli_main(["algorithms", "milp", "--solvers", "--json"]) == 2      # NAME never silently dropped
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.startswith("error: --solvers: lists the MILP solvers, not the parameters of "
                                                "algorithm 'milp'"), cap.err


@pytest.mark.integration
def test_dry_run_lists_the_first_tasks_and_counts_the_rest(capsys, tmp_path):
    db = tmp_path / "never.sqlite"
    assert cli_main(["run", "quick", "--db", str(db), "--dry-run", "--show-tasks", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].startswith("tasks to run (first 3 of ")
    assert len([x for x in lines if x.startswith("  ") and " on " in x]) == 3
    assert lines[-1].startswith("  … and ") and lines[-1].endswith(" more")
    assert not db.exists()
    assert cli_main(["run", "quick", "--db", str(db), "--dry-run", "--show-tasks", "0"]) == 0
    assert "tasks to run" not in capsys.readouterr().out


def test_verify_states_the_exact_verdict_or_why_not():
    from deplbench.benchmarks.library.verify import _exact_line

    assert _exact_line({"exact_verdict": "proven feasible", "violation_lo": 0.001,
                        "violation_hi": 0.0042}) == \
        "exact: proven feasible (violation probability in [0.001, 0.0042], no sampling)"
    line = _exact_line({"exact_verdict": None, "exact_reason": "an improvement law has no lattice"})
    assert line == "exact: no verdict (an improvement law has no lattice)"
    assert "None" not in _exact_line({})


def test_saa_hint_only_for_an_saa_plan_optimal_in_sample_and_infeasible_out_of_sample():
    from types import SimpleNamespace

    from deplbench.cli.solvers import saa_hint

    r = SimpleNamespace(status="optimal", evaluation={"verdict": "infeasible", "violations": []},
                        diagnostics={}, params={"scenarios": 200})
    assert "its 200 in-sample scenarios" in saa_hint(r, "saa")
    assert saa_hint(r, "") == ""                                  # not an SAA solver
    assert saa_hint(SimpleNamespace(**{**vars(r), "evaluation": {"verdict": "feasible"}}), "saa") == ""
    assert saa_hint(SimpleNamespace(**{**vars(r), "status": "feasible"}), "saa") == ""


@pytest.mark.integration
def test_dry_run_names_each_grid_point(capsys, tmp_path):
    """Two tasks of one group that differ only in a generator parameter of its grid are two lines."""
    sweep = tmp_path / "s.toml"
    sweep.write_text('[sweep]\nname = "s"\n[[instances]]\nid = "k"\nfamily = "knapsack"\n'
                     'grid = { n_items = [3, 4] }\n[[algorithms]]\nname = "depl"\n', encoding="utf-8")
    assert cli_main(["run", str(sweep), "--dry-run", "--show-tasks", "5"]) == 0
    tasks = [x.strip() for x in capsys.readouterr().out.splitlines() if x.startswith("  ")]
    assert tasks == ["depl on k seed 0 (n_items=3)", "depl on k seed 0 (n_items=4)"]
