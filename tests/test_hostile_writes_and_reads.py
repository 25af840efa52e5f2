"""Hostile input to the writers and readers: NaN in checkers, commands that
would destroy their inputs, writes through symbolic links, CSV injection
through line breaks, sweeps that walk or count too much, unbounded reads, a
trusted library manifest, and non-standard JSON.

None needs a solver run except where marked slow.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import sqlite3
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from deplbench.benchmarks.library import LIBRARY_VERSION
from deplbench.cli import main
from deplbench.errors import SolverError, SweepError

HOSTILE_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _strict_loads(text: str):
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


# ---- finding 3: a checker that accepted NaN ----------------------------------------------------------


@pytest.mark.parametrize("token", ["nan", "NaN", "inf", "-Infinity"])
def test_solution_reader_rejects_non_finite_values_naming_line_and_variable(tmp_path, token):
    from deplbench.benchmarks.library.verify import read_sol

    sol = tmp_path / "s.sol"
    sol.write_text(f"# solution\nx_1 1\nN_2 {token}\n", encoding="utf-8")
    with pytest.raises(SolverError, match=rf"line 3: value '{token}' of 'N_2' is not a finite number"):
        read_sol(str(sol))


def test_violation_check_flags_non_finite_columns():
    import numpy as np

    from deplbench.benchmarks.library import verify

    class Model:                      # one column, one row x ≤ 1: nan compares false with both
        col_names = ["x"]
        lb = np.zeros(1)
        ub = np.ones(1)
        integer = np.zeros(1, dtype=bool)
        A = np.ones((1, 1))
        row_lo = np.array([-np.inf])
        row_hi = np.ones(1)
        row_names = ["r"]

        def pwl_rows(self):
            return self.A, self.row_lo, self.row_hi, self.row_names

    viol = verify._violations(Model(), "pwl", np.array([np.nan]))
    assert viol and "not a finite number" in viol[0][1]


# ---- finding 4: commands that destroyed what they read ---------------------------------------------


def _store(tmp_path: Path, label: str = "ok", cost: float = 1.0) -> Path:
    from deplbench.benchmarks.store import ResultsStore

    db = tmp_path / "s.sqlite"
    with ResultsStore(db):
        pass
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        cols = [r[1] for r in con.execute("PRAGMA table_info(results)")]
        row = {c: None for c in cols}
        row.update({k: v for k, v in {"key": "k1", "algorithm": "depl", "label": label, "status": "feasible",
                                       "cost": cost, "failed": 0}.items() if k in cols})
        con.execute(f"INSERT INTO results ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                    list(row.values()))
    return db


def _is_store(db: Path) -> bool:
    with contextlib.closing(sqlite3.connect(db)) as con:
        return con.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("how", ["same", "symlink", "dotdot", "wal"])
def test_export_refuses_to_write_over_its_store(tmp_path, capsys, fmt, how):
    db = _store(tmp_path)
    (tmp_path / "sub").mkdir()
    out = {"same": db, "symlink": tmp_path / "link.out", "dotdot": tmp_path / "sub" / ".." / "s.sqlite",
           "wal": tmp_path / "s.sqlite-wal"}[how]
    if how == "symlink":
        out.symlink_to(db)
    assert main(["export", str(db), "--format", fmt, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the input" in err and "-o" in err
    assert _is_store(db)


def test_solve_refuses_to_write_its_result_over_the_instance(tmp_path, capsys):
    from tests.instance_data import two_model_data

    inst = tmp_path / "i.json"
    inst.write_text(json.dumps(two_model_data()), encoding="utf-8")
    before = inst.read_bytes()
    assert main(["solve", str(inst), "--algo", "depl", "-o", str(inst)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert inst.read_bytes() == before


def test_report_refuses_an_output_folder_that_contains_its_store(tmp_path, capsys):
    rep = tmp_path / "rep"
    (rep / "tables").mkdir(parents=True)
    db = _store(tmp_path)
    inside = rep / "tables" / "my.sqlite"
    os.replace(db, inside)
    (rep / "tables" / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["report", str(inside), "--out", str(rep), "--no-svg", "--quiet"]) == 2
    assert "contains the input" in capsys.readouterr().err
    assert _is_store(inside) and (rep / "tables" / "notes.txt").read_text(encoding="utf-8") == "mine"


def _fake_build(work: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")


def test_report_publish_removes_only_the_files_its_manifest_lists(tmp_path):
    from deplbench.reports.build import _publish

    out = tmp_path / "rep"
    (out / "tables").mkdir(parents=True)
    (out / "figures").mkdir()
    (out / "tables" / "old_table.csv").write_text("old", encoding="utf-8")
    (out / "tables" / "my.sqlite").write_text("store", encoding="utf-8")
    (out / "tables" / "notes.csv").write_text("a user's own table", encoding="utf-8")
    (out / "figures" / "mine.png").write_text("a user's figure", encoding="utf-8")
    # an earlier report's manifest; a forged entry naming the store is not a report file
    (out / "manifest.json").write_text(json.dumps({"files": ["index.html", "manifest.json",
                                                             "tables/old_table.csv", "tables/my.sqlite",
                                                             "../outside.txt"]}), encoding="utf-8")
    (tmp_path / "outside.txt").write_text("keep", encoding="utf-8")
    work = tmp_path / ".rep.building"
    _fake_build(work, {"index.html": "<html>", "tables/new.csv": "a\n1\n", "figures/f.png": "png",
                       "manifest.json": json.dumps({"files": ["index.html", "manifest.json", "tables/new.csv",
                                                             "figures/f.png"]})})
    _publish(work, out)
    assert not (out / "tables" / "old_table.csv").exists()                     # the report's own old file
    for kept in ("tables/my.sqlite", "tables/notes.csv", "figures/mine.png"):
        assert (out / kept).is_file(), kept
    assert (tmp_path / "outside.txt").is_file()
    assert (out / "tables" / "new.csv").is_file() and (out / "index.html").is_file()
    assert not work.exists()


def test_report_publish_refuses_a_tables_folder_linked_out_of_the_report(tmp_path):
    from deplbench.reports.build import _publish
    from deplbench.reports.data import ReportError

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "rep"
    out.mkdir()
    (out / "tables").symlink_to(elsewhere)
    work = tmp_path / ".rep.building"
    _fake_build(work, {"index.html": "x", "tables/t.csv": "a\n", "manifest.json": "{}"})
    with pytest.raises(ReportError, match="outside the folder"):
        _publish(work, out)
    assert list(elsewhere.iterdir()) == []


# ---- finding 5: a write outside the run folder through a symbolic link -----------------------------


def _write_lp_sweep(tmp_path: Path, value: str) -> Path:
    from tests.instance_data import two_model_data

    (tmp_path / "i.json").write_text(json.dumps(two_model_data()), encoding="utf-8")
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'[sweep]\nname = "w"\n[[instances]]\nid = "g"\npath = "i.json"\n'
                     f'[[algorithms]]\nname = "milp"\nparams = {{write_lp = "{value}"}}\n', encoding="utf-8")
    return sweep


def test_sweep_output_through_a_symlink_out_of_the_run_folder_is_refused(tmp_path, monkeypatch):
    from deplbench.benchmarks.sweep import load_sweep

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / "out").symlink_to(elsewhere)
    monkeypatch.chdir(run)
    sweep = _write_lp_sweep(run, "out/model.lp")
    with pytest.raises(SweepError, match=r"write_lp: 'out/model.lp' resolves to .*elsewhere.*outside the folder"):
        load_sweep(sweep)


def test_task_checks_its_output_again_before_writing(tmp_path, monkeypatch):
    from deplbench.benchmarks.tasks import confine_outputs

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)
    confine_outputs({"write_lp": "out/model.lp"})          # a plain folder: fine
    (run / "out").symlink_to(elsewhere)                    # created after the sweep was loaded
    with pytest.raises(SweepError, match="params.write_lp"):
        confine_outputs({"write_lp": "out/model.lp"})


# ---- finding 6: CSV injection through a line break --------------------------------------------------

EVIL = ["x\r=cmd|' /C calc'!A0", "ok\n-2+3", "line\r\n@SUM(A1)", "\t=tab", "plain", "-negative text"]


def _cells_are_inert(text: str, n_rows: int, numeric: str) -> None:
    """Read the CSV back as Python's csv module and a spreadsheet would."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == n_rows + 1                                   # no row smuggled in by a bare CR
    head = rows[0]
    for row in rows[1:]:
        for name, cell in zip(head, row):
            if name == numeric:
                float(cell)                                          # numbers stay numbers
                continue
            # a spreadsheet evaluates any line of a cell that begins a formula
            for line in cell.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                assert not line.startswith(HOSTILE_PREFIXES), (name, cell)
    raw_lines = text.split("\r\n")
    for line in raw_lines:                                           # what a line-based reader sees
        assert not line.startswith(HOSTILE_PREFIXES[:4]), line


