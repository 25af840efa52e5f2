"""Exact MILP of problem (2)–(6) with the scenario quantile, solved by HiGHS.

What is solved
--------------
The DepL problem (paper eqs. (2)–(6), model semantics of ``docs/DESIGN.md``)
with constraint (3) replaced by its sample-average approximation (SAA,
Luedtke & Ahmed 2008) over S seeded in-sample scenarios drawn by
``ScenarioSampler(instance, seed).in_sample(S)``: one binary v_s per scenario,

    ℓ_s(K) ≤ ℓmax + M_s v_s,        Σ_s v_s ≤ ⌊(1−ω) S⌋ =: p,

where ℓ_s(K) is linear in the plan's binaries (every X and jump draw of
scenario s is a number). "Optimal" below always means optimal for this SAA
problem on *these* scenarios; the out-of-sample quantile of the returned plan
is judged separately by ``formulations.evaluate``.

Exactness contract for the c/x term
-----------------------------------
Cost is κ·x while time is c/x, so (4) is not linear. We never linearise it
silently. Instead (SPEC §1 allows any sound route):

* At the optimum, epochs with the same configuration j = (model, cluster,
  data) get the same x, so the real-x optimal compute cost is a function
  F(N) of the configuration counts N_j:
  F(N) = min Σ_j κ_j u_j  s.t.  Σ_j c_j N_j²/u_j + Σ_j comm_j N_j ≤ Tmax,
  u_j ≤ r_j N_j  — a jointly convex (quadratic-over-linear) programme, so F
  is convex. ``formulations.allocation.allocate`` evaluates it exactly.
* Its Lagrangian dual is one-dimensional:
  F(N) = max_{λ≥0} Σ_j N_j g_j(λ) − λ Tmax with
  g_j(λ) = min_{0<x≤r_j} (κ_j x + λ c_j/x) + λ comm_j.
  Every λ therefore gives a *globally valid linear* cut
  θ ≥ Σ_j g_j(λ) N_j − λ Tmax, tight at the N whose KKT price
  (``Allocation.time_price``) is λ. Infeasible counts are excluded by the
  linear capacity constraint Σ_j N_j (c_j/r_j + comm_j) ≤ Tmax (λ → ∞).
* The master MILP minimises θ + transfer cost over the discrete choices with
  a dense geometric grid of λ cuts (ratio 1.02: the outer approximation is
  within ~2.5e-5 relative of F before any iteration). Each master solution
  is re-costed exactly with ``allocate`` (an upper bound and a feasible
  real-x plan), its exact cut is added, and the master is re-solved until
  (UB − LB)/UB ≤ ``gap``. LB is the master's proven dual bound (the master is
  a relaxation of the SAA problem). The returned ``cost`` is always the
  exact real-x cost of the returned plan.

Formulations
------------
``formulation="fast"`` (default) picks the strongest exact model the instance
allows, built as sparse matrices with numpy and passed to highspy directly
(``backend="pyomo"`` builds the very same matrices as a Pyomo model solved
through Pyomo's ``appsi_highs``; tests check both give the same optimum):

1. ``counts`` when the loss is order-invariant (every run term independent of
   the epoch index, zero jumps, every switch allowed — the knapsack family):
   only the integer epoch counts N(m,n,σ) are variables.
2. ``enumeration`` when the switch graph is acyclic and there is one data
   class (the realistic families: switches only towards more pruning). A
   plan is then a path of models with one block length each; every
   SAA-feasible, undominated sequence is found by exact in-sample checks
   (for each path and all but the last block length, only the shortest
   feasible last block can be optimal, since F grows with the counts; count
   vectors dominated by another candidate's are dropped) and the MILP picks
   one sequence (binary z_c) plus the cluster counts, data and λ cuts. No
   scenario rows remain. Used while at most ``MAX_CANDIDATES`` prefixes
   need checking.
3. ``flow`` otherwise (``formulation="flow"`` forces it):

   * Flow over the epoch × model state graph: u(k,m) = epoch k trains model
     m, arc flows f(k,i,j) for allowed transitions (staying is always
     allowed); conservation makes the active epochs a prefix and the switch
     indicators exact without product linearisations.
   * One scenario row per *distinct* scenario (multiplicity weighs the
     violation budget; deterministic instances have one, hard).
   * Tight big-M values and bounds from the structure, valid for every plan
     that is SAA-feasible and not dearer than the incumbent (the only plans
     the search needs; the incumbent itself is kept separately):
     K_min — per scenario a min-plus DP over the state graph gives the
     fewest epochs after which *some* plan reaches ℓmax; a feasible plan
     satisfies at least S − p scenarios, so K ≥ the (p+1)-th largest.
     K_max — the λ cuts give K·min_j g_j(λ) − λ Tmax ≤ cost ≤ UB.
     M_s — a Lagrangian longest-path DP per scenario,
     M_s = min_{μ,ν≥0} max_plans [ℓ_s − μ(ℓ̄ − ℓmax − δ) − ν(cut − UB)] − ℓmax,
     with ℓ̄ the scenario-average loss (feasible plans have ℓ̄ ≤ ℓmax + δ,
     δ = sum of the p largest M_t / S, iterated) and "cut" the linear cost
     lower bound; M_s ≤ 0 turns row s into a hard constraint.

Common to the three: clusters are aggregated into integer counts N(m,n,σ)
(the cluster an epoch runs on does not change the loss, only its data class
σ does, and cost and time depend only on how many epochs of each
configuration run); each cluster holds one data class σ (a non-empty subset
of D), q(n,σ) ∈ {0,1}, so the data law's γ(σ) and V(σ) are numbers and the
data choice stays linear (classes equal in (V, γ, β) are merged; with
non-negative improvement draws, dominated classes are dropped). A block
heuristic (up to three model blocks on one cluster, exact in-sample check,
exact allocation; at most a tenth of the time limit) provides the incumbent
that the bounds use and a MIP start.

``formulation="naive"`` is the textbook model written in Pyomo: per-epoch
binaries for activity a(k), model m(k), cluster y(k,n), z(d,n) and data
classes, products m(k)·y(k,n)·q(n,σ) and m(k−1)·m(k) linearised with the
standard inequalities, (6) per epoch as printed or intended, one row per
scenario and crude big-M values (ℓ(0) plus every possible loss increase
minus ℓmax); no incumbent, no bounds. It has the same exactness contract and
is the benchmark's reference; tests check that all formulations agree.

Why the flow formulation is not enough on its own
-------------------------------------------------
The SAA rows have random *coefficients*. A convex combination of plans that
use different models in the same epochs averages independent noise, so the
LP relaxation's quantile is far below any single plan's: on realistic
AlexNet (ℓmax = 9, S = 1000) the root LP is 1590.8, the LP with the optimal
plan's violated scenarios fixed is still 1699.6, fixing K changes nothing
(≈1604), and the optimum is 1802.63; tight big-M values do not close that.
Branch-and-bound must separate the mixtures, which takes minutes at S = 1000
(S = 100: 15 s, S = 300: 35 s on one core). Hence the enumeration and
count variants where the structure allows them.

Sizes solved exactly
--------------------
Every dimension is exact; the limits are sizes, not approximations:
datasets by enumerating per-cluster subsets for |D| ≤ 6 (at most 63 data
classes; larger |D| is refused with status ``error``); models, clusters,
horizon and S are limited only by memory and time (the flow scenario block
has S·K̄·(|M|+|P|) non-zeros). The realistic AlexNet family (|M| = 3, |N| = 2,
|D| = 1, K̄ = 100) at S = 1000 is proven optimal in well under a second by
the enumeration variant; see ``benchmarks/milp_targets.py``.

References
----------
DepL paper eqs. (1)–(6), Property 1; SPEC §1 ("The c/x term", "The quantile");
J. Luedtke, S. Ahmed, "A sample approximation approach for optimization with
probabilistic constraints", SIAM J. Optim. 19 (2008); J. Kelley, "The
cutting-plane method for solving convex programs", J. SIAM 8 (1960).
"""

from __future__ import annotations

import itertools
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from deplbench.errors import SolverError
from deplbench.formulations.allocation import allocate
from deplbench.formulations.plan import Epoch, Plan
from deplbench.formulations.result import SolveResult
from deplbench.formulations.scenarios import ScenarioSampler, allowed_violations

#: Formulations accepted by :func:`solve_milp`.
FORMULATIONS = ("fast", "flow", "naive")
#: Backends for the fast formulation ("highs": matrices straight to highspy).
BACKENDS = ("highs", "pyomo")
#: Largest |D| handled exactly by enumerating each cluster's dataset subset.
MAX_DATASETS = 6
#: Ratio of consecutive λ values in the initial cut grid: the outer
#: approximation of F is then within 1 − (2ρ^{1/4} − ρ^{1/2}) ≈ 2.5e-5.
CUT_RATIO = 1.02
#: The cut grid spans λ_ref·[1/CUT_SPAN, CUT_SPAN].
CUT_SPAN = 1e3
#: Safety margin added to every big-M (absolute, times 1 + |ℓmax|).
BIGM_SLACK = 1e-6
#: Tolerance on ℓ_s(K) ≤ ℓmax when counting in-sample violations (the same
#: as ``Scenarios.violations``).
LOSS_TOL = 1e-9
#: Cut-loop iterations at most (each is a master re-solve).
MAX_ROUNDS = 50


# =============================================================================
# Options
# =============================================================================


