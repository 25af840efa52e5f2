"""One-line messages for errors the CLI reports (exit status 2).

Python's own text for a file-system error is ``[Errno 17] File exists:
'/etc/hostname'``: the errno number means nothing to a user and the problem
comes before the file. The CLI names the file first, then the problem in
words, like every other ``error:`` line (docs/DESIGN.md, "Errors").
"""

from __future__ import annotations

import errno
import os

__all__ = ["os_error_message", "output_path", "split_params"]


def os_error_message(exc: OSError) -> str:
    """One line for a file-system error: the file, then the problem in words.

    Parameters
    ----------
    exc : OSError
        Any :class:`OSError` (``FileExistsError``, ``PermissionError``, ...).

    Returns
    -------
    str
        ``"<file>: <problem>"`` (``"<file> -> <file2>: <problem>"`` for a
        rename), or the problem alone when the error names no file; never
        the ``[Errno N]`` prefix.

    Examples
    --------
    >>> os_error_message(FileExistsError(17, "File exists", "/etc/hostname"))
    '/etc/hostname: file exists'
    """
    problem = (exc.strerror or "").strip()
    if not problem and exc.errno is not None:
        problem = os.strerror(exc.errno) if exc.errno in errno.errorcode else ""
    if not problem:
        # No errno (an OSError raised with a plain message by a library).
        problem = str(exc).strip() or type(exc).__name__
    problem = problem[:1].lower() + problem[1:]
    files = [os.fsdecode(f) for f in (exc.filename, exc.filename2) if f is not None]
    if not files:
        return problem
    return f"{' -> '.join(files)}: {problem}"


def output_path(text: str) -> str:
    """argparse ``type`` of every output option (``-o``, ``--out``, ``--write-lp``).

    An empty path names no file: without this check a command given ``-o ''``
    would take it as "no output" and exit 0 having written nothing.

    Raises
    ------
    argparse.ArgumentTypeError
        For ``""`` (argparse then prints one ``error:`` line naming the
        option, exit status 2).
    """
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give the name of the file to write")
    return text


def split_params(items, error, malformed: str = "--param {item!r}: expected KEY=VALUE") -> dict[str, str]:
    """``--param KEY=VALUE`` items as {key: text}: the one parser of every command with ``--param``.

    Keys have ``-`` turned into ``_`` (``--param time-limit=5``); values stay
    text (each command converts them). A key given twice is refused rather
    than the last one silently winning.

    Parameters
    ----------
    items : list of str
        The ``--param`` values as typed.
    error : type
        The :class:`~deplbench.errors.DeplbenchError` subclass raised.
    malformed : str
        The message for an item without ``=`` or a key (``{item!r}`` is filled in).

    Raises
    ------
    error
        ``--param scenarios: given twice``, or ``malformed``.
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise error(malformed.format(item=item))
        if key in out:
            raise error(f"--param {key}: given twice")
        out[key] = value.strip()
    return out
