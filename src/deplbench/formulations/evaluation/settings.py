"""Limits and defaults of the simulations that judge plans: the one place they are checked.

A closed-loop simulation (:func:`~deplbench.formulations.evaluation.closed_loop.simulate`,
:func:`deplbench.solvers.run.closed_loop`, ``deplbench simulate``, a sweep's
``[sweep.evaluation] closed_loop`` table) takes ``runs``, ``seed`` and
``confidence``; a static out-of-sample evaluation
(:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`,
``--eval-samples``, ``deplbench library verify --samples``) takes a number of
``samples``. Every closed-loop front reads its defaults here and refuses a
value with :func:`check_closed_loop`; every count of samples is refused below
:data:`MIN_SAMPLES` (:func:`check_samples`, or ``solve``'s ``eval_samples``
parameter, whose bound is that constant), so the limits cannot drift apart.
Each front names the field as its user wrote it (``runs``, ``--runs``,
``sweep.evaluation.closed_loop.runs``) and raises its own error class. The
default number of samples is each command's own (stated in its ``--help``):
a solve's evaluation, a simulation and a full evaluation differ in cost.

This module imports only the bottom modules (no numerical library), so the
command line can read the defaults for ``--help``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from deplbench.errors import DeplbenchError, PlanError
from deplbench.limits import MAX_RUNS
from deplbench.params import is_bool, seed_refusal

#: Defaults of a closed-loop simulation: runs, seed, level of the intervals.
RUNS, SEED, CONFIDENCE = 10_000, 0, 0.95

#: Default out-of-sample trajectories of a static evaluation, by front (module docstring: they
#: differ in cost): a solve's judging of its plan (``solve --eval-samples``, a sweep's default),
#: ``deplbench evaluate`` / :func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`, and the
#: static evaluation beside a closed-loop simulation (``simulate --eval-samples``), and a library
#: solution's judging (``library verify --samples``).
SOLVE_SAMPLES, EVALUATE_SAMPLES, SIMULATE_SAMPLES, VERIFY_SAMPLES = 50_000, 100_000, 20_000, 20_000
#: Fewest runs of a closed-loop simulation (a sample variance needs two); the
#: most is :data:`deplbench.limits.MAX_RUNS`.
MIN_RUNS = 2
#: Fewest out-of-sample trajectories of a static evaluation: below it the
#: order-statistic interval on the ω-quantile is uninformative.
MIN_SAMPLES = 100
#: Highest level of a closed-loop interval: a two-sided interval leaves
#: (1 − level)/2 in each tail, and 1 − that must stay below 1 in binary64
#: (at 1 − 1e-16 it rounds to 1); 1e-12 is the margin ω keeps (``MIN_OMEGA``).
MAX_CONFIDENCE = 1 - 1e-12
#: Lowest level: a one-sided bound at a level below 1/2 lies on the wrong side
#: of its own estimate (an upper bound on P(loss > ℓmax) below the observed
#: frequency), and the adaptive certificate refuses the same levels.
MIN_CONFIDENCE = 0.5


def _is_real(value: Any) -> bool:
    """A real number that is not a bool (numpy's scalars included)."""
    return isinstance(value, Real) and not isinstance(value, bool)


def _integer(value: Any, name: str, error: type[DeplbenchError], strict: bool) -> int:
    """``value`` as an int: a bool is never one, nor a fractional or non-finite float
    (nor any float when ``strict``: a typed source tells 3 from 3.0)."""
    if not _is_real(value) or (strict and not isinstance(value, Integral)):
        raise error(f"{name}: must be an integer, got {value!r}")
    if not isinstance(value, Integral) and not (math.isfinite(value) and float(value).is_integer()):
        raise error(f"{name}: must be an integer, got {value!r}")
    return int(value)


def check_closed_loop(runs, seed, confidence, *, field: str = "{}", error: type[DeplbenchError] = PlanError,
                      strict: bool = False) -> tuple[int, int, float]:
    """Check a closed-loop simulation's settings; return them converted.

    Parameters
    ----------
    runs : int
        Simulated runs, :data:`MIN_RUNS` to :data:`~deplbench.limits.MAX_RUNS`.
    seed : int
        Seed of the runs, 0 to 2**63 − 1 (:data:`deplbench.params.MAX_SEED`).
    confidence : float
        Level of the intervals, in [:data:`MIN_CONFIDENCE`, :data:`MAX_CONFIDENCE`].
    field : str, default "{}"
        How the caller's user names a field: ``"{}"`` (a Python argument),
        ``"--{}"`` (a flag), ``"sweep.evaluation.closed_loop.{}"`` (a sweep key).
    error : type, default PlanError
        The error class raised.
    strict : bool, default False
        Refuse a float for ``runs`` or ``seed`` even when it is integral.

    Returns
    -------
    tuple of (int, int, float)

    Raises
    ------
    error
        One line naming the field.
    """
    runs = _integer(runs, field.format("runs"), error, strict)
    if not MIN_RUNS <= runs <= MAX_RUNS:
        raise error(f"{field.format('runs')}: need between {MIN_RUNS} and {MAX_RUNS} simulated runs, got {runs}")
    seed = check_seed(seed, field=field.format("seed"), error=error, strict=strict)
    return runs, seed, check_confidence(confidence, field=field.format("confidence"), error=error)


def check_confidence(confidence, *, field: str = "confidence", error: type[DeplbenchError] = PlanError) -> float:
    """A level of an evaluation's intervals, static or closed loop: a real number in
    [:data:`MIN_CONFIDENCE`, :data:`MAX_CONFIDENCE`] (a bool is not one); else ``error`` naming ``field``."""
    if not _is_real(confidence) or not MIN_CONFIDENCE <= confidence <= MAX_CONFIDENCE:
        raise error(f"{field}: must be in [0.5, 1 − 1e-12], got {confidence!r}")
    return float(confidence)


def check_flag(value, field: str, error: type[DeplbenchError] = PlanError) -> bool:
    """A yes/no argument: ``True`` or ``False`` (numpy's too, :func:`deplbench.params.is_bool`);
    ``"no"``, 0 or None are not, where ``if value`` would read ``"no"`` as yes."""
    if not is_bool(value):
        raise error(f"{field}: must be True or False, got {value!r}")
    return bool(value)


def check_evaluation(samples, confidence, trajectory, exact) -> tuple[int, float, bool, bool]:
    """A static evaluation's ``samples``, ``confidence`` and its two yes/no arguments, each
    refused naming it (:class:`~deplbench.errors.PlanError`)."""
    return (check_samples(samples), check_confidence(confidence), check_flag(trajectory, "trajectory"),
            check_flag(exact, "exact"))


def check_seed(seed, *, field: str = "seed", error: type[DeplbenchError] = PlanError, strict: bool = False) -> int:
    """A seed as an int: an integer (a bool is not one) within the rule of every seed
    (:func:`deplbench.params.seed_refusal`: the store keeps 64-bit integers); else ``error``
    naming ``field``."""
    seed = _integer(seed, field, error, strict)
    reason = seed_refusal(seed)
    if reason:
        raise error(f"{field}: {reason}")
    return seed


def check_samples(samples, *, field: str = "samples", error: type[DeplbenchError] = PlanError) -> int:
    """Check a number of out-of-sample trajectories (≥ :data:`MIN_SAMPLES`); return it as an int.

    Raises
    ------
    error
        One line naming ``field``.
    """
    if isinstance(samples, bool) or not isinstance(samples, Integral):
        raise error(f"{field}: expected an integer, got {samples!r}")
    if samples < MIN_SAMPLES:
        raise error(f"{field}: need at least {MIN_SAMPLES} trajectories, got {samples}")
    return int(samples)


__all__ = ["CONFIDENCE", "EVALUATE_SAMPLES", "MIN_RUNS", "MIN_SAMPLES", "RUNS", "SEED", "SIMULATE_SAMPLES",
           "SOLVE_SAMPLES", "VERIFY_SAMPLES", "check_closed_loop", "check_confidence", "check_evaluation", "check_flag",
           "check_samples", "check_seed"]
