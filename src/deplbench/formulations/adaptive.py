"""The adaptive reference: bounds on the best closed-loop policy with P(success) ≥ ω.

What is solved
--------------
An orchestrator that observes the loss after every epoch (PACT Sec. III-C,
the closed-loop simulator of :mod:`deplbench.formulations.closed_loop`)
chooses, from the state (epoch k, current model m, current loss ℓ(k),
elapsed time T(k)), the next model m', cluster n' and allocation x, or stops.
The *adaptive optimum* is the least expected cost E[Σ κ(n) x] (eq. (2)) of
any such policy whose runs succeed — stop with ℓ ≤ ℓmax, T ≤ Tmax
(eq. (4)), K ≤ K̄ — with probability at least ω: a chance-constrained
Markov decision process (Altman 1999; Ono, Pavone, Kuwata & Balaram 2015;
Xu & Mannor 2011). This module brackets it:

**Proven lower bound** (:func:`lower_bound`). Three relaxations, each valid:

1. *Optimistic loss grid.* Losses live on the grid ℓmax + i·h; the chain
   takes the step ⌊Δ/h⌋ of every loss term (run term −γ A_m decay_m(k) X
   and switch jump separately; ⌊a + b⌋ ≥ ⌊a⌋ + ⌊b⌋), states above the top
   bucket are clamped down, and truncated tails are sent to the optimistic
   end. Driven by the same draws, the chain's bucket never exceeds the true
   loss, so any true policy (which may look at the exact draws) is matched
   by a randomised chain policy with the same cost and time and at least
   the same success: the chain's optimum is ≤ the true one. The increments
   of eq. (8) do not depend on ℓ, so (k, m, bucket) is a sufficient state.
2. *Failure priced* (μ ≥ 0) and *time priced* (λ ≥ 0): for every policy
   with P(success) ≥ ω and T ≤ Tmax on every run,
   E[cost] ≥ E[cost + λT + μ·1{fail}] − λ·Tmax − μ(1 − ω). WLOG T ≤ Tmax on
   every run: epoch times are deterministic given the action, and a run
   about to pass Tmax fails anyway, so stopping it instead costs less and
   loses nothing. Hence **V₀(λ, μ) − μ(1 − ω) − λ·Tmax is a valid bound for
   every λ, μ ≥ 0** (weak duality), where V₀ is the optimum of the
   unconstrained chain MDP with per-epoch cost min_{0<x≤r} κx + λ(c/x + s/b)
   and terminal cost μ on failure — a backward DP. Any multiplier gives a
   bound; the search (bisection on the supergradients P(fail) − (1 − ω) and
   E[T] − Tmax, outer loop on λ, inner on μ; on grids of ≥ 400 buckets run
   on a grid 8× coarser, then a short warm-started search on the fine one)
   only makes it tighter.
   Every DP pass is a valid bound at *every* ω′, which gives the cost–risk
   frontier at no extra cost (:attr:`AdaptiveBounds.frontier`).

**Certified upper bound** (:func:`certify`). The policy of the
*pessimistically* rounded chain (⌈Δ/h⌉, tails to the pessimistic end,
leaving the grid = failure) at the multipliers found, run by
:class:`AdaptivePolicy` in the closed-loop simulator on fresh runs whose
seed differs from every seed used to tune it. P(success) ≥ ω is certified
when the one-sided Clopper–Pearson lower bound
(:func:`~deplbench.formulations.binomial.clopper_pearson_lower`) at level
``confidence`` is ≥ ω; its mean cost, with a normal-approximation interval
(stated as such), is the upper bound. The failure price of the certified
policy is tuned (bisection on simulated success, tuning seeds only) until
its certification passes.

How the deadline (eq. (4)) is handled
-------------------------------------
Priced, not in the state: the remaining time would add a continuous state
dimension (a (k, m, ℓ, T) grid is ~10⁸ states on the realistic families).
In the lower bound λ·(T − Tmax) relaxes "T ≤ Tmax on every run" to
"E[T] ≤ Tmax", the gap being the value of knowing the run's length in
advance (Jensen: (Σ√(cκ))² / T is convex in the epochs run). In the
certified policy every run enforces the deadline itself:
:class:`AdaptivePolicy` rescales the priced allocation so that the chain's
expected remaining compute time fits the run's remaining time
(``x = x*·E[Tc_rem]/(ρ (Tmax − T(k) − E[Ts_rem]))``, capped at r), so
unlucky runs speed up and lucky ones slow down; a run that still passes
Tmax fails and is counted. What the choice costs: the width of the bracket
at a vanishing grid step (benchmarks/adaptive_targets.py measures width
against the step; the part that does not shrink with h is this gap plus the
Monte-Carlo interval).

Scope (:func:`applies`): one dataset (held by every cluster, β = 0), the
intended data rule (eq. (6) lets the cluster change), continuous or
discrete loss terms. Other instances are declined with the reason.

Complexity: a DP pass is K̄·|M|(1 + |M|)·|N| FFT correlations of length
~L (the buckets); batched per epoch with numpy's rfft.

References
----------
DepL paper eqs. (2)–(8); PACT paper Sec. III-C; E. Altman, Constrained
Markov Decision Processes (1999), Ch. 3 and 12 (Lagrangian duality); F. J.
Beutler and K. W. Ross, "Optimal policies for controlled Markov chains with
a constraint", J. Math. Anal. Appl. 112 (1985) (randomisation at the
critical multiplier); M. Ono, M. Pavone, Y. Kuwata and J. Balaram,
"Chance-constrained dynamic programming with application to risk-aware
robotic space exploration", Auton. Robots 39 (2015); H. Xu and S. Mannor,
"Probabilistic goal Markov decision processes", IJCAI 2011.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field

import numpy as np
from scipy import fft as sp_fft

from deplbench.errors import PlanError
from deplbench.formulations.allocation import TIME_RTOL
from deplbench.formulations.binomial import clopper_pearson_lower
from deplbench.formulations.closed_loop import STOP, ClosedLoopPolicy, Decision, simulate
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
#: expected remaining time (one row, or compute and communication apart).
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
    def of(cls, instance) -> "Setting":
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
        self.L = int(buckets) + int(math.ceil(rise / self.h)) + 1
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
    remaining: np.ndarray | None = None  # (K, M+1, L+1, 2): E[Tc], E[Ts] from there (incl. this epoch)

    def bound(self, omega: float, time_max: float) -> float:
        """V₀ − μ(1 − ω) − λ Tmax: valid for the pass's chain at every ω (weak duality)."""
        return self.value - self.mu * (1.0 - omega) - self.lam * time_max


