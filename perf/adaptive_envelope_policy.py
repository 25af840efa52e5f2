"""Does a time-aware policy take the adaptive bracket's unattributed width off the policy's side? A measurement.

Run (from the repository root)::

    python perf/adaptive_envelope_policy.py --family pact-vgg11 --loss-max 0.3 --buckets 300
    python perf/adaptive_envelope_policy.py --buckets 600 --ratio 1.1 --zero-slope   # wider slopes

Measured table and what it decides: docs/adaptive.md, "Further routes".

The certified policy of ``deplbench adaptive``
(:class:`~deplbench.formulations.adaptive.certify.AdaptivePolicy`) reads one
priced table, at the bound's time price λ*, and rescales its allocation to
the run's remaining time: its choice of model, cluster and stop does not
depend on the time a run has left. This probe builds a policy whose choice
does: the tangent-envelope DP of ``perf/adaptive_envelope_probe.py`` run on
the *pessimistic* chain (the certified policy's chain) at the tuned failure
price μ, slopes centred on λ*. At every epoch k, for each action a (model
m′, cluster n′, with or without a switch) it has the continuation
E_a(u) = E_{s′} max_j(α_j(s′) − λ_j u) on U points of the time u left after
the epoch; between them it is taken linear (E is convex in u, so is the
interpolant). On a grid of G remaining times τ_g it keeps, per (k, m, loss
bucket, g), the action of least

    Q_a(τ) = min_u κc/(τ − s − u) + E_a(u),   c/r ≤ τ − s − u, 0 ≤ u,

or the stop (0 at bucket 0, μ above) if that is cheaper, and the minimiser
u* — found exactly for the piecewise-linear E_a: on its segment i the best
compute time is t_i = max(c/r, √(κc/−S_i)) (S_i the segment's slope, the
time price there), at a kink u_i the compute time takes up τ − s − u_i, so
u*(τ) follows 2U sorted breakpoints u_i + s + t_{i−1} ≤ u_i + s + t_i. A
table of shape (K, M + 1, L + 1, G) (action, u*), kept epoch by epoch.

:class:`EnvelopePolicy` reads it with the run's τ rounded down to the grid
(the action of τ_g: planned for less time than the run has), takes u*
interpolated linearly between τ_g and τ_g+1 when both grid points choose
the same action (else u*(τ_g)), and runs the epoch for t = τ − s − u*,
x = c/t ≤ r; a run whose τ − s is below c/r stops (failed) rather than
pass Tmax knowingly, so no run is late. Both policies are scored on the
same fresh runs (``adaptive_probe.py``: the current rule as tuned by
``adaptive_bounds``, without its give-up share) by cost/P(success), the
cost of the Beutler–Ross mix that gives up exactly the surplus over the
target; each policy's runs are also re-costed with the compute time
allocated in hindsight (``adaptive_gap_sources.py``), so that "policy −
hindsight" (allocation not knowing the run's length) and "hindsight − LB"
(epochs chosen, bound) separate.

The slopes: J of them, λ*·ρ^j around λ*, and with ``--zero-slope`` the flat
line λ = 0 (the value with unlimited time; exact for a state that stops).
Their span matters to the policy, not only to the bound: the envelope is
too low where a state is short of time (its value rises to μ as τ shrinks
far faster than the steepest slope kept), so a policy reading it plans to
leave too little time and fails runs after training them; slopes spanning
×20 or more each way (ρ 1.1 with J 64) avoid most of that.
``--mu-factors`` runs the pass at other failure prices (one pass each).

What it is not: a bound. Every number is an estimate on ``--runs`` runs;
the envelope is a lower approximation of each state's value in τ (its
convex envelope, within the slopes kept), so the policy's Q values are
estimates too, and its floating point is not bounded.
"""

from __future__ import annotations

import math
import resource
import time

import numpy as np
from adaptive_envelope_probe import envelope_pass
from adaptive_gap_sources import Recorder
from adaptive_probe import FRESH, probe_parser, tuned

from deplbench.formulations.adaptive.certify import AdaptivePolicy
from deplbench.formulations.adaptive.chain import Chain
from deplbench.formulations.evaluation.closed_loop import STOP, ClosedLoopPolicy, Decision, simulate
from deplbench.formulations.model.allocation import TIME_RTOL

#: Tolerance, in grid steps, of reading a remaining time on a grid point: a run
#: lands on the u* it planned up to rounding, which must not cost it a step.
SNAP = 1e-7


