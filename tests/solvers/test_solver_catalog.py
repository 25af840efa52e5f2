"""The built-in algorithms' catalogue (solvers/catalog.json): it is what the
classes say, so ``deplbench algorithms`` can list them without importing
any solver."""

from __future__ import annotations

import json

from deplbench.solvers import catalog, registry


def test_committed_catalogue_is_current():
    assert catalog.CATALOG_PATH.read_text(encoding="utf-8") == catalog.render(catalog.build()), (
        f"src/deplbench/solvers/catalog.json is stale (a built-in solver was added or its metadata "
        f"changed): run `{catalog.REGENERATE}` and commit the file")


def test_catalogue_holds_every_built_in_and_survives_json():
    built = catalog.build()
    assert list(built) == list(registry.SOLVERS)
    # what the file gives back is equal to what the classes give, value for value
    # (no tuple turned list, no float turned int, no non-finite number lost)
    assert json.loads(catalog.render(built)) == built


def test_listing_from_the_file_equals_listing_from_the_classes():
    from_file = catalog.all_info(include_unavailable=True)
    from_classes = registry.all_solver_info(include_unavailable=True)
    assert [r["name"] for r in from_file] == registry.registered()
    assert from_file == from_classes


def test_a_built_in_missing_from_the_file_is_read_from_its_class(monkeypatch):
    monkeypatch.setattr(catalog, "load", lambda: {"milp": {"name": "milp", "description": "stale"}})
    assert catalog.info("milp")["description"] == "stale"          # the file is what is read ...
    assert catalog.info("depl") == registry.solver_info("depl")    # ... and a name it lacks comes from the class
    row = catalog.info("milp")
    row["description"] = "changed by the caller"
    assert catalog.load()["milp"]["description"] == "stale"        # callers get copies


def test_check_command_says_current(capsys):
    assert catalog.main(["--check"]) == 0
    assert "current" in capsys.readouterr().out


FRAMEWORK = {"__init__", "base", "registry", "run", "catalog"}


def test_solvers_top_holds_the_framework_and_families_are_subpackages():
    """solvers/ keeps only the framework at its top; every built-in class lives in a family
    sub-package whose ``__init__`` has a docstring and imports nothing (listing stays cheap)."""
    import ast
    from pathlib import Path

    top = Path(registry.__file__).parent
    assert {p.stem for p in top.glob("*.py")} == FRAMEWORK
    families = {p.parent.name for p in top.glob("*/__init__.py")}
    for fam in families:
        tree = ast.parse((top / fam / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), fam
        assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree)), fam
    for name, target in registry.SOLVERS.items():
        parts = target.partition(":")[0].split(".")
        assert parts[:2] == ["deplbench", "solvers"] and len(parts) == 4 and parts[2] in families, (name, target)


def test_catalogue_records_no_module_path():
    """The catalogue (like the results store) names algorithms, never modules, so moving a
    solver's module leaves stored artefacts readable."""
    assert "deplbench.solvers." not in catalog.CATALOG_PATH.read_text(encoding="utf-8")
