"""DepL's stages and its decision loop (Fig. 3), shared by DepL and best-exp.

The three decisions of Sec. IV — datasets (:mod:`deplbench.solvers.depl.dataset_selection`), the
model path over the expanded graph (:mod:`deplbench.solvers.expanded.graph`), clusters and
allocation (:mod:`deplbench.solvers.depl.vnf_allocation`) — and the backtracking loop that ties
them together (:func:`decide`). :class:`~deplbench.solvers.depl.depl.DepL` runs
the loop with a proven quantile surrogate; best-exp
(:mod:`deplbench.solvers.baselines.best_exp`) runs the same loop with the expected-loss
surrogate and a different last step (train on, :mod:`deplbench.solvers.baselines.train_on`). Neither
subclasses the other: both are composed from these parts.

References
----------
DepL paper Sec. IV (Fig. 3), Sec. VI-B (best-exp).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import SolverError
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.evaluation.quantile_ci import check_accepts, check_excess
from deplbench.formulations.evaluation.settings import MIN_SAMPLES
from deplbench.formulations.model.allocation import allocate, sqrt_product
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import LOSS_TOL
from deplbench.instances.datalaw import compute_need
from deplbench.jsonio import to_jsonable
from deplbench.limits import MEMORY_LIMIT_PARAM, check_time
from deplbench.params import SEED, TIME_LIMIT, Param
from deplbench.solvers.depl.dataset_selection import (
    EXHAUSTIVE_MIN_MAX,
    DataObjective,
    SubsetRanker,
    all_masks,
    exhaustive_minimum,
    submodularity_check,
)
from deplbench.solvers.depl.quantile_transform import LossModel, build_bounds
from deplbench.solvers.depl.streams import check_seed
from deplbench.solvers.depl.vnf_allocation import EPSILON, place_and_allocate
from deplbench.solvers.expanded.graph import build_spec, solve_dp, solve_dp_labels
from deplbench.solvers.expanded.reference import REACHABLE_COUNT_MAX, reachable_size
from deplbench.solvers.expanded.spec import ETA

# ----------------------------------------------------------------------------- helpers
# Diagnostics as plain Python (numpy scalars/arrays would break ``json``):
# the one JSON-cleaning function, deplbench.jsonio.to_jsonable.
jsonable = to_jsonable


def most_capable_cluster(instance) -> int:
    """Index of the cluster with the largest capacity (ties: larger bandwidth)."""
    cap = np.asarray(instance.capacity)
    bw = np.asarray(instance.bandwidth)
    return int(np.lexsort((-bw, -cap))[0])


@dataclass
class Candidate:
    """A model path found by stage 2."""

    models: list
    weight: float
    estimate: float
    bound: object
    quantile_bound: float


@dataclass
class Stage2:
    candidates: list = field(default_factory=list)
    graphs: list = field(default_factory=list)
    seconds: float = 0.0


def _reference_model(instance) -> int:
    """m*: the most complex model (largest compute, ties: largest size), stage 1's reference."""
    return int(np.lexsort((-instance.model_size, -instance.model_compute))[0])


def surrogates(instance, gamma: float, method: str, n_theta: int, tail_share: float, ref_epochs: int) -> list:
    """The additive quantile surrogates stage 2 tries (one graph each), centred on m* for ``ref_epochs``."""
    lm = LossModel.from_instance(instance, gamma)
    return build_bounds(lm, method, n_theta, ref_model=_reference_model(instance), ref_epochs=ref_epochs,
                        tail_share=tail_share)


