"""Class assignments of the ``general`` formulation: Pareto classes, boxes, their configurations.

One job: the objects :mod:`.solver` searches over before any plan is
built. Each cluster keeps the Pareto set of its data classes (subsets of
datasets, by usefulness γ, volume V and transfer cost β; module docstring of
:mod:`.solver`, item 1); a *box* is a range of class indices per cluster, a
leaf box one class per training cluster; :func:`box_config` turns a box into
the optimistic :class:`~.search.Config` that relaxes every
assignment inside it, and :func:`horizon_cap` caps a search's horizon by Tmax and
by the incumbent's cost (λ-duality, eq. (2) with (4)).

References
----------
DepL paper eqs. (1)–(6); the data law of the instance format (docs/DESIGN.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from deplbench.formulations.general.search import Config, Problem


def cluster_classes(instance, nonneg: bool):
    """Per cluster, the candidate data classes sorted by γ (descending).

    Returns (subsets (C, D) bool, volume (C,), gamma (C,), per-cluster lists
    of class indices). With non-negative draws, classes dominated in
    (γ ↑, V ↓, β(·, n) ↓) are dropped; identical ones are merged always.
    """
    D = instance.n_datasets
    masks = np.arange(1, 2 ** D)
    bits = ((masks[:, None] >> np.arange(D)) & 1).astype(bool)
    names = [d.name for d in instance.datasets]
    # the data law through the instance itself (datalaw.py), one call per subset
    vg = np.array([instance.data_effect([names[d] for d in np.nonzero(b)[0]]) for b in bits])
    vol, gam = vg[:, 0], vg[:, 1]
    beta = bits.astype(float) @ instance.transfer_matrix          # (C, N)
    keep_per_cluster = []
    for n in range(instance.n_clusters):
        b = beta[:, n]
        key = np.stack([gam, vol, b], axis=1)
        _, first = np.unique(key, axis=0, return_index=True)
        cand = np.sort(first)
        if nonneg:
            g, v, bb = gam[cand], vol[cand], b[cand]
            dom = np.zeros(cand.size, dtype=bool)
            for lo in range(0, cand.size, 512):
                sl = slice(lo, lo + 512)
                ge = (g[None, :] >= g[sl, None]) & (v[None, :] <= v[sl, None]) & (bb[None, :] <= bb[sl, None])
                st = (g[None, :] > g[sl, None]) | (v[None, :] < v[sl, None]) | (bb[None, :] < bb[sl, None])
                dom[sl] = (ge & st).any(axis=1)
            cand = cand[~dom]
        order = np.lexsort((vol[cand], -gam[cand]))
        keep_per_cluster.append(cand[order])
    return bits, vol, gam, beta, keep_per_cluster


@dataclass(frozen=True, eq=False)
class ClusterTables:
    """The data classes of one instance, built once from :func:`cluster_classes`.

    Attributes
    ----------
    lists : list of numpy.ndarray
        Per cluster, its candidate class indices sorted by γ (descending).
    vol : numpy.ndarray, shape (C,)
        Volume V(σ) of every class (every non-empty dataset subset).
    gam : numpy.ndarray, shape (C,)
        Usefulness γ(σ) of every class.
    beta : numpy.ndarray, shape (C, N)
        Transfer cost β(σ, n) of every class to every cluster.
    """

    lists: list
    vol: np.ndarray
    gam: np.ndarray
    beta: np.ndarray


# =============================================================================
# Assignments: best-first search over boxes of classes
# =============================================================================


class Box:
    """Per cluster: None (does not train) or a range [lo, hi) of its class list."""

    __slots__ = ("ranges",)

    def __init__(self, ranges):
        self.ranges = tuple(ranges)

    def is_leaf(self) -> bool:
        return all(r is None or r[1] - r[0] == 1 for r in self.ranges)

    def split(self):
        n = max((i for i, r in enumerate(self.ranges) if r is not None),
                key=lambda i: self.ranges[i][1] - self.ranges[i][0])
        lo, hi = self.ranges[n]
        mid = (lo + hi) // 2
        left = list(self.ranges)
        right = list(self.ranges)
        left[n], right[n] = (lo, mid), (mid, hi)
        return Box(left), Box(right)


def box_config(box: Box, tables: ClusterTables) -> Config:
    """The box's optimistic configuration (exact for a leaf box)."""
    lists, vol, gam, beta = tables.lists, tables.vol, tables.gam, tables.beta
    used = [n for n, r in enumerate(box.ranges) if r is not None]
    g, v, b, cls = [], [], [], []
    for n in used:
        lo, hi = box.ranges[n]
        idx = lists[n][lo:hi]
        g.append(gam[idx].max())
        v.append(vol[idx].min())
        b.append(beta[idx, n].min())
        cls.append(int(idx[0]) if hi - lo == 1 else None)
    return Config(np.array(used), cls, np.array(g), np.array(v), np.array(b))


def cluster_sets(instance, lists):
    """The sets of training clusters an assignment may use: every non-empty
    set (one cluster under the printed rule (6)), without clusters that have
    no candidate class."""
    N = instance.n_clusters
    sizes = [1] if instance.data_rule == "printed" else range(1, N + 1)
    for r in sizes:
        for used in itertools.combinations(range(N), r):
            if all(len(lists[n]) for n in used):
                yield used


def leaf_ranges(instance, lists):
    """Every class assignment as per-cluster ranges ((i, i+1), or None for a
    cluster that does not train), in the order of :func:`cluster_sets`."""
    N = instance.n_clusters
    for used in cluster_sets(instance, lists):
        for pick in itertools.product(*[range(len(lists[n])) for n in used]):
            ranges: list[tuple[int, int] | None] = [None] * N
            for n, i in zip(used, pick):
                ranges[n] = (i, i + 1)
            yield tuple(ranges)


def root_boxes(instance, lists, relax: bool):
    """One box per set of training clusters (one cluster under the printed
    rule (6)); without ``relax`` (signed draws: a larger γ is not uniformly
    better) every assignment is its own box."""
    N = instance.n_clusters
    if not relax:
        return [Box(list(ranges)) for ranges in leaf_ranges(instance, lists)]
    return [Box([(0, len(lists[n])) if n in used else None for n in range(N)])
            for used in cluster_sets(instance, lists)]


def horizon_cap(prob: Problem, search_w: np.ndarray, vtmin: np.ndarray, const: float, ub: float) -> int:
    k = prob.K
    fastest = float(vtmin.min())
    if fastest > 0:
        k = min(k, int(math.floor(prob.T / fastest * (1 + 1e-12) + 1e-9)))
    wmin = float(search_w.min())
    if math.isfinite(ub) and wmin > 0:
        k = min(k, int(math.floor((ub - const) / wmin * (1 + 1e-9) + 1e-9)))
    return max(k, 0)


__all__ = ["Box", "ClusterTables", "box_config", "cluster_classes", "cluster_sets", "horizon_cap", "leaf_ranges",
           "root_boxes"]
