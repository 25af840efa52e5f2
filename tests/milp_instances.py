"""Tiny seeded instances shared by the MILP and brute-force tests."""

from __future__ import annotations

import numpy as np

from deplbench.instances.distributions import InverseGamma
from deplbench.instances.model import parse_instance


def tiny_instance(seed: int = 0, horizon: int = 4, n_models: int = 3, n_clusters: int = 2,
                  n_datasets: int = 1, transfer: str = "once", rule: str = "intended",
                  all_switches: bool = False, omega: float = 0.8, loss_max: float | None = None,
                  time_max: float | None = None, beta_high: float = 0.5):
    """A random tiny instance: inverse-gamma improvements, Student-t jumps.

    ``all_switches`` allows every ordered pair (a cyclic switch graph, so the
    MILP uses its flow formulation); otherwise switches go m_i → m_{i+1} and
    m_0 → m_2 (acyclic: the enumeration formulation when |D| = 1).
    """
    rng = np.random.default_rng(seed)
    models = []
    for i in range(n_models):
        ig = InverseGamma.from_moments(float(rng.uniform(0.9, 1.1)), float(rng.uniform(0.005, 0.04)))
        models.append({"name": f"m{i}", "size": float(rng.uniform(0, 1)), "compute": float(rng.uniform(1, 4)),
                       "loss_scale": float(rng.uniform(0.8, 2.0)), "loss_offset": float(rng.uniform(0, 3)),
                       "decay": "inv_sqrt", "improvement": ig.model_dump()})
    switches = []
    for i in range(n_models):
        for j in range(n_models):
            if i != j and (all_switches or j == i + 1 or (i == 0 and j == 2)):
                switches.append({"from_model": f"m{i}", "to_model": f"m{j}",
                                 "jump": {"kind": "student_t", "df": 5.0,
                                          "loc": float(rng.uniform(0.05, 0.3)), "scale": 0.05}})
    clusters = [{"name": f"c{n}", "capacity": float(rng.uniform(1, 3)), "unit_cost": float(rng.uniform(0.5, 1.5)),
                 "bandwidth": float(rng.uniform(1, 4))} for n in range(n_clusters)]
    datasets = [{"name": f"d{d}", "size": float(rng.uniform(0.5, 1.5)), "usefulness": float(rng.uniform(0.5, 1.5))}
                for d in range(n_datasets)]
    transfer_costs = [{"dataset": f"d{d}", "cluster": f"c{n}", "cost": float(rng.uniform(0, beta_high))}
                      for d in range(n_datasets) for n in range(n_clusters)]
    mean_scale = sum(m["loss_scale"] for m in models) / n_models
    return parse_instance({
        "name": f"tiny-{seed}", "initial_loss": 10.0,
        "loss_max": loss_max if loss_max is not None else 10.0 - 0.35 * mean_scale * horizon,
        "omega": omega, "time_max": time_max if time_max is not None else 2.5 * horizon,
        "horizon": horizon, "transfer_cost_mode": transfer, "data_rule": rule,
        "models": models, "switches": switches, "clusters": clusters, "datasets": datasets,
        "transfer_costs": transfer_costs,
    })
