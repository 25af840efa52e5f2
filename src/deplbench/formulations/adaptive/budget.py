"""The adaptive reference, part 6: what a bracket may spend — memory and time.

Memory is estimated from the shapes before anything is allocated
(:func:`memory_estimate`, :func:`timed_memory`). Time: the bracket's
``time_limit`` is the outer stop of the whole solve, read with any
enclosing deadline (a sweep task's stop) on :func:`deplbench.limits.now`,
whose clock a test can inject (:func:`deplbench.limits.use_clock`). Every
grid build (:func:`~.chain.build_chain`), DP pass and tuning simulation
checks it before it starts, and the two reachability passes (run before
any bound exists) before every backward step; a stopped run keeps what it
finished (:class:`Progress`, :func:`stopped_fields`), and the refinement
starts a grid only when its predicted end fits (:func:`next_grid_fits`).

What is guaranteed: past the deadline no grid build, DP pass, step of a
reachability pass or tuning simulation starts, and the result has status
``time_limit`` with the best lower bound of the passes finished (each one
proven) and no upper bound; the certification, one simulation finished
once started, starts only when predicted to end in time
(:func:`check_certification`). A run therefore passes its limit by at most
one grid build, DP pass or tuning simulation, or the error of that prediction. Other guarantees: package docstring
(:mod:`deplbench.formulations.adaptive`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from deplbench.formulations.adaptive.certify import AdaptivePolicy, frontier_levels, give_up_share
from deplbench.formulations.adaptive.chain import Chain, build_chain, chain_refused, jump_rise
from deplbench.formulations.adaptive.search import Search, SearchStopped
from deplbench.formulations.adaptive.settings import REFINE
from deplbench.formulations.adaptive.waterfill import grid_passes, waterfill_memory
from deplbench.formulations.evaluation.binomial import clopper_pearson_lower
from deplbench.limits import TimeLimitReached, check_time, memory_budget_gib, now, time_left, time_limit_s

#: Bytes per simulated run kept until the end (loss, cost, time, epochs, flags), counted twice
#: (the blocks and their concatenation).
RUN_BYTES = 2 * (4 * 8 + 4)


def largest_cost(instance) -> float:
    """Largest cost any run of an :class:`AdaptivePolicy` can have: K̄ epochs at x ≤ r(n)
    on the dearest usable cluster (the allocation is capped at r, eq. (2))."""
    kr = np.asarray(instance.unit_cost, dtype=float) * np.asarray(instance.capacity, dtype=float)
    return float(instance.horizon) * float(kr.max()) if kr.size else 0.0


def memory_estimate(instance, buckets: int, runs: int, tune_runs: int) -> float:
    """Peak bytes of :func:`~.bracket.adaptive_bounds` at one grid, estimated from the shapes alone.

    The largest arrays: the pessimistic chain's policy tables (action int32 and three
    float32 remaining-time moments per state, (K̄, |M| + 1, L + 1)), three of them alive
    while the policy is tuned plus one for the certified policy; one DP epoch's stacked
    FFT operands (|M|·|N| rows of five quantities over an FFT length ≤ 2(L + 1), real,
    complex and output copies); the simulated runs' records. L is the grid's buckets
    plus the switch-jump headroom, computed as :class:`~deplbench.formulations.adaptive.chain.Chain`
    does (no kernel is built).
    """
    K, M, N = int(instance.horizon), len(instance.models), int(instance.n_clusters)
    span = float(instance.initial_loss - instance.loss_max)
    rise = jump_rise(instance, M)
    L1 = float(buckets) * (1.0 + rise / span) + 2.0 if span > 0 else float(buckets) + 2.0
    tables = 4 * 16.0 * K * (M + 1) * L1
    fft = 6 * 8.0 * M * N * 5 * 2 * L1
    sims = RUN_BYTES * float(max(runs, tune_runs))
    return tables + fft + sims


def timed_memory(chain: Chain, points: int) -> float:
    """Peak bytes of the carried-deadline passes: three policy tables (two int32 per state and
    time point) and one epoch's FFT operands (rows × time points × 2 quantities, six copies)."""
    g1, l1 = float(points + 1), float(chain.L + 1)
    rows = chain.M * chain.N + len(chain.kj) * chain.N
    return 3 * 8.0 * chain.K * (chain.M + 1) * g1 * l1 + 6 * 8.0 * rows * g1 * 2 * 2 * l1


