"""Sweeps as data: parse, validate and expand a TOML sweep file into tasks.

A sweep names *instance groups* (a generator family with parameters and
seeds, or an instance file), *targets* to vary (ℓmax, ω of eq. (3)) and
*algorithms* (a registry name with a parameter grid). Expansion is the
cartesian product group × seed × grid point × target × algorithm × algorithm
grid point; every task gets a **stable key**: a hash of everything that
determines its result (instance recipe, targets, algorithm, parameters,
evaluation settings and the code version) and nothing else, so that
re-running the same sweep — or another sweep sharing tasks — against the same
results store skips what is already finished.

Like benchopt, nothing here knows about any single solver: an algorithm is a
name (looked up in :mod:`deplbench.solvers.registry`, or one of the
oracles of :mod:`deplbench.benchmarks.tasks`) plus parameters.

File format (every key other than those marked *required* is optional;
``docs/sweeps.md`` is the full reference, generated from
:mod:`deplbench.benchmarks.sweep_keys`; tests/benchmarks/test_sweep_docs.py loads this
example)::

    [sweep]
    name = "quick"              # default: the file's stem
    description = "..."
    time_limit_s = 120          # hard wall-clock limit per task (default 600)
    [sweep.evaluation]          # out-of-sample judging of every plan
    samples = 20000             # forwarded to solvers.registry.solve
    seed = 0

    [[instances]]
    id = "alexnet"              # required, unique: algorithms refer to it
    set = "alexnet"             # the paper/figure set (default: the id); groups
                                # sharing a set are read together by reports
    family = "realistic"        # required unless `path` is given
    params = { family = "alexnet" }      # fixed generator parameters
    grid = { horizon = [50, 100] }       # cartesian product of these lists
    seeds = [0, 1]              # default [0]; `seed = 3` is also accepted
    [instances.targets]         # each a number or a list (cartesian product)
    loss_max = [5.0, 9.0, 13.0] # overrides the instance's ℓmax
    omega = 0.99                # overrides the instance's ω

    [[instances]]
    id = "mine"
    path = "my_instance.json"   # relative to the sweep file; a glob such as
                                # "instances/*.json" makes one instance per file

    [[algorithms]]
    name = "depl"               # required: registry name or oracle
    label = "depl-eta"          # default: name; only for reading the store
    params = { epsilon = 0.1 }  # fixed solver parameters
    grid = { eta = [25, 50, 100, 200] }
    instances = ["alexnet"]     # default: every instance group
    time_limit_s = 300          # overrides [sweep].time_limit_s
    repetitions = 3             # runs of each task, each a row (default:
                                # [sweep].repetitions, itself default 1)
    # solvers = ["highs", "scip"]: for an exact MILP entry (milp), once per
    # MILP solver; also on [[instances]] (benchmarks/solver_axis.py)

``params`` holds values passed as they are (a list stays a list); only
``grid`` and ``targets`` are expanded. An invalid file raises
:class:`~deplbench.errors.SweepError` naming the offending key, e.g.
``algorithms[2].grid.eta``.

Longer than 600 lines because this docstring documents the whole sweep file
format; the code is parsing, validation and expansion of that one format.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deplbench import __version__
from deplbench.benchmarks import solver_axis as _axis
from deplbench.benchmarks.sweep_keys import keys as _keys
from deplbench.benchmarks.tasks import OUTPUT_PARAMS as _OUTPUT_PARAMS
from deplbench.benchmarks.validate import (
    check_evaluation,
    check_parameters,
    check_time_limit,
    finite_number,
    positive_int,
    reject_unknown,
    require_finite,
    require_str,
    require_table,
    seed_int,
)
from deplbench.benchmarks.validate import check_names as _check_names
from deplbench.errors import SweepError
from deplbench.files import confined
from deplbench.instances.magnitudes import MIN_OMEGA
from deplbench.jsonio import canonical_json  # noqa: F401 - re-exported: part of this module's API
from deplbench.limits import MAX_SWEEP_TASKS, as_path, check_file_size, read_bytes

#: Directory of the sweeps shipped with the package (``deplbench run quick``).
PACKAGED_SWEEPS = Path(__file__).resolve().parent / "sweeps"

#: Default hard per-task wall-clock limit (seconds) when the file gives none.
DEFAULT_TIME_LIMIT_S = 600.0

#: Targets a sweep may vary; they override the instance fields of the same
#: meaning (DESIGN.md: ``loss_max`` = ℓmax, ``omega`` = ω of eq. (3)).
TARGET_FIELDS = ("loss_max", "omega")

# The allowed keys, from the table docs/sweeps.md is generated from.
_SWEEP_KEYS = _keys("sweep")
_EVALUATION_KEYS = _keys("sweep.evaluation")  # closed_loop: benchmarks.tasks.check_closed_loop
_INSTANCE_KEYS = _keys("instances")
_ALGORITHM_KEYS = _keys("algorithms")
_TOP_KEYS = _keys("top level")


# --------------------------------------------------------------------------
# data classes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One unit of work: build one instance, run one algorithm on it.

    Everything is plain JSON-able data so that a task crosses process and
    Dask boundaries unchanged (:meth:`to_dict` / :meth:`from_dict`).

    Attributes
    ----------
    key : str
        Stable hash of the result-determining fields (see :func:`task_key`).
    sweep : str
        Name of the sweep that produced the task (not part of the key).
    group : str
        The ``[[instances]].id`` the instance comes from.
    family : str
        Generator family, or ``"file"`` for an instance file.
    instance_params : dict
        Generator parameters (fixed + this grid point); for a file,
        ``{"sha256": ...}`` (its content hash; the path is not part of
        the key, so moving a file does not re-run its tasks).
    instance_seed : int or None
        Generator seed (None for files).
    targets : dict
        ``{"loss_max": .., "omega": ..}`` overrides (either may be absent).
    algorithm : str
        Registry name or oracle name.
    label : str
        Display label of the algorithm entry.
    params : dict
        Solver parameters (fixed + this grid point).
    evaluation : dict
        Out-of-sample evaluation settings forwarded to the solve call.
    time_limit_s : float
        Hard wall-clock limit enforced by the executor (not part of the key:
        it decides whether a result arrives, not what it is).
    code_version : str
        ``deplbench.__version__`` at expansion time.
    instance_set : str
        The group's paper/figure set (``[[instances]].set``, default its id).
    instance_path : str or None
        The instance file (``family == "file"``), not part of the key.
    """

    key: str
    sweep: str
    group: str
    family: str
    instance_params: dict
    instance_seed: int | None
    targets: dict
    algorithm: str
    label: str
    params: dict
    evaluation: dict
    time_limit_s: float
    code_version: str = __version__
    instance_set: str = ""
    instance_path: str | None = None
    #: 0 for the first run of a task, r for its r-th repetition
    #: (``repetitions = N``); part of the key when > 0, so each repetition
    #: is a row of its own that resumes and leases like any task
    repetition: int = 0

    def to_dict(self) -> dict:
        """Return a JSON-able dict (round-trips through :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        """Rebuild a task from :meth:`to_dict` output."""
        return cls(**dict(data))


@dataclass(frozen=True)
class InstanceGroup:
    """One validated ``[[instances]]`` entry."""

    id: str
    family: str
    params: dict
    grid: dict
    seeds: tuple
    targets: dict
    path: str | None = None
    set: str = ""
    solvers: tuple | None = None     # the solver axis (benchmarks.solver_axis)
    #: every file a glob ``path`` matched, sorted (``path`` is the first);
    #: empty for a plain path
    paths: tuple = ()


@dataclass(frozen=True)
class AlgorithmEntry:
    """One validated ``[[algorithms]]`` entry."""

    name: str
    label: str
    params: dict
    grid: dict
    instances: tuple | None
    time_limit_s: float
    solvers: tuple | None = None     # the solver axis (benchmarks.solver_axis)
    repetitions: int = 1             # runs of each task (timing spread)


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file.

    Use :func:`load_sweep` to build one and :meth:`tasks` to expand it.

    Attributes
    ----------
    name, description : str
    time_limit_s : float
        The default time limit of every task.
    evaluation : dict
        The out-of-sample evaluation settings (``samples``, ``seed``).
    instances : tuple of InstanceGroup
    algorithms : tuple of AlgorithmEntry
    source : str or None
        The file it was read from.
    text : str
        The file's text, as stored with every task.
    """

    name: str
    description: str
    time_limit_s: float
    evaluation: dict
    instances: tuple
    algorithms: tuple
    source: str | None = None
    text: str = field(default="", repr=False)

    def tasks(self) -> list[Task]:
        """Expand into the ordered list of tasks (see :func:`expand`)."""
        return expand(self)


