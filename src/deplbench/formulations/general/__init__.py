"""The ``general`` exact branch-and-bound for the SAA of problem (2)–(6): any switch graph, |D| ≤ 12.

Algorithm (a search over plans, not a MILP; proofs in the modules named)
-------------------------------------------------------------------------
* Assignment: which clusters train and which data class (Pareto set of
  dataset subsets by γ, V, β; ``boxes.cluster_classes``) each holds. Under
  the printed data rule (6) one cluster only. Few assignments: each is a
  leaf bounded by a vectorised scenario-group DP (``classes``); many:
  best-first over boxes of classes, bounded by the box's optimistic corner.
* Node (inside one assignment): a plan prefix of blocks (maximal runs of one
  virtual model = model × γ-group; ``search.BlockSearch``), or for two
  γ-groups of model blocks with per-group counts (``pairs.PairSearch``).
* Bound: λ-duality F(N) ≥ Σ_j g_j(λ) N_j − λ·Tmax (valid for every λ ≥ 0)
  plus, over any completion, the (p+1)-th largest of p + 1 scenario-group
  Lagrangian bounds (``groups``, Kelley-tuned multipliers valid everywhere)
  and the per-scenario bound of the single-scenario subproblems; the group
  multipliers are re-tuned at every batch of children (``node_groups``).
* Branching: the next block (virtual model, length); with non-negative
  improvements only the shortest SAA-feasible last block can be optimal.
* Order: best-first over assignments/boxes (depth-first dive before the first
  incumbent), depth-first inside an assignment; an assignment whose plans are
  all plans of a larger one with a free extra cluster is not searched.
* Leaves: the cluster split costed exactly with ``allocate`` (``leaves``);
  plans of ≤ 3 blocks are enumerated exactly first (``incumbent.cover``) and
  the bounds then count only completions with more switches.
* Proven: the plan is SAA-feasible and exactly costed; the lower bound is
  min(incumbent, every discarded bound, every open bound), never below 0;
  ``optimal`` means (UB − LB)/UB ≤ gap. Every phase is budgeted in work units
  (``settings.GeneralSettings``), so the same instance and settings give the
  same nodes, bounds and result on any machine; the wall clock only stops.
"""

from deplbench.formulations.general.settings import GENERAL_PARAMETERS, GeneralSettings, GeneralSolveSettings
from deplbench.formulations.general.solver import (
    MAX_CLUSTERS_GENERAL,
    MAX_DATASETS_GENERAL,
    SOLVE_PARAMETERS,
    general_applies,
    general_fits,
    run_general,
    solve_general,
)

__all__ = ["GENERAL_PARAMETERS", "MAX_CLUSTERS_GENERAL", "MAX_DATASETS_GENERAL", "SOLVE_PARAMETERS",
           "GeneralSettings", "GeneralSolveSettings", "general_applies", "general_fits", "run_general",
           "solve_general"]
