"""Run a sweep: expand, skip what the store already has, execute, store.

Within one runner, the runner process is the only one that writes the
results store; executors send it one record per finished task and it commits
each immediately (:meth:`~deplbench.benchmarks.store.ResultsStore.add`).
Hence resuming is just running again: tasks with a successful row are
skipped, tasks whose attempts all failed are skipped too unless
``retry_failed``, and everything else runs.

Several runners may share one store: each task is claimed (a lease, see
:mod:`deplbench.benchmarks.leases`) just before it starts, so the runners
split the sweep; a runner that finds no more tasks to claim waits for the
tasks other runners hold, and takes over those whose owner died.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from deplbench.benchmarks import leases
from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.store import ResultsStore, is_failure
from deplbench.benchmarks.sweep_expand import Sweep, Task, grid_points
from deplbench.errors import SweepError

#: Seconds between looks at tasks other runners hold.
POLL_S = 0.25
#: How long, in all, a runner waits for a results store another process keeps locked (an
#: open transaction in a database browser) before it stops; each try already waits the
#: connection's busy timeout (30 s). A runner's own transactions write one row each.
STORE_WAIT_S = 300.0
#: Pause between two tries.
STORE_RETRY_S = 1.0


@dataclass
class RunSummary:
    """What one :func:`run_sweep` call did.

    Attributes
    ----------
    total : int
        Tasks in the sweep.
    already_done : int
        Skipped: a successful row exists.
    skipped_failed : int
        Skipped: only failed attempts exist and ``retry_failed`` was off.
    ran : int
        Tasks executed in this call.
    ok, failed : int
        Outcomes of the executed tasks.
    duplicates : int
        Executed but not stored because a successful row appeared meanwhile
        (another runner on the same store, without leases).
    elsewhere : int
        Finished by another runner on the same store during this call.
    elapsed_s : float
        Wall time of the call.
    failures : list of (label, key, first error line)
    solvers : dict
        MILP solver actually used (the result's ``diagnostics["solver"]``)
        → tasks run with it in this call.
    """

    total: int = 0
    already_done: int = 0
    skipped_failed: int = 0
    ran: int = 0
    ok: int = 0
    failed: int = 0
    duplicates: int = 0
    elsewhere: int = 0
    #: of ``already_done``, rows that stopped at a time limit under a smaller time_limit_s
    shorter_limit: int = 0
    elapsed_s: float = 0.0
    failures: list = field(default_factory=list)
    solvers: dict = field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        """1 when a task run by this call failed, else 0 (the CLI's status)."""
        return 1 if self.failed else 0

    def text(self, name: str) -> str:
        """A short human summary."""
        lines = [f"sweep {name}: {self.total} tasks; {self.already_done} already done, "
                 f"{self.skipped_failed} failed before (use --retry-failed), "
                 f"{self.ran} run: {self.ok} ok, {self.failed} failed"
                 + (f", {self.duplicates} duplicate(s) not stored" if self.duplicates else "")
                 + (f", {self.elsewhere} done by another runner" if self.elsewhere else "")
                 + (", solvers used: " + ", ".join(f"{k} ×{v}" for k, v in sorted(self.solvers.items()))
                    if self.solvers else "")
                 + f" ({self.elapsed_s:.1f} s)"]
        if self.shorter_limit:
            lines.append(shorter_limit_note(self.shorter_limit))
        for label, key, err in self.failures[:10]:
            lines.append(f"  failed {label} [{key}]: {err}")
        if len(self.failures) > 10:
            lines.append(f"  ... and {len(self.failures) - 10} more")
        return "\n".join(lines)


def stopped_by_a_shorter_limit(tasks: list[Task], store: ResultsStore | None) -> int:
    """Tasks counted as done whose stored row stopped at a time limit under a smaller
    hard limit ``time_limit_s`` than the task's now.

    The task key leaves the limit out (two sweeps share a row), so a sweep
    re-run with a larger ``time_limit_s`` would reuse those rows as they
    are and say only "already done": the count lets the summary say so.
    """
    if store is None:
        return 0
    limited = store.time_limited_keys()
    return sum(1 for t in tasks if t.key in limited and limited[t.key] < t.time_limit_s)


def shorter_limit_note(n: int) -> str:
    """The line ``run`` and ``run --dry-run`` print about :func:`stopped_by_a_shorter_limit`."""
    return (f"note: {n} task(s) already done stopped at a time limit under a smaller time_limit_s than "
            "this sweep's: their rows are reused as they are, not run again (run into a new store "
            "to give them the longer limit)")


def select_tasks(tasks: list[Task], store: ResultsStore | None, *,
                 retry_failed: bool) -> tuple[list[Task], int, int]:
    """Tasks still to run, and how many were skipped as done / as failed.

    ``store`` None stands for an empty store (a dry run on a new database).

    Returns
    -------
    (todo, already_done, skipped_failed)
    """
    done, failed = (store.finished_keys(), store.failed_keys()) if store else (set(), set())
    todo, n_done, n_failed = [], 0, 0
    for t in tasks:
        if t.key in done:
            n_done += 1
        elif t.key in failed and not retry_failed:
            n_failed += 1
        else:
            todo.append(t)
    return todo, n_done, n_failed


def run_sweep(sweep: Sweep, store: ResultsStore, executor, *, retry_failed: bool = False,
              progress: bool = True, stream: TextIO | None = None,
              owner: leases.Owner | None = None) -> RunSummary:
    """Execute the tasks of ``sweep`` that ``store`` does not have yet.

    Parameters
    ----------
    sweep : Sweep
        A validated sweep (:func:`deplbench.benchmarks.sweep.load_sweep`).
    store : ResultsStore
        Opened for writing; each finished task is committed at once.
    executor : LocalExecutor or DaskExecutor
        Anything with ``run(tasks) -> iterator of (task, record)`` and
        ``describe()``; it should pull ``tasks`` lazily (each task is
        claimed when pulled).
    retry_failed : bool
        Re-run tasks whose previous attempts all failed.
    progress : bool
        Show a tqdm bar (counts, failures, ETA) on ``stream``.
    stream : file, optional
        Where the bar goes (default stderr).
    owner : leases.Owner, optional
        This runner's lease identity (default: a new one for this process).

    Returns
    -------
    RunSummary
        ``summary.failed`` counts the failed tasks; ``summary.exit_status``
        is 1 when there were any.

    Notes
    -----
    An interrupt (Ctrl-C) propagates after the executor has killed its
    running tasks; rows committed before it are kept and this runner's
    leases are released. A task that raises or times out is stored as a
    failed row and the sweep continues.
    """
    t0 = time.monotonic()
    owner = owner or leases.Owner()
    tasks = sweep.tasks()
    todo, n_done, n_failed = select_tasks(tasks, store, retry_failed=retry_failed)
    summary = RunSummary(total=len(tasks), already_done=n_done, skipped_failed=n_failed,
                         shorter_limit=stopped_by_a_shorter_limit(tasks, store))
    since = store.last_attempt()
    _waiting(store, lambda: store.add_run(sweep=sweep.name, source=sweep.source, sweep_text=sweep.text,
                                          started_at=task_mod.now_iso(), tasks=len(tasks), todo=len(todo),
                                          executor=executor.describe(), env=task_mod.environment()))
    if not todo:
        summary.elapsed_s = time.monotonic() - t0
        return summary

    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc=sweep.name, unit="task", disable=not progress,
               file=stream or sys.stderr, dynamic_ncols=True, smoothing=0.1)
    held: list[Task] = []  # leased by another runner when we looked

    def claimed(candidates):
        for task in candidates:
            if _waiting(store, lambda key=task.key: store.claim(key, owner, since_attempt=since)):
                yield task
            else:
                held.append(task)

    try:
        with leases.Heartbeat(store.path, owner):
            # First pass: claim each task as the executor pulls it.
            _execute(executor, claimed(todo), store, owner, summary, bar)
            # Then the tasks other runners held: wait for them, and take over
            # those whose owner's lease lapses (it died).
            pending, held[:] = _still_held(store, held, since, summary, bar), []
            while pending:
                time.sleep(POLL_S)
                ready = list(claimed(pending))
                if ready:
                    _execute(executor, iter(ready), store, owner, summary, bar)
                pending, held[:] = _still_held(store, held, since, summary, bar), []
    finally:
        bar.close()
        try:
            store.release_all(owner)
        except sqlite3.OperationalError:
            pass        # still locked by another process: the leases expire on their own (leases.py)
    summary.elapsed_s = time.monotonic() - t0
    return summary


class StoreLocked(SweepError):
    """The results store stayed locked by another process past :data:`STORE_WAIT_S`."""


def _waiting(store: ResultsStore, call):
    """``call()`` (a write to ``store``), tried again while another process keeps the store locked.

    Raises
    ------
    StoreLocked
        Still locked after :data:`STORE_WAIT_S`: one line naming the store,
        instead of an ``OperationalError`` traceback.
    """
    start = time.monotonic()
    while True:
        try:
            return call()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            waited = time.monotonic() - start
            if waited >= STORE_WAIT_S:
                raise StoreLocked(f"results store {store.path}: locked by another process for {waited:.0f} s "
                                 f"({exc}); close the program holding it and run again") from None
            print(f"waiting: results store {store.path} is locked by another process ({waited:.0f} s)",
                  file=sys.stderr)
            time.sleep(STORE_RETRY_S)


def _store_record(store: ResultsStore, record: dict, task: Task, owner) -> bool:
    """:meth:`ResultsStore.add`, waiting out a lock (:func:`_waiting`); if the store stays
    locked, the finished record is written beside it (``<store>.unstored/<key>.json``, the task
    and the record) before the run stops, so no finished result is lost."""
    try:
        return _waiting(store, lambda: store.add(record, task=task.to_dict(), lease_owner=owner.id))
    except StoreLocked as exc:
        from deplbench.jsonio import dumps, json_default

        folder = Path(f"{store.path}.unstored")
        path = folder / f"{task.key}-{int(time.time())}.json"
        try:
            folder.mkdir(exist_ok=True)
            path.write_text(dumps({"task": task.to_dict(), "record": record}, indent=2,
                                  default=json_default) + "\n", encoding="utf-8")
        except OSError as why:
            raise StoreLocked(f"{exc}; the finished record of {task.label} [{task.key}] could not be saved "
                              f"either ({why})") from None
        raise StoreLocked(f"{exc}; the finished record of {task.label} [{task.key}] is in {path}") from None


def _execute(executor, tasks, store: ResultsStore, owner, summary: RunSummary, bar) -> None:
    """Run ``tasks`` on ``executor``, storing each record as it arrives."""
    results = executor.run(tasks)
    try:
        for task, record in results:
            try:
                stored = _store_record(store, record, task, owner)
            except StoreLocked:
                raise
            except SweepError as exc:
                # A result that does not fit the record schema (a wrong
                # status, a cost that is not a number) is a failed attempt,
                # not a reason to stop the sweep.
                record = task_mod.failure_record(
                    task, f"invalid result: {exc}", started_at=record.get("started_at")
                    or task_mod.now_iso(), wall_s=float(record.get("wall_s") or 0.0))
                stored = _store_record(store, record, task, owner)
            summary.ran += 1
            diag = record.get("diagnostics")
            if isinstance(diag, dict) and isinstance(diag.get("solver"), str):
                summary.solvers[diag["solver"]] = summary.solvers.get(diag["solver"], 0) + 1
            if not stored:
                summary.duplicates += 1
            if is_failure(record):
                summary.failed += 1
                first = (record.get("error") or record.get("message") or "").strip()
                summary.failures.append((task.label, task.key, first.splitlines()[-1][:200]
                                         if first else "status error"))
            else:
                summary.ok += 1
            bar.set_postfix(ok=summary.ok, failed=summary.failed, refresh=False)
            bar.update(1)
    finally:
        # Closing the generator makes the executor kill what still runs
        # (Ctrl-C, or an error while storing).
        results.close()


def _still_held(store: ResultsStore, held: list[Task], since: int, summary: RunSummary,
                bar) -> list[Task]:
    """Of the tasks another runner held, those not finished yet (to retry).

    A task with a row stored after this run started was done elsewhere; the
    others are tried again, and are claimed as soon as their owner's lease
    lapses (owner finished without storing, or died).
    """
    if not held:
        return []
    done = store.settled_keys(since)
    again = []
    for task in held:
        if task.key in done:
            summary.elsewhere += 1
            bar.update(1)
        else:
            again.append(task)
    return again


def limit_warnings(sweep: Sweep) -> list[str]:
    """Warnings for the algorithm entries whose hard task limit is below
    their solver's own time limit.

    The executor kills a task at its ``time_limit_s``; the solver is stopped
    a margin before (:func:`~deplbench.benchmarks.tasks.solver_stop_s`) and
    returns status ``time_limit`` with what it has. A solver whose own limit
    (``time_limit``, or its clock parameter) is above the hard limit — the
    exact MILP's default is 300 s, a sweep's ``time_limit_s`` may be less —
    is then not run as its parameters say: said before the run, on stderr,
    one line per (hard limit, own limit) naming the entries.
    A solver without a limit of its own is not flagged (the sweep's limit is
    then the only one). Plugin algorithms declare no limit and are skipped.

    Returns
    -------
    list of str
        ``"warning: ..."`` lines naming both limits, the stop and the entries.
    """
    from deplbench.benchmarks.lookup import own_time_limit
    from deplbench.errors import DeplbenchError

    later: dict[tuple, list[str]] = {}     # (hard limit, stop, clock, own limit) -> entry labels
    for algo in sweep.algorithms:
        stop = task_mod.solver_stop_s(algo.time_limit_s)
        for params in grid_points(algo.params, algo.grid):
            try:
                own = own_time_limit(algo.name, params)
            except DeplbenchError:
                continue                    # refused at load already; nothing to compare
            if own is not None and own[1] is not None and own[1] > stop:     # the solver is cut at the stop
                labels = later.setdefault((algo.time_limit_s, stop, *own), [])
                if algo.label not in labels:
                    labels.append(algo.label)
    lines = []
    for (limit, stop, clock, seconds), labels in sorted(later.items()):
        names = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
        lines.append(f"warning: the hard task limit time_limit_s = {limit:g} s stops the solver at {stop:g} s, "
                     f"before its own {clock} = {seconds:g} s of {names}: it ends there with status "
                     f"time_limit and what it has (raise time_limit_s or lower {clock} to run it as its "
                     "parameters say)")
    return lines


@dataclass
class DryRun:
    """What :func:`dry_run` found: the counts a real run would start from."""

    name: str
    total: int
    already_done: int
    skipped_failed: int
    todo: int
    instances_checked: int | None
    executor: str
    #: the estimate from stored runs (:func:`estimate_time`), or None
    estimate: dict | None = None
    #: one line per task still to run (:func:`describe_task`), in run order
    todo_lines: tuple[str, ...] = ()
    #: no results store was given: no task counts as done
    no_store: bool = False
    #: of ``already_done``, rows that stopped at a time limit under a smaller time_limit_s
    shorter_limit: int = 0

    def text(self, show: int = 20) -> str:
        """The counts and estimate, then the first ``show`` tasks to run
        (one line each) and how many more there are."""
        text = self._counts()
        if show > 0 and self.todo_lines:
            head = self.todo_lines[:show]
            more = len(self.todo_lines) - len(head)
            text += (f"\ntasks to run (first {len(head)} of {len(self.todo_lines)}):\n"
                     + "\n".join(f"  {line}" for line in head)
                     + (f"\n  … and {more} more" if more else ""))
        return text

    def _counts(self) -> str:
        checked = (f" ({self.instances_checked} instance(s) built and validated)"
                   if self.instances_checked is not None else "")
        done = ("none counted as done (no results store given)" if self.no_store
                else f"{self.already_done} already done")
        line = (f"sweep {self.name}: {self.total} tasks, {done}, "
                f"{self.skipped_failed} failed before, {self.todo} to run on "
                f"{self.executor or 'the default executor'}{checked}")
        if self.shorter_limit:
            line += "\n" + shorter_limit_note(self.shorter_limit)
        e = self.estimate
        if not self.todo or e is None:      # nothing to run, or no store to estimate from
            return line
        if not e["matched"]:
            return line + "\nestimated time: no stored run of the same algorithm and family to estimate from"
        return (line + f"\nestimated time: {e['task_s']:.0f} s of task time for the {e['matched']} of "
                f"{self.todo} tasks with stored runs of the same algorithm and family (median wall "
                f"time of those runs; {e['exact']} matched on the parameters too)"
                + (f", {self.todo - e['matched']} tasks without an estimate" if e["matched"] < self.todo
                   else ""))


def describe_task(task) -> str:
    """One line naming a task: its entry's label, instance group, seed and generator
    parameters (a grid's point), targets, parameters and repetition (what a dry run lists)."""
    parts = [task.label or task.algorithm, f"on {task.group}"]
    if task.instance_seed is not None:
        parts.append(f"seed {task.instance_seed}")
    if task.instance_params and task.instance_path is None:
        parts.append("(" + ", ".join(f"{k}={v}" for k, v in sorted(task.instance_params.items())) + ")")
    parts += [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
              for k, v in sorted((task.targets or {}).items())]
    params = ", ".join(f"{k}={v}" for k, v in sorted((task.params or {}).items()))
    if params:
        parts.append(f"[{params}]")
    if task.repetition:
        parts.append(f"repetition {task.repetition}")
    return " ".join(parts)


def estimate_time(todo: list, store: ResultsStore) -> dict:
    """Task time of ``todo`` estimated from the store's successful runs.

    Each task is matched with the stored runs of the same algorithm on the
    same instance family with the same parameters, else of the same
    algorithm and family with any parameters; its estimate is the median
    ``wall_s`` of those runs. A rough guide (other instances of a family can
    take much longer), not a prediction with an error bound.

    Returns
    -------
    dict
        ``task_s`` (sum of the estimates, seconds of task time, not wall
        time across workers), ``matched`` (tasks with an estimate) and
        ``exact`` (of them, matched on the parameters too).
    """
    import json

    frame = store.frame(params=False)
    if frame.empty:
        return {"task_s": 0.0, "matched": 0, "exact": 0}
    import statistics

    frame = frame[(frame["status"] != "error") & frame["wall_s"].notna()]
    runs: dict[tuple, list] = {}     # (algorithm, family) -> [(params as run, wall_s)]
    for algo, family, params, wall in frame[["algorithm", "family", "params", "wall_s"]].itertuples(index=False):
        try:
            params = json.loads(params) if isinstance(params, str) else dict(params or {})
        except (ValueError, TypeError):
            params = {}
        runs.setdefault((algo, family), []).append((params, float(wall)))
    total, matched, exact = 0.0, 0, 0
    for task in todo:
        candidates = runs.get((task.algorithm, task.family))
        if not candidates:
            continue
        # stored params are resolved (defaults included): the task's given
        # parameters must appear among them with the same values
        same = [w for p, w in candidates if all(p.get(k) == v for k, v in task.params.items())]
        exact += bool(same)
        total += statistics.median(same or [w for _, w in candidates])
        matched += 1
    return {"task_s": total, "matched": matched, "exact": exact}


def dry_run(sweep: Sweep, db: str | os.PathLike | None, executor_description: str = "", *,
            retry_failed: bool = False, check_instances: bool = True) -> DryRun:
    """Validate a sweep completely and count its tasks; write nothing.

    Parameters
    ----------
    sweep : Sweep
        Loaded with :func:`~deplbench.benchmarks.sweep.load_sweep`.
    db : path-like or None
        The results store a run would use. Opened read-only if it exists;
        never created. None: no store, so no task counts as done (the
        report says so).
    executor_description : str
        Shown in the summary.
    retry_failed : bool
        Count failed tasks as to-run, as the real run would.
    check_instances : bool
        Build every distinct instance of the tasks still to run (targets
        applied), so a target the instance rejects (e.g. ℓmax ≥ ℓ(0)) fails
        here rather than as failed rows.

    Returns
    -------
    DryRun

    Raises
    ------
    SweepError
        An instance cannot be built (naming the group and the reason), or
        the store is unusable.
    """
    from deplbench.benchmarks.validate import check_instances as _check

    tasks = sweep.tasks()
    path = None if db is None else Path(db)
    estimate = None
    if path is not None and path.exists():
        with ResultsStore(path, readonly=True) as store:
            todo, done, failed = select_tasks(tasks, store, retry_failed=retry_failed)
            estimate = estimate_time(todo, store)
            shorter = stopped_by_a_shorter_limit(tasks, store)
    else:
        todo, done, failed = select_tasks(tasks, None, retry_failed=retry_failed)
        shorter = 0
    n_checked = _check(todo) if check_instances else None
    return DryRun(name=sweep.name, total=len(tasks), already_done=done, skipped_failed=failed,
                  todo=len(todo), instances_checked=n_checked, executor=executor_description,
                  estimate=estimate, todo_lines=tuple(describe_task(t) for t in todo), no_store=path is None,
                  shorter_limit=shorter)
