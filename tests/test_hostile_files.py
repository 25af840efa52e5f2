"""Hostile input: file hygiene (docs/DESIGN.md, "Input rules").

Outputs a sweep names stay under the run's folder; every file read whole has
a size limit; duplicate JSON keys, formula-like CSV cells and mathtext labels
are refused or neutralised; a report is written whole or not at all; export
never creates folders and warns about text in numeric columns.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from deplbench import limits
from deplbench.benchmarks.sweep import load_sweep, parse_sweep
from deplbench.cli import main
from deplbench.errors import InstanceError, PlanError, SweepError
from deplbench.instances.model import load_instance
from tests.instance_data import two_model_data


def _sweep(**params) -> dict:
    return {"sweep": {"name": "s"},
            "instances": [{"id": "k", "family": "knapsack", "params": {"n_items": 5}}],
            "algorithms": [{"name": "milp", **params}]}


# ---- finding 4: outputs a sweep names stay under the run's folder ----------------------------

@pytest.mark.parametrize("entry,field", [
    ({"params": {"write_lp": "../../../../tmp/x.lp"}}, "algorithms[0].params.write_lp"),
    ({"params": {"write_lp": "/tmp/x.lp"}}, "algorithms[0].params.write_lp"),
    ({"grid": {"write_lp": ["a.lp", "sub/../../b.lp"]}}, "algorithms[0].grid.write_lp[1]"),
])
def test_sweep_output_paths_must_stay_under_the_run_folder(entry, field):
    with pytest.raises(SweepError) as err:
        parse_sweep(_sweep(**entry), check_names=False)
    msg = str(err.value)
    assert msg.startswith(field) and "under the run's folder" in msg and "\n" not in msg


def test_sweep_relative_output_path_is_accepted():
    sweep = parse_sweep(_sweep(params={"write_lp": "lp/model.lp"}), check_names=False)
    assert sweep.algorithms[0].params["write_lp"] == "lp/model.lp"


# ---- finding 5: size limits on every file read whole ------------------------------------------

def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


@pytest.mark.parametrize("kind", ["instance", "plan", "sweep", "log", "sweep path"])
def test_files_above_the_size_limit_are_refused_naming_file_and_limit(tmp_path, kind, monkeypatch):
    big = _sparse(tmp_path / "big.json", limits.MAX_INPUT_BYTES + 1)   # sparse: no disk used
    if kind == "instance":
        call, error = (lambda: load_instance(big)), InstanceError
    elif kind == "plan":
        from deplbench.formulations.model.plan import load_plan
        call, error = (lambda: load_plan(big)), PlanError
    elif kind == "sweep":
        big = big.rename(tmp_path / "big.toml")
        call, error = (lambda: load_sweep(big)), SweepError
    elif kind == "log":
        from deplbench.instances.fit.logs import LogError, read_logs
        call, error = (lambda: read_logs(big)), LogError
    else:
        from deplbench.benchmarks.sweep_expand import file_sha256
        call, error = (lambda: file_sha256(str(big))), SweepError
    with pytest.raises(error) as err:
        call()
    msg = str(err.value)
    # a plan has a tighter cap of its own (formulations.model.plan.MAX_PLAN_BYTES)
    assert str(big) in msg and f"larger than the limit of {98 if kind == 'plan' else 256} MiB" in msg


# ---- finding 9: duplicate keys, CSV cells, Markdown, export -------------------------------------

def test_duplicate_json_keys_are_refused(tmp_path):
    text = json.dumps(two_model_data())
    dup = text.replace('"omega": 0.9', '"omega": 0.9, "omega": 0.5', 1)
    path = tmp_path / "dup.json"
    path.write_text(dup, encoding="utf-8")
    with pytest.raises(InstanceError, match="duplicate key 'omega'"):
        load_instance(path)


def test_spreadsheet_safe_cells():
    from deplbench.files import csv_text

    frame = pd.DataFrame({"label": ["=1+1", "+x", "-cmd", "@SUM(A1)", "ok", None], "cost": [-1.5, 1, 2, 3, 4, 5]})
    back = pd.read_csv(io.StringIO(csv_text(frame)))
    assert list(back["label"][:5]) == ["'=1+1", "'+x", "'-cmd", "'@SUM(A1)", "ok"]
    assert pd.isna(back["label"][5]) and list(back["cost"]) == [-1.5, 1, 2, 3, 4, 5]   # numbers untouched


def test_markdown_table_escapes_html_and_markdown():
    from deplbench.reports.elements import markdown_table

    md = markdown_table(pd.DataFrame({"algorithm": ["<script>alert(1)</script>", "a*b_[x](y)"]}))
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "a\\*b_\\[x\\](y)" in md


def _store_with_text_cost(tmp_path) -> Path:
    from deplbench.benchmarks.store import ResultsStore

    db = tmp_path / "r.sqlite"
    with ResultsStore(db):
        pass
    with sqlite3.connect(db) as con:
        cols = [r[1] for r in con.execute("PRAGMA table_info(results)")]
        row = {c: None for c in cols}
        row.update({k: v for k, v in {"key": "k1", "algorithm": "=HYPERLINK(\"x\")", "label": "@bad",
                                       "status": "feasible", "cost": "lots", "failed": 0}.items() if k in cols})
        con.execute(f"INSERT INTO results ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                    list(row.values()))
    return db


def test_export_neutralises_formulas_and_warns_about_text_costs(tmp_path, capsys):
    db = _store_with_text_cost(tmp_path)
    out = tmp_path / "x.csv"
    assert main(["export", str(db), "--format", "csv", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 stored row(s) of column 'cost' hold text" in err
    frame = pd.read_csv(out, dtype=str)
    assert frame["algorithm"][0].startswith("'=") and frame["label"][0] == "'@bad"


def test_export_does_not_create_folders(tmp_path, capsys):
    db = _store_with_text_cost(tmp_path)
    target = tmp_path / "nonexistent" / "x.csv"
    assert main(["export", str(db), "--format", "csv", "-o", str(target)]) == 2
    assert not target.parent.exists()
    assert "does not exist" in capsys.readouterr().err


# ---- finding 7: plain-text labels, atomic reports -------------------------------------------------

@pytest.fixture(scope="module")
def frame():
    from tests.reports.test_reports import make_frame

    return make_frame()


@pytest.fixture(scope="module")
def mathtext_report(frame, tmp_path_factory):
    """The report of ``frame`` with best-exp labelled ``x_{$\\frac$}`` (a mathtext parse
    error if parsed), built once: the mathtext check reads it, and the atomicity check
    copies it as the previous report a failing build must leave untouched."""
    from deplbench.reports.build import build_report
    from tests.reports.test_reports import SMALL

    df = frame.copy()
    df.loc[df["algorithm"] == "best-exp", "label"] = r"x_{$\frac$}"
    out = tmp_path_factory.mktemp("mathtext") / "rep"
    return out, build_report(df, out, options=SMALL)


@pytest.mark.slow          # a whole report (matplotlib figures): 10–12 s
def test_report_draws_a_mathtext_label_as_plain_text(mathtext_report):
    out, summary = mathtext_report
    assert (out / "index.html").is_file()
    assert not [e for e in summary.errors if "frac" in e or "ParseException" in e or "mathtext" in e]


@pytest.mark.slow          # a whole report (matplotlib figures): 10–12 s
def test_report_is_written_whole_or_not_at_all(frame, mathtext_report, tmp_path, monkeypatch):
    import shutil

    from deplbench.reports import build as build_mod
    from tests.reports.test_reports import SMALL

    # the previous report: a real build (its manifest lists its files), of another label than the
    # failing build's, so that any file the failing build replaced differs from the one kept
    out = tmp_path / "rep"
    shutil.copytree(mathtext_report[0], out)
    before = (out / "index.html").read_text(encoding="utf-8")
    tables = sorted(p.name for p in (out / "tables").iterdir())
    contents = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    calls = {"n": 0}
    real = build_mod._write_figure

    def fail_late(*args, **kw):
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("disk full")
        return real(*args, **kw)

    monkeypatch.setattr(build_mod, "_write_figure", fail_late)
    with pytest.raises(RuntimeError, match="disk full"):
        build_mod.build_report(frame, out, options=SMALL)
    assert calls["n"] == 4                                          # three figures were written first
    assert (out / "index.html").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in (out / "tables").iterdir()) == tables
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == contents
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]          # no half-built folder left behind


def test_an_interrupted_atomic_write_leaves_the_file_and_no_temporary(tmp_path, monkeypatch):
    """Ctrl-C during write_bytes_atomic (the replay's partial rows, the fit's outputs): the target keeps
    what it held and no temporary file is left beside it."""
    import os

    from deplbench.instances.fit import write_bytes_atomic

    target = tmp_path / "r.json.partial"
    write_bytes_atomic(target, b"[1]")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bytes_atomic(target, b"[1, 2]")
    assert [p.name for p in tmp_path.iterdir()] == [target.name] and target.read_bytes() == b"[1]"


# ---- finding 9: fit, logs, .solu names, the plugin hook ------------------------------------------

LOG = "run,epoch,model,loss\n" + "".join(
    f"{r},{k},{'' if k == 0 else 'm'},{10.0 / (1 + k) + 0.01 * i + 0.003 * (k % 3)}\n"
    for i, r in enumerate("abc") for k in range(6))


def test_fit_refuses_to_overwrite_its_input(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text(LOG, encoding="utf-8")
    assert main(["fit", str(log), "-o", str(log)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert log.read_text(encoding="utf-8") == LOG


@pytest.mark.parametrize("case", ["report-name", "report-dot", "report-holds-base", "report-parent"])
def test_fit_refuses_a_report_folder_that_holds_an_input(tmp_path, monkeypatch, deplbench_cli, case):
    """A ``--report`` folder that holds an input of ``fit`` (the log under a name the
    report writes, ``fit-report.json``, which the report would replace; ``--report .``
    beside the log; a folder holding the log or the ``--base`` instance) is refused
    before the fit, as ``report --out`` is: one line naming ``--report``, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "base.json").write_text(json.dumps(two_model_data()), encoding="utf-8")
    log = {"report-name": Path("r") / "fit-report.json", "report-dot": Path("log.csv"),
           "report-holds-base": Path("log.csv"), "report-parent": Path("r") / "log.csv"}[case]
    log.write_text(LOG, encoding="utf-8")
    report = {"report-name": "r", "report-dot": ".", "report-holds-base": "b", "report-parent": str(tmp_path)}[case]
    base = ["--base", "b/base.json"] if case == "report-holds-base" else []
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    status, out, err = deplbench_cli("fit", log, *base, "-o", "fitted.json", "--report", report)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: --report {report}: contains the input "), err
    assert log.read_text(encoding="utf-8") == LOG
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before     # nothing written


