"""Sweep files: find, read and load one, and the file format they follow.

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

The work is split by concern: :mod:`deplbench.benchmarks.sweep_parse`
validates the parsed file (:func:`parse_sweep`: every key and value, named
when refused), :mod:`deplbench.benchmarks.sweep_glob` finds the files of a
glob ``path``, and :mod:`deplbench.benchmarks.sweep_expand` holds the data
classes (:class:`Sweep`, :class:`Task`) and expands a sweep into tasks with
stable keys (:func:`expand`, :func:`task_key`). This module reads a file
(:func:`load_sweep`, :func:`resolve_sweep_path`) and re-exports the public
names of those modules, so ``from deplbench.benchmarks.sweep import ...``
gives all of them.

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
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from deplbench.benchmarks.sweep_expand import (
    AlgorithmEntry,
    InstanceGroup,
    Sweep,
    Task,
    expand,
    grid_points,
    select,
    task_key,
)
from deplbench.benchmarks.sweep_glob import MAX_GLOB_ENTRIES
from deplbench.benchmarks.sweep_parse import (
    DEFAULT_TIME_LIMIT_S,
    MAX_REPETITIONS,
    OUTPUT_PARAMS,
    TARGET_FIELDS,
    parse_sweep,
)
from deplbench.errors import SweepError
from deplbench.jsonio import canonical_json
from deplbench.limits import as_path, read_bytes

#: Directory of the sweeps shipped with the package (``deplbench run quick``).
PACKAGED_SWEEPS = Path(__file__).resolve().parent / "sweeps"


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


__all__ = [
    # this module
    "PACKAGED_SWEEPS", "resolve_sweep_path", "load_sweep",
    # parsing and validation (sweep_parse)
    "parse_sweep", "DEFAULT_TIME_LIMIT_S", "TARGET_FIELDS", "OUTPUT_PARAMS", "MAX_REPETITIONS",
    # instance-file globs (sweep_glob)
    "MAX_GLOB_ENTRIES",
    # the data classes and the expansion into tasks (sweep_expand)
    "Sweep", "InstanceGroup", "AlgorithmEntry", "Task", "select", "task_key", "grid_points", "expand",
    # the canonical JSON the task keys hash (jsonio)
    "canonical_json",
]
