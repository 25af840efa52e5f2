"""The measured family: instances whose loss laws were fitted to real training (docs/measured.md).

The network is the digits MLP of :mod:`deplbench.measure` and its versions
pruned with factors 0.25, 0.36, 0.5, 0.75 and 0.9 (full, p25, p36, p50, p75,
p90). Everything about the models comes from the shipped measurement in
``deplbench/instances/data/measured/``:

* ``digits-mlp.csv.gz``: the test loss after every epoch of every run;
* ``digits-mlp.provenance.json``: library, architecture, seeds, and per
  version its parameter count and training FLOPs per epoch (counted by
  PyTorch's ``FlopCounterMode``);
* ``digits-mlp-fit.json``: the instance ``deplbench fit`` writes on those
  logs with :func:`measured_base` as the base (A_m, B_m, X_m, l_sw fitted;
  regenerate with ``make measured-fit``).

The generator reads these files only (no training library). Seed 0 is the
shipped fit with the defaults below; other seeds vary the cluster mix and
the targets around it, as the realistic populations do.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from deplbench.errors import InstanceError
from deplbench.instances.generators.common import (
    build_instance,
    float_param,
    generator_doc,
    instance_data,
    int_param,
    seed_param,
)
from deplbench.instances.model import Instance

#: Folder of the shipped measurement.
DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "measured"
LOGS_FILE = DATA_DIR / "digits-mlp.csv.gz"
PROVENANCE_FILE = DATA_DIR / "digits-mlp.provenance.json"
FIT_FILE = DATA_DIR / "digits-mlp-fit.json"

#: Compute demand unit: c_m = training FLOPs per epoch / 1e6 (MFLOP).
FLOP_UNIT = 1e6
#: Ours: A-class and B-class clusters as in the realistic family (r, κ), r in MFLOP per time unit.
A_CLASS = {"capacity": 100.0, "unit_cost": 1.0, "bandwidth": 0.5}
B_CLASS = {"capacity": 50.0, "unit_cost": 1.2, "bandwidth": 1.0}
#: Ours: ω = 0.9, so that the violation rate 1 − ω = 0.1 is resolvable by 1,000 replayed runs
#: (Clopper–Pearson 95 % interval about ±0.02 wide at 0.1).
MEASURED_OMEGA = 0.9
#: Ours: K̄ = the longest logged run, so no plan relies on the fit beyond the measured epochs.
MEASURED_HORIZON = 40
MEASURED_LOSS_MAX = 0.3
MEASURED_TIME_MAX = 40.0


@lru_cache(maxsize=1)
def _provenance() -> dict:
    try:
        return json.loads(PROVENANCE_FILE.read_text())
    except (OSError, ValueError) as exc:
        raise InstanceError(f"measured: cannot read the shipped provenance {PROVENANCE_FILE} ({exc})") from None


def measured_versions() -> dict[str, dict]:
    """name → {factor, hidden, parameters, flops_per_epoch} of the shipped measurement."""
    return dict(_provenance()["architecture"]["versions"])


def measured_base(*, loss_max: float = MEASURED_LOSS_MAX, omega: float = MEASURED_OMEGA) -> Instance:
    """The base instance ``deplbench fit`` maps the measured logs onto.

    Models: every measured version, size = parameters / full parameters,
    compute = FLOPs per epoch / :data:`FLOP_UNIT`; the loss law fields are
    placeholders the fit replaces. No switches: the fit adds exactly the
    measured pairs (a switch nobody measured is not in the family).
    """
    versions = measured_versions()
    full = versions["full"]["parameters"]
    models = [{
        "name": name, "size": v["parameters"] / full, "compute": v["flops_per_epoch"] / FLOP_UNIT,
        "loss_scale": 1.0, "loss_offset": 0.0, "decay": "inv_sqrt",
        "improvement": {"kind": "point_mass", "value": 1.0},
    } for name, v in versions.items()]
    clusters = [{"name": "A1", **A_CLASS}, {"name": "B1", **B_CLASS}]
    assumptions = [
        "Measured (docs/measured.md): models are the digits MLP and its ln_structured-pruned versions; "
        f"compute c_m = training FLOPs per epoch / {FLOP_UNIT:g} (PyTorch FlopCounterMode); size s(m) = "
        "parameters / parameters of the full network.",
        "Ours: clusters as the realistic family (A-class r=100, κ=1; B-class r=50, κ=1.2), r in MFLOP per "
        f"time unit; ω = {MEASURED_OMEGA} so that 1 − ω is resolvable by 1,000 replayed runs; K̄ = "
        f"{MEASURED_HORIZON} (the longest logged run).",
    ]
    data = instance_data("measured-digits-mlp", 2.3, loss_max, omega, MEASURED_TIME_MAX, MEASURED_HORIZON,
                         models, [], clusters, {"generator": "measured-base", "assumptions": assumptions})
    return build_instance(data)


@lru_cache(maxsize=1)
def _fitted() -> dict:
    try:
        return json.loads(FIT_FILE.read_text())
    except (OSError, ValueError) as exc:
        raise InstanceError(f"measured: cannot read the shipped fit {FIT_FILE} ({exc}); "
                            "regenerate it with `make measured-fit`") from None


@generator_doc
def measured(*, n_a: int | None = None, n_b: int | None = None, loss_max: float | None = None,
             omega: float = MEASURED_OMEGA, time_max: float | None = None, seed: int = 0) -> Instance:
    """Instances of the measured network (loss laws fitted to real training runs).

    Parameters
    ----------
    n_a, n_b : int, optional
        A-class and B-class clusters (one node each). Default: 1 and 1 for
        seed 0; for other seeds drawn uniformly from 1..3 and 0..3.
    loss_max : float, optional
        ℓmax on the ω-quantile of the final test loss (cross-entropy).
        Default 0.3 for seed 0; for other seeds 0.3 × U(0.8, 1.25).
    omega : float, default 0.9
        ω (chosen so that 1 − ω is resolvable by 1,000 replayed runs).
    time_max : float, optional
        Tmax; default 40 for seed 0, 40 × U(0.75, 1.5) otherwise.
    {seed}

    {returns}

    {raises}

    Notes
    -----
    The models, loss laws (A_m, B_m, X_m, l_sw) and compute demands come from
    the shipped measurement (module docstring); only clusters and targets are
    ours and vary with the seed.
    """
    seed = seed_param(seed)
    rng = np.random.default_rng(seed)
    draw_a, draw_b = (int(rng.integers(1, 4)), int(rng.integers(0, 4))) if seed else (1, 1)
    draw_l = MEASURED_LOSS_MAX * (float(rng.uniform(0.8, 1.25)) if seed else 1.0)
    draw_t = MEASURED_TIME_MAX * (float(rng.uniform(0.75, 1.5)) if seed else 1.0)
    n_a = draw_a if n_a is None else int_param("n_a", n_a, 0, 20)
    n_b = draw_b if n_b is None else int_param("n_b", n_b, 0, 20)
    if n_a + n_b == 0:
        raise InstanceError("parameter 'n_a': n_a + n_b must be at least 1 (no cluster to train on)")
    target = float(f"{draw_l:.4g}") if loss_max is None else float_param("loss_max", loss_max, gt=0)
    omega = float_param("omega", omega, gt=0, lt=1)
    tmax = float(f"{draw_t:.4g}") if time_max is None else float_param("time_max", time_max, gt=0)
    fit = _fitted()
    if not target < fit["initial_loss"]:
        raise InstanceError(f"parameter 'loss_max': {target:g} is not below the measured initial loss "
                            f"{fit['initial_loss']:.4g}")
    clusters = [{"name": f"A{i + 1}", **A_CLASS} for i in range(n_a)]
    clusters += [{"name": f"B{i + 1}", **B_CLASS} for i in range(n_b)]
    prov = fit["provenance"]
    assumptions = list(prov.get("assumptions", [])) + [
        f"Ours (seed {seed}): {n_a} A-class and {n_b} B-class clusters, ℓmax = {target:g}, Tmax = {tmax:g}"
        + ("" if seed == 0 else " (cluster counts from 1..3 / 0..3, ℓmax = 0.3·U(0.8, 1.25), "
                                  "Tmax = 40·U(0.75, 1.5), unless given)"),
    ]
    data = instance_data(
        "measured-digits-mlp" + (f"-s{seed}" if seed else ""), fit["initial_loss"], target, omega, tmax,
        fit["horizon"], fit["models"], fit["switches"], clusters,
        {"generator": "measured", "seed": seed,
         "parameters": {"n_a": n_a, "n_b": n_b, "loss_max": target, "omega": omega, "time_max": tmax,
                        "logs_sha256": prov.get("parameters", {}).get("logs_sha256")},
         "assumptions": assumptions},
    )
    return build_instance(data)


__all__ = ["measured", "measured_base", "measured_versions", "DATA_DIR", "LOGS_FILE", "PROVENANCE_FILE",
           "FIT_FILE", "FLOP_UNIT", "MEASURED_OMEGA", "MEASURED_LOSS_MAX"]
