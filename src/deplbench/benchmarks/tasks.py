"""The task function: build the instance, run the algorithm, return a record.

:func:`run_task` is what every executor runs, in a process of its own. It
never raises: any exception becomes a record with ``status = "error"`` and
the traceback in ``error``, so one bad task cannot stop a sweep. The record's
keys are the store columns (:data:`deplbench.benchmarks.store.COLUMNS`) plus
``label``, ``group``, ``wall_s`` (task wall time including instance
generation) and ``result`` (the solver's full ``SolveResult.to_dict()``).

Nothing here knows any particular solver: an algorithm is looked up by name,
in this order, in

1. test/extension plugins named by the environment variable
   ``DEPLBENCH_TASK_PLUGINS`` (see :func:`load_plugins`);
2. the oracles of this module (:data:`ORACLES`: ``knapsack-dp``, the exact
   covering-knapsack DP of SPEC §3, whose row gives reports the ground truth
   of knapsack-derived instances);
3. :mod:`deplbench.solvers.registry`.

Every task on a knapsack-derived instance (one whose provenance carries the
knapsack items) also gets ``diagnostics["dp_optimum"]``: the DP optimum, so a
report can compute competitive ratios of any algorithm row directly.

Run as a module (``python -m deplbench.benchmarks.tasks TASK.json OUT.json``)
it executes one task and writes the record; the Dask executor uses that to
give each task a process it can kill.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import math
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

from deplbench import __version__
from deplbench.benchmarks.store import json_default
from deplbench.errors import DeplbenchError, InstanceError, SweepError

#: Environment variable naming plugin modules (module names or ``.py`` paths,
#: separated by ``os.pathsep``). A plugin may define ``ALGORITHMS`` —
#: ``{name: fn(instance, **params) -> SolveResult | dict}`` — with optional
#: ``ALGORITHM_PARAMETERS = {name: iterable of names}``, and ``FAMILIES`` —
#: ``{name: fn(seed=int, **params) -> Instance}``. Used by the tests to add
#: algorithms that raise or hang without touching the public registry.
PLUGIN_ENV = "DEPLBENCH_TASK_PLUGINS"

#: Thread-count variables recorded in every row's environment (BLAS/OpenMP
#: threads change timings, so they belong next to the runtime).
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

_PACKAGES = ("numpy", "scipy", "pandas", "pydantic", "networkx", "pyomo", "highspy",
             "dask", "distributed")


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


def _plugin_table(attr: str) -> dict:
    table: dict = {}
    for module in load_plugins():
        table.update(getattr(module, attr, {}) or {})
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


def _generators():
    return _optional_module("instances", "generators")


def available_algorithms() -> set[str]:
    """Every algorithm name a task can run (plugins, oracles, registry)."""
    names = set(_plugin_table("ALGORITHMS")) | set(ORACLES)
    registry = _registry()
    if registry is not None:
        names |= set(registry.available())
    return names


def algorithm_parameters(name: str) -> set[str] | None:
    """Parameter names ``name`` accepts, or None if it does not declare them."""
    plugin = _plugin_table("ALGORITHM_PARAMETERS")
    if name in plugin:
        return set(plugin[name])
    if name in _plugin_table("ALGORITHMS"):
        return None
    if name in ORACLES:
        return set()
    registry = _registry()
    if registry is None:
        return None
    solver = registry.get_solver(name)
    params = getattr(solver, "parameters", None)
    return set(params) if params is not None else None


def available_families() -> set[str]:
    """Every instance family a sweep can name (plugins and generators)."""
    names = set(_plugin_table("FAMILIES"))
    gen = _generators()
    if gen is not None:
        names |= set(_generator_families(gen))
    return names


def family_parameters(family: str) -> set[str] | None:
    """Generator parameter names of ``family``, or None if not introspectable."""
    plugin = _plugin_table("FAMILIES")
    fn = plugin.get(family)
    if fn is None:
        gen = _generators()
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


def _generator_families(gen) -> dict[str, Callable]:
    """The family → generator-function table of ``instances.generators``."""
    for attr in ("FAMILIES", "GENERATORS", "REGISTRY"):
        table = getattr(gen, attr, None)
        if isinstance(table, Mapping):
            return dict(table)
    if hasattr(gen, "available_families"):
        return {name: None for name in gen.available_families()}
    return {}


# --------------------------------------------------------------------------
# building the instance
# --------------------------------------------------------------------------


def build_instance(task: Mapping[str, Any]):
    """The task's instance, with its targets applied.

    Parameters
    ----------
    task : mapping
        A :class:`~deplbench.benchmarks.sweep.Task` dict.

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

        instance = load_instance(params["path"])
    else:
        plugin = _plugin_table("FAMILIES")
        if family in plugin:
            instance = plugin[family](seed=task["instance_seed"], **params)
        else:
            gen = _generators()
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
# oracles
# --------------------------------------------------------------------------


def _dp_optimum(instance) -> float | None:
    """DP optimum of a knapsack-derived instance, None for any other instance."""
    if getattr(instance.provenance, "items", None) is None:
        return None
    from deplbench.formulations.knapsack import knapsack_optimum_from_instance

    try:
        return float(knapsack_optimum_from_instance(instance))
    except InstanceError:
        return None


