"""The adaptive reference, part 5: the deadline carried on a grid of remaining time.

The priced bound (:func:`~deplbench.formulations.adaptive.chain.dp`) relaxes
"T ≤ Tmax on every run" (eq. (4)) to "E[T] ≤ Tmax". Here the remaining time
τ is part of the state instead, on the grid τ_j = jΔ, j = 0..G, Δ = Tmax/G,
and only the failure is priced (μ): the value of a state (k, m, bucket, τ_j)
is the least E[money + μ·1{fail}] of the rest of the run when at most τ_j
time remains. An epoch of action (m', n') with compute time t and
communication time s = size/b moves τ to τ − t − s; its money is
κc/t (x = c/t, eq. (2)), allowed when x ≤ r, i.e. t ≥ c/r.

Beside the water-filling bound (:mod:`~deplbench.formulations.adaptive.waterfill`).
With no capacity and no communication time, a policy tree π with remaining
time τ costs W_π/τ (W = 0 at a stop, (√(κc) + √E[W′])² at a trained
epoch), so its value W_π/τ + μF_π depends on τ through μτ; the
water-filling bound keeps each state's whole set of (W, F) pairs (its
support function) so that τ leaves the state, and relaxes the capacity and
the communication time (a tangent). The grid here keeps both exactly, up to
its rounding, which is chosen per chain — what it gives away instead is
time per epoch, so it pays on short horizons:

*Optimistic* (lower bound). The true remaining time τ at a grid state is
≤ τ_j. A true epoch with compute time t lands at τ′ = τ − s − t; let τ_i
be the grid point with τ′ ∈ (τ_{i−1}, τ_i]. Then t < τ_j − s − τ_{i−1},
so the epoch's money is > κc/(D − s) with D = τ_j − τ_{i−1} = (j − i + 1)Δ,
and the landing state is credited with τ_i ≥ τ′ remaining. The value is
non-increasing in the remaining time (a policy for less time is a policy
for more), so by induction on the epochs the grid value is ≤ the true one:
the grid DP's optimum at (0, ·, i₀, τ_G ≥ Tmax) is ≤ the chain's optimum
with the deadline carried exactly, hence (relaxation 1 of the package
docstring) ≤ the adaptive optimum's Lagrangian, and
V₀(μ) − μ(1 − ω) is a proven lower bound for every μ ≥ 0. What it gives
away: at most Δ of time per epoch (the landing is credited one grid step
of time); nothing else — the capacity, the communication time, the switch
rules and the chance constraint (Beutler–Ross) are exact. As Δ → 0 the
bound tends to the chain's optimum with the deadline carried.

*Pessimistic* (the certified policy, :class:`TimedPolicy`). A run with true
remaining time τ (to Tmax with the simulator's tolerance) reads the grid point
τ_j = ⌊τ/Δ⌋Δ ≤ τ and an epoch that lands on τ_i takes t = (j − i)Δ − s; it
really lands at τ − s − t ≥ τ_i, so the table's plan is always feasible: no
run of the policy misses the deadline as the simulator judges it (the grid
is short of that deadline by a margin covering the rounding of the run's
clock, :meth:`TimeGrid.of`).

Floating point: the charges are computed rounded *down* (the denominator
D − s bounded from above by 4u(D + s), the quotient lowered by 4u), so the
grid chain whose DP is done charges no more than the argument above
allows; the FFT correlations and the sums carry the rounding bound of
:func:`~deplbench.formulations.adaptive.chain.dp` and
:meth:`~deplbench.formulations.adaptive.chain.Pass.bound` subtracts it
(with λ = 0).

Cost: a pass is K̄ epochs of at most (|M|·|N| + switches·|N|)·(G + 1) FFT
correlations of length ~L (one per distinct (model, kernel) row and grid
point, :func:`~deplbench.formulations.adaptive.chain.distinct_rows`: |M| + switches
rows when the kernels do not depend on the cluster) plus a (G + 1)²/2
min-plus step per (m', n') row and bucket: affordable on small instances
(:func:`timed_work`), not on the realistic families' fine grids, where the
bracket keeps the priced bound alone (and says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from deplbench.formulations.adaptive.chain import Chain, F, Pass, V, distinct_rows
from deplbench.formulations.adaptive.correlation import UNIT, correlate
from deplbench.formulations.adaptive.search import MU_PROBE, Search, best_mu
from deplbench.limits import check_time

#: Points of the remaining-time grid by default (G; Δ = Tmax/G): the finest of these
#: whose pass costs at most :data:`TIMED_WORK` (:func:`timed_work`).
TIME_POINTS = (256, 128, 64)
#: Work (multiply–adds, :func:`timed_work`) of one pass above which the bracket does
#: not carry the deadline by default, judged on its first grid: chosen so that a grid's
#: carried passes (:func:`timed_seconds`) take a few CPU seconds (docs/adaptive.md), which
#: carries the deadline on small instances (2 models, 2 clusters, K̄ = 6 at 600 buckets and
#: G = 64) and leaves it priced on the realistic families (K̄ = 100: over 2.5e9 at G = 64).
TIMED_WORK = 2.5e8
#: Multiply–adds per second assumed when a time grid is weighed against the time left
#: (:func:`timed_seconds`: an explicit one is refused, a default one not chosen): the low
#: end of a core's measured rate (docs/adaptive.md, "What is relaxed"), so
#: that the prediction errs on the long side and a grid chosen by it fits in the time limit.
TIMED_RATE = 5e8
#: Carried-deadline passes of one grid besides the μ search's: the deadline-aware
#: best-success check and the carried policy's tuning.
TIMED_EXTRA_PASSES = 6
#: Cells (rows × grid points × loss buckets) of one block of :func:`_epoch_best`'s min-plus step:
#: its working arrays then stay in a core's cache.
EPOCH_CELLS = 32768


def timed_work(chain: Chain, points: int) -> float:
    """Multiply–adds of one :func:`timed_dp` pass: K̄ · rows · (G + 1) · (L + 1) · ((G + 1)/2 + log₂ L).

    rows = (|M| + switches)·|N|, the min-plus steps' rows; the FFTs' part counted on as many
    rows, an upper bound when clusters share their kernels (module docstring, Cost)."""
    rows = chain.M * chain.N + len(chain.kj) * chain.N
    g1 = int(points) + 1
    return float(chain.K * rows * g1 * (chain.L + 1)) * (g1 / 2.0 + math.log2(chain.L + 2))


def timed_seconds(chain: Chain, points: int, iters_mu: int) -> float:
    """Predicted seconds of the carried-deadline passes of one grid: (``iters_mu`` + 2 +
    :data:`TIMED_EXTRA_PASSES`) passes of :func:`timed_work` at :data:`TIMED_RATE`, the
    measured rate's low end (a conservative prediction)."""
    return timed_work(chain, points) * (iters_mu + 2 + TIMED_EXTRA_PASSES) / TIMED_RATE


