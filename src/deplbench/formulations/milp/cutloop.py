"""The cut loop: solve the master, re-cost its plan exactly, add the exact cut, repeat.

What is guaranteed
------------------
Cost is κ·x while time is c/x (eqs. (1)–(2), (4)), so the compute cost of the
counts N is the convex F(N) of the package docstring, represented in every
master by λ cuts θ ≥ Σ_j g_j(λ) N_j − λ Tmax (Kelley 1960). Each master
solution is re-costed exactly with ``allocate`` (an upper bound and a
feasible real-x plan) and its exact cut is added; the loop stops when
(UB − LB)/UB ≤ ``gap`` with LB the master's proven dual bound (the master is
a relaxation of the SAA problem). The returned ``cost`` is always the exact
real-x cost of the returned plan, never the master's objective.

Statuses: ``optimal`` (gap met), ``time_limit`` (best plan so far, or none,
and the bound), ``feasible`` (a plan whose optimality is unproven for a
reason said in the message: node limit, round limit, a solver failure
around a valid incumbent), ``infeasible`` (with the reason) or ``error`` (no
plan and no proof; never with a cost).

Work counters (exact, and deterministic for a given instance, seed and
options when no wall-clock limit interferes — ``time_limit=None`` or not
reached: HiGHS runs with a fixed ``random_seed`` and one thread, the
incumbent heuristic then runs to its end):
``rounds`` (master solves), ``cuts_added``, ``nodes`` and ``lp_iterations``
summed over the rounds, and ``solver_retries``: master runs repeated with
tighter row tolerances after a HiGHS "Solve error" (``backends.solver_tolerances``;
the repeated run proves optimality afresh, nothing of the failed one is kept).

References
----------
J. Kelley, "The cutting-plane method for solving convex programs", J. SIAM 8
(1960); DepL paper eqs. (1)–(6).
"""

from __future__ import annotations

import math
import time

from deplbench import limits
from deplbench.formulations.milp.data import Data
from deplbench.formulations.milp.options import MAX_ROUNDS
from deplbench.formulations.model.result import SolveResult


def cut_loop_result(status, message, data=None, best=None, lower=None, params=None, diag=None) -> SolveResult:
    """The MILP's :class:`SolveResult`; ``best`` (a :class:`Choice`) gives
    plan and exact cost, ``lower`` the proven bound (capped at the cost)."""
    plan = best.to_plan(data) if best is not None else None
    cost = best.cost if best is not None else None
    gap = None
    if cost is not None and lower is not None:
        lower = min(lower, cost)
        gap = SolveResult.relative_gap(cost, lower)
    return SolveResult(algorithm="milp", status=status, message=message, plan=plan, cost=cost,
                       lower_bound=lower, gap=gap, params=dict(params or {}), diagnostics=dict(diag or {}))


