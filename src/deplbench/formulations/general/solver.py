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
optimal plan fixed the LP is still 6 % below the optimum. With lazy
scenario generation each master keeps only a few dozen scenario rows and is
still slow (docs/performance.md, "Measurements behind design choices"): the
flow polytope itself is the bottleneck, not the number or the big-M of the
scenario rows.

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
   of the search. While they are few (``GeneralSettings.assignment_limit``;
   5999 on that instance) every assignment is its own leaf, and all of them
   are bounded at once with their exact classes by one vectorised
   scenario-group DP (``classes.py``, proof there); the multiplier
   pool is tuned on a real single-cluster assignment rather than on the
   optimistic corner. Beyond the limit, a best-first branch-and-bound over
   *boxes* of classes: a box is bounded with its optimistic class (largest
   γ, smallest V, smallest β of the box), which relaxes every assignment
   inside it (``class_leaves=False`` forces the boxes).
2. **Blocks.** For one assignment a plan is a sequence of blocks (maximal
   runs of one model on one γ-group of clusters). The search branches on
   the next block (virtual model and length); with non-negative
   improvements only the shortest SAA-feasible last block can be optimal
   (F grows with the counts), exactly as in the enumeration formulation.
   Cycles in the switch graph are just more successors.
3. **Cost bound by λ-duality** (package docstring): F(N) ≥ Σ_j g_j(λ) N_j
   − λ Tmax for every λ ≥ 0, so a prefix has a linear weight; λ is the time
   price of the incumbent (re-set when a better one appears).
4. **Quantile bounds from scenario groups** (``groups.py``). A
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
   which is kept (``search.py``) and maxed with the group bound;
   the proof is in ``groups``.
5. **Exact leaves.** A complete plan's cluster split inside a γ-group is
   chosen by local search with exact ``allocate`` calls (feasible real-x
   plan, upper bound) and bounded by the continuous split's λ-dual (lower
   bound); if they differ by more than the tolerance the split is
   enumerated exhaustively.
6. **Short plans enumerated, then only long ones bounded**
   (``incumbent.py``). Every SAA-feasible plan of at most 3 blocks
   of an assignment (cycles included) is found with the enumeration
   formulation's shortest-last-block rule and costed exactly; once that
   pass is complete the group bound counts switches (one more DP state) and
   bounds only completions with ≥ 3 switches. Without it the converged root
   group bound of the cyclic AlexNet (S = 1000) is 1609 against the optimum
   1802.6: its LP mixes cheap infeasible two-block plans with dear feasible
   three-block ones; with it, 1790.
7. **Two γ-groups: model blocks with counts, not interleavings**
   (``pairs.py``). With two γ-groups a block of item 2 is a run of
   one *model* with j epochs on the γ_hi group and ℓ − j on the γ_lo group,
   in an order left open: the cost depends on the counts only, and the
   loss of every order is, scenario by scenario, at least the one of the
   best order (the j largest draws on γ_hi: rearrangement inequality), so
   the bounds of items 3–4 hold at those optimistic losses. A completion
   after a block must switch model first, and when only one block of a
   terminal model can follow, its per-scenario exact cost is the bound. A
   relaxed leaf is turned into a plan by ``placement.realise``,
   which proves by an exact, pruned placement search when no order meets
   the quantile (the search then goes on above that cell); a leaf it can
   neither order nor refute keeps its bound, which enters the lower bound
   (``unrealised_leaves``). Neighbouring two-cluster assignments are first
   bounded together by their corner (``pair_groups.py``).
   ``pair_search=False`` / ``pair_groups=False`` restore the
   interleaving search and the one-by-one leaves.

Every discarded node, leaf and box keeps its bound; the returned lower bound
is min(incumbent, smallest discarded bound) — valid because every plan lies
in exactly one discarded subtree or is the incumbent. No big-M constants
and no LP tolerances enter the proof: losses are compared with the same
1e-9 tolerance as ``Scenarios.violations``, and bounds are ordinary floating
point sums.

