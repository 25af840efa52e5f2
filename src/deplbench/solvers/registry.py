"""Registry: algorithm names → solver classes, built-in and third-party.

Two sources, looked up lazily (a solver's module is imported only when it
is asked for):

1. the built-in table :data:`SOLVERS` (``name → "module:Class"``);
2. every installed distribution's entry points in the group
   ``deplbench.solvers`` (:data:`ENTRY_POINT_GROUP`), e.g. in a plugin's
   ``pyproject.toml``::

       [project.entry-points."deplbench.solvers"]
       my-greedy = "my_pkg.solver:MyGreedy"

   The entry point's name must equal the class's ``name``. A built-in name
   cannot be taken over by a plugin (the built-in wins and the clash is
   reported by :func:`problems`).

The CLI (``deplbench solve``/``algorithms``) and the benchmark runner use
:func:`get_solver`, :func:`available` and :func:`solver_info`; the runner
stores :func:`solver_info` in every task record, so reports read the label,
exactness and plotting style from the record and never import this module.

Examples
--------
>>> from deplbench.solvers.registry import available, solver_info
>>> "depl" in available()
True
>>> solver_info("milp")["exact"]
True
"""

from __future__ import annotations

import functools
import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

from deplbench.errors import SolverError

if TYPE_CHECKING:   # imported where used: listing names must not load numpy and scipy
    from deplbench.solvers.base import Solver

#: The entry point group third-party packages register solvers in.
ENTRY_POINT_GROUP = "deplbench.solvers"

#: Built-in algorithms: name → "module:Class" (listing order of ``deplbench algorithms``).
SOLVERS: dict[str, str] = {
    "milp": "deplbench.solvers.exact.milp:Milp",
    "milp-certified": "deplbench.solvers.certify.certified:MilpCertified",
    "milp-exact": "deplbench.solvers.exact.milp_exact:MilpExact",
    "brute-force": "deplbench.solvers.exact.brute_force:BruteForce",
    "knapsack-dp": "deplbench.solvers.exact.knapsack_dp:KnapsackDP",
    "depl": "deplbench.solvers.depl.depl:DepL",
    "depl-proven": "deplbench.solvers.depl.proven:DepLProven",
    "depl-receding": "deplbench.solvers.depl.receding:DepLReceding",
    "best-exp": "deplbench.solvers.baselines.best_exp:BestExp",
    "pact": "deplbench.solvers.pact.pact:Pact",
    "static-learn": "deplbench.solvers.baselines.static:StaticLearn",
    "one-switch": "deplbench.solvers.baselines.static:OneSwitch",
    "adaptive-opt": "deplbench.solvers.adaptive.optimum:AdaptiveOpt",
}


