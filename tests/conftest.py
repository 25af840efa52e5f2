"""Test-suite configuration: the ``deplbench_cli`` fixture.

Markers are written where each test is defined, never assigned here:

* ``slow``: the test takes more than about half a second of CPU on its own
  (``@pytest.mark.slow``, or ``pytest.param(..., marks=pytest.mark.slow)`` for
  one case of a parametrised test); so is every test that uses a fixture
  taking seconds to build (``full_report``, ``calibrated9``);
* ``integration``: the test starts other processes (it runs the installed
  ``deplbench`` command or ``python -m deplbench``, a ``subprocess`` call or
  the fixture's ``.process(...)``, or runs a sweep through the process-pool
  or Dask executors), or its module is end to end as a whole (module-level
  ``pytestmark``);
* ``system_packages``: the test depends on CBC or Chromium and skips with the
  reason without them; ``.ci/run`` runs these a second time with both hidden.

``make test`` runs everything; ``make test-fast`` runs
``pytest -m "not slow and not integration"``, the quick loop (under a minute
on a 2-core machine) that still exercises every layer.
``tests/test_markers.py`` fails if a test that starts processes, names CBC or
Chromium, or uses a slow fixture lacks its marker, or if a ``conftest.py``
assigns markers again.

The ``deplbench_cli`` fixture (:class:`CliRunner`) is the one way tests run
the command: ``deplbench_cli(*args)`` in this process, returning (status,
stdout, stderr), or ``deplbench_cli.process(*args)`` as a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest


class CliRunner:
    """The ``deplbench`` command, run for a test (the ``deplbench_cli`` fixture).

    ``deplbench_cli(*args)`` runs it in this process (cheap) and returns
    ``(exit status, stdout, stderr)``; ``deplbench_cli.process(*args)`` runs
    ``python -m deplbench`` in a new process and returns the
    :class:`subprocess.CompletedProcess`. Arguments are converted with
    ``str`` (paths, numbers).
    """

    def __call__(self, *args) -> tuple[int, str, str]:
        from deplbench.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main([str(a) for a in args])
            except SystemExit as exc:   # argparse: --help, usage errors
                status = exc.code
        return status, out.getvalue(), err.getvalue()

    @staticmethod
    def process(*args, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
        # A generous budget: a loaded 2-core machine needs ~10 s for some commands.
        return subprocess.run([sys.executable, "-m", "deplbench", *map(str, args)], capture_output=True,
                              text=True, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def deplbench_cli() -> CliRunner:
    """Run ``deplbench`` in this process or as a subprocess (:class:`CliRunner`)."""
    return CliRunner()
