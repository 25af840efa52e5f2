"""Results store: the column contract, one success per key, failure history,
durability settings, export."""

from __future__ import annotations

import importlib.util
import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks.store import COLUMNS, ResultsStore, export, is_failure
from deplbench.errors import SweepError


def record(key: str, **over) -> dict:
    rec = {
        "key": key, "sweep": "s", "family": "realistic", "instance_name": "alexnet",
        "instance_params": {"family": "alexnet"}, "instance_seed": 0,
        "algorithm": "depl", "params": {"eta": 200}, "status": "feasible", "message": "",
        "cost": 123.5, "lower_bound": None, "gap": None, "runtime_s": 0.25,
        "quantile_oos": 8.9, "quantile_ci_low": 8.8, "quantile_ci_high": 9.0,
        "verdict": "feasible", "loss_max": 9.0, "omega": 0.99, "epochs": 3,
        "plan": {"epochs": [{"model": "m", "cluster": "A1", "allocation": 1.0}] * 3,
                 "datasets": {"A1": ["d0"]}},
        "diagnostics": {"arr": np.arange(3), "x": np.float64(1.5)},
        "evaluation": {"mean": [10.0, 9.5, 9.0], "p01": [1, 2, 3], "p99": [4, 5, 6]},
        "error": None, "started_at": "t0", "finished_at": "t1",
        "env": {"versions": {"numpy": np.__version__}}, "code_version": "0.1.0",
        "wall_s": 0.3,
    }
    rec.update(over)
    return rec


def test_frame_has_exactly_the_design_columns_and_round_trips(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a"))
        frame = store.frame()
    assert tuple(frame.columns) == COLUMNS
    # The contract reports/ was written against (docs/DESIGN.md).
    from deplbench.reports.data import STORE_COLUMNS

    assert COLUMNS == STORE_COLUMNS
    row = frame.iloc[0]
    assert row["cost"] == 123.5 and row["epochs"] == 3 and row["instance_seed"] == 0
    assert json.loads(row["diagnostics"]) == {"arr": [0, 1, 2], "x": 1.5}
    assert json.loads(row["evaluation"])["mean"] == [10.0, 9.5, 9.0]
    assert json.loads(row["plan"])["datasets"] == {"A1": ["d0"]}
    assert math.isnan(row["lower_bound"]) and pd.isna(row["error"])
    assert frame["cost"].dtype == np.float64


def test_one_success_per_key_but_failures_are_history(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a", status="error", error="timeout: x", cost=None))
        assert store.add(record("a", status="error", message="solver crashed"))
        assert store.failed_keys() == {"a"} and store.finished_keys() == set()
        assert store.add(record("a"))
        assert not store.add(record("a", cost=999.0))  # a second success is refused
        assert store.finished_keys() == {"a"} and store.failed_keys() == set()
        frame = store.frame()
        latest = store.frame(latest=True, extra=True)
    assert len(frame) == 3 and list(frame["status"]) == ["error", "error", "feasible"]
    assert len(latest) == 1 and latest["cost"].iloc[0] == 123.5
    assert latest["failed"].iloc[0] == 0 and json.loads(latest["record"].iloc[0])["wall_s"] == 0.3


@pytest.mark.parametrize("rec, failed", [
    ({"status": "feasible"}, False), ({"status": "infeasible"}, False),
    ({"status": "time_limit"}, False), ({"status": "error"}, True),
    ({"status": None, "error": "crash: died"}, True),
])
def test_what_counts_as_a_failure(rec, failed):
    assert is_failure(rec) is failed


def test_store_is_wal_with_full_sync_and_survives_reopen(tmp_path):
    path = tmp_path / "sub" / "r.sqlite"
    with ResultsStore(path) as store:
        store.add(record("a"))
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        # Committed: visible to another connection before this one closes.
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
        other.close()
    with ResultsStore(path, readonly=True) as ro:
        assert ro.count() == 1 and ro.integrity_ok()
        with pytest.raises(SweepError, match="read-only"):
            ro.add(record("b"))


def test_bad_stores_are_clear_errors(tmp_path):
    with pytest.raises(SweepError, match="not found"):
        ResultsStore(tmp_path / "missing.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SweepError, match="not a usable SQLite database"):
        ResultsStore(junk)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(SweepError, match="not a deplbench store"):
        ResultsStore(other)
    # ...and the foreign database was left untouched.
    conn = sqlite3.connect(other)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"people"}
    with ResultsStore(tmp_path / "ok.sqlite") as store:
        with pytest.raises(SweepError, match="record.key"):
            store.add({"status": "feasible"})


def test_export_csv_and_parquet(tmp_path):
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        store.add(record("a"))
        store.add(record("b", status="error", error="timeout: t", cost=None))
    n = export(db, tmp_path / "r.csv", "csv")
    back = pd.read_csv(tmp_path / "r.csv")
    assert n == 2 and tuple(back.columns) == COLUMNS
    assert back.set_index("key").loc["a", "cost"] == 123.5
    with pytest.raises(SweepError, match="--format"):
        export(db, tmp_path / "r.xlsx", "xlsx")
    if importlib.util.find_spec("pyarrow") is None:
        with pytest.raises(SweepError, match="pyarrow"):
            export(db, tmp_path / "r.parquet", "parquet")
    else:
        assert export(db, tmp_path / "r.parquet", "parquet") == 2
        assert tuple(pd.read_parquet(tmp_path / "r.parquet").columns) == COLUMNS
