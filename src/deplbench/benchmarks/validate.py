"""Deep validation of a sweep: every value checked before anything runs.

:func:`~deplbench.benchmarks.sweep_parse.parse_sweep` checks a sweep's structure
and names; this module checks its *values* the way the run would use them,
so that ``deplbench run --dry-run`` catches everything that would otherwise
become failed rows for input reasons:

* every solver parameter value (fixed and every grid value) goes through the
  solver's own declared parameter (``Param.convert``: type, bounds,
  choices), e.g. ``eta = -5`` fails as ``algorithms[0].params.eta``, and
  every grid point through the solver's ``resolve_params``, which checks the
  combination (``Solver.check_params``: PACT's ``min_robust_quantile`` above
  ``robust_quantile``);
* every instance the tasks need is built once, with its targets applied:
  generator parameters are checked by the generator (``n_items = "six"``),
  instance files are opened and validated, and a target the instance
  rejects (ℓmax ≥ ℓ(0)) fails naming the group and the target.

Every failure is a :class:`~deplbench.errors.SweepError` naming the key.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from deplbench.benchmarks import tasks as task_mod
from deplbench.errors import DeplbenchError, SweepError
from deplbench.params import seed_refusal


def check_names(groups: tuple, algorithms: tuple) -> None:
    """Fail fast on names the lower layers do not know.

    The lookups are lazy so that this module imports without them; a layer
    that is not installed makes every name of that kind unknown.
    """
    families = task_mod.available_families()
    for i, g in enumerate(groups):
        if g.path is None and g.family not in families:
            raise SweepError(f"instances[{i}].family: unknown family {g.family!r} "
                             f"(available: {', '.join(sorted(families)) or 'none'})")
        if g.path is None:
            _check_param_names(f"instances[{i}]", g.params, g.grid,
                               task_mod.family_parameters(g.family), f"family {g.family!r}")
            _check_family_types(f"instances[{i}]", g.family, g.params, g.grid)
    names = task_mod.available_algorithms()
    for i, a in enumerate(algorithms):
        if a.name not in names:
            try:  # registered but broken/missing module: say so, not "unknown"
                task_mod.algorithm_parameters(a.name)
            except DeplbenchError as exc:
                raise SweepError(f"algorithms[{i}].name: {exc}") from None
            raise SweepError(f"algorithms[{i}].name: unknown algorithm {a.name!r} "
                             f"(available: {', '.join(sorted(names)) or 'none'})")
        _check_param_names(f"algorithms[{i}]", a.params, a.grid,
                           task_mod.algorithm_parameters(a.name), repr(a.name))


def _check_param_names(where: str, params: Mapping, grid: Mapping, known: set[str] | None,
                       owner: str) -> None:
    """Every ``params``/``grid`` key must be one of ``known`` (None: cannot tell)."""
    if known is None:
        return
    for k in list(params) + list(grid):
        if k not in known:
            section = "params" if k in params else "grid"
            raise SweepError(f"{where}.{section}.{k}: unknown parameter of {owner} "
                             f"(known: {', '.join(sorted(known)) or 'none'})")


def _check_family_types(where: str, family: str, params: Mapping, grid: Mapping) -> None:
    """Generator parameters carry the type of their declared default.

    A sweep is a typed source: ``n_items = "6"`` or ``horizon = 3.0`` would
    be converted silently by the generator (which also serves the CLI's
    strings), and the task key would differ from that of ``6``/``3`` for
    the same instance. Checked with :class:`~deplbench.params.Param` in
    strict mode, the type taken from the generator's default (a default of
    None leaves the type to the generator).
    """
    gen = task_mod.generator_table()
    if gen is None or family not in getattr(gen, "FAMILIES", {}):
        return  # a plugin family: its own function checks its values
    from deplbench.params import Param

    defaults = gen.family_parameters(family)
    values = [(f"{where}.params.{k}", k, v) for k, v in params.items()]
    values += [(f"{where}.grid.{k}[{j}]", k, v) for k, vs in grid.items() for j, v in enumerate(vs)]
    for loc, name, value in values:
        default = defaults.get(name)
        if default is None or type(default) not in (int, float, bool, str):
            continue
        try:
            Param(default, type(default)).convert(name, value, strict=True, error=SweepError)
        except SweepError as exc:
            raise SweepError(f"{loc}: {exc}") from None


def check_evaluation(evaluation: Mapping, where: str = "sweep.evaluation") -> None:
    """The sweep's evaluation settings through :func:`~deplbench.solvers.run.solve`'s
    own declared parameters (``samples`` → ``eval_samples``, ``seed`` →
    ``eval_seed``), so a value ``solve`` would refuse fails at load."""
    try:
        from deplbench.solvers.run import EVALUATION_PARAMETERS
    except ImportError:
        return
    for ours, theirs in (("samples", "eval_samples"), ("seed", "eval_seed")):
        if ours in evaluation:
            try:
                EVALUATION_PARAMETERS[theirs].convert(theirs, evaluation[ours], strict=True, error=SweepError)
            except SweepError as exc:
                raise SweepError(f"{where}.{ours}: {exc}") from None


def _check_evaluation_memory(samples: int, instance, where: str) -> None:
    """Refuse ``samples`` whose judging of a returned plan cannot fit the evaluator's memory
    budget on ``instance`` (it would fail every task): the rule :func:`~deplbench.solvers.run.solve`
    applies before its solve (:func:`~deplbench.solvers.run.check_eval_samples`: the per-epoch
    bands of up to K̄ epochs only where a law is random)."""
    from deplbench.solvers.run import check_eval_samples

    try:
        check_eval_samples(instance, samples, field="sweep.evaluation.samples", error=SweepError)
    except SweepError as exc:
        raise SweepError(f"{exc} ({where})") from None


def check_parameters(algorithms: Iterable) -> None:
    """Check every parameter value of every ``[[algorithms]]`` entry.

    Parameters
    ----------
    algorithms : iterable of AlgorithmEntry
        The parsed entries, in file order.

    Raises
    ------
    SweepError
        Naming ``algorithms[i].params.<name>`` or
        ``algorithms[i].grid.<name>[j]`` and the solver's rule.
    """
    for i, entry in enumerate(algorithms):
        specs = task_mod.parameter_specs(entry.name)
        if not specs:
            continue  # no declared specs (plugin, oracle): names were checked
        where = f"algorithms[{i}]"
        for name, value in entry.params.items():
            _convert(specs, name, value, f"{where}.params.{name}")
        for name, values in entry.grid.items():
            for j, value in enumerate(values):
                _convert(specs, name, value, f"{where}.grid.{name}[{j}]")
        _check_combinations(entry, where)


def _check_combinations(entry, where: str) -> None:
    """Every grid point of ``entry`` through the solver's own ``resolve_params``, which
    ends with the checks across parameters (``Solver.check_params``)."""
    resolver = task_mod.parameter_resolver(entry.name)
    if resolver is None:
        return
    axes = list(entry.grid)
    for combo in itertools.product(*(entry.grid[a] for a in axes)):
        point = {**entry.params, **dict(zip(axes, combo))}
        try:
            resolver(point, strict=True, error=SweepError)
        except SweepError as exc:
            at = f" at grid point {dict(zip(axes, combo))}" if axes else ""
            raise SweepError(f"{where}.params{at}: {exc}") from None


def _convert(specs: Mapping[str, Any], name: str, value: Any, where: str) -> None:
    spec = specs.get(name)
    convert = getattr(spec, "convert", None)
    if convert is None:
        return
    try:
        try:
            # Typed source: a TOML string never becomes a number (strict).
            convert(name, value, strict=True, error=SweepError)
        except TypeError as exc:
            if "strict" not in str(exc) and "error" not in str(exc):
                raise
            convert(name, value)  # an older Param without the keywords
    except DeplbenchError as exc:
        raise SweepError(f"{where}: {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise SweepError(f"{where}: invalid value {value!r} ({exc})") from None


def check_instances(tasks: Iterable, groups: Iterable | None = None) -> int:
    """Build every distinct instance the tasks use (targets applied).

    Parameters
    ----------
    tasks : iterable of Task
    groups : iterable of InstanceGroup, optional
        To name a failing group by its position (``instances[i]``).

    Returns
    -------
    int
        Number of distinct instances built.

    Raises
    ------
    SweepError
        The first instance that cannot be built, naming the group, the seed,
        the grid point, the targets and the reason.
    """
    index = {g.id: i for i, g in enumerate(groups or ())}
    seen: set = set()
    for task in tasks:
        data = task.to_dict()
        ident = (task_mod.instance_id(data), task.instance_path,
                 tuple(sorted(task.targets.items())))
        if ident in seen:
            continue
        seen.add(ident)
        try:
            instance = task_mod.build_instance(data)
        except RecursionError:
            raise SweepError(f"{_where(task, index)}: instance nested too deeply") from None
        except Exception as exc:  # noqa: BLE001 - any failure here is the input's
            reason = str(exc) if isinstance(exc, DeplbenchError) else f"{type(exc).__name__}: {exc}"
            raise SweepError(f"{_where(task, index)}: {reason}") from None
        samples = (task.evaluation or {}).get("samples")
        horizon = getattr(instance, "horizon", None)
        if isinstance(samples, int) and isinstance(horizon, int):
            _check_evaluation_memory(samples, instance, _where(task, index))
    return len(seen)


def _where(task, index: Mapping[str, int]) -> str:
    """``instances[i]`` (id, file or seed and grid point, targets) of a task."""
    head = f"instances[{index[task.group]}]" if task.group in index else "instances"
    parts = [f"id {task.group!r}"]
    if task.instance_path:
        parts.append(f"path {task.instance_path}")
    else:
        parts.append(f"seed {task.instance_seed}")
        if task.instance_params:
            parts.append(", ".join(f"{k}={v!r}" for k, v in task.instance_params.items()))
    if task.targets:
        parts.append("targets " + ", ".join(f"{k}={v:g}" for k, v in task.targets.items()))
    return f"{head} ({'; '.join(parts)})"


# --------------------------------------------------------------------------
# small validators of parsed TOML values (each names the key it checks)
# --------------------------------------------------------------------------


def require_table(value: Any, where: str) -> None:
    """A TOML table whose keys are names (ASCII identifiers).

    Every key of the sweep format, and every generator or solver parameter
    name, is an identifier; any other key (``"a b"``, ``"0"``, one with a
    newline) can only be a mistake, and would not read as a location in
    the messages that name it.
    """
    if not isinstance(value, Mapping):
        raise SweepError(f"{where}: must be a table, got {type(value).__name__}")
    for k in value:
        if not (isinstance(k, str) and k.isidentifier() and k.isascii()):
            shown = repr(k).encode("ascii", "backslashreplace").decode()
            raise SweepError(f"{where}: key {shown} is not a name (keys are identifiers such as n_items)")


def reject_unknown(table: Mapping, allowed: set, prefix: str) -> None:
    """An unknown key is named as a location (``sweep.sampels: unknown
    key``), or, when it is not an identifier (``"0"``, ``"a b"``, which do not
    read as locations), quoted under the table that holds it (``top level:
    unknown key '0'``)."""
    for k in table:
        if k not in allowed:
            where = (f"{prefix}{k}: unknown key" if k.isidentifier() and k.isascii()
                     else f"{prefix.rstrip('.') or 'top level'}: unknown key {k!r}")
            raise SweepError(f"{where} (allowed: {', '.join(sorted(allowed))})")


def require_str(value: Any, where: str, *, allow_empty: bool = False, one_line: bool = True) -> None:
    """A string; non-empty unless ``allow_empty``; with ``one_line`` (names, ids, labels, paths: they
    label table rows, CSV cells and one-line messages) no control character or line break.

    Raises
    ------
    SweepError
        Naming ``where``.
    """
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise SweepError(f"{where}: must be a non-empty string")
    bad = next((i for i, ch in enumerate(value) if unicodedata.category(ch) in ("Cc", "Zl", "Zp")),
               None) if one_line else None
    if bad is not None:                  # named by position: the value itself may be long
        raise SweepError(f"{where}: must not hold control characters or line breaks (tab, newline, U+2028, "
                         f"...); character {bad} is U+{ord(value[bad]):04X}")


def require_finite(value: Any, where: str) -> None:
    """No NaN or infinity anywhere in a value (keys are canonical JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SweepError(f"{where}: must be finite, got {value!r}")
    if isinstance(value, list):
        for j, v in enumerate(value):
            require_finite(v, f"{where}[{j}]")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            require_finite(v, f"{where}.{k}" if isinstance(k, str) and k.isidentifier() and k.isascii()
                            else f"{where}[{k!r}]")


def finite_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SweepError(f"{where}: must be a finite number, got {value!r}")
    return float(value)


def _positive_number(value: Any, where: str) -> float:
    v = finite_number(value, where)
    if v <= 0:
        raise SweepError(f"{where}: must be > 0, got {value!r}")
    return v


#: Largest per-task time limit (seconds, about 11.6 days). The executors
#: wait on their task processes with ``multiprocessing`` (``poll()`` takes
#: milliseconds as a C int): beyond 2^31 ms, about 24.8 days, the wait
#: itself raises OverflowError, which would take the whole run down.
MAX_TIME_LIMIT_S = 1e6


def check_time_limit(value: Any, where: str) -> float:
    """A per-task time limit: a finite number in (0, :data:`MAX_TIME_LIMIT_S`]."""
    v = _positive_number(value, where)
    if v > MAX_TIME_LIMIT_S:
        raise SweepError(f"{where}: must be at most {MAX_TIME_LIMIT_S:g} s (about 11.6 days), got {value!r}")
    return v


def positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SweepError(f"{where}: must be a positive integer, got {value!r}")
    return value


def nonnegative_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SweepError(f"{where}: must be a non-negative integer, got {value!r}")
    return value


def seed_int(value: Any, where: str) -> int:
    """A seed of a sweep: an integer in [0, :data:`~deplbench.params.MAX_SEED`]
    (:func:`deplbench.params.seed_refusal`, every seed's rule).

    A TOML integer has no bound in Python: unchecked, 2**64 would load and run,
    and then its row could not be stored (``OverflowError`` out of the runner).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise SweepError(f"{where}: must be a non-negative integer, got {value!r}")
    reason = seed_refusal(value)
    if reason:
        raise SweepError(f"{where}: {reason}")
    return value


__all__ = ["check_names", "check_parameters", "check_instances", "check_evaluation",
           "check_time_limit", "finite_number", "nonnegative_int", "positive_int", "reject_unknown", "seed_int",
           "require_finite", "require_str", "require_table"]
