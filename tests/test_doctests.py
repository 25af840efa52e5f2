"""Every example in the package's docstrings runs and prints what it shows.

Each module under ``src/deplbench`` whose source holds a ``>>>`` example is
imported and run through :mod:`doctest` (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE`` on). An example that cannot run here (it needs a
solver that is not installed, a cluster) says so with ``+SKIP``; everything
else runs.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules_with_examples() -> list[str]:
    out = []
    for path in sorted((SRC / "deplbench").rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8") or path.name == "__main__.py":
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=True)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (see the output)"
