"""Writing the fit's outputs atomically (the instance file and the JSON report).

A file is written to a temporary name in its directory and renamed, so the
target is either untouched or complete (``deplbench fit`` never leaves a
half-written instance behind); a named pipe is written to as it is. The
report's figures are drawn by :mod:`deplbench.reports.fit_plots` (plotting
lives above the instance layer, docs/DESIGN.md), which writes through
:func:`write_bytes_atomic` too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from deplbench.instances.fit.logs import LogError
from deplbench.jsonio import dumps

#: Name of the JSON summary in a fit report directory.
REPORT_JSON = "fit-report.json"


def write_instance_atomic(instance, path: str | os.PathLike) -> Path:
    """Write ``instance.to_json()`` to ``path`` via a temporary file + rename.

    The rename is atomic on POSIX, so ``path`` is either untouched or complete.

    Raises
    ------
    LogError
        If the target directory does not exist or is not writable.
    """
    path = Path(path)
    write_bytes_atomic(path, instance.to_json().encode("utf-8"))
    return path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory + rename.

    An existing named pipe is written to directly: a file renamed over it
    would replace the pipe, and its reader would never get the data. A pipe
    no one reads is refused (the commands ask
    :func:`~deplbench.files.require_writable` before any work).

    Raises
    ------
    LogError
        If the directory does not exist or the file cannot be written (the
        message names the file).
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise LogError(f"{path}: directory {parent} does not exist")
    if path.is_fifo():
        try:
            # O_NONBLOCK: a pipe no one reads fails at once instead of holding the command forever
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_NONBLOCK), "wb") as fh:
                os.set_blocking(fh.fileno(), True)      # the reader may take the data slower than it comes
                fh.write(data)
        except OSError as exc:
            raise LogError(f"{path}: cannot write ({exc.strerror})") from None
        return
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise LogError(f"{path}: cannot write ({exc.strerror})") from None
    except BaseException:
        # an interrupt (Ctrl-C) during the write: the target stays as it was, with no temporary file beside it
        Path(tmp).unlink(missing_ok=True)
        raise


def report_directory(directory: str | os.PathLike) -> Path:
    """Create the report directory (and parents) if needed.

    Raises
    ------
    LogError
        Naming ``--report`` and the directory when it cannot be created.
    """
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LogError(f"--report {out}: cannot create directory ({exc.strerror})") from None
    return out


def write_report_json(fit, directory: str | os.PathLike) -> Path:
    """Write :meth:`FitResult.diagnostics` as ``fit-report.json`` in ``directory``.

    Returns
    -------
    Path
        The file written.
    """
    target = report_directory(directory) / REPORT_JSON
    write_bytes_atomic(target, (dumps(fit.diagnostics(), indent=2) + "\n").encode())
    return target
