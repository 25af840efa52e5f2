"""The library's second table: each instance's true chance-constrained optimum.

The `.solu` files hold optima of SAA models on S fixed scenarios; the
suite's yardstick is the optimum z* of problem (2)–(6) with the true
constraint (3). One job here: bracket z* per instance, by

1. ``milp-exact`` (exact violation probabilities; an exact bracket, no
   confidence level needed) when that algorithm is registered and
   :meth:`~deplbench.solvers.base.Solver.applies` to the instance;
2. otherwise :func:`~deplbench.solvers.certify.certified.certify`: LB ≤ z* ≤ UB
   jointly with the stated confidence (Luedtke & Ahmed 2008 Sec. 4 for LB,
   one-sided Clopper–Pearson tests of the candidate plans for UB). On an
   instance whose random terms are all point masses the bracket is exact
   (one scenario is the distribution).

Each row states its method, its confidence and the settings it ran with;
``value`` is the cost of the plan that gives the upper end (the cheapest
plan proven, or certified, to meet (3)), so lower ≤ z* ≤ value = upper.
"""

from __future__ import annotations

import math
from typing import Any

from deplbench.errors import SolverError

#: Light certify settings of the library build (docs/library.md says what
#: they cost); ``deplbench certify`` spends more for a narrower bracket.
CERTIFY_SETTINGS = {"replications": 10, "validation": 20_000, "risk_grid": (0.9, 0.8), "grid_seeds": 1,
                    "target_width": None}

#: Columns of ``true_optimum.csv``: (key, meaning).
COLUMNS = (
    ("name", "instance"),
    ("method", "exact (milp-exact: exact violation probabilities) or certified (certify)"),
    ("lower", "lower end of the bracket on the true optimum z*"),
    ("upper", "upper end: cost of the cheapest plan proven (exact) or certified to meet (3)"),
    ("value", "the cost of that plan (= upper)"),
    ("width", "(upper - lower) / upper"),
    ("confidence", "joint confidence of lower <= z* <= upper (1 for exact brackets)"),
    ("status", "the bracket's status"),
    ("settings", "what the method ran with"),
    ("note", "why an instance has no bracket, or what limits it"),
)


def _exact_solver():
    """The ``milp-exact`` solver class when registered, else None."""
    from deplbench.solvers.registry import get_solver

    try:
        return get_solver("milp-exact")
    except SolverError:
        return None


def true_optimum(instance, name: str, scenarios: int, time_limit: float, confidence: float = 0.95,
                 settings: dict | None = None) -> dict:
    """One row of the true-optimum table (see the module docstring).

    Parameters
    ----------
    instance : Instance
    name : str
    scenarios : int
        S of each SAA solve of ``certify`` (the library entry's S).
    time_limit : float
        Seconds per solve (``milp-exact``'s limit, or per certify SAA solve).
    confidence : float, default 0.95
    settings : dict, optional
        Overrides of :data:`CERTIFY_SETTINGS`.
    """
    cls = _exact_solver()
    why = "milp-exact is not registered in this deplbench"
    if cls is not None:
        ok, why = cls.applies(instance)
        if ok:
            row = _exact_row(instance, name, time_limit, cls)
            if row["upper"] is not None and row["lower"] is not None:
                return row
            why = f"milp-exact gave no bracket ({row['status']}: {row['note']})"
    row = _certified_row(instance, name, scenarios, time_limit, confidence, settings)
    row["note"] = (f"{why}; " if why else "") + row.get("note", "")
    return row


def _exact_row(instance, name: str, time_limit: float, cls) -> dict:
    """milp-exact's bracket: its proven lower bound and the cost of its plan,
    whose violation probability it computed exactly."""
    from deplbench.solvers.run import solve

    params: dict[str, Any] = {"time_limit": float(time_limit)} if "time_limit" in cls.parameters else {}
    res = solve(instance, cls, evaluate=False, **params)
    lower, upper = res.lower_bound, res.cost
    if res.status not in ("optimal", "feasible", "time_limit"):
        lower = upper = None
    return {"name": name, "method": "exact", "lower": lower, "upper": upper, "value": upper,
            "width": _width(lower, upper), "confidence": 1.0, "status": res.status,
            "settings": {"algorithm": cls.name, **params}, "note": res.message}


def _certified_row(instance, name, scenarios, time_limit, confidence, settings) -> dict:
    from deplbench.solvers.certify.certified import certify

    opts = {**CERTIFY_SETTINGS, **(settings or {})}
    b = certify(instance, confidence=confidence, scenarios=int(scenarios), time_limit=float(time_limit), **opts)
    lower = (b.get("lower_bound") or {}).get("value")
    upper = (b.get("upper_bound") or {}).get("value")
    method = "exact" if b.get("exact") else "certified"
    return {"name": name, "method": method, "lower": lower, "upper": upper, "value": upper,
            "width": _width(lower, upper), "confidence": float(b.get("confidence", confidence)),
            "status": b.get("status"), "note": b.get("message", ""),
            "settings": {"algorithm": "certify", "scenarios": int(scenarios), "time_limit": float(time_limit),
                         **{k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}}}


def not_bracketed(name: str, reason: str) -> dict:
    """A row without a bracket (status ``skipped``, ``note`` says why)."""
    return {"name": name, "method": None, "lower": None, "upper": None, "value": None, "width": None,
            "confidence": None, "status": "skipped", "settings": {}, "note": reason}


def _width(lower, upper):
    if lower is None or upper is None or not math.isfinite(upper) or upper == 0:
        return None
    return max(0.0, (upper - lower) / abs(upper))


__all__ = ["CERTIFY_SETTINGS", "COLUMNS", "not_bracketed", "true_optimum"]
