"""The ``scaling`` and ``datasets`` families: random instances made feasible by a reference plan.

Every number is drawn from ``numpy.random.default_rng(seed)``; ℓmax and Tmax
are placed from a reference plan that is feasible by construction
(docs/instances.md §4.4–4.5). Dataset effects follow the data law of
:mod:`deplbench.instances.datalaw`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deplbench.instances import datalaw
from deplbench.instances.distributions import InverseGamma
from deplbench.instances.generators.common import (
    REGROW_JUMP_FACTOR,
    SWITCH_MODES,
    build_instance,
    choice_param,
    derived_number,
    float_param,
    generator_doc,
    instance_data,
    int_param,
    inverse_gamma,
    seed_param,
    significant,
    student_t,
)
from deplbench.instances.generators.paper import (
    A_CLASS,
    A_CLASS_BANDWIDTH,
    B_CLASS,
    B_CLASS_BANDWIDTH,
    REALISTIC_INITIAL_LOSS,
    REALISTIC_JUMP_DF,
    REALISTIC_JUMP_SCALE_RATIO,
    REALISTIC_LOSS_MAX,
    REALISTIC_TIME_MAX,
    realistic_dnn,
    regrow_assumption,
)
from deplbench.instances.model import Instance

# ---------------------------------------------------------------------------
# scaling and datasets: random instances made feasible by a reference plan
# ---------------------------------------------------------------------------

#: Margin added to the reference plan's quantile when ℓmax is derived (a
#: fraction of its expected improvement), so the instance is feasible with
#: room for cheaper plans than the reference.
REFERENCE_MARGIN = 0.02
#: Monte-Carlo draws used to place ℓmax (own stream, see _reference_target).
REFERENCE_SAMPLES = 4000


def _reference_target(models: list[dict], model_idx: int, gamma: float, epochs: int,
                      initial_loss: float, omega: float, rng: np.random.Generator) -> float:
    """ℓmax that a reference plan (``epochs`` epochs of one model) meets.

    The ω-quantile of the reference plan's final loss is estimated from
    :data:`REFERENCE_SAMPLES` draws and loosened by :data:`REFERENCE_MARGIN`
    of its expected improvement, so the reference plan is feasible (with
    high probability out of sample) and the optimum can beat it.
    """
    m = models[model_idx]
    k = np.arange(1, epochs + 1, dtype=float)
    scale = gamma * m["loss_scale"] / np.sqrt(k + m["loss_offset"])
    dist = InverseGamma(shape=m["improvement"]["shape"], scale=m["improvement"]["scale"])
    draws = dist.sample(rng, (REFERENCE_SAMPLES, epochs))
    finals = initial_loss - draws @ scale
    q = float(np.quantile(finals, omega))
    improvement = float(scale.sum() * dist.mean())
    return significant(q + REFERENCE_MARGIN * improvement, 5)


def _random_models(rng: np.random.Generator, n_models: int,
                   switch_mode: str = "pruning") -> tuple[list[dict], list[dict]]:
    """|M| random model versions ordered by compute, with their switches.

    Pruning-direction switches m_i → m_j (i < j) always; with
    ``switch_mode="any"`` also every m_j → m_i, appended after them, with
    the forward jump's loc × :data:`REGROW_JUMP_FACTOR` (no extra draw, so
    the rest of the instance equals its ``"pruning"`` twin).
    """
    # Bigger models learn faster per epoch but with diminishing returns
    # (A ∝ c^0.25 while the real-x cost grows like sqrt(c)), so no version
    # dominates another outright.
    rel = np.sort(rng.uniform(0.5, 3.0, n_models))[::-1]
    a_noise = rng.uniform(0.9, 1.1, n_models)
    offsets = rng.uniform(0.0, 10.0, n_models)
    means = rng.uniform(0.92, 1.04, n_models)
    variances = rng.uniform(0.005, 0.03, n_models)
    models = []
    for i in range(n_models):
        models.append({
            "name": f"m{i}",
            "size": significant(0.2 * rel[i]),
            "compute": significant(100.0 * rel[i]),
            "loss_scale": significant(rel[i] ** 0.25 * a_noise[i]),
            "loss_offset": significant(offsets[i]),
            "decay": "inv_sqrt",
            "improvement": inverse_gamma(significant(means[i]), significant(variances[i])),
        })
    n_pairs = n_models * (n_models - 1) // 2
    locs = rng.uniform(0.1, 0.4, n_pairs)
    switches: list[dict[str, Any]] = []
    p = 0
    for i in range(n_models):
        for j in range(i + 1, n_models):
            loc = significant(locs[p])
            switches.append({"from_model": f"m{i}", "to_model": f"m{j}",
                             "jump": student_t(REALISTIC_JUMP_DF, loc, significant(REALISTIC_JUMP_SCALE_RATIO * loc))})
            p += 1
    if switch_mode == "any":
        reverse = []
        for sw in switches:
            loc = REGROW_JUMP_FACTOR * sw["jump"]["loc"]
            reverse.append({"from_model": sw["to_model"], "to_model": sw["from_model"],
                            "jump": student_t(REALISTIC_JUMP_DF, loc, significant(REALISTIC_JUMP_SCALE_RATIO * loc))})
        switches += reverse
    return models, switches


def _random_datasets(sizes: np.ndarray, useful: np.ndarray) -> list[dict]:
    """Datasets d0, d1, ... with sizes rescaled so that U(D) = Σ u_d σ_d = 1.

    γ(D) = 1 then: the whole data pool learns like the realistic family's
    single reference dataset, so magnitudes do not drift with |D|, and
    subsets trade slower learning for less work.
    """
    sizes = sizes / float(np.sum(sizes * useful))
    return [{"name": f"d{i}", "size": significant(sizes[i]), "usefulness": significant(useful[i])}
            for i in range(sizes.size)]


def _transfer_costs(beta: np.ndarray | None, datasets: list[dict], clusters: list[dict],
                    max_transfer_cost: float) -> list[dict]:
    """β(d, n) = beta[d, n] · σ_d (none when ``max_transfer_cost`` is 0; ``beta`` is then not drawn)."""
    if max_transfer_cost <= 0 or beta is None:
        return []
    # Python floats: a product past binary64 is inf without numpy's overflow warning,
    # and derived_number then refuses it naming the parameter the user set.
    return [{"dataset": d["name"], "cluster": c["name"],
             "cost": derived_number(significant(float(beta[i, j]) * d["size"]),
                                    "a transfer cost β(d, n) ~ U(0, max_transfer_cost)·σ_d", "max_transfer_cost",
                                    max_transfer_cost)}
            for i, d in enumerate(datasets) for j, c in enumerate(clusters)]


def _reference_assumption(ref: dict) -> str:
    return (f"Ours: reference plan {ref['epochs']} epochs of {ref['model']} on {ref['cluster']} with every "
            "dataset; Tmax = 1.5 × its full-capacity time; ℓmax = its ω-quantile + 2% of its expected "
            "improvement (unless loss_max is given).")


def _place_targets(models, clusters, datasets, horizon, omega, rng, loss_max, initial_loss):
    """Tmax and ℓmax from a reference plan that is feasible by construction.

    Reference: the model with the largest expected improvement over
    K_ref = ⌈0.6·K̄⌉ epochs, on the cluster of largest capacity, holding every
    dataset. Tmax = 1.5 × its full-capacity time; ℓmax = its quantile plus a
    margin (unless the caller fixed ``loss_max``).
    """
    k_ref = max(1, math.ceil(0.6 * horizon))
    volume = datalaw.data_volume(d["size"] for d in datasets)
    gamma = datalaw.learning_multiplier(
        datalaw.useful_volume([d["size"] for d in datasets], [d["usefulness"] for d in datasets]))
    k = np.arange(1, k_ref + 1, dtype=float)
    gains = [m["loss_scale"] * np.sum(1.0 / np.sqrt(k + m["loss_offset"]))
             * InverseGamma(shape=m["improvement"]["shape"], scale=m["improvement"]["scale"]).mean()
             for m in models]
    best = int(np.argmax(gains))
    cl = max(clusters, key=lambda c: c["capacity"])
    epoch_time = (datalaw.compute_need(models[best]["compute"], volume) / cl["capacity"]
                  + models[best]["size"] / cl["bandwidth"])
    time_max = significant(1.5 * k_ref * epoch_time, 5)
    if loss_max is None:
        loss_max = _reference_target(models, best, gamma, k_ref, initial_loss, omega, rng)
    return time_max, loss_max, {"model": models[best]["name"], "cluster": cl["name"], "epochs": k_ref}


def _check_sizes(n_models, n_clusters, n_datasets, horizon):
    return (int_param("n_models", n_models, 1, 500), int_param("n_clusters", n_clusters, 1, 500),
            int_param("n_datasets", n_datasets, 1, 500), int_param("horizon", horizon, 1, 10_000))


SCALING_INITIAL_LOSS = 21.0


@generator_doc
def scaling(*, n_models: int = 3, n_clusters: int = 2, n_datasets: int = 1, horizon: int = 20,
            omega: float = 0.9, loss_max: float | None = None, max_transfer_cost: float = 0.0,
            switches: str = "pruning", seed: int = 0) -> Instance:
    """Random feasible instances of any size, for runtime-scaling sweeps.

    Parameters
    ----------
    n_models, n_clusters, n_datasets : int
        |M| (≤ 500), |N| (≤ 500), |D| (≤ 500).
    horizon : int, default 20
        K̄.
    omega : float, default 0.9
        ω (0.9 rather than 0.99 so small scenario sets still resolve the
        quantile in complexity sweeps).
    loss_max : float, optional
        ℓmax; by default derived from a feasible reference plan (below).
    max_transfer_cost : float, default 0
        β(d, n) ~ U(0, max_transfer_cost) · σ_d when positive; none otherwise.
    switches : {"pruning", "any"}, default "pruning"
        The switch graph (:data:`SWITCH_MODES`): only from a larger to a
        smaller model (acyclic), or every ordered pair (cyclic; |M| ≤ 200,
        since there are |M|(|M|−1) switches). Recorded in
        ``provenance.parameters`` only when not the default.
    {seed}

    {returns}

    {raises}

    Notes
    -----
    All draws are ours (documented in ``provenance.assumptions``): model
    versions with relative compute ρ ~ U(0.5, 3) (sorted, largest first),
    c = 100ρ, s = 0.2ρ, A = ρ^0.25 · U(0.9, 1.1), B ~ U(0, 10), X
    inverse-gamma with mean ~ U(0.92, 1.04) and variance ~ U(0.005, 0.03);
    switches only from a larger to a smaller model (pruning direction) with
    t(4, loc ~ U(0.1, 0.4), 0.4 loc) jumps (with ``switches="any"`` also the
    reverse switches, smaller → larger, with t(4, 2 loc, 0.4·2 loc): a model
    grown back re-initialises weights, which costs more than pruning them);
    clusters with r ~ U(50, 150),
    κ ~ U(0.8, 1.5), b ~ U(0.5, 2); datasets with σ, u ~ U(0.5, 1.5), σ then
    rescaled so that Σ u_d σ_d = 1 (γ of all data = 1); ℓ(0) = 21.

    Feasibility by construction: the *reference plan* runs the model with
    the largest expected improvement for K_ref = ⌈0.6 K̄⌉ epochs on the
    cluster of largest capacity holding every dataset; Tmax = 1.5 × its
    full-capacity time, and ℓmax = its ω-quantile (4000 draws from the
    instance's generator) + 2 % of its expected improvement.
    """
    n_models, n_clusters, n_datasets, horizon = _check_sizes(n_models, n_clusters, n_datasets, horizon)
    switches = choice_param("switches", switches, SWITCH_MODES)
    if switches == "any":
        int_param("n_models", n_models, 1, 200)
    omega = float_param("omega", omega, gt=0.0, lt=1.0)
    max_transfer_cost = float_param("max_transfer_cost", max_transfer_cost, ge=0.0)
    if loss_max is not None:
        loss_max = float_param("loss_max", loss_max)
    seed = seed_param(seed)
    rng = np.random.default_rng(seed)
    models, switch_list = _random_models(rng, n_models, switches)
    clusters = [{"name": f"c{i}", "capacity": significant(rng.uniform(50, 150)),
                 "unit_cost": significant(rng.uniform(0.8, 1.5)), "bandwidth": significant(rng.uniform(0.5, 2.0))}
                for i in range(n_clusters)]
    sizes = rng.uniform(0.5, 1.5, n_datasets)
    useful = rng.uniform(0.5, 1.5, n_datasets)
    datasets = _random_datasets(sizes, useful)
    # β is drawn only when used, so the draws that place ℓmax do not depend
    # on an unused parameter.
    beta = rng.uniform(0.0, max_transfer_cost, (n_datasets, n_clusters)) if max_transfer_cost > 0 else None
    transfer = _transfer_costs(beta, datasets, clusters, max_transfer_cost)
    time_max, loss_max, ref = _place_targets(models, clusters, datasets, horizon, omega, rng, loss_max,
                                             SCALING_INITIAL_LOSS)
    params = {"n_models": n_models, "n_clusters": n_clusters, "n_datasets": n_datasets, "horizon": horizon,
              "omega": omega, "loss_max": loss_max, "max_transfer_cost": max_transfer_cost}
    if switches != "pruning":
        params["switches"] = switches
    assumptions = [
        "Ours: every number is drawn (see deplbench.instances.generators.scaling): ρ ~ U(0.5, 3), "
        "c = 100ρ, s = 0.2ρ, A = ρ^0.25·U(0.9, 1.1), B ~ U(0, 10), X ~ inverse-gamma(mean U(0.92, 1.04), "
        "var U(0.005, 0.03)); pruning-direction switches with t(4, U(0.1, 0.4), 0.4·loc) jumps; "
        "r ~ U(50, 150), κ ~ U(0.8, 1.5), b ~ U(0.5, 2); σ, u ~ U(0.5, 1.5) with σ rescaled so that "
        "Σ u σ = 1 (γ(D) = 1); ℓ(0) = 21.",
        _reference_assumption(ref),
    ]
    if switches == "any":
        assumptions.append(regrow_assumption("m_i→m_j for i < j, larger to smaller"))
    name = f"scaling-M{n_models}-N{n_clusters}-D{n_datasets}-K{horizon}" + ("-any" if switches == "any" else "")
    return build_instance(instance_data(
        f"{name}-s{seed}", SCALING_INITIAL_LOSS, loss_max,
        omega, time_max, horizon, models, switch_list, clusters,
        {"generator": "scaling", "parameters": params, "seed": seed, "assumptions": assumptions,
         "reference_plan": ref}, datasets=datasets, transfer_costs=transfer))


@generator_doc
def datasets(*, n_datasets: int = 5, n_clusters: int = 2, horizon: int = 50, omega: float = 0.99,
             loss_max: float | None = None, max_transfer_cost: float = 50.0, size_spread: float = 0.6,
             usefulness_spread: float = 0.8, switches: str = "pruning", seed: int = 0) -> Instance:
    """Heterogeneous datasets where selection matters (DepL Sec. IV-A).

    Parameters
    ----------
    n_datasets : int, default 5
        |D|.
    n_clusters : int, default 2
        |N|; clusters alternate A-class and B-class (A1, B1, A2, ...).
    horizon : int, default 50
        K̄.
    omega : float, default 0.99
    loss_max : float, optional
        ℓmax; by default derived from a feasible reference plan.
    max_transfer_cost : float, default 50
        β(d, n) ~ U(0, max_transfer_cost) · σ_d (a one-time transfer cost
        proportional to the dataset size).
    size_spread, usefulness_spread : float, default 0.6 and 0.8
        σ_d ~ LogNormal(0, size_spread), u_d ~ LogNormal(0, usefulness_spread).
    switches : {"pruning", "any"}, default "pruning"
        The AlexNet trio's switch graph, as in :func:`realistic`.
    {seed}

    {returns}

    {raises}

    Notes
    -----
    Models are the realistic AlexNet trio (Table I with our A_m, B_m and
    jumps); clusters are the paper's A/B classes. Under the data law
    (``instances/datalaw.py``) a cluster holding S pays c_m·V(S) per epoch and
    learns γ(S) = log2(1 + U(S)) times faster, so a small, useful dataset is
    worth more than a big, noisy one, and the epoch count × epoch time
    K̂(D̂)·T̂(D̂) ∝ V/γ that DepL's dataset stage minimises is *not* submodular
    in general (reports audit it per instance). ℓmax and Tmax come from a
    reference plan as in :func:`scaling` (intermediate-like best model, every
    dataset on the largest cluster) and ℓ(0) = 21. Sizes are normalised so
    that all datasets together have U(D) = Σ u_d σ_d = 1, hence γ(D) = 1.

    |D| ≤ 500: nothing in the instance format limits |D|; solvers that
    enumerate dataset subsets per cluster (2^|D| of them) set their own limit
    and refuse larger instances with a message.
    """
    n_datasets = int_param("n_datasets", n_datasets, 1, 500)
    switches = choice_param("switches", switches, SWITCH_MODES)
    n_clusters = int_param("n_clusters", n_clusters, 1, 500)
    horizon = int_param("horizon", horizon, 1, 10_000)
    omega = float_param("omega", omega, gt=0.0, lt=1.0)
    max_transfer_cost = float_param("max_transfer_cost", max_transfer_cost, ge=0.0)
    size_spread = float_param("size_spread", size_spread, ge=0.0, le=3.0)
    usefulness_spread = float_param("usefulness_spread", usefulness_spread, ge=0.0, le=3.0)
    if loss_max is not None:
        loss_max = float_param("loss_max", loss_max)
    seed = seed_param(seed)
    rng = np.random.default_rng(seed)
    base = realistic_dnn("alexnet", 1, 0, REALISTIC_LOSS_MAX, omega, horizon, REALISTIC_TIME_MAX, switches)
    models, switch_list = base["models"], base["switches"]
    clusters = []
    for i in range(n_clusters):
        cls, bw, tag = (A_CLASS, A_CLASS_BANDWIDTH, "A") if i % 2 == 0 else (B_CLASS, B_CLASS_BANDWIDTH, "B")
        clusters.append({"name": f"{tag}{i // 2 + 1}", **cls, "bandwidth": bw})
    sizes = rng.lognormal(0.0, size_spread, n_datasets)
    useful = rng.lognormal(0.0, usefulness_spread, n_datasets)
    dsets = _random_datasets(sizes, useful)
    # Drawn even when unused (unlike scaling): keeps existing seeds' instances.
    beta = rng.uniform(0.0, max_transfer_cost, (n_datasets, n_clusters))
    transfer = _transfer_costs(beta, dsets, clusters, max_transfer_cost)
    time_max, loss_max, ref = _place_targets(models, clusters, dsets, horizon, omega, rng, loss_max,
                                             REALISTIC_INITIAL_LOSS)
    params = {"n_datasets": n_datasets, "n_clusters": n_clusters, "horizon": horizon, "omega": omega,
              "loss_max": loss_max, "max_transfer_cost": max_transfer_cost, "size_spread": size_spread,
              "usefulness_spread": usefulness_spread}
    if switches != "pruning":
        params["switches"] = switches
    assumptions = base["provenance"]["assumptions"][:7] + [
        f"Ours: σ_d ~ LogNormal(0, {size_spread}) rescaled so that Σ u_d σ_d = 1 (γ(D) = 1), "
        f"u_d ~ LogNormal(0, {usefulness_spread}); "
        f"β(d, n) ~ U(0, {max_transfer_cost:g})·σ_d; clusters alternate A-class/B-class.",
        _reference_assumption(ref),
    ] + base["provenance"]["assumptions"][8:]
    name = f"datasets-D{n_datasets}-N{n_clusters}-K{horizon}" + ("-any" if switches == "any" else "")
    return build_instance(instance_data(
        f"{name}-s{seed}", REALISTIC_INITIAL_LOSS, loss_max, omega,
        time_max, horizon, models, switch_list, clusters,
        {"generator": "datasets", "parameters": params, "seed": seed, "assumptions": assumptions,
         "reference_plan": ref}, datasets=dsets, transfer_costs=transfer))
