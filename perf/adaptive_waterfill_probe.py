"""Is the adaptive bracket's unexplained width on the bound's side? The deadline carried exactly, by water-filling.

Run::

    python perf/adaptive_waterfill_probe.py --family pact-vgg11 --loss-max 0.3 --buckets 300 --slopes 64

Idea. Where neither the capacity x ≤ r nor the communication time s/b
counts, a (randomised) policy tree run with remaining time τ and the time
allocated optimally costs W/τ, with W = (√(κc) + √E[W′])² for an epoch
(κc of its action, W′ the children's) and W = 0 at a stop (the issue's
water-filling lead): min_t κc/t + E[W′]/(τ − t). Time then factors out
of the state: what a state offers is the set P(s) of its (W, F) pairs
(F = P(fail)), convex because a policy may randomise at the state, and
the deadline holds on every run, not on average. Represent P(s) by its
support function σ_s(ν) = min_{(W,F) ∈ P(s)} W + νF at J slopes ν:

* children: the set of (y, F) = Σ_c p_c (W_c, F_c) is a Minkowski sum,
  so its support function is the expectation Σ_c p_c σ_c(ν) — the same
  FFT correlations as the priced DP, one per slope;
* the epoch: W = h(y) = (√(κc) + √y)², concave in y; the sum set's
  lower frontier ψ(y) = max(0, max_j (σ(ν_j) − y)/ν_j) is convex piecewise
  linear (tangents at the J slopes: below the true frontier, so the
  result stays a relaxation), and min_y h(y) + νψ(y) is attained at a
  breakpoint of ψ (h is concave on each piece);
* a state: the minimum over its actions, the stop at a failure (0, 1):
  σ = ν, and the success bucket σ = 0.

At the root (τ = Tmax), for a policy with F ≤ 1 − ω: cost = W/Tmax ≥
(σ(ν) − ν(1 − ω))/Tmax for every ν. Communication time s enters through
the tangent A/d + b ≤ κc/(d − s) of an epoch's money in its duration d
at the priced epoch's d₀ (:func:`epoch_terms`); b, a constant, is carried
beside F as G = F + B/μ at a failure price μ, so the root value is
σ(μ·Tmax)/Tmax − μ(1 − ω), μ searched by golden section
(``--no-comm`` drops communication instead: s ~ 0 for the priced bound
too, and the root takes the best ν). Relaxed: the loss grid (optimistic,
as the package's bound), the J slopes, the capacity (ignored) and the
tangent. Exact: "T ≤ Tmax on every run" and the chance constraint
(randomised). ``--check-exact`` compares it with independent exact optima
of tiny lattice instances, which have no communication time: the tangent
is checked only by the inequality it rests on (the tests).

What it is not: not a proven bound (its rounding is not bounded), a
measurement. It prints the priced bound, this one, the failure price, CPU
seconds and the 1-minute load.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from adaptive_probe import instance_parser, priced_search

from deplbench.formulations.adaptive.chain import Chain, _switch_values, correlate_rows
from deplbench.formulations.adaptive.search import lower_bound_search


def epoch_support(S: np.ndarray, nus: np.ndarray, root_a: np.ndarray, floor: bool) -> np.ndarray:
    """σ_a(ν_i) = min_y (√A + √y)² + ν_i ψ(y) per (row, slope, bucket), from the children's
    sum σ_S(ν_j) = S (R, J, L1) at the slopes ``nus`` (ν_0 = 0, where σ = 0: W ≥ 0 and giving
    up has W = 0); ``root_a`` = √A per row (inf: unusable).

    S is concave in ν (a support function), so every tangent (σ(ν_j) − y)/ν_j of the frontier
    ψ is active and its breakpoints are the points (y_c, ψ_c) = (S_c − ν_c D_c, D_c), D_c the
    chord slope of S on [ν_c, ν_c+1]; beyond the last one ψ follows the last tangent, along
    which h + νψ increases for ν ≤ ν_J (h′ ≥ 1). ``floor``: the linear part is a probability,
    ψ ≥ 0, and the last tangent's zero (S_J, 0) is a breakpoint too."""
    D = np.diff(S, axis=1) / np.diff(nus)[None, :, None]               # (R, J−1, L1)
    ys = S[:, :-1] - nus[None, :-1, None] * D
    h = (root_a[:, None, None] + np.sqrt(np.maximum(ys, 0.0))) ** 2
    psi = np.maximum(D, 0.0) if floor else D
    last = (root_a[:, None] + np.sqrt(np.maximum(S[:, -1], 0.0))) ** 2 if floor else None
    out = np.empty_like(S)
    for i, nu in enumerate(nus):
        # only chords c ≤ i: a later chord's extension back to ν_i lies above S(ν_i) (S concave)
        # and its breakpoint lies right of chord i's, so its value is at least chord i's
        c = min(i + 1, D.shape[1])
        out[:, i] = np.min(h[:, :c] + nu * psi[:, :c], axis=1)
        if last is not None:
            np.minimum(out[:, i], last, out=out[:, i])
    return out


