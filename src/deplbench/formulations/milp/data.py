"""Problem data every MILP formulation shares: scenarios, data classes, configurations.

What is computed
----------------
:class:`Data` draws the S in-sample scenarios of
``ScenarioSampler(instance, seed)`` (Luedtke & Ahmed 2008's SAA of eq. (3)),
merges identical scenarios (their multiplicity weighs the violation budget
⌊(1−ω)S⌋), enumerates the data classes σ (non-empty dataset subsets, equal
ones merged, dominated ones dropped when improvements are non-negative) and
tabulates every configuration j = (model m, cluster n, data class σ): compute
need c_j (eq. (1) with the data law of docs/DESIGN.md), unit cost κ_j,
capacity r_j, communication time s(m)/b(n) and the fastest epoch time
t_j = c_j/r_j + comm_j (eqs. (1), (5)).

Unusable configurations
-----------------------
A configuration whose fastest epoch alone exceeds Tmax (t_j > Tmax, or t_j not
finite: e.g. compute 1e15 or a bandwidth of 5e-324) can appear in no feasible
plan, so it is pruned exactly: ``usable[j]`` is False, its count is fixed to
0 in every formulation and its cut and capacity coefficients are 0, which
keeps the solver's matrix free of meaningless 1e15-sized numbers. The plan
evaluation (:meth:`Data.evaluate`) still uses the true numbers.

:class:`Choice` is one plan's discrete choices (model, cluster, data class
per epoch) with its exact real-x allocation (``formulations.model.allocation``),
transfer cost and in-sample losses: the numbers the cut loop trusts.

References
----------
DepL paper eqs. (1)–(8); J. Luedtke, S. Ahmed, SIAM J. Optim. 19 (2008).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from deplbench import limits
from deplbench.formulations.milp.options import CUT_RATIO, CUT_SPAN, MAX_CUT_NONZEROS
from deplbench.formulations.model.allocation import Allocation, allocate
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations, loss_threshold


def data_bytes(instance, n_scenarios: int) -> int:
    """Peak bytes :class:`Data` needs for the scenario arrays (an estimate).

    The improvement and jump draws (S, K̄, |M|) and (S, K̄, |P|), the scaled
    improvements (S, K̄, |M|) and the flattened copy that merges identical
    scenarios (sorted once more inside ``np.unique``): about four float64
    arrays of S·K̄·(|M|+|P|). Point masses are drawn once (S = 1).
    """
    S = 1 if instance.is_deterministic else int(n_scenarios)
    width = int(instance.horizon) * (instance.n_models + len(instance.switch_pairs))
    return SCENARIO_VALUE_BYTES * S * width


#: Bytes :func:`data_bytes` counts per scenario, epoch and random term (four float64 arrays).
SCENARIO_VALUE_BYTES = 4 * 8


def scenarios_refusal(scenarios: int, memory_limit_gib: float, field: str = "scenarios",
                      limit_name: str = "memory_limit") -> str:
    """Why S = ``scenarios`` fits no instance's scenario arrays within ``memory_limit_gib`` ("" when
    some instance could take it): even one epoch with one random term needs
    :data:`SCENARIO_VALUE_BYTES` per scenario (:func:`data_bytes`). Known
    without the instance, so a parameter check refuses it before any work;
    the estimate of a given instance (larger by K̄·(|M| + |P|)) is the solve's.
    """
    from deplbench.limits import gib_text

    need = SCENARIO_VALUE_BYTES * int(scenarios)
    if need <= memory_limit_gib * 2**30:
        return ""
    return (f"S = {scenarios} in-sample scenarios would need at least {gib_text(need / 2**30)} GiB on any "
            f"instance with a random term ({SCENARIO_VALUE_BYTES} bytes per scenario, epoch and term) > "
            f"{limit_name} {gib_text(memory_limit_gib)} GiB; use fewer {field}")


def _dominated_clusters(cap, kap, bw, beta, chunk: int = 512) -> np.ndarray:
    """Clusters n for which another cluster n' is at least as good in every
    respect — capacity r ≥, unit cost κ ≤, bandwidth b ≥, transfer cost
    β ≤ — and better in one, or equal with a lower index (one of each group
    of identical clusters is kept).

    With one data class this pruning is exact: moving every epoch of n to n'
    (same x ≤ r(n) ≤ r(n')) keeps each epoch time (eq. (1)) and the loss, does
    not raise the compute cost (eq. (2)), and the data transfer moves from n
    to n' at no higher β (eq. (6) either way). An O(|N|) pass handles
    clusters equal in (r, b, β) (20,000 copies of two clusters cost ms), then
    every remaining pair is tested while at most 4000 remain (skipping that
    only keeps more clusters, never a wrong one).
    """
    n = cap.size
    out = np.zeros(n, dtype=bool)
    # First, in O(|N|): among clusters equal in (r, b, β) all but the cheapest
    # (lowest index on ties) are dominated.
    order = np.lexsort((np.arange(n), kap, beta, bw, cap))
    key = np.stack([cap, bw, beta], axis=1)[order]
    same = np.zeros(n, dtype=bool)
    same[1:] = np.all(key[1:] == key[:-1], axis=1)
    out[order[same]] = True
    # Then every pair among the rest, while that stays cheap (it is a subset
    # of the same dominance relation, so skipping it only keeps more).
    rest = np.nonzero(~out)[0]
    if rest.size > 4000:
        return out
    r_out = _pairwise_dominated(cap[rest], kap[rest], bw[rest], beta[rest], rest, chunk)
    out[rest[r_out]] = True
    return out


def _pairwise_dominated(cap, kap, bw, beta, idx, chunk: int) -> np.ndarray:
    """The dominance test of :func:`_dominated_clusters` on every pair."""
    n = cap.size
    out = np.zeros(n, dtype=bool)
    with np.errstate(invalid="ignore"):
        for a in range(0, n, chunk):
            b = slice(a, min(n, a + chunk))
            geq = ((cap[None, :] >= cap[b, None]) & (kap[None, :] <= kap[b, None])
                   & (bw[None, :] >= bw[b, None]) & (beta[None, :] <= beta[b, None]))
            strict = ((cap[None, :] > cap[b, None]) | (kap[None, :] < kap[b, None])
                      | (bw[None, :] > bw[b, None]) | (beta[None, :] < beta[b, None]))
            better = geq & (strict | (idx[None, :] < idx[b, None]))
            better[np.arange(b.stop - a), np.arange(a, b.stop)] = False
            out[b] = better.any(axis=1)
    return out


def draw_seconds(instance, n_scenarios: int, probe: int = 200_000) -> float:
    """Seconds the in-sample draws are expected to take on this machine now.

    Draws ``probe`` values of every random term from a throwaway generator
    (not the scenario stream) and scales the time to S·K̄ draws per term; 0
    when the draws are few (< 20·probe in all), where it would not pay.
    Lets :func:`solve_milp` refuse a draw that cannot finish in the time
    limit instead of overrunning it (the sampler cannot be interrupted).
    """
    dists = [m.improvement for m in instance.models] + [sw.jump for sw in instance.switches]
    random = [d for d in dists if not d.is_deterministic]
    per_term = int(n_scenarios) * int(instance.horizon)
    if not random or per_term * len(random) < 20 * probe:
        return 0.0
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for d in random:
        d.sample(rng, (probe,))
    return (time.perf_counter() - t0) * per_term / probe


def _distinct_rows(parts: list) -> tuple[np.ndarray, np.ndarray]:
    """Classes of identical scenarios: (first index of each class, ascending;
    its multiplicity).

    Row s of the scenario data is the concatenation of ``part[s]`` over the
    parts. Rows are grouped by two fixed random projections (O(S·width), no
    copy — ``np.unique(axis=0)`` sorts whole rows, O(S·log S·width) with a copy),
    then every grouped row is compared exactly with its representative; a
    projection tie between different rows (or a non-finite projection) falls
    back to the exact ``np.unique``, so the classes are always exact.
    """
    S = parts[0].shape[0]
    flat = [p.reshape(S, -1) for p in parts if p.size]
    if S == 1 or not flat:
        return np.zeros(1, dtype=np.int64), np.array([S], dtype=np.int64)
    rng = np.random.default_rng(20240531)     # fixed: the classes never depend on it
    keys = np.zeros((S, 2))
    with np.errstate(over="ignore", invalid="ignore"):
        for X in flat:
            keys += X @ rng.standard_normal((X.shape[1], 2))
    exact = bool(np.isfinite(keys).all())
    if exact:
        _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inv = inv.ravel()
        rep = first[inv]
        for s in np.nonzero(rep != np.arange(S))[0]:
            if not all(np.array_equal(X[s], X[rep[s]]) for X in flat):
                exact = False
                break
    if not exact:
        cat = np.concatenate(flat, axis=1)
        _, first, inv = np.unique(cat, axis=0, return_index=True, return_inverse=True)
        inv = inv.ravel()
    order = np.argsort(first)
    mult = np.bincount(inv, minlength=first.size)
    return first[order].astype(np.int64), mult[order].astype(np.int64)


def phi(lam: float, c: np.ndarray, kappa: np.ndarray, r: np.ndarray) -> np.ndarray:
    """min_{0<x≤r} κx + λc/x, elementwise (the per-epoch Lagrangian cost).

    Interior optimum x = sqrt(λc/κ) gives 2 sqrt(λcκ); past the capacity the
    minimum sits at x = r (also when κ = 0).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(kappa > 0, np.sqrt(lam * c / np.where(kappa > 0, kappa, 1.0)), np.inf)
    return np.where(x <= r, 2.0 * np.sqrt(lam * c * kappa), kappa * r + lam * c / r)


class Data:
    """Numbers both formulations need: scenarios, data classes, configurations.

    Configuration arrays are indexed (model m, cluster n, data class σ).
    """

    def __init__(self, instance, n_scenarios: int, seed: int, checked: bool = False, classes=None):
        """``checked``: the deadline (:func:`deplbench.limits.check_time`) is read before each
        law's draws, which on a large S take seconds each (ScenarioSampler.in_sample).
        ``classes``: the data classes to consider, as tuples of dataset indices (None:
        every non-empty subset of the instance's datasets, 2^|D| − 1 of them)."""
        inst = instance
        self.inst = inst
        #: S as requested; with only point masses every scenario is the same,
        #: so one is drawn (identical to any of the S) and none may be violated
        #: (⌊(1−ω)S⌋ < S for ω > 0).
        self.S_nominal = int(n_scenarios)
        self.deterministic = inst.is_deterministic
        self.S = 1 if self.deterministic else self.S_nominal
        self.p = 0 if self.deterministic else allowed_violations(inst.omega, self.S)
        self.K = int(inst.horizon)
        self.M = inst.n_models
        self.Nn = inst.n_clusters
        self.pairs = list(inst.switch_pairs)
        self.P = len(self.pairs)
        self.l0 = float(inst.initial_loss)
        self.lmax = float(inst.loss_max)
        self.T = float(inst.time_max)
        sc = ScenarioSampler(inst, seed).in_sample(self.S, checked)
        # a[s,k,m] = improvement amount at γ = 1: the run term is −γ·a.
        self.a = inst.run_scale[None, :, :] * sc.improvement
        self.J = sc.jump
        del sc   # the improvement draws are no longer needed (memory)
        self.nonneg = bool(np.all(self.a >= 0))
        # Identical scenarios (always so for deterministic instances) share one
        # row; their multiplicity weighs the violation budget.
        first, mult = _distinct_rows([self.a, self.J])
        self.uniq = first          # representative scenario of each class (ascending)
        self.mult = mult
        self._data_classes(classes)
        mc = inst.model_compute
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # extreme inputs (1e300, 5e-324) may overflow to inf: such
            # configurations are unusable and pruned below
            self.c = mc[:, None, None] * self.vol[None, None, :] * np.ones((1, self.Nn, 1))
            self.comm = np.broadcast_to((inst.model_size[:, None] / inst.bandwidth[None, :])[:, :, None],
                                        self.c.shape).copy()
        self.kap = np.broadcast_to(inst.unit_cost[None, :, None], self.c.shape).copy()
        self.cap = np.broadcast_to(inst.capacity[None, :, None], self.c.shape).copy()
        #: fastest possible epoch time per configuration (x = r)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            self.tmin = self.c / self.cap + self.comm
        #: configurations one epoch of which fits in Tmax (the others are
        #: pruned exactly: no feasible plan uses them; see the module doc)
        self.usable = np.isfinite(self.tmin) & (self.tmin <= self.T * (1 + 1e-9)) & np.isfinite(self.kap)
        #: clusters dominated by another (see _dominated_clusters); with one
        #: data class their epochs can always move to the dominating cluster
        self.dominated = np.zeros(self.Nn, dtype=bool)
        if self.Sig == 1 and self.Nn > 1:
            self.dominated = _dominated_clusters(inst.capacity, inst.unit_cost, inst.bandwidth, self.beta[:, 0])
            self.usable[:, self.dominated, :] = False
        #: t_j on usable configurations, 0 elsewhere (their counts are 0):
        #: the capacity row's coefficients
        self.tmin_row = np.where(self.usable, self.tmin, 0.0)
        #: fastest epoch of any usable configuration (inf when none is usable)
        self.fastest = float(self.tmin[self.usable].min()) if self.usable.any() else math.inf

    def _data_classes(self, classes=None) -> None:
        inst = self.inst
        D = inst.n_datasets
        beta = inst.transfer_matrix  # (D, N)
        raw = []
        subsets = (itertools.chain.from_iterable(itertools.combinations(range(D), size) for size in range(1, D + 1))
                   if classes is None else (tuple(int(d) for d in c) for c in classes))
        for i, sub in enumerate(subsets):
            if i % 256 == 0:
                limits.check_time("the data classes (dataset subsets)")
            names = [inst.datasets[d].name for d in sub]
            vol, gam = inst.data_effect(names)
            raw.append((sub, vol, gam, beta[list(sub), :].sum(axis=0)))
        # Merge classes that are identical for every purpose (keep the first).
        uniq: list = []
        for i, cls in enumerate(raw):
            if i % 256 == 0:
                limits.check_time("the data classes (dataset subsets)")
            if not any(abs(cls[1] - u[1]) <= 1e-12 * max(1, u[1]) and abs(cls[2] - u[2]) <= 1e-12 * max(1, u[2])
                       and np.allclose(cls[3], u[3], rtol=1e-12, atol=0) for u in uniq):
                uniq.append(cls)
        keep = uniq
        if self.nonneg and len(uniq) > 1:
            # With non-negative improvements a class with ≤ volume, ≥ γ and ≤ β
            # everywhere is at least as good in cost, time and every scenario.
            keep = []
            for i, u in enumerate(uniq):
                dominated = any(
                    j != i and w[1] <= u[1] and w[2] >= u[2] and np.all(w[3] <= u[3])
                    for j, w in enumerate(uniq)
                )
                if not dominated:
                    keep.append(u)
        self.classes = [k[0] for k in keep]
        self.vol = np.array([k[1] for k in keep], dtype=float)
        self.gam = np.array([k[2] for k in keep], dtype=float)
        self.beta = np.array([k[3] for k in keep], dtype=float).T  # (N, Σ)
        self.Sig = len(self.classes)

    def labels(self) -> dict:
        """Names of the positions of each axis, for named rows and columns in
        written models (model, cluster, data class, epoch 1-based, switch)."""
        inst = self.inst
        return {"model": [m.name for m in inst.models], "cluster": [c.name for c in inst.clusters],
                "class": ["+".join(inst.datasets[d].name for d in cls) for cls in self.classes],
                "epoch": [f"k{k + 1}" for k in range(self.K)],
                "arc": None}

    def cost_floor(self) -> np.ndarray:
        """Least cost of one epoch of each configuration: κ_j c_j/(Tmax − comm_j).

        The epoch needs x ≥ c_j/(Tmax − comm_j) to fit in Tmax even alone
        (eqs. (1), (4)), so every plan using j costs at least this much.
        """
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            floor = self.kap * self.c / (self.T - self.comm)
        return np.where(self.usable, np.nan_to_num(floor, nan=np.inf, posinf=np.inf), np.inf)

    def prune_dearer_than(self, ub: float) -> int:
        """Mark unusable every configuration whose single epoch costs more
        than ``ub`` (the incumbent's cost: no plan using it can be optimal).
        Returns how many were pruned."""
        dear = self.usable & (self.cost_floor() > ub * (1 + 1e-9) + 1e-12)
        if dear.any():
            self.usable = self.usable & ~dear
            self.tmin_row = np.where(self.usable, self.tmin, 0.0)
        return int(dear.sum())

    def badly_scaled(self) -> bool:
        """True when the usable configurations' one-epoch costs span more than
        1e9 (the solver's matrix would then hold meaningless magnitudes)."""
        floor = self.cost_floor()[self.usable]
        floor = floor[floor > 0]
        with np.errstate(over="ignore"):    # 1e9 × a floor near 1e308 is inf: no finite max exceeds it
            return bool(floor.size) and (not np.isfinite(floor).all() or floor.max() > 1e9 * floor.min())

    # ------------------------------------------------------------- cost cuts
    def g(self, lam: float) -> np.ndarray:
        """g_j(λ) per configuration (m, n, σ): the slope of the λ cut.

        0 on unusable configurations (their counts are fixed to 0, so any
        coefficient is valid and 0 keeps the row well scaled).
        """
        with np.errstate(over="ignore", invalid="ignore"):
            g = phi(lam, self.c, self.kap, self.cap) + lam * self.comm
        return np.where(self.usable, g, 0.0)

    def count_floor(self, counts) -> float:
        """A valid lower bound on the cost of any plan with these model counts.

        For every λ ≥ 0 and a plan meeting Tmax (eq. (4)), Σ κx ≥
        Σ_epochs g_j(λ) − λ·Tmax ≥ Σ_m n_m min_(n,σ) g_(m,n,σ)(λ) − λ·Tmax
        (the λ cut of one plan, weakened to the counts); maximised over the
        cut grid. Non-decreasing in every count (g ≥ 0). Microseconds: it
        ranks and prunes model sequences before an exact allocation.

        Parameters
        ----------
        counts : array_like of int, shape (M,)
            Epochs of each model.
        """
        g, offset = self._count_floor_table
        return float(np.max(np.asarray(counts, dtype=float) @ g - offset))

    @cached_property
    def _count_floor_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(min over (n, σ) of g_(m,n,σ)(λ) per model and grid λ, λ·Tmax) for :meth:`count_floor`."""
        lams = self.cut_grid(self.lam_reference(max(1, self.K // 2)))
        g = np.stack([np.where(self.usable, self.g(lam), np.inf).reshape(self.M, -1).min(axis=1)
                      for lam in lams], axis=1)
        # a model no configuration can run: 1e300 keeps 0·g = 0 for plans without it;
        # λ·Tmax past binary64 (prices of costs near 1e308) is inf: that bound is -inf, never the max
        with np.errstate(over="ignore"):
            return np.where(np.isfinite(g), g, 1e300), lams * self.T

    def g_min(self, lam: float) -> float:
        """min_j g_j(λ) over usable configurations (inf when none is usable)."""
        g = self.g(lam)[self.usable]
        return float(g.min()) if g.size else math.inf

    @property
    def n_cuts(self) -> int:
        """Rows of the initial λ grid: ratio CUT_RATIO over λ_ref·[1/CUT_SPAN,
        CUT_SPAN] (699 rows), fewer when the grid would exceed
        MAX_CUT_NONZEROS (e.g. 20,000 clusters): the cut loop still adds the
        exact cut of every plan it meets, so exactness does not depend on the
        grid, only the number of rounds does."""
        half = int(math.ceil(math.log(CUT_SPAN) / math.log(CUT_RATIO)))
        J = self.M * self.Nn * self.Sig + 1
        half = max(8, min(half, MAX_CUT_NONZEROS // (2 * J)))
        return 2 * half + 1

    def cut_grid(self, lam_ref: float) -> np.ndarray:
        half = (self.n_cuts - 1) // 2
        ratio = CUT_SPAN ** (1.0 / half)
        # prices of costs near 1e308 overflow to inf: a cut at λ = inf bounds nothing, and a
        # plan whose cost is inf is reported as an error by the solve's cost check (solvers.run)
        with np.errstate(over="ignore"):
            return lam_ref * ratio ** np.arange(-half, half + 1)

    def lam_reference(self, n_epochs: float) -> float:
        """A typical price: uncapped closed form for n epochs of a median config."""
        use = self.usable if self.usable.any() else np.ones_like(self.usable)
        with np.errstate(over="ignore", invalid="ignore"):
            root = float(np.median(np.sqrt(self.c[use] * self.kap[use])))
            slack = max(self.T - n_epochs * float(np.median(self.comm[use])), 1e-3 * self.T)
            lam = (n_epochs * root / slack) ** 2
        return lam if (lam > 0 and math.isfinite(lam)) else 1.0

    # ------------------------------------------------------ exact evaluation
    def evaluate(self, models, classes, clusters, held) -> "Choice":
        """Exact cost (allocation + transfer) and in-sample violations of choices."""
        models = np.asarray(models, dtype=int)
        classes = np.asarray(classes, dtype=int)
        clusters = np.asarray(clusters, dtype=int)
        K = models.size
        c = self.c[models, clusters, classes]
        comm = self.comm[models, clusters, classes]
        kap = self.kap[models, clusters, classes]
        cap = self.cap[models, clusters, classes]
        alloc = allocate(c, comm, kap, cap, self.T)
        once = float(sum(self.beta[n, s] for n, s in held.items()))
        transfer = once * (K if self.inst.transfer_cost_mode == "per_epoch" else 1)
        losses = self.losses(models, classes)
        viol = int(np.count_nonzero(losses > loss_threshold(self.lmax)))
        return Choice(models, classes, clusters, dict(held), alloc, transfer, viol, losses)

    def losses(self, models, classes) -> np.ndarray:
        """ℓ_s(K) per in-sample scenario (independent of the scenario helper)."""
        models = np.asarray(models, dtype=int)
        classes = np.asarray(classes, dtype=int)
        k = np.arange(models.size)
        loss = self.l0 - (self.gam[classes][None, :] * self.a[:, k, models]).sum(axis=1)
        for e in range(1, models.size):
            if models[e] != models[e - 1]:
                loss = loss + self.J[:, e, self.inst.switch_index[(int(models[e - 1]), int(models[e]))]]
        return loss


@dataclass
class Choice:
    """Discrete choices of one plan, exactly evaluated."""

    models: np.ndarray
    classes: np.ndarray
    clusters: np.ndarray
    held: dict  # cluster index -> data class index
    alloc: Allocation
    transfer: float
    violations: int
    losses: np.ndarray

    @property
    def feasible_time(self) -> bool:
        return bool(self.alloc.feasible)

    @property
    def cost(self) -> float:
        return float(self.alloc.cost + self.transfer) if self.alloc.feasible else math.inf

    def counts(self, data: Data) -> np.ndarray:
        N = np.zeros((data.M, data.Nn, data.Sig))
        np.add.at(N, (self.models, self.clusters, self.classes), 1.0)
        return N

    def to_plan(self, data: Data) -> Plan:
        inst = data.inst
        epochs = [
            Epoch(model=inst.models[m].name, cluster=inst.clusters[n].name, allocation=float(x))
            for m, n, x in zip(self.models, self.clusters, self.alloc.x)
        ]
        datasets = {
            inst.clusters[n].name: [inst.datasets[d].name for d in data.classes[s]]
            for n, s in sorted(self.held.items())
        }
        return Plan(epochs=epochs, datasets=datasets)



__all__ = ["Data", "Choice", "phi", "SCENARIO_VALUE_BYTES", "data_bytes", "draw_seconds", "scenarios_refusal"]