Phases and reproducibility
--------------------------
:func:`solve_general` runs setup (scenarios, classes), bounding (the exact
short-plan seed, the multiplier pool, the root bound of every assignment or
box; ``bounding.py``) and the search, then builds the result
(``outcome.py``); the phases share one ``state.SolveRun``. Every phase is budgeted in
work units of :class:`~.settings.GeneralSettings` (Kelley iterations,
enumeration steps, nodes), so the same instance and settings give the same
nodes, bounds and result on any machine; ``time_limit`` only stops the
solve, and ``diagnostics["stopped_in"]`` names the phase. Measured times:
``perf/general_targets.py``, numbers in docs/performance.md.

Limits
------
Exact for every dimension; |D| ≤ 12 (the Pareto filter compares all subset
pairs), |N| ≤ 12 (every set of training clusters is a root box; no
cluster-dominance pruning, so ``fast`` keeps ``flow`` above 4 clusters). Signed improvement draws
disable the γ-dominance and the
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
import math
import sys
import time
from typing import cast

from deplbench import limits
from deplbench.blas_threads import single_blas_thread
from deplbench.formulations.general.bounding import bound_roots, seed_phase
from deplbench.formulations.general.boxes import Box, ClusterTables, cluster_classes
from deplbench.formulations.general.classes import rebound_leaves
from deplbench.formulations.general.groups import GroupPool
from deplbench.formulations.general.incumbent import cover
from deplbench.formulations.general.leaves import Leaves
from deplbench.formulations.general.outcome import build_result
from deplbench.formulations.general.pairs import PairSearch
from deplbench.formulations.general.search import MU_FACTORS, Problem, prunable
from deplbench.formulations.general.settings import SOLVE_PARAMETERS, GeneralSettings, GeneralSolveSettings
from deplbench.formulations.general.state import SolveRun
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.limits import MEMORY_BUDGET_GIB

#: Largest |D| (all 2^|D| − 1 subsets are compared pairwise per cluster).
MAX_DATASETS_GENERAL = 12
#: Largest |N| (the 2^|N| − 1 sets of training clusters are the root boxes).
MAX_CLUSTERS_GENERAL = 12
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


# =============================================================================
# The phases of one solve: setup and search here; bounding (bounding.py) and
# the result (outcome.py) in their own modules; their shared state is state.SolveRun
# =============================================================================


def general_memory_need(instance, scenarios: int) -> float:
    """Bytes of the bound tables: (K̄+1)·nμ·S·|M|·(γ-groups ≤ |N|) floats, about
    three alive at once (S = 1 when every term is a constant, as the solve draws)."""
    S = 1 if instance.is_deterministic else int(scenarios)
    return 3.0 * 8 * (instance.horizon + 1) * len(MU_FACTORS) * S * instance.n_models * instance.n_clusters


def general_fits(instance, scenarios: int) -> bool:
    """Whether the bound tables fit the memory budget (:data:`MEMORY_LIMIT_GIB`)."""
    return general_memory_need(instance, scenarios) <= MEMORY_LIMIT_GIB * 2**30


