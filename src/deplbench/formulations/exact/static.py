"""The optimum of the true chance-constrained problem over static plans, bracketed deterministically.

What is solved
--------------
Problem (2)–(6) with constraint (3) on the *true* law of ℓ(K) (not an SAA),
on the structure of the sequence enumeration (:mod:`deplbench.formulations.milp.enumeration`): an
acyclic switch graph, one data class, non-negative improvements. A plan is a
path of models with one block length each; its violation probability
depends on the model sequence only and is bounded rigorously by
:mod:`deplbench.formulations.evaluation.exact_violation`.

Algorithm
---------
1. For every path and every choice of all but the last block length, scan
   the last block length c upwards; the lattice sums of the prefix are kept
   as FFT spectra (one product per added epoch, all terms discretised once
   per instance on a common lattice), and each scanned c is judged by the
   exact bounds. With non-negative improvements the true violation
   probability decreases in c, so
   * c_L = the first c not proven infeasible: every truly feasible
     completion of this prefix has c ≥ c_L (the earlier c are proven
     infeasible, directly or by monotonicity);
   * c_U = the first c proven feasible (p_hi ≤ 1 − ω).
2. Undominated count vectors of the (prefix, c_U) sequences form the set U,
   those of (prefix, c_L) the set L. The enumeration MILP
   (:class:`deplbench.formulations.milp.enumeration.EnumModel`: cluster counts, data and exact λ
   cuts; the plan is costed with the exact real-x allocation) picks the
   cheapest sequence of each: UB = the cheapest proven-feasible plan
   (a real plan, returned), LB = the MILP's proven bound over L.
3. Undecided sequences (p_lo ≤ 1 − ω < p_hi at the enumeration's lattice)
   that the L-optimum uses are refined on finer lattices and the MILPs
   re-solved, until the bracket is within ``gap`` or the rounds run out.

Stops and statuses
------------------
Each phase — the lattice (its memory estimated before anything is
allocated, :func:`deplbench.limits.check_memory` against ``memory_limit``),
the scan, the MILPs and the refinement — reads the
:func:`deplbench.limits.deadline` scope at every judged length, prefix,
master solve and refined sequence. A stop is status ``time_limit`` naming
the phase, with the bracket proven so far: an exhausted budget is never a
proof of infeasibility. ``infeasible`` means every sequence is *proven* to
violate (3) (or none of the rest fits Tmax); when the remaining sequences
are undecided at the precision (plans at the feasibility boundary) the
status is ``no_solution`` with the lower bound. The returned plan is proven
feasible by the decision ``evaluate --exact`` reads
(:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`), so the two
never differ.

Guarantee
---------
LB ≤ z* ≤ UB deterministically, where z* is the optimum over static plans
of the true chance-constrained problem: every truly feasible plan is
dominated (same or fewer epochs of every model; F is increasing in the
counts) by an L candidate, and the U plan is proven feasible. The width
comes from numerical precision and the MILP gap only. Assumes the
exact_violation allowance (module docstring there).

Step 1 (the lattice, the scan and the moves of c_L and c_U a refinement
makes) is :mod:`deplbench.formulations.exact.lattice`; this module holds
the options, the two MILPs of step 2, the refinement rounds of step 3 and
the bracket a stop reports.

References
----------
DepL paper eqs. (2)–(8); Luedtke & Ahmed (2008) for the SAA it replaces.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.exact_violation import (
    PROVEN_FEASIBLE,
    UNDECIDED,
    ExactSettings,
    ExactUnavailable,
    bounds_for_terms,
    plan_violation_bounds,
    sequence_terms,
    violation_bounds,
)
from deplbench.formulations.exact.lattice import (
    STEPS_PER_SPREAD,
    SpectralLattice,
    demote_prefix,
    enumerate_exact,
    refine_prefix,
)
from deplbench.formulations.milp.bounds import Bounds
from deplbench.formulations.milp.cutloop import cut_loop
from deplbench.formulations.milp.data import Data
from deplbench.formulations.milp.enumeration import EnumModel, dag_paths, pareto_sequences
from deplbench.formulations.milp.routes import make_backend
from deplbench.formulations.model.result import SolveResult
from deplbench.instances.distributions import Empirical, InverseGamma, LogNormal, PointMass
from deplbench.params import TIME_LIMIT, Param, resolve, trusted


def exact_static_applies(instance) -> tuple[bool, str]:
    """Whether :func:`solve_exact_static` applies, and why not."""
    if dag_paths(instance.allowed) is None:
        return False, ("the switch graph has a cycle (or too many paths): the exact static optimum needs the "
                       "sequence enumeration; use `deplbench certify` for a statistical bracket")
    datasets = instance.all_datasets
    if len(datasets) != 1:
        # one data class: with several datasets the data classes multiply
        return False, (f"{len(datasets)} datasets: the exact static optimum handles one data class (the DepL and "
                       "PACT paper sets); use `deplbench certify` for a statistical bracket")
    for m in instance.models:
        law = m.improvement
        ok = isinstance(law, (InverseGamma, LogNormal)) or (
            isinstance(law, PointMass) and law.value >= 0) or (
            isinstance(law, Empirical) and min(law.samples) >= 0)
        if not ok or m.loss_scale < 0:
            return False, (f"model {m.name!r}: improvements can be negative ({law.kind}), so a longer last block "
                           "is not always safer; use `deplbench certify` for a statistical bracket")
    return True, ""

def _cheapest(data: Data, k_max: int, seqs, gap: float) -> SolveResult | None:
    """The enumeration MILP over ``seqs`` (exact real-x cost, λ cuts); its
    master solves get what is left of the :func:`deplbench.limits.deadline` scope."""
    seqs, counts = pareto_sequences(seqs, data.M)
    if not seqs:
        return None
    limits.check_time("milp-exact: MILP over the enumerated sequences")
    bounds = Bounds(k_min=1, k_max=k_max, bigm=None, incumbent=None, lam=data.lam_reference(1))
    model = EnumModel(data, bounds, seqs, counts)
    be, _ = make_backend(model, "highs", 1, 0, False, "highs")
    return cut_loop(data, model, be, None, gap, {}, {}, time.perf_counter())


class _Bracket:
    """What the solve has proven so far: the bracket a stop reports."""

    def __init__(self, t0: float):
        self.t0 = t0
        self.phase = "lattice spectra"
        self.lb: float | None = None
        self.ub: float | None = None
        self.plan = None
        self.diag: dict = {}

    def result(self, status: str, message: str) -> SolveResult:
        self.diag["phase"] = self.phase
        self.diag["total_s"] = time.perf_counter() - self.t0
        lb = self.lb if self.ub is None or self.lb is None else min(self.lb, self.ub)
        if status == "infeasible":
            self.ub = lb = None
        return SolveResult(algorithm="milp-exact", status=status, plan=self.plan if self.ub is not None else None,
                           cost=self.ub, lower_bound=lb, gap=SolveResult.relative_gap(self.ub, lb),
                           diagnostics=self.diag, message=message)


#: The options of one exact static solve, declared once: the ``milp-exact``
#: solver declares this table as its parameters and :func:`solve_exact_static`'s
#: keywords are checked against it (the suite's one validation path,
#: :mod:`deplbench.params`).
EXACT_STATIC_PARAMETERS: dict[str, Param] = {
    "time_limit": TIME_LIMIT.but(default=300.0),
    # a bracket wider than half its upper end proves little about z*: refused, not reported as optimal
    "gap": Param(1e-4, float, "relative bracket width (UB − LB)/UB at which to stop refining", low=0.0,
                 low_inclusive=False, high=0.5),
    "memory_limit": limits.MEMORY_LIMIT_PARAM,
    "rounds": Param(20, int, "refinement rounds (re-solves of the two MILPs) at most", low=1),
}


@dataclass(frozen=True)
class ExactStaticSettings:
    """Every option of one exact static solve, checked once and passed down whole.

    Built by :meth:`from_params` (keywords, as :func:`solve_exact_static`
    passes them), by :meth:`from_resolved` (values already checked by
    :func:`deplbench.params.resolve`, as :func:`deplbench.solvers.run.solve`
    gives them) or directly (every field checked, strictly). The fields are
    those of :data:`EXACT_STATIC_PARAMETERS` and ``lattice``, the precision
    of the enumeration's lattice (:class:`ExactSettings`).
    """

    time_limit: float | None = 300.0
    gap: float = 1e-4
    memory_limit: float = limits.MEMORY_BUDGET_GIB
    rounds: int = 20
    lattice: ExactSettings = field(default_factory=ExactSettings)

    def __post_init__(self) -> None:
        given = {name: getattr(self, name) for name in EXACT_STATIC_PARAMETERS}
        for name, value in resolve(EXACT_STATIC_PARAMETERS, given, owner="solve_exact_static",
                                   strict=True).items():
            object.__setattr__(self, name, value)
        _check_lattice(self.lattice)

    @classmethod
    def from_params(cls, given: Mapping[str, Any], lattice: ExactSettings | None = None, *,
                    strict: bool = False) -> ExactStaticSettings:
        """The settings from options (``strict``: typed values only) and the lattice precision.

        Raises
        ------
        SolverError
            One line naming the first unknown or invalid option.
        """
        values = resolve(EXACT_STATIC_PARAMETERS, given, owner="solve_exact_static", strict=strict)
        return cls.from_resolved({**values, "lattice": ExactSettings() if lattice is None else lattice})

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> ExactStaticSettings:
        """The settings from values :func:`deplbench.params.resolve` already checked
        against :data:`EXACT_STATIC_PARAMETERS` (nothing is converted again)."""
        settings = trusted(cls, resolved)
        _check_lattice(settings.lattice)
        return settings

    def record(self) -> dict[str, Any]:
        """The options as a result's ``params`` record them."""
        return {name: getattr(self, name) for name in EXACT_STATIC_PARAMETERS}


