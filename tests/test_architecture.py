"""The package's architecture, checked from the source (docs/DESIGN.md).

1. **Imports flow one way**: the bottom modules (the top-level
   ``deplbench.errors``, ``deplbench.params``, ``deplbench.jsonio`` and any
   other top-level module) ← instances ← formulations ← solvers ←
   benchmarks ← measure ← reports ← cli (``__main__`` and the package's
   ``__init__``, which re-exports :data:`deplbench.PUBLIC_API` from every
   layer, sit with the CLI). A module may import its own layer and the
   layers below it, never one above: not at module level, not inside a
   function, not under ``if TYPE_CHECKING``, not through
   ``importlib.import_module("...")`` with a literal name. A module below
   the CLI that imports a *computed* name must be listed in
   :data:`DYNAMIC_IMPORTS` with the function that reads its targets from
   its source; those targets are checked as edges like any other import.
2. **No import cycle**: no two modules import each other, directly or
   through others, counting every import the first check counts (inside
   functions, under ``if TYPE_CHECKING``, literal ``importlib`` calls). An
   edge goes to the module named (``from pkg import name`` goes to
   ``pkg.name`` when that is a module, else to ``pkg``); the implicit import
   of a module's parent packages is not an edge.
3. **Modules stay small**: none above 600 lines unless its module docstring
   says why in a sentence starting "Longer than 600 lines because".
4. **Inside a layer, sub-packages are tiered too** (:data:`TIERS`): in
   ``formulations``, model ← evaluation ← {milp, general} ← {exact,
   adaptive}; the layer's ``__init__`` and its top-level modules sit with the
   lowest tier. A module may import its own tier and the tiers below it,
   never one above; every sub-package of a tiered layer is in a tier.

The checks read every ``.py`` file under ``src/deplbench`` with :mod:`ast`;
nothing is imported, so a module that fails to import is still checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "deplbench"

#: Sub-packages, bottom to top; the top-level modules are layer 0 ("bottom").
LAYERS = ("instances", "formulations", "solvers", "benchmarks", "measure", "reports", "cli")
BOTTOM, TOP = 0, len(LAYERS)
#: Top-level modules that are not at the bottom: ``python -m deplbench`` runs the CLI.
TOP_MODULES = {"__main__": TOP}
#: The package root re-exports names of every layer (its PUBLIC_API), so it
#: sits with the CLI; a lower layer imports from the defining module instead.
ROOT_LEVEL = TOP

#: Tiers of a layer's sub-packages, bottom to top (rule 4). The layer's
#: ``__init__`` and its top-level modules are in the first tier.
TIERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "formulations": (("model",), ("evaluation",), ("milp", "general"), ("exact", "adaptive")),
}

MAX_LINES = 600
REASON = "Longer than 600 lines because"
#: The reason must open a sentence and go on to say something.
_REASON_SENTENCE = re.compile(r"(?:^|[.!?:]\s)" + re.escape(REASON) + r"\s+\w")


# --------------------------------------------------------------------- model
def module_name(path: Path) -> str:
    """``src/deplbench/solvers/depl/depl.py`` → ``deplbench.solvers.depl.depl``
    (a package's ``__init__.py`` is the package itself)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(name: str) -> int | None:
    """The layer of a ``deplbench`` module name; None when it belongs to no
    known layer (a new sub-package must be placed in LAYERS)."""
    parts = name.split(".")
    assert parts[0] == "deplbench", name
    if len(parts) == 1:
        return ROOT_LEVEL
    head = parts[1]
    if head in LAYERS:
        return LAYERS.index(head) + 1
    if head in TOP_MODULES:
        return TOP_MODULES[head]
    if (PACKAGE / f"{head}.py").is_file():
        return BOTTOM
    return None


def layer_label(level: int) -> str:
    return "bottom" if level == BOTTOM else LAYERS[level - 1]


def tier_of(name: str, tiers=TIERS) -> tuple[str, int, str] | None:
    """(layer, tier index, sub-package) of a module of a tiered layer; None
    for a module of any other layer. A top-level module of the layer (or its
    ``__init__``) is in tier 0 under the sub-package ``""``; a sub-package
    in no tier gets the index -1."""
    parts = name.split(".")
    if len(parts) < 2 or parts[1] not in tiers:
        return None
    layer = parts[1]
    if len(parts) == 2 or (len(parts) == 3 and not (PACKAGE / layer / parts[2]).is_dir()):
        return layer, 0, ""
    sub = parts[2]
    for index, tier in enumerate(tiers[layer]):
        if sub in tier:
            return layer, index, sub
    return layer, -1, sub


def tier_problems(source: str, name: str, *, is_package: bool, tiers=TIERS) -> list[str]:
    """Messages for every import of ``name`` that goes up a tier of its layer
    (or that involves a sub-package in no tier)."""
    own = tier_of(name, tiers)
    if own is None:
        return []
    layer, level, sub = own
    if level < 0:
        return [f"{name}: {layer}.{sub} is in no tier; add it to TIERS in tests/test_architecture.py"]
    problems = []
    for imp in (all_imports(source, name, is_package=is_package)
                + doctest_imports(source, name, is_package=is_package)):
        target = tier_of(imp.target, tiers)
        if target is None or target[0] != layer or target[2] == sub:
            continue
        if target[1] < 0 or target[1] > level:
            problems.append(f"{name}:{imp.line} ({layer}.{sub or '*'}) imports {imp.target} "
                            f"({layer}.{target[2]}), a higher tier [{imp.how}]")
    return problems


@dataclass(frozen=True)
class Import:
    target: str   # the deplbench module (or package) imported
    line: int
    how: str      # "import", "from", "importlib"


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(source: str, name: str, *, is_package: bool, modules=frozenset()) -> list[Import]:
    """Every ``deplbench`` module the source of module ``name`` imports.

    Walks the whole tree, so imports in functions, classes and ``if`` blocks
    count. Relative imports are resolved against ``name``. ``from pkg import
    x`` names ``pkg.x`` when ``x`` is a sub-module of ``pkg`` in the source
    tree, else ``pkg``. Literal ``importlib.import_module("...")`` and
    ``__import__("...")`` calls count too. ``modules``: names of modules
    that exist besides those in the source tree (a synthetic package).
    """
    tree = ast.parse(source)
    package = name if is_package else name.rpartition(".")[0]
    found: list[Import] = []

    def add(target: str, node: ast.AST, how: str) -> None:
        if target == "deplbench" or target.startswith("deplbench."):
            found.append(Import(target, node.lineno, how))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, "import")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            for alias in node.names:
                sub = f"{base_name}.{alias.name}"
                if base_name == "deplbench" and not (sub in modules or _exists(sub)):
                    # A name of the package root: a dunder (__version__) is
                    # defined by the root's body, which imports no layer
                    # (test_package_root_body_imports_no_layer); a public
                    # name is re-exported lazily from the module defining it.
                    if alias.name in ROOT_API:
                        add(ROOT_API[alias.name], node, "from")
                    elif not (alias.name.startswith("__") and alias.name.endswith("__")):
                        add(base_name, node, "from")
                    continue
                add(sub if sub in modules or _exists(sub) else base_name, node, "from")
        elif isinstance(node, ast.Call):
            func = node.func
            called = (func.attr if isinstance(func, ast.Attribute)
                      else func.id if isinstance(func, ast.Name) else "")
            if called in ("import_module", "__import__") and node.args \
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                add(node.args[0].value, node, "importlib")
    return found


