"""Run one algorithm on one instance: :func:`solve` and :func:`closed_loop`.

:func:`solve` validates and converts the parameters (raising
:class:`~deplbench.errors.SolverError` naming the parameter), asks the
algorithm whether it applies (:meth:`~deplbench.solvers.base.Solver.applies`;
if not, the result has status ``skipped`` and the reason), removes unusable
models/clusters/datasets (:mod:`deplbench.formulations.model.preprocess`), times
the run, turns an unexpected exception into a result with status ``error``
(a crash never escapes to a sweep), and judges the returned plan with the
out-of-sample evaluator, attaching the evaluation to the record.
:func:`closed_loop` simulates a result's plan, and the algorithm's own
policy, in the closed-loop simulator.

This module sits above :mod:`deplbench.solvers.base` (the interface) and
:mod:`deplbench.solvers.registry` (the names), so that neither imports the
other back.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> instance = generate("scaling", n_models=3, horizon=8, seed=0)
>>> res = solve(instance, "depl")
>>> res.status, round(res.cost, 2), res.evaluation["verdict"]
('feasible', 139.36, 'feasible')
>>> solve(instance, "knapsack-dp").status      # declines: not a knapsack instance
'skipped'
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
import sys
import time
import traceback
from typing import Any

from deplbench.errors import DeplbenchError, PlanError, SolverError
from deplbench.formulations.evaluation.closed_loop import ClosedLoopPolicy, FixedPlanPolicy, StopAtTarget, simulate
from deplbench.formulations.evaluation.evaluate import check_evaluation_memory, evaluate_plan
from deplbench.formulations.evaluation.instance_check import check_instance
from deplbench.formulations.evaluation.settings import (
    CONFIDENCE,
    MIN_SAMPLES,
    RUNS,
    SEED,
    SOLVE_SAMPLES,
    check_closed_loop,
)
from deplbench.formulations.model.plan import Plan, parse_plan
from deplbench.formulations.model.preprocess import reduce_instance
from deplbench.formulations.model.result import STATUSES, SolveResult
from deplbench.jsonio import dumps, json_default
from deplbench.limits import TimeLimitReached, deadline, memory_budget, no_deadline
from deplbench.params import Param
from deplbench.solvers.base import Solver
from deplbench.solvers.registry import get_solver

#: Default out-of-sample trajectories used to judge every returned plan.
DEFAULT_EVAL_SAMPLES = SOLVE_SAMPLES


#: The evaluation arguments of :func:`solve`, checked like solver parameters.
EVALUATION_PARAMETERS = {
    "evaluate": Param(True, bool, "judge the returned plan out of sample"),
    "eval_samples": Param(DEFAULT_EVAL_SAMPLES, int, "out-of-sample trajectories", low=MIN_SAMPLES),
    "eval_seed": Param(0, int, "seed of the out-of-sample stream", low=0),
}


def check_solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed) -> type[Solver]:
    """The solver class, after checking :func:`solve`'s own arguments (:func:`_solve_arguments`)."""
    return _solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed)[0]


def _solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed) -> tuple[type[Solver], bool, int, int]:
    """The solver class and ``evaluate``, ``eval_samples``, ``eval_seed`` as checked and converted.

    Raises SolverError naming the argument (docs/DESIGN.md, "Input rules"),
    so a wrong value fails before the run rather than as a status ``error``
    record or a TypeError from deep inside. :func:`solve` uses the converted
    values, so what was checked is what the evaluation gets.
    """
    # one built or changed in code: every rule again (instance_check), its type first
    check_instance(instance, type_error=SolverError)
    given = {"evaluate": evaluate, "eval_samples": eval_samples, "eval_seed": eval_seed}
    checked = {name: EVALUATION_PARAMETERS[name].convert(name, value, strict=True) for name, value in given.items()}
    if checked["evaluate"]:        # refused before the solve, not after it
        check_eval_samples(instance, checked["eval_samples"])
    return _solver_class(algorithm), checked["evaluate"], checked["eval_samples"], checked["eval_seed"]


