"""One solver interface for every algorithm (benchopt-style).

An algorithm is a small declarative class: a registry ``name``, its
``parameters`` as data (:class:`Param`: default, type, bounds, help) and a
``run(instance, **params) -> SolveResult`` method. The runner, the CLI and the
reports call :func:`solve` and know nothing about any single algorithm.

:func:`solve` validates and converts the parameters (raising
:class:`~deplbench.errors.SolverError` naming the parameter), times the run,
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

import math
import time
import traceback
from dataclasses import dataclass
from typing import Any, ClassVar

from deplbench.errors import DeplbenchError, SolverError
from deplbench.formulations.evaluate import evaluate_plan
from deplbench.formulations.result import SolveResult

#: Default out-of-sample trajectories used to judge every returned plan.
DEFAULT_EVAL_SAMPLES = 50_000


@dataclass(frozen=True)
class Param:
    """A solver parameter: default, type, optional bounds/choices, help text."""

    default: Any
    type: type = float
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    choices: tuple | None = None
    nullable: bool = False

    def convert(self, name: str, value: Any) -> Any:
        """Convert (CLI strings included) and check one value."""
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if self.nullable or self.default is None:
                return None
            raise SolverError(f"parameter {name!r}: a value is required")
        try:
            if self.type is bool:
                if isinstance(value, str):
                    if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(value)
                    value = value.lower() in ("1", "true", "yes")
                else:
                    value = bool(value)
            elif self.type is int:
                # A CLI string "1.5" must not be truncated to 1 silently, so
                # strings go through the same integrality check as floats.
                number = float(value) if isinstance(value, str) else value
                if isinstance(number, float) and not number.is_integer():
                    raise ValueError(value)
                value = int(number)
            else:
                value = self.type(value)
        except (TypeError, ValueError, OverflowError):
            raise SolverError(
                f"parameter {name!r}: expected {self.type.__name__}, got {value!r}"
            ) from None
        if isinstance(value, float) and math.isnan(value):
            # NaN passes every bound comparison; reject it here by name.
            raise SolverError(f"parameter {name!r}: expected a number, got nan")
        if self.choices is not None and value not in self.choices:
            raise SolverError(f"parameter {name!r}: must be one of {list(self.choices)}, got {value!r}")
        if self.low is not None and (value < self.low or (not self.low_inclusive and value == self.low)):
            op = ">=" if self.low_inclusive else ">"
            raise SolverError(f"parameter {name!r}: must be {op} {self.low}, got {value!r}")
        if self.high is not None and value > self.high:
            raise SolverError(f"parameter {name!r}: must be <= {self.high}, got {value!r}")
        return value

    def describe(self) -> dict[str, Any]:
        d = {"default": self.default, "type": self.type.__name__, "help": self.help}
        if self.choices is not None:
            d["choices"] = list(self.choices)
        if self.low is not None:
            d["low"] = self.low
        if self.high is not None:
            d["high"] = self.high
        return d


class Solver:
    """Base class of every algorithm. Subclasses set the class attributes and
    implement :meth:`run`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Param]] = {}
    #: True for methods that prove optimality (MILP, brute force).
    exact: ClassVar[bool] = False

    def run(self, instance, **params) -> SolveResult:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def resolve_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Defaults filled in, unknown names rejected, values converted."""
        unknown = sorted(set(params) - set(cls.parameters))
        if unknown:
            known = ", ".join(sorted(cls.parameters)) or "none"
            raise SolverError(f"algorithm {cls.name!r} has no parameter {unknown[0]!r} (parameters: {known})")
        out = {}
        for key, spec in cls.parameters.items():
            out[key] = spec.convert(key, params[key]) if key in params else spec.default
        return out


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
    if isinstance(algorithm, str):
        from deplbench.solvers.registry import get_solver

        cls = get_solver(algorithm)
    else:
        cls = algorithm
    resolved = cls.resolve_params(params)
    variants = {"transfer_cost_mode": instance.transfer_cost_mode, "data_rule": instance.data_rule}
    start = time.perf_counter()
    try:
        result = cls().run(instance, **resolved)
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


__all__ = ["Param", "Solver", "solve", "DEFAULT_EVAL_SAMPLES"]
