"""The task function: build the instance, run the algorithm, return a record.

:func:`run_task` is what every executor runs, in a process of its own. It
never raises: any exception becomes a record with ``status = "error"`` and
the traceback in ``error``, so one bad task cannot stop a sweep. The record's
keys are the columns of :class:`~deplbench.benchmarks.record.TaskRecord` plus
``result`` (the solver's full ``SolveResult.to_dict()``), kept in the
store's ``record`` column.

Nothing here knows any particular solver: an algorithm is looked up by name
(:mod:`deplbench.benchmarks.lookup`: test plugins, then the solver registry)
and every algorithm is run the same way — the knapsack DP included, which is
the registered exact solver ``knapsack-dp``.

Run as a module (``python -m deplbench.benchmarks.tasks TASK.json OUT.json``)
it executes one task and writes the record; the Dask executor uses that to
give each task a process it can kill.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from deplbench import __version__, limits
from deplbench.benchmarks import record as _record
from deplbench.benchmarks.lookup import (  # noqa: F401 - public names, re-exported
    PLUGIN_ENV,
    algorithm_parameters,
    available_algorithms,
    available_families,
    family_parameters,
    generator_table,
    load_plugins,
    parameter_resolver,
    parameter_specs,
    plugin_table,
    solver_clock,
    solver_info,
)
from deplbench.benchmarks.record import json_default
from deplbench.errors import DeplbenchError, InstanceError, SweepError
from deplbench.formulations.evaluation import settings as simulation

#: Thread-count variables recorded in every row's environment (BLAS/OpenMP
#: threads change timings, so they belong next to the runtime).
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

_PACKAGES = ("numpy", "scipy", "pandas", "pydantic", "networkx", "pyomo", "highspy",
             "dask", "distributed")


# --------------------------------------------------------------------------
# building the instance
# --------------------------------------------------------------------------


def build_instance(task: Mapping[str, Any]):
    """The task's instance, with its targets applied.

    Parameters
    ----------
    task : mapping
        A :class:`~deplbench.benchmarks.sweep_expand.Task` dict.

    Returns
    -------
    deplbench.instances.model.Instance

    Raises
    ------
    InstanceError
        Unknown family, bad generator parameters, or targets the instance
        rejects (e.g. ℓmax ≥ ℓ(0)).
    """
    family = task["family"]
    params = dict(task["instance_params"])
    if family == "file":
        from deplbench.instances.model import load_instance

        path = task.get("instance_path") or params.get("path")
        if not path:
            raise InstanceError("instance_path: a file task needs the instance file's path")
        expected = params.get("sha256")
        if expected is not None:
            import hashlib

            from deplbench.limits import read_bytes

            actual = hashlib.sha256(read_bytes(path, "instance", InstanceError)).hexdigest()[:24]
            if actual != expected:
                # The key promises this content; a file edited since the
                # sweep was expanded would store a result under a wrong key.
                raise InstanceError(f"instance_path: {path} changed since the sweep was "
                                    f"expanded (sha256 {actual}, expected {expected})")
        instance = load_instance(path)
    else:
        plugin = plugin_table("FAMILIES")
        if family in plugin:
            instance = plugin[family](seed=task["instance_seed"], **params)
        else:
            gen = generator_table()
            if gen is None:
                raise InstanceError(f"family: no instance generators installed for {family!r}")
            try:
                instance = gen.generate(family, seed=task["instance_seed"], **params)
            except TypeError as exc:
                raise InstanceError(f"instances.params: family {family!r}: {exc}") from exc
    targets = {k: v for k, v in task.get("targets", {}).items() if v is not None}
    if targets:
        instance = instance.with_changes(**targets)
    return instance


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------


#: Solver parameters that name a file a task writes (confined to the run's folder).
OUTPUT_PARAMS = ("write_lp",)


def confine_outputs(params: Mapping[str, Any]) -> None:
    """Every output file of a task's parameters resolves inside the run's folder.

    Checked again just before the task runs (the sweep loader checked at
    load): a symbolic link created since (``out`` → ``/elsewhere``) must not
    carry a write out of the folder the run started in.

    Raises
    ------
    SweepError
        Naming the parameter and where the path leads.
    """
    from deplbench.files import confined

    for key in OUTPUT_PARAMS:
        value = params.get(key)
        if isinstance(value, str):
            confined(os.getcwd(), value, f"params.{key}", SweepError)


def _solve(instance, task: Mapping[str, Any]) -> dict:
    """Run the task's algorithm and return its result as a dict."""
    name, params = task["algorithm"], dict(task["params"])
    confine_outputs(params)
    plugin = plugin_table("ALGORITHMS")
    if name in plugin:
        result = plugin[name](instance, **params)
    else:
        try:
            from deplbench.solvers.run import solve
        except ModuleNotFoundError as exc:
            raise SweepError(f"algorithm: solver layer not installed (needed for {name!r})") from exc
        result = solve(instance, name, **_evaluation_kwargs(solve, task), **params)
        settings = closed_loop_settings(task)
        if settings is not None:
            out = result.to_dict()
            from deplbench.limits import no_deadline

            with no_deadline():     # the harness's simulation, not the solver's work
                out["closed_loop"] = _closed_loop(instance, result, name, settings)
            return out
    return result if isinstance(result, dict) else result.to_dict()