def dp(chain: Chain, lam: float, mu: float, keep: bool = False) -> Pass:
    """Backward DP of the chain MDP priced at (λ, μ) (module docstring).

    Carries, per state, the Lagrangian value V, P(fail) F and the expected
    remaining time (compute and communication apart when ``keep``, for the
    policy's time rescaling); the money cost is V − λT − μF.
    """
    st, M, N, L1 = chain.st, chain.M, chain.N, chain.L + 1
    _, tc, money = st.priced(lam)
    ts = np.broadcast_to(st.comm, (M, N))
    stage = lam * (tc + ts) + money                       # (M, N)
    Q = 4 if keep else 3
    fail = np.zeros(Q)
    fail[V], fail[F] = mu, 1.0
    nxt = np.zeros((M, Q, L1))
    nxt[:, :, 1:] = fail[None, :, None]                    # k = K̄: must stop
    top = None if chain.optimistic else fail
    act = np.full((chain.K, M + 1, L1), -1, dtype=np.int32) if keep else None
    rem = np.zeros((chain.K, M + 1, L1, 2), dtype=np.float32) if keep else None
    big = np.where(st.usable, 0.0, np.inf)
    times = [tc, ts] if keep else [tc + ts]
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
        ex += here.reshape(M * N, Q)[:, :, None]
        for (a, b) in sw:
            sw[(a, b)] += here[b][:, :, None]
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
                rem[k, m] = cur[m, 2:4].T
        if k == 0:
            root = cur[M, :, chain.i0]
        nxt = cur[:M]
    t_root = float(root[2:].sum())
    return Pass(lam, mu, float(root[V]), float(root[F]), t_root,
                float(root[V] - lam * t_root - mu * root[F]), act, rem)


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


