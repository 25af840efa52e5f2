""""Train on until the quantile target is actually met" — the one implementation.

The DepL paper's best-exp (Sec. VI-B) plans with the expected loss and then
"trains on until the quantile target is actually met"; the PACT baselines of
:mod:`deplbench.solvers.baselines.static` and PACT itself
(:mod:`deplbench.solvers.pact.pact`) use the same rule when their plan fails the
out-of-sample check. Each caller supplies only what differs:

* the epochs it may append (``extension``: the last model repeated, or the
  greedy best-expected-gain models of best-exp);
* an estimate of the ω-quantile of ℓ(K) after appending ``j`` of them
  (SAA on in-sample scenarios, or a simulation);
* how a sequence becomes a plan (exact allocation; None when Tmax is missed);
* the out-of-sample check of a plan.

:func:`train_on` then tries the lengths in increasing order — only those
whose estimate meets ℓmax — and returns the first plan that passes the
check. Appending an epoch only adds time, so once a plan misses the deadline
no longer one can meet it, and the search stops there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deplbench.formulations.model.scenarios import loss_threshold
from deplbench.limits import check_time


@dataclass
class TrainOn:
    """Outcome of :func:`train_on`.

    Attributes
    ----------
    plan : Plan or None
        The first plan that passed the check (None on failure).
    sequence : list
        The epochs of that plan (base + appended), or of the last one tried.
    added : int
        Epochs appended to the base.
    reason : str
        Why no plan was found ("" on success).
    checks : int
        Out-of-sample checks spent.
    tried : list of dict
        One entry per length tried: appended epochs, estimate, outcome.
    """

    plan: Any = None
    sequence: list = field(default_factory=list)
    added: int = 0
    reason: str = ""
    checks: int = 0
    tried: list = field(default_factory=list)


def train_on(base: Sequence, extension: Sequence, quantile: Callable[[int], float], loss_max: float,
             build: Callable[[list], tuple], check: Callable[[Any], bool | None],
             *, what: str = "the plan") -> TrainOn:
    """Shortest extension of ``base`` by a prefix of ``extension`` that meets the target.

    Parameters
    ----------
    base : sequence
        The epochs of the plan as found (any item type: model index, or
        (model, cluster) pair).
    extension : sequence
        The epochs that may be appended, in order (its length is the room
        left under the horizon K̄).
    quantile : callable
        ``quantile(j)``: estimated ω-quantile of ℓ(K) after appending the
        first ``j`` items of ``extension`` (j = 0 … len(extension)).
    loss_max : float
        ℓmax.
    build : callable
        ``build(sequence) -> (plan or None, reason)``; None when the
        sequence misses the deadline Tmax.
    check : callable
        ``check(plan) -> True`` (passes), ``False`` (fails) or ``None`` (the
        check budget is spent: stop).
    what : str
        Name of the base plan in failure messages.

    Returns
    -------
    TrainOn
    """
    out = TrainOn(sequence=list(base))
    for j in range(len(extension) + 1):
        check_time(f"training {what} on, {j} epoch(s) appended")
        q = float(quantile(j))
        seq = list(base) + list(extension[:j])
        if not q <= loss_threshold(loss_max):
            continue
        plan, reason = build(seq)
        out.sequence, out.added = seq, j
        if plan is None:
            out.tried.append({"added": j, "estimate": q, "outcome": "deadline"})
            out.reason = f"{what} trained on for {j} more epoch(s) misses the deadline Tmax ({reason})"
            return out
        verdict = check(plan)
        if verdict is None:
            out.tried.append({"added": j, "estimate": q, "outcome": "budget"})
            out.reason = "the out-of-sample check budget is spent"
            return out
        out.checks += 1
        out.tried.append({"added": j, "estimate": q, "outcome": "passed" if verdict else "failed"})
        if verdict:
            out.plan, out.reason = plan, ""
            return out
    out.reason = (f"even {len(base) + len(extension)} epochs (the horizon) of {what} trained on do not meet "
                  "the quantile target")
    return out


__all__ = ["TrainOn", "train_on"]
