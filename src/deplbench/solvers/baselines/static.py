"""The PACT paper's static baselines, StaticLearn and OneSwitch.

The helpers they share with :mod:`deplbench.solvers.pact.pact` live in
:mod:`deplbench.solvers.baselines.common` and are re-exported here.

Both baselines come from PACT Sec. VI-B ("Benchmark solutions"):

*StaticLearn*
    "model switching is made so as to obtain similar loss decrease under all
    three models ... the lowest energy cost, feasible strategy obtaining
    similar (within 5% margin) loss improvement from the three models".
*OneSwitch*
    "only two models are used ... the lowest energy cost, feasible strategy
    changing once, considering all combinations of models and changing
    epochs".

PACT's testbed is deterministic in hindsight (its benchmarks see the true
loss); ours is random, so "feasible" means the ω-quantile constraint (3) of
the DepL paper. Each baseline therefore (1) searches its strategy family for
the cheapest plan whose final loss meets ℓmax on the in-sample scenarios of
:class:`~deplbench.formulations.model.scenarios.ScenarioSampler` (the same SAA rule
as the MILP and brute force: at most ⌊(1−ω)S⌋ scenarios above ℓmax), then
(2) checks that plan out-of-sample with
:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan` on an independent
stream (pass = verdict ``feasible``: the confidence interval of the
ω-quantile lies at or below ℓmax, DepL's rule), and, when the check fails, keeps training exactly like ``best-exp``
(DepL paper Sec. VI-B: "it trains on until the quantile target is actually
met") or moves to the next candidate; if nothing passes within the horizon
and the deadline the result is ``no_solution`` with the reason (the baseline
found no plan in its strategy family; infeasibility is not proven).

Every plan's allocation is the exact real-x optimum of
:func:`~deplbench.formulations.model.allocation.allocate` for its discrete choices,
so costs are comparable with every other algorithm of the suite.

References
----------
F. Malandrino et al., "Energy-efficient training of distributed DNNs in the
mobile-edge-cloud continuum" (PACT), Sec. VI-B; DepL paper Sec. VI-B and
eqs. (1)–(8).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np

from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import loss_threshold
from deplbench.limits import check_time
from deplbench.solvers.base import Param, PlotStyle, Solver
from deplbench.solvers.baselines.common import (  # noqa: F401 - re-exported (old import path)
    CHECK_SEED_OFFSET,
    TIME_LIMIT_PARAM,
    DataSetting,
    OosCheck,
    assign_datasets,
    build_plan,
    cheapest_cluster,
    choice_cost,
    common_parameters,
    data_setting,
    dataset_subsets,
    expected_improvement,
    in_sample_scenarios,
    in_sample_scenarios_checked,
    no_solution,
    oos_checker,
    saa_quantile,
    success,
    train_on,
)


# --------------------------------------------------------------------------
# OneSwitch
# --------------------------------------------------------------------------
def _prefix_runs(instance, scen) -> np.ndarray:
    """Q[s, k, m] = Σ_{j<k} run_scale[j, m] X[s, j, m], k = 0..K̄ (γ = 1)."""
    contrib = scen.run_scale[None, :, :] * scen.improvement
    out = np.zeros((contrib.shape[0], contrib.shape[1] + 1, contrib.shape[2]))
    np.cumsum(contrib, axis=1, out=out[:, 1:, :])
    return out


class OneSwitch(Solver):
    """OneSwitch (PACT Sec. VI-B): the cheapest plan that changes model at
    most once.

    Strategy family: K1 ≥ 1 epochs of model m1 on cluster n1, then
    K2 ≥ 0 epochs of model m2 ≠ m1 on cluster n2 (m1 → m2 an allowed switch),
    K1 + K2 ≤ K̄, every dataset set of :func:`dataset_subsets`. "Considering
    all combinations of models and changing epochs" is done exhaustively:
    for every (m1, m2, S) the SAA quantile of ℓ(K) is computed for all
    (K1, K2) at once from prefix sums of the in-sample scenarios; for each
    K1 only the smallest SAA-feasible K2 can be cheapest (an extra epoch never
    lowers the real-x optimum), so its exact allocation is computed for every
    cluster pair, and the cheapest plan wins.

    Interpretations (PACT leaves them open)
    ---------------------------------------
    * "Changing once" is read as *at most once*:
      K2 = 0, a single model throughout, is included. PACT's OneSwitch
      always switched because its target needed it.
    * A "switch" is a model change; the cluster may change only together with
      it (PACT: "switching between models also implies changing the set of
      nodes"). Under the printed eq. (6) (``data_rule == "printed"``)
      n1 = n2.
    * "Feasible" = SAA-feasible on the in-sample scenarios *and* the OOS
      check passes (see module docstring); a candidate failing OOS trains on
      with m2 (best-exp's rule), and then the next candidate is tried.
    * Datasets: the same set S on every training cluster (PACT has no data
      decision), the cheapest S over :func:`dataset_subsets`.
    """

    name = "one-switch"
    label = "one-switch"
    style = PlotStyle("#e377c2", "P", "-.")
    description = "PACT's OneSwitch baseline: cheapest plan with at most one model switch"
    parameters = {
        **common_parameters(),
        "time_limit": TIME_LIMIT_PARAM,
        "allow_no_switch": Param(True, bool, "also consider plans that never switch (K2 = 0)"),
    }

    def run_settings(self, instance, params) -> SolveResult:
        # _prefix_runs' scaled copy (|M| columns) and one K1's loss matrix
        # and its partitioned copy (2 columns) on top of the scenarios.
        scen = in_sample_scenarios_checked(instance, params["scenarios"], params["seed"], "one-switch",
                                           extra_columns=instance.n_models + 2)
        Q = _prefix_runs(instance, scen)
        S, K = scen.n_scenarios, instance.horizon
        M, N = instance.n_models, instance.n_clusters
        printed = instance.data_rule == "printed"
        l0, lmax, omega = instance.initial_loss, instance.loss_max, instance.omega
        candidates = []   # (cost, subset index, m1, n1, m2, n2, K1, K2)
        settings = [data_setting(instance, sub) for sub in dataset_subsets(instance, params["max_dataset_subsets"])]
        pairs = [(m, m) for m in range(M)] if params["allow_no_switch"] else []
        pairs += [(i, j) for i, j in instance.switch_pairs]
        for si, st in enumerate(settings):
            g = st.gamma
            for m1, m2 in pairs:
                # min_k2[K1] = smallest SAA-feasible K2 (K2 = 0 for no switch).
                min_k2 = np.full(K + 1, -1, dtype=int)
                if m1 == m2:
                    q = saa_quantile(l0 - g * Q[:, 1:, m1], omega)              # K1 = 1..K̄
                    ok = np.nonzero(q <= loss_threshold(lmax))[0]
                    if ok.size:
                        min_k2[ok[0] + 1] = 0
                else:
                    p = instance.switch_index[(m1, m2)]
                    k1: int | np.integer       # ints here, numpy integers below
                    for k1 in range(1, K):
                        check_time(f"one-switch, switch after epoch {k1} of {K}")
                        # ℓ_s(K1, K2) for K2 = 1..K̄−K1; the jump hits epoch index K1.
                        base = l0 - g * Q[:, k1, m1] + scen.jump[:, k1, p] + g * Q[:, k1, m2]
                        loss = base[:, None] - g * Q[:, k1 + 1:, m2]
                        ok = np.nonzero(saa_quantile(loss, omega) <= loss_threshold(lmax))[0]
                        if ok.size:
                            min_k2[k1] = ok[0] + 1
                for k1 in np.nonzero(min_k2 >= 0)[0]:
                    check_time(f"one-switch, costing K1 = {k1}")
                    k2 = int(min_k2[k1])
                    for n1 in range(N):
                        for n2 in ([n1] if (printed or m1 == m2) else range(N)):
                            if k1 * st.tau[m1, n1] + k2 * st.tau[m2, n2] > instance.time_max * (1 + 1e-9):
                                continue
                            models = [m1] * int(k1) + [m2] * k2
                            clusters = [n1] * int(k1) + [n2] * k2
                            _, cost = choice_cost(instance, st, models, clusters)
                            if math.isfinite(cost):
                                candidates.append((cost, si, m1, n1, m2, n2, int(k1), k2))
        diag = {"candidates": len(candidates), "scenarios": S, "dataset_subsets": len(settings)}
        if not candidates:
            switches = "at most one model switch" if params["allow_no_switch"] else "exactly one model switch"
            return no_solution(
                f"no plan with {switches} meets the ω-quantile target on the in-sample "
                f"scenarios within K̄ = {K} epochs and Tmax = {instance.time_max}", **diag)
        candidates.sort(key=lambda c: c[0])
        check = oos_checker(instance, params)
        reason = ""
        for rank, (cost, si, m1, n1, m2, n2, k1, k2) in enumerate(candidates):
            check_time(f"{self.name}'s out-of-sample checks, candidate {rank}")
            if check.exhausted:
                break
            models = [m1] * k1 + [m2] * k2
            clusters = [n1] * k1 + [n2] * k2
            plan, models, clusters, added, reason = train_on(instance, settings[si], models, clusters, scen, check)
            if plan is not None:
                k2_final = len(models) - k1
                return success(
                    instance, plan, **diag, candidate_rank=rank, in_sample_cost=cost,
                    models=[instance.models[m1].name, instance.models[m2].name],
                    clusters=[instance.clusters[n1].name, instance.clusters[n2].name],
                    switch_epoch=(k1 + 1) if (m1 != m2 and k2_final > 0) else None,
                    epochs_before=k1, epochs_after=k2_final, trained_on=added,
                    datasets=list(settings[si].subset), oos_checks=check.used, last_check=check.last,
                )
        return no_solution(
            "every SAA-feasible one-switch plan failed the out-of-sample check "
            f"({check.used} checks; last: {reason or check.last})", **diag, oos_checks=check.used)


# --------------------------------------------------------------------------
# StaticLearn
# --------------------------------------------------------------------------
def model_chains(instance, max_enumerate: int = 4) -> list[tuple[int, ...]]:
    """Orders in which StaticLearn may use all models.

    All orderings of the models whose consecutive switches are allowed when
    |M| ≤ ``max_enumerate``; otherwise the single order by decreasing compute
    need (the full model first, then ever more compressed versions: PACT's
    L → M → S pruning order), if its switches are allowed.
    """
    M = instance.n_models
    allowed = instance.allowed
    orders: Iterable[tuple[int, ...]]
    if M <= max_enumerate:
        orders = itertools.permutations(range(M))
    else:
        orders = [tuple(sorted(range(M), key=lambda m: (-instance.model_compute[m], m)))]
    return [o for o in orders if all(allowed[a, b] for a, b in zip(o, o[1:]))]


class StaticLearn(Solver):
    """StaticLearn (PACT Sec. VI-B): a fixed model chain with equal loss shares.

    PACT: "model switching is made so as to obtain similar loss decrease under
    all three models ... the lowest energy cost, feasible strategy obtaining
    similar (within 5% margin) loss improvement from the three models".

    ``mode="equal-share"`` (default, PACT's definition): every model of the
    instance is used once, in a chain m_1 → … → m_|M| of allowed switches
    (all such orders for |M| ≤ 4, else the decreasing-compute order), with
    K_i epochs of m_i such that the *expected* run improvements
    E[Σ γ A decay(k) X] of the models agree within ``share_tolerance``
    (max/min − 1 ≤ 5%). The share Δ is scanned over the values model 1
    reaches after K_1 = 1, 2, … epochs; each later model gets the epoch count
    whose share is nearest Δ. For each chain the first Δ whose plan is
    SAA-feasible is its cheapest (all K_i grow with Δ); the next few are kept
    as fallbacks for the OOS check. ``mode="single"`` is the literal reading:
    one model on one cluster for the whole run, the cheapest meeting the
    target.

    Interpretations
    ---------------
    * "Loss decrease under a model" = the expected run improvement of its
      epochs (switch jumps excluded: they belong to the switch, not a model).
    * The chain uses *all* models of the instance (PACT had exactly three).
    * Cluster of each model: all assignments when |N|^|M| ≤ 16, otherwise the
      cluster with the smallest sqrt(c κ); one common cluster under the
      printed eq. (6).
    * Datasets: one common set S per plan over :func:`dataset_subsets`.
    * The OOS check failing moves to the next-larger Δ (more training for
      every model, keeping the equal shares) rather than appending epochs of
      one model, which would break StaticLearn's defining rule.
    """

    name = "static-learn"
    label = "static-learn"
    style = PlotStyle("#8c564b", "v", "-.")
    description = "PACT's StaticLearn baseline: all models in a fixed chain with equal expected loss shares"
    parameters = {
        **common_parameters(),
        "time_limit": TIME_LIMIT_PARAM,
        "mode": Param("equal-share", str, "equal-share (PACT) or single (one model/cluster)",
                      choices=("equal-share", "single")),
        "share_tolerance": Param(0.05, float, "largest relative spread of the per-model loss shares", low=0.0),
        "fallbacks": Param(8, int, "SAA-feasible Δ values kept per chain for the OOS check", low=1),
    }

    def run_settings(self, instance, params) -> SolveResult:
        K = instance.horizon
        printed = instance.data_rule == "printed"
        settings = [data_setting(instance, sub) for sub in dataset_subsets(instance, params["max_dataset_subsets"])]
        chains: list[tuple[int, ...]]
        if params["mode"] == "single":
            chains = [(m,) for m in range(instance.n_models)]
        else:
            chains = model_chains(instance)
            if not chains:
                return no_solution(
                    "no order of all models is allowed by the switch table "
                    "(StaticLearn uses every model; try mode=single)")
            if instance.n_models > K:
                return no_solution(f"StaticLearn uses all {instance.n_models} models but K̄ = {K}")
        # drawn once the run is known to need them: the refusals above read no scenario
        scen = in_sample_scenarios_checked(instance, params["scenarios"], params["seed"], "static-learn")
        ex = np.array([expected_improvement(m.improvement) for m in instance.models])
        tol = params["share_tolerance"]
        candidates = []  # (cost, chain, counts, setting index, cluster tuple)
        for si, st in enumerate(settings):
            # share_rate[k, m]: expected improvement of one epoch of m at index k.
            share_rate = st.gamma * instance.run_scale * ex[None, :]
            for chain in chains:
                cluster_options = self._cluster_options(instance, st, chain, printed)
                kept = 0
                for counts in self._equal_share_counts(share_rate, chain, K, tol):
                    check_time(f"static-learn, epochs per model {list(counts)}")
                    models = [m for m, c in zip(chain, counts) for _ in range(c)]
                    q = float(saa_quantile(scen.final_losses(models, [st.gamma] * len(models)), instance.omega))
                    if q > loss_threshold(instance.loss_max):
                        continue
                    best = None
                    for cl in cluster_options:
                        clusters = [n for n, c in zip(cl, counts) for _ in range(c)]
                        _, cost = choice_cost(instance, st, models, clusters)
                        if math.isfinite(cost) and (best is None or cost < best[0]):
                            best = (cost, cl)
                    if best is None:
                        break   # time-infeasible: longer counts only take longer
                    candidates.append((best[0], chain, counts, si, best[1]))
                    kept += 1
                    if kept >= params["fallbacks"]:
                        break
        diag = {"candidates": len(candidates), "chains": len(chains), "scenarios": scen.n_scenarios,
                "mode": params["mode"]}
        if not candidates:
            return no_solution(
                "no StaticLearn schedule (" + params["mode"] + f", share tolerance {tol:g}) meets the "
                f"ω-quantile target on the in-sample scenarios within K̄ = {K} and Tmax = {instance.time_max}",
                **diag)
        candidates.sort(key=lambda c: c[0])
        check = oos_checker(instance, params)
        for rank, (_cost, chain, counts, si, cl) in enumerate(candidates):
            check_time(f"{self.name}'s out-of-sample checks, candidate {rank}")
            if check.exhausted:
                break
            models = [m for m, c in zip(chain, counts) for _ in range(c)]
            clusters = [n for n, c in zip(cl, counts) for _ in range(c)]
            plan = build_plan(instance, settings[si], models, clusters)
            if plan is not None and check.passes(plan):
                return success(
                    instance, plan, **diag, candidate_rank=rank,
                    chain=[instance.models[m].name for m in chain], epochs_per_model=list(counts),
                    chain_clusters=[instance.clusters[n].name for n in cl],
                    datasets=list(settings[si].subset), oos_checks=check.used, last_check=check.last,
                )
        return no_solution(
            f"every SAA-feasible StaticLearn schedule failed the out-of-sample check ({check.used} checks; "
            f"last: {check.last})", **diag, oos_checks=check.used)

    @staticmethod
    def _cluster_options(instance, st: DataSetting, chain, printed: bool) -> list[tuple[int, ...]]:
        N = instance.n_clusters
        if printed:
            return [(n,) * len(chain) for n in range(N)]
        if N ** len(chain) <= 16:
            return list(itertools.product(range(N), repeat=len(chain)))
        return [tuple(cheapest_cluster(instance, st, m) for m in chain)]

    @staticmethod
    def _equal_share_counts(share_rate: np.ndarray, chain, horizon: int, tol: float):
        """Yield epoch counts (K_1, …) with equal expected shares, by increasing Δ.

        Δ = the share of the first model after K_1 epochs; each later model
        takes the count whose cumulative share from its first epoch is
        nearest Δ (at least one epoch). Counts whose shares spread by more
        than ``tol`` (max/min − 1) are skipped.
        """
        first = np.cumsum(share_rate[:, chain[0]])
        for k1 in range(1, horizon + 1):
            delta = first[k1 - 1]
            counts, shares, start = [k1], [delta], k1
            for m in chain[1:]:
                if start >= horizon:
                    return   # larger K_1 cannot fit either
                cs = np.cumsum(share_rate[start:, m])
                c = int(np.argmin(np.abs(cs - delta))) + 1
                counts.append(c)
                shares.append(cs[c - 1])
                start += c
            if start > horizon:
                return
            lo, hi = min(shares), max(shares)
            if lo > 0 and hi / lo - 1.0 <= tol + 1e-12:
                yield tuple(counts)


__all__ = [
    "OneSwitch",
    "StaticLearn",
    "dataset_subsets",
    "data_setting",
    "DataSetting",
    "choice_cost",
    "build_plan",
    "saa_quantile",
    "train_on",
    "model_chains",
    "common_parameters",
    "CHECK_SEED_OFFSET",
]
