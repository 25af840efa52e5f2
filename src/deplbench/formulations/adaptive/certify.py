"""The adaptive reference, part 2: the certified policy, the bracket and the frontier.

:class:`AdaptivePolicy` runs a pessimistic chain's tables in the closed-loop
simulator; :func:`tune_policy` raises its failure price on tuning seeds
only; :func:`adaptive_bounds` assembles the proven lower bound
(:mod:`deplbench.formulations.adaptive.chain`), the certification on fresh
runs (one-sided Clopper–Pearson, :mod:`deplbench.formulations.binomial`)
and the cost–risk frontier. Guarantees: package docstring
(:mod:`deplbench.formulations.adaptive`).
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.adaptive.chain import (
    Chain,
    Pass,
    applies,
    dp,
    multires_search,
)
from deplbench.formulations.allocation import TIME_RTOL
from deplbench.formulations.binomial import clopper_pearson_lower
from deplbench.formulations.closed_loop import (
    STOP,
    ClosedLoopPolicy,
    Decision,
    simulate,
)

#: Factors of ``rho`` tried in turn when tuning the failure price alone does not
#: reach the target success rate (runs that miss the deadline).
RHO_FALLBACK = (1.0, 0.95, 0.9, 0.8)


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
    success on the *tuning* runs (seed ``tune_seed``) reaches ``target``; then a few
    bisection steps back down (cheaper policies); the choice is confirmed on the
    second tuning seed ``tune_seed + 1``. Returns (policy, tuning log, whether
    the target was met)."""
    log = []

    def attempt(m, seed=tune_seed, pol=None):
        pol = pol or AdaptivePolicy(chain, dp(chain, lam, m, keep=True), rho)
        r = simulate(instance, pol, tune_runs, seed)
        log.append({"mu": m, "rho": rho, "seed": seed, "runs": tune_runs,
                    "p_success": r.successes / r.runs, "cost_mean": float(r.cost.mean())})
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
        return pol, log, False
    hi_mu, best = good
    lo_mu = bad if bad is not None else hi_mu / 16.0
    for _ in range(3):
        mid = math.sqrt(lo_mu * hi_mu)
        pol, ok = attempt(mid)
        if ok:
            hi_mu, best = mid, pol
        else:
            lo_mu = mid
    # the cheapest passing price was selected on seed tune_seed (biased towards
    # luck): confirm it on a second tuning seed, raising the price if it fails
    for _ in range(3):
        if attempt(hi_mu, tune_seed + 1, best)[1]:
            return best, log, True
        hi_mu *= 2.0
        best, _ = attempt(hi_mu)
    return best, log, False


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
        Runs per tuning simulation; tuning seeds are σ + 1 and σ + 2 — never σ,
        so certification draws are independent of those the policy was built from.
    rho : float
        Share of the remaining time the policy's allocation plans to use; when
        raising the failure price alone misses the tuning target, ρ times
        :data:`RHO_FALLBACK` is tried in turn (tuning runs only).
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
    log = []
    for r in RHO_FALLBACK:
        # deadline misses are what a failure price cannot cure: plan less of the remaining time
        policy, part, ok = tune_policy(instance, pes, best.lam, max(best.mu, 1e-6), target, tune_runs, seed + 1,
                                       rho * r)
        log += part
        if ok:
            break
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
                                 f"(seed {seed}; the policy was tuned on seeds {seed + 1} and {seed + 2})",
                       "cost_ci_method": f"normal approximation, two-sided level {confidence:g}",
                       "deadline_missed": int(res.deadline_missed.sum())},
        tuning=log,
        work={"dp_passes": len(search.passes) + len(log), "coarse_dp_passes": search.coarse_passes,
              "lower_bound_s": t_lb,
              "total_s": _time.perf_counter() - t0})


def _normal_quantile(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


__all__ = ["AdaptiveBounds", "AdaptivePolicy", "adaptive_bounds", "frontier_levels", "tune_policy"]