def _exists(name: str) -> bool:
    """Whether ``name`` is a module or package in the source tree."""
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _literal(source: str, variable: str):
    """The literal value assigned to the module-level ``variable``."""
    for node in ast.parse(source).body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == variable and node.value is not None:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no literal module-level {variable}")


def _literal_calls(source: str, function: str) -> list[tuple]:
    """The literal positional arguments of every call of ``function``."""
    return [tuple(ast.literal_eval(a) for a in node.args) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function
            and all(isinstance(a, ast.Constant) for a in node.args)]


#: Modules that call ``importlib.import_module`` (or ``__import__``) with a
#: computed name, each with the function that reads the ``deplbench``
#: modules it may import from its own source. Those targets are import
#: edges like literal ones (rules 1, 2 and 4). Names from outside the
#: package are not edges: solver plugins (entry points) in the registry,
#: the test plugin files of ``DEPLBENCH_TASK_PLUGINS`` in ``lookup``.
DYNAMIC_IMPORTS: dict[str, Callable[[str], list[str]]] = {
    "deplbench": lambda src: sorted(set(_literal(src, "PUBLIC_API").values())),
    "deplbench.solvers.registry": lambda src: sorted({t.partition(":")[0]
                                                      for t in _literal(src, "SOLVERS").values()}),
    "deplbench.benchmarks.lookup": lambda src: sorted(f"deplbench.{layer}.{module}"
                                                      for layer, module in _literal_calls(src, "_optional_module")),
    "deplbench.benchmarks._warm": lambda src: [m for m in _literal(src, "MODULES")
                                               if m.startswith("deplbench.")],
    "deplbench.cli": lambda src: list(_literal(src, "COMMAND_MODULES")),
    "deplbench.formulations.adaptive": lambda src: [f"deplbench.formulations.adaptive.{m}"
                                                    for m in _literal(src, "_MODULES")],
}


