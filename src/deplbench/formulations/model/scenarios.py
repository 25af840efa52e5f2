"""Joint loss scenarios shared by every algorithm (DepL eq. (3); docs/DESIGN.md, "Model semantics").

Constraint (3) bounds the ω-quantile of ℓ(K). The exact MILP replaces it by its
sample-average approximation over S joint scenarios (Luedtke & Ahmed 2008):
scenario s fixes every random term — the improvement multiplier X of every
(epoch k, model m) and the jump of every (epoch k, allowed switch p) — so the
final loss ℓ_s(K) of a plan is linear in the plan's binaries, and a plan is
SAA-feasible when at most ⌊(1−ω)S⌋ scenarios exceed ℓmax.

Streams: :class:`ScenarioSampler` derives two independent generators from one
seed, ``default_rng([seed, 0])`` for in-sample scenarios (the ones a solver
optimises over) and ``default_rng([seed, 1])`` for out-of-sample judgement, so
the same seed always gives the same scenarios and the evaluation never reuses
the optimisation's draws.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> instance = generate("scaling", n_models=3, horizon=8, seed=0)
>>> sc = ScenarioSampler(instance, seed=3).in_sample(100)
>>> sc.final_losses([0, 0, 1], gammas=[1, 1, 1]).shape
(100,)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from deplbench.errors import InstanceError
from deplbench.limits import check_time

IN_SAMPLE, OUT_OF_SAMPLE = 0, 1

#: The one tolerance on the target ℓmax (docs/DESIGN.md, "Model semantics"):
#: a final loss ℓ meets ℓmax when ℓ ≤ ℓmax + LOSS_TOL·max(1, |ℓmax|)
#: (:func:`loss_threshold`), in every sampled test: the in-sample (SAA)
#: counts of every solver, the out-of-sample verdict and the closed-loop
#: success. It absorbs round-off only, where a plan reaches ℓmax exactly in
#: exact arithmetic (deterministic laws, knapsack targets) and the float sum
#: lands a few ulps above it. The exact paths
#: (:mod:`~deplbench.formulations.evaluation.exact_violation`,
#: :mod:`~deplbench.formulations.exact.static`) use none: they decide with
#: rigorous error bounds or say they cannot.
LOSS_TOL = 1e-9


def loss_threshold(loss_max: float) -> float:
    """ℓmax + LOSS_TOL·max(1, |ℓmax|): the largest final loss that meets ℓmax (eq. (3)).

    >>> loss_threshold(0.0) == LOSS_TOL, loss_threshold(-2.0) == -2.0 + 2 * LOSS_TOL
    (True, True)
    """
    return loss_max + LOSS_TOL * max(1.0, abs(loss_max))


def allowed_violations(omega: float, n_scenarios: int) -> int:
    """⌊(1−ω)S⌋: how many scenarios may exceed ℓmax (eq. (3) as an SAA).

    Computed exactly in rational arithmetic on ω as written (its shortest
    decimal ``repr``), so that (1 − 0.99)·100 is 1, not 0.99999…, and
    (1 − 1e-12)·1000 is 999, not 1000 (a float guard that rounds up would let
    every scenario miss ℓmax).

    Raises
    ------
    InstanceError
        When the count reaches S: the SAA constraint would be vacuous (every
        scenario may exceed ℓmax), so no plan could be called optimal under it.
    """
    n = int(n_scenarios)
    count = math.floor((1 - Fraction(repr(float(omega)))) * n)
    if n > 0 and count >= n:
        raise InstanceError(f"omega: ω = {omega!r} allows all {n} scenarios to exceed ℓmax; the chance "
                         "constraint (3) would be vacuous on this sample")
    return int(max(count, 0))


def thin_sample_note(omega: float, n_scenarios: int) -> str:
    """A sentence when ω·S < 1 (else ""): the SAA then asks only the best of
    the S scenarios to reach ℓmax, so the sample cannot resolve the level ω."""
    n = int(n_scenarios)
    if n < 1 or Fraction(repr(float(omega))) * n >= 1:
        return ""
    return (f"ω·S = {omega:g}·{n} < 1: the SAA asks only 1 of S = {n} scenarios to reach ℓmax, so this "
            f"sample cannot resolve ω (use S ≥ {math.ceil(1 / omega):.0f} scenarios)")


def quantile_rank(omega: float, n: int) -> int:
    """1-based rank of the order statistic that the SAA treats as the
    ω-quantile: the plan is SAA-feasible iff X_(rank) ≤ ℓmax."""
    return n - allowed_violations(omega, n)


@dataclass(frozen=True)
class Scenarios:
    """S joint draws of every random loss term.

    Attributes
    ----------
    improvement : ndarray, shape (S, K̄, |M|)
        X draws: the run term of model m at epoch k in scenario s is
        ``−γ · run_scale[k, m] · improvement[s, k, m]``.
    jump : ndarray, shape (S, K̄, |P|)
        l_sw draws for switch pair p (``instance.switch_pairs[p]``) happening
        at epoch k (the epoch that uses the new model).
    run_scale : ndarray, shape (K̄, |M|)
        A_m · decay_m(k) (``instance.run_scale``).
    initial_loss : float
    seed : int
    stream : int
        0 in-sample, 1 out-of-sample.
    """

    improvement: np.ndarray
    jump: np.ndarray
    run_scale: np.ndarray
    switch_index: dict
    initial_loss: float
    seed: int
    stream: int

    @property
    def n_scenarios(self) -> int:
        return self.improvement.shape[0]

    def final_losses(self, models, gammas) -> np.ndarray:
        """ℓ_s(K) for every scenario, for a model-index sequence (length K)
        and the data multiplier γ of each epoch.

        Raises
        ------
        KeyError
            If two consecutive models form a switch that is not allowed.
        """
        models = np.asarray(models, dtype=int)
        gammas = np.asarray(gammas, dtype=float)
        k = np.arange(models.size)
        run = -(gammas * self.run_scale[k, models])[None, :] * self.improvement[:, k, models]
        loss = self.initial_loss + run.sum(axis=1)
        for epoch in range(1, models.size):
            prev, cur = int(models[epoch - 1]), int(models[epoch])
            if prev != cur:
                loss = loss + self.jump[:, epoch, self.switch_index[(prev, cur)]]
        return loss

    def violations(self, models, gammas, loss_max: float) -> int:
        """Number of scenarios whose final loss exceeds ℓmax."""
        return int(np.count_nonzero(self.final_losses(models, gammas) > loss_threshold(loss_max)))


def _draw_columns(rng, dists, n: int, K: int, what: str = "law", checked: bool = False) -> np.ndarray:
    """(n, K, len(dists)) draws, one column per distribution.

    When every distribution is a point mass (the knapsack reduction, where
    all |M|(|M|−1) switch pairs exist), the result is a read-only broadcast
    view that costs no memory; point masses never consume random numbers,
    so the stream is the same either way.

    With ``checked`` the deadline (:func:`deplbench.limits.check_time`) is
    read before every column (a heuristic's draws over 20,000 switch laws
    come before its first loop); ``what`` names the columns in the message.
    The MILP draws checked as well: its scenarios come before any bound exists.
    """
    if all(d.is_deterministic for d in dists):
        values = np.array([d.mean() for d in dists], dtype=float)
        return np.broadcast_to(values[None, None, :], (n, K, len(dists)))
    # One contiguous (n, K) block per law, seen as (n, K, laws): a law's draws touch only their
    # own pages, so the first write does not fault in the whole array (1.6 GB with 20,100 switch
    # laws) before the next deadline check.
    out = np.empty((len(dists), n, K))
    for j, d in enumerate(dists):
        if checked:
            check_time(f"drawing scenarios, {what} {j} of {len(dists)}")
        out[j] = d.sample(rng, (n, K))
    return np.moveaxis(out, 0, -1)


class ScenarioSampler:
    """Seeded scenario source for one instance (see module docstring)."""

    def __init__(self, instance, seed: int = 0):
        self.instance = instance
        self.seed = int(seed)

    def generator(self, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream])

    def _draw(self, n: int, stream: int, checked: bool = False) -> Scenarios:
        inst = self.instance
        source = getattr(inst, "scenario_source", None)
        if source is not None:
            # a reduced instance: the original's draws, its kept columns (preprocess docstring)
            origin, models, switches = source
            full = ScenarioSampler(origin, self.seed)._draw(n, stream, checked)
            improvement, jump = full.improvement[:, :, models], full.jump[:, :, switches]
        else:
            rng = self.generator(stream)
            K = inst.horizon
            improvement = _draw_columns(rng, [m.improvement for m in inst.models], n, K, "model", checked)
            jump = _draw_columns(rng, [sw.jump for sw in inst.switches], n, K, "switch", checked)
        return Scenarios(
            improvement=improvement,
            jump=jump,
            run_scale=inst.run_scale,
            switch_index=inst.switch_index,
            initial_loss=float(inst.initial_loss),
            seed=self.seed,
            stream=stream,
        )

    def in_sample(self, n_scenarios: int, checked: bool = False) -> Scenarios:
        """The S scenarios a solver optimises over (stream 0); ``checked``: the deadline is
        read before every law's draws (:func:`_draw_columns`)."""
        return self._draw(int(n_scenarios), IN_SAMPLE, checked)

    def out_of_sample(self, n_scenarios: int) -> Scenarios:
        """Fresh scenarios for judging a plan (stream 1)."""
        return self._draw(int(n_scenarios), OUT_OF_SAMPLE)


__all__ = ["Scenarios", "ScenarioSampler", "allowed_violations", "thin_sample_note", "quantile_rank", "IN_SAMPLE",
           "OUT_OF_SAMPLE", "LOSS_TOL", "loss_threshold"]
