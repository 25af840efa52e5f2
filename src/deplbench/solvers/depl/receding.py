"""Receding-horizon DepL: DepL re-planned from the observed state.

The static DepL (:mod:`deplbench.solvers.depl.depl`) draws up one plan whose
ω-quantile of ℓ(K) is proven ≤ ℓmax (eq. (3)). Run closed loop
(:mod:`deplbench.formulations.evaluation.closed_loop`), an orchestrator sees ℓ(k) after
every epoch: :class:`RecedingPolicy` follows DepL's plan, stops as soon as
the observed ℓ(k) ≤ ℓmax, and every ``replan_every`` epochs re-solves DepL
from where the run is — the natural counterpart of closed-loop PACT
(:mod:`deplbench.solvers.pact.policy`). Its static plan (``run``) is DepL's.

The re-planned problem (every interpretation is ours)
-----------------------------------------------------
At epoch k with observed loss ℓ(k), elapsed time T(k), current model m:

* **Remaining budget**: Tmax − T(k) and K̄ − k epochs.
* **Remaining risk**: the same level, P(ℓ(K) > ℓmax | observed state) ≤ 1 − ω,
  re-imposed conditionally at every re-plan (the increments of eq. (8) are
  independent of the past, so conditioning means starting from ℓ(k)). This
  does not bound the closed-loop violation probability by 1 − ω (re-planning
  may spend the risk again); the simulator measures it.
* **Epoch index**: the run term decays with the global epoch index
  (eq. (8): 1/sqrt(k + B_m)), so the sub-instance shifts B_m by k.
* **Models** reachable from m in the switch graph (m included). The jump of
  a switch in the re-plan's *first* epoch is not foreseen (the sub-instance
  has no current model); the simulation pays it, the next re-plan sees it.
* **Data**: z(d, n) is fixed before training (eq. (6)); the sub-instance
  keeps only the clusters that hold data and its transfers are free (β was
  paid). DepL's dataset choice on the sub-instance is ignored.
* **Discretised re-plans (memo)**: a re-plan is computed once per cell
  (k, m, n, ⌈ℓ/δℓ⌉δℓ, ⌈T/δT⌉δT) with δℓ = (ℓ(0) − ℓmax)/``memo_loss`` and
  δT = Tmax/``memo_time``, at the cell's upper corner (more loss, less
  time: conservative) and shared by all runs in it.
* **No plan** from a cell (DepL's ``no_solution`` there): the run keeps its current
  plan; past the end of a plan it trains on with the plan's last epoch.

References
----------
DepL paper Sec. IV (the heuristic), eqs. (1)–(8).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from deplbench.formulations.evaluation.closed_loop import STOP, ClosedLoopPolicy, Decision, PolicyState, reached
from deplbench.formulations.evaluation.evaluate import plan_indices
from deplbench.formulations.model.plan import Plan
from deplbench.params import Param
from deplbench.solvers.base import PlotStyle, Solver
from deplbench.solvers.depl.depl import DepL
from deplbench.solvers.run import solve


def _reachable(allowed: np.ndarray, m: int) -> list[int]:
    seen, todo = {m}, [m]
    while todo:
        a = todo.pop()
        for b in np.nonzero(allowed[a])[0]:
            if int(b) not in seen:
                seen.add(int(b))
                todo.append(int(b))
    return sorted(seen)


def sub_instance(instance, epoch: int, model: int, loss: float, elapsed: float, clusters: list[str]):
    """The problem left at epoch ``epoch`` (module docstring), or None when
    no epoch or no time is left."""
    left_t = instance.time_max - elapsed
    left_k = instance.horizon - epoch
    if left_t <= 0 or left_k < 1:
        return None
    data = instance.model_dump(by_alias=True)
    keep = {instance.models[i].name for i in _reachable(instance.allowed, model)}
    models = []
    for md in data["models"]:
        if md["name"] in keep:
            md = dict(md)
            if md.get("decay") == "inv_sqrt":
                md["loss_offset"] = float(md.get("loss_offset", 0.0)) + epoch
            models.append(md)
    data["models"] = models
    data["switches"] = [s for s in data["switches"] if s["from_model"] in keep and s["to_model"] in keep]
    data["clusters"] = [c for c in data["clusters"] if c["name"] in clusters]
    data["transfer_costs"] = []
    data.update(initial_loss=float(loss), time_max=float(left_t), horizon=int(left_k))
    return instance.with_changes(**data)


class RecedingPolicy(ClosedLoopPolicy):
    """DepL re-planned every ``replan_every`` epochs from the observed state.

    ``tag`` = index of the plan a run follows in :attr:`plans` (0: DepL's
    static plan); each plan is stored as (start epoch, models, clusters, x).
    """

    name = "DepL (receding horizon)"

    def __init__(self, instance, plan: Plan, depl_params: dict, replan_every: int = 10,
                 memo_loss: int = 10, memo_time: int = 10):
        self.instance = instance
        self.reference_plan = plan
        self._datasets = {c: list(d) for c, d in plan.datasets.items() if d}
        self.depl_params = dict(depl_params)
        self.replan_every = int(replan_every)
        self.dl = (instance.initial_loss - instance.loss_max) / max(1, int(memo_loss))
        self.dT = instance.time_max / max(1, int(memo_time))
        m, c, _ = plan_indices(instance, plan)
        self.plans = [(0, m, c, np.array(plan.allocations, dtype=float))]
        self._memo: dict = {}
        self.replans = 0
        self.failed = 0

    def datasets(self) -> dict[str, list[str]]:
        return self._datasets

    def describe(self) -> dict:
        return {"replans": self.replans, "replans_without_plan": self.failed, "plans": len(self.plans),
                "replan_every": self.replan_every, "memo_loss_step": self.dl, "memo_time_step": self.dT}

    def _replan(self, k: int, m: int, n: int, loss: float, elapsed: float) -> int | None:
        key = (k, m, n, loss, elapsed)
        if key in self._memo:
            return self._memo[key]
        self.replans += 1
        pid = None
        sub = sub_instance(self.instance, k, m, loss, elapsed, list(self._datasets))
        if sub is not None:
            # through solve(): the sub-instance is preprocessed like any other,
            # and a failure inside DepL becomes status "error" (no plan), not a crash
            res = solve(sub, DepL, evaluate=False, **self.depl_params)
            if res.plan is not None and res.plan.n_epochs:
                im = np.array([self.instance.model_index[e.model] for e in res.plan.epochs])
                ic = np.array([self.instance.cluster_index[e.cluster] for e in res.plan.epochs])
                self.plans.append((k, im, ic, np.array(res.plan.allocations, dtype=float)))
                pid = len(self.plans) - 1
        self.failed += pid is None
        self._memo[key] = pid
        return pid

    def decide(self, state: PolicyState) -> Decision:
        n = state.size
        k = state.epoch
        live = ~reached(state.loss, self.instance.loss_max) if k > 0 else np.ones(n, dtype=bool)
        tags = np.full(n, state.tag, dtype=np.int64)
        if k > 0 and self.replan_every > 0 and k % self.replan_every == 0 and live.any():
            lc = np.ceil(state.loss / self.dl - 1e-9) * self.dl
            tc = np.ceil(state.time / self.dT - 1e-9) * self.dT
            cells = np.stack([lc, tc], axis=1)
            for cell in np.unique(cells[live], axis=0):
                sel = live & (cells[:, 0] == cell[0]) & (cells[:, 1] == cell[1])
                # after the first epoch (k > 0) every run has a current model and cluster
                pid = self._replan(k, cast(int, state.model), cast(int, state.cluster), float(cell[0]), float(cell[1]))
                if pid is not None:
                    tags[sel] = pid
        out = Decision.constant(n, STOP)
        out.tag = tags
        for pid in np.unique(tags[live]):
            sel = live & (tags == pid)
            start, pm, pc, px = self.plans[int(pid)]
            j = min(k - start, pm.size - 1)          # past the end: train on with the last epoch
            out.model[sel], out.cluster[sel], out.allocation[sel] = pm[j], pc[j], px[j]
        return out


class DepLReceding(Solver):
    """DepL, re-planned from the observed state in closed loop (module docstring).

    Its static plan is DepL's; what differs is :meth:`closed_loop_policy`.
    """

    name = "depl-receding"
    label = "DepL (receding)"
    style = PlotStyle("#17becf", "v", "--")
    description = "DepL re-planned every few epochs from the observed loss (closed-loop simulation)"
    parameters = {
        **DepL.parameters,
        "replan_every": Param(10, int, "closed loop: epochs between re-plans", low=1),
        "memo_loss": Param(10, int, "closed loop: loss cells between ℓmax and ℓ(0) for the re-plan memo",
                           low=1),
        "memo_time": Param(10, int, "closed loop: elapsed-time cells up to Tmax for the re-plan memo", low=1),
    }

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """DepL's (:meth:`DepL.applies`): its static plan is DepL's."""
        return DepL.applies(instance)

    def run_settings(self, instance, settings):
        """DepL with its share of the parameters resolved once (passed on, not resolved again)."""
        res = DepL().run_settings(instance, {k: v for k, v in settings.items() if k in DepL.parameters})
        res.algorithm = self.name
        return res

    def closed_loop_policy(self, instance, result, **params):
        if result.plan is None:
            return None
        p = self.resolve_params(params)
        depl = {k: v for k, v in p.items() if k in DepL.parameters}
        return RecedingPolicy(instance, result.plan, depl, p["replan_every"], p["memo_loss"], p["memo_time"])


__all__ = ["DepLReceding", "RecedingPolicy", "sub_instance"]
