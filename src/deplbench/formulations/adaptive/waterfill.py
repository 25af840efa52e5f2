"""The adaptive reference, part 6: the deadline carried exactly, by water-filling.

What is bounded. The adaptive optimum (package docstring) from below, with
"T ≤ Tmax on every run" kept exactly where the priced bound relaxes it to
E[T] ≤ Tmax. A policy tree run with remaining time τ whose epochs' money is
at least A/d + b in their duration d (a tangent of κc/(d − s), eq. (2)
with the communication time s of eq. (4)), its time allocated optimally,
pays W/τ + B with W = (√A + √E[W′])² at a trained epoch (W′ its
children's) and 0 at a stop: min over d of A/d + E[W′]/(τ − d), the
water-filling of the deadline. Time therefore leaves the state. At a
failure price μ, with G = F + B/μ (F = P(fail)), a state offers the set
of its (W, G) pairs, convex because a policy may randomise; it is kept as
its support function σ(ν) = min W + νG at J slopes 0 = ν₀ < … < ν_(J−1) = ν*
= μ·Tmax:

* the children's sum is the expectation of their support functions: the
  priced DP's FFT correlations (:func:`~deplbench.formulations.adaptive.chain.correlate_rows`),
  one per slope;
* an epoch: W = min over t ∈ (0, 1) of A/t + y/(1 − t) (t its share of
  the time), so σ_parent(ν) = min_t A/t + σ_sum(ν(1 − t))/(1 − t) + νb/μ;
  σ_sum is replaced by the linear interpolation of its values at the
  slopes (below it: σ_sum is concave), on whose segment c (line y_c +
  D_c ν′) the least over t is at least (√A + √y_c)² + νD_c when y_c ≥ 0
  and A + ν(y_c/ν_c + D_c) otherwise (:func:`epoch_support`);
* a stop is (W, G) = (0, 1): σ = ν; the success bucket σ = 0.

At the root, for every policy with P(fail) ≤ 1 − ω: E[cost] ≥
σ_root(ν*)/Tmax − μ(1 − ω) (weak duality, every μ ≥ 0).

Relaxed: the loss grid (the optimistic chain, as the priced bound), the
J slopes (interpolation from below), the capacity x ≤ r (ignored) and the
communication time (the tangent at the priced epoch's duration d₀ with the
capacity left out, exact to second order in d − d₀). Exact: the deadline on every run and the
chance constraint (randomised). Model switches are the priced DP's (their
jump kernel, no cost of their own).

Rounding (the pass's guarantee holds in the arithmetic actually done).
Every value of the state is kept ≤ its exact value plus η·ν, ν its slope:
a correlation adds :func:`~deplbench.formulations.adaptive.chain.fft_error`
(its own rounding, the kernels' probabilities included) and maps η to
η·(its mass); the epoch's step is rounded downwards term by term
(:func:`epoch_support`) and, being the least of a shift-equivariant
family, maps "≤ exact + η·ν" to itself (adding ην′ to σ_sum adds ην to
every candidate); minima are exact. :meth:`WaterPass.bound` subtracts
η·ν* and the rounding of the final expression. σ(0) = 0 is exact (every
W ≥ 0 and the stop has W = 0), so the interpolation's first segment goes
through the origin. A pass computes in a power of 2 near the instance's
cost scale (:func:`cost_unit`; scaling by it is exact), so that neither its
bound nor the failure prices it can take (:data:`NU_RANGE`) depend on the
unit of cost.

References
----------
DepL paper, eq. (2) (cost), eq. (3) (chance constraint), eq. (4) (deadline);
measured gains: docs/adaptive.md, "The deadline carried exactly, by
water-filling".
"""

from __future__ import annotations

import contextvars
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from deplbench.formulations.adaptive import kernels
from deplbench.formulations.adaptive.chain import Chain, build_chain, distinct_rows, switch_values
from deplbench.formulations.adaptive.correlation import UNIT, correlate_rows
from deplbench.formulations.adaptive.search import lower_bound_search
from deplbench.formulations.adaptive.settings import SLOPES
from deplbench.limits import check_time

