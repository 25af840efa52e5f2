"""Would carrying the deadline through tangent envelopes close the adaptive bracket? A measurement.

Run::

    python perf/adaptive_envelope_probe.py --family pact-vgg11 --loss-max 0.3 --buckets 300 \\
        --time-points 128 --slopes 64 --ratio 1.025

The priced lower bound of ``deplbench adaptive`` (formulations/adaptive/)
relaxes "T ≤ Tmax on every run" to E[T] ≤ Tmax; docs/adaptive.md ("Where
the width comes from") puts about CV² ≈ 1 % of the realistic instances'
width on that relaxation. This probe measures how much of it one
candidate route recovers: the deadline carried exactly in the remaining
time τ, but through the *convex envelope* of each state's value in τ,
stored as tangent lines of fixed slopes λ₁ < … < λ_J (time prices):
V(s, τ) ≥ max_j α_j(s) − λ_j τ.

Recursion (conjugate in τ). A stop costs 0 (success) or μ (failure) at
every τ, so α_j = that value. An epoch of action a (compute time t,
communication s, money κc/t) leaves u = τ − t − s ≥ 0 for every outcome
s′ alike, so α_j(s) = min over a and the stop of
φ_j(a) + λ_j s + inf_{0≤u≤Tmax} [λ_j u + E_{s′} max_k (α_k(s′) − λ_k u)],
with φ_j(a) = min_{t ≥ c/r} κc/t + λ_j t (the priced stage cost). The
inner function of u is convex; it is evaluated on U equally spaced
points (one FFT correlation per point) and its infimum bounded from
below by the extended secants of the neighbouring intervals (a convex
function lies above a secant outside the secant's interval), and by
E α_j(s′) (the priced continuation, the k = j line). With one line this
is the priced DP at λ_j; the root bound max_j α_j − λ_j Tmax − μ(1 − ω)
is never below the priced bound at any λ_j of the set.

What it is not: the floating-point rounding of this pass is not bounded
(the package's passes bound theirs), so its numbers are a measurement,
not a proven bound; it runs at the priced search's μ only. Prints the
priced bound, the envelope bound, the gain, the CPU seconds of both and
the 1-minute load.
"""

from __future__ import annotations

import os
import time

import numpy as np
from adaptive_probe import instance_parser, priced_search

from deplbench.formulations.adaptive.chain import Chain, correlate_rows


