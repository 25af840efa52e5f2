"""One solver interface for every algorithm (benchopt-style).

An algorithm is a small declarative class: a registry ``name``, a display
``label``, its ``parameters`` as data (:class:`~deplbench.params.Param`,
re-exported here: default, type, bounds, help), whether it is ``exact``, its
plotting ``style`` (:class:`PlotStyle`) and a ``run(instance, **params) ->
SolveResult`` method. The runner and the CLI call :func:`solve` and know
nothing about any single algorithm; the reports read the metadata stored
with each row (:func:`deplbench.solvers.registry.solver_info`). A third-party
package adds one through an entry point (docs/extending.md).

:func:`solve` validates and converts the parameters (raising
:class:`~deplbench.errors.SolverError` naming the parameter), removes
unusable models/clusters/datasets (:mod:`deplbench.formulations.preprocess`),
times the run,
turns an unexpected exception into a result with status ``error`` (a crash
never escapes to a sweep), and judges the returned plan with the
out-of-sample evaluator, attaching the evaluation to the record.

Examples
--------
>>> from deplbench.solvers.base import solve               # doctest: +SKIP
>>> res = solve(instance, "depl", eta=100)                     # doctest: +SKIP
>>> res.status, res.cost, res.evaluation["verdict"]            # doctest: +SKIP
('feasible', 1234.5, 'feasible')
"""

from __future__ import annotations

import time
import traceback
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

from deplbench.errors import DeplbenchError, SolverError
from deplbench.limits import TimeLimitReached, deadline
from deplbench.formulations.closed_loop import (  # noqa: F401 - the policy interface, re-exported
    STOP, ClosedLoopPolicy, Decision, FixedPlanPolicy, PolicyState, StopAtTarget, simulate,
)
from deplbench.formulations.evaluate import evaluate_plan
from deplbench.formulations.preprocess import reduce_instance
from deplbench.formulations.result import SolveResult
from deplbench.params import Param, resolve

#: What an algorithm's result can be a reference for (:attr:`Solver.reference`).
REFERENCE_KINDS = ("", "saa", "certified-static", "exact-static", "adaptive")

#: Default out-of-sample trajectories used to judge every returned plan.
DEFAULT_EVAL_SAMPLES = 50_000


#: Colours of the built-in algorithms come first; a solver that declares no
#: style gets one of the remaining colours, picked by a stable hash of its
#: name (the same in every process and every report).
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")


