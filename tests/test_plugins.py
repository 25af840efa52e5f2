"""docs/extending.md, run: a third-party solver installed through the entry point.

The files of the worked example are extracted from docs/extending.md (blocks
whose first line is ``# file: NAME``), built into a throwaway package in a
temporary folder and installed with ``pip install --no-deps
--no-build-isolation --target SITE`` — never into the shared environment.
Every command then runs in a subprocess with ``PYTHONPATH=SITE``:
``deplbench algorithms``, ``deplbench solve``, a tiny sweep (``deplbench
run``) and ``deplbench report``. The plugin must appear in the listing, in
the stored rows (with its declared label, exactness and style) and in every
report table that lists the other algorithms of the run — with no deplbench
file changed.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
PLUGIN = "steady-greedy"
LABEL = "steady greedy"

pytestmark = pytest.mark.integration


def doc_files() -> dict[str, str]:
    """``{file name: content}`` of the fenced blocks starting with ``# file: NAME``."""
    text = DOC.read_text(encoding="utf-8")
    files = {}
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        first, _, rest = block.partition("\n")
        m = re.fullmatch(r"# file: (\S+)", first.strip())
        if m:
            files[m.group(1)] = block
    return files


def deplbench_bin() -> str:
    exe = Path(sys.executable).with_name("deplbench")
    return str(exe) if exe.exists() else "deplbench"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    files = doc_files()
    assert {"deplbench_steady.py", "pyproject.toml", "steady.toml"} <= set(files), sorted(files)
    tmp = tmp_path_factory.mktemp("plugin")
    pkg = tmp / "pkg"
    pkg.mkdir()
    for name in ("deplbench_steady.py", "pyproject.toml"):
        (pkg / name).write_text(files[name], encoding="utf-8")
    site = tmp / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--quiet", "--target", str(site), str(pkg)],
        capture_output=True, text=True, cwd=tmp, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("DEPLBENCH_TASK_PLUGINS", None)
    (tmp / "steady.toml").write_text(files["steady.toml"], encoding="utf-8")
    return {"tmp": tmp, "env": env, "site": site}


def run(args, env, cwd, timeout=900):
    return subprocess.run([deplbench_bin(), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def test_plugin_is_listed_with_its_declared_metadata(plugin_env):
    env, tmp = plugin_env["env"], plugin_env["tmp"]
    proc = run(["algorithms", "--json"], env, tmp)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["algorithms"]}
    assert PLUGIN in rows, sorted(rows)
    row = rows[PLUGIN]
    assert row["available"] and row["label"] == LABEL and row["exact"] is False
    assert row["style"] == {"colour": "#17becf", "marker": "X", "linestyle": "--"}
    assert set(row["parameters"]) == {"scenarios", "seed"}
    assert row["source"]["kind"] == "entry point" and row["source"]["distribution"] == "deplbench-steady"
    text = run(["algorithms"], env, tmp)
    assert text.returncode == 0 and PLUGIN in text.stdout
    # without the package on the path it is simply not there
    bare = run(["algorithms", "--json"], {k: v for k, v in env.items() if k != "PYTHONPATH"}, tmp)
    assert PLUGIN not in {r["name"] for r in json.loads(bare.stdout)["algorithms"]}


def doc_algorithms_outputs() -> list[tuple[str, str]]:
    """``(command, output)`` of each ``$ deplbench algorithms ...`` line of the doc's console blocks."""
    text = DOC.read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        for m in re.finditer(r"^\$ (deplbench algorithms[^\n]*)\n(.*?)(?=^\$ |\Z)", block, flags=re.S | re.M):
            found.append((m.group(1), m.group(2)))
    return found


def test_the_doc_shows_what_algorithms_prints_for_the_plugin(plugin_env):
    """The doc showed parameters under `deplbench algorithms | grep -A2 steady-greedy`,
    where the listing has none (they appear with `deplbench algorithms steady-greedy`)."""
    env, tmp = plugin_env["env"], plugin_env["tmp"]
    shown = doc_algorithms_outputs()
    assert len(shown) >= 2, shown
    for command, output in shown:
        args, _, grep = command.removeprefix("deplbench ").partition(" | grep ")
        proc = run(args.split(), env, tmp)
        assert proc.returncode == 0, proc.stderr
        printed = proc.stdout
        if grep:
            assert not grep.startswith("-"), f"{command}: the check reads a plain `| grep WORD` only"
            printed = "".join(line for line in printed.splitlines(keepends=True) if grep in line)
        assert printed == output, f"{command}: the doc shows\n{output}\nthe command prints\n{printed}"


def test_plugin_solves_and_its_parameters_are_validated(plugin_env, deplbench_cli):
    env, tmp = plugin_env["env"], plugin_env["tmp"]
    inst = tmp / "alexnet.json"
    # the instance is input, made in this process: the plugin's own commands run with it installed
    status, _, err = deplbench_cli("generate", "realistic", "--family", "alexnet", "--seed", "0", "-o", inst)
    assert status == 0, err
    proc = run(["solve", str(inst), "--algo", PLUGIN, "--param", "scenarios=300", "--eval-samples", "5000",
                "--json"], env, tmp)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["algorithm"] == PLUGIN and rec["status"] == "feasible" and rec["cost"] > 0
    assert rec["evaluation"]["violations"] == []
    bad = run(["solve", str(inst), "--algo", PLUGIN, "--param", "scenarios=0"], env, tmp)
    assert bad.returncode == 2 and "scenarios" in bad.stderr and "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def swept(plugin_env):
    env, tmp = plugin_env["env"], plugin_env["tmp"]
    db = tmp / "steady.sqlite"
    proc = run(["run", str(tmp / "steady.toml"), "--db", str(db), "--workers", "1", "--no-progress"], env, tmp,
               timeout=1800)
    return proc, db


def test_plugin_runs_in_a_sweep_and_its_rows_carry_its_metadata(swept):
    proc, db = swept
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = []
    for t in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
        if "algorithm" in cols:
            rows += [dict(r) for r in con.execute(f"SELECT * FROM {t}")]
    mine = [r for r in rows if r.get("algorithm") == PLUGIN]
    assert len(mine) == 2 and {r["status"] for r in mine} == {"feasible"}, mine
    blob = json.dumps(mine, default=str)
    assert LABEL in blob and "#17becf" in blob  # label and style stored with the row


def test_plugin_appears_in_every_report_section_that_lists_algorithms(plugin_env, swept):
    proc, db = swept
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, tmp = plugin_env["env"], plugin_env["tmp"]
    out = tmp / "report"
    # the report must not need the plugin installed: build it without PYTHONPATH
    bare = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    rep = run(["report", str(db), "--out", str(out), "--no-svg", "--scale", "0.5", "--dpi", "50"], bare, tmp)
    assert rep.returncode == 0, rep.stderr[-3000:]
    html = (out / "index.html").read_text(encoding="utf-8")
    assert LABEL in html or PLUGIN in html
    listing = 0
    for path in sorted((out / "tables").glob("*.csv")):
        if path.name.startswith("measured_"):
            continue            # the shipped training measurement's own solvers, not this run's
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows:
            continue
        # a table lists algorithms when one of its algorithm columns names DepL,
        # the other algorithm of the run; that column must name the plugin too
        for col in rows[0]:
            if col is None or not ("algorithm" in col.lower() or col.lower() in ("label", "solver")):
                continue
            values = {str(r[col]) for r in rows}
            if values & {"depl", "DepL"}:
                listing += 1
                assert values & {PLUGIN, LABEL}, f"{path.name}: column {col!r} lists DepL but not the plugin"
    assert listing >= 1