@dataclass
class TimeGrid:
    """The remaining-time grid τ_j = jΔ of a chain and the epoch charges on it."""

    points: int
    delta: float
    optimistic: bool
    #: The time the pessimistic policy reads its remaining time against (Tmax with the
    #: simulator's tolerance, :data:`~deplbench.formulations.model.allocation.TIME_RTOL`).
    deadline: float = math.nan

    @classmethod
    def of(cls, chain: Chain, points: int) -> TimeGrid:
        """Optimistic: Δ ≥ Tmax·(1 + tolerance)/G (the simulator's deadline; GΔ covers it
        despite rounding). Pessimistic: GΔ = Tmax·(1 + tolerance) less a relative margin
        8(K̄ + 2)u, which covers the rounding of the run's clock and of its reading over
        K̄ epochs (a few u of the deadline each): a plan that fills Tmax exactly (epochs
        at t = c/r) stays on the grid, and no run passes the simulator's deadline."""
        g = int(points)
        tm = float(chain.st.time_max)                      # Tmax·(1 + TIME_RTOL)
        if chain.optimistic:
            return cls(g, tm / g * (1.0 + 4.0 * UNIT), True, tm)
        return cls(g, tm / g * (1.0 - 8.0 * (chain.K + 2) * UNIT), False, tm)

    def charges(self, chain: Chain) -> tuple[np.ndarray, np.ndarray]:
        """Per action row (m'·N + n') and lag d = 0..G: the money charged, inf where not allowed,
        and the compute time t planned (pessimistic; the optimistic one is the supremum).

        Optimistic: D = dΔ, landing j − d + 1, money κc/(D − s) rounded down, allowed when
        D − s ≥ c/r (rounded in the permissive direction). Pessimistic: t = dΔ − s exactly
        as the policy plans it, landing j − d, allowed when t > 0 and c/t ≤ r.
        """
        st = chain.st
        M, N = chain.M, chain.N
        c = st.compute.reshape(M * N)
        s = np.broadcast_to(st.comm, (M, N)).reshape(M * N)
        kap = np.repeat(st.kappa[None, :], M, axis=0).reshape(M * N)
        cap = np.repeat(st.cap[None, :], M, axis=0).reshape(M * N)
        usable = st.usable.reshape(M * N)
        D = np.arange(self.points + 1, dtype=float)[None, :] * self.delta        # (1, G+1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.optimistic:
                den = (D - s[:, None]) + 4.0 * UNIT * (D + s[:, None])
                ok = (den > 0) & (den >= (c / cap)[:, None] * (1.0 - 4.0 * UNIT))
                money = (kap * c)[:, None] / den * (1.0 - 4.0 * UNIT)
            else:
                den = D - s[:, None]
                ok = (den > 0) & (c[:, None] / den <= cap[:, None])
                money = (kap * c)[:, None] / den * (1.0 + 4.0 * UNIT)
        ok &= usable[:, None]
        ok[:, 0] = False
        money = np.where(ok, np.maximum(money, 0.0), np.inf)
        return money, np.where(ok, den, np.nan)