def monotone_frontier(search, omega: float) -> list[dict]:
    """The proven frontier at :func:`frontier_levels`: at each level the best bound at that
    level or any looser one (the optimum does not decrease with the required P(success))."""
    out, best = [], -math.inf
    for w in frontier_levels(omega):
        best = max(best, search.bound(w))
        out.append({"omega": w, "lower_bound": best})
    return out


#: The certified policy's cost budget, as a multiple of the largest cost seen on the
#: tuning seeds (:meth:`AdaptivePolicy.with_budget`).
BUDGET = 2.0
#: Least factor by which the refinement predicts a grid's search time to grow on the next,
#: twice finer grid (a pass is an FFT correlation per row: a little over ×2); the measured
#: ratio of the last two grids replaces it when larger (:func:`next_grid_fits`).
GROWTH = 2.5


def next_grid_fits(left: float, grid_s: list[float], tune_s: list[float], cert_s: float,
                   tune_steps: int = 1) -> tuple[bool, float]:
    """Whether the refinement may start the next grid, and the seconds it predicts for the rest.

    The rest is the next grid's search and tuning, and the final certification
    (done once, at the end, whatever the grid): g × ``grid_s[-1]`` +
    g^``tune_steps`` × ``tune_s[-1]`` + ``cert_s``, with g = max(:data:`GROWTH`,
    ``grid_s[-1] / grid_s[-2]``) — the growth of the search time measured
    between the last two grids, which under a machine's load can exceed the
    arithmetic's ×2. The tuning is scaled by the same g for every grid
    between the last tuning's and the next: its DP passes grow as the
    search's do, its simulations do not, so this errs on the long side.

    Parameters
    ----------
    left : float
        Seconds until the deadline (:func:`deplbench.limits.time_left`: the
        bracket's ``time_limit`` or an outer stop, whichever ends first; inf without one).
    grid_s : list of float
        Seconds of each grid's multiplier searches so far (the last grid's last).
    tune_s : list of float
        Seconds of each tuning so far (the last one's last; empty: none yet).
    cert_s : float
        Predicted seconds of the certification: its runs at the simulation rate
        of the last tuning (whose time includes its DP passes: again on the long side).
    tune_steps : int, default 1
        Grids (×2 each) from the last tuning's grid to the next one: 2 when the
        last grid was not tuned (the refinement tunes at least every second grid).

    Returns
    -------
    (bool, float)
        True when the prediction ends within ``left``; the prediction.

    Notes
    -----
    What it guarantees: the refinement never *starts* a grid predicted to
    end, certification included, after the deadline. The prediction comes
    from times measured in the same run; every DP pass and tuning simulation
    still checks the deadline before it starts (:func:`~.bracket.adaptive_bounds`).
    """
    ratio = grid_s[-1] / grid_s[-2] if len(grid_s) >= 2 and grid_s[-2] > 0 else 0.0
    g = max(GROWTH, ratio)
    need = g * grid_s[-1] + g ** max(int(tune_steps), 1) * (tune_s[-1] if tune_s else 0.0) + cert_s
    return need <= left, need


def check_certification(runs: int, cert_s: float, buckets: int) -> None:
    """Refuse to start the certification past the deadline or when it is predicted to end after it.

    The certification is one simulation of ``runs`` runs, finished once
    started, so it starts only when its predicted ``cert_s`` seconds (the runs
    at the tuning's simulation rate) fit in the time left.

    Raises
    ------
    TimeLimitReached
        The deadline passed, or ``cert_s`` exceeds the time left (the message says both numbers).
    """
    check_time(f"adaptive-opt, before certifying the policy of {buckets} buckets")
    left = time_left()
    if cert_s > left:
        raise TimeLimitReached(f"time limit {time_limit_s():g} s: certifying the policy on {runs} runs would take "
                               f"about {cert_s:.3g} s at the tuning's rate, beyond the {max(left, 0.0):.3g} s left")


