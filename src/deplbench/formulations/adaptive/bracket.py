"""The adaptive reference, part 4: the bracket, its statuses and the refinement to a width.

:func:`adaptive_bounds` assembles the proven lower bound (:mod:`~deplbench.formulations.adaptive.search`),
the policy tuned and certified on fresh runs (:mod:`~deplbench.formulations.adaptive.certify`: one-sided
Clopper–Pearson on P(success), empirical Bernstein on the mean cost, jointly at the stated level) and the
monotone cost–risk frontier; refines the grid to a target width; gives every result a status with one
line; refuses grids and run counts beyond the memory budget before allocating. Guarantees: package
docstring (:mod:`deplbench.formulations.adaptive`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.adaptive.budget import (  # noqa: F401 - re-exported
    BUDGET,
    GROWTH,
    Progress,
    Tuned,
    best_tuned,
    check_certification,
    deadline_line,
    finer_bounds,
    grid_limit,
    largest_cost,
    left_or_none,
    light,
    memory_estimate,
    monotone_frontier,
    next_grid_fits,
    own_limit,
    policy_stalled,
    predicted_ucb,
    quiet,
    stopped_fields,
    timed_memory,
    within_reach,
)
from deplbench.formulations.adaptive.certify import certify_mix, cost_ucb, needed_successes, tune_policy
from deplbench.formulations.adaptive.chain import Chain, applies, best_success, build_chain
from deplbench.formulations.adaptive.search import SearchStopped, lower_bound_search, multires_search
from deplbench.formulations.adaptive.settings import (  # noqa: F401 - the grid's constants, re-exported
    CONFIDENCE,
    ITERS_LAM,
    ITERS_MU,
    MAX_BUCKETS,
    REFINE,
    RHO,
    RUNS,
    SLOPES,
    START_BUCKETS,
    THREADS,
    TUNE_RUNS,
    check_settings,
    threads_for,
)
from deplbench.formulations.adaptive.timed import (
    TIME_POINTS,
    TIMED_WORK,
    better_carried,
    timed_best_success,
    timed_search,
    timed_seconds,
    timed_work,
)
from deplbench.formulations.adaptive.waterfill import grid_passes, water_fields, waterfill_memory
from deplbench.formulations.evaluation.closed_loop import simulate
from deplbench.jsonio import number_beside, number_text
from deplbench.limits import TimeLimitReached, check_memory, check_time, deadline, memory_budget_gib, now, time_left

#: Statuses of a bracket (:attr:`AdaptiveBounds.status`); when several apply the
#: first in this order is reported (every line is kept in ``messages``).
BRACKET_STATUSES = ("certified", "unreachable", "time_limit", "multipliers_ran_away", "bound_not_positive",
                    "lambda_not_converged", "not_certified")
#: A failure price μ at or above RUNAWAY times the instance's cost scale
#: (:meth:`~deplbench.formulations.adaptive.chain.Setting.cost_scale`) whose pass still misses ω
#: counts as run away (the μ search stops growing it at :data:`~deplbench.formulations.adaptive.search.MU_CAP`
#: times the scale).
RUNAWAY = 1e10


@dataclass
class AdaptiveBounds:
    """The bracket on the adaptive optimum and what it rests on (:func:`adaptive_bounds`).

    ``status`` is one of :data:`BRACKET_STATUSES`; ``message`` its one line
    (empty when certified) and ``messages`` every line that applies.
    ``upper_bound`` is the one-sided upper confidence bound on the certified
    policy's mean cost (``cost_mean`` the sample mean); it holds jointly with
    the P(success) certificate at level ``confidence`` (union bound, each at
    1 − (1 − confidence)/2).
    """

    lower_bound: float
    upper_bound: float
    cost_mean: float
    p_success: float
    p_success_lo: float
    certified: bool
    frontier: list
    multipliers: dict
    grid: dict
    certification: dict
    tuning: list
    work: dict
    status: str = "certified"
    message: str = ""
    messages: list = field(default_factory=list)
    confidence: float = 0.95
    refinement: dict = field(default_factory=dict)
    omega: float = math.nan

    @property
    def width(self) -> float:
        """(UB − LB)/LB of a certified bracket; inf when the policy is not
        certified (its upper bound then bounds nothing), LB ≤ 0, or either
        bound is not finite."""
        ok = (self.certified and self.lower_bound > 0 and math.isfinite(self.lower_bound)
              and math.isfinite(self.upper_bound))
        return (self.upper_bound - self.lower_bound) / self.lower_bound if ok else math.inf

    def to_dict(self) -> dict:
        return {"status": self.status, "message": self.message, "messages": list(self.messages), "omega": self.omega,
                "lower_bound": self.lower_bound,
                # an uncertified policy's cost bounds nothing: kept apart, never as the UB
                "upper_bound": self.upper_bound if self.certified else None,
                "uncertified_policy_cost": None if self.certified else self.upper_bound,
                "cost_mean": self.cost_mean,
                "width": self.width, "confidence": self.confidence,
                "p_success": self.p_success, "p_success_lo": self.p_success_lo, "certified": self.certified,
                "frontier": self.frontier, "multipliers": self.multipliers, "grid": self.grid,
                "refinement": self.refinement, "certification": self.certification, "tuning": self.tuning,
                "work": self.work}


def _validate(instance, settings: dict) -> None:
    """Check :func:`adaptive_bounds`'s arguments (the instance, then :data:`~.settings.SETTINGS`,
    :func:`~.settings.check_settings`); raise PlanError naming the field."""
    ok, why = applies(instance)
    if not ok:
        raise PlanError(f"instance: {why}")
    check_settings(settings)


def tuning_target(omega: float, runs: int, tune_runs: int, level: float) -> float:
    """The P(success) a tuned candidate policy must reach on its tuning runs: the least rate ``runs``
    draws certify at ``level`` (:func:`needed_successes`) plus two standard errors of both samples
    (a filter: the share the certified mix gives up is set from its certificate, :func:`certify_mix`)."""
    need = needed_successes(runs, omega, level)
    return min(1.0, need / runs + 2.0 * math.sqrt(omega * (1 - omega) * (1.0 / tune_runs + 1.0 / runs)))


def time_points_for(chain: Chain, time_points: int | None, time_limit: float | None = None,
                    iters_mu: int = ITERS_MU) -> int:
    """Points of the remaining-time grid on ``chain`` (0: no time grid). None: the finest of
    :data:`~.timed.TIME_POINTS` (256, 128, 64) whose pass costs ≤ :data:`~.timed.TIMED_WORK` multiply–adds
    (:func:`~.timed.timed_work`) and whose passes' predicted time (:func:`~.timed.timed_seconds`) fits
    ``time_limit``."""
    if time_points is None:
        return next((g for g in TIME_POINTS if timed_work(chain, g) <= TIMED_WORK
                     and (time_limit is None or timed_seconds(chain, g, iters_mu) <= time_limit)), 0)
    return int(time_points)


def timed_memory_next(chain: Chain, buckets: int, time_points: int | None) -> float:
    """:func:`timed_memory` of the grid of ``buckets`` the refinement would build next from
    ``chain`` (0 when that grid carries no deadline), without building it: its top (L) is at most
    ``buckets`` plus the current grid's headroom above ℓ(0) scaled by the ratio of the steps."""
    head = chain.L - chain.i0 - 1                       # ⌈rise/h⌉ + …: scales with 1/h
    shape = SimpleNamespace(K=chain.K, M=chain.M, N=chain.N, kj=chain.kj,
                            L=int(buckets) + math.ceil(head * buckets / chain.i0) + 1)
    g = time_points_for(shape, time_points)             # type: ignore[arg-type]
    return timed_memory(shape, g) if g else 0.0         # type: ignore[arg-type]