@pytest.mark.parametrize("case, message", [
    ("output-folder", "error: --output {tmp}/r: cannot write (is a directory)"),
    ("output-link", "error: --output {tmp}/link.json: is the input {tmp}/log.csv"),
    ("output-base", "error: --output {tmp}/b.json: is the input {tmp}/b.json"),
    ("report-file", "error: --report {tmp}/log.csv: is a file; give a folder for the report"),
])
def test_fit_checks_its_outputs_against_its_inputs_before_the_fit(tmp_path, deplbench_cli, case, message):
    """``-o`` a folder, ``-o`` a link to the log or the ``--base`` instance itself, and
    ``--report`` an existing file are refused before the fit, exit 2, one line naming the
    option; the log and the base instance are unchanged."""
    log = tmp_path / "log.csv"
    log.write_text(LOG, encoding="utf-8")
    (tmp_path / "r").mkdir()
    (tmp_path / "link.json").symlink_to(log)
    (tmp_path / "b.json").write_text(json.dumps(two_model_data()), encoding="utf-8")
    argv = {"output-folder": ["-o", tmp_path / "r"], "output-link": ["-o", tmp_path / "link.json"],
            "output-base": ["--base", tmp_path / "b.json", "-o", tmp_path / "b.json"],
            "report-file": ["-o", tmp_path / "f.json", "--report", log]}[case]
    status, out, err = deplbench_cli("fit", log, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(message.format(tmp=tmp_path)), err
    assert log.read_text(encoding="utf-8") == LOG and not (tmp_path / "f.json").exists()
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8")) == two_model_data()


def test_log_epoch_1e20_is_one_error_on_the_right_line(tmp_path):
    import warnings

    from deplbench.instances.fit.logs import LogError, read_logs

    path = tmp_path / "log.csv"
    path.write_text(LOG.replace("a,3,m,", "a,1e20,m,", 1), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # a RuntimeWarning would fail here
        with pytest.raises(LogError, match=r"column 'epoch': 1e\+20 on line 5 is not an integer in \[0, "):
            read_logs(path)


def test_log_single_wild_loss_row_is_refused(tmp_path):
    from deplbench.instances.fit.logs import LogError, read_logs

    lines = LOG.splitlines(keepends=True)
    lines[9] = "b,2,m,-1000000\n"
    path = tmp_path / "log.csv"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(LogError, match=r"column 'loss': -1e\+06 on line 10 is over 1000 times the logs' median"):
        read_logs(path)


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "sub/x", ".hidden"])
def test_solu_names_are_confined_to_the_library(tmp_path, name):
    from deplbench.benchmarks.library.solu import SoluError, read_solu

    path = tmp_path / "d.solu"
    path.write_text(f"=opt= ok-1 1.5\n=opt= {name} 2.0\n", encoding="utf-8")
    with pytest.raises(SoluError, match="line 2: instance name .* is not a plain file name"):
        read_solu(str(path))