def _setup(instance, settings: GeneralSolveSettings, params, t0):
    """Scenarios, the shared problem arrays and the Pareto classes; or an error result."""
    diag: dict = {"formulation": "general", "variant": "general",
                  "exactness": "real-x cost via λ-dual bounds of the convex F(N); plans costed with allocate()"}
    ok, why = general_applies(instance)
    if not ok:
        return SolveResult(algorithm="milp", status="error", message=why, params=params, diagnostics=diag)
    inst, scenarios, opts = instance, settings.scenarios, settings.general
    need = general_memory_need(inst, scenarios)
    if need > MEMORY_LIMIT_GIB * 2**30:
        return SolveResult(algorithm="milp", status="error", params=params, diagnostics=diag, message=(
            f"the general formulation's bound tables would need about {need / 2**30:.1f} GiB > "
            f"{MEMORY_LIMIT_GIB:g} GiB (S = {scenarios}, K̄ = {inst.horizon}); use fewer scenarios"))
    deterministic = inst.is_deterministic
    S = 1 if deterministic else int(scenarios)
    p = 0 if deterministic else allowed_violations(inst.omega, S)
    sc = ScenarioSampler(inst, settings.seed).in_sample(S)
    prob = Problem(inst, inst.run_scale[None, :, :] * sc.improvement, sc.jump, p, settings=opts)
    diag.update(scenarios=int(scenarios), deterministic=deterministic,
                allowed_violations=allowed_violations(inst.omega, int(scenarios)))
    bits, vol, gam, beta, lists = cluster_classes(inst, prob.nonneg)
    diag["data_classes_per_cluster"] = [len(x) for x in lists]
    return SolveRun(inst=inst, prob=prob, opts=opts, params=params, diag=diag, t0=t0,
                nodes_budget=math.inf if settings.node_limit is None else settings.node_limit,
                tol=0.5 * settings.gap, S=S,
                deterministic=deterministic, bits=bits, tables=ClusterTables(lists, vol, gam, beta),
                leaves=Leaves(prob, inst))


def _next_box(run: SolveRun):
    """The next open box: depth-first while there is no incumbent, then best-first."""
    if run.dive and run.leaves.best is None:
        return run.dive.pop()
    for item in run.dive:
        heapq.heappush(run.heap, item)
    run.dive.clear()
    return heapq.heappop(run.heap)


def _stop(run: SolveRun, bound: float, box: Box, phase: str) -> None:
    """Keep the box (and the dive) open and record the stop."""
    run.push(bound, box)
    for item in run.dive:
        heapq.heappush(run.heap, item)
    run.dive.clear()
    run.stopped_in = run.stopped_in or phase


def _search(run: SolveRun) -> None:
    """Best-first over boxes/assignments; each leaf assignment is searched depth-first."""
    # (an incumbent from incumbent already set λ and tuned the pool on an assignment containing it)
    rebounded = run.leaf_list is None or ("incumbent_seed" in run.diag and run.leaves.best is not None)
    while run.heap or run.dive:
        if not rebounded and run.leaves.best is not None:
            # first incumbent: tune the pool on its assignment and price, raise every open leaf's bound
            rebounded = True
            run.diag["leaves_rebounded"] = rebound_leaves(run.heap, run.prob, run.pool, run.leaves, run.tables)
        bound, _, box = _next_box(run)
        if prunable(bound, run.leaves.best_cost, run.tol):
            run.lb_discard = min(run.lb_discard, bound)
            continue
        if run.out_of_time("search") or run.work["nodes"] >= run.nodes_budget:
            run.hit_node_limit = run.stopped_in is None
            _stop(run, bound, box, "search")
            return
        if not _visit(run, bound, box):
            return


def _visit(run: SolveRun, bound: float, box: Box) -> bool:
    """Process one open box; False when a limit stopped the search inside it."""
    ub = run.leaves.best_cost
    if run.pair_groups is not None and box.is_leaf() and run.leaves.best is not None:
        # two-cluster leaves: first try to discard their block of neighbours at once
        if run.pair_groups.covers(box.ranges):
            return True         # its group's bound is already in lb_discard
        glb = run.pair_groups.try_discard(box.ranges, run.lam, ub, run.tol, run.mu_ref(ub))
        if glb is not None:
            run.lb_discard = min(run.lb_discard, glb)
            return True
    run.work["boxes"] += 1
    cfg, search = run.box_search(box, ub)
    if search is None:
        run.lb_discard = min(run.lb_discard, ub)
        return True
    if box.is_leaf() and run.pool is not None and box.ranges not in run.probed:
        _probe(run, box, search)
        if run.reset_due():
            run.reset_lambda()
            run.push(bound, box)
            return True
        ub = run.leaves.best_cost
    # a box that is not a leaf is only bounded: the group bound alone (cheap, and
    # usually the stronger) is enough; a leaf box is searched with every table
    cutoff = -math.inf if not box.is_leaf() else (ub - run.tol * abs(ub) if math.isfinite(ub) else math.inf)
    rb = max(search.root_bound(cutoff), bound)
    if prunable(rb, ub, run.tol):
        run.lb_discard = min(run.lb_discard, rb)
        return True
    if not box.is_leaf():
        left, right = box.split()
        if run.leaves.best is None:     # classes are sorted by γ: the left half first
            run.dive.extend([(rb, next(run.counter), right), (rb, next(run.counter), left)])
        else:
            run.push(rb, left)
            run.push(rb, right)
        return True
    return _search_leaf(run, box, search, rb, ub)


