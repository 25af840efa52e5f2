"""Tasks and executors of the certified bracket (:mod:`deplbench.solvers.certify.certified`).

One job: the units of work that :func:`~deplbench.solvers.certify.certified.certify`
hands to an executor — one SAA solve by the exact ``milp`` (:func:`saa_task`),
one candidate plan judged on fresh draws (:func:`validation_task`) — and the
executors themselves (:func:`process_map` for a local pool, :func:`dask_map`
for a Dask cluster). Every task is a plain dict (the instance as JSON-ready
data), so it pickles to any worker; every result is JSON-ready.

References
----------
J. Luedtke and S. Ahmed, SIAM J. Optim. 19 (2008), Sec. 4 (each replication
is one SAA solve); docs/certify.md.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.binomial import CERTIFIED_FEASIBLE
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.plan import Plan, parse_plan
from deplbench.solvers.run import solve

Mapper = Callable[[Callable[[dict], dict], list], Iterable[dict]]


def sequential_map(fn, tasks):
    return [fn(t) for t in tasks]


#: Seconds a local pool is assumed to take before its first task can start: the
#: forkserver's start and its import of this module (the solver stack), which its
#: workers then inherit (measured on a quiet and a loaded machine: docs/certify.md).
#: A later pool of the same process forks from the running server at a fraction of
#: that, but the rule does not count on it.
POOL_START_S = 2.0


def seconds_to_stop(tasks: list) -> float:
    """Seconds until the first stop the tasks obey: the deadline in force
    (:func:`deplbench.limits.time_left`) or the earliest ``ends_at`` a task carries (a
    ``time.time()`` instant, :func:`stop_instant`); inf without either, negative once passed."""
    left = limits.time_left()
    ends = [t["ends_at"] for t in tasks if isinstance(t, dict) and t.get("ends_at") is not None]
    return min(left, min(ends) - time.time()) if ends else left


def process_map(workers: int, start_s: float = POOL_START_S) -> Mapper:
    """A ``map`` running tasks on a local pool of ``workers`` processes.

    The pool is started only when its work can start before the tasks' stop
    (:func:`seconds_to_stop` above ``start_s``, default :data:`POOL_START_S`); otherwise,
    as with one worker or one task, the tasks run in this process, each checking its
    stop before it starts (:func:`saa_task`, :func:`validation_task`): a pool whose
    start-up alone would pass the stop would only delay the result, never add work.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SolverError(f"workers: must be an integer >= 1, got {workers!r}")

    def run(fn, tasks):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        tasks = list(tasks)
        if workers == 1 or len(tasks) <= 1 or not seconds_to_stop(tasks) > start_s:
            return sequential_map(fn, tasks)
        ctx = mp.get_context("forkserver")
        # the server imports the solver stack once; every worker (and a later pool's) forks warm.
        # A process-wide setting of multiprocessing's forkserver, set on purpose: it decides only
        # what the server imports before it forks (start-up time), never what a task computes.
        ctx.set_forkserver_preload([__name__])
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
            return list(pool.map(fn, tasks))

    return run


def dask_map(client) -> Mapper:
    """A ``map`` submitting tasks to a ``dask.distributed.Client``."""

    def run(fn, tasks):
        futures = client.map(fn, list(tasks), pure=False)
        return client.gather(futures)

    return run


def parse_risk_grid(text: str, field: str = "--risk-grid") -> tuple[float, ...]:
    """``"0.9,0.8"`` → (0.9, 0.8), the command line's ``--risk-grid``.

    Raises
    ------
    SolverError
        Naming ``field``: an empty grid (``""``, ``",,,"``: the tightened
        candidates would silently be dropped), an empty item (``"0.9,,0.8"``)
        or an item that is not a number. The range (0, 1] is checked with
        the other settings (:data:`~.settings.SETTINGS_PARAMETERS`).
    """
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise SolverError(f"{field}: expected one or more comma-separated factors in (0, 1], got {text!r} "
                          "(no tightened level)")
    if not all(items):
        raise SolverError(f"{field}: item {items.index('') + 1} of {text!r} is empty; expected comma-separated "
                          "factors in (0, 1]")
    try:
        return tuple(float(t) for t in items)
    except ValueError:
        raise SolverError(f"{field}: expected comma-separated numbers in (0, 1], got {text!r}") from None


