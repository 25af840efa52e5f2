"""Parse and validate a sweep mapping (a TOML sweep file, read) into a :class:`Sweep`.

:func:`parse_sweep` checks every key against the table of
:mod:`deplbench.benchmarks.sweep_keys`, every value's type and range, and
the rules across entries: unique group ids, algorithms naming known groups,
one algorithm per label, output files under the run's folder, and the
number of tasks the sweep expands to (``sweep.max_tasks``). With
``check_names`` it also checks names and parameter values against the
solver registry and the instance generators
(:mod:`deplbench.benchmarks.validate`, :mod:`deplbench.benchmarks.solver_axis`).
The file format is documented in :mod:`deplbench.benchmarks.sweep`; every
refusal is a :class:`~deplbench.errors.SweepError` naming the offending key,
e.g. ``algorithms[2].grid.eta``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deplbench.benchmarks import solver_axis as _axis
from deplbench.benchmarks.sweep_expand import AlgorithmEntry, InstanceGroup, Sweep
from deplbench.benchmarks.sweep_glob import GLOB_CHARS, glob_files
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
from deplbench.files import confined, refuse_overwrite
from deplbench.instances.magnitudes import omega_range
from deplbench.jsonio import canonical_json
from deplbench.limits import MAX_SWEEP_TASKS

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


def parse_sweep(
    data: Mapping[str, Any],
    *,
    base_dir: str | os.PathLike = ".",
    default_name: str = "sweep",
    source: str | None = None,
    text: str = "",
    check_names: bool = True,
) -> Sweep:
    """Validate an already-parsed sweep mapping (the format: :mod:`deplbench.benchmarks.sweep`).

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
    _check_output_paths(algorithms, groups, source)
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


def _check_output_paths(algorithms: tuple, groups: tuple = (), source: str | None = None) -> None:
    """Every output file a sweep names stays under the run's folder and is none of its inputs.

    Sweeps are shared files: an absolute path or a ``..`` component would let
    one write anywhere, so both are refused at load, naming the field; so is
    a path that leaves the folder through a symbolic link once resolved
    (the task checks again before it writes, :func:`.tasks.confine_outputs`),
    and one that is an instance file of ``groups`` or the sweep file
    ``source`` (a model file written over the instance the next task reads).
    """
    inputs = [p for g in groups for p in (g.paths or ((g.path,) if g.path else ()))] + ([source] if source else [])
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
                    refuse_overwrite(value, inputs, where, SweepError)


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
        if GLOB_CHARS.intersection(entry["path"]):
            paths = glob_files(entry["path"], base_dir, where)
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
        if k == "omega":
            for v in values:
                try:
                    omega_range(v)   # the instance format's range, one rule with load_instance's
                except ValueError as exc:
                    raise SweepError(f"{where}.omega: {exc}") from None
        if len(set(values)) != len(values):
            raise SweepError(f"{where}.{k}: duplicate values")
        out[k] = [float(v) for v in values]
    return out


__all__ = ["DEFAULT_TIME_LIMIT_S", "TARGET_FIELDS", "OUTPUT_PARAMS", "MAX_REPETITIONS", "parse_sweep"]
