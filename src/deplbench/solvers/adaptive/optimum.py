"""``adaptive-opt``: the adaptive optimum bracketed, and its near-optimal policy.

The reference for algorithms that observe the loss after every epoch (PACT,
``depl-receding``): the least expected cost of *any* closed-loop policy with
P(success) ≥ ω, bracketed by :mod:`deplbench.formulations.adaptive` (a
chance-constrained MDP over (epoch, model, loss); proven lower bound from
an optimistic loss grid and Lagrangian duality, certified upper bound from
the policy of the pessimistic grid simulated on fresh runs). The result has
no static plan: its ``cost`` is the one-sided upper confidence bound on the
certified policy's mean cost (the bracket's upper end), ``lower_bound`` the proven bound, and ``diagnostics`` carry
``p_success_lo`` (one-sided Clopper–Pearson), the cost–risk ``frontier``,
the ``multipliers`` and the ``grid``. :meth:`AdaptiveOpt.closed_loop_policy`
rebuilds the same policy (deterministic from the multipliers) so that sweeps
simulate it beside PACT and ``depl-receding``.

Status: ``feasible`` when the policy's P(success) ≥ ω is certified,
``infeasible`` when no policy reaches ω at all, proven (bracket status
``unreachable``: no epoch fits in Tmax, the optimistic chain's best
P(success), deadline ignored or carried, is below ω, or the bound exceeds the
dearest run any policy can have; no lower bound reported), ``time_limit``
when the time limit (``refine_time``, which ``solve --time-limit`` sets) or an
outer stop (a sweep task's, :func:`~deplbench.benchmarks.tasks.solver_stop_s`)
passed before the bracket was done: checked before every DP pass of the
multiplier search and every tuning simulation, and the certification starts
only when predicted to end in time; the best proven lower bound of the passes
finished is kept, no upper bound (``cost`` None) and the message says what
stopped it. ``no_solution``
when the policy is not certified (the bound still holds) or the multipliers
ran away (no lower bound reported), ``skipped`` on instances outside the method
(:func:`~deplbench.formulations.adaptive.applies`), ``error`` when the loss
grid or the runs would exceed ``memory_limit``, or a law's kernel would reach
beyond :data:`~deplbench.formulations.adaptive.chain.MAX_CELLS` buckets (the
message names the law). ``diagnostics["status"]``
is the bracket's own status (:data:`~deplbench.formulations.adaptive.BRACKET_STATUSES`:
also ``multipliers_ran_away``, ``lambda_not_converged`` and ``bound_not_positive``) and ``message``
its line; a certified result's ``message`` states what its numbers are first
(:func:`certified_statement`). ``cost`` is the one-sided upper confidence bound on the certified
policy's mean cost (joint with the P(success) certificate at
``confidence``); ``diagnostics["cost_mean"]`` the sample mean.

References
----------
See :mod:`deplbench.formulations.adaptive`.
"""

from __future__ import annotations

import math

from deplbench.formulations import adaptive
from deplbench.formulations.adaptive.settings import SETTINGS, refinement_refused
from deplbench.formulations.model.result import SolveResult
from deplbench.instances.magnitudes import MIN_OMEGA
from deplbench.jsonio import number_beside, number_text
from deplbench.limits import MEMORY_LIMIT_PARAM
from deplbench.params import Param
from deplbench.solvers.base import PlotStyle, Solver