def test_csv_writer_neutralises_every_line_and_quotes_line_breaks():
    from deplbench.files import csv_text

    frame = pd.DataFrame({"label": EVIL, "cost": [-1.5, -2.0, 3.0, 4.0, 5.0, 6.0]})
    text = csv_text(frame)
    _cells_are_inert(text, len(EVIL), "cost")
    back = pd.read_csv(io.StringIO(text))
    assert list(back["cost"]) == [-1.5, -2.0, 3.0, 4.0, 5.0, 6.0]
    assert back["label"][4] == "plain"
    for cell in EVIL:
        if "\n" in cell or "\r" in cell:
            assert f'"{cell[:2]}' in text or f"\"{cell.splitlines()[0]}" in text   # quoted


def test_export_csv_is_inert(tmp_path, capsys):
    db = _store(tmp_path, label=EVIL[0], cost=-3.25)
    out = tmp_path / "x.csv"
    assert main(["export", str(db), "--format", "csv", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8", errors="strict")
    with open(out, encoding="utf-8", newline="") as fh:
        text = fh.read()
    _cells_are_inert(text, 1, "cost")
    assert float(next(csv.DictReader(io.StringIO(text, newline="")))["cost"]) == -3.25


def test_report_tables_use_the_same_writer(tmp_path):
    from deplbench.reports.build import _write_table
    from deplbench.reports.elements import Table

    (tmp_path / "tables").mkdir()
    frame = pd.DataFrame({"algorithm": EVIL, "cost": [-1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    _write_table(tmp_path, Table("evil", "Evil", frame, ("algorithm", "cost")))
    with open(tmp_path / "tables" / "evil.csv", encoding="utf-8", newline="") as fh:
        _cells_are_inert(fh.read(), len(EVIL), "cost")


# ---- finding 7: sweeps that walked or counted too much -------------------------------------------


def _glob_sweep(folder: Path, path: str, reps: int = 1, cap: int | None = None) -> Path:
    from tests.instance_data import two_model_data

    (folder / "inst").mkdir(parents=True, exist_ok=True)
    for i in range(3):
        data = two_model_data()
        data["name"] = f"i{i}"
        (folder / "inst" / f"i{i}.json").write_text(json.dumps(data), encoding="utf-8")
    sweep = folder / "s.toml"
    sweep.write_text('[sweep]\nname = "g"\n' + (f"max_tasks = {cap}\n" if cap else "")
                     + f'[[instances]]\nid = "g"\npath = "{path}"\n'
                     f'[[algorithms]]\nname = "depl"\nrepetitions = {reps}\n', encoding="utf-8")
    return sweep


def test_glob_files_and_repetitions_count_toward_max_tasks(tmp_path):
    from deplbench.benchmarks.sweep import load_sweep

    with pytest.raises(SweepError, match=r"max_tasks: the sweep expands to up to 12 tasks > the cap 10"):
        load_sweep(_glob_sweep(tmp_path, "inst/*.json", reps=4, cap=10))
    assert len(load_sweep(_glob_sweep(tmp_path, "inst/*.json", reps=3, cap=9)).tasks()) == 9


def test_glob_outside_the_sweep_folder_is_refused(tmp_path):
    from deplbench.benchmarks.sweep import load_sweep

    for pattern in ("/**/*.json", "../*.json", "inst/../../*.json"):
        with pytest.raises(SweepError, match="must stay inside the sweep file's folder"):
            load_sweep(_glob_sweep(tmp_path, pattern))


def test_glob_does_not_follow_a_symlink_loop(tmp_path):
    from deplbench.benchmarks.sweep import load_sweep

    sweep = _glob_sweep(tmp_path, "inst/**/*.json")
    (tmp_path / "inst" / "loop").symlink_to(tmp_path / "inst")
    (tmp_path / "inst" / "up").symlink_to(tmp_path)
    result: dict = {}

    def load():
        try:
            result["n"] = len(load_sweep(sweep).tasks())
        except Exception as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    t = threading.Thread(target=load, daemon=True)
    t0 = time.perf_counter()
    t.start()
    t.join(60)
    assert not t.is_alive(), "the glob followed the symlink loop"
    assert result.get("n") == 3, result
    assert time.perf_counter() - t0 < 60


def test_glob_match_leading_out_of_the_tree_is_refused(tmp_path):
    from deplbench.benchmarks.sweep import load_sweep
    from tests.instance_data import two_model_data

    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(two_model_data()), encoding="utf-8")
    sweep = _glob_sweep(tmp_path / "sw", "inst/*.json")
    (tmp_path / "sw" / "inst" / "z.json").symlink_to(outside)
    with pytest.raises(SweepError, match="leads out of the sweep file's folder"):
        load_sweep(sweep)


# ---- finding 8: unbounded reads ---------------------------------------------------------------------


class _Fifo:
    """A FIFO whose writer end opens (and closes) after a while: code that
    wrongly reads it returns instead of blocking the suite forever, and
    :attr:`unblocked` records that a reader was blocked on it (a wrong
    read, whatever the machine's speed)."""

    def __init__(self, tmp_path: Path):
        self.path = tmp_path / "pipe"
        os.mkfifo(self.path)
        self.done = threading.Event()
        self.unblocked = False
        threading.Thread(target=self._unblock, daemon=True).start()

    def _unblock(self) -> None:
        if self.done.wait(3):
            return
        try:                    # only when a reader is blocked on it (else ENXIO: nothing to unblock)
            fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
        self.unblocked = True
        os.write(fd, b"{}")
        os.close(fd)


READERS = {
    "validate": lambda p, tmp: ["validate", str(p)],
    "evaluate-instance": lambda p, tmp: ["evaluate", str(p), str(tmp / "plan.json")],
    "evaluate-plan": lambda p, tmp: ["evaluate", str(tmp / "inst.json"), str(p)],
    "fit-log": lambda p, tmp: ["fit", str(p), "-o", str(tmp / "fitted.json")],
    "fit-base": lambda p, tmp: ["fit", str(tmp / "log.csv"), "--base", str(p), "-o", str(tmp / "fitted.json")],
    "run": lambda p, tmp: ["run", str(p), "--db", str(tmp / "x.sqlite"), "--dry-run"],
    "solve": lambda p, tmp: ["solve", str(p), "--algo", "depl"],
}


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
@pytest.mark.parametrize("command", sorted(READERS))
def test_non_regular_files_are_refused_before_reading(tmp_path, capsys, command, kind):
    from tests.instance_data import two_model_data

    (tmp_path / "inst.json").write_text(json.dumps(two_model_data()), encoding="utf-8")
    (tmp_path / "plan.json").write_text("{}", encoding="utf-8")
    (tmp_path / "log.csv").write_text("run,epoch,model,loss\n", encoding="utf-8")
    fifo = None if kind == "dev-zero" else _Fifo(tmp_path)
    target = Path("/dev/zero") if fifo is None else fifo.path
    if kind == "dev-zero" and not target.exists():
        pytest.skip("no /dev/zero on this system")
    assert main(READERS[command](target, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err and str(target) in err
    if fifo is not None:                                  # refused from stat, never opened for reading
        fifo.done.set()
        assert not fifo.unblocked


def test_library_readers_refuse_non_regular_files(tmp_path):
    from deplbench.benchmarks.library import read_sol, read_solu
    from deplbench.benchmarks.library.build import library_files

    with pytest.raises(SolverError, match="not a regular file"):
        read_sol("/dev/zero")
    with pytest.raises(Exception, match="not a regular file"):
        read_solu("/dev/zero")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "manifest.json").symlink_to("/dev/zero")
    with pytest.raises(SolverError, match="not a regular file"):
        library_files(str(lib))


def test_oversized_solution_file_is_refused_before_reading(tmp_path):
    from deplbench import limits
    from deplbench.benchmarks.library import read_sol

    big = tmp_path / "big.sol"
    with open(big, "wb") as fh:
        fh.truncate(limits.MAX_INPUT_BYTES + 1)            # sparse: no disk used
    with pytest.raises(SolverError, match="larger than the limit"):
        read_sol(str(big))


def test_gzip_bomb_is_refused_after_counting(tmp_path, monkeypatch):
    import gzip

    from deplbench import limits

    monkeypatch.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**20)
    bomb = tmp_path / "b.mps.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b"\0" * (3 * 2**20))
    with pytest.raises(SolverError, match="inflates to 3 MiB, beyond the limit"):   # from the trailer
        limits.check_gzip_size(bomb, "pwl model", SolverError)
    with pytest.raises(SolverError, match="inflates beyond the limit"):
        limits.read_bytes(bomb, "pwl model", SolverError)
    forged = tmp_path / "forged.mps.gz"              # a trailer that lies: counted while inflating
    forged.write_bytes(bomb.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(SolverError, match="inflates beyond the limit"):
        limits.check_gzip_size(forged, "pwl model", SolverError)
    monkeypatch.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**30)
    with pytest.raises(SolverError, match="still inflating after 0 s"):                # the time bound
        limits.check_gzip_size(forged, "pwl model", SolverError, seconds=0.0)
    monkeypatch.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**20)
    ok = tmp_path / "ok.mps.gz"
    with gzip.open(ok, "wb") as fh:
        fh.write(b"NAME x\n")
    limits.check_gzip_size(ok, "pwl model", SolverError)
    assert limits.read_bytes(ok, "pwl model", SolverError) == b"NAME x\n"
    bad = tmp_path / "bad.mps.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(SolverError, match="not a valid gzip file"):
        limits.check_gzip_size(bad, "pwl model", SolverError)


# ---- finding 9: the library trusted its manifest -------------------------------------------------


def _fake_library(tmp_path: Path, entries) -> Path:
    lib = tmp_path / "lib"
    (lib / "instances").mkdir(parents=True, exist_ok=True)
    for name in ("pwl.solu", "minlp.solu"):
        (lib / name).write_text("", encoding="utf-8")
    (lib / "manifest.json").write_text(json.dumps({"library_version": LIBRARY_VERSION, "pwl_tolerance": 1e-4,
                                                   "entries": entries}), encoding="utf-8")
    return lib


def _entry(**over) -> dict:
    return {"name": "a", "instance": "instances/a.json", "pwl": None, "minlp": None, "scenarios": 10,
            "seed": 0, **over}


@pytest.mark.parametrize("entries, message", [
    ([1, 2], r"entries\[0\]: expected an object, got int"),
    ("x", r"entries: expected a list of objects, got str"),
    ([_entry(instance="/etc/passwd")], r"entries\[0\].instance: '/etc/passwd' is an absolute path"),
    ([_entry(instance="../../etc/passwd")], r"entries\[0\].instance: .* leaves the library"),
    ([_entry(pwl="pwl/../../x.mps.gz")], r"entries\[0\].pwl: .* leaves the library"),
    ([_entry(minlp_files=["minlp/a.nl.gz", "/tmp/x"])], r"entries\[0\].minlp_files\[1\]"),
    ([_entry(name="../a")], r"entries\[0\].name"),
    ([_entry(), _entry()], r"entries\[1\].name: 'a' appears twice"),
    ([_entry(scenarios="many")], r"entries\[0\].scenarios"),
    ([_entry(instance=7)], r"entries\[0\].instance: expected a relative file path"),
    ([_entry(instance_sha256=5)], r"entries\[0\].instance_sha256: expected a string, got int"),
])
def test_manifest_is_validated_with_one_line_naming_the_field(tmp_path, capsys, entries, message):
    from deplbench.benchmarks.library.build import library_files

    lib = _fake_library(tmp_path, entries)
    with pytest.raises(SolverError, match=message):
        library_files(str(lib))
    assert main(["library", "verify", str(lib), "a", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_manifest_path_through_a_symlink_is_refused(tmp_path):
    from deplbench.benchmarks.library.build import library_files

    outside = tmp_path / "outside"
    outside.mkdir()
    lib = _fake_library(tmp_path, [_entry()])
    (lib / "instances").rmdir()
    (lib / "instances").symlink_to(outside)
    with pytest.raises(SolverError, match="leads through a symbolic link"):
        library_files(str(lib))


# ---- finding 10: non-standard JSON ----------------------------------------------------------------


def test_json_writer_is_rfc8259_with_the_reason_beside_each_null():
    import numpy as np

    from deplbench.jsonio import dumps, print_json

    doc = {"gap": math.inf, "lower": -math.inf, "ci": [0.5, math.nan], "a": np.array([1.0, np.inf]),
           "nested": {"x": np.float64("nan")}, "ok": 1.5}
    for text in (dumps(doc), _capture(print_json, doc)):
        back = _strict_loads(text)
        assert back["gap"] is None and back["gap_nonfinite"] == "inf"
        assert back["lower"] is None and back["lower_nonfinite"] == "-inf"
        assert back["ci"] == [0.5, None] and back["ci_nonfinite"] == {"1": "nan"}
        assert back["a_nonfinite"] == {"1": "inf"} and back["nested"] == {"x": None, "x_nonfinite": "nan"}
        assert back["ok"] == 1.5


def _capture(fn, obj) -> str:
    buf = io.StringIO()
    fn(obj, file=buf)
    return buf.getvalue()


def test_library_summary_with_nan_prints_strict_json(capsys):
    from deplbench.jsonio import print_json

    print_json({"summary": {"shifted_geomean_s": float("nan")}})     # a check with no solved instance
    assert _strict_loads(capsys.readouterr().out)["summary"]["shifted_geomean_s_nonfinite"] == "nan"


@pytest.mark.slow          # one DepL solve (a second or two)
def test_solve_output_reads_back_into_evaluate(tmp_path, capsys):
    inst = tmp_path / "tiny.json"
    assert main(["generate", "realistic", "--family", "alexnet", "--seed", "0", "-o", str(inst)]) == 0
    data = json.loads(inst.read_text(encoding="utf-8"))
    data["omega"] = 1e-9                                  # the quantile's CI has lower end -inf
    inst.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "r.json"
    capsys.readouterr()
    main(["solve", str(inst), "--algo", "depl", "-o", str(out), "--json"])
    printed = _strict_loads(capsys.readouterr().out)
    written = _strict_loads(out.read_text(encoding="utf-8"))
    assert written["plan"] is not None and printed["plan"] == written["plan"]
    assert "-inf" in json.dumps(written)                  # the case is exercised: a reason beside a null
    assert main(["evaluate", str(inst), str(out)]) in (0, 1)
    assert "error:" not in capsys.readouterr().err


def _lib_with_model(tmp_path: Path, content: bytes, recorded: bytes | None = None) -> Path:
    import hashlib

    lib = _fake_library(tmp_path, [_entry(pwl="pwl/a.mps.gz", pwl_sha256=hashlib.sha256(
        content if recorded is None else recorded).hexdigest())])
    (lib / "pwl").mkdir()
    (lib / "pwl" / "a.mps.gz").write_bytes(content)
    (lib / "pwl.solu").write_text("=opt=  a  1.0\n", encoding="utf-8")
    return lib


@pytest.mark.parametrize("case", ["unreadable", "edited", "bomb"])
def test_library_check_reports_a_broken_model_file_as_a_mismatch(tmp_path, monkeypatch, capsys, case):
    import gzip

    from deplbench import limits
    from deplbench.benchmarks.library import check_library

    monkeypatch.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**20)
    if case == "unreadable":          # the manifest's sha256 matches, the solver cannot read it
        lib = _lib_with_model(tmp_path, gzip.compress(b"this is not an MPS file\n", mtime=0))
    elif case == "edited":
        lib = _lib_with_model(tmp_path, gzip.compress(b"NAME a\n", mtime=0), recorded=b"the original")
    else:
        lib = _lib_with_model(tmp_path, gzip.compress(b"\0" * (3 * 2**20), mtime=0))
    row = check_library(str(lib), solver="highs", time_limit=5.0, kind="pwl")["instances"][0]
    assert row["status"] == "error" and row["agrees"] is False, row
    # refused before the solver sees it (a bomb is never inflated by HiGHS), and the reason says why
    why = {"unreadable": "could not solve", "edited": "differs from the one the library was built with",
           "bomb": "beyond the limit"}[case]
    assert why in row["reason"], row
    assert main(["library", "check", str(lib), "--model", "pwl", "--time-limit", "5", "--json"]) == 1
    doc = _strict_loads(capsys.readouterr().out)
    assert doc["summary"][0]["mismatches"] == 1


# ---- outputs that cannot be written, empty output paths ----------------------------------------------


def _knapsack(tmp_path) -> Path:
    from tests.instance_data import two_model_data

    inst = tmp_path / "i.json"
    inst.write_text(json.dumps(two_model_data()), encoding="utf-8")
    return inst


@pytest.mark.parametrize("where", ["proc", "folder", "missing"])
def test_solve_write_lp_that_cannot_be_written_is_refused_up_front(tmp_path, capsys, where):
    """``--write-lp`` into /proc, onto a folder or into a missing folder: one
    line naming the option, exit 2, before the solve (nothing on stdout)."""
    (tmp_path / "dir.lp").mkdir()
    target = {"proc": "/proc/deplbench-model.lp", "folder": str(tmp_path / "dir.lp"),
              "missing": str(tmp_path / "absent" / "m.lp")}[where]
    inst = _knapsack(tmp_path)
    assert main(["solve", str(inst), "--algo", "milp", "--scenarios", "10", "--eval-samples", "100",
                 "--write-lp", target]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"error: --write-lp {target}: cannot write (")
    assert not os.path.isfile(target)


def _drain_later(fifo: Path, after: float) -> threading.Event:
    """A reader that appears on ``fifo`` ``after`` seconds from now, unless the returned event is set
    first, and drains it: a write that waits for one (the defect tested) then ends, and the test fails
    on what the command returned instead of hanging."""
    stop = threading.Event()

    def drain():
        if stop.wait(after):
            return
        try:
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            while not stop.wait(0.05):
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 1 << 16)
        finally:
            os.close(fd)
    threading.Thread(target=drain, daemon=True).start()
    return stop


@pytest.mark.parametrize("argv, where", [
    (["certify", "{inst}", "-o", "{out}"], "proc"), (["certify", "{inst}", "-o", "{out}"], "fifo"),
    (["generate", "knapsack", "--output", "{out}"], "fifo"), (["schema", "--output", "{out}"], "fifo"),
    (["export", "{db}", "--format", "csv", "-o", "{out}"], "fifo"),
    (["export", "{db}", "--format", "parquet", "-o", "{out}"], "fifo"),
])
def test_an_output_no_one_can_write_is_refused_before_any_work(tmp_path, capsys, monkeypatch, argv, where):
    """``certify -o /proc/x.json`` ran the whole bracket and then failed, its --json output lost with it;
    ``-o`` a named pipe no one reads made certify, generate, schema and export wait for a reader forever."""
    import deplbench.solvers.certify.certified as certified

    monkeypatch.setattr(certified, "certify", lambda *a, **k: pytest.fail("the bracket ran"))
    target = "/proc/deplbench-bracket.json" if where == "proc" else str(tmp_path / "pipe")
    stop = threading.Event()
    if where == "fifo":
        os.mkfifo(target)
        stop = _drain_later(Path(target), after=10)
    files = {"inst": _knapsack(tmp_path), "db": _store(tmp_path)}
    argv = [a.format(**files, out=target) for a in argv]
    start = time.monotonic()
    try:
        status = main(argv)
    finally:
        stop.set()
    assert status == 2 and time.monotonic() - start < 8      # refused, not after waiting for the reader
    out, err = capsys.readouterr()
    option = argv[-2]
    assert out == "" and err.count("\n") == 1 and err.startswith(f"error: {option} {target}: cannot write ("), err


@pytest.mark.parametrize("argv", [
    ["generate", "knapsack", "--output", "{out}"], ["schema", "--output", "{out}"],
    ["export", "{db}", "--format", "csv", "-o", "{out}"], ["solve", "{inst}", "--algo", "knapsack-dp", "-o", "{out}"],
])
def test_an_output_pipe_with_a_reader_gets_the_whole_output(tmp_path, capsys, argv):
    """The check that refuses a pipe no one reads opens it for writing; closing that probe at once
    gave a waiting reader end-of-file before the command wrote, and the write then waited forever."""
    files = {"inst": _knapsack(tmp_path), "db": _store(tmp_path)}
    plain = tmp_path / "plain.out"
    assert main([a.format(**files, out=plain) for a in argv]) == 0
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read():
        with open(fifo, "rb") as f:                  # blocks until a writer opens the pipe
            got.append(f.read())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.2)                                    # the reader waits on the pipe first
    stop = _drain_later(fifo, after=15)                # a hung write ends, and the test fails
    try:
        status = main([a.format(**files, out=fifo) for a in argv])
    finally:
        stop.set()
    reader.join(timeout=20)
    capsys.readouterr()
    assert status == 0 and not reader.is_alive() and got == [plain.read_bytes()]


@pytest.mark.parametrize("case", ["instance", "link-to-instance", "param", "output", "output-dotted"])
def test_solve_write_lp_over_the_instance_or_the_result_is_refused_before_solving(tmp_path, monkeypatch,
                                                                                   deplbench_cli, case):
    """``--write-lp`` the instance ``solve`` reads (by name, through a link or as
    ``--param write_lp``), or the file ``-o`` writes the result to, is refused before the
    solve, exit 2: one line naming how the model file is given; nothing is written."""
    import deplbench.solvers.run as run_mod

    monkeypatch.setattr(run_mod, "solve", lambda *a, **k: pytest.fail("solved before the refusal"))
    monkeypatch.chdir(tmp_path)
    inst = tmp_path / "inst.lp"
    inst.write_bytes(_knapsack(tmp_path).read_bytes())
    Path("link.lp").symlink_to(inst)
    argv, message = {
        "instance": (["--write-lp", "inst.lp"], "--write-lp inst.lp: is the input inst.lp;"),
        "link-to-instance": (["--write-lp", "link.lp"], "--write-lp link.lp: is the input inst.lp;"),
        "param": (["--param", "write_lp=inst.lp"], "--param write_lp inst.lp: is the input inst.lp;"),
        "output": (["--write-lp", "same.lp", "-o", "same.lp"], "--write-lp same.lp: is the -o file same.lp;"),
        "output-dotted": (["--write-lp", "./same.lp", "-o", "same.lp"], "--write-lp ./same.lp: is the -o file"),
    }[case]
    before = inst.read_bytes()
    status, out, err = deplbench_cli("solve", "inst.lp", "--algo", "milp", "--eval-samples", 100, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {message}"), err
    assert inst.read_bytes() == before and not Path("same.lp").exists()


def test_sweep_write_lp_over_an_instance_file_is_refused_at_load(tmp_path, monkeypatch):
    """A sweep whose instance file ``i.lp`` is also its ``write_lp`` is refused when it is
    loaded, naming the parameter: its first task would replace the instance by the model file."""
    from deplbench.benchmarks.sweep import load_sweep

    monkeypatch.chdir(tmp_path)
    sweep = _write_lp_sweep(tmp_path, "i.lp")
    sweep.write_text(sweep.read_text(encoding="utf-8").replace('path = "i.json"', 'path = "i.lp"'), encoding="utf-8")
    (tmp_path / "i.json").rename(tmp_path / "i.lp")
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params\.write_lp i\.lp: is the input .*i\.lp;"):
        load_sweep(sweep)
    load_sweep(_write_lp_sweep(tmp_path, "model.lp"))          # another file: fine


@pytest.mark.system_packages
def test_solve_write_lp_unwritable_through_pyomo_cbc_is_refused(tmp_path, capsys):
    """The Pyomo route (--solver pyomo:cbc) is checked the same way."""
    import shutil

    if shutil.which("cbc") is None:
        pytest.skip("the CBC executable is absent (Debian package coinor-cbc)")
    inst = _knapsack(tmp_path)
    assert main(["solve", str(inst), "--algo", "milp", "--scenarios", "10", "--eval-samples", "100",
                 "--solver", "pyomo:cbc", "--write-lp", "/proc/deplbench-model.lp"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "error: --write-lp /proc/deplbench-model.lp: cannot write (no such file or directory)\n"


def test_write_lp_checks_the_writers_status(tmp_path, monkeypatch):
    """Past the up-front check (a file system that fails only on write), the
    HiGHS writer's status is read: an unwritten model is an error naming
    write_lp, never a silent success."""
    from deplbench.formulations.milp import options, solve_milp
    from tests.milp_instances import tiny_instance

    monkeypatch.setattr(options, "unwritable", lambda path: "")
    with pytest.raises(SolverError, match=r"write_lp: cannot write '/proc/deplbench-m\.lp'"):
        solve_milp(tiny_instance(0), scenarios=10, write_lp="/proc/deplbench-m.lp", time_limit=None)


def test_api_solve_write_lp_unwritable_raises(tmp_path):
    from deplbench import solve
    from tests.milp_instances import tiny_instance

    with pytest.raises(SolverError, match=r"write_lp.*cannot write \(no such file"):
        solve(tiny_instance(0), "milp", write_lp="/proc/deplbench-x.lp", eval_samples=100)


def test_unwritable_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    from deplbench.files import unwritable

    assert unwritable(tmp_path / "new.lp") == "" and not (tmp_path / "new.lp").exists()
    assert list(tmp_path.iterdir()) == []          # its probe file is gone too
    old = tmp_path / "old.lp"
    old.write_text("kept", encoding="utf-8")
    assert unwritable(old) == "" and old.read_text(encoding="utf-8") == "kept"
    assert unwritable(tmp_path) == "is a directory"
    assert "does not exist" in unwritable(tmp_path / "no" / "x.lp")
    from deplbench.files import require_writable

    with pytest.raises(SweepError, match=r"^-o \S+: cannot write \(is a directory\)$"):
        require_writable(tmp_path, "-o", SweepError)
    require_writable(old, "-o", SweepError)                  # a writable file: nothing to say


@pytest.mark.parametrize("argv", [
    ["solve", "{inst}", "--algo", "one-switch", "--eval-samples", "100", "-o", ""],
    ["solve", "{inst}", "--algo", "milp", "--write-lp", ""],
    ["certify", "{inst}", "-o", ""],
    ["generate", "knapsack", "-o", ""],
    ["schema", "-o", ""],
    ["export", "{inst}", "--format", "csv", "-o", ""],
    ["report", "{inst}", "--out", ""],
    ["fit", "{inst}", "-o", ""],
    ["library", "build", "--out", ""],
    ["run", "{inst}", "--db", ""],
])
def test_every_output_option_refuses_an_empty_path(tmp_path, capsys, argv):
    """``-o ''`` names no file: every output option refuses it the same way
    (exit 2, one line naming the option) instead of writing nothing and
    exiting 0."""
    inst = _knapsack(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main([a.replace("{inst}", str(inst)) for a in argv])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "empty path" in err


# ---- a store in a read-only folder ----------------------------------------------------------------


def _read_only_folder(monkeypatch, folder: Path) -> None:
    """Make ``folder`` behave as a read-only mount without a mount (or root,
    where permission bits mean nothing): creating a file there fails with
    EROFS while ``access(2)`` still says writable, as on a root-squashed or
    read-only network mount; a WAL reader that would need to create the
    ``-shm`` index there fails as SQLite does ("unable to open database
    file"); an ``immutable=1`` reader needs no side file and works."""
    import errno
    import tempfile

    real_connect = sqlite3.connect
    real_mkstemp = tempfile.mkstemp

    def connect(database, *args, uri=False, **kwargs):
        text = str(database)
        if uri and "mode=ro" in text and "immutable=1" not in text:
            # a URI whose file cannot be opened: the error a missing -shm gives
            return real_connect(f"file:{folder}/no-such-dir/x?mode=ro", *args, uri=True, **kwargs)
        return real_connect(database, *args, uri=uri, **kwargs)

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == folder.resolve():
            raise OSError(errno.EROFS, "Read-only file system", str(dir))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert os.access(folder, os.W_OK)       # the permission bits would call it writable


def test_store_in_a_read_only_folder_is_readable(tmp_path, monkeypatch, capsys):
    db = _store(tmp_path)
    _read_only_folder(monkeypatch, tmp_path)
    out = tmp_path.parent / f"{tmp_path.name}-out.csv"
    try:
        assert main(["export", str(db), "--format", "csv", "-o", str(out)]) == 0
        assert "k1" in out.read_text(encoding="utf-8")
    finally:
        out.unlink(missing_ok=True)
    assert "wrote 1 rows" in capsys.readouterr().err


def test_store_in_a_read_only_folder_with_a_wal_file_is_refused_not_read_partly(tmp_path, monkeypatch):
    from deplbench.benchmarks.store import ResultsStore

    db = _store(tmp_path)
    Path(f"{db}-wal").write_bytes(b"\0" * 64)
    _read_only_folder(monkeypatch, tmp_path)
    with pytest.raises(SweepError, match=r"read-only and it holds unmerged rows in s\.sqlite-wal"):
        ResultsStore(db, readonly=True)


def test_run_into_a_read_only_folder_says_so(tmp_path, monkeypatch, capsys):
    from deplbench.benchmarks.store import ResultsStore

    db = _store(tmp_path)
    _read_only_folder(monkeypatch, tmp_path)
    with pytest.raises(SweepError, match=r"its folder .* is read-only \(read-only file system; ") as exc:
        ResultsStore(db)
    assert "not a usable SQLite database" not in str(exc.value)


def test_store_file_sqlite_opens_read_only_is_named_as_such(tmp_path, monkeypatch):
    """A store file SQLite can open only read-only (its fallback when the file
    refuses writing) is named as read-only, not as a corrupt database; the
    check is SQLite's own, so no second descriptor of the store is opened."""
    from deplbench.benchmarks.store import ResultsStore

    db = _store(tmp_path)
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda database, *a, uri=False, **k: real_connect(
        f"{Path(database).resolve().as_uri()}?mode=ro", *a, uri=True, **k) if not uri else real_connect(
        database, *a, uri=uri, **k))
    with pytest.raises(SweepError, match=r"s\.sqlite: the file is read-only \(a run adds its results") as exc:
        ResultsStore(db)
    assert "not a usable SQLite database" not in str(exc.value)
    monkeypatch.undo()
    with ResultsStore(db, readonly=True) as store:      # still readable
        assert len(store.frame()) == 1


def test_folder_probe_is_the_one_of_every_output(tmp_path, monkeypatch):
    """``unwritable`` (solve --write-lp, export) and the store ask the same
    probe: a folder the file system refuses is refused by both."""
    from deplbench.files import folder_unwritable, unwritable

    assert folder_unwritable(tmp_path) == "" and not list(tmp_path.iterdir())
    assert folder_unwritable(tmp_path / "no") == f"directory {tmp_path / 'no'} does not exist"
    _read_only_folder(monkeypatch, tmp_path)
    assert folder_unwritable(tmp_path) == unwritable(tmp_path / "x.csv") == "read-only file system"


_MINI_SWEEP = ('[sweep]\nname="m"\nevaluation={samples=200,seed=0}\n[[instances]]\nid="k"\n'
               'family="knapsack"\nparams={n_items=4}\nseeds=[0]\n[[algorithms]]\nname="knapsack-dp"\n')


@pytest.mark.integration
@pytest.mark.slow
def test_store_on_a_read_only_mount_is_exported_and_run_is_refused(tmp_path, deplbench_cli):
    """The real case: a store on a read-only bind mount (needs a private mount
    namespace: root and ``unshare -m``; skipped otherwise)."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a read-only bind mount")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m is not allowed here ({probe.stderr.decode().strip()})")
    ro = tmp_path / "ro"
    ro.mkdir()
    sweep = tmp_path / "mini.toml"
    sweep.write_text(_MINI_SWEEP, encoding="utf-8")
    db = ro / "store.sqlite"
    # the store is made in this process; the commands on the read-only mount run in its namespace
    status, _, err = deplbench_cli("run", sweep, "--db", db, "--workers", 1, "--no-progress")
    assert status == 0, err
    cmd = [sys.executable, "-m", "deplbench"]
    script = (f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && "
              f"{' '.join(cmd)} export {db} --format csv -o {tmp_path / 'x.csv'}; echo rc=$?; "
              f"{' '.join(cmd)} run {sweep} --db {db} --workers 1 --no-progress; echo rc=$?")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    if "mount:" in done.stderr and "rc=" not in done.stdout:
        pytest.skip(f"cannot make a read-only bind mount here ({done.stderr.strip()})")
    assert done.stdout.split() == ["rc=0", "rc=2"], (done.stdout, done.stderr)
    assert "knapsack-dp" in (tmp_path / "x.csv").read_text(encoding="utf-8")
    assert "is read-only" in done.stderr and "not a usable SQLite database" not in done.stderr


# ---- report --bench-json naming one unusable file --------------------------------------------------


@pytest.mark.parametrize("content,why", [
    (b"\xff", "not a UTF-8 text file"),
    (b"[1, 2]", "no 'benchmarks' list"),
    (b'{"name": "an instance", "models": []}', "no 'benchmarks' list"),
])
def test_report_bench_json_naming_one_unusable_file_is_an_input_error(tmp_path, capsys, content, why):
    db = _store(tmp_path)
    bench = tmp_path / "bench.json"
    bench.write_bytes(content)
    assert main(["report", str(db), "--out", str(tmp_path / "rep"), "--bench-json", str(bench)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"error: --bench-json {bench}: not a pytest-benchmark JSON file") and why in err
    assert not (tmp_path / "rep").exists()


def test_report_bench_json_folder_still_skips_bad_files(tmp_path):
    """In a folder, other JSON files are skipped (a note in the report), not refused."""
    from deplbench.cli.reports import _check_bench_file
    from deplbench.reports.data import load_bench_json

    (tmp_path / "other.json").write_text("[1, 2]", encoding="utf-8")
    _check_bench_file(str(tmp_path))          # no error
    frame, notes = load_bench_json(tmp_path)
    assert frame.empty and any("other.json: not a pytest-benchmark JSON file" in n for n in notes)


# ---- the Python API: instances changed in code, arguments of the wrong type ------------------------


@pytest.mark.parametrize("update,field", [
    ({"omega": 5.0}, "omega"), ({"omega": math.nan}, "omega"), ({"loss_max": 1e9}, "loss_max"),
    ({"horizon": 0}, "horizon"), ({"time_max": -1.0}, "time_max"),
    ({"initial_loss": -1.0, "loss_max": 0.0}, "initial_loss"), ({"initial_loss": 1e300}, "initial_loss"),
])
def test_api_rechecks_an_instance_changed_in_code(update, field):
    """``model_copy(update=...)`` skips pydantic's validation: solve(),
    evaluate_plan() and closed_loop() check again and name the field
    (not ``cannot convert float NaN to integer`` from inside a solve)."""
    from deplbench import closed_loop, evaluate_plan, solve
    from deplbench.errors import InstanceError
    from tests.milp_instances import tiny_instance

    good = tiny_instance(0)
    result = solve(good, "one-switch", eval_samples=100)
    bad = good.model_copy(update=update)
    for call in (lambda: solve(bad, "milp", scenarios=10, eval_samples=100),
                 lambda: evaluate_plan(bad, result.plan, samples=100),
                 lambda: closed_loop(bad, result, runs=10)):
        with pytest.raises(InstanceError, match=rf"^instance: {field}: ") as err:
            call()
        assert "Value error" not in str(err.value) and str(err.value).count(", got ") <= 1   # one clean line


def test_api_rechecks_a_model_appended_in_code():
    from deplbench import evaluate_plan, solve
    from deplbench.errors import InstanceError
    from tests.milp_instances import tiny_instance

    inst = tiny_instance(0)
    result = solve(inst, "one-switch", eval_samples=100)
    inst.models.append(inst.models[0])
    with pytest.raises(InstanceError, match=r"instance: models: duplicate names"):
        solve(inst, "one-switch", eval_samples=100)
    with pytest.raises(InstanceError, match=r"instance: models: duplicate names"):
        evaluate_plan(inst, result.plan, samples=100)


@pytest.mark.parametrize("loader,error", [
    ("load_instance", "InstanceError"), ("load_plan", "PlanError"), ("load_sweep", "SweepError"),
])
@pytest.mark.parametrize("value", [None, 3, {"a": 1}])
def test_api_loaders_refuse_a_non_path_naming_the_argument(loader, error, value):
    import deplbench

    with pytest.raises(getattr(deplbench, error), match=r"^path: expected a file name .*got "):
        getattr(deplbench, loader)(value)


@pytest.mark.parametrize("args,field", [((None,), "path"), ((3,), "path"),
                                        (("r.sqlite", "no"), "readonly")])
def test_api_results_store_names_a_wrong_argument(tmp_path, monkeypatch, args, field):
    from deplbench.benchmarks.store import ResultsStore

    monkeypatch.chdir(tmp_path)
    path, *flag = args
    with pytest.raises(SweepError, match=rf"^{field}: expected "):
        ResultsStore(path, **({"readonly": flag[0]} if flag else {}))
    assert not (tmp_path / "r.sqlite").exists()


def test_api_closed_loop_names_a_misplaced_argument():
    from deplbench import closed_loop
    from tests.milp_instances import tiny_instance

    inst = tiny_instance(0)
    with pytest.raises(SolverError, match=r"^result: expected the SolveResult of solve\(\), got str"):
        closed_loop(inst, "pact")
    with pytest.raises(SolverError, match=r"^instance: expected an Instance"):
        closed_loop({"omega": 0.9}, None)


def test_run_names_a_directory_given_as_the_sweep(tmp_path, capsys):
    assert main(["run", str(tmp_path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: sweep file {tmp_path}: is a directory (give the sweep's .toml file)"


# ---- one value per parameter: --param twice, or beside its flag ------------------------------------


@pytest.mark.parametrize("argv,message", [
    (["solve", "{inst}", "--algo", "milp", "--scenarios", "1000", "--param", "scenarios=50"],
     "error: --scenarios: also given as --param scenarios"),
    (["solve", "{inst}", "--algo", "milp", "--param", "scenarios=50", "--scenarios", "1000"],
     "error: --scenarios: also given as --param scenarios"),
    (["solve", "{inst}", "--algo", "milp", "--param", "scenarios=50", "--param", "scenarios=60"],
     "error: --param scenarios: given twice"),
    (["simulate", "{inst}", "--algo", "milp", "--param", "scenarios=50", "--param", "scenarios=60"],
     "error: --param scenarios: given twice"),
    (["simulate", "{inst}", "--algo", "milp", "--param", "time-limit=5", "--param", "time_limit=6"],
     "error: --param time_limit: given twice"),
    (["generate", "knapsack", "--param", "n_items=5", "--param", "n_items=6"],
     "error: --param n_items: given twice"),
])
def test_a_parameter_given_twice_is_refused_whatever_the_order(tmp_path, capsys, argv, message):
    inst = _knapsack(tmp_path)
    assert main([a.replace("{inst}", str(inst)) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == message + "\n"


# ---- found by a fuzz of every command: each a one-line error naming what to fix -------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_export_to_a_full_device_names_the_output(tmp_path, capsys):
    db = _store(tmp_path)
    assert main(["export", str(db), "--format", "csv", "-o", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: -o /dev/full: cannot write (No space left"), err


@pytest.mark.parametrize("kind", ["deep", "device"])
def test_report_bench_json_deep_or_not_a_file_is_one_line(tmp_path, capsys, kind):
    db = _store(tmp_path)
    if kind == "deep":       # a RecursionError traceback out of the report
        bench = tmp_path / "deep.json"
        bench.write_text("[" * 10000 + "]" * 10000, encoding="utf-8")
        why = "not a pytest-benchmark JSON file (JSON nested too deeply to read)"
    else:                    # a device is neither a file nor a folder of benchmark files
        bench = Path("/dev/zero")
        why = "is neither a regular file nor a folder"
    assert main(["report", str(db), "--out", str(tmp_path / "rep"), "--bench-json", str(bench)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and why in err and "--bench-json" in err, err


def test_report_bench_json_folder_with_no_json_gets_a_note(tmp_path):
    from deplbench.reports.data import load_bench_json

    frame, notes = load_bench_json(tmp_path)
    assert frame.empty and notes == [f"no *.json files under {tmp_path}"]


def test_measure_replay_result_without_a_file_says_the_form(tmp_path, capsys):
    assert main(["measure", "replay", "--result", "foo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--result: expected NAME=FILE, got 'foo'" in err, err


@pytest.mark.parametrize("text,where", [
    ('{"name": "x", "models": [{"a": 1}, {"b": [1, NaN]}]}', "models[1].b[1]: non-finite number NaN"),
    ('{"omega": -Infinity}', "omega: non-finite number -Infinity"),
    ('{"a b": Infinity}', "instance['a b']: non-finite number Infinity"),
    ("NaN", "<root>: non-finite number NaN"),
    ('[{"a": 1}, {"a": NaN}]', "[1].a: non-finite number NaN"),      # check_shape's form of a location
])
def test_a_non_finite_constant_is_named_where_it_stands(tmp_path, capsys, text, where):
    path = tmp_path / "n.json"
    path.write_text(text, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: {where} is not allowed in an instance" in err, err


@pytest.mark.parametrize("text,where", [
    ('{"name": "x", "horizon": ' + "9" * 5000 + "}", "horizon: an integer of 5000 digits"),
    ('{"models": [{"a": -' + "1" * 4301 + "}]}", "models[0].a: an integer of 4301 digits"),
])
def test_an_integer_beyond_pythons_digit_limit_is_named_where_it_stands(tmp_path, capsys, text, where):
    """Python's int() refuses over 4300 digits with a line naming no field and a Python call."""
    path = tmp_path / "n.json"
    path.write_text(text, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: {where}, beyond any number" in err and "sys." not in err, err


def test_an_unknown_switch_model_lists_a_dozen_names_not_every_one():
    """A 5,000-model instance's message stays one short line: a dozen names and how many more."""
    from deplbench.errors import InstanceError
    from deplbench.instances.model import parse_instance
    from tests.instance_data import two_model_data

    data = two_model_data()
    model = data["models"][0]
    data["models"] = [{**model, "name": f"m{i:04d}"} for i in range(5000)]
    data["switches"] = [{**data["switches"][0], "from_model": "nobody", "to_model": "m0001"}]
    with pytest.raises(InstanceError) as info:
        parse_instance(data)
    msg = str(info.value)
    assert "switches[0].from_model: unknown model 'nobody'" in msg
    assert "'m0011', ... and 4988 more]" in msg and "m0012" not in msg and len(msg) < 600, msg


def test_a_non_finite_constant_nested_too_deeply_gets_the_nesting_line(tmp_path, capsys):
    """The nesting is checked first: the location of a NaN 900 lists deep would be a 2,800-character line."""
    path = tmp_path / "deep.json"
    path.write_text('{"name": "x", "provenance": ' + "[" * 900 + "NaN" + "]" * 900 + "}", encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested more than 64 levels deep" in err and len(err) < 300, err


@pytest.mark.parametrize("value", ["-inf", "-Infinity", "-1e3", "-nan", "-.5"])
def test_a_negative_special_number_is_read_as_the_options_value(tmp_path, capsys, value):
    """-inf (or -1e3) is the option's value, not another option ("expected one argument"), and
    the option's own check refuses it, naming it."""
    from tests.instance_data import two_model_data

    inst = tmp_path / "i.json"
    inst.write_text(json.dumps(two_model_data()), encoding="utf-8")
    assert main(["adaptive", str(inst), "--time-limit", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --time-limit {value}: ") and "got" in err, err
    with pytest.raises(SystemExit) as stop:          # argparse's own refusal of an int: exit status 2
        main(["generate", "scaling", "--seed", value, "-o", str(tmp_path / "g.json")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seed: invalid int value" in err and "expected one argument" not in err, err


@pytest.mark.parametrize("title", ["a\x1b[31mb", "line\nbreak", "tab\there", "para\u2029graph"])
def test_a_report_title_with_a_control_character_is_refused(tmp_path, capsys, title):
    """The title is the page's one-line ``<title>`` and heading: a control character or line break is
    refused before the store is read (exit 2, one line naming ``title`` and the character)."""
    db = tmp_path / "s.sqlite"
    db.write_bytes(b"")
    rep = tmp_path / "rep"
    assert main(["report", str(db), "--out", str(rep), "--title", title, "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: title: must not hold control"), err
    assert not rep.exists()


def test_a_compressed_file_above_the_uncompressed_limit_is_refused_naming_that_limit(tmp_path, monkeypatch):
    from deplbench import limits

    monkeypatch.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**20)
    big = tmp_path / "big.mps.gz"
    big.write_bytes(b"\x1f\x8b" + bytes(2 * 2**20))
    with pytest.raises(SolverError, match=r"larger than the limit of 1 MiB \(deplbench\.limits\."
                                          r"MAX_UNCOMPRESSED_BYTES\)"):
        limits.check_gzip_size(big, "pwl model", SolverError)
