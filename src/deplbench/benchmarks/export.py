"""``deplbench export``: a results store's frame written to CSV or Parquet.

The frame is :meth:`~deplbench.benchmarks.store.ResultsStore.frame` (the
column contract of docs/DESIGN.md, "Results store"). The output's format is
the one its name says: ``--format`` may be left out when the file ends in
``.csv`` or ``.parquet``, and a ``--format`` that contradicts the suffix is
refused, since a ``.parquet`` file holding CSV fails in every reader that
trusts the name (:func:`export_format`). CSV may also go to a text stream
(``-o -``: standard output); Parquet is binary and never does.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from deplbench.benchmarks.store import ResultsStore
from deplbench.benchmarks.store_audit import (
    costless_plans,
    costless_plans_note,
    non_integers,
    non_integers_note,
    text_in_numbers,
)
from deplbench.errors import SweepError
from deplbench.files import csv_text, refuse_overwrite, require_writable, store_files, write_csv

__all__ = ["FORMATS", "SUFFIXES", "export", "export_format", "parquet_safe"]

#: The formats ``export`` writes.
FORMATS = ("csv", "parquet")
#: File suffixes (compared without case) that name a format.
SUFFIXES = {".csv": "csv", ".parquet": "parquet"}


def _is_stream(out: Any) -> bool:
    return hasattr(out, "write")


def export_format(out: Any, fmt: str | None) -> str:
    """The format ``export`` writes ``out`` in: ``fmt``, or the one the suffix names.

    Parameters
    ----------
    out : path-like or text stream
        The output (a stream takes CSV only).
    fmt : {"csv", "parquet"} or None
        The format asked for; None reads it from the suffix of ``out``
        (:data:`SUFFIXES`; a stream is CSV).

    Returns
    -------
    str
        ``"csv"`` or ``"parquet"``.

    Raises
    ------
    SweepError
        An unknown format; Parquet to a stream; no ``fmt`` and a suffix that
        names no format; a ``fmt`` the suffix contradicts (``--format csv``
        with ``-o r.parquet``). A suffix that names no format does not
        contradict an explicit ``fmt``.
    """
    if fmt is not None and fmt not in FORMATS:
        raise SweepError(f"--format: unknown export format {fmt!r} (use csv or parquet)")
    if _is_stream(out):
        if fmt == "parquet":
            raise SweepError("-o -: standard output takes CSV, and --format parquet is binary; "
                             "give a file (-o results.parquet) or use --format csv")
        return "csv"
    suffix = Path(out).suffix
    named = SUFFIXES.get(suffix.lower())
    if fmt is None:
        if named is None:
            raise SweepError(f"--format: not given, and -o {os.fspath(out)} ends in neither .csv nor .parquet; "
                             "give --format csv or --format parquet")
        return named
    if named is not None and named != fmt:
        raise SweepError(f"--format {fmt} and -o {os.fspath(out)} disagree: a {suffix} file holds {named}, not "
                         f"{fmt}; name the file .{fmt}, or leave out --format to write {named}")
    return fmt


def export(path: str | os.PathLike, out: Any, fmt: str | None = None, *,
           latest: bool = False, warn=None) -> int:
    """Write a store's :meth:`~ResultsStore.frame` to CSV or Parquet.

    Parameters
    ----------
    path : path-like
        Existing results store.
    out : path-like or text stream
        Output file, or a stream with ``write`` (``sys.stdout``) for CSV.
    fmt : {"csv", "parquet"}, optional
        The format (Parquet needs ``pyarrow``); by default the one the
        suffix of ``out`` names (:func:`export_format`).
    latest : bool
        Only the last attempt per key.
    warn : callable, optional
        Called with one line per problem found in the data (text in a
        numeric column such as ``cost``).

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    SweepError
        An unknown or contradicted format, missing pyarrow, an unusable
        store, or an output that cannot be written (:func:`~deplbench.files.unwritable`: a missing
        folder, a folder, a named pipe no one reads).
    """
    fmt = export_format(out, fmt)
    if fmt == "parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise SweepError("--format parquet: needs the pyarrow package "
                             "(pip install pyarrow), or use --format csv")
    if _is_stream(out):
        # No OSError caught here: a reader that went away (`| head`) is the
        # CLI's broken pipe, not a file that could not be written.
        frame = _frame(path, latest, warn)
        out.write(csv_text(frame))
        return len(frame)
    out = Path(out)
    # the store given as -o first: were it read-only, the writability check would say "permission
    # denied", not that the output is the input; a folder is no file to write, whatever it holds, and is
    # refused as one. Never creates folders (a typo must not scatter files); a named pipe no one reads
    # would hold the write forever: refused before the store is read, as a folder is
    if not out.is_dir():
        refuse_overwrite(out, store_files(path), "-o", SweepError)
    require_writable(out, "-o", SweepError)
    frame = _frame(path, latest, warn)
    try:                            # a full disk, a read-only file system: name the file the user gave
        write_csv(frame, out) if fmt == "csv" else parquet_safe(frame).to_parquet(out, index=False)
    except OSError as exc:
        raise SweepError(f"-o {out}: cannot write ({exc.strerror or exc})") from None
    return len(frame)


def _frame(path: str | os.PathLike, latest: bool, warn):
    """The store's frame, with a ``warn`` line for each thing the frame hides (store_audit)."""
    with ResultsStore(path, readonly=True) as store:
        frame = store.frame(latest=latest)
        conn = store._conn
        bad = text_in_numbers(conn) if conn is not None else {}
        costless = costless_plans(conn) if conn is not None else 0
        whole = non_integers(conn) if conn is not None else {}
    for col, n in bad.items():
        if warn is not None:
            warn(f"warning: {n} stored row(s) of column {col!r} hold text, not a number; exported as "
                 "missing values")
    for col, n in whole.items():
        if warn is not None:
            warn(f"warning: {path}: {non_integers_note(col, n)}; exported as missing values")
    if costless and warn is not None:
        warn(f"warning: {costless_plans_note(costless)}")
    return frame


def parquet_safe(frame):
    """``frame`` with every column Parquet can store, none dropped.

    A Parquet column has one type, but a ``param_<name>`` column mixes the
    values of several solvers (``solver`` is ``"highs"`` for one algorithm
    and absent for another; ``time_limit`` an int in one row and a float in
    the next). A column pyarrow cannot type as it is becomes text: each
    value as its JSON literal (``200``, ``"highs"``, ``true``, ``[1, 2]``),
    missing values stay null, so ``json.loads`` gives the value back.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pandas.DataFrame
        A copy where needed; the same columns in the same order.
    """
    import pyarrow as pa

    from deplbench.jsonio import finite_json

    out = frame
    for name in frame.columns:
        col = frame[name]
        if col.dtype != object:
            continue
        try:
            pa.array(col, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            if out is frame:
                out = frame.copy()
            out[name] = [None if _missing(v) else json.dumps(finite_json(v), sort_keys=True)
                         for v in col]
    return out


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