def _probe(run: SolveRun, box: Box, search) -> None:
    """The pool's DP paths on this assignment are plans: try them; then every ≤ 3-block
    plan of it, exactly (incumbent.cover; a PairSearch counts blocks differently
    and cannot skip them, so it is not run there)."""
    run.probed.add(box.ranges)
    pool = cast(GroupPool, run.pool)          # _search_box probes only when there is a pool
    for seq in pool.probe(search):
        run.leaves.evaluate(search, seq, run.tol)
    if not isinstance(search, PairSearch):
        cover(run.prob, search, run.leaves, run.tol)


def _search_leaf(run: SolveRun, box: Box, search, rb: float, ub: float) -> bool:
    """The depth-first search of one assignment (search / pairs)."""
    def on_leaf(vseq):
        out = run.leaves.evaluate(search, vseq, run.tol)
        # the bounds are only as good as λ: restart when the incumbent's price is far from it
        if run.reset_due(search.lam):
            search.abort = True
        return out

    left = run.nodes_budget - run.work["nodes"]
    if isinstance(search, PairSearch):
        stats = search.run(ub, run.tol, on_leaf, nodes_left=left,
                           leaf_bound=lambda vseq: run.leaves.counts_bound(search, vseq))
        run.work["unrealised_leaves"] += stats.unrealised
        run.work["pair_searches"] += 1
        run.work["unplaceable_cells"] += stats.dead
    else:
        stats = search.run(ub, run.tol, on_leaf, nodes_left=left)
    run.work["nodes"] += stats.nodes
    if search.node_groups is not None:
        run.work["tuned_rows"] += search.node_groups.rows_tuned
    run.work["leaves"] += stats.leaves
    if run.verbose:
        print(f"general: box {box.ranges} {type(search).__name__} root {rb:.2f} ub {run.leaves.best_cost:.2f} "
              f"nodes {stats.nodes} leaves {stats.leaves} lb {stats.lb:.2f} "
              f"t {time.perf_counter() - run.t0:.1f}s", file=sys.stderr)
    if stats.aborted or (not stats.timeout and run.reset_due()):
        # a better incumbent with another time price: redo this box with its λ
        run.reset_lambda()
        run.push(rb, box)
        return True
    run.lb_discard = min(run.lb_discard, stats.lb)
    if stats.timeout:
        run.hit_node_limit = stats.node_limit
        for item in run.dive:
            heapq.heappush(run.heap, item)
        run.dive.clear()
        run.stopped_in = run.stopped_in or "search"
        return False
    return True


