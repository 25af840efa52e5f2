"""Remove unusable models, clusters and datasets before any solver sees them.

A choice is *unusable* when even its fastest epoch misses the deadline:

* model m — for every cluster n, c(m, {d_min})/r(n) + s(m)/b(n) > Tmax, where
  d_min is the smallest dataset (the least compute any epoch of m can need,
  :func:`deplbench.instances.datalaw.compute_need`; a training cluster holds
  at least one dataset);
* cluster n — the same for every remaining model;
* dataset d — c(m, {d})/r(n) + s(m)/b(n) > Tmax for every remaining (m, n):
  any set holding d needs at least that much compute per epoch.

By eqs. (1), (4) and (5) an epoch takes at least c/r + s/b (x ≤ r), so no
feasible plan uses such a choice: removing it changes no optimum. It does
change what solvers see — a model with compute 10^20 next to models with
compute 1 turned the MILP's coefficients into garbage and overflowed DepL's
grid indices. Removal repeats until nothing changes (removing models can
make a cluster useless).

Plans refer to models, clusters and datasets by *name*, and names are kept,
so a plan of the reduced instance is already a plan of the original one
(:func:`solve` judges it on the original). Its scenarios are the original's
(:attr:`Instance.scenario_source`): a scenario draws the models' terms one
after another from one stream, so drawing them afresh without a removed model
would shift every later model's draws, and the SAA optimum would no longer be
the one on ``ScenarioSampler(original, seed)``.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> instance = generate("scaling", n_models=3, horizon=8, seed=0).with_changes(time_max=3.0)
>>> red = reduce_instance(instance)
>>> red.instance.n_models, red.removed["models"]
(2, [{'name': 'm0', 'reason': 'fastest epoch 3.73227 > Tmax 3'}])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from deplbench.instances.datalaw import compute_need

#: Relative slack on Tmax: an epoch within round-off of the deadline is kept
#: (the evaluator's own slack, ``formulations.model.allocation.TIME_RTOL``).
TIME_RTOL = 1e-9


@dataclass
class Reduction:
    """Outcome of :func:`reduce_instance`.

    Attributes
    ----------
    instance : Instance or None
        The reduced instance (the original object when nothing was removed);
        None when nothing usable is left.
    removed : dict
        ``{"models"|"clusters"|"datasets": [{"name", "reason"}, ...]}``.
    reason : str
        Why nothing is left ("" otherwise).
    """

    instance: object
    removed: dict = field(default_factory=lambda: {"models": [], "clusters": [], "datasets": []})
    reason: str = ""

    @property
    def changed(self) -> bool:
        return any(self.removed.values())

    def summary(self) -> dict:
        """JSON-able record for ``diagnostics["preprocess"]``."""
        return {"removed": {k: list(v) for k, v in self.removed.items()}, "changed": self.changed,
                "reason": self.reason}


def _fastest_epochs(instance, models, clusters, volumes) -> np.ndarray:
    """τ[m, n, v] = compute_need(c_m, V_v)/r_n + s_m/b_n: the fastest epoch (x = r).

    Overflow becomes +inf (an epoch that cannot finish), never a warning.
    """
    c = instance.model_compute[models][:, None, None]
    s = instance.model_size[models][:, None, None]
    r = instance.capacity[clusters][None, :, None]
    b = instance.bandwidth[clusters][None, :, None]
    v = np.asarray(volumes, dtype=float)[None, None, :]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        tau = compute_need(c, v) / r + s / b
    return np.where(np.isnan(tau), np.inf, tau)


def reduce_instance(instance) -> Reduction:
    """The instance without its unusable models, clusters and datasets.

    Parameters
    ----------
    instance : deplbench.instances.model.Instance

    Returns
    -------
    Reduction
        ``instance`` is the input object itself when nothing is unusable.
    """
    limit = float(instance.time_max) * (1.0 + TIME_RTOL)
    models = list(range(instance.n_models))
    clusters = list(range(instance.n_clusters))
    datasets = list(range(instance.n_datasets))
    sizes = np.array([d.size for d in instance.datasets], dtype=float)
    out = Reduction(instance)
    while models and clusters and datasets:
        tau = _fastest_epochs(instance, models, clusters, [sizes[datasets].min()])[:, :, 0]
        best_m = tau.min(axis=1)
        drop_m = [models[i] for i in np.nonzero(best_m > limit)[0]]
        best_n = tau.min(axis=0)
        drop_n = [clusters[j] for j in np.nonzero(best_n > limit)[0]]
        per_d = _fastest_epochs(instance, models, clusters, sizes[datasets]).min(axis=(0, 1))
        drop_d = [datasets[i] for i in np.nonzero(per_d > limit)[0]]
        if not (drop_m or drop_n or drop_d):
            break
        tmax = instance.time_max
        for i in np.nonzero(best_m > limit)[0]:
            out.removed["models"].append({"name": instance.models[models[i]].name,
                                          "reason": f"fastest epoch {best_m[i]:.6g} > Tmax {tmax:.6g}"})
        for j in np.nonzero(best_n > limit)[0]:
            out.removed["clusters"].append({"name": instance.clusters[clusters[j]].name,
                                            "reason": f"fastest epoch of any model {best_n[j]:.6g} > Tmax {tmax:.6g}"})
        for i in np.nonzero(per_d > limit)[0]:
            out.removed["datasets"].append({"name": instance.datasets[datasets[i]].name,
                                            "reason": f"fastest epoch holding it {per_d[i]:.6g} > Tmax {tmax:.6g}"})
        models = [m for m in models if m not in drop_m]
        clusters = [n for n in clusters if n not in drop_n]
        datasets = [d for d in datasets if d not in drop_d]
    if not (models and clusters and datasets):
        empty = [k for k, left in (("models", models), ("clusters", clusters), ("datasets", datasets)) if not left]
        out.instance = None
        out.reason = (f"no usable {' or '.join(empty)}: even at full capacity every epoch takes longer than "
                      f"Tmax = {instance.time_max:g}")
        return out
    if not out.changed:
        return out
    out.instance = _subset(instance, models, clusters, datasets)
    return out


def _subset(instance, models, clusters, datasets):
    """A re-validated copy keeping the given indices (switches/transfer costs filtered to match)."""
    from deplbench.instances.model import parse_instance

    data = instance.model_dump(by_alias=True)
    keep_m = {instance.models[i].name for i in models}
    keep_n = {instance.clusters[i].name for i in clusters}
    keep_d = {instance.datasets[i].name for i in datasets}
    data["models"] = [m for m in data["models"] if m["name"] in keep_m]
    data["clusters"] = [c for c in data["clusters"] if c["name"] in keep_n]
    data["datasets"] = [d for d in data["datasets"] if d["name"] in keep_d]
    data["switches"] = [s for s in data["switches"] if s["from_model"] in keep_m and s["to_model"] in keep_m]
    data["transfer_costs"] = [t for t in data["transfer_costs"]
                              if t["dataset"] in keep_d and t["cluster"] in keep_n]
    out = parse_instance(data)
    # the scenarios of the reduced instance are the original's columns (ScenarioSampler): the
    # SAA optimum refers to ScenarioSampler(original, seed), whatever preprocessing removed
    kept_sw = [j for j, sw in enumerate(instance.switches) if sw.from_model in keep_m and sw.to_model in keep_m]
    out._scenario_source = (instance, list(models), kept_sw)
    return out


__all__ = ["Reduction", "TIME_RTOL", "reduce_instance"]