def select(sweep: Sweep, algorithms: list[str] | None = None,
           instances: list[str] | None = None) -> Sweep:
    """The part of ``sweep`` whose algorithm entries and instance groups match.

    Parameters
    ----------
    sweep : Sweep
    algorithms : list of str, optional
        Shell-style patterns (``fnmatch``) matched against each
        ``[[algorithms]]`` entry's ``name`` and ``label``; None keeps all.
    instances : list of str, optional
        Patterns matched against each ``[[instances]]`` group's ``id`` and
        ``set``; None keeps all.

    Returns
    -------
    Sweep
        Same name and settings; the tasks are the full sweep's tasks of the
        kept entries, with the same keys (a filtered run fills the same store).

    Raises
    ------
    SweepError
        A pattern that matches nothing, naming the option and what exists.
    """
    from dataclasses import replace
    from fnmatch import fnmatchcase

    def keep(items, patterns, fields, flag):
        if not patterns:
            return tuple(items)
        kept = tuple(it for it in items if any(fnmatchcase(getattr(it, f), p) for p in patterns for f in fields))
        for p in patterns:
            if not any(fnmatchcase(getattr(it, f), p) for it in items for f in fields):
                names = sorted({getattr(it, f) for it in items for f in fields})
                raise SweepError(f"{flag} {p!r}: matches no entry of sweep {sweep.name!r} "
                                 f"(there are: {', '.join(names)})")
        return kept

    return replace(sweep, algorithms=keep(sweep.algorithms, algorithms, ("name", "label"), "--algo"),
                   instances=keep(sweep.instances, instances, ("id", "set"), "--instance"))


