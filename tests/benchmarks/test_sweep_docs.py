"""docs/sweeps.md is generated from the tables that validate sweep files:
it is current, and every example in it (and in the sweep module's
docstring) loads and expands."""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

import pytest

from deplbench.benchmarks import sweep as sweep_mod
from deplbench.benchmarks.sweep import load_sweep
from deplbench.benchmarks.sweep_docs import render, toml_examples
from deplbench.benchmarks.sweep_keys import SWEEP_KEYS
from deplbench.cli import main as cli_main
from deplbench.errors import SweepError
from deplbench.instances.generators import generate

DOC = Path(__file__).resolve().parents[2] / "docs" / "sweeps.md"


def test_committed_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/sweeps.md is stale: run `python -m deplbench.benchmarks.sweep_docs docs/sweeps.md`")


def _docstring_example() -> str:
    doc = sweep_mod.__doc__
    block = doc[doc.index("example)::") + len("example)::"):doc.index("``params`` holds")]
    return textwrap.dedent(block).strip("\n") + "\n"


def _examples() -> list[str]:
    return toml_examples(DOC.read_text(encoding="utf-8")) + [_docstring_example()]


@pytest.mark.integration
@pytest.mark.parametrize("index", range(3))
def test_every_example_loads_expands_and_dry_runs(tmp_path, index, capsys):
    text = _examples()[index]
    (tmp_path / "my_instance.json").write_text(generate("knapsack", n_items=4, horizon=4).to_json())
    path = tmp_path / f"example{index}.toml"
    path.write_text(text, encoding="utf-8")
    sweep = load_sweep(path)
    assert sweep.tasks()
    assert cli_main(["run", str(path), "--db", str(tmp_path / "r.sqlite"), "--dry-run"]) == 0
    assert f"{len(sweep.tasks())} tasks" in capsys.readouterr().out


def test_every_key_is_documented_and_shown_in_an_example():
    doc = DOC.read_text(encoding="utf-8")
    shown: dict[str, set] = {"top level": set(), "sweep": set(), "sweep.evaluation": set(),
                             "instances": set(), "algorithms": set()}
    for text in _examples():
        data = tomllib.loads(text)
        shown["top level"] |= set(data)
        shown["sweep"] |= set(data.get("sweep", {}))
        shown["sweep.evaluation"] |= set(data.get("sweep", {}).get("evaluation", {}))
        for g in data.get("instances", []):
            shown["instances"] |= set(g)
        for a in data.get("algorithms", []):
            shown["algorithms"] |= set(a)
    for section, table in SWEEP_KEYS.items():
        assert set(table) == shown[section], section
        for key in table:
            assert re.search(rf"^\| `{re.escape(key)}` \|", doc, re.M), (section, key)


def test_a_key_outside_the_table_is_refused_naming_it(tmp_path):
    text = _examples()[0].replace('name = "mini"', 'name = "mini"\nrepeat = 2')
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SweepError, match=r"sweep\.repeat"):
        load_sweep(path)


@pytest.mark.integration
def test_run_filters_by_algorithm_and_instance_glob(tmp_path, capsys):
    from deplbench.benchmarks.sweep import select

    path = tmp_path / "everything.toml"
    path.write_text(_examples()[1], encoding="utf-8")
    full = load_sweep(path)
    keys = {t.key: t for t in full.tasks()}
    only_dp = select(full, algorithms=["mil*"]).tasks()
    assert only_dp and {t.algorithm for t in only_dp} == {"milp"}
    assert {t.key for t in only_dp} == {k for k, t in keys.items() if t.algorithm == "milp"}
    by_label = select(full, algorithms=["depl-eta"], instances=["alex*"]).tasks()
    assert {(t.label, t.group) for t in by_label} == {("depl-eta", "alexnet")}
    assert len(by_label) == sum(1 for t in keys.values() if t.label == "depl-eta")
    with pytest.raises(SweepError, match=r"--instance 'nope\*': matches no entry .*alexnet"):
        select(full, instances=["nope*"])
    assert cli_main(["run", str(path), "--db", str(tmp_path / "r.sqlite"), "--dry-run",
                     "--algo", "milp"]) == 0
    assert f"{len(only_dp)} tasks" in capsys.readouterr().out
    assert cli_main(["run", str(path), "--db", str(tmp_path / "r.sqlite"), "--dry-run",
                     "--algo", "zzz"]) == 2


