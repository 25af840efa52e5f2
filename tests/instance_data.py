"""A small hand-written instance shared by the format and CLI tests."""

from __future__ import annotations


def base_instance() -> dict:
    """A small valid instance with every section filled in (a fresh dict per call)."""
    return {
        "name": "base", "initial_loss": 10.0, "loss_max": 5.0, "omega": 0.9, "time_max": 20.0, "horizon": 5,
        "models": [
            {"name": "big", "size": 0.5, "compute": 2.0, "loss_scale": 2.0, "loss_offset": 1.0,
             "decay": "inv_sqrt", "improvement": {"kind": "inverse_gamma", "shape": 12.0, "scale": 11.0}},
            {"name": "small", "size": 0.1, "compute": 1.0, "loss_scale": 1.5, "loss_offset": 0.0,
             "decay": "inv_sqrt", "improvement": {"kind": "point", "value": 1.0}},
        ],
        "switches": [{"from_model": "big", "to_model": "small",
                      "jump": {"kind": "student_t", "df": 4.0, "loc": 0.2, "scale": 0.05}}],
        "clusters": [{"name": "A", "capacity": 10.0, "unit_cost": 1.0, "bandwidth": 1.0},
                     {"name": "B", "capacity": 5.0, "unit_cost": 1.2, "bandwidth": 2.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
        "transfer_costs": [{"dataset": "d0", "cluster": "B", "cost": 3.0}],
    }


def two_model_data(**over) -> dict:
    """Two models, two clusters, one dataset, inverse-gamma improvements
    (mean 1, variance 0.02): the small stochastic instance of the core and
    preprocessing tests, as a fresh dict with ``over`` applied."""
    from deplbench.instances.distributions import InverseGamma

    ig = InverseGamma.from_moments(1.0, 0.02).model_dump()
    data = {
        "name": "core", "initial_loss": 10.0, "loss_max": 4.0, "omega": 0.9,
        "time_max": 40.0, "horizon": 6,
        "models": [
            {"name": "big", "size": 1.0, "compute": 4.0, "loss_scale": 2.0, "loss_offset": 0.0, "improvement": ig},
            {"name": "small", "size": 0.5, "compute": 1.0, "loss_scale": 1.2, "loss_offset": 1.0, "improvement": ig},
        ],
        "switches": [{"from_model": "big", "to_model": "small", "jump": {"kind": "normal", "mean": 0.2, "std": 0.05}}],
        "clusters": [
            {"name": "A", "capacity": 2.0, "unit_cost": 1.0, "bandwidth": 2.0},
            {"name": "B", "capacity": 1.0, "unit_cost": 0.5, "bandwidth": 1.0},
        ],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    }
    data.update(over)
    return data
