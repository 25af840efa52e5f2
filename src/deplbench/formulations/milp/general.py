"""The ``general`` exact formulation: any switch graph, |D| ≤ 12, any clusters.

What is solved
--------------
The same SAA problem as every MILP formulation of this package (module
docstring of the package): minimise the real-x cost of eqs. (2), (4), (5)
over plans whose final loss exceeds ℓmax in at most p = ⌊(1−ω)S⌋ of the S
in-sample scenarios of ``ScenarioSampler(instance, seed).in_sample(S)``
(Luedtke & Ahmed 2008). The exactness contract is unchanged: the returned
plan is feasible with real allocations costed exactly by ``allocate``, the
returned bound is a valid lower bound, and status ``optimal`` means their
relative gap is at most ``gap``.

Why not a big-M MILP
--------------------
The chance constraint has random *technology* coefficients (every draw
multiplies a plan binary). The literature for finite-support chance
constraints strengthens the big-M rows: Luedtke, Ahmed & Nemhauser (2010,
Math. Prog. 122) with per-scenario quantile big-M values and the mixing/star
inequalities of the resulting mixing set, Küçükyavuz (2012, Math. Prog. 132)
with the full mixing-set hull, Luedtke (2014, Math. Prog. 146) with a
branch-and-cut *decomposition* whose cuts come from single-scenario
subproblems h_s(π) = min{πx : x ∈ X, scenario s holds}, and Xie & Ahmed
(2018, "On quantile cuts and their closure for chance constrained
optimization problems", Math. Prog. 172) with quantile cuts
πx ≥ (p+1)-th largest h_s(π). All of them tighten the link between the plan
x and the violation binaries; none removes the weakness measured on this
problem (package docstring, "Why the flow formulation is not enough"): the
LP relaxation *mixes* plans that use different models in the same epoch,
which averages independent noise, and with the violated scenarios of the
optimal plan fixed the LP is still 6 % below the optimum. We measured that
HiGHS needs 48–68 s per master even with only 20–26 scenario rows (lazy
scenario generation, 3 rounds) on the cyclic AlexNet instance at S = 100:
the flow polytope itself is the bottleneck, not the number or the big-M of
the scenario rows.

What we do instead
------------------
We keep Luedtke's ingredients but branch on *plans*, where they are exact:

1. **Data classes without per-cluster enumeration in a model.** A cluster's
   data enters the loss only through γ(σ) and the cost only through V(σ)
   and β(σ, n). With non-negative improvement draws a class with ≥ γ,
   ≤ V and ≤ β dominates, so each cluster keeps its Pareto set (vectorised
   over the 2^|D| subsets; 79 and 74 of 1023 on the two clusters of the
   |D| = 10 datasets instance).
   Assignments (which clusters train, which class each holds) are leaves
   of the search. While they are few (``general_classes.ASSIGNMENT_LIMIT``;
   5999 on that instance) every assignment is its own leaf, and all of them
   are bounded at once with their exact classes by one vectorised
   scenario-group DP (``general_classes.py``, proof there); the multiplier
   pool is tuned on a real single-cluster assignment rather than on the
   optimistic corner. Beyond the limit, a best-first branch-and-bound over
   *boxes* of classes: a box is bounded with its optimistic class (largest
   γ, smallest V, smallest β of the box), which relaxes every assignment
   inside it (``CLASS_LEAVES = False`` forces the boxes).
2. **Blocks.** For one assignment a plan is a sequence of blocks (maximal
   runs of one model on one γ-group of clusters). The search branches on
   the next block (virtual model and length); with non-negative
   improvements only the shortest SAA-feasible last block can be optimal
   (F grows with the counts), exactly as in the enumeration formulation.
   Cycles in the switch graph are just more successors.
3. **Cost bound by λ-duality** (package docstring): F(N) ≥ Σ_j g_j(λ) N_j
   − λ Tmax for every λ ≥ 0, so a prefix has a linear weight; λ is the time
   price of the incumbent (re-set when a better one appears).
4. **Quantile bounds from scenario groups** (``general_groups.py``). A
   completion must satisfy at least S − p scenarios. The scenarios are dealt
   into p + 1 disjoint groups; a completion satisfying every member of a
   group G costs at least max_π [V^π(k, v) + π·(L_G − ℓmax)], the
   Lagrangian (LP) bound of "one path satisfies all of G" — one backward
   min-plus DP per multiplier vector π over the epoch × virtual-model graph,
   on the π-aggregated draws. At most p groups hold a violated scenario, so
   the completion costs at least the (p+1)-th largest (here: the smallest)
   group bound (scenario grouping: Ahmed, Luedtke, Song & Xie 2017; Deng et
   al. 2021; the order statistic is Xie & Ahmed's quantile bound). The π
   pool is filled once by Kelley's method at the root and is valid for every
   node, assignment and λ; its DP paths are plans and seed the incumbent.
   Singleton groups give the per-scenario bound of Luedtke (2014)'s
   single-scenario subproblems, max_μ [V^μ_s(k, v) + μ (L_s − ℓmax)],
   which is kept (``general_search.py``) and maxed with the group bound;
   the proof is in ``general_groups``.
5. **Exact leaves.** A complete plan's cluster split inside a γ-group is
   chosen by local search with exact ``allocate`` calls (feasible real-x
   plan, upper bound) and bounded by the continuous split's λ-dual (lower
   bound); if they differ by more than the tolerance the split is
   enumerated exhaustively.
6. **Short plans enumerated, then only long ones bounded**
   (``general_incumbent.py``). Every SAA-feasible plan of at most 3 blocks
   of an assignment (cycles included) is found with the enumeration
   formulation's shortest-last-block rule and costed exactly; once that
   pass is complete the group bound counts switches (one more DP state) and
   bounds only completions with ≥ 3 switches. Without it the converged root
   group bound of the cyclic AlexNet (S = 1000) was 1609 against the optimum
   1802.6: its LP mixed cheap infeasible two-block plans with dear feasible
   three-block ones; with it, 1790.
7. **Two γ-groups: model blocks with counts, not interleavings**
   (``general_pairs.py``). With two γ-groups a block of item 2 is a run of
   one *model* with j epochs on the γ_hi group and ℓ − j on the γ_lo group,
   in an order left open: the cost depends on the counts only, and the
   loss of every order is, scenario by scenario, at least the one of the
   best order (the j largest draws on γ_hi: rearrangement inequality), so
   the bounds of items 3–4 hold at those optimistic losses. A completion
   after a block must switch model first, and when only one block of a
   terminal model can follow, its per-scenario exact cost is the bound. A
   relaxed leaf is turned into a plan by ``general_placement.realise``,
   which proves by an exact, pruned placement search when no order meets
   the quantile (the search then goes on above that cell); a leaf it can
   neither order nor refute keeps its bound, which enters the lower bound
   (``unrealised_leaves``). Neighbouring two-cluster assignments are first
   bounded together by their corner (``general_pair_groups.py``).
   ``PAIR_SEARCH = False`` / ``PAIR_GROUPS = False`` restore the
   interleaving search and the one-by-one leaves.

Every discarded node, leaf and box keeps its bound; the returned lower bound
is min(incumbent, smallest discarded bound) — valid because every plan lies
in exactly one discarded subtree or is the incumbent. No big-M constants
and no LP tolerances enter the proof: losses are compared with the same
1e-9 tolerance as ``Scenarios.violations``, and bounds are ordinary floating
point sums.

Where it is fast, and where it is not
-------------------------------------
Measured with ``python benchmarks/general_targets.py --time-limit 60`` (one
process, load 1.1–1.6 on the 2-core machine; README's measured-performance
table):

* cyclic AlexNet (``switches="any"``, K̄ = 100, ℓmax = 9, 2 clusters):
  S = 100 optimal in 1.05 s, S = 300 in 2.4 s (``flow``: 11.5 % gap at 60 s),
  S = 1000 in 8.8 s, S = 3000 3.1 % gap at 60 s (31 scenario groups; Kelley
  stops at its iteration cap within its time share, root bound 1780 against
  1835.7); ℓmax = 13, S = 1000: 3.8 s; K̄ = 20..60 at S = 300: 0.3–1.1 s;
* the |D| = 10, K̄ = 50 datasets instance (S = 200): optimal in 27.6 s
  (load 1.3→1.6), cost 1469.43 on two clusters (the best single-cluster plan
  costs 1475.61). Before item 7 it stopped at a 7.5 % gap at 60 s: the leaf
  group bound stays about 8 % below the optimum (path mixing), about 200
  two-cluster leaves lie below the incumbent, and the interleaving search
  needed 20–35 k nodes per such leaf (about 30 model-block nodes now;
  ``general_classes`` docstring);
* the cyclic tiny instances of ``tests/test_milp_general.py``: seconds.

Limits
------
Exact for every dimension; |D| ≤ 12 (the Pareto filter compares all subset
pairs), |N| ≤ 12 (every set of training clusters is a root box; no
cluster-dominance pruning, so ``fast`` keeps ``flow`` above 4 clusters). Signed improvement draws disable the γ-dominance and the
shortest-last-block rule (all lengths are kept, every assignment is its own
box). Memory: the DP tables hold (K̄+1)·18·S·|M|·(γ-groups) floats (≈ 130 MB
at K̄ = 100, S = 3000, |M| = 3).

References
----------
DepL paper eqs. (1)–(6); J. Luedtke, S. Ahmed, SIAM J. Optim. 19 (2008);
J. Luedtke, S. Ahmed, G. Nemhauser, Math. Prog. 122 (2010) 247–272;
S. Küçükyavuz, Math. Prog. 132 (2012) 31–56; J. Luedtke, Math. Prog. 146
(2014) 219–244; W. Xie, S. Ahmed, Math. Prog. 172 (2018) 621–646;
S. Ahmed, J. Luedtke, Y. Song, W. Xie, Math. Prog. 162 (2017) 51–81 (scenario
grouping); Y. Deng, H. Jia, S. Ahmed, J. Lee, S. Shen, INFORMS J. Comput. 33
(2021) 757–773.
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
import time

import numpy as np

from deplbench.errors import SolverError
from deplbench.limits import MEMORY_BUDGET_GIB
from deplbench.formulations.milp.general_boxes import _Box, _cluster_classes, _config, _kmax, _root_boxes
from deplbench.formulations.milp.general_classes import (assignment_bounds, leaf_assignments, rebound_leaves,
                                                         seed_assignment)
from deplbench.formulations.milp.general_groups import GroupPool, GroupTables
from deplbench.formulations.milp.general_incumbent import cover, seed_root
from deplbench.formulations.milp.general_leaves import Leaves
from deplbench.formulations.milp.general_pair_groups import PairGroups
from deplbench.formulations.milp.general_pairs import PairSearch, pair_applies
from deplbench.formulations.milp.general_search import (
    MU_FACTORS,
    BlockSearch,
    Config,
    Problem,
    prunable,
)
from deplbench.formulations.plan import Epoch, Plan
from deplbench.formulations.result import SolveResult
from deplbench.formulations.scenarios import ScenarioSampler, allowed_violations

#: Largest |D| (all 2^|D| − 1 subsets are compared pairwise per cluster).
MAX_DATASETS_GENERAL = 12
#: Largest |N| (the 2^|N| − 1 sets of training clusters are the root boxes).
MAX_CLUSTERS_GENERAL = 12
#: Re-set λ to the incumbent's time price when they differ by more than this.
LAMBDA_RESET = 0.02
#: Share of the time limit the root Kelley loops of the group pool may take.
POOL_SHARE = 0.3
#: Search every class assignment as its own leaf when they are few (general_classes.py);
#: False restores the box search over classes (kept for comparison and tests).
CLASS_LEAVES = True
#: Search assignments with two γ-groups over model blocks (general_pairs.py); False
#: restores the interleaving search (kept for comparison and tests).
PAIR_SEARCH = True
#: With PAIR_SEARCH: bound blocks of neighbouring two-cluster assignments by their
#: corner first (general_pair_groups.PairGroups); False searches every assignment alone.
PAIR_GROUPS = True
#: Memory (GiB) the bound tables may take: the suite's one budget (deplbench.limits).
MEMORY_LIMIT_GIB = MEMORY_BUDGET_GIB


def general_applies(instance) -> tuple[bool, str]:
    """Whether ``general`` can solve the instance (and why not)."""
    if instance.n_clusters > MAX_CLUSTERS_GENERAL:
        return False, (f"clusters: {instance.n_clusters} clusters exceed the general formulation's limit of "
                       f"{MAX_CLUSTERS_GENERAL} (every set of training clusters is a root box)")
    if instance.n_datasets > MAX_DATASETS_GENERAL:
        return False, (f"datasets: {instance.n_datasets} datasets exceed the general formulation's limit of "
                       f"{MAX_DATASETS_GENERAL}")
    return True, ""


def _check_options(scenarios, seed, time_limit, gap, threads, node_limit=None) -> None:
    if isinstance(scenarios, bool) or not isinstance(scenarios, (int, np.integer)) or scenarios < 1:
        raise SolverError(f"scenarios: must be a positive integer, got {scenarios!r}")
    if node_limit is not None and (isinstance(node_limit, bool) or not isinstance(node_limit, (int, np.integer))
                                   or node_limit < 1):
        raise SolverError(f"node_limit: must be a positive integer or None, got {node_limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SolverError(f"seed: must be a non-negative integer, got {seed!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not math.isfinite(time_limit) or time_limit <= 0):
        raise SolverError(f"time_limit: must be a positive number of seconds, got {time_limit!r}")
    if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not math.isfinite(gap) or not 0 < gap < 1:
        raise SolverError(f"gap: must be a relative gap in (0, 1), got {gap!r}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise SolverError(f"threads: must be a positive integer, got {threads!r}")


# =============================================================================
# Data classes
# =============================================================================


def solve_general(instance, scenarios: int = 1000, seed: int = 0, time_limit: float | None = 60.0,
                  gap: float = 1e-4, threads: int = 1, verbose: bool = False,
                  node_limit: int | None = None) -> SolveResult:
    """Solve the SAA of problem (2)–(6) exactly with the ``general`` formulation.

    Parameters
    ----------
    instance : Instance
    scenarios : int, default 1000
        S, the in-sample scenarios of ``ScenarioSampler(instance, seed)``.
    seed : int, default 0
        Seed of the scenarios.
    time_limit : float or None, default 60
        Wall-clock seconds for everything (scenarios, bounds, search); None
        for no limit.
    node_limit : int, optional
        Search nodes allowed (a budget independent of the machine's speed).
    gap : float, default 1e-4
        Relative gap (UB − LB)/UB at which the plan is declared optimal.
    threads : int, default 1
        Accepted for interface compatibility (the search is single-threaded).
    verbose : bool
        Print progress to stderr.

    Returns
    -------
    SolveResult
        ``optimal`` (gap met), ``time_limit`` (best plan and bound so far),
        ``feasible`` only when ``node_limit`` stopped the search (as for the
        other formulations: a plan whose optimality is unproven),
        ``infeasible`` (the search proved that no plan meets the quantile,
        Tmax and K̄; ``message`` says so) or ``error`` (|D| too large).
        A completed search is ``optimal`` unless a leaf's cluster split had
        more than ``general_leaves.MAX_SPLITS`` integer choices and its bounds left a gap
        (then ``feasible``, with the gap in ``message``).

    Raises
    ------
    SolverError
        For invalid options, naming the option.
    """
    _check_options(scenarios, seed, time_limit, gap, threads, node_limit)
    params = {"scenarios": int(scenarios), "seed": int(seed),
              "time_limit": None if time_limit is None else float(time_limit),
              "gap": float(gap), "threads": int(threads), "formulation": "general",
              "node_limit": None if node_limit is None else int(node_limit)}
    t0 = time.perf_counter()
    deadline = t0 + (math.inf if time_limit is None else float(time_limit))
    nodes_budget = math.inf if node_limit is None else int(node_limit)
    hit_node_limit = False
    diag: dict = {"formulation": "general", "variant": "general",
                  "exactness": "real-x cost via λ-dual bounds of the convex F(N); plans costed with allocate()"}
    ok, why = general_applies(instance)
    if not ok:
        return SolveResult(algorithm="milp", status="error", message=why, params=params, diagnostics=diag)
    inst = instance
    # the DP tables: (K̄+1)·nμ·S·|M|·(γ-groups ≤ |N|) floats, about three alive at once
    need = 3.0 * 8 * (inst.horizon + 1) * len(MU_FACTORS) * int(scenarios) * inst.n_models * inst.n_clusters
    if need > MEMORY_LIMIT_GIB * 2**30:
        return SolveResult(algorithm="milp", status="error", params=params, diagnostics=diag, message=(
            f"the general formulation's bound tables would need about {need / 2**30:.1f} GiB > "
            f"{MEMORY_LIMIT_GIB:g} GiB (S = {scenarios}, K̄ = {inst.horizon}); use fewer scenarios"))
    deterministic = all(m.improvement.is_deterministic for m in inst.models) and all(
        sw.jump.is_deterministic for sw in inst.switches)
    S = 1 if deterministic else int(scenarios)
    p = 0 if deterministic else allowed_violations(inst.omega, S)
    sc = ScenarioSampler(inst, seed).in_sample(S)
    a = inst.run_scale[None, :, :] * sc.improvement
    prob = Problem(inst, a, sc.jump, p)
    diag.update(scenarios=int(scenarios), deterministic=deterministic,
                allowed_violations=allowed_violations(inst.omega, int(scenarios)))
    bits, vol, gam, beta, lists = _cluster_classes(inst, prob.nonneg)
    diag["data_classes_per_cluster"] = [int(len(x)) for x in lists]
    leaves = Leaves(prob, inst)
    tol = 0.5 * float(gap)
    # λ and μ scales before any incumbent: a median configuration's closed form
    root_cfg = _config(_Box([(0, len(lists[n])) for n in range(inst.n_clusters)]), lists, vol, gam, beta)
    tm = prob.tmin(root_cfg)
    k_est = max(1.0, min(prob.K, prob.T / max(float(tm.min()), 1e-12)) / 2)
    root = float(np.median(np.sqrt(prob.c_m[:, None] * root_cfg.volume[None, :] * prob.kap[root_cfg.clusters][None, :])))
    slack = max(prob.T - k_est * float(np.median(prob.comm)), 1e-3 * prob.T)
    lam = max((k_est * root / slack) ** 2, 1e-12)
    est_cost = k_est ** 2 * root ** 2 / slack
    lam_resets = 0
    if root_cfg.classes and all(c is not None for c in root_cfg.classes) and prob.allows(root_cfg):
        # every plan of ≤ 3 blocks, exactly (general_incumbent.py): an early incumbent and its time price
        diag["incumbent_seed"] = seed_root(prob, root_cfg, leaves, lam, tol, _kmax, deadline)
        if leaves.best is not None and leaves.best_price > 0:
            lam, est_cost = leaves.best_price, leaves.best_cost
    # few class assignments: each becomes a leaf (general_classes.py), and the pool is tuned on
    # a real single-cluster assignment (the optimistic root corner is no class at all)
    pool_cfg = root_cfg
    leaf_list = leaf_assignments(inst, lists) if CLASS_LEAVES and S > 1 else None
    seed_cls = seed_assignment(prob, lists, vol, gam, beta) if leaf_list is not None else None
    if seed_cls is not None and leaves.best is None:
        n0, c0, est_cost, lam = seed_cls
        pool_cfg = Config(np.array([n0]), [c0], gam[[c0]], vol[[c0]], np.array([beta[c0, n0]]))
    # the scenario-group bound (general_groups.py): one pool of multipliers for every search,
    # filled by Kelley's method on the optimistic root configuration within a share of the time
    pool = None
    if S > 1:
        k_root = _kmax(prob, prob.weights(pool_cfg, lam), prob.tmin(pool_cfg), -lam * prob.T, leaves.best_cost)
        if k_root >= 1:
            s_root = BlockSearch(prob, pool_cfg, lam, k_root, est_cost / max(prob.l0 - prob.lmax, 1e-12))
            pool = GroupPool(prob, np.argsort(-s_root.scenario_root_bounds(), kind="stable"))
            pool.extend(s_root, t0 + POOL_SHARE * (deadline - t0))
            if pool_cfg.classes and all(c is not None for c in pool_cfg.classes) and prob.allows(pool_cfg):
                for seq in pool.feasible_columns(s_root, pool.columns):
                    leaves.evaluate(s_root, seq, tol)
    probed: set = set()

    def refresh_pool(lam_new, ub_now):
        # multipliers tuned to the new λ (the old ones stay: every π is valid)
        if pool is None:
            return
        kr = _kmax(prob, prob.weights(pool_cfg, lam_new), prob.tmin(pool_cfg), -lam_new * prob.T, ub_now)
        if kr >= 1:
            now = time.perf_counter()
            mu = (ub_now if math.isfinite(ub_now) else est_cost) / max(prob.l0 - prob.lmax, 1e-12)
            pool.extend(BlockSearch(prob, pool_cfg, lam_new, kr, mu), now + 0.1 * (deadline - now), iters=15)

    def make_search(cfg, lam, kmax, mu_ref):
        # two γ-groups: model blocks with counts, no interleavings (general_pairs.py)
        kind = PairSearch if PAIR_SEARCH and pair_applies(prob, cfg) else BlockSearch
        search = kind(prob, cfg, lam, kmax, mu_ref)
        if pool is not None and pool.complete:
            search.groups = GroupTables(pool, search)
        return search

    lb_discard = math.inf
    nodes = leaves_seen = boxes = unrealised = pair_runs = dead_cells = 0
    counter = itertools.count()
    heap = []
    # few assignments: each is a leaf with its own exact-class group bound (general_classes.py)
    if pool is None or not pool.complete:
        leaf_list = None
    if leaf_list is not None:
        for rng, rb in zip(leaf_list, assignment_bounds(prob, pool, lam, leaf_list, lists, vol, gam, beta, deadline)):
            if rb < math.inf:       # +inf: no epoch of this assignment fits Tmax
                heapq.heappush(heap, (float(rb), next(counter), _Box(rng)))
        diag["assignments"] = len(leaf_list)
    for box in (_root_boxes(inst, lists, relax=prob.nonneg) if leaf_list is None else []):
        # every root box is bounded before the search so that a time limit
        # still leaves a finite lower bound for the boxes not yet explored
        cfg = _config(box, lists, vol, gam, beta)
        w = prob.weights(cfg, lam)
        const = prob.dual_constant(cfg, lam)
        kmax = _kmax(prob, w, prob.tmin(cfg), const, math.inf)
        rb = make_search(cfg, lam, kmax, est_cost / max(prob.l0 - prob.lmax, 1e-12)).root_bound() \
            if kmax >= 1 else math.inf
        heapq.heappush(heap, (rb, next(counter), box))
    timed_out = False
    # neighbouring two-cluster assignments bounded together (general_pair_groups.PairGroups)
    pair_groups = (PairGroups(prob, pool, lists, vol, gam, beta) if PAIR_SEARCH and PAIR_GROUPS
                   and leaf_list is not None and prob.nonneg else None)
    dive: list = []     # LIFO of boxes while there is no incumbent (a depth-first dive)
    # (an incumbent from general_incumbent already set λ and tuned the pool on an assignment containing it)
    rebounded = leaf_list is None or ("incumbent_seed" in diag and leaves.best is not None)
    while heap or dive:
        if not rebounded and leaves.best is not None and time.perf_counter() < deadline:
            # first incumbent: tune the pool on its assignment and price, raise every open leaf's bound
            rebounded = True
            diag["leaves_rebounded"] = rebound_leaves(heap, prob, pool, leaves, lists, vol, gam, beta, deadline)
        if dive and leaves.best is None:
            bound, _, box = dive.pop()
        else:
            for item in dive:
                heapq.heappush(heap, item)
            dive.clear()
            bound, _, box = heapq.heappop(heap)
        ub = leaves.best_cost
        if prunable(bound, ub, tol):
            lb_discard = min(lb_discard, bound)
            continue
        if time.perf_counter() > deadline or nodes >= nodes_budget:
            heapq.heappush(heap, (bound, next(counter), box))
            for item in dive:
                heapq.heappush(heap, item)
            dive.clear()
            timed_out = True
            hit_node_limit = nodes >= nodes_budget
            break
        if pair_groups is not None and box.is_leaf() and leaves.best is not None:
            # two-cluster leaves: first try to discard their block of neighbours at once
            if pair_groups.covers(box.ranges):
                continue        # its group's bound is already in lb_discard
            glb = pair_groups.try_discard(box.ranges, lam, ub, tol, deadline,
                                          ub / max(prob.l0 - prob.lmax, 1e-12))
            if glb is not None:
                lb_discard = min(lb_discard, glb)
                continue
        boxes += 1
        cfg = _config(box, lists, vol, gam, beta)
        mu_ref = (ub if math.isfinite(ub) else est_cost) / max(prob.l0 - prob.lmax, 1e-12)
        w = prob.weights(cfg, lam)
        const = prob.dual_constant(cfg, lam)
        kmax = _kmax(prob, w, prob.tmin(cfg), const, ub)
        if kmax < 1:
            lb_discard = min(lb_discard, ub)
            continue
        search = make_search(cfg, lam, kmax, mu_ref)
        if box.is_leaf() and pool is not None and box.ranges not in probed:
            # the DP paths of the pool's multipliers on this assignment are plans: try them
            probed.add(box.ranges)
            for seq in pool.probe(search):
                leaves.evaluate(search, seq, tol)
            # every ≤ 3-block plan of this assignment, exactly (general_incumbent.cover); a
            # PairSearch counts blocks differently and cannot skip them, so it is not run there
            if not isinstance(search, PairSearch):
                cover(prob, search, leaves, tol, deadline)
            ub = leaves.best_cost
            price = leaves.best_price
            if price > 0 and abs(math.log(price / lam)) > math.log(1 + LAMBDA_RESET) and lam_resets < 8:
                lam = price
                lam_resets += 1
                refresh_pool(lam, ub)
                heapq.heappush(heap, (bound, next(counter), box))
                continue
        # a box that is not a leaf is only bounded: the group bound alone (cheap, and
        # usually the stronger) is enough; a leaf box is searched with every table
        cutoff = -math.inf if not box.is_leaf() else (ub - tol * abs(ub) if math.isfinite(ub) else math.inf)
        rb = max(search.root_bound(cutoff), bound)
        if prunable(rb, ub, tol):
            lb_discard = min(lb_discard, rb)
            continue
        if not box.is_leaf():
            left, right = box.split()
            if leaves.best is None:     # classes are sorted by γ: the left half first
                dive.extend([(rb, next(counter), right), (rb, next(counter), left)])
            else:
                heapq.heappush(heap, (rb, next(counter), left))
                heapq.heappush(heap, (rb, next(counter), right))
            continue
        def on_leaf(vseq, search=search):
            out = leaves.evaluate(search, vseq, tol)
            price = leaves.best_price
            # the bounds are only as good as λ: restart early when the incumbent's
            # time price is far from the one the tables were built with
            if price > 0 and abs(math.log(price / search.lam)) > math.log(1.25) and lam_resets < 8:
                search.abort = True
            return out

        if isinstance(search, PairSearch):
            stats = search.run(ub, tol, deadline, on_leaf, nodes_left=nodes_budget - nodes,
                               leaf_bound=lambda vseq, search=search: leaves.counts_bound(search, vseq))
            unrealised += stats["unrealised"]
            pair_runs += 1
            dead_cells += stats.get("dead", 0)
        else:
            stats = search.run(ub, tol, deadline, on_leaf, nodes_left=nodes_budget - nodes)
        nodes += stats["nodes"]
        leaves_seen += stats["leaves"]
        if verbose:
            print(f"general: box {box.ranges} {type(search).__name__} root {rb:.2f} ub {leaves.best_cost:.2f} "
                  f"nodes {stats['nodes']} leaves {stats['leaves']} lb {stats['lb']:.2f} "
                  f"t {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        if stats.get("aborted"):
            lam = leaves.best_price
            lam_resets += 1
            refresh_pool(lam, leaves.best_cost)
            heapq.heappush(heap, (rb, next(counter), box))
            continue
        if stats["timeout"]:
            lb_discard = min(lb_discard, stats["lb"])
            for item in dive:
                heapq.heappush(heap, item)
            dive.clear()
            timed_out = True
            hit_node_limit = bool(stats.get("node_limit"))
            break
        # a better incumbent with another time price: redo this box with its λ
        price = leaves.best_price
        if (price > 0 and abs(price - lam) > LAMBDA_RESET * lam and lam_resets < 5
                and leaves.best_cost < ub):
            lam = price
            lam_resets += 1
            refresh_pool(lam, leaves.best_cost)
            heapq.heappush(heap, (rb, next(counter), box))
            continue
        lb_discard = min(lb_discard, stats["lb"])
    open_bounds = []
    heap.sort()
    n_rebound = 0
    grace = deadline + (0.02 * float(time_limit) if time_limit is not None else math.inf)
    while n_rebound < min(20, len(heap)) and time.perf_counter() < grace:
        b, _, box = heap[n_rebound]
        n_rebound += 1
        # open boxes were bounded at an earlier λ; any λ is valid, keep the better
        cfg = _config(box, lists, vol, gam, beta)
        const = prob.dual_constant(cfg, lam)
        kmax = _kmax(prob, prob.weights(cfg, lam), prob.tmin(cfg), const, leaves.best_cost)
        mu_ref = (leaves.best_cost if math.isfinite(leaves.best_cost) else est_cost) / max(prob.l0 - prob.lmax, 1e-12)
        rb = make_search(cfg, lam, kmax, mu_ref).root_bound() if kmax >= 1 else math.inf
        open_bounds.append(max(b, rb))
    open_bounds += [b for b, _, box in heap[n_rebound:] if pair_groups is None or not pair_groups.covers(box.ranges)]
    if pair_groups is not None:
        diag["pair_groups"] = dict(pair_groups.stats, seconds=round(pair_groups.stats["seconds"], 3))
    diag.update(group_multipliers=0 if pool is None else int(pool.Pi.shape[0]),
                scenario_groups=0 if pool is None else len(pool.groups))
    diag.update(nodes=nodes, leaves=leaves_seen, boxes=boxes, unrealised_leaves=unrealised,
                pair_searches=pair_runs, unplaceable_cells=dead_cells, leaf_evaluations=leaves.evaluations,
                lambda_resets=lam_resets, time_price=lam, total_s=time.perf_counter() - t0)
    limit = "node limit" if hit_node_limit else "time limit"
    if leaves.best is None:
        if timed_out:
            # the open and discarded boxes' bounds are valid without a plan too
            lower = min([lb_discard] + open_bounds)
            return SolveResult(algorithm="milp", status="error" if hit_node_limit else "time_limit",
                               message=f"{limit} reached before any plan", params=params, diagnostics=diag,
                               lower_bound=lower if math.isfinite(lower) else None)
        return SolveResult(algorithm="milp", status="infeasible", message=(
            f"no plan of at most K̄ = {inst.horizon} epochs meets both the quantile (at most {p} of {S} "
            f"in-sample scenarios above ℓmax = {prob.lmax:g}) and Tmax = {prob.T:g} (exhaustive search)"),
            params=params, diagnostics=diag)
    cost = leaves.best_cost
    lower = min([cost, lb_discard] + open_bounds) if timed_out else min(cost, lb_discard)
    g = SolveResult.relative_gap(cost, lower)
    models, clusters, held, alloc = leaves.best
    losses = prob.losses(models, np.array([gam[held[int(n)]] for n in clusters]))
    viol = int(np.count_nonzero(losses > prob.lmax + 1e-9))
    plan = Plan(epochs=[Epoch(model=inst.models[m].name, cluster=inst.clusters[n].name, allocation=float(x))
                        for m, n, x in zip(models, clusters, alloc.x)],
                datasets={inst.clusters[n].name: [inst.datasets[d].name for d in np.nonzero(bits[c])[0]]
                          for n, c in sorted(held.items())})
    diag.update(in_sample_violations=viol * (int(scenarios) if deterministic else 1), epochs=int(models.size))
    if viol > p:   # the search only accepts SAA-feasible leaves; this guards the bookkeeping
        return SolveResult(algorithm="milp", status="error", message="internal check failed: plan violates the "
                           "in-sample quantile", params=params, diagnostics=diag)
    if g is not None and g <= gap:
        status, message = "optimal", f"optimal within relative gap {g:.2e} (tolerance {gap:g})"
    elif timed_out:
        status = "feasible" if hit_node_limit else "time_limit"
        message = f"{limit} reached" + ("; the plan is SAA-feasible and exactly costed, its optimality unproven"
                                        if hit_node_limit else "")
    elif unrealised:
        status, message = "feasible", (
            f"search complete but a gap of {g:.2e} remains (tolerance {gap:g}): {unrealised} two-group "
            f"leaves could not be ordered (more than general_placement.MAX_PLACEMENTS partial "
            f"placements) and keep only their bounds, or a leaf's cluster split kept its bound")
    else:
        status, message = "feasible", (f"search complete but the leaf split bounds leave a gap of {g:.2e} "
                                         f"(tolerance {gap:g})")
    return SolveResult(algorithm="milp", status=status, message=message, plan=plan, cost=cost, lower_bound=lower,
                       gap=g, params=params, diagnostics=diag)


__all__ = ["solve_general", "general_applies", "MAX_DATASETS_GENERAL", "MAX_CLUSTERS_GENERAL"]
