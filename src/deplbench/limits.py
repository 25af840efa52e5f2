"""What every solver promises about time and memory (docs/DESIGN.md, "Limits").

A bottom helper shared by the formulations and the solvers (it imports only
:mod:`deplbench.errors`):

* **Memory.** Before a large array is allocated its size is estimated (the
  shapes are known in advance: horizon K̄, scenarios S, samples n, η …) and
  :func:`check_memory` refuses a build above :data:`MEMORY_BUDGET_GIB` with
  :class:`MemoryLimitExceeded`, a one-line message naming what is too large
  and the estimate in GiB. :func:`~deplbench.solvers.base.solve` turns it into
  a result with status ``error`` — the same status and wording the MILP uses
  for its scenario arrays ("would need about X GiB").
* **Time.** A solver that declares ``time_limit`` runs its body inside
  :func:`deadline` and calls :func:`check_time` once per main-loop iteration
  (per epoch, DP layer, candidate); past the deadline it raises
  :class:`TimeLimitReached`, which :func:`~deplbench.solvers.base.solve`
  turns into status ``time_limit`` with the message and no plan. The check is
  a context variable read and one clock call: cheap enough for every layer.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time

from deplbench.errors import DeplbenchError, SolverError

#: Default memory budget (GiB) of any solver's largest arrays. The MILP's
#: default ``memory_limit`` (formulations.milp.options.MEMORY_LIMIT_GIB), the
#: general formulation's bound tables and the out-of-sample evaluator's
#: budget (formulations.evaluate.MEMORY_BUDGET) are all read from here.
MEMORY_BUDGET_GIB = 2.0

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


class MemoryLimitExceeded(SolverError):
    """An array a solver is about to build would exceed the memory budget."""


class TimeLimitReached(DeplbenchError):
    """The solver's ``time_limit`` passed; the message says where."""


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("deplbench_deadline", default=math.inf)
_LIMIT: contextvars.ContextVar[float | None] = contextvars.ContextVar("deplbench_time_limit", default=None)


def check_memory(need_bytes: float, what: str, hint: str, budget_gib: float = MEMORY_BUDGET_GIB) -> None:
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
    budget_gib : float
        The budget in GiB (default :data:`MEMORY_BUDGET_GIB`).

    Raises
    ------
    MemoryLimitExceeded
        ``"{what} would need about X GiB > memory budget Y GiB; {hint}"``.
    """
    if need_bytes > budget_gib * 2**30:
        raise MemoryLimitExceeded(f"{what} would need about {need_bytes / 2**30:.2f} GiB > memory budget "
                                  f"{budget_gib:.2f} GiB; {hint}")


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
           "MAX_BOOTSTRAP", "MAX_SWEEP_TASKS", "MemoryLimitExceeded", "TimeLimitReached", "check_memory",
           "deadline", "time_left", "check_time"]