def test_installed_command_ignores_the_test_plugin_hook(tmp_path, monkeypatch, capsys):
    """The console script (pyproject) is cli.command, which drops the hook;
    cli.main (the tests' entry) keeps it."""
    import sys
    import tomllib

    from deplbench import cli

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["deplbench"] == "deplbench.cli:command"
    marker = tmp_path / "ran"
    plugin = tmp_path / "evil.py"
    plugin.write_text(f"open({str(marker)!r}, 'w').write('x')\nALGORITHMS = {{}}\n", encoding="utf-8")
    sweep = tmp_path / "s.toml"
    sweep.write_text('[[instances]]\nid = "k"\nfamily = "knapsack"\nparams = { n_items = 5 }\n'
                     '[[algorithms]]\nname = "knapsack-dp"\n', encoding="utf-8")
    argv = ["run", str(sweep), "--db", str(tmp_path / "r.sqlite"), "--dry-run"]
    monkeypatch.setenv(cli.TEST_PLUGIN_ENV, str(plugin))
    monkeypatch.setattr(sys, "argv", ["deplbench", *argv])
    assert cli.command() == 0
    assert not marker.exists()                              # the hook was not run by the command
    monkeypatch.setenv(cli.TEST_PLUGIN_ENV, str(plugin))
    assert cli.main(argv) == 0
    assert marker.exists()                                  # ... while cli.main (tests) still runs it
    capsys.readouterr()