#: Seconds of the MILP's incumbent heuristic per SAA solve. Each replication
#: is one short solve of the same instance, and the exact search finds the
#: optimum from a rough incumbent about as fast: the incumbent only prunes,
#: so the MILP's default budget (a share of a short solve) would mostly buy
#: nothing (docs/certify.md gives the brackets measured with this budget).
SAA_HEURISTIC_TIME = 0.5


def saa_task(task: dict) -> dict:
    """One SAA solve by the registered exact ``milp`` (runs in any worker).

    ``task`` holds ``instance`` (JSON-ready data), ``omega`` (the SAA's
    quantile level 1 − γ), ``scenarios``, ``seed``, ``time_limit``, ``gap``
    and ``role``/``factor`` labels; returns a JSON-ready dict.
    """
    from deplbench.instances.model import parse_instance

    time_limit = task["time_limit"]
    if task.get("ends_at") is not None:     # the bracket's total_time_limit or outer stop, a wall-clock instant
        left = task["ends_at"] - time.time()
        time_limit = left if time_limit is None else min(time_limit, left)
        if time_limit <= 0:
            return {"role": task["role"], "factor": task.get("factor"), "seed": task["seed"],
                    "omega": task["omega"], "scenarios": task["scenarios"], "status": "time_limit",
                    "message": f"{task.get('stop', 'total_time_limit')} reached before this SAA solve", "cost": None,
                    "lower_bound": None, "plan": None, "runtime_s": 0.0, "cpu_s": 0.0}
    inst = parse_instance(task["instance"])
    if task["omega"] != inst.omega:
        inst = inst.with_changes(omega=task["omega"])
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(inst, "milp", evaluate=False, scenarios=task["scenarios"], seed=task["seed"],
                time_limit=time_limit, gap=task["gap"], heuristic_time=SAA_HEURISTIC_TIME)
    return {
        "role": task["role"], "factor": task.get("factor"), "seed": task["seed"],
        "omega": task["omega"], "scenarios": task["scenarios"], "status": res.status,
        "message": res.message, "cost": res.cost, "lower_bound": res.lower_bound,
        "plan": res.plan.to_dict() if res.plan is not None else None,
        "runtime_s": time.perf_counter() - t0,
        # CPU seconds of this process (HiGHS runs single-threaded here): a
        # load-independent measure of the work, next to the wall time.
        "cpu_s": time.process_time() - c0,
    }


def bound_value(rep: dict) -> tuple[float, str]:
    """A valid lower bound on one replication's SAA optimum, and its kind.

    An SAA proven infeasible has optimum +∞; the MILP's proven bound is used
    when there is one; otherwise (error, stop without a bound) 0 is the only
    safe value, since every cost (2) is ≥ 0.
    """
    if rep["status"] == "infeasible":
        return math.inf, "infeasible"
    if rep["lower_bound"] is not None and math.isfinite(rep["lower_bound"]):
        bound = rep["lower_bound"]
        if rep["cost"] is not None:
            bound = min(bound, rep["cost"])
        return max(0.0, float(bound)), "milp bound"
    return 0.0, "trivial (no bound proven)"


