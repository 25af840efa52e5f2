"""The ``knapsack`` family: DepL Property 1 run forwards on Pisinger's knapsack classes.

A covering knapsack becomes a training instance whose exact optimum
:func:`deplbench.formulations.exact.knapsack.knapsack_optimum_from_instance`
recomputes from ``provenance.items`` (docs/instances.md §4.3).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.errors import InstanceError
from deplbench.instances.generators.common import (
    build_instance,
    choice_param,
    derived_number,
    float_param,
    generator_doc,
    instance_data,
    int_param,
    seed_param,
)
from deplbench.instances.model import MAX_HORIZON, Instance

#: Pisinger's classes (Pisinger 2005, "Where are the hard knapsack problems?").
KNAPSACK_CLASSES = (
    "uncorrelated",
    "weakly",
    "strongly",
    "inverse-strongly",
    "almost-strongly",
    "subset-sum",
    "uncorrelated-similar-weights",
)


# ---------------------------------------------------------------------------
# knapsack
# ---------------------------------------------------------------------------


def knapsack_items(item_class: str, n_items: int, R: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Integer (weights, values) of one of Pisinger's knapsack classes.

    Parameters
    ----------
    item_class : str
        One of :data:`KNAPSACK_CLASSES`.
    n_items : int
    R : int
        Coefficient range: weights (and most values) in [1, R].
    rng : numpy.random.Generator

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        int64 weights ≥ 1 and values ≥ 1.

    Notes
    -----
    Following Pisinger (2005), with w_j uniform in [1, R]:

    * uncorrelated: v_j uniform in [1, R];
    * weakly: v_j uniform in [w_j − R/10, w_j + R/10], at least 1;
    * strongly: v_j = w_j + R/10;
    * inverse-strongly: v_j uniform in [1, R], w_j = v_j + R/10;
    * almost-strongly: v_j uniform in [w_j + R/10 − R/500, w_j + R/10 + R/500];
    * subset-sum: v_j = w_j;
    * uncorrelated-similar-weights: w_j in [100000, 100100], v_j in [1, 1000]
      (R is not used).

    R/10 and R/500 are integer divisions.
    """
    d10, d500 = R // 10, R // 500
    n = n_items
    if item_class == "uncorrelated-similar-weights":
        w = rng.integers(100_000, 100_100, size=n, endpoint=True)
        v = rng.integers(1, 1000, size=n, endpoint=True)
        return w.astype(np.int64), v.astype(np.int64)
    if item_class == "inverse-strongly":
        v = rng.integers(1, R, size=n, endpoint=True)
        return (v + d10).astype(np.int64), v.astype(np.int64)
    w = rng.integers(1, R, size=n, endpoint=True)
    if item_class == "uncorrelated":
        v = rng.integers(1, R, size=n, endpoint=True)
    elif item_class == "weakly":
        v = np.maximum(1, w + rng.integers(-d10, d10, size=n, endpoint=True))
    elif item_class == "strongly":
        v = w + d10
    elif item_class == "almost-strongly":
        v = w + d10 + rng.integers(-d500, d500, size=n, endpoint=True)
    elif item_class == "subset-sum":
        v = w.copy()
    else:  # pragma: no cover - validated by the caller
        raise InstanceError(f"parameter item_class: unknown class {item_class!r}")
    return w.astype(np.int64), v.astype(np.int64)


