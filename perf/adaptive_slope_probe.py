"""A first-order loss grid for the priced lower bound: values and slopes per cell.

Run (from the repository root, one thread)::

    python perf/adaptive_slope_probe.py --loss-max 0.15 --buckets 600,2400,9600 --match 4800,19200,38400
    python perf/adaptive_slope_probe.py --loss-max 0.3 --buckets 600,2400,9600 --match 4800,19200,38400

For each grid: the priced multiplier search (:func:`~deplbench.formulations.adaptive.search.multires_search`,
the bracket's) gives (λ, μ) and the floor bound; at the same (λ, μ) one probe pass gives the probe's
bound, then passes at μ × ``--mu-scan`` (any multiplier gives a valid bound). ``--match`` adds floor
searches on finer grids and says where floor(B) = lim − c/B meets each probe bound. CPU seconds
(process time) and the 1-minute load are printed. ``--chain-test`` repeats the pass with the
"may be optimal" test read from the pessimistic chain's table instead (step 3).

What is bounded
---------------
The priced chain's value at (λ, μ) (package docstring, relaxation 2): V_k(m, y), y = (ℓ − ℓmax)/h
the loss in buckets, the least E[Σ stage cost + μ·1{fail}] from epoch k with model m; a stage
costs c_a = κx* + λ(c/x* + s/b) and moves y to y + S_a (S_a the run term −γA_m decay_m(k)·X/h,
after a switch's jump J/h as well). V_k(m, y) = 0 for y ≤ 0 (success), V_K(m, y) = μ for y > 0,

    V_k(m, y) = min(μ, min_a c_a + h_a(y)),   h_a(y) = E V_{k+1}(a, y + S_a)   (y > 0).

V is nondecreasing in y (a shift: a policy run from a lower loss lands lower at every step). The
floor chain keeps one number per cell, ≤ V on [i, i + 1), and drops every step's fractional part:
half a bucket of V′ per epoch on average, O(h) over a run of tens of epochs.

The pass carries, per (k, m) and cell i = 0..L:

* G(i) ≤ V(i) at the grid point, and G⁺(0) ≤ V(0+) (V(0) = 0: V jumps at y = 0);
* s(i) ≥ 0 with V(y) − V(x) ≥ (y − x)·s(i) for i ≤ x < y ≤ i + 1 (cell 0: 0 < x), so that
  V(i + θ) ≥ G(i) + θ·s(i) (G⁺(0) + θ·s(0) on cell 0);
* U(i) ≥ V(i) at the grid point (a first-order upper bound, used by step 3).

Why each step is valid (t = ⌊S⌋, φ = S − t, p_t the floor chain's kernel):

1. *Value through the expectation* — two correlations per kernel, mass and fractional-part-weighted
   mass: V(i + S) ≥ G(i + t) + φ·s(i + t) (G⁺(0) on cell 0, 0 below 0, G(L) above the grid: V is
   nondecreasing), so h_a(i) ≥ Σ_t p_t G(i + t) + Σ_t q_t s(i + t) with q_t ≤ E[φ; ⌊S⌋ = t] (any
   smaller q is valid since s ≥ 0: Gauss–Legendre on the density, 8 nodes a cell, lowered by 10⁻⁷
   relative; exact for atoms, an atom on a grid point reading the point value, G(0) = 0).
   Upper side, mirrored: V(z) ≤ U(⌈z⌉) − (⌈z⌉ − z)·s(⌊z⌋), so h_a(i) ≤ Σ_t p_t U(i + t + 1) −
   Σ_t r_t s(i + t) with r_t ≤ E[1 − φ; ⌊S⌋ = t]; the tails go to their unsafe ends (the lower at
   lo, the upper at 0 for a run term, S ≤ 0, else to +∞ read as μ ≥ V).
2. *Slope through the expectation*: for x < y in [i, i + 1], h_a(y) − h_a(x) = E[V(y + S) −
   V(x + S)] ≥ ∫_x^y g(w − i) dw where g(θ) = Σ_t s(i + t)·P(⌊θ + S⌋ = t) + G⁺(0)·f_S(−i − θ) is the
   density, at i + θ, of the measure ν * law(−S), ν = s(⌊w⌋)dw + G⁺(0)δ₀ ≤ dV. So min over
   θ ∈ [0, 1] of g bounds the quotients. Cell part: were S's density constant on each cell, g
   would be linear in θ, between g(0) = Σ_t p_t s(i + t) and g(1) = Σ_t p_t s(i + t + 1); by Abel
   summation the difference is Σ_t D_t(θ)·(s(i + t + 1) − s(i + t)) with D_t(θ) = θ(1 − θ)·(mean
   density on the cell's top θ − on its bottom 1 − θ), |D_t| ≤ (max − min of the density on the
   cell)/4 = var_t (unimodal laws: the ends, and the mode's value on its cell). Hence
   min(Σ p_t s(i + t), Σ p_t s(i + t + 1)) − Σ var_t |s(i + t + 1) − s(i + t)|: three correlations.
   Atoms (and laws not known unimodal): Σ p_t min(s(i + t), s(i + t + 1)). Jump part:
   G⁺(0)·ρ_(−i−1), ρ_t ≤ the least density of S on [t, t + 1] (the smaller end value, lowered by
   10⁻⁷; 0 for atoms). Without it every slope would stay 0 — V_K is flat but for its jump at 0 —
   and it is the term that loses most on coarse grids (below). A switch composes two steps:
   h1(z) = E V(z + S) (continuous: no jump claimed) by 1–2, then E h1(y + J) by 1–2 with J's kernel.
3. *Slope through the minimum over actions*: with a* optimal at y (the stop included),
   V(y) − V(x) ≥ f_a*(y) − f_a*(x) for x < y in the cell. The stop's value is flat (μ), so where the
   stop may be optimal somewhere in the cell only s(i) = 0 is valid; elsewhere s(i) = the least σ_a(i)
   over the actions that may be optimal somewhere in it. "May be optimal" is decided with the upper
   bound: on the cell V ≤ U(i + 1) (U(L + 1) = μ), so an action whose lower bound c_a + h_a(i) (≤
   its value anywhere on the cell) exceeds U(i + 1) is never optimal there, and the stop is ruled out
   where U(i + 1) < μ. The pessimistic chain (⌈·⌉, leaving the grid = failure) also gives such a
   U, but with its O(h) error per epoch it cannot rule the stop out near the root, where the root
   value is within 0.5 % of μ at the searched multipliers; the first-order U computed alongside
   (step 1) can on fine grids. Both give the same bound, to 0.03, on PACT-VGG11 at 600–2400
   buckets (``--chain-test``): there the competing models, not the stop, are what it leaves open.

At the root, G_0(none, i₀) − μ(1 − ω) − λTmax bounds the adaptive optimum (weak duality, as the
floor bound). G ≥ the floor chain's values cell by cell (same p, every added term ≥ 0), so the
probe's bound is ≥ the floor's on the same grid.

Rounding: every stored bound is rounded towards its safe side by its own step's a-priori error
(each correlation's :func:`~deplbench.formulations.adaptive.correlation.fft_error`, the sums' and
the stage cost's as in :func:`~deplbench.formulations.adaptive.chain.dp`): lower values and slopes
down, upper values up. Each step is valid for whatever valid inputs were stored, so nothing is
propagated — which matters: the slope step is not a contraction (the |Δs| term), and a sup-norm
error bound carried through it grows by about 1.5 per epoch (to 10³ on a value of 2·10³ after the
100 epochs of PACT-VGG11 at 600 buckets).

What is relaxed
---------------
Besides the priced relaxation itself: one slope per cell (the least density over a cell: the
jump term's ρ and the var correction lose where S spans few buckets), only V's jump at y = 0 is
claimed (atoms' jumps land off the grid: on lattice laws the probe gains only by reading the
success cell's interior as V(0+)), slopes are 0 where the stop may be optimal and the least
where several actions may, and the kernels' tails (TAIL, TAIL_JUMP) as the floor chain's. Where S
spans many buckets each is second order in h (the slope's error is O(h)·V′, times φ < 1 bucket).

Measured gains and costs: docs/adaptive.md, "Further routes, measured and not taken" (the
first-order loss grid).

Cost: each kernel's row is correlated 7 times (lower value: 2, upper value: 3, slope: 2; +1 for
atoms) where the floor pass correlates 3 quantities with one kernel, so a probe pass costs 2.5–4
floor passes (measured: docs/adaptive.md); the kernels: 8 density evaluations a cell, K̄ × models of them.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass

import numpy as np

from deplbench.formulations.adaptive.chain import (
    EPS,
    TAIL,
    TAIL_JUMP,
    UNIT,
    Chain,
    _candidates,
    correlate_rows,
    distinct_rows,
    dp,
    switch_values,
)
from deplbench.formulations.adaptive.correlation import Kernel, correlate
from deplbench.instances.distributions import Empirical, InverseGamma, LogNormal, Normal, PointMass, StudentT

#: Gauss–Legendre nodes per cell for q (the fractional-part-weighted mass).
NODES = 8
#: q and ρ are lowered by this relative amount (any smaller q or ρ is valid: s ≥ 0, G⁺(0) ≥ 0).
SAFE = 1e-7
#: Laws whose density is unimodal: the least density over a cell is at one of its ends.
UNIMODAL = (InverseGamma, StudentT, Normal, LogNormal)
#: Tolerance of the "may be optimal" test, relative to μ (the passes' rounding bounds are added).
TOL = 1e-9


@dataclass
class SlopeKernel:
    """The law of a step S (in buckets) on cells t = lo .. lo + n − 1 (t = ⌊S⌋), for both sides.

    Lower side: ``pc`` mass landing inside cell t (φ = S − t > 0), ``pa`` mass exactly on the grid
    point t, ``q`` ≤ E[φ; ⌊S⌋ = t], ``rho`` ≤ S's density over [t, t + 1]; the mass beyond the upper
    quantile sits at the last cell with q = ρ = 0, the mass below the lower one is left out (it lands
    lower: V ≥ 0). For a unimodal density (``smooth``) ``pin``: the complete cells' masses (the upper
    tail excluded) and ``var`` ≥ (max − min of the density over the cell)/4.
    Upper side: ``u_pt`` mass read at the grid point i + t (atoms on it; the lower tail at lo; the
    upper tail at 0 when S ≤ 0), ``u_cell`` mass read at the cell's upper end i + t + 1, with the
    credit ``u_credit`` ≤ E[1 − φ; ⌊S⌋ = t] times the cell's lower slope; ``u_inf`` mass sent to +∞
    (read as μ)."""

    lo: int
    pc: np.ndarray
    pa: np.ndarray
    q: np.ndarray
    rho: np.ndarray
    u_pt: np.ndarray
    u_cell: np.ndarray
    u_credit: np.ndarray
    u_inf: float = 0.0
    pin: np.ndarray | None = None
    var: np.ndarray | None = None

    def __post_init__(self):
        lo = self.lo
        self.k_c, self.k_a, self.k_q = Kernel(lo, self.pc), Kernel(lo, self.pa), Kernel(lo, self.q)
        self.k_p = Kernel(lo, self.pc + self.pa)
        self.k_upt, self.k_ucell = Kernel(lo, self.u_pt, self.u_inf), Kernel(lo + 1, self.u_cell)
        self.k_cr = Kernel(lo, self.u_credit)
        self.atoms = bool(np.any(self.pa > 0))
        self.smooth = self.pin is not None
        if self.smooth:
            self.k_in, self.k_var = Kernel(lo, self.pin), Kernel(lo, self.var)


def _mode(dist) -> float:
    """The mode of a unimodal law (where its density is largest)."""
    if isinstance(dist, InverseGamma):
        return dist.scale / (dist.shape + 1.0)
    if isinstance(dist, StudentT):
        return dist.loc
    if isinstance(dist, Normal):
        return dist.mu
    return math.exp(dist.mu - dist.sigma ** 2)          # LogNormal


def slope_kernel(dist, factor: float, h: float, tail: float = TAIL) -> SlopeKernel:
    """:class:`SlopeKernel` of S = factor·D/h, binned as the floor chain's kernel (the same p)."""
    if isinstance(dist, (PointMass, Empirical)):
        vals = np.array([dist.value] if isinstance(dist, PointMass) else dist.samples, dtype=float)
        s = factor * vals / h
        t = np.floor(s + EPS)
        frac = s - t
        on = frac <= EPS
        t = t.astype(np.int64)
        lo = int(t.min())
        n = int(t.max()) - lo + 1
        w = 1.0 / t.size
        pa = np.bincount(t[on] - lo, minlength=n).astype(float) * w
        pc = np.bincount(t[~on] - lo, minlength=n).astype(float) * w
        q = np.bincount(t[~on] - lo, weights=frac[~on], minlength=n) * w
        credit = np.bincount(t[~on] - lo, weights=1.0 - frac[~on], minlength=n) * w
        return SlopeKernel(lo, pc, pa, q, np.zeros(n), pa, pc, credit * (1.0 - SAFE))
    q_lo, q_hi = dist.tails(tail)
    a, b = sorted((factor * q_lo / h, factor * q_hi / h))
    lo, hi = math.floor(a), math.ceil(b)
    grid = np.arange(lo, hi + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = np.asarray(dist.cdf(grid * h / factor), dtype=float)
    if factor < 0:
        cdf = 1.0 - cdf
    mass = np.maximum(np.diff(cdf), 0.0)
    below, above = float(cdf[0]), float(1.0 - cdf[-1])
    x, w = np.polynomial.legendre.leggauss(NODES)
    x, w = (x + 1.0) / 2.0, w / 2.0
    jac = h / abs(factor)
    dens = np.asarray(dist.pdf((grid[:-1, None] + x[None, :]) * h / factor), dtype=float) * jac
    q_gl = (dens * (x * w)[None, :]).sum(axis=1)
    q = np.clip(q_gl * (1.0 - SAFE), 0.0, mass)
    credit = np.clip(mass - q_gl * (1.0 + SAFE) - SAFE * mass, 0.0, mass)
    z = np.zeros(1)
    n = mass.size + 1
    pc = np.concatenate([mass, [above]])
    # upper side: the lower tail read at lo, the upper one at 0 (S ≤ 0: the run term) or +∞
    nonpos = factor < 0 and float(dist.ppf(0.0)) >= 0
    ext = max(n, 1 - lo) if nonpos else n
    u_pt = np.zeros(ext)
    u_pt[0] += below
    if nonpos:
        u_pt[-lo] += above
    u_cell = np.concatenate([mass, np.zeros(ext - mass.size)])
    u_credit = np.concatenate([credit, np.zeros(ext - mass.size)])
    u_inf = 0.0 if nonpos else above
    if not isinstance(dist, UNIMODAL):
        return SlopeKernel(lo, pc, np.zeros(n), np.concatenate([q, z]), np.zeros(n), u_pt, u_cell, u_credit, u_inf)
    ends = np.asarray(dist.pdf(grid * h / factor), dtype=float) * jac
    rho = np.minimum(ends[:-1], ends[1:]) * (1.0 - SAFE)
    top = np.maximum(ends[:-1], ends[1:])
    mode = factor * _mode(dist) / h                      # S's mode, in buckets
    cell = math.floor(mode) - lo
    if 0 <= cell < top.size:
        top[cell] = max(top[cell], float(dist.pdf(_mode(dist))) * jac)
    var = (top - rho) * (0.25 * (1.0 + SAFE)) + 1e-300
    return SlopeKernel(lo, pc, np.zeros(n), np.concatenate([q, z]), np.concatenate([rho, z]), u_pt, u_cell,
                       u_credit, u_inf, np.concatenate([mass, z]), np.concatenate([var, z]))


def stage_costs(chain: Chain, lam: float) -> np.ndarray:
    """Per (m, n): κx* + λ(c/x* + s/b), +inf on unusable pairs (as :func:`dp`)."""
    st = chain.st
    _, tc, money = st.priced(lam)
    return np.where(st.usable, lam * (tc + st.comm) + money, np.inf)


def upper_table(pes: Chain, lam: float, mu: float) -> tuple[np.ndarray, float, float]:
    """The pessimistic chain's values at (λ, μ), (K, M, L + 1) (U_k(m, j) ≥ V_k(m, y) for y ≤ j),
    a bound on their rounding, and its root value."""
    M, N, L1, K = pes.M, pes.N, pes.L + 1, pes.K
    stage = stage_costs(pes, lam)
    here_err = 9.0 * UNIT * np.where(np.isfinite(stage), stage, 0.0)
    nxt = np.full((M, 1, L1), mu)
    nxt[:, :, 0] = 0.0
    top = np.array([mu])
    stop = np.full(L1, mu)
    stop[0] = 0.0
    table = np.empty((K, M, L1))
    err = np.zeros(1)
    for k in range(K - 1, -1, -1):
        models, kers, index = distinct_rows(pes, k)
        ex_u, err_u = correlate_rows(nxt[models], kers, np.broadcast_to(top, (len(models), 1)), err)
        sw, err_sw = switch_values(pes, ex_u, top, err_u, index)
        e = err_u.max() + UNIT * np.abs(ex_u).max() + here_err.max()
        for v in err_sw.values():
            e = max(e, v.max() + UNIT * mu + here_err.max())
        err = np.array([e])
        ex = ex_u[index] + stage.reshape(M * N)[:, None, None]
        for (a, b) in sw:
            sw[(a, b)] = sw[(a, b)] + stage[b][:, None, None]
        cur = np.empty((M + 1, 1, L1))
        for m in range(M + 1):
            cand, _ = _candidates(pes, ex, sw, m, N)
            cur[m, 0] = np.minimum(cand[:, 0].min(axis=0), stop)
        if k == 0:
            root = float(cur[M, 0, pes.i0])
        table[k] = cur[:M, 0]
        nxt = cur[:M]
    return table, float(err[0]), root


def _corr(rows: list[tuple[np.ndarray, Kernel, float]]) -> tuple[np.ndarray, np.ndarray]:
    """E[f(clip(i + step))] for every (f, kernel, value above the top): (B, L2), and each row's
    a-priori rounding bound (B,) (:func:`~deplbench.formulations.adaptive.correlation.fft_error`)."""
    f = np.stack([r[0] for r in rows])[:, None, :]
    top = np.array([[r[2]] for r in rows])
    out, err, _ = correlate(f, [r[1] for r in rows], top, with_error=True)
    return out[:, 0], err[:, 0]


def _pair_min(s: np.ndarray) -> np.ndarray:
    """min(s(j), s(j + 1)) along the last axis, 0 past the top (slopes above the grid: 0)."""
    out = np.zeros_like(s)
    out[..., :-1] = np.minimum(s[..., :-1], s[..., 1:])
    return out


def _expect(c, p_pt, s, u, mu: float, sk: SlopeKernel, jump: float | None):
    """Bounds on h(y) = E V(y + S) (layout of :func:`slope_pass`) from V's lower cell values ``c``,
    lower point values ``p_pt``, lower slopes ``s`` and upper point values ``u``; ``jump`` the size
    of V's jump at y = 0 (None: claim none). Returns (lower value at each grid point, lower slope on
    each cell, upper value at each grid point), each rounded in its safe direction by this step's
    own rounding bound: valid for whatever (valid) inputs were stored, so no error is carried.

    The slope part: a unimodal density gives min(Σ p_t s(i + t), Σ p_t s(i + t + 1)) less
    Σ var_t |s(i + t + 1) − s(i + t)| (module docstring, step 2); atoms (and other laws) give
    Σ p_t min(s(i + t), s(i + t + 1))."""
    rows = [(c, sk.k_c, c[-1]), (s, sk.k_q, 0.0), (u, sk.k_upt, mu), (u, sk.k_ucell, mu), (s, sk.k_cr, 0.0)]
    if sk.smooth:
        rows += [(s, sk.k_in, 0.0), (np.abs(np.diff(s, append=0.0)), sk.k_var, 0.0)]
    else:
        rows += [(_pair_min(s), sk.k_p, 0.0)]
    if sk.atoms:
        rows.append((p_pt, sk.k_a, p_pt[-1]))
    out, err = _corr(rows)
    val = out[0] + out[1] + (out[-1] if sk.atoms else 0.0)
    val -= err[0] + err[1] + (err[-1] if sk.atoms else 0.0) + 3.0 * UNIT * np.abs(val)
    up = out[2] + out[3] - out[4]
    up += err[2] + err[3] + err[4] + 3.0 * UNIT * (np.abs(out[2]) + np.abs(out[3]) + np.abs(out[4]))
    if sk.smooth:
        a0, a1 = out[5], np.append(out[5][1:], 0.0)
        slope = np.minimum(a0, a1) - out[6]
        slope -= err[5] + err[6] + 2.0 * UNIT * (np.abs(a0) + np.abs(out[6]))
    else:
        slope = out[5] - err[5]
    if jump is not None and jump > 0:
        t = -np.arange(c.size)                      # output index i' = i + 1: cell t = −i − 1 = −i'
        idx = t - sk.lo
        ok = (idx >= 0) & (idx < sk.rho.size)
        add = np.zeros(c.size)
        add[ok] = sk.rho[idx[ok]]
        slope = slope + jump * add
        slope -= 2.0 * UNIT * np.abs(slope)
    val[0], slope[0], up[0] = 0.0, 0.0, 0.0         # below y = 0: h ≥ 0, flat (the rows read there)
    return np.maximum(val, 0.0), np.maximum(slope, 0.0), np.minimum(up, mu)


@dataclass
class SlopePass:
    lam: float
    mu: float
    value: float          # the lower bound on V₀ at the root (rounded downwards)
    upper: float          # the upper bound on V₀ at the root (first-order, or the pessimistic chain's)
    stop_cells: float     # share of the (k, m, cell) with G < μ where the stop could not be ruled out
    multi_cells: float    # share of them where actions of different slopes competed
    floor_upper: float = math.nan   # the pessimistic chain's root value, when it decided the candidates

    def bound(self, omega: float, time_max: float) -> float:
        """G₀ − μ(1 − ω) − λTmax, less the rounding of this expression (G₀ is rounded already)."""
        risk = self.mu * (1.0 - omega)
        raw = self.value - risk - self.lam * time_max
        return raw - 4.0 * UNIT * (abs(self.value) + risk + self.lam * time_max)


def slope_pass(chain: Chain, lam: float, mu: float, pes: Chain | None = None) -> SlopePass:
    """The first-order pass (module docstring) at (λ, μ) on the optimistic ``chain``'s grid.

    The "may be optimal" test reads the first-order upper bound computed beside the lower one, or,
    with ``pes``, the pessimistic chain's table on the same grid (:func:`upper_table`).
    Layout: arrays of L + 2 entries, index 0 for y < 0 (value 0, slope 0: what the correlations
    read below the grid), index i + 1 for the grid point i and the cell [i, i + 1) (cell 0: (0, 1),
    lower value G⁺(0); its point value 0)."""
    table = upper_table(pes, lam, mu) if pes is not None else None
    st, M, N, K = chain.st, chain.M, chain.N, chain.K
    L2 = chain.L + 2
    stage = stage_costs(chain, lam).reshape(M * N)
    stage_err = 9.0 * UNIT * np.where(np.isfinite(stage), stage, 0.0)
    jumps = {ab: slope_kernel(d, 1.0, chain.h, TAIL_JUMP) for ab, d in chain.pairs.items()}
    C = np.full((M, L2), mu)
    C[:, 0] = 0.0
    P = C.copy()
    P[:, 1] = 0.0                                   # the point y = 0: success
    S = np.zeros((M, L2))
    Up = P.copy()
    n_stop = n_multi = n_cells = 0
    for k in range(K - 1, -1, -1):
        # run term, per (model m′, factor): h1(·) = E V_{k+1}(m′, · + S)
        ex = np.empty((M * N, 3, L2))
        h1: dict[tuple[int, float], tuple] = {}
        for b in range(M):
            for n in range(N):
                key = (b, -float(st.gamma[n] * st.scale[k, b]))
                if key not in h1:
                    sk = slope_kernel(chain.instance.models[b].improvement, key[1], chain.h)
                    h1[key] = _expect(C[b], P[b], S[b], Up[b], mu, sk, float(C[b, 1]))
                ex[b * N + n] = np.stack(h1[key])
        sw = {}
        for (a, b), jk in jumps.items():
            rows = np.empty((N, 3, L2))
            done: dict[float, tuple] = {}
            for n in range(N):
                fac = -float(st.gamma[n] * st.scale[k, b])
                if fac not in done:
                    v1, s1, u1 = ex[b * N + n]
                    done[fac] = _expect(v1, v1, s1, u1, mu, jk, None)   # h1 is continuous: point = cell
                rows[n] = np.stack(done[fac])
            sw[(a, b)] = rows
        newC = np.empty((M + 1, L2))
        newS = np.zeros((M + 1, L2))
        newU = np.empty((M + 1, L2))
        for m in range(M + 1):
            cand, ids = _candidates(chain, ex, sw, m, N)
            cost, cerr = stage[ids][:, None], stage_err[ids][:, None]
            ql = cand[:, 0] + cost
            ql -= UNIT * np.abs(ql) + cerr
            qu = cand[:, 2] + cost
            qu += UNIT * np.abs(qu) + cerr
            g = np.minimum(ql.min(axis=0), mu)
            g[0] = 0.0
            newC[m] = g
            uu = np.minimum(qu.min(axis=0), mu)
            uu[:2] = 0.0                                                # y ≤ 0: success
            newU[m] = uu
            if m == M:
                continue
            cell_up = np.empty(L2)                                      # V ≤ this on cell i (index i + 1)
            if table is None:
                cell_up[:-1], cell_up[-1] = uu[1:], mu
            else:
                cell_up[1:-1], cell_up[-1], cell_up[0] = table[0][k, m, 1:] + table[1], mu, 0.0
            stop_c = mu <= cell_up
            act_c = ql <= cell_up[None, :]
            slopes = np.where(act_c, cand[:, 1], np.inf)
            sl = slopes.min(axis=0)
            spread = np.where(act_c, cand[:, 1], -np.inf).max(axis=0) - sl
            keep = ~stop_c & np.isfinite(sl)
            sl = np.where(keep, sl, 0.0)
            sl[0] = 0.0
            newS[m] = sl
            live = g[1:] < mu                                          # cells where going may pay
            n_cells += int(live.sum())
            n_stop += int((stop_c[1:] & live).sum())
            n_multi += int(((spread[1:] > 1e-9 * np.abs(sl[1:])) & keep[1:] & live).sum())
        if k == 0:
            root, root_up = float(newC[M, chain.i0 + 1]), float(newU[M, chain.i0 + 1])
        C, S, Up = newC[:M], newS[:M], newU[:M]
        P = C.copy()
        P[:, 1] = 0.0
    return SlopePass(lam, mu, root, root_up, n_stop / max(1, n_cells), n_multi / max(1, n_cells),
                     table[2] if table is not None else math.nan)


def floor_search(inst, buckets: int):
    """The priced multiplier search (the bracket's) on ``buckets``: (search, its CPU seconds)."""
    from deplbench.formulations.adaptive.search import multires_search

    chain = Chain(inst, buckets, optimistic=True)
    t0 = time.process_time()
    s = multires_search(inst, chain, float(inst.omega), 6, 6)
    return chain, s, time.process_time() - t0


def main() -> None:
    from deplbench.instances.generators import generate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="pact-vgg11")
    ap.add_argument("--loss-max", type=float, default=0.15)
    ap.add_argument("--buckets", default="600,2400,9600")
    ap.add_argument("--match", default="",
                    help="finer grids for floor searches: where the floor bound meets the probe's")
    ap.add_argument("--mu-scan", default="1.0025,1.005,1.01,1.02",
                    help="ratios to the floor's μ at which the probe is also run (its own μ; any μ is valid)")
    ap.add_argument("--chain-test", action="store_true",
                    help="also decide the candidates with the pessimistic chain's table (the cruder test)")
    a = ap.parse_args()
    inst = generate("realistic", family=a.family, loss_max=a.loss_max)
    omega = float(inst.omega)
    print(f"{a.family} ℓmax {a.loss_max:g}; 1-minute load {os.getloadavg()[0]:.2f}", flush=True)
    floors: dict[int, float] = {}
    probes: dict[int, float] = {}
    for B in (int(x) for x in a.buckets.split(",")):
        chain, s, t_search = floor_search(inst, B)
        tm = chain.st.time_max
        best = s.best
        t0 = time.process_time()
        fp = dp(chain, best.lam, best.mu)
        t_floor = time.process_time() - t0
        t0 = time.process_time()
        sp = slope_pass(chain, best.lam, best.mu)
        t_probe = time.process_time() - t0
        fb, pb = fp.bound(omega, tm), sp.bound(omega, tm)
        print(f"{B:6d} buckets (λ {best.lam:.5g}, μ {best.mu:.5g}): floor {fb:.3f}, probe {pb:.3f} "
              f"(+{100 * (pb / fb - 1):.3f} %); V0 floor {fp.value:.3f} ≤ probe {sp.value:.3f} ≤ V ≤ "
              f"first-order upper {sp.upper:.3f} | CPU-s: search {t_search:.2f}, floor pass {t_floor:.2f}, "
              f"probe pass {t_probe:.2f} | stop not ruled out on {100 * sp.stop_cells:.1f} % of the cells with G < μ, "
              f"slopes competing on {100 * sp.multi_cells:.1f} % | load {os.getloadavg()[0]:.2f}", flush=True)
        if a.mu_scan:
            t0 = time.process_time()
            ratios = [1.0] + [float(x) for x in a.mu_scan.split(",")]
            got = {1.0: pb} | {r: slope_pass(chain, best.lam, best.mu * r).bound(omega, tm) for r in ratios[1:]}
            r_best = max(got, key=got.get)
            print(f"        probe at its own μ (ratios {', '.join(f'{r:g}: {v:.3f}' for r, v in got.items())}): "
                  f"{got[r_best]:.3f} at μ×{r_best:g} (+{100 * (got[r_best] / fb - 1):.3f} % over the floor) | "
                  f"{time.process_time() - t0:.2f} CPU-s for {len(ratios) - 1} passes | load {os.getloadavg()[0]:.2f}",
                  flush=True)
            pb = got[r_best]
        if a.chain_test:
            t0 = time.process_time()
            sc = slope_pass(chain, best.lam, best.mu, pes=Chain(inst, B, optimistic=False))
            print(f"        candidates by the pessimistic chain (root {sc.floor_upper:.3f}): "
                  f"probe {sc.bound(omega, tm):.3f}"
                  f" (+{100 * (sc.bound(omega, tm) / fb - 1):.3f} %), stop not ruled out on {100 * sc.stop_cells:.1f} %"
                  f" | {time.process_time() - t0:.2f} CPU-s", flush=True)
        floors[B], probes[B] = fb, pb
    if a.match:
        grids = sorted(floors.items())
        for B in (int(x) for x in a.match.split(",")):
            if B in floors:
                continue
            chain, s, t_search = floor_search(inst, B)
            grids.append((B, s.bound()))
            print(f"  floor search on {B} buckets: {grids[-1][1]:.3f} ({t_search:.1f} CPU-s; load "
                  f"{os.getloadavg()[0]:.2f})", flush=True)
        grids.sort()
        for B, pb in probes.items():
            print(f"  the floor bound reaches the probe's {pb:.3f} ({B} buckets) at {floor_buckets(grids, pb)}",
                  flush=True)


def floor_buckets(grids: list[tuple[int, float]], target: float) -> str:
    """Where floor(B) = lim − c/B, through the two searched grids around ``target`` (or the two finest),
    reaches ``target``."""
    pairs = list(zip(grids, grids[1:]))
    (b0, f0), (b1, f1) = next(((g0, g1) for g0, g1 in pairs if g0[1] <= target <= g1[1]), pairs[-1])
    c = (f1 - f0) / (1.0 / b0 - 1.0 / b1)
    lim = f1 + c / b1
    if target >= lim:
        return f"no grid (floor → {lim:.2f} through {b0} and {b1})"
    how = "interpolated" if f0 <= target <= f1 else "extrapolated"
    return f"about {c / (lim - target):.0f} buckets (floor = {lim:.2f} − {c:.4g}/B through {b0} and {b1}, {how})"


if __name__ == "__main__":
    main()