@functools.lru_cache(maxsize=1)
def _plugin_table() -> tuple[dict[str, tuple[str, str, str]], tuple[str, ...]]:
    """Entry points of :data:`ENTRY_POINT_GROUP`: name → (value, distribution, version),
    and the problems found (clashes with built-ins, duplicates)."""
    table: dict[str, tuple[str, str, str]] = {}
    problems: list[str] = []
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # noqa: BLE001 - broken metadata must not stop the built-ins
        return {}, (f"cannot read entry points of group {ENTRY_POINT_GROUP!r}: {exc}",)
    for ep in sorted(eps, key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        dist_name = getattr(dist, "name", None) or "unknown distribution"
        version = getattr(dist, "version", None) or ""
        if ep.name in SOLVERS:
            problems.append(f"entry point {ep.name!r} of {dist_name} ignored: "
                            "the name belongs to a built-in algorithm")
            continue
        if ep.name in table and table[ep.name][0] != ep.value:
            problems.append(f"entry point {ep.name!r} of {dist_name} ignored: already registered "
                            f"by {table[ep.name][1]}")
            continue
        table[ep.name] = (ep.value, dist_name, version)
    return table, tuple(problems)


def refresh() -> None:
    """Forget the cached entry points and loaded classes (after installing a plugin)."""
    _plugin_table.cache_clear()
    _load.cache_clear()


def registered() -> list[str]:
    """Every registered name, loadable or not: built-ins first, then plugins by name."""
    return list(SOLVERS) + [n for n in _plugin_table()[0] if n not in SOLVERS]


def problems() -> list[str]:
    """Entry points that were ignored, and why."""
    return list(_plugin_table()[1])


def source(name: str) -> dict[str, str]:
    """Where ``name`` comes from: ``{"kind": "builtin"|"entry point", "target", ...}``."""
    if name in SOLVERS:
        return {"kind": "builtin", "target": SOLVERS[name]}
    plugins = _plugin_table()[0]
    if name in plugins:
        value, dist, version = plugins[name]
        return {"kind": "entry point", "target": value, "distribution": dist, "version": version}
    raise SolverError(f"unknown algorithm {name!r} (available: {', '.join(available())})")


@functools.lru_cache(maxsize=None)
def _load(name: str) -> type[Solver]:
    target = source(name)["target"]
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SolverError(f"algorithm {name!r}: entry point {target!r} is not 'module:Class'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the others
        raise SolverError(f"algorithm {name!r} is registered but cannot be loaded "
                          f"({type(exc).__name__}: {exc})") from None
    _check_class(name, obj)
    return obj


def _check_class(name: str, cls: Any) -> None:
    """A registered object must be a complete :class:`Solver` subclass named ``name``."""
    from deplbench.solvers.base import Solver

    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise SolverError(f"algorithm {name!r}: {cls!r} is not a subclass of deplbench.solvers.base.Solver")
    if cls.name != name:
        raise SolverError(f"algorithm {name!r}: the class {cls.__qualname__} declares name {cls.name!r}; "
                          "the entry point's name and the class's name must be equal")
    if cls.run is Solver.run and cls.run_settings is Solver.run_settings:
        raise SolverError(f"algorithm {name!r}: {cls.__qualname__} does not implement run() "
                          "(or run_settings())")
    from deplbench.params import Param

    bad = [k for k, p in dict(cls.parameters).items() if not isinstance(p, Param)]
    if bad:
        raise SolverError(f"algorithm {name!r}: parameter {bad[0]!r} is not declared with deplbench.params.Param")
    problem = _metadata_problem(cls)
    if problem:
        raise SolverError(f"algorithm {name!r}: {cls.__qualname__}.{problem}")


def _metadata_problem(cls: Any) -> str | None:
    """What is wrong with a Solver subclass's declared metadata, or None.

    The runner stores the metadata in every task record and ``deplbench
    algorithms`` lists it: a ``reference_priority`` of ``"x"`` stopped the
    whole listing with "invalid literal for int()", and a default that fails
    its own ``Param`` (``Param(-5, int, low=0)``) ran unchecked.
    """
    from deplbench.errors import DeplbenchError
    from deplbench.solvers.base import REFERENCE_KINDS, PlotStyle

    for attr, kind in (("label", str), ("description", str), ("clock", str), ("exact", bool),
                       ("preprocess", bool)):
        value = getattr(cls, attr)
        if not isinstance(value, kind):
            return f"{attr} = {value!r}: expected a {kind.__name__}"
    if isinstance(cls.reference_priority, bool) or not isinstance(cls.reference_priority, int):
        return f"reference_priority = {cls.reference_priority!r}: expected an int"
    if cls.reference not in REFERENCE_KINDS:
        return f"reference = {cls.reference!r}: expected one of {', '.join(map(repr, REFERENCE_KINDS))}"
    if cls.style is not None and not isinstance(cls.style, PlotStyle):
        return f"style = {cls.style!r}: expected a deplbench.solvers.base.PlotStyle or None"
    for key, param in dict(cls.parameters).items():
        if param.default is None:
            continue
        try:
            param.convert(key, param.default, strict=True)
        except DeplbenchError as exc:
            return f"parameters[{key!r}]: its default {param.default!r} fails its own declaration ({exc})"
    return None


def get_solver(name: str) -> type[Solver]:
    """The solver class registered as ``name``.

    Parameters
    ----------
    name : str
        A registry name (``deplbench algorithms`` lists them).

    Returns
    -------
    type[Solver]

    Raises
    ------
    SolverError
        If no algorithm has that name, or its class cannot be loaded.
    """
    if not isinstance(name, str) or (name not in SOLVERS and name not in _plugin_table()[0]):
        raise SolverError(f"unknown algorithm {name!r} (available: {', '.join(available())})")
    return _load(name)


def available() -> list[str]:
    """Names of the algorithms that load, built-ins first, then plugins."""
    names = []
    for name in registered():
        try:
            _load(name)
        except SolverError:
            continue
        names.append(name)
    return names


def solver_info(name: str) -> dict[str, Any]:
    """JSON-able metadata of one algorithm (what task records store).

    Parameters
    ----------
    name : str
        A registry name.

    Returns
    -------
    dict
        ``name``, ``label``, ``exact``, ``reference_priority``,
        ``description``, ``style`` (``colour``, ``marker``, ``linestyle``),
        ``parameters`` (name → default, type, help, bounds/choices) and
        ``source`` (built-in or entry point with distribution and version).

    Raises
    ------
    SolverError
        Unknown or unloadable algorithm.
    """
    info = get_solver(name).info()
    info["source"] = source(name)
    return info


def all_solver_info(*, include_unavailable: bool = False) -> list[dict[str, Any]]:
    """:func:`solver_info` of every registered algorithm, in listing order.

    With ``include_unavailable`` an algorithm that cannot be loaded appears
    as ``{"name", "available": False, "reason", "source"}``; every other
    entry has ``"available": True``.
    """
    out = []
    for name in registered():
        try:
            out.append({**solver_info(name), "available": True})
        except SolverError as exc:
            if include_unavailable:
                out.append({"name": name, "available": False, "reason": str(exc), "source": source(name)})
    return out


__all__ = [
    "ENTRY_POINT_GROUP",
    "SOLVERS",
    "all_solver_info",
    "available",
    "get_solver",
    "problems",
    "refresh",
    "registered",
    "solver_info",
    "source",
]