def _search_at(instance, chain: Chain, omega: float, iters_lam: int, iters_mu: int, warm):
    """The multiplier search on ``chain``: multi-resolution from scratch, or warm-started
    from the previous grid's best pass (brackets grown by 1.5) with a full search as the
    fall-back when that does not converge in λ."""
    if warm is None:
        return multires_search(instance, chain, omega, iters_lam, iters_mu)
    s = lower_bound_search(chain, omega, 2, max(2, iters_mu - 2), lam0=warm.lam, mu0=warm.mu, step=1.5)
    if not s.lam_converged:
        try:
            full = lower_bound_search(chain, omega, iters_lam, iters_mu, lam0=warm.lam, mu0=warm.mu)
        except SearchStopped as exc:            # the warm-started passes are valid bounds too
            raise SearchStopped(str(exc), s.passes + exc.passes) from None
        full.passes = s.passes + full.passes
        s = full
    return s


def _tune(instance, b: int, search, warm, g: int, target: float, tune_runs: int, seed: int, rho: float,
          runs: int, alpha: float) -> Tuned:
    """Tune the certified policy on the pessimistic chain of ``b`` buckets (tuning seeds only): the
    priced policy and, with the deadline carried on this grid (``g`` > 0), the carried one too, keeping
    the one whose predicted upper bound (:func:`predicted_ucb`, tuning runs) is lower."""
    pes = build_chain(instance, b, optimistic=False)
    cands: list[tuple] = []
    for pts in ((g, 0) if g else (0,)):
        mu = _policy_mu(search, warm) if pts else max(warm.mu, 1e-6)
        pol, tl, met = tune_policy(instance, pes, warm.lam, mu, target, tune_runs, seed + 1, rho, coin_seed=seed,
                                   points=pts or None)
        share = [t for t in tl if t["role"] == "share"]
        est = predicted_ucb(share[-1], float(instance.omega), runs, alpha) if share else math.inf
        cands.append((est, len(cands), pol, [dict(t, policy="carried" if pts else "priced", buckets=b) for t in tl],
                      bool(met)))
    best = min(cands, key=lambda c: (not c[4], c[0], c[1]))
    return Tuned(best[0], best[2], best[3], b, [t for c in cands if c is not best for t in c[3]] + best[3], best[4])