def _check_lattice(lattice) -> None:
    if not isinstance(lattice, ExactSettings):
        raise SolverError(f"settings: expected an ExactSettings (the lattice precision), got "
                          f"{type(lattice).__name__}")


def solve_exact_static(instance, time_limit: float | None = 300.0, gap: float = 1e-4, rounds: int = 20,
                       settings: ExactSettings = ExactSettings(), memory_limit: float = limits.MEMORY_BUDGET_GIB
                       ) -> SolveResult:
    """Deterministic bracket LB ≤ z* ≤ UB on the true static optimum (module docstring).

    The keywords are a front: they are checked once
    (:data:`EXACT_STATIC_PARAMETERS`, the ``milp-exact`` solver's table) into
    an :class:`ExactStaticSettings`, which :func:`run_exact_static` reads.

    Parameters
    ----------
    instance : Instance
    time_limit : float or None, default 300
        Wall-clock seconds (> 0; None: no limit); nested inside any
        enclosing :func:`deplbench.limits.deadline` scope (the earlier
        deadline wins).
    gap : float, default 1e-4
        Relative bracket width at which to stop, in (0, 0.5].
    rounds : int, default 20
        Refinement rounds (re-solves of the two MILPs) at most, ≥ 1.
    settings : ExactSettings
        Precision of the enumeration's lattice (its ``tail``).
    memory_limit : float, default 2
        GiB the lattice may take (estimated before it is allocated).

    Returns
    -------
    SolveResult
        ``cost`` and ``plan``: the cheapest plan proven feasible by the shared
        decision
        (:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`,
        the one ``evaluate --exact`` reads), the UB; ``lower_bound``: LB. Status

        * ``optimal``: the bracket is within ``gap``;
        * ``feasible``: a proven-feasible plan, the bracket wider than ``gap``
          after the rounds;
        * ``infeasible``: every model sequence within Tmax is *proven* to
          violate (3), or none of the sequences not proven to violate it
          fits Tmax;
        * ``no_solution``: no sequence is proven feasible and not all are
          proven infeasible at this precision (plans at the feasibility
          boundary): LB still holds;
        * ``time_limit``: the deadline fell in a phase (named in the message
          and ``diagnostics["phase"]``), with the bracket proven so far;
        * ``error``: it does not apply, or the lattice would exceed the
          memory budget ``memory_limit``.

    Raises
    ------
    SolverError
        For an invalid option, one line naming it; never for an instance.
    """
    run = ExactStaticSettings.from_params(
        {"time_limit": time_limit, "gap": gap, "rounds": rounds, "memory_limit": memory_limit}, settings,
        strict=True)
    return run_exact_static(instance, run)


