"""DepL's expanded graph (Sec. IV-B) and its minimum-cost path.

Vertices and edges
------------------
A vertex is (m, k, i, j): model m used in epoch k, elapsed-time bucket i and
loss bucket j. With resolution η:

* time: bucket i represents an elapsed time of i·Tmax/η, i = 0..η; an epoch of
  model m advances i by δ_m = ⌈τ_m / (Tmax/η)⌉ where τ_m is the epoch time of
  m on the most capable cluster at full capacity (the paper's "least
  restrictive option" for the later stages). Rounding *up* makes the
  represented time an upper bound of the real one along every path;
* loss: bucket j represents the tracked quantile surrogate
  ``target + j·Δℓ`` (see :mod:`deplbench.solvers.depl.quantile_transform`), j = 1..J, with
  Δℓ = (ℓ(0) + headroom − target)/η (the paper's ℓ(0)/η step, measured from the
  target instead of from 0). An edge m → m' into epoch k shifts j by
  ⌈(φ_run(m', k) + φ_jump(m, m'))/Δℓ⌉ — rounded *up*, so the represented
  surrogate is an upper bound of the exact one. Bucket j ≤ 0 means the
  surrogate is at or below the target: the state is feasible and is joined to
  the virtual sink Ω by a zero-weight edge. States above bucket J or past
  bucket η in time are not represented (dropping them only removes paths).

Because every represented quantity is an upper bound, every path to Ω is a
feasible model sequence in the real quantities the surrogate models
(time at full capacity ≤ Tmax, surrogate quantile ≤ ℓmax).

Three loss axes (``rounding``)
------------------------------
``"up"``
    The paper's graph with conservative rounding, as above. Its price: every
    epoch can lose up to Δℓ of the loss budget, K·Δℓ along a K-epoch path —
    measured on the realistic AlexNet instance (K ≈ 50–100, η = 200) this
    makes ℓmax = 5 infeasible and nearly doubles the cost at ℓmax = 7.
``"nearest"``
    The same fixed graph with increments rounded to the nearest bucket (the
    error becomes a random walk instead of a drift); a path is then *not*
    guaranteed feasible and DepL verifies it with its exact surrogate,
    lowering the target and re-solving when it fails.
``"label"`` (DepL's default, :func:`solve_dp_labels`)
    The DP carries each state's *exact* surrogate value and buckets only
    decide which paths are merged; a path reaches Ω only if its exact value
    meets the target. Every returned path is feasible, as with ``"up"``, and
    rounding no longer accumulates. This is a label-setting DP, not a fixed
    graph, so it is compared with brute force rather than with networkx.

Edge weight
-----------
Entering epoch k with model m' costs a fixed w_{m'} > 0 (DepL uses
w_m = sqrt(κ*·c(m, D̂)) + λ·comm_m, see ``solvers.depl``): a path of
square-root weight W = Σ sqrt(κ*·c) has, on the most capable cluster, the
real-x optimal cost W² / (Tmax − Σ comm) whenever the capacity does not bind
(the water-filling closed form of ``formulations.model.allocation``; a lower bound
when it binds), and the λ·comm term is the tangent of that cost in the
communication time. For the knapsack-derived instances (no communication)
minimising W is exact. The plan's actual cost comes from stage 3.

Solving it
----------
Edges only go from layer k to k + 1, so the graph is a DAG and a dynamic
program over layers replaces Dijkstra. A layer is an array over
(model, time bucket, loss bucket), restricted to the bounding box of the live
states, and an edge class (m → m') is one shifted element-wise minimum
(min-plus propagation with a constant shift in i and j) — numpy does a whole
layer in |M|² vectorised operations. The layer's predecessor model is stored
(int8) for path recovery. Once every live state costs at least the best sink
found, later layers cannot improve (weights are positive) and the DP stops.

:func:`deplbench.solvers.expanded.reference.solve_networkx` builds the very same graph explicitly with networkx
(reachable vertices, or every vertex of the paper's definition with
``full=True``) and runs Dijkstra to Ω: the reference the tests and
``perf/depl_targets.py`` compare against.

Modules
-------
This module is the entry point and re-exports the public names of
:mod:`deplbench.solvers.expanded.spec` (:class:`GraphSpec`, :class:`PathResult`,
:func:`build_spec`: rounding the features into the integer graph) and
:mod:`deplbench.solvers.expanded.dp` (:func:`solve_dp`, :func:`solve_dp_labels`: the
layered DPs).

References
----------
DepL paper, Sec. IV-B and Property 2; G. Xue et al., "Finding a path subject
to many additive QoS constraints", IEEE/ACM ToN 2007 (ref. [21]).
"""

from __future__ import annotations

# Re-exported: the old import path of every public name keeps working.
from deplbench.solvers.expanded.dp import solve_dp, solve_dp_labels  # noqa: F401
from deplbench.solvers.expanded.spec import GraphSpec, PathResult, build_spec  # noqa: F401

__all__ = ["GraphSpec", "PathResult", "build_spec", "solve_dp", "solve_dp_labels"]