def best_mu(search: Search, lam: float, omega: float, guess: float | None, iters: int) -> tuple[float, float]:
    """Maximise V₀(λ, μ) − μ(1 − ω) over μ by bisection on the supergradient
    P(fail) − (1 − ω) (raise μ while the pass's policy fails too often).

    Returns (μ, E[T] of the mix): the two policies bracketing the critical
    multiplier, mixed so that P(fail) = 1 − ω (Beutler & Ross 1985), have
    that expected time — the supergradient of max_μ in λ, used by the λ search.
    """
    risk = 1.0 - omega
    lo, hi = (guess / 2.0, guess * 2.0) if guess else (1.0, 1.0)
    p_lo = search.run(lam, lo)
    while p_lo.p_fail <= risk and lo > 1e-9:
        lo /= 4.0
        p_lo = search.run(lam, lo)
    p_hi = search.run(lam, hi)
    while p_hi.p_fail > risk and hi < 1e15:
        hi *= 4.0
        p_hi = search.run(lam, hi)
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        p = search.run(lam, mid)
        if p.p_fail > risk:
            lo, p_lo = mid, p
        else:
            hi, p_hi = mid, p
    gap = p_lo.p_fail - p_hi.p_fail
    w = (p_lo.p_fail - risk) / gap if gap > 0 else 1.0     # weight of the feasible side
    return math.sqrt(lo * hi), w * p_hi.time + (1.0 - w) * p_lo.time


def lower_bound_search(chain: Chain, omega: float, iters_lam: int = 6, iters_mu: int = 6,
                       lam0: float | None = None, mu0: float | None = None, step: float = 4.0) -> Search:
    """The λ–μ search: outer bisection (log scale) on the sign of E[T] − Tmax of
    the inner optimum's mix, inner :func:`best_mu`; brackets grown by ``step``
    from ``lam0``, ``mu0`` (default: guesses). Any (λ, μ) ≥ 0 gives a valid
    bound; the search only tightens it."""
    s = Search(chain, omega)
    tm = chain.st.time_max
    state = {"mu": mu0}

    def too_slow(lam):
        if state["mu"] is None:
            # a first μ of the order of the cost of always training on
            state["mu"] = max(1e-6, dp(chain, lam, 1e12).cost)
        mu, t_mix = best_mu(s, lam, omega, state["mu"], iters_mu)
        state["mu"] = mu
        return t_mix > tm

    st = chain.st
    m, n = np.argwhere(st.usable)[0]
    lo = hi = lam0 or max(1e-9, st.kappa[n] * st.cap[n] ** 2 / (16.0 * st.compute[m, n]))   # x* = r/4
    if too_slow(lo):
        while hi < 1e12 and too_slow(hi * step):
            hi *= step
        lo, hi = hi, hi * step
    else:
        while lo > 1e-12 and not too_slow(lo / step):
            lo /= step
        lo, hi = lo / step, lo
    for _ in range(iters_lam):
        mid = math.sqrt(lo * hi)
        if too_slow(mid):
            lo = mid
        else:
            hi = mid
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


# --------------------------------------------------------------------------
# the certified policy (upper bound)
# --------------------------------------------------------------------------


class AdaptivePolicy(ClosedLoopPolicy):
    """The policy of a (pessimistic) chain pass, run in the closed-loop simulator.

    Decides from the run's epoch, model and observed loss (its bucket,
    :meth:`Chain.bucket`) the pass's action; the allocation is the priced x*
    rescaled so that the chain's expected remaining compute time fits the
    run's remaining time, with safety factor ``rho`` (module docstring,
    "How the deadline is handled"), capped at r(n).
    """

    def __init__(self, chain: Chain, p: Pass, rho: float = 0.99, name: str = "adaptive-opt (policy)"):
        self.chain, self.pass_, self.rho, self.name = chain, p, float(rho), name
        self.reference_plan = None
        self.x, _, _ = chain.st.priced(p.lam)
        self.calls = 0

    def datasets(self) -> dict[str, list[str]]:
        inst = self.chain.instance
        return {c.name: list(inst.all_datasets) for j, c in enumerate(inst.clusters) if self.chain.st.cap[j] > 0}

    def describe(self) -> dict:
        return {"lambda": self.pass_.lam, "mu": self.pass_.mu, "buckets": int(self.chain.L + 1),
                "loss_step": float(self.chain.h), "rho": self.rho}

    def decide(self, state):
        self.calls += 1
        ch, st, n = self.chain, self.chain.st, state.size
        out = Decision.constant(n, STOP)
        k = state.epoch
        if k >= ch.K:
            return out
        m = ch.M if state.model is None else int(state.model)
        b = ch.bucket(state.loss)
        a = self.pass_.action[k, m, b]
        go = a >= 0
        if not go.any():
            return out
        m2, n2 = a[go] // ch.N, a[go] % ch.N
        rem = self.pass_.remaining[k, m, b[go]].astype(float)
        left = st.time_max / (1 + TIME_RTOL) - state.time[go] - rem[:, 1]
        x = self.x[m2, n2].copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(left > 0, rem[:, 0] / (self.rho * left), np.inf)
        x = np.minimum(np.where(np.isfinite(scale) & (scale > 0), x * scale, st.cap[n2]), st.cap[n2])
        out.model[go], out.cluster[go], out.allocation[go] = m2, n2, x
        return out


