"""``deplbench run``: ``--db`` is required to run a sweep and optional for ``--dry-run``.

A dry run reads the results store only to count the tasks already done;
without one, no task counts as done and the report says so. A real run
without ``--db`` is a one-line error naming it (exit status 2), refused
before the sweep is read or any task process prepared.
"""

from __future__ import annotations

import pytest

SWEEP = """
[[instances]]
id = "ks"
family = "knapsack"
params = { n_items = 4, horizon = 4 }

[[algorithms]]
name = "depl"
grid = { eta = [50, 100] }
"""


@pytest.mark.integration
def test_dry_run_without_db_counts_no_task_as_done_and_writes_nothing(tmp_path, monkeypatch, deplbench_cli):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    monkeypatch.chdir(tmp_path)
    status, out, err = deplbench_cli("run", sweep, "--dry-run")
    assert status == 0, err
    first = out.splitlines()[0]
    assert "2 tasks, none counted as done (no results store given)" in first and "2 to run" in first, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.integration
def test_run_without_db_is_one_line_exit_2(tmp_path, deplbench_cli):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    status, out, err = deplbench_cli("run", sweep)
    assert status == 2
    assert err.startswith("error: --db: ") and err.count("\n") == 1, err
    assert out == ""
    # refused before the sweep is read: a missing sweep file still names --db
    status, _, err = deplbench_cli("run", tmp_path / "missing.toml")
    assert status == 2 and err.startswith("error: --db: "), err


@pytest.mark.integration   # `run` starts task processes when a check is missing (the code before this one)
def test_show_tasks_without_dry_run_is_refused_before_anything_runs(tmp_path, deplbench_cli):
    """--show-tasks without --dry-run was ignored: the sweep ran in full and listed nothing."""
    db = tmp_path / "x.sqlite"
    status, out, err = deplbench_cli("run", tmp_path / "missing.toml", "--db", db, "--show-tasks", "3")
    assert status == 2 and out == ""
    assert err.startswith("error: --show-tasks: lists the tasks of a --dry-run") and err.count("\n") == 1, err
    assert not db.exists()
    status, out, err = deplbench_cli("run", tmp_path / "missing.toml", "--dry-run", "--show-tasks", "-1")
    assert status == 2 and err.startswith("error: --show-tasks: must be 0 or more, got -1"), err


@pytest.mark.integration   # `run` starts task processes when a check is missing (the code before this one)
def test_db_in_a_folder_that_does_not_exist_is_refused_and_not_created(tmp_path, deplbench_cli):
    """`run --db /nonexist/x.sqlite` created /nonexist/ and ran, while every other output option
    (`export -o`, `generate -o`) refuses a folder that does not exist."""
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    db = tmp_path / "typo" / "x.sqlite"
    status, out, err = deplbench_cli("run", sweep, "--db", db)
    assert status == 2 and out == ""
    assert err == f"error: --db {db}: directory {db.parent} does not exist\n", err
    assert not db.parent.exists()
    # a dry run only reads the store: a missing one counts no task as done, and nothing is created
    status, out, err = deplbench_cli("run", sweep, "--db", db, "--dry-run")
    assert status == 0 and "2 to run" in out.splitlines()[0], err
    assert not db.parent.exists()
