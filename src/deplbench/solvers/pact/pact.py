"""PACT (Performance-Aware Compression and Training), adapted to the DepL problem.

PACT (Malandrino et al., the predecessor the DepL paper's best-exp builds on)
makes one decision per epoch with three steps (PACT Sec. V, Algs. 1–3):

1. **Expanded graph** (Alg. 1): vertices (k, m, n, ℓ, T) with the loss ℓ
   computed with *robust* estimators of the loss change and ℓ, T rounded
   *up* to multiples of the resolutions γ_ℓ, γ_T; an edge per action
   (m', n') weighted by the energy of the action; every vertex with
   ℓ ≤ ℓmax and T ≤ Tmax is joined to a virtual sink Ω.
2. **Feasible paths** (Alg. 2): from the current vertex, the shortest path
   to every vertex joined to Ω.
3. **Choosing the action** (Alg. 3): each path p gets
   ``score = weight[p] · risk / opp`` where ``opp = Le / Lr`` ≥ 1 is the
   ratio of the expected to the robust loss change along p and ``risk`` ≥ 1
   compares the cheapest way, after p's first action, to reach Ω through a
   vertex of the current model; the first action of the best path is
   enacted, and the procedure repeats at the next epoch.

How each element maps onto this suite (every interpretation we made)
--------------------------------------------------------------------
* **Robust estimators** (PACT Sec. IV uses the 0.95 quantile of a neural
  predictor): per-step upper quantiles of the instance's own loss law (8):
  ``λ_rob^run(k, m) = −γ(S) A_m decay_m(k) · X_m.ppf(1 − q)`` (a small X is a
  slow epoch) and ``λ_rob^change(m, m') = jump(m, m').ppf(q)``, with
  ``q = robust_quantile`` (default 0.95 as in PACT); when no path reaches
  ℓmax at that q, the largest q ≥ ``min_robust_quantile`` (default 0.5, the
  median) that admits one is found by bisection (``Pact._robust_graph``;
  the q used is in the diagnostics). Expected estimators use
  E[X] and E[jump] (the median where a mean is undefined). Summing per-step
  quantiles bounds no quantile of the sum exactly; it is usually far more
  conservative than the ω-quantile of ℓ(K) for long runs and can be less so
  for very short ones — that is PACT's design, and every plan is checked
  below.
* **Energy of an action.** In the DepL problem x is continuous and shared
  through the deadline, so one epoch has no fixed energy. The edge weight is
  ``sqrt(c(m', S) κ(n'))``: the epoch's additive share of the real-x optimum
  ``(Σ_k sqrt(c_k κ_k))² / (Tmax − Σ_k comm_k)`` of
  :mod:`~deplbench.formulations.model.allocation` (exact when no capacity binds).
  Minimising the summed weight is therefore minimising cost up to the
  communication term. The *score* uses that closed form of the full plan
  (committed prefix + p) as ``weight[p]``; ``risk`` compares sums of edge
  weights. The returned plan's allocation is the exact
  :func:`~deplbench.formulations.model.allocation.allocate` optimum.
* **Time of an action** = the minimum epoch time c/r + s/b (full capacity):
  a path is deadline-feasible iff its minimum total time ≤ Tmax, which is
  exactly when :func:`allocate` finds a feasible x. Two modes:
  ``time_resolution > 0`` is PACT's time axis, T rounded up per step (Alg. 1
  line 18, conservative), collapsed to one bucket when K̄ epochs of the
  slowest usable (model, cluster) fit in Tmax. ``time_resolution = 0``
  (default) drops the axis and carries each vertex's exact elapsed time as
  a label of its least-weight path among those that can still reach ℓmax by
  Tmax (their time plus the vertex's least time to go,
  :mod:`~deplbench.solvers.pact.deadline`). Why the
  default deviates: with K̄ = 100 epochs of ≈1–4 time units and Tmax = 200
  (realistic family), a γ_T coarse enough to keep |V| ∝ (Tmax/γ_T)·(ℓ(0)/γ_ℓ)
  tractable costs up to one bucket per epoch in rounding, i.e. caps plans at
  Tmax/γ_T epochs; fine enough, the graph is too big to re-plan 100 times.
  The label mode is exact for feasibility (a path is found whenever one
  exists) but may lose a faster-but-costlier alternative merged at a vertex
  where the cheaper one can finish too; the risk factor's completions ignore
  the deadline in that mode (a relaxation).
* **Resolutions**: γ_ℓ = (ℓ(0) − ℓmax)/``loss_resolution`` so ℓ(0) and ℓmax
  are grid points (default max(200, 20·K̄) buckets, which bounds the
  round-up loss of a K̄-epoch path to 5% of ℓ(0) − ℓmax); γ_T =
  Tmax/``time_resolution``. ℓ is rounded up per step (Alg. 1 line 17).
  Vertices above ℓ(0) + max robust jump are dropped.
* **Feasible vertices are absorbing**: once the robust loss meets ℓmax the
  run can stop (edge weights are ≥ 0), so all ℓ ≤ ℓmax share one bucket and
  have no out-edges; Alg. 1's vertex set is otherwise built only where it is
  reachable, layer by layer (the graph is a DAG layered by k), as dense
  numpy arrays of shape (|M|, |N|, loss buckets, time buckets).
* **Initial state**: epoch 0 has no model; the first action is any
  (m, n) and pays no switch jump. PACT's risk factor needs a current model,
  so it is 1 for the first decision.
* **Risk factor** (Alg. 3 lines 10–12): ``p[1]`` is read as the vertex
  reached by p's first action (reading it as the current vertex makes
  risk ≤ 1, contradicting the paper's risk ≥ 1). ``Wr`` = first edge's
  weight + the cheapest completion from there that passes through a vertex
  of the current model m and ends at Ω; ``risk = max(1, Wr / weight_W(p))``
  in edge-weight units. Where no such completion exists (pruning cannot be
  undone: no switch back to m) the paper's ratio is infinite, which would
  forbid every irreversible switch — yet PACT's own scenario only prunes
  forward (L → M → S) and PACT does switch (its Figs. 6–7). Such actions
  get ``irreversible_risk`` (default 1: neutral). On the realistic
  families (forward-only switches) a penalty of 1.2 or 2 kept PACT on its
  first model far longer and raised its cost 1.1–2.6× (AlexNet ℓmax 5–13,
  PACT-VGG11 ℓmax 0.15–0.45) in our runs.
* **Opportunity** (Alg. 3 line 9): ``opp = max(1, Le / Lr)`` with Le, Lr the
  exact (unrounded) expected and robust loss changes along p (both < 0 on a
  path that reaches ℓmax).
* **Re-planning**: PACT observes the true loss after each epoch. A plan of
  this suite is a fixed :class:`~deplbench.formulations.model.plan.Plan` chosen
  before training, so the realised loss is not available; PACT's *static
  plan* (open loop, :func:`pact_decisions`) re-plans from the
  *robust-estimated* state instead (the vertex its committed action lands
  on), commits one action, and repeats until that state meets ℓmax.
  Because the committed action's path stays available, every re-plan has a
  candidate and the loop ends within K̄ epochs.
* **Closed loop** (``mode``): in the closed-loop simulator
  (:mod:`deplbench.formulations.evaluation.closed_loop`, :meth:`Pact.closed_loop_policy`)
  ``mode="closed-loop"`` (default: PACT as its paper runs it) re-plans every
  epoch from the *observed* state (:mod:`deplbench.solvers.pact.policy`,
  which states its interpretations); ``mode="open-loop"`` follows the static
  plan. The static plan — hence every static number — is the same in both
  modes, which is why the paper's mode can be the default. Alg. 3's scoring
  is :func:`~deplbench.solvers.pact.graph.score_paths`, shared by both.
* **Meeting (3) for real**: the finished plan is checked on the in-sample
  scenarios (SAA, as the MILP) and out-of-sample
  (:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`, independent
  stream; it passes when the evaluator's verdict is ``feasible``, i.e. the
  confidence interval of the ω-quantile lies at or below ℓmax, the rule
  DepL uses); if either misses, PACT trains on with its last action, as
  best-exp does and as PACT itself would when the observed loss is still
  above target; horizon or deadline exhausted → ``no_solution`` (no plan
  found; infeasibility is not proven).
* **Datasets**: PACT's nodes own their data; here one dataset set S is given
  to every training cluster and PACT runs once per candidate S
  (:func:`~deplbench.solvers.baselines.static.dataset_subsets`), keeping the
  cheapest verified plan. β enters the final cost, not the edge weights.
  Under the printed eq. (6) the cluster never changes.

Complexity: one backward DP per distinct current model and one forward DP
per epoch, each O(K̄ · |M|²|N| · L · T) array work with L, T the bucket
counts (PACT Property 2's bound, restricted to reachable layers).

Modules: the expanded graph (Algs. 1–2 and the risk term's backward DP) is
:class:`~deplbench.solvers.pact.graph.ExpandedGraph`, re-exported here; the
data settings, plan costs and checks shared with the static baselines are in
:mod:`deplbench.solvers.baselines.common`. This module holds the decision
loop (Alg. 3, :func:`pact_decisions`) and the :class:`Pact` solver.

References
----------
PACT paper Sec. IV (estimators), Sec. V (Algs. 1–3, Property 3), Sec. VI-B;
DepL paper Sec. III eqs. (1)–(8) and Sec. VI-B.
"""