#: Declared modules whose computed imports are not cycle edges (rule 2):
#: the registry loads a solver class by name on demand, and a solver that
#: runs another one by name (certify, receding horizon) calls ``solve()``,
#: which asks the registry: that loop is the registry's job, not an import
#: cycle. Its targets still count for rules 1 and 4.
ON_DEMAND = frozenset({"deplbench.solvers.registry"})

#: The package root's public names → their defining modules (its PUBLIC_API).
ROOT_API: dict[str, str] = _literal((PACKAGE / "__init__.py").read_text(encoding="utf-8"), "PUBLIC_API")


def computed_import_lines(source: str) -> list[int]:
    """Lines of ``import_module``/``__import__`` calls whose name is not a literal."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            called = (func.attr if isinstance(func, ast.Attribute)
                      else func.id if isinstance(func, ast.Name) else "")
            if called in ("import_module", "__import__") and not (
                    node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                lines.append(node.lineno)
    return lines


def dynamic_imports(source: str, name: str, declared=None) -> list[Import]:
    """The declared computed imports of ``name`` as edges (at the line of
    its first computed import call)."""
    declared = DYNAMIC_IMPORTS if declared is None else declared
    if name not in declared:
        return []
    line = (computed_import_lines(source) or [1])[0]
    return [Import(t, line, "importlib (declared)") for t in declared[name](source)]


def all_imports(source: str, name: str, *, is_package: bool, modules=frozenset(), declared=None) -> list[Import]:
    """:func:`imports_of` plus the declared computed imports."""
    return (imports_of(source, name, is_package=is_package, modules=modules)
            + dynamic_imports(source, name, declared))


def doctest_imports(source: str, name: str, *, is_package: bool) -> list[Import]:
    """The imports of the module's docstring examples (``>>> import ...``):
    an example runs the module's layer, so it may not reach above it either
    (rules 1 and 4; not cycle edges, nothing imports an example)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and ">>>" in node.value):
            continue
        for offset, line in enumerate(node.value.splitlines()):
            code = line.strip()
            if code.startswith(">>> ") and code[4:].lstrip().startswith(("import ", "from ")):
                try:
                    found += [Import(i.target, node.lineno + offset, "doctest")
                              for i in imports_of(code[4:].strip(), name, is_package=is_package)]
                except SyntaxError:
                    pass   # a continued statement; its first line names no module alone
    return found