def validation_task(task: dict) -> dict:
    """Judge one candidate plan on the N′ validation draws (runs in any worker).

    Every task uses the same seed, hence the same draws, so the tests may run
    on different workers; Bonferroni needs no independence between them.
    """
    from deplbench.instances.model import parse_instance

    inst = parse_instance(task["instance"])
    t0, c0 = time.perf_counter(), time.process_time()
    late = task.get("ends_at") is not None and time.time() >= task["ends_at"]
    # Past the bracket's total_time_limit or outer stop: cost and constraints only (100 draws), never a certificate.
    ev = evaluate_plan(inst, parse_plan(task["plan"]), samples=100 if late else task["validation"],
                       seed=task["seed"], confidence=task["confidence"], trajectory=False)
    if late:
        return {"cost": ev.cost, "constraints_ok": ev.constraints_ok, "violation_count": ev.violation_count,
                "draws": ev.samples, "violation_ub": ev.violation_ub, "validation_seed": task["seed"],
                "test_confidence": task["confidence"], "certified": False,
                "skipped": f"{task.get('stop', 'total_time_limit')} reached before this test (not certified)",
                "runtime_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    return {"cost": ev.cost, "constraints_ok": ev.constraints_ok, "violation_count": ev.violation_count,
            "draws": ev.samples, "violation_ub": ev.violation_ub, "validation_seed": task["seed"],
            "test_confidence": task["confidence"],
            "certified": ev.certified_verdict == CERTIFIED_FEASIBLE and ev.constraints_ok,
            "runtime_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def validate_candidates(mapper, data, candidates, validation, seed, confidence_each,
                        ends_at: float | None = None, stop: str = "total_time_limit") -> list[dict]:
    """Judge every distinct candidate on the same N′ validation draws (a test
    starting after ``ends_at``, a ``time.time()`` instant, is skipped; ``stop``
    names what set it, for the test's ``skipped`` line)."""
    tasks = [{"instance": data, "plan": c["plan"].to_dict(), "validation": validation, "seed": seed,
              "confidence": confidence_each, "ends_at": ends_at, "stop": stop} for c in candidates]
    results = list(mapper(validation_task, tasks)) if tasks else []
    return [{**{k: v for k, v in c.items() if k != "plan"}, "plan": c["plan"].to_dict(), **r}
            for c, r in zip(candidates, results)]


def stop_instant(share: float | None, total_time_limit: float | None) -> tuple[float | None, str]:
    """The ``time.time()`` instant after which no SAA solve or test starts, and what sets it.

    ``share`` is the share of ``total_time_limit`` a phase may use (an
    instant, or None); the deadline in force (:func:`deplbench.limits.time_left`,
    read on its clock: an outer stop around the solve, a sweep task's)
    replaces it when it comes first. The solve's own deadline,
    ``total_time_limit`` itself, is left to the shares. An instant on the
    wall clock, because the tasks may run in other processes.
    """
    left = limits.time_left()
    # the solve's own deadline is total_time_limit itself, which the shares already end before
    if not math.isinf(left) and limits.time_limit_s() != total_time_limit:
        at = time.time() + left
        if share is None or at < share:
            return at, f"time limit {limits.time_limit_s():g} s"
    return share, "total_time_limit"


def not_started(results: list[dict], stop: str) -> int:
    """SAA solves skipped because ``stop`` had passed (:func:`saa_task`)."""
    return sum(r.get("message") == f"{stop} reached before this SAA solve" for r in results)


def skipped_tests(judged: list[dict], stop: str) -> int:
    """Validation tests skipped because ``stop`` had passed (:func:`validation_task`)."""
    return sum(str(c.get("skipped", "")).startswith(f"{stop} reached") for c in judged)


def add_candidate(pool: dict, plan: Plan, label: str, role: str, omega) -> str | None:
    """Identical plans are tested once (fewer tests, milder Bonferroni).
    Returns the pool key of a new plan, None for one already there."""
    key = json.dumps(plan.to_dict(), sort_keys=True)
    if key in pool:
        pool[key]["sources"].append(label)
        return None
    pool[key] = {"plan": plan, "source": label, "sources": [label], "role": role, "saa_omega": omega}
    return key


__all__ = ["Mapper", "POOL_START_S", "process_map", "seconds_to_stop", "dask_map", "parse_risk_grid", "saa_task",
           "validation_task", "stop_instant", "not_started", "skipped_tests",
           "SAA_HEURISTIC_TIME", "add_candidate", "bound_value", "sequential_map", "validate_candidates"]
