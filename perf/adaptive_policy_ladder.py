"""Would a policy that re-prices time per run take anything off the adaptive bracket's upper end? A measurement.

Run::

    python perf/adaptive_policy_ladder.py --family alexnet --loss-max 9 --buckets 2400
    python perf/adaptive_policy_ladder.py --family mobilenet --loss-max 13
    python perf/adaptive_policy_ladder.py --family pact-vgg11 --loss-max 0.3

The certified policy of ``deplbench adaptive``
(:class:`~deplbench.formulations.adaptive.certify.AdaptivePolicy`) reads the
tables of ONE priced pass of the pessimistic chain, at the time price λ* of
the bound's search: a run that is late (little time left) or early still
takes the actions (model, cluster, whether to go on) that were optimal at
λ*, only the allocation is rescaled to the time it has left. This probe
computes the pessimistic chain's priced pass at a ladder of time prices
λ_j = λ*·ρ^j, j = −J..J, and lets every run, at every epoch, read the table
whose remaining-time statistic fits the time it has left:

* statistic ``rms``: √E[Tc²] + E[Ts] from the state under table j (the DP's
  second moment of the remaining compute time plus the expected
  communication time), or ``mean``: E[Tc] + E[Ts];
* calibrated at the root so that the root reads j = 0: c = stat₀(root) /
  (the root's remaining time); a run with remaining time τ takes the
  smallest λ_j (the cheapest table in money) whose statistic is
  ≤ c·τ·``--safety``; the largest λ when none fits;
* ``late``: only j ≥ 0 (a late run moves to dearer time, an early one stays
  at λ*); ``both``: also j < 0 (an early run moves to cheaper time);
* failure price per table: ``keep`` (the tuned policy's μ for every λ_j),
  ``match`` (μ_j from the cutting-plane μ search
  (:func:`~deplbench.formulations.adaptive.search.best_mu`) at fixed λ_j on
  the pessimistic chain, aimed at the tuned pass's own chain P(fail),
  started from the scaled μ below) or
  ``scaled`` (μ_j = μ*·√(λ_j/λ*): where neither the capacity r nor the
  communication time binds, an epoch priced at λ costs 2√(λκc), so the
  λ_j table with that μ_j is the λ* table scaled by √(λ_j/λ*) — the same
  actions; ``--tables`` prints how many states' actions differ).

The table's action is taken and its x*(λ_j) rescaled to the run's remaining
time exactly as the certified policy does (a : √E[S²], safety ``rho`` of
the tuned policy). Every variant is simulated on the same fresh runs (seed
``--seed`` + 88, never a tuning seed) beside the tuned policy's own rule;
reported per variant: P(success), mean cost and mean cost / P(success) — the
cost of the Beutler–Ross mix that gives up exactly the surplus over the
target, the score :func:`~deplbench.formulations.adaptive.certify.tune_policy`
ranks candidates by — against the proven lower bound on the same grid. An
estimate on ``--runs`` runs, not a certified bound. The DP passes of the
ladder and their CPU time are printed, with the 1-minute load before and
after.
"""

from __future__ import annotations

import time

import numpy as np
from adaptive_probe import probe_parser, tuned

from deplbench.formulations.adaptive.certify import AdaptivePolicy
from deplbench.formulations.adaptive.chain import Chain, Pass, dp
from deplbench.formulations.adaptive.search import Search, best_mu
from deplbench.formulations.model.allocation import TIME_RTOL


