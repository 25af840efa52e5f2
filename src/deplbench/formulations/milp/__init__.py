"""Exact MILP of problem (2)–(6) with the scenario quantile, solved by HiGHS (a package).

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
is judged separately by ``formulations.evaluation.evaluate``.

Exactness contract for the c/x term
-----------------------------------
Cost is κ·x while time is c/x, so (4) is not linear. We never linearise it
silently. Instead (any sound route is allowed; docs/DESIGN.md, "Model semantics"):

* At the optimum, epochs with the same configuration j = (model, cluster,
  data) get the same x, so the real-x optimal compute cost is a function
  F(N) of the configuration counts N_j:
  F(N) = min Σ_j κ_j u_j  s.t.  Σ_j c_j N_j²/u_j + Σ_j comm_j N_j ≤ Tmax,
  u_j ≤ r_j N_j  — a jointly convex (quadratic-over-linear) programme, so F
  is convex. ``formulations.model.allocation.allocate`` evaluates it exactly.
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

Formulations (the table in ``catalog.py``)
------------------------------------------
``formulation="fast"`` (default) picks the strongest exact model the instance
allows, built as sparse matrices with numpy and passed to highspy directly
(``backend="pyomo"`` builds the very same matrices as a Pyomo model solved
through Pyomo's ``appsi_highs``; tests check both give the same optimum):

1. ``counts`` (``counts.py``) when the loss is order-invariant (the knapsack
   family): only the integer epoch counts N(m,n,σ) are variables.
2. ``enumeration`` (``enumeration.py``) when the switch graph is acyclic and
   there is one data class (the realistic families): one binary per
   undominated SAA-feasible model sequence, no scenario rows.
3. ``flow`` (``flow.py``) otherwise: epoch × model flow, one row per distinct
   scenario with tight big-M values (``bounds.py``).

Before these, ``fast`` dispatches to the direct ``general`` solver
(``general.py``) when ``catalog.fast_prefers_general`` says so: more than
MAX_DATASETS datasets, or a cyclic switch graph without the counts structure.

``formulation="naive"`` (``naive.py``) is the textbook per-epoch model in
Pyomo with crude big-M values, no incumbent and no bounds: the benchmark's
reference. Any name in the table can be forced.

Common to all: clusters are aggregated into integer counts N(m,n,σ) (the
cluster an epoch runs on does not change the loss, only its data class σ
does, and cost and time depend only on how many epochs of each
configuration run); each cluster holds one data class σ (a non-empty subset
of D), q(n,σ) ∈ {0,1}, so the data law's γ(σ) and V(σ) are numbers and the
data choice stays linear (``data.py``, ``matrix.py``). Configurations whose
single epoch exceeds Tmax are pruned exactly (``data.py``). A block heuristic
(``bounds.py``; up to three model blocks on one cluster, exact in-sample
check, exact allocation; at most a tenth of the time limit) provides the
incumbent that the bounds use and a MIP start.

Package layout
--------------
=================  ==========================================================
``options.py``     options (one Param table), constants
``settings.py``    MilpSettings: one solve's options, checked once, passed whole
``data.py``        scenarios, data classes, configurations, exact evaluation
``bounds.py``      K range, block heuristic (incumbent), tight big-M
``matrix.py``      sparse assembly, rows shared by the matrix formulations
``counts.py``      count formulation (order-invariant instances)
``enumeration.py`` sequence-enumeration formulation (acyclic switch graphs)
``flow.py``        flow formulation (any instance)
``naive.py``       textbook formulation in Pyomo (the reference)
``catalog.py``     the formulation table; how ``fast`` chooses; plug-in API
``backends.py``    highspy direct / Pyomo appsi; clean stdout
``scip.py``        SCIP (pyscipopt) as a solver peer of HiGHS
``pyomo_peer.py``  any Pyomo SolverFactory solver as a peer (``pyomo:NAME``)
``peers.py``       solver names, availability, versions, validation
``cutloop.py``     the Kelley cut loop, statuses, work counters
``solve.py``       :func:`solve_milp` (the keyword front) and :func:`run_milp`: the stages
=================  ==========================================================

Sizes solved exactly
--------------------
Every dimension is exact; the limits are sizes, not approximations:
datasets by enumerating per-cluster subsets for |D| ≤ 6 (at most 63 data
classes; larger |D| is refused with status ``error``); models, clusters,
horizon and S are limited only by memory and time (the flow scenario block
has S·K̄·(|M|+|P|) non-zeros); both are estimated before the build and a
model above ``memory_limit`` is refused with status ``error``. The realistic AlexNet family (|M| = 3, |N| = 2,
|D| = 1, K̄ = 100) at S = 1000 is proven optimal in well under a second by
the enumeration variant; see ``perf/milp_targets.py``.

References
----------
DepL paper eqs. (1)–(8), Property 1, Sec. VI-A; docs/DESIGN.md ("Model semantics");
J. Luedtke, S. Ahmed, "A sample approximation approach for optimization with
probabilistic constraints", SIAM J. Optim. 19 (2008); J. Kelley, "The
cutting-plane method for solving convex programs", J. SIAM 8 (1960).
"""

from deplbench.formulations.milp.backends import (
    HighsBackend,
    MasterOutcome,
    PyomoBackend,
    pyomo_from_matrix,
    quiet_stdout,
    use_threads,
)
from deplbench.formulations.milp.bounds import (
    Bounds,
    block_heuristic,
    dp_max,
    k_max_from_cost,
    min_epochs,
    quantile_ok,
    shortest_last_block,
    structural_bounds,
    tight_bigm,
)
from deplbench.formulations.milp.catalog import (
    BuildContext,
    Formulation,
    ModelTooLarge,
    formulation_names,
)
from deplbench.formulations.milp.counts import CountModel, order_invariant
from deplbench.formulations.milp.cutloop import cut_loop, cut_loop_result
from deplbench.formulations.milp.data import Choice, Data, data_bytes, phi
from deplbench.formulations.milp.enumeration import (
    MAX_CANDIDATES,
    EnumModel,
    dag_paths,
    enumerate_candidates,
    enumeration_size,
    try_enumeration,
)
from deplbench.formulations.milp.flow import FastModel, FlowModel, flow_size
from deplbench.formulations.milp.matrix import (
    MatrixFormulation,
    MatrixModel,
    cluster_rows,
    clusters_from_counts,
    held_classes,
    identical_cluster_pairs,
)
from deplbench.formulations.milp.naive import NaiveModel, naive_size
from deplbench.formulations.milp.options import (
    BACKENDS,
    BIGM_SLACK,
    CUT_RATIO,
    CUT_SPAN,
    LOSS_TOL,
    MAX_DATASETS,
    MAX_ROUNDS,
    MEMORY_LIMIT_GIB,
    SOLVERS,
    BuildTimeout,
    Verdict,
    option_table,
)
from deplbench.formulations.milp.routes import make_backend
from deplbench.formulations.milp.settings import MilpSettings
from deplbench.formulations.milp.solve import run_milp, solve_milp

#: Formulations accepted by :func:`solve_milp` (``fast`` and every row of the
#: table in ``catalog.py``), fixed when the package is imported.
FORMULATIONS = formulation_names()

__all__ = ["solve_milp", "run_milp", "MilpSettings", "option_table", "FORMULATIONS", "BACKENDS", "SOLVERS",
           "MAX_DATASETS", "MEMORY_LIMIT_GIB", "Formulation", "BuildContext",
           "formulation_names", "quiet_stdout"]
