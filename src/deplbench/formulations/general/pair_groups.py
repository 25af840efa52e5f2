"""Neighbouring two-cluster class assignments bounded together (the ``general`` formulation).

See :class:`PairGroups`. The corner relaxation is the box bound of
``boxes`` (largest γ, smallest volume, smallest transfer cost of the
block); the search that bounds it is :class:`~.pairs.PairSearch` in
``bound_only`` mode.

References
----------
DepL paper eqs. (2)–(6); ``general`` module docstring, item 1.
"""

from __future__ import annotations

import math
import time

from deplbench.formulations.general.pairs import PairSearch
from deplbench.formulations.general.search import prunable


class PairGroups:
    """Bound neighbouring two-cluster assignments together before searching them one by one.

    Assignments that share one cluster's class and hold neighbouring classes
    (in the γ order of ``boxes.cluster_classes``) on the other are
    relaxed by their box corner (largest γ, smallest volume and transfer of
    the block, ``boxes._config``): with non-negative draws every
    plan of every assignment in the block is matched by a corner plan of no
    more loss and no more cost, so a :class:`PairSearch` of the corner in
    ``bound_only`` mode that finishes with a bound at the incumbent discards
    the whole block. Aligned blocks of ``sizes`` classes are tried, largest
    first, each at most once and within ``node_limit`` search nodes (a
    corner that needs more is left to the single searches); a corner whose
    root bound is more than ``GeneralSettings.corner_root_gap`` below the
    incumbent is not searched at all. Only strength and speed depend on the
    blocks; validity does not.
    """

    def __init__(self, prob, pool, tables, sizes=(8, 4), node_limit: int = 150):
        self.prob, self.pool = prob, pool
        self.tables = tables        # boxes.ClusterTables
        self.sizes, self.node_limit = tuple(sizes), int(node_limit)
        self.tried: set = set()
        self.discarded: list = []      # group boxes' ranges whose every assignment is discarded
        self.stats = {"tried": 0, "pruned": 0, "skipped": 0, "seconds": 0.0}

    def covers(self, ranges) -> bool:
        """Whether the assignment ``ranges`` lies in a discarded group."""
        return any(all((r is None and g is None) or (r is not None and g is not None and g[0] <= r[0] and r[1] <= g[1])
                       for r, g in zip(ranges, grp)) for grp in self.discarded)

    def try_discard(self, ranges, lam: float, ub: float, tol: float, mu_ref: float):
        """Bound the blocks around the leaf ``ranges``; returns the bound of a discarded
        block (the leaf is in it) or None."""
        from deplbench.formulations.general.boxes import Box, box_config, horizon_cap
        from deplbench.formulations.general.groups import GroupTables

        P = self.prob
        used = [n for n, r in enumerate(ranges) if r is not None]
        if len(used) != 2 or not math.isfinite(ub):
            return None
        n = used[-1]
        i = ranges[n][0]
        for g in self.sizes:
            lo = (i // g) * g
            hi = min(lo + g, len(self.tables.lists[n]))
            if hi - lo <= 1:
                continue
            parts = list(ranges)
            parts[n] = (lo, hi)
            grp = tuple(parts)
            if grp in self.tried:
                continue
            self.tried.add(grp)
            cfg = box_config(Box(grp), self.tables)
            if len(cfg.groups) != 2:
                continue
            t0 = time.perf_counter()
            const = P.dual_constant(cfg, lam)
            kmax = horizon_cap(P, P.weights(cfg, lam), P.tmin(cfg), const, ub)
            if kmax < 1:
                lb = ub     # no epoch fits below the incumbent
                timeout = False
            else:
                search = PairSearch(P, cfg, lam, kmax, mu_ref)
                search.groups = GroupTables(self.pool, search)
                if ub - search.root_bound() > P.settings.corner_root_gap * abs(ub):
                    # a corner this far below the incumbent at its root is seldom closed within
                    # the node budget, so searching it spends nodes that tighten no bound
                    self.stats["skipped"] += 1
                    continue
                st = search.run(ub, tol, None, nodes_left=self.node_limit, bound_only=True)
                # a search that ran to its end left the bound of every plan of the corner
                # below the incumbent in st.lb (+inf: the relaxation has no plan at all, so
                # neither has the block); aborted: a leaf below the incumbent, the block stays
                lb, timeout = st.lb, st.timeout or st.aborted
            self.stats["tried"] += 1
            self.stats["seconds"] += time.perf_counter() - t0
            if not timeout and prunable(lb, ub, tol):
                self.discarded.append(grp)
                self.stats["pruned"] += 1
                return lb
        return None


__all__ = ["PairGroups"]
