"""Block branch-and-bound for one data assignment (the ``general`` formulation's core).

For a fixed choice of which clusters train and which data class each holds,
a plan is a sequence of *blocks*: maximal runs of one virtual model
v = (model m, γ-group g), where a γ-group gathers the used clusters whose
data classes have the same learning multiplier γ (the loss cannot tell them
apart, only the cost can, so the cluster of each epoch inside a group is
chosen at the leaves). The search branches on the next block's virtual
model and length and prunes with the bound of :class:`BlockSearch`.

Bounds (see the ``general`` module docstring for the derivation):

* cost: for any λ ≥ 0 the real-x cost satisfies F(N) ≥ Σ_j g_j(λ) N_j − λ
  Tmax (the Lagrangian dual of the time budget, eqs. (2), (4)), so a prefix
  carries the linear weight W = Σ_k w_{v_k}(λ) with w_v the cheapest
  cluster's g_j(λ) in the group;
* quantile: a completion must leave at most p scenarios above ℓmax, hence
  costs at least the (p+1)-th largest of the per-scenario minima cb_s; each
  cb_s is bounded below by the Lagrangian relaxation of the single scenario
  row, max_μ [V^μ_s(k, v) + μ (L_s − ℓmax)], with V^μ a backward min-plus DP
  over the epoch × virtual-model graph (Luedtke 2014's single-scenario
  subproblems; the order statistic is the quantile bound of Xie & Ahmed 2018);
* the same over p + 1 scenario *groups* with one completion per group
  (``groups.py``, attached as ``BlockSearch.groups``): usually the
  strongest, computed first, and the others are skipped where it prunes.
  A child's bound is at least its parent's (its completions are a subset).
* when every plan of fewer than ``min_blocks`` blocks of the assignment was
  evaluated exactly beforehand (``incumbent.cover``), the search
  skips those leaves and the group bound counts only completions with
  enough switches to reach ``min_blocks`` blocks (``groups``, item 3
  of the proof); the per-scenario and mean bounds still count every
  completion (valid, weaker). They are then skipped by default
  (``GeneralSettings.scenario_bounds_when_covered``): at S = 1000 they cost a third of the
  node time and pruned nothing the counting bound did not (289 against 283
  nodes on the cyclic AlexNet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from deplbench import limits
from deplbench.formulations.general.minplus import as_lower_bound, largest_decrease
from deplbench.formulations.general.node_groups import combined_bound, node_tuner, tune_children
from deplbench.formulations.general.settings import GeneralSettings
from deplbench.formulations.model.scenarios import loss_threshold

#: Multipliers μ of the single-scenario Lagrangian bound, relative to μ_ref.
MU_FACTORS = np.concatenate([[0.0], 1.3 ** np.arange(-8, 9)])


def phi(lam: float, c: np.ndarray, kappa: np.ndarray, r: np.ndarray) -> np.ndarray:
    """min_{0<x≤r} κx + λc/x elementwise (the per-epoch Lagrangian cost)."""
    c, kappa, r = np.broadcast_arrays(np.asarray(c, float), np.asarray(kappa, float), np.asarray(r, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(kappa > 0, np.sqrt(lam * c / np.where(kappa > 0, kappa, 1.0)), np.inf)
    return np.where(x <= r, 2.0 * np.sqrt(lam * c * kappa), kappa * r + lam * c / r)


@dataclass
class Config:
    """One data assignment: used clusters, their class parameters, the γ-groups.

    ``gamma``, ``volume``, ``beta`` and ``classes`` are per used cluster
    (``clusters``); for a relaxed box they are the box's optimistic values.
    """

    clusters: np.ndarray          # used cluster indices
    classes: list                 # class index per used cluster (None for a relaxed box)
    gamma: np.ndarray
    volume: np.ndarray
    beta: np.ndarray              # one-time transfer per used cluster
    groups: list = field(default_factory=list)   # lists of positions into ``clusters``

    def __post_init__(self):
        if not self.groups:
            order = np.argsort(-self.gamma, kind="stable")
            groups: list = []
            for i in order:
                if groups and self.gamma[groups[-1][0]] == self.gamma[i]:
                    groups[-1].append(int(i))
                else:
                    groups.append([int(i)])
            self.groups = groups


class Problem:
    """Scenario data and instance arrays every search shares."""

    def __init__(self, instance, a: np.ndarray, J: np.ndarray, p: int, settings: GeneralSettings | None = None):
        inst = self.inst = instance
        #: switches, tuning constants and work budgets of this solve (settings)
        self.settings = settings if settings is not None else GeneralSettings()
        self.a = a                      # (S, K̄, M): improvement at γ = 1
        self.J = J                      # (S, K̄, P)
        self.S, self.K, self.M = a.shape
        self.p = int(p)
        self.cumA = np.concatenate([np.zeros((self.S, 1, self.M)), np.cumsum(a, axis=1)], axis=1)
        self.l0 = float(inst.initial_loss)
        self.lmax = float(inst.loss_max)
        self.T = float(inst.time_max)
        self.nonneg = bool(np.all(a >= 0))
        self.allowed = inst.allowed
        self.switch_index = inst.switch_index
        self.c_m = inst.model_compute
        self.comm = inst.model_size[:, None] / inst.bandwidth[None, :]     # (M, N)
        self.kap = inst.unit_cost
        self.cap = inst.capacity
        self.per_epoch = inst.transfer_cost_mode == "per_epoch"
        #: eq. (6) as printed: a cluster holding data trains in every epoch, so a plan
        #: trains on one cluster only (docs/DESIGN.md, the two readings of eq. (6))
        self.single_cluster = inst.data_rule == "printed"
        #: configurations (``config_key``) whose plans of fewer than N blocks were all
        #: evaluated exactly (``incumbent.cover``): key -> N
        self.covered: dict = {}
        self.covered_beta: dict = {}  # their per-cluster transfer costs β (covered_blocks)
        self.tried: set = set()       # configurations the enumeration ran on
        self.cover_log: list = []     # its diagnostics, one dict per run
        self.cover_spent = 0          # work units all enumeration runs took (settings.enumeration_steps_total)

    @property
    def loss_span(self) -> float:
        """ℓ0 − ℓmax, the loss every plan must remove (eq. (3)), floored at 1e-12 to divide by.

        The scale of the scenario multipliers μ is a cost per unit of loss
        above ℓmax: a cost divided by this span (``BlockSearch`` ``mu_ref``).
        """
        return max(self.l0 - self.lmax, 1e-12)

    def allows(self, cfg: Config) -> bool:
        """Whether the data rule (6) allows plans training on every cluster of ``cfg``.

        Under the printed rule only single-cluster configurations hold plans;
        every search, seed and coverage record must ask this before it takes a
        plan of ``cfg`` as feasible (a multi-cluster seed would give an
        infeasible, too cheap incumbent that prunes the true optimum).
        """
        return not self.single_cluster or int(np.asarray(cfg.clusters).size) <= 1

    def weights(self, cfg: Config, lam: float) -> np.ndarray:
        """g_j(λ) per (model, used cluster): shape (M, U)."""
        n = cfg.clusters
        c = self.c_m[:, None] * cfg.volume[None, :]
        w = phi(lam, c, self.kap[n][None, :], self.cap[n][None, :]) + lam * self.comm[:, n]
        if self.per_epoch:
            # the printed eq. (2) pays every holder's β in every epoch
            w = w + float(cfg.beta.sum())
        return w

    def dual_constant(self, cfg: Config, lam: float) -> float:
        """The constant of the λ-dual cost bound F(N) ≥ Σ_j g_j(λ) N_j + this:
        −λ·Tmax plus the one-time transfers of the assignment's clusters (under
        the printed per-epoch eq. (2) they are in the weights instead)."""
        return -float(lam) * self.T + (0.0 if self.per_epoch else float(cfg.beta.sum()))

    def tmin(self, cfg: Config) -> np.ndarray:
        """Fastest epoch time per (model, used cluster)."""
        n = cfg.clusters
        return self.c_m[:, None] * cfg.volume[None, :] / self.cap[n][None, :] + self.comm[:, n]

    def losses(self, models: np.ndarray, gammas: np.ndarray) -> np.ndarray:
        """ℓ_s(K) of a model sequence with per-epoch γ (checked independently of the search)."""
        k = np.arange(models.size)
        loss = self.l0 - (gammas[None, :] * self.a[:, k, models]).sum(axis=1)
        for e in range(1, models.size):
            if models[e] != models[e - 1]:
                loss = loss + self.J[:, e, self.switch_index[(int(models[e - 1]), int(models[e]))]]
        return loss


def config_key(cfg: Config) -> tuple:
    """Identity of a data assignment (used clusters and their classes)."""
    return tuple(int(n) for n in cfg.clusters), tuple(cfg.classes)


def covered_blocks(prob, cfg: Config) -> int:
    """N such that every plan of fewer than N blocks of ``cfg`` was evaluated exactly (1: none).

    An assignment whose clusters are a subset of a covered one's, each with
    the same class, is covered too when the clusters it leaves out have no
    transfer cost (β = 0): its plans are then that assignment's plans with
    the other clusters idle, same virtual-model sequences, and the covered
    run's cost bounds (which charge the β of every cluster of its
    assignment) hold for them. With β > 0 on a left-out cluster those bounds
    may exceed such a plan's cost, so it is not covered.
    """
    key = config_key(cfg)
    if key in prob.covered:
        return int(prob.covered[key])
    if any(c is None for c in cfg.classes):
        return 1
    mine = dict(zip(*key))
    best = 1
    for (clusters, classes), n in prob.covered.items():
        theirs = dict(zip(clusters, classes))
        beta = dict(zip(clusters, prob.covered_beta.get((clusters, classes), ())))
        if (all(theirs.get(c, -1) == k for c, k in mine.items())
                and all(beta.get(c, 1.0) == 0.0 for c in clusters if c not in mine)):
            best = max(best, int(n))
    return best


def prunable(bound: float, ub: float, tol: float) -> bool:
    """A subtree with this bound cannot beat the incumbent by more than tol."""
    if math.isinf(ub):
        return bound == math.inf
    return bound >= ub - tol * abs(ub)


@dataclass
class SearchStats:
    """What one depth-first search did and proved (both searches, :func:`depth_first`).

    ``lb``: the smallest bound of every discarded node, leaf and cell (the
    search's lower bound is min(incumbent, lb)); ``ub``: the best leaf cost it
    saw; ``timeout``: a limit stopped it (then ``lb`` includes the open nodes),
    ``node_limit``: that limit was the node budget; ``aborted``: the caller
    asked for a restart (another λ), or a bound-only corner search
    (``pairs.PairSearch``) met a leaf below the incumbent and can no longer
    discard its block; ``unrealised``/``dead``: two-group leaves
    that kept only their bound / cells proved to have no feasible order.
    """

    nodes: int = 0
    leaves: int = 0
    lb: float = math.inf
    ub: float = math.inf
    timeout: bool = False
    node_limit: bool = False
    aborted: bool = False
    unrealised: int = 0
    dead: int = 0

    def discard(self, bound: float) -> None:
        """Record the bound of a discarded node, leaf or cell."""
        if bound < self.lb:
            self.lb = float(bound)

    def threshold(self, prune_tol: float) -> float:
        """Bounds at or above this cannot beat the incumbent by more than the tolerance."""
        return self.ub - prune_tol * abs(self.ub) if math.isfinite(self.ub) else math.inf


def stopped(stats: SearchStats, stack: list, nodes_left: float) -> bool:
    """The time limit (:mod:`deplbench.limits`) or the node budget stops a depth-first search: mark ``stats``
    (``timeout``, ``node_limit``) and fold the open nodes' bounds (first item of
    each stack entry) into ``stats.lb``. Returns whether it stopped."""
    if not limits.expired() and stats.nodes < nodes_left:
        return False
    stats.timeout = True
    stats.node_limit = stats.nodes >= nodes_left
    stats.lb = min([stats.lb] + [b for b, *_ in stack])
    return True


def depth_first(root, expand, ub: float, prune_tol: float,
                nodes_left: float = math.inf) -> SearchStats:
    """The depth-first driver of both searches (blocks and model blocks).

    ``root``: the root node, a tuple whose first item is its bound;
    ``expand(node, stats) -> children`` evaluates the node's leaves (updating
    ``stats.ub``, ``stats.lb``) and returns its children (tuples, bound
    first); it sets ``stats.aborted`` to stop. A node whose bound cannot beat
    the incumbent is discarded with its bound; children are explored best
    bound first. Every plan is the incumbent, a leaf whose bound entered
    ``lb``, or below a discarded node: min(incumbent, ``lb``) is a valid bound
    when the search ran to its end (not after ``timeout``, where ``lb``
    includes the open nodes, nor after ``aborted``, where it does not).
    """
    stats = SearchStats(ub=ub)
    stack = [root]
    while stack:
        if stopped(stats, stack, nodes_left):
            return stats
        node = stack.pop()
        if prunable(node[0], stats.ub, prune_tol):
            stats.discard(node[0])
            continue
        stats.nodes += 1
        children = expand(node, stats)
        if stats.aborted:
            return stats
        children.sort(key=lambda c: -c[0])        # best bound popped first
        stack.extend(children)
    return stats


def order_invariant(P: Problem) -> bool:
    """True when every scenario's loss depends on the epoch counts only (every
    switch allowed, zero jumps, run terms independent of the epoch index: the
    knapsack family)."""
    complete = bool(np.all(P.allowed))
    return complete and bool(np.all(P.a == P.a[:, :1, :])) and (P.J.size == 0 or not np.any(P.J))


class BlockSearch:
    """Depth-first block branch-and-bound for one :class:`Config` at one λ.

    Parameters
    ----------
    prob : Problem
    cfg : Config
    lam : float
        The time price of the linear cost weights (any λ ≥ 0 gives valid bounds).
    kmax : int
        Largest number of epochs any plan worth finding can have.
    """

    def __init__(self, prob: Problem, cfg: Config, lam: float, kmax: int, mu_ref: float):
        self.prob, self.cfg, self.lam = prob, cfg, float(lam)
        P = prob
        w_mu = P.weights(cfg, lam)                                   # (M, U)
        G = len(cfg.groups)
        self.vm = np.repeat(np.arange(P.M), G)                       # virtual model -> model
        self.vg = np.tile(np.arange(G), P.M)                         # virtual model -> group
        self.vgamma = np.array([cfg.gamma[cfg.groups[g][0]] for g in self.vg])
        self.w = np.array([min(w_mu[m, i] for i in cfg.groups[g]) for m, g in zip(self.vm, self.vg)])
        tm = P.tmin(cfg)
        self.vtmin = np.array([min(tm[m, i] for i in cfg.groups[g]) for m, g in zip(self.vm, self.vg)])
        self.nv = self.vm.size
        self.const = P.dual_constant(cfg, self.lam)
        self.kmax = int(min(kmax, P.K))
        # successors: same model other group (no jump), or an allowed switch (jump p)
        self.order_invariant = order_invariant(P)
        self.succ = []
        for v in range(self.nv):
            out = []
            for u in range(self.nv):
                if u == v or (self.order_invariant and u < v):
                    # order-invariant loss: any permutation of a plan has the same loss,
                    # cost and time, so blocks in increasing virtual-model order suffice
                    continue
                mv, mu_ = int(self.vm[v]), int(self.vm[u])
                if mv == mu_:
                    out.append((u, -1))
                elif P.allowed[mv, mu_]:
                    out.append((u, P.switch_index[(mv, mu_)]))
            self.succ.append(out)
        self.mu_ref = float(mu_ref)
        self.mus = float(mu_ref) * MU_FACTORS
        self.abort = False
        self.groups: Any = None     # a groups.GroupTables, attached by the caller
        # plans with fewer blocks than this were evaluated exactly beforehand
        # (incumbent.cover): the bounds may skip them, the search skips their leaves
        self.min_blocks = covered_blocks(prob, cfg)
        self._tables: tuple[Any, ...] | None = None     # the per-scenario DP tables, built on first use
        self.node_groups: Any = None    # node_groups.NodeGroups, built by run() when the pool is attached

    # ------------------------------------------------------------------ bound
    def jump_index(self) -> np.ndarray:
        """(nv, nv) column of the jump of v → u in an extended jump array:
        0..P−1 a switch, P for "no jump" (staying, or another group of the same
        model), P+1 for "not allowed" (+∞)."""
        P = self.prob
        npair = P.J.shape[2]
        idx = np.full((self.nv, self.nv), npair + 1)
        for v in range(self.nv):
            idx[v, v] = npair
            for u, p in self.succ[v]:
                idx[v, u] = npair if p < 0 else p
        return idx

    def _table(self) -> None:
        """Backward DPs over (epoch, virtual model), all scenarios and μ at once.

        V^μ_s(k, v) (kmax+1, nμ, S, nv): min over completions (stopping
        included) of weight − μ·(loss decrease) in scenario s; Vm (kmax+1, nμ,
        nv): the same on the scenario-average draws; U and Dn (kmax+1, S, nv):
        the largest and the smallest loss change any completion can make.
        """
        P, mus = self.prob, self.mus
        S, nv, K = P.S, self.nv, self.kmax
        jidx = self.jump_index()
        abar = P.a.mean(axis=0)                                              # (K̄, M)
        V = np.zeros((K + 1, mus.size, S, nv))
        Vm = np.zeros((K + 1, mus.size, nv))
        U = np.zeros((K + 1, S, nv))
        tail = np.array([[0.0, np.inf]])
        for k in range(K - 1, -1, -1):
            Jx = np.concatenate([P.J[:, k, :], np.broadcast_to(tail, (S, 2))], axis=1)   # (S, P+2)
            Jv = Jx[:, jidx]                                                 # (S, nv_from, nv_to)
            Jm = Jv.mean(axis=0)                                             # (nv, nv); +∞ where forbidden
            Jm_fin = np.where(np.isfinite(Jm), Jm, 0.0)
            Jv_fin = np.where(np.isfinite(Jv), Jv, 0.0)
            gain = self.vgamma[None, :] * P.a[:, k, self.vm]                 # (S, nv)
            with np.errstate(over="ignore", invalid="ignore"):              # μ near the float max
                enter = self.w[None, None, :] - mus[:, None, None] * gain[None, :, :] + V[k + 1]   # (nμ, S, nv_to)
                full = as_lower_bound(enter[:, :, None, :] + mus[:, None, None, None] * Jv_fin[None])
                em = self.w[None, :] - mus[:, None] * (self.vgamma * abar[k, self.vm])[None, :] + Vm[k + 1]
                fm = as_lower_bound(em[:, None, :] + mus[:, None, None] * Jm_fin[None])
            full = np.where(np.isfinite(Jv)[None], full, np.inf)            # forbidden switches
            V[k] = np.minimum(full.min(axis=3), 0.0)
            fm = np.where(np.isfinite(Jm)[None], fm, np.inf)
            Vm[k] = np.minimum(fm.min(axis=2), 0.0)
            up = np.where(np.isfinite(Jv), (-gain + U[k + 1])[:, None, :] + Jv_fin, -np.inf)
            U[k] = np.maximum(up.max(axis=2), 0.0)
        self._tables = (V, Vm, U, largest_decrease(self))

    # the per-scenario tables cost (kmax+1)·nμ·S·nv² work: built only when a
    # bound needs them (a box the group bound prunes never builds them)
    def _built(self, i: int):
        if self._tables is None:
            self._table()
        return cast(tuple, self._tables)[i]

    V = property(lambda self: self._built(0))
    Vm = property(lambda self: self._built(1))
    U = property(lambda self: self._built(2))
    Dn = property(lambda self: self._built(3))

    def completion_bound(self, k: np.ndarray, v: int, L: np.ndarray, skip=None, need: int = 0,
                         tuned=()) -> np.ndarray:
        """Lower bound on the linear weight of any completion, per candidate.

        ``k`` (C,) epochs done, ``L`` (S, C) losses; returns (C,). The
        bound is the largest of the scenario-group bound (``groups``),
        the per-scenario bound and the mean bound; ``skip(bound) -> bool mask``
        marks candidates the group bound already prunes (the others are not
        computed for them: any valid bound is enough to prune). ``need``: the
        group bound counts only completions with at least that many switches
        (the others are covered plans, ``min_blocks``); the per-scenario and
        mean bounds count all completions, so they stay valid. ``tuned``: multipliers
        re-tuned at ancestor nodes (``node_groups``), maxed into the group bound.
        """
        P = self.prob
        out = np.zeros(k.size)
        todo = np.arange(k.size)
        if self.groups is not None:
            out = combined_bound(self, k, v, L, need, tuned, skip)
            if skip is not None:
                todo = np.nonzero(~skip(out))[0]
        if self.groups is not None and self.min_blocks > 1 and not P.settings.scenario_bounds_when_covered:
            todo = todo[:0]
        if todo.size:
            kt, Lt = k[todo], L[:, todo]
            Vk = self.V[kt, :, :, v]                                            # (C, nμ, S)
            with np.errstate(over="ignore", invalid="ignore"):
                cb = as_lower_bound(Vk + self.mus[None, :, None] * (Lt.T[:, None, :] - P.lmax)).max(axis=1)
            np.maximum(cb, 0.0, out=cb)
            q = np.partition(cb, P.S - P.p - 1, axis=1)[:, P.S - P.p - 1]     # the (p+1)-th largest
            out[todo] = np.maximum(out[todo], np.maximum(q, self.mean_bound(kt, v, Lt)))
        return self.mark_unreachable(out, k, v, L, skip)

    def mark_unreachable(self, out: np.ndarray, k: np.ndarray, v: int, L: np.ndarray, skip) -> np.ndarray:
        """``out``, +∞ where over p scenarios cannot reach ℓmax (μ → ∞, the min-plus DP ``Dn``);
        candidates ``skip(out)`` already prunes are not tested (any valid bound prunes them)."""
        idx = np.arange(k.size) if skip is None else np.nonzero(~skip(out))[0]
        unreachable = np.count_nonzero(L[:, idx].T + self.Dn[k[idx], :, v] > loss_threshold(self.prob.lmax), axis=1)
        out[idx[unreachable > self.prob.p]] = math.inf
        return out

    def mean_bound(self, k: np.ndarray, v: int, L: np.ndarray) -> np.ndarray:
        """Bound from the satisfied scenarios' average (one DP on mean draws).

        A completion c satisfying a set T of S − p scenarios has
        Σ_T (L_s + Δ_s(c) − ℓmax) ≤ 0, Σ_T Δ_s(c) ≥ S·Δ̄(c) − Σ_{top p} U_s
        (U_s ≥ Δ_s(c) for every completion) and Σ_T (L_s − ℓmax) ≥ the sum of
        the S − p smallest; Lagrange with μ/(S − p) and minimise over c.
        """
        P = self.prob
        S, p = P.S, P.p
        n = S - p
        Ls = np.sort(L, axis=0)                                              # (S, C)
        low = (Ls[:n] - P.lmax).sum(axis=0)                                  # (C,)
        Uk = self.U[k, :, v]                                                 # (C, S)
        topU = np.sort(Uk, axis=1)[:, S - p:].sum(axis=1) if p else np.zeros(k.size)
        Vm = self.Vm[k, :, v]                                                # (C, nμ)
        # Vm(μ) = min_c weight(c) + μ Δ̄(c): the multiplier of the averaged row is μ/S
        with np.errstate(over="ignore", invalid="ignore"):
            val = as_lower_bound(Vm + (self.mus[None, :] / S) * (low[:, None] - topU[:, None]))
        return np.maximum(val.max(axis=1), 0.0)

    def scenario_root_bounds(self) -> np.ndarray:
        """cb_s at the root: the per-scenario completion bound of the empty plan (S,)."""
        P = self.prob
        # enter v at epoch 0 from the empty plan: w_v − μγ a + V[1]
        with np.errstate(over="ignore", invalid="ignore"):
            enter = (self.w[None, None, :] - self.mus[:, None, None] * (self.vgamma[None, :] * P.a[:, 0, self.vm])[None]
                     + self.V[1])                                            # (nμ, S, nv)
            cbv = as_lower_bound(enter.min(axis=2) + self.mus[:, None] * (P.l0 - P.lmax))
        return np.maximum(cbv.max(axis=0), 0.0)

    def root_bound(self, cutoff: float = math.inf) -> float:
        """Bound on every plan of this configuration (the first block is free).

        When the group bound alone reaches ``cutoff`` it is returned without
        building the per-scenario tables (any valid bound that prunes will do).
        """
        P = self.prob
        if self.kmax < 1:
            return math.inf
        need = max(0, self.min_blocks - 1)
        if self.groups is not None:
            gb = self.groups.root(need) + self.const
            if gb >= cutoff:
                return gb
        cb = self.scenario_root_bounds()
        q = cb.max() if P.p == 0 else np.partition(cb, P.S - P.p - 1)[P.S - P.p - 1]
        if self.groups is not None:
            q = max(float(q), self.groups.root(need))
        best = float(q) + self.const
        first = (-(self.vgamma[None, :] * P.a[:, 0, self.vm]) + self.Dn[1]).min(axis=1) + P.l0
        if np.count_nonzero(first > loss_threshold(P.lmax)) > P.p:
            return math.inf
        return best

    # ----------------------------------------------------------------- search
    def pool_values(self, k: np.ndarray, v, need: int = 0) -> np.ndarray:
        """V^π of every pool row over the completions from (k, v) the group bound counts (C, R)."""
        return self.groups.values(k, v, need)

    def _node_virtual(self, last: int) -> int:
        """The virtual model a node's completion bound is read at (its last block's)."""
        return int(last)

    def run(self, ub: float, prune_tol: float, on_leaf,
            nodes_left: float = math.inf) -> SearchStats:
        """Depth-first search (:func:`depth_first`); ``on_leaf(seq) -> (lb, ub_or_inf)`` evaluates plans."""
        P = self.prob

        def cut(bound, stats):
            return prunable(bound, stats.ub, prune_tol)

        tuner = node_tuner(self)

        def expand(node, stats):
            bound, k, v, L, W, seq, tuned = node
            children: list[Any] = []
            succ = [(u, -1) for u in range(self.nv)] if v < 0 else self.succ[v]
            maxlen = self.kmax - k
            if maxlen <= 0:
                return children
            lens = np.arange(1, maxlen + 1)
            for u, p in succ:
                m = int(self.vm[u])
                pre = L + P.J[:, k, p] if p >= 0 else L
                gain = self.vgamma[u] * (P.cumA[:, k + 1:k + maxlen + 1, m] - P.cumA[:, k, m][:, None])
                losses = pre[:, None] - gain                                  # (S, maxlen)
                viol = np.count_nonzero(losses > loss_threshold(P.lmax), axis=0)
                ok = viol <= P.p
                Wl = W + lens * self.w[u]
                first = int(np.argmax(ok)) if ok.any() else -1
                if P.nonneg:
                    leaf_idx = [first] if first >= 0 else []
                    inner = np.arange(0, (first if first >= 0 else maxlen))
                else:
                    leaf_idx = list(np.nonzero(ok)[0])
                    inner = np.arange(0, maxlen)
                inner = inner[inner < maxlen - 1]            # a further block must fit
                if len(seq) + 1 < self.min_blocks:
                    # a plan of fewer than min_blocks blocks: evaluated beforehand (its cost is
                    # at least the incumbent's, incumbent.cover), nothing to record
                    leaf_idx = []
                for i in leaf_idx:
                    lb_leaf = Wl[i] + self.const
                    if cut(lb_leaf, stats):
                        stats.discard(lb_leaf)
                        continue
                    stats.leaves += 1
                    full = seq + ((u, int(lens[i])),)
                    vseq = np.concatenate([np.full(n, vv) for vv, n in full])
                    lb_exact, ub_new = on_leaf(vseq)
                    stats.discard(lb_exact)  # min(ub, ·) is taken by the caller
                    stats.ub = min(stats.ub, ub_new)
                    if self.abort:      # the caller wants to restart with another λ
                        stats.aborted = True
                        return []
                if inner.size:
                    base = Wl[inner] + self.const
                    cbs = self.completion_bound(k + lens[inner], u, losses[:, inner],
                                                skip=lambda b, base=base: base + b >= stats.threshold(prune_tol),
                                                need=max(0, self.min_blocks - len(seq) - 1), tuned=tuned)
                    # a child's completions are its parent's: the parent's bound holds too
                    bounds = np.maximum(Wl[inner] + cbs + self.const, bound)
                    thr = stats.threshold(prune_tol)
                    pruned = bounds >= thr
                    if pruned.any():
                        stats.discard(float(bounds[pruned].min()))
                    for i, b in zip(inner[~pruned], bounds[~pruned]):
                        children.append((float(b), k + int(lens[i]), u, losses[:, i].copy(), float(Wl[i]),
                                         seq + ((u, int(lens[i])),), tuned))
            if tuner is not None and children:
                children = tune_children(self, children, stats.threshold(prune_tol),
                                         max(0, self.min_blocks - len(seq) - 1), stats.discard)
            return children

        root = (self.root_bound(), 0, -1, np.full(P.S, P.l0), 0.0, (), ())
        return depth_first(root, expand, ub, prune_tol, nodes_left)
