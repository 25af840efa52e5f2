"""*best-exp* (DepL paper Sec. VI-B, inspired by ref. [4] = PACT).

best-exp makes DepL's three decisions driven by the *expected* loss (stage
2's surrogate φ = E[Δ], no quantile), then "trains on until the quantile
target is actually met". It is composed from shared parts, not derived from
DepL:

* the decision loop of Fig. 3 (:func:`deplbench.solvers.depl.stages.decide`)
  with ``method="expected"`` and no tightening retries — the expected loss
  has no quantile margin to tighten;
* the one train-on rule (:func:`deplbench.solvers.baselines.train_on.train_on`) as the
  loop's finishing step, with best-exp's own extension: epochs of its best
  expected-loss model (largest expected loss decrease in that epoch, switch
  jump included), the ω-quantile of every extension length simulated at once
  on its own stream, each candidate re-allocated by stage 3 and confirmed by
  the out-of-sample check; horizon or deadline exhausted → ``no_solution``
  (the heuristic found no plan; infeasibility is not proven).

Its parameters are the loop's (:data:`~deplbench.solvers.depl.stages.LOOP_PARAMS`);
DepL's surrogate parameters (``quantile_method``, ``n_theta``,
``tail_share``, ``calibrate``) do not exist for best-exp.

References
----------
DepL paper Sec. VI-B ("best-exp"); PACT paper Sec. IV.
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from deplbench.formulations.evaluation.evaluate import evaluate_plan, simulate_trajectories
from deplbench.formulations.evaluation.quantile_ci import check_accepts
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import quantile_rank
from deplbench.limits import FLOAT_BYTES, check_memory
from deplbench.solvers.base import PlotStyle, Solver
from deplbench.solvers.baselines.train_on import train_on
from deplbench.solvers.depl.dataset_selection import stage_one_applies
from deplbench.solvers.depl.stages import LOOP_PARAMS, check_seed, decide, result_from, stage3, validate_loop_params


def greedy_extension(instance, last: int, start_epoch: int, count: int, gamma: float) -> list[int]:
    """Models of ``count`` extra epochs, each maximising the expected loss decrease.

    Epoch k's expected decrease with model m after ``last`` is
    γ·A_m·decay_m(k)·E[X_m] − E[jump(last → m)] (eq. (8)); a forbidden switch
    is never chosen.
    """
    means = np.array([m.improvement.mean() for m in instance.models])
    jump_mean = np.full((instance.n_models, instance.n_models), np.inf)
    np.fill_diagonal(jump_mean, 0.0)
    for p_idx, (a, b) in enumerate(instance.switch_pairs):
        jump_mean[a, b] = instance.switches[p_idx].jump.mean()
    # None only when there is no epoch to choose (count = 0: the loop below does not run)
    scale = cast(Any, instance.run_scale_for(start_epoch + count - 1) if count > 0 else None)
    out = []
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(start_epoch, start_epoch + count):
            gain = gamma * scale[k - 1] * means - jump_mean[last]
            m = int(np.argmax(np.where(np.isfinite(gain), gain, -np.inf)))
            out.append(m)
            last = m
    return out


class BestExp(Solver):
    """*best-exp* (Sec. VI-B): DepL's decisions driven by the expected loss, then
    trained on until the ω-quantile target is met out-of-sample."""

    name = "best-exp"
    label = "best-exp"
    style = PlotStyle("#ff7f0e", "o", "-")
    description = "best-exp: expected-loss model path, then trains on until the quantile target is met"
    parameters = dict(LOOP_PARAMS)

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """DepL's loop, so DepL's scope (:func:`~deplbench.solvers.depl.dataset_selection.stage_one_applies`)."""
        return stage_one_applies(instance)

    def run_settings(self, instance, settings) -> SolveResult:
        """Solve with the parameters :func:`~deplbench.solvers.run.solve` resolved once
        (:meth:`run` is the keyword front: it resolves them first)."""
        p = dict(settings)
        validate_loop_params(instance, p)
        out = decide(instance, p, "expected", finish=self._finisher(instance), retry_on_check=False)
        return result_from(self.name, instance, out, "out-of-sample check")

    @staticmethod
    def _finisher(instance):
        """The loop's finishing step: train on with best-exp's extension (see the module docstring)."""

        def finish(plan, cand, ch, p, diag):
            t0 = time.perf_counter()
            models = [int(m) for m in cand.models]
            K = len(models)
            room = max(0, instance.horizon - K)
            ext = greedy_extension(instance, models[-1], K + 1, room, ch.gamma)
            full = np.array(models + ext, dtype=int)
            # Simulate the base plan and every extension length at once (own
            # stream, independent of the evaluator's): q[j] after K + j epochs.
            rng = np.random.default_rng([int(p["seed"]), 23])
            n = int(p["check_samples"])
            # steps, trajectories, one draw's temporary and the partitioned
            # copy: about four float64 arrays of n × (K + room + 1).
            check_memory(4 * FLOAT_BYTES * n * (full.size + 1),
                         f"best-exp's train-on trajectories (check_samples = {n} × {full.size + 1} epochs, "
                         f"horizon = {instance.horizon})", "use fewer check_samples or a smaller horizon")
            traj = simulate_trajectories(instance, full, np.full(full.size, ch.gamma), n, rng)
            rank = quantile_rank(instance.omega, n)
            q = np.partition(traj[:, K:], rank - 1, axis=0)[rank - 1]

            def build(seq):
                new_plan, s3 = stage3(instance, seq, ch.names, ch.subset, ch.volume, p["epsilon"], p["reoptimize"])
                return new_plan, s3["reason"]

            def check(candidate):
                ev = evaluate_plan(instance, candidate, samples=n, seed=check_seed(p["seed"]), trajectory=False)
                return check_accepts(ev)

            res = train_on(models, ext, lambda j: q[j], instance.loss_max, build, check,
                           what=f"best-exp's {K}-epoch plan")
            diag["train_on"] = {"base_epochs": K, "quantile_base": float(q[0]), "extra_epochs": res.added,
                                "epochs": len(res.sequence), "tried": res.tried}
            diag["stage_seconds"]["train_on"] = time.perf_counter() - t0
            return res.plan, res.reason

        return finish


__all__ = ["BestExp", "greedy_extension"]