def check_eval_samples(instance, eval_samples: int, field: str = "eval_samples",
                       error: type[DeplbenchError] = SolverError) -> None:
    """Refuse, naming ``field``, an ``eval_samples`` whose judging of a returned plan would not fit the
    evaluator's memory rule (:func:`~deplbench.formulations.evaluation.memory.check_evaluation_memory`).

    The one rule for :func:`solve` and a sweep's load check (``sweep.evaluation.samples``): the final
    losses always; the per-epoch bands only where a law is random (else one trajectory is
    evaluated, exactly), sized for K̄ epochs, the longest plan the instance allows (constraint (5)).
    """
    check_evaluation_memory(eval_samples, 0, False, field=field, error=error)
    if not instance.is_deterministic:
        # _judge computes the per-epoch bands of the returned plan, which has at most K̄ epochs
        # (constraint (5)): sized for K̄ here (the finals and one block, the bands in epoch chunks
        # when the trajectories do not fit whole), so that a count too large for the returned
        # plan never fails after the solve (status error, the solve's work lost), and every
        # algorithm's plan on this instance is judged with the same count
        check_evaluation_memory(eval_samples, instance.horizon, True, field=field, error=error, up_to=True)


def _solver_class(algorithm) -> type[Solver]:
    """The Solver subclass ``algorithm`` names (a registry name) or is; SolverError otherwise."""
    if isinstance(algorithm, str):
        return get_solver(algorithm)
    if isinstance(algorithm, type) and issubclass(algorithm, Solver):
        return algorithm
    raise SolverError(f"algorithm: expected a registry name or a Solver subclass, got {type(algorithm).__name__}")


def _declined(cls: type[Solver], instance) -> SolveResult | None:
    """The ``skipped`` result when the algorithm declares it does not apply
    (:meth:`~deplbench.solvers.base.Solver.applies`), ``error`` when the
    declaration itself fails, None when it applies."""
    try:
        ok, reason = cls.applies(instance)
    except Exception as exc:  # noqa: BLE001 - a crash must become data
        return SolveResult(algorithm=cls.name, status="error", runtime_s=0.0,
                           message=f"{cls.__name__}.applies failed: {type(exc).__name__}: {exc}")
    if ok:
        return None
    return SolveResult(algorithm=cls.name, status="skipped", runtime_s=0.0,
                       message=str(reason) or f"{cls.name} does not apply to this instance")


