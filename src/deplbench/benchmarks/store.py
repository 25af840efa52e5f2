"""The results store: one SQLite row per finished task attempt, nothing lost.

Durability contract
-------------------
* Each row is inserted in its own transaction, committed as soon as the task
  finishes. The database runs in WAL mode with ``synchronous=FULL``: a
  committed row survives the writer being killed (Ctrl-C, ``kill -9``) at any
  instant, and SQLite's atomic commit means a row is either fully there or
  absent — never half-written.
* Only the runner process writes; workers send records back to it (the
  executors see to that), so there is no write contention.
* At most one *successful* row per task key: a partial unique index enforces
  it, so a resumed or concurrently started duplicate run cannot store a task
  twice. Failed attempts (the task raised, timed out, its process died, or the
  solver returned status ``error``) are kept as history; ``--retry-failed``
  adds new attempts.

What ``reports/`` reads is :meth:`ResultsStore.frame`, whose columns are the
contract in ``docs/DESIGN.md`` ("Results store").
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deplbench.errors import SweepError

#: The columns of :meth:`ResultsStore.frame` (DESIGN.md contract), in order.
COLUMNS: tuple[str, ...] = (
    "key", "sweep", "family", "instance_name", "instance_params", "instance_seed",
    "algorithm", "params", "status", "message", "cost", "lower_bound", "gap",
    "runtime_s", "quantile_oos", "quantile_ci_low", "quantile_ci_high", "verdict",
    "loss_max", "omega", "epochs", "plan", "diagnostics", "evaluation", "error",
    "started_at", "finished_at", "env", "code_version",
)

#: Columns holding JSON text; a record may give them as Python objects.
JSON_COLUMNS = frozenset({"instance_params", "params", "plan", "diagnostics",
                          "evaluation", "env"})

#: Extra stored columns beyond the contract: the attempt id, the failure flag,
#: the task (so a row can be re-run exactly), the full result record.
EXTRA_COLUMNS: tuple[str, ...] = ("attempt", "failed", "task", "record")

#: Columns stored as SQLite REAL / INTEGER (the others are TEXT).
REAL_COLUMNS = frozenset({"cost", "lower_bound", "gap", "runtime_s", "quantile_oos", "quantile_ci_low",
                          "quantile_ci_high", "loss_max", "omega"})
INT_COLUMNS = frozenset({"instance_seed", "epochs"})

SCHEMA_VERSION = "1"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    attempt INTEGER PRIMARY KEY AUTOINCREMENT,
    failed INTEGER NOT NULL,
    {", ".join(f"{c} {'REAL' if c in REAL_COLUMNS else 'INTEGER' if c in INT_COLUMNS else 'TEXT'}"
               + (" NOT NULL" if c == "key" else "") for c in COLUMNS)},
    task TEXT,
    record TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS results_one_success ON results(key) WHERE failed = 0;
CREATE INDEX IF NOT EXISTS results_key ON results(key);
CREATE TABLE IF NOT EXISTS runs (
    run INTEGER PRIMARY KEY AUTOINCREMENT,
    sweep TEXT, source TEXT, sweep_text TEXT, started_at TEXT,
    tasks INTEGER, todo INTEGER, executor TEXT, env TEXT
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
"""


def is_failure(record: Mapping[str, Any]) -> bool:
    """Whether a record is a failed attempt (eligible for ``--retry-failed``).

    A failure is a task that did not produce a judgeable answer: it raised,
    timed out or died (``error`` is set), or the solver itself reported
    status ``error``. ``infeasible`` and ``time_limit`` are answers, not
    failures.
    """
    return bool(record.get("error")) or record.get("status") == "error"


