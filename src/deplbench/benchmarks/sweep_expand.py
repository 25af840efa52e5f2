"""A validated sweep as data, and its expansion into tasks with stable keys.

:class:`Sweep` holds what :func:`deplbench.benchmarks.sweep_parse.parse_sweep`
validated: its :class:`InstanceGroup` and :class:`AlgorithmEntry` entries.
:func:`expand` turns it into :class:`Task` objects, the cartesian product
group × seed × grid point × target × algorithm × algorithm grid point, in
file order; :func:`task_key` gives each task a stable key (a hash of
everything that determines its result and nothing else), so that a re-run
against the same results store skips what is already finished.
:func:`select` keeps the part of a sweep matching ``--algo`` and
``--instance`` patterns, with the same keys.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from deplbench import __version__
from deplbench.benchmarks import solver_axis as _axis
from deplbench.errors import SweepError
from deplbench.jsonio import canonical_json
from deplbench.limits import check_file_size

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

    Use :func:`~deplbench.benchmarks.sweep.load_sweep` to build one and :meth:`tasks` to
    expand it.

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
            recipes = [({"sha256": file_sha256(f)}, None, f) for f in (group.paths or (group.path,))]
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


def file_sha256(path: str) -> str:
    """The first 24 hex digits of the SHA-256 of an instance file's content.

    The content hash is the file's identity in the task key: editing the
    file invalidates its results, moving or renaming it does not.

    Raises
    ------
    SweepError
        The file is larger than the input limit or cannot be read.
    """
    check_file_size(path, "instance", SweepError)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise SweepError(f"{path}: cannot read instance file ({exc.strerror or exc})") from None
    return digest.hexdigest()[:24]


__all__ = ["Task", "InstanceGroup", "AlgorithmEntry", "Sweep", "select", "task_key", "grid_points", "expand",
           "file_sha256"]
