"""Where an instance's numbers stop being computable in binary64 (docs/instances.md, "Magnitudes").

Every field of an instance can be a finite JSON number and the instance still
be one no solver can compute with: a lognormal improvement with ``mu = 1000``
has no finite mean (``exp(1000)`` overflows), a normal law with ``std =
1e308`` no finite variance, an inverse-gamma with shape ``1e-320`` no finite
upper quantile, a subnormal compute need (``1e-320``) loses its precision in
every product and ratio of eqs. (1)-(2), and a switch jump of ``-1e20`` leaves
a loss that no longer resolves ℓmax. The line is drawn here, once, and
:class:`~deplbench.instances.model.Instance` calls :func:`check_magnitudes`
from its validator, so ``validate`` and every command refuse such an instance
with one message naming the field.

The rules:

* no number is subnormal (nonzero with magnitude below
  :data:`MIN_NORMAL` ≈ 2.2e-308): it carries fewer than 53 significant bits,
  and products and ratios with it are inexact or underflow to 0;
* ℓ(0) and ℓmax, and the per-epoch loss terms — the jump law of a switch and
  ``loss_scale`` times the improvement law of a model (eq. (8)), each
  between its :data:`TAIL` and 1 − :data:`TAIL` quantiles — stay within
  ±:data:`MAX_LOSS`: finite, and small enough that the loss of K̄ epochs keeps
  a unit's resolution (binary64 resolves integers up to 2^53 ≈ 9e15);
* ω, in (0, 1), lies in [:data:`MIN_OMEGA`, 1 − :data:`MIN_OMEGA`]
  (``Instance.omega``'s field bounds): below 1.1e-16, 1 − ω rounds to 1
  and the risk 1 − ω of eq. (3) is lost (DepL would divide by zero, the
  MILP's ⌈1/ω⌉ would overflow); within 1e-15 of 1 the ω-quantile of a Student's t
  jump is no longer finite for DepL's quantile transform. 1e-12 keeps a
  margin of a thousand on both sides.

Resource numbers (sizes, compute, capacities, costs, bandwidths) may be as
large as binary64 allows: the formulations already handle them
(``formulations.model.preprocess``). Tmax may be up to :data:`MAX_TIME_MAX`
= 1e308, so that Tmax·(1 + 1e-9), the bound every plan's time is compared
with, stays finite. One product of them must stay finite:

* K̄ times the cost of the cheapest epoch a cluster can run, K̄ · κ(n) ·
  c_m · σ_d / Tmax (the least compute need c(m, {d}) at the slowest
  allocation x = c/Tmax that still meets the deadline, eqs. (1), (4)), at
  its smallest over the models and datasets. It is not the cost of a plan of
  K̄ epochs (they share Tmax: K epochs of one model cost K² times one epoch
  alone) and bounds the cheapest epoch only; a plan of several epochs or of
  a dearer model can still overflow. When it overflows, plans on the cluster cost
  "inf": without this check the MILP would report such a plan ``feasible``
  with cost inf and gap nan, and DepL ``no_solution`` for a reason other
  than the real one.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from deplbench.jsonio import number_text

#: Smallest positive normal binary64 number; nonzero numbers below it are subnormal.
MIN_NORMAL = sys.float_info.min
#: Largest magnitude of ℓ(0), ℓmax and any per-epoch loss term's tail quantile.
MAX_LOSS = 1e15
#: The tails checked: each law's TAIL and 1 − TAIL quantiles must be finite and within ±MAX_LOSS.
TAIL = 1e-9
#: ω must lie in [MIN_OMEGA, 1 − MIN_OMEGA].
MIN_OMEGA = 1e-12
#: Largest Tmax. Every total time is compared with Tmax·(1 + 1e-9) (the evaluator's slack,
#: ``formulations.model.allocation.TIME_RTOL``), which must stay finite: past about 1.7976931e308
#: it is inf, and a plan whose allocation makes it last forever (time inf) would meet the deadline.
MAX_TIME_MAX = 1e308
#: log of the largest finite binary64 number.
_LOG_MAX = math.log(sys.float_info.max)
#: The instance's top-level numbers (its targets ℓ(0), ℓmax, ω, Tmax).
TARGET_NUMBERS = ("initial_loss", "loss_max", "omega", "time_max")


def law_tails(law: Any) -> tuple[float, float]:
    """The :data:`TAIL` and 1 − :data:`TAIL` quantiles of ``law``, ±inf where they overflow.

    The law's own ``tails`` method (:mod:`deplbench.instances.distributions`:
    one computation, shared with the adaptive chain's kernels), without
    overflow warnings: the point of the check is to find laws whose numbers
    overflow. Nothing is cached: the check asks for the tails only of a law
    its closed-form bound does not clear (``tail_bound``), and a cache keyed
    on the laws would keep every validated empirical sample alive."""
    return law.tails(TAIL)


def _subnormal(value: Any) -> bool:
    return isinstance(value, float) and value != 0.0 and abs(value) < MIN_NORMAL


def _check_subnormal(loc: str, data: Any) -> None:
    """Refuse a subnormal number anywhere under ``data`` (a dumped model), naming where."""
    stack = [(loc, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else k, v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
        elif _subnormal(value):
            raise ValueError(f"{where}: {value!r} is subnormal (nonzero below {MIN_NORMAL:.3g}): it has too few "
                             "significant bits for the products and ratios of eqs. (1)-(2) (rescale the unit, "
                             "or use 0 where the field allows it)")


def _check_law(loc: str, law: Any, factor: float = 1.0, what: str = "the law") -> None:
    # The law's closed-form bound on its tails clears every law of a computable
    # instance without SciPy; the tails themselves (SciPy's quantile functions
    # for a continuous law) are computed only for a law the bound does not clear,
    # so the verdict is the tails' and the message gives them.
    if law.tail_bound(TAIL) * abs(factor) <= MAX_LOSS:
        return
    lo, hi = law_tails(law)
    lo, hi = lo * factor, hi * factor
    if not (math.isfinite(lo) and math.isfinite(hi) and max(abs(lo), abs(hi)) <= MAX_LOSS):
        raise ValueError(
            f"{loc}: {what}'s {TAIL:g} and 1 − {TAIL:g} quantiles [{lo:.4g}, {hi:.4g}] are not within "
            f"±{MAX_LOSS:g}: its loss terms overflow or lose all resolution in binary64 (rescale the loss)")


def omega_range(value: Any) -> Any:
    """Refuse a number ω outside [:data:`MIN_OMEGA`, 1 − :data:`MIN_OMEGA`], saying why.

    ``Instance.omega``'s field bounds state the same range in the JSON schema;
    this runs first, so that the message gives the numbers readably."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not MIN_OMEGA <= value <= 1 - MIN_OMEGA:
        raise ValueError(f"must lie in [{MIN_OMEGA:g}, 1 − {MIN_OMEGA:g}], got {value!r} (1 − ω must neither round "
                         "to 1 nor leave a quantile no solver can compute: docs/instances.md, Magnitudes)")
    return value


