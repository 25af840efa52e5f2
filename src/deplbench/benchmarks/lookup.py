"""Name lookup for tasks: algorithms, their metadata and parameters, families.

An algorithm or instance family is looked up by name in

* :mod:`deplbench.solvers.registry` (built-in solvers and those installed
  through the ``deplbench.solvers`` entry point group) and
  :mod:`deplbench.instances.generators`;
* test plugins named by the environment variable :data:`PLUGIN_ENV` (see
  :func:`load_plugins`), which may only add names: a plugin reusing a
  registered name is refused (:func:`plugin_table`), so a stray variable can
  never swap a built-in solver or family.

Nothing here knows any particular solver.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from deplbench.errors import DeplbenchError, SweepError

#: Environment variable naming plugin modules (module names or ``.py`` paths,
#: separated by ``os.pathsep``). A plugin may define ``ALGORITHMS`` —
#: ``{name: fn(instance, **params) -> SolveResult | dict}`` — with optional
#: ``ALGORITHM_PARAMETERS = {name: iterable of names}`` and
#: ``ALGORITHM_INFO = {name: {"label", "exact", "style", "reference_priority"}}``,
#: and ``FAMILIES`` — ``{name: fn(seed=int, **params) -> Instance}``. Used by
#: the tests to add algorithms that raise or hang without touching the
#: public registry.
PLUGIN_ENV = "DEPLBENCH_TASK_PLUGINS"


# --------------------------------------------------------------------------
# plugins and name lookup
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _load_plugin(spec: str):
    if spec.endswith(".py"):
        path = Path(spec)
        name = f"_deplbench_plugin_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None or not path.is_file():
            raise SweepError(f"{PLUGIN_ENV}: plugin file not found: {spec}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise SweepError(f"{PLUGIN_ENV}: cannot import plugin {spec!r} ({exc})") from exc


def load_plugins() -> list:
    """Import the plugins named by :data:`PLUGIN_ENV` (cached per process)."""
    raw = os.environ.get(PLUGIN_ENV, "")
    return [_load_plugin(s) for s in raw.split(os.pathsep) if s.strip()]


#: Plugin tables naming algorithms (checked against the solver registry) and
#: instance families (checked against the generators).
_ALGORITHM_TABLES = ("ALGORITHMS", "ALGORITHM_PARAMETERS", "ALGORITHM_INFO")


def _builtin_names(attr: str) -> set[str]:
    """The registered names a plugin table ``attr`` must not reuse."""
    if attr in _ALGORITHM_TABLES:
        registry = _registry()
        return set(registry.available()) if registry is not None else set()
    if attr == "FAMILIES":
        gen = generator_table()
        return set(_generator_families(gen)) if gen is not None else set()
    return set()


def plugin_table(attr: str) -> dict:
    """The merged table ``attr`` of every plugin.

    Raises
    ------
    SweepError
        A plugin reuses the name of a registered solver or instance family:
        the registered one always wins, so the plugin is refused rather
        than silently swapped in (or silently ignored).
    """
    table: dict = {}
    builtin: set[str] | None = None
    for module in load_plugins():
        entries = getattr(module, attr, {}) or {}
        if entries:
            builtin = _builtin_names(attr) if builtin is None else builtin
            clash = sorted(set(entries) & builtin)
            if clash:
                where = getattr(module, "__file__", None) or module.__name__
                raise SweepError(f"{PLUGIN_ENV}: plugin {where} defines {attr} {clash[0]!r}, "
                                 "a registered name; rename it in the plugin")
        table.update(entries)
    return table


def _optional_module(layer: str, module: str):
    """``deplbench.<layer>.<module>``, or None when that layer is not installed.

    Only the layer itself being absent is tolerated, never a missing
    dependency inside it.
    """
    try:
        return importlib.import_module(f"deplbench.{layer}.{module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(f"deplbench.{layer}"):
            return None
        raise


def _registry():
    return _optional_module("solvers", "registry")


def generator_table():
    return _optional_module("instances", "generators")


def available_algorithms() -> set[str]:
    """Every algorithm name a task can run (plugins and the solver registry)."""
    names = set(plugin_table("ALGORITHMS"))
    registry = _registry()
    if registry is not None:
        names |= set(registry.available())
    return names


def _solver_class(name: str) -> Any:
    """The registered solver class of ``name``, or None for a plugin algorithm or with
    no registry (the one lookup every question below starts from)."""
    if name in plugin_table("ALGORITHMS"):
        return None
    registry = _registry()
    return None if registry is None else registry.get_solver(name)


def algorithm_parameters(name: str) -> set[str] | None:
    """Parameter names ``name`` accepts, or None if it does not declare them."""
    plugin = plugin_table("ALGORITHM_PARAMETERS")
    if name in plugin:
        return set(plugin[name])
    params = getattr(_solver_class(name), "parameters", None)
    return set(params) if params is not None else None


def parameter_specs(name: str) -> dict | None:
    """The declared parameters of ``name`` (name → ``Param``), or None.

    None when the algorithm declares names only (a plugin) or nothing.
    """
    # The solver class's own Param objects (solver_info() holds only their
    # descriptions): the one conversion path, deplbench.params.Param.convert.
    params = getattr(_solver_class(name), "parameters", None)
    return dict(params) if isinstance(params, Mapping) else None


def parameter_resolver(name: str) -> Callable | None:
    """The solver's own ``resolve_params`` (every value, then the combination:
    :meth:`~deplbench.solvers.base.Solver.check_params`), or None (a plugin
    algorithm, or no registry)."""
    return getattr(_solver_class(name), "resolve_params", None)


def settings_builder(name: str) -> Callable | None:
    """The checks ``solve`` makes of one parameter point before a run: the solver's
    ``resolve_params``, then its ``build_settings`` (the combinations only a settings
    object checks, e.g. the MILP's solver against its formulation), any error raised
    as :class:`~deplbench.errors.SweepError`. None for a plugin algorithm, with no
    registry, or for a solver without ``build_settings``."""
    solver = _solver_class(name)
    resolve = getattr(solver, "resolve_params", None)
    build = getattr(solver, "build_settings", None)
    if resolve is None or build is None:
        return None

    def check(point: Mapping[str, Any]) -> Any:
        try:
            return build(resolve(point, strict=True, error=SweepError))
        except DeplbenchError as exc:
            raise SweepError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a plug-in's hook: named in one line, never a traceback
            raise SweepError(f"algorithm {name!r}: build_settings failed ({type(exc).__name__}: {exc})") from None

    return check


def solver_clock(name: str) -> str | None:
    """The parameter that is ``name``'s own wall-clock limit (the solver
    class's ``clock``, ``time_limit`` for most), or None (a plugin algorithm,
    no registry, or a solver without one)."""
    solver = _solver_class(name)
    clock = getattr(solver, "clock", None)
    return clock if isinstance(clock, str) and clock in (getattr(solver, "parameters", None) or {}) else None


def own_time_limit(name: str, params: Mapping[str, Any]) -> tuple[str, float | None] | None:
    """``(parameter, seconds)``: the solver's own wall-clock limit at ``params``
    (its default when not given; None seconds: no limit), or None when
    ``name`` declares none (:func:`solver_clock`)."""
    clock = solver_clock(name)
    resolve = parameter_resolver(name)
    if clock is None or resolve is None:
        return None
    value = resolve(dict(params)).get(clock)
    return clock, None if value is None else float(value)


def solver_info(name: str) -> dict:
    """The record columns an algorithm's metadata gives.

    Returns
    -------
    dict
        ``algorithm_label`` (display label, default the name), ``exact``
        (proves optimality), ``reference_priority`` (exact methods: lower is
        trusted first; default 100), ``reference`` (which optimum its result is a
        reference for, :attr:`Solver.reference`; "" when none) and ``style`` (plotting style mapping or
        None), from a plugin's ``ALGORITHM_INFO[name]`` or the solver
        registry (``solver_info()`` when it has one, else the solver class's
        attributes ``label``, ``exact``, ``reference_priority``, ``style``).

    Raises
    ------
    DeplbenchError
        The algorithm is not known anywhere.
    """
    info: Any = None
    plugin_info = plugin_table("ALGORITHM_INFO")
    if name in plugin_info:
        info = plugin_info[name]
    elif name in plugin_table("ALGORITHMS"):
        info = {}
    else:
        registry = _registry()
        if registry is None:
            raise SweepError(f"algorithm: solver layer not installed (needed for {name!r})")
        if hasattr(registry, "solver_info"):
            info = registry.solver_info(name)
        else:
            info = registry.get_solver(name)
    priority = _meta(info, "reference_priority")
    return {"algorithm_label": _meta(info, "label") or name,
            "exact": bool(_meta(info, "exact") or False),
            "reference_priority": int(priority) if isinstance(priority, (int, float))
            and not isinstance(priority, bool) else 100,
            "reference": str(_meta(info, "reference") or ""),
            "style": _style(_meta(info, "style"))}


def _meta(info: Any, attr: str) -> Any:
    """``info[attr]`` for a mapping, ``info.attr`` otherwise (None if absent)."""
    if isinstance(info, Mapping):
        return info.get(attr)
    return getattr(info, attr, None)


def _style(style: Any) -> Any:
    """A plotting style as plain JSON data (mapping, dataclass or None)."""
    if style is None or isinstance(style, (Mapping, str)):
        return dict(style) if isinstance(style, Mapping) else style
    if hasattr(style, "_asdict"):
        return dict(style._asdict())
    import dataclasses

    if dataclasses.is_dataclass(style):
        return dataclasses.asdict(cast(Any, style))
    return repr(style)


def available_families() -> set[str]:
    """Every instance family a sweep can name (plugins and generators)."""
    names = set(plugin_table("FAMILIES"))
    gen = generator_table()
    if gen is not None:
        names |= set(_generator_families(gen))
    return names


def family_parameters(family: str) -> set[str] | None:
    """Generator parameter names of ``family``, or None if not introspectable."""
    plugin = plugin_table("FAMILIES")
    fn = plugin.get(family)
    if fn is None:
        gen = generator_table()
        if gen is None:
            return None
        fn = _generator_families(gen).get(family)
    if fn is None:
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n, p in sig.parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"seed", "rng"}


def _generator_families(gen) -> dict[str, Callable | None]:
    """The family → generator-function table of ``instances.generators``."""
    for attr in ("FAMILIES", "GENERATORS", "REGISTRY"):
        table = getattr(gen, attr, None)
        if isinstance(table, Mapping):
            return dict(table)
    if hasattr(gen, "available_families"):
        return {name: None for name in gen.available_families()}
    return {}
