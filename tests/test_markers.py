"""Markers are written where each test is defined, and none is missing.

``tests/conftest.py`` states the rules; no ``conftest.py`` assigns a marker.
The checks below read every test collected in the same run (``make test`` and
``make test-fast`` collect the whole suite; a test deselected by ``-m`` already
carries the marker) and fail naming each test that lacks its marker:

* ``integration``: the test's source starts processes — a ``subprocess``
  call, the installed command, the ``deplbench_cli`` fixture's
  ``.process(...)`` or its in-process ``run`` (which starts the sweep's
  worker pool), the process-pool or Dask executors — directly or through a
  helper function of its module; or its module is end to end as a whole
  (:data:`INTEGRATION_MODULES`, marked by a module-level ``pytestmark``);
* ``system_packages``: the test's source names CBC or Chromium, or calls
  ``availability(...)`` (whether the optional programs are on PATH), so
  ``.ci/run`` must run it again with them hidden;
* ``slow``: the test uses a fixture that takes seconds to build
  (:data:`SLOW_FIXTURES`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Modules whose every test is end to end (processes, whole sweeps).
INTEGRATION_MODULES = frozenset({
    "test_algorithms_integration",
    "test_json_stdout",
    "test_library",        # builds a library, re-solves MPS files with HiGHS and SCIP
})

#: What in a test function's source means it starts processes.
PROCESS_PATTERN = re.compile(
    r"\bsubprocess\.|(?<![\w.])deplbench\(|\bLocalExecutor\(|\bDaskExecutor\(|\bcli_main\(\s*\[?\s*\"run\""
    r"|\bdeplbench_cli\.process\(|(?<![\w.])deplbench_cli\(\s*\"run\"")

#: What in a test function's source means it depends on an optional system
#: package (CBC, Chromium).
SYSTEM_PATTERN = re.compile(r"\bcbc\b|chromium|\bavailability\(", re.IGNORECASE)

#: Module-scoped fixtures that take seconds to build (a whole report, a
#: calibrated DepL run): every test that uses one is slow.
SLOW_FIXTURES = frozenset({"full_report", "calibrated9"})

#: Collection hooks and item methods through which a conftest.py would assign
#: markers instead of the test's definition.
ASSIGNING_NAMES = frozenset({"pytest_collection_modifyitems", "pytest_itemcollected", "add_marker", "applymarker"})


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


@functools.cache
def _process_helpers(module) -> re.Pattern | None:
    """Calls of the module's non-test functions that start processes,
    directly or through each other (``run_cli(...)``, ``_start_cli(...)``)."""
    name = module.__name__
    funcs = {n: _source(f) for n, f in vars(module).items()
             if inspect.isfunction(f) and not n.startswith("test")
             and getattr(f, "__module__", None) == name}
    starters: set[str] = set()
    while True:   # to a fixed point: helpers calling helpers
        more = {n for n, src in funcs.items() if n not in starters
                and (PROCESS_PATTERN.search(src)
                     or any(re.search(rf"(?<![\w.]){re.escape(h)}\(", src) for h in starters if h != n))}
        if not more:
            break
        starters |= more
    return re.compile("|".join(rf"(?<![\w.]){re.escape(n)}\(" for n in sorted(starters))) if starters else None


def starts_processes(function, module) -> bool:
    """Whether ``function``'s source starts processes, itself or through a
    helper function of ``module``."""
    source = _source(function)
    if not source:
        return False
    if PROCESS_PATTERN.search(source):
        return True
    helpers = _process_helpers(module)
    return bool(helpers and helpers.search(source))


def needs_system_packages(function) -> bool:
    return bool(SYSTEM_PATTERN.search(_source(function)))


def _items(request: pytest.FixtureRequest) -> list[pytest.Function]:
    return [item for item in request.session.items if isinstance(item, pytest.Function)]


def _unmarked(items, marker: str, rule) -> list[str]:
    return [item.nodeid for item in items if rule(item) and item.get_closest_marker(marker) is None]


def test_no_conftest_assigns_markers():
    found = []
    for path in sorted(TESTS.rglob("conftest.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = (node.name if isinstance(node, ast.FunctionDef)
                    else node.attr if isinstance(node, ast.Attribute) else None)
            if name in ASSIGNING_NAMES:
                found.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}: {name}")
    assert not found, f"markers are written where each test is defined, not assigned in conftest.py: {found}"


def test_tests_that_start_processes_are_marked_integration(request):
    def rule(item):
        module = item.module.__name__.rpartition(".")[2]
        return module in INTEGRATION_MODULES or starts_processes(item.function, item.module)

    unmarked = _unmarked(_items(request), "integration", rule)
    assert not unmarked, f"add @pytest.mark.integration to {unmarked}"


def test_tests_that_need_optional_programs_are_marked_system_packages(request):
    def rule(item):
        return needs_system_packages(item.function)

    unmarked = _unmarked(_items(request), "system_packages", rule)
    assert not unmarked, f"add @pytest.mark.system_packages to {unmarked}"


def test_tests_that_use_a_slow_fixture_are_marked_slow(request):
    def rule(item):
        return bool(SLOW_FIXTURES.intersection(item.fixturenames))

    unmarked = _unmarked(_items(request), "slow", rule)
    assert not unmarked, f"add @pytest.mark.slow to {unmarked}"


# Planted offenders for the rules above (not tests: pytest collects none of them).

def _planted_runner(args):
    import subprocess
    return subprocess.run(args, check=False)


def _planted_via_helper():
    return _planted_runner(["true"])


def _planted_quiet():
    return sum(range(3))


def _planted_browser():
    return "chromium-headless-shell"


def test_the_rules_find_planted_offenders():
    import sys

    module = sys.modules[__name__]
    assert starts_processes(_planted_runner, module)
    assert starts_processes(_planted_via_helper, module)       # through a helper of the module
    assert not starts_processes(_planted_quiet, module)
    assert needs_system_packages(_planted_browser)
    assert not needs_system_packages(_planted_quiet)
