"""Where tasks run: a local process pool or a Dask cluster.

Both executors take :class:`~deplbench.benchmarks.sweep_expand.Task` objects and
yield one record per task, as tasks finish, to the single process that
writes the results store. Each task runs in a process of its own under a
**hard** wall-clock limit: when the limit passes, the process is terminated
(SIGTERM, then SIGKILL after :data:`KILL_GRACE_S`) and a record with
``status = "error"`` and an ``error`` starting with ``timeout:`` is produced
instead, so a hung solver costs its time limit and nothing more. A solver
that reads the deadline of :mod:`deplbench.limits` is stopped before that,
inside the task (:func:`deplbench.benchmarks.tasks.solver_stop_s`), and its
record keeps what it found (status ``time_limit``). A process
that dies (segfault, OOM killer) yields a record starting with ``crash:``.

* :class:`LocalExecutor` — ``--workers N``: up to N concurrent processes
  forked from a ``forkserver`` that has already imported the solver stack
  (``benchmarks/_warm.py``), so a task starts in milliseconds rather than
  re-importing pyomo/scipy. Task processes and the forkserver ask the kernel
  for SIGKILL when their parent dies (``PR_SET_PDEATHSIG``), so even
  ``kill -9`` of the runner leaves no orphan solver behind.
* :class:`DaskExecutor` — ``--dask-scheduler ADDRESS`` (a running
  ``dask.distributed`` cluster) or ``--dask-local N`` (a ``LocalCluster`` of
  N single-threaded workers inside the runner process; they talk
  in-process and bind only loopback HTTP ports). A Dask worker cannot kill
  a running Python function, so each task still gets a process of its own
  under the same hard limit; workers
  stay warm: a worker that may have children forks each task from a
  forkserver that imported the solver stack once (:func:`run_task_warm`),
  which costs milliseconds per task, and only a daemonic worker (the default
  of an external ``dask worker``; set ``distributed.worker.daemon: false``
  in its Dask config to avoid it) falls back to starting ``python -m
  deplbench.benchmarks.tasks`` per task (about a second each). Tasks are
  submitted in a window of twice the worker count, topped up as they
  finish. Remote workers need deplbench installed; on an interrupt, tasks
  already running on a remote cluster finish there and are discarded.

Ctrl-C reaches every process of the terminal's process group: task
processes ignore it and the runner, which owns it, kills them — an
interrupt must not be recorded as a failed task.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from multiprocessing.connection import wait
from numbers import Integral
from pathlib import Path
from typing import Any

from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.sweep_expand import Task
from deplbench.errors import SweepError
from deplbench.limits import MAX_WORKERS, cores

#: Module the forkserver imports once (it imports the solver stack, each
#: import guarded), so forked workers start warm.
PRELOAD = ("deplbench.benchmarks._warm",)

#: Seconds between SIGTERM and SIGKILL for a task over its limit. Short:
#: the limit is hard, the grace is only for a clean exit of well-behaved code.
KILL_GRACE_S = 0.5


def default_workers() -> int:
    """Usable CPU cores (:func:`deplbench.limits.cores`: the affinity, capped by a cgroup CPU quota), at least 1."""
    return cores()


def limit_threads() -> None:
    """Default BLAS/OpenMP pools to one thread per task process.

    N task processes on N cores each spawning N BLAS threads would
    oversubscribe the machine and distort every runtime. Explicit settings
    in the environment win; the values end up in each row's ``env``.
    """
    for var in task_mod.THREAD_VARS:
        os.environ.setdefault(var, "1")


def _timeout_message(task: Task) -> str:
    return (f"timeout: task exceeded its hard time limit of {task.time_limit_s:g} s "
            f"and was killed")


# --------------------------------------------------------------------------
# local
# --------------------------------------------------------------------------


def _forwarded_env() -> dict[str, str]:
    """Environment the parent hands each task process explicitly.

    The forkserver keeps the environment it started with; a plugin list or
    thread setting changed later in the parent (tests do that) must still
    reach the task.
    """
    names = (task_mod.PLUGIN_ENV, *task_mod.THREAD_VARS)
    return {n: os.environ[n] for n in names if n in os.environ}


def _local_child(conn, task: dict, env: dict[str, str]) -> None:
    """Body of a local worker process: run one task, send its record."""
    task_mod.set_parent_death_signal()
    # Ctrl-C reaches the whole process group; the runner handles it (kills
    # this process, stores nothing). Left on, the interrupt would turn into
    # a "failed" row that a plain resume would then skip.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Whatever a solver prints (HiGHS's banner) goes to stderr: the runner's
    # stdout carries only what was asked for. The record travels by pipe.
    try:
        sys.stdout.flush()
        os.dup2(2, 1)
    except (OSError, ValueError):
        pass
    if task_mod.PLUGIN_ENV not in env:
        os.environ.pop(task_mod.PLUGIN_ENV, None)
    os.environ.update(env)
    try:
        record = task_mod.run_task(task)
        conn.send(record)
    except BaseException as exc:  # noqa: BLE001 - e.g. an unpicklable record
        try:
            conn.send(task_mod.failure_record(
                task, f"worker: could not return the record ({type(exc).__name__}: {exc})",
                started_at=task_mod.now_iso(), wall_s=0.0))
        except BaseException:  # noqa: BLE001 - the parent then sees a dead worker
            pass
    finally:
        conn.close()


class LocalExecutor:
    """Run tasks in local processes, at most ``workers`` at a time.

    Parameters
    ----------
    workers : int, optional
        Concurrent task processes (default: usable cores).
    start_method : {"forkserver", "spawn", "fork"}
        How task processes are created; ``forkserver`` is the default on
        Linux (fast and safe with a multi-threaded parent).
    field : str
        How a refusal of ``workers`` names it (the CLI: ``--workers``).
    """

    def __init__(self, workers: int | None = None, start_method: str | None = None, field: str = "workers") -> None:
        workers = default_workers() if workers is None else workers
        # numpy's integers are Integral, its bools (np.True_) are not
        if isinstance(workers, bool) or not isinstance(workers, Integral) or not 1 <= workers <= MAX_WORKERS:
            raise SweepError(f"{field}: must be an integer in [1, {MAX_WORKERS}], got {workers!r}")
        self.workers = int(workers)
        if start_method is None:
            start_method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        self.start_method = start_method
        self._running: dict[Any, tuple] = {}

    def describe(self) -> str:
        return f"local({self.workers} workers, {self.start_method})"

    def prepare(self) -> None:
        """Start the warm forkserver now, before the sweep is loaded.

        Its imports (the whole solver stack, seconds) then run in a process
        of their own while the runner validates the sweep, instead of after
        it, before the first task. Optional: :meth:`run` starts it anyway.
        """
        limit_threads()  # before the forkserver imports numpy (BLAS pools)
        if self.start_method == "forkserver":
            self._context()
            _start_forkserver()

    def _context(self):
        ctx = mp.get_context(self.start_method)
        if self.start_method == "forkserver":
            ctx.set_forkserver_preload(list(PRELOAD))
        return ctx

    def run(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict]]:
        """Yield ``(task, record)`` as tasks finish (completion order).

        Closing the generator early (or an exception in the consumer, e.g.
        Ctrl-C) kills every running task process.
        """
        limit_threads()
        ctx = self._context()
        env = _forwarded_env()
        # Pulled one at a time as slots free up: the runner claims each task
        # (a lease in the store) only when it is about to start, so several
        # runners on one store split the work instead of one taking it all.
        pending = iter(tasks)
        more = True
        running = self._running
        try:
            while more or running:
                while more and len(running) < self.workers:
                    task = next(pending, None)
                    if task is None:
                        more = False
                        break
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_local_child, args=(send, task.to_dict(), env),
                                       name=f"deplbench-{task.key}", daemon=True)
                    started = task_mod.now_iso()
                    _start_uninterrupted(proc)
                    send.close()  # only the child writes; EOF then means it died
                    running[recv] = (proc, task, time.monotonic(), started)
                if not running:
                    break
                deadline = min(t0 + task.time_limit_s for _, task, t0, _ in running.values())
                timeout = max(0.0, deadline - time.monotonic())
                ready = wait(list(running), timeout=timeout)
                for conn in ready:
                    proc, task, t0, started = running.pop(conn)
                    try:
                        record = conn.recv()
                    except (EOFError, OSError):
                        proc.join(timeout=5)
                        code = proc.exitcode
                        record = task_mod.failure_record(
                            task, f"crash: task process died with exit code {code}"
                                  f"{_signal_name(code)} before returning a record",
                            started_at=started, wall_s=time.monotonic() - t0)
                    conn.close()
                    proc.join(timeout=5)
                    yield task, record
                now = time.monotonic()
                for conn in [c for c, (_, task, t0, _) in running.items()
                             if now >= t0 + task.time_limit_s]:
                    proc, task, t0, started = running.pop(conn)
                    _kill(proc)
                    conn.close()
                    yield task, task_mod.failure_record(
                        task, _timeout_message(task), started_at=started,
                        wall_s=time.monotonic() - t0)
        finally:
            self.close()

    def close(self) -> None:
        """Kill every task process still running (idempotent)."""
        while self._running:
            conn, (proc, *_rest) = self._running.popitem()
            _kill(proc, grace=0.0)
            conn.close()


def _start_forkserver() -> None:
    """Start this process's forkserver (preloaded with :data:`PRELOAD`)."""
    from multiprocessing import forkserver

    forkserver.ensure_running()


