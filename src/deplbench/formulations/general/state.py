"""The state of one ``general`` solve: what its phases (setup, bounding, search, result) share.

One job: :class:`SolveRun` carries the problem, the data classes, the
incumbent, the open boxes and the work counters of one call of
:func:`~.solver.solve_general` between its phases, and holds the rules
they all apply: the wall-clock stop, the multiplier scale μ_ref, the
λ-reset of item 3 of the :mod:`.solver` docstring (every λ ≥ 0 gives
valid bounds; a λ near the optimum's time price gives strong ones) and the
search of one box. Nothing here proves a bound; the proofs are in the
modules that build the searches (``search``, ``pairs``, ``groups``).

References
----------
DepL paper eqs. (2)–(6); the λ-duality of the package docstring.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from deplbench import limits
from deplbench.formulations.general.boxes import Box, ClusterTables, box_config, horizon_cap
from deplbench.formulations.general.groups import GroupPool, GroupTables
from deplbench.formulations.general.leaves import Leaves
from deplbench.formulations.general.pair_groups import PairGroups
from deplbench.formulations.general.pairs import PairSearch, pair_applies
from deplbench.formulations.general.search import BlockSearch, Config, Problem
from deplbench.formulations.general.settings import GeneralSettings
from deplbench.instances.model import Instance


@dataclass
class SolveRun:
    """Everything one solve carries between its phases."""

    inst: Instance
    prob: Problem
    opts: GeneralSettings
    params: dict
    diag: dict
    t0: float
    nodes_budget: float
    tol: float
    S: int
    deterministic: bool
    bits: np.ndarray
    tables: ClusterTables
    leaves: Leaves
    lam: float = 1.0
    est_cost: float = 1.0
    lam_resets: int = 0
    pool: GroupPool | None = None
    pool_cfg: Config | None = None
    leaf_list: list | None = None
    pair_groups: PairGroups | None = None
    heap: list = field(default_factory=list)
    dive: list = field(default_factory=list)
    counter: itertools.count = field(default_factory=itertools.count)
    probed: set = field(default_factory=set)
    lb_discard: float = math.inf
    stopped_in: str | None = None     # the phase the time or node limit stopped
    hit_node_limit: bool = False
    searched: bool = False            # the root boxes/leaves were all bounded
    verbose: bool = False             # progress to stderr
    work: dict = field(default_factory=lambda: dict(nodes=0, leaves=0, boxes=0, unrealised_leaves=0,
                                                    pair_searches=0, unplaceable_cells=0, tuned_rows=0))

    def out_of_time(self, phase: str) -> bool:
        """The outer wall-clock stop: True (and the phase recorded) once the limit has passed."""
        if limits.expired():
            self.stopped_in = self.stopped_in or phase
            return True
        return False

    def mu_ref(self, ub: float | None = None) -> float:
        """The scale of the scenario multipliers: a cost per unit of loss above ℓmax."""
        ub = self.leaves.best_cost if ub is None else ub
        return (ub if math.isfinite(ub) else self.est_cost) / self.prob.loss_span

    def push(self, bound: float, box: Box) -> None:
        heapq.heappush(self.heap, (float(bound), next(self.counter), box))

    def reset_due(self, lam: float | None = None) -> bool:
        """The one λ-reset rule: the incumbent's time price differs from λ by more than
        the factor 1 + ``lambda_reset`` and re-sets are left (every λ ≥ 0 gives valid
        bounds; a λ near the optimum's price gives strong ones, module docstring item 3)."""
        price, lam = self.leaves.best_price, self.lam if lam is None else lam
        return (price > 0 and self.lam_resets < self.opts.max_lambda_resets
                and abs(math.log(price / lam)) > math.log1p(self.opts.lambda_reset))

    def reset_lambda(self) -> None:
        """λ ← the incumbent's time price; new multipliers tuned to it join the pool."""
        self.lam = self.leaves.best_price
        self.lam_resets += 1
        iters = self.opts.refresh_kelley_iterations
        if self.pool is None or iters == 0:
            return
        P, cfg = self.prob, self.pool_cfg
        assert cfg is not None      # seed_phase sets pool_cfg before any pool exists
        kr = horizon_cap(P, P.weights(cfg, self.lam), P.tmin(cfg), -self.lam * P.T, self.leaves.best_cost)
        if kr >= 1:
            self.pool.extend(BlockSearch(P, cfg, self.lam, kr, self.mu_ref()), iters=iters)

    def make_search(self, cfg: Config, kmax: int):
        """The search of one configuration: model blocks with counts for two γ-groups
        (pairs.py), else blocks; with the pool's group tables once it is filled."""
        kind = (PairSearch if self.opts.pair_search and pair_applies(self.prob, cfg) else BlockSearch)
        search = kind(self.prob, cfg, self.lam, kmax, self.mu_ref())
        if self.pool is not None and self.pool.complete:
            search.groups = GroupTables(self.pool, search)
        return search

    def box_search(self, box: Box, ub: float):
        """(configuration, search or None when no epoch fits below ``ub``) of a box."""
        cfg = box_config(box, self.tables)
        P = self.prob
        kmax = horizon_cap(P, P.weights(cfg, self.lam), P.tmin(cfg), P.dual_constant(cfg, self.lam), ub)
        return cfg, (self.make_search(cfg, kmax) if kmax >= 1 else None)


__all__ = ["SolveRun"]