def solve(
    instance,
    algorithm: str | type[Solver],
    *,
    evaluate: bool = True,
    eval_samples: int = DEFAULT_EVAL_SAMPLES,
    eval_seed: int = 0,
    **params: Any,
) -> SolveResult:
    """Run one algorithm on one instance and judge its plan out-of-sample.

    Parameters
    ----------
    instance : Instance
    algorithm : str or Solver subclass
        A registry name (``deplbench algorithms`` lists them) or a class.
        Unless the class sets ``preprocess = False``, unusable models,
        clusters and datasets are removed first
        (:func:`~deplbench.formulations.model.preprocess.reduce_instance`; recorded
        in ``diagnostics["preprocess"]``), and the plan is judged on the
        original ``instance``.
    evaluate : bool, default True
        Judge the returned plan with :func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`.
    eval_samples, eval_seed : int
        Out-of-sample trajectories and their seed.
    **params
        The algorithm's parameters; strings are converted (CLI ``k=v``).

    Returns
    -------
    SolveResult
        ``runtime_s`` is the algorithm's own wall time (evaluation excluded,
        recorded as ``diagnostics['eval_s']``). Status ``skipped`` (with the
        reason, no plan, not run) when the algorithm declares that it does
        not apply to ``instance``.

    Raises
    ------
    SolverError
        Unknown algorithm or invalid parameters — the caller's mistake. Any
        failure inside the algorithm becomes a result with status ``error``.
    InstanceError
        An instance built or changed in code that breaks the format's rules
        (``model_copy(update={"omega": 5.0})``), naming the field.

    Notes
    -----
    The algorithm runs on a deep copy of ``instance`` (made inside the
    deadline: the time limit bounds the copy too), with its standard
    output sent to standard error; what it returns is checked field by field
    (:func:`check_returned`), the record's ``cost`` is the returned plan's
    objective (2) as evaluated, and ``optimal`` from a class that does not
    declare ``exact`` is recorded as ``feasible`` (docs/extending.md).

    A caller's :func:`deplbench.limits.deadline` around the call (a sweep
    task's outer stop, :func:`deplbench.benchmarks.tasks.run_task`) bounds
    the solver as its own ``time_limit`` does: whichever ends first stops
    it, with status ``time_limit`` and what it has. The out-of-sample
    judging of the returned plan runs outside both
    (:func:`deplbench.limits.no_deadline`).
    """
    cls, evaluate, eval_samples, eval_seed = _solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed)
    resolved = cls.resolve_params(params)
    # built once, before the run: a combination the Param table cannot check is the caller's error
    settings = cls.settings_of(resolved)
    variants = {"transfer_cost_mode": instance.transfer_cost_mode, "data_rule": instance.data_rule}
    declined = _declined(cls, instance)
    if declined is not None:
        declined.params, declined.variants = dict(resolved), variants
        return declined
    start = time.perf_counter()
    reduction = None
    try:
        # The solver's clock parameter (time_limit, or an outer budget where time_limit bounds one
        # inner solve) sets the deadline every check_time() reads (deplbench.limits): the one clock
        # of the solve, opened before the copy and the preprocessing below, which are the solve's
        # work too (a deep copy grows with the switches): the solver's own first check sees the
        # time they took, and reports it in its own terms.
        with deadline(resolved.get(cls.clock)), memory_budget(resolved.get("memory_limit")):
            # The algorithm gets its own deep copy: the plan is judged on the caller's instance,
            # which an algorithm that changes what it was given (object.__setattr__ on the frozen
            # model, a list inside it) must not change under the judge (a larger Tmax would hide
            # a breach of (4)).
            work = instance.model_copy(deep=True)
            # A solver's banner or a user's print() goes to stderr: stdout carries only what the
            # caller asked for (one JSON object under --json).
            with contextlib.redirect_stdout(sys.stderr):
                # Unusable models/clusters/datasets never reach a solver (see
                # formulations.model.preprocess); names are kept, so the plan needs no mapping.
                reduction = reduce_instance(work) if cls.preprocess else None
                if reduction is not None and reduction.instance is None:
                    result = SolveResult(algorithm=cls.name, status="infeasible", message=reduction.reason)
                else:
                    result = cls().run_settings(reduction.instance if reduction is not None else work,
                                                settings)
    except SystemExit as exc:
        # sys.exit() inside an algorithm would end the command (or a sweep's task) with status 0
        # and no output: it is the algorithm's failure, recorded as data like any other
        result = SolveResult(algorithm=cls.name, status="error",
                             message=f"{cls.__name__}.run called sys.exit({exc.code!r}) instead of returning "
                                     "a SolveResult")
    except TimeLimitReached as exc:  # a heuristic's deadline (deplbench.limits): no plan
        result = SolveResult(algorithm=cls.name, status="time_limit", message=str(exc))
    except DeplbenchError as exc:
        result = SolveResult(algorithm=cls.name, status="error", message=str(exc))
    except MemoryError as exc:
        # an array no estimate guarded: one line naming the sizes that scale it, not numpy's text alone
        result = SolveResult(algorithm=cls.name, status="error", message=memory_error_message(cls.name, instance,
                                                                                             resolved, exc))
    except Exception as exc:  # noqa: BLE001 - a crash must become data
        result = SolveResult(
            algorithm=cls.name,
            status="error",
            message=f"{type(exc).__name__}: {exc}",
            diagnostics={"traceback": traceback.format_exc(limit=20)},
        )
    elapsed = time.perf_counter() - start
    result = check_returned(cls, result)
    if reduction is not None and (reduction.changed or reduction.instance is None):
        result.diagnostics["preprocess"] = reduction.summary()
    result.algorithm = cls.name
    result.runtime_s = elapsed
    result.params = {**resolved, **result.params}
    result.variants = variants
    _refuse_claimed_optimality(cls, result)
    if evaluate and result.plan is not None:
        # the judging is the harness's, not the solver's: no deadline around the solve cuts it
        with no_deadline():
            _judge(instance, result, result.plan, eval_samples, eval_seed)
        # the evaluated cost, once the verdict is in: a plan breaking (4)-(6) stays infeasible
        if result.status in ("optimal", "feasible", "time_limit"):
            _refuse_overflowed_cost(result)
    else:
        _refuse_overflowed_cost(result)
    if result.gap is None and result.lower_bound is not None:
        result.gap = _gap_or_none(result.cost, result.lower_bound)
    return result


