"""The seeds of DepL's own out-of-sample draws, derived from the solver's ``seed``.

DepL (and best-exp, which runs its loop) checks each candidate plan on
fresh draws (:func:`check_seed`), and ``calibrate=True`` draws its tests
and estimates from the :data:`CHECK_STREAMS` seeds just above that one
(:mod:`deplbench.solvers.depl.calibration`). Every one of them is a seed
(an integer in [0, ``MAX_SEED``]) for every ``seed`` the solver accepts.
"""

from __future__ import annotations

from deplbench.params import MAX_SEED

#: Seeds above :func:`check_seed` kept free for the calibration's streams (its tests and
#: estimation draw from ``check_seed(seed) + 1`` to ``+ 1 + CALIBRATION_STEPS``).
CHECK_STREAMS = 16
#: The smallest check seed: far from the suite's evaluation seed (``eval_seed``, default 0).
CHECK_BASE = 104729
#: ``check_seed`` lies in [CHECK_BASE, MAX_SEED − CHECK_STREAMS]: this many values.
CHECK_SPAN = MAX_SEED - CHECK_STREAMS - CHECK_BASE + 1


def check_seed(seed: int) -> int:
    """Seed of DepL's own out-of-sample check, derived from ``seed`` and at
    least 104729, so the suite's evaluation (``eval_seed``, default 0, or any
    seed below 104729) judges the plan on draws the retry loop has not seen.
    (A seed may map to itself: the modulo has one fixed point, near 6.3·10¹⁸.)

    It is 104729 + 7919·seed, taken modulo :data:`CHECK_SPAN`, which keeps it
    and the :data:`CHECK_STREAMS` seeds above it within [104729, MAX_SEED]:
    7919·seed alone passes MAX_SEED from seed ≈ 1.16·10¹⁵, and every seed
    below that keeps the value 104729 + 7919·seed.
    """
    return CHECK_BASE + (int(seed) * 7919) % CHECK_SPAN


__all__ = ["CHECK_BASE", "CHECK_SPAN", "CHECK_STREAMS", "check_seed"]
