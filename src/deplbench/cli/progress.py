"""Progress bars for the long commands (``run``, ``certify``, ``simulate``,
``adaptive``, ``library build``, ``report``), and the solver silence they
need.

A bar is shown only when standard error is a terminal and the command was
not given ``--quiet`` (or ``--no-progress``): logs, CI and pipes get no
carriage-return noise. While a bar shows, file descriptors 1 and 2 point at
the null device, so what native solver code prints straight to them (a
banner, a log line, a warning from C) cannot break the bar; the bar itself
and Python's ``sys.stderr`` (deplbench's own messages, warnings, tracebacks)
write to a duplicate of the real standard error. Without a bar nothing is
redirected (solver output then reaches stderr as before; ``--quiet``
therefore also shows what a solver printed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO


def progress_wanted(args: argparse.Namespace, stream: TextIO | None = None) -> bool:
    """True when a bar should show: stderr is a terminal and neither
    ``--quiet`` nor ``--no-progress`` was given."""
    if getattr(args, "quiet", False) or getattr(args, "no_progress", False):
        return False
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def native_output_held(enabled: bool) -> Iterator[TextIO]:
    """Meanwhile, descriptors 1 and 2 go to the null device; yields the
    stream the bar writes to (the real stderr).

    With ``enabled`` False nothing changes and ``sys.stderr`` is yielded.
    """
    if not enabled:
        yield sys.stderr
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        saved_out, saved_err = os.dup(1), os.dup(2)
    except (AttributeError, OSError, ValueError):
        yield sys.stderr
        return
    term = open(saved_err, "w", encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
                errors="backslashreplace", buffering=1, closefd=False)
    old_stderr = sys.stderr
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stderr = term
    try:
        yield term
    finally:
        sys.stderr = old_stderr
        with contextlib.suppress(OSError, ValueError):
            term.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)
        term.close()


class Stages:
    """A bar over named stages whose elapsed time keeps ticking during a
    stage (a background thread refreshes it twice a second).

    Examples
    --------
    >>> with Stages(False, "simulate", ["solve", "closed loop"]) as st:
    ...     st.stage("solve")
    ...     st.stage("closed loop")
    """

    def __init__(self, enabled: bool, desc: str, stages: list[str], stream: TextIO | None = None):
        from tqdm import tqdm

        self.bar = tqdm(total=len(stages), desc=desc, unit="stage", disable=not enabled,
                        file=stream or sys.stderr, dynamic_ncols=True,
                        bar_format="{desc}: {n_fmt}/{total_fmt} stages [{elapsed}]{postfix}")
        self._started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True) if enabled else None

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self.bar.refresh()

    def stage(self, name: str) -> None:
        """Mark the previous stage done and show ``name`` as running."""
        if self._started:
            self.bar.update(1)
        self._started = True
        self.bar.set_postfix_str(name)

    def __enter__(self) -> Stages:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._started and exc[0] is None:
            self.bar.update(1)
        self.bar.close()


def counter(enabled: bool, desc: str, total: int | None = None, unit: str = "it",
            stream: TextIO | None = None):
    """A plain tqdm counter bar (``update(n)``, ``set_postfix_str``, ``close``)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=stream or sys.stderr,
                dynamic_ncols=True)


__all__ = ["progress_wanted", "native_output_held", "Stages", "counter"]