#: Keys of a sweep's ``[sweep.evaluation] closed_loop = {...}`` table and their defaults
#: (runs, seed, confidence: :mod:`deplbench.formulations.evaluation.settings`).
CLOSED_LOOP_KEYS = {"runs": simulation.RUNS, "seed": simulation.SEED, "confidence": simulation.CONFIDENCE,
                    "sets": None}


def check_closed_loop(settings: Any, where: str = "sweep.evaluation.closed_loop") -> dict:
    """Validate a sweep's closed-loop settings; return them with defaults.

    ``runs`` (2 to :data:`~deplbench.limits.MAX_RUNS`, default 10000),
    ``seed`` (0 to 2**63 − 1, default 0), ``confidence`` (in [0.5, 1 − 1e-12], default 0.95) —
    checked by :func:`~deplbench.formulations.evaluation.settings.check_closed_loop`,
    as every front checks them, with TOML's types kept (3.0 is no integer) —
    and ``sets`` (a list of instance sets whose tasks are simulated; default:
    every task).

    Raises
    ------
    SweepError
        Naming the offending key.
    """
    if not isinstance(settings, Mapping):
        raise SweepError(f"{where}: expected a table, got {type(settings).__name__}")
    unknown = sorted(set(settings) - set(CLOSED_LOOP_KEYS))
    if unknown:
        raise SweepError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(CLOSED_LOOP_KEYS)})")
    out = {**CLOSED_LOOP_KEYS, **dict(settings)}
    out["runs"], out["seed"], out["confidence"] = simulation.check_closed_loop(
        out["runs"], out["seed"], out["confidence"], field=f"{where}.{{}}", error=SweepError, strict=True)
    sets = out["sets"]
    if sets is not None and (not isinstance(sets, list) or not all(isinstance(x, str) and x for x in sets)):
        raise SweepError(f"{where}.sets: expected a list of instance-set names, got {sets!r}")
    return out


def closed_loop_settings(task: Mapping[str, Any]) -> dict | None:
    """The task's closed-loop settings, or None when it is not simulated
    (no ``closed_loop`` in its evaluation, or its instance set not listed)."""
    raw = (task.get("evaluation") or {}).get("closed_loop")
    if raw is None:
        return None
    settings = check_closed_loop(raw)
    group_set = task.get("instance_set") or task.get("group")
    if settings["sets"] is not None and group_set not in settings["sets"]:
        return None
    return settings


def _closed_loop(instance, result, name: str, settings: Mapping[str, Any]) -> dict:
    """Closed-loop simulation of the result (:func:`deplbench.solvers.run.closed_loop`);
    a failure is recorded in the returned dict, never raised."""
    from deplbench.solvers.run import closed_loop

    t0 = time.perf_counter()
    try:
        out = closed_loop(instance, result, name, runs=settings["runs"], seed=settings["seed"],
                          confidence=settings["confidence"])
    except Exception as exc:  # noqa: BLE001 - the solve's record must survive
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["wall_s"] = time.perf_counter() - t0
    return out


def _evaluation_kwargs(solve: Callable, task: Mapping[str, Any]) -> dict:
    """Map the sweep's evaluation settings onto the solve() keyword names."""
    evaluation = task.get("evaluation") or {}
    if not evaluation:
        return {}
    try:
        accepted = set(inspect.signature(solve).parameters)
    except (TypeError, ValueError):
        accepted = set()
    out = {}
    for ours, theirs in (("samples", ("eval_samples", "samples")),
                         ("seed", ("eval_seed", "evaluation_seed"))):
        if ours in evaluation:
            for name in theirs:
                if name in accepted:
                    out[name] = evaluation[ours]
                    break
    return out


#: A task's solver is stopped this many seconds before its hard limit (at
#: least; :func:`solver_stop_s`): time for the solver to notice the stop and
#: return its incumbent and bound, for the out-of-sample judging of the plan
#: and for the record's hand-over, before the executor kills the process.
STOP_MARGIN_S = 1.0
#: ... or this share of the hard limit, when larger (long limits, large instances to judge).
STOP_MARGIN_SHARE = 0.05


