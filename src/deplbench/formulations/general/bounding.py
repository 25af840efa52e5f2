"""The bounding phase of a ``general`` solve: first incumbent, multiplier pool, root bounds.

One job: before the search, :func:`seed_phase` sets the λ and μ scales
from a median configuration's closed form, enumerates every plan of ≤ 3
blocks of the all-cluster configuration exactly (``incumbent.seed_root``)
and fills the scenario-group multiplier pool by Kelley's method
(``groups.GroupPool``, items 4 and 6 of the :mod:`.solver` docstring);
:func:`bound_roots` then bounds every class assignment (few: each a leaf,
``classes.assignment_bounds``) or every root box, so that a stop still
leaves a finite lower bound for what was not explored. Every bound set here
is valid for any λ ≥ 0 and any multipliers (proofs in ``groups`` and
``classes``); the choices only make them strong.

References
----------
DepL paper eqs. (2)–(6); J. Luedtke, Math. Prog. 146 (2014) 219–244;
W. Xie, S. Ahmed, Math. Prog. 172 (2018) 621–646.
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.general.boxes import Box, box_config, horizon_cap, root_boxes
from deplbench.formulations.general.classes import (
    assignment_bounds,
    dominated_assignments,
    leaf_assignments,
    seed_assignment,
)
from deplbench.formulations.general.groups import GroupPool
from deplbench.formulations.general.incumbent import seed_root
from deplbench.formulations.general.pair_groups import PairGroups
from deplbench.formulations.general.search import BlockSearch, Config
from deplbench.formulations.general.state import SolveRun


def seed_phase(run: SolveRun) -> None:
    """λ and μ scales, the first incumbent (short plans) and the scenario-group pool.

    Parameters
    ----------
    run : SolveRun
        The solve after setup; updated in place (``lam``, ``est_cost``,
        ``leaves``, ``pool_cfg``, ``leaf_list``, ``pool``, ``diag``).

    Notes
    -----
    The starting λ and cost scale are only heuristics: every λ ≥ 0 and every
    multiplier vector give valid bounds (package docstring, λ-duality).
    """
    P, inst, tables = run.prob, run.inst, run.tables
    lists = tables.lists
    # λ and μ scales before any incumbent: a median configuration's closed form
    root_cfg = box_config(Box([(0, len(lists[n])) for n in range(inst.n_clusters)]), tables)
    tm = P.tmin(root_cfg)
    k_est = max(1.0, min(P.K, P.T / max(float(tm.min()), 1e-12)) / 2)
    root = float(np.median(np.sqrt(P.c_m[:, None] * root_cfg.volume[None, :] * P.kap[root_cfg.clusters][None, :])))
    slack = max(P.T - k_est * float(np.median(P.comm)), 1e-3 * P.T)
    run.lam = max((k_est * root / slack) ** 2, 1e-12)
    run.est_cost = k_est ** 2 * root ** 2 / slack
    is_leaf = bool(root_cfg.classes) and all(c is not None for c in root_cfg.classes)
    # the data rule (6) decides whether the all-cluster configuration holds plans at all:
    # under the printed rule it does not, and its plans must not seed the incumbent
    if is_leaf and P.allows(root_cfg):
        # every plan of ≤ 3 blocks, exactly (incumbent.py): an early incumbent and its time price
        run.diag["incumbent_seed"] = seed_root(P, root_cfg, run.leaves, run.lam, run.tol, horizon_cap)
        if run.leaves.best is not None and run.leaves.best_price > 0:
            run.lam, run.est_cost = run.leaves.best_price, run.leaves.best_cost
    if run.out_of_time("bounding"):
        return
    # few class assignments: each becomes a leaf (classes.py), and the pool is tuned on
    # a real single-cluster assignment (the optimistic root corner is no class at all)
    run.pool_cfg = root_cfg
    run.leaf_list = (leaf_assignments(inst, lists, run.opts.assignment_limit)
                     if run.opts.class_leaves and run.S > 1 else None)
    seed_cls = seed_assignment(P, tables) if run.leaf_list is not None else None
    if seed_cls is not None and run.leaves.best is None:
        n0, c0, run.est_cost, run.lam = seed_cls
        run.pool_cfg = Config(np.array([n0]), [c0], tables.gam[[c0]], tables.vol[[c0]], np.array([tables.beta[c0, n0]]))
    if run.S > 1:
        _fill_pool(run, is_leaf)


def _fill_pool(run: SolveRun, is_leaf: bool) -> None:
    """The scenario-group bound (groups.py): one pool of multipliers for every
    search, filled by ``root_kelley_iterations`` Kelley iterations per group."""
    P, cfg = run.prob, run.pool_cfg
    assert cfg is not None      # set by seed_phase just before
    k_root = horizon_cap(P, P.weights(cfg, run.lam), P.tmin(cfg), -run.lam * P.T, run.leaves.best_cost)
    if k_root < 1:
        return
    s_root = BlockSearch(P, cfg, run.lam, k_root, run.est_cost / P.loss_span)
    run.pool = GroupPool(P, np.argsort(-s_root.scenario_root_bounds(), kind="stable"))
    run.pool.extend(s_root, iters=run.opts.root_kelley_iterations)
    if cfg.classes and all(c is not None for c in cfg.classes) and P.allows(cfg):
        for seq in run.pool.feasible_columns(s_root, run.pool.columns):
            run.leaves.evaluate(s_root, seq, run.tol)


def bound_roots(run: SolveRun) -> None:
    """Bound every assignment (few: each a leaf) or every root box before the search,
    so that a stop still leaves a finite lower bound for what was not explored.

    Parameters
    ----------
    run : SolveRun
        The solve after :func:`seed_phase`; its heap receives one open item
        per assignment or root box, and ``searched`` is set once all are bounded.
    """
    P = run.prob
    if run.pool is None or not run.pool.complete:
        run.leaf_list = None
    if run.leaf_list is not None:
        bounds = assignment_bounds(P, run.pool, run.lam, run.leaf_list, run.tables)
        # +inf: no epoch of this assignment fits Tmax
        open_ = [(tuple(rng), rb) for rng, rb in zip(run.leaf_list, bounds) if rb < math.inf]
        # an assignment whose plans are all plans of a larger one with free transfers is not searched
        dominated = dominated_assignments(P, [rng for rng, _ in open_], run.tables)
        for rng, rb in open_:
            if rng not in dominated:
                run.push(rb, Box(rng))
        run.diag["assignments"] = len(run.leaf_list)
        run.diag["dominated_assignments"] = len(dominated)
    else:
        for box in root_boxes(run.inst, run.tables.lists, relax=P.nonneg):
            _, search = run.box_search(box, math.inf)
            run.push(search.root_bound() if search is not None else math.inf, box)
    if run.out_of_time("bounding"):
        return
    run.searched = True
    # neighbouring two-cluster assignments bounded together (pair_groups.PairGroups)
    if run.opts.pair_search and run.opts.pair_groups and run.leaf_list is not None and P.nonneg:
        run.pair_groups = PairGroups(P, run.pool, run.tables)


__all__ = ["bound_roots", "seed_phase"]