def cut_loop(data: Data, model, be, best, gap, params, diag, t0,
              node_limit: int | None = None) -> SolveResult:
    """Solve the master, re-cost its plan exactly, add the exact cut, repeat.

    Parameters
    ----------
    data : Data
    model
        A built formulation (``theta``, ``cut_row``, ``extra_lams``,
        ``solution_from_choice``, ``choice_from_solution``; see ``catalog``).
    be
        Its backend (``solve``, ``add_cut``, ``set_start``).
    best : Choice or None
        The incumbent (SAA-feasible, exactly costed) or None.
    gap : float
        Relative gap at which the plan is declared optimal.
    node_limit : int, optional
        Branch-and-bound nodes allowed over all rounds (a deterministic
        limit, unlike the wall-clock deadline of :func:`deplbench.limits.deadline`,
        which the caller opens and every master solve gets the rest of).

    Returns
    -------
    SolveResult
        See the module docstring for the statuses.
    """
    t_solve = time.perf_counter()
    lower = -math.inf
    nodes = iters = rounds = cuts = retries = 0
    status, message = "time_limit", ""
    theta = model.theta
    # Anytime record (reports/anytime.py): [seconds since the solve began,
    # incumbent cost or None, proven lower bound or None], at the start (the
    # heuristic's incumbent) and after every master solve. One event per
    # round of the cut loop, not per incumbent found inside a solve.
    events = diag.setdefault("anytime", [])
    _event(events, t0, best, lower)
    while True:
        rounds += 1
        if best is not None:
            start = model.solution_from_choice(best)
            if start is not None:
                be.set_start(start)
        left = limits.time_left()
        if left <= 0:
            message = "time limit reached before the master was solved"
            break
        nodes_left = None if node_limit is None else node_limit - nodes
        if nodes_left is not None and nodes_left <= 0:
            status, message = _limit_status(best, "node limit reached")
            break
        out = be.solve(left, gap * 0.5, nodes_left)
        nodes += out.nodes
        iters += out.lp_iterations
        retries += getattr(out, "retries", 0)
        if out.status == "error":
            # A solver failure is never reported with a cost: an incumbent,
            # exactly costed and SAA-feasible, is kept as "feasible".
            status, message = _limit_status(best, out.message)
            break
        if out.status == "infeasible":
            if best is None:
                status = "infeasible"
                message = (f"no plan of at most K̄ = {data.K} epochs meets both the quantile (at most "
                           f"{data.p} of {data.S} in-sample scenarios above ℓmax = {data.lmax:g}) and "
                           f"Tmax = {data.T:g}")
            else:
                # The master contains the incumbent, so this is numerical
                # trouble: the incumbent stands, its optimality is unproven.
                status, message = "feasible", "the master was reported infeasible around the incumbent"
            break
        lower = max(lower, out.bound)
        added = False
        if out.x is not None:
            ch = model.choice_from_solution(out.x)
            if ch is not None and ch.feasible_time:
                if ch.violations <= data.p and (best is None or ch.cost < best.cost):
                    best = ch
                # A cut only where θ underestimates the exact cost by more than
                # a fraction of the gap (less cannot stop the proof), and never
                # the same λ twice (the solver's tolerance, not the cut, would
                # then be what keeps θ low: re-adding it cannot help).
                lam = ch.alloc.time_price
                under = ch.alloc.cost - out.x[theta]
                if lam > 0 and under > 0.25 * gap * abs(ch.alloc.cost) + 1e-12 \
                        and not any(abs(lam - old) <= 1e-12 * lam for old in model.extra_lams):
                    be.add_cut(*model.cut_row(lam))
                    model.extra_lams = [*model.extra_lams, lam]
                    cuts += 1
                    added = True
        _event(events, t0, best, lower)
        if best is not None:
            g = SolveResult.relative_gap(best.cost, min(lower, best.cost))
            if g is not None and g <= gap:
                status = "optimal"
                message = f"optimal within relative gap {g:.2e} (tolerance {gap:g})"
                break
        if out.status == "time_limit":
            message = "time limit reached"
            break
        if out.status == "node_limit":
            status, message = _limit_status(best, "node limit reached")
            break
        if not added or rounds >= MAX_ROUNDS:
            # Not a time limit: a plan whose optimality the cut loop could
            # not prove is "feasible"; no plan at all is an error.
            if best is not None:
                status = "feasible"
                message = "the master's solution could not be confirmed (in-sample recount or round limit)"
            else:
                status, message = "error", "the master found no plan"
            break
    diag.update(nodes=nodes, lp_iterations=iters, rounds=rounds, cuts_added=cuts, solver_retries=retries,
                solve_s=time.perf_counter() - t_solve, total_s=time.perf_counter() - t0)
    if best is not None:
        diag["in_sample_violations"] = int(best.violations) * (data.S_nominal if data.deterministic else 1)
        diag["epochs"] = int(best.models.size)
    if status in ("infeasible", "error"):
        return cut_loop_result(status, message, params=params, diag=diag)
    return cut_loop_result(status, message, data, best, lower if math.isfinite(lower) else None, params, diag)


def _event(events: list, t0: float, best, lower: float) -> None:
    """Append [elapsed s, incumbent cost, lower bound] (None where there is none)."""
    events.append([round(time.perf_counter() - t0, 6), None if best is None else float(best.cost),
                   float(lower) if math.isfinite(lower) else None])


def _limit_status(best, reason: str) -> tuple[str, str]:
    """(status, message) when the loop stops for ``reason`` other than time:
    ``feasible`` with the incumbent, ``error`` without any plan."""
    if best is not None:
        return "feasible", f"{reason}; the plan is SAA-feasible and exactly costed, its optimality unproven"
    return "error", f"{reason}; no plan found"


__all__ = ["cut_loop_result", "cut_loop"]
