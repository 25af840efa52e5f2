"""Exact leaves of the ``general`` search: the cluster split of a complete plan.

A complete plan from :class:`~.search.BlockSearch` fixes the model
and the γ-group of every epoch; inside a group the clusters are
interchangeable for the loss but not for the cost. :class:`Leaves` chooses
the split by local search with exact ``allocate`` calls (a feasible real-x
plan and an upper bound), bounds it below by the λ-dual of the continuous
split (eqs. (2), (4), (5); package docstring "Exactness contract"), and
enumerates every integer split when the two differ by more than the
tolerance. It keeps the incumbent.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from deplbench.formulations.general.search import BlockSearch, Config, Problem
from deplbench.formulations.model.allocation import allocate


class Leaves:
    """Exact evaluation of complete plans; keeps the incumbent."""

    def __init__(self, prob: Problem, instance):
        self.prob, self.inst = prob, instance
        self.best_cost = math.inf
        self.best: tuple[Any, ...] | None = None          # (models, clusters, classes per cluster, alloc)
        self.best_price = 0.0
        self.cache: dict = {}
        self.evaluations = 0

    def _exact(self, models, clusters, cfg: Config, pos_of):
        P = self.prob
        pos = np.array([pos_of[int(n)] for n in clusters])
        c = P.c_m[models] * cfg.volume[pos]
        alloc = allocate(c, P.comm[models, clusters], P.kap[clusters], P.cap[clusters], P.T)
        used = np.unique(pos)
        beta = float(cfg.beta[used].sum())
        transfer = beta * (models.size if P.per_epoch else 1)
        cost = alloc.cost + transfer if alloc.feasible else math.inf
        return cost, alloc

    def evaluate(self, search: BlockSearch, vseq: np.ndarray, tol: float):
        """(lower bound, exact cost) of the best cluster split of ``vseq``."""
        P, cfg = self.prob, search.cfg
        if not P.allows(cfg):
            # not a plan at all under the data rule (6): no cost, and +inf bounds it validly
            return math.inf, math.inf
        counts = np.bincount(vseq, minlength=search.nv)
        key = (tuple(cfg.clusters.tolist()), tuple(cfg.classes), tuple(counts.tolist()), tuple(vseq.tolist()))
        if key in self.cache:
            return self.cache[key]
        self.evaluations += 1
        models = search.vm[vseq]
        groups = search.vg[vseq]
        pos_of = {int(n): i for i, n in enumerate(cfg.clusters)}
        # start: every epoch on its group's cheapest cluster at the search's λ
        w = P.weights(cfg, search.lam)
        members = [np.array(cfg.groups[g]) for g in range(len(cfg.groups))]
        pos = np.array([members[g][int(np.argmin(w[m, members[g]]))] for m, g in zip(models, groups)])
        clusters = cfg.clusters[pos]
        cost, alloc = self._exact(models, clusters, cfg, pos_of)
        multi = [g for g in range(len(members)) if members[g].size > 1 and np.any(groups == g)]
        if multi:
            cost, clusters, alloc = self._local_search(models, groups, clusters, members, cfg, pos_of, cost, alloc)
            lb = self._dual_bound(models, groups, members, cfg, alloc)
            # the exact split only matters when the leaf could still beat the incumbent:
            # otherwise its bound lb already discards it (and the local search's plan is real)
            could_win = not math.isfinite(self.best_cost) or lb < self.best_cost * (1 - tol)
            if could_win and (lb < cost * (1 - tol) and math.isfinite(cost) or not math.isfinite(cost)):
                ex = self._enumerate_splits(models, groups, members, cfg, pos_of)
                if ex is not None:
                    cost, clusters, alloc = ex
                    lb = cost
        else:
            lb = cost
        if cost < self.best_cost:
            self.best_cost = cost
            used = sorted(set(int(n) for n in clusters))
            self.best = (models.copy(), clusters.copy(), {n: cfg.classes[pos_of[n]] for n in used}, alloc)
            self.best_price = float(alloc.time_price)
        self.cache[key] = (lb, cost)
        return lb, cost

    def counts_bound(self, search: BlockSearch, vseq: np.ndarray) -> float:
        """Lower bound on the cost of the epoch counts of ``vseq`` in any order and any
        cluster split of its γ-groups (the λ-dual of ``_dual_bound``); does not touch
        the incumbent (``pairs`` uses it for leaves it could not realise)."""
        members = [np.array(g) for g in search.cfg.groups]
        return self._dual_bound(search.vm[vseq], search.vg[vseq], members, search.cfg,
                                SimpleNamespace(time_price=search.lam))

    def _local_search(self, models, groups, clusters, members, cfg, pos_of, cost, alloc):
        """Move single epochs between clusters of a group while the exact cost falls."""
        clusters = clusters.copy()
        improved = True
        while improved:
            improved = False
            best: tuple[float, Any] = (cost, None)
            for m in np.unique(models):
                for g in np.unique(groups[models == m]):
                    mem = members[g]
                    if mem.size < 2:
                        continue
                    idx = np.nonzero((models == m) & (groups == g))[0]
                    for src in np.unique(clusters[idx]):
                        e = idx[clusters[idx] == src][-1]
                        for dst in cfg.clusters[mem]:
                            if dst == src:
                                continue
                            trial = clusters.copy()
                            trial[e] = dst
                            c2, a2 = self._exact(models, trial, cfg, pos_of)
                            if c2 < best[0] * (1 - 1e-12):
                                best = (c2, (trial, a2))
            if best[1] is not None:
                cost = best[0]
                clusters, alloc = best[1]
                improved = True
        return cost, clusters, alloc

    def _dual_bound(self, models, groups, members, cfg, alloc) -> float:
        """max_λ Σ_epochs min_{n in group} g(λ) − λT + transfer (continuous split)."""
        P = self.prob
        pairs, counts = np.unique(np.stack([models, groups], axis=1), axis=0, return_counts=True)
        tm = P.tmin(cfg)
        if sum(cnt * min(tm[m, i] for i in members[g]) for (m, g), cnt in zip(pairs, counts)) > P.T * (1 + 1e-12):
            return math.inf
        # β of the clusters the plan must use: the single-member groups it uses
        must = [int(members[g][0]) for g in np.unique(groups) if members[g].size == 1]
        beta = float(cfg.beta[must].sum()) if must else 0.0
        transfer_lb = beta * (models.size if P.per_epoch else 1)

        def h(lam):
            w = P.weights(cfg, lam)
            if P.per_epoch:
                w = w - float(cfg.beta.sum())
            return float(sum(cnt * w[m, members[g]].min() for (m, g), cnt in zip(pairs, counts))) - lam * P.T

        lam0 = alloc.time_price if getattr(alloc, "time_price", 0) > 0 else 1.0
        lo, hi = math.log(lam0) - 8.0, math.log(lam0) + 8.0
        gr = (math.sqrt(5) - 1) / 2
        a, b = lo, hi
        x1, x2 = b - gr * (b - a), a + gr * (b - a)
        f1, f2 = h(math.exp(x1)), h(math.exp(x2))
        best = max(f1, f2, h(lam0))
        for _ in range(80):
            if f1 < f2:
                a, x1, f1 = x1, x2, f2
                x2 = a + gr * (b - a)
                f2 = h(math.exp(x2))
            else:
                b, x2, f2 = x2, x1, f1
                x1 = b - gr * (b - a)
                f1 = h(math.exp(x1))
            best = max(best, f1, f2)
        return best + transfer_lb

    def _enumerate_splits(self, models, groups, members, cfg, pos_of):
        """Every integer split of each (model, group) count over the group's clusters."""
        pairs = [(int(m), int(g)) for m, g in sorted(set(zip(models.tolist(), groups.tolist())))]
        choices = []
        total = 1
        for m, g in pairs:
            mem = cfg.clusters[members[g]]
            cnt = int(np.count_nonzero((models == m) & (groups == g)))
            opts = [c for c in itertools.product(range(cnt + 1), repeat=mem.size - 1) if sum(c) <= cnt]
            total *= len(opts)
            choices.append((m, g, mem, cnt, opts))
        if total > self.prob.settings.max_splits:
            return None
        best: tuple[float, Any, Any] = (math.inf, None, None)
        for combo in itertools.product(*[c[4] for c in choices]):
            clusters = np.empty(models.size, dtype=int)
            for (m, g, mem, cnt, _), split in zip(choices, combo):
                idx = np.nonzero((models == m) & (groups == g))[0]
                sizes = list(split) + [cnt - sum(split)]
                clusters[idx] = np.repeat(mem, sizes)
            c, a = self._exact(models, clusters, cfg, pos_of)
            if c < best[0]:
                best = (c, clusters, a)
        return best if best[1] is not None else None


__all__ = ["Leaves"]