def solver_stop_s(time_limit_s: float) -> float:
    """Seconds after a task's start at which its solver is stopped.

    The executor kills a task at its hard limit ``time_limit_s``
    (:mod:`deplbench.benchmarks.executors`), and a killed task keeps
    nothing. So the solver runs under an outer wall-clock stop before it
    (:func:`deplbench.limits.deadline`, the one clock every solver reads;
    its own ``time_limit`` still applies when it ends first): at the stop
    it returns status ``time_limit`` with its incumbent and bound. The
    margin is :data:`STOP_MARGIN_S` or :data:`STOP_MARGIN_SHARE` of the
    limit, whichever is larger, and never more than half the limit.

    >>> solver_stop_s(3), solver_stop_s(600), solver_stop_s(1)
    (2.0, 570.0, 0.5)
    """
    t = float(time_limit_s)
    return max(0.5 * t, t - max(STOP_MARGIN_S, STOP_MARGIN_SHARE * t))


def _stop_note(record: dict, stop: float | None, limit: Any) -> None:
    """Say in a ``time_limit`` record that the task's outer stop, not the
    solver's own limit, ended the solve (``diagnostics["task_stop_s"]``)."""
    if stop is None or record.get("status") != "time_limit":
        return
    try:
        clock = solver_clock(record["algorithm"])
    except DeplbenchError:
        clock = None
    own = (record.get("params") or {}).get(clock or "time_limit")
    if isinstance(own, (int, float)) and own <= stop:
        return                      # the solver's own limit came first
    record["diagnostics"] = {**(record.get("diagnostics") or {}), "task_stop_s": stop}
    note = (f"stopped at {stop:g} s by the task's hard limit of {float(limit):g} s (sweep time_limit_s)"
            + (f", before the solver's own {clock}" if clock else ""))
    record["message"] = f"{record.get('message') or 'time limit reached'}; {note}"


def run_task(task: Mapping[str, Any]) -> dict:
    """Execute one task; never raises.

    Parameters
    ----------
    task : mapping
        A :class:`~deplbench.benchmarks.sweep_expand.Task` dict.

    Returns
    -------
    dict
        A record for :meth:`deplbench.benchmarks.store.ResultsStore.add`.
        On an exception: ``status = "error"``, ``error`` = the exception and
        its traceback.

    Notes
    -----
    The instance build and the solve run under the task's outer stop
    (:func:`solver_stop_s` of ``time_limit_s``), a margin before the
    executor's hard kill: a solver that reaches it returns status
    ``time_limit`` with what it has (the message says the task's limit
    stopped it), and ``TimeLimitReached`` raised by a plugin is recorded
    as ``time_limit`` too. The judging of the plan runs outside the stop.
    """
    started = now_iso()
    t0 = time.perf_counter()
    record = base_record(task, started_at=started)
    instance = None
    limit = task.get("time_limit_s")
    stop = solver_stop_s(limit) if isinstance(limit, (int, float)) and limit > 0 else None
    try:
        # the outer stop (solver_stop_s) counts from here, as the kill counts from the start
        with limits.deadline(stop):
            instance = build_instance(task)
            record.update(_record.instance_columns(instance))
            result = _solve(instance, task)
        fill_from_result(record, result)
        _stop_note(record, stop, limit)
    except limits.TimeLimitReached as exc:      # a plugin's check_time(): an answer, no plan
        record["status"] = "time_limit"
        record["message"] = str(exc)
        _stop_note(record, stop, limit)
    except Exception as exc:  # noqa: BLE001 - a task must never take the sweep down
        record["status"] = "error"
        user = isinstance(exc, DeplbenchError)
        record["message"] = str(exc) if user else f"{type(exc).__name__}: {exc}"
        record["error"] = (f"{type(exc).__name__}: {exc}" if user
                           else traceback.format_exc(limit=20))
    record["wall_s"] = time.perf_counter() - t0
    if record.get("runtime_s") is None and record.get("error"):
        record["runtime_s"] = record["wall_s"]
    record["finished_at"] = now_iso()
    return record


def instance_id(task: Mapping[str, Any]) -> str:
    """12-hex id of the task's instance recipe, targets left out.

    Every target point and algorithm run on one generated instance (or one
    instance file's content) shares it.
    """
    import hashlib

    from deplbench.jsonio import canonical_json

    recipe = {"family": task["family"], "params": task["instance_params"],
              "seed": task.get("instance_seed")}
    return hashlib.sha256(canonical_json(recipe).encode()).hexdigest()[:12]