from __future__ import annotations

from dataclasses import dataclass

from deplbench.errors import SolverError
from deplbench.formulations.model.result import SolveResult
from deplbench.solvers.base import Param, PlotStyle, Solver
from deplbench.solvers.baselines.common import (
    TIME_LIMIT_PARAM,
    DataSetting,
    choice_cost,
    common_parameters,
    data_setting,
    dataset_subsets,
    in_sample_scenarios_checked,
    no_solution,
    oos_checker,
    success,
    train_on,
)
from deplbench.solvers.pact.graph import ExpandedGraph, score_paths

#: Exponents of ``work["graph_vertices"]`` implied by the graph's layout
#: (read by reports/complexity.py): K̄·|M|·|N|·L·T vertices per
#: dataset set with L = max(200, 20·K̄) loss buckets by default (∝ K̄ for
#: K̄ ≥ 10) and T = 1 time bucket by default; S sizes only the SAA check.
WORK_EXPONENTS = {"graph_vertices": {"horizon": 2.0, "n_models": 1.0, "n_clusters": 1.0,
                                     "scenarios": 0.0}}


def _loss_resolution(instance, params) -> int:
    """The loss buckets used: the parameter, or max(200, 20·K̄) when it is 0.

    Alg. 1 rounds ℓ up at every step, so a path of K epochs may lose up to
    K·γ_ℓ of its robust improvement; 20·K̄ buckets bound that to 5% of
    ℓ(0) − ℓmax.
    """
    value = int(params["loss_resolution"])
    return value if value > 0 else max(200, 20 * instance.horizon)