def stage2(instance, gamma: float, volume: float, method: str, eta: int, n_theta: int,
            tail_share: float, ref_epochs: int, loss_max: float, time_max: float,
            rounding: str = "up", verify_rounds: int = 4, bounds=None,
            weight_bound: float = math.inf, count_reachable: bool = False) -> Stage2:
    """Model selection: one expanded graph per surrogate parameter.

    With ``rounding="nearest"`` a recovered path is verified with its exact
    surrogate value; if it exceeds ``loss_max`` the graph's target is lowered
    by the excess and the DP re-run (``verify_rounds`` times), after which
    the conservative ``"up"`` graph is used for that parameter.

    ``bounds`` (default: :func:`surrogates`) lets the calibration run one
    surrogate's graph alone; ``weight_bound`` (an incumbent path weight)
    makes the graphs look only for strictly lighter paths.
    """
    t0 = time.perf_counter()
    n_star = most_capable_cluster(instance)
    comp = compute_need(instance.model_compute, volume)
    comm = instance.model_size / instance.bandwidth[n_star]
    tau = comp / instance.capacity[n_star] + comm
    kappa = float(instance.unit_cost[n_star])
    # κ* = 0 would make every path free: keep sqrt(c) as the tie-breaking proxy.
    root = sqrt_product(comp, kappa if kappa > 0 else 1.0)
    m_star = _reference_model(instance)
    # The water-filling cost of a path is W²/(Tmax − C), C its communication
    # time: not additive. Its tangent at a reference path (W0, C0) is, up to a
    # constant factor, W + W0/(2(Tmax − C0))·C — additive, so the edge weight
    # is w_m = sqrt(κ*·c_m) + λ·comm_m with λ = W0/(2(Tmax − C0)) taken at the
    # stage-1 reference (m* for K̂ epochs). λ = 0 without communication time,
    # where W²/Tmax is exact (the knapsack instances).
    budget0 = time_max - ref_epochs * comm[m_star]
    # divided by 2 and by budget0 in turn: 2·budget0 overflows for a Tmax of 1e308 (the largest accepted)
    lam = ref_epochs * root[m_star] / 2.0 / budget0 if budget0 > 0 else 0.0
    weights = root + lam * comm
    if bounds is None:
        bounds = surrogates(instance, gamma, method, n_theta, tail_share, ref_epochs)
    out = Stage2()
    seen = set()
    # Centre of the θ grid first: its path's weight then prunes the other
    # graphs (the weights are the same in every graph, only the loss axis
    # changes), which mostly stop after a few layers.
    mid = (len(bounds) - 1) / 2.0
    order = sorted(range(len(bounds)), key=lambda i: abs(i - mid))
    incumbent = float(weight_bound)
    for i in order:
        b = bounds[i]
        lmax_b = loss_max
        target = lmax_b - b.offset
        entry = {"method": b.method, "param": b.param, "target": target, "rounding": rounding}
        cap_target = instance.initial_loss - 1e-9 * max(1.0, abs(instance.initial_loss))
        mode = rounding
        rounds = 0
        while True:
            spec = build_spec(weights, tau, time_max, b.run_phi, b.jump_phi, instance.allowed,
                              instance.initial_loss, min(target, cap_target), eta, rounding=mode)
            solver = solve_dp_labels if mode == "label" else solve_dp
            res = solver(spec, bound=incumbent)
            entry["vertices"] = entry.get("vertices", 0) + res.vertices
            entry["edges"] = entry.get("edges", 0) + res.edges
            entry["seconds"] = entry.get("seconds", 0.0) + res.seconds
            if mode == "up" or not res.feasible:
                break
            excess = b.path_bound(instance.initial_loss, res.models) - lmax_b
            if excess <= 0:
                break
            if mode == "label":  # exact labels already checked u <= 0; only round-off can get here
                res.feasible = excess <= 1e-8 * max(1.0, abs(lmax_b), abs(instance.initial_loss))
                break
            rounds += 1
            if rounds > verify_rounds:
                mode = "up"
                target = lmax_b - b.offset
            else:
                # Accelerating steps: a re-run path carries fresh rounding
                # error, so lowering by the last excess alone can oscillate.
                target -= rounds * excess + 1e-12 * max(1.0, abs(lmax_b))
        entry.update(nominal_vertices=spec.nominal_vertices, layers=res.layers, feasible=res.feasible,
                     weight=float(res.weight) if res.feasible else None, verify_rounds=rounds,
                     final_rounding=mode)
        entry["incumbent"] = incumbent if math.isfinite(incumbent) else None
        if count_reachable:
            # Work counter: the size of the paper's graph at this
            # resolution — rounded-up shifts, every vertex reachable from the
            # source — independent of the DP's pruning. Skipped (None) beyond
            # REACHABLE_COUNT_MAX cells of counting work.
            cells = spec.n_models ** 2 * spec.horizon * (spec.n_time + 1) * (spec.n_loss + 1)
            if cells <= REACHABLE_COUNT_MAX:
                entry["reachable_vertices"], entry["reachable_edges"] = reachable_size(spec)
            else:
                entry["reachable_vertices"] = entry["reachable_edges"] = None
        out.graphs.append(entry)
        if not res.feasible:
            continue
        incumbent = min(incumbent, float(res.weight))
        key = tuple(res.models)
        if key in seen:
            continue
        seen.add(key)
        # Rank candidates by their exact water-filling cost on n* (captures
        # capacity binding and communication time, which W alone does not).
        k = len(res.models)
        m = np.asarray(res.models)
        alloc = allocate(comp[m], comm[m], np.full(k, kappa), np.full(k, instance.capacity[n_star]), instance.time_max)
        est = alloc.cost if alloc.feasible else math.inf
        out.candidates.append(Candidate(list(res.models), float(res.weight), est, b,
                                        b.path_bound(instance.initial_loss, res.models)))
    out.candidates.sort(key=lambda c: (c.estimate, c.weight))
    out.seconds = time.perf_counter() - t0
    return out