def undeclared_computed_imports(source: str, name: str, declared=None) -> list[str]:
    """Messages for computed imports of a module below the CLI that is not in
    :data:`DYNAMIC_IMPORTS` (its targets would escape every check), and for a
    declared module whose declaration names no module of the tree."""
    declared = DYNAMIC_IMPORTS if declared is None else declared
    lines = computed_import_lines(source)
    if not lines or name.startswith("deplbench.cli") or name == "deplbench.__main__":
        return []
    if name not in declared:
        return [f"{name}:{lines[0]} imports a computed module name; declare its targets in "
                "DYNAMIC_IMPORTS (tests/test_architecture.py)"]
    targets = declared[name](source)
    missing = [t for t in targets if not _exists(t)]
    if not targets or missing:
        return [f"{name}: DYNAMIC_IMPORTS gives {missing or 'no'} module(s) of the tree"]
    return []


def upward_imports(source: str, name: str, *, is_package: bool, declared=None) -> list[str]:
    """Messages for every import of ``name`` that goes up a layer (or to a
    module in no known layer); ``declared`` replaces :data:`DYNAMIC_IMPORTS`."""
    own = layer_of(name)
    problems = []
    if own is None:
        return [f"{name}: in no layer; add its sub-package to LAYERS in tests/test_architecture.py"]
    for imp in (all_imports(source, name, is_package=is_package, declared=declared)
                + doctest_imports(source, name, is_package=is_package)):
        target = layer_of(imp.target)
        if target is None:
            problems.append(f"{name}:{imp.line} imports {imp.target}, which is in no layer")
        elif target > own:
            problems.append(f"{name}:{imp.line} ({layer_label(own)}) imports {imp.target} "
                            f"({layer_label(target)}) [{imp.how}]")
    return problems


def import_graph(modules: dict[str, tuple[str, bool]]) -> nx.DiGraph:
    """The import graph of ``{name: (source, is_package)}``: an edge a → b for
    every import of module b in module a (b within ``deplbench``; self-imports
    dropped)."""
    graph = nx.DiGraph()
    for name, (source, is_package) in modules.items():
        graph.add_node(name)
        found = (imports_of(source, name, is_package=is_package, modules=modules.keys()) if name in ON_DEMAND
                 else all_imports(source, name, is_package=is_package, modules=modules.keys()))
        for imp in found:
            if imp.target != name:
                graph.add_edge(name, imp.target, line=imp.line)
    return graph


def import_cycles(graph: nx.DiGraph) -> list[str]:
    """One message per strongly connected component of more than one module:
    its modules and one cycle through them, with the importing lines."""
    problems = []
    for component in sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1):
        cycle = nx.find_cycle(graph.subgraph(component), source=component[0])
        path = " → ".join(f"{a}:{graph.edges[a, b]['line']}" for a, b in cycle) + f" → {cycle[0][0]}"
        problems.append(f"{len(component)} modules import each other ({', '.join(component)}): {path}")
    return problems


def package_modules() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(encoding="utf-8"), _is_package(p)) for p in source_files()}


def source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def states_reason(docstring: str) -> bool:
    """Whether the docstring has a sentence starting "Longer than 600 lines because ..."."""
    return bool(_REASON_SENTENCE.search(" ".join(docstring.split())))


# --------------------------------------------------------------------- the checker can fail
@pytest.mark.parametrize("name, source, is_package, expected", [
    # a lazy import inside a function is still an upward edge
    ("deplbench.instances.model",
     "def f():\n    from deplbench.solvers.registry import get_solver\n", False,
     ["deplbench.solvers.registry"]),
    # relative imports resolve against the module's package
    ("deplbench.formulations.evaluation.evaluate", "from ...benchmarks import store\n", False,
     ["deplbench.benchmarks.store"]),
    ("deplbench.formulations", "from .milp import solve\nfrom . import plan\n", True, []),
    # importlib with a literal name; TYPE_CHECKING blocks count
    ("deplbench.jsonio", "import importlib\nimportlib.import_module('deplbench.cli')\n", False,
     ["deplbench.cli"]),
    ("deplbench.solvers.depl.depl",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import deplbench.reports.data\n", False,
     ["deplbench.reports.data"]),
    # downward and same-layer imports are fine
    ("deplbench.cli.solvers", "from deplbench import __version__\nimport deplbench.solvers.base\n",
     False, []),
    # the package root: its __version__ is fine anywhere; a public name is an
    # edge to its defining module; the root itself sits with the CLI
    ("deplbench.benchmarks.tasks", "from deplbench import __version__\n", False, []),
    ("deplbench.formulations.model.plan", "from deplbench import solve, Plan\n", False,
     ["deplbench.solvers.run"]),
    ("deplbench.instances.model", "import deplbench\n", False, ["deplbench"]),
    # a docstring example runs in the module's layer too
    ("deplbench.formulations.evaluation.evaluate",
     'def f():\n    """Examples\n    >>> from deplbench.solvers.run import solve\n    >>> 1\n    """\n',
     False, ["deplbench.solvers.run"]),
    ("deplbench.params", "from deplbench.errors import SolverError\n", False, []),
    ("deplbench.__main__", "from deplbench.cli import main\n", False, []),
])
def test_checker_finds_upward_imports(name, source, is_package, expected):
    problems = upward_imports(source, name, is_package=is_package)
    assert len(problems) == len(expected), problems
    for problem, target in zip(problems, expected):
        assert f"imports {target} " in problem


