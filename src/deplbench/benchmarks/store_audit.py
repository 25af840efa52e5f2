"""What a results store's cells say that its frame would hide (a hand-edited or foreign store).

Read by ``export`` (a warning per finding) and by the report (a note on the
page): text in a numeric column, or a value that is no integer in an integer
column (``1.5``, ``1e300``), read as a missing value; a plan stored
without a finite cost, left out of every cost figure. Each check is one SQL
count on the ``results`` table, so a store of any size is audited cheaply.
"""

from __future__ import annotations

import sqlite3

#: Numeric columns whose stored cells are checked for text on export.
NUMERIC_CHECKED = ("cost", "lower_bound", "gap", "runtime_s")


def text_in_numbers(conn: sqlite3.Connection) -> dict[str, int]:
    """Stored cells of numeric columns that hold text (a hand-edited or
    foreign store): the frame would read them as missing, silently."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(results)")}
    bad = {}
    for col in NUMERIC_CHECKED:
        if col in cols:
            n = conn.execute(f"SELECT COUNT(*) FROM results WHERE typeof({col}) = 'text'").fetchone()[0]
            if n:
                bad[col] = int(n)
    return bad


def non_integers(conn: sqlite3.Connection) -> dict[str, int]:
    """Stored cells of integer columns that hold no int64 integer: text, a
    non-integral or out-of-range real, ±inf (a hand-edited or foreign store).
    The frame reads them as missing, as it does text in a real column."""
    from deplbench.benchmarks.record import INT_COLUMNS

    cols = {r[1] for r in conn.execute("PRAGMA table_info(results)")}
    bad = {}
    for col in sorted(INT_COLUMNS & cols):
        # CAST saturates at the int64 bounds, so a real beyond them (and ±inf) differs from its cast too;
        # 2**63 itself equals its saturated cast as a float, hence the explicit bound.
        n = conn.execute(
            f"SELECT COUNT(*) FROM results WHERE typeof({col}) IN ('text', 'blob') OR (typeof({col}) = 'real' "
            f"AND ({col} != CAST({col} AS INTEGER) OR abs({col}) >= 9223372036854775808.0))").fetchone()[0]
        if n:
            bad[col] = int(n)
    return bad


def non_integers_note(col: str, n: int) -> str:
    """What ``export`` and ``report`` say about one column of :func:`non_integers`."""
    return f"{n} stored row(s) of integer column {col!r} hold a value that is not an integer"


#: Statuses whose row holds the plan an algorithm returned, and so its cost (2).
PLAN_STATUSES = ("optimal", "feasible", "time_limit")


def costless_plans(conn: sqlite3.Connection) -> int:
    """Rows of a :data:`PLAN_STATUSES` status that hold a plan but no finite cost:
    ±inf, or empty (SQLite stores nan as NULL). No solve writes one (a cost
    that overflows is status ``error``); a hand-edited or foreign store can,
    and every cost table would leave such a row out without a word."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(results)")}
    if not {"status", "cost", "plan"} <= cols:
        return 0
    marks = ", ".join("?" * len(PLAN_STATUSES))
    return int(conn.execute(
        f"SELECT COUNT(*) FROM results WHERE status IN ({marks}) AND plan IS NOT NULL "
        "AND plan NOT IN ('', 'null') "
        "AND (cost IS NULL OR (typeof(cost) = 'real' AND abs(cost) > 1.7976931348623157e308))",
        PLAN_STATUSES).fetchone()[0])


def costless_plans_note(n: int) -> str:
    """The one sentence ``export`` and ``report`` say about :func:`costless_plans`."""
    return (f"{n} stored row(s) of status {'/'.join(PLAN_STATUSES)} hold a plan but no finite cost (inf, or "
            "empty where nan was stored; a hand-edited or foreign store): no cost figure can count them")