def continuation(E: np.ndarray, Ea: np.ndarray, lams: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Lower bound on inf_u λ_j u + E(u) per (row, j, bucket) from E on the u grid (R, U, L1),
    floored by Ea (R, J, L1) = E α_j(s′).

    E is convex in u, so for each λ_j only the two intervals beside the grid minimiser
    u_l* (l* = the number of secants steeper than −λ_j) can hold the infimum; on each the
    extended secants of its neighbours bound E from below."""
    U = u.size
    S = np.diff(E, axis=1) / (u[1] - u[0])                       # secant slopes (R, U−1, L1)
    out = np.empty_like(Ea)
    for j, lam in enumerate(lams):
        star = np.sum(S + lam < 0, axis=1)                       # (R, L1): grid minimiser's index
        best = np.full(star.shape, np.inf)
        for iv in (np.maximum(star - 1, 0), np.minimum(star, U - 2)):
            best = np.minimum(best, _interval_bound(E, S, lam, u, iv))
        out[:, j] = best
    return np.maximum(out, Ea)


def _interval_bound(E, S, lam, u, iv):
    """min over [u_iv, u_iv+1] of the larger of the two neighbouring secants of λu + E, extended."""
    U = u.size

    def at(a, k):
        return np.take_along_axis(a, np.clip(k, 0, a.shape[1] - 1)[:, None, :], axis=1)[:, 0, :]

    ul, ur = u[iv], u[iv + 1]
    fa, fb = at(E, iv) + lam * ul, at(E, iv + 1) + lam * ur
    sa = np.where(iv >= 1, at(S, iv - 1) + lam, np.nan)           # left neighbour's secant, valid right of u_iv
    sb = np.where(iv <= U - 3, at(S, iv + 1) + lam, np.nan)       # right neighbour's secant, valid left of u_iv+1

    def lower(x):
        a, b = fa + sa * (x - ul), fb + sb * (x - ur)
        return np.maximum(np.nan_to_num(a, nan=-np.inf), np.nan_to_num(b, nan=-np.inf))

    with np.errstate(invalid="ignore", divide="ignore"):
        ux = (fb - sb * ur - fa + sa * ul) / (sa - sb)            # where the two secants cross
    ux = np.where(np.isfinite(ux), np.clip(ux, ul, ur), ul)
    return np.minimum(np.minimum(lower(ul), lower(ur)), lower(ux))


def envelope_pass(chain: Chain, mu: float, lams: np.ndarray, points: int, hook=None) -> np.ndarray:
    """α_j at the root (J,), by the recursion of the module docstring.

    On a pessimistic chain a loss above the grid is a failure (μ at every τ), as in
    :func:`~deplbench.formulations.adaptive.chain.dp`; on the optimistic one it reads
    the clamped top bucket. ``hook(k, ex, sw)``, if given, sees each epoch's
    continuations E(u) on the u grid before their infimum is taken: ``ex`` (M·N, U, L1)
    per action (m', n') without a switch, ``sw`` {(m, m′): (N, U, L1)} with one
    (perf/adaptive_envelope_policy.py reads its policy from them)."""
    st, M, N, L1 = chain.st, chain.M, chain.N, chain.L + 1
    u = np.linspace(0.0, st.time_max, points)
    stage = np.empty((len(lams), M, N))
    for j, lam in enumerate(lams):
        _, tc, money = st.priced(lam)
        stage[j] = money + lam * (tc + st.comm)
    stage = np.where(st.usable[None], stage, np.inf).transpose(1, 2, 0).reshape(M * N, len(lams))
    stop = np.full(L1, mu)
    stop[0] = 0.0
    nxt = np.broadcast_to(stop, (M, len(lams), L1)).copy()

    def top(f):
        return f[:, :, -1] if chain.optimistic else np.full(f.shape[:2], mu)

    for k in range(chain.K - 1, -1, -1):
        kers = [chain.kx[k][m][n] for m in range(M) for n in range(N)]
        env = np.max(nxt[:, :, None, :] - lams[None, :, None, None] * u[None, None, :, None], axis=1)
        f, fa = np.repeat(env, N, axis=0), np.repeat(nxt, N, axis=0)
        ex, exa = correlate_rows(f, kers, top(f)), correlate_rows(fa, kers, top(fa))
        cand = {None: continuation(ex, exa, lams, u)[:, :, :] + stage[:, :, None]}
        seen = {}
        for (a, b), kj in chain.kj.items():
            rows, rowsa = ex[b * N:(b + 1) * N], exa[b * N:(b + 1) * N]
            e = correlate_rows(rows, [kj] * N, top(rows))
            ea = correlate_rows(rowsa, [kj] * N, top(rowsa))
            cand[(a, b)] = continuation(e, ea, lams, u) + stage[b * N:(b + 1) * N, :, None]
            seen[(a, b)] = e
        if hook is not None:
            hook(k, ex, seen)
        cur = np.empty((M + 1, len(lams), L1))
        for m in range(M + 1):                                   # m = M: no model yet
            blocks = [cand[None][b * N:(b + 1) * N] if (m == M or b == m) else cand[(m, b)]
                      for b in range(M) if m == M or b == m or (m, b) in cand]
            v = np.minimum(np.min(np.concatenate(blocks, axis=0), axis=0), stop[None])
            v[:, 0] = 0.0
            cur[m] = v
        if k == 0:
            return cur[M, :, chain.i0]
        nxt = cur[:M]
    raise AssertionError("horizon 0")


def main() -> None:
    ap = instance_parser(__doc__ or "", "pact-vgg11", 0.3, 300)
    ap.add_argument("--time-points", type=int, default=128, help="U: points of the u grid")
    ap.add_argument("--slopes", type=int, default=64, help="J: tangent slopes per state")
    ap.add_argument("--ratio", type=float, default=1.025, help="ratio of consecutive slopes, centred on the priced λ")
    a = ap.parse_args()
    inst, chain, search, searched, load0 = priced_search(a)
    omega, best, t1 = float(inst.omega), search.best, time.process_time()
    lams = best.lam * a.ratio ** (np.arange(a.slopes) - a.slopes // 2)
    root = envelope_pass(chain, best.mu, lams, a.time_points)
    env = float(np.max(root - lams * chain.st.time_max) - best.mu * (1.0 - omega))
    t2, priced = time.process_time(), search.bound()
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets, U {a.time_points}, J {a.slopes} × {a.ratio:g}: "
          f"priced {priced:.3f} ({searched:.1f} CPU-s, {len(search.passes)} passes), envelope {env:.3f} "
          f"({t2 - t1:.1f} CPU-s, one pass), gain {100 * (env / priced - 1):.3f} %, "
          f"1-minute load {load0:.1f}→{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
