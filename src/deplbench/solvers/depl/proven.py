"""``depl-proven``: DepL whose plan carries an exact proof instead of a conservative one.

Algorithm
---------
1. DepL as published (:func:`~deplbench.solvers.depl.stages.decide` with the
   Chernoff surrogate): the proven plan P₀.
2. As ``calibrate=True`` does (:mod:`deplbench.solvers.depl.calibration`), the stage-2
   targets of the ``probes`` central surrogate θ values are loosened by
   bounded bisection (t = start + λ·g_θ, λ = ½, 1, ... then bisection,
   :data:`STEPS` probes each); a probe passes when the rigorous bound of
   :mod:`deplbench.formulations.evaluation.exact_violation` proves the path feasible
   (p_hi ≤ 1 − ω), not on a sampled test. Verdicts are read on one
   :class:`~deplbench.formulations.exact.lattice.SpectralLattice` of the
   instance (milliseconds); a path it leaves undecided is judged alone on
   finer grids only if its cost floor is below the cheapest proven one.
3. Local descent from the :data:`STARTS` proven paths of lowest cost floor
   (:meth:`Data.count_floor <deplbench.formulations.milp.data.Data.count_floor>`,
   a Lagrangian lower bound on any plan with those model counts): drop one
   epoch of a block, or move one epoch from a block to another, while the
   floor decreases and the lattice proves the neighbour feasible.
4. Stage 3's allocation costs the walks' ends and P₀; the cheapest is
   returned.

Guarantee
---------
The returned plan's violation probability is *proven* ≤ 1 − ω (up to the
exact_violation allowance): every sequence it can return passed p_hi ≤ 1 − ω;
P₀ carries DepL's Chernoff proof. No sampled test, no confidence level.

References
----------
DepL paper Sec. IV (stages 1–3), Sec. VI-B (the cost of its conservatism).
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

import numpy as np

from deplbench import limits
from deplbench.formulations.evaluation.evaluate import transfer_cost
from deplbench.formulations.evaluation.exact_violation import (
    PROVEN_FEASIBLE,
    UNDECIDED,
    ExactSettings,
    ExactUnavailable,
    plan_violation_bounds,
    violation_bounds,
)
from deplbench.formulations.exact.lattice import SpectralLattice
from deplbench.formulations.milp.data import Data
from deplbench.formulations.model.result import SolveResult
from deplbench.solvers.base import Param, PlotStyle
from deplbench.solvers.depl.depl import PROVEN_FALLBACKS, DepL
from deplbench.solvers.depl.stages import decide, result_from, stage2, stage3, surrogates

#: Stage-2 targets probed per surrogate (expansion, then bisection).
STEPS = 3
#: Exact checks the local descent may spend (a deterministic budget).
DESCENT_CHECKS = 80
#: Proven sequences (lowest cost floors first) the descent starts from.
STARTS = 2
#: Largest memory of the instance's :class:`SpectralLattice` (its spectra);
#: beyond it every sequence is judged alone.
LATTICE_MAX_BYTES = 256 * 2**20
#: Most datasets whose every subset the cost floor enumerates as a data class (1023 classes).
FLOOR_MAX_DATASETS = 10


class _Judge:
    """Exact verdicts, stage-3 costs and cost floors of model sequences, memoised.

    A verdict is first read on one :class:`SpectralLattice` built for the
    instance (a product of precomputed spectra, milliseconds); only a
    sequence it leaves undecided pays for :func:`violation_bounds`' own
    refined grids. Both are rigorous, so the proof is the same either way.
    """

    def __init__(self, instance, ch, p):
        self.inst, self.ch, self.p = instance, ch, p
        self.settings = ExactSettings(decide=True, settle=False)
        # what the instance's lattice leaves undecided is judged alone, starting 2× finer
        self.fallback = ExactSettings(decide=True, start_steps=128, settle=False)
        self.verdicts: dict = {}
        self.costs: dict = {}
        self.checks = 0
        self._lattice = None
        self._floor = None

    def lattice(self):
        if self._lattice is None:
            inst = self.inst
            self._lattice = False
            if np.ndim(self.ch.gamma) == 0:
                try:
                    self._lattice = SpectralLattice(inst, float(self.ch.gamma), inst.horizon, self.settings,
                                                    max_bytes=LATTICE_MAX_BYTES)
                except ExactUnavailable:
                    pass                     # too large: every sequence is judged alone
        return self._lattice

    def proven(self, key, refine: bool = True) -> bool:
        """Whether ``key`` is proven feasible; without ``refine``, on the lattice alone."""
        if key not in self.verdicts:
            self.checks += 1
            verdict = self._verdict(key, refine)
            if verdict == UNDECIDED and not refine:
                return False                 # not memoised: a refined check may still prove it
            self.verdicts[key] = verdict == PROVEN_FEASIBLE
        return self.verdicts[key]

    def _verdict(self, key, refine: bool = True) -> str:
        lat = self.lattice()
        if lat and len(key) <= lat.k_max:
            verdict = lat.verdict(key)
            if verdict != UNDECIDED or not refine:
                return verdict
        try:
            return violation_bounds(self.inst, list(key), self.ch.gamma, self.fallback).verdict
        except ExactUnavailable:
            return UNDECIDED

    def best_floor(self) -> float:
        """The lowest cost floor of a sequence proven so far (inf: none)."""
        return min((self.floor(k) for k, ok in self.verdicts.items() if ok), default=math.inf)

    def floor(self, key) -> float:
        """:meth:`Data.count_floor` of ``key``'s model counts (a valid cost lower bound).

        Up to :data:`FLOOR_MAX_DATASETS` datasets the floor ranges over every data class
        (2^|D| − 1 subsets); beyond, over the chosen subset's class alone, which every
        sequence judged here trains on (:meth:`cost`), so the bound holds for them all."""
        if self._floor is None:
            inst = self.inst
            classes = None
            if inst.n_datasets > FLOOR_MAX_DATASETS:
                classes = [tuple(sorted(inst.dataset_index[d] for d in self.ch.names))]
            self._floor = Data(inst, 1, 0, classes=classes)
        return self._floor.count_floor(np.bincount(np.asarray(key, dtype=int), minlength=self.inst.n_models))

    def cost(self, key):
        if key not in self.costs:
            ch, inst = self.ch, self.inst
            plan, _ = stage3(inst, list(key), ch.names, ch.subset, ch.volume, self.p["epsilon"], True)
            with np.errstate(over="ignore"):   # past binary64 the cost is inf: that sequence ranks last
                c = math.inf if plan is None else float(
                    sum(inst.unit_cost[inst.cluster_index[e.cluster]] * e.allocation for e in plan.epochs)
                    + transfer_cost(inst, plan))
            self.costs[key] = (c, plan)
        return self.costs[key]


def _probe_paths(instance, ch, p, start: float, models0, judge: _Judge) -> None:
    """Step 2: loosen each surrogate's target while the exact bound proves the path."""
    loss_max = float(instance.loss_max)
    bounds = surrogates(instance, ch.gamma, "chernoff", int(p["n_theta"]), float(p["tail_share"]), ch.ref_epochs)
    # the central θ values first, as stage 2 orders them: each probe reruns stage 2's
    # DP, most of depl-proven's time, and the outer θ rarely give the cheapest path
    mid = (len(bounds) - 1) / 2.0
    central = sorted(range(len(bounds)), key=lambda i: abs(i - mid))[:int(p["probes"])]
    q0 = violation_bounds(instance, models0, ch.gamma, ExactSettings()).q_hi
    for b in (bounds[i] for i in sorted(central)):
        scale = b.path_bound(instance.initial_loss, models0) - q0 + (loss_max - start)
        if not (math.isfinite(scale) and scale > 0):
            continue
        lo, hi = 0.0, math.inf
        for _ in range(STEPS):
            limits.check_time("depl-proven's target probes")
            lam = 0.5 * (lo + hi) if math.isfinite(hi) else lo + 0.5
            target = min(start + lam * scale, float(instance.initial_loss))
            s2 = stage2(instance, ch.gamma, ch.volume, "chernoff", p["eta"], int(p["n_theta"]),
                        float(p["tail_share"]), ch.ref_epochs, target, ch.time_max_eff, rounding=p["rounding"],
                        bounds=[b])
            cands = [c for c in s2.candidates if tuple(c.models) not in ch.blacklist]
            key = tuple(int(m) for m in cands[0].models) if cands else None
            # a refined proof (beyond the lattice) is paid only for a path that could
            # beat the cheapest proven so far: its cost floor must lie below that one's
            if key is not None and judge.proven(key, refine=judge.floor(key) < judge.best_floor()):
                lo = lam
            else:
                hi = lam