@dataclass
class PactRun:
    """Outcome of PACT's decision loop on one dataset set."""

    models: list
    clusters: list
    decisions: list
    reason: str = ""
    #: Work counter: shortest-path computations (one-to-all from
    #: the current vertex, plus the via-current-model costs of the risk term).
    sp_calls: int = 0


def pact_decisions(graph: ExpandedGraph, irreversible_risk: float = 1.0) -> PactRun:
    """PACT's open loop: re-plan from the robust-estimated state, commit one action.

    Parameters
    ----------
    graph : ExpandedGraph
    irreversible_risk : float, default 1.0
        Risk factor of an action after which no path through the current
        model reaches Ω (the decision cannot be undone).

    Returns
    -------
    PactRun
        The committed (model, cluster) indices; empty with a reason when no
        feasible path exists from the initial state.
    """
    inst = graph.instance
    e, m, n, b, t = 0, None, None, graph.b0, 0
    W_prefix, C_prefix, T_prefix = 0.0, 0.0, 0.0
    models: list[int] = []
    clusters: list[int] = []
    decisions: list = []
    sp_calls = 0
    while b > 0:
        paths = graph.feasible_paths(e, m, n, b, t, T_prefix)
        sp_calls += 1
        if paths is None:
            if e == 0:
                return PactRun([], [], [], "no path of the expanded graph reaches ℓmax under the robust "
                               f"estimators within K̄ = {graph.K} epochs and Tmax = {inst.time_max}",
                               sp_calls=sp_calls)
            return PactRun(models, clusters, decisions, f"no feasible path left at epoch {e}",  # pragma: no cover
                           sp_calls=sp_calls)
        if m is not None:
            sp_calls += 1
        best, score, opp, risk = score_paths(graph, paths, e, m, b, t, W_prefix, C_prefix, irreversible_risk)
        a = int(paths["first"][best])
        m2, n2 = a // graph.N, a % graph.N
        b1, t1 = graph.landing(e, m, b, t, m2, n2)
        decisions.append({
            "epoch": e + 1, "model": inst.models[m2].name, "cluster": inst.clusters[n2].name,
            "candidates": int(paths["W"].size), "score": float(score[best]), "opp": float(opp[best]),
            "risk": float(risk[best]), "robust_loss": inst.loss_max + b1 * graph.gl,
        })
        W_prefix += graph.weight[m2, n2]
        C_prefix += graph.comm[m2, n2]
        T_prefix += graph.tau[m2, n2]
        models.append(m2)
        clusters.append(n2)
        e, m, n, b, t = e + 1, m2, n2, b1, t1
    return PactRun(models, clusters, decisions, sp_calls=sp_calls)