def knapsack_dp_oracle(instance, **params) -> dict:
    """Oracle ``knapsack-dp``: the exact covering-knapsack optimum (SPEC §3).

    Returns a result dict with ``cost`` = (min Σw)²/Tmax and status
    ``optimal`` (``infeasible`` when no ≤ K̄-epoch plan reaches the target),
    no plan, and the DP runtime. Shares no code with the MILP or heuristics.
    """
    t0 = time.perf_counter()
    value = _dp_optimum(instance)
    runtime = time.perf_counter() - t0
    if value is None:
        return {"algorithm": "knapsack-dp", "status": "error", "runtime_s": runtime,
                "message": "knapsack-dp: instance is not knapsack-derived "
                           "(provenance.items missing)", "params": dict(params)}
    feasible = math.isfinite(value)
    return {"algorithm": "knapsack-dp", "status": "optimal" if feasible else "infeasible",
            "message": "covering-knapsack DP optimum (SPEC §3)",
            "cost": value if feasible else None, "lower_bound": value if feasible else None,
            "gap": 0.0 if feasible else None, "runtime_s": runtime, "params": dict(params),
            "diagnostics": {"dp_optimum": value}}


#: Algorithms the benchmark layer itself provides (exact oracles).
ORACLES: dict[str, Callable[..., dict]] = {"knapsack-dp": knapsack_dp_oracle}


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------


def _solve(instance, task: Mapping[str, Any]) -> dict:
    """Run the task's algorithm and return its result as a dict."""
    name, params = task["algorithm"], dict(task["params"])
    plugin = _plugin_table("ALGORITHMS")
    if name in plugin:
        result = plugin[name](instance, **params)
    elif name in ORACLES:
        result = ORACLES[name](instance, **params)
    else:
        try:
            from deplbench.solvers.base import solve
        except ModuleNotFoundError as exc:
            raise SweepError(f"algorithm: solver layer not installed (needed for {name!r})") from exc
        result = solve(instance, name, **_evaluation_kwargs(solve, task), **params)
    return result if isinstance(result, dict) else result.to_dict()


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


def run_task(task: Mapping[str, Any]) -> dict:
    """Execute one task; never raises.

    Parameters
    ----------
    task : mapping
        A :class:`~deplbench.benchmarks.sweep.Task` dict.

    Returns
    -------
    dict
        A record for :meth:`deplbench.benchmarks.store.ResultsStore.add`.
        On an exception: ``status = "error"``, ``error`` = the exception and
        its traceback.
    """
    started = now_iso()
    t0 = time.perf_counter()
    record = base_record(task, started_at=started)
    instance = None
    try:
        instance = build_instance(task)
        record["instance_name"] = instance.name
        record["loss_max"] = float(instance.loss_max)
        record["omega"] = float(instance.omega)
        result = _solve(instance, task)
        fill_from_result(record, result)
        # the knapsack-dp oracle has just computed it: do not run the DP twice
        dp = record["diagnostics"].get("dp_optimum") if task["algorithm"] in ORACLES else None
        if dp is None:
            dp = _dp_optimum(instance)
        if dp is not None:
            record["diagnostics"] = {**record["diagnostics"], "dp_optimum": dp}
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


def base_record(task: Mapping[str, Any], *, started_at: str | None = None) -> dict:
    """The record fields known before the task runs (identity and environment)."""
    targets = task.get("targets") or {}
    return {
        "key": task["key"], "sweep": task["sweep"], "group": task.get("group"),
        "label": task.get("label"), "family": task["family"],
        "instance_name": None, "instance_params": task["instance_params"],
        "instance_seed": task.get("instance_seed"), "algorithm": task["algorithm"],
        "params": task["params"], "status": None, "message": "",
        "loss_max": targets.get("loss_max"), "omega": targets.get("omega"),
        "error": None, "started_at": started_at or now_iso(), "finished_at": None,
        "env": environment(), "code_version": task.get("code_version", __version__),
    }


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
    plan = result.get("plan")
    record["plan"] = plan
    record["epochs"] = len(plan.get("epochs", [])) if isinstance(plan, Mapping) else None
    record["diagnostics"] = dict(result.get("diagnostics") or {})
    variants = result.get("variants")
    if variants:
        record["diagnostics"].setdefault("variants", variants)
    evaluation = dict(result.get("evaluation") or {})
    record["evaluation"] = evaluation or None
    q = result.get("quantile_oos", evaluation.get("quantile_oos", evaluation.get("quantile")))
    ci = result.get("quantile_ci", evaluation.get("quantile_ci"))
    record["quantile_oos"] = q
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        record["quantile_ci_low"], record["quantile_ci_high"] = ci
    record["verdict"] = evaluation.get("verdict")


def now_iso() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def environment() -> dict:
    """Where a result was computed: versions, git commit, CPU, threads.

    Cached per process (the git call is the only cost).
    """
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
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "hostname": platform.node(),
        "pid": os.getpid(),
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


def _cpu_model() -> str:
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
