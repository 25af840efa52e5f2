"""``deplbench export``: a results store's frame written to CSV or Parquet.

The frame is :meth:`~deplbench.benchmarks.store.ResultsStore.frame` (the
column contract of docs/DESIGN.md, "Results store").
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from deplbench.benchmarks.store import ResultsStore
from deplbench.benchmarks.store_audit import costless_plans, costless_plans_note, text_in_numbers
from deplbench.errors import SweepError
from deplbench.files import refuse_overwrite, store_files, write_csv

__all__ = ["export", "parquet_safe"]


def export(path: str | os.PathLike, out: str | os.PathLike, fmt: str, *,
           latest: bool = False, warn=None) -> int:
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
        Unknown format, missing pyarrow, an unusable store, or an output
        folder that does not exist.
    """
    if fmt not in ("csv", "parquet"):
        raise SweepError(f"--format: unknown export format {fmt!r} (use csv or parquet)")
    if fmt == "parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise SweepError("--format parquet: needs the pyarrow package "
                             "(pip install pyarrow), or use --format csv")
    out = Path(out)
    if not out.parent.is_dir():      # never create folders: a typo must not scatter files
        raise SweepError(f"-o: the folder {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise SweepError(f"-o: {out} is a directory (give the name of the file to write)")
    refuse_overwrite(out, store_files(path), "-o", SweepError)
    with ResultsStore(path, readonly=True) as store:
        frame = store.frame(latest=latest)
        conn = store._conn
        bad = text_in_numbers(conn) if conn is not None else {}
        costless = costless_plans(conn) if conn is not None else 0
    for col, n in bad.items():
        if warn is not None:
            warn(f"warning: {n} stored row(s) of column {col!r} hold text, not a number; exported as "
                 "missing values")
    if costless and warn is not None:
        warn(f"warning: {costless_plans_note(costless)}")
    try:                            # a full disk, a read-only file system: name the file the user gave
        write_csv(frame, out) if fmt == "csv" else parquet_safe(frame).to_parquet(out, index=False)
    except OSError as exc:
        raise SweepError(f"-o {out}: cannot write ({exc.strerror or exc})") from None
    return len(frame)


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