def test_a_glob_path_gives_one_instance_per_matching_file(tmp_path):
    (tmp_path / "inst").mkdir()
    for seed in (0, 1, 2):
        (tmp_path / "inst" / f"k{seed}.json").write_text(
            generate("knapsack", n_items=4, horizon=4, seed=seed).to_json())
    (tmp_path / "inst" / "notes.txt").write_text("not an instance")
    body = textwrap.dedent("""
        [[instances]]
        id = "files"
        path = "inst/k*.json"
        [[algorithms]]
        name = "knapsack-dp"
    """)
    (tmp_path / "g.toml").write_text(body)
    tasks = load_sweep(tmp_path / "g.toml").tasks()
    assert sorted(Path(t.instance_path).name for t in tasks) == ["k0.json", "k1.json", "k2.json"]
    assert len({t.key for t in tasks}) == 3                 # three distinct instances (content hashes)
    (tmp_path / "none.toml").write_text(body.replace("inst/k*.json", "inst/z*.json"))
    with pytest.raises(SweepError, match=r"instances\[0\]\.path: no instance file matches"):
        load_sweep(tmp_path / "none.toml")


def test_repetitions_are_separate_tasks_with_the_first_keeping_its_key(tmp_path):
    body = textwrap.dedent("""
        [sweep]
        name = "rep"
        repetitions = 2
        [[instances]]
        id = "k"
        family = "knapsack"
        params = { n_items = 4, horizon = 4 }
        [[algorithms]]
        name = "knapsack-dp"
        [[algorithms]]
        name = "depl"
        repetitions = 3
    """)
    (tmp_path / "r.toml").write_text(body)
    tasks = load_sweep(tmp_path / "r.toml").tasks()
    by_algo = {a: sorted(t.repetition for t in tasks if t.algorithm == a) for a in ("knapsack-dp", "depl")}
    assert by_algo == {"knapsack-dp": [0, 1], "depl": [0, 1, 2]}
    assert len({t.key for t in tasks}) == 5
    (tmp_path / "one.toml").write_text(body.replace("repetitions = 2\n", "").replace("repetitions = 3\n", ""))
    single = {t.algorithm: t.key for t in load_sweep(tmp_path / "one.toml").tasks()}
    assert all(t.key == single[t.algorithm] for t in tasks if t.repetition == 0)
    (tmp_path / "bad.toml").write_text(body.replace("repetitions = 3", "repetitions = 0"))
    with pytest.raises(SweepError, match=r"algorithms\[1\]\.repetitions"):
        load_sweep(tmp_path / "bad.toml")


@pytest.mark.integration
def test_dry_run_estimates_time_from_matching_stored_runs(tmp_path, capsys):
    from deplbench.benchmarks.runner import estimate_time
    from deplbench.benchmarks.store import ResultsStore

    body = textwrap.dedent("""
        [sweep]
        name = "est"
        [[instances]]
        id = "k"
        family = "knapsack"
        params = { n_items = 4, horizon = 4 }
        seeds = [0, 1, 2]
        [[algorithms]]
        name = "depl"
        grid = { eta = [25, 50] }
        [[algorithms]]
        name = "best-exp"
    """)
    (tmp_path / "e.toml").write_text(body)
    sweep = load_sweep(tmp_path / "e.toml")
    todo = sweep.tasks()
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        # stored runs of depl on knapsack: eta 25 took 2 s and 4 s, eta 50 took 10 s;
        # one failed run (not a timing) and nothing for best-exp
        for i, (eta, wall, status) in enumerate([(25, 2.0, "feasible"), (25, 4.0, "feasible"),
                                                 (50, 10.0, "feasible"), (50, 99.0, "error")]):
            store.add({"key": f"old{i}", "sweep": "old", "family": "knapsack", "algorithm": "depl",
                       "params": {"eta": eta, "epsilon": 0.1}, "status": status, "wall_s": wall,
                       "runtime_s": wall, "error": "boom" if status == "error" else None})
        est = estimate_time(todo, store)
    # 3 seeds × (eta 25 → median 3 s, eta 50 → 10 s); best-exp has no stored run
    assert est == {"task_s": 3 * 3.0 + 3 * 10.0, "matched": 6, "exact": 6}
    assert cli_main(["run", str(tmp_path / "e.toml"), "--db", str(db), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "estimated time: 39 s of task time for the 6 of 9 tasks" in out and "3 tasks without" in out
    assert cli_main(["run", str(tmp_path / "e.toml"), "--db", str(tmp_path / "new.sqlite"), "--dry-run"]) == 0
    assert "estimated time" not in capsys.readouterr().out     # no store: no estimate line


def test_the_generator_checks_and_takes_no_option_for_a_path(tmp_path, capsys):
    from deplbench.benchmarks.sweep_docs import main

    out = tmp_path / "sweeps.md"
    assert main([str(out), "--check"]) == 1                     # missing: stale
    assert main([str(out)]) == 0 and out.read_text(encoding="utf-8") == render()
    assert main([str(out), "--check"]) == 0
    with pytest.raises(SystemExit):
        main(["--nosuch"])                                       # an option is never a file name
    assert not (tmp_path / "--nosuch").exists()
