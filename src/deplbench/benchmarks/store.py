"""The results store: one SQLite row per finished task attempt, nothing lost.

Durability contract
-------------------
* Each row is inserted in its own transaction, committed as soon as the task
  finishes. The database runs in WAL mode with ``synchronous=FULL``: a
  committed row survives the writer being killed (Ctrl-C, ``kill -9``) at any
  instant, and SQLite's atomic commit means a row is either fully there or
  absent — never half-written.
* Within one runner only the runner process writes; workers send records
  back to it (the executors see to that).
* At most one *successful* row per task key: a partial unique index enforces
  it, so a resumed or concurrently started duplicate run cannot store a task
  twice. Failed attempts (the task raised, timed out, its process died, or the
  solver returned status ``error``) are kept as history; ``--retry-failed``
  adds new attempts.

Several runners on one store
----------------------------
Runners sharing a database file (on one machine or several) split a sweep
through **leases** (:mod:`deplbench.benchmarks.leases`): before running a
task a runner takes a lease row for its key in an ``IMMEDIATE`` transaction,
which fails if the task is finished or leased by a live owner. A lease names
its owner (host, pid, a random token) and expires unless the owner renews it
(a heartbeat thread); on the owner's own host a dead pid frees it at once.
Storing the task's row drops its lease in the same transaction, so ``kill
-9`` of any runner loses nothing: its leases lapse and the next claim takes
the tasks over.

What ``reports/`` reads is :meth:`ResultsStore.frame`: the columns of
:class:`~deplbench.benchmarks.record.TaskRecord` (typed, documented there)
plus one ``param_<name>`` column per solver parameter.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from deplbench.benchmarks import leases as _leases
from deplbench.benchmarks import record as _record
from deplbench.benchmarks.record import json_default  # noqa: F401 - public re-export
from deplbench.errors import SweepError
from deplbench.files import (  # noqa: F401
    FORMULA_PREFIXES,
    folder_unwritable,
    refuse_overwrite,
    safe_cell,
    store_files,
    write_csv,
)
from deplbench.jsonio import restore_nonfinite
from deplbench.limits import as_path
from deplbench.params import is_bool

#: The stored columns, in order: the fields of
#: :class:`~deplbench.benchmarks.record.TaskRecord` (their kinds and
#: meanings are documented there).
COLUMNS: tuple[str, ...] = _record.COLUMNS

#: Columns holding JSON text; a record may give them as Python objects.
JSON_COLUMNS = _record.JSON_COLUMNS

#: Extra stored columns beyond the record: the attempt id, the failure flag,
#: the task (so a row can be re-run exactly), the full result record.
EXTRA_COLUMNS: tuple[str, ...] = ("attempt", "failed", "task", "record")

#: Columns stored as SQLite REAL / INTEGER / 0-1 INTEGER (the others are TEXT).
REAL_COLUMNS = _record.REAL_COLUMNS
INT_COLUMNS = _record.INT_COLUMNS
BOOL_COLUMNS = _record.BOOL_COLUMNS

#: Prefix of the per-parameter columns :meth:`ResultsStore.frame` adds.
PARAM_PREFIX = "param_"

#: 2: the typed record of ``benchmarks/record.py``, and leases.
SCHEMA_VERSION = "2"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    attempt INTEGER PRIMARY KEY AUTOINCREMENT,
    failed INTEGER NOT NULL,
    {", ".join(f"{c} {_record.SQL_TYPE[_record.KIND[c]]}" + (" NOT NULL" if c == "key" else "")
               for c in COLUMNS)},
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
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    claimed_at REAL NOT NULL, expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
"""