def _check_options(scenarios, seed, time_limit, gap, threads, formulation, write_lp, backend):
    """Validate :func:`solve_milp` options (raises SolverError naming the option)."""
    if isinstance(scenarios, bool) or not isinstance(scenarios, (int, np.integer)) or scenarios < 1:
        raise SolverError(f"scenarios: must be a positive integer, got {scenarios!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SolverError(f"seed: must be a non-negative integer, got {seed!r}")
    if not isinstance(time_limit, (int, float)) or not math.isfinite(time_limit) or time_limit <= 0:
        raise SolverError(f"time_limit: must be a positive number of seconds, got {time_limit!r}")
    if not isinstance(gap, (int, float)) or not math.isfinite(gap) or not 0 < gap < 1:
        raise SolverError(f"gap: must be a relative gap in (0, 1), got {gap!r}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise SolverError(f"threads: must be a positive integer, got {threads!r}")
    if formulation not in FORMULATIONS:
        raise SolverError(f"formulation: must be one of {list(FORMULATIONS)}, got {formulation!r}")
    if backend not in BACKENDS:
        raise SolverError(f"backend: must be one of {list(BACKENDS)}, got {backend!r}")
    if write_lp is not None:
        ext = os.path.splitext(str(write_lp))[1].lower()
        if ext not in (".lp", ".mps"):
            raise SolverError(f"write_lp: file name must end in .lp or .mps, got {write_lp!r}")
        parent = os.path.dirname(os.path.abspath(str(write_lp)))
        if not os.path.isdir(parent):
            raise SolverError(f"write_lp: directory {parent!r} does not exist")


# =============================================================================
# Problem data shared by every formulation
# =============================================================================


def _phi(lam: float, c: np.ndarray, kappa: np.ndarray, r: np.ndarray) -> np.ndarray:
    """min_{0<x≤r} κx + λc/x, elementwise (the per-epoch Lagrangian cost).

    Interior optimum x = sqrt(λc/κ) gives 2 sqrt(λcκ); past the capacity the
    minimum sits at x = r (also when κ = 0).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(kappa > 0, np.sqrt(lam * c / np.where(kappa > 0, kappa, 1.0)), np.inf)
    return np.where(x <= r, 2.0 * np.sqrt(lam * c * kappa), kappa * r + lam * c / r)


class _Data:
    """Numbers both formulations need: scenarios, data classes, configurations.

    Configuration arrays are indexed (model m, cluster n, data class σ).
    """

    def __init__(self, instance, n_scenarios: int, seed: int):
        inst = instance
        self.inst = inst
        #: S as requested; with only point masses every scenario is the same,
        #: so one is drawn (identical to any of the S) and none may be violated
        #: (⌊(1−ω)S⌋ < S for ω > 0).
        self.S_nominal = int(n_scenarios)
        self.deterministic = all(m.improvement.is_deterministic for m in inst.models) and all(
            sw.jump.is_deterministic for sw in inst.switches)
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
        sc = ScenarioSampler(inst, seed).in_sample(self.S)
        self.scenarios = sc
        # a[s,k,m] = improvement amount at γ = 1: the run term is −γ·a.
        self.a = inst.run_scale[None, :, :] * sc.improvement
        self.J = sc.jump
        self.nonneg = bool(np.all(self.a >= 0))
        # Identical scenarios (always so for deterministic instances) share one
        # row; their multiplicity weighs the violation budget.
        flat = np.concatenate([self.a.reshape(self.S, -1), self.J.reshape(self.S, -1)], axis=1)
        _, first, mult = np.unique(flat, axis=0, return_index=True, return_counts=True)
        self.uniq = first.astype(np.int64)          # representative scenario of each class
        self.mult = mult.astype(np.int64)
        self._data_classes()
        mc = inst.model_compute
        self.c = mc[:, None, None] * self.vol[None, None, :] * np.ones((1, self.Nn, 1))
        self.kap = np.broadcast_to(inst.unit_cost[None, :, None], self.c.shape).copy()
        self.cap = np.broadcast_to(inst.capacity[None, :, None], self.c.shape).copy()
        self.comm = np.broadcast_to((inst.model_size[:, None] / inst.bandwidth[None, :])[:, :, None],
                                    self.c.shape).copy()
        #: fastest possible epoch time per configuration (x = r)
        self.tmin = self.c / self.cap + self.comm

    def _data_classes(self) -> None:
        inst = self.inst
        D = inst.n_datasets
        beta = inst.transfer_matrix  # (D, N)
        raw = []
        for size in range(1, D + 1):
            for sub in itertools.combinations(range(D), size):
                names = [inst.datasets[d].name for d in sub]
                vol, gam = inst.data_effect(names)
                raw.append((sub, vol, gam, beta[list(sub), :].sum(axis=0)))
        # Merge classes that are identical for every purpose (keep the first).
        uniq = []
        for cls in raw:
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

    # ------------------------------------------------------------- cost cuts
    def g(self, lam: float) -> np.ndarray:
        """g_j(λ) per configuration (m, n, σ): the slope of the λ cut."""
        return _phi(lam, self.c, self.kap, self.cap) + lam * self.comm

    def cut_grid(self, lam_ref: float) -> np.ndarray:
        n = int(math.ceil(math.log(CUT_SPAN) / math.log(CUT_RATIO)))
        return lam_ref * CUT_RATIO ** np.arange(-n, n + 1)

    def lam_reference(self, n_epochs: float) -> float:
        """A typical price: uncapped closed form for n epochs of a median config."""
        root = float(np.median(np.sqrt(self.c * self.kap)))
        slack = max(self.T - n_epochs * float(np.median(self.comm)), 1e-3 * self.T)
        lam = (n_epochs * root / slack) ** 2
        return lam if lam > 0 else 1.0

    # ------------------------------------------------------ exact evaluation
    def evaluate(self, models, classes, clusters, held) -> "_Choice":
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
        viol = int(np.count_nonzero(losses > self.lmax + LOSS_TOL))
        return _Choice(models, classes, clusters, dict(held), alloc, transfer, viol, losses)

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
class _Choice:
    """Discrete choices of one plan, exactly evaluated."""

    models: np.ndarray
    classes: np.ndarray
    clusters: np.ndarray
    held: dict  # cluster index -> data class index
    alloc: object
    transfer: float
    violations: int
    losses: np.ndarray

    @property
    def feasible_time(self) -> bool:
        return bool(self.alloc.feasible)

    @property
    def cost(self) -> float:
        return float(self.alloc.cost + self.transfer) if self.alloc.feasible else math.inf

    def counts(self, data: _Data) -> np.ndarray:
        N = np.zeros((data.M, data.Nn, data.Sig))
        np.add.at(N, (self.models, self.clusters, self.classes), 1.0)
        return N

    def to_plan(self, data: _Data) -> Plan:
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


# =============================================================================
# Structural bounds: K range, block heuristic, tight big-M
# =============================================================================


def _best_gamma_amount(data: _Data) -> np.ndarray:
    """max_σ γ_σ·a[s,k,m]: the most favourable run term of each node."""
    g = data.gam
    return np.maximum(g.max() * data.a, g.min() * data.a)


def _min_epochs(data: _Data) -> tuple[np.ndarray, np.ndarray]:
    """Per scenario, the fewest epochs after which some plan reaches ℓmax.

    Returns (K_s, min loss per length) with K_s = K̄+1 when no plan of at most
    K̄ epochs reaches ℓmax in scenario s. A min-plus DP over the state graph.
    """
    S, K = data.S, data.K
    amt = _best_gamma_amount(data)
    best = data.l0 - amt[:, 0, :]
    reach = np.full(S, K + 1)
    hit = best.min(axis=1) <= data.lmax + LOSS_TOL
    reach[hit] = 1
    for k in range(1, K):
        cand = best.copy()
        for p, (i, j) in enumerate(data.pairs):
            np.minimum(cand[:, j], best[:, i] + data.J[:, k, p], out=cand[:, j])
        best = cand - amt[:, k, :]
        new = (reach > K) & (best.min(axis=1) <= data.lmax + LOSS_TOL)
        reach[new] = k + 1
    return reach


def _quantile_ok(losses: np.ndarray, p: int, lmax: float) -> np.ndarray:
    """SAA feasibility per column: at most p of the S rows exceed ℓmax."""
    return np.count_nonzero(losses > lmax + LOSS_TOL, axis=0) <= p


def _shortest_last_block(data: _Data, pre: np.ndarray, start: np.ndarray, model: int,
                         cum: np.ndarray, k_lo: int, k_hi: int) -> np.ndarray:
    """Fewest epochs L ≥ 1 of a final block of ``model`` that make each partial
    plan SAA-feasible (0 where no L up to k_hi − start works).

    ``pre`` (S, P) is each partial plan's loss just before the block (switch
    jump included), ``start`` (P,) its first epoch, ``cum`` the cumulative
    improvement of the data class. With non-negative improvements the loss
    falls as the block grows, so all P searches bisect together.
    """
    P = start.size
    lo = np.maximum(1, k_lo - start)
    hi = k_hi - start
    found = np.zeros(P, dtype=np.int64)
    if P == 0:
        return found

    def ok(length):
        end = start + length
        loss = pre - (cum[:, end, model] - cum[:, start, model])
        return _quantile_ok(loss, data.p, data.lmax)

    valid = lo <= hi
    if data.nonneg:
        good = np.zeros(P, dtype=bool)
        good[valid] = ok(np.where(valid, hi, 1))[valid]
        a, b = lo.copy(), hi.copy()          # invariant: b works for `good`
        while True:
            open_ = good & (a < b)
            if not open_.any():
                break
            mid = (a + b) // 2
            res = ok(np.where(open_, mid, b))
            b = np.where(open_ & res, mid, b)
            a = np.where(open_ & ~res, mid + 1, a)
        found[good] = b[good]
    else:
        todo = valid.copy()
        length = lo.copy()
        while todo.any():
            res = ok(np.where(todo, np.minimum(length, hi), lo))
            hit = todo & res
            found[hit] = length[hit]
            todo &= ~res
            length += 1
            todo &= length <= hi
    return found


def _block_heuristic(data: _Data, k_min: int, k_max: int, deadline: float):
    """Best plan of at most three model blocks on one cluster (exact check).

    Blocks follow allowed switches (m1 → m2 → m3). For every data class and
    every choice of the first block lengths, the shortest final block meeting
    the in-sample quantile is found (:func:`_shortest_last_block`); candidates
    are costed exactly with ``allocate`` on every cluster, after a closed-form
    lower bound has discarded the hopeless ones. Returns the best
    :class:`_Choice` or None (also when ``deadline`` passes first).
    """
    S, M = data.S, data.M
    allowed = data.inst.allowed
    best = [None]

    def consider(models):
        classes = np.full(models.size, s_idx)
        for n in range(data.Nn):
            c = data.c[models, n, s_idx]
            kap = data.kap[models, n, s_idx]
            slack = data.T - data.comm[models, n, s_idx].sum()
            if slack <= 0:
                continue
            if best[0] is not None and np.sum(np.sqrt(c * kap)) ** 2 / slack >= best[0].cost:
                continue
            ch = data.evaluate(models, classes, np.full(models.size, n), {n: s_idx})
            if ch.violations <= data.p and ch.feasible_time and (best[0] is None or ch.cost < best[0].cost):
                best[0] = ch

    for s_idx in range(data.Sig):
        cum = np.concatenate([np.zeros((S, 1, M)), np.cumsum(data.gam[s_idx] * data.a, axis=1)], axis=1)
        for m1 in range(M):
            # one block
            L = _shortest_last_block(data, np.full((S, 1), data.l0), np.array([0]), m1, cum, k_min, k_max)
            if L[0]:
                consider(np.full(L[0], m1))
            for m2 in range(M):
                if m2 == m1 or not allowed[m1, m2]:
                    continue
                p12 = data.inst.switch_index[(m1, m2)]
                k1 = np.arange(1, k_max)
                pre = data.l0 - cum[:, k1, m1] + data.J[:, k1, p12]
                L = _shortest_last_block(data, pre, k1, m2, cum, k_min, k_max)
                for a, l2 in zip(k1, L):
                    if l2:
                        consider(np.array([m1] * a + [m2] * l2))
                for m3 in range(M):
                    if m3 == m2 or not allowed[m2, m3]:
                        continue
                    if time.perf_counter() > deadline:
                        return best[0]
                    p23 = data.inst.switch_index[(m2, m3)]
                    for a in range(1, k_max - 1):
                        k2 = np.arange(1, k_max - a)
                        st = a + k2
                        pre = (data.l0 - cum[:, a, m1][:, None] + data.J[:, a, p12][:, None]
                               - (cum[:, st, m2] - cum[:, a, m2][:, None]) + data.J[:, st, p23])
                        L = _shortest_last_block(data, pre, st, m3, cum, k_min, k_max)
                        for b, l3 in zip(k2, L):
                            if l3:
                                consider(np.array([m1] * a + [m2] * b + [m3] * l3))
    return best[0]


def _k_max_from_cost(data: _Data, ub: float, lams: np.ndarray) -> int:
    """Largest K any plan of cost ≤ ub can have: K·min_j g_j(λ) − λT ≤ ub."""
    best = data.K
    for lam in lams:
        gmin = float(data.g(lam).min())
        if gmin > 0:
            best = min(best, int(math.floor((ub + lam * data.T) / gmin * (1 + 1e-12) + 1e-9)))
    return max(best, 0)


def _dp_max(node, arc, pairs, k_lo: int, k_hi: int) -> np.ndarray:
    """Longest prefix path over the epoch × model graph, lengths k_lo..k_hi.

    Parameters
    ----------
    node : callable k -> ndarray (..., M)
        Weight of training model m at epoch k (0-based).
    arc : callable k -> ndarray (..., P)
        Extra weight of switch pair p entering epoch k.
    pairs : list of (i, j)
        Allowed switches (staying on a model is always allowed).

    Returns
    -------
    ndarray (...)
        The maximum total weight over all paths whose length is in the range.
    """
    best = np.array(node(0), dtype=float)
    top = best.max(axis=-1) if k_lo <= 1 else np.full(best.shape[:-1], -np.inf)
    for k in range(1, k_hi):
        cand = best.copy()
        if pairs:
            jump = arc(k)
            for p, (i, j) in enumerate(pairs):
                np.maximum(cand[..., j], best[..., i] + jump[..., p], out=cand[..., j])
        best = cand + node(k)
        if k + 1 >= k_lo:
            np.maximum(top, best.max(axis=-1), out=top)
    return top


def _tight_bigm(data: _Data, k_min: int, k_max: int, ub: float | None, lam: float | None,
                rounds: int = 3) -> np.ndarray:
    """Per-scenario big-M from a Lagrangian longest-path DP (see module doc).

    For μ, ν ≥ 0 and every SAA-feasible plan x with K ∈ [k_min, k_max] and
    exact cost ≤ ub:  ℓ_s(x) ≤ ℓ_s(x) − μ(ℓ̄(x) − ℓmax − δ) − ν(cut(x) − ub),
    because the average-scenario loss ℓ̄ exceeds ℓmax by at most δ (the p
    violated scenarios exceed it by at most their own M_t, the others not at
    all) and the λ cut is a lower bound on the compute cost. The right-hand
    side is a path length, so its maximum over all plans is one DP; the
    minimum over a grid of (μ, ν) is the bound. δ is re-derived from the new
    M values for a few rounds (each round's values are valid by induction).
    """
    S = data.S
    abar = data.a.mean(axis=0)
    Jbar = data.J.mean(axis=0)
    mus = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0])
    if ub is not None and lam is not None:
        gmin = data.g(lam).min(axis=1)  # (M, Σ): cheapest cluster per (model, class)
        nu0 = (data.l0 - data.lmax) / max(ub + lam * data.T, 1e-12)
        nus = nu0 * np.array([0.0, 0.1, 0.3, 1.0, 3.0, 10.0])
        cost_const = ub + lam * data.T
    else:
        gmin = np.zeros((data.M, data.Sig))
        nus = np.array([0.0])
        cost_const = 0.0
    mu = np.repeat(mus, nus.size)
    nu = np.tile(nus, mus.size)
    gams = data.gam

    def crude_node(k):
        # max over classes of −γ·a (the loss rises least with the smallest γ
        # when a ≥ 0; with signed draws take the larger of both extremes)
        ak = data.a[:, k, :]
        return np.maximum(-gams.max() * ak, -gams.min() * ak)

    M_s = data.l0 + _dp_max(crude_node, lambda k: data.J[:, k, :], data.pairs, k_min, k_max) - data.lmax
    M_s = np.maximum(M_s, 0.0)

    for _ in range(rounds):
        delta = np.sort(M_s)[S - data.p:].sum() / S if data.p > 0 else 0.0

        def node(k):
            ak = data.a[:, k, :][:, None, :]                       # (S, 1, M)
            base = -ak + mu[None, :, None] * abar[k][None, None, :]  # (S, G, M)
            out = None
            for s_idx, gam in enumerate(gams):
                w = gam * base - nu[None, :, None] * gmin[None, None, :, s_idx]
                out = w if out is None else np.maximum(out, w)
            return out

        def arc(k):
            return data.J[:, k, :][:, None, :] - mu[None, :, None] * Jbar[k][None, None, :]

        const = data.l0 - mu * (data.l0 - data.lmax - delta) + nu * cost_const
        h = const[None, :] + _dp_max(node, arc, data.pairs, k_min, k_max)
        new = np.minimum(M_s, np.maximum(h.min(axis=1) - data.lmax, 0.0))
        done = np.allclose(new, M_s, rtol=1e-6, atol=1e-9)
        M_s = new
        if done:
            break
    # round-off margin on the soft rows (hard rows: every such plan has ℓ_s ≤ ℓmax)
    return np.where(M_s > 0, M_s + BIGM_SLACK * (1.0 + abs(data.lmax)), 0.0)


@dataclass
class _Bounds:
    k_min: int
    k_max: int
    bigm: np.ndarray
    incumbent: _Choice | None
    lam: float
    infeasible: str = ""
    seconds: dict = field(default_factory=dict)


def _structural_bounds(data: _Data, deadline: float, tight: bool = True, bigm: bool = True,
                       heuristic_budget: float = 3.0) -> _Bounds:
    """K range, incumbent and big-M values; or the reason the SAA is infeasible.

    The block heuristic gets at most ``heuristic_budget`` seconds (it only
    provides an incumbent; exactness never depends on it).
    """
    t0 = time.perf_counter()
    reach = _min_epochs(data)
    order = np.sort(reach)[::-1]
    k_min = int(order[data.p])  # (p+1)-th largest
    fastest = float(data.tmin.min())
    if k_min > data.K:
        unreachable = int(np.count_nonzero(reach > data.K))
        return _Bounds(0, 0, np.zeros(0), None, 0.0, infeasible=(
            f"no plan of at most K̄ = {data.K} epochs meets the quantile on the scenarios: in "
            f"{unreachable} of {data.S} in-sample scenarios even the most favourable model sequence "
            f"stays above ℓmax = {data.lmax:g}, but at most {data.p} may"))
    if k_min * fastest > data.T * (1 + 1e-9):
        return _Bounds(0, 0, np.zeros(0), None, 0.0, infeasible=(
            f"even the fastest plan misses Tmax: the quantile needs at least {k_min} epochs and the "
            f"fastest epoch (full capacity) takes {fastest:.6g}, so {k_min * fastest:.6g} > Tmax = {data.T:g}"))
    k_max = min(data.K, int(math.floor(data.T / fastest * (1 + 1e-12) + 1e-9)))
    t1 = time.perf_counter()
    inc = (_block_heuristic(data, k_min, k_max, min(deadline, t1 + heuristic_budget))
           if tight and heuristic_budget > 0 else None)
    t2 = time.perf_counter()
    lam = data.lam_reference(k_min)
    ub = None
    if inc is not None:
        ub = inc.cost
        lam = inc.alloc.time_price if inc.alloc.time_price > 0 else lam
        k_max = min(k_max, _k_max_from_cost(data, ub, data.cut_grid(lam)[::8]))
        k_max = max(k_max, inc.models.size)
    bigm = _tight_bigm(data, k_min, k_max, ub, lam if ub is not None else None) if (tight and bigm) else None
    t3 = time.perf_counter()
    return _Bounds(k_min, k_max, bigm, inc, lam,
                   seconds={"k_range": t1 - t0, "heuristic": t2 - t1, "bigm": t3 - t2})


# =============================================================================
# A sparse matrix MILP (the fast formulation's model, any backend)
# =============================================================================


class _MatrixModel:
    """Columns, bounds, integrality and rows in COO blocks (vectorised build)."""

    def __init__(self):
        self.ncol = 0
        self._lb, self._ub, self._int, self._cost, self._names = [], [], [], [], []
        self._r, self._c, self._v, self._lo, self._hi = [], [], [], [], []
        self.nrow = 0

    def cols(self, name: str, shape, lb=0.0, ub=1.0, integer=False, cost=0.0) -> np.ndarray:
        n = int(np.prod(shape)) if shape else 1
        idx = np.arange(self.ncol, self.ncol + n).reshape(shape if shape else ())
        self.ncol += n
        def flat(value):
            value = np.asarray(value, float)
            return value.ravel().copy() if value.size == n else np.broadcast_to(value, (n,)).copy()

        self._lb.append(flat(lb))
        self._ub.append(flat(ub))
        self._int.append(np.full(n, bool(integer)))
        self._cost.append(flat(cost))
        self._names.append((name, idx))
        return idx

    def rows(self, row_local, col, val, lo, hi) -> np.ndarray:
        """Add rows; ``row_local`` numbers them 0..n−1 within this block."""
        lo = np.atleast_1d(np.asarray(lo, float))
        hi = np.atleast_1d(np.asarray(hi, float))
        row_local = np.asarray(row_local, dtype=np.int64).ravel()
        n = max(lo.size, hi.size, int(row_local.max()) + 1 if row_local.size else 0)
        lo = np.broadcast_to(lo, (n,))
        hi = np.broadcast_to(hi, (n,))
        col = np.asarray(col, dtype=np.int64).ravel()
        val = np.asarray(val, float)
        val = val.ravel() if val.size == col.size else np.broadcast_to(val, col.shape).ravel()
        keep = val != 0
        self._r.append(row_local[keep] + self.nrow)
        self._c.append(col[keep])
        self._v.append(val[keep])
        self._lo.append(lo)
        self._hi.append(hi)
        ids = np.arange(self.nrow, self.nrow + n)
        self.nrow += n
        return ids

    def finish(self):
        self.lb = np.concatenate(self._lb)
        self.ub = np.concatenate(self._ub)
        self.integer = np.concatenate(self._int)
        self.cost = np.concatenate(self._cost)
        self.row_lo = np.concatenate(self._lo) if self._lo else np.zeros(0)
        self.row_hi = np.concatenate(self._hi) if self._hi else np.zeros(0)
        r = np.concatenate(self._r) if self._r else np.zeros(0, np.int64)
        c = np.concatenate(self._c) if self._c else np.zeros(0, np.int64)
        v = np.concatenate(self._v) if self._v else np.zeros(0)
        self.A = sp.csc_matrix((v, (r, c)), shape=(self.nrow, self.ncol))
        self.A.sum_duplicates()
        return self


def _cluster_rows(mm: _MatrixModel, d: _Data, N: np.ndarray, q: np.ndarray, K: int) -> None:
    """Rows shared by the fast formulations: data rule (6), symmetry, capacity.

    ``N`` (M, |N|, Σ) are the integer epoch counts per configuration and ``q``
    (|N|, Σ) the data-class binaries; K bounds any count.
    """
    M, Nn, Sig = d.M, d.Nn, d.Sig
    # a cluster trains on class σ only if it holds σ: Σ_m N[m,n,σ] ≤ K q[n,σ]
    cols = np.concatenate([N.transpose(1, 2, 0).reshape(Nn * Sig, M), q.reshape(Nn * Sig, 1)], axis=1)
    vals = np.tile(np.concatenate([np.ones(M), [-float(K)]]), Nn * Sig)
    mm.rows(np.repeat(np.arange(Nn * Sig), M + 1), cols, vals, -np.inf, 0.0)
    if d.inst.data_rule == "printed":
        # eq. (6) for every k: one cluster holds data and trains throughout
        mm.rows(np.zeros(Nn * Sig), q.ravel(), 1.0, 1.0, 1.0)
    else:
        # one data class per cluster; holding data requires training (eq. (6), intended)
        mm.rows(np.repeat(np.arange(Nn), Sig), q.ravel(), 1.0, -np.inf, 1.0)
        cols = np.concatenate([q.reshape(Nn * Sig, 1), N.transpose(1, 2, 0).reshape(Nn * Sig, M)], axis=1)
        vals = np.tile(np.concatenate([[1.0], -np.ones(M)]), Nn * Sig)
        mm.rows(np.repeat(np.arange(Nn * Sig), M + 1), cols, vals, -np.inf, 0.0)
    # identical clusters are interchangeable (with their data): order them by
    # total epochs to cut the symmetric half of the search
    for n1, n2 in _identical_cluster_pairs(d):
        cols = np.concatenate([N[:, n1, :].ravel(), N[:, n2, :].ravel()])
        vals = np.concatenate([np.ones(M * Sig), -np.ones(M * Sig)])
        mm.rows(np.zeros(cols.size), cols, vals, 0.0, np.inf)
    # time at full capacity fits (the λ → ∞ cut; eqs. (4)–(5))
    mm.rows(np.zeros(M * Nn * Sig), N.ravel(), d.tmin.ravel(), -np.inf, d.T)


def _identical_cluster_pairs(d: _Data) -> list[tuple[int, int]]:
    """Consecutive pairs of clusters with equal r, κ, b and β (a chain per group)."""
    inst = d.inst
    out = []
    for n1 in range(d.Nn):
        for n2 in range(n1 + 1, d.Nn):
            same = (inst.capacity[n1] == inst.capacity[n2] and inst.unit_cost[n1] == inst.unit_cost[n2]
                    and inst.bandwidth[n1] == inst.bandwidth[n2] and np.array_equal(d.beta[n1], d.beta[n2]))
            if same:
                out.append((n1, n2))
                break
    return out


def _held_classes(q: np.ndarray, clusters, classes) -> dict[int, int]:
    """Data class held per cluster, read from the rounded binaries ``q`` (|N|, Σ).

    A cluster that trains without a q set (the master's rows forbid it; only
    round-off could cause it) holds the class of its first epoch.
    """
    held = {int(n): int(q[n].argmax()) for n in range(q.shape[0]) if q[n].sum() > 0}
    for n, s in zip(clusters, classes):
        held.setdefault(int(n), int(s))
    return held


def _clusters_from_counts(models: np.ndarray, classes: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Cluster of each epoch from the integer counts N (M, |N|, Σ).

    The epochs of configuration (m, σ), in order, fill cluster 0 with
    N[m,0,σ] epochs, then cluster 1, ... (any order is equivalent: clusters
    train sequentially and the loss depends only on the model sequence and
    the data each epoch sees). −1 marks epochs the counts do not cover.
    """
    clusters = np.full(models.size, -1)
    M, Nn, Sig = N.shape
    for m in range(M):
        for s in range(Sig):
            ep = np.nonzero((models == m) & (classes == s))[0]
            pos = 0
            for n in range(Nn):
                take = N[m, n, s]
                clusters[ep[pos:pos + take]] = n
                pos += take
    return clusters


class _MatrixFormulation:
    """What the matrix formulations share: integer counts N(m,n,σ), data-class
    binaries q(n,σ), the cost epigraph θ ≥ F(N) by λ cuts, and warm starts.

    Subclasses set ``data``, ``bounds``, ``mm`` and ``H`` (the per-epoch
    transfer columns (|N|, Σ), or None) and call :meth:`_count_columns`.
    """

    #: λ of the cuts the cut loop added after the build (beyond the grid).
    extra_lams: tuple = ()
    H = None

    def _count_columns(self, K: int) -> bool:
        """Add N, q and θ (in this column order); True when the printed
        per-epoch transfer cost (2) needs columns of its own."""
        d, mm = self.data, self.mm
        self.N = mm.cols("N", (d.M, d.Nn, d.Sig), ub=K, integer=True)
        self.q = mm.cols("q", (d.Nn, d.Sig), integer=True,
                         cost=d.beta if d.inst.transfer_cost_mode == "once" else 0.0)
        self.theta = int(mm.cols("theta", (1,), ub=np.inf, cost=1.0)[0])
        return bool(d.inst.transfer_cost_mode == "per_epoch" and np.any(d.beta > 0))

    def _per_epoch_transfer_rows(self, K: int, epoch_cols: np.ndarray, epoch_coef: np.ndarray) -> None:
        """H[n,σ] ≥ β·K_plan − β·K·(1 − q[n,σ]), K_plan = Σ epoch_coef·epoch_cols
        (exact for binary q: the printed eq. (2) pays β every epoch)."""
        d = self.data
        for n in range(d.Nn):
            for s in range(d.Sig):
                b = float(d.beta[n, s])
                if b > 0:
                    cols = np.concatenate([[self.H[n, s], self.q[n, s]], epoch_cols])
                    vals = np.concatenate([[1.0, -b * K], -b * epoch_coef])
                    self.mm.rows(np.zeros(cols.size), cols, vals, -b * K, np.inf)

    def cut_row(self, lam: float):
        """(cols, vals, lo) of the cut θ ≥ Σ g(λ) N − λT."""
        d = self.data
        g = d.g(lam).ravel()
        return (np.concatenate([[self.theta], self.N.ravel()]).astype(np.int32),
                np.concatenate([[1.0], -g]), -lam * d.T)

    def _cut_grid_rows(self) -> None:
        for lam in self.data.cut_grid(self.bounds.lam):
            cols, vals, lo = self.cut_row(lam)
            self.mm.rows(np.zeros(cols.size), cols, vals, lo, np.inf)

    def cut_lams(self) -> list:
        return list(self.data.cut_grid(self.bounds.lam)) + list(self.extra_lams)

    def _start_counts(self, x: np.ndarray, ch: _Choice, N: np.ndarray) -> None:
        """Warm-start values of N, q, H and θ (the tightest cut at the plan)."""
        d = self.data
        x[self.N.ravel()] = N.ravel()
        for n, s in ch.held.items():
            x[self.q[n, s]] = 1.0
            if self.H is not None:
                x[self.H[n, s]] = d.beta[n, s] * ch.models.size
        theta = ch.alloc.cost
        for lam in self.cut_lams():
            theta = max(theta, float(np.sum(d.g(lam) * N) - lam * d.T))
        x[self.theta] = theta

    def _start_violations(self, x: np.ndarray, ch: _Choice) -> None:
        if self.soft.size:
            over = ch.losses[self.soft] > self.data.lmax + 1e-12
            x[self.v[over]] = 1.0


class _FastModel(_MatrixFormulation):
    """The fast formulation (see module docstring) as a :class:`_MatrixModel`."""

    def __init__(self, data: _Data, bounds: _Bounds, scenario_subset=None):
        self.data = d = data
        self.bounds = bounds
        # Scenario generation: rows only for a subset (a relaxation; the cut
        # loop checks every plan on all S scenarios and adds what it violates).
        order = np.argsort(d.uniq)
        if scenario_subset is None:
            self.scen, mult = d.uniq[order], d.mult[order]
        else:
            self.scen = np.unique(np.asarray(scenario_subset, dtype=np.int64))
            mult = np.ones(self.scen.size, dtype=np.int64)
        # a scenario whose copies alone exceed the budget can never be violated
        soft_mask = (bounds.bigm[self.scen] > 0) & (mult <= d.p)
        K = self.K = max(1, bounds.k_max)
        M, Nn, Sig = d.M, d.Nn, d.Sig
        mm = self.mm = _MatrixModel()
        # ------------------------------------------------------------ columns
        self.u = mm.cols("u", (K, M), integer=True)
        self.w = mm.cols("w", (K, M, Sig), integer=True) if Sig > 1 else None
        self.e = mm.cols("e", (K, M), ub=float(d.gam.max())) if Sig > 1 else None
        self.arcs = [(i, i) for i in range(M)] + d.pairs
        A = len(self.arcs)
        self.f = mm.cols("f", (K - 1, A)) if K > 1 else np.zeros((0, A), dtype=np.int64)
        per_epoch = self._count_columns(K)
        self.h = mm.cols("h", (K, Nn, Sig), cost=np.broadcast_to(d.beta, (K, Nn, Sig))) if per_epoch else None
        bigm = bounds.bigm
        self.soft = self.scen[soft_mask] if d.p > 0 else np.zeros(0, dtype=np.int64)
        self.soft_mult = mult[soft_mask] if d.p > 0 else np.zeros(0, dtype=np.int64)
        self.v = mm.cols("v", (self.soft.size,), integer=True)
        # --------------------------------------------------------------- rows
        # activity: the first k_min epochs are active, then a prefix (flow).
        forced = min(max(bounds.k_min, 1), K)
        mm.rows(np.repeat(np.arange(K), M), self.u.ravel(), 1.0,
                lo=np.where(np.arange(K) < forced, 1.0, -np.inf), hi=1.0)
        if K > 1:
            arcs = np.array(self.arcs)
            # inflow of (k, j) equals u[k, j]
            for j in range(M):
                sel = np.nonzero(arcs[:, 1] == j)[0]
                cols = np.concatenate([self.f[:, sel], self.u[1:, j][:, None]], axis=1)
                vals = np.concatenate([np.ones(sel.size), [-1.0]])
                mm.rows(np.repeat(np.arange(K - 1), sel.size + 1), cols, np.tile(vals, K - 1), 0.0, 0.0)
            # outflow of (k−1, i) at most u[k−1, i]
            for i in range(M):
                sel = np.nonzero(arcs[:, 0] == i)[0]
                cols = np.concatenate([self.f[:, sel], self.u[:-1, i][:, None]], axis=1)
                vals = np.concatenate([np.ones(sel.size), [-1.0]])
                mm.rows(np.repeat(np.arange(K - 1), sel.size + 1), cols, np.tile(vals, K - 1), -np.inf, 0.0)
        if Sig > 1:
            # Σ_σ w = u and e = Σ_σ γ_σ w, per (k, m)
            cols = np.concatenate([self.w.reshape(K * M, Sig), self.u.reshape(K * M, 1)], axis=1)
            vals = np.tile(np.concatenate([np.ones(Sig), [-1.0]]), K * M)
            mm.rows(np.repeat(np.arange(K * M), Sig + 1), cols, vals, 0.0, 0.0)
            cols = np.concatenate([self.w.reshape(K * M, Sig), self.e.reshape(K * M, 1)], axis=1)
            vals = np.tile(np.concatenate([d.gam, [-1.0]]), K * M)
            mm.rows(np.repeat(np.arange(K * M), Sig + 1), cols, vals, 0.0, 0.0)
            epoch_cols = self.w.transpose(1, 2, 0).reshape(M * Sig, K)  # (m, σ) × k
        else:
            epoch_cols = self.u.T.reshape(M, K)
        # counts: Σ_n N[m,n,σ] = Σ_k w[k,m,σ]
        cols = np.concatenate([self.N.transpose(0, 2, 1).reshape(M * Sig, Nn), epoch_cols], axis=1)
        vals = np.tile(np.concatenate([np.ones(Nn), -np.ones(K)]), M * Sig)
        mm.rows(np.repeat(np.arange(M * Sig), Nn + K), cols, vals, 0.0, 0.0)
        _cluster_rows(mm, d, self.N, self.q, K)
        if self.h is not None:
            # per-epoch transfer (printed eq. (2)): h[k,n,σ] ≥ q[n,σ] + Σ_m u[k,m] − 1
            R = K * Nn * Sig
            hh = self.h.reshape(R, 1)
            qq = np.broadcast_to(self.q.reshape(1, Nn * Sig), (K, Nn * Sig)).reshape(R, 1)
            uu = np.repeat(self.u, Nn * Sig, axis=0)                       # (R, M)
            cols = np.concatenate([hh, qq, uu], axis=1)
            vals = np.tile(np.concatenate([[1.0, -1.0], -np.ones(M)]), R)
            mm.rows(np.repeat(np.arange(R), M + 2), cols, vals, -1.0, np.inf)
        # quantile budget
        if self.soft.size:
            mm.rows(np.zeros(self.soft.size), self.v, self.soft_mult.astype(float), -np.inf, float(d.p))
        # cost cuts on the grid
        self._cut_grid_rows()
        # scenario rows: ℓ0 − Σ γ a u + Σ J f − M v ≤ ℓmax
        sc = self.scen
        S = sc.size
        run_cols = (self.e if Sig > 1 else self.u).ravel()                 # (K·M)
        run_coef = -d.a[sc, :K, :].reshape(S, K * M) * (1.0 if Sig > 1 else float(d.gam[0]))
        parts_c = [np.broadcast_to(run_cols, (S, K * M))]
        parts_v = [run_coef]
        if K > 1 and d.P:
            sw_cols = self.f[:, M:].ravel()                                   # (K−1)·P
            parts_c.append(np.broadcast_to(sw_cols, (S, sw_cols.size)))
            parts_v.append(d.J[sc, 1:K, :].reshape(S, -1))
        pos = np.searchsorted(sc, self.soft)
        vcol = np.full(S, -1, dtype=np.int64)
        vval = np.zeros(S)
        vcol[pos] = self.v
        vval[pos] = -bigm[self.soft]
        has_v = vcol >= 0
        cols = np.concatenate(parts_c + [np.where(has_v, vcol, parts_c[0][:, 0])[:, None]], axis=1)
        vals = np.concatenate(parts_v + [vval[:, None]], axis=1)
        width = cols.shape[1]
        self.scen_rows = mm.rows(np.repeat(np.arange(S), width), cols, vals, -np.inf, d.lmax - d.l0)
        mm.finish()

    # --------------------------------------------------------------- solution
    def solution_from_choice(self, ch: _Choice) -> np.ndarray:
        d = self.data
        x = np.zeros(self.mm.ncol)
        K = ch.models.size
        ks = np.arange(K)
        x[self.u[ks, ch.models]] = 1.0
        if self.w is not None:
            x[self.w[ks, ch.models, ch.classes]] = 1.0
            x[self.e[ks, ch.models]] = d.gam[ch.classes]
        arc_index = {a: i for i, a in enumerate(self.arcs)}
        for k in range(1, K):
            x[self.f[k - 1, arc_index[(int(ch.models[k - 1]), int(ch.models[k]))]]] = 1.0
        self._start_counts(x, ch, ch.counts(d))
        if self.h is not None:
            for n, s in ch.held.items():
                x[self.h[:K, n, s]] = 1.0
        self._start_violations(x, ch)
        return x

    def choice_from_solution(self, x: np.ndarray) -> _Choice | None:
        d = self.data
        u = np.rint(x[self.u]).astype(int)
        active = u.sum(axis=1) > 0
        n_ep = int(active.sum())
        if n_ep == 0:
            return None
        models = u[:n_ep].argmax(axis=1)
        if self.w is not None:
            w = np.rint(x[self.w]).astype(int)
            classes = w[np.arange(n_ep), models].argmax(axis=1)
        else:
            classes = np.zeros(n_ep, dtype=int)
        clusters = _clusters_from_counts(models, classes, np.rint(x[self.N]).astype(int))
        if np.any(clusters < 0):
            return None
        held = _held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return d.evaluate(models, classes, clusters, held)


def _order_invariant(data: _Data) -> bool:
    """True when every scenario's loss depends on the epoch counts only.

    That holds when each model's run term does not change with the epoch
    index (no decay and the same draw at every epoch, e.g. point masses),
    every jump is exactly zero and every switch is allowed: then any order of
    the same epochs gives the same loss, cost and time (the knapsack family).
    """
    M = data.M
    complete = bool(np.all(data.inst.allowed | np.eye(M, dtype=bool)))
    return (complete and bool(np.all(data.a == data.a[:, :1, :]))
            and (data.P == 0 or not np.any(data.J)))


class _CountModel(_MatrixFormulation):
    """Count formulation for order-invariant instances (see :func:`_order_invariant`).

    The plan is only its epoch counts N(m,n,σ); the scenario loss is
    ℓ0 − Σ γ_σ a_s(m) N(m,n,σ) (linear), K = Σ N ≤ K̄. Data rule, capacity,
    λ cuts and transfer costs are the flow formulation's. Without epoch
    variables the knapsack symmetry (any permutation of epochs) disappears.
    """

    def __init__(self, data: _Data, bounds: _Bounds):
        self.data = d = data
        self.bounds = bounds
        K = self.K = max(1, bounds.k_max)
        Nn, Sig = d.Nn, d.Sig
        mm = self.mm = _MatrixModel()
        per_epoch = self._count_columns(K)
        self.H = mm.cols("H", (Nn, Sig), ub=np.inf, cost=1.0) if per_epoch else None
        scen, mult = d.uniq, d.mult
        a0 = d.a[scen, 0, :]                                  # (U, M): per-epoch amount at γ = 1
        # crude but valid big-M: no plan of ≥ 1 epoch ends above ℓ0 + K̄·(largest rise)
        rise = np.maximum(0.0, -(a0[:, :, None] * d.gam[None, None, :]).min(axis=(1, 2)))
        bigm = d.l0 + K * rise - d.lmax
        soft = (mult <= d.p) & (bigm > 0) if d.p > 0 else np.zeros(scen.size, dtype=bool)
        self.v = mm.cols("v", (int(soft.sum()),), integer=True)
        mm.rows(np.zeros(self.N.size), self.N.ravel(), 1.0, max(1.0, float(bounds.k_min)), float(K))
        _cluster_rows(mm, d, self.N, self.q, K)
        if self.H is not None:   # the plan's epochs are Σ N
            self._per_epoch_transfer_rows(K, self.N.ravel(), np.ones(self.N.size))
        if soft.any():
            mm.rows(np.zeros(self.v.size), self.v, mult[soft].astype(float), -np.inf, float(d.p))
        self._cut_grid_rows()
        # scenario rows: ℓ0 − Σ γ_σ a_s(m) N(m,n,σ) − M_s v_s ≤ ℓmax
        U = scen.size
        coef = -(a0[:, :, None, None] * d.gam[None, None, None, :]) * np.ones((1, 1, Nn, 1))   # (U, M, Nn, Σ)
        cols = np.broadcast_to(self.N.ravel(), (U, self.N.size))
        vcol = np.full(U, int(self.N.ravel()[0]))
        vval = np.zeros(U)
        vcol[soft] = self.v
        vval[soft] = -bigm[soft]
        mm.rows(np.repeat(np.arange(U), self.N.size + 1),
                np.concatenate([cols, vcol[:, None]], axis=1),
                np.concatenate([coef.reshape(U, -1), vval[:, None]], axis=1), -np.inf, d.lmax - d.l0)
        self.soft = scen[soft]
        mm.finish()

    def solution_from_choice(self, ch: _Choice) -> np.ndarray:
        x = np.zeros(self.mm.ncol)
        self._start_counts(x, ch, ch.counts(self.data))
        self._start_violations(x, ch)
        return x

    def choice_from_solution(self, x: np.ndarray) -> _Choice | None:
        d = self.data
        N = np.rint(x[self.N]).astype(int)
        if N.sum() == 0:
            return None
        idx = np.argwhere(N > 0)                          # (m, n, σ) in index order
        reps = N[N > 0]
        models = np.repeat(idx[:, 0], reps)
        clusters = np.repeat(idx[:, 1], reps)
        classes = np.repeat(idx[:, 2], reps)
        held = _held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return d.evaluate(models, classes, clusters, held)


#: The sequence-enumeration formulation is used only below this many candidate
#: plans (after dominance); beyond it the flow formulation is built.
MAX_CANDIDATES = 200_000


def _dag_paths(allowed: np.ndarray, limit: int = MAX_CANDIDATES) -> list[tuple[int, ...]] | None:
    """All model paths of the switch graph, or None when it has a cycle or
    more than ``limit`` paths."""
    M = allowed.shape[0]
    adj = [[j for j in range(M) if j != i and allowed[i, j]] for i in range(M)]
    state = [0] * M

    def cyclic(i):
        state[i] = 1
        for j in adj[i]:
            if state[j] == 1 or (state[j] == 0 and cyclic(j)):
                return True
        state[i] = 2
        return False

    if any(state[i] == 0 and cyclic(i) for i in range(M)):
        return None
    paths = []

    def walk(path):
        if len(paths) > limit:
            return
        paths.append(tuple(path))
        for j in adj[path[-1]]:
            walk(path + [j])

    for i in range(M):
        walk([i])
    return paths if len(paths) <= limit else None


def _enumeration_size(paths, k_max: int) -> float:
    """Upper bound on the prefixes to enumerate: Σ_paths C(k_max, len − 1)."""
    return float(sum(math.comb(k_max, len(p) - 1) for p in paths))


def _enumerate_candidates(data: _Data, k_min: int, k_max: int, paths, deadline: float):
    """Every SAA-feasible model sequence that is not dominated (Sig = 1).

    A plan of an acyclic switch graph is a path of models with a block length
    each. For each path and each choice of all but the last block length, only
    the shortest SAA-feasible last block can be optimal when improvements are
    non-negative (a longer one costs more — F is increasing in the counts —
    and the shorter one is feasible); otherwise every feasible length is kept.
    Count vectors dominated componentwise by another candidate's are dropped.

    Returns (list of model-index arrays, counts (C, M)) or None on timeout.
    """
    S, M = data.S, data.M
    cum = np.concatenate([np.zeros((S, 1, M)), np.cumsum(data.gam[0] * data.a, axis=1)], axis=1)
    seqs: list[np.ndarray] = []

    def last_block(pre, start, model):
        if data.nonneg:
            L = _shortest_last_block(data, pre, start, model, cum, k_min, k_max)
            return [(j, int(l)) for j, l in enumerate(L) if l]
        out = []
        for j in range(start.size):
            for length in range(max(1, k_min - start[j]), k_max - start[j] + 1):
                loss = pre[:, j] - (cum[:, start[j] + length, model] - cum[:, start[j], model])
                if _quantile_ok(loss[:, None], data.p, data.lmax)[0]:
                    out.append((j, length))
        return out

    def extend(path, blocks, pre, start):
        # blocks: lengths fixed so far (all but the last two blocks of path)
        depth = len(blocks)
        if time.perf_counter() > deadline:
            raise TimeoutError
        if depth == len(path) - 1:
            for _, length in last_block(pre[:, None], np.array([start]), path[-1]):
                seqs.append(np.repeat(path, blocks + [length]))
            return
        m, nxt = path[depth], path[depth + 1]
        p = data.inst.switch_index[(m, nxt)]
        remaining = len(path) - depth - 1
        lengths = np.arange(1, k_max - start - remaining + 1)
        if lengths.size == 0:
            return
        ends = start + lengths
        pre_next = pre[:, None] - (cum[:, ends, m] - cum[:, start, m][:, None]) + data.J[:, np.minimum(ends, data.K - 1), p]
        if depth == len(path) - 2:
            for j, length in last_block(pre_next, ends, nxt):
                seqs.append(np.repeat(path, blocks + [int(lengths[j]), length]))
        else:
            for j, a in enumerate(lengths):
                extend(path, blocks + [int(a)], pre_next[:, j], int(ends[j]))

    try:
        for path in paths:
            extend(list(path), [], np.full(S, data.l0), 0)
    except TimeoutError:
        return None
    if not seqs:
        return [], np.zeros((0, M))
    counts = np.array([np.bincount(s, minlength=M) for s in seqs], dtype=float)
    # Pareto filter: drop count vectors dominated by another candidate's. In
    # lexicographic order a dominating vector comes first, so one pass with
    # a vectorised test against the kept ones suffices.
    order = np.lexsort(counts.T[::-1])
    kept = np.empty((0, M))
    keep = []
    for i in order:
        c = counts[i]
        if kept.shape[0] and np.any(np.all(kept <= c, axis=1)):
            continue
        keep.append(i)
        kept = np.vstack([kept, c[None, :]])
    keep = sorted(keep)
    return [seqs[i] for i in keep], counts[keep]


class _EnumModel(_MatrixFormulation):
    """Sequence-enumeration formulation for acyclic switch graphs (Sig = 1).

    One binary z_c per candidate model sequence (every SAA-feasible,
    undominated sequence, found by exact in-sample checks), the same integer
    cluster counts N, data binaries q and λ cuts as the flow formulation:
    Σ_c z_c = 1 and Σ_n N[m,n] = Σ_c n_m(c) z_c. The quantile is enforced by
    the enumeration itself (infeasible sequences are not candidates), so the
    model has no scenario rows; it is exact because every feasible plan is
    dominated by a candidate with the same or fewer epochs of every model.
    """

    def __init__(self, data: _Data, bounds: _Bounds, seqs, counts):
        self.data = d = data
        self.bounds = bounds
        self.seqs = list(seqs)
        self.counts_c = np.asarray(counts, dtype=float)
        C = len(self.seqs)
        K = self.K = int(max(s.size for s in self.seqs))
        M, Nn, Sig = d.M, d.Nn, d.Sig
        mm = self.mm = _MatrixModel()
        self.z = mm.cols("z", (C,), integer=True)
        per_epoch = self._count_columns(K)
        self.H = mm.cols("H", (Nn, Sig), ub=np.inf, cost=1.0) if per_epoch else None
        mm.rows(np.zeros(C), self.z, 1.0, 1.0, 1.0)
        # Σ_n N[m,n,0] = Σ_c n_m(c) z_c
        cols = np.concatenate([self.N[:, :, 0], np.broadcast_to(self.z, (M, C))], axis=1)
        vals = np.concatenate([np.ones((M, Nn)), -self.counts_c.T], axis=1)
        mm.rows(np.repeat(np.arange(M), Nn + C), cols, vals, 0.0, 0.0)
        _cluster_rows(mm, d, self.N, self.q, K)
        if self.H is not None:   # the plan's epochs are Σ_c K_c z_c
            self._per_epoch_transfer_rows(K, self.z, np.array([s.size for s in self.seqs], dtype=float))
        self._cut_grid_rows()
        mm.finish()
        self.index = {tuple(s.tolist()): i for i, s in enumerate(self.seqs)}

    def solution_from_choice(self, ch: _Choice) -> np.ndarray | None:
        i = self.index.get(tuple(ch.models.tolist()))
        if i is None:
            return None
        x = np.zeros(self.mm.ncol)
        x[self.z[i]] = 1.0
        self._start_counts(x, ch, ch.counts(self.data))
        return x

    def choice_from_solution(self, x: np.ndarray) -> _Choice | None:
        models = self.seqs[int(np.argmax(x[self.z]))]
        classes = np.zeros(models.size, dtype=int)   # Σ = 1: one data class
        clusters = _clusters_from_counts(models, classes, np.rint(x[self.N]).astype(int))
        if np.any(clusters < 0):
            return None
        held = _held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return self.data.evaluate(models, classes, clusters, held)


# =============================================================================
# Backends: highspy directly, or Pyomo's appsi_highs
# =============================================================================


@dataclass
class _MasterOutcome:
    status: str            # "optimal" | "time_limit" | "infeasible" | "error"
    x: np.ndarray | None
    objective: float
    bound: float
    nodes: int
    lp_iterations: int
    message: str = ""


_SCHEDULER_THREADS: list[int] = []


def _use_threads(threads: int) -> None:
    """HiGHS keeps one global thread scheduler per process; a run asking for a
    different thread count fails ("Not Set") unless it is reset first."""
    import highspy

    if _SCHEDULER_THREADS and _SCHEDULER_THREADS[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _SCHEDULER_THREADS[:] = [threads]


class _HighsBackend:
    """The matrix model handed to highspy (no modelling layer in between)."""

    def __init__(self, mm: _MatrixModel, threads: int, seed: int, verbose: bool = False):
        import highspy

        self.highspy = highspy
        h = self.h = highspy.Highs()
        h.setOptionValue("output_flag", bool(verbose))
        h.setOptionValue("threads", int(threads))
        h.setOptionValue("random_seed", int(seed) % (2**31 - 1))
        self.threads = int(threads)
        lp = highspy.HighsLp()
        lp.num_col_ = mm.ncol
        lp.num_row_ = mm.nrow
        lp.col_cost_ = mm.cost
        lp.col_lower_ = mm.lb
        lp.col_upper_ = mm.ub
        lp.row_lower_ = mm.row_lo
        lp.row_upper_ = mm.row_hi
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = mm.A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = mm.A.indices.astype(np.int32)
        lp.a_matrix_.value_ = mm.A.data
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in mm.integer]
        h.passModel(lp)
        self.ncol = mm.ncol

    @property
    def n_rows(self) -> int:
        return int(self.h.getNumRow())

    def write(self, path: str) -> None:
        self.h.writeModel(str(path))

    def add_cut(self, cols, vals, lo) -> None:
        self.h.addRow(float(lo), self.highspy.kHighsInf, len(cols), np.asarray(cols, np.int32),
                      np.asarray(vals, float))

    def set_start(self, x: np.ndarray) -> None:
        sol = self.highspy.HighsSolution()
        sol.col_value = list(map(float, x))
        sol.value_valid = True
        self.h.setSolution(sol)

    def solve(self, time_left: float, rel_gap: float) -> _MasterOutcome:
        h = self.h
        h.setOptionValue("time_limit", max(float(time_left), 1e-3))
        h.setOptionValue("mip_rel_gap", float(rel_gap))
        _use_threads(self.threads)
        h.run()
        st = h.getModelStatus()
        S = self.highspy.HighsModelStatus
        if st == S.kNotset:
            # another HiGHS user in this process changed the global scheduler
            self.highspy.Highs.resetGlobalScheduler(True)
            h.run()
            st = h.getModelStatus()
        info = h.getInfo()
        nodes = int(info.mip_node_count)
        iters = int(info.simplex_iteration_count)
        has_x = info.primal_solution_status == 2
        x = np.array(h.getSolution().col_value) if has_x else None
        obj = float(info.objective_function_value) if has_x else math.inf
        bound = float(info.mip_dual_bound)
        if st == S.kOptimal:
            return _MasterOutcome("optimal", x, obj, bound, nodes, iters)
        if st == S.kInfeasible:
            return _MasterOutcome("infeasible", None, math.inf, math.inf, nodes, iters)
        if st in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit, S.kSolutionLimit, S.kObjectiveBound):
            return _MasterOutcome("time_limit", x, obj, bound, nodes, iters)
        return _MasterOutcome("error", x, obj, bound, nodes, iters,
                              message=f"HiGHS stopped with model status {h.modelStatusToString(st)!r}")


class _PyomoBackend:
    """A Pyomo model solved through Pyomo's persistent ``appsi_highs`` interface.

    ``xvars`` fixes the order of the columns so that solutions are arrays and
    cuts are (column, value) lists, exactly as for :class:`_HighsBackend`.
    """

    def __init__(self, model, xvars, threads: int, seed: int, verbose: bool = False):
        import pyomo.environ as pe
        from pyomo.contrib.appsi.solvers.highs import Highs

        self.pe = pe
        self.model = model
        self.xvars = xvars
        model.deplbench_cuts = pe.ConstraintList()
        self.opt = Highs()
        self.opt.config.load_solution = False
        self.opt.config.stream_solver = bool(verbose)
        self.opt.highs_options = {"threads": int(threads), "random_seed": int(seed) % (2**31 - 1)}
        self.threads = int(threads)
        self.ncol = len(xvars)

    @property
    def n_rows(self) -> int:
        return sum(1 for _ in self.model.component_data_objects(self.pe.Constraint, active=True))

    def write(self, path: str) -> None:
        self.model.write(str(path), io_options={"symbolic_solver_labels": True})

    def add_cut(self, cols, vals, lo) -> None:
        from pyomo.core.expr.numeric_expr import LinearExpression

        expr = LinearExpression(constant=0.0, linear_coefs=[float(v) for v in vals],
                                linear_vars=[self.xvars[int(c)] for c in cols])
        self.model.deplbench_cuts.add(expr >= float(lo))

    def set_start(self, x: np.ndarray) -> None:
        # appsi_highs does not pass MIP starts; the incumbent is kept by the
        # cut loop instead (documented in solve_milp's Notes).
        return None

    def solve(self, time_left: float, rel_gap: float) -> _MasterOutcome:
        from pyomo.contrib.appsi.base import TerminationCondition as TC

        self.opt.config.time_limit = max(float(time_left), 1e-3)
        self.opt.config.mip_gap = float(rel_gap)
        _use_threads(self.threads)
        res = self.opt.solve(self.model)
        hi = self.opt._solver_model
        info = hi.getInfo()
        nodes, iters = int(info.mip_node_count), int(info.simplex_iteration_count)
        tc = res.termination_condition
        has_x = res.best_feasible_objective is not None
        x = None
        if has_x:
            res.solution_loader.load_vars()
            x = np.array([v.value if v.value is not None else 0.0 for v in self.xvars], dtype=float)
        obj = float(res.best_feasible_objective) if has_x else math.inf
        bound = res.best_objective_bound
        bound = float(bound) if bound is not None else -math.inf
        if tc == TC.optimal:
            return _MasterOutcome("optimal", x, obj, bound, nodes, iters)
        if tc == TC.infeasible:
            return _MasterOutcome("infeasible", None, math.inf, math.inf, nodes, iters)
        if tc in (TC.maxTimeLimit, TC.maxIterations, TC.interrupted, TC.objectiveLimit):
            return _MasterOutcome("time_limit", x, obj, bound, nodes, iters)
        return _MasterOutcome("error", x, obj, bound, nodes, iters,
                              message=f"HiGHS (through Pyomo) stopped with {tc}")


def _pyomo_from_matrix(mm: _MatrixModel):
    """The fast formulation's matrix as a Pyomo model (one linear row per row)."""
    import pyomo.environ as pe
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pe.ConcreteModel(name="deplbench_milp_fast")
    m.I = pe.RangeSet(0, mm.ncol - 1)

    def dom(_, i):
        return pe.Integers if mm.integer[i] else pe.Reals

    def bnd(_, i):
        lo, hi = mm.lb[i], mm.ub[i]
        return (None if not math.isfinite(lo) else float(lo), None if not math.isfinite(hi) else float(hi))

    m.x = pe.Var(m.I, domain=dom, bounds=bnd)
    xs = [m.x[i] for i in range(mm.ncol)]
    m.obj = pe.Objective(expr=LinearExpression(
        constant=0.0, linear_coefs=[float(c) for c in mm.cost[mm.cost != 0]],
        linear_vars=[xs[i] for i in np.nonzero(mm.cost)[0]]), sense=pe.minimize)
    R = mm.A.tocsr()
    m.rows = pe.ConstraintList()
    for r in range(mm.nrow):
        lo, hi = mm.row_lo[r], mm.row_hi[r]
        a, b = R.indptr[r], R.indptr[r + 1]
        expr = LinearExpression(constant=0.0, linear_coefs=R.data[a:b].tolist(),
                                linear_vars=[xs[i] for i in R.indices[a:b]])
        m.rows.add((None if not math.isfinite(lo) else float(lo), expr,
                    None if not math.isfinite(hi) else float(hi)))
    return m, xs


# =============================================================================
# The naive (textbook) formulation, in Pyomo
# =============================================================================


class _NaiveModel:
    """Per-epoch binaries a(k), m(k), y(k,n), data classes q(n,σ), z(d,n),
    product variables linearised with the standard inequalities, crude big-M.
    """

    def __init__(self, data: _Data, lam_ref: float):
        import pyomo.environ as pe

        d = self.data = data
        self.lam_ref = lam_ref
        K, M, Nn, Sig, P, S = d.K, d.M, d.Nn, d.Sig, d.P, d.S
        self.K = K
        m = self.model = pe.ConcreteModel(name="deplbench_milp_naive")
        Ks, Ms, Ns, Ss = range(K), range(M), range(Nn), range(Sig)
        m.a = pe.Var(Ks, domain=pe.Binary)                      # epoch k is active (k < K)
        m.m = pe.Var(Ks, Ms, domain=pe.Binary)                  # m(k)
        m.y = pe.Var(Ks, Ns, domain=pe.Binary)                  # y(k, n)
        m.q = pe.Var(Ns, Ss, domain=pe.Binary)                  # cluster n holds data class σ
        m.z = pe.Var(range(d.inst.n_datasets), Ns, domain=pe.Binary)   # z(d, n)
        m.w = pe.Var(Ks, Ms, Ns, Ss, bounds=(0, 1))             # m(k)·y(k,n)·q(n,σ)
        m.sw = pe.Var(range(1, K), range(P), bounds=(0, 1))     # m(k−1,i)·m(k,j)
        m.cnt = pe.Var(Ms, Ns, Ss, bounds=(0, K))               # Σ_k w
        m.theta = pe.Var(bounds=(0, None))
        m.v = pe.Var(range(S), domain=pe.Binary)
        per_epoch = d.inst.transfer_cost_mode == "per_epoch"
        beta_dn = d.inst.transfer_matrix
        if per_epoch:
            m.tr = pe.Var(Ks, range(d.inst.n_datasets), Ns, bounds=(0, 1))
        c = m.c = pe.ConstraintList()
        for k in Ks:
            if k:
                c.add(m.a[k] <= m.a[k - 1])
            c.add(sum(m.m[k, i] for i in Ms) == m.a[k])
            c.add(sum(m.y[k, n] for n in Ns) == m.a[k])
            for i in Ms:
                for n in Ns:
                    for s in Ss:
                        c.add(m.w[k, i, n, s] <= m.m[k, i])
                        c.add(m.w[k, i, n, s] <= m.y[k, n])
                        c.add(m.w[k, i, n, s] <= m.q[n, s])
                        c.add(m.w[k, i, n, s] >= m.m[k, i] + m.y[k, n] + m.q[n, s] - 2)
            for n in Ns:
                c.add(m.y[k, n] <= sum(m.q[n, s] for s in Ss))   # a training cluster holds data
        allowed = d.inst.allowed
        for k in range(1, K):
            for i in Ms:
                for j in Ms:
                    if i != j and not allowed[i, j]:
                        c.add(m.m[k - 1, i] + m.m[k, j] <= 1)
            for p, (i, j) in enumerate(d.pairs):
                c.add(m.sw[k, p] >= m.m[k - 1, i] + m.m[k, j] - 1)
                c.add(m.sw[k, p] <= m.m[k - 1, i])
                c.add(m.sw[k, p] <= m.m[k, j])
        for n in Ns:
            c.add(sum(m.q[n, s] for s in Ss) <= 1)
            for dd in range(d.inst.n_datasets):
                c.add(m.z[dd, n] == sum(m.q[n, s] for s in Ss if dd in d.classes[s]))
                if d.inst.data_rule == "printed":
                    for k in Ks:   # eq. (6) as printed: z(d,n) ≤ y(k,n) for every active k
                        c.add(m.z[dd, n] <= m.y[k, n] + 1 - m.a[k])
                else:          # intended: a cluster holding data trains at least once
                    c.add(m.z[dd, n] <= sum(m.y[k, n] for k in Ks))
        for i in Ms:
            for n in Ns:
                for s in Ss:
                    c.add(m.cnt[i, n, s] == sum(m.w[k, i, n, s] for k in Ks))
        c.add(sum(float(d.tmin[i, n, s]) * m.cnt[i, n, s] for i in Ms for n in Ns for s in Ss) <= d.T)
        if per_epoch:
            for k in Ks:
                for dd in range(d.inst.n_datasets):
                    for n in Ns:
                        if beta_dn[dd, n] > 0:
                            c.add(m.tr[k, dd, n] >= m.z[dd, n] + m.a[k] - 1)
            transfer = sum(float(beta_dn[dd, n]) * m.tr[k, dd, n]
                           for k in Ks for dd in range(d.inst.n_datasets) for n in Ns if beta_dn[dd, n] > 0)
        else:
            transfer = sum(float(beta_dn[dd, n]) * m.z[dd, n]
                           for dd in range(d.inst.n_datasets) for n in Ns if beta_dn[dd, n] > 0)
        m.obj = pe.Objective(expr=m.theta + transfer, sense=pe.minimize)
        # crude big-M: ℓ(0) + every loss increase the scenario could ever see − ℓmax
        amt = d.a[:, :, :, None] * d.gam[None, None, None, :]
        rise = np.maximum(0.0, (-amt).max(axis=(2, 3))).sum(axis=1)
        jump = np.maximum(0.0, d.J[:, 1:, :].max(axis=2)).sum(axis=1) if P else np.zeros(S)
        self.bigm = d.l0 + rise + jump - d.lmax
        for s in range(S):
            run = sum(-float(d.gam[sg] * d.a[s, k, i]) * m.w[k, i, n, sg]
                      for k in Ks for i in Ms for n in Ns for sg in Ss)
            sw = sum(float(d.J[s, k, p]) * m.sw[k, p] for k in range(1, K) for p in range(P))
            c.add(d.l0 + run + sw <= d.lmax + float(self.bigm[s]) * m.v[s])
        c.add(sum(m.v[s] for s in range(S)) <= d.p)
        # column order for cuts and solutions
        self.xvars = list(m.component_data_objects(pe.Var, descend_into=True))
        pos = {id(v): i for i, v in enumerate(self.xvars)}
        self.cnt_idx = np.array([pos[id(m.cnt[i, n, s])] for i in Ms for n in Ns for s in Ss])
        self.theta_idx = pos[id(m.theta)]
        self.m_idx = np.array([[pos[id(m.m[k, i])] for i in Ms] for k in Ks])
        self.y_idx = np.array([[pos[id(m.y[k, n])] for n in Ns] for k in Ks])
        self.q_idx = np.array([[pos[id(m.q[n, s])] for s in Ss] for n in Ns])
        self.extra_lams = []
        for lam in d.cut_grid(lam_ref):
            self._add_cut_constraint(lam)

    def _add_cut_constraint(self, lam):
        m = self.model
        g = self.data.g(lam)
        d = self.data
        m.c.add(m.theta >= sum(float(g[i, n, s]) * m.cnt[i, n, s]
                               for i in range(d.M) for n in range(d.Nn) for s in range(d.Sig)) - lam * d.T)

    @property
    def theta(self) -> int:
        return self.theta_idx

    def cut_row(self, lam: float):
        g = self.data.g(lam).ravel()
        return (np.concatenate([[self.theta_idx], self.cnt_idx]), np.concatenate([[1.0], -g]),
                -lam * self.data.T)

    def choice_from_solution(self, x: np.ndarray) -> _Choice | None:
        d = self.data
        mk = np.rint(x[self.m_idx]).astype(int)
        yk = np.rint(x[self.y_idx]).astype(int)
        active = mk.sum(axis=1) > 0
        n_ep = int(active.sum())
        if n_ep == 0 or not np.all(active[:n_ep]):
            return None
        models = mk[:n_ep].argmax(axis=1)
        clusters = yk[:n_ep].argmax(axis=1)
        q = np.rint(x[self.q_idx]).astype(int)
        held = {int(n): int(q[n].argmax()) for n in range(d.Nn) if q[n].sum() > 0}
        if any(int(n) not in held for n in clusters):
            return None
        classes = np.array([held[int(n)] for n in clusters])
        return d.evaluate(models, classes, clusters, held)


# =============================================================================
# The cut loop and the public entry point
# =============================================================================


def _result(status, message, data=None, best=None, lower=None, params=None, diag=None) -> SolveResult:
    plan = best.to_plan(data) if best is not None else None
    cost = best.cost if best is not None else None
    gap = None
    if cost is not None and lower is not None:
        lower = min(lower, cost)
        gap = SolveResult.relative_gap(cost, lower)
    return SolveResult(algorithm="milp", status=status, message=message, plan=plan, cost=cost,
                       lower_bound=lower, gap=gap, params=dict(params or {}), diagnostics=dict(diag or {}))


def solve_milp(instance, scenarios: int = 1000, seed: int = 0, time_limit: float = 60.0,
               gap: float = 1e-4, threads: int = 1, formulation: str = "fast",
               write_lp: str | None = None, backend: str = "highs", verbose: bool = False) -> SolveResult:
    """Solve the SAA of problem (2)–(6) exactly (see the module docstring).

    Parameters
    ----------
    instance : Instance
    scenarios : int, default 1000
        S, the in-sample scenarios of ``ScenarioSampler(instance, seed)``.
    seed : int, default 0
        Seed of the scenarios (and of HiGHS's random choices).
    time_limit : float, default 60
        Wall-clock seconds for everything (scenario drawing, bounds, build,
        solves).
    gap : float, default 1e-4
        Relative gap (UB − LB)/UB at which the plan is declared optimal.
    threads : int, default 1
        HiGHS threads.
    formulation : {"fast", "naive"}
    write_lp : str, optional
        Write the first master model to this file (``.lp`` or ``.mps``).
    backend : {"highs", "pyomo"}
        How the fast formulation reaches HiGHS: matrices straight to highspy,
        or the same matrices as a Pyomo model through ``appsi_highs``. The
        naive formulation is always a Pyomo model.
    verbose : bool
        Show the HiGHS log.

    Returns
    -------
    SolveResult
        ``status`` is ``optimal`` (gap met), ``time_limit`` (with the best plan
        found, or none, and the bound), ``feasible`` (a plan whose optimality
        the cut loop could not prove for a reason other than time, said in
        ``message``), ``infeasible`` (``message`` says why) or ``error``. ``cost`` is the exact real-x cost of ``plan``;
        ``diagnostics`` holds nodes, build_s, solve_s, rounds, in-sample
        violations, n_vars, n_cons and the structural bounds.

    Raises
    ------
    SolverError
        Only for invalid options (naming the option); never for an instance.

    Notes
    -----
    The Pyomo routes cannot pass a MIP start to HiGHS; the incumbent from the
    block heuristic still bounds the search (it is kept by the cut loop and
    enters the gap), so results agree, only node counts differ.
    """
    _check_options(scenarios, seed, time_limit, gap, threads, formulation, write_lp, backend)
    params = {"scenarios": int(scenarios), "seed": int(seed), "time_limit": float(time_limit),
              "gap": float(gap), "threads": int(threads), "formulation": formulation,
              "write_lp": write_lp, "backend": backend}
    t0 = time.perf_counter()
    deadline = t0 + float(time_limit)
    diag: dict = {"formulation": formulation, "backend": backend if formulation == "fast" else "pyomo",
                  "exactness": "real-x cost via exact λ cuts of the convex F(N); plan costed with allocate()"}
    if instance.n_datasets > MAX_DATASETS:
        return _result("error", f"datasets: {instance.n_datasets} datasets exceed the exact MILP's limit of "
                       f"{MAX_DATASETS} (each cluster's dataset subset is enumerated)", params=params, diag=diag)
    try:
        data = _Data(instance, scenarios, seed)
        diag.update(scenarios=data.S_nominal, deterministic=data.deterministic,
                    allowed_violations=allowed_violations(instance.omega, data.S_nominal),
                    data_classes=data.Sig)
        t_data = time.perf_counter()
        # The incumbent heuristic is skipped where the count model applies
        # (it is solved at once) and otherwise gets a tenth of the time.
        budget = 0.0 if (formulation == "fast" and _order_invariant(data)) else min(3.0, 0.1 * float(time_limit))
        bounds = _structural_bounds(data, deadline, tight=(formulation != "naive"), bigm=False,
                                    heuristic_budget=budget)
        if bounds.infeasible:
            diag["build_s"] = time.perf_counter() - t0
            return _result("infeasible", bounds.infeasible, params=params, diag=diag)
        diag.update(k_min=bounds.k_min, k_max=bounds.k_max,
                    heuristic_cost=bounds.incumbent.cost if bounds.incumbent is not None else None)
        timing = {"scenarios": t_data - t0, **bounds.seconds}
        model = None
        if formulation == "fast" and _order_invariant(data):
            t1 = time.perf_counter()
            model = _CountModel(data, bounds)
            timing["matrix"] = time.perf_counter() - t1
            diag["variant"] = "counts"
        if formulation == "fast" and model is None and data.Sig == 1:
            model = _try_enumeration(data, bounds, deadline, diag, timing)
            if isinstance(model, SolveResult):
                model.params.update(params)
                return model
        if formulation in ("fast", "flow") and model is None:
            diag["variant"] = "flow"
            t1 = time.perf_counter()
            inc = bounds.incumbent
            bounds.bigm = _tight_bigm(data, bounds.k_min, bounds.k_max, inc.cost if inc is not None else None,
                                      bounds.lam if inc is not None else None)
            timing["bigm"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            model = _FastModel(data, bounds)
            timing["matrix"] = time.perf_counter() - t1
            diag.update(bigm_mean=float(bounds.bigm.mean()), bigm_max=float(bounds.bigm.max()),
                        hard_scenario_rows=int(np.count_nonzero(bounds.bigm <= 0)))
        t1 = time.perf_counter()
        if formulation in ("fast", "flow"):
            if backend == "highs":
                be = _HighsBackend(model.mm, threads, seed, verbose)
            else:
                pm, xs = _pyomo_from_matrix(model.mm)
                be = _PyomoBackend(pm, xs, threads, seed, verbose)
            diag.update(n_vars=model.mm.ncol, n_cons=model.mm.nrow, n_nonzeros=int(model.mm.A.nnz))
            best = bounds.incumbent
        else:
            diag["variant"] = "naive"
            model = _NaiveModel(data, data.lam_reference(max(bounds.k_min, 1)))
            be = _PyomoBackend(model.model, model.xvars, threads, seed, verbose)
            diag.update(n_vars=len(model.xvars), n_cons=be.n_rows,
                        bigm_mean=float(model.bigm.mean()), bigm_max=float(model.bigm.max()))
            best = None
        timing["solver_model"] = time.perf_counter() - t1
        if write_lp:
            try:
                be.write(write_lp)
            except Exception as exc:  # noqa: BLE001 - an unwritable file is the user's input
                raise SolverError(f"write_lp: cannot write {write_lp!r} ({exc})") from None
        diag["build_s"] = time.perf_counter() - t0
        diag["build_breakdown_s"] = {k: round(v, 4) for k, v in timing.items()}
        return _cut_loop(data, model, be, best, gap, deadline, params, diag, t0)
    except SolverError:
        raise
    except MemoryError:
        return _result("error", f"out of memory building the MILP (S = {scenarios}, K̄ = {instance.horizon}); "
                       "use fewer scenarios", params=params, diag=diag)


def _try_enumeration(data: _Data, bounds: _Bounds, deadline: float, diag: dict, timing: dict):
    """The enumeration model when the switch graph is acyclic and small enough.

    Returns an :class:`_EnumModel`, None (use the flow formulation) or an
    ``infeasible`` :class:`SolveResult` when no sequence meets the quantile.
    """
    paths = _dag_paths(data.inst.allowed)
    if paths is None or _enumeration_size(paths, bounds.k_max) > MAX_CANDIDATES:
        return None
    t1 = time.perf_counter()
    found = _enumerate_candidates(data, bounds.k_min, bounds.k_max, paths, deadline)
    timing["enumerate"] = time.perf_counter() - t1
    if found is None:
        return None
    seqs, counts = found
    inc = bounds.incumbent
    if inc is not None and not any(np.array_equal(s, inc.models) for s in seqs):
        # keep the incumbent as a candidate so it can warm-start HiGHS
        seqs = seqs + [inc.models.copy()]
        counts = np.vstack([counts, np.bincount(inc.models, minlength=data.M)[None, :]])
    diag.update(variant="enumeration", candidates=len(seqs))
    if not seqs:
        diag["build_s"] = sum(timing.values())
        return _result("infeasible", (
            f"no model sequence of at most {bounds.k_max} epochs (the most that Tmax = {data.T:g} allows) "
            f"meets the quantile: each leaves more than {data.p} of {data.S} in-sample scenarios above "
            f"ℓmax = {data.lmax:g}"), diag=diag)
    t1 = time.perf_counter()
    model = _EnumModel(data, bounds, seqs, counts)
    timing["matrix"] = time.perf_counter() - t1
    return model


def _cut_loop(data: _Data, model, be, best, gap, deadline, params, diag, t0) -> SolveResult:
    """Solve the master, re-cost its plan exactly, add the exact cut, repeat."""
    t_solve = time.perf_counter()
    lower = -math.inf
    nodes = iters = rounds = cuts = 0
    status, message = "time_limit", ""
    theta = model.theta
    while True:
        rounds += 1
        if best is not None:
            start = model.solution_from_choice(best)
            if start is not None:
                be.set_start(start)
        left = deadline - time.perf_counter()
        if left <= 0:
            message = "time limit reached before the master was solved"
            break
        out = be.solve(left, gap * 0.5)
        nodes += out.nodes
        iters += out.lp_iterations
        if out.status == "error":
            diag.update(nodes=nodes, lp_iterations=iters, rounds=rounds)
            return _result("error", out.message, data, best, lower, params, diag)
        if out.status == "infeasible":
            if best is None:
                status = "infeasible"
                message = (f"no plan of at most K̄ = {data.K} epochs meets both the quantile (at most "
                           f"{data.p} of {data.S} in-sample scenarios above ℓmax = {data.lmax:g}) and "
                           f"Tmax = {data.T:g}")
            else:
                # The master contains the incumbent, so this is numerical
                # trouble: the incumbent stands, its optimality is unproven.
                status, message = "feasible", "the master was reported infeasible around the incumbent"
            break
        lower = max(lower, out.bound)
        added = False
        if out.x is not None:
            ch = model.choice_from_solution(out.x)
            if ch is not None and ch.feasible_time:
                if ch.violations <= data.p and (best is None or ch.cost < best.cost):
                    best = ch
                if ch.alloc.cost > out.x[theta] * (1 + 1e-9) + 1e-9 and ch.alloc.time_price > 0:
                    be.add_cut(*model.cut_row(ch.alloc.time_price))
                    model.extra_lams = [*model.extra_lams, ch.alloc.time_price]
                    cuts += 1
                    added = True
        if best is not None:
            g = SolveResult.relative_gap(best.cost, min(lower, best.cost))
            if g is not None and g <= gap:
                status = "optimal"
                message = f"optimal within relative gap {g:.2e} (tolerance {gap:g})"
                break
        if out.status == "time_limit":
            message = "time limit reached"
            break
        if not added or rounds >= MAX_ROUNDS:
            # Not a time limit: a plan whose optimality the cut loop could
            # not prove is "feasible"; no plan at all is an error.
            if best is not None:
                status = "feasible"
                message = "the master's solution could not be confirmed (in-sample recount or round limit)"
            else:
                status, message = "error", "the master found no plan"
            break
    diag.update(nodes=nodes, lp_iterations=iters, iterations=iters, rounds=rounds, cuts_added=cuts,
                solve_s=time.perf_counter() - t_solve, total_s=time.perf_counter() - t0)
    if best is not None:
        diag["in_sample_violations"] = int(best.violations) * (data.S_nominal if data.deterministic else 1)
        diag["epochs"] = int(best.models.size)
    if status == "infeasible":
        return _result("infeasible", message, params=params, diag=diag)
    return _result(status, message, data, best, lower if math.isfinite(lower) else None, params, diag)


__all__ = ["solve_milp", "FORMULATIONS", "BACKENDS", "MAX_DATASETS"]
