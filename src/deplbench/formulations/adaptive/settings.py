"""The adaptive yardstick's settings: one table of defaults and limits.

:data:`SETTINGS` declares every setting of a bracket (default, type,
limits, help) as a :class:`~deplbench.params.Param`, keyed by the argument
names of :func:`~deplbench.formulations.adaptive.bracket.adaptive_bounds`.
It is the one place they are decided: ``adaptive_bounds`` takes its
defaults from here and checks its arguments with :func:`check_settings`;
the ``adaptive-opt`` solver's parameter table holds these very Params
(``time_limit`` under its name ``refine_time``); ``deplbench adaptive``
reads its defaults and help from here and resolves its options through that
solver table. So every front refuses the same values.

Where ``deplbench adaptive`` deliberately differs from ``adaptive_bounds``
and ``adaptive-opt`` (one grid, no clock of its own), the difference is
named: :data:`CLI_WIDTH` and :data:`CLI_TIME_LIMIT`.

This module imports no numerical library, so the command line can read it
for ``--help``.
"""

from __future__ import annotations

from typing import Any

from deplbench.errors import DeplbenchError, PlanError
from deplbench.limits import MAX_RUNS, cores
from deplbench.params import Param, offset_seed

#: Loss buckets of the first grid when refining to a width (of the only grid otherwise).
START_BUCKETS = 600
#: Factor between the buckets of successive grids of the refinement.
REFINE = 2
#: Refinement never goes beyond this many buckets (nor beyond the memory budget).
MAX_BUCKETS = 38_400
#: Fresh runs certifying the policy, and runs per tuning simulation.
RUNS, TUNE_RUNS = 100_000, 50_000
#: The tuning simulations draw from seed + 1 and seed + 2 (bracket.py, certify.py): the largest offset.
TUNING_SEED_OFFSET = 2
#: Joint level of the bracket (P(success) certificate and the cost's upper bound).
CONFIDENCE = 0.95
#: Share of the remaining time the policy's allocation plans to use.
RHO = 1.0
#: Slopes J of the water-filling bound's support functions (waterfill.py; 0: off).
SLOPES = 64
#: Threads of the water-filling pass's epoch steps (0: one per core available to the process). A pass is
#: the same, bit for bit, for any number (so is a bracket on the same grids; under a time limit the grids
#: reached depend on wall time); a sweep's tasks run side by side on one each.
THREADS = 1
#: Steps of the time-price (λ) and failure-price (μ) searches.
ITERS_LAM, ITERS_MU = 6, 6
#: ``deplbench adaptive``'s defaults where it deliberately differs from
#: ``adaptive_bounds`` and the ``adaptive-opt`` solver (one grid, no wall-clock
#: budget of their own): a person at a terminal gets a bracket refined to a
#: 3 % width within 300 s, while a sweep's ``adaptive-opt`` task runs one grid
#: under the task's own time limit unless ``width`` is given.
CLI_WIDTH, CLI_TIME_LIMIT = 0.03, 300.0
#: ``deplbench adaptive`` runs alone: every core available (0) unless ``--threads`` says otherwise.
CLI_THREADS = 0


def threads_for(threads: int) -> int:
    """The number of threads a ``threads`` setting asks for: itself, or :func:`deplbench.limits.cores` for 0."""
    return int(threads) if threads else cores()


def _slopes(value) -> str:
    """Fewer than 16 slopes over the span of 10³ leave consecutive ones a factor 2 or more apart: a
    valid bound still, but too coarse to gain on the priced one (J 32 is already below it)."""
    return f"must be 0 (no water-filling bound) or an integer ≥ 16, got {value}" if 0 < value < 16 else ""


def _time_points(value) -> str:
    """A grid of one remaining-time point has no step (Δ = Tmax/G with G + 1 points)."""
    return "must be 0 (deadline priced) or an integer ≥ 2, got 1" if value == 1 else ""


