"""The public API: ``from deplbench import generate, solve, ...``.

The names of :data:`deplbench.PUBLIC_API` are the contract with users'
scripts: each resolves from the package, is the object its module defines,
carries a numpydoc docstring, and importing the package alone loads none of
them (nor numpy), so ``deplbench --help`` stays fast. README's Python example
imports from the package only; tests/test_python_api.py runs it whole.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import deplbench

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(deplbench.PUBLIC_API))
def test_each_public_name_resolves_to_its_module_s_object(name):
    module = importlib.import_module(deplbench.PUBLIC_API[name])
    assert getattr(deplbench, name) is getattr(module, name)
    assert name in deplbench.__all__ and name in dir(deplbench)


def _sections(doc: str) -> set[str]:
    """The numpydoc section headings of a docstring (a title over dashes)."""
    return set(re.findall(r"^(\w[\w ]*)\n-{3,}$", doc, flags=re.M))


@pytest.mark.parametrize("name", sorted(deplbench.PUBLIC_API))
def test_each_public_name_has_a_numpydoc_docstring(name):
    obj = getattr(deplbench, name)
    doc = inspect.getdoc(obj)
    assert doc and len(doc.splitlines()[0]) > 10, f"{name}: no one-line summary"
    if isinstance(obj, type) and issubclass(obj, Exception):
        return          # an error's docstring says when it is raised; no sections
    sections = _sections(doc)
    if inspect.isclass(obj):
        assert sections & {"Parameters", "Attributes"}, f"{name}: no Parameters/Attributes section"
    else:
        assert {"Parameters", "Returns"} <= sections, f"{name}: sections {sorted(sections)}"


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'no_such_name'"):
        deplbench.no_such_name  # noqa: B018
    assert not hasattr(deplbench, "solve_milp")


def test_submodules_still_import_through_the_package():
    """``from deplbench import limits`` (a module, not a public name) still works:
    the lazy ``__getattr__`` declines it and the import system loads it."""
    from deplbench import jsonio, limits

    assert limits.__name__ == "deplbench.limits" and jsonio.__name__ == "deplbench.jsonio"


def test_star_import_gives_every_public_name():
    namespace: dict = {}
    exec("from deplbench import *", namespace)
    assert set(deplbench.PUBLIC_API) <= set(namespace)


_PROBE = """
import json, sys
import deplbench
print(json.dumps(sorted(m for m in sys.modules if m == "numpy" or m.startswith(("deplbench.", "numpy.")))))
"""


@pytest.mark.integration
def test_importing_the_package_imports_no_layer_and_no_numpy():
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                          check=True)
    assert json.loads(proc.stdout) == []


def test_subpackage_docstrings_list_their_public_names():
    """Each layer's ``__init__`` says which public names it provides."""
    for name, module in deplbench.PUBLIC_API.items():
        parts = module.split(".")
        if len(parts) < 3:
            continue                     # a bottom module (deplbench.errors)
        package = importlib.import_module(".".join(parts[:2]))
        assert f"``{name}``" in (package.__doc__ or ""), f"{package.__name__} docstring omits {name}"


def test_readme_example_imports_only_the_public_api():
    """README's "Use it from Python" block imports deplbench names from the
    package itself, and every one is public."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))
    imported = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deplbench"):
            assert node.module == "deplbench", f"README imports from {node.module}"
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("deplbench") for a in node.names)
    assert {"generate", "solve", "evaluate_plan", "load_sweep", "run_sweep"} <= set(imported)
    assert set(imported) <= set(deplbench.PUBLIC_API)