def _transfer_fn(instance, dataset_idx, n_epochs: int):
    beta = np.asarray(instance.transfer_matrix)[list(dataset_idx)].sum(axis=0)  # per cluster
    if not np.any(beta > 0):
        return None
    factor = n_epochs if instance.transfer_cost_mode == "per_epoch" else 1

    def cost(clusters):
        return float(factor * beta[list(clusters)].sum())

    return cost


def stage3(instance, models, dataset_names, dataset_idx, volume, epsilon: float, reoptimize: bool):
    """Cluster selection and allocation; returns (plan or None, info dict)."""
    models = np.asarray(models, dtype=int)
    K = models.size
    comp = compute_need(instance.model_compute[models], volume)
    comm = instance.model_size[models][:, None] / instance.bandwidth[None, :]
    res = place_and_allocate(
        comp, comm, instance.unit_cost, instance.capacity, instance.time_max, epsilon,
        subset_cost=_transfer_fn(instance, dataset_idx, K),
        single_cluster=instance.data_rule == "printed",
        group_key=models.tolist(),
    )
    info = {"feasible": res.feasible, "grid_cost": res.grid_cost if res.feasible else None,
            "lower_bound_fixed_sequence": res.lower_bound if res.feasible else None,
            "guarantee": res.guarantee, "dp_states": res.states, "buckets": res.buckets,
            "options": res.options, "subsets_tried": res.subsets_tried, "seconds": res.seconds,
            "reason": res.reason}
    if not res.feasible:
        return None, info
    x = res.x
    if reoptimize:
        cl = res.clusters
        alloc = allocate(comp, comm[np.arange(K), cl], instance.unit_cost[cl], instance.capacity[cl],
                         instance.time_max)
        if alloc.feasible:
            x = alloc.x
    names = [instance.models[m].name for m in models]
    cnames = [instance.clusters[n].name for n in res.clusters]
    used = sorted(set(cnames), key=lambda c: instance.cluster_index[c])
    plan = Plan(epochs=[Epoch(model=m, cluster=c, allocation=float(v)) for m, c, v in zip(names, cnames, x)],
                datasets={c: list(dataset_names) for c in used})
    return plan, info


# ----------------------------------------------------------------------- parameters
#: Exponents of the expanded-graph counters in ``diagnostics["work"]`` implied
#: by the graph's layout (read by reports/complexity.py): DepL paper Sec. V,
#: the count above Property 2, |M|·K̄·(η+1)·J vertices with J ∝ η, so
#: |M|·K̄·η² (the edges follow the vertices, a bounded number per vertex).
_GRAPH_EXPONENTS = {"eta": 2.0, "n_models": 1.0, "horizon": 1.0}
WORK_EXPONENTS = {counter: dict(_GRAPH_EXPONENTS) for counter in (
    "graph_vertices_nominal", "graph_vertices_created", "graph_vertices_reachable", "graph_edges_relaxed",
    "graph_edges_reachable")}