def predicted_ucb(share: dict, omega: float, runs: int, alpha: float) -> float:
    """The upper confidence bound the certification would give if its runs looked like the
    tuning run ``share`` (:func:`~.certify.certify_mix`): (1 − q)·(mean + the empirical-Bernstein
    margin of :func:`cost_ucb` at n = ``runs``, range BUDGET × the run's largest cost), plus two
    standard errors of the difference between the tuning's mean and the certification's, with
    q = :func:`~.certify.give_up_share` of the Clopper–Pearson bound (level 1 − ``alpha``) at the
    tuning's P(success) less two standard errors of that difference too (the certified width then
    meets a target the prediction met, but for a 2.3 % chance on either side). An estimate from
    tuning draws only: it decides the refinement, never the bracket."""
    n = max(2.0, float(runs))
    ln = math.log(2.0 / alpha)
    margin = share["cost_sd"] * math.sqrt(2.0 * ln / n) + 7.0 * BUDGET * share["cost_max"] * ln / (3.0 * (n - 1))
    spread = 2.0 * math.sqrt(1.0 / max(share["runs"], 2) + 1.0 / n)
    p = share["p_success"]
    p_cert = min(1.0, max(0.0, p - spread * math.sqrt(p * (1.0 - p))))
    q = give_up_share(clopper_pearson_lower(math.floor(p_cert * runs), runs, 1.0 - alpha), omega)
    return (1.0 - q) * (share["cost_mean"] + margin + spread * share["cost_sd"])


class Tuned(NamedTuple):
    """One tuning of the refinement: its predicted upper bound (:func:`predicted_ucb`, tuning runs
    only), the policy kept (None once another tuning's is preferred: :func:`best_tuned`), that
    policy's tuning entries, the grid's buckets, every entry of the tuning (the kept policy's last)
    and whether it met its tuning target."""

    ucb: float
    policy: AdaptivePolicy | None
    kept: list
    buckets: int
    log: list
    met: bool = True


def best_tuned(tunings: list[Tuned]) -> tuple[float, AdaptivePolicy, list, int]:
    """The tuning whose policy the bracket certifies: one that met its tuning target before one that
    did not, then the least predicted upper bound, then the finer grid. The choice reads tuning runs
    only (seeds other than the certification's), so the one certificate on fresh runs stays valid
    whichever grid's policy it picks. Returns its predicted upper bound, policy, policy's tuning
    entries and grid; the other tunings' policies are dropped from ``tunings`` (their tables would
    only hold memory)."""
    best = min(reversed(tunings), key=lambda t: (not t.met, t.ucb))
    tunings[:] = [t if t is best else t._replace(policy=None, kept=[]) for t in tunings]
    if best.policy is None:
        raise ValueError("tunings: the best tuning's policy was dropped")
    return best.ucb, best.policy, best.kept, best.buckets


#: A tuning that lowers the best predicted upper bound so far by less than this share of it is no
#: gain: the policy has stalled (:func:`policy_stalled`).
POLICY_GAIN = 1e-3


def policy_stalled(tunings: list[Tuned], width: float | None) -> bool:
    """Whether the last tuning left the certified policy where it was: with a target ``width``, it
    met its tuning target and its predicted upper bound is not below the best earlier one that met
    its own (finite) by more than :data:`POLICY_GAIN` of it.

    Finer grids tune the policy on a finer pessimistic chain; once one does not gain, a refinement
    whose bound is the water-filling one stops (``stopped_by`` "policy") and the time left goes to
    that bound alone (:func:`finer_bounds`): on the realistic families the policy stops gaining on
    coarse grids while the bound still rises (docs/adaptive.md, "Where the width comes from")."""
    if width is None or len(tunings) < 2 or not tunings[-1].met:
        return False
    before = min((t.ucb for t in tunings[:-1] if t.met), default=math.inf)
    return math.isfinite(before) and not tunings[-1].ucb < before * (1.0 - POLICY_GAIN)


def within_reach(est_w: float, gain: float, lb: float, width: float) -> bool:
    """Whether a grid's estimated width ``est_w`` looks within reach of the target ``width`` (a
    refinement to a width; without one every grid is tuned), so that the grid's policy is tuned (and a
    stalled one seen while time is left for the bound alone): within twice the width, or within it
    once the bound ``lb`` has gained as much again as the last doubling of the grid gave (``gain``):
    the gains about halve with each doubling, so that is their extrapolated sum (docs/adaptive.md,
    "Where the width comes from"). False without a positive bound (no relative width); an infinite
    or NaN ``est_w`` compares False, and a falling bound (``gain`` < 0) only moves the estimate away."""
    return bool(lb > 0 and (est_w <= 2.0 * width or est_w - gain / lb <= width))


