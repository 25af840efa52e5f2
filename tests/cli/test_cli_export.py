"""``deplbench export``: ``-o -`` is standard output, and the format is the one the file's name says.

``-o -`` writes the CSV to standard output (as ``generate -o -``), never a
file named ``-``; Parquet is binary and is refused there. ``--format`` may be
left out when ``-o`` ends in ``.csv`` or ``.parquet``, and one that
contradicts the suffix is refused naming both, so a ``.parquet`` file never
holds CSV (nor the reverse). Every refusal is one ``error:`` line, exit 2,
nothing written.
"""

from __future__ import annotations

import importlib.util
import io

import pandas as pd
import pytest

from deplbench.benchmarks.store import ResultsStore
from tests.benchmarks.test_store import record

needs_pyarrow = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None,
                                   reason="Parquet export needs pyarrow (the locked environment has it)")


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as store:
        store.add(record("a"))
        store.add(record("b", cost=99.25))
    return path


def test_dash_writes_the_csv_to_standard_output_and_no_file(db, tmp_path, monkeypatch, deplbench_cli):
    monkeypatch.chdir(tmp_path)
    status, out, err = deplbench_cli("export", db, "--format", "csv", "-o", "-")
    assert status == 0, err
    assert not (tmp_path / "-").exists()
    assert err == "wrote 2 rows to standard output\n"
    assert deplbench_cli("export", db, "-o", "-")[1] == out      # CSV without --format too
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame["key"]) == ["a", "b"] and list(frame["cost"]) == [123.5, 99.25]
    # the same bytes as the file export writes
    assert deplbench_cli("export", db, "-o", tmp_path / "r.csv")[0] == 0
    assert (tmp_path / "r.csv").read_bytes().decode("utf-8") == out


def test_parquet_to_standard_output_is_refused(db, tmp_path, monkeypatch, deplbench_cli):
    monkeypatch.chdir(tmp_path)
    status, out, err = deplbench_cli("export", db, "--format", "parquet", "-o", "-")
    assert status == 2 and out == ""
    assert err.startswith("error: -o -: ") and "--format csv" in err and err.count("\n") == 1, err
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("fmt,name,named", [("csv", "x.parquet", "parquet"), ("parquet", "x.csv", "csv"),
                                            ("parquet", "X.CSV", "csv")])
def test_a_format_the_suffix_contradicts_is_refused_naming_both(db, tmp_path, deplbench_cli, fmt, name, named):
    status, out, err = deplbench_cli("export", db, "--format", fmt, "-o", tmp_path / name)
    assert status == 2 and out == ""
    assert err.startswith(f"error: --format {fmt} and -o {tmp_path / name} disagree: ") and named in err, err
    assert err.count("\n") == 1
    assert not (tmp_path / name).exists()


@needs_pyarrow
def test_the_format_follows_the_suffix_when_not_given(db, tmp_path, deplbench_cli):
    assert deplbench_cli("export", db, "-o", tmp_path / "r.csv")[0] == 0
    assert deplbench_cli("export", db, "-o", tmp_path / "r.parquet")[0] == 0
    assert (tmp_path / "r.csv").read_bytes().startswith(b"key,")
    assert (tmp_path / "r.parquet").read_bytes().startswith(b"PAR1")
    assert list(pd.read_parquet(tmp_path / "r.parquet")["key"]) == ["a", "b"]


def test_a_suffix_naming_no_format_needs_format(db, tmp_path, deplbench_cli):
    status, out, err = deplbench_cli("export", db, "-o", tmp_path / "r.txt")
    assert status == 2 and out == "" and not (tmp_path / "r.txt").exists()
    assert err.startswith("error: --format: not given, and -o ") and err.count("\n") == 1, err
    # an explicit --format writes any name that does not contradict it
    assert deplbench_cli("export", db, "--format", "csv", "-o", tmp_path / "r.txt")[0] == 0
    assert (tmp_path / "r.txt").read_bytes().startswith(b"key,")


@pytest.mark.parametrize("name", ["r.sqlite", "r.sqlite-wal"])
def test_the_store_itself_as_output_is_named_as_the_input_even_when_read_only(db, tmp_path, monkeypatch,
                                                                              deplbench_cli, name):
    """`export DB -o DB` on a read-only store said "cannot write (permission denied)": true, but the
    problem is that the output is the store it reads, and a writable copy would be destroyed."""
    import os

    from deplbench import files

    (tmp_path / "r.sqlite-wal").touch()
    for side in (db, tmp_path / "r.sqlite-wal"):
        side.chmod(0o444)
    if os.geteuid() == 0:           # root writes a read-only file: the file system's answer to a user, stood in
        monkeypatch.setattr(files, "unwritable", lambda path: "permission denied")
    before = db.read_bytes()
    status, out, err = deplbench_cli("export", db, "--format", "csv", "-o", tmp_path / name)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: -o {tmp_path / name}: is the input {tmp_path / name};"), err
    assert db.read_bytes() == before
