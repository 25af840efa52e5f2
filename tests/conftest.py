"""Test-suite configuration: the ``slow`` and ``integration`` markers.

``make test`` runs everything; ``make test-fast`` runs
``pytest -m "not slow and not integration"``, the quick loop (under a minute
on a 2-core machine) that still exercises every layer. Markers are assigned
here, at collection, so test files need no decorators and a test is marked
by what it does:

* ``integration``: the test starts other processes — it runs the installed
  ``deplbench`` command or ``python -m deplbench`` (a ``subprocess`` call or
  the test modules' ``deplbench(...)`` helper), or runs sweeps through the
  process-pool/Dask executors, or lives in a module that is end-to-end as a
  whole (:data:`INTEGRATION_MODULES`);
* ``slow``: the test takes more than about two seconds on its own on this
  2-core machine (measured with ``pytest --durations``), listed in
  :data:`SLOW_TESTS` by module and test-name prefix.

A test marked by hand (``@pytest.mark.slow``) keeps its mark.
"""

from __future__ import annotations

import inspect
import re

import pytest

#: Modules whose every test is end to end (processes, whole sweeps).
INTEGRATION_MODULES = frozenset({
    "test_algorithms_integration",
    "test_json_stdout",
})

#: What in a test function's source means it starts processes.
_PROCESS_PATTERN = re.compile(
    r"\bsubprocess\.|(?<![\w.])deplbench\(|\bLocalExecutor\(|\bDaskExecutor\(|\bcli_main\(\s*\[?\s*\"run\"")

#: module → test-name prefixes of tests that take more than ~2 s alone
#: (``--durations`` on this machine). A prefix matches parametrised ids too.
SLOW_TESTS: dict[str, tuple[str, ...]] = {}


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
        while True:
            calls = re.compile("|".join([_PROCESS_PATTERN.pattern]
                                        + [rf"(?<![\w.]){re.escape(n)}\(" for n in starters]))
            more = {n for n, src in funcs.items() if n not in starters
                    and calls.search(src.partition(":")[2] if src else "")}
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in INTEGRATION_MODULES or _starts_processes(item):
            item.add_marker(pytest.mark.integration)
        name = getattr(item, "originalname", None) or item.name
        if any(name.startswith(prefix) for prefix in SLOW_TESTS.get(module, ())):
            item.add_marker(pytest.mark.slow)
