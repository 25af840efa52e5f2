"""What every solver promises about time and memory (docs/DESIGN.md, "Limits").

A bottom helper shared by the formulations and the solvers (it imports only
:mod:`deplbench.errors` and :mod:`deplbench.params`):

* **Memory.** Before a large array is allocated its size is estimated (the
  shapes are known in advance: horizon K̄, scenarios S, samples n, η …) and
  :func:`check_memory` refuses a build above :data:`MEMORY_BUDGET_GIB` with
  :class:`MemoryLimitExceeded`, a one-line message naming what is too large
  and the estimate in GiB. :func:`~deplbench.solvers.run.solve` turns it into
  a result with status ``error`` — the same status and wording the MILP uses
  for its scenario arrays ("would need about X GiB").
* **Time.** A solver that declares ``time_limit`` runs its body inside
  :func:`deadline` and calls :func:`check_time` once per main-loop iteration
  (per epoch, DP layer, candidate); past the deadline it raises
  :class:`TimeLimitReached`, which :func:`~deplbench.solvers.run.solve`
  turns into status ``time_limit`` with the message and no plan. The check is
  a context variable read and one clock call: cheap enough for every layer.
  The clock is :func:`now` (``time.perf_counter`` unless a scope of
  :func:`use_clock` injects another, as the tests do to decide a stop
  without real timing); every deadline, and every solver that weighs its
  own time against one, reads it.
* **Cores.** :func:`cores` is what a default worker or thread count reads: the
  CPU affinity, further capped by a cgroup v2 CPU quota (a container's
  ``cpu.max``), so a default never oversubscribes the CPU time granted.
* **Files.** Every reader of a user's file goes through :func:`read_bytes`
  (or :func:`read_text`): a path that is not a regular file (``/dev/zero``,
  a FIFO) is refused from its ``stat``, the size is checked before and
  during the read (:data:`MAX_INPUT_BYTES`, or a tighter bound of the
  format's own: a plan's), and a ``.gz`` file is inflated
  in blocks up to :data:`MAX_UNCOMPRESSED_BYTES`; :func:`check_gzip_size`
  bounds a compressed file a solver reads itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import time
from collections.abc import Callable

from deplbench.errors import DeplbenchError, SolverError
from deplbench.params import TIME_LIMIT, Param

#: Default memory budget (GiB) of any solver's largest arrays. The MILP's
#: default ``memory_limit`` (formulations.milp.options.MEMORY_LIMIT_GIB), the
#: general formulation's bound tables and the out-of-sample evaluator's
#: budget (formulations.evaluation.evaluate.MEMORY_BUDGET) are all read from here.
MEMORY_BUDGET_GIB = 2.0

#: Largest ``memory_limit`` (GiB, 1 PiB): the budget is counted in bytes as an integer, and no
#: machine this suite runs on holds more; inf or 1e308 would be no number of bytes at all.
MAX_MEMORY_GIB = 2.0**20

#: The ``memory_limit`` parameter of every solver with a memory estimate (the user's cap, in GiB).
MEMORY_LIMIT_PARAM = Param(MEMORY_BUDGET_GIB, float, "GiB the solver's largest arrays may take (estimated "
                           "before allocation); above it the result is status error with the estimate",
                           low=0.0, low_inclusive=False, high=MAX_MEMORY_GIB)
#: The ``time_limit`` parameter of a solver that checks :func:`check_time` in its loops
#: (the one declaration, :data:`deplbench.params.TIME_LIMIT`).
TIME_LIMIT_PARAM = TIME_LIMIT

#: Bytes of one float64 value.
FLOAT_BYTES = 8

# Upper bounds on every count a user gives (checked at load, before any work):
# far above any meaningful run, far below what would run for days or exhaust
# memory. A sweep's task count has an explicit override (``sweep.max_tasks``).
#: Solver threads (HiGHS ``threads``).
MAX_THREADS = 256
#: Worker processes (``--workers``, ``workers``).
MAX_WORKERS = 1024
#: Simulated closed-loop runs (``simulate --runs``, ``closed_loop.runs``).
MAX_RUNS = 1_000_000
#: SAA replications of a certified bracket (M, M₂).
MAX_REPLICATIONS = 10_000
#: Parametric-bootstrap replicates of a KS p-value (``fit --ks-bootstrap``).
MAX_BOOTSTRAP = 100_000
#: Held-out training runs per plan of ``measure replay --seeds`` (each seed trains the whole plan once).
MAX_REPLAY_SEEDS = 100_000
#: Tasks one sweep may expand to unless its ``sweep.max_tasks`` raises the cap.
MAX_SWEEP_TASKS = 100_000
#: Largest input file read whole (instance, plan, sweep, training log, a
#: sweep's instance ``path``): far above any real one (the largest packaged
#: instance is a few MB), so a sparse 20 GB file is refused before the read.
MAX_INPUT_BYTES = 256 * 2**20


class MemoryLimitExceeded(SolverError):
    """An array a solver is about to build would exceed the memory budget."""


class TimeLimitReached(DeplbenchError):
    """The solver's ``time_limit`` passed; the message says where."""


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("deplbench_deadline", default=math.inf)
_LIMIT: contextvars.ContextVar[float | None] = contextvars.ContextVar("deplbench_time_limit", default=None)
_BUDGET: contextvars.ContextVar[float | None] = contextvars.ContextVar("deplbench_memory_budget", default=None)
_CLOCK: contextvars.ContextVar[Callable[[], float] | None] = contextvars.ContextVar("deplbench_clock", default=None)