# --------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------


def task_key(
    instance: Mapping[str, Any],
    targets: Mapping[str, Any],
    algorithm: str,
    params: Mapping[str, Any],
    evaluation: Mapping[str, Any],
    code_version: str = __version__,
    repetition: int = 0,
) -> str:
    """Stable identifier of a task's result.

    Parameters
    ----------
    instance : mapping
        ``{"family", "params", "seed"}`` recipe of the instance.
    targets : mapping
        ℓmax/ω overrides.
    algorithm : str
        Algorithm name.
    params : mapping
        Solver parameters.
    evaluation : mapping
        Out-of-sample evaluation settings.
    code_version : str
        Package version; bumping it invalidates every stored result.
    repetition : int
        Which run of a repeated task (``repetitions = N``); 0, the first,
        leaves the key as it is without repetitions.

    Returns
    -------
    str
        First 24 hex digits of the SHA-256 of the canonical JSON.

    Notes
    -----
    The sweep name, the group id, the label and the time limit are left out
    on purpose: they do not change what the task computes, so two sweeps
    sharing a task share its row.
    """
    payload = canonical_json(
        {
            "instance": dict(instance),
            "targets": dict(targets),
            "algorithm": algorithm,
            "params": dict(params),
            "evaluation": dict(evaluation),
            "code_version": code_version,
            **({"repetition": int(repetition)} if repetition else {}),
        }
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


# --------------------------------------------------------------------------
# loading and validation
# --------------------------------------------------------------------------


def resolve_sweep_path(path: str | os.PathLike) -> Path:
    """Find a sweep file: the path itself, else a packaged sweep by name.

    ``quick`` and ``quick.toml`` both resolve to the packaged
    ``perf/sweeps/quick.toml`` when no such local file exists.

    Raises
    ------
    SweepError
        If neither exists.
    """
    candidate = as_path(path, "path", SweepError)
    if candidate.exists() and not candidate.is_dir():   # a device or FIFO is refused by the read
        return candidate
    name = candidate.name if candidate.suffix == ".toml" else candidate.name + ".toml"
    packaged = PACKAGED_SWEEPS / name
    if len(candidate.parts) == 1 and packaged.is_file():
        return packaged
    if candidate.is_dir():
        raise SweepError(f"sweep file {path}: is a directory (give the sweep's .toml file)")
    raise SweepError(f"sweep file not found: {path}")


def load_sweep(path: str | os.PathLike, *, check_names: bool = True,
               check_instances: bool | None = None) -> Sweep:
    """Read, validate and return a sweep file.

    Parameters
    ----------
    path : path-like
        TOML file, or the name of a packaged sweep (``quick``).
    check_names : bool
        Also check algorithm names, parameter names and parameter values
        against the solver registry (each value through the solver's own
        ``Param``) and family names against the instance generators. Switch
        off only to parse a file for inspection where those layers are
        absent.
    check_instances : bool, optional
        Build every instance the sweep uses, targets applied
        (:func:`deplbench.benchmarks.validate.check_instances`): generator
        parameters, instance files and targets are then checked before
        anything runs. Default: ``check_names``.

    Returns
    -------
    Sweep

    Raises
    ------
    SweepError
        Unreadable or non-UTF-8 file, invalid or too deeply nested TOML, or
        any invalid key or value; the message names the file or the key.
    """
    file = resolve_sweep_path(path)
    raw = read_bytes(file, "sweep", SweepError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SweepError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         "TOML files must be UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{file}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SweepError(f"{file}: invalid TOML: arrays or tables nested too deeply") from None
    try:
        sweep = parse_sweep(data, base_dir=file.parent, default_name=file.stem,
                            source=str(file), text=text, check_names=check_names)
    except RecursionError:
        raise SweepError(f"{file}: values nested too deeply") from None
    if check_names if check_instances is None else check_instances:
        from deplbench.benchmarks.validate import check_instances as _check

        _check(sweep.tasks(), sweep.instances)
    return sweep


def parse_sweep(
    data: Mapping[str, Any],
    *,
    base_dir: str | os.PathLike = ".",
    default_name: str = "sweep",
    source: str | None = None,
    text: str = "",
    check_names: bool = True,
) -> Sweep:
    """Validate an already-parsed sweep mapping (see module docstring).

    Raises
    ------
    SweepError
        Naming the first offending key.
    """
    require_table(data, "top level")
    reject_unknown(data, _TOP_KEYS, "")
    head = data.get("sweep", {})
    require_table(head, "sweep")
    reject_unknown(head, _SWEEP_KEYS, "sweep.")
    name = head.get("name", default_name)
    require_str(name, "sweep.name")
    description = head.get("description", "")
    require_str(description, "sweep.description", allow_empty=True, one_line=False)
    time_limit = check_time_limit(head.get("time_limit_s", DEFAULT_TIME_LIMIT_S),
                                  "sweep.time_limit_s")
    repetitions = _repetitions(head.get("repetitions", 1), "sweep.repetitions")
    evaluation = head.get("evaluation", {})
    require_table(evaluation, "sweep.evaluation")
    reject_unknown(evaluation, _EVALUATION_KEYS, "sweep.evaluation.")
    if "samples" in evaluation:
        positive_int(evaluation["samples"], "sweep.evaluation.samples")
    if "seed" in evaluation:
        seed_int(evaluation["seed"], "sweep.evaluation.seed")
    if "closed_loop" in evaluation:
        from deplbench.benchmarks.tasks import check_closed_loop
        check_closed_loop(evaluation["closed_loop"], "sweep.evaluation.closed_loop")

    raw_instances = data.get("instances")
    if not isinstance(raw_instances, list) or not raw_instances:
        raise SweepError("instances: a sweep needs at least one [[instances]] table")
    groups = tuple(
        _parse_instance_group(entry, f"instances[{i}]", Path(base_dir))
        for i, entry in enumerate(raw_instances)
    )
    ids = [g.id for g in groups]
    for i, gid in enumerate(ids):
        if gid in ids[:i]:
            raise SweepError(f"instances[{i}].id: duplicate id {gid!r}")
    _check_loop_sets(evaluation.get("closed_loop"), groups)

    raw_algorithms = data.get("algorithms")
    if not isinstance(raw_algorithms, list) or not raw_algorithms:
        raise SweepError("algorithms: a sweep needs at least one [[algorithms]] table")
    algorithms = tuple(
        _parse_algorithm(entry, f"algorithms[{i}]", set(ids), time_limit, repetitions)
        for i, entry in enumerate(raw_algorithms)
    )
    _check_task_count(groups, algorithms, head.get("max_tasks", MAX_SWEEP_TASKS))
    _check_output_paths(algorithms)
    _check_labels(algorithms)
    if check_names:
        _check_names(groups, algorithms)
        check_parameters(algorithms)
        check_evaluation(evaluation)   # through solve()'s own parameters
        _axis.check_solvers(groups, algorithms)
        _axis.check_settings(groups, algorithms)
    return Sweep(name=name, description=description, time_limit_s=time_limit,
                 evaluation=dict(evaluation), instances=groups,
                 algorithms=algorithms, source=source, text=text)


def _check_loop_sets(settings: Any, groups: tuple) -> None:
    """Every instance set named in ``sweep.evaluation.closed_loop.sets`` is one of the sweep's (a misspelt
    one would silently simulate nothing: ``benchmarks.tasks.closed_loop_settings``).

    Raises
    ------
    SweepError
        Naming the entry and the sweep's sets.
    """
    sets = settings.get("sets") if isinstance(settings, Mapping) else None
    if not isinstance(sets, list):
        return
    known = sorted({g.set or g.id for g in groups})
    for j, name in enumerate(sets):
        if name not in known:
            shown = ", ".join(map(repr, known[:12])) + (", ..." if len(known) > 12 else "")
            raise SweepError(f"sweep.evaluation.closed_loop.sets[{j}]: unknown instance set {name!r} "
                             f"(the sweep's: {shown})")


def _check_labels(algorithms: tuple) -> None:
    """One algorithm per label: a report draws one series per ``label`` (``reports.data``), so
    two algorithms under one label would be averaged and ranked as one.

    Raises
    ------
    SweepError
        ``algorithms[i].label`` naming the entry whose algorithm already has that label.
    """
    owner: dict[str, tuple[int, str]] = {}
    for i, algo in enumerate(algorithms):
        j, name = owner.setdefault(algo.label, (i, algo.name))
        if name != algo.name and algo.label == algo.name:
            # this entry's label is its own name (often the default, no `label` key): the earlier
            # entry is the one whose label names another algorithm
            raise SweepError(f"algorithms[{j}].label: {algo.label!r} is the name of the algorithm of "
                             f"algorithms[{i}], but algorithms[{j}] runs {name!r}; a report draws one series "
                             f"per label, so they would be mixed (give algorithms[{j}] its own label)")
        if name != algo.name:
            raise SweepError(f"algorithms[{i}].label: {algo.label!r} is already the label of algorithms[{j}] "
                             f"(algorithm {name!r}); a report draws one series per label, so {algo.name!r} and "
                             f"{name!r} would be mixed (give each its own label)")


#: Solver parameters that name a file the task writes (defined beside the task runner that checks them again).
OUTPUT_PARAMS = _OUTPUT_PARAMS


def _check_output_paths(algorithms: tuple) -> None:
    """Every output file a sweep names stays under the run's folder.

    Sweeps are shared files: an absolute path or a ``..`` component would let
    one write anywhere, so both are refused at load, naming the field; so is
    a path that leaves the folder through a symbolic link once resolved
    (the task checks again before it writes, :func:`.tasks.confine_outputs`).
    """
    for i, algo in enumerate(algorithms):
        for section, table in (("params", algo.params), ("grid", algo.grid)):
            for key in OUTPUT_PARAMS:
                if key not in table:
                    continue
                values = table[key] if section == "grid" else [table[key]]
                for j, value in enumerate(values):
                    where = f"algorithms[{i}].{section}.{key}" + (f"[{j}]" if section == "grid" else "")
                    if value is None:
                        continue
                    if not isinstance(value, str) or not value:
                        raise SweepError(f"{where}: expected a relative file name, got {value!r}")
                    parts = Path(value).parts
                    if Path(value).is_absolute() or os.path.isabs(value) or ".." in parts or "\\" in value:
                        raise SweepError(f"{where}: an output file named in a sweep must stay under the run's "
                                         f"folder (a relative path without '..'), got {value!r}")
                    # a symbolic link inside the folder (out -> /elsewhere) must not carry the write out
                    confined(os.getcwd(), value, where, SweepError)


def _check_task_count(groups: tuple, algorithms: tuple, cap: Any) -> None:
    """Refuse a sweep whose expansion would exceed ``cap`` tasks, before expanding it.

    The count is the product of the axis lengths — the files a glob
    matched and the repetitions included — (an upper bound: duplicates
    merge later), so a 2000 × 2000 grid is refused at load, not after
    minutes of expansion; ``sweep.max_tasks`` raises the cap explicitly.
    """
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise SweepError(f"sweep.max_tasks: expected a positive integer, got {cap!r}")

    def points(grid: Mapping) -> int:
        return math.prod(len(v) for v in grid.values())

    total = 0
    for g in groups:
        # one task per file a glob matched, one per repetition: each is a row
        recipes = max(1, len(g.paths)) if g.path is not None else points(g.grid) * len(g.seeds)
        per_algo = sum(points(a.grid) * len(_axis.solver_axis(g, a) or (None,)) * a.repetitions
                       for a in algorithms if a.instances is None or g.id in a.instances)
        total += recipes * points(g.targets) * per_algo
    if total > cap:
        raise SweepError(f"sweep.max_tasks: the sweep expands to up to {total} tasks > the cap {cap}; "
                         "shrink the grids or set sweep.max_tasks to at least that")


def _parse_instance_group(entry: Any, where: str, base_dir: Path) -> InstanceGroup:
    require_table(entry, where)
    reject_unknown(entry, _INSTANCE_KEYS, f"{where}.")
    gid = entry.get("id")
    if gid is None:
        raise SweepError(f"{where}.id: required (a unique name for the group)")
    require_str(gid, f"{where}.id")
    set_name = entry.get("set", gid)
    require_str(set_name, f"{where}.set")
    has_family, has_path = "family" in entry, "path" in entry
    if has_family == has_path:
        raise SweepError(f"{where}: give exactly one of `family` or `path`")
    params, grid = _parse_params_grid(entry, where)
    if "seeds" in entry and "seed" in entry:
        raise SweepError(f"{where}: give `seeds` or `seed`, not both")
    seeds = entry.get("seeds", [entry["seed"]] if "seed" in entry else [0])
    if not isinstance(seeds, list) or not seeds:
        raise SweepError(f"{where}.seeds: must be a non-empty list of integers")
    for j, s in enumerate(seeds):
        seed_int(s, f"{where}.seed" if "seed" in entry else f"{where}.seeds[{j}]")   # the key as written
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{where}.seeds: duplicate seeds")
    targets = _parse_targets(entry.get("targets", {}), f"{where}.targets")

    path: str | None = None
    paths: tuple[str, ...] = ()
    family = entry.get("family", "file")
    if has_path:
        require_str(entry["path"], f"{where}.path")
        file = Path(entry["path"])
        if not file.is_absolute():
            file = base_dir / file
        if params or grid:
            raise SweepError(f"{where}: `params`/`grid` need a `family`, not a `path`")
        if _GLOB_CHARS.intersection(entry["path"]):
            paths = _glob_files(entry["path"], base_dir, where)
            path = paths[0]
        else:
            try:
                found = file.is_file()
            except (OSError, ValueError) as exc:   # too long a name, a NUL byte
                raise SweepError(f"{where}.path: cannot look up the instance file ({exc})") from None
            if not found:
                raise SweepError(f"{where}.path: instance file not found: {file}")
            path = str(file.resolve())
        seeds = [None]
    else:
        require_str(family, f"{where}.family")
    solvers = _axis.entry_solvers(entry, where)
    return InstanceGroup(id=gid, family=family, params=dict(params), grid=grid,
                         seeds=tuple(seeds), targets=targets, path=path, set=set_name, solvers=solvers,
                         paths=paths)


_GLOB_CHARS = frozenset("*?[")


#: Most directory entries one glob ``path`` may look at: a glob such as
#: ``**/*.json`` over a huge tree is refused rather than walked for hours.
MAX_GLOB_ENTRIES = 100_000


def _glob_regex(parts: tuple[str, ...]) -> re.Pattern:
    """A regex matching a relative POSIX path against glob components
    (``*`` and ``?`` never cross ``/``; ``**`` matches any number of folders)."""
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        j, piece = 0, []
        while j < len(part):
            ch = part[j]
            if ch == "*":
                piece.append("[^/]*")
            elif ch == "?":
                piece.append("[^/]")
            elif ch == "[":
                k = j + 1
                k += part[k:k + 1] == "!"
                k += part[k:k + 1] == "]"
                end = part.find("]", k)
                if end < 0:
                    piece.append(re.escape(ch))
                else:
                    body = part[j + 1:end]
                    body = "^" + body[1:] if body.startswith("!") else body
                    piece.append("[" + body.replace("\\", "\\\\") + "]")
                    j = end
            else:
                piece.append(re.escape(ch))
            j += 1
        out.append("".join(piece) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.S)


def _glob_files(raw: str, base_dir: Path, where: str) -> tuple[str, ...]:
    """The files a glob ``path`` matches (``*``, ``?``, ``[...]``, ``**``), sorted.

    The glob stays inside the sweep file's folder tree: an absolute pattern
    outside it or a ``..`` part is refused, the walk does not follow
    symbolic links to folders (no loop can hang it), looks at no more than
    :data:`MAX_GLOB_ENTRIES` entries, and a matched file whose link leads
    out of the tree is refused.
    """
    base = Path(os.path.realpath(base_dir))
    pattern = Path(raw)
    if pattern.is_absolute():
        try:
            pattern = Path(os.path.abspath(pattern)).relative_to(base)
        except ValueError:
            try:
                pattern = Path(os.path.abspath(raw)).relative_to(Path(os.path.abspath(base_dir)))
            except ValueError:
                raise SweepError(f"{where}.path: the glob {raw!r} must stay inside the sweep file's folder "
                                 f"{base} (give it relative to the sweep file)") from None
    parts = pattern.parts
    if ".." in parts:
        raise SweepError(f"{where}.path: the glob {raw!r} must stay inside the sweep file's folder (no '..')")
    fixed = []
    for part in parts[:-1]:
        if _GLOB_CHARS.intersection(part):
            break
        fixed.append(part)
    start = base.joinpath(*fixed)
    if os.path.commonpath([base, os.path.realpath(start)]) != str(base):
        raise SweepError(f"{where}.path: the glob {raw!r} leads out of the sweep file's folder through a "
                         "symbolic link")
    regex = _glob_regex(parts)
    found, seen = set(), 0
    try:
        for folder, dirs, names in os.walk(start, followlinks=False):
            seen += len(dirs) + len(names)
            if seen > MAX_GLOB_ENTRIES:
                raise SweepError(f"{where}.path: the glob {raw!r} looks at more than {MAX_GLOB_ENTRIES} files "
                                 "and folders; narrow it")
            dirs.sort()
            for name in names:
                full = os.path.join(folder, name)
                rel = os.path.relpath(full, base).replace(os.sep, "/")
                if not regex.match(rel) or not os.path.isfile(full):
                    continue
                real = os.path.realpath(full)
                if os.path.commonpath([base, real]) != str(base):
                    raise SweepError(f"{where}.path: {rel} leads out of the sweep file's folder (to {real})")
                found.add(real)
    except (OSError, ValueError) as exc:
        raise SweepError(f"{where}.path: cannot look up the instance files ({exc})") from None
    if not found:
        raise SweepError(f"{where}.path: no instance file matches {raw} (relative to {base})")
    return tuple(sorted(found))


#: Most runs of one task a sweep may ask for.
MAX_REPETITIONS = 1000


def _repetitions(value: Any, where: str) -> int:
    n = positive_int(value, where)
    if n > MAX_REPETITIONS:
        raise SweepError(f"{where}: at most {MAX_REPETITIONS}, got {n}")
    return n


def _parse_algorithm(entry: Any, where: str, ids: set, default_limit: float,
                     default_repetitions: int = 1) -> AlgorithmEntry:
    require_table(entry, where)
    reject_unknown(entry, _ALGORITHM_KEYS, f"{where}.")
    name = entry.get("name")
    if name is None:
        raise SweepError(f"{where}.name: required (an algorithm registry name)")
    require_str(name, f"{where}.name")
    label = entry.get("label", name)
    require_str(label, f"{where}.label")
    params, grid = _parse_params_grid(entry, where)
    groups = entry.get("instances")
    if groups is not None:
        if not isinstance(groups, list) or not groups:
            raise SweepError(f"{where}.instances: must be a non-empty list of instance ids")
        for j, g in enumerate(groups):
            if not isinstance(g, str) or g not in ids:   # a list is unhashable
                raise SweepError(f"{where}.instances[{j}]: unknown instance id {g!r} "
                                 f"(known: {', '.join(sorted(ids))})")
        groups = tuple(groups)
    limit = check_time_limit(entry.get("time_limit_s", default_limit), f"{where}.time_limit_s")
    solvers = _axis.entry_solvers(entry, where, params, grid)
    repetitions = _repetitions(entry.get("repetitions", default_repetitions), f"{where}.repetitions")
    return AlgorithmEntry(name=name, label=label, params=dict(params), grid=grid,
                          instances=groups, time_limit_s=limit, solvers=solvers, repetitions=repetitions)


def _parse_params_grid(entry: Mapping, where: str) -> tuple[Mapping, dict]:
    """The fixed ``params`` and the ``grid`` axes of a table; a key may be in one only."""
    params = entry.get("params", {})
    require_table(params, f"{where}.params")
    for k, v in params.items():
        require_finite(v, f"{where}.params.{k}")
    grid = _parse_grid(entry.get("grid", {}), f"{where}.grid")
    for k in grid:
        if k in params:
            raise SweepError(f"{where}.grid.{k}: also set in {where}.params")
    return params, grid


def _parse_grid(grid: Any, where: str) -> dict:
    require_table(grid, where)
    out = {}
    for k, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{where}.{k}: a grid axis must be a non-empty list")
        for j, v in enumerate(values):
            require_finite(v, f"{where}.{k}[{j}]")
        if len({canonical_json(v) for v in values}) != len(values):
            raise SweepError(f"{where}.{k}: duplicate values")
        out[k] = list(values)
    return out


def _parse_targets(targets: Any, where: str) -> dict:
    require_table(targets, where)
    reject_unknown(targets, set(TARGET_FIELDS), f"{where}.")
    out = {}
    for k, values in targets.items():
        values = values if isinstance(values, list) else [values]
        if not values:
            raise SweepError(f"{where}.{k}: must be a number or a non-empty list")
        for j, v in enumerate(values):
            finite_number(v, f"{where}.{k}[{j}]")
        if k == "omega" and not all(MIN_OMEGA <= v <= 1.0 - MIN_OMEGA for v in values):
            raise SweepError(f"{where}.omega: every ω must lie in [{MIN_OMEGA:g}, 1 − {MIN_OMEGA:g}] "
                             "(the instance format's range)")
        if len(set(values)) != len(values):
            raise SweepError(f"{where}.{k}: duplicate values")
        out[k] = [float(v) for v in values]
    return out


# --------------------------------------------------------------------------
# expansion
# --------------------------------------------------------------------------


def grid_points(fixed: Mapping[str, Any], grid: Mapping[str, list]) -> Iterator[dict]:
    """Yield ``fixed`` merged with each point of the cartesian product of ``grid``.

    Axes vary in file order with the last axis fastest, so the task order
    follows the file.
    """
    axes = list(grid)
    for combo in itertools.product(*(grid[a] for a in axes)):
        point = dict(fixed)
        point.update(zip(axes, combo))
        yield point


def expand(sweep: Sweep) -> list[Task]:
    """Expand a sweep into tasks, in file order, without duplicates.

    Parameters
    ----------
    sweep : Sweep

    Returns
    -------
    list of Task
        Group × seed × instance grid point × target point × algorithm ×
        algorithm grid point. Two entries producing the same key (e.g. the
        same algorithm listed twice) yield one task.
    """
    evaluation = dict(sweep.evaluation)
    tasks: list[Task] = []
    seen: set[str] = set()
    for group in sweep.instances:
        if group.path is not None:
            recipes = [({"sha256": _file_sha256(f)}, None, f) for f in (group.paths or (group.path,))]
        else:
            recipes = [(p, s, None) for p in grid_points(group.params, group.grid)
                       for s in group.seeds]
        target_points = list(grid_points({}, group.targets))
        algos = [a for a in sweep.algorithms if a.instances is None or group.id in a.instances]
        for inst_params, seed, file in recipes:
            recipe = {"family": group.family, "params": inst_params, "seed": seed}
            for targets in target_points:
                for algo in algos:
                    for params in _axis.with_solvers(grid_points(algo.params, algo.grid),
                                                     _axis.solver_axis(group, algo)):
                        for rep in range(algo.repetitions):
                            key = task_key(recipe, targets, algo.name, params, evaluation,
                                           repetition=rep)
                            if key in seen:
                                continue
                            seen.add(key)
                            tasks.append(Task(
                                key=key, sweep=sweep.name, group=group.id,
                                family=group.family, instance_params=inst_params,
                                instance_seed=seed, targets=targets,
                                algorithm=algo.name, label=algo.label, params=params,
                                evaluation=evaluation, time_limit_s=algo.time_limit_s,
                                instance_set=group.set or group.id, instance_path=file,
                                repetition=rep,
                            ))
    return tasks


def _file_sha256(path: str) -> str:
    # The content hash is the file's identity in the task key: editing the
    # file invalidates its results, moving or renaming it does not.
    check_file_size(path, "instance", SweepError)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise SweepError(f"{path}: cannot read instance file ({exc.strerror or exc})") from None
    return digest.hexdigest()[:24]
