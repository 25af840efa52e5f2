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
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time

from deplbench.errors import DeplbenchError, SolverError
from deplbench.params import Param

#: Default memory budget (GiB) of any solver's largest arrays. The MILP's
#: default ``memory_limit`` (formulations.milp.options.MEMORY_LIMIT_GIB), the
#: general formulation's bound tables and the out-of-sample evaluator's
#: budget (formulations.evaluate.MEMORY_BUDGET) are all read from here.
MEMORY_BUDGET_GIB = 2.0

#: The ``memory_limit`` parameter of every solver with a memory estimate (the user's cap, in GiB).
MEMORY_LIMIT_PARAM = Param(MEMORY_BUDGET_GIB, float, "GiB the solver's largest arrays may take (estimated "
                           "before allocation); above it the result is status error with the estimate",
                           low=0.0, low_inclusive=False)
#: The ``time_limit`` parameter of a solver that checks :func:`check_time` in its loops.
TIME_LIMIT_PARAM = Param(None, float, "wall-clock seconds (none: no limit); past it the result is status "
                         "time_limit with no plan (docs/DESIGN.md, limits)", low=0.0, low_inclusive=False,
                         nullable=True)

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
        raise MemoryLimitExceeded(f"{what} would need about {need_bytes / 2**30:.2f} GiB > memory budget "
                                  f"{budget_gib:.2f} GiB (parameter memory_limit raises it); {hint}")


def check_file_size(path, what: str, error: type[DeplbenchError], limit: int = MAX_INPUT_BYTES) -> None:
    """Refuse to read a file larger than ``limit`` bytes, naming it and the limit.

    An unreadable path is left to the caller's own read (its message names
    the cause); only the size is judged here.
    """
    import os

    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return
    if size > limit:
        raise error(f"{path}: {what} file of {size / 2**20:.0f} MiB is larger than the limit of "
                    f"{limit / 2**20:.0f} MiB (deplbench.limits.MAX_INPUT_BYTES)")


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

    ``None`` means no limit. Nested scopes keep the earlier deadline.
    """
    limit = None if time_limit is None else float(time_limit)
    end = math.inf if limit is None else time.perf_counter() + limit
    tok_d = _DEADLINE.set(min(end, _DEADLINE.get()))
    tok_l = _LIMIT.set(limit if limit is not None else _LIMIT.get())
    try:
        yield
    finally:
        _DEADLINE.reset(tok_d)
        _LIMIT.reset(tok_l)


def time_left() -> float:
    """Seconds until the current deadline (``inf`` without one)."""
    return _DEADLINE.get() - time.perf_counter()


def time_limit_s() -> float | None:
    """The ``time_limit`` of the current scope in seconds (None without one)."""
    return _LIMIT.get()


def expired() -> bool:
    """Whether the current deadline has passed (never without one)."""
    return time.perf_counter() > _DEADLINE.get()


def check_time(where: str) -> None:
    """Raise :class:`TimeLimitReached` if the current deadline has passed.

    Parameters
    ----------
    where : str
        The loop that noticed, for the message (e.g. ``"expanded-graph DP, layer 812"``).
    """
    end = _DEADLINE.get()
    if end != math.inf and time.perf_counter() >= end:
        raise TimeLimitReached(f"time limit {_LIMIT.get():g} s reached ({where}); no plan")


__all__ = ["MEMORY_BUDGET_GIB", "FLOAT_BYTES", "MAX_THREADS", "MAX_WORKERS", "MAX_RUNS", "MAX_REPLICATIONS",
           "MAX_BOOTSTRAP", "MAX_SWEEP_TASKS", "MAX_INPUT_BYTES", "check_file_size", "MemoryLimitExceeded",
           "TimeLimitReached", "check_memory", "memory_budget", "memory_budget_gib", "MEMORY_LIMIT_PARAM",
           "TIME_LIMIT_PARAM",
           "deadline", "time_left", "time_limit_s", "expired", "check_time"]