#: A lower-bound-only grid (:func:`finer_bounds`) is followed by a finer one only when it raised the
#: bound by more than this share of it: below, the grid no longer matters (a rounding-level change).
FINER_GAIN = 1e-6
#: Factor by which :func:`finer_bounds` predicts a water-filling pass's time to grow on a twice finer
#: grid: its steps are linear in the buckets, its FFTs a little over, and its arrays leave the cache
#: (measured with ``perf/adaptive_pass_scaling.py``: docs/performance.md). A pass predicted short of
#: the truth is dropped at the limit: it costs the time left, never the bracket.
FINER_GROWTH = 2.5


def grid_limit(chain: Chain, buckets: int, cap: int, runs: int, tune_runs: int, extra_bytes: float = 0.0) -> str:
    """What keeps the refinement from a grid of ``buckets`` after ``chain``'s: "max_buckets" (beyond ``cap``,
    or its kernels would not fit), "memory_limit" (:func:`memory_estimate` plus ``extra_bytes`` beyond the
    budget), or "" when neither does."""
    inst = chain.instance
    if buckets > cap or chain_refused(inst, buckets, chain.st):
        return "max_buckets"
    budget = memory_budget_gib() * 2**30
    if memory_estimate(inst, buckets, runs, tune_runs) > budget or extra_bytes > budget:
        return "memory_limit"
    return ""


def finer_bounds(chain: Chain, buckets: int, omega: float, lb: float, warm, slopes: int, ratio: float | None,
                 keep: list, threads: int, cap: int, last_s: float, runs: int, tune_runs: int,
                 say, enough: float = math.inf, gain: float | None = None) -> tuple[Chain, list]:
    """The time a refinement stopped short of its width (by the time limit, or by a policy that no
    longer gains) has left after the certification, spent on the lower bound alone (finer grids would
    not change the certified policy: docs/adaptive.md).

    One water-filling pass per grid, at the failure price's ``ratio`` and the multipliers of the last
    grid's search ``warm`` (any gives a valid bound on the same optimum). Each pass goes to a grid
    ×:data:`REFINE`^j (j ≥ 1) from the last one: the coarsest whose bound is *estimated* to reach
    ``enough`` (the bound that meets the width), else the finest whose predicted time,
    :data:`FINER_GROWTH`^j × the last pass's wall seconds (``last_s``), fits the time left, within the
    grid ``cap``, the kernels and the memory budget (the pass's arrays, :func:`waterfill_memory`, and
    the certification's runs still held; no policy is tuned there; grids in between would only spend the
    time the finest needs; a grid whose built chain needs more memory than the per-bucket estimate said
    is recorded unfinished and caps the passes, which try the grid one coarser). The estimate
    extrapolates the gains of the refinement's grids, which about halved with each doubling
    (docs/adaptive.md, "Where the width comes from"): ``gain`` (the last doubling's; None: unknown)
    × (1 − 2^−j); it chooses a grid, never a bound. A known ``gain`` of at most :data:`FINER_GAIN` of the
    bound starts no pass. Passes continue while each raises the bound (from ``lb``) by more than
    :data:`FINER_GAIN` of it, until it reaches ``enough``. A pass the time limit stops (or that runs out
    of memory) is dropped (the bracket, certified already, keeps what it had); every finished one is
    appended to ``keep``.
    Returns the chain of the pass with the highest bound (``chain`` when none beat ``lb``) and one
    record per grid tried: buckets, its bound (None: not finished), whether it finished, wall
    seconds."""
    tried: list[dict] = []
    b, fine, budget = int(buckets), chain, memory_budget_gib() * 2**30
    inst = chain.instance
    per_bucket = waterfill_memory(chain, slopes) / chain.i0 if slopes else 0.0     # L + 1 grows as the buckets
    alive = RUN_BYTES * float(max(runs, tune_runs))     # the certification's runs, alive until the bracket ends
    if gain is not None and math.isfinite(gain) and not gain > FINER_GAIN * abs(lb):
        return fine, tried                           # the last doubling gained nothing: nor would finer grids
    gain = gain if gain is not None and math.isfinite(gain) else 0.0
    while slopes and ratio is not None:
        nxt, steps, t = b, 0, now()
        while lb + gain * (1.0 - 0.5 ** steps) < enough:   # to the grid estimated to meet the width
            cand = nxt * REFINE
            # no policy is tuned on these grids: only the pass's arrays and the runs kept count
            if (cand > cap or chain_refused(inst, cand, chain.st)
                    or not FINER_GROWTH ** (steps + 1) * last_s <= time_left()
                    or per_bucket * cand + alive > budget):
                break                                       # or the finest predicted to fit
            nxt, steps = cand, steps + 1
        if not steps:
            break
        try:
            grid = build_chain(inst, nxt, optimistic=True)
            while waterfill_memory(grid, slopes) + alive > budget:     # beyond the per-bucket estimate
                tried.append({"buckets": nxt, "lower_bound": None, "finished": False, "seconds": now() - t})
                cap, nxt, steps = nxt // REFINE, nxt // REFINE, steps - 1     # nor any finer; one coarser
                if not steps:
                    break
                grid = build_chain(inst, nxt, optimistic=True)
            if not steps:
                break
            wps, _ = grid_passes(grid, omega, warm, slopes, ratio, keep=keep, threads=threads)
        except (TimeLimitReached, MemoryError):     # an extra the certified bracket does without
            tried.append({"buckets": nxt, "lower_bound": None, "finished": False, "seconds": now() - t})
            break
        if not wps:
            break
        last_s, got, prev = now() - t, wps[-1].bound(omega), lb
        tried.append({"buckets": nxt, "lower_bound": got, "finished": True, "seconds": last_s})
        say(f"adaptive: {nxt} buckets, lower bound only: LB (water-filling) {got:.6g}, {last_s:.1f} s")
        if got > lb:                                # the grid of the best bound, however small the gain
            fine, lb = grid, got
        if not got > prev + FINER_GAIN * abs(prev) or lb >= enough:
            break
        b, gain = nxt, (got - prev) / (2.0 ** steps - 1.0)  # the next doubling's, at the same halving
    return fine, tried


