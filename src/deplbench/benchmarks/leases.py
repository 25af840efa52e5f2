"""Task leases: several runners on one results store split a sweep.

A runner takes a **lease** on a task key before running it: one row of the
store's ``leases`` table, written in an ``IMMEDIATE`` transaction (SQLite's
write lock), so two runners can never both hold a live lease on one key. A
claim fails when

* the key already has a row stored after the claiming runner started
  (another runner finished it, successfully or not, meanwhile), or a
  successful row at all;
* another owner holds a *live* lease on it.

A lease is live until its ``expires`` time, which its owner pushes back
every ``ttl/3`` seconds from a heartbeat thread (:class:`Heartbeat`). An
owner that dies stops renewing, so its leases lapse after at most ``ttl``
seconds; on the owner's own host, a lease whose pid no longer exists is
treated as expired at once. Storing a task's row drops its lease in the same
transaction (:meth:`ResultsStore.add`), so at no instant is a task both
unleased and unfinished because of a crash: ``kill -9`` of any runner loses
nothing, and the tasks it held are claimed by the next runner that looks.
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Default lease lifetime without renewal (seconds). The heartbeat renews at
#: a third of it, so a runner must stall for ~40 s before it loses a lease.
DEFAULT_TTL_S = 60.0


@dataclass(frozen=True)
class Owner:
    """Who holds a lease: host, pid and a random token (pids get reused).

    Attributes
    ----------
    host, pid : str, int
        Where the runner lives; a dead pid on this host frees its leases.
    token : str
        Random per runner, so two runners never share an identity.
    ttl_s : float
        Lease lifetime without renewal.
    """

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: secrets.token_hex(6))
    ttl_s: float = DEFAULT_TTL_S

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (zombies count
    as dead: they run nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _live(host: str, pid: int, expires: float, now: float) -> bool:
    if expires <= now:
        return False
    if host == socket.gethostname() and not pid_alive(pid):
        return False
    return True


def _owner_id(owner: Owner | str) -> str:
    return owner if isinstance(owner, str) else owner.id


def claim(conn: sqlite3.Connection, key: str, owner: Owner, *, since_attempt: int = 0) -> bool:
    """Take the lease on ``key`` for ``owner``; False if someone else has it.

    Parameters
    ----------
    conn : sqlite3.Connection
        The store's connection (no transaction open).
    key : str
        Task key.
    owner : Owner
    since_attempt : int
        Attempt id of the store's last row when the runner started: a row
        for ``key`` above it means another runner handled the task during
        this run, so it is not taken again.

    Returns
    -------
    bool
        True when ``owner`` now holds a live lease on ``key``.
    """
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = conn.execute(
            "SELECT 1 FROM results WHERE key = ? AND (failed = 0 OR attempt > ?) LIMIT 1",
            (key, since_attempt)).fetchone()
        if done:
            conn.commit()
            return False
        row = conn.execute("SELECT owner, host, pid, expires FROM leases WHERE key = ?",
                           (key,)).fetchone()
        if row is not None and row[0] != owner.id and _live(row[1], row[2], row[3], now):
            conn.commit()
            return False
        conn.execute("INSERT OR REPLACE INTO leases (key, owner, host, pid, claimed_at, expires)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     (key, owner.id, owner.host, owner.pid, now, now + owner.ttl_s))
        conn.commit()
        return True
    except BaseException:
        conn.rollback()
        raise


def renew(conn: sqlite3.Connection, owner: Owner) -> int:
    """Push back the expiry of every lease of ``owner``; returns how many."""
    with conn:
        cur = conn.execute("UPDATE leases SET expires = ? WHERE owner = ?",
                           (time.time() + owner.ttl_s, owner.id))
    return cur.rowcount


def release(conn: sqlite3.Connection, keys: Iterable[str], owner: Owner | str) -> None:
    """Delete ``owner``'s leases on ``keys`` (inside the caller's transaction)."""
    conn.executemany("DELETE FROM leases WHERE key = ? AND owner = ?",
                     [(k, _owner_id(owner)) for k in keys])


def release_all(conn: sqlite3.Connection, owner: Owner | str) -> None:
    """Delete every lease of ``owner`` and commit."""
    with conn:
        conn.execute("DELETE FROM leases WHERE owner = ?", (_owner_id(owner),))


def rows(conn: sqlite3.Connection) -> list[dict]:
    """Every lease as a dict."""
    cur = conn.execute("SELECT key, owner, host, pid, claimed_at, expires FROM leases "
                       "ORDER BY claimed_at")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


class Heartbeat:
    """Renew ``owner``'s leases every ``ttl/3`` s from a thread of its own.

    The thread opens its own connection (an SQLite connection belongs to one
    thread). Use as a context manager; leaving it stops the thread.
    """

    def __init__(self, path, owner: Owner) -> None:
        self.path = str(path)
        self.owner = owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="deplbench-lease-heartbeat",
                                        daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        conn = sqlite3.connect(self.path, timeout=30.0)
        try:
            while not self._stop.wait(self.owner.ttl_s / 3.0):
                try:
                    renew(conn, self.owner)
                except sqlite3.Error:  # busy for 30 s: try again next beat
                    pass
        finally:
            conn.close()


__all__ = ["Owner", "DEFAULT_TTL_S", "claim", "renew", "release", "release_all", "rows",
           "Heartbeat", "pid_alive"]
