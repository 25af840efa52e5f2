"""The adaptive reference, part 2: the multiplier search of the lower bound.

Any (λ, μ) ≥ 0 gives a valid bound (:meth:`~deplbench.formulations.adaptive.chain.Pass.bound`,
weak duality, rounding subtracted); the searches here only choose good
multipliers: cutting planes on μ (:func:`best_mu`), a safeguarded fixed
point on λ (:func:`lower_bound_search`), a coarse grid first
(:func:`multires_search`). Guarantees: package docstring
(:mod:`deplbench.formulations.adaptive`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from deplbench.formulations.adaptive.chain import Chain, Pass, build_chain, dp
from deplbench.limits import TimeLimitReached, check_time


class SearchStopped(TimeLimitReached):
    """The deadline (:mod:`deplbench.limits`) passed between two DP passes of a search.

    ``passes`` are the passes the stopped search had made (with those of a
    coarser grid it started from): each is a valid bound at every ω (weak
    duality; the optimistic chain of any grid relaxes the same problem), so
    the caller returns the best of them. ``carried`` says whether they carry
    the deadline (:mod:`~deplbench.formulations.adaptive.timed`).
    """

    def __init__(self, message: str, passes: list, carried: bool = False):
        super().__init__(message)
        self.passes = list(passes)
        self.carried = carried

# --------------------------------------------------------------------------
# the multiplier search (lower bound)
# --------------------------------------------------------------------------


@dataclass
class Search:
    """Every DP pass made (each one a valid bound at every ω) and the best."""

    chain: Chain
    omega: float
    passes: list = field(default_factory=list)
    coarse_passes: int = 0
    lam_converged: bool = False
    #: Passes of another valid bound at every ω (the deadline carried,
    #: :mod:`~deplbench.formulations.adaptive.timed`): counted in :meth:`bound`, not in :attr:`best`.
    extra: list = field(default_factory=list)
    #: Water-filling passes (:mod:`~deplbench.formulations.adaptive.waterfill`, the deadline carried
    #: exactly): valid at every ω, counted in :meth:`bound`.
    water: list = field(default_factory=list)

    #: Whether the passes carry the deadline (a :class:`~.timed.TimedSearch`).
    carried: ClassVar[bool] = False

    def check(self) -> None:
        """The outer stop, read between two passes: raise :class:`SearchStopped` with the
        passes so far once the deadline has passed."""
        try:
            check_time(f"adaptive-opt's multiplier search, before DP pass {len(self.passes) + 1} on "
                       f"{self.chain.i0} buckets")
        except TimeLimitReached as exc:
            raise SearchStopped(str(exc), self.passes, carried=self.carried) from None

    def within_time(self, fn, *args) -> Pass:
        """``fn(*args)``, a DP pass, after :meth:`check`. A pass reads the deadline before
        every epoch, so a stop inside it comes within one epoch; it stops the search the
        same way, with the passes finished before it."""
        self.check()
        try:
            return fn(*args)
        except SearchStopped:
            raise
        except TimeLimitReached as exc:
            raise SearchStopped(str(exc), self.passes, carried=self.carried) from None

    def run(self, lam: float, mu: float) -> Pass:
        p = self.within_time(dp, self.chain, lam, mu)
        self.passes.append(p)
        return p

    @property
    def best(self) -> Pass:
        tm = self.chain.st.time_max
        return max(self.passes, key=lambda p: p.bound(self.omega, tm))

    def bound(self, omega: float | None = None) -> float:
        """max over the passes (and :attr:`extra`, :attr:`water`) of their proven lower bounds."""
        w = self.omega if omega is None else omega
        return max(p.bound(w, self.chain.st.time_max) for p in self.passes + self.extra + self.water)

    def priced_bound(self, omega: float | None = None) -> float:
        """The bound of the priced passes alone (the deadline relaxed to E[T] ≤ Tmax)."""
        w = self.omega if omega is None else omega
        return max(p.bound(w, self.chain.st.time_max) for p in self.passes)


#: The μ search grows μ no further than MU_CAP times the instance's cost scale
#: (:meth:`~deplbench.formulations.adaptive.chain.Setting.cost_scale`; 10¹⁵ at a scale of 10⁴);
#: a first pass at MU_PROBE times it gives a run's cost, the first μ tried.
MU_CAP, MU_PROBE = 1e11, 1e8
#: The μ search stops when the cutting-plane model promises less than this
#: relative gain; the λ search when E[T] is this close to Tmax (relative).
MU_RTOL, LAM_RTOL = 2e-5, 1e-3


def best_mu(search: Search, lam: float, omega: float, guess: float | None, iters: int) -> tuple[float, float]:
    """Maximise g(μ) = V₀(λ, μ) − μ(1 − ω) over μ ≥ 0 by cutting planes.

    g is concave and piecewise linear (a minimum over policies of lines), and
    each pass gives a tangent: P(fail) − (1 − ω) is a supergradient. Besides,
    V₀ ≤ μ (stopping at once is a policy), so g ≤ ωμ: a free cut. Between the
    last passes on either side of the maximum (or the free cut) the next μ is
    where their tangents meet — exact after a few steps when few policies
    compete (typically train on, or stop at once). Stops when the tangents'
    meeting point is no higher than the best pass (:data:`MU_RTOL`) or after
    ``iters`` steps.

    Returns (μ, E[T] of the mix): the two policies bracketing the critical
    multiplier, mixed so that P(fail) = 1 − ω (Beutler & Ross 1985), have
    that expected time — the supergradient of max_μ in λ, used by the λ search.
    """
    risk = 1.0 - omega
    tm = search.chain.st.time_max

    def cut(p):
        return p.mu, p.bound(omega, tm) + lam * tm, p.p_fail - risk      # (μ, g, slope)

    lo = None                                       # None: the free cut g ≤ ωμ through 0
    hi, grow = search.run(lam, guess if guess else 1.0), 1.25
    # P(fail) within its rounding bound of 1 − ω counts as feasible: μ is not driven
    # towards infinity by a difference that the arithmetic cannot resolve
    cap = MU_CAP * search.chain.st.cost_scale()
    while hi.p_fail > risk + hi.err_fail and hi.mu < cap:   # a warm start is usually close: grow slowly first
        lo, hi, grow = hi, search.run(lam, hi.mu * grow), 4.0
    for _ in range(max(1, iters)):
        m0, g0, s0 = cut(lo) if lo is not None else (0.0, 0.0, omega)
        m1, g1, s1 = cut(hi)
        if s1 >= 0 or s0 <= s1:
            break
        mid = (g1 - g0 + s0 * m0 - s1 * m1) / (s0 - s1)
        top = g0 + s0 * (mid - m0)
        if not m0 < mid < m1 or top <= max(g0, g1) + MU_RTOL * abs(top):   # relative: costs may be ≪ 1
            break
        p = search.run(lam, mid)
        if p.p_fail > risk + p.err_fail:
            lo = p
        else:
            hi = p
    f_lo, t_lo = (lo.p_fail, lo.time) if lo is not None else (1.0, 0.0)
    gap = f_lo - hi.p_fail
    w = (f_lo - risk) / gap if gap > 0 else 1.0     # weight of the feasible side
    return hi.mu, w * hi.time + (1.0 - w) * t_lo


#: λ steps allowed, besides ``iters_lam``, while E[T] − Tmax has not changed
#: sign yet (bracketing; each step moves λ by the fixed-point factor, at most
#: :data:`LAM_JUMP` either way).
BRACKET_STEPS, LAM_JUMP = 40, 1e4
#: λ is searched within this span, widened to hold the first price :func:`lam_guess` times it
#: (cost units of 10¹⁰⁰ and more move λ past 10³⁰; money per time is λ's unit).
LAM_SPAN = (1e-30, 1e30)


def lam_guess(chain: Chain) -> float:
    """A first time price: the one at which two epochs of the cheapest usable
    (model, cluster) pair, each priced at x* = sqrt(λc/κ), fill Tmax (capped at r).

    Independent of r, so a huge capacity does not start the search where every
    priced epoch is nearly instantaneous."""
    st = chain.st
    tm = st.time_max
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(st.usable, st.kappa[None, :] * st.compute, np.inf)   # κc: λ = κc/t² at compute time t
    kc = float(np.min(need)) if np.isfinite(need).any() else 1.0
    return max(1e-12, kc * (2.0 / tm) ** 2) if kc > 0 else 1e-9


def lower_bound_search(chain: Chain, omega: float, iters_lam: int = 6, iters_mu: int = 6,
                       lam0: float | None = None, mu0: float | None = None, step: float = 4.0) -> Search:
    """The λ–μ search: on λ, the fixed point of λ ← λ·(E[T]/Tmax)² (E[T] of the
    inner optimum's mix; the priced compute time scales as λ^(−1/2)),
    safeguarded by a bracket on the sign of E[T] − Tmax; inner :func:`best_mu`.

    Until the sign of E[T] − Tmax has changed (no bracket yet) λ follows the
    fixed point with jumps of up to :data:`LAM_JUMP`, for at most
    :data:`BRACKET_STEPS` steps; once bracketed, ``iters_lam`` steps, each
    at most a factor ``step``, bisected in log scale when the step leaves
    the bracket. ``lam0``, ``mu0`` warm-start (default :func:`lam_guess` and a
    μ of the order of a run's cost). Any (λ, μ) ≥ 0 gives a valid bound;
    the search only tightens it. :attr:`Search.lam_converged` says whether
    E[T] reached Tmax within :data:`LAM_RTOL` (or the bracket closed to that
    ratio)."""
    s = Search(chain, omega)
    st = chain.st
    tm = st.time_max
    ref = lam_guess(chain)
    lam = lam0 or ref
    scale = st.cost_scale()
    # μ of the order of a run's cost
    mu = mu0 if mu0 else max(1e-10 * scale, s.within_time(dp, chain, lam, MU_PROBE * scale).cost)
    lo, hi = 0.0, math.inf                         # E[T] > Tmax at lo, ≤ Tmax at hi
    refine = 0
    for _ in range(iters_lam + 1 + BRACKET_STEPS):
        mu, t_mix = best_mu(s, lam, omega, mu, iters_mu)
        if abs(t_mix - tm) <= LAM_RTOL * tm:
            s.lam_converged = True
            break
        if t_mix > tm:
            lo = lam
        else:
            hi = lam
        bracketed = lo > 0 and math.isfinite(hi)
        if bracketed and hi <= lo * (1.0 + LAM_RTOL):
            s.lam_converged = True                 # E[T] jumps across Tmax here: the kink of the dual
            break
        if bracketed:
            refine += 1
            if refine > iters_lam:
                break
        nxt = lam * (t_mix / tm) ** 2 if t_mix > 0 else lam / LAM_JUMP
        jump = step if bracketed else LAM_JUMP
        nxt = min(max(nxt, lam / jump), lam * jump)
        if not lo < nxt < hi:
            nxt = math.sqrt(lo * hi) if math.isfinite(hi) and lo > 0 else nxt
        if nxt < LAM_SPAN[0] * min(1.0, ref) or nxt > LAM_SPAN[1] * max(1.0, ref):
            if hi < math.inf and lo == 0:
                s.lam_converged = True             # E[T] ≤ Tmax as λ → 0: the deadline does not bind
            break
        lam = nxt
    return s


#: The coarse grid of the multiplier search is the fine one divided by this.
COARSE = 8


def multires_search(instance, chain: Chain, omega: float, iters_lam: int, iters_mu: int) -> Search:
    """The full λ–μ search on a grid COARSE times coarser, then a short search on
    ``chain`` warm-started there (brackets grown by 1.5, two λ steps). Any multiplier gives a valid bound
    on ``chain``; the coarse search only finds good ones cheaply. Grids under
    ``COARSE·50`` buckets are searched directly."""
    buckets = chain.i0
    if buckets < COARSE * 50:
        return lower_bound_search(chain, omega, iters_lam, iters_mu)
    coarse = lower_bound_search(build_chain(instance, buckets // COARSE, chain.optimistic), omega, iters_lam,
                                iters_mu)
    c = coarse.best
    try:
        fine = lower_bound_search(chain, omega, 2, max(2, iters_mu - 2), lam0=c.lam, mu0=c.mu, step=1.5)
    except SearchStopped as exc:       # the coarse passes are valid bounds too
        raise SearchStopped(str(exc), coarse.passes + exc.passes) from None
    fine.coarse_passes = len(coarse.passes)
    if not fine.lam_converged and coarse.lam_converged:
        # the warm start's two steps may not re-close the bracket; the bound is valid anyway
        fine.lam_converged = abs(fine.best.time - fine.chain.st.time_max) <= 10 * LAM_RTOL * fine.chain.st.time_max
    return fine


__all__ = ["BRACKET_STEPS", "COARSE", "LAM_JUMP", "LAM_SPAN", "LAM_RTOL", "MU_CAP", "MU_PROBE", "MU_RTOL", "Search",
           "SearchStopped", "best_mu",
           "lam_guess", "lower_bound_search", "multires_search"]