#: The geometric slopes span ν*/SPAN to ν*: a run's later epochs see ν* times the share of Tmax left.
SPAN = 1e3
#: Grids of fewer loss cells than this are not split between threads (the split would cost more than
#: it saves).
SPLIT_CELLS = 2048
#: A thread's loss buckets are taken in blocks of at least this many (its whole share when fewer than
#: twice): the epoch's steps then work in cache — at J = 64 slopes one (J, CHUNK) array is 0.5 MiB,
#: and a step reads and writes a few — which is faster on fine grids (docs/performance.md); each step
#: reads its own bucket alone, so the blocks change no value.
CHUNK = 1024
#: ν* = μ·Tmax must lie here: below, the slopes ν*/SPAN… become subnormal; above, the FFT of
#: the stop values (ν) overflows.
NU_RANGE = (1e-280, 1e280)


def tangent_terms(chain: Chain, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Per (m, n): A and b with A/d + b ≤ κc/(d − s) for every duration d > s.

    The tangent of the convex κc/(d − s) at the priced epoch's d₀ = c/x*(λ) + s with the capacity
    left out, x* = √(λc/κ) (:meth:`~deplbench.formulations.adaptive.chain.Setting.priced` without
    its cap r): A = κc·(d₀/(d₀ − s))², b = −κc·s/(d₀ − s)²; the curve lies above it everywhere (it
    touches at d₀ only), so any d₀ gives a valid pair. The pass relaxes the capacity, so it is
    where the relaxed problem's epochs lie that the tangent should touch; a capped d₀ would also
    give clusters that differ only in r different pairs, whose least (:func:`_classes` keeps
    each) lies below either tangent. Both are lowered by a few ulps so that the rounding of their
    evaluation cannot lift A/d + b above the curve. Where that tangent is not finite (λ = 0,
    κ = 0, a compute time that under- or overflows), the pair keeps (κc, 0):
    κc/d ≤ κc/(d − s) too — a usable pair is never dropped. Unusable pairs: A = inf."""
    st = chain.st
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kc = st.kappa[None, :] * st.compute
        tc = np.sqrt(kc / lam)                       # c/x*, x* = √(λc/κ): the uncapped compute time
        A = kc * ((tc + st.comm) / tc) ** 2 * (1.0 - 16.0 * UNIT)
        ratio = kc / tc
        b = -ratio * (st.comm / tc)                 # as two ratios: κc·s alone may underflow
        b = b - 16.0 * UNIT * (np.abs(b) + ratio)
    # the margins are relative: a term in the subnormal range (or flushed to 0) has lost more than they
    # cover, so such a pair keeps the tangent-free (κc, 0)
    tiny = np.finfo(float).tiny
    tangent = (np.isfinite(A) & np.isfinite(b) & ((kc == 0.0) | (A >= tiny))
               & ((st.comm == 0.0) | (ratio >= tiny) & (np.abs(b) >= tiny)))
    A = np.where(tangent, A, kc * (1.0 - 16.0 * UNIT))
    b = np.where(tangent, b, 0.0)
    return np.where(st.usable, A, np.inf), np.where(st.usable, b, 0.0)


def epoch_support(S: np.ndarray, nus: np.ndarray, A: np.ndarray) -> np.ndarray:
    """A lower bound on min_t A/t + Ŝ(ν_i(1 − t))/(1 − t) for every slope ν_i, in floating point.

    Parameters
    ----------
    S : ndarray, (R, J, L1)
        The children's sum at the slopes ``nus`` (S[:, 0] = 0: σ(0) = 0).
    nus : ndarray, (J,)
        0 = ν₀ < ν₁ < … (any spacing: each segment's line is taken below both its end points).
    A : ndarray, (R,)
        The epoch's A per row (inf: unusable).

    Returns
    -------
    ndarray, (R, J, L1)
        Each value at most the exact one for the linear interpolation of S (so at most the
        exact one for any concave σ ≥ S): every candidate line is rounded downwards.

    Notes
    -----
    Segment c of the interpolation is the line y_c + D_c ν′ on [ν_c, ν_(c+1)]. For t with
    ν(1 − t) on it, A/t + (y_c + D_c ν(1 − t))/(1 − t) = A/t + y_c/(1 − t) + νD_c, whose least
    over all t is (√A + √y_c)² + νD_c when y_c ≥ 0; when y_c < 0 (c ≥ 1), A/t ≥ A and
    y_c/(1 − t) ≥ y_c ν/ν_c on the segment give A + ν(y_c/ν_c + D_c). Each candidate is a line
    H_c + ν P_c in ν; the value at ν_i is the least over c < i (the segments below ν_i).
    """
    R, J, L1 = S.shape
    T = np.ascontiguousarray(S.transpose(1, 0, 2)).reshape(J, R * L1)
    seg = segments(T, nus)
    out = envelope(*lines(seg, np.repeat(np.asarray(A, dtype=float), L1)), nus)
    return out.reshape(J, R, L1).transpose(1, 0, 2)


def segments(T: np.ndarray, nus: np.ndarray, compiled: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interpolation's segments of the columns of T (J, C) as lines rounded downwards:
    intercepts y (J − 1, C), slopes D and, where y < 0, the slope q of the line A + νq
    (:func:`epoch_support`, Notes). Shared by every epoch reading the same expectation.
    ``compiled``: by :func:`~deplbench.formulations.adaptive.kernels.compiled`'s kernel where numba is
    there (the same numbers, bit for bit); False: the numpy reference below."""
    kern = kernels.compiled() if compiled else None
    if kern is not None:
        if T.ndim != 2 or nus.shape != (T.shape[0],):       # the compiled loops check no bounds
            raise ValueError(f"T {T.shape} and nus {nus.shape}: one slope per row of T")
        T = np.ascontiguousarray(T, dtype=float)
        y, D = np.empty((T.shape[0] - 1, T.shape[1])), np.empty((T.shape[0] - 1, T.shape[1]))
        q = np.empty_like(y)
        with np.errstate(all="ignore"):
            neg = kern.segments(T, np.ascontiguousarray(nus, dtype=float), y, D, q)
        return (y, D, q) if neg else (y, D, D)
    u = UNIT
    T = T.copy()
    T[0] = 0.0
    nu = nus[:, None]
    D = np.diff(T, axis=0)
    D /= np.diff(nus)[:, None]                   # any rounding here is absorbed: y is lowered below both points
    y = T[:-1] - nu[:-1] * D
    np.minimum(y, T[1:] - nu[1:] * D, out=y)                    # the line below both points
    mag = np.abs(T[:-1])
    mag += np.abs(T[1:])
    mag += nu[1:] * np.abs(D)
    y -= 4.0 * u * mag                                          # their rounding: 3u of these terms
    del mag
    # segment 0 goes through the origin (σ(0) = 0 exactly): y = 0, slope lowered to stay below S₁
    y[0] = 0.0
    D[0] -= 4.0 * u * np.abs(D[0])
    neg = y < 0.0
    q = D
    if neg.any():
        # y < 0: the line A + ν(y/ν_c + D); ν_c > 0 there (c ≥ 1)
        nc = np.where(nus[:-1] > 0, nus[:-1], 1.0)[:, None]
        yq = y / nc
        q = yq + D
        q -= 4.0 * u * (np.abs(yq) + np.abs(D))
        q = np.where(neg, q, D)
    return y, D, q


def lines(seg: tuple, a: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The candidate lines H + νP of an epoch with tangent term ``a`` (per column or one) on the
    segments ``seg`` (:func:`segments`): H = (√A + √y)² and P = D where y ≥ 0, H = A and P = q
    where y < 0, each rounded downwards; A = inf: every H inf."""
    u = UNIT
    y, D, q = seg
    a = np.asarray(a, dtype=float)
    if not np.isfinite(a).any():
        return np.full_like(y, np.inf), D
    with np.errstate(invalid="ignore", over="ignore"):
        H = np.sqrt(np.maximum(y, 0.0))
        H += np.sqrt(a)
        H *= H
        H *= 1.0 - 8.0 * u                                     # (√A + √y)²: five roundings
        if q is not D:
            neg = y < 0.0
            H = np.where(neg, a * (1.0 - 8.0 * u), H)
            return H, q
    return H, D


def envelope(H: np.ndarray, P: np.ndarray, nus: np.ndarray, compiled: bool = True) -> np.ndarray:
    """min over segments c < i of H_c + ν_i P_c at every slope ν_i (J, C), 0 at ν₀, rounded downwards.

    Every candidate is computed (J(J − 1)/2 a column; every one is needed: the least need not be
    near ν_i, nor unique); a minimum is exact whatever the order of its candidates. ``compiled``: the
    candidates and their least in :func:`~deplbench.formulations.adaptive.kernels.compiled`'s loop
    where numba is there (the same numbers, bit for bit); False: the numpy reference, slope by slope
    the i candidate rows at once into one buffer."""
    J = nus.size
    nu = nus[:, None]
    best = np.empty((J, H.shape[1]))
    kern = kernels.compiled() if compiled and J > 1 else None
    if kern is not None and not (H.ndim == 2 and H.shape == P.shape and H.shape[0] >= J - 1):
        raise ValueError(f"H {H.shape}, P {P.shape} and nus {nus.shape}: a line per segment below each slope")
    with np.errstate(invalid="ignore"):
        if kern is not None:
            with np.errstate(all="ignore"):
                kern.envelope(np.ascontiguousarray(H, dtype=float), np.ascontiguousarray(P, dtype=float),
                              np.ascontiguousarray(nus, dtype=float), best)
        else:
            best[0] = 0.0
            buf = np.empty((max(J - 1, 0), H.shape[1]))
            for i in range(1, J):
                cand = buf[:i]
                np.multiply(nus[i], P[:i], out=cand)
                cand += H[:i]
                np.min(cand, axis=0, out=best[i])
        # rounding of H + νP and of the minimum's comparisons: 4u of the candidate's terms
        slack = np.abs(best)
        slack += 2.0 * nu * np.abs(P).max(axis=0)
        slack[~np.isfinite(best)] = 0.0                      # an unusable epoch stays +inf
        best -= 4.0 * UNIT * slack
    return best


@dataclass
class WaterPass:
    """One water-filling pass at failure price μ (tangent at time price λ)."""

    lam: float
    mu: float
    nu: float              # ν* = μ·Tmax as computed: the root's slope
    value: float           # σ_root(ν*) as computed
    eta: float             # the rounding bound per unit of slope (module docstring)
    #: K̄·max |b| ≥ Σ|b| along a run: the scale of the own terms' last rounding and of the mismatch
    #: E[B]·(1 − ν*/(μ·Tmax)) between ν* = fl(μ·Tmax) and μ·Tmax, both covered by :meth:`bound`'s margin.
    b_sum: float
    slopes: int
    err: float             # η·ν*/Tmax: the rounding bound in cost units, as a priced pass's
    #: The chain's Tmax the pass ran with (the setting's, slightly above the instance's): the bound's.
    time_max: float
    grid: dict = field(default_factory=dict)
    seconds: float = 0.0

    #: Read where a priced :class:`~deplbench.formulations.adaptive.chain.Pass` is: no policy, no P(fail).
    p_fail: ClassVar[float] = math.nan
    err_fail: ClassVar[float] = 0.0

    def bound(self, omega: float, time_max: float | None = None) -> float:
        """σ_root(ν*)/Tmax − μ(1 − ω) less the pass's rounding: a valid lower bound at every ω.

        Tmax is the pass's own (:attr:`time_max`; ``time_max`` is accepted as a priced pass's
        ``bound`` takes it, and ignored: another value would not bound). −inf when the pass's
        value is not finite (ν* beyond what binary64 carries)."""
        tm = self.time_max
        risk = self.nu / tm * (1.0 - omega)
        v = self.value - self.eta * self.nu
        raw = v / tm - risk
        out = raw - 8.0 * UNIT * (abs(v) / tm + risk + self.b_sum + self.err)
        return out if math.isfinite(out) else -math.inf


def least_action(stop: np.ndarray, stay: list, moved: dict) -> np.ndarray:
    """(M + 1, J, L + 1): per current model m (m = M: none yet) the least of the stop, model b's epoch
    (``stay[b]``: from no model or from b itself) and the allowed switches (``moved[(m, b)]``); None:
    no such epoch. The success bucket and the slope 0 stay 0 (σ(0) = 0)."""
    M = len(stay)
    cur = np.empty((M + 1, *stop.shape))
    for m in range(M + 1):
        v = stop.copy()
        for bb in range(M):
            w = stay[bb] if (m == M or bb == m) else moved.get((m, bb))
            if w is not None:
                np.minimum(v, w, out=v)
        v[:, 0] = 0.0
        v[0] = 0.0
        cur[m] = v
    return cur


def _classes(A: np.ndarray, b: np.ndarray, mu: float) -> list[tuple[float, float]]:
    """The distinct (A, b/μ) of one model's clusters, dominated ones (A and b both at least
    another's) left out: their candidates are never below that one's. Unusable (A = inf): none."""
    pairs = sorted({(float(a), float(bb)) for a, bb in zip(A, b) if math.isfinite(a)})
    kept: list[tuple[float, float]] = []
    for a, bb in pairs:                       # by A ascending: kept if its b is below every kept one's
        if all(bb < kb for _, kb in kept):
            kept.append((a, bb))
    return [(a, bb / mu) for a, bb in kept]


def waterfill_pass(chain: Chain, mu: float, lam: float, slopes: int = SLOPES, span: float = SPAN,
                   threads: int = 1) -> WaterPass:
    """The water-filling bound's pass on the optimistic ``chain`` at failure price ``mu``,
    the communication's tangent taken at the priced epochs of time price ``lam`` (module docstring).

    ``threads`` > 1 (on grids of at least :data:`SPLIT_CELLS` loss cells): each epoch's steps
    (:func:`segments`, :func:`lines`, :func:`envelope`) are split by loss bucket between that many
    threads (compiled where numba is there: :mod:`~deplbench.formulations.adaptive.kernels`, the
    numpy reference's numbers). Each reads its own bucket alone, in elementwise operations and exact
    minima, and the correlations' FFTs share out whole transforms of one length and plan between the
    threads (their batches stay whole: one split differently would pad to another length), so the
    pass is the same, bit for bit, for any number of threads (tested).

    One expectation per (model, distinct kernel) rather than per (model, cluster): clusters whose
    epochs share a kernel differ only in A and b, which enter after it (the capacity, where
    clusters may also differ, is relaxed). The deadline (:func:`deplbench.limits.check_time`) is
    read before every epoch."""
    t0 = time.process_time()
    L1 = chain.L + 1
    # costs in a power of 2 near the instance's cost scale (exact): every value scales with it
    unit = cost_unit(chain)
    mu_u = mu / unit
    nu_star = float(mu_u * chain.st.time_max)
    if not NU_RANGE[0] <= nu_star <= NU_RANGE[1]:
        raise ValueError(f"mu: the root's slope μ·Tmax = {nu_star * unit!r} is outside [{NU_RANGE[0]:g}, "
                         f"{NU_RANGE[1]:g}] times the cost unit {unit:g}, where its slopes and their FFTs stay "
                         "normal binary64 numbers")
    if not lam >= 0.0:
        raise ValueError(f"lam: the tangent's time price must be ≥ 0, got {lam!r}")
    if not span ** (1.0 / max(slopes - 2, 1)) < 2.0:
        # a sharpness rule, not a validity one: every segment's line lies below both its end points
        raise ValueError(f"slopes: {slopes} slopes over a span of {span:g} leave consecutive ratios ≥ 2 "
                         "(too coarse to be useful)")
    geo = nu_star * np.geomspace(1.0 / span, 1.0, slopes - 1)
    geo[-1] = nu_star
    nus = np.concatenate([[0.0], geo])
    A, b = tangent_terms(chain, lam)
    parts = max(1, min(int(threads), L1 // (SPLIT_CELLS // 2))) if L1 >= SPLIT_CELLS else 1
    with ThreadPoolExecutor(parts) if parts > 1 else nullcontext() as pool:
        return _backward(chain, mu, lam, slopes, unit, nus, A / unit, b / unit, pool, parts, t0)


def _backward(chain: Chain, mu: float, lam: float, slopes: int, unit: float, nus: np.ndarray, A: np.ndarray,
              b: np.ndarray, pool, parts: int, t0: float) -> WaterPass:
    """:func:`waterfill_pass`' backward recursion (A, b in the cost ``unit``), with its thread ``pool``
    (None: one thread) and the ``parts`` its epochs' steps are split into."""
    st, M, L1 = chain.st, chain.M, chain.L + 1
    tmax, mu_u = st.time_max, mu / unit
    # every part in blocks of at least CHUNK loss buckets (its whole share when fewer than twice), the
    # same number per part so that the threads share them evenly
    cuts = np.linspace(0, L1, parts * max(1, L1 // parts // CHUNK) + 1).astype(int)
    nu_star = float(nus[-1])
    J, nu = nus.size, nus[:, None]
    stop = np.broadcast_to(nu, (J, L1)).copy()                       # give up: (W, G) = (0, 1)
    stop[:, 0] = 0.0                                                   # the success bucket
    nxt = np.broadcast_to(stop, (M, J, L1)).copy()                    # k = K̄: must stop
    eta = 0.0
    pos = nus > 0
    classes = [_classes(A[m], b[m], mu_u) for m in range(M)]

    def block(S: np.ndarray, m: int):
        """Least over model m's cluster classes of the epoch's support from the sum S (J, L1), on its
        blocks of loss buckets, shared between the pool's threads: started here, and the function
        returned waits for the blocks and assembles them (so that this thread may work meanwhile)."""
        out = np.empty((J, L1))
        if pool is None:
            for a, z in zip(cuts[:-1], cuts[1:]):
                out[:, a:z] = columns(S[:, a:z], m)
            return lambda: out
        # each job in a copy of this thread's context: numpy's error state (and the clock) as the caller's
        jobs = [(a, z, pool.submit(contextvars.copy_context().run, columns, S[:, a:z], m))
                for a, z in zip(cuts[:-1], cuts[1:])]

        def done() -> np.ndarray:
            for a, z, job in jobs:
                out[:, a:z] = job.result()
            return out
        return done

    def columns(S: np.ndarray, m: int) -> np.ndarray:
        """:func:`block` on one block of loss buckets: every step below reads its own bucket alone."""
        seg = segments(S, nus)
        out = np.full(S.shape, np.inf)
        for a, lin in classes[m]:
            v = envelope(*lines(seg, a), nus)
            own = nu * lin
            v += own - 4.0 * UNIT * np.abs(own)                          # the epoch's own G, rounded down
            v -= 3.0 * UNIT * np.abs(v)                                    # and the sum's rounding
            np.minimum(out, v, out=out)
        return out

    for k in range(chain.K - 1, -1, -1):
        check_time(f"adaptive-opt's water-filling pass on {chain.i0} buckets, backward step {chain.K - k} "
                   f"of {chain.K}")
        # one row per (model, distinct kernel): the expectation of the next state's support
        rows, kers, index = distinct_rows(chain, k)
        f = nxt[rows]
        ex, err = correlate_rows(f, kers, f[:, :, -1], eta * nus, workers=parts)
        # the epochs that stay start on the pool while this thread correlates the switch jumps
        staying = [[block(ex[r], m) for r in np.flatnonzero(rows == m)] if classes[m] else None for m in range(M)]
        sw, err_sw = switch_values(chain, ex, None, err, index, per_cluster=False, workers=parts)
        eta = max(float(np.max(e[:, pos] / nus[pos])) for e in [err, *err_sw.values()])
        moving = {ab: [block(e, ab[1]) for e in v] for ab, v in sw.items() if classes[ab[1]]}
        stay = [None if fs is None else np.min([d() for d in fs], axis=0) for fs in staying]
        moved = {ab: np.min([d() for d in fs], axis=0) for ab, fs in moving.items()}
        cur = least_action(stop, stay, moved)
        if k == 0:
            nu_c = nu_star * unit                       # back to the instance's cost unit: exact
            return WaterPass(lam, mu, nu_c, float(cur[M, -1, chain.i0]) * unit, eta,
                             float(chain.K * np.max(np.abs(b), initial=0.0)) * unit, slopes, eta * nu_c / tmax, tmax,
                             dict(chain.grid(), slopes=slopes), time.process_time() - t0)
        nxt = cur[:M]
    raise AssertionError("horizon 0")


#: The failure price of the first grid's passes is searched, as a ratio to the priced search's μ, by
#: golden section on log μ over this range (RATIO_STEPS passes) on a grid of RATIO_BUCKETS (or the
#: first grid, when coarser): the bound is concave in μ, falls steeply below its best and gently above
#: it. The best ratio does not move with the loss grid from 300 buckets up, but does with the slopes
#: (measured: docs/adaptive.md, "The deadline carried exactly, by water-filling"), so the search uses
#: the slopes of the bound.
RATIO_SPAN, RATIO_STEPS, RATIO_BUCKETS = (0.45, 1.1), 5, 300
#: Finer grids take one pass at the ratio found times LEAN (the gentle side of the best).
LEAN = 1.03


def cost_unit(chain: Chain) -> float:
    """The power of 2 nearest the instance's cost scale (:meth:`~.chain.Setting.cost_scale`): a pass
    computes in it, so that its numbers do not depend on the unit of cost (scaling by it is exact)."""
    return 2.0 ** round(math.log2(chain.st.cost_scale()))


def _reachable(chain: Chain, mu: float) -> bool:
    """Whether every failure price the search and the passes may try from ``mu`` keeps ν* (in the
    pass's cost unit) in :data:`NU_RANGE`."""
    nu = mu / cost_unit(chain) * chain.st.time_max
    return NU_RANGE[0] <= RATIO_SPAN[0] * nu and RATIO_SPAN[1] * LEAN * nu <= NU_RANGE[1]


def grid_passes(chain: Chain, omega: float, warm, slopes: int,
                ratio: float | None, keep: list | None = None, threads: int = 1) -> tuple[list, float | None]:
    """The water-filling passes of one grid of the refinement, from its priced search's best pass
    ``warm`` (its λ for the tangent, its μ as the reference): on the first grid (``ratio`` None) the
    failure price's search (:func:`waterfill_ratio`, as a ratio to the priced μ of the grid it runs
    on: this one when it has at most :data:`RATIO_BUCKETS` buckets — its passes are then this grid's
    —, else one of :data:`RATIO_BUCKETS`), then a pass at the ratio found times :data:`LEAN`.
    Returns the passes (each a valid bound at every ω, whatever its grid; each also appended to
    ``keep`` as it ends) and the ratio; none, and the ratio unchanged, where the failure prices
    would leave :data:`NU_RANGE`. ``threads``: :func:`waterfill_pass`'."""
    floor = 1e-9 * chain.st.cost_scale()
    mu0 = max(warm.mu, floor)
    if not _reachable(chain, mu0):
        return [], ratio                        # failure prices beyond binary64's reach: not computed
    wps: list = []
    if ratio is None:
        if chain.i0 <= RATIO_BUCKETS:
            ratio, wps = waterfill_ratio(chain, omega, warm.lam, mu0, slopes, keep, threads)
            return wps, ratio
        # the ratio carries over between grids, the price itself does not: the coarse grid's
        # ratio is taken to its own priced μ (a short search warm-started from this grid's)
        coarse = build_chain(chain.instance, RATIO_BUCKETS, True)
        ref = lower_bound_search(coarse, omega, 2, 4, lam0=warm.lam, mu0=mu0, step=1.5).best
        if not _reachable(coarse, max(ref.mu, floor)):
            return [], ratio
        ratio, wps = waterfill_ratio(coarse, omega, ref.lam, max(ref.mu, floor), slopes, keep, threads)
    last = waterfill_pass(chain, ratio * LEAN * mu0, warm.lam, slopes, threads=threads)
    if keep is not None:
        keep.append(last)
    return [*wps, last], ratio


def water_fields(water, ratio: float | None, omega: float, time_max: float) -> dict:
    """The bracket's ``multipliers`` entries of its best water-filling pass (None: not computed)."""
    return {"lower_bound_waterfill": None if water is None else water.bound(omega, time_max),
            "waterfill": None if water is None else {
                "slopes": water.slopes, "buckets": water.grid.get("buckets"), "mu": water.mu,
                "lambda_tangent": water.lam, "mu_ratio": ratio, "rounding_bound": water.err}}


def waterfill_memory(chain: Chain, slopes: int) -> float:
    """Peak bytes of a pass: the FFT operands of one epoch (rows × J × ~2(L + 1), three copies, rows the
    models and switches), the next and current states and one block's lines (about 14 (J, L + 1) arrays);
    above a measured pass's peak (docs/adaptive.md, "The deadline carried exactly, by water-filling")."""
    rows = chain.M + len(chain.kj)
    l1 = float(chain.L + 1)
    return 8.0 * slopes * l1 * (6.0 * rows + 2.0 * chain.M + 14.0)


def waterfill_ratio(chain: Chain, omega: float, lam: float, mu: float, slopes: int = SLOPES,
                    keep: list | None = None, threads: int = 1) -> tuple[float, list]:
    """The ratio to ``mu`` of the failure price at which the water-filling bound on ``chain`` is best,
    found by golden section (:data:`RATIO_SPAN`, :data:`RATIO_STEPS` passes). Returns the ratio and
    the passes (each a valid bound at every ω); each is also appended to ``keep`` as it ends, so a
    time limit passed during the search loses none."""
    ch = chain
    g = (math.sqrt(5.0) - 1.0) / 2.0
    lo, hi = math.log(RATIO_SPAN[0]), math.log(RATIO_SPAN[1])
    memo: dict[float, WaterPass] = {}
    tm = ch.st.time_max

    def val(z: float) -> float:
        if z not in memo:
            memo[z] = waterfill_pass(ch, mu * math.exp(z), lam, slopes, threads=threads)
            if keep is not None:
                keep.append(memo[z])
        return memo[z].bound(omega, tm)

    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    while len(memo) < RATIO_STEPS:
        if val(c) >= val(d):
            hi, d = d, c
            c = hi - g * (hi - lo)
        else:
            lo, c = c, d
            d = lo + g * (hi - lo)
    z = max(memo, key=lambda k: memo[k].bound(omega, tm))
    return math.exp(z), list(memo.values())


__all__ = ["CHUNK", "LEAN", "NU_RANGE", "RATIO_BUCKETS", "RATIO_SPAN", "RATIO_STEPS", "SLOPES", "SPAN", "SPLIT_CELLS",
           "WaterPass",
           "cost_unit", "envelope", "epoch_support", "grid_passes", "least_action", "lines", "segments",
           "tangent_terms",
           "water_fields", "waterfill_memory", "waterfill_pass", "waterfill_ratio"]