def _start_uninterrupted(proc) -> None:
    """``proc.start()`` with Ctrl-C held back until the child has its task.

    An interrupt between the forkserver's fork and the hand-over of the
    pickled task leaves the child reading a closed pipe: it prints an
    ``EOFError`` traceback. The interrupt is deferred (main thread only,
    where Python runs signal handlers) and raised right after the start.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        proc.start()
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        proc.start()
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _kill(proc, grace: float = KILL_GRACE_S) -> None:
    if proc.is_alive():
        proc.terminate()
        proc.join(timeout=grace)
    if proc.is_alive():
        proc.kill()
    proc.join(timeout=5)


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f" ({signal.Signals(-code).name})"
        except ValueError:
            return ""
    return ""


# --------------------------------------------------------------------------
# Dask
# --------------------------------------------------------------------------


#: Per-process forkserver context of a Dask worker (created on first use).
_WORKER_CONTEXT = None

#: Dask settings of the executor's own LocalCluster (``--dask-local``).
#: Its scheduler and workers live in the runner process, next to the store
#: writer, on a machine whose cores the task processes already fill, so
#: whatever they compute is taken from the tasks:
#:
#: * ``worker-saturation`` 1.0: a worker gets a task only when its thread is
#:   free; the rest wait at the scheduler and go to whichever worker frees
#:   first. With the default 1.1 a single-threaded worker holds a second
#:   task in its own queue, where it waits behind a long task (a 60 s MILP)
#:   while the other worker idles, and work stealing must move it back;
#: * work stealing off (nothing is queued at a worker to steal);
#: * the statistical profiler off (it samples every thread's stack every
#:   10 ms), the system monitor every 2 s instead of 0.5 s.
#:
#: An external scheduler keeps its own configuration.
LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.scheduler.work-stealing": False,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.gil.enabled": False,
}


def _worker_context():
    """The forkserver context of this (Dask worker) process, preloaded once.

    The first task on a worker starts a forkserver that imports the solver
    stack (``benchmarks/_warm.py``); every later task is forked from it in
    milliseconds. This is what makes Dask as fast as the local pool: the
    per-task cost is a fork, not a Python start-up and the solver imports.
    """
    global _WORKER_CONTEXT
    if _WORKER_CONTEXT is None:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        _WORKER_CONTEXT = ctx
    return _WORKER_CONTEXT


def run_task_warm(task: dict, time_limit_s: float) -> dict:
    """Run one task in a process forked from this worker's warm forkserver.

    Same hard limit and failure records as the local executor. Needs a
    process allowed to have children (a non-daemonic Dask worker: the
    executor's LocalCluster starts them so).
    """
    ctx = _worker_context()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_local_child, args=(send, task, _forwarded_env()),
                       name=f"deplbench-{task.get('key')}", daemon=True)
    started, t0 = task_mod.now_iso(), time.monotonic()
    proc.start()
    send.close()
    try:
        if recv.poll(time_limit_s):
            try:
                return recv.recv()
            except (EOFError, OSError):
                proc.join(timeout=5)
                code = proc.exitcode
                return task_mod.failure_record(
                    task, f"crash: task process died with exit code {code}{_signal_name(code)} "
                          "before returning a record",
                    started_at=started, wall_s=time.monotonic() - t0)
        _kill(proc)
        return task_mod.failure_record(task, _timeout_message(Task.from_dict(task)),
                                       started_at=started, wall_s=time.monotonic() - t0)
    finally:
        recv.close()
        _kill(proc, grace=KILL_GRACE_S)


def run_task_isolated(task: dict, time_limit_s: float) -> dict:
    """Run one task in its own process under a hard time limit.

    This is the function Dask workers execute. In a worker that may have
    children it forks the task from a warm forkserver
    (:func:`run_task_warm`); in a daemonic worker (the default of an
    external ``dask-worker``) it starts ``python -m deplbench.benchmarks.tasks``
    instead, which ``subprocess.run`` kills with SIGKILL when
    ``time_limit_s`` passes (about a second of start-up per task).

    Returns
    -------
    dict
        The task's record, or a failure record (timeout / crash).
    """
    if not mp.current_process().daemon and "forkserver" in mp.get_all_start_methods():
        return run_task_warm(task, time_limit_s)
    started, t0 = task_mod.now_iso(), time.monotonic()
    env = dict(os.environ)
    for var in task_mod.THREAD_VARS:
        env.setdefault(var, "1")
    with tempfile.TemporaryDirectory(prefix="deplbench-task-") as tmp:
        task_file, out_file = Path(tmp, "task.json"), Path(tmp, "record.json")
        import json

        task_file.write_text(json.dumps(task), encoding="utf-8")
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "deplbench.benchmarks.tasks", str(task_file), str(out_file)],
                capture_output=True, text=True, timeout=time_limit_s, env=env)
        except subprocess.TimeoutExpired:
            return task_mod.failure_record(
                task, _timeout_message(Task.from_dict(task)), started_at=started,
                wall_s=time.monotonic() - t0)
        if proc.returncode != 0 or not out_file.is_file():
            tail = (proc.stderr or "").strip()[-2000:]
            return task_mod.failure_record(
                task, f"crash: task process exited with code {proc.returncode}"
                      f"{_signal_name(proc.returncode)}\n{tail}",
                started_at=started, wall_s=time.monotonic() - t0)
        return json.loads(out_file.read_text(encoding="utf-8"))


class DaskExecutor:
    """Submit tasks to a dask.distributed cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``).
    local_workers : int, optional
        Start a ``LocalCluster`` with this many single-threaded workers in
        this process instead (in-process communication, loopback-only HTTP;
        each task is still a process of its own, forked warm).
    connect_timeout_s : float
        How long to try reaching ``scheduler``.

    Raises
    ------
    SweepError
        Neither or both given, or the scheduler cannot be reached.
    """

    def __init__(self, scheduler: str | None = None, local_workers: int | None = None, *,
                 connect_timeout_s: float = 20.0) -> None:
        if (scheduler is None) == (local_workers is None):
            raise SweepError("--dask-scheduler/--dask-local: give exactly one")
        if local_workers is not None and (isinstance(local_workers, bool)
                                          or not isinstance(local_workers, int)
                                          or not 1 <= local_workers <= MAX_WORKERS):
            raise SweepError(f"--dask-local: must be an integer in [1, {MAX_WORKERS}], got {local_workers!r}")
        self.scheduler = scheduler
        self.local_workers = local_workers
        self.connect_timeout_s = connect_timeout_s
        self._client = None
        self._cluster = None
        self._futures: list = []

    def describe(self) -> str:
        if self.scheduler is not None:
            return f"dask({self.scheduler})"
        return f"dask-local({self.local_workers} workers)"

    def prepare(self) -> None:
        """For a LocalCluster: start the warm forkserver its workers fork
        tasks from now, so its imports overlap the loading of the sweep (as
        :meth:`LocalExecutor.prepare`). Nothing to do for a remote cluster."""
        if self.local_workers is None:
            return
        limit_threads()  # before the forkserver imports numpy (BLAS pools)
        if "forkserver" in mp.get_all_start_methods():
            _worker_context()
            _start_forkserver()

    def connect(self):
        """The client, connected (once): a scheduler that cannot be reached is refused here.

        ``deplbench run`` calls it before it creates the results store, so a
        refused scheduler leaves no empty store behind; :meth:`run` reuses
        the client.

        Raises
        ------
        SweepError
            ``--dask-scheduler: cannot reach ADDR (...)``.
        """
        return self._client if self._client is not None else self._connect()

    def _connect(self):
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise SweepError(f"--dask-*: dask.distributed is not installed ({exc})") from exc
        limit_threads()  # LocalCluster workers inherit this environment
        if self.scheduler is not None:
            try:
                self._client = Client(self.scheduler, timeout=f"{self.connect_timeout_s}s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise SweepError(f"--dask-scheduler: cannot reach {self.scheduler} ({exc})") from exc
        else:
            # Workers in this process (one thread each): every task still
            # runs in a process of its own, forked from one warm forkserver
            # (run_task_warm), so worker processes would add only their
            # start-up and a second copy of every solver import.
            # Start the warm forkserver now (if prepare() did not): it
            # imports the solver stack while the cluster starts, instead of
            # after it, on the first task.
            self.prepare()
            # Workers talk in-process (inproc://); the HTTP servers a
            # scheduler and its workers always start are bound to loopback
            # on free ports (``dashboard_address=None`` would mean 0.0.0.0:8787).
            # LOCAL_CLUSTER_CONFIG: no sampling profiler or memory monitor
            # competing with the tasks for the runner's CPU, and tasks held
            # by the scheduler until a worker is free (see its comment).
            import dask

            with dask.config.set(LOCAL_CLUSTER_CONFIG):
                self._cluster = LocalCluster(n_workers=self.local_workers, threads_per_worker=1,
                                             processes=False, memory_limit=0,
                                             dashboard_address="127.0.0.1:0",
                                             worker_dashboard_address="127.0.0.1:0")
                self._client = Client(self._cluster)
        return self._client

    def run(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict]]:
        """Yield ``(task, record)`` as Dask tasks complete."""
        from distributed import as_completed

        client = self.connect()
        pending = iter(tasks)
        by_future: dict = {}

        def submit_next() -> bool:
            task = next(pending, None)
            if task is None:
                return False
            # pure=False: a retried task must run again, not reuse a result.
            fut = client.submit(run_task_isolated, task.to_dict(), task.time_limit_s,
                                pure=False, key=f"deplbench-{task.key}-{os.urandom(4).hex()}")
            by_future[fut] = task
            self._futures.append(fut)
            done.add(fut)
            return True

        try:
            # A bounded window of tasks in flight, topped up as tasks finish:
            # tasks are pulled (and claimed by the runner) only when a worker
            # will soon be free, so runners sharing a store split the work.
            # The window is twice the worker count so that a worker finishing
            # a task finds the next one already at the scheduler instead of
            # waiting for this thread to store a record and submit another.
            # with_results: each result arrives with its completion, without
            # a second round trip to the cluster per task.
            done = as_completed(with_results=True, raise_errors=False)
            for _ in range(2 * self._n_workers(client)):
                if not submit_next():
                    break
            for fut, result in done:
                task = by_future.pop(fut)
                self._futures.remove(fut)
                if isinstance(result, dict) and fut.status == "finished":
                    record = result
                else:  # a lost worker or a failed function, not the task's own error
                    # raise_errors=False hands an error over as (type, exc, tb)
                    # and a cancellation as the CancelledError itself.
                    exc = result[1] if isinstance(result, tuple) and len(result) == 3 \
                        else result
                    record = task_mod.failure_record(
                        task, f"dask: {type(exc).__name__}: {exc}",
                        started_at=task_mod.now_iso(), wall_s=0.0)
                fut.release()
                submit_next()
                yield task, record
        finally:
            self.close()

    def _n_workers(self, client) -> int:
        if self.local_workers is not None:
            return self.local_workers
        try:
            return max(1, len(client.scheduler_info().get("workers", {})))
        except Exception:  # noqa: BLE001 - a guess is enough for the window size
            return 1

    def close(self) -> None:
        """Cancel outstanding futures and shut down what this executor started."""
        if self._client is not None:
            try:
                if self._futures:
                    self._client.cancel(self._futures)
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._futures = []