def _policy_mu(search, warm) -> float:
    """The failure price the policy's tuning starts from: the carried-deadline search's best
    when it ran (its critical μ differs from the priced one), else the priced search's."""
    if search.extra:
        tm = search.chain.st.time_max
        return max(max(search.extra, key=lambda p: p.bound(search.omega, tm)).mu, 1e-6)
    return max(warm.mu, 1e-6)


@quiet
def adaptive_bounds(instance, buckets: int = START_BUCKETS, runs: int = RUNS, seed: int = 0,
                    confidence: float = CONFIDENCE, tune_runs: int = TUNE_RUNS, rho: float = RHO,
                    iters_lam: int = ITERS_LAM, iters_mu: int = ITERS_MU, width: float | None = None,
                    time_limit: float | None = None, max_buckets: int | None = None,
                    progress=None, time_points: int | None = None, slopes: int = SLOPES,
                    threads: int = THREADS) -> AdaptiveBounds:
    """Lower bound, certified policy and cost–risk frontier of ``instance`` (module docstring).

    Every setting's default and limits are those of
    :data:`~deplbench.formulations.adaptive.settings.SETTINGS`, as for the
    ``adaptive-opt`` solver and ``deplbench adaptive``.

    Parameters
    ----------
    instance : Instance
        Must satisfy :func:`applies`.
    buckets : int
        Loss buckets between ℓmax and ℓ(0) (both chains); with ``width``, those of the first grid.
    runs, seed : int
        Fresh closed-loop runs certifying the policy and their seed σ.
    confidence : float
        Joint level of the bracket: the one-sided Clopper–Pearson bound on
        P(success) and the empirical-Bernstein upper bound on the mean cost
        (:func:`cost_ucb`) each hold at 1 − (1 − confidence)/2, so both
        together at ``confidence`` (union bound). The lower bound is proven.
    tune_runs : int
        Runs per tuning simulation; tuning seeds are σ + 1 and σ + 2 — never σ,
        so certification draws are independent of those the policy was built from.
        A candidate policy is kept only if its tuning runs reach the least rate
        that certifies on ``runs`` draws plus two standard errors of both samples.
    rho : float
        Share of the remaining time the policy's allocation plans to use; when
        no candidate reaches the tuning target, ρ times :data:`RHO_FALLBACK`
        is tried in turn (tuning runs only).
    iters_lam, iters_mu : int
        Steps of the multiplier search (any multiplier gives a valid bound;
        more steps only tighten it).
    width : float, optional
        Target (UB − LB)/LB. The grid is refined (×2 buckets, each search
        warm-started from the last grid's multipliers) until the *estimated*
        width — LB against the upper bound predicted from the tuning seeds
        (:func:`predicted_ucb`: their mean cost plus the confidence margin the
        certification runs would add) — is ≤ ``width`` ("width"), or the next grid is
        predicted to end after the deadline (:func:`next_grid_fits`; "time_limit"), or
        the next grid exceeds the memory budget or ``max_buckets`` ("memory_limit",
        "max_buckets"), or a tuning gained nothing on the best earlier one
        (:func:`~deplbench.formulations.adaptive.budget.policy_stalled`; "policy")
        — ``refinement["stopped_by"]``. Then the tuned policy with the least
        prediction (:func:`~deplbench.formulations.adaptive.budget.best_tuned`,
        ``multipliers["buckets_policy"]``) is certified, once, on the certification
        seed: neither rule reads those draws, so one certificate at the stated
        level is valid. Stopped by "time_limit" or "policy" short of the width,
        the time left goes to lower-bound-only grids (``refinement["bound_only"]``,
        :func:`~deplbench.formulations.adaptive.budget.finer_bounds`). None: one grid.
    time_limit : float, optional
        Wall-clock seconds, the outer stop of the whole bracket (or an enclosing
        deadline, a sweep task's stop, when that ends first): past it the result
        has status ``time_limit``, the best proven lower bound so far and no
        upper bound (what is guaranteed: :mod:`~deplbench.formulations.adaptive.budget`).
        ``inf`` is no limit, as None. An explicit ``time_points`` whose first grid's carried passes
        cannot fit in it (:func:`~deplbench.formulations.adaptive.timed.timed_seconds`)
        is refused up front; a default one is not chosen.
    max_buckets : int, optional
        Finest grid the refinement may use (default :data:`MAX_BUCKETS`).
    progress : callable, optional
        Called with one line of text per grid (the CLI prints it on stderr).
    time_points : int, optional
        Points G of the remaining-time grid on which the deadline is carried
        (:mod:`~deplbench.formulations.adaptive.timed`): the lower bound is then
        the larger of the priced and the carried bounds (both valid) and the
        certified policy reads its tables (:class:`~deplbench.formulations.adaptive.certify.TimedPolicy`).
        0: no time grid (the deadline priced, and carried by water-filling unless ``slopes`` is 0).
        None (default): G = 256, 128 or 64, the finest whose pass is cheap on the first grid
        (:func:`time_points_for`), else 0, kept on finer grids.
    slopes : int
        Slopes J of the water-filling bound (:mod:`~deplbench.formulations.adaptive.waterfill`, the
        deadline carried exactly), on every grid whose pass fits the memory budget
        (:func:`~deplbench.formulations.adaptive.waterfill.grid_passes`); 0: not computed.
    threads : int
        Threads of the water-filling pass (0: one per core available); the same result on the same grids.

    Returns
    -------
    AdaptiveBounds
        ``status``, one of :data:`BRACKET_STATUSES` (package docstring, "Statuses"):
        "time_limit" (stopped by the deadline: the best proven bound so far, nothing
        certified), "unreachable" (proven; when no epoch fits in Tmax or the optimistic chain's
        highest P(success) is below ω no search is run and LB = +inf; else the
        proven LB exceeds the dearest run any policy can have), "multipliers_ran_away",
        "bound_not_positive", "lambda_not_converged", "not_certified" or "certified".
        A later grid that would exceed the memory budget is not built: the
        refinement stops (``refinement["stopped_by"] == "memory_limit"``).

    Raises
    ------
    PlanError
        The instance is outside :func:`applies` (the reason, one line), an argument is invalid,
        or an explicit ``time_points`` cannot fit in ``time_limit``.
    MemoryLimitExceeded
        The first grid or the simulated runs would exceed the memory budget
        (:func:`deplbench.limits.check_memory`; estimate :func:`memory_estimate`).
    """
    _validate(instance, dict(buckets=buckets, runs=runs, seed=seed, confidence=confidence, tune_runs=tune_runs,
                             rho=rho, iters_lam=iters_lam, iters_mu=iters_mu, width=width, time_limit=time_limit,
                             max_buckets=max_buckets, time_points=time_points, slopes=slopes, threads=threads))
    if time_limit is not None and math.isinf(time_limit):
        time_limit = None       # no limit: then the bracket's own, for the time left to the bound (own_limit)
    state = Progress(now())
    with deadline(time_limit):
        try:
            # the estimate reads every switch law's jump quantile (chain.jump_rise), checking the deadline
            check_memory(memory_estimate(instance, buckets, runs, tune_runs),
                         f"adaptive-opt's loss grid and runs (buckets = {buckets}, K̄ = {instance.horizon}, "
                         f"runs = {max(runs, tune_runs)})", "use fewer buckets or runs")
            return _bracket(instance, buckets, runs, seed, confidence, tune_runs, rho, iters_lam, iters_mu, width,
                            time_limit, max_buckets, progress, time_points, state, slopes, threads_for(threads))
        except TimeLimitReached as exc:
            return AdaptiveBounds(**stopped_fields(instance, state, exc, confidence, width, time_limit))