def _blocks(key):
    models, lengths = [], []
    for m in key:
        if models and models[-1] == m:
            lengths[-1] += 1
        else:
            models.append(m)
            lengths.append(1)
    return models, lengths


def _moves(lengths):
    """Block lengths after dropping one epoch of a block or moving it to another."""
    for i, n_i in enumerate(lengths):
        if n_i > 1:
            yield [n - (j == i) for j, n in enumerate(lengths)]
            for j in range(len(lengths)):
                if j != i:
                    yield [n - (k == i) + (k == j) for k, n in enumerate(lengths)]


def _descend(key, judge: _Judge):
    """Step 3: neighbours (one epoch dropped or moved) with a lower cost floor that stay proven.

    The descent walks on the cost floor (microseconds) and the lattice
    verdicts (milliseconds); stage 3's allocation, a hundred times dearer,
    costs only the walks' ends (:meth:`DepLProven.run`)."""
    best = key
    while judge.checks < DESCENT_CHECKS:
        limits.check_time("depl-proven's local descent")
        models, lengths = _blocks(best)
        here = judge.floor(best)
        near = sorted({tuple(np.repeat(models, mv).tolist()) for mv in _moves(lengths)},
                      key=lambda k: (judge.floor(k), k))
        step = None
        for k in near:
            if judge.floor(k) >= here * (1 - 1e-12) or judge.checks >= DESCENT_CHECKS:
                break                    # sorted by floor: no later neighbour is lower
            if judge.proven(k, refine=False):    # the lattice alone: a walk step is a heuristic move
                step = k
                break
        if step is None:
            break
        best = step
    return best