def _time_max_text(value: float) -> str:
    return (f"{number_text(value)} is beyond {MAX_TIME_MAX:g}: Tmax·(1 + 1e-9), the bound every plan's time is "
            "compared with (eq. (4)), would be inf in binary64, met even by a plan that never ends (rescale the "
            "time unit)")


def time_max_range(value: Any) -> Any:
    """Refuse a number Tmax above :data:`MAX_TIME_MAX`, saying why.

    ``Instance.time_max``'s field bound states the same limit in the JSON schema; this runs first, so
    that the message says why (:func:`check_target_magnitudes` says it of an instance changed in code)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > MAX_TIME_MAX:
        raise ValueError(_time_max_text(value))
    return value


def check_target_magnitudes(inst: Any) -> None:
    """The rules of the module docstring on the top-level numbers (:data:`TARGET_NUMBERS`) alone.

    Part of :func:`check_magnitudes`; cheap whatever the instance's size, so
    an instance changed in code is checked with it before every evaluation
    (``formulations.evaluation.instance_check``).

    Raises
    ------
    ValueError
        ``<field>: ...`` for the first offending field.
    """
    for name in TARGET_NUMBERS:
        _check_subnormal(name, getattr(inst, name))
    if inst.time_max > MAX_TIME_MAX:
        raise ValueError(f"time_max: {_time_max_text(inst.time_max)}")
    for name in ("initial_loss", "loss_max"):
        value = getattr(inst, name)
        if abs(value) > MAX_LOSS:
            raise ValueError(f"{name}: {number_text(value)} is beyond ±{MAX_LOSS:g}: a loss that large no longer "
                             "resolves a unit step in binary64 (rescale the loss)")


def _check_epoch_costs(inst: Any) -> None:
    """Refuse a cluster on which K̄ times its cheapest epoch costs more than binary64 holds (module docstring).

    Only epochs that can meet Tmax on the cluster count (c(m, {d})/r + s/b ≤
    Tmax): an epoch that cannot is ``formulations.model.preprocess``'s to
    remove, with its reason. Summed in logarithms, so nothing overflows here.
    """
    log_need = (np.log([m.compute for m in inst.models])[:, None]
                + np.log([d.size for d in inst.datasets])[None, :])          # log c(m, {d})
    log_fixed = math.log(inst.horizon) - math.log(inst.time_max)
    top_cost = max((c.unit_cost for c in inst.clusters), default=0.0)
    if top_cost == 0 or math.log(top_cost) + log_fixed + float(log_need.max()) < _LOG_MAX:
        return    # even the dearest cluster's dearest such plan is finite
    size = np.array([m.size for m in inst.models])[:, None]
    for i, c in enumerate(inst.clusters):
        if c.unit_cost == 0:
            continue
        with np.errstate(over="ignore"):
            fits = np.exp(log_need - math.log(c.capacity)) + size / c.bandwidth <= inst.time_max * (1 + 1e-9)
        if not fits.any():
            continue
        log_cost = math.log(c.unit_cost) + log_fixed + float(log_need[fits].min())
        if log_cost >= _LOG_MAX:
            raise ValueError(
                f"clusters[{i}].unit_cost: {number_text(c.unit_cost)} × K̄ × the least compute of an epoch that "
                f"fits / Tmax (≈ 10^{log_cost / math.log(10):.1f}) overflows binary64: plans on this cluster would "
                "cost inf (rescale the cost unit)")


def check_magnitudes(inst: Any) -> None:
    """Raise ``ValueError`` naming the field if ``inst`` breaks a rule of the module docstring.

    Parameters
    ----------
    inst : Instance
        A structurally valid instance (its field types and bounds already checked).

    Raises
    ------
    ValueError
        ``<field>: ...`` for the first offending field.
    """
    check_target_magnitudes(inst)
    _check_subnormal("", inst.model_dump(by_alias=True, exclude={"provenance", *TARGET_NUMBERS}))
    for i, m in enumerate(inst.models):
        if m.loss_scale > MAX_LOSS:
            raise ValueError(f"models[{i}].loss_scale: {number_text(m.loss_scale)} is beyond {MAX_LOSS:g} "
                             "(rescale the loss)")
        _check_law(f"models[{i}].improvement", m.improvement, m.loss_scale, "loss_scale times the law")
    for i, sw in enumerate(inst.switches):
        _check_law(f"switches[{i}].jump", sw.jump)
    _check_epoch_costs(inst)


__all__ = ["MIN_NORMAL", "MAX_LOSS", "MAX_TIME_MAX", "TAIL", "MIN_OMEGA", "TARGET_NUMBERS", "law_tails",
           "check_magnitudes", "check_target_magnitudes", "omega_range", "time_max_range"]