def _bracket(instance, buckets: int, runs: int, seed: int, confidence: float, tune_runs: int, rho: float,
             iters_lam: int, iters_mu: int, width: float | None, time_limit: float | None,
             max_buckets: int | None, progress, time_points: int | None, state: Progress,
             slopes: int = SLOPES, threads: int = 1) -> AdaptiveBounds:
    """The body of :func:`adaptive_bounds` under its deadline; what it finishes is kept in ``state``."""
    say = progress or (lambda line: None)
    omega, t0 = float(instance.omega), state.t0
    level = 1.0 - (alpha := (1.0 - confidence) / 2.0)      # alpha: each of the bracket's two statements
    opt = state.opt = build_chain(instance, buckets, optimistic=True)
    check_time(f"adaptive-opt, before the reachability pass (the optimistic chain's best P(success)) on {buckets} "
               "buckets")
    reach, reach_err = best_success(opt)
    # a default G is chosen on the first grid, within the time left (the time limit, or an outer stop)
    g0 = time_points_for(opt, time_points, left_or_none(), iters_mu)
    if time_points and time_limit is not None and timed_seconds(opt, g0, iters_mu) > time_limit:
        raise PlanError(f"time_points: {g0} time points at {buckets} buckets cost {timed_work(opt, g0):.2g} "
                        f"multiply–adds per pass, about {timed_seconds(opt, g0, iters_mu):.3g} s for the "
                        f"grid's passes, beyond time_limit = {time_limit:g} s; use fewer time points or buckets "
                        f"(0: no time grid; default: chosen where affordable)")
    time_points = g0        # and kept on finer grids (the refinement's clock weighs their passes)
    line, timed_check = "", False
    fastest = opt.st.fastest_epoch()
    if not fastest <= opt.st.time_max:
        # ℓ(0) > ℓmax (applies), so a run that cannot finish one epoch within Tmax never succeeds
        line = (f"no policy reaches P(success) ≥ ω = {number_text(omega)} within Tmax = "
                f"{number_text(instance.time_max)}: no epoch fits in it (the fastest, at x = r, takes "
                f"{number_beside(fastest, instance.time_max)})")
    elif reach + reach_err < omega:
        line = (f"no policy reaches P(success) ≥ ω = {number_text(omega)}: the optimistic chain's best is "
                f"{number_beside(reach, omega)} (deadline and cost ignored; {buckets} loss buckets)")
    elif g0:
        check_memory(timed_memory(opt, g0), f"adaptive-opt's carried deadline ({g0} time points, {buckets} buckets)",
                     "use fewer time points (--time-points 0: no time grid)")
        # the deadline carried on every run (one P(fail)-only pass): a target the deadline
        # makes unreachable is proven so here, before any multiplier search can run away
        check_time(f"adaptive-opt, before the deadline-aware reachability pass on {buckets} buckets")
        reach, reach_err = timed_best_success(opt, g0)
        timed_check = True
        if reach + reach_err < omega:
            line = (f"no policy reaches P(success) ≥ ω = {number_text(omega)} within Tmax = "
                    f"{number_text(instance.time_max)}: the optimistic chain's best is "
                    f"{number_beside(reach, omega)} (deadline carried on {g0} time points, cost ignored; "
                    f"{buckets} loss buckets)")
    if line:
        return AdaptiveBounds(
            lower_bound=math.inf, upper_bound=math.nan, cost_mean=math.nan, p_success=math.nan,
            p_success_lo=math.nan, certified=False, frontier=[], multipliers={},
            grid=opt.grid(),
            certification={}, tuning=[], work={"dp_passes": int(timed_check),
                                               "total_s": now() - t0},
            status="unreachable", message=line, messages=[line], confidence=confidence, omega=omega,
            refinement={"best_success": reach, "best_success_error": reach_err,
                        "time_points": g0 if timed_check else 0})
    target = tuning_target(omega, runs, tune_runs, level)
    own = own_limit(time_limit)             # the time left is the bracket's to spend on the bound alone
    cap = state.cap = MAX_BUCKETS if max_buckets is None else int(max_buckets)
    levels: list[dict] = state.levels
    log: list = state.log
    warm, search, policy, est_ub, stopped = None, None, None, math.inf, "one grid"
    carried: tuple = ([], 0, 0)                         # the last carried-deadline passes, G, buckets
    water, ratio, wf_s = None, None, math.inf           # the best water-filling pass, its μ's ratio, wall s
    grid_s: list[float] = []                            # each grid's search seconds
    tune_s: list[float] = []                            # each tuning's seconds
    tune_b = policy_b = int(buckets)                    # the grid of the last tuning, of the policy kept
    sim_rate = math.inf                                 # tuning runs simulated per second
    n_passes, coarse_passes = int(timed_check), 0      # the deadline-aware check is a pass too
    kept_log: list = []                                 # the tuning entries of the policy certified
    tunings: list[Tuned] = []                           # every tuning of the refinement
    b = int(buckets)

    def tune_grid() -> tuple:
        """Tune grid ``b`` (its search's multipliers) and record it: the tuning's runs simulated per second,
        then the tuning to certify (:func:`~deplbench.formulations.adaptive.budget.best_tuned`)."""
        t_tune = now()
        tunings.append(_tune(instance, b, search, warm, g, target, tune_runs, seed, rho, runs, alpha))
        tune_s.append(now() - t_tune)
        log.extend(tunings[-1].log)
        return max(sum(t["runs"] for t in tunings[-1].log), 1) / max(tune_s[-1], 1e-9), *best_tuned(tunings)

    while True:
        t_level = now()
        if b != buckets:
            opt = state.opt = build_chain(instance, b, optimistic=True)
        search = _search_at(instance, opt, omega, iters_lam, iters_mu, warm)
        state.priced.extend(light(search.passes))
        n_passes += len(search.passes)
        coarse_passes += search.coarse_passes
        warm = search.best
        g = time_points_for(opt, time_points)
        if g:
            check_memory(timed_memory(opt, g), f"adaptive-opt's carried deadline ({g} time points, {b} buckets)",
                         "use fewer time points (--time-points 0: no time grid)")
            timed = timed_search(opt, omega, g, iters_mu + 2)
            state.carried.extend(light(timed.passes))
            carried = better_carried(carried, timed, b)     # any grid's passes bound the same optimum
            n_passes += len(timed.passes)
        search.extra = carried[0]
        if slopes and waterfill_memory(opt, slopes) <= memory_budget_gib() * 2**30:
            wf_s = now()
            wps, ratio = grid_passes(opt, omega, warm, slopes, ratio, keep=state.water, threads=threads)
            wf_s = now() - wf_s
            n_passes += len(wps)
            # any grid's pass bounds the same optimum
            water = max(wps + ([water] if water else []), key=lambda p: p.bound(omega), default=None)
        search.water = [water] if water else []
        lb = search.bound()
        t_lb = now() - t_level
        grid_s.append(t_lb)
        tuned = False
        est_w = (est_ub - lb) / lb if lb > 0 and math.isfinite(est_ub) else math.inf
        # re-tune when the target looks within reach, the bound has stalled (the gap is the policy's), or every 2nd grid
        gain = lb - levels[-1]["lower_bound"] if levels else 0.0
        stalled = bool(levels) and gain < 0.25 * (est_ub - lb)
        since = next((i for i, lv in enumerate(reversed(levels)) if lv["tuned"]), len(levels))
        if width is None or policy is None or within_reach(est_w, gain, lb, width) or stalled or since >= 1:
            (sim_rate, est_ub, policy, kept_log, policy_b), tune_b = tune_grid(), b
            tuned = True
            est_w = (est_ub - lb) / lb if lb > 0 and math.isfinite(est_ub) else math.inf
        elapsed = now() - t0
        levels.append({"buckets": b, "lower_bound": lb, "upper_bound_estimate": est_ub, "width_estimate": est_w,
                       "tuned": tuned, "lambda_converged": search.lam_converged, "dp_passes": len(search.passes),
                       "seconds": now() - t_level})
        say(f"adaptive: {b} buckets: LB {lb:.6g}, UB ≈ {est_ub:.6g} (predicted from tuning runs), width ≈ "
            f"{100 * est_w:.3g} %, {elapsed:.1f} s")
        if width is None:
            break
        if est_w <= width and tuned:
            stopped = "width"
            break
        if own and tuned and water is not None and water.bound(omega) >= lb and policy_stalled(tunings, width):
            # finer grids would re-tune a policy no better: the time left goes to the bound alone
            stopped = "policy"
            break
        nxt = b * REFINE
        if limit := grid_limit(opt, nxt, cap, runs, tune_runs, timed_memory_next(opt, nxt, time_points)):
            stopped = limit
        elif not next_grid_fits(time_left(), grid_s, tune_s, runs / sim_rate,
                                round(math.log(nxt / tune_b, REFINE)))[0]:
            stopped = "time_limit"
        else:
            b = nxt
            continue
        # the finest grid is tuned too, unless its tuning (predicted as next_grid_fits does) and the
        # certification would pass the time left; the best-predicted tuned policy is certified
        retune = GROWTH ** max(round(math.log(b / tune_b, REFINE)), 1) * tune_s[-1] + runs / sim_rate
        if not tuned and retune <= time_left():
            (sim_rate, _, policy, kept_log, policy_b), tune_b = tune_grid(), b
        break
    t_lb_total = sum(lv["seconds"] for lv in levels)
    # The cost range of the upper confidence bound: BUDGET × the largest cost of the
    # tuning runs of the policy certified (tuning seeds only), enforced by the policy itself;
    # never above K̄ epochs at x = r on the dearest cluster.
    c_max = ceiling = largest_cost(instance)
    seen = [t["cost_max"] for t in kept_log if t["role"] == "share" and t["cost_max"] > 0]
    if seen:
        c_max = min(c_max, BUDGET * seen[-1])
        policy = policy.with_budget(c_max)
    check_certification(runs, runs / sim_rate, policy_b)
    # The certified policy is the mix: give up at once with probability q, else run the chain's
    # policy π. Every fresh run is a run of π; q is set from their certificate (certify_mix).
    res = simulate(instance, policy.with_give_up(0.0), runs, seed, level)
    q, p_lo, k, mean, ucb = certify_mix(res.success, res.cost, omega, level, c_max, alpha)
    policy = policy.with_give_up(q)
    # the time a stopped refinement has left goes to the bound alone (the certified policy would not change)
    short = own and stopped in ("time_limit", "policy") and ucb > (1.0 + (width or 0.0)) * search.bound()
    gain = levels[-1]["lower_bound"] - levels[-2]["lower_bound"] if len(levels) > 1 else None
    opt, finer = (finer_bounds(opt, b, omega, search.bound(), warm, slopes, ratio, state.water, threads, cap, wf_s,
                               runs, tune_runs, say, ucb / (1.0 + (width or 0.0)), gain) if short else (opt, []))
    n_passes += sum(r["finished"] for r in finer)
    water = max(state.water, key=lambda p: p.bound(omega), default=None)
    search.water = [water] if water else []
    # the pass whose bound is reported (priced or carried): its multipliers and rounding are reported with it
    tm = opt.st.time_max
    best = max(search.passes + search.extra + search.water, key=lambda p: p.bound(omega, tm))
    source = "carried" if any(best is p for p in search.extra) else "waterfill" if best is water else "priced"
    lower = search.bound()
    priced = search.priced_bound()
    certified = bool(p_lo >= omega)
    messages = []
    if not (math.isfinite(lower) and lower > 0):
        why = ("every unit cost κ is 0, so 0 may be the optimum; a width relative to it is undefined"
               if not np.any(opt.st.kappa > 0)
               else "the multiplier search found no useful (λ, μ); try more --iters-lam or buckets")
        messages.append(("bound_not_positive", f"the lower bound is {lower:.6g}: not a positive finite bound "
                         f"({why})"))
    if math.isfinite(lower) and lower > ceiling:
        # weak duality: a feasible problem's optimum is at most its dearest run, so a proven
        # bound beyond that proves that no policy is feasible
        messages.append(("unreachable", f"no policy reaches P(success) ≥ ω = {number_text(omega)} within Tmax = "
                         f"{number_text(instance.time_max)}: the proven lower bound {number_beside(lower, ceiling)} "
                         f"(λ = {best.lam:.4g}, μ = {best.mu:.4g}) exceeds {number_text(ceiling)}, the dearest run "
                         f"any policy can have (K̄ epochs at x = r on the dearest cluster)"))
    elif (pb := search.best).mu >= RUNAWAY * opt.st.cost_scale() and pb.p_fail > 1.0 - omega + pb.err_fail:
        # μ grown to its cap with ω still missed, yet the bound proves nothing beyond the dearest run
        what = ("the policy certified shows ω is reachable" if certified
                else "ω may be out of reach within Tmax, but that is not proven")
        messages.append(("multipliers_ran_away", f"the multiplier search ran away (λ = {pb.lam:.4g}, μ = "
                         f"{pb.mu:.4g}, its cap, with the chain's P(fail) {number_beside(pb.p_fail, 1.0 - omega)}"
                         f" still above 1 − ω): the bound {number_beside(lower, ceiling)} is valid but no cost "
                         f"estimate, and not above {number_text(ceiling)}, the dearest run ({what})"))
    # the λ search sets the priced bound and the water-filling tangent; the carried bound needs no λ
    if not search.lam_converged and source != "carried":
        pb = search.best
        messages.append(("lambda_not_converged", f"the time-price search did not converge (E[T] = "
                         f"{pb.time:.6g} against Tmax = {number_text(instance.time_max)} at λ = {pb.lam:.4g}); "
                         f"the lower bound {lower:.6g} is valid but may be loose"))
    if not certified:
        messages.append(("not_certified", f"the policy's P(success) ≥ ω is not certified (lower bound "
                         f"{number_beside(p_lo, omega, 4)} < ω = {number_text(omega)})"))
    messages.sort(key=lambda m: BRACKET_STATUSES.index(m[0]))      # the first in BRACKET_STATUSES is reported
    status = messages[0][0] if messages else "certified"
    lines = [m for _, m in messages]
    refinement = {"width_target": width, "stopped_by": stopped, "levels": levels, "time_limit": time_limit,
                  "max_buckets": cap if width is not None else None, "bound_only": finer}
    return AdaptiveBounds(
        lower_bound=lower, upper_bound=ucb, cost_mean=mean,
        p_success=(1.0 - q) * k / runs, p_success_lo=p_lo, certified=certified,
        frontier=monotone_frontier(search, omega),
        multipliers={"lambda": best.lam, "mu": best.mu, "lambda_policy": policy.pass_.lam,
                     "mu_policy": policy.pass_.mu, "rho_policy": policy.rho, "buckets_policy": policy_b,
                     "give_up": policy.give_up, "scaling": policy.scaling, "budget": policy.budget,
                     "lambda_converged": search.lam_converged,
                     "deadline": deadline_line(carried[1], carried[2], water),
                     "time_points": carried[1], "time_points_policy": getattr(policy, "points", 0),
                     "lower_bound_priced": priced,
                     "lower_bound_carried": max((p.bound(omega, opt.st.time_max) for p in search.extra),
                                                default=None),
                     **water_fields(water, ratio, omega, tm),
                     "rounding_bound": best.err, "lower_bound_source": source},
        grid=opt.grid(),
        certification={"runs": runs, "seed": seed, "kept_runs": runs, "successes": k, "confidence": confidence,
                       "level_each": level,
                       "method": f"(1 − give_up) × one-sided Clopper–Pearson lower bound at level "
                                 f"{number_text(level)} on the fresh runs of the policy (seed {seed}; the policy "
                                 f"was tuned on seeds {seed + 1} and {seed + 2}); give_up, set after the runs, "
                                 f"is the largest share with (1 − give_up) × that bound ≥ ω (0 when the bound is "
                                 f"below ω), so the mix is certified at ω (valid whatever the share)",
                       "cost_method": f"(1 − give_up) × one-sided empirical-Bernstein upper bound (Maurer & "
                                      f"Pontil 2009) at level {number_text(level)} on the same runs, costs in "
                                      f"[0, {c_max:.6g}] (the policy's cost budget); jointly with P(success) at "
                                      f"{number_text(confidence)} (union bound)",
                       "largest_cost": c_max, "deadline_missed": int(res.deadline_missed.sum())},
        tuning=log,
        work={"dp_passes": n_passes + len(log), "coarse_dp_passes": coarse_passes, "grids_s": t_lb_total,
              "total_s": now() - t0},
        status=status, message=lines[0] if lines else "", messages=lines, confidence=confidence,
        refinement=refinement, omega=omega)


__all__ = ["BRACKET_STATUSES", "BUDGET", "GROWTH", "MAX_BUCKETS", "START_BUCKETS", "AdaptiveBounds",
           "adaptive_bounds", "next_grid_fits",
           "cost_ucb", "largest_cost", "memory_estimate", "monotone_frontier", "time_points_for", "timed_memory",
           "tuning_target"]
