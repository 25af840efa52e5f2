"""What an evaluation says, in words: each number with what it is.

The summaries of ``solve``, ``evaluate`` and ``simulate`` print these
statements (``library verify`` says the same in its own lines), so that a
Monte Carlo estimate is called an estimate, every interval says its level
and method, a Clopper–Pearson certificate says its level, and a proof (the
exact violation bounds of
:mod:`deplbench.formulations.evaluation.exact_violation`) says that it is
one and decides (:mod:`deplbench.formulations.evaluation.evaluate`, module
docstring).
"""

from __future__ import annotations

import textwrap

from deplbench.formulations.evaluation.binomial import CERTIFIED_FEASIBLE, CERTIFIED_INFEASIBLE
from deplbench.formulations.evaluation.evaluate import (
    BASIS_CONSTRAINTS,
    BASIS_DETERMINISTIC,
    BASIS_EXACT,
    BASIS_MONTE_CARLO,
    CI_METHOD,
    Evaluation,
)
from deplbench.jsonio import interval_text, number_beside, number_text


def evaluation_statements(ev) -> list[tuple[str, str]]:
    """What an evaluation says, as (label, sentence) pairs for a summary.

    Each sentence names what its number is: the Monte Carlo quantile with
    its draws and its interval's level and method, the Monte Carlo verdict
    (an estimate), the Clopper–Pearson certificate with its level, the exact
    verdict (a proof) when there is one, and the final verdict with what
    decided it.

    Parameters
    ----------
    ev : Evaluation or dict
        An evaluation or its ``to_dict()``.

    Returns
    -------
    list of (str, str)
        Labels ``quantile``, ``interval``, ``estimate``, ``certified``,
        ``exact`` and ``verdict``, each present when it applies.
    """
    d = ev.to_dict() if isinstance(ev, Evaluation) else dict(ev)
    level, risk = float(d["confidence"]), 1.0 - float(d["omega"])
    basis = d.get("verdict_basis", BASIS_MONTE_CARLO)
    mc = str(d.get("mc_verdict", d.get("verdict")))
    lo, hi = d["quantile_ci"]
    out = []
    if basis == BASIS_DETERMINISTIC or d.get("exact"):    # point masses: the one trajectory is exact
        out.append(("quantile", f"{d['quantile']:.6g} (ω = {number_text(d['omega'])}; exact: every random term "
                                f"is a point mass, one trajectory); target ℓmax = {number_text(d['loss_max'])}"))
    else:
        out.append(("quantile", f"{d['quantile']:.6g} (ω = {number_text(d['omega'])}; Monte Carlo estimate "
                                f"from {d['samples']} draws, seed {d['seed']}); target ℓmax = "
                                f"{number_text(d['loss_max'])}"))
        ci_level = float(d.get("quantile_ci_level") or level)      # a one-sided interval states its own
        out.append(("interval", f"{interval_text(lo, hi, 6)} at level {number_beside(ci_level, 1.0, 4)} "
                                f"({d.get('ci_method') or CI_METHOD})"))
        where = {"feasible": "the interval lies at or below ℓmax", "infeasible": "the interval lies above ℓmax",
                 "undecided": "the interval straddles ℓmax"}.get(mc, "")
        out.append(("estimate", f"{mc} (Monte Carlo estimate: {where})" if where else f"{mc} (Monte Carlo)"))
        cert = d.get("mc_certified_verdict", d.get("certified_verdict"))
        if cert is not None and d.get("violation_count") is not None:
            # a certificate is about the chance constraint (3) only; a broken (4)-(6) is no
            # statement at a level, and the verdict below says it
            about = "chance constraint (3) alone: " if d.get("violations") else ""
            out.append(("certified", f"{about}{cert} at level {number_text(level)} (one-sided Clopper-Pearson on "
                                     f"the same draws: {d['violation_count']} of {d['samples']} exceed ℓmax, "
                                     f"P(ℓ(K) > ℓmax) in [{d['violation_lb']:.4g}, {d['violation_ub']:.4g}] "
                                     f"against 1 − ω = {risk:.4g})"))
    exact = d.get("exact_verdict")
    if exact is not None and d.get("violation_lo") is not None and d.get("violations"):
        # the exact verdict of a plan breaking (4)-(6) is that certainty; the bounds are about (3) alone
        out.append(("exact", f"chance constraint (3) alone: P(ℓ(K) > ℓmax) in [{d['violation_lo']:.6g}, "
                             f"{d['violation_hi']:.6g}] against 1 − ω = {risk:.4g} (a proof, no sampling)"))
    elif exact is not None and d.get("violation_lo") is not None:
        out.append(("exact", f"{exact} (a proof, no sampling: P(ℓ(K) > ℓmax) in [{d['violation_lo']:.6g}, "
                             f"{d['violation_hi']:.6g}] against 1 − ω = {risk:.4g}"
                             + (f"; {d['exact_reason']}" if d.get("exact_reason") else "") + ")"))
    elif exact is not None:
        out.append(("exact", exact + (f" ({d['exact_reason']})" if d.get("exact_reason") else "")))
    elif d.get("exact_reason") not in (None, "not requested"):
        out.append(("exact", f"none ({d['exact_reason']})"))
    verdict = d.get("verdict")
    if basis == BASIS_CONSTRAINTS:
        text = (f"{verdict}: constraints (4)-(6) broken ({broken_text(d.get('violations') or [])}); certain "
                "(checked exactly, no sampling, no level), whatever the loss")
    elif basis == BASIS_EXACT:
        text = f"{verdict}, proven by the exact bounds (no sampling"
        mc_cert = d.get("mc_certified_verdict")
        if (mc in ("feasible", "infeasible") and mc != verdict) or (
                mc_cert in (CERTIFIED_FEASIBLE, CERTIFIED_INFEASIBLE) and mc_cert != d.get("certified_verdict")):
            text += (f"; the Monte Carlo statements above contradict it: an estimate, and a certificate at "
                     f"level {number_text(level)}, which is wrong for up to a share {number_text(1 - level)} of plans")
        text += ")"
    elif basis == BASIS_DETERMINISTIC:
        text = f"{verdict} (exact: deterministic plan)"
    else:
        text = f"{verdict} (Monte Carlo estimate, not a proof)"
    if d.get("violations") and basis != BASIS_CONSTRAINTS:
        text += "; the plan breaks constraints (4)-(6), so it is infeasible"
    out.append(("verdict", text))
    return out


#: Broken constraints named in a verdict line; the rest are counted (the full list follows it).
BROKEN_SHOWN = 3


def broken_text(violations: list[str]) -> str:
    """The broken constraints (4)-(6), named: the first :data:`BROKEN_SHOWN`, then how many more."""
    shown = "; ".join(violations[:BROKEN_SHOWN])
    more = len(violations) - BROKEN_SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


def statement_lines(ev, width: int = 12) -> list[str]:
    """The statements of :func:`evaluation_statements`, one labelled paragraph
    each, wrapped at 78 columns under a ``width``-wide label."""
    lines: list[str] = []
    for label, text in evaluation_statements(ev):
        lines += textwrap.wrap(text, 78, initial_indent=f"{label:<{width}}", subsequent_indent=" " * width,
                               break_on_hyphens=False)
    return lines


__all__ = ["BROKEN_SHOWN", "broken_text", "evaluation_statements", "statement_lines"]