#: Every setting of a bracket, keyed by :func:`adaptive_bounds`' argument names.
SETTINGS: dict[str, Param] = {
    "buckets": Param(START_BUCKETS, int, "loss buckets between ℓmax and ℓ(0) (finer: narrower bracket, slower)",
                     low=2),
    # high: the closed-loop simulator's own cap, so that each is refused up front naming itself
    "runs": Param(RUNS, int, "fresh closed-loop runs certifying the policy", low=100, high=MAX_RUNS),
    "tune_runs": Param(TUNE_RUNS, int, "runs per tuning simulation (seeds seed+1 and seed+2, never seed)", low=100,
                       high=MAX_RUNS),
    "seed": offset_seed(TUNING_SEED_OFFSET, "the tuning's second stream", "seed of the certification runs"),
    "confidence": Param(CONFIDENCE, float, "joint level of the P(success) certificate and the cost's upper "
                        "bound (each at 1 − (1 − level)/2)", low=0.5, high=1 - 1e-9),
    "rho": Param(RHO, float, "policy: share of the remaining time the allocation plans to use",
                 low=0.05, high=1.0),
    "iters_lam": Param(ITERS_LAM, int, "steps of the time-price (λ) search once E[T] − Tmax has changed sign "
                       "(it brackets the sign first); any λ gives a valid bound", low=0),
    "iters_mu": Param(ITERS_MU, int, "cutting-plane steps of the failure-price (μ) search (at least one); any μ "
                      "gives a valid bound", low=0),
    "width": Param(None, float, "target (UB − LB)/LB: refine the grid (×2 from buckets) until the estimated "
                   "width meets it (none: one grid)", low=0.0, low_inclusive=False, nullable=True, finite=True),
    "time_limit": Param(None, float, "wall-clock seconds, the outer stop of the whole bracket (status time_limit "
                        "with the best proven bound so far); the refinement to --width plans its grids by it",
                        low=0.0, low_inclusive=False, nullable=True),
    "max_buckets": Param(MAX_BUCKETS, int, "finest grid the refinement may use", low=2),
    "time_points": Param(None, int, "points of the remaining-time grid on which the deadline is carried "
                         "(0: none — the deadline priced, E[T] ≤ Tmax, and carried by water-filling unless "
                         "slopes = 0; none: the finest of 256, 128, 64 whose pass on the first grid "
                         "costs ≤ 2.5e8 multiply–adds and fits the time limit, else 0; docs/adaptive.md)",
                         low=0, nullable=True, check=_time_points),
    "slopes": Param(SLOPES, int, "slopes of the water-filling lower bound, which carries the deadline exactly "
                    "(capacity relaxed): the bound is the larger of it and the others (0: not computed; "
                    "docs/adaptive.md)", low=0, high=1024, check=_slopes),
    "threads": Param(THREADS, int, "threads of the water-filling pass on grids of ≥ 2048 loss cells (0: one per "
                     "core available); a pass is the same, bit for bit, for any number (a bracket too on the "
                     "same grids; under a time limit the grids reached depend on wall time)", low=0, high=256),
}


class _Refused(DeplbenchError):
    """A value :data:`SETTINGS` refuses (re-raised by each front in its own words)."""


def refused(name: str, value: Any) -> str:
    """Why :data:`SETTINGS` refuses ``value`` for ``name`` (a typed value, as from Python or
    TOML: strings are not parsed), or "" when it accepts it."""
    try:
        SETTINGS[name].convert(name, value, strict=True, error=_Refused)
    except _Refused as exc:
        return str(exc).removeprefix(f"parameter {name!r}: ")
    return ""


def refinement_refused(buckets: int | None, max_buckets: int | None, width: float | None) -> str:
    """Why a refinement to ``width`` from ``buckets`` capped at ``max_buckets`` cannot run, or "".

    The one statement of this rule for every front (:func:`check_settings`, the
    ``adaptive-opt`` solver's ``check_params``, ``deplbench adaptive``): a finest
    grid below the first would be passed by that grid itself. One grid
    (``width`` None) uses no cap, so nothing is refused then.
    """
    if width is None or buckets is None or max_buckets is None or max_buckets >= buckets:
        return ""
    return (f"{max_buckets} is below the first grid's {buckets} buckets, so the refinement to "
            f"width = {width:g} could not run")


def check_settings(values: dict[str, Any], error: type[DeplbenchError] = PlanError) -> None:
    """Check :func:`adaptive_bounds`' settings against :data:`SETTINGS`.

    ``max_buckets=None`` stands for :data:`MAX_BUCKETS`; a ``max_buckets``
    below ``buckets`` is refused when a ``width`` asks for a refinement
    (:func:`refinement_refused`).

    Raises
    ------
    error
        ``"name: reason"``, one line.
    """
    for name, value in values.items():
        reason = "" if name == "max_buckets" and value is None else refused(name, value)
        if reason:
            raise error(f"{name}: {reason}")
    reason = refinement_refused(values.get("buckets"), values.get("max_buckets"), values.get("width"))
    if reason:
        raise error(f"max_buckets: {reason}")


__all__ = ["CLI_THREADS", "CLI_TIME_LIMIT", "CLI_WIDTH", "CONFIDENCE", "ITERS_LAM", "ITERS_MU", "MAX_BUCKETS",
           "REFINE", "RHO", "RUNS", "SETTINGS", "SLOPES", "START_BUCKETS", "THREADS", "TUNE_RUNS", "TUNING_SEED_OFFSET",
           "check_settings",
           "cores", "refinement_refused", "refused", "threads_for"]