def quiet(f):
    """Run ``f`` with numpy's floating-point warnings off (an overflow ends as a status line)."""
    @functools.wraps(f)
    def run(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return f(*args, **kwargs)
    return run


def own_limit(time_limit: float | None) -> bool:
    """Whether the bracket's own ``time_limit`` (or none) is the limit in force
    (:func:`deplbench.limits.time_limit_s`): then the time it has left may go to the bound alone
    (:func:`finer_bounds`), and a stalled policy may end the refinement for it. An earlier outer stop
    with a limit of its own (a sweep task's) keeps its margin for what follows. A solver's scope
    opened with the same limit just before counts as the bracket's own."""
    return time_limit_s() == (None if time_limit is None else float(time_limit))


def left_or_none() -> float | None:
    """Seconds until the deadline in force, None without one."""
    left = time_left()
    return None if math.isinf(left) else max(left, 0.0)


@dataclass
class Progress:
    """What the bracket has finished so far, for the result of a stopped run (:func:`stopped_fields`)."""

    t0: float
    #: The optimistic chain of the grid being worked on (None before the first is built).
    opt: Chain | None = None
    #: Every finished DP pass of the multiplier searches, priced and carried (tables dropped):
    #: each is a valid lower bound at every ω, whatever its grid.
    priced: list = field(default_factory=list)
    carried: list = field(default_factory=list)
    #: Every finished water-filling pass (:mod:`~deplbench.formulations.adaptive.waterfill`).
    water: list = field(default_factory=list)
    levels: list = field(default_factory=list)
    log: list = field(default_factory=list)
    cap: int | None = None


def light(passes) -> list:
    """Passes without their policy tables (only their bounds are read)."""
    return [replace(p, action=None, remaining=None) for p in passes]


def deadline_line(points: int, buckets: int, water) -> str:
    """How the deadline was handled, for ``multipliers["deadline"]``: priced always, carried on a time
    grid of ``points`` at ``buckets`` where affordable, carried exactly by the water-filling pass
    ``water`` where computed; the bound is the largest."""
    parts = []
    if points:
        parts.append(f"carried on {points} time points at {buckets} buckets")
    if water is not None:
        parts.append(f"carried exactly by water-filling ({water.slopes} slopes, capacity relaxed) at "
                     f"{water.grid.get('buckets')} buckets")
    if not parts:
        return "priced (E[T] ≤ Tmax relaxation)"
    return "; ".join(parts) + "; and priced (E[T] ≤ Tmax relaxation): the lower bound is the largest of these"


def stopped_fields(instance, state: Progress, exc: TimeLimitReached, confidence: float, width: float | None,
                   time_limit: float | None) -> dict:
    """The fields of the :class:`~.bracket.AdaptiveBounds` of a run the deadline stopped:
    status ``time_limit``, the best lower bound of every pass finished (each is valid;
    :class:`~.search.SearchStopped` hands over those of the search it stopped), no upper
    bound (no policy certified), and one line saying what stopped it and what is kept.

    ``grid`` is the loss grid of the pass whose bound is kept (with ``time_points`` for a
    carried pass; empty without a bound): any grid's pass bounds the same optimum, so it
    may be coarser than the grid being worked on, which ``refinement["stopped_on_grid"]``
    names (None when the stop came before the first grid was built)."""
    omega = float(instance.omega)
    priced, carried = list(state.priced), list(state.carried)
    if isinstance(exc, SearchStopped):
        (carried if exc.carried else priced).extend(light(exc.passes))
    opt = state.opt
    water = list(state.water)
    proven = priced + carried + water
    lower, best, frontier = -math.inf, None, []
    if opt is not None and proven:
        tm = opt.st.time_max
        best = max(proven, key=lambda p: p.bound(omega, tm))
        lower = best.bound(omega, tm)
        frontier = monotone_frontier(Search(opt, omega, passes=priced, extra=carried, water=water), omega)
    kept = (f"the lower bound {lower:.6g} of the best of {len(proven)} DP passes finished is kept (proven)"
            if math.isfinite(lower) else "no DP pass finished, so no lower bound")
    line = f"{exc}; {kept}; no upper bound (no policy certified)"
    line = line.replace("; no plan;", ";")
    levels = state.levels
    return dict(
        lower_bound=lower, upper_bound=math.nan, cost_mean=math.nan, p_success=math.nan, p_success_lo=math.nan,
        certified=False, frontier=frontier,
        multipliers={} if best is None else {
            "lambda": best.lam, "mu": best.mu, "rounding_bound": best.err,
            "lower_bound_source": ("carried" if any(best is p for p in carried)
                                   else "waterfill" if any(best is p for p in water) else "priced"),
            "deadline": deadline_line(max((p.grid.get("time_points", 0) for p in carried), default=0),
                                      best.grid.get("buckets", 0), max(water, key=lambda p: p.bound(omega, tm))
                                      if water else None)},
        # the grid of the pass whose bound is reported (a coarser grid's, or an earlier
        # one's, when the stop came on a finer grid); the grid worked on is stopped_on_grid
        grid={} if best is None else dict(best.grid),
        certification={}, tuning=state.log,
        work={"dp_passes": len(proven), "grids_s": sum(lv["seconds"] for lv in levels),
              "total_s": now() - state.t0},
        status="time_limit", message=line, messages=[line], confidence=confidence, omega=omega,
        refinement={"width_target": width, "stopped_by": "time_limit", "levels": levels, "time_limit": time_limit,
                    "max_buckets": state.cap if width is not None else None,
                    "stopped_on_grid": None if opt is None else opt.grid()})


__all__ = ["BUDGET", "FINER_GAIN", "FINER_GROWTH", "GROWTH", "POLICY_GAIN", "RUN_BYTES", "Progress", "Tuned",
           "best_tuned", "check_certification", "deadline_line", "finer_bounds", "grid_limit", "largest_cost",
           "left_or_none", "light", "memory_estimate", "monotone_frontier", "next_grid_fits", "own_limit",
           "policy_stalled", "predicted_ucb", "quiet", "stopped_fields", "timed_memory", "within_reach"]
