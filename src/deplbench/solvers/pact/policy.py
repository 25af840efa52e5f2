"""PACT as its paper runs it: one action per epoch, re-planned from the observed state.

PACT (PACT paper Sec. V) observes the loss after every epoch and re-runs
Algs. 2–3 from the state s(k) = (k, ℓ(k), T(k), m, n) it is in (Sec. III-C).
:class:`PactPolicy` does exactly that inside the closed-loop simulator of
:mod:`deplbench.formulations.evaluation.closed_loop`; the open-loop variant (re-planning
from the robust-*predicted* state, the only thing a fixed plan can do) stays
in :func:`deplbench.solvers.pact.pact.pact_decisions` and is what ``pact`` returns
as its static plan in both modes.

Interpretations (each one ours; PACT leaves them open)
------------------------------------------------------
* **Estimators conditioned on the observed loss.** PACT's predictors take
  the loss sequence so far as input. In the suite's loss model (DepL
  eq. (8)) the increments are independent of the past, so the conditional
  robust and expected estimators equal the unconditional ones; conditioning
  means re-anchoring the expanded graph at the observed loss: the current
  vertex is the loss bucket b = ⌈(ℓ(k) − ℓmax)/γ_ℓ⌉ (Alg. 1 line 17's
  round-up) of a graph at the robust quantile the open-loop run used, with
  ``closed_loop_resolution`` loss buckets (default 500, coarser than the
  open loop's max(200, 20·K̄): every decision re-anchors on the observed
  loss, so the per-step round-up only biases the predicted remainder; the
  cost and time of 300, 500 and 2000 buckets side by side are in
  docs/performance.md, "Measurements behind design choices").
* **Stopping.** An observed ℓ(k) ≤ ℓmax is PACT's feasible vertex (joined to
  Ω): the run stops.
* **Elapsed time.** The current vertex carries the realised elapsed time
  T(k); a path is feasible when its minimum time fits in Tmax − T(k).
* **Cost in the score and the allocation.** Sunk cost is sunk: the score's
  weight[p] is the closed-form real-x cost of the remaining path with the
  remaining time, W_p² / (Tmax − T(k) − C_p) (open loop: the whole plan's
  closed form). The next epoch runs at that path's real-x optimum,
  x = min(r(n), sqrt(c/κ) · W_p / (Tmax − T(k) − C_p)) — the first step of
  the allocation the chosen path would use (``formulations.model.allocation``'s
  closed form; capacity caps it).
* **No feasible path** from the observed state (the robust estimate cannot
  reach ℓmax in the time left): PACT has no feasible action; the run trains
  on with its current model and cluster at full capacity (the open loop's
  train-on rule, best effort); the deadline or K̄ then ends it.
* **Discretised decisions (memo).** The decision is a function of (k, m, n,
  loss bucket, elapsed time); the policy computes it once per distinct
  (k, m, n, ⌈b / memo_loss⌉·memo_loss, ⌈T / γ_memo⌉·γ_memo) with γ_memo =
  Tmax / ``memo_time`` and reuses it for every run in that cell. The
  representative state is the cell's *upper* corner (more loss, less time
  left: conservative, like Alg. 1's round-ups). ``memo_loss = 1`` decides
  on PACT's own loss grid; the allocation always uses the run's exact T(k).

References
----------
PACT paper Sec. III-C (state and value), Sec. V (Algs. 1–3); DepL paper
eqs. (1)–(8).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.evaluation.closed_loop import STOP, ClosedLoopPolicy, Decision, PolicyState, reached
from deplbench.formulations.model.plan import Plan
from deplbench.solvers.baselines.common import DataSetting
from deplbench.solvers.pact.graph import CEIL_EPS, ExpandedGraph, score_paths


class PactPolicy(ClosedLoopPolicy):
    """Closed-loop PACT (module docstring).

    Parameters
    ----------
    instance : Instance
    graph : ExpandedGraph
        The robust expanded graph of the dataset set the open-loop run chose.
    datasets : dict
        z(d, n) of that run's plan.
    reference_plan : Plan or None
        PACT's open-loop plan (its runs share its draws).
    irreversible_risk : float
    memo_loss : int
        Loss buckets of PACT's grid merged into one decision cell (≥ 1).
    memo_time : int
        Time cells up to Tmax for the decision memo (≥ 1).
    """

    name = "PACT (closed loop)"

    def __init__(self, instance, graph: ExpandedGraph, datasets: dict, reference_plan: Plan | None,
                 irreversible_risk: float = 1.0, memo_loss: int = 10, memo_time: int = 20):
        self.instance = instance
        self.graph = graph
        self.setting: DataSetting = graph.setting
        self._datasets = {c: list(d) for c, d in datasets.items()}
        self.reference_plan = reference_plan
        self.irreversible_risk = float(irreversible_risk)
        self.memo_loss = max(1, int(memo_loss))
        self.gT_memo = instance.time_max / max(1, int(memo_time))
        self._memo: dict = {}
        self.replans = 0
        self.batches = 0
        self.no_path = 0

    def datasets(self) -> dict[str, list[str]]:
        return self._datasets

    def describe(self) -> dict:
        return {"replans": self.replans, "batched_dps": self.batches, "memo_cells": len(self._memo),
                "no_path_cells": self.no_path,
                "loss_buckets": int(self.graph.b0), "gamma_loss": float(self.graph.gl),
                "robust_quantile": float(self.graph.robust_quantile),
                "memo_loss": self.memo_loss, "memo_time_step": float(self.gT_memo)}

    # ------------------------------------------------------------------
    def _choose_many(self, e: int, m: int | None, n: int | None, cells) -> list:
        """(m2, n2, W, C) of the best path from each (loss bucket, time) cell,
        or None (no path); memoised, the missing cells in one batched DP."""
        g = self.graph
        todo = [c for c in cells if (e, m, n) + c not in self._memo]
        if todo:
            self.replans += len(todo)
            self.batches += 1
            ok = [c for c in todo if e < g.K and c[0] < g.Lb]
            results = dict.fromkeys(todo)
            if ok:
                all_paths = g.feasible_paths_batch(e, m, n, [c[0] for c in ok], [c[1] for c in ok])
                for c, paths in zip(ok, all_paths):
                    if paths is None:
                        continue
                    best, _, _, _ = score_paths(g, paths, e, m, c[0], 0, 0.0, c[1], self.irreversible_risk)
                    a = int(paths["first"][best])
                    results[c] = (a // g.N, a % g.N, float(paths["W"][best]), float(paths["C"][best]))
            for c, r in results.items():
                self.no_path += r is None
                self._memo[(e, m, n) + c] = r
        return [self._memo[(e, m, n) + c] for c in cells]

    def decide(self, state: PolicyState) -> Decision:
        inst, g = self.instance, self.graph
        n = state.size
        out = Decision.constant(n, STOP)
        live = ~reached(state.loss, inst.loss_max) if state.epoch > 0 else np.ones(n, dtype=bool)
        if not live.any():
            return out
        with np.errstate(invalid="ignore"):
            b = np.ceil((state.loss - inst.loss_max) / g.gl - CEIL_EPS).astype(np.int64)
        b = np.maximum(b, 1)
        bm = -(-b // self.memo_loss) * self.memo_loss
        tm = np.ceil(state.time / self.gT_memo - CEIL_EPS) * self.gT_memo
        cells = np.stack([bm, tm], axis=1)[live]
        rows = np.nonzero(live)[0]
        uniq, inv = np.unique(cells, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        st = self.setting
        choices = self._choose_many(state.epoch, state.model, state.cluster,
                                    [(int(bb), float(tt)) for bb, tt in uniq])
        for j, choice in enumerate(choices):
            sel = rows[inv == j]
            if choice is None:
                if state.model is None:
                    continue      # no path at all from the start: the run never begins
                m2, n2 = state.model, state.cluster
                x = np.full(sel.size, inst.capacity[n2])
            else:
                m2, n2, W, C = choice
                budget = inst.time_max - state.time[sel] - C
                kappa = inst.unit_cost[n2]
                r = inst.capacity[n2]
                if kappa > 0:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        x = math.sqrt(st.compute[m2] / kappa) * W / budget
                    x = np.where((budget > 0) & np.isfinite(x), np.minimum(x, r), r)
                else:
                    x = np.full(sel.size, r)
            out.model[sel], out.cluster[sel], out.allocation[sel] = m2, n2, x
        return out


__all__ = ["PactPolicy"]