@dataclass(frozen=True)
class PlotStyle:
    """How an algorithm looks in every figure: matplotlib colour, marker, line style."""

    colour: str
    marker: str = "o"
    linestyle: str = "-"

    def to_dict(self) -> dict[str, str]:
        return {"colour": self.colour, "marker": self.marker, "linestyle": self.linestyle}

    @classmethod
    def for_name(cls, name: str) -> "PlotStyle":
        """A deterministic style for a solver that declares none.

        Drawn from the palette's last colours (the first seven belong to the
        built-in algorithms) with a CRC-32 of the name, which unlike
        ``hash()`` does not change between processes.
        """
        h = zlib.crc32(name.encode("utf-8"))
        spare = PALETTE[7:]
        return cls(spare[h % len(spare)], MARKERS[(h // 7) % len(MARKERS)],
                   LINESTYLES[(h // 71) % len(LINESTYLES)])


class Solver:
    """Base class of every algorithm: metadata as class data, and :meth:`run`.

    A solver declares itself completely; nothing else in deplbench has to
    change to add one (see docs/extending.md).

    Attributes
    ----------
    name : str
        Registry name (``--algo NAME``, the ``algorithm`` column of results).
    label : str
        Display name in tables and figures (default: ``name``).
    description : str
        One line for ``deplbench algorithms``.
    parameters : dict of str to Param
        Every tunable parameter, validated by :mod:`deplbench.params`.
    exact : bool
        True for methods that prove optimality (their ``optimal`` rows serve
        as the reference optimum in reports).
    reference_priority : int
        Among exact methods, which optimum a report trusts first when several
        ran on one instance (lower first).
    reference : str
        Which optimum this algorithm's result is a reference for, read by the
        reports from the task record (never by name): ``""`` (none, the
        default), ``"saa"`` (optimum of the sample-average problem on its S
        scenarios), ``"certified-static"`` (statistical bracket on the true
        static optimum), ``"exact-static"`` (deterministic bracket on the
        true chance-constrained static optimum, exact violation
        probabilities), ``"adaptive"`` (bracket on the least expected cost of
        any closed-loop policy with P(success) >= omega). See
        :data:`REFERENCE_KINDS`.
    style : PlotStyle or None
        Colour, marker, line style; None picks :meth:`PlotStyle.for_name`.
    preprocess : bool
        Whether :func:`solve` removes unusable models/clusters first
        (:mod:`deplbench.formulations.preprocess`); True for every built-in.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Param]] = {}
    exact: ClassVar[bool] = False
    reference_priority: ClassVar[int] = 100
    reference: ClassVar[str] = ""
    style: ClassVar[PlotStyle | None] = None
    preprocess: ClassVar[bool] = True

    def run(self, instance, **params) -> SolveResult:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """Whether the algorithm applies to ``instance``, and if not, why (one line).

        The default applies everywhere. An algorithm that declines an
        instance (its structure is outside what the method handles) returns
        ``(False, reason)``; the runner and :func:`solve` then record status
        ``skipped`` with the reason, which is not a failure.
        """
        return True, ""

    def closed_loop_policy(self, instance, result: SolveResult, **params) -> ClosedLoopPolicy | None:
        """Optional: how the algorithm acts when it observes each epoch's loss.

        Returns a :class:`~deplbench.formulations.closed_loop.ClosedLoopPolicy`
        built from the result of :meth:`run` on ``instance``, or None (the
        default): the algorithm is a fixed plan, simulated by
        :class:`~deplbench.formulations.closed_loop.FixedPlanPolicy`. See
        :func:`closed_loop`.
        """
        return None

    @classmethod
    def resolve_params(cls, params: dict[str, Any], *, strict: bool = False,
                       error: type[DeplbenchError] = SolverError) -> dict[str, Any]:
        """Defaults filled in, unknown names rejected, values converted.

        ``strict`` refuses strings for numbers (typed sources such as sweep
        TOML files); ``error`` is the exception class raised (default
        :class:`~deplbench.errors.SolverError`).
        """
        return resolve(cls.parameters, params, owner=f"algorithm {cls.name!r}", strict=strict, error=error)

    @classmethod
    def display_label(cls) -> str:
        return cls.label or cls.name

    @classmethod
    def plot_style(cls) -> PlotStyle:
        return cls.style if cls.style is not None else PlotStyle.for_name(cls.name)

    @classmethod
    def info(cls) -> dict[str, Any]:
        """JSON-able metadata: what the runner stores in each task record."""
        return {
            "name": cls.name,
            "label": cls.display_label(),
            "exact": bool(cls.exact),
            "reference_priority": int(cls.reference_priority),
            "reference": str(cls.reference),
            "description": cls.description,
            "style": cls.plot_style().to_dict(),
            "parameters": {k: p.describe() for k, p in cls.parameters.items()},
        }


#: The evaluation arguments of :func:`solve`, checked like solver parameters.
EVALUATION_PARAMETERS = {
    "evaluate": Param(True, bool, "judge the returned plan out of sample"),
    "eval_samples": Param(DEFAULT_EVAL_SAMPLES, int, "out-of-sample trajectories", low=100),
    "eval_seed": Param(0, int, "seed of the out-of-sample stream", low=0),
}


def _check_solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed) -> type[Solver]:
    """The solver class, after checking :func:`solve`'s own arguments.

    Raises SolverError naming the argument (docs/DESIGN.md, "Input rules"),
    so a wrong value fails before the run rather than as a status ``error``
    record or a TypeError from deep inside.
    """
    from deplbench.instances.model import Instance

    if not isinstance(instance, Instance):
        raise SolverError(f"instance: expected an Instance (deplbench.instances.model), "
                          f"got {type(instance).__name__}")
    for name, value in (("evaluate", evaluate), ("eval_samples", eval_samples), ("eval_seed", eval_seed)):
        EVALUATION_PARAMETERS[name].convert(name, value, strict=True)
    if isinstance(algorithm, str):
        from deplbench.solvers.registry import get_solver

        return get_solver(algorithm)
    if isinstance(algorithm, type) and issubclass(algorithm, Solver):
        return algorithm
    raise SolverError(f"algorithm: expected a registry name or a Solver subclass, got {type(algorithm).__name__}")


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
        (:func:`~deplbench.formulations.preprocess.reduce_instance`; recorded
        in ``diagnostics["preprocess"]``), and the plan is judged on the
        original ``instance``.
    evaluate : bool, default True
        Judge the returned plan with :func:`~deplbench.formulations.evaluate.evaluate_plan`.
    eval_samples, eval_seed : int
        Out-of-sample trajectories and their seed.
    **params
        The algorithm's parameters; strings are converted (CLI ``k=v``).

    Returns
    -------
    SolveResult
        ``runtime_s`` is the algorithm's own wall time (evaluation excluded,
        recorded as ``diagnostics['eval_s']``).

    Raises
    ------
    SolverError
        Unknown algorithm or invalid parameters — the caller's mistake. Any
        failure inside the algorithm becomes a result with status ``error``.
    """
    cls = _check_solve_arguments(instance, algorithm, evaluate, eval_samples, eval_seed)
    resolved = cls.resolve_params(params)
    variants = {"transfer_cost_mode": instance.transfer_cost_mode, "data_rule": instance.data_rule}
    start = time.perf_counter()
    reduction = None
    try:
        # Unusable models/clusters/datasets never reach a solver (see
        # formulations.preprocess); names are kept, so the plan needs no mapping.
        reduction = reduce_instance(instance) if cls.preprocess else None
        if reduction is not None and reduction.instance is None:
            result = SolveResult(algorithm=cls.name, status="infeasible", message=reduction.reason)
        else:
            # A declared time_limit sets the deadline every check_time() reads (deplbench.limits).
            with deadline(resolved.get("time_limit")):
                result = cls().run(reduction.instance if reduction is not None else instance, **resolved)
    except TimeLimitReached as exc:  # a heuristic's deadline (deplbench.limits): no plan
        result = SolveResult(algorithm=cls.name, status="time_limit", message=str(exc))
    except DeplbenchError as exc:
        result = SolveResult(algorithm=cls.name, status="error", message=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash must become data
        result = SolveResult(
            algorithm=cls.name,
            status="error",
            message=f"{type(exc).__name__}: {exc}",
            diagnostics={"traceback": traceback.format_exc(limit=20)},
        )
    elapsed = time.perf_counter() - start
    if not isinstance(result, SolveResult):
        result = SolveResult(algorithm=cls.name, status="error",
                             message=f"{cls.__name__}.run returned {type(result).__name__}, not a SolveResult")
    if reduction is not None and (reduction.changed or reduction.instance is None):
        result.diagnostics["preprocess"] = reduction.summary()
    result.algorithm = cls.name
    result.runtime_s = elapsed
    result.params = {**resolved, **result.params}
    result.variants = variants
    if evaluate and result.plan is not None:
        t0 = time.perf_counter()
        try:
            ev = evaluate_plan(instance, result.plan, samples=eval_samples, seed=eval_seed)
            result.evaluation = ev.to_dict()
            if result.cost is None:
                result.cost = ev.cost
            elif abs(ev.cost - result.cost) > 1e-6 * max(1.0, abs(ev.cost)):
                result.diagnostics["cost_mismatch"] = {"reported": result.cost, "evaluated": ev.cost}
            if ev.violations and result.status in ("optimal", "feasible", "time_limit"):
                # The contract: a returned plan passes the hard constraints
                # (4)-(6) or the record says infeasible. (An out-of-sample
                # quantile miss is not a violation: it is the verdict, kept
                # in the evaluation, e.g. for SAA-optimal MILP plans.)
                result.diagnostics["reported_status"] = result.status
                result.status = "infeasible"
                result.message = "the returned plan violates hard constraints: " + "; ".join(ev.violations[:3])
        except DeplbenchError as exc:
            result.diagnostics["evaluation_error"] = str(exc)
            result.diagnostics["reported_status"] = result.status
            result.status = "error"
            result.message = f"the returned plan could not be evaluated: {exc}"
        result.diagnostics["eval_s"] = time.perf_counter() - t0
    if result.gap is None and result.lower_bound is not None:
        result.gap = SolveResult.relative_gap(result.cost, result.lower_bound)
    return result


def closed_loop(instance, result: SolveResult, algorithm: str | type[Solver] | None = None, *,
                runs: int = 10_000, seed: int = 0, confidence: float = 0.95) -> dict:
    """Closed-loop simulation of a solve result (docs/DESIGN.md, "Closed-loop evaluation").

    Simulates, on the same seeded runs (:func:`~deplbench.formulations.closed_loop.simulate`):
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
        As :func:`~deplbench.formulations.closed_loop.simulate`.

    Returns
    -------
    dict
        ``{"runs", "seed", "confidence", "plan", "plan_stopped", "policy"}``,
        each simulation as its ``summary()`` (None when not applicable).

    Raises
    ------
    SolverError
        Unknown algorithm. PlanError: invalid runs/seed/confidence.
    """
    if algorithm is None:
        algorithm = result.algorithm
    if isinstance(algorithm, str):
        from deplbench.solvers.registry import get_solver

        cls = get_solver(algorithm)
    else:
        cls = algorithm
    out = {"runs": int(runs), "seed": int(seed), "confidence": float(confidence),
           "plan": None, "plan_stopped": None, "policy": None}
    if result.plan is not None:
        fixed = FixedPlanPolicy(instance, result.plan, name=f"{cls.display_label()} (plan)")
        out["plan"] = simulate(instance, fixed, runs, seed, confidence).summary()
        stopped = StopAtTarget(fixed, instance.loss_max, name=f"{cls.display_label()} (plan, stop at ℓmax)")
        out["plan_stopped"] = simulate(instance, stopped, runs, seed, confidence).summary()
    # a policy may exist without a static plan (adaptive-opt's); every other
    # closed_loop_policy returns None when the run returned no plan
    policy = cls().closed_loop_policy(instance, result, **{k: v for k, v in (result.params or {}).items()
                                                          if k in cls.parameters})
    if policy is not None:
        out["policy"] = simulate(instance, policy, runs, seed, confidence).summary()
    return out


__all__ = ["Param", "PlotStyle", "Solver", "REFERENCE_KINDS", "solve", "closed_loop", "DEFAULT_EVAL_SAMPLES",
           "ClosedLoopPolicy", "FixedPlanPolicy", "StopAtTarget", "PolicyState", "Decision", "STOP",
           "simulate"]