def _gap_or_none(cost: float | None, lower_bound: float) -> float | None:
    """The record's relative gap, or None where a bound lies above the plan's cost beyond rounding
    (1e-9 relative, certify's tolerance): then one of the two is not what it claims (the plan not
    feasible, or the bound not valid), and a gap clamped to 0 would read as a proof of optimality."""
    if cost is not None and math.isfinite(cost) and lower_bound > cost + 1e-9 * max(1.0, abs(cost)):
        return None
    return SolveResult.relative_gap(cost, lower_bound)


def check_returned(cls: type[Solver], result: Any) -> SolveResult:
    """The record an algorithm returned, or a status-``error`` record naming the field it got wrong.

    The contract of ``run()`` (docs/extending.md) checked field by field, so
    that a user's algorithm cannot end the command in a traceback, print a
    status that is none of :data:`~deplbench.formulations.model.result.STATUSES`
    with exit 0, or hand a report a cost that is not a number. A
    diagnostics or params value JSON cannot hold (an arbitrary object) is
    kept as its ``repr``, as the results store keeps it
    (:func:`~deplbench.jsonio.json_default`), rather than losing the plan.
    """
    def failed(why: str) -> SolveResult:
        return SolveResult(algorithm=cls.name, status="error", message=f"{cls.__name__}.run returned {why}")

    if not isinstance(result, SolveResult):
        return failed(f"{type(result).__name__}, not a SolveResult")
    if result.status not in STATUSES:
        return failed(f"status {result.status!r}, not one of {', '.join(STATUSES)}")
    if result.plan is not None and not isinstance(result.plan, Plan):
        return failed(f"a plan of type {type(result.plan).__name__}, not a Plan "
                      "(deplbench.formulations.model.plan.parse_plan builds one from a dict)")
    if result.plan is not None:
        try:        # model_copy(update=...) skips the Plan's own checks: they run here
            parse_plan(result.plan.model_dump(warnings=False))
        except PlanError as exc:
            return failed(f"a plan that is not valid: {exc}")
    for name in ("cost", "lower_bound", "gap"):
        value = getattr(result, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return failed(f"{name} = {value!r}, not a number")
        setattr(result, name, float(value))         # numpy scalars too: the record holds floats
    # a bound or gap of nan compares false with everything: max(0, nan) would record a gap of 0, a proof
    for name in ("lower_bound", "gap"):
        if getattr(result, name) is not None and math.isnan(getattr(result, name)):
            return failed(f"{name} = nan, not a number")
    if result.gap is not None and not 0.0 <= result.gap < math.inf:
        return failed(f"gap = {result.gap!r}: a relative gap (cost − bound)/|cost| is finite and ≥ 0")
    if result.plan is not None and result.lower_bound == math.inf and result.cost != math.inf:
        # (a cost of inf beside it is an overflow of (2), refused as such after the judging)
        return failed("lower_bound = inf (no plan costs that much) beside a plan")
    if not isinstance(result.message, str):
        return failed(f"message = {result.message!r}, not a str")
    for name in ("params", "diagnostics"):
        value = getattr(result, name)
        if not isinstance(value, dict):
            return failed(f"{name} of type {type(value).__name__}, not a dict")
        try:
            dumps(value)
        except (TypeError, ValueError):
            setattr(result, name, json.loads(dumps(value, default=json_default)))
    if result.evaluation is not None:
        # the out-of-sample judgement is the harness's (_judge): one an algorithm brings would stand,
        # verdict and quantile, in the record of a plan nobody evaluated
        result.diagnostics["evaluation_dropped"] = "the algorithm's own evaluation (the judging is deplbench's)"
        result.evaluation = None
    return result


def _refuse_claimed_optimality(cls: type[Solver], result: SolveResult) -> None:
    """Status ``optimal`` is a proof only exact methods give (docs/extending.md):
    from an algorithm that declares ``exact = False`` it is recorded as ``feasible``,
    the claim kept in ``diagnostics["reported_status"]``, so no report takes a
    heuristic's plan for the reference optimum."""
    if result.status == "optimal" and not cls.exact:
        result.diagnostics["reported_status"] = "optimal"
        result.status = "feasible"
        note = f"status optimal recorded as feasible: {cls.name} declares exact = False"
        result.message = f"{note}; {result.message}" if result.message else note


def _refuse_overflowed_cost(result: SolveResult) -> None:
    """A cost (2) that binary64 cannot hold is an error, not a number.

    The instance's magnitude rules refuse a cluster whose cheapest plan
    already overflows (:mod:`deplbench.instances.magnitudes`), but a longer
    or dearer plan can still sum past 1.8e308: its cost would be ``inf``, its
    gap ``nan`` and every comparison with it meaningless, under a status
    (``optimal``, ``feasible``) that claims a usable answer.
    """
    if result.status != "error" and result.cost is not None and not math.isfinite(result.cost):
        if math.isnan(result.cost):
            # nan is no sum of finite positive terms: the algorithm's own number, not an overflow
            why = "cost: the algorithm reported a cost of nan" + (
                "" if result.plan is None else " (and its plan was not evaluated to replace it)")
        else:
            why = (f"cost: the plan's cost (2) is {result.cost} in binary64 (the sum of κ(n)·x over its "
                   "epochs overflows); rescale the money unit of the instance (clusters[i].unit_cost, "
                   "transfer costs)")
        result.message = why + (f"; the solver said: {result.message}" if result.message else "")
        result.status = "error"


def memory_error_message(algorithm: str, instance, params: dict, exc: BaseException) -> str:
    """One line for a :class:`MemoryError` inside ``algorithm``: what numpy could not
    allocate and the instance sizes and parameters that scale the solver's arrays.

    >>> from deplbench.instances.generators import generate
    >>> inst = generate("scaling", n_models=2, n_clusters=1, horizon=4, seed=1)
    >>> msg = memory_error_message("milp", inst, {"scenarios": 10**9},
    ...     MemoryError("Unable to allocate 266. TiB for an array with shape (10, 4) and data type float64"))
    >>> msg.split(";")[0]
    'memory: milp could not allocate 266. TiB (array shape (10, 4))'
    >>> "horizon = 4" in msg and "scenarios = 1000000000" in msg
    True
    """
    import re

    text = str(exc)
    m = re.search(r"allocate ([0-9.]+ ?\w+)(?: for an array with shape (\([^)]*\)))?", text)
    what = (f"could not allocate {m.group(1)}" + (f" (array shape {m.group(2)})" if m.group(2) else "")
            if m else "ran out of memory")
    sizes = [f"horizon = {instance.horizon}", f"models = {instance.n_models}", f"clusters = {instance.n_clusters}",
             f"datasets = {instance.n_datasets}"]
    knobs = [f"{k} = {params[k]}" for k in ("scenarios", "samples", "check_samples", "eta", "validation")
             if params.get(k) is not None]
    listed = sizes + knobs
    return (f"memory: {algorithm} {what}; the arrays scale with " + ", ".join(listed[:-1]) + f" and {listed[-1]}"
            + ": lower them (memory_limit guards only the arrays estimated in advance)")


def _judge(instance, result: SolveResult, plan: Plan, eval_samples: int, eval_seed: int) -> None:
    """Judge ``plan`` (the result's) out of sample on ``instance`` (in place): the
    evaluation, the cost when the solver gave none, and status ``infeasible``
    when the plan breaks a hard constraint (4)–(6)."""
    t0 = time.perf_counter()
    try:
        # exact=True: every stored evaluation carries the rigorous bounds
        # (violation_lo/hi, quantile_lo/hi, exact_verdict; formulations.evaluation.exact_violation).
        ev = evaluate_plan(instance, plan, samples=eval_samples, seed=eval_seed, exact=True)
        result.evaluation = ev.to_dict()
        if result.cost is None:
            result.cost = ev.cost
        elif ev.cost != result.cost and not abs(ev.cost - result.cost) <= 1e-6 * max(1.0, abs(ev.cost)):  # nan too
            # The record's cost is objective (2) of the plan it holds, whatever the algorithm
            # said: a report ranks algorithms by it. The claim is kept beside it.
            result.diagnostics["cost_mismatch"] = {"reported": result.cost, "evaluated": ev.cost}
            note = (f"cost: the algorithm reported {result.cost!r}, the plan's objective (2) is {ev.cost!r}; "
                    "recorded the evaluated cost")
            result.message = f"{note}; {result.message}" if result.message else note
            result.cost = ev.cost
            if result.lower_bound is not None:      # a gap the algorithm gave was against its own cost
                result.gap = _gap_or_none(result.cost, result.lower_bound)
        if ev.violations and result.status in ("optimal", "feasible", "time_limit"):
            # The contract: a returned plan passes the hard constraints
            # (4)-(6) or the record says infeasible. (An out-of-sample
            # quantile miss is not a violation: it is the verdict, kept
            # in the evaluation, e.g. for SAA-optimal MILP plans.)
            result.diagnostics["reported_status"] = result.status
            result.status = "infeasible"
            result.message = "the returned plan violates hard constraints: " + "; ".join(ev.violations[:3])
    except DeplbenchError as exc:
        why = str(exc)
        if why.startswith("samples: "):         # the evaluator's samples are solve()'s eval_samples
            why = "eval_samples: " + why[len("samples: "):]
        result.diagnostics["evaluation_error"] = why
        result.diagnostics["reported_status"] = result.status
        if plan.n_epochs > instance.horizon:
            # eval_samples is sized for K̄ epochs (check_eval_samples): a longer plan may not fit, but it
            # breaks (5) whatever the simulation would say; "use fewer samples" would hide the verdict
            result.status = "infeasible"
            result.message = (f"the returned plan violates hard constraints: epochs: {plan.n_epochs} epochs exceed "
                              f"the horizon K̄ = {instance.horizon} (not simulated: {why})")
        else:
            result.status = "error"
            result.message = f"the returned plan could not be evaluated: {why}"
    result.diagnostics["eval_s"] = time.perf_counter() - t0


def closed_loop(instance, result: SolveResult, algorithm: str | type[Solver] | None = None, *,
                runs: int = RUNS, seed: int = SEED, confidence: float = CONFIDENCE) -> dict:
    """Closed-loop simulation of a solve result (docs/DESIGN.md, "Closed-loop evaluation").

    Simulates, on the same seeded runs (:func:`~deplbench.formulations.evaluation.closed_loop.simulate`):
    ``plan`` — the returned plan as a fixed plan (its final loss equals the
    static evaluator's for the same seed); ``plan_stopped`` — the same plan
    stopped as soon as the observed ℓ ≤ ℓmax; ``policy`` — the algorithm's own
    closed-loop policy when it has one (:meth:`Solver.closed_loop_policy`),
    else None. Without a plan only ``policy`` can be filled.

    Parameters
    ----------
    instance : Instance
        The instance the result was solved on (targets applied).
    result : SolveResult
    algorithm : str or Solver subclass, optional
        Default: ``result.algorithm``.
    runs, seed, confidence
        As :func:`~deplbench.formulations.evaluation.closed_loop.simulate`
        (default 10000, 0, 0.95; limits of
        :func:`~deplbench.formulations.evaluation.settings.check_closed_loop`,
        checked before anything is solved or simulated).

    Returns
    -------
    dict
        ``{"runs", "seed", "confidence", "plan", "plan_stopped", "policy"}``,
        each simulation as its ``summary()`` (None when not applicable); and
        ``policy_error`` when the algorithm's ``closed_loop_policy`` (or the
        policy while simulated) raised, or returned something other than a
        :class:`~deplbench.formulations.evaluation.closed_loop.ClosedLoopPolicy`:
        the plan's simulations are kept, ``policy`` is None.

    Raises
    ------
    SolverError
        Unknown algorithm, or an argument of the wrong type (naming it).
        PlanError: invalid runs/seed/confidence. InstanceError: an instance
        that breaks the format's rules.
    """
    runs, seed, confidence = check_closed_loop(runs, seed, confidence)
    check_instance(instance, type_error=SolverError)
    if not isinstance(result, SolveResult):
        raise SolverError(f"result: expected the SolveResult of solve(), got {type(result).__name__}"
                          + (f" (the algorithm goes in the third argument: closed_loop(instance, "
                             f"result, {result!r}))" if isinstance(result, str) else ""))
    cls = _solver_class(result.algorithm if algorithm is None else algorithm)
    out: dict[str, Any] = {"runs": int(runs), "seed": int(seed), "confidence": float(confidence),
                           "plan": None, "plan_stopped": None, "policy": None}
    if result.plan is not None:
        fixed = FixedPlanPolicy(instance, result.plan, name=f"{cls.display_label()} (plan)")
        out["plan"] = simulate(instance, fixed, runs, seed, confidence).summary()
        stopped = StopAtTarget(fixed, instance.loss_max, name=f"{cls.display_label()} (plan, stop at ℓmax)")
        out["plan_stopped"] = simulate(instance, stopped, runs, seed, confidence).summary()
    # a policy may exist without a static plan (adaptive-opt's); every other
    # closed_loop_policy returns None when the run returned no plan
    try:
        with contextlib.redirect_stdout(sys.stderr):        # as in solve(): stdout is the caller's
            policy = cls().closed_loop_policy(instance, result, **{k: v for k, v in (result.params or {}).items()
                                                                  if k in cls.parameters})
            if policy is not None and not isinstance(policy, ClosedLoopPolicy):
                raise TypeError(f"returned {type(policy).__name__}, not a ClosedLoopPolicy")
            if policy is not None:
                out["policy"] = simulate(instance, policy, runs, seed, confidence).summary()
    except DeplbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - the algorithm's own code: its failure is data
        # the plan's simulations above are kept; the record says the policy failed and why
        out["policy_error"] = f"{cls.__name__}.closed_loop_policy: {type(exc).__name__}: {exc}"
    return out


__all__ = ["solve", "closed_loop", "check_solve_arguments", "check_returned", "check_eval_samples",
           "DEFAULT_EVAL_SAMPLES", "EVALUATION_PARAMETERS"]
