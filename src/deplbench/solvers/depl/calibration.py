"""DepL's optional calibration (``calibrate=True``): a looser stage-2 target, tested.

The proven surrogate of stage 2 is conservative (see :mod:`deplbench.solvers.depl.depl`,
item 6 of its docstring). After the proven plan P₀ is accepted,
:func:`calibrate` searches each surrogate parameter's target by bounded
bisection, screens the paths by simulation and tests the cheapest plans on
fresh draws; the first that passes replaces P₀ with a *statistical*
guarantee. Split from :mod:`deplbench.solvers.depl.depl` to keep each module to
one job.

References
----------
DepL paper Sec. IV-B (the additive surrogate), Sec. VI-B (the cost gap it causes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from deplbench.formulations.evaluation.evaluate import evaluate_plan, simulate_trajectories, transfer_cost
from deplbench.formulations.evaluation.quantile_ci import check_accepts
from deplbench.formulations.model.scenarios import LOSS_TOL, ScenarioSampler, loss_threshold, quantile_rank
from deplbench.solvers.depl.stages import check_seed, stage2, stage3, surrogates

#: Stage-2 targets tried by ``calibrate=True`` (expansion, then bisection).
CALIBRATION_STEPS = 6
#: Family-wise level of the calibration checks: each check's interval is at
#: level 1 − (1 − CALIBRATION_CONFIDENCE)/CALIBRATION_STEPS (Bonferroni).
CALIBRATION_CONFIDENCE = 0.95


def _calibration_seed(seed: int, step: int) -> int:
    """Seed of the ``step``-th calibration check (0-based): fresh draws for
    every step, disjoint from the first check's seed and from the suite's
    evaluation seed (0 by default), because :func:`check_seed` ≥ 104729."""
    return check_seed(seed) + 1 + int(step)


def _quantile_upper(finals: np.ndarray, omega: float, level: float) -> tuple:
    """The ω-quantile of a sample and the upper end of its distribution-free
    interval at ``level`` (the evaluator's rule: order statistics at the
    binomial (1 ± level)/2 ranks)."""
    finals = np.sort(finals)
    n = finals.size
    q = float(finals[quantile_rank(omega, n) - 1])
    hi = int(stats.binom.ppf(1.0 - (1.0 - level) / 2.0, n, omega)) + 1
    return q, float(finals[min(max(hi, 1), n) - 1])


#: Largest scenario table (floats; 16e6 = 128 MB) drawn once for the calibration's estimates;
#: larger instances simulate each probed sequence separately instead.
_SCENARIO_TABLE_MAX = 16_000_000


class _QuantileEstimator:
    """Simulated ω-quantile (and the upper end of its interval) of model sequences.

    When the table of every random term (samples × K̄ × (|M| + |P|)) is
    small enough it is drawn once (``ScenarioSampler``, stream 1 of
    ``seed``) and every sequence is judged on the same scenarios (common
    random numbers make the comparison between probes less noisy);
    otherwise each sequence is simulated from ``default_rng([seed, 2])``
    afresh, which bounds memory by samples × K.
    """

    def __init__(self, instance, gamma: float, samples: int, seed: int, level: float):
        self.instance, self.gamma, self.samples, self.seed, self.level = instance, gamma, int(samples), seed, level
        size = self.samples * instance.horizon * (instance.n_models + len(instance.switches))
        self.scenarios = (ScenarioSampler(instance, seed).out_of_sample(self.samples)
                          if size <= _SCENARIO_TABLE_MAX else None)

    def __call__(self, models) -> tuple:
        models = np.asarray(models, dtype=int)
        gammas = np.full(models.size, self.gamma)
        if self.scenarios is not None:
            finals = self.scenarios.final_losses(models, gammas)
        else:
            rng = np.random.default_rng([int(self.seed), 2])
            finals = simulate_trajectories(self.instance, models, gammas, self.samples, rng)[:, -1]
        return _quantile_upper(finals, self.instance.omega, self.level)


def _estimation_seed(seed: int) -> int:
    """Seed of the calibration's estimation stream (its probes), distinct
    from every test seed :func:`_calibration_seed` and from the first check."""
    return check_seed(seed) + 1 + CALIBRATION_STEPS


@dataclass
class Context:
    """What stages 2–3 need to be re-run at another target (fixed datasets)."""

    instance: object
    method: str
    eta: int
    n_theta: int
    tail_share: float
    rounding: str
    epsilon: float
    reoptimize: bool
    gamma: float
    volume: float
    names: list
    subset: tuple
    ref_epochs: int
    time_max_eff: float
    blacklist: set
    check_samples: int
    seed: int


@dataclass
class Calibration:
    """Outcome of :func:`calibrate`: the tested plan that replaces P₀ (when
    ``improved``), its test, its (candidate, stage-3 info), the surrogate
    value of its path, and the diagnostics ``info``."""

    improved: bool = False
    plan: object = None
    evaluation: object = None
    chosen: tuple | None = None
    target: float = math.nan
    info: dict = field(default_factory=dict)


def calibrate(ctx: Context, start: float, plan0, eval0) -> Calibration:
    """Loosen the stage-2 target of every surrogate while simulation accepts,
    then test the cheapest plans found on fresh draws.

    Parameters
    ----------
    ctx : Context
        The datasets, deadline and options of the accepted (proven) plan.
    start : float
        The stage-2 target that produced ``plan0`` (ℓmax, or lower after retries).
    plan0, eval0
        The accepted plan and its check.

    Returns
    -------
    Calibration
        ``improved`` when a cheaper plan passed its test; ``info`` lists the
        probes of every surrogate and the tests.

    Notes
    -----
    *One search per surrogate.* How far a surrogate over-estimates the
    quantile depends on its parameter (for Chernoff the offset ln(1/α)/θ
    alone ranges over a factor 16 on the θ grid, and a large θ prices a
    Student-t switch far above its mean), so a common looser target
    over-relaxes some graphs (they return short, infeasible paths) and
    under-relaxes the others. Each surrogate θ therefore gets its own
    bounded search over its target t = start + λ·g_θ, with the scale
    g_θ = b_θ(P₀) − q₀ + (ℓmax − start) read off the accepted path P₀
    (b_θ its bound, q₀ its checked quantile): λ = ½ first, then +½ while
    probes pass, then bisection between the last passing and the first
    failing λ, :data:`CALIBRATION_STEPS` probes at most. A probe re-runs
    stage 2 (that surrogate's graph alone) and *estimates* the path's
    quantile by simulation on the calibration's estimation stream (the
    quantile depends on the model sequence only); a probe passes when that
    estimate's interval (at the tests' level) is below ℓmax. Cost is not
    monotone in the target, so every passing path is kept; the
    :data:`CALIBRATION_STEPS` cheapest by stage 2's estimate go through
    stage 3.

    *Tests and the guarantee.* The candidates, cheapest first, are then
    tested on fresh draws (:func:`_calibration_seed`, one stream per test,
    at most :data:`CALIBRATION_STEPS` tests) with the order-statistics
    interval at level 1 − 0.05/CALIBRATION_STEPS; the first that passes is
    returned. Conditionally on everything before it, a test passes a plan
    whose true ω-quantile exceeds ℓmax with probability at most
    0.025/CALIBRATION_STEPS, so by the union bound the returned plan
    violates (3) with probability ≤ 0.025 over the tests' draws (for the
    instance's laws, independent increments). When no candidate passes,
    ``plan0`` (proven) is kept.
    """
    inst = ctx.instance
    loss_max = float(inst.loss_max)
    tol = LOSS_TOL * max(1.0, abs(loss_max))
    level = 1.0 - (1.0 - CALIBRATION_CONFIDENCE) / CALIBRATION_STEPS
    out = Calibration(info={"surrogates": [], "tests": [], "start_target": start,
                             "confidence_per_test": level, "family_confidence": CALIBRATION_CONFIDENCE,
                             "max_steps": CALIBRATION_STEPS, "base_cost": eval0.cost, "improved": False,
                             "cost": eval0.cost, "saving": 0.0})
    if eval0.exact:
        out.info["skipped"] = "deterministic plan: the surrogate is the loss itself, nothing to calibrate"
        return out
    if not loss_max - eval0.quantile > tol:
        out.info["skipped"] = "the accepted plan has no room below ℓmax"
        return out
    models0 = [inst.model_index[e.model] for e in plan0.epochs]
    limit = loss_threshold(loss_max)
    prober = _Prober(ctx, _QuantileEstimator(inst, ctx.gamma, ctx.check_samples, _estimation_seed(ctx.seed), level))
    for bound in surrogates(inst, ctx.gamma, ctx.method, ctx.n_theta, ctx.tail_share, ctx.ref_epochs):
        scale = bound.path_bound(inst.initial_loss, models0) - eval0.quantile + (loss_max - start)
        row = {"param": bound.param, "scale": scale, "probes": []}
        out.info["surrogates"].append(row)
        if math.isfinite(scale) and scale > tol:
            # Targets at or above ℓ(0) are all equivalent (every path is accepted).
            _search_target(prober, bound, start, scale, float(inst.initial_loss), limit, row["probes"])
    pool = _stage3_pool(ctx, prober.estimates, limit, tuple(models0))
    out.info["stage3_runs"] = len(pool)
    _test_cheapest(ctx, pool, prober.estimates, eval0, level, out)
    if out.improved:
        out.info.update(improved=True, cost=out.evaluation.cost,
                        saving=1.0 - out.evaluation.cost / eval0.cost if eval0.cost > 0 else 0.0)
    return out


@dataclass
class _Prober:
    """Stage 2 re-run for one surrogate at a looser target, and the simulated
    quantile of the path it accepts (kept per model sequence in ``estimates``:
    sequence → (candidate, quantile estimate, upper end of its interval))."""

    ctx: Context
    estimator: object
    estimates: dict = field(default_factory=dict)

    def __call__(self, bound, target: float, lighter_than):
        """The path surrogate ``bound`` accepts at ``target`` (its model sequence).

        ``lighter_than`` is the model sequence accepted at a tighter target
        (still accepted here): the graph only looks for lighter paths and
        falls back on it. The quantile depends on the model sequence only
        (not on clusters or allocations), so stage 3 is deferred to the tests."""
        ctx = self.ctx
        w = self.estimates[lighter_than][0].weight if lighter_than is not None else math.inf
        s2 = stage2(ctx.instance, ctx.gamma, ctx.volume, ctx.method, ctx.eta, ctx.n_theta, ctx.tail_share,
                    ctx.ref_epochs, target, ctx.time_max_eff, rounding=ctx.rounding, bounds=[bound],
                    weight_bound=w * (1.0 + 1e-12))
        cands = [c for c in s2.candidates if tuple(c.models) not in ctx.blacklist]
        if not cands:
            return lighter_than
        key = tuple(cands[0].models)
        if key not in self.estimates:
            q, upper = self.estimator(key)
            self.estimates[key] = (cands[0], q, upper)
        return key


def _search_target(prober: _Prober, bound, start: float, scale: float, cap: float, limit: float,
                   probes: list) -> None:
    """One surrogate's bounded search over t = start + λ·scale (see :func:`calibrate`,
    Notes): λ = ½, then +½ while probes pass, then bisection; at most
    :data:`CALIBRATION_STEPS` probes, each appended to ``probes``."""
    lo, hi, lo_key = 0.0, math.inf, None
    for _ in range(CALIBRATION_STEPS):
        lam = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 0.5
        target = min(start + lam * scale, cap)
        key = prober(bound, target, lo_key)
        passed = key is not None and prober.estimates[key][2] <= limit
        p_row = {"lambda": lam, "target": target, "passed": passed}
        if key is not None:
            cand, q, _ = prober.estimates[key]
            p_row.update(epochs=len(key), estimate=cand.estimate, quantile=q)
        probes.append(p_row)
        if passed:
            lo, lo_key = lam, key
            if target >= cap:
                break
        else:
            hi = lam


def _stage3_pool(ctx: Context, estimates: dict, limit: float, models_key0: tuple) -> list:
    """Stage 3 for the most promising passing sequences (by stage 2's cost
    estimate, other than the accepted one): (cost, sequence, plan, info), cheapest first."""
    inst = ctx.instance
    passing = sorted((cand.estimate, key) for key, (cand, _, upper) in estimates.items()
                     if upper <= limit and key != models_key0)
    pool = []
    for _, key in passing[:CALIBRATION_STEPS]:
        plan, info = stage3(inst, list(key), ctx.names, ctx.subset, ctx.volume, ctx.epsilon, ctx.reoptimize)
        if plan is None:
            continue
        cost = float(sum(inst.unit_cost[inst.cluster_index[e.cluster]] * e.allocation for e in plan.epochs)
                     + transfer_cost(inst, plan))  # objective (2), as the evaluator computes it
        pool.append((cost, key, plan, info))
    pool.sort(key=lambda r: r[0])
    return pool


def _test_cheapest(ctx: Context, pool: list, estimates: dict, eval0, level: float, out: Calibration) -> None:
    """Test the plans cheaper than the accepted one, cheapest first, each on
    fresh draws (one stream per test); the first that passes goes into ``out``."""
    cheaper = [r for r in pool if r[0] < eval0.cost * (1 - 1e-12)][:CALIBRATION_STEPS]
    for j, (_cost, key, plan, info) in enumerate(cheaper):
        cand = estimates[key][0]
        ev = evaluate_plan(ctx.instance, plan, samples=ctx.check_samples, seed=_calibration_seed(ctx.seed, j),
                           confidence=level, trajectory=False)
        out.info["tests"].append({"seed": _calibration_seed(ctx.seed, j), "samples": ev.samples,
                                  "epochs": plan.n_epochs, "cost": ev.cost, "quantile": ev.quantile,
                                  "quantile_ci": list(ev.quantile_ci), "verdict": ev.verdict,
                                  "param": cand.bound.param, "passed": check_accepts(ev)})
        if check_accepts(ev):
            out.improved, out.plan, out.evaluation, out.chosen = True, plan, ev, (cand, info)
            out.target = float(cand.quantile_bound)
            return


__all__ = ["CALIBRATION_CONFIDENCE", "CALIBRATION_STEPS", "Calibration", "Context", "calibrate"]