class EnvelopeTable:
    """The policy table of an envelope pass: action (m′·N + n′, −1 stop) and u* per (k, m, bucket, τ_g).

    Parameters
    ----------
    chain : Chain
        The pessimistic chain.
    mu : float
        The failure price (the stop's value above bucket 0).
    points : int
        U: the u grid of the envelope pass (on [0, Tmax]).
    taus : int
        G: the grid of remaining times τ_g = g·Tmax/(G − 1) the table is kept on.
    """

    def __init__(self, chain: Chain, mu: float, points: int, taus: int):
        st, self.chain, self.mu = chain.st, chain, float(mu)
        M, L1 = chain.M, chain.L + 1
        self.deadline = st.time_max / (1 + TIME_RTOL)
        self.u = np.linspace(0.0, self.deadline, points)
        self.tau = np.linspace(0.0, self.deadline, taus)
        self.action = np.full((chain.K, M + 1, L1, taus), -1, dtype=np.int16)
        self.after = np.zeros((chain.K, M + 1, L1, taus), dtype=np.float32)
        with np.errstate(divide="ignore"):
            self.tmin = np.where(st.usable, st.compute / st.cap[None, :], np.inf)      # c/r (M, N)
        self.money = st.kappa[None, :] * st.compute                                    # κc: money = κc/t

    def __call__(self, k: int, ex: np.ndarray, sw: dict) -> None:
        """Fill epoch k from the pass's continuations (``envelope_pass``'s hook)."""
        ch, M, N = self.chain, self.chain.M, self.chain.N
        q, uu = self.rows(ex, np.arange(M * N))
        qs = {ab: self.rows(e, b * N + np.arange(N)) for (ab, e) in sw.items() for b in [ab[1]]}
        stop = np.full(ch.L + 1, self.mu)
        stop[0] = 0.0
        for m in range(M + 1):                                   # m = M: no model yet
            blocks, ids = [], []
            for b in range(M):
                if m == M or b == m:
                    blocks.append((q[b * N:(b + 1) * N], uu[b * N:(b + 1) * N]))
                elif (m, b) in qs:
                    blocks.append(qs[(m, b)])
                else:
                    continue
                ids.extend(b * N + n for n in range(N))
            qq = np.concatenate([x[0] for x in blocks])          # (A, L1, G)
            ua = np.concatenate([x[1] for x in blocks])
            best = np.argmin(qq, axis=0)                         # (L1, G)
            qb = np.take_along_axis(qq, best[None], axis=0)[0]
            go = qb < stop[:, None]
            go[0] = False
            self.action[k, m] = np.where(go, np.array(ids)[best], -1)
            self.after[k, m] = np.where(go, np.take_along_axis(ua, best[None], axis=0)[0], 0.0)

    def rows(self, E: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Q_a(τ_g) and u*(τ_g), each (rows, L1, G), of the action rows ``which`` (ids m′·N + n′)
        whose continuations on the u grid are E (rows, U, L1)."""
        st, u, tau = self.chain.st, self.u, self.tau
        U = u.size
        M_, N_ = np.divmod(which, self.chain.N)
        s, tmin, kc = st.comm[M_, N_], self.tmin[M_, N_], self.money[M_, N_]
        S = np.diff(E, axis=1) / (u[1] - u[0])                   # segment slopes (R, U−1, L1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_seg = np.where(S < 0, np.sqrt(kc[:, None, None] / np.maximum(-S, 1e-300)), np.inf)
        t_seg = np.maximum(np.nan_to_num(t_seg, nan=np.inf), tmin[:, None, None])
        # a convex E has nondecreasing slopes; the FFTs' rounding may not: keep t monotone
        t_seg = np.maximum.accumulate(t_seg, axis=1)
        R, L1 = E.shape[0], E.shape[2]
        t_lo = np.concatenate([np.broadcast_to(tmin[:, None, None], (R, 1, L1)), t_seg], axis=1)   # left of kink i
        t_hi = np.concatenate([t_seg, np.full((R, 1, L1), np.inf)], axis=1)                      # right of kink i
        P = np.stack([u[None, :, None] + s[:, None, None] + t_lo, u[None, :, None] + s[:, None, None] + t_hi],
                     axis=2).reshape(R, 2 * U, L1)                # sorted breakpoints in τ
        W = 3.0 * self.deadline
        P = np.minimum(P, 2.0 * self.deadline).transpose(0, 2, 1)  # (R, L1, 2U)
        off = W * np.arange(R * L1, dtype=float).reshape(R, L1, 1)
        n = np.searchsorted((P + off).ravel(), (tau[None, None, :] + off).ravel(), side="right")
        n = n.reshape(R, L1, tau.size) - 2 * U * np.arange(R * L1).reshape(R, L1, 1)   # breakpoints ≤ τ_g
        i = np.clip((n - 1) // 2, 0, U - 1)                      # the kink, or the segment after it
        at_kink = (n % 2) == 1
        Et = E.transpose(0, 2, 1)                                # (R, L1, U)
        St = np.concatenate([S, np.zeros((R, 1, L1))], axis=1).transpose(0, 2, 1)
        ts = np.take_along_axis(t_hi.transpose(0, 2, 1), i, axis=2)
        ui = u[i]
        t = np.where(at_kink, tau[None, None, :] - s[:, None, None] - ui, ts)
        uo = np.where(at_kink, ui, tau[None, None, :] - s[:, None, None] - ts)
        e = np.take_along_axis(Et, i, axis=2) + np.take_along_axis(St, i, axis=2) * (uo - ui)
        with np.errstate(divide="ignore", invalid="ignore"):
            qv = kc[:, None, None] / t + e
        ok = (n > 0) & np.isfinite(qv) & st.usable[M_, N_][:, None, None]
        return np.where(ok, qv, np.inf), np.where(ok, uo, 0.0)


class EnvelopePolicy(ClosedLoopPolicy):
    """The time-aware policy of an :class:`EnvelopeTable` in the closed-loop simulator (module docstring).

    ``budget`` and ``give_up`` as :class:`AdaptivePolicy` (the give-up share
    drawn by the same low-discrepancy sequence of run indices).
    """

    gives_up = AdaptivePolicy.gives_up

    def __init__(self, table: EnvelopeTable, name: str = "envelope (time-aware)", give_up: float = 0.0,
                 coin_seed: int = 0, budget: float = math.inf):
        self.table, self.chain, self.name = table, table.chain, name
        self.give_up, self.budget, self.reference_plan = float(give_up), float(budget), None
        self.u0 = float(np.random.default_rng([int(coin_seed), 28]).random())
        self.guarded = 0           # decisions to train turned into stops: the epoch would not end by Tmax

    def datasets(self) -> dict[str, list[str]]:
        inst = self.chain.instance
        return {c.name: list(inst.all_datasets) for j, c in enumerate(inst.clusters) if self.chain.st.cap[j] > 0}

    def describe(self) -> dict:
        return {"mu": self.table.mu, "time_points": int(self.table.u.size), "taus": int(self.table.tau.size),
                "give_up": self.give_up, "budget": self.budget}

    def decide(self, state):
        ch, tb, st = self.chain, self.table, self.chain.st
        out = Decision.constant(state.size, STOP)
        k = state.epoch
        if k >= ch.K:
            return out
        m = ch.M if state.model is None else int(state.model)
        b = ch.bucket(state.loss)
        tau = tb.deadline - state.time
        step = tb.tau[1] - tb.tau[0]
        g = np.clip(np.floor(tau / step + SNAP), 0, tb.tau.size - 1).astype(np.int64)
        g1 = np.minimum(g + 1, tb.tau.size - 1)
        a = tb.action[k, m, b, g].astype(np.int64)
        same = (tb.action[k, m, b, g1] == a) & (g1 > g)
        w = np.clip((tau - tb.tau[g]) / step, 0.0, 1.0)
        u = np.where(same, (1 - w) * tb.after[k, m, b, g] + w * tb.after[k, m, b, g1], tb.after[k, m, b, g])
        if state.model is None and self.give_up > 0:
            a = np.where(self.gives_up(state.runs), -1, a)
        m2, n2 = np.maximum(a, 0) // ch.N, np.maximum(a, 0) % ch.N
        room = tau - st.comm[m2, n2]
        # never start an epoch that cannot end by Tmax, even at x = r
        fits = room >= tb.tmin[m2, n2] * (1 - 1e-12)
        self.guarded += int(np.sum((a >= 0) & ~fits))
        a = np.where(fits, a, -1)
        go = a >= 0
        if not go.any():
            return out
        t = np.maximum(room[go] - np.maximum(u[go], 0.0), tb.tmin[m2[go], n2[go]])
        out.model[go], out.cluster[go] = m2[go], n2[go]
        out.allocation[go] = np.minimum(st.compute[m2[go], n2[go]] / t, st.cap[n2[go]])
        if math.isfinite(self.budget):
            idx = np.flatnonzero(go)
            over = state.cost[idx] + st.kappa[n2[go]] * out.allocation[idx] > self.budget
            out.model[idx[over]] = STOP
        return out


def score(t, policy, a) -> dict:
    """P(success), mean cost, late runs and the hindsight-allocated mean cost of ``policy`` on the fresh runs."""
    rec = Recorder(policy, a.runs)
    r = simulate(t.instance, rec, a.runs, a.seed + FRESH)
    tm = float(t.instance.time_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        hind = np.where(rec.root_sum > 0, rec.root_sum ** 2 / (tm - rec.comm), 0.0)
    p, c = r.successes / r.runs, float(r.cost.mean())
    failed = ~r.success & (r.epochs > 0)
    return {"p": p, "cost": c, "score": c / p if p > 0 else math.inf, "late": int(r.deadline_missed.sum()),
            "invalid": int(r.invalid.sum()), "hindsight": float(hind.mean()), "failed_trained": int(failed.sum()),
            "failed_money": float(r.cost[failed].sum() / max(r.cost.sum(), 1e-300)),
            "guarded": getattr(policy, "guarded", 0)}


def line(name: str, s: dict, lb: float, target: float, ref: float | None = None) -> str:
    below = " (below the target)" if s["p"] < target else ""
    vs = "" if ref is None else f", {100 * (s['score'] / ref - 1):+.2f} % vs the current rule"
    return (f"{name}: P(success) {s['p']:.4f}{below}, mean cost {s['cost']:.2f}, cost/P(success) {s['score']:.2f} "
            f"({100 * (s['score'] / lb - 1):+.2f} % of LB{vs}), late {s['late']}, invalid {s['invalid']}, "
            f"failed after training {s['failed_trained']} ({100 * s['failed_money']:.2f} % of the money; "
            f"{s['guarded']} stopped as no epoch would end by Tmax); "
            f"hindsight-allocated {s['hindsight']:.2f} (policy − it {100 * (s['cost'] - s['hindsight']) / lb:.2f} %,"
            f" it − LB {100 * (s['hindsight'] / lb - 1):.2f} % of LB)")


def main() -> None:
    ap = probe_parser(__doc__)
    ap.set_defaults(family="pact-vgg11", loss_max=0.3, buckets=300)
    ap.add_argument("--time-points", type=int, default=128, help="U: points of the u grid of the envelope pass")
    ap.add_argument("--slopes", type=int, default=64, help="J: tangent slopes per state")
    ap.add_argument("--ratio", type=float, default=1.025, help="ratio of consecutive slopes, centred on λ*")
    ap.add_argument("--zero-slope", action="store_true",
                    help="add the slope λ = 0 (a flat line: the value with unlimited time) to the J slopes")
    ap.add_argument("--taus", type=int, default=0, help="G: remaining-time grid of the table (default U)")
    ap.add_argument("--mu-factors", default="1", help="failure prices of the envelope pass, as factors of "
                                                      "the tuned μ (comma-separated)")
    a = ap.parse_args()
    t = tuned(a)
    base = t.policy.pass_
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets: proven LB {t.lb:.2f}; tuned target "
          f"P(success) {t.target:.4f}; tuned pass λ* {base.lam:.4g}, μ {base.mu:.4g} "
          f"({time.process_time() - t.t0:.0f} CPU-s); {a.runs} fresh runs", flush=True)
    ref = AdaptivePolicy(t.pes, base, t.policy.rho, scaling="rms", give_up=0.0, coin_seed=t.policy.coin_seed)
    s0 = score(t, ref, a)
    print(line("current rule (one table at λ*)", s0, t.lb, t.target), flush=True)
    lams = base.lam * a.ratio ** (np.arange(a.slopes) - a.slopes // 2)
    if a.zero_slope:
        lams = np.concatenate([[0.0], lams])
    for f in map(float, a.mu_factors.split(",")):
        c0, w0 = time.process_time(), time.perf_counter()
        table = EnvelopeTable(t.pes, base.mu * f, a.time_points, a.taus or a.time_points)
        envelope_pass(t.pes, base.mu * f, lams, a.time_points, hook=table)
        c1 = time.process_time()
        s = score(t, EnvelopePolicy(table, coin_seed=t.policy.coin_seed), a)
        moves = float(np.mean(table.action[:, :, 1:] != table.action[:, :, 1:, -1:]))
        print(line(f"envelope policy, μ × {f:g} (U {a.time_points}, J {a.slopes} × {a.ratio:g}"
                   f"{' + λ 0' if a.zero_slope else ''}, G {table.tau.size})", s, t.lb, t.target, s0["score"]) +
              f"; pass + table {c1 - c0:.1f} CPU-s ({time.perf_counter() - w0:.0f} s wall with the runs), "
              f"table {(table.action.nbytes + table.after.nbytes) / 2**20:.0f} MiB, "
              f"{100 * moves:.1f} % of (state, τ) entries act otherwise than at τ = Tmax, "
              f"max RSS {_rss_mib():.0f} MiB", flush=True)
    print(t.done())


def _rss_mib() -> float:
    """Peak resident set size of this process, MiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