def test_checker_flags_undeclared_computed_imports():
    source = "import importlib\ndef f(name):\n    return importlib.import_module(name)\n"
    problems = undeclared_computed_imports(source, "deplbench.instances.x", declared={})
    assert len(problems) == 1 and "deplbench.instances.x:3" in problems[0], problems
    # the CLI may import computed names (it is the top)
    assert undeclared_computed_imports(source, "deplbench.cli.x", declared={}) == []
    # a declaration naming no module of the tree is refused
    stale = {"deplbench.instances.x": lambda src: ["deplbench.nowhere"]}
    assert undeclared_computed_imports(source, "deplbench.instances.x", declared=stale)


def test_checker_counts_declared_computed_imports_as_edges():
    source = "import importlib\nTARGETS = ('deplbench.reports.build',)\n" \
             "for t in TARGETS:\n    importlib.import_module(t)\n"
    declared = {"deplbench.solvers.x": lambda src: list(_literal(src, "TARGETS"))}
    problems = upward_imports(source, "deplbench.solvers.x", is_package=False, declared=declared)
    assert len(problems) == 1 and "imports deplbench.reports.build " in problems[0], problems
    assert "importlib (declared)" in problems[0] and "deplbench.solvers.x:4" in problems[0]


@pytest.mark.parametrize("modules, expected", [
    # a two-module cycle closed by an import inside a function
    ({"deplbench.solvers.a": ("from deplbench.solvers.b import f\n", False),
      "deplbench.solvers.b": ("def f():\n    from deplbench.solvers import a\n", False)},
     [{"deplbench.solvers.a", "deplbench.solvers.b"}]),
    # a longer cycle through relative imports and a TYPE_CHECKING block
    ({"deplbench.formulations.x": ("from .y import g\n", False),
      "deplbench.formulations.y": ("import deplbench.formulations.z\n", False),
      "deplbench.formulations.z": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from deplbench.formulations import x\n", False),
      "deplbench.formulations.w": ("from .x import g\n", False)},
     [{"deplbench.formulations.x", "deplbench.formulations.y", "deplbench.formulations.z"}]),
    # a chain, and a module importing itself, are not cycles
    ({"deplbench.solvers.a": ("import deplbench.solvers.b\nimport deplbench.solvers.a\n", False),
      "deplbench.solvers.b": ("import deplbench.errors\n", False)}, []),
])
def test_checker_finds_import_cycles(modules, expected):
    """The cycle check fails on a planted cycle (and only on a cycle)."""
    problems = import_cycles(import_graph(modules))
    assert len(problems) == len(expected), problems
    for problem, members in zip(problems, expected):
        named = set(problem.split("(")[1].split(")")[0].split(", "))
        assert named == members, problem


