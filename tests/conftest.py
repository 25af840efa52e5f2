"""Test-suite configuration: the ``slow`` and ``integration`` markers.

``make test`` runs everything; ``make test-fast`` runs
``pytest -m "not slow and not integration"``, the quick loop (under a minute
on a 2-core machine) that still exercises every layer. The ``integration``
marker is assigned here, at collection, by what a test does:

* ``integration``: the test starts other processes — it runs the installed
  ``deplbench`` command or ``python -m deplbench`` (a ``subprocess`` call or
  the ``deplbench_cli`` fixture's ``.process(...)``), or runs sweeps through the
  process-pool/Dask executors, or lives in a module that is end-to-end as a
  whole (:data:`INTEGRATION_MODULES`);
* ``system_packages``: the test's source names CBC or Chromium (also set by
  hand in the test files);
* ``slow``: a test that takes more than about half a second of CPU on its
  own is marked where it is defined (``@pytest.mark.slow``, or
  ``pytest.param(..., marks=pytest.mark.slow)`` for one case of a
  parametrised test); here, only every test that uses a fixture taking
  seconds to build (:data:`SLOW_FIXTURES`) is marked too.

The ``deplbench_cli`` fixture (:class:`CliRunner`) is the one way tests run
the command: ``deplbench_cli(*args)`` in this process, returning (status,
stdout, stderr), or ``deplbench_cli.process(*args)`` as a subprocess.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import subprocess
import sys

import pytest

#: Modules whose every test is end to end (processes, whole sweeps).
INTEGRATION_MODULES = frozenset({
    "test_algorithms_integration",
    "test_json_stdout",
    "test_library",        # builds a library, re-solves MPS files with HiGHS and SCIP
})

#: What in a test function's source means it starts processes (the
#: ``deplbench_cli`` fixture's ``.process(...)``, or its in-process call of
#: ``run``, which starts the sweep's worker pool).
_PROCESS_PATTERN = re.compile(
    r"\bsubprocess\.|(?<![\w.])deplbench\(|\bLocalExecutor\(|\bDaskExecutor\(|\bcli_main\(\s*\[?\s*\"run\""
    r"|\bdeplbench_cli\.process\(|(?<![\w.])deplbench_cli\(\s*\"run\"")

#: What in a test function's source means it depends on an optional system
#: package (CBC, Chromium): such a test is marked ``system_packages`` and
#: ``.ci/run`` runs it a second time with the packages hidden from PATH.
_SYSTEM_PATTERN = re.compile(r"\bcbc\b|chromium|\bavailability\(", re.IGNORECASE)

#: Module-scoped fixtures that take seconds to build (a whole report, a
#: calibrated DepL run): every test that uses one is slow.
SLOW_FIXTURES = frozenset({"full_report", "calibrated9"})

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


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


_HELPERS: dict[str, re.Pattern | None] = {}


def _process_helpers(module) -> re.Pattern | None:
    """Calls of the module's non-test functions that start processes,
    directly or through each other (``run_cli(...)``, ``_start_cli(...)``)."""
    name = module.__name__
    if name not in _HELPERS:
        funcs = {n: _source(f) for n, f in vars(module).items()
                 if inspect.isfunction(f) and not n.startswith("test")
                 and getattr(f, "__module__", None) == name}
        starters: set[str] = set()
        while True:   # to a fixed point: helpers calling helpers
            more = {n for n, src in funcs.items() if n not in starters
                    and (_PROCESS_PATTERN.search(src)
                         or any(re.search(rf"(?<![\w.]){re.escape(h)}\(", src)
                                for h in starters if h != n))}
            if not more:
                break
            starters |= more
        _HELPERS[name] = (re.compile("|".join(rf"(?<![\w.]){re.escape(n)}\(" for n in starters))
                          if starters else None)
    return _HELPERS[name]


def _starts_processes(item: pytest.Item) -> bool:
    source = _source(getattr(item, "function", None))
    if not source:
        return False
    if _PROCESS_PATTERN.search(source):
        return True
    helpers = _process_helpers(item.module)
    return bool(helpers and helpers.search(source))


@pytest.hookimpl(tryfirst=True)   # before `-m` deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in INTEGRATION_MODULES or _starts_processes(item):
            item.add_marker(pytest.mark.integration)
        if _SYSTEM_PATTERN.search(_source(getattr(item, "function", None))):
            item.add_marker(pytest.mark.system_packages)
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
