"""The whole fit: logs → :class:`FitResult` → an :class:`~deplbench.instances.model.Instance`.

:func:`fit_logs` runs the decay and distribution fits of every model and
switch pair; :func:`build_instance` maps the result onto a base instance
(which supplies everything the logs do not determine); :func:`fit_instance`
is the pipeline behind ``deplbench fit`` (nothing is written).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from deplbench.errors import DeplbenchError
from deplbench.instances.fit.decay import MIN_EPOCHS, DecayFit, fit_decay, multipliers
from deplbench.instances.fit.distfit import DistFit, fit_improvement, fit_switch
from deplbench.instances.fit.logs import LogError, Logs, loss_changes, read_logs
from deplbench.instances.model import first_names
from deplbench.jsonio import optional_float as _num
from deplbench.limits import MAX_BOOTSTRAP
from deplbench.params import seed_refusal


# -------------------------------------------------------------- full fit
@dataclass
class ModelFit:
    """Everything fitted for one model version."""

    decay: DecayFit
    improvement: DistFit


@dataclass
class FitResult:
    """The fitted loss model of a set of logs (see :func:`fit_logs`)."""

    models: dict[str, ModelFit]
    switches: dict[tuple[str, str], DistFit]
    initial_loss: float | None
    n_runs: int
    n_rows: int
    sha256: str
    source: str
    settings: dict

    def diagnostics(self) -> dict:
        """JSON-ready fit diagnostics (recorded in the instance provenance)."""
        return {
            "logs": self.source, "logs_sha256": self.sha256, "runs": self.n_runs, "rows": self.n_rows,
            "initial_loss_from_logs": _num(self.initial_loss), "settings": self.settings,
            "models": {
                name: {"decay": mf.decay.diagnostics(), "improvement": mf.improvement.diagnostics()}
                for name, mf in self.models.items()
            },
            "switches": [
                {"from_model": a, "to_model": b, **fit.diagnostics()} for (a, b), fit in self.switches.items()
            ],
        }

    def p_values(self) -> list[float]:
        """KS p-values of every parametric fit that was tested (Fig. 4 centre)."""
        fits = [mf.improvement for mf in self.models.values()] + list(self.switches.values())
        return [f.p_value for f in fits if f.p_value is not None and f.p_method != "support"]


def fit_logs(
    logs: Logs,
    *,
    alpha: float = 0.05,
    ks_bootstrap: int = 0,
    seed: int = 0,
    max_empirical: int = 1000,
    min_switch_samples: int = 5,
    min_epochs: int = MIN_EPOCHS,
) -> FitResult:
    """Fit the loss model (8) and the switch jumps to validated logs.

    Parameters
    ----------
    logs : Logs
        From :func:`read_logs` (or ``Logs(validate_logs(frame))``).
    alpha : float
        KS significance level in (0, 1) (paper: 0.05).
    ks_bootstrap : int
        Parametric-bootstrap replicates for the X fits' p-values (0: plain KS).
    seed : int
        Seed of the bootstrap's ``numpy.random.Generator``.
    max_empirical : int
        Samples kept by an empirical fallback.
    min_switch_samples : int
        Fewest observed switches of a pair to try a Student's t fit.
    min_epochs : int
        Fewest distinct epochs (non-switch changes) per model.

    Returns
    -------
    FitResult

    Raises
    ------
    LogError
        Bad settings, or a model the logs cannot fit (too few epochs, no
        decrease).
    """
    _validate_settings(alpha, ks_bootstrap, max_empirical, min_switch_samples, min_epochs)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        # numpy's own message ("expected non-negative integer") names no field.
        raise LogError(f"seed: must be an integer >= 0, got {seed!r}")
    reason = seed_refusal(int(seed))    # every seed's rule: [0, 2**63 − 1]
    if reason:
        raise LogError(f"seed: {reason}")
    ch = loss_changes(logs)
    rng = np.random.default_rng(seed)
    order = list(dict.fromkeys(logs.frame["model"][logs.frame["epoch"] >= 1]))
    models: dict[str, ModelFit] = {}
    for name in order:
        sel = (ch.model == name) & ~ch.switch
        decay = fit_decay(ch.epoch[sel], ch.delta[sel], model=name, min_epochs=min_epochs)
        x = multipliers(ch.epoch[sel], ch.delta[sel], decay.A, decay.B)
        imp = fit_improvement(x, alpha=alpha, ks_bootstrap=ks_bootstrap, rng=rng, max_empirical=max_empirical)
        models[name] = ModelFit(decay, imp)
    switches: dict[tuple[str, str], DistFit] = {}
    pairs = sorted({(a, b) for a, b in zip(ch.previous[ch.switch], ch.model[ch.switch])},
                   key=lambda p: (order.index(p[0]), order.index(p[1])))
    for a, b in pairs:
        sel = ch.switch & (ch.previous == a) & (ch.model == b)
        dec = models[b].decay
        c = dec.A / np.sqrt(ch.epoch[sel] + dec.B)
        switches[(a, b)] = fit_switch(ch.delta[sel], c, models[b].improvement.chosen, alpha=alpha,
                                      min_samples=min_switch_samples, max_empirical=max_empirical)
    settings = {"alpha": alpha, "ks_bootstrap": ks_bootstrap, "seed": seed, "max_empirical": max_empirical,
                "min_switch_samples": min_switch_samples, "min_epochs": min_epochs}
    return FitResult(models, switches, logs.initial_loss, logs.n_runs, len(logs.frame), logs.sha256,
                     logs.source, settings)


def _validate_settings(alpha, ks_bootstrap, max_empirical, min_switch_samples, min_epochs) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise LogError(f"alpha: must be in (0, 1), got {alpha!r}")
    if not (isinstance(ks_bootstrap, int) and 0 <= ks_bootstrap <= MAX_BOOTSTRAP):
        raise LogError(f"ks_bootstrap: must be an integer in [0, {MAX_BOOTSTRAP}], got {ks_bootstrap!r}")
    if not (isinstance(max_empirical, int) and max_empirical >= 1):
        raise LogError(f"max_empirical: must be an integer >= 1, got {max_empirical!r}")
    if not (isinstance(min_switch_samples, int) and min_switch_samples >= 1):
        raise LogError(f"min_switch_samples: must be an integer >= 1, got {min_switch_samples!r}")
    if not (isinstance(min_epochs, int) and min_epochs >= 3):
        raise LogError(f"min_epochs: must be an integer >= 3 (two parameters plus one residual), got {min_epochs!r}")


# ---------------------------------------------------------- the instance
def family_base(family: str = "alexnet"):
    """The realistic family default instance (``generators.generate``).

    Raises
    ------
    LogError
        If the generator module is missing or rejects the family.
    """
    try:
        from deplbench.instances import generators
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise LogError(f"--family: the instance generators are not available ({exc}); pass --base") from None
    try:
        return generators.generate("realistic", family=family)
    except DeplbenchError as exc:
        raise LogError(f"--family {family!r}: {exc}") from None
    except (TypeError, ValueError, KeyError) as exc:
        raise LogError(f"--family {family!r}: cannot build the realistic default instance ({exc})") from None


def build_instance(
    fit: FitResult,
    base,
    *,
    name: str | None = None,
    data_gamma: float = 1.0,
    loss_max: float | None = None,
    base_label: str = "",
):
    """Map a fit onto a base instance's fields.

    Parameters
    ----------
    fit : FitResult
    base : Instance
        Supplies clusters, datasets, transfer costs, ω, Tmax, K̄, ℓmax, the
        variant flags, and each model's size s(m) and compute c_m (matched by
        name). ℓ(0) comes from the logs' epoch-0 rows when present.
    name : str, optional
        Instance name (default ``"<base>-fit"``).
    data_gamma : float
        γ(S) of the data the logs were measured on (``datalaw``); the fitted
        A is divided by it, so loss_scale is per reference dataset. Default 1:
        the logs' data is the reference data.
    loss_max : float, optional
        Overrides the base's ℓmax (the logs may live on another loss scale).
    base_label : str
        How the base was obtained, for the provenance.

    Returns
    -------
    Instance
        Models: exactly those in the logs (loss_scale = A/γ, loss_offset = B,
        decay "inv_sqrt", improvement = the chosen X). Switches: every
        observed pair (fitted), plus base switches between fitted models that
        the logs never show (kept from the base, listed in the provenance).

    Raises
    ------
    LogError
        A logged model absent from the base, a bad ``data_gamma``, a
        ``loss_max`` that is not a finite number or not below ℓ(0).
    InstanceError
        If the result fails the instance validation (should not happen).
    """
    from deplbench.instances.model import parse_instance

    if not (isinstance(data_gamma, (int, float)) and math.isfinite(data_gamma) and data_gamma > 0):
        raise LogError(f"data_gamma: must be a positive finite number, got {data_gamma!r}")
    base_models = {m.name: m for m in base.models}
    unknown = [m for m in fit.models if m not in base_models]
    if unknown:
        raise LogError(
            f"column 'model': {', '.join(repr(m) for m in unknown)} not in the base instance "
            f"{base.name!r} (its models are {first_names(base_models)}); a model's size and compute come from the "
            "base: pass --base with matching model names"
        )
    models = []
    for bm in base.models:  # keep the base's order
        if bm.name not in fit.models:
            continue
        mf = fit.models[bm.name]
        models.append({
            "name": bm.name, "size": bm.size, "compute": bm.compute,
            "loss_scale": mf.decay.A / data_gamma, "loss_offset": mf.decay.B, "decay": "inv_sqrt",
            "improvement": mf.improvement.chosen.model_dump(by_alias=True),
        })
    switches = [{"from_model": a, "to_model": b, "jump": f.chosen.model_dump(by_alias=True)}
                for (a, b), f in fit.switches.items()]
    kept = [sw for sw in base.switches
            if sw.from_model in fit.models and sw.to_model in fit.models
            and (sw.from_model, sw.to_model) not in fit.switches]
    switches += [sw.model_dump(by_alias=True) for sw in kept]
    initial = fit.initial_loss if fit.initial_loss is not None else base.initial_loss
    target = base.loss_max if loss_max is None else float(loss_max)
    if not math.isfinite(target):
        raise LogError(f"loss_max: must be a finite number, got {target}")
    if not target < initial:
        raise LogError(
            f"loss_max: {target} is not below the initial loss {initial:.6g} "
            f"({'mean epoch-0 loss of the logs' if fit.initial_loss is not None else 'from the base'}); "
            "pass --loss-max on the logs' loss scale"
        )
    dropped = [m.name for m in base.models if m.name not in fit.models]
    _, gamma_all = base.data_effect(base.all_datasets)
    diagnostics = fit.diagnostics()
    diagnostics.update({
        "data_gamma": data_gamma, "base_gamma_all_datasets": gamma_all,
        "base_models_dropped": dropped,
        "switches_kept_from_base": [[sw.from_model, sw.to_model] for sw in kept],
    })
    assumptions = [
        "loss model fitted from training logs (DepL Sec. VI-A): A_m, B_m by least squares on the mean "
        "per-epoch change with X = 1, X_m inverse-gamma by ML (empirical when KS rejects at "
        f"{fit.settings['alpha']}), l_sw Student's t deconvolved from the switch epoch's training step",
        f"fitted A_m divided by data_gamma = {data_gamma:g} (the learning multiplier of the logs' data)",
        "initial_loss = mean epoch-0 loss of the logs" if fit.initial_loss is not None
        else "initial_loss from the base (the logs have no epoch-0 rows)",
    ]
    if dropped:
        assumptions.append(f"base models without logs dropped: {dropped}")
    if kept:
        assumptions.append(f"unobserved switches kept from the base: {[[s.from_model, s.to_model] for s in kept]}")
    assumptions += [f"base: {a}" for a in base.provenance.assumptions]
    data = base.model_dump(by_alias=True)
    data.update({
        "name": name or f"{base.name}-fit",
        "initial_loss": initial,
        "loss_max": target,
        "models": models,
        "switches": switches,
        "provenance": {
            "generator": "fit",
            "parameters": {
                "logs": fit.source, "logs_sha256": fit.sha256, "base": base_label or base.name,
                "base_generator": base.provenance.generator, "data_gamma": data_gamma,
                "loss_max_override": loss_max, **fit.settings,
            },
            "seed": fit.settings["seed"],
            "assumptions": assumptions,
            "fit": diagnostics,
        },
    })
    return parse_instance(data)


def fit_instance(
    logs_path: str | os.PathLike,
    *,
    base=None,
    base_label: str = "",
    family: str = "alexnet",
    name: str | None = None,
    data_gamma: float = 1.0,
    loss_max: float | None = None,
    **fit_kwargs,
):
    """Read logs, fit, and build the instance (nothing is written).

    Parameters
    ----------
    logs_path : path-like
    base : Instance, optional
        Defaults to ``family_base(family)``.
    base_label, family, name, data_gamma, loss_max
        See :func:`build_instance` and :func:`family_base`.
    **fit_kwargs
        Passed to :func:`fit_logs`.

    Returns
    -------
    (Instance, FitResult)
    """
    logs = read_logs(logs_path)
    fit = fit_logs(logs, **fit_kwargs)
    if base is None:
        base = family_base(family)
        base_label = base_label or f"realistic family {family!r}"
    return build_instance(fit, base, name=name, data_gamma=data_gamma, loss_max=loss_max,
                          base_label=base_label), fit
