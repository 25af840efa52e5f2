"""The built-in algorithms' metadata, written to a file so that listing them imports no solver.

One job: ``deplbench algorithms`` (and ``solve --help``) print every
algorithm's name, description, exactness and parameters. Reading them
from the classes imports every solver module and with it numpy, scipy and
Pyomo (seconds); this module keeps the built-ins' :meth:`Solver.info
<deplbench.solvers.base.Solver.info>` in ``catalog.json`` next to it and
serves it from there (milliseconds). Third-party algorithms (entry points)
are not in the file: they are still imported, and only when there are any.

Guarantee: the file is generated from the classes (``python -m
deplbench.solvers.catalog``) and ``tests/solvers/test_solver_catalog.py`` fails
while it differs from what the registered classes say, so it cannot drift.
A built-in registered in :data:`~deplbench.solvers.registry.SOLVERS` but
missing from the file is read from its class (slow, never wrong).
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

from deplbench.errors import SolverError
from deplbench.solvers import registry

#: The generated file (package data).
CATALOG_PATH = Path(__file__).with_name("catalog.json")
#: The command that rewrites it.
REGENERATE = "python -m deplbench.solvers.catalog"


def build() -> dict[str, dict[str, Any]]:
    """``name → Solver.info()`` of every built-in, in listing order (imports every solver)."""
    return {name: registry.get_solver(name).info() for name in registry.SOLVERS}


def render(catalog: dict[str, dict[str, Any]]) -> str:
    """The file's text: indented JSON, keys in the classes' order, newline-terminated."""
    return json.dumps(catalog, indent=2, ensure_ascii=False) + "\n"


@functools.lru_cache(maxsize=1)
def load() -> dict[str, dict[str, Any]]:
    """The committed catalogue (``{}`` when the file is missing or unreadable)."""
    try:
        return json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def info(name: str) -> dict[str, Any]:
    """:func:`~deplbench.solvers.registry.solver_info` of ``name``, from the file when it is a built-in.

    Raises
    ------
    SolverError
        Unknown or unloadable algorithm (as :func:`registry.solver_info`).
    """
    stored = load().get(name) if name in registry.SOLVERS else None
    if stored is None:
        return registry.solver_info(name)
    return {**json.loads(json.dumps(stored)), "source": registry.source(name)}   # a copy the caller may change


def all_info(*, include_unavailable: bool = False) -> list[dict[str, Any]]:
    """:func:`~deplbench.solvers.registry.all_solver_info`, built-ins read from the file.

    Built-ins are part of the package and always load (the test that
    regenerates the file loads each); a plugin that cannot be loaded is
    ``{"name", "available": False, "reason", "source"}`` with
    ``include_unavailable`` and left out otherwise.
    """
    out = []
    for name in registry.registered():
        try:
            out.append({**info(name), "available": True})
        except SolverError as exc:
            if include_unavailable:
                out.append({"name": name, "available": False, "reason": str(exc),
                            "source": registry.source(name)})
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the catalogue (``--check``: only say whether it is current; status 1 when not)."""
    ap = argparse.ArgumentParser(allow_abbrev=False, prog=REGENERATE,
                                 description="Write src/deplbench/solvers/catalog.json "
                                 "from the built-in solver classes.")
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 when the file is stale")
    opts = ap.parse_args(argv)
    catalog = build()
    text = render(catalog)
    current = CATALOG_PATH.exists() and CATALOG_PATH.read_text(encoding="utf-8") == text
    if opts.check:
        print(f"{CATALOG_PATH}: {'current' if current else 'stale, run ' + REGENERATE}")
        return 0 if current else 1
    if not current:
        CATALOG_PATH.write_text(text, encoding="utf-8")
    print(f"{CATALOG_PATH}: {'unchanged' if current else 'written'} ({len(catalog)} algorithms)")
    return 0


__all__ = ["CATALOG_PATH", "REGENERATE", "build", "render", "load", "info", "all_info", "main"]


if __name__ == "__main__":
    raise SystemExit(main())