class Pact(Solver):
    """PACT (PACT paper Sec. V, Algs. 1–3) on the DepL problem.

    See the module docstring for the mapping of every PACT element onto
    problem (2)–(6) and the interpretations made: robust estimators as
    per-step quantiles of the loss law, edge weight sqrt(c κ) with the exact
    real-x allocation at the end, re-planning from the robust-estimated
    state, risk capped where a decision cannot be undone, training on until
    the quantile target is met in- and out-of-sample.
    """

    name = "pact"
    label = "PACT"
    style = PlotStyle("#9467bd", "D", ":")
    description = "PACT: robust-estimator expanded graph, opportunity/risk scoring, one action per epoch"
    parameters = {
        **common_parameters(),
        "time_limit": TIME_LIMIT_PARAM,
        "robust_quantile": Param(0.95, float, "quantile of the per-step robust estimators (PACT: 0.95)",
                                 low=0.5, high=1.0 - 1e-9),
        "loss_resolution": Param(0, int, "loss buckets between ℓmax and ℓ(0) (γ_ℓ = span / value); "
                                 "0 = auto, max(200, 20·K̄)", low=0),
        "time_resolution": Param(0, int, "time buckets up to Tmax (PACT's time axis, γ_T = Tmax / value); "
                                 "0 = no time axis, exact time carried along paths", low=0),
        "irreversible_risk": Param(1.0, float, "risk factor of a decision that cannot be undone (≥ 1)", low=1.0),
        "min_robust_quantile": Param(0.5, float, "lowest robust quantile tried when ℓmax is unreachable "
                                     "at robust_quantile", low=0.0, high=1.0 - 1e-9),
        "quantile_bisections": Param(6, int, "bisection steps of that search (0 = go straight to the minimum)",
                                     low=0),
        "mode": Param("closed-loop", str, "closed-loop: in closed-loop simulation PACT re-plans every epoch "
                      "from the observed state (its paper); open-loop: it follows its plan (re-planned from "
                      "robust predictions). The static plan is the same in both modes",
                      choices=("closed-loop", "open-loop")),
        "closed_loop_resolution": Param(500, int, "closed loop: loss buckets of the re-planning graph "
                                        "(0 = loss_resolution's)", low=0),
        "memo_loss": Param(10, int, "closed loop: loss buckets merged into one decision cell", low=1),
        "memo_time": Param(20, int, "closed loop: elapsed-time cells up to Tmax for the decision memo",
                           low=1),
    }

    def closed_loop_policy(self, instance, result, **params):
        """Closed-loop PACT (:class:`~deplbench.solvers.pact.policy.PactPolicy`) in
        ``mode="closed-loop"``; None (the plan is simulated as a fixed plan) in
        ``mode="open-loop"`` or when the run returned no plan.

        The policy re-uses the open-loop run's choices: its dataset set and
        the robust quantile its graph was built at (``diagnostics``).
        """
        from deplbench.solvers.pact.policy import PactPolicy

        params = self.resolve_params(params)
        diag = result.diagnostics or {}
        if params["mode"] == "open-loop" or result.plan is None or "datasets" not in diag:
            return None
        subset = tuple(diag["datasets"])
        q = float(diag["graphs"][",".join(subset)]["robust_quantile"])
        res = params["closed_loop_resolution"] or _loss_resolution(instance, params)
        graph = ExpandedGraph(instance, data_setting(instance, subset), q, res, params["time_resolution"])
        return PactPolicy(instance, graph, result.plan.datasets, result.plan, params["irreversible_risk"],
                          params["memo_loss"], params["memo_time"])

    def run_settings(self, instance, params) -> SolveResult:
        """Solve with the resolved parameters, under the deadline :meth:`Solver.run` or
        :func:`~deplbench.solvers.run.solve` opened."""
        self._validate(instance, params)
        scen = in_sample_scenarios_checked(instance, params["scenarios"], params["seed"], "PACT")
        runs = []
        graph_info = {}
        work: dict[str, float] = {"graph_vertices": 0, "graphs_built": 0, "replans": 0, "shortest_path_calls": 0}
        for subset in dataset_subsets(instance, params["max_dataset_subsets"]):
            st = data_setting(instance, subset)
            graph, tried = self._robust_graph(instance, st, params)
            res = pact_decisions(graph, params["irreversible_risk"])
            work["graph_vertices"] += int(graph.n_vertices)
            work["graphs_built"] += len(tried)
            work["replans"] += max(len(res.decisions), 1)
            work["shortest_path_calls"] += res.sp_calls
            graph_info[",".join(subset)] = {
                "vertices": graph.n_vertices, "loss_buckets": graph.Lb, "time_buckets": graph.Tb,
                "gamma_loss": graph.gl, "gamma_time": graph.gT, "epochs": len(res.models),
                "robust_quantile": graph.robust_quantile, "quantiles_tried": tried, "reason": res.reason,
            }
            if res.models:
                _, cost = choice_cost(instance, st, res.models, res.clusters)
                runs.append((cost, st, res))
        # Work counters: vertices of the graphs decided on, robust
        # graphs built (the quantile search), re-plans (one per committed
        # epoch) and shortest-path computations, also per re-plan.
        work["shortest_path_calls_per_replan"] = work["shortest_path_calls"] / max(work["replans"], 1)
        diag = {"graphs": graph_info, "scenarios": scen.n_scenarios, "work": work,
                "work_exponents": WORK_EXPONENTS}
        if not runs:
            first = next(iter(graph_info.values()))
            return no_solution(first["reason"], **diag)
        runs.sort(key=lambda r: r[0])
        check = oos_checker(instance, params)
        reason = ""
        for cost, st, res in runs:
            if check.exhausted:
                break
            plan, models, _, added, reason = train_on(instance, st, res.models, res.clusters, scen, check)
            if plan is not None:
                return success(
                    instance, plan, **diag, datasets=list(st.subset), pact_epochs=len(res.models),
                    pact_cost=cost, trained_on=added, decisions=res.decisions,
                    oos_checks=check.used, last_check=check.last,
                )
        return no_solution(f"PACT's plans did not meet the target when trained on: {reason}", **diag,
                           oos_checks=check.used)

    @staticmethod
    def _robust_graph(instance, st: DataSetting, params) -> tuple[ExpandedGraph, list[float]]:
        """The expanded graph at ``robust_quantile``, or, when no path of it
        reaches ℓmax, at the largest quantile in [``min_robust_quantile``,
        ``robust_quantile``] that has one (bisection).

        PACT sums per-step 0.95 quantiles but re-anchors on the observed loss
        every epoch; an open-loop plan compounds that pessimism over the whole
        run, so on the paper's own targets the 0.95 graph often has no
        feasible path at all (e.g. AlexNet ℓmax = 9, K̄ = 100). Lowering q
        until a path exists keeps PACT's structure; whether the plan really
        meets (3) is then decided by the SAA and out-of-sample checks.
        """
        def build(q):
            return ExpandedGraph(instance, st, q, _loss_resolution(instance, params), params["time_resolution"])

        q_hi = params["robust_quantile"]
        graph = build(q_hi)
        tried = [q_hi]
        if graph.has_path():
            return graph, tried
        q_lo = params["min_robust_quantile"]
        low = build(q_lo)
        tried.append(q_lo)
        if not low.has_path() or q_lo >= q_hi:
            return low, tried
        for _ in range(params["quantile_bisections"]):
            mid = 0.5 * (q_lo + q_hi)
            g = build(mid)
            tried.append(mid)
            if g.has_path():
                q_lo, low = mid, g
            else:
                q_hi = mid
        return low, tried

    @classmethod
    def check_params(cls, resolved) -> tuple[str, str] | None:
        """The quantile search runs down from ``robust_quantile`` to ``min_robust_quantile``."""
        if resolved["min_robust_quantile"] > resolved["robust_quantile"]:
            return "min_robust_quantile", (f"must be <= robust_quantile ({resolved['robust_quantile']}), "
                                           f"got {resolved['min_robust_quantile']}")
        return None

    @staticmethod
    def _validate(instance, params) -> None:
        """Refuse resolutions whose graph on ``instance`` would be too large (→ status error,
        one line); the parameters alone are checked by :meth:`check_params`."""
        loss = _loss_resolution(instance, params)
        cells = instance.horizon * instance.n_models * instance.n_clusters * loss * (params["time_resolution"] + 1)
        # The risk factor keeps one float32 layer stack (4 bytes per vertex)
        # per current model: cap it at ~400 MB.
        if cells > 1e8:
            raise SolverError(
                f"loss_resolution/time_resolution: the expanded graph would have {cells:.3g} vertices, over 1e8 "
                f"(K̄ = {instance.horizon} × |M| = {instance.n_models} × |N| = {instance.n_clusters} × "
                f"{loss} loss buckets × {params['time_resolution'] + 1} time buckets); lower the resolutions")


__all__ = ["Pact", "ExpandedGraph", "pact_decisions", "score_paths", "PactRun"]