def _correlate_err(f, kernels, tops, err_in):
    """:func:`correlate` with one top row per leading row and the error bound (B, Q)."""
    out, e, mass = correlate(f, kernels, tops, with_error=True)
    return out, e + mass[:, None] * err_in[None, :]


def timed_dp(chain: Chain, mu: float, points: int = TIME_POINTS[0], keep: bool = False,
             fail_only: bool = False, where: str | None = None) -> Pass:
    """Backward DP of the chain with the remaining time carried on a grid, failure priced at μ.

    Returns a :class:`~deplbench.formulations.adaptive.chain.Pass` with λ = 0
    (``time`` is nan: the deadline holds on every run of the grid chain), its
    rounding bound, and with ``keep`` the tables of :class:`TimedPolicy`:
    ``action`` (K̄, |M| + 1, G + 1, L + 1) — m'·N + n' or −1 to stop — and
    ``remaining`` the lag d (same shape; the epoch plans dΔ of time, module docstring).
    With ``fail_only`` every allowed epoch is free, so V₀ = μ·(least P(fail) of any policy
    of the grid chain that meets the deadline) (:func:`timed_best_success`). The deadline is
    checked before every epoch (:func:`deplbench.limits.check_time`, the message naming
    ``where``, by default the pass and its grids, and the step): a pass costs G + 1 times the
    priced pass's correlations, so an outer stop comes within one epoch of it.
    """
    grid = TimeGrid.of(chain, points)
    money, _ = grid.charges(chain)                         # (R, G+1)
    if fail_only:
        money = np.where(np.isfinite(money), 0.0, np.inf)
    M, N, L1, G1 = chain.M, chain.N, chain.L + 1, grid.points + 1
    off = 1 if chain.optimistic else 0                     # landing index j − d + off
    # charges above 2μ never beat stopping (every value is in [0, μ]): left out, so the
    # rounding bound only sees charges ≤ 2μ
    money = np.where(money <= 2.0 * mu, money, np.inf)
    Q = 2
    fail = np.array([mu, 1.0])
    stop = np.zeros((Q, L1))
    stop[:, 1:] = fail[:, None]
    nxt = np.broadcast_to(stop, (M, G1, Q, L1)).copy()     # k = K̄: must stop
    act = np.full((chain.K, M + 1, G1, L1), -1, dtype=np.int32) if keep else None
    lag = np.zeros((chain.K, M + 1, G1, L1), dtype=np.int32) if keep else None
    err = np.zeros(Q)
    if where is None:
        where = f"adaptive-opt's carried-deadline DP pass on {chain.i0} buckets and {points} time points"
    for k in range(chain.K - 1, -1, -1):
        check_time(f"{where}, backward step {chain.K - k} of {chain.K}")
        # one correlation per distinct (model, kernel) and grid point, read back by every
        # cluster sharing it (chain.distinct_rows)
        models, kers, index = distinct_rows(chain, k)
        R = models.size
        kx_rows = [kx for kx in kers for _ in range(G1)]
        f = nxt[models].reshape(R * G1, Q, L1)                       # rows (distinct row, j)
        tops = f[:, :, -1] if chain.optimistic else np.broadcast_to(fail, (f.shape[0], Q))
        ex_u, e_u = _correlate_err(f, kx_rows, tops, err)
        ex_u = ex_u.reshape(R, G1, Q, L1)
        e_u = e_u.reshape(R, G1, Q).max(axis=1)                      # (R, Q)
        ex, e_ex = ex_u[index], e_u[index]                           # rows (m', n'): (M·N, G1, Q, L1)
        sw, e_sw = {}, {}
        for (a, b), kj in chain.kj.items():
            uniq, back = np.unique(index[b * N:(b + 1) * N], return_inverse=True)
            rows = ex_u[uniq].reshape(uniq.size * G1, Q, L1)
            t = rows[:, :, -1] if chain.optimistic else np.broadcast_to(fail, (uniq.size * G1, Q))
            e_in = e_u[uniq].max(axis=0)
            o, e = _correlate_err(rows, [kj] * (uniq.size * G1), t, e_in)
            sw[(a, b)] = o.reshape(uniq.size, G1, Q, L1)[back]
            e_sw[(a, b)] = e.reshape(uniq.size, G1, Q).max(axis=1)[back]
        best_all = _epoch_best(ex, money, off)                       # (M·N, G1, Q, L1), lags
        best_sw = {ab: _epoch_best(v, money[ab[1] * N:(ab[1] + 1) * N], off) for ab, v in sw.items()}
        # rounding of adding the charge (≤ 2μ) to an expectation: u·(2μ + max|ex|), twice for safety
        e_new = np.max(e_ex, axis=0)
        for e in e_sw.values():
            e_new = np.maximum(e_new, e.max(axis=0))
        e_new = e_new.copy()
        e_new[V] += 2.0 * UNIT * (2.0 * mu + max(float(np.abs(ex[:, :, V]).max()), mu))
        err = e_new
        cur = np.empty((M + 1, G1, Q, L1))
        for m in range(M + 1):                             # m = M: no model yet (k = 0)
            blocks, lags = [], []
            ids: list[int] = []
            for b in range(M):
                if m == M or b == m:
                    v, d = best_all[0][b * N:(b + 1) * N], best_all[1][b * N:(b + 1) * N]
                elif (m, b) in sw:
                    v, d = best_sw[(m, b)]
                else:
                    continue
                blocks.append(v)
                lags.append(d)
                ids.extend(b * N + n for n in range(N))
            cand = np.concatenate(blocks, axis=0)          # (C, G1, Q, L1)
            cl = np.concatenate(lags, axis=0)              # (C, G1, L1)
            best = np.argmin(cand[:, :, V], axis=0)        # (G1, L1)
            choice = np.take_along_axis(cand, best[None, :, None, :], axis=0)[0]
            go = choice[:, V] < stop[V][None, :]
            go[:, 0] = False                               # bucket 0: success, stop
            cur[m] = np.where(go[:, None, :], choice, stop[None])
            if keep:
                assert act is not None and lag is not None
                act[k, m] = np.where(go, np.asarray(ids, dtype=np.int32)[best], -1)
                lag[k, m] = np.where(go, np.take_along_axis(cl, best[None], axis=0)[0], 0)
        if k == 0:
            root = cur[M, grid.points, :, chain.i0]
        nxt = cur[:M]
    value, p_fail = float(root[V]), float(root[F])
    return Pass(0.0, float(mu), value, p_fail, math.nan, value - mu * p_fail, act, lag,
                float(err[V]), float(err[F]), {**chain.grid(), "time_points": grid.points})


