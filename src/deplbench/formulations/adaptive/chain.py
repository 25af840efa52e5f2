"""The adaptive reference, part 1: the rounded loss chain, its DP and the multiplier search.

What is solved and guaranteed is in the package docstring
(:mod:`deplbench.formulations.adaptive`): the optimistic chain's Lagrangian
value V₀(λ, μ) − μ(1 − ω) − λ·Tmax is a proven lower bound on the adaptive
optimum for every λ, μ ≥ 0; :func:`dp` computes V₀ by backward induction
with batched FFT correlations; the searches only choose good multipliers.
The pessimistic chain (⌈·⌉) gives the tables of the certified policy
(:mod:`deplbench.formulations.adaptive.certify`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import fft as sp_fft

from deplbench.formulations.allocation import TIME_RTOL
from deplbench.instances.datalaw import compute_need
from deplbench.instances.distributions import Empirical, PointMass

#: Tail mass of a continuous run term (X) binned at the safe end of its kernel.
TAIL = 1e-9
#: The same for a switch jump (Student's t tails are long: a smaller tail
#: would make the kernel, hence every FFT, several times longer).
TAIL_JUMP = 1e-5
#: Rounding tolerance in buckets (an atom within it of a grid point is on it).
EPS = 1e-9
#: Stacked quantities of a DP pass: Lagrangian value, P(fail), then the
#: expected remaining time (one row; or compute, communication and the
#: second moment of compute when the policy tables are kept).
V, F = 0, 1


def applies(instance) -> tuple[bool, str]:
    """Whether :func:`lower_bound` / :func:`certify` handle ``instance`` (module docstring, Scope)."""
    if len(instance.datasets) != 1:
        return False, "the adaptive DP handles one dataset (z(d, n) is then fixed: every cluster holds it)"
    if np.any(instance.transfer_matrix != 0):
        return False, "the adaptive DP assumes free transfers (β = 0)"
    if instance.data_rule != "intended":
        return False, "the adaptive DP needs the intended data rule (eq. (6) as printed fixes the cluster)"
    if instance.initial_loss <= instance.loss_max:
        return False, "ℓ(0) already meets ℓmax: the optimum is to stop (cost 0)"
    return True, ""


# --------------------------------------------------------------------------
# the instance's per-action quantities
# --------------------------------------------------------------------------


@dataclass
class Setting:
    """γ, compute, communication, κ, r per (model, cluster); run scale per epoch."""

    gamma: np.ndarray        # (N,)
    compute: np.ndarray      # (M, N)
    comm: np.ndarray         # (M, N)
    kappa: np.ndarray        # (N,)
    cap: np.ndarray          # (N,)
    scale: np.ndarray        # (K, M): A_m decay_m(k)
    usable: np.ndarray       # (M, N) bool
    allowed: np.ndarray      # (M, M) bool, diagonal True
    time_max: float

    @classmethod
    def of(cls, instance) -> Setting:
        held = instance.all_datasets
        volume, gamma = instance.data_effect(held)
        N = instance.n_clusters
        compute = compute_need(instance.model_compute[:, None], np.full((1, N), volume))
        comm = instance.model_size[:, None] / instance.bandwidth[None, :]
        usable = (compute > 0) & (instance.capacity[None, :] > 0)
        return cls(np.full(N, gamma), compute, comm, instance.unit_cost.astype(float),
                   instance.capacity.astype(float), instance.run_scale_for(instance.horizon),
                   usable, instance.allowed.copy(), float(instance.time_max) * (1 + TIME_RTOL))

    def priced(self, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (m, n) at time price λ: allocation x*, compute time c/x*, money κx*.

        x* = argmin_{0<x≤r} κx + λ c/x = min(r, sqrt(λ c/κ)) (r when κ = 0)."""
        k = self.kappa[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(k > 0, np.sqrt(lam * self.compute / np.where(k > 0, k, 1.0)), np.inf)
        x = np.minimum(x, self.cap[None, :])
        x = np.where(self.usable, np.maximum(x, 1e-300), 1.0)
        return x, self.compute / x, k * x


# --------------------------------------------------------------------------
# kernels: the distribution of a rounded loss term, in buckets
# --------------------------------------------------------------------------


@dataclass
class Kernel:
    """P(rounded step = lo + t) = p[t]; ``p_inf`` the mass at +∞ (fail, pessimistic
    chain only). Mass at −∞ (optimistic chain only) is simply left out: it
    lands in the success bucket, whose value is 0."""

    lo: int
    p: np.ndarray
    p_inf: float = 0.0


def kernel(dist, factor: float, h: float, optimistic: bool, tail: float = TAIL) -> Kernel:
    """The law of ⌊factor·D/h⌋ (optimistic) or ⌈factor·D/h⌉ (pessimistic).

    Atoms (point mass, empirical) are rounded exactly; a continuous law is
    binned with its c.d.f. between the quantiles TAIL and 1 − TAIL, the
    tails going to the safe end (module docstring).
    """
    if isinstance(dist, (PointMass, Empirical)):
        vals = np.array([dist.value] if isinstance(dist, PointMass) else dist.samples, dtype=float)
        s = factor * vals / h
        t = np.floor(s + EPS) if optimistic else np.ceil(s - EPS)
        t = t.astype(np.int64)
        lo = int(t.min())
        p = np.bincount(t - lo, minlength=int(t.max()) - lo + 1).astype(float) / t.size
        return Kernel(lo, p)
    q_lo, q_hi = (float(v) for v in dist.ppf([tail, 1 - tail]))
    a, b = sorted((factor * q_lo / h, factor * q_hi / h))
    lo, hi = math.floor(a), math.ceil(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = np.asarray(dist.cdf(np.arange(lo, hi + 1, dtype=float) * h / factor), dtype=float)
    if factor < 0:
        cdf = 1.0 - cdf                # P(factor·D ≤ e) = P(D ≥ e/factor) (continuous law)
    mass = np.diff(cdf)                # mass[j]: step s in (lo + j, lo + j + 1] buckets
    below, above = float(cdf[0]), float(1.0 - cdf[-1])
    if optimistic:                     # ⌊s⌋ = lo + j on [lo + j, lo + j + 1)
        return Kernel(lo, np.concatenate([mass, [above]]))   # above: ⌊s⌋ ≥ hi; below: −∞, left out
    p = np.concatenate([[below], mass])                       # ⌈s⌉ = lo + j + 1; below: ⌈s⌉ ≤ lo
    if factor < 0 and float(dist.ppf(0.0)) >= 0:
        # the run term: s < 0 always, so the upper tail rounds up to at most 0
        p = np.concatenate([p, np.zeros(max(0, -hi))])
        p[-lo] += above
        return Kernel(lo, p)
    return Kernel(lo, p, p_inf=above)


# --------------------------------------------------------------------------
# the chain and its DP
# --------------------------------------------------------------------------


class Chain:
    """The rounded loss chain of one instance: grid, kernels, start bucket.

    Parameters
    ----------
    instance : Instance
    buckets : int
        Buckets between ℓmax and ℓ(0) (h = (ℓ(0) − ℓmax)/buckets).
    optimistic : bool
        ⌊·⌋ rounding for the lower bound, ⌈·⌉ for the certified policy.
    """

    def __init__(self, instance, buckets: int, optimistic: bool):
        self.instance = instance
        self.st = Setting.of(instance)
        self.optimistic = bool(optimistic)
        span = instance.initial_loss - instance.loss_max
        self.h = span / int(buckets)
        self.K, (self.M, self.N) = instance.horizon, self.st.compute.shape
        jumps = [sw.jump for sw in instance.switches]
        rise = sum(sorted((max(0.0, float(j.ppf(1 - 1e-4))) for j in jumps), reverse=True)[:self.M - 1])
        self.L = int(buckets) + math.ceil(rise / self.h) + 1
        self.i0 = int(buckets)
        self.pairs = {(a, b): instance.switches[p].jump for (a, b), p in instance.switch_index.items()}
        self.kx = [[[kernel(instance.models[m].improvement, -self.st.gamma[n] * self.st.scale[k, m],
                            self.h, optimistic) for n in range(self.N)] for m in range(self.M)]
                   for k in range(self.K)]
        self.kj = {ab: kernel(d, 1.0, self.h, optimistic, TAIL_JUMP) for ab, d in self.pairs.items()}

    def bucket(self, loss) -> np.ndarray:
        """The observed loss's bucket in this chain (0 = success), clipped to L."""
        s = (np.asarray(loss, dtype=float) - self.instance.loss_max) / self.h
        b = np.floor(s + EPS) if self.optimistic else np.ceil(s - EPS)
        return np.clip(b, 0, self.L).astype(np.int64)


def correlate(f: np.ndarray, kernels: list[Kernel], top: np.ndarray) -> np.ndarray:
    """E[f(clip(i + step))] for i = 0..L, one kernel per leading row.

    f : (B, Q, L+1) stacked quantities; below bucket 0 reads f[..., 0]
    (success), above L reads ``top`` (Q,) — the clamped f[..., L] for the
    optimistic chain, failure for the pessimistic one. Batched FFT.
    """
    B, Q, L1 = f.shape
    lo = min(k.lo for k in kernels)
    hi = max(k.lo + k.p.size - 1 for k in kernels)
    P = hi - lo + 1
    A, Bp = max(0, -lo), max(0, hi)
    ext = np.concatenate([np.repeat(f[..., :1], A, axis=-1), f,
                          np.broadcast_to(top[None, :, None], (B, Q, Bp))], axis=-1)
    ker = np.zeros((B, P))
    pinf = np.zeros(B)
    for j, k in enumerate(kernels):
        ker[j, k.lo - lo:k.lo - lo + k.p.size] = k.p
        pinf[j] = k.p_inf
    nfft = sp_fft.next_fast_len(ext.shape[-1] + P, real=True)
    conv = sp_fft.irfft(sp_fft.rfft(ext, nfft) * sp_fft.rfft(ker[:, ::-1], nfft)[:, None, :], nfft)
    start = lo + A + P - 1
    out = conv[..., start:start + L1]
    return out + pinf[:, None, None] * top[None, :, None]


@dataclass
class Pass:
    """One DP pass at (λ, μ): root values and, when kept, the policy tables."""

    lam: float
    mu: float
    value: float          # V₀: Lagrangian value at the start
    p_fail: float         # P(fail) of the pass's policy (chain)
    time: float           # its E[T] (chain)
    cost: float           # its E[money cost] (chain)
    action: np.ndarray | None = None   # (K, M+1, L+1) int: m'·N + n', −1 stop
    remaining: np.ndarray | None = None  # (K, M+1, L+1, 3): E[Tc], E[Ts], E[Tc²] from there (incl. this epoch)

    def bound(self, omega: float, time_max: float) -> float:
        """V₀ − μ(1 − ω) − λ Tmax: valid for the pass's chain at every ω (weak duality)."""
        return self.value - self.mu * (1.0 - omega) - self.lam * time_max


def dp(chain: Chain, lam: float, mu: float, keep: bool = False) -> Pass:
    """Backward DP of the chain MDP priced at (λ, μ) (module docstring).

    Carries, per state, the Lagrangian value V, P(fail) F and the expected
    remaining time; when ``keep`` (the certified policy's tables) compute and
    communication apart plus the second moment of the remaining compute
    time, for the policy's time rescaling. The money cost is V − λT − μF.
    """
    st, M, N, L1 = chain.st, chain.M, chain.N, chain.L + 1
    _, tc, money = st.priced(lam)
    ts = np.broadcast_to(st.comm, (M, N))
    stage = lam * (tc + ts) + money                       # (M, N)
    Q = 5 if keep else 3
    fail = np.zeros(Q)
    fail[V], fail[F] = mu, 1.0
    nxt = np.zeros((M, Q, L1))
    nxt[:, :, 1:] = fail[None, :, None]                    # k = K̄: must stop
    top = None if chain.optimistic else fail
    act = np.full((chain.K, M + 1, L1), -1, dtype=np.int32) if keep else None
    rem = np.zeros((chain.K, M + 1, L1, 3), dtype=np.float32) if keep else None
    big = np.where(st.usable, 0.0, np.inf)
    times = [tc, ts, np.zeros((M, N))] if keep else [tc + ts]
    here = np.stack([stage + big, np.zeros((M, N)), *times], axis=-1)   # (M, N, Q)
    stop = np.zeros((Q, L1))
    stop[:, 1:] = fail[:, None]
    for k in range(chain.K - 1, -1, -1):
        tops = nxt[:, :, -1] if top is None else np.broadcast_to(top, (M, Q))
        f = np.repeat(nxt, N, axis=0)                      # rows (m', n')
        ex = correlate_rows(f, [chain.kx[k][m][n] for m in range(M) for n in range(N)],
                            np.repeat(tops, N, axis=0))     # (M·N, Q, L1)
        sw = _switch_values(chain, ex, top)
        # the epoch's own cost and time after the expectations (mass sent to
        # −∞ is left out of a kernel, but its epoch is still paid); unusable
        # pairs priced out after the FFTs (an inf would spoil them)
        ex = _add_epoch(ex, here.reshape(M * N, Q), keep)
        for (a, b) in sw:
            sw[(a, b)] = _add_epoch(sw[(a, b)], here[b], keep)
        cur = np.empty((M + 1, Q, L1))
        for m in range(M + 1):                             # m = M: no model yet (k = 0)
            cand, ids = _candidates(chain, ex, sw, m, N)
            best = np.argmin(cand[:, V], axis=0)           # (L1,)
            choice = np.take_along_axis(cand, best[None, None, :], axis=0)[0]
            go = choice[V] < stop[V]
            go[0] = False                                  # bucket 0: success, stop
            cur[m] = np.where(go[None, :], choice, stop)
            if keep:
                act[k, m] = np.where(go, ids[best], -1)
                rem[k, m] = cur[m, 2:5].T
        if k == 0:
            root = cur[M, :, chain.i0]
        nxt = cur[:M]
    t_root = float(root[2:4].sum() if keep else root[2])
    return Pass(lam, mu, float(root[V]), float(root[F]), t_root,
                float(root[V] - lam * t_root - mu * root[F]), act, rem)


def _add_epoch(ex: np.ndarray, here: np.ndarray, keep: bool) -> np.ndarray:
    """Add this epoch's cost and time (``here``, (R, Q)) to the expectations
    over the next state (``ex``, (R, Q, L1)); with ``keep`` row 4 is the second
    moment of the remaining compute time U = a + U′: E[U²] = E[U′²] + 2a E[U′] + a²
    (a = this epoch's compute time, row 2 of ``here``)."""
    if keep:
        a = here[:, 2, None]
        ex[:, 4] += a * (2.0 * ex[:, 2] + a)
    ex[:, :4 if keep else 3] += here[:, :4 if keep else 3, None]
    return ex


def correlate_rows(f, kernels, tops):
    """:func:`correlate` with one ``top`` row per leading row."""
    out = np.empty_like(f)
    uniq = {}
    for j, t in enumerate(map(tuple, tops)):
        uniq.setdefault(t, []).append(j)
    for t, rows in uniq.items():
        out[rows] = correlate(f[rows], [kernels[j] for j in rows], np.array(t))
    return out


def _switch_values(chain, ex, top):
    """E over the switch jump of the run-term expectation: {(m, m'): (N, Q, L1)}."""
    N = chain.N
    out = {}
    for (a, b), kj in chain.kj.items():
        rows = ex[b * N:(b + 1) * N]
        # above the grid: optimistic = the clamped top row; pessimistic = failure
        t = rows[:, :, -1] if top is None else np.broadcast_to(top, (N, rows.shape[1]))
        out[(a, b)] = correlate_rows(rows, [kj] * N, t)
    return out


def _candidates(chain, ex, sw, m, N):
    """Candidate actions from model m (M = none): stay / allowed switches; ids m'·N + n'."""
    M = chain.M
    blocks, ids = [], []
    for b in range(M):
        if m == M or b == m:
            blocks.append(ex[b * N:(b + 1) * N])
        elif (m, b) in sw:
            blocks.append(sw[(m, b)])
        else:
            continue
        ids.extend(b * N + n for n in range(N))
    return np.concatenate(blocks, axis=0), np.array(ids, dtype=np.int32)


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

    def run(self, lam: float, mu: float) -> Pass:
        p = dp(self.chain, lam, mu)
        self.passes.append(p)
        return p

    @property
    def best(self) -> Pass:
        tm = self.chain.st.time_max
        return max(self.passes, key=lambda p: p.bound(self.omega, tm))

    def bound(self, omega: float | None = None) -> float:
        """max over the passes of V₀ − μ(1 − ω) − λ Tmax (a proven lower bound)."""
        w = self.omega if omega is None else omega
        return max(p.bound(w, self.chain.st.time_max) for p in self.passes)


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
    while hi.p_fail > risk and hi.mu < 1e15:        # a warm start is usually close: grow slowly first
        lo, hi, grow = hi, search.run(lam, hi.mu * grow), 4.0
    for _ in range(max(1, iters)):
        m0, g0, s0 = cut(lo) if lo is not None else (0.0, 0.0, omega)
        m1, g1, s1 = cut(hi)
        if s1 >= 0 or s0 <= s1:
            break
        mid = (g1 - g0 + s0 * m0 - s1 * m1) / (s0 - s1)
        top = g0 + s0 * (mid - m0)
        if not m0 < mid < m1 or top <= max(g0, g1) + MU_RTOL * max(1.0, abs(top)):
            break
        p = search.run(lam, mid)
        if p.p_fail > risk:
            lo = p
        else:
            hi = p
    f_lo, t_lo = (lo.p_fail, lo.time) if lo is not None else (1.0, 0.0)
    gap = f_lo - hi.p_fail
    w = (f_lo - risk) / gap if gap > 0 else 1.0     # weight of the feasible side
    return hi.mu, w * hi.time + (1.0 - w) * t_lo


def lower_bound_search(chain: Chain, omega: float, iters_lam: int = 6, iters_mu: int = 6,
                       lam0: float | None = None, mu0: float | None = None, step: float = 4.0) -> Search:
    """The λ–μ search: on λ, the fixed point of λ ← λ·(E[T]/Tmax)² (E[T] of the
    inner optimum's mix; the priced compute time scales as λ^(−1/2)),
    safeguarded by a bracket on the sign of E[T] − Tmax (grown by ``step``,
    bisected in log scale when the step leaves it); inner :func:`best_mu`.
    ``iters_lam`` steps after the first λ (default: a guess; ``lam0``, ``mu0``
    warm-start). Any (λ, μ) ≥ 0 gives a valid bound; the search only tightens it."""
    s = Search(chain, omega)
    st = chain.st
    tm = st.time_max
    m, n = np.argwhere(st.usable)[0]
    lam = lam0 or max(1e-9, st.kappa[n] * st.cap[n] ** 2 / (16.0 * st.compute[m, n]))   # x* = r/4
    mu = mu0 if mu0 else max(1e-6, dp(chain, lam, 1e12).cost)   # μ of the order of a run's cost
    lo, hi = 0.0, math.inf                         # E[T] > Tmax at lo, ≤ Tmax at hi
    for _ in range(iters_lam + 1):
        mu, t_mix = best_mu(s, lam, omega, mu, iters_mu)
        if abs(t_mix - tm) <= LAM_RTOL * tm:
            break
        if t_mix > tm:
            lo = lam
        else:
            hi = lam
        nxt = lam * (t_mix / tm) ** 2 if t_mix > 0 else lam / step
        nxt = min(max(nxt, lam / step), lam * step)
        if not lo < nxt < hi:
            nxt = math.sqrt(lo * hi) if math.isfinite(hi) and lo > 0 else nxt
        if nxt < 1e-12 or nxt > 1e12:
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
    coarse = lower_bound_search(Chain(instance, buckets // COARSE, chain.optimistic), omega, iters_lam, iters_mu)
    c = coarse.best
    fine = lower_bound_search(chain, omega, 2, max(2, iters_mu - 2), lam0=c.lam, mu0=c.mu, step=1.5)
    fine.coarse_passes = len(coarse.passes)
    return fine


__all__ = [
    "COARSE",
    "EPS",
    "TAIL",
    "TAIL_JUMP",
    "Chain",
    "F",
    "Kernel",
    "Pass",
    "Search",
    "Setting",
    "V",
    "applies",
    "best_mu",
    "correlate",
    "dp",
    "kernel",
    "lower_bound_search",
    "multires_search",
]
