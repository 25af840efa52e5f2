"""``adaptive-opt``: the adaptive optimum bracketed, and its near-optimal policy.

The reference for algorithms that observe the loss after every epoch (PACT,
``depl-receding``): the least expected cost of *any* closed-loop policy with
P(success) ≥ ω, bracketed by :mod:`deplbench.formulations.adaptive` (a
chance-constrained MDP over (epoch, model, loss); proven lower bound from
an optimistic loss grid and Lagrangian duality, certified upper bound from
the policy of the pessimistic grid simulated on fresh runs). The result has
no static plan: its ``cost`` is the certified policy's mean cost (the upper
bound), ``lower_bound`` the proven bound, and ``diagnostics`` carry
``p_success_lo`` (one-sided Clopper–Pearson), the cost–risk ``frontier``,
the ``multipliers`` and the ``grid``. :meth:`AdaptiveOpt.closed_loop_policy`
rebuilds the same policy (deterministic from the multipliers) so that sweeps
simulate it beside PACT and ``depl-receding``.

Status: ``feasible`` when the policy's P(success) ≥ ω is certified,
``infeasible`` when it is not (the bound still holds), ``skipped`` on
instances outside the method (:func:`~deplbench.formulations.adaptive.applies`).

References
----------
See :mod:`deplbench.formulations.adaptive`.
"""

from __future__ import annotations

from deplbench.formulations import adaptive
from deplbench.formulations.result import SolveResult
from deplbench.params import Param
from deplbench.solvers.base import PlotStyle, Solver


class AdaptiveOpt(Solver):
    """Bracket on the adaptive optimum and its certified policy (module docstring)."""

    name = "adaptive-opt"
    label = "adaptive optimum"
    style = PlotStyle("#000000", "*", "-.")
    exact = False
    reference = "adaptive"
    preprocess = False
    description = ("optimal closed-loop policy (chance-constrained MDP): proven lower bound and certified "
                   "policy with P(success) ≥ ω")
    parameters = {
        "buckets": Param(600, int, "loss buckets between ℓmax and ℓ(0) (finer: narrower bracket, slower)",
                         low=2),
        "runs": Param(100_000, int, "fresh closed-loop runs certifying the policy", low=100),
        "tune_runs": Param(50_000, int, "runs per tuning simulation (seeds seed+1 and seed+2, never seed)", low=100),
        "seed": Param(0, int, "seed of the certification runs", low=0),
        "confidence": Param(0.95, float, "level of the Clopper–Pearson bound and of the cost interval",
                            low=0.5, high=1 - 1e-9),
        "rho": Param(1.0, float, "policy: share of the remaining time the allocation plans to use",
                     low=0.05, high=1.0),
        "iters_lam": Param(6, int, "bisection steps on the time price λ", low=0),
        "iters_mu": Param(6, int, "bisection steps on the failure price μ", low=0),
    }

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        return adaptive.applies(instance)

    def run(self, instance, **params) -> SolveResult:
        p = self.resolve_params(params)
        ok, why = adaptive.applies(instance)
        if not ok:
            return SolveResult(algorithm=self.name, status="skipped", message=why)
        b = adaptive.adaptive_bounds(instance, p["buckets"], p["runs"], p["seed"], p["confidence"],
                                     p["tune_runs"], p["rho"], p["iters_lam"], p["iters_mu"])
        d = b.to_dict()
        status = "feasible" if b.certified else "infeasible"
        msg = "" if b.certified else (f"the policy's P(success) ≥ ω is not certified "
                                      f"(lower bound {b.p_success_lo:.4f} < ω = {instance.omega:g})")
        return SolveResult(algorithm=self.name, status=status, message=msg, cost=b.upper_bound,
                           lower_bound=b.lower_bound, diagnostics={k: v for k, v in d.items()
                                                                   if k not in ("lower_bound", "upper_bound")})

    def closed_loop_policy(self, instance, result, **params):
        """The certified policy, rebuilt from ``diagnostics["multipliers"]`` (failure price,
        ρ, rescaling rule and share given up at once; None without them)."""
        mult = (result.diagnostics or {}).get("multipliers")
        if not mult or not adaptive.applies(instance)[0]:
            return None
        p = self.resolve_params(params)
        chain = adaptive.Chain(instance, p["buckets"], optimistic=False)
        return adaptive.AdaptivePolicy(chain, adaptive.dp(chain, mult["lambda"], mult["mu_policy"], keep=True),
                                       mult.get("rho_policy", p["rho"]), name=f"{self.display_label()} (policy)",
                                       scaling=mult.get("scaling", "rms"), give_up=mult.get("give_up", 0.0),
                                       coin_seed=p["seed"])


__all__ = ["AdaptiveOpt"]
