"""CHANGELOG.md's moved-paths lists point somewhere real.

A user whose script imported a moved module fixes it from the **Moved**
table of the unreleased section: old path → new path. Each new path must
name a module of the source tree, or a name defined at the top of one. The
check reads the source with :mod:`ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
CHANGELOG = ROOT / "CHANGELOG.md"
_FIRST_PATH = re.compile(r"`(deplbench(?:\.[\w{},]+)+)`")


def unreleased_moves(text: str) -> list[tuple[str, str]]:
    """(old cell, new cell) of every table row under a ``### Moved`` heading of
    the ``## [Unreleased]`` section whose old path is a ``deplbench`` name."""
    start = text.index("## [Unreleased]")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else None]
    rows = []
    for block in re.split(r"\n### ", section)[1:]:
        if not block.startswith("Moved"):
            continue
        for line in block.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if line.startswith("| `deplbench") and len(cells) >= 2:
                rows.append((cells[0], cells[1]))
    return rows


def new_paths(cell: str) -> list[str]:
    """The dotted names of a new-path cell: its first backticked
    ``deplbench...`` name, a ``{a,b}`` group expanded."""
    match = _FIRST_PATH.search(cell)
    if not match:
        return []
    name = match.group(1)
    group = re.search(r"\{([^}]*)\}", name)
    if not group:
        return [name]
    return [name[:group.start()] + part + name[group.end():] for part in group.group(1).split(",")]


def _module_file(name: str, src: Path) -> Path | None:
    path = src.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def resolves(name: str, src: Path = SRC) -> bool:
    """Whether ``name`` is a module of ``src`` or a top-level name of one."""
    if _module_file(name, src):
        return True
    module, _, attr = name.rpartition(".")
    path = _module_file(module, src)
    return path is not None and attr in _top_level_names(path.read_text(encoding="utf-8"))


def test_every_new_path_in_the_moved_lists_exists():
    rows = unreleased_moves(CHANGELOG.read_text(encoding="utf-8"))
    assert rows, "no Moved table in CHANGELOG.md's [Unreleased] section"
    missing = [f"{old} → {name}" for old, new in rows for name in new_paths(new) if not resolves(name)]
    assert not missing, "CHANGELOG.md names new paths that do not exist:\n" + "\n".join(missing)


#: Modules created in model/, evaluation/ or exact/ after the move: nothing moved
#: there, so they have no row (their changelog entry is under **Added**/**Changed**).
CREATED_IN_PLACE = frozenset({"deplbench.formulations.evaluation.settings", "deplbench.formulations.evaluation.memory",
                              "deplbench.formulations.evaluation.instance_check",
                              "deplbench.formulations.evaluation.quantile_ci",
                              "deplbench.formulations.evaluation.means"})


def test_formulations_modules_are_listed_with_their_new_place():
    """Every module of the formulations layer that moved into model/,
    evaluation/ or exact/ has its row, old path → the module's path."""
    listed = {new for _, cell in unreleased_moves(CHANGELOG.read_text(encoding="utf-8"))
              for new in new_paths(cell)}
    package = SRC / "deplbench" / "formulations"
    moved = {".".join(p.relative_to(SRC).with_suffix("").parts)
             for sub in ("model", "evaluation", "exact") for p in (package / sub).glob("*.py")
             if p.name != "__init__.py"} - CREATED_IN_PLACE
    assert moved and moved <= listed, sorted(moved - listed)


def test_the_check_can_fail(tmp_path):
    (tmp_path / "deplbench" / "pkg").mkdir(parents=True)
    (tmp_path / "deplbench" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "deplbench" / "pkg" / "mod.py").write_text("X = 1\ndef f(): pass\n")
    assert resolves("deplbench.pkg.mod", tmp_path) and resolves("deplbench.pkg.mod.f", tmp_path)
    assert not resolves("deplbench.pkg.gone", tmp_path)
    assert not resolves("deplbench.pkg.mod.g", tmp_path)
    text = ("## [Unreleased]\n\n### Moved\n\n| old | new | public |\n|---|---|---|\n"
            "| `deplbench.a` (`src/a.py`) | `deplbench.pkg.{mod,gone}` (two) | — |\n"
            "\n## [0.1.0]\n\n### Moved\n\n| `deplbench.b` | `deplbench.c` | — |\n")
    rows = unreleased_moves(text)
    assert rows == [("`deplbench.a` (`src/a.py`)", "`deplbench.pkg.{mod,gone}` (two)")]
    assert new_paths(rows[0][1]) == ["deplbench.pkg.mod", "deplbench.pkg.gone"]


@pytest.mark.parametrize("cell, expected", [
    ("`deplbench.files.FORMULA_PREFIXES` (still importable from `store`)", ["deplbench.files.FORMULA_PREFIXES"]),
    ("`perf/` (`python perf/X.py`)", []),
])
def test_new_paths_reads_the_first_dotted_name(cell, expected):
    assert new_paths(cell) == expected