def solve_general(instance, scenarios: int = 1000, seed: int = 0, time_limit: float | None = 60.0,
                  gap: float = 1e-4, threads: int = 1, verbose: bool = False,
                  node_limit: int | None = None, settings: GeneralSettings | dict | None = None) -> SolveResult:
    """Solve the SAA of problem (2)–(6) exactly with the ``general`` branch-and-bound.

    Parameters
    ----------
    instance : Instance
    scenarios : int, default 1000
        S, the in-sample scenarios of ``ScenarioSampler(instance, seed)``.
    seed : int, default 0
        Seed of the scenarios.
    time_limit : float or None, default 60
        Wall-clock seconds, the outer stop only (every phase is budgeted in
        work units, ``settings``); None for no limit.
    gap : float, default 1e-4
        Relative gap (UB − LB)/UB at which the plan is declared optimal.
    threads : int, default 1
        Accepted for interface compatibility: the search is single-threaded,
        and OpenBLAS is held to one thread for the solve
        (:func:`deplbench.blas_threads.single_blas_thread`: the small
        products at every node cost more CPU split over threads; that
        module says why).
    verbose : bool
        Print progress to stderr.
    node_limit : int, optional
        Search nodes allowed (a budget independent of the machine's speed).
    settings : GeneralSettings or mapping, optional
        Switches, tuning constants and work budgets
        (:class:`~.settings.GeneralSettings`; a mapping is validated
        option by option). Recorded in ``params["general_settings"]``.

    Returns
    -------
    SolveResult
        ``optimal`` (gap met), ``time_limit`` (best plan and bound so far;
        ``diagnostics["stopped_in"]`` names the phase), ``feasible`` when
        ``node_limit`` stopped the search or a completed search kept a gap
        (a leaf's cluster split with more than ``settings.max_splits``
        choices, or unrealised two-group leaves; said in ``message``),
        ``infeasible`` (proven: no plan meets the quantile, Tmax and K̄) or
        ``error`` (|D| or |N| too large). The lower bound is never below 0,
        so the gap is at most 1.

    Raises
    ------
    SolverError
        For invalid options, one line naming the option.
    """
    run = GeneralSolveSettings.from_params(
        dict(scenarios=scenarios, seed=seed, time_limit=time_limit, gap=gap, threads=threads, node_limit=node_limit),
        settings)
    # the one clock of the solve (deplbench.limits): every phase below reads it
    with limits.deadline(run.time_limit):
        return run_general(instance, run, verbose)


def run_general(instance, settings: GeneralSolveSettings, verbose: bool = False) -> SolveResult:
    """Solve with settings built once (:class:`~.settings.GeneralSolveSettings`) within
    ``settings.time_limit``.

    The deadline of ``settings.time_limit`` is opened here, so a direct call
    is bounded too; inside a caller's :func:`deplbench.limits.deadline`
    (:func:`solve_general`, the exact MILP, :func:`deplbench.solvers.run.solve`)
    the earlier deadline is kept, so the solve still has one clock.
    :func:`solve_general` is the keyword front; the exact MILP calls this with
    its own settings.
    """
    # one BLAS thread: the node bounds multiply many small matrices, for which a
    # threaded OpenBLAS only adds synchronisation (deplbench.blas_threads)
    with limits.deadline(settings.time_limit), single_blas_thread():
        return _solve(instance, settings, verbose)


def _solve(instance, settings: GeneralSolveSettings, verbose) -> SolveResult:
    """:func:`run_general`'s body (the phases, the result)."""
    params = settings.record()
    t0 = time.perf_counter()
    run = _setup(instance, settings, params, t0)
    if isinstance(run, SolveResult):
        return run
    run.verbose = bool(verbose)
    # the phases: setup (above), bounding (incumbent seed, group pool, root bounds), search;
    # the wall clock is checked between and inside them and stops the solve where it is
    last = "setup"
    seconds = run.diag["phase_s"] = {"setup": time.perf_counter() - t0}
    for name, phase in (("bounding", seed_phase), ("bounding", bound_roots), ("search", _search)):
        if run.stopped_in is not None or run.out_of_time(last):
            break
        start = time.perf_counter()
        phase(run)
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
        last = name
    return build_result(run)


__all__ = [
    "MAX_CLUSTERS_GENERAL",
    "MAX_DATASETS_GENERAL",
    "SOLVE_PARAMETERS",
    "GeneralSettings",
    "GeneralSolveSettings",
    "general_applies",
    "general_fits",
    "general_memory_need",
    "run_general",
    "solve_general",
]