def base_record(task: Mapping[str, Any], *, started_at: str | None = None) -> dict:
    """The record fields known before the task runs (identity, algorithm
    metadata, environment); see :class:`~deplbench.benchmarks.record.TaskRecord`."""
    targets = task.get("targets") or {}
    env = environment()
    record = {
        "key": task["key"], "sweep": task["sweep"], "instance_group": task.get("group"),
        "instance_set": task.get("instance_set") or task.get("group"),
        "label": task.get("label"), "family": task["family"],
        "instance_name": None, "instance_params": task["instance_params"],
        "instance_seed": task.get("instance_seed"),
        "instance_path": task.get("instance_path"), "instance_id": instance_id(task),
        "algorithm": task["algorithm"],
        "params": task["params"], "status": None, "message": "",
        "loss_max": targets.get("loss_max"), "omega": targets.get("omega"),
        "error": None, "started_at": started_at or now_iso(), "finished_at": None,
        "env": env, "code_version": task.get("code_version", __version__),
        "git_commit": env.get("git_commit"), "hostname": env.get("hostname"),
    }
    record.update(_record.parameter_columns(task["params"]))
    try:
        record.update(solver_info(task["algorithm"]))
    except DeplbenchError:
        pass  # unknown algorithm: the task itself will say so
    return record


def failure_record(task: Mapping[str, Any], error: str, *, started_at: str,
                   wall_s: float) -> dict:
    """Record for a task that produced no record itself (killed, crashed).

    Used by the executors when the task's process exceeded its hard time
    limit or died; ``runtime_s`` is then the wall time it was given, a lower
    bound on what the solver would have needed.
    """
    if hasattr(task, "to_dict"):
        task = task.to_dict()
    record = base_record(task, started_at=started_at)
    record.update(status="error", message=error.splitlines()[0], error=error,
                  runtime_s=wall_s, wall_s=wall_s, finished_at=now_iso())
    return record


def fill_from_result(record: dict, result: Mapping[str, Any]) -> None:
    """Copy a ``SolveResult.to_dict()`` into the store columns of ``record``."""
    record["result"] = dict(result)
    for k in ("status", "message", "cost", "lower_bound", "gap", "runtime_s"):
        if result.get(k) is not None:
            record[k] = result[k]
    record["message"] = result.get("message") or ""
    record["params"] = result.get("params") or record["params"]
    record.update(_record.parameter_columns(record["params"]))
    plan = result.get("plan")
    record["plan"] = plan
    record["epochs"] = len(plan.get("epochs", [])) if isinstance(plan, Mapping) else None
    record["diagnostics"] = dict(result.get("diagnostics") or {})
    variants = result.get("variants")
    if variants:
        record["diagnostics"].setdefault("variants", variants)
    evaluation = dict(result.get("evaluation") or {})
    record["evaluation"] = evaluation or None
    record.update(_record.evaluation_columns(evaluation))
    if result.get("closed_loop") is not None:
        record["closed_loop"] = result["closed_loop"]
        record.update(_record.closed_loop_columns(result["closed_loop"]))
    # A result may carry the quantile without a full evaluation (plugins).
    if record.get("quantile_oos") is None and result.get("quantile_oos") is not None:
        record["quantile_oos"] = result["quantile_oos"]
        ci = result.get("quantile_ci")
        if isinstance(ci, (list, tuple)) and len(ci) == 2:
            record["quantile_ci_low"], record["quantile_ci_high"] = ci
        record["verdict"] = result.get("verdict")


def now_iso() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------


def environment() -> dict:
    """Where a result was computed: versions, git commit, CPU, threads, pid.

    The machine/code part is cached per process (:func:`static_environment`;
    the git call is its only cost, and the forkserver computes it once for
    every task it forks); threads, affinity and pid are read each call.
    """
    return {
        **static_environment(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "pid": os.getpid(),
    }


@functools.lru_cache(maxsize=1)
def static_environment() -> dict:
    """Package versions, git commit, platform, CPU and host (cached)."""
    from importlib import metadata

    versions = {"deplbench": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "versions": versions,
        "git_commit": _git_commit(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
    }


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform says, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# --------------------------------------------------------------------------
# one task per process (used by the Dask executor)
# --------------------------------------------------------------------------


def set_parent_death_signal() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphans).

    A no-op elsewhere. Used by every task process and by the local
    executor's forkserver, so that killing the runner (even ``kill -9``)
    kills the solvers it started.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - exotic libc
        pass


def main(argv: list[str] | None = None) -> int:
    """``python -m deplbench.benchmarks.tasks TASK.json OUT.json``.

    The Dask executor's way to give a task a process of its own; the process
    dies with the Dask worker that started it.
    """
    argv = sys.argv[1:] if argv is None else argv
    set_parent_death_signal()
    # The runner owns Ctrl-C (see executors._local_child for why).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if len(argv) != 2:
        print("usage: python -m deplbench.benchmarks.tasks TASK.json OUT.json", file=sys.stderr)
        return 2
    task = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    record = run_task(task)
    out = Path(argv[1])
    tmp = out.with_suffix(out.suffix + ".tmp")
    # Written then renamed: a reader never sees half a record.
    tmp.write_text(json.dumps(record, default=json_default), encoding="utf-8")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
