"""Registry: algorithm names → solver classes (imported lazily).

The CLI and the benchmark runner look algorithms up here by name and know
nothing else about them. The exact MILP lives in ``formulations`` and is
registered through its thin wrapper in ``solvers.milp_solver`` (imports
flow downward only).
"""

from __future__ import annotations

import importlib

from deplbench.errors import SolverError

#: name → "module:Class"
SOLVERS: dict[str, str] = {
    "milp": "deplbench.solvers.milp_solver:Milp",
    "depl": "deplbench.solvers.depl:DepL",
    "best-exp": "deplbench.solvers.depl:BestExp",
    "pact": "deplbench.solvers.pact:Pact",
    "static-learn": "deplbench.solvers.baselines:StaticLearn",
    "one-switch": "deplbench.solvers.baselines:OneSwitch",
    "brute-force": "deplbench.solvers.brute_force:BruteForce",
}


def _load(name: str):
    module_name, _, cls_name = SOLVERS[name].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, cls_name)


def get_solver(name: str):
    """The solver class registered as ``name``.

    Raises
    ------
    SolverError
        If no algorithm has that name.
    """
    if name not in SOLVERS:
        raise SolverError(f"unknown algorithm {name!r} (available: {', '.join(available())})")
    try:
        return _load(name)
    except (ModuleNotFoundError, AttributeError) as exc:
        raise SolverError(f"algorithm {name!r} is registered but cannot be loaded: {exc}") from None


def available() -> list[str]:
    """Names of the algorithms that can be loaded, in registry order."""
    names = []
    for name in SOLVERS:
        try:
            _load(name)
        except (ModuleNotFoundError, AttributeError):
            continue
        names.append(name)
    return names


__all__ = ["SOLVERS", "get_solver", "available"]