@pytest.mark.parametrize("doc, ok", [
    ("The MILP.\n\nLonger than 600 lines because the four models share one\nmatrix builder.", True),
    ("Longer than 600 lines because splitting would scatter one algorithm.", True),
    ("The MILP. It is longer than 600 lines because of history.", False),   # not a sentence start
    ("Longer than 600 lines because", False),                              # no reason given
    ("The MILP.", False),
])
def test_reason_must_open_a_sentence(doc, ok):
    assert states_reason(doc) is ok


def test_checker_knows_every_subpackage():
    """Every sub-package under src/deplbench is placed in a layer."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages <= set(LAYERS), subpackages - set(LAYERS)


def test_checker_knows_every_tiered_subpackage():
    """Every sub-package of a tiered layer is in one of its tiers, and every
    tier names an existing sub-package."""
    for layer, tiers in TIERS.items():
        subpackages = {p.parent.name for p in (PACKAGE / layer).glob("*/__init__.py")}
        placed = [sub for tier in tiers for sub in tier]
        assert len(placed) == len(set(placed)), placed
        assert subpackages == set(placed), (layer, subpackages ^ set(placed))


@pytest.mark.parametrize("name, source, expected", [
    # a lower tier importing a higher one, at module level or inside a function
    ("deplbench.formulations.model.plan", "from deplbench.formulations.evaluation.evaluate import f\n",
     ["deplbench.formulations.evaluation.evaluate"]),
    ("deplbench.formulations.evaluation.evaluate", "def f():\n    from ...formulations.exact import static\n",
     ["deplbench.formulations.exact.static"]),
    # the layer's top-level modules sit in the lowest tier
    ("deplbench.formulations.peer_lookup", "import deplbench.formulations.milp.peers\n",
     ["deplbench.formulations.milp.peers"]),
    # same tier, a lower tier, the own sub-package and other layers are fine
    ("deplbench.formulations.milp.solve", "from deplbench.formulations.general.settings import S\n"
     "from deplbench.formulations.model.plan import Plan\nfrom .bounds import B\n"
     "from deplbench.instances.model import Instance\nimport deplbench.formulations.peer_lookup\n", []),
    ("deplbench.solvers.exact.milp", "from deplbench.solvers.run import solve\n", []),
])
def test_checker_finds_imports_up_a_tier(name, source, expected):
    problems = tier_problems(source, name, is_package=False)
    assert len(problems) == len(expected), problems
    for problem, target in zip(problems, expected):
        assert f"imports {target} " in problem


def test_checker_flags_a_subpackage_in_no_tier():
    tiers = {"formulations": (("model",),)}
    problems = tier_problems("", "deplbench.formulations.evaluation.evaluate", is_package=False, tiers=tiers)
    assert len(problems) == 1 and "in no tier" in problems[0], problems


# --------------------------------------------------------------------- the package
def test_imports_flow_one_way():
    problems = []
    for path in source_files():
        problems += upward_imports(path.read_text(encoding="utf-8"), module_name(path),
                                   is_package=_is_package(path))
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_subpackages_import_down_their_tiers():
    problems = []
    for path in source_files():
        problems += tier_problems(path.read_text(encoding="utf-8"), module_name(path),
                                  is_package=_is_package(path))
    assert not problems, "imports up a tier:\n" + "\n".join(problems)


def test_no_import_cycles():
    problems = import_cycles(import_graph(package_modules()))
    assert not problems, "import cycles:\n" + "\n".join(problems)


def test_computed_imports_are_declared():
    problems = []
    for path in source_files():
        problems += undeclared_computed_imports(path.read_text(encoding="utf-8"), module_name(path))
    assert not problems, "computed imports:\n" + "\n".join(problems)


def test_every_declared_computed_import_exists():
    """No stale DYNAMIC_IMPORTS entry: each names a module that still
    imports a computed name, and gives at least one module of the tree."""
    modules = package_modules()
    for name, targets in DYNAMIC_IMPORTS.items():
        source = modules[name][0]
        assert computed_import_lines(source), f"{name} no longer imports a computed name"
        found = targets(source)
        assert found and all(_exists(t) for t in found), (name, found)


def test_package_root_body_imports_no_layer():
    """``from deplbench import __version__`` is no edge: the root's body
    (everything but the lazy PUBLIC_API re-exports) imports no deplbench
    module."""
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert imports_of(source, "deplbench", is_package=True) == []
    assert ROOT_API and set(ROOT_API.values()) == set(DYNAMIC_IMPORTS["deplbench"](source))


def test_modules_at_most_600_lines_unless_a_reason_is_given():
    too_long = []
    for path in source_files():
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not states_reason(doc):
            too_long.append(f"{path.relative_to(SRC)}: {n} lines")
    assert not too_long, (f"modules above {MAX_LINES} lines without '{REASON} ...' in the docstring:\n"
                          + "\n".join(too_long))


# --------------------------------------------------------------------- public names
#: Modules being reworked in parallel whose names are made public with that
#: work; drop an entry once its module passes.
NOT_YET_PUBLIC: tuple[str, ...] = ()


def declared_all(source: str) -> set[str] | None:
    """The names of a literal ``__all__`` list or tuple; None without one."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return None