def frontier_levels(omega: float) -> list[float]:
    """ω and a few levels around it: 1 − (1 − ω)·{10, 5, 2, 1, 1/2, 1/5}, kept in (0, 1)."""
    out = sorted({round(1.0 - (1.0 - omega) * f, 12) for f in (10, 5, 2, 1, 0.5, 0.2)})
    return [w for w in out if 0.0 < w < 1.0]


def _needed_successes(runs: int, omega: float, confidence: float) -> int:
    """Least k with clopper_pearson_lower(k, runs, confidence) ≥ ω (runs + 1 if none)."""
    lo, hi = 0, runs + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if mid <= runs and clopper_pearson_lower(mid, runs, confidence) >= omega:
            hi = mid
        else:
            lo = mid + 1
    return lo


def tune_policy(instance, chain: Chain, lam: float, mu: float, target: float, tune_runs: int,
                tune_seed: int, rho: float, steps: int = 8):
    """Raise the failure price of the pessimistic chain's policy until its simulated
    success on the *tuning* runs reaches ``target``; then a few bisection steps back
    down (cheaper policies). Returns (policy, tuning log)."""
    log = []

    def attempt(m):
        p = dp(chain, lam, m, keep=True)
        pol = AdaptivePolicy(chain, p, rho)
        r = simulate(instance, pol, tune_runs, tune_seed)
        log.append({"mu": m, "seed": tune_seed, "runs": tune_runs, "p_success": r.successes / r.runs, "cost_mean": float(r.cost.mean())})
        return pol, r.successes / r.runs >= target

    good, bad = None, None
    m = mu
    for _ in range(steps):
        pol, ok = attempt(m)
        if ok:
            good = (m, pol)
            break
        bad, m = m, m * 4.0
    if good is None:
        return pol, log
    hi_mu, best = good
    lo_mu = bad if bad is not None else hi_mu / 16.0
    for _ in range(3):
        mid = math.sqrt(lo_mu * hi_mu)
        pol, ok = attempt(mid)
        if ok:
            hi_mu, best = mid, pol
        else:
            lo_mu = mid
    return best, log


@dataclass
class AdaptiveBounds:
    """The bracket on the adaptive optimum and what it rests on (:func:`adaptive_bounds`)."""

    lower_bound: float
    upper_bound: float
    upper_bound_ci: list
    p_success: float
    p_success_lo: float
    certified: bool
    frontier: list
    multipliers: dict
    grid: dict
    certification: dict
    tuning: list
    work: dict

    @property
    def width(self) -> float:
        """(UB − LB)/LB."""
        return (self.upper_bound - self.lower_bound) / self.lower_bound if self.lower_bound > 0 else math.inf

    def to_dict(self) -> dict:
        return {"lower_bound": self.lower_bound, "upper_bound": self.upper_bound,
                "upper_bound_ci": list(self.upper_bound_ci), "width": self.width,
                "p_success": self.p_success, "p_success_lo": self.p_success_lo, "certified": self.certified,
                "frontier": self.frontier, "multipliers": self.multipliers, "grid": self.grid,
                "certification": self.certification, "tuning": self.tuning, "work": self.work}