class Ladder(AdaptivePolicy):
    """:class:`AdaptivePolicy` reading, per run and epoch, the table of the ladder whose
    remaining-time statistic fits the run's remaining time (module docstring).

    ``passes`` are ordered by λ ascending; ``zero`` is the index of the tuned pass (λ*).
    """

    def __init__(self, base: AdaptivePolicy, passes: list[Pass], zero: int, stat: str, late_only: bool,
                 safety: float):
        super().__init__(base.chain, base.pass_, base.rho, scaling="rms", give_up=0.0, coin_seed=base.coin_seed)
        self.passes, self.zero, self.stat = passes, int(zero), stat
        self.lo = self.zero if late_only else 0
        self.safety = float(safety)
        self.priced_tabs = [self.chain.st.priced(p.lam)[:2] for p in passes]
        self.acts = [p.action for p in passes if p.action is not None]
        self.rems = [p.remaining for p in passes if p.remaining is not None]
        assert len(self.acts) == len(self.rems) == len(passes)           # every pass keeps its tables
        ch = self.chain
        root_rem = self.rems[zero][0, ch.M, ch.i0].astype(float)
        self.calib = self._stat(root_rem[None, :])[0] / (ch.st.time_max / (1 + TIME_RTOL))
        self.counts = np.zeros(len(passes), dtype=np.int64)
        self.changed = 0                  # decisions whose action differs from the λ* table's

    def _stat(self, rem: np.ndarray) -> np.ndarray:
        if self.stat == "rms":
            return np.sqrt(np.maximum(rem[..., 2], 0.0)) + rem[..., 1]
        return rem[..., 0] + rem[..., 1]

    def _table_actions(self, state, k, m, b):
        tau = self.chain.st.time_max / (1 + TIME_RTOL) - state.time
        cands = range(self.lo, len(self.passes))
        stats = np.stack([self._stat(self.rems[j][k, m, b].astype(float)) for j in cands])
        # the relative slack keeps the root on λ* (stat₀ / τ₀ · τ₀ may round below stat₀)
        fits = stats <= (self.calib * self.safety * tau * (1.0 + 1e-9))[None, :]
        # the cheapest table (smallest λ) that fits; the dearest when none does
        j = np.where(fits.any(axis=0), np.argmax(fits, axis=0), len(cands) - 1) + self.lo
        self.counts += np.bincount(j, minlength=len(self.passes))
        act = np.empty(j.size, dtype=np.int64)
        for t in np.unique(j):
            sel = j == t
            act[sel] = self.acts[t][k, m, b[sel]]
        self.changed += int(np.count_nonzero(act != self.acts[self.zero][k, m, b]))
        return act, j

    def _epoch_allocation(self, state, go, k, m, b, a, where, m2, n2) -> np.ndarray:
        st = self.chain.st
        jg, bg, elapsed = where[go], b[go], state.time[go]
        out = np.empty(jg.size)
        for t in np.unique(jg):
            sel = jg == t
            rem = self.rems[t][k, m, bg[sel]].astype(float)
            x_t, tc_t = self.priced_tabs[t]
            ms, ns = m2[sel], n2[sel]
            left = st.time_max / (1 + TIME_RTOL) - elapsed[sel] - rem[:, 1]
            at = tc_t[ms, ns]
            plan = at + np.sqrt(np.maximum(rem[:, 2] - 2.0 * at * rem[:, 0] + at * at, 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = np.where(left > 0, plan / (self.rho * left), np.inf)
            x = x_t[ms, ns]
            out[sel] = np.minimum(np.where(np.isfinite(scale) & (scale > 0), x * scale, st.cap[ns]), st.cap[ns])
        return out


def ladder(pes: Chain, base: Pass, ratio: float, J: int, mu_rule: str, omega_chain: float) -> tuple[list[Pass], int]:
    """The pessimistic chain's passes (tables kept) at λ*·ratio^j, j = −J..J, λ ascending."""
    out = []
    for j in range(-J, J + 1):
        if j == 0:
            out.append(base)
            continue
        lam = base.lam * ratio ** j
        mu = base.mu * (ratio ** (j / 2) if mu_rule != "keep" else 1.0)
        if mu_rule == "match":         # started from the scaled μ: best_mu only grows an infeasible guess
            mu, _ = best_mu(Search(pes, omega_chain), lam, omega_chain, mu, 6)
        out.append(dp(pes, lam, mu, keep=True))
    return out, J


def table_report(passes: list[Pass], zero: int) -> str:
    """Per table: μ_j/μ*, √(λ_j/λ*) and the share of the chain's states (k, model, bucket) whose
    action differs from the λ* table's: where neither capacity nor communication binds, the priced
    epoch costs 2√(λκc), so a table at λ_j with μ_j = μ*·√(λ_j/λ*) is the λ* table scaled."""
    a0, p0 = passes[zero].action, passes[zero]
    assert a0 is not None
    parts = []
    for j, p in enumerate(passes):
        if j != zero and p.action is not None:
            parts.append(f"j {j - zero:+d}: μ ×{p.mu / p0.mu:.3g} (√λ ×{(p.lam / p0.lam) ** 0.5:.3g}), "
                         f"states acting otherwise {100 * float(np.mean(p.action != a0)):.2f} %")
    return "; ".join(parts)


def main() -> None:
    ap = probe_parser(__doc__)
    ap.add_argument("--ratios", default="1.25,1.5", help="ladder ratios ρ, comma-separated")
    ap.add_argument("--steps", default="4,8", help="ladder half-lengths J, comma-separated")
    ap.add_argument("--mu", default="keep,match,scaled",
                    help="failure price per table: keep, match and/or scaled (μ*·√(λ_j/λ*))")
    ap.add_argument("--tables", action="store_true", help="print how each table differs from the λ* one")
    ap.add_argument("--stats", default="rms,mean")
    ap.add_argument("--safety", default="1.0")
    ap.add_argument("--mu-scan", help="instead of the ladder: the one-table policy at μ*·f for each f given "
                                      "(comma-separated), from give-up-all to failing almost no run")
    a = ap.parse_args()
    t = tuned(a)
    pes, lb, target, pol = t.pes, t.lb, t.target, t.policy
    base = pol.pass_
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets: proven LB {lb:.2f}; tuned target P(success) "
          f"{target:.4f}; tuned pass λ* {base.lam:.4g}, μ {base.mu:.4g}, chain P(fail) {base.p_fail:.3g}, "
          f"rho {pol.rho:g} ({time.process_time() - t.t0:.0f} CPU-s)", flush=True)
    ref = AdaptivePolicy(pol.chain, base, pol.rho, scaling="rms", give_up=0.0, coin_seed=pol.coin_seed)
    p, c = t.score(ref, a)
    score0 = c / p
    print(f"current rule (one table at λ*): P(success) {p:.4f}, mean cost {c:.2f}, cost/P(success) {score0:.2f} "
          f"({100 * (score0 / lb - 1):+.2f} % of LB)", flush=True)
    if a.mu_scan:
        for f in map(float, a.mu_scan.split(",")):
            one = AdaptivePolicy(pol.chain, dp(pes, base.lam, base.mu * f, keep=True), pol.rho, scaling="rms",
                                 give_up=0.0, coin_seed=pol.coin_seed)
            p, c = t.score(one, a)
            score = (f"cost/P(success) {c / p:.2f} ({100 * (c / p / score0 - 1):+.2f} % vs current)" if p
                     else "no success")
            print(f"μ* × {f:g}: P(success) {p:.4f}, mean cost {c:.2f}, {score}"
                  + ("" if p >= target else " (below target)"), flush=True)
        print(t.done())
        return
    rows = []
    for ratio in map(float, a.ratios.split(",")):
        for J in map(int, a.steps.split(",")):
            for mu_rule in a.mu.split(","):
                t1 = time.process_time()
                passes, zero = ladder(pes, base, ratio, J, mu_rule, 1.0 - base.p_fail)
                dpt = time.process_time() - t1
                if a.tables:
                    print(f"ρ {ratio:g} J {J} μ {mu_rule}: {table_report(passes, zero)}", flush=True)
                for stat in a.stats.split(","):
                    for late in (True, False):
                        for safety in map(float, a.safety.split(",")):
                            pol_l = Ladder(pol, passes, zero, stat, late, safety)
                            p, c = t.score(pol_l, a)
                            used = pol_l.counts / max(1, pol_l.counts.sum())
                            off = 1.0 - float(used[zero])
                            diff = pol_l.changed / max(1, pol_l.counts.sum())
                            if p >= target:       # below the target no give-up share can make up for it
                                rows.append((c / p, ratio, J, mu_rule, stat, late, safety))
                            below = "" if p >= target else " (below target)"
                            print(f"ρ {ratio:g} J {J} μ {mu_rule} stat {stat} {'late' if late else 'both'} "
                                  f"safety {safety:g}: P(success) {p:.4f}, mean cost {c:.2f}, cost/P(success) "
                                  f"{c / p:.2f}{below} ({100 * (c / p / score0 - 1):+.2f} % vs current, "
                                  f"{100 * (c / p / lb - 1):+.2f} % of LB; decisions off λ*'s table {100 * off:.1f} %, "
                                  f"acting otherwise {100 * diff:.2f} %; "
                                  f"ladder {len(passes) - 1} passes, {dpt:.0f} CPU-s)", flush=True)
    if rows:
        s, *cfg = min(rows)
        print(f"best at or above the target: {cfg} cost/P(success) {s:.2f} ({100 * (s / score0 - 1):+.2f} % vs "
              "current)")
    print(t.done())


if __name__ == "__main__":
    main()