#: The decision loop's parameters, shared by DepL and best-exp (η, ε: the Params build_spec, place_and_allocate use).
LOOP_PARAMS: dict[str, Param] = {
    "eta": ETA,
    "epsilon": EPSILON,
    "seed": SEED.but(help="seed of the out-of-sample check and of sampled diagnostics"),
    "check_samples": Param(20_000, int, "trajectories of the solver's own out-of-sample check", low=MIN_SAMPLES),
    "time_limit": TIME_LIMIT.but(default=300.0),
    "memory_limit": MEMORY_LIMIT_PARAM,
    "max_retries": Param(3, int, "tightening retries after a failed out-of-sample check", low=0),
    "max_backtracks": Param(8, int, "stage backtracks (dataset blacklists + deadline tightenings)", low=0),
    "rounding": Param("label", str, "loss axis of the expanded graph: label (exact loss labels, buckets only "
                      "merge paths), up (increments rounded up: every graph path feasible, the paper's "
                      "graph) or nearest (rounded to nearest, the path is verified exactly)",
                      choices=("label", "up", "nearest")),
    "dataset_method": Param("min-norm", str, "dataset selection: min-norm (Fujishige–Wolfe) or exhaustive",
                            choices=("min-norm", "exhaustive")),
    "reoptimize": Param(False, bool, "re-optimise x exactly (water-filling) for the chosen clusters after the "
                        "(1+ε) stage; off by default so the result reflects the paper's (1+ε) scheme"),
}


def validate_loop_params(instance, p) -> None:
    """The check of :data:`LOOP_PARAMS` that needs the instance (each value was checked
    against its Param when resolved): ``exhaustive`` needs |D| <= :data:`EXHAUSTIVE_MIN_MAX`.

    Raises
    ------
    SolverError
        Naming the offending parameter.
    """
    if p["dataset_method"] == "exhaustive" and instance.n_datasets > EXHAUSTIVE_MIN_MAX:
        raise SolverError(
            f"parameter 'dataset_method': exhaustive needs |D| <= {EXHAUSTIVE_MIN_MAX}, "
            f"the instance has {instance.n_datasets} datasets"
        )


# ----------------------------------------------------------------------- decision loop
@dataclass
class Choice:
    """What the loop settled on (or last tried) for the chosen datasets."""

    names: list
    subset: tuple
    volume: float
    gamma: float
    ref_epochs: int
    time_max_eff: float
    blacklist: set


@dataclass
class Outcome:
    """Result of :func:`decide`: the accepted plan and its check, or the reason there is none."""

    plan: object = None
    evaluation: object = None
    chosen: tuple | None = None        # (Candidate, stage-3 info)
    choice: Choice | None = None
    loss_max_eff: float = math.nan
    reason: str = ""
    diag: dict = field(default_factory=dict)
    ranker: object = None


#: A finishing step run on every allocated plan before the check (best-exp's
#: train-on): ``finish(plan, candidate, choice, p, diag) -> (plan or None, reason)``.
Finish = Callable[..., tuple]