def certified_statement(b, lb: float | None) -> str:
    """What a certified bracket's numbers are, in one line: the cost an upper confidence
    bound, the certified P(success), the joint level and method, and the width as
    ``deplbench adaptive`` reports it beside the record's ``gap``.

    Parameters
    ----------
    b : AdaptiveBounds
        A certified bracket (:func:`~deplbench.formulations.adaptive.adaptive_bounds`).
    lb : float or None
        The lower bound the result reports (None when it reports none).

    Returns
    -------
    str
        One line; the ``message`` of a ``feasible`` result.
    """
    c = b.certification
    level = c.get("level_each", 1.0 - (1.0 - b.confidence) / 2.0)
    p_lo = number_beside(b.p_success_lo, b.omega, 5, 1.0)       # on its side of ω, and below 1
    line = (f"cost = one-sided upper confidence bound on the certified policy's mean cost (empirical Bernstein, "
            f"on {c.get('runs')} fresh runs, × (1 − the share given up); the mix's sample mean "
            f"{b.cost_mean:.6g}), P(success) ≥ {p_lo} certified (one-sided Clopper–Pearson) "
            f"against ω = {number_text(b.omega)}; both hold jointly at confidence {number_text(b.confidence)} "
            f"(union bound, {number_text(level)} each)")
    if lb is None:
        return line + "; no lower bound"
    gap = SolveResult.relative_gap(b.upper_bound, lb)
    return (line + f"; lower bound proven (weak duality, deadline {b.multipliers.get('deadline', 'priced')}); "
            f"width (UB − LB)/LB = {100 * b.width:.3g} % as `deplbench adaptive` reports it, "
            f"gap (UB − LB)/UB = {100 * (gap or 0.0):.3g} %")


def bracket(instance, settings, progress=None):
    """The bracket on ``instance`` with the solver's resolved ``settings``: the one call of
    :func:`~deplbench.formulations.adaptive.adaptive_bounds` of ``adaptive-opt`` and
    ``deplbench adaptive``.

    Parameters
    ----------
    instance : Instance
        An instance the method applies to (:func:`~deplbench.formulations.adaptive.applies`).
    settings : mapping
        :meth:`AdaptiveOpt.resolve_params`' output; ``omega``, when given, replaces the
        instance's ω, and ``refine_time`` is the bracket's ``time_limit``.
    progress : callable, optional
        Called with one line per grid of the refinement.

    Returns
    -------
    (Instance, AdaptiveBounds)
        The instance bracketed (its ω the level used) and its bracket.
    """
    p = settings
    if p["omega"] is not None:
        instance = instance.with_changes(omega=p["omega"])
    b = adaptive.adaptive_bounds(instance, p["buckets"], p["runs"], p["seed"], p["confidence"], p["tune_runs"],
                                 p["rho"], p["iters_lam"], p["iters_mu"], width=p["width"],
                                 time_limit=p["refine_time"], max_buckets=p["max_buckets"], progress=progress,
                                 time_points=p["time_points"], slopes=p["slopes"], threads=p["threads"])
    return instance, b


