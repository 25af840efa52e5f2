"""Whether the mean of the loss ℓ(k) exists, and which law takes it away.

ℓ(k) sums the improvements X of the models trained up to epoch k and the
jumps of the switches among them (eq. (8)). Its mean exists only when every
one of those laws has a finite mean; a Student t with df ≤ 1 (Cauchy at
df = 1) or an inverse gamma with shape ≤ 1 has none, and the Monte Carlo
average of such draws estimates nothing (it moves with the seed). The
evaluator then reports ``expected_loss`` as undefined
(:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`); the
quantiles exist whatever the law and are still estimated.
"""

from __future__ import annotations

import numpy as np


def law_without_mean(instance, models) -> tuple[int, str] | None:
    """The first index k of ℓ(k) whose mean does not exist, and the law to blame, or None.

    ℓ(k) sums the improvements X of the models of epochs 1..k and the jumps of the switches
    among them (eq. (8)); its mean exists only if every one of those laws has a finite mean
    (``Distribution.mean()``: Student t with df ≤ 1 and inverse gamma with shape ≤ 1 have none).
    """
    models = np.asarray(models, dtype=int)
    seen: set[int] = set()
    for k in range(models.size):
        m = int(models[k])
        if m not in seen:
            seen.add(m)
            law = instance.models[m].improvement
            if not np.isfinite(law.mean()):
                return k + 1, f"the improvement law of model {instance.models[m].name!r} ({_law_text(law)})"
        if k and models[k] != models[k - 1]:
            p = instance.switch_index.get((int(models[k - 1]), m))
            if p is not None and not np.isfinite(instance.switches[p].jump.mean()):
                sw = instance.switches[p]
                return k + 1, (f"the jump law of switch {sw.from_model!r} -> {sw.to_model!r} "
                               f"({_law_text(sw.jump)})")
    return None


def _law_text(law) -> str:
    """``student_t, df = 1`` for a message: the kind and the parameter that takes the mean away."""
    for name in ("df", "shape"):
        if hasattr(law, name):
            return f"{law.kind}, {name} = {getattr(law, name):g}"
    return str(law.kind)


def mark_undefined_mean(ev, instance, models) -> None:
    """Set ``ev.expected_loss`` to None with its note, and the per-epoch ``ev.mean`` to None from
    the first ℓ(k) without a mean (in place), when :func:`law_without_mean` names a law: the
    sample average of such draws would be a number about nothing."""
    found = law_without_mean(instance, models)
    if found is None:
        return
    step, what = found
    ev.expected_loss, ev.expected_loss_note = None, f"undefined: {what} has no finite mean"
    if ev.mean:
        ev.mean[step:] = [None] * (len(ev.mean) - step)


__all__ = ["law_without_mean", "mark_undefined_mean"]
