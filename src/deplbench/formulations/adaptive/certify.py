"""The adaptive reference, part 3: the policy of the upper bound and its tuning.

:class:`AdaptivePolicy` runs a pessimistic chain's tables in the closed-loop
simulator (allocation rescaled to the run's remaining time, a cost budget);
:func:`tune_policy` chooses its failure price on tuning seeds only;
:func:`certify_mix` certifies it on fresh runs and sets the share of runs it
gives up at once (Beutler–Ross) from that certificate. The bracket is assembled in
:mod:`deplbench.formulations.adaptive.bracket`. Guarantees: package
docstring (:mod:`deplbench.formulations.adaptive`).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.adaptive.chain import Chain, Pass, dp
from deplbench.formulations.adaptive.timed import TimeGrid, timed_dp
from deplbench.formulations.evaluation.binomial import clopper_pearson_lower
from deplbench.formulations.evaluation.closed_loop import STOP, ClosedLoopPolicy, Decision, simulate
from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.limits import check_time

#: Factors of ``rho`` tried in turn when tuning the failure price alone does not
#: reach the target success rate (runs that miss the deadline).
RHO_FALLBACK = (1.0, 0.95, 0.9, 0.8)


#: Golden-ratio step of the low-discrepancy sequence that picks the runs an
#: :class:`AdaptivePolicy` gives up at once (its randomisation).
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
#: Time-rescaling rules of :class:`AdaptivePolicy`.
SCALINGS = ("rms", "mean")


def cost_moments(costs: np.ndarray) -> tuple[float, float]:
    """Sample mean and standard deviation (n − 1 denominator) of runs' costs (≥ 0).

    Where the plain sum or squares would pass binary64 or underflow (the
    largest cost above 1e150 or below 1e-140), they are computed on the costs
    divided by their largest and scaled back, so an instance's cost unit turns
    them neither into inf nor into 0; elsewhere they are numpy's. The deviation
    is inf for fewer than two costs."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        mean = float(costs.mean()) if costs.size else 0.0
        var = float(costs.var(ddof=1)) if costs.size > 1 else math.inf
    top = float(np.max(costs)) if costs.size else 0.0
    if costs.size < 2 or (math.isfinite(mean) and math.isfinite(var) and (top == 0 or 1e-140 <= top <= 1e150)):
        return mean, math.sqrt(var)
    if not (math.isfinite(top) and top > 0):
        return mean, math.inf
    y = costs / top
    return top * float(y.mean()), top * math.sqrt(float(y.var(ddof=1)))


def cost_ucb(costs: np.ndarray, scale: float, c_max: float, delta: float) -> tuple[float, float]:
    """One-sided upper confidence bound at level 1 − δ on the mean of ``scale``·X, X ∈ [0, c_max] i.i.d.

    Empirical Bernstein (Maurer & Pontil 2009, Thm 4, rescaled from [0, 1]):
    E X ≤ X̄ + sqrt(2 V ln(2/δ)/n) + 7 c_max ln(2/δ) / (3(n − 1)), V the sample
    variance (n − 1 denominator). Returns (scale·X̄, scale·bound).

    References
    ----------
    A. Maurer and M. Pontil, "Empirical Bernstein bounds and sample variance
    penalization", COLT 2009, Theorem 4.
    """
    n = int(costs.size)
    if n < 2:
        return (scale * float(costs.mean()) if n else 0.0), math.inf
    mean, sd = cost_moments(costs)
    ln = math.log(2.0 / delta)
    ub = mean + sd * math.sqrt(2.0 * ln / n) + 7.0 * c_max * ln / (3.0 * (n - 1))
    return scale * mean, scale * min(ub, c_max)


def give_up_share(p_lo: float, omega: float) -> float:
    """The share q of runs a certified mix gives up at once so that (1 − q)·``p_lo`` ≥ ``omega``
    holds in exact arithmetic for the float q returned: 1 − ω/p_lo less 10⁻¹² (which covers the
    rounding of the two operations, ≤ 3u); 0 when ``p_lo`` ≤ ω (nothing to give)."""
    if not p_lo > omega:
        return 0.0
    return max(0.0, (1.0 - omega / p_lo) - 1e-12)


