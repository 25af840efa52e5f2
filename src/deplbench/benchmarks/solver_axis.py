"""The solver axis of a sweep: ``solvers = [...]`` expands tasks per MILP solver.

One job: parse and check a ``solvers`` list of an ``[[instances]]`` or
``[[algorithms]]`` entry and say, for one (group, algorithm) pair, with
which solvers its tasks run. The solver goes into the task's ``params`` as
``solver``, so it is part of the task key and of the stored row; names are
those of ``deplbench solve --solver`` (:mod:`deplbench.formulations.milp.peers`).
The file format is documented in :mod:`deplbench.benchmarks.sweep`.

``solvers`` on an ``[[algorithms]]`` entry applies to that entry; on an
``[[instances]]`` entry, to every algorithm run on the group that takes a
``solver`` parameter and sets none itself (an algorithm's own list wins).
Each parameter point is expanded once per solver, the solver varying
fastest. An unknown or unavailable solver, a duplicate, or an algorithm
without a ``solver`` parameter fails at load (``deplbench run --dry-run``)
naming the field, e.g. ``algorithms[1].solvers[2]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from deplbench.benchmarks.lookup import algorithm_parameters, settings_builder
from deplbench.benchmarks.validate import require_str
from deplbench.errors import SweepError
from deplbench.formulations.milp.peers import availability, known_solvers


def parse_solvers(value: Any, where: str) -> tuple:
    """A ``solvers`` list: non-empty, unique, every name a known solver
    (availability is checked with the other names, :func:`check_solvers`)."""
    if not isinstance(value, list) or not value:
        raise SweepError(f"{where}: must be a non-empty list of solver names (e.g. [\"highs\", \"scip\"])")
    for j, name in enumerate(value):
        require_str(name, f"{where}[{j}]")
        if name not in known_solvers():
            ok, why = availability(name)
            raise SweepError(f"{where}[{j}]: unknown solver {name!r}"
                             + (f": {why}" if name.startswith("pyomo:") else "")
                             + " (known: highs, scip, pyomo:NAME; `deplbench algorithms --solvers` lists them)")
    if len(set(value)) != len(value):
        raise SweepError(f"{where}: duplicate solvers")
    return tuple(value)


def entry_solvers(entry, where: str, params=None, grid=None) -> tuple | None:
    """The ``solvers`` of a sweep table (None without one); on an algorithm
    entry the solver must not also be a fixed parameter or a grid axis."""
    if "solvers" not in entry:
        return None
    solvers = parse_solvers(entry["solvers"], f"{where}.solvers")
    for section, table in (("params", params or {}), ("grid", grid or {})):
        if "solver" in table:
            raise SweepError(f"{where}.solvers: the solver is also set in {where}.{section}.solver "
                             "(give one of them)")
    return solvers


def takes_solver(algorithm: str) -> bool:
    """Whether an algorithm declares a ``solver`` parameter (False when unknown)."""
    try:
        known = algorithm_parameters(algorithm)
    except Exception:  # noqa: BLE001 - an unknown or broken algorithm has no solver axis
        return False
    return known is not None and "solver" in known


def check_solvers(groups: tuple, algorithms: tuple) -> None:
    """Every solver of a ``solvers`` axis is available here, and every
    algorithm given one takes a ``solver`` parameter (errors name the field)."""
    for kind, entries in (("instances", groups), ("algorithms", algorithms)):
        for i, entry in enumerate(entries):
            if entry.solvers is None:
                continue
            if kind == "algorithms" and not takes_solver(entry.name):
                raise SweepError(f"algorithms[{i}].solvers: algorithm {entry.name!r} has no solver parameter "
                                 "(only exact MILP algorithms such as milp take one)")
            for j, name in enumerate(entry.solvers):
                ok, why = availability(name)
                if not ok:
                    raise SweepError(f"{kind}[{i}].solvers[{j}]: solver {name!r} is not available here: {why}")
    for i, algo in enumerate(algorithms):
        # a solver named as a plain parameter or grid value is checked like the axis, at load
        fixed = [("params.solver", algo.params["solver"])] if "solver" in algo.params else []
        fixed += [(f"grid.solver[{j}]", v) for j, v in enumerate(algo.grid.get("solver", []))]
        for field, name in fixed:
            ok, why = availability(name) if isinstance(name, str) else (True, "")
            if isinstance(name, str) and name not in known_solvers():
                raise SweepError(f"algorithms[{i}].{field}: unknown solver {name!r} (known: highs, scip, "
                                 "pyomo:NAME; `deplbench algorithms --solvers` lists them)")
            if not ok:
                raise SweepError(f"algorithms[{i}].{field}: solver {name!r} is not available here: {why}")


def check_settings(groups: tuple, algorithms: tuple) -> None:
    """Every parameter point of every ``[[algorithms]]`` entry, with each solver of the
    axes it runs with, builds its settings as ``solve`` would before the run
    (:func:`~deplbench.benchmarks.lookup.settings_builder`): a combination only the
    settings object refuses fails the sweep at load, naming the grid point, not
    every task at run time. Runs after :func:`check_solvers` (names and availability
    are refused there, naming their field)."""
    for i, algo in enumerate(algorithms):
        build = settings_builder(algo.name)
        if build is None:
            continue
        axes = {solver_axis(g, algo) for g in groups if algo.instances is None or g.id in algo.instances}
        names = list(algo.grid)
        for combo in itertools.product(*(algo.grid[a] for a in names)):
            base = {**algo.params, **dict(zip(names, combo))}
            for point in {tuple(sorted(p.items())): p for ax in axes for p in with_solvers(iter([base]), ax)}.values():
                try:
                    build(point)
                except SweepError as exc:
                    at = {k: v for k, v in point.items() if k in names or (k == "solver" and k not in algo.params)}
                    where = f" at grid point {at}" if at else ""
                    raise SweepError(f"algorithms[{i}].params{where}: {exc}") from None


def solver_axis(group, algo) -> tuple | None:
    """The solvers ``algo`` runs with on ``group``: its own axis, else the
    group's when it takes a ``solver`` parameter and sets none; None: once."""
    if algo.solvers is not None:
        return algo.solvers
    if group.solvers is None or "solver" in algo.params or "solver" in algo.grid:
        return None
    return group.solvers if takes_solver(algo.name) else None


def with_solvers(points: Iterator[dict], solvers: tuple | None) -> Iterator[dict]:
    """Each parameter point once per solver (``params["solver"]``), the
    solver varying fastest; unchanged without an axis."""
    for point in points:
        if solvers is None:
            yield point
            continue
        for name in solvers:
            yield {**point, "solver": name}


__all__ = ["entry_solvers", "parse_solvers", "takes_solver", "check_solvers", "check_settings", "solver_axis",
           "with_solvers"]
