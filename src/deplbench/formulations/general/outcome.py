"""The result of a ``general`` solve: the plan, its exact cost, the proven bound, the status.

One job: turn the final :class:`~.state.SolveRun` into a
:class:`~deplbench.formulations.model.result.SolveResult`. The lower bound is
min(incumbent, every discarded bound, every open bound), clamped at 0
(every plan costs κ·x + β ≥ 0, eq. (2)); the plan's in-sample violations
are recounted independently of the search before it is returned, and the
diagnostics record the work done in every phase.

References
----------
DepL paper eqs. (2)–(6); J. Luedtke, S. Ahmed, SIAM J. Optim. 19 (2008).
"""

from __future__ import annotations

import math
import time

import numpy as np

from deplbench import limits
from deplbench.formulations.general.node_groups import warm_starts
from deplbench.formulations.general.state import SolveRun
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import loss_threshold


def clamp_bound(lower: float, diag: dict) -> float:
    """The reported lower bound, never below 0.

    Every plan costs κ·x + β ≥ 0 (eq. (2): unit costs, allocations and
    transfer costs are non-negative), so 0 is a valid bound; the λ-dual and
    group bounds of a stopped search can fall below it (an open node's
    −λ·Tmax term). With a bound ≥ 0 and a cost ≥ 0 the gap (UB − LB)/UB is at
    most 1 (100 %).
    """
    if math.isfinite(lower) and lower < 0:
        diag["lower_bound_clamped"] = (f"the search's bound {lower:.6g} is below 0; every plan costs "
                                       "κ·x + β ≥ 0 (eq. (2)), so 0 is reported")
        return 0.0
    return lower


def _open_bounds(run: SolveRun) -> list:
    """Bounds of the boxes left open by a stop; the first ``open_rebounds`` are
    re-bounded at the final λ (any λ is valid; the better is kept)."""
    run.heap.sort()
    out = []
    n = min(run.opts.open_rebounds, len(run.heap))
    for i in range(n):
        b, _, box = run.heap[i]
        limit = limits.time_limit_s()     # a grace of 2 % of the limit past the deadline
        if limit is not None and limits.time_left() < -0.02 * limit:
            n = i
            break
        _, search = run.box_search(box, run.leaves.best_cost)
        out.append(max(b, search.root_bound() if search is not None else math.inf))
    pg = run.pair_groups
    out += [b for b, _, box in run.heap[n:] if pg is None or not pg.covers(box.ranges)]
    return out


def build_result(run: SolveRun) -> SolveResult:
    """The plan, its exact cost, the proven bound and the status.

    Parameters
    ----------
    run : SolveRun
        The solve after its last phase (complete or stopped).

    Returns
    -------
    SolveResult
        ``optimal``, ``feasible``, ``time_limit``, ``infeasible`` or
        ``error`` (see :func:`~.solver.solve_general`); the lower bound is
        min(incumbent, discarded bounds, open bounds), clamped at 0.
    """
    inst, P, diag, params, leaves = run.inst, run.prob, run.diag, run.params, run.leaves
    stopped = run.stopped_in is not None
    open_bounds = _open_bounds(run) if stopped else []
    if stopped and not run.searched:
        open_bounds.append(0.0)     # boxes never bounded: only the trivial bound (every cost ≥ 0)
    if run.pair_groups is not None:
        diag["pair_groups"] = dict(run.pair_groups.stats, seconds=round(run.pair_groups.stats["seconds"], 3))
    diag["node_warm_starts"] = warm_starts(P).started       # rows whose Kelley began at a stored π
    diag.update(group_multipliers=0 if run.pool is None else int(run.pool.Pi.shape[0]),
                scenario_groups=0 if run.pool is None else len(run.pool.groups))
    diag.update(run.work, leaf_evaluations=leaves.evaluations, lambda_resets=run.lam_resets,
                time_price=run.lam, enumeration_steps=P.cover_spent, stopped_in=run.stopped_in,
                total_s=time.perf_counter() - run.t0)
    limit = "node limit" if run.hit_node_limit else f"time limit (in the {run.stopped_in} phase)"
    if leaves.best is None:
        if stopped:
            # the open and discarded boxes' bounds are valid without a plan too
            lower = clamp_bound(min([run.lb_discard] + open_bounds), diag)
            return SolveResult(algorithm="milp", status="error" if run.hit_node_limit else "time_limit",
                               message=f"{limit} reached before any plan", params=params, diagnostics=diag,
                               lower_bound=lower if math.isfinite(lower) else None)
        return SolveResult(algorithm="milp", status="infeasible", message=(
            f"no plan of at most K̄ = {inst.horizon} epochs meets both the quantile (at most {P.p} of {run.S} "
            f"in-sample scenarios above ℓmax = {P.lmax:g}) and Tmax = {P.T:g} (exhaustive search)"),
            params=params, diagnostics=diag)
    cost = leaves.best_cost
    lower = clamp_bound(min([cost, run.lb_discard] + open_bounds), diag)
    g = SolveResult.relative_gap(cost, lower)
    plan, viol = _plan(run)
    diag.update(in_sample_violations=viol * (int(params["scenarios"]) if run.deterministic else 1),
                epochs=len(plan.epochs))
    if viol > P.p:   # the search only accepts SAA-feasible leaves; this guards the bookkeeping
        return SolveResult(algorithm="milp", status="error", message="internal check failed: plan violates the "
                           "in-sample quantile", params=params, diagnostics=diag)
    if g is not None and g <= params["gap"]:
        status, message = "optimal", f"optimal within relative gap {g:.2e} (tolerance {params['gap']:g})"
    elif stopped:
        status = "feasible" if run.hit_node_limit else "time_limit"
        message = f"{limit} reached" + ("; the plan is SAA-feasible and exactly costed, its optimality unproven"
                                        if run.hit_node_limit else "")
    elif run.work["unrealised_leaves"]:
        status, message = "feasible", (
            f"search complete but a gap of {g:.2e} remains (tolerance {params['gap']:g}): "
            f"{run.work['unrealised_leaves']} two-group leaves could not be ordered (more than "
            "``max_placements`` partial placements) and keep only their bounds, or a leaf's "
            "cluster split kept its bound")
    else:
        status, message = "feasible", (f"search complete but the leaf split bounds leave a gap of {g:.2e} "
                                       f"(tolerance {params['gap']:g})")
    return SolveResult(algorithm="milp", status=status, message=message, plan=plan, cost=cost, lower_bound=lower,
                       gap=g, params=params, diagnostics=diag)


def _plan(run: SolveRun) -> tuple[Plan, int]:
    """The incumbent as a :class:`Plan`, and its in-sample violations (checked independently)."""
    inst = run.inst
    assert run.leaves.best is not None      # build_result asks for a plan only with an incumbent
    models, clusters, held, alloc = run.leaves.best
    losses = run.prob.losses(models, np.array([run.tables.gam[held[int(n)]] for n in clusters]))
    viol = int(np.count_nonzero(losses > loss_threshold(run.prob.lmax)))
    plan = Plan(epochs=[Epoch(model=inst.models[m].name, cluster=inst.clusters[n].name, allocation=float(x))
                        for m, n, x in zip(models, clusters, alloc.x)],
                datasets={inst.clusters[n].name: [inst.datasets[d].name for d in np.nonzero(run.bits[c])[0]]
                          for n, c in sorted(held.items())})
    return plan, viol


__all__ = ["build_result", "clamp_bound"]
