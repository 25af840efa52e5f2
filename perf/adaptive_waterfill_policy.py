"""Does the water-filling bound's own policy lower the adaptive bracket's upper end? A measurement.

Run (from the repository root)::

    python perf/adaptive_waterfill_policy.py --family pact-vgg11 --loss-max 0.15 --buckets 2400
    python perf/adaptive_waterfill_policy.py --buckets 600 --mu-factors 0.8,1,1.25 --money tangent

Measured table and what it decides: docs/adaptive.md, "Further routes".

The certified policy of ``deplbench adaptive``
(:class:`~deplbench.formulations.adaptive.certify.AdaptivePolicy`) reads one
priced table and rescales its allocation to the run's remaining time. The
water-filling bound (:mod:`~deplbench.formulations.adaptive.waterfill`)
carries the deadline exactly: a state keeps its support function
σ(ν) = min W + νG at J slopes, a subtree run with time τ left costing W/τ
(plus its own terms) and failing with probability ≈ G, and at failure
price μ a state with τ left is valued σ(μτ)/τ. This probe runs that
recursion on the *pessimistic* chain (the certified policy's; the bound
uses the optimistic one), the failure above the grid and the kernels' mass
at +∞ priced as a stop (σ = ν), at the tuned failure price μ times
``--mu-factors``, and keeps per epoch the children's expectations S
(per distinct (model, kernel) row, and per switch), float32.

:class:`WaterfillPolicy` reads them. A run at epoch k, model m, loss
bucket ℓ with τ left (Tmax − elapsed) values each action — stop: μ; train
model m′ on cluster n (staying, or switching where the instance allows,
as the bound's stay/moved structure) — at ν = μ_u·τ (μ_u: μ in the pass's
cost unit :func:`~deplbench.formulations.adaptive.waterfill.cost_unit`).
On segment c of the linear interpolation Ŝ of S (line y_c + D_c ν′ on
[ν_c, ν_c+1]) with u the time left after the epoch,

    money(τ − u) + y_c/u + μ_u D_c,   u ∈ [ν_c/μ_u, ν_c+1/μ_u], compute time ≥ c/r,

is convex in u and minimised in closed form, clipped to the segment and to
the capacity: the water-filling share of the minimising segment. Money:
``--money exact`` (default) κc/(τ − s − u), minimised at
u = (τ − s)·√y/(√(κc) + √y); ``--money tangent`` the bound's tangent
A/(τ − u) + b (the epoch's duration d = t·τ, t = √A/(√A + √y), as the
bound's step). The least over segments is the exact minimum for Ŝ (concave
or not). The run takes the least action — or stops if μ is cheaper, or if
no epoch fits before Tmax (then failed; "stopped as no epoch would end by
Tmax") — and trains for the compute time τ − s − u* (x = c/t ≤ r): no
run is late. Among clusters of one model, one that is no cheaper, no
faster to communicate and no larger than another is left out.

Both policies are scored on the same fresh runs (``adaptive_probe.py``:
the current rule as tuned by ``adaptive_bounds``, without its give-up
share) by cost/P(success), the cost of the Beutler–Ross mix that gives up
exactly the surplus over the target; each policy's runs are re-costed
with the compute time allocated in hindsight (``adaptive_gap_sources.py``):
"policy − hindsight" and "hindsight − LB", percentages of the LB. The LB is
the bracket's on this grid: the best of the priced search and the
water-filling passes (the failure price searched as the bracket searches
it). Also printed: the policy's own prediction σ_root(ν*)/Tmax of
E[cost] + μ·P(fail) on its chain, beside the simulated one.

What it is not: a bound, nor tuned on separate runs — every failure price
is scored on the same fresh runs, so the best of them is an optimistic
estimate; every number is an estimate on ``--runs`` runs, and the pass's
floating point is not bounded.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from adaptive_envelope_policy import _rss_mib, line, score
from adaptive_probe import Tuned, probe_parser, tuned_with_search

from deplbench.formulations.adaptive.certify import AdaptivePolicy
from deplbench.formulations.adaptive.chain import Chain, correlate_rows, distinct_rows, switch_values
from deplbench.formulations.adaptive.waterfill import (
    SPAN,
    _classes,
    cost_unit,
    envelope,
    grid_passes,
    least_action,
    lines,
    segments,
    tangent_terms,
)
from deplbench.formulations.evaluation.closed_loop import STOP, ClosedLoopPolicy, Decision


class WaterTables:
    """The water-filling recursion on a (pessimistic) chain at failure price ``mu``, tangent at time price
    ``lam``, with the children's expectations kept per epoch (float32) for :class:`WaterfillPolicy`.

    ``stay[k]``: (R, J, L + 1), one row per distinct (model, kernel) of epoch k (``index[k]`` maps
    action m′·N + n′ to its row); ``moved[k][(a, b)]``: (U, J, L + 1), the switch a → b's expectation
    per distinct row of model b (``swpos[k][(a, b)][n]``: the row of cluster n)."""

    def __init__(self, chain: Chain, mu: float, lam: float, slopes: int, span: float = SPAN):
        st, M, L1, J = chain.st, chain.M, chain.L + 1, int(slopes)
        self.chain, self.mu, self.lam = chain, float(mu), float(lam)
        self.unit = unit = cost_unit(chain)
        self.mu_u = mu_u = mu / unit
        nu_star = float(mu_u * st.time_max)
        geo = nu_star * np.geomspace(1.0 / span, 1.0, J - 1)
        geo[-1] = nu_star
        self.nus = nus = np.concatenate([[0.0], geo])
        A, b = tangent_terms(chain, lam)
        self.A, self.b = A / unit, b / unit
        classes = [_classes(self.A[m], self.b[m], mu_u) for m in range(M)]
        nu = nus[:, None]
        stop = np.broadcast_to(nu, (J, L1)).copy()
        stop[:, 0] = 0.0
        nxt = np.broadcast_to(stop, (M, J, L1)).copy()
        self.stay: list = [None] * chain.K
        self.moved: list = [None] * chain.K
        self.index: list = [None] * chain.K
        self.swpos: list = [None] * chain.K

        def step(S: np.ndarray, m: int) -> np.ndarray:
            seg = segments(S, nus)
            out = np.full(S.shape, np.inf)
            for a, lin in classes[m]:
                v = envelope(*lines(seg, a), nus)
                v += nu * lin
                np.minimum(out, v, out=out)
            return out

        for k in range(chain.K - 1, -1, -1):
            rows, kers, index = distinct_rows(chain, k)
            f = nxt[rows]
            tops = np.broadcast_to(nus, (rows.size, J))              # above the grid: failure (σ = ν)
            ex = correlate_rows(f, kers, tops)
            sw, _ = switch_values(chain, ex, nus, np.zeros((rows.size, J)), index, per_cluster=False)
            self.stay[k] = ex.astype(np.float32)
            self.moved[k] = {ab: e.astype(np.float32) for ab, e in sw.items()}
            self.index[k] = index
            self.swpos[k] = {(a, bb): np.searchsorted(np.unique(index[bb * chain.N:(bb + 1) * chain.N]),
                                                      index[bb * chain.N:(bb + 1) * chain.N])
                             for (a, bb) in sw}
            stay = [np.min([step(ex[r], m) for r in np.flatnonzero(rows == m)], axis=0) if classes[m] else None
                    for m in range(M)]
            moved = {ab: np.min([step(e, ab[1]) for e in v], axis=0) for ab, v in sw.items() if classes[ab[1]]}
            cur = least_action(stop, stay, moved)
            nxt = cur[:M]
        #: σ_root(ν*)/Tmax in the instance's cost unit: the recursion's E[cost] + μ·P(fail) (tangent money)
        self.root = float(cur[M, -1, chain.i0]) * unit / st.time_max

    @staticmethod
    def estimate(chain: Chain, slopes: int) -> float:
        """Bytes of the kept expectations: per epoch, one (J, L + 1) float32 array per distinct row and
        per switch row (the rows of epoch 0 counted for every epoch)."""
        rows, _, index = distinct_rows(chain, 0)
        sw = sum(np.unique(index[b * chain.N:(b + 1) * chain.N]).size for (_, b) in chain.kj)
        return 4.0 * chain.K * (rows.size + sw) * slopes * (chain.L + 1)

    def nbytes(self) -> int:
        return sum(s.nbytes + sum(e.nbytes for e in m.values()) for s, m in zip(self.stay, self.moved))


class WaterfillPolicy(ClosedLoopPolicy):
    """The water-filling bound's policy on :class:`WaterTables` (module docstring)."""

    def __init__(self, tables: WaterTables, money: str = "exact", name: str = "water-filling policy"):
        if money not in ("exact", "tangent"):
            raise ValueError(f"money: exact or tangent, got {money!r}")
        ch = tables.chain
        st = ch.st
        self.tables, self.chain, self.money, self.name = tables, ch, money, name
        self.reference_plan, self.give_up = None, 0.0
        self.deadline = float(ch.instance.time_max)
        self.guarded = 0
        with np.errstate(divide="ignore"):
            self.tmin = np.where(st.usable, st.compute / st.cap[None, :], np.inf)
        self.kc = st.kappa[None, :] * st.compute / tables.unit
        # per model, the clusters not dominated (κc, s, c/r all ≥ another's; ties: the lower index kept)
        self.clusters = []
        for m in range(ch.M):
            keep = []
            for n in range(ch.N):
                if not st.usable[m, n]:
                    continue
                key = (self.kc[m, n], st.comm[m, n], self.tmin[m, n], tables.A[m, n], tables.b[m, n])
                dominated = False
                for n2 in range(ch.N):
                    if n2 == n or not st.usable[m, n2]:
                        continue
                    k2 = (self.kc[m, n2], st.comm[m, n2], self.tmin[m, n2], tables.A[m, n2], tables.b[m, n2])
                    if all(x2 <= x for x2, x in zip(k2, key)) and (k2 != key or n2 < n):
                        dominated = True
                        break
                if not dominated:
                    keep.append(n)
            self.clusters.append(keep)

    def datasets(self) -> dict[str, list[str]]:
        inst = self.chain.instance
        return {c.name: list(inst.all_datasets) for j, c in enumerate(inst.clusters) if self.chain.st.cap[j] > 0}

    def describe(self) -> dict:
        return {"mu": self.tables.mu, "slopes": int(self.tables.nus.size), "money": self.money}

    def _value(self, S: np.ndarray, tau: np.ndarray, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Least value (cost unit) of training (m, n) now and the time u* it leaves, per run:
        S (J, n) the children's expectation at the runs' buckets, tau (n,) the time left."""
        tb, st = self.tables, self.chain.st
        nus, mu_u = tb.nus, tb.mu_u
        T = S.astype(float)
        T[0] = 0.0
        D = np.diff(T, axis=0) / np.diff(nus)[:, None]             # (J − 1, n)
        y = np.maximum(T[:-1] - nus[:-1, None] * D, 0.0)
        y[0] = 0.0                                                 # σ(0) = 0: segment 0 through the origin
        s = st.comm[m, n]
        umax = tau - s - self.tmin[m, n]                           # compute time ≥ c/r
        if self.money == "exact":
            a, w, own = self.kc[m, n], tau - s, 0.0
        else:
            a, w, own = tb.A[m, n], tau, tb.b[m, n]
        lo = nus[:-1, None] / mu_u
        hi = np.minimum(nus[1:, None] / mu_u, umax[None, :])
        ry, ra = np.sqrt(y), math.sqrt(a)
        u = np.clip(w[None, :] * ry / (ra + ry), lo, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            child = np.where(u > 0, y / u, np.where(y > 0, np.inf, 0.0))
            v = a / (w[None, :] - u) + child + mu_u * D + own
        v = np.where((lo <= hi) & np.isfinite(v), v, np.inf)
        c = np.argmin(v, axis=0)
        pick = np.arange(tau.size)
        return v[c, pick], u[c, pick]

    def decide(self, state):
        ch, tb, st = self.chain, self.tables, self.chain.st
        out = Decision.constant(state.size, STOP)
        k = state.epoch
        if k >= ch.K:
            return out
        m = ch.M if state.model is None else int(state.model)
        bk = ch.bucket(state.loss)
        tau = self.deadline - state.time
        best = np.full(state.size, tb.mu_u)                        # the stop
        feasible = np.zeros(state.size, dtype=bool)
        act_m = np.full(state.size, -1)
        act_n = np.zeros(state.size, dtype=np.int64)
        act_u = np.zeros(state.size)
        for bb in range(ch.M):
            if m == ch.M or bb == m:
                rows = {n: tb.stay[k][tb.index[k][bb * ch.N + n]] for n in self.clusters[bb]}
            elif (m, bb) in tb.moved[k]:
                rows = {n: tb.moved[k][(m, bb)][tb.swpos[k][(m, bb)][n]] for n in self.clusters[bb]}
            else:
                continue
            for n, S in rows.items():
                v, u = self._value(S[:, bk], tau, bb, n)
                feasible |= np.isfinite(v)
                better = v < best
                best = np.where(better, v, best)
                act_m = np.where(better, bb, act_m)
                act_n = np.where(better, n, act_n)
                act_u = np.where(better, u, act_u)
        act_m[bk == 0] = -1                                          # success: stop
        self.guarded += int(np.sum(~feasible & (bk > 0)))
        go = act_m >= 0
        if not go.any():
            return out
        m2, n2 = act_m[go], act_n[go]
        t = np.maximum(tau[go] - st.comm[m2, n2] - act_u[go], self.tmin[m2, n2])
        out.model[go], out.cluster[go] = m2, n2
        out.allocation[go] = np.minimum(st.compute[m2, n2] / t, st.cap[n2])
        return out


def setup(a) -> tuple[Tuned, Chain, object]:
    """:func:`adaptive_probe.tuned`, keeping the optimistic chain and the search (for the water-filling bound)."""
    return tuned_with_search(a)


def main() -> None:
    ap = probe_parser(__doc__)
    ap.set_defaults(family="pact-vgg11", loss_max=0.15, buckets=2400)
    ap.add_argument("--slopes", type=int, default=64, help="J: slopes of the water-filling pass")
    ap.add_argument("--mu-factors", default="0.8,1,1.25,1.6",
                    help="failure prices of the policy's pass, as factors of the tuned μ (comma-separated)")
    ap.add_argument("--money", default="exact", choices=("exact", "tangent"),
                    help="the epoch's money in the policy's choice: κc/(d − s) or the bound's tangent A/d + b")
    ap.add_argument("--no-bound", action="store_true", help="skip the water-filling bound (LB: priced only)")
    a = ap.parse_args()
    t, opt, search = setup(a)
    base = t.policy.pass_
    omega = float(t.instance.omega)
    c_lb = time.process_time()
    lb_priced, lb_wf = t.lb, -math.inf
    if not a.no_bound:
        wps, ratio = grid_passes(opt, omega, search.best, a.slopes, None)
        lb_wf = max((w.bound(omega) for w in wps), default=-math.inf)
    lb = max(lb_priced, lb_wf)
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets: LB {lb:.2f} (priced {lb_priced:.2f}, "
          f"water-filling {lb_wf:.2f}, {time.process_time() - c_lb:.1f} CPU-s); tuned target P(success) "
          f"{t.target:.4f}; tuned pass λ* {base.lam:.4g}, μ {base.mu:.4g} ({time.process_time() - t.t0:.0f} CPU-s); "
          f"{a.runs} fresh runs; 1-minute load {os.getloadavg()[0]:.1f}", flush=True)
    ref = AdaptivePolicy(t.pes, base, t.policy.rho, scaling="rms", give_up=0.0, coin_seed=t.policy.coin_seed)
    c0 = time.process_time()
    s0 = score(t, ref, a)
    print(line("current rule (one table at λ*)", s0, lb, t.target) +
          f"; runs {time.process_time() - c0:.1f} CPU-s, 1-minute load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"tables of one pass: ≈ {WaterTables.estimate(t.pes, a.slopes) / 2**20:.0f} MiB (estimate)", flush=True)
    for f in map(float, a.mu_factors.split(",")):
        c0, w0 = time.process_time(), time.perf_counter()
        tables = WaterTables(t.pes, base.mu * f, base.lam, a.slopes)
        c1 = time.process_time()
        pol = WaterfillPolicy(tables, a.money)
        s = score(t, pol, a)
        c2 = time.process_time()
        lag = s["cost"] + base.mu * f * (1.0 - s["p"])
        print(line(f"water-filling policy, μ × {f:g} (J {a.slopes}, money {a.money})", s, lb, t.target, s0["score"]) +
              f"; predicted E[cost] + μ P(fail) {tables.root:.2f}, simulated {lag:.2f}; pass {c1 - c0:.1f} CPU-s, "
              f"runs {c2 - c1:.1f} CPU-s ({time.perf_counter() - w0:.0f} s wall), tables "
              f"{tables.nbytes() / 2**20:.0f} MiB, max RSS {_rss_mib():.0f} MiB, 1-minute load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        del tables, pol
    print(t.done())


if __name__ == "__main__":
    main()
