"""Output files, written safely: never over an input, never outside their folder, CSV cells inert.

A bottom module (it imports only :mod:`deplbench.errors`, and pandas inside
:func:`write_csv`) shared by every command that writes a file the user
named (``export``, ``report``, ``fit``, ``measure``, ``solve
--write-lp``, a sweep's ``write_lp``):

* :func:`refuse_overwrite` — an output is resolved (``..``, symbolic links)
  and refused when it *is* one of the command's inputs, or a folder that
  *contains* one (SQLite's ``-wal``/``-shm``/``-journal`` side files count
  as the store);
* :func:`unwritable` — why a file the command will write cannot be
  written (a folder, a missing or read-only folder), asked before any work
  (:func:`require_writable` refuses it, naming the option);
  :func:`folder_unwritable`, its probe, asks the same of a folder;
* :func:`confined` — a path written inside a run's folder stays inside it
  after resolving symbolic links (a link ``run/out`` → ``/elsewhere`` is
  refused);
* :func:`write_csv` — the one CSV writer of ``export`` and the report
  tables: spreadsheet-formula cells neutralised (:func:`safe_cell`), every
  cell with a line break quoted.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import stat
from collections.abc import Iterable
from typing import Any

from deplbench.errors import DeplbenchError

__all__ = ["FORMULA_PREFIXES", "SQLITE_SIDE_FILES", "confined", "folder_unwritable", "refuse_overwrite",
           "release_pipes", "require_writable", "safe_cell", "safe_text", "store_files", "unwritable", "write_csv",
           "csv_text"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: Files SQLite keeps beside a database while it is open: part of the store.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _real(path: Any) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def store_files(db: Any) -> list[str]:
    """A SQLite store and the side files SQLite writes beside it."""
    db = os.fspath(db)
    return [db, *(db + s for s in SQLITE_SIDE_FILES)]


def refuse_overwrite(output: Any, inputs: Iterable[Any], option: str, error: type[DeplbenchError]) -> None:
    """Refuse an output that is, or contains, one of the command's inputs.

    Parameters
    ----------
    output : path-like
        The file or folder the command will write (need not exist).
    inputs : iterable of path-like
        The files the command reads (a store: :func:`store_files`).
    option : str
        The output's option, for messages (``-o``, ``--out``).
    error : type
        The :class:`~deplbench.errors.DeplbenchError` subclass raised.

    Raises
    ------
    error
        ``"-o s.sqlite: is the input s.sqlite; write to another file"``, or
        ``"--out rep: contains the input rep/tables/my.sqlite ..."``; both
        paths resolved first (``..``, symbolic links, hard links to one file).
    """
    out = _real(output)
    try:
        out_stat = os.stat(out)
    except OSError:
        out_stat = None
    for inp in inputs:
        src = _real(inp)
        same = src == out
        if not same and out_stat is not None:
            try:
                same = os.path.samefile(src, out)      # a hard link is the same file too
            except OSError:
                same = False
        if same:
            raise error(f"{option} {os.fspath(output)}: is the input {os.fspath(inp)}; writing it would destroy "
                        "what the command reads (write to another file)")
        if os.path.commonpath([out, src]) == out and src != out:
            raise error(f"{option} {os.fspath(output)}: contains the input {os.fspath(inp)}; writing there "
                        "could replace it (choose a folder outside the inputs)")


#: Write ends of named pipes :func:`unwritable` opened; held so that no reader sees end-of-file early.
_PIPES_HELD: list[int] = []


def release_pipes() -> None:
    """Close the named pipes' write ends :func:`unwritable` held, once the command has written: their
    readers then see end-of-file (the CLI's :func:`~deplbench.cli.main` calls it as it returns)."""
    while _PIPES_HELD:
        with contextlib.suppress(OSError):
            os.close(_PIPES_HELD.pop())


def unwritable(path: Any) -> str:
    """Why the file ``path`` cannot be written, or ``""`` when it can.

    Asked before a command does any work, so that a long solve does not end
    in a file that was never written. Permission bits alone do not answer
    it (root may write anywhere the permissions say, yet not into ``/proc``
    or a read-only mount), so the file system itself is asked: an existing
    file is opened for appending (which leaves it unchanged), and for a new
    one a uniquely named probe file is created and removed in its folder
    (never the target itself: tasks running side by side may check the same
    path). An existing named pipe with a reader is opened for writing and
    that end is kept open until :func:`release_pipes` (the CLI calls it as a
    command returns; otherwise at the process's end): closing it at once
    would give the reader end-of-file before the command has written.

    Returns
    -------
    str
        ``"is a directory"``, ``"directory /x does not exist"``, or the
        operating system's reason (``"permission denied"``, ``"read-only
        file system"``, ...); ``""`` when the file can be written.
    """
    text = os.fspath(path)
    if not text:
        return "empty path"
    if os.path.isdir(text):
        return "is a directory"
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        return f"directory {parent} does not exist"
    if os.path.exists(text):
        try:
            # O_NONBLOCK: a named pipe without a reader fails at once instead of hanging
            fd = os.open(text, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                # a pipe's reader sees end-of-file when its last writer closes: this probe stays
                # open (a silent writer) until the command has written (release_pipes)
                _PIPES_HELD.append(fd)
            else:
                os.close(fd)
            return ""
        except FileNotFoundError:
            pass                      # removed meanwhile: the folder decides
        except OSError as exc:
            return (exc.strerror or str(exc)).lower()
    return folder_unwritable(parent)


def require_writable(path: Any, option: str, error: type[DeplbenchError]) -> None:
    """Refuse a file the command will write that cannot be written (:func:`unwritable`), before any work.

    Raises
    ------
    error
        ``"-o out.json: cannot write (is a directory)"``: the option and the path as given.
    """
    reason = unwritable(path)
    if reason:
        raise error(f"{option} {os.fspath(path)}: cannot write ({reason})")


def folder_unwritable(folder: Any) -> str:
    """Why no file can be created in ``folder``, or ``""`` when one can.

    The probe of :func:`unwritable` for a new file: a uniquely named file is
    created and removed in ``folder``, so the file system answers (a
    read-only mount, a folder of another user, root on a server that maps
    root to nobody), not the permission bits ``os.access`` reads. Used
    wherever a command needs to create files in a folder (the results
    store's ``-wal`` and ``-shm`` files).

    Returns
    -------
    str
        ``"directory /x does not exist"``, or the operating system's reason
        (``"permission denied"``, ``"read-only file system"``, ...); ``""``
        when a file can be created there.
    """
    import tempfile

    text = os.fspath(folder)
    if not os.path.isdir(text):
        return f"directory {text} does not exist"
    try:
        fd, probe = tempfile.mkstemp(prefix=".deplbench-probe-", dir=text)
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return ""


def confined(root: Any, path: Any, what: str, error: type[DeplbenchError]) -> str:
    """``path`` (relative to ``root``, or absolute) after checking it resolves inside ``root``.

    Symbolic links are resolved on both sides, so a link inside the folder
    that points elsewhere (``run/out`` → ``/elsewhere``) does not let a
    write leave it.

    Returns
    -------
    str
        The resolved path.

    Raises
    ------
    error
        Naming ``what`` and where the path really leads.
    """
    base = _real(root)
    full = _real(os.path.join(base, os.fspath(path)))
    if os.path.commonpath([base, full]) != base:
        raise error(f"{what}: {os.fspath(path)!r} resolves to {full}, outside the folder {base} "
                    "(symbolic links are followed); output files must stay inside it")
    return full


def safe_text(text: str) -> str:
    """``text`` with a leading ``'`` on every line a spreadsheet would read as a formula.

    A cell is split at each line break (``\\n``, ``\\r``): a spreadsheet that
    meets an unquoted carriage return starts a new row, and some show each
    line of a quoted cell as its own formula context, so every line that
    starts with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets the
    quote, not only the first.
    """
    if not text:
        return text
    out = []
    start = 0
    for i, ch in enumerate(text):
        if i == start and text.startswith(FORMULA_PREFIXES, i):
            out.append("'")
        out.append(ch)
        if ch in "\r\n":
            start = i + 1
            if i + 1 < len(text) and ch == "\r" and text[i + 1] == "\n":
                start = i + 2
    return "".join(out)


def safe_cell(value: Any) -> Any:
    """A CSV cell that cannot start a formula: strings through :func:`safe_text`, other values unchanged.

    Numbers stay numbers (a negative cost is ``-1.5``, not ``'-1.5``).
    """
    return safe_text(value) if isinstance(value, str) else value


def csv_text(frame) -> str:
    """The CSV of a pandas DataFrame as :func:`write_csv` writes it."""
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]):       # object or string columns
            out[col] = out[col].map(safe_cell)
    buf = io.StringIO()
    # QUOTE_MINIMAL quotes a cell holding the delimiter, the quote or a
    # character of the line terminator: with RFC 4180's "\r\n" that is every
    # cell with a line break of either kind (with "\n" alone a bare "\r"
    # would go unquoted and end the row in a spreadsheet).
    out.to_csv(buf, index=False, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    return buf.getvalue()


def write_csv(frame, path: Any) -> None:
    """Write ``frame`` as CSV to ``path``: the one CSV writer (module docstring)."""
    text = csv_text(frame)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