def decide(instance, p: dict, method: str, *, n_theta: int = 1, tail_share: float = 0.1,
           finish: Finish | None = None, retry_on_check: bool = True,
           fallbacks: tuple[str, ...] = (), count_reachable: bool = True) -> Outcome:
    """Fig. 3: datasets → models → clusters/allocation, with backtracking, then the check.

    Parameters
    ----------
    instance : Instance
    p : dict
        Resolved :data:`LOOP_PARAMS` (extra keys ignored).
    method : str
        Stage 2's additive quantile surrogate (:mod:`deplbench.solvers.depl.quantile_transform`).
    n_theta, tail_share
        Surrogate options (ignored by ``"expected"``).
    finish : callable, optional
        Applied to every allocated plan before the out-of-sample check
        (best-exp trains on there); a None plan ends the loop with its reason.
    retry_on_check : bool, default True
        After a failed check, lower the effective ℓmax by the observed excess
        and retry (at most ``max_retries`` times); False ends the loop.
    fallbacks : tuple of str
        Surrogates stage 2 tries, in order, when ``method`` accepts no path
        for a dataset choice (before that choice is blacklisted).
    count_reachable : bool, default True
        Count the paper's graph size per stage-2 graph (a work counter of the complexity audit).

    Returns
    -------
    Outcome
        ``plan`` is None when nothing passed; ``reason`` then says why.
    """
    t_start = time.perf_counter()
    diag: dict = {"quantile_method": method, "stage_seconds": {"datasets": 0.0, "models": 0.0,
                                                               "allocation": 0.0, "evaluation": 0.0},
                  "backtracks": [], "retries": [], "graphs": []}
    rng = np.random.default_rng([int(p["seed"]), 11])
    out = Outcome(diag=diag)
    # Work counters, exact and deterministic: see result_from's docstring.
    work = {"oracle_calls": 0, "allocation_calls": 0, "allocation_dp_states": 0}

    obj, next_set = _dataset_ranking(instance, p, out, rng)

    loss_max_eff = float(instance.loss_max)
    backtracks_left = int(p["max_backtracks"])
    retries_left = int(p["max_retries"])
    reason = "no dataset choice was tried"
    ch: Choice | None = None
    while True:
        check_time(f"DepL's decision loop, after {len(diag['backtracks'])} backtrack(s)")
        if ch is None:   # (re)select datasets
            ch = _next_choice(instance, obj, next_set, work, diag)
            if ch is None:
                reason += "; every dataset choice has been blacklisted"
                break
            out.choice = ch

        methods = (method, *fallbacks)
        cands = _model_paths(instance, ch, methods, p, n_theta, tail_share, loss_max_eff, diag, count_reachable)
        if not cands:
            reason = f"no model path meets the quantile target within Tmax and K̄ for datasets {ch.names}"
            diag["backtracks"].append({"stage": "models", "action": "blacklist datasets", "datasets": ch.names})
            ch = None
            if backtracks_left == 0:
                break
            backtracks_left -= 1
            continue

        plan = _allocate_first(instance, cands, ch, p, work, diag, out)
        if plan is None:
            reason = "no cluster/allocation fits Tmax for the selected model paths"
            if backtracks_left == 0:
                break
            backtracks_left -= 1
            ch.time_max_eff *= 0.9  # ask stage 2 for faster model paths
            diag["backtracks"].append({"stage": "allocation", "action": "tighten deadline",
                                       "time_max_eff": ch.time_max_eff})
            continue

        if finish is not None:
            plan, why = finish(plan, out.chosen[0], ch, p, diag)
            if plan is None:
                reason = why
                break

        # ---- out-of-sample check (Fig. 3's last box) ---------------------------------
        t0 = time.perf_counter()
        ev = evaluate_plan(instance, plan, samples=p["check_samples"], seed=check_seed(p["seed"]),
                           trajectory=False)
        diag["stage_seconds"]["evaluation"] += time.perf_counter() - t0
        if check_accepts(ev):
            out.plan, out.evaluation = plan, ev
            break
        excess, width = check_excess(ev)
        diag["retries"].append({"loss_max_eff": loss_max_eff, "quantile": ev.quantile,
                                "quantile_ci": list(ev.quantile_ci), "verdict": ev.verdict,
                                "violations": ev.violations})
        reason = (f"out-of-sample check failed (verdict {ev.verdict}, quantile {ev.quantile:.6g} "
                  f"vs ℓmax {instance.loss_max:.6g})")
        if ev.violations:
            reason += "; " + "; ".join(ev.violations)
        if retries_left == 0 or not retry_on_check:
            break
        retries_left -= 1
        loss_max_eff -= max(excess, 0.0) + width + LOSS_TOL * max(1.0, abs(instance.loss_max))

    out.loss_max_eff = loss_max_eff
    out.reason = reason
    diag["stage_seconds"]["total"] = time.perf_counter() - t_start
    diag["work"] = _work_totals(work, diag["graphs"])
    diag["work_exponents"] = WORK_EXPONENTS
    if out.ranker is not None:
        diag["min_norm_iterations"] = out.ranker.iterations
    return out