def run_exact_static(instance, settings: ExactStaticSettings) -> SolveResult:
    """:func:`solve_exact_static` with options checked once (:class:`ExactStaticSettings`).

    Opens the deadline of ``settings.time_limit`` and the memory budget of
    ``settings.memory_limit``; inside a caller's
    :func:`deplbench.limits.deadline` (``milp-exact`` under
    :func:`deplbench.solvers.run.solve`) the earlier deadline is kept, so the
    solve has one clock.
    """
    if not isinstance(settings, ExactStaticSettings):
        raise SolverError(f"settings: expected an ExactStaticSettings, got {type(settings).__name__}")
    with limits.deadline(settings.time_limit), limits.memory_budget(settings.memory_limit):
        return _run(instance, settings)


def _run(instance, settings: ExactStaticSettings) -> SolveResult:
    """:func:`run_exact_static` inside its deadline and memory budget."""
    t0 = time.perf_counter()
    ok, why = exact_static_applies(instance)
    if not ok:
        return SolveResult(algorithm="milp-exact", status="error", message=why)
    run = _Bracket(t0)
    try:
        return _solve(instance, settings.gap, settings.rounds, settings.lattice, run)
    except limits.TimeLimitReached as exc:
        where = str(exc).split("; no plan")[0]
        kept = ("no bound yet" if run.lb is None and run.ub is None else
                "the bracket proven so far is kept" if run.ub is not None else
                "no plan proven feasible yet, the lower bound holds")
        return run.result("time_limit", f"{where}, in the {run.phase} phase; {kept} (a stop is not a proof "
                          "of infeasibility)")
    except (ExactUnavailable, limits.MemoryLimitExceeded) as exc:
        return run.result("error", str(exc))