def adaptive_bounds(instance, buckets: int = 1200, runs: int = 20_000, seed: int = 0,
                    confidence: float = 0.95, tune_runs: int = 5_000, rho: float = 0.99,
                    iters_lam: int = 6, iters_mu: int = 6) -> AdaptiveBounds:
    """Lower bound, certified policy and cost–risk frontier of ``instance`` (module docstring).

    Parameters
    ----------
    instance : Instance
        Must satisfy :func:`applies`.
    buckets : int
        Loss buckets between ℓmax and ℓ(0) (both chains).
    runs, seed : int
        Fresh closed-loop runs certifying the policy and their seed σ.
    confidence : float
        Level of the one-sided Clopper–Pearson bound on P(success) and of the
        (normal-approximation) interval of the mean cost.
    tune_runs : int
        Runs per tuning simulation; tuning seeds are σ + 1, σ + 2, … — never σ,
        so certification draws are independent of those the policy was built from.
    rho : float
        Safety factor of the policy's time rescaling.
    iters_lam, iters_mu : int
        Bisection steps of the multiplier search (any multiplier gives a valid
        bound; more steps only tighten it).

    Returns
    -------
    AdaptiveBounds

    Raises
    ------
    PlanError
        The instance is outside :func:`applies` (the reason, one line) or an argument is invalid.
    """
    ok, why = applies(instance)
    if not ok:
        raise PlanError(f"instance: {why}")
    for name, v, low in (("buckets", buckets, 2), ("runs", runs, 2), ("tune_runs", tune_runs, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise PlanError(f"{name}: must be an integer ≥ {low}, got {v!r}")
    if not 0 < rho <= 1:
        raise PlanError(f"rho: must be in (0, 1], got {rho!r}")
    omega, t0 = float(instance.omega), _time.perf_counter()
    opt = Chain(instance, buckets, optimistic=True)
    search = multires_search(instance, opt, omega, iters_lam, iters_mu)
    best = search.best
    t_lb = _time.perf_counter() - t0
    frontier = [{"omega": w, "lower_bound": search.bound(w)} for w in frontier_levels(omega)]
    pes = Chain(instance, buckets, optimistic=False)
    need = _needed_successes(runs, omega, confidence)
    target = min(1.0, need / runs + 2.0 * math.sqrt(omega * (1 - omega) / tune_runs))
    policy, log = tune_policy(instance, pes, best.lam, max(best.mu, 1e-6), target, tune_runs, seed + 1, rho)
    res = simulate(instance, policy, runs, seed, confidence)
    k = res.successes
    p_lo = clopper_pearson_lower(k, runs, confidence)
    mean = float(res.cost.mean())
    sem = float(res.cost.std(ddof=1) / math.sqrt(runs))
    z = float(_normal_quantile(1 - (1 - confidence) / 2))
    return AdaptiveBounds(
        lower_bound=search.bound(), upper_bound=mean, upper_bound_ci=[mean - z * sem, mean + z * sem],
        p_success=k / runs, p_success_lo=p_lo, certified=bool(p_lo >= omega), frontier=frontier,
        multipliers={"lambda": best.lam, "mu": best.mu, "mu_policy": policy.pass_.mu},
        grid={"buckets": int(buckets), "loss_step": float(opt.h), "states": int(opt.K * opt.M * (opt.L + 1))},
        certification={"runs": runs, "seed": seed, "successes": k, "confidence": confidence,
                       "method": f"one-sided Clopper–Pearson lower bound at level {confidence:g} on fresh runs "
                                 f"(seed {seed}; the policy was tuned on seeds {seed + 1}…)",
                       "cost_ci_method": f"normal approximation, two-sided level {confidence:g}",
                       "deadline_missed": int(res.deadline_missed.sum())},
        tuning=log,
        work={"dp_passes": len(search.passes) + len(log), "coarse_dp_passes": search.coarse_passes,
              "lower_bound_s": t_lb,
              "total_s": _time.perf_counter() - t0})


def _normal_quantile(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


__all__ = ["applies", "Setting", "Kernel", "kernel", "Chain", "Pass", "dp", "Search", "best_mu",
           "lower_bound_search", "AdaptivePolicy", "tune_policy", "frontier_levels", "AdaptiveBounds",
           "adaptive_bounds", "TAIL", "TAIL_JUMP"]
