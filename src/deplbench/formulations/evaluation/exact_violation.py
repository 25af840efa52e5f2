"""Rigorous bounds on the violation probability and the ω-quantile of a static plan.

What is computed
----------------
For a fixed model sequence m_1..m_K with data multipliers γ_k the final loss
is (DepL eq. (8) summed; :meth:`~deplbench.formulations.model.scenarios.Scenarios.final_losses`)

    ℓ(K) = ℓ(0) + Σ_k Y_k + Σ_switches J_k,   Y_k = −γ_k · A_{m_k} decay_{m_k}(k) · X_{m_k},

a constant plus independent terms of known laws (inverse gamma, Student t,
normal, log-normal, point mass, empirical). :func:`violation_bounds` returns
``[p_lo, p_hi] ∋ P(ℓ(K) > ℓmax)`` and ``[q_lo, q_hi] ∋`` the ω-quantile
``q = inf{x : P(ℓ(K) > x) ≤ 1 − ω}`` with no sampling, and the verdict
against 1 − ω: ``proven feasible`` (p_hi ≤ 1 − ω), ``proven infeasible``
(p_lo > 1 − ω) or ``undecided``.

The construction (why the bounds hold)
---------------------------------------
Every term is placed on the lattice hZ (the threshold is made a lattice
point by shifting the first random term by −φh, φ = frac((ℓmax − ℓ(0) −
constants)/h), which changes nothing). For a continuous term with
**unimodal** density f (all four continuous kinds are unimodal), the mass of
cell C_j = [jh, (j+1)h) splits into a *uniform part* u_j = h·min(f(jh),
f((j+1)h)) ≤ P(Y ∈ C_j) (on an interval a unimodal density is smallest at an
end point) and a *residual* r_j = P(Y ∈ C_j) − u_j of unknown shape. Let U be
uniform on (0, 1]. Then

* Y ≤st L⁺ + hU, where L⁺ puts u_j at j and r_j at j+1 (the residual moved to
  the next cell is above its true position); the mass below the truncation
  point a is put at a (above its true position) and the mass above the
  upper truncation point b is sent to +∞ (left out of the vector, and
  counted as violation);
* Y ≥st L⁻ + hU, where L⁻ puts u_j at j and r_j at j−1; the mass above b is
  put at the top cell (below its true position), the mass below a is sent to
  −∞ (left out, never a violation).

(Stochastic order is kept by a mixture with the same weights of ordered
components.) An empirical term (atoms v) puts each atom at ⌈v/h⌉ in L⁺ and at
⌊v/h⌋ − 1 in L⁻; a point mass is a constant. The terms are independent, so
Σ Y ≤st Σ L⁺ + h·IH_n and Σ Y ≥st Σ L⁻ + h·IH_n, where IH_n, the sum of n
independent uniforms (Irwin–Hall), is independent of the lattice sums and its
integer cells have the Eulerian probabilities P(k < IH_n ≤ k+1) = A(n,k)/n!
(computed by the stable positive recursion). As the threshold is a lattice
point, P(Σ L + h·IH_n > τh) = P(Σ L/h + K_n ≥ τ) with K_n the cell of IH_n:
an exact finite sum. Hence

    p_lo = P(ΣL⁻/h + K_n ≥ τ) ≤ P(ℓ(K) > ℓmax) ≤ P(ΣL⁺/h + K_n ≥ τ) + P(some term above b) = p_hi.

The lattice error is of order h² (only the residual mass, O(h) per term, is
moved, by one cell), so halving h quarters the width; the quantile bounds
read the same two curves at every lattice threshold (resolution h).

Numerical error and its allowance
---------------------------------
The lattice sums are convolved with one real FFT (product of the terms'
spectra), sized to hold the whole support (no wrap-around). Round-off is
charged to the bounds as an explicit ``allowance`` (subtracted from p_lo,
added to p_hi). Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., Thm 24.2: ‖fl(FFT x) − FFT x‖₂ ≤ c·log₂N·u·‖FFT x‖₂ with c < 5 for
accurately computed twiddle factors. Each term's vector p_i has
‖FFT p_i‖₂ = √N‖p_i‖₂ ≤ √N and every spectrum entry has modulus ≤ 1, so
|Πφ̂_i − Πφ_i| ≤ Σ|φ̂_i − φ_i| (+ n·u for the products) gives a product
error of 2-norm ≤ n(5 log₂N + 1)·u·√N; by Parseval the inverse FFT turns
it into ≤ (n+1)(5 log₂N + 1)·u in 2-norm of the lattice vector, and a tail
sum of at most N entries moves by at most √N times that. We charge
2·√N·(n+1)·(5 log₂N + 2)·u, plus 2·10⁻¹³ per lattice cell of every term
for the library CDF and density values (SciPy's distributions are accurate
to a few ulps; this absolute 10⁻¹³ per value is the assumption the
allowance rests on). At the default precision it is below 10⁻⁸.

Refinement
----------
:func:`violation_bounds` starts at h = σ̂/64 (σ̂ the root sum of squared
interquartile ranges of the terms; ``ExactSettings.start_steps``) and
halves h until the width p_hi − p_lo is at most ``ExactSettings.target_width``
and the verdict is decided (``settle=True``, the default; with ``decide=True``
it stops as soon as the verdict is decided) or the next grid would exceed
``ExactSettings.max_work`` (lattice points × terms, a deterministic budget).
Every grid's interval holds, so the one returned is their intersection. When
the budget ends the loop first, ``ViolationBounds.exhausted`` is set (the
evaluation's ``exact_budget_exhausted``, with the width reached in
``exact_reason``): the bounds still hold, wider than asked. Inside a
:func:`deplbench.limits.deadline` scope each grid reads the deadline, and a
grid that would end after it is not started.

One decision, no tolerance
--------------------------
Constraint (3) is judged as stated: a final loss above ℓmax is a violation,
with no tolerance (a deterministic plan whose loss is above ℓmax by any
amount is proven infeasible). The proof is about the model's numbers as
the instance defines them in binary64: the coefficients of eq. (8) — the
run term 1/√(k + B), a switch's jump, γ = log₂(1 + U) of the data — are
taken as computed in floating point, and the decision is exact for those
numbers. Where a deterministic plan's loss equals ℓmax in floating point,
the same plan in real arithmetic may lie a few 10⁻¹⁶ (relative) on either
side, and the verdict follows the floating-point numbers (a tie is
feasible). :func:`violation_bounds` at the default
settings is the one decision every exact path shares: ``evaluate --exact``
reads it, and ``milp-exact`` returns only a plan it proves feasible (the
enumeration's lattice proposes, this decides), so a plan has one verdict.
(The Monte-Carlo verdict of :func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`
is an estimate and keeps its 10⁻⁹·max(1, |ℓmax|) rounding allowance.)

References
----------
DepL paper eqs. (3) and (8); Higham (2002), Thm 24.2; Irwin–Hall and Eulerian
numbers: Feller, *An Introduction to Probability Theory*, Vol. II, I.9.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import fft as sfft

from deplbench import limits
from deplbench.formulations.model.plan import check_plan_names
from deplbench.instances.distributions import Empirical

PROVEN_FEASIBLE = "proven feasible"
PROVEN_INFEASIBLE = "proven infeasible"
UNDECIDED = "undecided"

_U = float(np.finfo(float).eps) / 2.0     # unit round-off
_CDF_ERROR = 1e-13                          # assumed absolute error of one library CDF/pdf value
#: Largest lattice index |ℓ/h| used: beyond it a loss value's round-off (|ℓ|·u) is no longer below
#: 2⁻¹² of a cell, so ``floor(ℓ/h)`` may land in the wrong cell and the bounds would not be rigorous.
_MAX_INDEX = 2**40


class _LatticeRange(Exception):
    """The losses are too large for the lattice step (indices beyond :data:`_MAX_INDEX`)."""


class ExactUnavailable(Exception):
    """The bounds cannot be computed within the budget (the message says why)."""


@dataclass(frozen=True)
class ExactSettings:
    """Precision and budget of :func:`violation_bounds`.

    Attributes
    ----------
    target_width : float
        Stop refining once p_hi − p_lo ≤ this (default 1e-4).
    tail : float
        Total truncated tail mass over all terms (split evenly by term and side).
    max_work : int
        Largest (lattice points × random terms) of one grid: the budget.
    decide : bool
        Also stop as soon as the verdict against 1 − ω is decided.
    settle : bool
        Keep refining past ``target_width`` while the verdict is undecided
        (within ``max_work``): the one decision every exact path shares
        (``milp-exact``'s returned plan, ``evaluate --exact``) decides
        every plan its budget can.
    start_steps : int
        Lattice steps per spread σ̂ of the first grid (h = σ̂/start_steps);
        a caller that knows the coarse grids are undecided starts finer.
    """

    target_width: float = 1e-4
    tail: float = 1e-5
    max_work: int = 60_000_000
    decide: bool = False
    start_steps: int = 64
    settle: bool = True


@dataclass
class ViolationBounds:
    """Result of :func:`violation_bounds` (all probabilities absolute)."""

    p_lo: float
    p_hi: float
    q_lo: float
    q_hi: float
    verdict: str
    risk: float
    step: float = 0.0
    points: int = 0
    terms: int = 0
    refinements: int = 0
    allowance: float = 0.0
    exhausted: bool = False
    info: dict = field(default_factory=dict)

    @property
    def width(self) -> float:
        return self.p_hi - self.p_lo

    def to_dict(self) -> dict:
        return {"violation_lo": self.p_lo, "violation_hi": self.p_hi, "quantile_lo": self.q_lo,
                "quantile_hi": self.q_hi, "verdict": self.verdict, "risk": self.risk, "step": self.step,
                "points": self.points, "terms": self.terms, "refinements": self.refinements,
                "allowance": self.allowance, "budget_exhausted": self.exhausted}


# --------------------------------------------------------------------------- terms
@dataclass(frozen=True)
class Term:
    """Y = a·X + b for X of law ``dist`` (a ≠ 0)."""

    dist: object
    a: float
    b: float

    def ppf(self, q):
        q = np.asarray(q, dtype=float)
        return self.a * np.asarray(self.dist.ppf(q if self.a > 0 else 1.0 - q), dtype=float) + self.b

    def iqr(self) -> float:
        lo, hi = self.ppf(np.array([0.25, 0.75]))
        return float(abs(hi - lo))


def sequence_terms(instance, models, gammas) -> tuple[float, list[Term]]:
    """(constant, random terms) of ℓ(K) for a model-index sequence and per-epoch γ.

    The constant is ℓ(0) plus every deterministic term (point masses, zero
    coefficients); a forbidden switch contributes nothing (such a plan is
    already infeasible by constraint, as in the evaluator).
    """
    models = np.asarray(models, dtype=int)
    gammas = np.broadcast_to(np.asarray(gammas, dtype=float), models.shape)
    const = float(instance.initial_loss)
    terms: list[Term] = []
    if models.size:
        coef = -gammas * instance.run_scale_for(models.size)[np.arange(models.size), models]
        for m, a in zip(models.tolist(), coef.tolist()):
            const = _add(terms, const, instance.models[m].improvement, a, 0.0)
        for k in range(1, models.size):
            if models[k] != models[k - 1]:
                p = instance.switch_index.get((int(models[k - 1]), int(models[k])))
                if p is not None:
                    const = _add(terms, const, instance.switches[p].jump, 1.0, 0.0)
    return const, terms


def _add(terms, const, dist, a, b) -> float:
    if a == 0.0 or dist.is_deterministic:
        return const + a * float(dist.mean()) + b
    terms.append(Term(dist, float(a), float(b)))
    return const


# --------------------------------------------------------------------------- lattice
def _empirical_cells(term: Term, h: float):
    """L⁻ and L⁺ of an empirical term: atom v at ⌊v/h⌋ − 1 and at ⌈v/h⌉."""
    v = term.a * np.asarray(term.dist.samples, dtype=float) + term.b
    up_idx = np.ceil(v / h).astype(np.int64)
    lo_idx = np.floor(v / h).astype(np.int64) - 1
    w = 1.0 / v.size
    up0, lo0 = int(up_idx.min()), int(lo_idx.min())
    return lo0, np.bincount(lo_idx - lo0) * w, up0, np.bincount(up_idx - up0) * w, 0.0, v.size


def _cells(jl: int, ju: int, h: float, term: Term, cdf, sf, dens):
    """L⁻ and L⁺ of a continuous term from its CDF, survival and density at
    the lattice edges jl·h..ju·h (module docstring)."""
    if term.a < 0:                          # Y = aX + b decreasing in X
        cdf, sf = sf, cdf
    lower = cdf[:-1] < 0.5                  # cell masses from the small tail: no cancellation near 1
    mass = np.clip(np.where(lower, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:]), 0.0, None)
    dens = dens / abs(term.a)
    uni = np.minimum(h * np.minimum(dens[:-1], dens[1:]), mass)
    res = mass - uni
    below, above = float(cdf[0]), float(sf[-1])
    w = ju - jl
    up = np.zeros(w + 1)
    up[:w] += uni
    up[1:] += res
    up[0] += below                          # lower tail lumped at a (above its true place)
    lo = np.zeros(w + 1)
    lo[1:] += uni
    lo[:w] += res
    lo[w] += above                          # upper tail lumped at b (below its true place)
    return jl - 1, lo, jl, up, above, w + 1


def discretise_all(terms: list[Term], h: float, eps: float) -> list:
    """:func:`_cells` of every term, the library called once per distinct law and function (``tails(ε)``,
    the median, the cdf, sf and pdf on the grid where read; a model's laws are shared by its epochs)."""
    out: list = [None] * len(terms)
    groups: dict = {}
    for i, t in enumerate(terms):
        if isinstance(t.dist, Empirical):
            out[i] = _empirical_cells(t, h)
        else:
            groups.setdefault(t.dist, []).append(i)
    for dist, idx in groups.items():
        qx = np.array(dist.tails(eps))          # the law's ε and 1 − ε quantiles
        spans, zs = [], []
        for i in idx:
            t = terms[i]
            ends = np.sort(t.a * qx + t.b)
            jl = int(math.floor(ends[0] / h))
            ju = max(int(math.ceil(ends[1] / h)), jl + 1)
            spans.append((jl, ju))
            zs.append((np.arange(jl, ju + 1, dtype=float) * h - t.b) / t.a)
        z = np.concatenate(zs)
        cdf, sf = _cdf_sf(dist, z, [terms[i] for i in idx], spans, h)
        pdf = np.asarray(dist.pdf(z), dtype=float)
        start = 0
        for i, (jl, ju) in zip(idx, spans):
            sl = slice(start, start + ju - jl + 1)
            out[i] = _cells(jl, ju, h, terms[i], cdf[sl], sf[sl], pdf[sl])
            start = sl.stop
    return out


def _cdf_sf(dist, z: np.ndarray, terms: list[Term], spans: list, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The law's cdf and sf at z (the terms' grids end to end) where :func:`_cells` reads them: a term's
    cdf below its median and sf above it, two cells past, or all where that misses a read; a value read
    is a call's on all of z (NaN: never read). With no cdf, :func:`_cells` branches on sf < 0.5 − 1e-10:
    the cdf's branch while |cdf + sf − 1| ≪ 1e-10."""
    med = float(np.asarray(dist.ppf(0.5)))
    want = np.zeros((2, z.size), dtype=bool)                    # rows: X's cdf, X's sf
    stops = np.cumsum([ju - jl + 1 for jl, ju in spans]).tolist()
    for t, (jl, ju), stop in zip(terms, spans, stops):
        n, mid = ju - jl + 1, (t.a * med + t.b) / h - jl        # mid: the lattice index of Y's median
        k = min(max(math.floor(mid), 0), n - 1) if math.isfinite(mid) else n
        want[int(t.a < 0), stop - n:stop - n + min(n, k + 3)] = True      # Y's cdf is X's sf when a < 0
        want[int(t.a > 0), stop - n + max(0, k - 1):stop] = True
    out = np.full((2, z.size), np.nan)
    for f, o, w in zip((dist.cdf, dist.sf), out, want):
        o[w] = np.asarray(f(z[w]), dtype=float)
    for t, o, w, zt in zip(terms, *(np.split(x, stops[:-1], axis=-1) for x in (out, want, z))):
        ycdf, ysf = o[::1 if t.a > 0 else -1]               # views of out: a term's values
        # a cdf not computed is ≥ 0.5 where its sf is below 0.5 by far more than cdf + sf − 1 (2·_CDF_ERROR)
        miss = np.where(ycdf[:-1] < 0.5, np.isnan(ycdf[1:]), np.isnan(ysf[:-1]) | np.isnan(ysf[1:])
                        | (np.isnan(ycdf[:-1]) & ~(ysf[:-1] < 0.5 - 1e3 * _CDF_ERROR)))
        if miss.any() or math.isnan(ycdf[0]) or math.isnan(ysf[-1]):
            for f, oi, wi in zip((dist.cdf, dist.sf), o, w):
                oi[~wi] = np.asarray(f(zt[~wi]), dtype=float)
    return out[0], out[1]


@lru_cache(maxsize=16)
def irwin_hall_cells(n: int) -> np.ndarray:
    """P(k < IH_n ≤ k+1), k = 0..n−1: Eulerian numbers A(n, k)/n!.

    Positive recursion p_n(k) = ((k+1) p_{n−1}(k) + (n−k) p_{n−1}(k−1))/n,
    so no cancellation (relative error ≤ 3n·u per entry)."""
    p = np.ones(1)
    for m in range(2, n + 1):
        k = np.arange(m, dtype=float)
        q = np.zeros(m)
        q[:-1] += (k[:-1] + 1.0) * p
        q[1:] += (m - k[1:]) * p
        p = q / m
    out = p if n >= 1 else np.ones(1)
    out.setflags(write=False)
    return out


def _convolve(vectors: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Linear convolution of non-negative vectors by one real FFT; (result, N)."""
    length = sum(v.size for v in vectors) - len(vectors) + 1
    N = sfft.next_fast_len(length, real=True)
    spec = None
    for v in vectors:
        s = sfft.rfft(v, N)
        spec = s if spec is None else spec * s
    out = sfft.irfft(spec, N)[:length]
    return np.clip(out, 0.0, None), N


def fft_allowance(N: int, n: int, cells: int) -> float:
    """Round-off charged to a tail sum (module docstring, "Numerical error")."""
    lg = math.log2(max(N, 2))
    return 2.0 * math.sqrt(N) * (n + 1) * (5 * lg + 2) * _U + _CDF_ERROR * 2 * cells


# --------------------------------------------------------------------------- bounds
@dataclass
class _Grid:
    """Survival curves of the two lattice sums at one step h."""

    h: float
    tau: int          # threshold index (ℓmax)
    shift: float      # loss value of lattice index 0: ℓ = shift + i·h
    off_lo: int
    surv_lo: np.ndarray
    off_up: int
    surv_up: np.ndarray
    missing: float    # mass sent to +∞ (counted as violation in p_hi)
    allowance: float
    points: int

    def p_lo(self, t: int) -> float:
        i = t - self.off_lo
        v = self.surv_lo[0] if i <= 0 else (self.surv_lo[i] if i < self.surv_lo.size else 0.0)
        return max(0.0, float(v) - self.allowance)

    def p_hi(self, t: int) -> float:
        i = t - self.off_up
        v = self.surv_up[0] if i <= 0 else (self.surv_up[i] if i < self.surv_up.size else 0.0)
        return min(1.0, float(v) + self.missing + self.allowance)


def _grid(const: float, terms: list[Term], loss_max: float, h: float, eps: float) -> _Grid:
    T = loss_max - const
    tau = math.floor(T / h)
    phi = T / h - tau
    terms = [Term(terms[0].dist, terms[0].a, terms[0].b - phi * h)] + terms[1:]
    los, ups, off_lo, off_up, keep, cells = [], [], 0, 0, 1.0, 0
    for o_lo, lo, o_up, up, above, w in discretise_all(terms, h, eps):
        los.append(lo)
        ups.append(up)
        off_lo += o_lo
        off_up += o_up
        keep *= 1.0 - above
        cells += w
    if max(abs(tau), abs(off_lo), abs(off_up)) > _MAX_INDEX:
        raise _LatticeRange(f"losses of magnitude {max(abs(tau), abs(off_lo), abs(off_up)) * h:.3g} are beyond "
                            f"what a lattice of step {h:.3g} resolves in binary64")
    n = len(terms)
    ih = irwin_hall_cells(n)
    lo_sum, N1 = _convolve(los + [ih])
    up_sum, N2 = _convolve(ups + [ih])
    surv_lo = np.cumsum(lo_sum[::-1])[::-1]
    surv_up = np.cumsum(up_sum[::-1])[::-1]
    allowance = fft_allowance(max(N1, N2), n + 1, cells)
    return _Grid(h, tau, const + phi * h, off_lo, surv_lo, off_up, surv_up, 1.0 - keep, allowance,
                 max(N1, N2))


def _quantile(g: _Grid, risk: float) -> tuple[float, float]:
    """[q_lo, q_hi] from the two curves on every lattice threshold."""
    i = np.arange(min(g.off_lo, g.off_up), max(g.off_lo + g.surv_lo.size, g.off_up + g.surv_up.size) + 1)
    p_lo = np.maximum(_take(g.surv_lo, i - g.off_lo) - g.allowance, 0.0)
    p_hi = np.minimum(_take(g.surv_up, i - g.off_up) + g.missing + g.allowance, 1.0)
    above = np.nonzero(p_lo > risk)[0]          # P(ℓ > x) > risk: q > x
    below = np.nonzero(p_hi <= risk)[0]         # P(ℓ > x) ≤ risk: q ≤ x
    q_lo = g.shift + float(i[above[-1]]) * g.h if above.size else -math.inf
    q_hi = g.shift + float(i[below[0]]) * g.h if below.size else math.inf
    return q_lo, q_hi


def _take(surv: np.ndarray, idx: np.ndarray) -> np.ndarray:
    out = np.where(idx <= 0, surv[0], 0.0)
    inside = (idx > 0) & (idx < surv.size)
    out[inside] = surv[idx[inside]]
    return out


def bounds_for_terms(const: float, terms: list[Term], loss_max: float, omega: float,
                     settings: ExactSettings = ExactSettings()) -> ViolationBounds:
    """:func:`violation_bounds` for an explicit constant and list of terms.

    With no random term the final loss is the constant: it violates ℓmax
    exactly when it is above it (no tolerance: constraint (3) as stated).
    Every grid's interval is rigorous, so the one returned is their
    intersection (the verdict is decided as soon as any grid decides it).
    The grid loop reads the :func:`deplbench.limits.deadline` scope (a
    solver's ``time_limit``) and raises
    :class:`~deplbench.limits.TimeLimitReached` past it."""
    risk = 1.0 - float(omega)
    if not terms:
        p = 1.0 if const > loss_max else 0.0
        return ViolationBounds(p, p, const, const, _verdict(p, p, risk), risk)
    scale = math.sqrt(sum(s * s for s in term_iqrs(terms))) or 1.0
    eps = settings.tail / (2.0 * len(terms))
    h = scale / float(settings.start_steps)
    cells = _cells_estimate(terms, h, eps)
    if cells * (len(terms) + 1) > settings.max_work:
        raise ExactUnavailable(
            f"the coarsest lattice needs about {cells:.3g} points × {len(terms)} random terms, more than the "
            f"budget of {settings.max_work:.3g} work units")
    refinements, exhausted = 0, False
    p_lo, p_hi = 0.0, 1.0
    spent = 0.0
    while True:
        limits.check_time(f"exact violation bounds, lattice step {h:.3g}")
        if refinements and limits.time_left() < 2.5 * spent:
            # the next grid has twice the points of the last: it would end past the deadline
            raise limits.TimeLimitReached(f"time limit {limits.time_limit_s():g} s reached (exact violation "
                                          f"bounds: the lattice at step {h:.3g} would end after it); no plan")
        t_grid = time.perf_counter()
        try:
            g = _grid(const, terms, loss_max, h, eps)
        except _LatticeRange as exc:
            if not refinements:
                raise ExactUnavailable(f"exact bounds not computable: {exc}") from None
            refinements, exhausted = refinements - 1, True  # keep the last grid that resolved them
            break
        spent = time.perf_counter() - t_grid
        p_lo, p_hi = max(p_lo, g.p_lo(g.tau)), min(p_hi, g.p_hi(g.tau))
        verdict = _verdict(p_lo, p_hi, risk)
        if verdict != UNDECIDED and (settings.decide or p_hi - p_lo <= settings.target_width):
            break
        if verdict == UNDECIDED and p_hi - p_lo <= settings.target_width and not settings.settle:
            break
        if 2 * g.points * (len(terms) + 1) > settings.max_work:
            exhausted = True
            break
        h /= 2.0
        refinements += 1
    q_lo, q_hi = _quantile(g, risk)
    return ViolationBounds(p_lo, p_hi, q_lo, q_hi, _verdict(p_lo, p_hi, risk), risk, step=g.h,
                           points=g.points, terms=len(terms), refinements=refinements,
                           allowance=g.allowance, exhausted=exhausted,
                           info={"target_width": settings.target_width, "max_work": settings.max_work})


def term_iqrs(terms: list[Term]) -> list[float]:
    """Interquartile range of every term, with one ppf call per distinct law
    (freezing a SciPy distribution costs milliseconds)."""
    q: dict = {}
    out = []
    for t in terms:
        if isinstance(t.dist, Empirical):
            out.append(t.iqr())
            continue
        if t.dist not in q:
            q[t.dist] = np.asarray(t.dist.ppf(np.array([0.25, 0.75])), dtype=float)
        out.append(abs(t.a) * float(q[t.dist][1] - q[t.dist][0]))
    return out


def term_cells(terms: list[Term], h: float, eps: float) -> np.ndarray:
    """Lattice cells of each term at step h (``tails(ε)`` once per distinct law), before
    discretising: what :func:`discretise_all` will allocate, for memory checks."""
    ends: dict = {}
    out = np.empty(len(terms))
    for i, t in enumerate(terms):
        if isinstance(t.dist, Empirical):
            span = abs(t.a) * (max(t.dist.samples) - min(t.dist.samples))
        else:
            if t.dist not in ends:
                ends[t.dist] = t.dist.tails(eps)
            lo, hi = ends[t.dist]
            span = abs(t.a) * (hi - lo)
        out[i] = span / h + 2.0
    return out


def _cells_estimate(terms: list[Term], h: float, eps: float) -> float:
    """Lattice cells of all terms at step h (``tails(ε)`` once per distinct law)."""
    return float(term_cells(terms, h, eps).sum())


def _verdict(p_lo: float, p_hi: float, risk: float) -> str:
    if p_hi <= risk:
        return PROVEN_FEASIBLE
    if p_lo > risk:
        return PROVEN_INFEASIBLE
    return UNDECIDED


def violation_bounds(instance, models, gammas, settings: ExactSettings = ExactSettings()) -> ViolationBounds:
    """Rigorous [p_lo, p_hi] ∋ P(ℓ(K) > ℓmax) and [q_lo, q_hi] ∋ the ω-quantile.

    Parameters
    ----------
    instance : Instance
    models : sequence of int
        Model index of each epoch.
    gammas : float or sequence of float
        Data multiplier γ of each epoch (``Instance.data_effect``).
    settings : ExactSettings

    Returns
    -------
    ViolationBounds

    Notes
    -----
    See the module docstring for the construction and the error allowance.
    """
    const, terms = sequence_terms(instance, models, gammas)
    return bounds_for_terms(const, terms, float(instance.loss_max), float(instance.omega), settings)


def plan_violation_bounds(instance, plan, settings: ExactSettings = ExactSettings()) -> ViolationBounds:
    """:func:`violation_bounds` of a :class:`~deplbench.formulations.model.plan.Plan`.

    Raises
    ------
    PlanError
        If the plan names a model, cluster or dataset the instance lacks.
    ExactUnavailable
        If even the coarsest grid exceeds ``settings.max_work``.
    """
    check_plan_names(instance, plan)
    models = [instance.model_index[e.model] for e in plan.epochs]
    gammas = [instance.data_effect(plan.datasets.get(e.cluster, []))[1] for e in plan.epochs]
    return violation_bounds(instance, models, gammas, settings)


__all__ = ["ExactSettings", "ExactUnavailable", "ViolationBounds", "Term", "sequence_terms", "violation_bounds",
           "plan_violation_bounds", "bounds_for_terms", "irwin_hall_cells", "term_cells", "fft_allowance",
           "discretise_all", "term_iqrs",
           "PROVEN_FEASIBLE", "PROVEN_INFEASIBLE", "UNDECIDED"]