def certify_mix(success: np.ndarray, cost: np.ndarray, omega: float, level: float, c_max: float,
                alpha: float) -> tuple[float, float, int, float, float]:
    """The certificate of the policy π from its fresh runs (``success``, ``cost``), and of the mix
    that gives up a share q of its runs at once, q set from that certificate.

    With probability at least ``level`` the one-sided Clopper–Pearson bound p_lo ≤ P(success of π);
    with probability at least 1 − ``alpha`` the empirical-Bernstein bound U ≥ E[cost of π]
    (:func:`cost_ucb`, costs in [0, ``c_max``]); both jointly with the sum of the two risks (union
    bound). On that event, for *any* q ∈ [0, 1) — in particular q = :func:`give_up_share` of p_lo,
    read from these very runs — the mix succeeds with probability (1 − q)·P(success of π) ≥
    (1 − q)·p_lo ≥ ω and costs (1 − q)·E[cost of π] ≤ (1 − q)·U on average (a run given up costs 0).
    So the share is chosen after the runs, and the whole sample certifies π.

    Returns
    -------
    q : float
        The share given up (0 when p_lo < ω: not certified).
    p_lo : float
        The mix's certified P(success): ω when a share is given up ((1 − q)·p_lo ≥ ω holds exactly),
        else p_lo itself.
    successes : int
    mean, ucb : float
        (1 − q) × the sample mean cost and × U.
    """
    n, k = int(success.size), int(np.count_nonzero(success))
    cp = clopper_pearson_lower(k, n, level) if n else 0.0
    q = give_up_share(cp, omega)
    mean, ucb = cost_ucb(cost, 1.0 - q, c_max, alpha)
    return q, (omega if q > 0 else cp), k, mean, ucb