def _shared_proof(instance, plan) -> bool | None:
    """Whether the decision ``evaluate --exact`` prints proves ``plan`` feasible
    (None: the deadline stopped the decision)."""
    try:
        return plan_violation_bounds(instance, plan).verdict == PROVEN_FEASIBLE
    except ExactUnavailable:
        return False            # unproven: DepL's own plan is returned
    except limits.TimeLimitReached:
        return None


class DepLProven(DepL):
    """DepL + exact certification of looser stage-2 paths (see the module docstring)."""

    name: ClassVar[str] = "depl-proven"
    label: ClassVar[str] = "DepL (exact proof)"
    description: ClassVar[str] = ("DepL with loosened stage-2 targets and a local descent, every plan proven "
                                  "feasible by the exact violation bound (no sampling)")
    style: ClassVar[PlotStyle] = PlotStyle("#bcbd22", "v", "-")
    parameters: ClassVar[dict[str, Param]] = {
        **{k: v for k, v in DepL.parameters.items() if k not in ("calibrate", "quantile_method")},
        "probes": Param(3, int, "surrogate θ values whose stage-2 target is loosened (the central ones; "
                        "at most n_theta)", low=1, high=64)}

    def run_settings(self, instance, settings) -> SolveResult:
        """Solve with the parameters :func:`~deplbench.solvers.run.solve` resolved once
        (:meth:`run` is the keyword front: it resolves them first)."""
        p = {**settings, "quantile_method": "chernoff", "calibrate": False}
        self._validate(instance, p)
        t0 = time.perf_counter()
        # the graph-size work counter belongs to DepL's complexity audit, not to this proof
        out = decide(instance, p, "chernoff", n_theta=int(p["n_theta"]), tail_share=float(p["tail_share"]),
                     fallbacks=PROVEN_FALLBACKS["chernoff"], count_reachable=False)
        if out.plan is None:
            # a heuristic that found no plan it can prove has not proven that none exists
            res = result_from(self.name, instance, out, "proven")
            res.status = "no_solution"
            res.message = f"no plan found that the Chernoff bound proves feasible ({res.message}); infeasibility " \
                          "is not proven (milp-exact decides it where it applies)"
            return res
        ch = out.choice
        judge = _Judge(instance, ch, p)
        models0 = tuple(instance.model_index[e.model] for e in out.plan.epochs)
        judge.verdicts[models0] = True          # DepL's Chernoff proof
        judge.costs[models0] = (out.evaluation.cost, out.plan)
        stopped = None
        try:
            _probe_paths(instance, ch, p, out.loss_max_eff, list(models0), judge)
            proven = sorted((judge.floor(k), k) for k, ok in judge.verdicts.items() if ok)
            ends = {_descend(k, judge) for _, k in proven[:STARTS]}
        except limits.TimeLimitReached as exc:
            # DepL's own plan carries its proof: the deadline ends only the improvement
            stopped = str(exc).split("; no plan")[0]
            ends = set()
        # stage 3 costs the walks' ends and DepL's own plan; the cheapest is returned
        try:
            best = min(ends | {models0}, key=lambda k: (judge.cost(k)[0], k))
        except limits.TimeLimitReached as exc:
            stopped, best = str(exc).split("; no plan")[0], models0     # DepL's own plan is costed already
        cost, plan = judge.cost(best)
        res = result_from(self.name, instance, out, "proven")
        if stopped is not None:
            res.status = "time_limit"
            res.message = f"{stopped}; DepL's own plan (Chernoff proof) is returned"
        if best != models0 and plan is not None and cost < res.cost:
            shared = _shared_proof(instance, plan)
            if shared is None:              # the deadline stopped the final check: say so
                res.status = "time_limit"
                res.message = ("time limit reached in the final exact check; DepL's own plan (Chernoff proof) "
                               "is returned")
            if not shared:
                best = models0  # proven on this solver's grids only: one verdict per plan (evaluate --exact's)
        if best != models0 and plan is not None and cost < res.cost:
            res.plan, res.cost = plan, cost
            res.message = f"{plan.n_epochs} epochs, datasets {ch.names}"
        res.diagnostics["exact_checks"] = judge.checks
        res.diagnostics["proof"] = ("exact: p_hi <= 1 - omega (formulations.evaluation.exact_violation)"
                                    if best != models0 else "DepL's Chernoff bound")
        res.diagnostics["proven_seconds"] = time.perf_counter() - t0
        return res


__all__ = ["DepLProven", "STEPS", "DESCENT_CHECKS", "FLOOR_MAX_DATASETS", "STARTS"]