def _dataset_ranking(instance, p: dict, out: Outcome, rng: np.random.Generator):
    """Stage 1 (Sec. IV-A): the dataset objective and a callable giving the
    dataset subsets in increasing objective order, ``(subset, value)`` or None
    when exhausted (the min-norm ranker, or all subsets for ``exhaustive``)."""
    diag = out.diag
    t0 = time.perf_counter()
    obj = DataObjective.from_instance(instance)
    diag["submodularity"] = submodularity_check(obj, rng)
    if p["dataset_method"] == "exhaustive":
        masks = all_masks(obj.n)[1:]
        vals = obj.values(masks)
        order = np.argsort(vals, kind="stable")
        ranking = iter([(tuple(np.nonzero(masks[i])[0].tolist()), float(vals[i])) for i in order])
        next_set = lambda: next(ranking, None)  # noqa: E731
    else:
        out.ranker = SubsetRanker(obj)
        next_set = out.ranker.next
    if obj.n <= EXHAUSTIVE_MIN_MAX:
        ex = exhaustive_minimum(obj)
        diag["dataset_exhaustive"] = {"subset": [instance.datasets[i].name for i in ex.subset],
                                      "value": ex.value}
    diag["stage_seconds"]["datasets"] += time.perf_counter() - t0
    return obj, next_set


def _next_choice(instance, obj, next_set, work: dict, diag: dict) -> Choice | None:
    """The next dataset subset as a :class:`Choice` (None when none is left),
    with K̂, the epochs its objective says are needed, as stage 2's reference."""
    t0 = time.perf_counter()
    before = obj.calls[0]
    nxt = next_set()
    work["oracle_calls"] += obj.calls[0] - before
    diag["stage_seconds"]["datasets"] += time.perf_counter() - t0
    if nxt is None:
        return None
    subset, fval = nxt
    names = [instance.datasets[i].name for i in subset]
    volume, gamma = instance.data_effect(names)
    k_hat = float(obj.epochs_needed(np.array([gamma]))[0])
    diag.setdefault("dataset_choices", []).append({"subset": names, "objective": fval, "k_hat": k_hat})
    ref_epochs = (int(min(instance.horizon, max(1, math.ceil(k_hat)))) if math.isfinite(k_hat)
                  else instance.horizon)
    return Choice(names, subset, volume, gamma, ref_epochs, float(instance.time_max), set())


def _model_paths(instance, ch: Choice, methods: tuple[str, ...], p: dict, n_theta: int, tail_share: float,
                 loss_max_eff: float, diag: dict, count_reachable: bool = True) -> list:
    """Stage 2 (Sec. IV-B): the model paths not blacklisted for ``ch``.

    The surrogate first, then its fallbacks (equally proven) when it accepts
    no path at all: e.g. at ω = 1e-6 the Chernoff offset ln(1/α)/θ on the θ
    grid rejects every path Cantelli accepts.
    """
    cands: list = []
    for meth in methods:
        s2 = stage2(instance, ch.gamma, ch.volume, meth, p["eta"], n_theta, tail_share,
                    ch.ref_epochs, loss_max_eff, ch.time_max_eff, rounding=p["rounding"],
                    count_reachable=count_reachable)
        diag["stage_seconds"]["models"] += s2.seconds
        diag["graphs"].extend(s2.graphs)
        cands = [c for c in s2.candidates if tuple(c.models) not in ch.blacklist]
        if cands:
            if meth != methods[0]:
                diag.setdefault("surrogate_fallbacks", []).append({"datasets": ch.names, "method": meth})
            break
    return cands