def is_failure(record: Mapping[str, Any]) -> bool:
    """Whether a record is a failed attempt (eligible for ``--retry-failed``).

    A failure is a task that did not produce a judgeable answer: it raised,
    timed out or died (``error`` is set), or the solver itself reported
    status ``error``. ``infeasible``, ``no_solution`` and ``time_limit`` are
    answers, not failures.
    """
    return bool(record.get("error")) or record.get("status") == "error"


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to the store at ``path``.

    The store runs in WAL mode, and a WAL reader needs the ``-shm`` index
    beside the database: in a folder where it cannot be created (a read-only
    mount, a folder of another user) ``mode=ro`` fails with "unable to open
    database file". Such a store is then opened ``immutable=1``, which reads
    the database file alone without locks. That is only right when no writer
    is active, which a read-only folder guarantees (no writer could create
    the ``-wal`` file there either); a ``-wal`` file left beside it holds
    committed rows an immutable reader would not see, so that case is
    refused rather than read incompletely.

    Raises
    ------
    SweepError
        For a read-only folder that holds the store's ``-wal`` file.
    sqlite3.DatabaseError
        For a file that is not an SQLite database (the caller names it).
    """
    uri = path.resolve().as_uri()
    conn = None
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        if conn is not None:
            conn.close()
        if not folder_unwritable(path.parent):
            raise
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise SweepError(f"results store {path}: its folder {path.parent} is read-only and it holds "
                         f"unmerged rows in {wal.name}, which cannot be read without writing beside it "
                         "(copy the store and its -wal file to a writable folder)")
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=30.0)


def _refuse_read_only_folder(path: Path) -> None:
    """A store is written with side files (``-wal``, ``-shm``) beside it: a read-only folder is named as such,
    not reported as a corrupt database. The folder is probed as every output's is (``files.folder_unwritable``:
    the file system answers, not permission bits). The store file is not opened here: closing a second descriptor
    of a database drops the POSIX locks SQLite holds on it in this process; SQLite's own open, which falls back
    to read-only, answers for the file (``SQLITE_READONLY`` in ``ResultsStore.__init__``)."""
    reason = folder_unwritable(path.parent)
    if reason:
        raise SweepError(f"results store {path}: its folder {path.parent} is read-only ({reason}; a store is "
                         "written with -wal and -shm files beside it; choose a writable folder with --db)")


class ResultsStore:
    """SQLite results store (see the module docstring for the guarantees).

    Parameters
    ----------
    path : path-like
        Database file; created with its parent directory unless
        ``readonly``.
    readonly : bool
        Open an existing store without the right to modify it (export,
        reports, ``--dry-run``).

    Raises
    ------
    SweepError
        ``path`` is not a file name or ``readonly`` not a bool (naming the
        argument); the file is missing (``readonly``), is not an SQLite database, is
        a database without the store's ``results`` table, or is of a newer schema.

    Notes
    -----
    A store written by an older schema gets the new columns added (NULL in
    its old rows) when opened for writing; opened read-only, the missing
    columns read as NULL. A newer one is refused (``record.check_schema_version``).
    """

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False) -> None:
        # the Python API's arguments checked like the loaders' (limits.as_path): a clear refusal
        # naming the argument, not pathlib's TypeError or a string read as a flag
        self.path = as_path(path, "path", SweepError)
        if not is_bool(readonly):
            raise SweepError(f"readonly: expected True or False, got {readonly!r}")
        self.readonly = bool(readonly)
        self._conn = None
        self._present: set[str] = set()
        # side files a read-only open creates (and cannot remove) are tidied on close, see close()
        self._tidy = readonly and not any(Path(f"{self.path}{s}").exists() for s in ("-wal", "-shm"))
        if self.path.exists() and not self.path.is_file():
            # a device or FIFO would block or feed SQLite garbage; a folder is no store either
            raise SweepError(f"results store {self.path}: not a regular file")
        try:
            if readonly:
                if not self.path.is_file():
                    raise SweepError(f"results store not found: {self.path}")
                self._conn = _open_readonly(self.path)
                _record.check_schema_version(self._conn, f"results store {self.path}", SCHEMA_VERSION)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _refuse_read_only_folder(self.path)
                self._conn = sqlite3.connect(str(self.path), timeout=30.0)
                # Never add our tables to someone else's database: a file
                # with tables but no `results` is refused before any write.
                tables = {r[0] for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and "results" not in tables:
                    raise SweepError(f"results store {self.path}: no `results` table "
                                     "(not a deplbench store)")
                _record.check_schema_version(self._conn, f"results store {self.path}", SCHEMA_VERSION)
                # WAL: a reader (a report run while a sweep writes) never blocks
                # the writer; FULL: a commit is on disk before insert() returns.
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.executescript(_SCHEMA)
                self._migrate()
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                                   (SCHEMA_VERSION,))
                self._conn.commit()
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            self.close()
            if not readonly and str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_READONLY"):
                raise SweepError(f"results store {self.path}: the file is read-only (a run adds its results to "
                                 f"it; SQLite: {exc})") from None
            why = "locked by another process for over 30 s" if "locked" in str(exc) else "not a usable SQLite database"
            raise SweepError(f"results store {self.path}: {why} ({exc})") from exc
        except SweepError:
            self.close()
            raise

    # -- context manager ---------------------------------------------------

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent).

        A read-only connection to a WAL database creates its ``-wal`` and
        ``-shm`` files but, unable to checkpoint, leaves them behind when it
        closes: after a read that found none, a plain connection is opened and
        closed, and SQLite removes them when it is the last one (it keeps them
        while a writer, a running sweep, has the store open).
        """
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None
            if getattr(self, "_tidy", False) and Path(f"{self.path}-wal").exists():
                with contextlib.suppress(sqlite3.Error, OSError):
                    tidy = sqlite3.connect(str(self.path), timeout=1.0)
                    try:
                        tidy.execute("SELECT count(*) FROM sqlite_master").fetchone()
                    finally:
                        tidy.close()

    def _columns(self) -> set[str]:
        return {row[1] for row in self._conn.execute("PRAGMA table_info(results)")}

    def _migrate(self) -> None:
        """Add the columns an older store lacks (their old rows read NULL)."""
        present = self._columns()
        for c in COLUMNS:
            if c not in present:
                kind = _record.SQL_TYPE[_record.KIND[c]]
                self._conn.execute(f"ALTER TABLE results ADD COLUMN {c} {kind}")
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                           (SCHEMA_VERSION,))

    def _check_schema(self) -> None:
        cols = self._columns()
        if not cols:
            raise SweepError(f"results store {self.path}: no `results` table (not a deplbench store)")
        missing = [c for c in ("key",) + EXTRA_COLUMNS if c not in cols]
        if missing:
            raise SweepError(f"results store {self.path}: missing column(s) {', '.join(missing)}")
        self._present = cols

    def _writable(self) -> None:
        if self.readonly:
            raise SweepError(f"results store {self.path} was opened read-only")

    # -- writing -----------------------------------------------------------

    def add(self, record: Mapping[str, Any], *, task: Mapping[str, Any] | None = None,
            lease_owner: str | None = None) -> bool:
        """Insert one finished attempt and commit it.

        Parameters
        ----------
        record : mapping
            Values for :data:`COLUMNS` (missing ones are NULL; JSON columns
            may be Python objects), checked by
            :meth:`~deplbench.benchmarks.record.TaskRecord.from_mapping`.
            Extra keys are kept in the ``record`` column, so nothing the task
            reported is dropped.
        task : mapping, optional
            The task dict, stored so a row can be reproduced exactly.
        lease_owner : str, optional
            Drop this owner's lease on the key in the same transaction.

        Returns
        -------
        bool
            False when a successful row for this key already exists (the
            attempt is then not stored: one success per key).

        Raises
        ------
        SweepError
            Missing ``key``, a value of the wrong kind, or a read-only store.
        """
        self._writable()
        # strict JSON (``solve -o``, --json) writes an infinite number as null + "<key>_nonfinite": not missing
        record = restore_nonfinite(dict(record))
        row = _record.TaskRecord.from_mapping(record).to_row()
        failed = int(is_failure(record))
        full = _record.dumps(dict(record))
        task_json = _record.dumps(dict(task)) if task is not None else None
        placeholders = ", ".join("?" * (len(COLUMNS) + 3))
        sql = (f"INSERT INTO results (failed, {', '.join(COLUMNS)}, task, record) "
               f"VALUES ({placeholders})")
        stored = True
        with self._conn:  # one transaction per row, committed on exit
            try:
                self._conn.execute(sql, [failed, *row, task_json, full])
            except sqlite3.IntegrityError:
                stored = False
            if lease_owner is not None:
                _leases.release(self._conn, [record["key"]], lease_owner)
        return stored

    def add_run(self, *, sweep: str, source: str | None, sweep_text: str, started_at: str,
                tasks: int, todo: int, executor: str, env: Mapping[str, Any]) -> None:
        """Record one invocation of the runner (provenance; not read by reports)."""
        self._writable()
        with self._conn:
            self._conn.execute(
                "INSERT INTO runs (sweep, source, sweep_text, started_at, tasks, todo, executor, env)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (sweep, source, sweep_text, started_at, tasks, todo, executor,
                 _record.dumps(dict(env))))

    # -- leases (several runners on one store) -------------------------------

    def claim(self, key: str, owner: _leases.Owner, *, since_attempt: int = 0) -> bool:
        """Take the lease on ``key`` unless it is done or leased by a live owner.

        See :func:`deplbench.benchmarks.leases.claim`.
        """
        self._writable()
        return _leases.claim(self._conn, key, owner, since_attempt=since_attempt)

    def release_all(self, owner: _leases.Owner | str) -> None:
        """Drop every lease ``owner`` holds (a runner that stops)."""
        self._writable()
        _leases.release_all(self._conn, owner)

    def last_attempt(self) -> int:
        """The highest attempt id stored (0 for an empty store)."""
        return int(self._conn.execute("SELECT COALESCE(MAX(attempt), 0) FROM results")
                   .fetchone()[0])

    def renew(self, owner: _leases.Owner) -> int:
        """Push back the expiry of every lease ``owner`` holds (heartbeat)."""
        self._writable()
        return _leases.renew(self._conn, owner)

    def release(self, keys: Iterable[str], owner: _leases.Owner | str) -> None:
        """Drop ``owner``'s leases on ``keys`` (a task that was not stored)."""
        self._writable()
        with self._conn:
            _leases.release(self._conn, list(keys), owner)

    def leases(self) -> list[dict]:
        """Every lease row (key, owner, host, pid, claimed_at, expires)."""
        return _leases.rows(self._conn)

    # -- reading -----------------------------------------------------------

    def finished_keys(self) -> set[str]:
        """Keys with a successful row (skipped on resume)."""
        return {r[0] for r in self._conn.execute("SELECT key FROM results WHERE failed = 0")}

    def time_limited_keys(self) -> dict[str, float]:
        """Keys whose successful row stopped at a time limit (status ``time_limit``), with the
        hard limit ``time_limit_s`` of the task that wrote it (rows without one left out)."""
        out: dict[str, float] = {}
        for key, limit in self._conn.execute(
                "SELECT key, json_extract(task, '$.time_limit_s') FROM results "
                "WHERE failed = 0 AND status = 'time_limit' AND json_valid(task)"):
            if isinstance(limit, (int, float)) and not isinstance(limit, bool):
                out[key] = max(out.get(key, 0.0), float(limit))
        return out

    def failed_keys(self) -> set[str]:
        """Keys with failed attempts only (retried with ``--retry-failed``)."""
        return {r[0] for r in self._conn.execute(
            "SELECT DISTINCT key FROM results WHERE failed = 1 "
            "AND key NOT IN (SELECT key FROM results WHERE failed = 0)")}

    def settled_keys(self, since_attempt: int) -> set[str]:
        """Keys with a successful row, or with any row stored after
        ``since_attempt`` (handled by some runner since then)."""
        return {r[0] for r in self._conn.execute(
            "SELECT DISTINCT key FROM results WHERE failed = 0 OR attempt > ?",
            (since_attempt,))}

    def count(self) -> int:
        """Number of stored attempts."""
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` passes."""
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def frame(self, *, latest: bool = False, extra: bool = False, params: bool = True):
        """The results as a :class:`pandas.DataFrame` (what reports read).

        Parameters
        ----------
        latest : bool
            Keep only the last attempt per key (a retried failure then shows
            only its final outcome). Default: every attempt, oldest first.
        extra : bool
            Append :data:`EXTRA_COLUMNS` (attempt, failed, task, record).
        params : bool
            Append one ``param_<name>`` column per solver parameter found in
            any row's ``params`` (None where a row's solver lacks it).

        Returns
        -------
        pandas.DataFrame
            Columns :data:`COLUMNS` (typed: REAL as float64, INTEGER as
            Int64, bool as boolean, JSON columns as text), then the
            ``param_*`` columns in first-seen order, then the extras.
        """
        import pandas as pd

        cols = list(COLUMNS) + (list(EXTRA_COLUMNS) if extra else [])
        have = [c for c in cols if c in self._present]
        where = ("WHERE attempt IN (SELECT MAX(attempt) FROM results GROUP BY key)"
                 if latest else "")
        sql = f"SELECT {', '.join(have)} FROM results {where} ORDER BY attempt"
        frame = pd.read_sql_query(sql, self._conn)
        for c in cols:
            if c not in frame.columns:
                frame[c] = None
        frame = frame[cols]
        for c in REAL_COLUMNS:
            frame[c] = pd.to_numeric(frame[c], errors="coerce").astype("float64")
        for c in INT_COLUMNS:
            frame[c] = _as_int64(pd.to_numeric(frame[c], errors="coerce"))
        for c in BOOL_COLUMNS:
            frame[c] = frame[c].map(lambda v: None if v is None or v != v else bool(v)
                                    ).astype("boolean")
        if params:
            expanded = expand_params(frame["params"])
            if not expanded.empty:
                at = len(COLUMNS)
                frame = pd.concat([frame.iloc[:, :at], expanded, frame.iloc[:, at:]], axis=1)
        return frame

    def records(self) -> list[dict]:
        """The full stored records (the ``record`` column parsed), oldest first."""
        return [restore_nonfinite(json.loads(r[0])) for r in
                self._conn.execute("SELECT record FROM results ORDER BY attempt")]


def _as_int64(values):
    """``values`` as Int64, a value that is no int64 integer (``1.5``, ``1e300``, ±inf in a
    hand-edited store) read as missing: store_audit.non_integers reports those cells, so the
    frame of such a store is still read instead of failing on a cast."""
    if values.dtype.kind == "f":
        whole = values.abs().lt(2.0 ** 63) & values.eq(values.round())
        values = values.where(whole)
    return values.astype("Int64")


def expand_params(column) -> Any:
    """``param_<name>`` columns from a column of parameter JSON texts.

    A scalar stays a scalar (int, float, bool, str); a list or table is
    kept as canonical JSON text so the column has one type per cell.
    """
    import pandas as pd

    parsed = []
    for text in column:
        try:
            value = json.loads(text) if isinstance(text, str) else (text or {})
        except ValueError:
            value = {}
        parsed.append(value if isinstance(value, dict) else {})
    names: list[str] = []
    for p in parsed:
        names.extend(k for k in p if k not in names)
    data = {}
    for name in names:
        cells = []
        for p in parsed:
            v = p.get(name)
            if isinstance(v, (list, dict)):
                v = json.dumps(v, sort_keys=True)
            cells.append(v)
        data[PARAM_PREFIX + name] = pd.Series(cells, index=column.index, dtype=object)
    return pd.DataFrame(data, index=column.index)