#: The cgroup v2 file holding this process's CPU quota ("QUOTA PERIOD", or "max PERIOD": none).
CPU_MAX = "/sys/fs/cgroup/cpu.max"


def cores() -> int:
    """The cores this process may use, at least 1: its CPU affinity (the system's count where none is
    reported), capped at ⌈quota/period⌉ of a cgroup v2 CPU quota (:data:`CPU_MAX`) when one is set;
    an unreadable or malformed quota file is ignored."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open(CPU_MAX, encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        if quota != "max" and int(period) > 0 and int(quota) > 0:
            n = min(n, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, n)


def now() -> float:
    """Seconds on the clock every deadline reads (``time.perf_counter`` unless :func:`use_clock` set another)."""
    clock = _CLOCK.get()
    return time.perf_counter() if clock is None else clock()


@contextlib.contextmanager
def use_clock(clock: Callable[[], float]):
    """Run the body with ``clock`` (a callable returning seconds) as the clock of :func:`now`.

    A settings scope, never a module global: :func:`deadline`,
    :func:`time_left`, :func:`expired`, :func:`check_time` and the solvers
    that weigh their own time (``adaptive-opt``'s refinement, ``milp-certified``'s
    validation) read it. Tests inject a clock they advance themselves, so a
    stopping rule is proven without real timing. Open it outside the
    :func:`deadline` it should govern (the deadline is set on this clock).
    """
    token = _CLOCK.set(clock)
    try:
        yield
    finally:
        _CLOCK.reset(token)


def gib_text(gib: float) -> str:
    """``gib`` for a message: two decimals, or three significant digits below 0.01 (no "0.00 GiB")."""
    return f"{gib:.2f}" if gib >= 0.01 or gib == 0 else f"{gib:.3g}"


def check_memory(need_bytes: float, what: str, hint: str, budget_gib: float | None = None) -> None:
    """Refuse a build whose estimated size exceeds the budget.

    Parameters
    ----------
    need_bytes : float
        Estimated peak bytes of the arrays about to be built.
    what : str
        What would be built and from which sizes, e.g.
        ``"best-exp's train-on trajectories (check_samples = 20000 × horizon = 100000)"``.
    hint : str
        How to make it fit ("use fewer check_samples or a smaller horizon").
    budget_gib : float, optional
        The budget in GiB (default: the one :func:`memory_budget` set — a
        solver's ``memory_limit`` parameter — else :data:`MEMORY_BUDGET_GIB`).

    Raises
    ------
    MemoryLimitExceeded
        ``"{what} would need about X GiB > memory budget Y GiB; {hint}"``.
    """
    if budget_gib is None:
        budget_gib = memory_budget_gib()
    if need_bytes > budget_gib * 2**30:
        raise MemoryLimitExceeded(f"{what} would need about {gib_text(need_bytes / 2**30)} GiB > memory budget "
                                  f"{gib_text(budget_gib)} GiB (parameter memory_limit raises it); {hint}")


#: Largest uncompressed size of a gzip file read or handed to a solver (a
#: library model): a gzip bomb of a few MB that inflates to GB is refused
#: after counting, never written out or parsed.
MAX_UNCOMPRESSED_BYTES = 1024 * 2**20


def _regular_size(path, what: str, error: type[DeplbenchError], limit: int,
                  limit_name: str = "deplbench.limits.MAX_INPUT_BYTES") -> int:
    """The size of ``path`` after checking it is a regular file within ``limit``.

    ``/dev/zero`` has size 0 and never ends; a FIFO blocks the first read
    until a writer appears: neither is a file a user means to give, so both
    are refused from their ``stat`` before any read.
    """
    import os
    import stat as _stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: cannot read {what} file (no such file or directory)") from None
    except (OSError, ValueError) as exc:
        raise error(f"{path}: cannot read {what} file ({getattr(exc, 'strerror', None) or exc})") from None
    if _stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: is a directory, not {'an' if what[:1] in 'aeiou' else 'a'} {what} file")
    if not _stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file (a device, FIFO or socket); the {what} must be a regular file")
    if st.st_size > limit:
        size, cap = f"{st.st_size / 2**20:.0f} MiB", f"{limit / 2**20:.0f} MiB"
        if size == cap:             # a file just over the limit: in bytes, not "98 MiB > 98 MiB"
            size, cap = f"{st.st_size} bytes", f"{cap} ({limit} bytes)"
        raise error(f"{path}: {what} file of {size} is larger than the limit of {cap} ({limit_name})")
    return st.st_size


def check_file_size(path, what: str, error: type[DeplbenchError], limit: int = MAX_INPUT_BYTES,
                    limit_name: str = "deplbench.limits.MAX_INPUT_BYTES") -> None:
    """Refuse a path that is not a regular file, or one larger than ``limit`` bytes.

    Raises
    ------
    error
        One line naming the file: missing, a directory, not a regular file
        (``/dev/zero``, a FIFO), or its size and the limit.
    """
    _regular_size(path, what, error, limit, limit_name)


def read_bytes(path, what: str, error: type[DeplbenchError], limit: int = MAX_INPUT_BYTES,
               decompress: bool = True, limit_name: str = "deplbench.limits.MAX_INPUT_BYTES") -> bytes:
    """The bytes of the regular file ``path``, never more than ``limit``.

    The one bounded read every reader of a user's file goes through
    (instance, plan, sweep, training log, solution, ``.solu``, manifest): the
    file's type and size are checked before the read, and the read itself
    stops one byte past ``limit`` (a file that grew in between is refused
    too). A ``.gz`` path is decompressed with the same bound on the
    uncompressed size (:data:`MAX_UNCOMPRESSED_BYTES` at most).

    Parameters
    ----------
    path : path-like
    what : str
        The file's kind, for messages (``"instance"``, ``"solution"``).
    error : type
        The :class:`~deplbench.errors.DeplbenchError` subclass raised.
    limit : int, default MAX_INPUT_BYTES
    decompress : bool, default True
        Whether a ``.gz`` path is decompressed (:func:`gunzip`); a caller that
        hashes the file as stored reads it raw and decompresses it itself.
    limit_name : str, default "deplbench.limits.MAX_INPUT_BYTES"
        Where ``limit`` comes from, named in the refusal (a format with a
        tighter bound of its own, such as a plan's, names that bound).

    Returns
    -------
    bytes

    Raises
    ------
    error
        Missing, not a regular file, too large (compressed or not), unreadable.
    """
    _regular_size(path, what, error, limit, limit_name)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} file ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{path}: {what} file is larger than the limit of {limit / 2**20:.0f} MiB "
                    f"({limit_name})")
    if decompress and str(path).endswith(".gz"):
        data = gunzip(data, path, what, error, min(limit, MAX_UNCOMPRESSED_BYTES))
    return data


def as_path(path, argument: str, error: type[DeplbenchError]):
    """``path`` as a :class:`pathlib.Path`, after checking it is one.

    The loaders of the Python API (``load_instance``, ``load_plan``,
    ``load_sweep``) take a file name; anything else (``None``, an open
    file, a dict) is refused naming the argument, instead of a
    ``TypeError`` from :mod:`pathlib`.

    Raises
    ------
    error
        ``"path: expected a file name (str or os.PathLike), got NoneType"``.
    """
    import os
    from pathlib import Path

    if not isinstance(path, (str, os.PathLike)):
        raise error(f"{argument}: expected a file name (str or os.PathLike), got {type(path).__name__}")
    return Path(path)


def read_text(path, what: str, error: type[DeplbenchError], limit: int = MAX_INPUT_BYTES,
              limit_name: str = "deplbench.limits.MAX_INPUT_BYTES") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a one-line error naming the byte otherwise)."""
    data = read_bytes(path, what, error, limit, limit_name=limit_name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a UTF-8 text file (byte {exc.start}: {exc.reason})") from None


def _inflated(fileobj, path, what: str, error: type[DeplbenchError], limit: int, keep: bool,
              seconds: float | None = None) -> bytes:
    """Inflate a gzip stream in blocks, stopping one block past ``limit`` bytes
    (or past ``seconds`` of wall time)."""
    import gzip
    import zlib

    end = math.inf if seconds is None else time.perf_counter() + seconds

    parts, total = [], 0
    try:
        with gzip.GzipFile(fileobj=fileobj, mode="rb") as g:
            while True:
                block = g.read(1 << 20)
                if not block:
                    break
                total += len(block)
                if total > limit:
                    raise error(f"{path}: {what} file inflates beyond the limit of {limit / 2**20:.0f} MiB "
                                "uncompressed (deplbench.limits.MAX_UNCOMPRESSED_BYTES)")
                if keep:
                    parts.append(block)
                if time.perf_counter() > end:
                    raise error(f"{path}: {what} file still inflating after {seconds:g} s ({total / 2**20:.0f} "
                                "MiB so far); refused before any solver reads it")
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"{path}: not a valid gzip file ({exc})") from None
    return b"".join(parts)


def gunzip(data: bytes, path, what: str, error: type[DeplbenchError], limit: int = MAX_UNCOMPRESSED_BYTES) -> bytes:
    """``data`` (gzip) decompressed, refused with ``error`` past ``limit`` bytes or when corrupt."""
    import io

    return _inflated(io.BytesIO(data), path, what, error, limit, keep=True)


def check_gzip_size(path, what: str, error: type[DeplbenchError], limit: int | None = None,
                    seconds: float | None = None) -> None:
    """Refuse a ``.gz`` file that is not regular, or whose uncompressed size exceeds ``limit``.

    For files handed whole to a solver that decompresses them itself
    (HiGHS reads ``.mps.gz``): the stream is inflated in blocks and only
    counted, so a gzip bomb costs a bounded time and no memory. ``limit``
    defaults to :data:`MAX_UNCOMPRESSED_BYTES`; ``seconds`` (a command's
    time limit) bounds the counting too.

    The gzip trailer's ISIZE (the last member's size modulo 2³²) is read
    first: the true size is at least that, so a trailer above ``limit``
    refuses the file without inflating anything.
    """
    limit = MAX_UNCOMPRESSED_BYTES if limit is None else limit
    # a compressed file larger than the uncompressed limit inflates beyond it: the same limit, named
    size = _regular_size(path, what, error, limit, "deplbench.limits.MAX_UNCOMPRESSED_BYTES")
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise error(f"{path}: cannot read {what} file ({exc.strerror or exc})") from None
    with fh:
        if size >= 18:                     # header (10) + trailer (8): a complete member
            fh.seek(size - 4)
            isize = int.from_bytes(fh.read(4), "little")
            if isize > limit:
                raise error(f"{path}: {what} file inflates to {isize / 2**20:.0f} MiB, beyond the limit of "
                            f"{limit / 2**20:.0f} MiB uncompressed (deplbench.limits.MAX_UNCOMPRESSED_BYTES)")
            fh.seek(0)
        _inflated(fh, path, what, error, limit, keep=False, seconds=seconds)


def memory_budget_gib() -> float:
    """The budget in GiB of the current scope (:func:`memory_budget`), else the default."""
    budget = _BUDGET.get()
    return MEMORY_BUDGET_GIB if budget is None else budget


@contextlib.contextmanager
def memory_budget(gib: float | None):
    """Run the body with memory budget ``gib`` GiB for every :func:`check_memory`.

    ``None`` keeps the enclosing budget. :func:`~deplbench.solvers.run.solve`
    opens one with the solver's ``memory_limit`` parameter: the user's way to
    raise the cap (a settings scope, never a module global).
    """
    token = _BUDGET.set(_BUDGET.get() if gib is None else float(gib))
    try:
        yield
    finally:
        _BUDGET.reset(token)


@contextlib.contextmanager
def deadline(time_limit: float | None):
    """Run the body with a wall-clock deadline ``time_limit`` seconds from now.

    ``None`` means no limit. Nested scopes keep the earlier deadline, and
    with it the limit that set it (:func:`time_limit_s`): an inner scope's
    ``time_limit`` is in force only when its deadline comes first.
    """
    limit = None if time_limit is None else float(time_limit)
    end = math.inf if limit is None else now() + limit
    outer = _DEADLINE.get()
    # on a tie the outer scope's limit stays: it is the one the user set first
    tok_d = _DEADLINE.set(end if end < outer else outer)
    tok_l = _LIMIT.set(limit if end < outer else _LIMIT.get())
    try:
        yield
    finally:
        _DEADLINE.reset(tok_d)
        _LIMIT.reset(tok_l)


@contextlib.contextmanager
def no_deadline():
    """Run the body outside every enclosing :func:`deadline`.

    For the harness's own work after a solver returned: judging its plan
    out of sample (:func:`~deplbench.solvers.run.solve`) is not the
    solver's work, so neither the solver's ``time_limit`` nor an outer stop
    around the solve (a sweep task's, :func:`deplbench.benchmarks.tasks.run_task`)
    may cut it short and turn a returned plan into an error. A sweep task's
    hard kill still bounds it.
    """
    tok_d = _DEADLINE.set(math.inf)
    tok_l = _LIMIT.set(None)
    try:
        yield
    finally:
        _DEADLINE.reset(tok_d)
        _LIMIT.reset(tok_l)


def time_left() -> float:
    """Seconds until the current deadline (``inf`` without one)."""
    return _DEADLINE.get() - now()


def time_limit_s() -> float | None:
    """The time limit in force, in seconds (None without one).

    The ``time_limit`` of the scope whose deadline :func:`check_time` reads:
    of nested :func:`deadline` scopes, the one whose deadline comes first
    (an outer limit when the inner scope's own would end later, the inner
    one's when it ends sooner). It is the limit as that scope opened it,
    measured from that scope's start, so "time limit X s reached" names the
    number that stopped the run.
    """
    return _LIMIT.get()


def expired() -> bool:
    """Whether the current deadline has passed (never without one)."""
    return now() > _DEADLINE.get()


def check_time(where: str) -> None:
    """Raise :class:`TimeLimitReached` if the current deadline has passed.

    Parameters
    ----------
    where : str
        The loop that noticed, for the message (e.g. ``"expanded-graph DP, layer 812"``).
    """
    end = _DEADLINE.get()
    if end != math.inf and now() >= end:
        raise TimeLimitReached(f"time limit {_LIMIT.get():g} s reached ({where}); no plan")


__all__ = ["CPU_MAX", "as_path", "cores", "gib_text", "MEMORY_BUDGET_GIB", "FLOAT_BYTES", "MAX_THREADS", "MAX_WORKERS",
           "MAX_RUNS", "MAX_REPLICATIONS", "MAX_REPLAY_SEEDS",
           "MAX_BOOTSTRAP", "MAX_SWEEP_TASKS", "MAX_INPUT_BYTES", "MAX_UNCOMPRESSED_BYTES", "check_file_size",
           "check_gzip_size", "gunzip", "read_bytes", "read_text", "MemoryLimitExceeded",
           "TimeLimitReached", "check_memory", "memory_budget", "memory_budget_gib", "MEMORY_LIMIT_PARAM",
           "MAX_MEMORY_GIB", "TIME_LIMIT_PARAM",
           "deadline", "no_deadline", "time_left", "time_limit_s", "expired", "check_time", "now", "use_clock"]