def private_imports(modules: dict[str, tuple[str, bool]]) -> list[str]:
    """Every name one module imports from another module of ``modules`` that
    is private (``_name``) or missing from the target's ``__all__``."""
    alls = {name: declared_all(src) for name, (src, _) in modules.items()}
    problems = []
    for name, (source, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            if target not in modules or target == name:
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    continue   # a sub-module, not a name
                if alias.name.startswith("__") and alias.name.endswith("__"):
                    continue   # __version__ and the like
                if alias.name.startswith("_") or (alls[target] is not None and alias.name not in alls[target]):
                    problems.append(f"{name}:{node.lineno} imports {alias.name} from {target}, "
                                    "which is not public (in its __all__)")
    return problems


def test_modules_import_only_public_names():
    modules = {n: v for n, v in package_modules().items() if not n.startswith(NOT_YET_PUBLIC)}
    problems = private_imports(modules)
    assert not problems, "private names used across modules:\n" + "\n".join(problems)


def test_public_name_check_can_fail():
    modules = {"deplbench.a": ("from deplbench.b import _f, g, h\nfrom deplbench import b\n", False),
               "deplbench.b": ("def _f(): pass\ndef g(): pass\ndef h(): pass\n__all__ = ['g']\n", False)}
    problems = private_imports(modules)
    assert len(problems) == 2 and "_f" in problems[0] and "imports h " in problems[1], problems


# --------------------------------------------------------------------- docs/DESIGN.md
DESIGN = SRC.parent / "docs" / "DESIGN.md"
_SOLVER_ROW = re.compile(r"^\| `([^`]+)` \| `(deplbench\.[\w.]+:\w+)`", re.M)


def design_solver_table(text: str) -> list[tuple[str, str]]:
    """(name, "module:Class") of every row of the solver table in DESIGN.md's
    section "Registry names → classes"."""
    start = text.index("## Registry names")
    end = text.find("\n## ", start + 1)
    return _SOLVER_ROW.findall(text[start:end if end > 0 else None])


def test_design_lists_every_registered_solver():
    """docs/DESIGN.md's solver table is the registry's SOLVERS, name for name
    and class for class, in order."""
    from deplbench.solvers.registry import SOLVERS

    listed = design_solver_table(DESIGN.read_text(encoding="utf-8"))
    assert listed == list(SOLVERS.items()), (
        "docs/DESIGN.md's solver table differs from solvers.registry.SOLVERS:\n"
        f"missing: {sorted(set(SOLVERS.items()) - set(listed))}\nnot registered: "
        f"{sorted(set(listed) - set(SOLVERS.items()))}")


def test_design_table_check_can_fail():
    text = ("## Registry names → classes\n\n| name | class |\n|---|---|\n"
            "| `a` | `deplbench.solvers.x:A` (notes) | yes |\n| `b` | `deplbench.solvers.y:B` | no |\n"
            "\n## Next\n| `c` | `deplbench.solvers.z:C` | no |\n")
    assert design_solver_table(text) == [("a", "deplbench.solvers.x:A"), ("b", "deplbench.solvers.y:B")]