def _solve(instance, gap: float, rounds: int, settings: ExactSettings, run: _Bracket) -> SolveResult:
    """:func:`run_exact_static` inside the deadline scope; ``run`` keeps the bracket."""
    data = Data(instance, 1, 0)
    data.lmax = math.inf     # the quantile is decided by the exact bounds, not by scenarios
    fastest = data.fastest
    if not math.isfinite(fastest):
        return run.result("infeasible", f"no configuration fits Tmax = {data.T:g}")
    k_max = (data.K if fastest * data.K <= data.T
             else min(data.K, int(math.floor(data.T / fastest * (1 + 1e-12) + 1e-9))))
    gamma = float(data.gam[0])
    lat = SpectralLattice(instance, gamma, k_max, settings)
    run.diag.update(k_max=k_max, lattice_bytes=lat.memory, lattice_points=lat.N)
    run.phase = "scan"
    prefixes, lat = enumerate_exact(instance, gamma, k_max, settings, lattice=lat)
    diag = run.diag
    diag.update({"prefixes": len(prefixes), "lattice_step": lat.h, "lattice_points": lat.N, "k_max": k_max,
                 "lattice_bytes": lat.memory, "undecided_after_scan": sum(len(p.undecided) for p in prefixes),
                 "refined": 0, "refinements_exhausted": 0, "confirmations": 0,
                 "enumerate_s": time.perf_counter() - run.t0})
    risk = 1.0 - float(instance.omega)
    proven_none = ("every model sequence within Tmax is proven to violate the quantile (3): "
                   f"P(ℓ(K) > ℓmax) > 1 − ω = {risk:g}")
    refined: dict = {}
    # the enumeration's lattice left these undecided: start 4× finer (h/4 decides nearly all of them)
    fine = ExactSettings(target_width=settings.target_width / 100, tail=settings.tail, max_work=settings.max_work,
                         decide=True, start_steps=4 * STEPS_PER_SPREAD, settle=False)

    def verdict(seq) -> str:
        key = tuple(seq.tolist())
        if key not in refined:
            try:
                b = bounds_for_terms(*sequence_terms(instance, seq, gamma), float(instance.loss_max),
                                     float(instance.omega), fine)
                # a feasibility proof counts only where the shared decision agrees (one verdict per plan)
                refined[key] = UNDECIDED if b.verdict == PROVEN_FEASIBLE and not decided(key) else b.verdict
                diag["refinements_exhausted"] += int(b.exhausted and b.verdict == UNDECIDED)
            except ExactUnavailable:
                refined[key] = UNDECIDED
                diag["refinements_exhausted"] += 1
            diag["refined"] += 1
        return refined[key]

    shared: dict = {}

    def decided(seq, plan=None) -> bool:
        """Whether the shared decision proves ``seq`` (or ``plan``) feasible: the same function
        and settings ``evaluate --exact`` uses
        (:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`),
        so a returned plan has one verdict."""
        key = tuple(int(m) for m in seq)
        if key not in shared:
            diag["confirmations"] += 1
            try:
                b = (plan_violation_bounds(instance, plan) if plan is not None
                     else violation_bounds(instance, list(key), gamma))
                shared[key] = b.verdict == PROVEN_FEASIBLE
            except ExactUnavailable:
                shared[key] = False
        return shared[key]

    solved: dict = {}

    def cheapest(seqs):
        # a refinement round moves one prefix's c_L or c_U: the other set's MILP is unchanged
        key = tuple(sorted(tuple(s.tolist()) for s in seqs))
        if key not in solved:
            solved[key] = _cheapest(data, k_max, seqs, gap / 4)
        return solved[key]

    for _ in range(rounds):
        prefixes = [p for p in prefixes if p.c_lo is not None]
        if not prefixes:
            return run.result("infeasible", proven_none)
        run.phase = "MILP"
        res_lo = cheapest([p.seq(p.c_lo) for p in prefixes])
        if res_lo.status == "infeasible":
            # every truly feasible plan is dominated by an L sequence (module docstring): none fits
            return run.result("infeasible", "no model sequence not proven to violate the quantile (3) fits Tmax = "
                              f"{data.T:g} (the rest are proven to violate it: P(ℓ(K) > ℓmax) > 1 − ω = {risk:g})")
        if res_lo.lower_bound is not None:
            run.lb = res_lo.lower_bound if run.lb is None else max(run.lb, res_lo.lower_bound)
        if res_lo.status == "time_limit":
            raise limits.TimeLimitReached(f"time limit reached ({res_lo.message})")
        res_up = cheapest([p.seq(p.c_up) for p in prefixes if p.c_up is not None])
        if res_up is not None and res_up.plan is not None and res_up.cost is not None:
            seq = _sequence_of(res_up.plan, instance)
            if not decided(seq, res_up.plan):
                # proven on the enumeration's lattice, not by the shared decision: the
                # length goes back to the undecided ones and the next proven one is sought
                run.phase = "refinement"
                for p in prefixes:
                    if p.c_up == seq.size - sum(p.blocks) and np.array_equal(p.seq(p.c_up), seq):
                        demote_prefix(p, decided)
                continue
            if run.ub is None or res_up.cost < run.ub:
                run.ub, run.plan = res_up.cost, res_up.plan
        if res_up is not None and res_up.status == "time_limit":
            raise limits.TimeLimitReached(f"time limit reached ({res_up.message})")
        lb, ub = run.lb, run.ub
        if ub is not None and lb is not None and (ub - lb) <= gap * ub:
            break
        # refine every undecided length whose cost floor is below UB (only those
        # can raise LB or lower UB), the L-optimum's sequence among them; re-solve
        run.phase = "refinement"
        cutoff = math.inf if ub is None else ub * (1 - gap)
        target = _sequence_of(res_lo.plan, instance) if res_lo.plan is not None else None
        hit = [p for p in prefixes if p.undecided and (
            data.count_floor(p.counts(p.undecided[0], data.M)) < cutoff
            or (target is not None and np.array_equal(p.seq(p.c_lo), target)))]
        if not hit:
            break
        for p in hit:
            limits.check_time("milp-exact: refinement of undecided lengths")
            refine_prefix(p, verdict, lambda c, p=p, cut=cutoff: data.count_floor(p.counts(c, data.M)) < cut)
    prefixes = [p for p in prefixes if p.c_lo is not None]
    if run.ub is None:
        if not prefixes:
            return run.result("infeasible", proven_none)
        return run.result("no_solution", (
            "no sequence proven feasible and not all proven infeasible at this precision (plans at the "
            "feasibility boundary, " + f"{sum(len(p.undecided) for p in prefixes)} lengths undecided); "
            "the lower bound still holds"))
    lb, ub = run.lb, run.ub
    status = "optimal" if lb is not None and ub - lb <= gap * ub else "feasible"
    return run.result(status, "" if status == "optimal" else "bracket wider than gap after the refinement rounds")


def _sequence_of(plan, instance) -> np.ndarray:
    return np.array([instance.model_index[e.model] for e in plan.epochs], dtype=int)


__all__ = ["exact_static_applies", "solve_exact_static", "run_exact_static", "enumerate_exact", "SpectralLattice",
           "STEPS_PER_SPREAD", "EXACT_STATIC_PARAMETERS", "ExactStaticSettings"]
