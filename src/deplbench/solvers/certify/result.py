"""``milp-certified``'s result: the bracket record as a :class:`SolveResult`, and its anytime record.

:func:`bracket_result` maps a :func:`~deplbench.solvers.certify.certified.certify`
record to the solver's status (docs/DESIGN.md: ``infeasible`` only with a
proof), :func:`bracket_events` lists its bounds after each stage for
:mod:`deplbench.reports.anytime`.
"""

from __future__ import annotations

import math

from deplbench.formulations.model.plan import parse_plan
from deplbench.formulations.model.result import SolveResult

#: The solver's registry name (:class:`~deplbench.solvers.certify.certified.MilpCertified`).
NAME = "milp-certified"


def bracket_events(bracket: dict) -> list:
    """Anytime record of a bracket (reports/anytime.py): [elapsed s, UB, LB]
    after each stage, then the final bracket (LB combined over the stages).

    The bounds are the statistical ones of the bracket (each at its stage's
    share of the confidence, the last at the stated joint confidence), not
    deterministic solver bounds.
    """
    def num(v):
        return float(v) if v is not None and math.isfinite(v) else None

    events = [[round(float(s["elapsed_s"]), 6), num(s.get("upper")), num(s.get("lower"))]
              for s in bracket.get("stages", ()) if "elapsed_s" in s]
    total = (bracket.get("runtime_s") or {}).get("total")
    upper = bracket.get("upper_bound") or {}
    if total is not None:
        events.append([round(float(total), 6), num(upper.get("value")),
                       num((bracket.get("lower_bound") or {}).get("value"))])
    return events


def _record_gap(bracket: dict) -> float | None:
    """The record's ``gap``: the bracket's width (UB − LB)/UB, which is negative when LB > UB. A
    record's gap is a relative gap, ≥ 0 (:func:`~deplbench.solvers.run.check_returned`): an
    inconsistent bracket has none (its width stays in ``diagnostics["width"]``), and a width within
    the bracket's tolerance below 0 is 0."""
    width = bracket["width"]
    if width is None or bracket["status"] == "inconsistent":
        return None
    return max(0.0, width)


def bracket_result(bracket: dict) -> SolveResult:
    """The :class:`SolveResult` of ``milp-certified`` for a :func:`certify` record."""
    upper, lower = bracket["upper_bound"], bracket["lower_bound"]
    lb = lower["value"] if lower["value"] is not None and math.isfinite(lower["value"]) else None
    diag = {"bracket": bracket, "certified": bracket["status"], "width": bracket["width"],
            "anytime": bracket_events(bracket)}
    if bracket.get("stopped"):
        # an outer deadline cut the bracket short: what the finished work gives, status time_limit
        return SolveResult(algorithm=NAME, status="time_limit",
                           message=f"{bracket['stopped']}; {bracket['message']}",
                           plan=parse_plan(upper["plan"]) if upper is not None else None,
                           cost=upper["value"] if upper is not None else None,
                           lower_bound=lb if bracket["status"] != "error" else None,
                           gap=_record_gap(bracket) if upper is not None else None, diagnostics=diag)
    if bracket["status"] == "error":       # no usable replication: no statement at all, never "infeasible"
        return SolveResult(algorithm=NAME, status="error", message=bracket["message"],
                           diagnostics=diag)
    if upper is None:
        # infeasible only with the LB's proof (+inf: the SAA replication has no plan, at its
        # confidence); no candidate certified is no plan found, not a proof (docs/DESIGN.md)
        status = "infeasible" if bracket["status"] == "infeasible" else "no_solution"
        return SolveResult(algorithm=NAME, status=status, message=bracket["message"],
                           lower_bound=lb, diagnostics=diag)
    return SolveResult(algorithm=NAME, status="feasible", message=bracket["message"],
                       plan=parse_plan(upper["plan"]), cost=upper["value"], lower_bound=lb,
                       gap=_record_gap(bracket), diagnostics=diag)


__all__ = ["NAME", "bracket_events", "bracket_result"]