def epoch_terms(chain: Chain, lam: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Per (m, n): A and b of the lower bound A/d + b ≤ κc/(d − s) of an epoch's money as a
    function of its duration d (compute plus communication), tangent at the priced epoch's
    d₀ = c/x*(λ) + s: A = κc·(d₀/(d₀ − s))², b = −κc·s/(d₀ − s)² (the curve's only touching
    point is d₀, so it lies below everywhere). ``lam`` None: communication dropped (A = κc, b = 0)."""
    st = chain.st
    kc = st.kappa[None, :] * st.compute
    if lam is None:
        return kc, np.zeros_like(kc)
    _, tc, _ = st.priced(lam)
    d0, s = tc + st.comm, st.comm
    return kc * (d0 / tc) ** 2, -kc * s / tc ** 2


def waterfill_pass(chain: Chain, nus: np.ndarray, mu: float | None = None, lam: float | None = None) -> np.ndarray:
    """σ_root(ν_j) of the optimistic chain, capacity ignored.

    Without ``mu`` communication is dropped and the linear part is F. With ``mu`` (and the
    tangent's ``lam``) the linear part is G = F + B/μ, B the epochs' constants b (≤ 0): the
    root's cost plus μF is then ≥ σ(μ·Tmax)/Tmax."""
    st, M, N, L1 = chain.st, chain.M, chain.N, chain.L + 1
    J = nus.size
    A, b = epoch_terms(chain, lam if mu is not None else None)
    ra = np.where(st.usable, np.sqrt(A), np.inf).reshape(M * N)
    lin = (b / mu if mu is not None else b).reshape(M * N)      # the epoch's own G
    stop = np.broadcast_to(nus[:, None], (J, L1)).copy()   # give up: (0, 1)
    stop[:, 0] = 0.0                                          # success bucket
    nxt = np.broadcast_to(stop, (M, J, L1)).copy()          # k = K̄: stop
    zero = np.zeros((M * N, J))
    floor = mu is None
    for k in range(chain.K - 1, -1, -1):
        kers = [chain.kx[k][m][n] for m in range(M) for n in range(N)]
        f = np.repeat(nxt, N, axis=0)
        ex = correlate_rows(f, kers, f[:, :, -1])
        sw, _ = _switch_values(chain, ex, None, zero)
        own = nus[None, :, None] * lin[:, None, None]           # ν·b/μ per row
        cand = {None: epoch_support(ex, nus, ra, floor) + own}
        for (a, b2), e in sw.items():
            cand[(a, b2)] = epoch_support(e, nus, ra[b2 * N:(b2 + 1) * N], floor) + own[b2 * N:(b2 + 1) * N]
        cur = np.empty((M + 1, J, L1))
        for m in range(M + 1):                              # m = M: no model yet
            blocks = [cand[None][bb * N:(bb + 1) * N] if (m == M or bb == m) else cand[(m, bb)]
                      for bb in range(M) if m == M or bb == m or (m, bb) in cand]
            v = np.minimum(np.min(np.concatenate(blocks, axis=0), axis=0), stop)
            v[:, 0] = 0.0
            cur[m] = v
        if k == 0:
            return cur[M, :, chain.i0]
        nxt = cur[:M]
    raise AssertionError("horizon 0")


def comm_bound(chain: Chain, omega: float, mu: float, lam: float, slopes: int, span: float) -> float:
    """The water-filling bound at failure price μ, communication through the tangent at λ."""
    tmax = chain.st.time_max
    nu = mu * tmax
    nus = np.unique(np.concatenate([[0.0], nu * np.geomspace(1.0 / span, 10.0, slopes), [nu]]))
    root = waterfill_pass(chain, nus, mu, lam)
    return float(root[np.searchsorted(nus, nu)]) / tmax - mu * (1.0 - omega)


def check_exact() -> None:
    """This bound (communication 0 there) against the independent exact optima of the tiny
    lattice instances of tests/formulations/adaptive/exact_lattice.py (every law and scale, ω
    the highest reachable P(success) and 1/8 below it), beside the priced bound."""
    root_dir = Path(__file__).resolve().parents[1]
    if str(root_dir) not in sys.path:
        sys.path.insert(0, str(root_dir))
    from tests.formulations.adaptive.exact_lattice import boundary_cases
    wf_gap, pri_gap = [], []
    for iw, _, o in boundary_cases():
        ch = Chain(iw, 6, optimistic=True)
        pri = lower_bound_search(ch, iw.omega, 6, 6)
        nus = np.concatenate([[0.0], max(pri.best.mu, 1e-9) * ch.st.time_max * np.geomspace(1e-8, 1e4, 400)])
        wf = float(((waterfill_pass(ch, nus) - nus * (1 - iw.omega)) / ch.st.time_max).max())
        wf_gap.append((wf - o) / o)
        pri_gap.append((pri.bound() - o) / o)
    above = sum(g > 1e-9 for g in wf_gap)
    print(f"{len(wf_gap)} instances; against the exact optimum: water-filling {100 * min(wf_gap):+.3f} to "
          f"{100 * max(wf_gap):+.4f} % ({above} above it by more than 1e-9), priced {100 * min(pri_gap):+.2f} to "
          f"{100 * max(pri_gap):+.2f} %")


def main() -> None:
    ap = instance_parser(__doc__ or "", "pact-vgg11", 0.3, 300)
    ap.add_argument("--slopes", type=int, default=64, help="J: slopes ν of the support function")
    ap.add_argument("--span", type=float, default=1e4, help="ν from ν*/span to ν*·10, geometric")
    ap.add_argument("--mu-steps", type=int, default=6, help="golden-section steps on μ (with communication)")
    ap.add_argument("--mu-ratio", type=float, default=None,
                    help="one pass at μ = ratio·μ* instead of the golden-section search")
    ap.add_argument("--no-comm", action="store_true", help="communication times × 1e-9 (~0)")
    ap.add_argument("--check-exact", action="store_true", help="only the tiny lattice instances against exact optima")
    a = ap.parse_args()
    if a.check_exact:
        check_exact()
        return
    def no_comm(chain: Chain) -> None:
        chain.st.comm = chain.st.comm * 1e-9
    inst, chain, search, searched, load0 = priced_search(a, no_comm if a.no_comm else None)
    omega, best, t1 = float(inst.omega), search.best, time.process_time()
    tmax = chain.st.time_max
    x_free = np.sqrt(best.lam * chain.st.compute / chain.st.kappa[None, :])
    capped = int(np.sum(chain.st.usable & (x_free > chain.st.cap[None, :])))
    if a.no_comm:
        nu_star = best.mu * tmax
        nus = np.unique(np.concatenate([[0.0], nu_star * np.geomspace(1.0 / a.span, 10.0, a.slopes), [nu_star]]))
        wf_all = (waterfill_pass(chain, nus) - nus * (1.0 - omega)) / tmax
        wf, where = float(wf_all.max()), f"ν/ν* = {nus[int(wf_all.argmax())] / nu_star:.3g}"
    elif a.mu_ratio:
        wf = comm_bound(chain, omega, a.mu_ratio * best.mu, best.lam, a.slopes, a.span)
        where = f"μ/μ* = {a.mu_ratio:g} (one pass)"
    else:
        # golden-section search on log μ (the bound is concave in μ for fixed tangents)
        g = (np.sqrt(5.0) - 1.0) / 2.0
        lo, hi = np.log(best.mu * 0.2), np.log(best.mu * 1.5)
        memo: dict[float, float] = {}

        def val(z: float) -> float:
            if z not in memo:
                memo[z] = comm_bound(chain, omega, float(np.exp(z)), best.lam, a.slopes, a.span)
            return memo[z]
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        for _ in range(a.mu_steps):
            if val(c) >= val(d):
                hi, d = d, c
                c = hi - g * (hi - lo)
            else:
                lo, c = c, d
                d = lo + g * (hi - lo)
        zbest = max(memo, key=memo.get)
        wf, where = memo[zbest], f"μ/μ* = {np.exp(zbest) / best.mu:.3g} ({len(memo)} passes)"
    t2, priced = time.process_time(), search.bound()
    print(f"{a.family} ℓmax {a.loss_max:g}{' (no comm)' if a.no_comm else ''}, {a.buckets} buckets, "
          f"J {a.slopes}: priced {priced:.3f} (λ {best.lam:.4g}, μ {best.mu:.4g}; {searched:.1f} CPU-s; "
          f"{capped} pairs capped at x*), water-filling {wf:.3f} at {where} ({t2 - t1:.1f} CPU-s), "
          f"gain {100 * (wf / priced - 1):+.3f} %, 1-minute load {load0:.1f}→{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
