"""The test suite's layout mirrors ``src/deplbench`` (CONTRIBUTING.md, "Tests").

* a test module lives in the folder of the package it tests
  (``tests/solvers/depl/`` for ``deplbench.solvers.depl``); only the
  cross-cutting ones (:data:`CROSS_CUTTING`) sit in ``tests/`` itself;
* every folder is a package (``__init__.py``), so a module is named by its
  path and two folders may hold modules of the same name;
* helpers and other test modules are imported by that path
  (``from tests.instance_data import ...``), never by a bare name that only
  resolves when some folder happens to be on ``sys.path``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "src" / "deplbench"

#: Test modules about the whole package rather than one of its layers.
CROSS_CUTTING = frozenset({
    "test_architecture.py",      # one-way imports between the layers
    "test_blas_threads.py",      # the bottom module deplbench.blas_threads
    "test_changelog_moves.py",   # CHANGELOG.md's moved-paths lists against the tree
    "test_code_comments.py",
    "test_cores.py",             # the bottom module deplbench.limits' core count, read by two layers
    "test_docs_site.py",
    "test_doctests.py",
    "test_fuzz_planted.py",      # validation properties across instances, sweeps and the library
    "test_hostile_files.py",     # hostile input across the layers
    "test_hostile_inputs.py",
    "test_hostile_writes_and_reads.py",  # outputs over inputs, symlinks, CSV, globs, reads, JSON
    "test_layout.py",
    "test_level_text.py",        # confidence levels as printed by solvers, commands and reports
    "test_markers.py",
    "test_plugins.py",           # a third-party solver through the entry point, docs/extending.md
    "test_public_api.py",
    "test_python_api.py",
})


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__"
                  and any(p.glob("*.py")))


def test_every_sub_folder_mirrors_a_package_of_src():
    stray = [str(d.relative_to(TESTS)) for d in _folders()
             if d != TESTS and not (PACKAGE / d.relative_to(TESTS) / "__init__.py").is_file()]
    assert not stray, f"tests/ folders with no package of the same path under src/deplbench: {stray}"


def test_every_folder_with_python_files_is_a_package():
    missing = [str(d.relative_to(TESTS.parent)) for d in _folders() if not (d / "__init__.py").is_file()]
    assert not missing, f"add an __init__.py to {missing}"


def test_only_cross_cutting_test_modules_at_the_top():
    flat = sorted(p.name for p in TESTS.glob("test_*.py") if p.name not in CROSS_CUTTING)
    assert not flat, (f"move {flat} into the folder mirroring the package each tests "
                      "(tests/solvers/depl/, tests/reports/, ...), or add it to CROSS_CUTTING here")


def test_test_modules_and_helpers_are_imported_by_their_path():
    local = {p.stem for p in TESTS.rglob("*.py") if p.stem != "__init__"}
    bare = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bare += [f"{path.relative_to(TESTS.parent)}:{node.lineno}: {n}"
                     for n in names if n.partition(".")[0] in local]
    assert not bare, f"import these as tests.<path> (from tests.instance_data import ...): {bare}"


def _named_test_paths(text: str) -> set[str]:
    return set(re.findall(r"\btests/[A-Za-z0-9_/]+\.py\b", text))


def test_every_test_path_the_docs_and_sources_name_exists():
    root = TESTS.parent
    files = [root / "README.md", root / "CONTRIBUTING.md", root / "CHANGELOG.md", root / "Makefile",
             *(root / "docs").rglob("*.md"), *PACKAGE.rglob("*.py"), *(root / "perf").glob("*.py")]
    stale = sorted(f"{f.relative_to(root)}: {p}" for f in files if f.is_file()
                   for p in _named_test_paths(f.read_text(encoding="utf-8")) if not (root / p).exists())
    assert not stale, f"named test files that do not exist (moved? see tests/test_layout.py): {stale}"


def test_the_stale_path_check_catches_a_moved_file():
    assert _named_test_paths("see tests/test_adaptive_deadline.py and tests/x/y_z.py.") == {
        "tests/test_adaptive_deadline.py", "tests/x/y_z.py"}