@generator_doc
def knapsack(*, item_class: str = "uncorrelated", n_items: int = 10, R: int = 100, horizon: int = 10,
             target_fraction: float = 0.5, time_max: float = 1.0, seed: int = 0) -> Instance:
    """DepL Property 1 run forwards: a covering knapsack as a training instance.

    Parameters
    ----------
    item_class : str, default "uncorrelated"
        Pisinger's class (:data:`KNAPSACK_CLASSES`).
    n_items : int, default 10
        Number of items = number of model versions (≤ 200: every ordered pair
        of models is an allowed switch, so |P| = n(n−1)).
    R : int, default 100
        Coefficient range (≥ 10 so that R/10 ≥ 1).
    horizon : int, default 10
        K̄: at most this many epochs (items, with repetition).
    target_fraction : float, default 0.5
        The covering target is T = ⌈target_fraction · K̄ · max_i v_i⌉, i.e.
        the fraction of the most value any K̄ epochs can give; in (0, 1]
        (1 makes "K̄ epochs of the most valuable model" the only solution).
    time_max : float, default 1.0
        Tmax; the optimal cost is (min Σ w)² / Tmax.
    {seed}

    Returns
    -------
    Instance
        Item i ↔ model ``item{i}`` with ``decay="none"``, ``loss_scale = v_i``,
        improvement ``point(1)``, compute c_i = w_i², size 0; every switch
        allowed with a ``point(0)`` jump; one cluster (κ = 1, bandwidth 1,
        capacity 2·K̄·max w² / Tmax); one dataset (σ = u = 1, γ = 1); β = 0;
        ω = 0.5; ℓ(0) = T, ℓmax = 0. ``provenance.items`` holds ``weights``,
        ``values``, ``class``, ``R`` and ``target``.

    {raises}

    Notes
    -----
    With κ = 1, s = 0 and a capacity that never binds, the real-x optimum of
    an epoch sequence is (Σ_k sqrt(c_{m_k}))²/Tmax = (Σ_k w_{m_k})²/Tmax
    (DepL Property 1; docs/instances.md §4.3). Capacity: in that optimum x_k = w_k · Σw / Tmax ≤
    K̄ · max w² / Tmax, so twice this bound never binds (the factor 2 is
    slack against round-off). The loss is deterministic, so ω is irrelevant
    (0.5 by convention) and ℓ(K) = T − Σ_k v_{m_k} exactly (integers).

    References
    ----------
    DepL paper, Property 1; docs/instances.md §4.3; D. Pisinger, Computers & Operations
    Research 32 (2005) 2271–2284.
    """
    item_class = choice_param("item_class", item_class, KNAPSACK_CLASSES)
    n_items = int_param("n_items", n_items, 1, 200)
    R = int_param("R", R, 10, 10**7)
    horizon = int_param("horizon", horizon, 1, MAX_HORIZON)
    target_fraction = float_param("target_fraction", target_fraction, gt=0.0, le=1.0)
    time_max = float_param("time_max", time_max, gt=0.0)
    seed = seed_param(seed)
    rng = np.random.default_rng(seed)
    w, v = knapsack_items(item_class, n_items, R, rng)
    target = max(1, math.ceil(target_fraction * horizon * int(v.max()) - 1e-9))
    capacity = derived_number(2.0 * horizon * float(w.max()) ** 2 / time_max,
                              "a cluster capacity 2·K̄·max w²/time_max", "time_max", time_max)
    width = len(str(n_items - 1))
    names = [f"item{i:0{width}d}" for i in range(n_items)]
    models = [{
        "name": names[i], "size": 0.0, "compute": float(w[i]) ** 2, "loss_scale": float(v[i]),
        "loss_offset": 0.0, "decay": "none", "improvement": {"kind": "point", "value": 1.0},
    } for i in range(n_items)]
    switches = [{"from_model": a, "to_model": b, "jump": {"kind": "point", "value": 0.0}}
                for a in names for b in names if a != b]
    params = {"item_class": item_class, "n_items": n_items, "R": R, "horizon": horizon,
              "target_fraction": target_fraction, "time_max": time_max}
    assumptions = [
        "Paper (DepL Property 1): items → models, deterministic improvement = value, one dataset, "
        "one cluster with sufficient capability, β = 0.",
        "Ours (Property 1 made concrete): no decay, free switches (point(0) jumps, every ordered pair allowed), κ = 1, "
        "size 0, c_i = w_i² so that the optimal real-x cost is (Σw)²/Tmax.",
        f"Ours: covering target T = ⌈target_fraction·K̄·max v⌉ = {target}; ℓ(0) = T, ℓmax = 0.",
        f"Ours: capacity = 2·K̄·max w²/Tmax = {capacity:g} (never binds: the optimum needs at most "
        "K̄·max w²/Tmax).",
        "Ours: ω = 0.5 (deterministic instance, any ω gives the same constraint); bandwidth 1.",
    ]
    return build_instance(instance_data(
        f"knapsack-{item_class}-n{n_items}-s{seed}", float(target), 0.0, 0.5, time_max, horizon, models,
        switches, [{"name": "C0", "capacity": capacity, "unit_cost": 1.0, "bandwidth": 1.0}],
        {"generator": "knapsack", "parameters": params, "seed": seed, "assumptions": assumptions,
         "items": {"weights": w.tolist(), "values": v.tolist(), "class": item_class, "R": R,
                   "target": target}}))
