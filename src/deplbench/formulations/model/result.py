"""The one result record every algorithm returns (MILP included).

Modelled on scipy's ``OptimizeResult`` and benchopt's solver outputs: results
are data. ``status`` is one of

``optimal``     proven optimal within the requested gap (exact methods);
``feasible``    a plan that meets every constraint, optimality not claimed
                (heuristics);
``time_limit``  stopped by the time limit, with or without an incumbent;
``infeasible``  no plan exists: proven (exact methods) or, for heuristics
                that do not separate the two, none found; ``message`` says
                why (DepL's stages, the baselines);
``no_solution`` no plan found and infeasibility *not* proven: a heuristic
                that searched and found none it could prove feasible
                (``depl-proven``), or an exact method whose precision left
                the plans at the feasibility boundary undecided
                (``milp-exact``); ``lower_bound`` still holds when given,
                ``message`` says why;
``error``       the algorithm failed, ``message`` says how;
``skipped``     the algorithm does not apply to this instance
                (:meth:`deplbench.solvers.base.Solver.applies`), ``message``
                says why; not a failure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from deplbench.formulations.model.plan import Plan, parse_plan
from deplbench.jsonio import finite_number, restore_nonfinite

STATUSES = ("optimal", "feasible", "time_limit", "infeasible", "no_solution", "error", "skipped")


# JSON-safe numbers (inf/nan become None): the one definition in jsonio.
_clean = finite_number


@dataclass
class SolveResult:
    """Status, plan, cost, bound, gap, runtime, parameters and diagnostics.

    Attributes
    ----------
    algorithm : str
        The registry name of the algorithm that produced it.
    status : str
        One of :data:`STATUSES` (see the module docstring).
    message : str
        Why, for ``infeasible``, ``error``, ``skipped`` and ``time_limit``.
    plan : Plan or None
    cost : float or None
        Objective (2) of ``plan``.
    lower_bound, gap : float or None
        A proven bound on the optimum and the relative gap (exact methods).
    runtime_s : float
        The algorithm's own wall time.
    params : dict
        Every parameter the algorithm ran with, defaults included.
    diagnostics : dict
        Algorithm-specific counters (nodes, iterations, timings).
    evaluation : dict or None
        The out-of-sample judgement (:meth:`Evaluation.to_dict`); see
        :attr:`quantile` and :attr:`quantile_ci`.
    variants : dict
        The instance's model variants (transfer-cost mode, data rule).
    """

    algorithm: str
    status: str
    message: str = ""
    plan: Plan | None = None
    cost: float | None = None
    lower_bound: float | None = None
    gap: float | None = None
    runtime_s: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] | None = None
    variants: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status: must be one of {STATUSES}, got {self.status!r}")

    @property
    def has_plan(self) -> bool:
        return self.plan is not None

    @property
    def quantile(self) -> float | None:
        """Out-of-sample ω-quantile of ℓ(K) of the plan (None when not evaluated).

        In the loss units of the instance; the plan meets the target when it
        is ≤ ``loss_max``. It can be negative: a knapsack-derived instance
        (DepL Property 1, ``generate("knapsack")``) has ℓ(0) = T, ℓmax = 0 and
        a deterministic ℓ(K) = T − Σ_k v_{m_k}, so a quantile of −21.0 means
        the plan's items cover the target T with 21 units of value to spare.
        """
        return (self.evaluation or {}).get("quantile")

    @property
    def quantile_ci(self) -> tuple[float, float] | None:
        """Its distribution-free order-statistics interval (level in
        ``evaluation["confidence"]``), or None when not evaluated."""
        ci = (self.evaluation or {}).get("quantile_ci")
        return tuple(ci) if ci is not None else None

    @staticmethod
    def relative_gap(cost: float | None, lower_bound: float | None) -> float | None:
        """(cost − bound) / |cost|, the MIP-style relative gap (0 when both are 0)."""
        if cost is None or lower_bound is None or not math.isfinite(cost) or math.isnan(lower_bound):
            return None
        if cost == 0:
            return 0.0 if lower_bound >= 0 else None
        return max(0.0, (cost - lower_bound) / abs(cost))

    def to_dict(self) -> dict[str, Any]:
        ev = self.evaluation or {}
        return {
            "algorithm": self.algorithm,
            "status": self.status,
            "message": self.message,
            "cost": _clean(self.cost),
            "lower_bound": _clean(self.lower_bound),
            "gap": _clean(self.gap),
            "runtime_s": self.runtime_s,
            "quantile_oos": ev.get("quantile"),
            "quantile_ci": ev.get("quantile_ci"),
            # the interval's level and method, and what decided the verdict
            # (a proof, or the Monte Carlo estimate): evaluation.evaluate
            "quantile_ci_level": ev.get("quantile_ci_level", ev.get("confidence")),
            "quantile_ci_method": ev.get("ci_method"),
            "verdict": ev.get("verdict"),
            "verdict_basis": ev.get("verdict_basis"),
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "params": self.params,
            "diagnostics": self.diagnostics,
            "evaluation": self.evaluation,
            "variants": self.variants,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SolveResult":
        """The result of :meth:`to_dict`, also as read back from strict JSON (``solve -o``):
        a null with its ``<key>_nonfinite`` reason is the non-finite number again."""
        data = restore_nonfinite(data)
        return cls(
            algorithm=data["algorithm"],
            status=data["status"],
            message=data.get("message", ""),
            plan=parse_plan(data["plan"]) if data.get("plan") is not None else None,
            cost=data.get("cost"),
            lower_bound=data.get("lower_bound"),
            gap=data.get("gap"),
            runtime_s=data.get("runtime_s", 0.0),
            params=dict(data.get("params") or {}),
            diagnostics=dict(data.get("diagnostics") or {}),
            evaluation=data.get("evaluation"),
            variants=dict(data.get("variants") or {}),
        )


__all__ = ["SolveResult", "STATUSES"]
