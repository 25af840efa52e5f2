"""Run a sweep: expand, skip what the store already has, execute, store.

The runner is the only process that writes the results store; executors
send it one record per finished task and it commits each immediately
(:meth:`~deplbench.benchmarks.store.ResultsStore.add`). Hence resuming is
just running again: tasks with a successful row are skipped, tasks whose
attempts all failed are skipped too unless ``retry_failed``, and everything
else runs.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.store import ResultsStore, is_failure
from deplbench.benchmarks.sweep import Sweep, Task


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
        (another runner on the same store).
    elapsed_s : float
        Wall time of the call.
    failures : list of (label, key, first error line)
    """

    total: int = 0
    already_done: int = 0
    skipped_failed: int = 0
    ran: int = 0
    ok: int = 0
    failed: int = 0
    duplicates: int = 0
    elapsed_s: float = 0.0
    failures: list = field(default_factory=list)

    def text(self, name: str) -> str:
        """A short human summary."""
        lines = [f"sweep {name}: {self.total} tasks; {self.already_done} already done, "
                 f"{self.skipped_failed} failed before (use --retry-failed), "
                 f"{self.ran} run: {self.ok} ok, {self.failed} failed"
                 + (f", {self.duplicates} duplicate(s) not stored" if self.duplicates else "")
                 + f" ({self.elapsed_s:.1f} s)"]
        for label, key, err in self.failures[:10]:
            lines.append(f"  failed {label} [{key}]: {err}")
        if len(self.failures) > 10:
            lines.append(f"  ... and {len(self.failures) - 10} more")
        return "\n".join(lines)


def select_tasks(tasks: list[Task], store: ResultsStore, *,
                 retry_failed: bool) -> tuple[list[Task], int, int]:
    """Tasks still to run, and how many were skipped as done / as failed.

    Returns
    -------
    (todo, already_done, skipped_failed)
    """
    done, failed = store.finished_keys(), store.failed_keys()
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
              progress: bool = True, stream: TextIO | None = None) -> RunSummary:
    """Execute the tasks of ``sweep`` that ``store`` does not have yet.

    Parameters
    ----------
    sweep : Sweep
        A validated sweep (:func:`deplbench.benchmarks.sweep.load_sweep`).
    store : ResultsStore
        Opened for writing; each finished task is committed at once.
    executor : LocalExecutor or DaskExecutor
        Anything with ``run(tasks) -> iterator of (task, record)`` and
        ``describe()``.
    retry_failed : bool
        Re-run tasks whose previous attempts all failed.
    progress : bool
        Show a tqdm bar (counts, failures, ETA) on ``stream``.
    stream : file, optional
        Where the bar goes (default stderr).

    Returns
    -------
    RunSummary

    Notes
    -----
    An interrupt (Ctrl-C) propagates after the executor has killed its
    running tasks; rows committed before it are kept. A task that raises or
    times out is stored as a failed row and the sweep continues.
    """
    t0 = time.monotonic()
    tasks = sweep.tasks()
    todo, n_done, n_failed = select_tasks(tasks, store, retry_failed=retry_failed)
    summary = RunSummary(total=len(tasks), already_done=n_done, skipped_failed=n_failed)
    store.add_run(sweep=sweep.name, source=sweep.source, sweep_text=sweep.text,
                  started_at=task_mod.now_iso(), tasks=len(tasks), todo=len(todo),
                  executor=executor.describe(), env=task_mod.environment())
    if not todo:
        summary.elapsed_s = time.monotonic() - t0
        return summary

    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc=sweep.name, unit="task", disable=not progress,
               file=stream or sys.stderr, dynamic_ncols=True, smoothing=0.1)
    results = executor.run(todo)
    try:
        for task, record in results:
            stored = store.add(record, task=task.to_dict())
            summary.ran += 1
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
        bar.close()
    summary.elapsed_s = time.monotonic() - t0
    return summary