class AdaptivePolicy(ClosedLoopPolicy):
    """The policy of a (pessimistic) chain pass, run in the closed-loop simulator.

    Decides from the run's epoch, model and observed loss (its bucket,
    :meth:`Chain.bucket`) the pass's action; the allocation is the priced x*
    rescaled to the run's remaining time (module docstring, "How the deadline
    is handled"), with safety factor ``rho``, capped at r(n):

    * ``scaling="rms"``: this epoch's compute time a (at x*) and the rest S
      (the chain's remaining compute time after it, at x*) are planned as
      a : √E[S²] — the split that minimises κc/t₁ + E[S²]/(left − t₁), i.e.
      the money of this epoch plus that of the rest when the rest is known
      after this epoch (every priced epoch has money = λ·time). It keeps
      time in reserve when another epoch is unlikely but possible.
    * ``scaling="mean"``: a : E[S] (certainty equivalence).

    ``give_up`` ∈ [0, 1) is the Beutler–Ross randomisation at the critical
    failure price: that share of the runs stops at once (cost 0, failed).
    The runs are picked by the low-discrepancy sequence frac(u₀ + i·φ) < q
    over the block's run indices i (u₀ from ``coin_seed``), independent of
    the training draws, so every block gives up a share q up to O(log n / n)
    and the simulated runs stay independent given the picks.

    ``budget``: a run whose next epoch would take its cost above it stops
    instead (and fails), so every run's cost lies in [0, budget] — the range
    the upper confidence bound on the mean cost needs (:func:`cost_ucb`).
    """

    def __init__(self, chain: Chain, p: Pass, rho: float = 0.99, name: str = "adaptive-opt (policy)",
                 scaling: str = "rms", give_up: float = 0.0, coin_seed: int = 0, budget: float = math.inf):
        if scaling not in SCALINGS:
            raise PlanError(f"scaling: must be one of {SCALINGS}, got {scaling!r}")
        if not 0.0 <= give_up < 1.0:
            raise PlanError(f"give_up: must be in [0, 1), got {give_up!r}")
        if not budget > 0:
            raise PlanError(f"budget: must be positive, got {budget!r}")
        self.chain, self.pass_, self.rho, self.name = chain, p, float(rho), name
        self.scaling, self.give_up, self.coin_seed = scaling, float(give_up), int(coin_seed)
        self.budget = float(budget)
        self.u0 = float(np.random.default_rng([self.coin_seed, 28]).random())
        self.reference_plan = None
        self.x, self.tc, _ = chain.st.priced(p.lam)
        self.calls = 0

    def datasets(self) -> dict[str, list[str]]:
        inst = self.chain.instance
        return {c.name: list(inst.all_datasets) for j, c in enumerate(inst.clusters) if self.chain.st.cap[j] > 0}

    def describe(self) -> dict:
        return {"lambda": self.pass_.lam, "mu": self.pass_.mu, "buckets": int(self.chain.L + 1),
                "loss_step": float(self.chain.h), "rho": self.rho, "scaling": self.scaling,
                "give_up": self.give_up, "budget": self.budget}

    def with_give_up(self, give_up: float) -> AdaptivePolicy:
        """The same tables and rescaling, giving up a share ``give_up`` of the runs."""
        return AdaptivePolicy(self.chain, self.pass_, self.rho, self.name, self.scaling, give_up, self.coin_seed,
                              self.budget)

    def with_budget(self, budget: float) -> AdaptivePolicy:
        """The same policy, stopping (failed) rather than start an epoch that would take
        the run's cost above ``budget``: every run then costs at most ``budget``."""
        return AdaptivePolicy(self.chain, self.pass_, self.rho, self.name, self.scaling, self.give_up,
                              self.coin_seed, budget)

    def gives_up(self, runs) -> np.ndarray:
        """Whether the runs of these indices (within a simulator block) give up at once:
        a low-discrepancy sequence in the index, independent of every draw."""
        return np.mod(self.u0 + GOLDEN * np.asarray(runs), 1.0) < self.give_up

    def decide(self, state):
        self.calls += 1
        ch = self.chain
        out = Decision.constant(state.size, STOP)
        k = state.epoch
        if k >= ch.K:
            return out
        m = ch.M if state.model is None else int(state.model)
        b = ch.bucket(state.loss)
        a, where = self._table_actions(state, k, m, b)
        if state.model is None and self.give_up > 0:
            a = np.where(self.gives_up(state.runs), -1, a)
        go = a >= 0
        if not go.any():
            return out
        m2, n2 = a[go] // ch.N, a[go] % ch.N
        out.model[go], out.cluster[go] = m2, n2
        out.allocation[go] = self._epoch_allocation(state, go, k, m, b, a, where, m2, n2)
        if math.isfinite(self.budget):
            idx = np.flatnonzero(go)
            over = state.cost[idx] + ch.st.kappa[n2] * out.allocation[idx] > self.budget
            out.model[idx[over]] = STOP
        return out

    def _table_actions(self, state, k, m, b):
        """The table's action per run (−1: stop) and what :meth:`_epoch_allocation` needs besides."""
        action = self.pass_.action
        assert action is not None and self.pass_.remaining is not None   # a policy's pass keeps its tables
        return action[k, m, b], None

    def _epoch_allocation(self, state, go, k, m, b, a, where, m2, n2) -> np.ndarray:
        """The allocation of the runs that train (``go``), on (m2, n2)."""
        remaining = self.pass_.remaining
        assert remaining is not None
        return self._allocation(m2, n2, remaining[k, m, b[go]].astype(float), state.time[go])

    def _allocation(self, m2, n2, rem, elapsed) -> np.ndarray:
        """x* scaled so the planned compute time of this epoch is ρ·left·a/plan, capped at r."""
        st = self.chain.st
        left = st.time_max / (1 + TIME_RTOL) - elapsed - rem[:, 1]
        a = self.tc[m2, n2]
        if self.scaling == "rms":
            # E[S²] = E[U²] − 2a E[U] + a² with U = a + S (the DP's rows)
            plan = a + np.sqrt(np.maximum(rem[:, 2] - 2.0 * a * rem[:, 0] + a * a, 0.0))
        else:
            plan = rem[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(left > 0, plan / (self.rho * left), np.inf)
        x = self.x[m2, n2]
        return np.minimum(np.where(np.isfinite(scale) & (scale > 0), x * scale, st.cap[n2]), st.cap[n2])


class TimedPolicy(AdaptivePolicy):
    """The policy of a pessimistic carried-deadline pass (:func:`~deplbench.formulations.adaptive.timed.timed_dp`).

    Reads the run's epoch, model, loss bucket and the grid point ⌊τ/Δ⌋ of its
    remaining time τ = Tmax − T(k); the table gives the action and the lag d,
    and the epoch's compute time is t = dΔ − s (x = c/t ≤ r by construction):
    the run lands at or above the grid point the table planned for, so it
    never misses the deadline. Give-up share and cost budget as
    :class:`AdaptivePolicy`; ``rho`` is unused (no rescaling).
    """

    def __init__(self, chain: Chain, p: Pass, points: int, name: str = "adaptive-opt (policy)",
                 give_up: float = 0.0, coin_seed: int = 0, budget: float = math.inf):
        super().__init__(chain, p, 1.0, name, "rms", give_up, coin_seed, budget)
        self.points = int(points)
        self.grid = TimeGrid.of(chain, self.points)
        _, self.planned = self.grid.charges(chain)         # (M·N, G+1): compute time t of lag d
        self.scaling = "carried"

    def describe(self) -> dict:
        return dict(super().describe(), time_points=self.points, time_step=self.grid.delta)

    def with_give_up(self, give_up: float) -> TimedPolicy:
        return TimedPolicy(self.chain, self.pass_, self.points, self.name, give_up, self.coin_seed, self.budget)

    def with_budget(self, budget: float) -> TimedPolicy:
        return TimedPolicy(self.chain, self.pass_, self.points, self.name, self.give_up, self.coin_seed, budget)

    def _table_actions(self, state, k, m, b):
        left = self.grid.deadline - state.time
        j = np.clip(np.floor(left / self.grid.delta), 0, self.points).astype(np.int64)
        action = self.pass_.action
        assert action is not None and self.pass_.remaining is not None
        return np.where(left >= 0, action[k, m, j, b], -1), j

    def _epoch_allocation(self, state, go, k, m, b, a, where, m2, n2) -> np.ndarray:
        lag = self.pass_.remaining
        assert lag is not None
        t = self.planned[a[go], lag[k, m, where[go], b[go]]]
        st = self.chain.st
        return np.minimum(st.compute[m2, n2] / t, st.cap[n2])


def frontier_levels(omega: float) -> list[float]:
    """ω and levels around it: 1 − (1 − ω)·{10, 5, 2, 1, 1/2, 1/5, 1/10, 1/100}, kept in (0, 1)
    (the strict ones give the bound at a stricter level, where a policy certified there, e.g. a
    record with a stricter ``omega``, is judged)."""
    out = sorted({round(1.0 - (1.0 - omega) * f, 12) for f in (10, 5, 2, 1, 0.5, 0.2, 0.1, 0.01)})
    return [w for w in out if 0.0 < w < 1.0]


def needed_successes(runs: int, omega: float, confidence: float) -> int:
    """Least k with clopper_pearson_lower(k, runs, confidence) ≥ ω (runs + 1 if none)."""
    lo, hi = 0, runs + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if mid <= runs and clopper_pearson_lower(mid, runs, confidence) >= omega:
            hi = mid
        else:
            lo = mid + 1
    return lo


#: Failure prices tried for the certified policy, as factors of the first price
#: at which the pessimistic chain's policy trains at all (below it, stopping at
#: the start is the chain's optimum: the critical multiplier).
MU_FACTORS = (1.0, 1.25, 2.0)


def _viable_mu(chain: Chain, lam: float, mu: float, steps: int = 12, points: int | None = None) -> tuple[float, Pass]:
    """The first μ of mu·1.25^j whose chain policy trains (P(fail) < 1 at the root):
    the pessimistic chain's critical multiplier is at or above the optimistic one."""
    for _ in range(steps):
        p = _pass(chain, lam, mu, points)
        if p.p_fail < 1.0 - 1e-9:
            return mu, p
        mu *= 1.25
    return mu, p


def _pass(chain: Chain, lam: float, mu: float, points: int | None) -> Pass:
    """A pessimistic pass with its tables: priced (λ) or, with ``points``, the deadline carried
    (after checking the deadline, :func:`deplbench.limits.check_time`)."""
    check_time(f"adaptive-opt's policy tuning, before a DP pass on {chain.i0} buckets")
    if points:
        return timed_dp(chain, mu, points, keep=True)
    return dp(chain, lam, mu, keep=True)


def tune_policy(instance, chain: Chain, lam: float, mu: float, target: float, tune_runs: int,
                tune_seed: int, rho: float, scaling: str = "rms", coin_seed: int = 0,
                points: int | None = None):
    """The certified policy: pick the pessimistic chain's policy and its share of
    runs given up at once (Beutler–Ross) so that the mix just reaches ``target``.

    Candidates are the chain's policies at the failure prices μ_c·:data:`MU_FACTORS`
    (μ_c: :func:`_viable_mu`) and ``rho`` (times :data:`RHO_FALLBACK` while none
    reaches ``target``). Each is simulated on the tuning seed ``tune_seed``; the one
    with least estimated cost/P(success) — the cost of the mix that gives up
    exactly the surplus — is kept. Its P(success) p is re-estimated on
    ``tune_seed + 1`` (draws that played no part in the choice) and the share
    given up is q = 1 − target/p, so the mix's P(success) (1 − q)·p is ≈ target
    (the tuning's mix: the bracket certifies π and sets its own share from that
    certificate, :func:`certify_mix`).
    With ``points`` the candidates are :class:`TimedPolicy` (the deadline carried on a
    grid of that many points; λ and ``rho`` unused).
    Returns (policy, tuning log, whether the target was met).
    """
    log: list[dict] = []

    def run(pol, seed, what):
        check_time(f"adaptive-opt's policy tuning, before simulation {len(log) + 1} ({tune_runs} runs)")
        r = simulate(instance, pol, tune_runs, seed)
        p_hat, (c_hat, c_sd) = r.successes / r.runs, cost_moments(r.cost)
        log.append({"mu": pol.pass_.mu, "rho": pol.rho, "give_up": pol.give_up, "seed": seed, "runs": tune_runs,
                    "p_success": p_hat, "cost_mean": c_hat, "cost_max": float(r.cost.max()),
                    "cost_sd": c_sd, "role": what})
        return p_hat, c_hat

    mu_c, first = _viable_mu(chain, lam, mu, points=points)
    passes = [first] + [_pass(chain, lam, mu_c * f, points) for f in MU_FACTORS[1:]]
    for r in RHO_FALLBACK[:1] if points else RHO_FALLBACK:
        scored: list[tuple[float, int, AdaptivePolicy]] = []
        for p in passes:
            pol = (TimedPolicy(chain, p, points, coin_seed=coin_seed) if points
                   else AdaptivePolicy(chain, p, rho * r, scaling=scaling, coin_seed=coin_seed))
            p_hat, c_hat = run(pol, tune_seed, "select")
            if p_hat >= target:
                scored.append((c_hat / p_hat, len(scored), pol))
        if scored:
            pol = min(scored)[2]
            p_hat, _ = run(pol, tune_seed + 1, "share")
            if p_hat >= target:
                return pol.with_give_up(1.0 - target / p_hat), log, True
            # deadline misses are what a failure price cannot cure: plan less of the remaining time
    return pol, log, False


__all__ = ["GOLDEN", "MU_FACTORS", "SCALINGS", "AdaptivePolicy", "TimedPolicy", "certify_mix", "cost_moments",
           "cost_ucb", "frontier_levels", "give_up_share", "needed_successes", "tune_policy"]