class AdaptiveOpt(Solver):
    """Bracket on the adaptive optimum and its certified policy (module docstring)."""

    name = "adaptive-opt"
    label = "adaptive optimum"
    style = PlotStyle("#000000", "*", "-.")
    exact = False
    reference = "adaptive"
    preprocess = False
    description = ("optimal closed-loop policy (chance-constrained MDP): proven lower bound and certified "
                   "policy with P(success) ≥ ω")
    #: The bracket's settings as :data:`~deplbench.formulations.adaptive.settings.SETTINGS`
    #: declares them (the very Params: one set of defaults and limits), ``time_limit`` under
    #: the name ``refine_time``, and ω.
    #: The solve's clock is ``refine_time``, the bracket's own budget (as ``deplbench adaptive
    #: --time-limit``): ``solve --time-limit`` sets it, the outer stop of the whole solve (status
    #: ``time_limit`` with the bound so far), which the refinement to ``width`` also plans by.
    clock = "refine_time"
    parameters = {
        **{k: SETTINGS[k] for k in ("buckets", "runs", "tune_runs", "seed", "confidence", "rho", "iters_lam",
                                    "iters_mu")},
        "omega": Param(None, float, "target P(success) (default: the instance's ω); a stricter level brackets "
                       "the optimum where a policy such as PACT is certified", low=MIN_OMEGA,
                       high=1.0 - MIN_OMEGA, nullable=True),
        "width": SETTINGS["width"],
        "refine_time": SETTINGS["time_limit"],
        "max_buckets": SETTINGS["max_buckets"],
        "time_points": SETTINGS["time_points"],
        "slopes": SETTINGS["slopes"],
        "threads": SETTINGS["threads"],
        "memory_limit": MEMORY_LIMIT_PARAM,
    }

    @classmethod
    def check_params(cls, resolved):
        reason = refinement_refused(resolved["buckets"], resolved["max_buckets"], resolved["width"])
        return ("max_buckets", reason) if reason else None

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        return adaptive.applies(instance)

    def run_settings(self, instance, settings) -> SolveResult:
        """Solve with the parameters :func:`~deplbench.solvers.run.solve` resolved once
        (:meth:`run` is the keyword front: it resolves them first)."""
        ok, why = adaptive.applies(instance)
        if not ok:
            return SolveResult(algorithm=self.name, status="skipped", message=why)
        _, b = bracket(instance, settings)
        d = b.to_dict()
        # Only "unreachable" is a proof that no policy exists (the optimistic
        # chain's best P(success) is below ω); a policy that was not certified
        # proves nothing, and its cost bounds nothing.
        # A run the deadline stopped keeps its proven bound and certifies nothing.
        status = ("feasible" if b.certified else "infeasible" if b.status == "unreachable"
                  else "time_limit" if b.status == "time_limit" else "no_solution")
        # a bound from multipliers that ran away is no cost reference
        lb = (b.lower_bound if math.isfinite(b.lower_bound) and b.lower_bound > 0
              and b.status not in ("multipliers_ran_away", "unreachable") else None)
        ub = b.upper_bound if b.certified and math.isfinite(b.upper_bound) else None
        message = b.message
        if ub is not None:
            message = certified_statement(b, lb) + (f"; {b.message}" if b.message else "")
        return SolveResult(algorithm=self.name, status=status, message=message, cost=ub,
                           lower_bound=lb, diagnostics={k: v for k, v in d.items()
                                                        if k not in ("lower_bound", "upper_bound")})

    def closed_loop_policy(self, instance, result, **params):
        """The certified policy, rebuilt from ``diagnostics["multipliers"]`` (its own time and
        failure prices ``lambda_policy`` and ``mu_policy`` — not the bound's pass, which may be
        another one —, ρ, rescaling rule or time grid, and share given up at once; None
        without them) on the grid it was tuned on (``buckets_policy``). None too for a run the time limit
        stopped (status ``time_limit``): its multipliers are the bound's alone, no policy was tuned."""
        mult = (result.diagnostics or {}).get("multipliers")
        if not mult or "mu_policy" not in mult or not adaptive.applies(instance)[0]:
            return None
        p = self.resolve_params(params)
        # the grid of the policy's tuning (a coarser one than the bound's when a coarser grid's tuning
        # predicted the lower upper bound, or the time limit left no time to tune on the finest)
        buckets = (mult.get("buckets_policy") or ((result.diagnostics or {}).get("grid") or {}).get("buckets")
                   or p["buckets"])
        chain = adaptive.Chain(instance, int(buckets), optimistic=False)
        if mult.get("time_points_policy"):
            g = int(mult["time_points_policy"])
            return adaptive.TimedPolicy(chain, adaptive.timed_dp(chain, mult["mu_policy"], g, keep=True), g,
                                        name=f"{self.display_label()} (policy)", give_up=mult.get("give_up", 0.0),
                                        coin_seed=p["seed"], budget=mult.get("budget") or math.inf)
        # the policy's own time price: the bound's pass ("lambda") may be another one, or carried (λ = 0)
        lam = mult.get("lambda_policy", mult["lambda"])
        return adaptive.AdaptivePolicy(chain, adaptive.dp(chain, lam, mult["mu_policy"], keep=True),
                                       mult.get("rho_policy", p["rho"]), name=f"{self.display_label()} (policy)",
                                       scaling=mult.get("scaling", "rms"), give_up=mult.get("give_up", 0.0),
                                       coin_seed=p["seed"], budget=mult.get("budget") or math.inf)


__all__ = ["AdaptiveOpt", "bracket", "certified_statement"]