def _epoch_best(ex: np.ndarray, money: np.ndarray, off: int) -> tuple[np.ndarray, np.ndarray]:
    """min over the lag d of money[row, d] + ex[row, j − d + off] (value row V), per (row, j, bucket).

    ex : (R, G1, Q, L1) expectations at each landing grid point; money : (R, G1).
    Returns the chosen (R, G1, Q, L1) with the charge added to V, and the lags (R, G1, L1)
    (lag 0 and inf where nothing is allowed).

    The least lag wins a tie (strict comparison, lags in ascending order). The buckets are
    independent, so they are taken in blocks of about :data:`EPOCH_CELLS` cells copied to
    contiguous arrays, which the loop over the lags then reads in cache; every output is the
    same, bit for bit, whatever the blocks."""
    R, G1, Q, L1 = ex.shape
    out = np.full((R, G1, Q, L1), np.inf)
    lag = np.empty((R, G1, L1), dtype=np.int32)
    steps = [(d, money[:, d, None, None]) for d in range(1, G1) if np.isfinite(money[:, d]).any()]
    width = max(8, EPOCH_CELLS // (R * G1))
    for a in range(0, L1, width):
        z = min(L1, a + width)
        # j = d − off .. G lands on j − d + off = 0 .. G − d + off
        ex_v = np.ascontiguousarray(ex[:, :, V, a:z])
        ex_f = np.ascontiguousarray(ex[:, :, F, a:z])
        best_v = np.full(ex_v.shape, np.inf)
        best_f = np.ones(ex_v.shape)
        best_d = np.zeros(ex_v.shape, dtype=np.int32)
        val = np.empty(ex_v.shape)
        better = np.empty(ex_v.shape, dtype=bool)
        for d, c in steps:
            n = G1 - d + off
            js = slice(d - off, G1)
            v, b = val[:, :n], better[:, :n]
            np.add(c, ex_v[:, :n], out=v)
            np.less(v, best_v[:, js], out=b)
            np.copyto(best_v[:, js], v, where=b)
            np.copyto(best_f[:, js], ex_f[:, :n], where=b)
            np.copyto(best_d[:, js], d, where=b)
        out[:, :, V, a:z] = best_v
        out[:, :, F, a:z] = best_f
        lag[:, :, a:z] = best_d
    return out, lag


def timed_best_success(chain: Chain, points: int = TIME_POINTS[0]) -> tuple[float, float]:
    """The grid chain's highest P(success) over the policies that meet the deadline on every
    run, cost ignored, with a bound on its rounding error: (p, err).

    One :func:`timed_dp` pass with the epochs free and μ = 1 (its value is the least
    P(fail)). On the optimistic chain the grid relaxes the deadline (module docstring)
    and the loss (package docstring, relaxation 1), so a target ω above p + err is
    reached within Tmax by no policy of the instance. The deadline is checked before
    every epoch (the bracket's reachability check, before any bound exists).
    """
    p = timed_dp(chain, 1.0, points, fail_only=True,
                 where=f"adaptive-opt's deadline-aware reachability pass on {chain.i0} buckets")
    return 1.0 - p.value, p.err + UNIT


class TimedSearch(Search):
    """The failure-price search on the carried-deadline DP (λ = 0; every pass a bound at every ω)."""

    carried = True

    def __init__(self, chain: Chain, omega: float, points: int = TIME_POINTS[0]):
        super().__init__(chain, omega)
        self.points = int(points)
        self.lam_converged = True                          # no time price to search

    def run(self, lam: float, mu: float) -> Pass:
        p = self.within_time(timed_dp, self.chain, mu, self.points)
        self.passes.append(p)
        return p


def timed_search(chain: Chain, omega: float, points: int = TIME_POINTS[0], iters_mu: int = 8,
                 mu0: float | None = None) -> TimedSearch:
    """The carried-deadline lower bound: :func:`~deplbench.formulations.adaptive.search.best_mu`
    on :func:`timed_dp` passes (cutting planes on the concave g(μ) = V₀(μ) − μ(1 − ω)).
    Any μ ≥ 0 gives a valid bound; ``mu0`` only warm-starts."""
    s = TimedSearch(chain, omega, points)
    if not mu0:
        scale = chain.st.cost_scale()
        p = s.within_time(timed_dp, chain, MU_PROBE * scale, points)
        mu0 = max(1e-10 * scale, p.cost)                   # μ of the order of a run's cost
    best_mu(s, 0.0, omega, mu0, iters_mu)
    return s


def better_carried(kept: tuple, search: TimedSearch, buckets: int) -> tuple:
    """The carried-deadline passes to keep after a grid, as (passes, G, buckets).

    Every pass bounds the same optimum, whatever its grid; a coarser loss grid
    may afford more time points and so give the larger bound. ``search``'s passes
    are kept unless ``kept``'s bound more at ω. Kept passes drop their tables
    (only their bounds are read; the policy builds its own).
    """
    tm = search.chain.st.time_max
    if kept[0] and max(p.bound(search.omega, tm) for p in kept[0]) > search.bound():
        return kept
    return [replace(p, action=None, remaining=None) for p in search.passes], search.points, int(buckets)


__all__ = ["TIMED_RATE", "TIMED_WORK", "TIME_POINTS", "TimeGrid", "TimedSearch", "better_carried",
           "timed_best_success", "timed_dp", "timed_search", "timed_seconds", "timed_work"]
