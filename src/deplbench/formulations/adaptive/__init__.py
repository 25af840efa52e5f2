"""The adaptive reference: bounds on the best closed-loop policy with P(success) ≥ ω.

What is solved
--------------
An orchestrator that observes the loss after every epoch (PACT Sec. III-C,
the closed-loop simulator of :mod:`deplbench.formulations.evaluation.closed_loop`)
chooses, from the state (epoch k, current model m, current loss ℓ(k),
elapsed time T(k)), the next model m', cluster n' and allocation x, or stops.
The *adaptive optimum* is the least expected cost E[Σ κ(n) x] (eq. (2)) of
any such policy whose runs succeed — stop with ℓ ≤ ℓmax, T ≤ Tmax
(eq. (4)), K ≤ K̄ — with probability at least ω: a chance-constrained
Markov decision process (Altman 1999; Ono, Pavone, Kuwata & Balaram 2015;
Xu & Mannor 2011). This module brackets it:

**Proven lower bound** (:func:`lower_bound_search`, :func:`timed_search`). The larger
of two bounds — the deadline *priced* (below, 2) and the deadline *carried* on a grid of
remaining time (:mod:`~deplbench.formulations.adaptive.timed`; "How the deadline is
handled" below) — each resting on valid relaxations and a rounding bound that keeps
the result valid in floating point:

1. *Optimistic loss grid.* Losses live on the grid ℓmax + i·h; the chain
   takes the step ⌊Δ/h⌋ of every loss term (run term −γ A_m decay_m(k) X
   and switch jump separately; ⌊a + b⌋ ≥ ⌊a⌋ + ⌊b⌋), states above the top
   bucket are clamped down, and truncated tails are sent to the optimistic
   end. Driven by the same draws, the chain's bucket never exceeds the true
   loss, so any true policy (which may look at the exact draws) is matched
   by a randomised chain policy with the same cost and time and at least
   the same success: the chain's optimum is ≤ the true one. The increments
   of eq. (8) do not depend on ℓ, so (k, m, bucket) is a sufficient state.
2. *Failure priced* (μ ≥ 0) and *time priced* (λ ≥ 0): for every policy
   with P(success) ≥ ω and T ≤ Tmax on every run,
   E[cost] ≥ E[cost + λT + μ·1{fail}] − λ·Tmax − μ(1 − ω). WLOG T ≤ Tmax on
   every run: epoch times are deterministic given the action, and a run
   about to pass Tmax fails anyway, so stopping it instead costs less and
   loses nothing. Hence **V₀(λ, μ) − μ(1 − ω) − λ·Tmax is a valid bound for
   every λ, μ ≥ 0** (weak duality), where V₀ is the optimum of the
   unconstrained chain MDP with per-epoch cost min_{0<x≤r} κx + λ(c/x + s/b)
   and terminal cost μ on failure — a backward DP. Any multiplier gives a
   bound; the search only makes it tighter: on μ, cutting planes on the
   concave g(μ) = V₀ − μ(1 − ω) (tangents from the supergradient
   P(fail) − (1 − ω), plus the free cut g ≤ ωμ since stopping at once is a
   policy); on λ, the fixed point λ ← λ(E[T]/Tmax)² (priced compute time
   scales as λ^(−1/2)) inside a bracket on the sign of E[T] − Tmax; on
   grids of ≥ 400 buckets first on a grid 8× coarser, then warm-started on
   the fine one (about 9 fine passes on PACT-VGG11).
   Every DP pass is a valid bound at *every* ω′, which gives the cost–risk
   frontier at no extra cost (:attr:`AdaptiveBounds.frontier`; made
   monotone: the bound at a level is the best at that level or any looser
   one, since the optimum does not decrease with the level).
3. *Floating point.* The bound reported is valid for the arithmetic
   actually done: every pass carries an a-priori bound on its rounding
   error (:func:`~deplbench.formulations.adaptive.chain.dp`; the FFT
   correlations bounded after Higham 2002, Thm 24.2, with
   :func:`~deplbench.formulations.adaptive.correlation.fft_error`; terminal values
   exact, a correlation with kernel mass ≤ 1 does not amplify an error, the
   minimum is 1-Lipschitz) and :meth:`Pass.bound` subtracts it, together
   with the rounding of V₀ − μ(1 − ω) − λTmax itself. Why subtract rather
   than decide the boundary exactly: the error grows with μ, so a pass at a
   runaway μ (where P(fail) − (1 − ω) is below what the arithmetic
   resolves, e.g. ω exactly the highest reachable P(success)) simply gives
   a useless bound instead of a wrong one, whatever the cost scale; at the
   multipliers the search uses the subtraction is ~10⁻⁸ relative. The μ
   search also treats P(fail) within its own rounding bound of 1 − ω as
   feasible, so it does not run μ away there. Assumptions: pocketfft's
   mixed-radix stages err by at most 16u each (Higham's radix-2 figure is
   ≈ 6.7u; checked against exact arithmetic in the tests) and a kernel
   probability (a count over the sample size, or a c.d.f. difference) is
   within 2 ulps of the law's.

**Certified upper bound** (:func:`adaptive_bounds`). A policy of the
*pessimistically* rounded chain (⌈Δ/h⌉, tails to the pessimistic end,
leaving the grid = failure), run by :class:`AdaptivePolicy` in the
closed-loop simulator on fresh runs whose seed differs from every seed used
to tune it. Two statements, each at level 1 − (1 − confidence)/2, hold
jointly at ``confidence`` (union bound): P(success) ≥ the one-sided
Clopper–Pearson lower bound
(:func:`~deplbench.formulations.evaluation.binomial.clopper_pearson_lower`), and
E[cost] ≤ the one-sided empirical-Bernstein bound of Maurer & Pontil (2009,
Thm 4) on the runs' costs (:func:`cost_ucb`). The latter needs a range: the
policy carries a cost budget (twice the largest cost seen on the tuning
seeds; an epoch that would pass it stops the run, counted as a failure),
so every run's cost lies in [0, budget]. When P(success) ≥ ω is certified,
the upper confidence bound is the bracket's UB. Tuning (tuning seeds only):
the chain's policies at a few failure prices from the pessimistic chain's
critical one up are simulated and the one with least cost/P(success) is
kept; the risk budget it leaves is spent as at the critical multiplier of
Beutler & Ross: a share q of the runs stops at once, cost 0. The certified
policy is that mix: give up with probability q, else run the chain's policy
π. Every fresh run is a run of π, and q is set *after* them from their
Clopper–Pearson bound p_lo, q = 1 − ω/p_lo (:func:`~.certify.certify_mix`):
on the event that both statements hold for π, the mix succeeds with
probability (1 − q)·p(π) ≥ (1 − q)·p_lo ≥ ω and costs (1 − q)·E[cost of π]
≤ (1 − q)·UCB, whatever q is, so a share read from the same runs keeps the
joint level; its P(success) is certified at ω itself, with no margin
spent on tuning noise. The tuning predicts q the same way from its own runs
(:func:`~deplbench.formulations.adaptive.budget.predicted_ucb`).

**Refinement to a width.** With ``width`` the grid is doubled, each search
warm-started from the last grid's multipliers, until the width estimated
on tuning runs is within it, or the next grid is predicted to end,
certification included, after the time limit
(:func:`~deplbench.formulations.adaptive.bracket.next_grid_fits`), or the
memory budget or ``max_buckets`` would be passed, or (the bound being the
water-filling one, the time limit the bracket's own or none:
:func:`~deplbench.formulations.adaptive.budget.own_limit`) a tuning lowered
the predicted upper bound by less than 0.1 %
(:func:`~deplbench.formulations.adaptive.budget.policy_stalled`: the policy
has stalled). The tuned policy that met its tuning target with the least
predicted upper bound is then certified once (``multipliers["buckets_policy"]``
names its grid), so neither the stopping rule nor that choice sees the
certification draws. When the time limit or the stalled policy stopped it
short of the width, the time left after the certification goes to the lower
bound alone
(:func:`~deplbench.formulations.adaptive.budget.finer_bounds`): one
water-filling pass at a time, each on the coarsest grid ×2^j estimated to
meet the width, else the finest whose predicted time (the last pass's ×
FINER_GROWTH^j) fits, while each raises the bound and the width is not met;
a pass the limit stops is dropped, the certified bracket kept
(``refinement["bound_only"]``). Finer grids would not change the certified
policy (docs/adaptive.md, "Where the width comes from"), and any grid's
pass bounds the same optimum.

**Statuses** (:data:`BRACKET_STATUSES`; when several apply, the first in
that order is reported and every line kept), each with one line:
``time_limit`` — the time limit (or an outer stop, a sweep task's) passed
before the bracket was done: checked before every grid is built, every
backward step of the reachability passes, every DP pass and tuning
simulation, it keeps the best proven lower bound of the passes finished
(``grid`` names that pass's grid, ``refinement["stopped_on_grid"]`` the one
worked on) and certifies nothing (the certification starts only when
predicted to end in time); ``unreachable`` — proven: no epoch fits in Tmax, or the optimistic chain's
highest P(success), deadline and cost ignored — or, where the time grid is
affordable, with the deadline carried on every run
(:func:`timed_best_success`) — is below ω (nothing else is computed), or
the proven lower bound exceeds the dearest run any policy can have (K̄
epochs at x = r on the dearest cluster: by weak duality no policy is then
feasible); ``multipliers_ran_away`` (μ grew to its cap — relative to the
instance's cost scale, :meth:`~deplbench.formulations.adaptive.chain.Setting.cost_scale` —
with ω still missed on the chain, the bound below that dearest run: valid,
but no cost estimate, and ω not proven out of reach); ``bound_not_positive``
(it says when every κ is 0, where 0 may be the optimum);
``lambda_not_converged`` (the bound is valid but may be loose);
``not_certified``; ``certified``. The reported multipliers and
rounding bound are those of the pass that gives the bound
(``multipliers["lower_bound_source"]``: ``priced``, ``carried`` or
``waterfill``). Memory is
estimated from the shapes and refused above the budget before anything
is allocated (:func:`memory_estimate`).

How the deadline (eq. (4)) is handled: what is exact and what is relaxed
---------------------------------------------------------------------------
*Carried* (:mod:`~deplbench.formulations.adaptive.timed`, used where a pass
is affordable: :func:`time_points_for`). The remaining time τ is a state
on the grid τ_j = jΔ (Δ = Tmax/G; by default the finest of 256, 128, 64 cheap on the first grid) and only the
failure is priced: V₀(μ) − μ(1 − ω) is a proven bound for every μ ≥ 0.
*Exact* there: "T ≤ Tmax on every run", the capacity x ≤ r, the
communication time s/b, the chance constraint (μ with Beutler–Ross
randomisation), the switch rules and the horizon. *Relaxed*: the loss
rounded down to its grid (relaxation 1) and at most Δ of time per epoch
(a landing between grid points is credited the grid point above, the
epoch charged for the longest time that lands there). The carried bound
gives away at most Δ of time per epoch (tested against independent exact
optima: within 1.5·K̄Δ/Tmax of them; measured gaps in docs/adaptive.md).

*Carried exactly, by water-filling* (:mod:`~deplbench.formulations.adaptive.waterfill`,
computed on every grid whose pass fits the memory budget; ``slopes`` 0
turns it off). With the time allocated optimally a policy tree costs W/τ
with W = (√A + √E[W′])² (0 at a stop); kept as the convex set of a state's
(W, F) pairs through its support function at J slopes, time leaves the
state. *Exact* there: "T ≤ Tmax on every run", the chance constraint
(randomised), the switch rules and the horizon. *Relaxed*: the loss grid
(relaxation 1), the slopes (interpolated from below), the capacity x ≤ r
(ignored) and the communication time (a tangent A/d + b ≤ κc/(d − s) of
an epoch's money at the priced epoch's duration, its capacity left out).
A pass costs about
what a priced multiplier search on the same grid costs (one FFT
correlation per model and slope; clusters share their kernel). Its
rounding is bounded like a priced pass's (module docstring there).

*Priced* (:func:`lower_bound_search`, always computed). λ·(T − Tmax)
relaxes "T ≤ Tmax on every run" to "E[T] ≤ Tmax": valid, but it
leaves the value of knowing the run's length in advance (Jensen:
(Σ√(cκ))²/T is convex in the epochs run). *Exact* there: the chance
constraint, the per-epoch allocation min_{0<x≤r} κx + λ(c/x + s/b), the
switch rules and the horizon; on grid-aligned lattice laws with a
single decisive epoch it equals the exact optimum to 10⁻⁹ (tested).

The reported bound is the largest (:attr:`AdaptiveBounds.multipliers`
says which were computed: ``deadline``, ``lower_bound_priced``,
``lower_bound_carried``, ``lower_bound_waterfill``). A time-grid pass costs
K̄·rows·(G + 1)·L·G/2 and G + 1 times the FFTs of a priced one: on the
realistic families' grids (K̄ = 100, hundreds to tens of thousands of
buckets) it is not affordable, and the per-epoch slack Δ would have to be
≪ Tmax/(epochs run); there the water-filling bound carries the deadline
(its gain over the priced bound on the same grid: docs/adaptive.md).

In the certified policy every run enforces the deadline itself. With
the deadline carried, :class:`TimedPolicy` reads the pessimistic grid's
tables (τ rounded down to the grid, the epoch planned to land on a grid
point): no run misses the deadline. Otherwise :class:`AdaptivePolicy`
rescales the priced allocation to the run's remaining time, planning
this epoch's compute time a against the rest S as a : √E[S²] (the DP
carries the second moment of the remaining compute time; the split
minimises this epoch's money plus the rest's when the rest is known
after this epoch), capped at r; a run that still passes Tmax fails and
is counted (√E[S²] keeps time in reserve for an unlikely extra epoch,
where a : E[S], certainty equivalence, does not: a heuristic, judged only
by the late runs the certification counts). What the choice costs: the width of
the bracket at a vanishing grid step (perf/adaptive_targets.py measures
width against the step; README, "The adaptive yardstick").

Modules: :mod:`~deplbench.formulations.adaptive.chain` (the rounded chain,
its DP and rounding bound), :mod:`~deplbench.formulations.adaptive.correlation`
(the DP's batched FFT correlations and their rounding bound),
:mod:`~deplbench.formulations.adaptive.search`
(the multipliers), :mod:`~deplbench.formulations.adaptive.timed` (the
deadline carried), :mod:`~deplbench.formulations.adaptive.certify` (the
policy and its tuning), :mod:`~deplbench.formulations.adaptive.bracket`
(the bracket, statuses, refinement), :mod:`~deplbench.formulations.adaptive.settings`
(every setting's default and limits, shared by ``adaptive_bounds``, the
``adaptive-opt`` solver and ``deplbench adaptive``). Each name below is
imported from its module on first use.

Scope (:func:`applies`): one dataset (held by every cluster, β = 0), the
intended data rule (eq. (6) lets the cluster change), continuous or
discrete loss terms. Other instances are declined with the reason.

Complexity: a DP pass is at most K̄·|M|(1 + |M|)·|N| FFT correlations of
length ~L (the buckets), one per distinct (model, kernel) row
(:func:`~deplbench.formulations.adaptive.chain.distinct_rows`): K̄·|M|(1 + |M|)
when the kernels do not depend on the cluster (γ one number, as on every
generated instance); batched per epoch with scipy's rfft.

References
----------
DepL paper eqs. (2)–(8); PACT paper Sec. III-C; E. Altman, Constrained
Markov Decision Processes (1999), Ch. 3 and 12 (Lagrangian duality); F. J.
Beutler and K. W. Ross, "Optimal policies for controlled Markov chains with
a constraint", J. Math. Anal. Appl. 112 (1985) (randomisation at the
critical multiplier); M. Ono, M. Pavone, Y. Kuwata and J. Balaram,
"Chance-constrained dynamic programming with application to risk-aware
robotic space exploration", Auton. Robots 39 (2015); H. Xu and S. Mannor,
"Probabilistic goal Markov decision processes", IJCAI 2011; N. J. Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed. (2002), Ch. 24; A.
Maurer and M. Pontil, "Empirical Bernstein bounds and sample variance
penalization", COLT 2009.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deplbench.formulations.adaptive.bracket import (
        BRACKET_STATUSES,
        AdaptiveBounds,
        adaptive_bounds,
        cost_ucb,
        largest_cost,
        memory_estimate,
        monotone_frontier,
        time_points_for,
        timed_memory,
    )
    from deplbench.formulations.adaptive.certify import AdaptivePolicy, TimedPolicy, frontier_levels, tune_policy
    from deplbench.formulations.adaptive.chain import (
        TAIL,
        TAIL_JUMP,
        Chain,
        Pass,
        Setting,
        applies,
        best_success,
        dp,
        kernel,
    )
    from deplbench.formulations.adaptive.correlation import Kernel, correlate, fft_error
    from deplbench.formulations.adaptive.search import (
        COARSE,
        Search,
        best_mu,
        lam_guess,
        lower_bound_search,
        multires_search,
    )
    from deplbench.formulations.adaptive.settings import MAX_BUCKETS, START_BUCKETS
    from deplbench.formulations.adaptive.timed import (
        TIME_POINTS,
        TIMED_WORK,
        TimedSearch,
        TimeGrid,
        timed_best_success,
        timed_dp,
        timed_search,
        timed_seconds,
        timed_work,
    )

#: Every name of :data:`__all__` → the module of this package that defines it. A name is
#: imported on first use (PEP 562 module ``__getattr__``), so importing
#: :mod:`~deplbench.formulations.adaptive.settings` alone — as ``deplbench adaptive --help``
#: does for its defaults — loads no numerical library.
_MODULES = ("bracket", "certify", "chain", "correlation", "search", "settings", "timed")
_WHERE: dict[str, str] = {
    **dict.fromkeys(("BRACKET_STATUSES", "AdaptiveBounds", "adaptive_bounds", "cost_ucb", "largest_cost",
                     "memory_estimate", "monotone_frontier", "time_points_for", "timed_memory"), "bracket"),
    **dict.fromkeys(("AdaptivePolicy", "TimedPolicy", "frontier_levels", "tune_policy"), "certify"),
    **dict.fromkeys(("TAIL", "TAIL_JUMP", "Chain", "Pass", "Setting", "applies", "best_success", "dp", "kernel"),
                    "chain"),
    **dict.fromkeys(("Kernel", "correlate", "fft_error"), "correlation"),
    **dict.fromkeys(("COARSE", "Search", "best_mu", "lam_guess", "lower_bound_search", "multires_search"), "search"),
    **dict.fromkeys(("TIME_POINTS", "TIMED_WORK", "TimedSearch", "TimeGrid", "timed_best_success", "timed_dp",
                     "timed_search", "timed_seconds", "timed_work"), "timed"),
    **dict.fromkeys(("MAX_BUCKETS", "START_BUCKETS"), "settings"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value         # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
                                                     "BRACKET_STATUSES",
                                                     "MAX_BUCKETS",
                                                     "START_BUCKETS",
                                                     "best_success",
                                                     "cost_ucb",
                                                     "fft_error",
                                                     "lam_guess",
                                                     "largest_cost",
                                                     "memory_estimate",
                                                     "monotone_frontier",
                                                     "COARSE",
                                                     "TAIL",
                                                     "TAIL_JUMP",
                                                     "AdaptiveBounds",
                                                     "AdaptivePolicy",
                                                     "Chain",
                                                     "Kernel",
                                                     "Pass",
                                                     "Search",
                                                     "Setting",
                                                     "adaptive_bounds",
                                                     "applies",
                                                     "best_mu",
                                                     "correlate",
                                                     "dp",
                                                     "frontier_levels",
                                                     "kernel",
                                                     "lower_bound_search",
                                                     "multires_search",
                                                     "tune_policy",
                                                     "TIME_POINTS",
                                                     "TIMED_WORK",
                                                     "TimeGrid",
                                                     "TimedPolicy",
                                                     "TimedSearch",
                                                     "time_points_for",
                                                     "timed_best_success",
                                                     "timed_dp",
                                                     "timed_memory",
                                                     "timed_search",
                                                     "timed_seconds",
                                                     "timed_work",
]