class ResultsStore:
    """SQLite results store (see the module docstring for the guarantees).

    Parameters
    ----------
    path : path-like
        Database file; created with its parent directory unless
        ``readonly``.
    readonly : bool
        Open an existing store without the right to modify it (export,
        reports).

    Raises
    ------
    SweepError
        The file is missing (``readonly``), is not an SQLite database, or is
        a database without the store's ``results`` table/columns.
    """

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._conn = None
        try:
            if readonly:
                if not self.path.is_file():
                    raise SweepError(f"results store not found: {self.path}")
                self._conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro",
                                             uri=True, timeout=30.0)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = sqlite3.connect(str(self.path), timeout=30.0)
                # Never add our tables to someone else's database: a file
                # with tables but no `results` is refused before any write.
                tables = {r[0] for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and "results" not in tables:
                    raise SweepError(f"results store {self.path}: no `results` table "
                                     "(not a deplbench store)")
                # WAL: a reader (a report run while a sweep writes) never blocks
                # the writer; FULL: a commit is on disk before insert() returns.
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.executescript(_SCHEMA)
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                                   (SCHEMA_VERSION,))
                self._conn.commit()
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise SweepError(f"results store {self.path}: not a usable SQLite database ({exc})") from exc
        except SweepError:
            self.close()
            raise

    # -- context manager ---------------------------------------------------

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None

    def _check_schema(self) -> None:
        cols = {row[1] for row in self._conn.execute("PRAGMA table_info(results)")}
        if not cols:
            raise SweepError(f"results store {self.path}: no `results` table (not a deplbench store)")
        missing = [c for c in COLUMNS + EXTRA_COLUMNS if c not in cols]
        if missing:
            raise SweepError(f"results store {self.path}: missing column(s) {', '.join(missing)}")

    # -- writing -----------------------------------------------------------

    def add(self, record: Mapping[str, Any], *, task: Mapping[str, Any] | None = None) -> bool:
        """Insert one finished attempt and commit it.

        Parameters
        ----------
        record : mapping
            Values for :data:`COLUMNS` (missing ones are NULL; JSON columns
            may be Python objects). Extra keys are kept in the ``record``
            column, so nothing the task reported is dropped.
        task : mapping, optional
            The task dict, stored so a row can be reproduced exactly.

        Returns
        -------
        bool
            False when a successful row for this key already exists (the
            attempt is then not stored: one success per key).

        Raises
        ------
        SweepError
            Missing ``key``, or the store is read-only.
        """
        if self.readonly:
            raise SweepError(f"results store {self.path} was opened read-only")
        if not record.get("key"):
            raise SweepError("record.key: required to store a result")
        values = [_to_column(c, record.get(c)) for c in COLUMNS]
        failed = int(is_failure(record))
        full = _dumps(dict(record))
        task_json = _dumps(dict(task)) if task is not None else None
        placeholders = ", ".join("?" * (len(COLUMNS) + 3))
        sql = (f"INSERT INTO results (failed, {', '.join(COLUMNS)}, task, record) "
               f"VALUES ({placeholders})")
        try:
            with self._conn:  # one transaction per row, committed on exit
                self._conn.execute(sql, [failed, *values, task_json, full])
        except sqlite3.IntegrityError:
            return False
        return True

    def add_run(self, *, sweep: str, source: str | None, sweep_text: str, started_at: str,
                tasks: int, todo: int, executor: str, env: Mapping[str, Any]) -> None:
        """Record one invocation of the runner (provenance; not read by reports)."""
        if self.readonly:
            raise SweepError(f"results store {self.path} was opened read-only")
        with self._conn:
            self._conn.execute(
                "INSERT INTO runs (sweep, source, sweep_text, started_at, tasks, todo, executor, env)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (sweep, source, sweep_text, started_at, tasks, todo, executor, _dumps(dict(env))))

    # -- reading -----------------------------------------------------------

    def finished_keys(self) -> set[str]:
        """Keys with a successful row (skipped on resume)."""
        return {r[0] for r in self._conn.execute("SELECT key FROM results WHERE failed = 0")}

    def failed_keys(self) -> set[str]:
        """Keys with failed attempts only (retried with ``--retry-failed``)."""
        return {r[0] for r in self._conn.execute(
            "SELECT DISTINCT key FROM results WHERE failed = 1 "
            "AND key NOT IN (SELECT key FROM results WHERE failed = 0)")}

    def count(self) -> int:
        """Number of stored attempts."""
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` passes."""
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def frame(self, *, latest: bool = False, extra: bool = False):
        """The results as a :class:`pandas.DataFrame` (what reports read).

        Parameters
        ----------
        latest : bool
            Keep only the last attempt per key (a retried failure then shows
            only its final outcome). Default: every attempt, oldest first.
        extra : bool
            Append :data:`EXTRA_COLUMNS` (attempt, failed, task, record).

        Returns
        -------
        pandas.DataFrame
            Columns :data:`COLUMNS` (then the extras), JSON columns as text.
        """
        import pandas as pd

        cols = list(COLUMNS) + (list(EXTRA_COLUMNS) if extra else [])
        where = ("WHERE attempt IN (SELECT MAX(attempt) FROM results GROUP BY key)"
                 if latest else "")
        sql = f"SELECT {', '.join(cols)} FROM results {where} ORDER BY attempt"
        frame = pd.read_sql_query(sql, self._conn)
        for c in REAL_COLUMNS:
            frame[c] = pd.to_numeric(frame[c], errors="coerce").astype("float64")
        for c in INT_COLUMNS:
            frame[c] = frame[c].astype("Int64")
        return frame

    def records(self) -> list[dict]:
        """The full stored records (the ``record`` column parsed), oldest first."""
        return [json.loads(r[0]) for r in
                self._conn.execute("SELECT record FROM results ORDER BY attempt")]


def _to_column(column: str, value: Any) -> Any:
    """Convert one record value into what SQLite stores for ``column``."""
    if value is None:
        return None
    if column in JSON_COLUMNS:
        return value if isinstance(value, str) else _dumps(value)
    if column in REAL_COLUMNS:
        v = float(value)
        # NaN is not a number SQLite keeps (it becomes NULL anyway); infinity
        # is kept as text-free REAL. Store NaN as NULL explicitly.
        return None if math.isnan(v) else v
    if column in INT_COLUMNS:
        return int(value)
    return value if isinstance(value, str) else str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=json_default, allow_nan=True)


def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for task records: numpy, pydantic, sets.

    Numpy scalars/arrays and pydantic models sneak into diagnostics: convert
    rather than fail, because losing a finished row is worse than a lossy
    representation of one field.
    """
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def export(path: str | os.PathLike, out: str | os.PathLike, fmt: str, *,
           latest: bool = False) -> int:
    """Write a store's :meth:`~ResultsStore.frame` to CSV or Parquet.

    Parameters
    ----------
    path : path-like
        Existing results store.
    out : path-like
        Output file.
    fmt : {"csv", "parquet"}
        Parquet needs ``pyarrow``.
    latest : bool
        Only the last attempt per key.

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    SweepError
        Unknown format, missing pyarrow, or an unusable store.
    """
    if fmt not in ("csv", "parquet"):
        raise SweepError(f"--format: unknown export format {fmt!r} (use csv or parquet)")
    if fmt == "parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise SweepError("--format parquet: needs the pyarrow package "
                             "(pip install pyarrow), or use --format csv")
    with ResultsStore(path, readonly=True) as store:
        frame = store.frame(latest=latest)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(out, index=False)
    else:
        frame.to_parquet(out, index=False)
    return len(frame)