def _allocate_first(instance, cands: list, ch: Choice, p: dict, work: dict, diag: dict, out: Outcome):
    """Stage 3 (Sec. IV-C): clusters and allocation for the first candidate
    path that fits Tmax (recorded in ``out.chosen``); the paths that do not
    are blacklisted. None when none fits."""
    plan = None
    t0 = time.perf_counter()
    for cand in cands:
        check_time("DepL's allocation stage")
        plan, info = stage3(instance, cand.models, ch.names, ch.subset, ch.volume, p["epsilon"],
                             p["reoptimize"])
        work["allocation_calls"] += 1
        work["allocation_dp_states"] += int(info.get("dp_states") or 0)
        if plan is not None:
            out.chosen = (cand, info)
            break
        ch.blacklist.add(tuple(cand.models))
        diag["backtracks"].append({"stage": "allocation", "action": "blacklist model path",
                                   "epochs": len(cand.models), "reason": info["reason"]})
    diag["stage_seconds"]["allocation"] += time.perf_counter() - t0
    return plan


def _work_totals(work: dict, graphs: list) -> dict:
    """The loop's counters plus the expanded graphs' totals (see :func:`result_from`)."""
    reach = [g.get("reachable_vertices") for g in graphs]
    complete = bool(reach) and None not in reach
    return {**work, "graphs": len(graphs),
            "graph_vertices_nominal": int(sum(g.get("nominal_vertices") or 0 for g in graphs)),
            "graph_vertices_created": int(sum(g["vertices"] for g in graphs)),
            "graph_edges_relaxed": int(sum(g["edges"] for g in graphs)),
            "graph_vertices_reachable": int(sum(reach)) if complete else None,
            "graph_edges_reachable": int(sum(g["reachable_edges"] for g in graphs)) if complete else None}


def result_from(name: str, instance, out: Outcome, guarantee: str) -> SolveResult:
    """The :class:`SolveResult` of a finished loop (DepL and best-exp alike).

    ``diagnostics["work"]`` holds the loop's work counters (exact,
    the same for the same instance and parameters):

    ``oracle_calls``            subsets the dataset ranker evaluated (the
                                submodular minimisation's oracle, Sec. IV-A)
    ``graphs``                  expanded graphs built (one per surrogate
                                parameter and re-run)
    ``graph_vertices_nominal``  Σ |M|·K̄·(η+1)·(J+1) of those graphs
    ``graph_vertices_reachable``, ``graph_edges_reachable``
                                Σ size of the paper's graph reachable from the
                                source (:func:`~deplbench.solvers.expanded.reference.reachable_size`,
                                equal to the networkx reference; None when too
                                large to count)
    ``graph_vertices_created``  DP states made live (pruning included)
    ``graph_edges_relaxed``     edges the DP relaxed — one DP cell update each
    ``allocation_calls``, ``allocation_dp_states``
                                stage-3 runs and the options × buckets cells of
                                their (1+ε) DP (the 1/ε² part of the cost)
    """
    diag = out.diag
    diag["guarantee"] = guarantee
    if out.plan is None:   # an empty heuristic search proves nothing about (3)-(6): docs/DESIGN.md
        return SolveResult(algorithm=name, status="no_solution", message=out.reason, diagnostics=jsonable(diag))
    cand, info = out.chosen
    diag["allocation"] = info
    diag["loss_max_effective"] = out.loss_max_eff
    diag["quantile_bound"] = cand.quantile_bound
    diag["bound"] = {"method": cand.bound.method, "param": cand.bound.param,
                     "offset": cand.bound.offset, "guarantee": cand.bound.guarantee,
                     "tail_delta": cand.bound.tail_delta, "notes": list(cand.bound.notes)}
    diag["graph_vertices"] = int(sum(g["vertices"] for g in diag["graphs"]))
    diag["graph_edges"] = int(sum(g["edges"] for g in diag["graphs"]))
    ev = out.evaluation
    diag["own_evaluation"] = {"quantile": ev.quantile, "quantile_ci": list(ev.quantile_ci),
                              "verdict": ev.verdict, "samples": ev.samples}
    return SolveResult(algorithm=name, status="feasible",
                       message=f"{out.plan.n_epochs} epochs, datasets {out.choice.names}",
                       plan=out.plan, cost=ev.cost, diagnostics=jsonable(diag))


__all__ = ["Candidate", "Choice", "LOOP_PARAMS", "WORK_EXPONENTS", "Outcome", "Stage2", "check_seed", "decide",
           "jsonable", "most_capable_cluster", "result_from", "stage2", "stage3", "surrogates",
           "validate_loop_params"]
