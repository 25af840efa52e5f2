"""The settings of :func:`~deplbench.solvers.certify.certified.certify`: defaults,
their :class:`~deplbench.params.Param` table and one frozen dataclass.

One job: say which settings the certified bracket takes and which values
they accept, and reject anything else through :func:`deplbench.params.resolve`
(the one validation path) with a one-line :class:`~deplbench.errors.SolverError`
naming the setting. Nothing here depends on an instance or runs a solve.

Examples
--------
>>> from deplbench.solvers.certify.settings import CertifySettings
>>> s = CertifySettings.from_options(replications=10, risk_grid=(0.9, 0.8))
>>> s.replications, s.risk_grid, s.confidence
(10, (0.9, 0.8), 0.95)
>>> CertifySettings.from_options(confidence=1.2)
Traceback (most recent call last):
...
deplbench.errors.SolverError: parameter 'confidence': must be < 1.0, got 1.2
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.params import GAP, TIME_LIMIT, Param, offset_seed, resolve, trusted

DEFAULT_CONFIDENCE = 0.95
#: M: with S = 2000 and β_L = 0.025, ρ ≈ 0.56 and L = 7 (the 7th smallest of
#: 20); more replications raise L/M towards ρ and so the LB, at the price of
#: one SAA solve each.
DEFAULT_REPLICATIONS = 20
DEFAULT_SCENARIOS = 2000
#: N′: with 2·10⁵ draws a plan with true violation 0.0093 is certified ≤ 0.01.
DEFAULT_VALIDATION = 200_000
#: Tightened SAA risk levels for UB candidates, as fractions f of α (γ = f·α).
DEFAULT_RISK_GRID = (0.9, 0.8, 0.7, 0.6)
#: SAA solves (independent seeds) per tightened level: SAA plans overfit their
#: scenarios, so their true violation varies a lot between seeds; more draws
#: of the same level give more chances of a cheap certifiable plan.
DEFAULT_GRID_SEEDS = 4
#: Wall seconds per SAA solve. Generous: a replication stopped without a proven
#: bound contributes only the trivial bound 0 to LB.
DEFAULT_TIME_LIMIT = 300.0
#: Validation seed = seed + this offset: a seed that neither the replications
#: (seed, seed + 1, …) nor the sweeps' evaluation (seed 0) use, so the
#: validation draws are independent of every candidate plan.
VALIDATION_SEED_OFFSET = 1_000_003
#: Stage 2 runs when the stage-1 bracket is wider than this (the target
#: width: 2 % at confidence 0.95 on the realistic instances).
DEFAULT_TARGET_WIDTH = 0.02
#: Share of β_L and of β_U reserved for stage 2 (refine.split_beta).
DEFAULT_REFINE_SHARE = 0.5
#: N′₂: with 10⁶ draws a plan with true violation 0.0097 is certified ≤ 0.01
#: at the per-test level of six stage-2 tests.
DEFAULT_REFINE_VALIDATION = 1_000_000
DEFAULT_REFINE_CANDIDATES = 6
#: M₂ = 80 replications of S₂ = 10·S = 20 000 scenarios. Plans whose violation
#: probability sits just above α (AlexNet ℓmax = 11: a plan costing 939.73
#: violates with probability ≈ 0.0104) still pass an SAA at S₂ = 20 000 in
#: about 30 % of the replications (9 of 30 measured), as often as the order
#: L₂/M₂ = 9/30 allows at M₂ = 30; at M₂ = 80, L₂ = 32 (40 %), so they no
#: longer hold LB down. The CPU time this costs (the whole bracket, with the
#: machine's load) is measured in docs/certify.md.
DEFAULT_REFINE_REPLICATIONS = 80
DEFAULT_REFINE_SCENARIOS_FACTOR = 10
#: Mildly tightened stage-2 levels: at S₂ = 10·S a plan overfits less, so γ
#: close to α already gives plans whose true violation is below α.
DEFAULT_REFINE_RISK_GRID = (0.95, 0.9)
DEFAULT_REFINE_GRID_SEEDS = 2

def _share(default: float, help: str) -> Param:
    """A share or probability in the open interval (0, 1)."""
    return Param(default, float, help, low=0.0, low_inclusive=False, high=1.0, high_inclusive=False)


#: Every setting of :func:`~deplbench.solvers.certify.certified.certify` (the help
#: texts are its docstring's, shortened).
#: Most validation draws one test may take: the evaluator keeps two float64
#: values per draw (final losses and their sorted copy) within the suite's
#: memory budget (formulations.evaluation.evaluate.MEMORY_BUDGET), so a larger N′ is
#: refused when the settings are built, before any SAA solve.
MAX_VALIDATION = int(limits.MEMORY_BUDGET_GIB * 2**30) // (2 * limits.FLOAT_BYTES)
#: Most tightened SAA solves one stage may run, len(risk_grid) × grid_seeds: as many as its
#: replications may be (each is one SAA solve too). A stage's task list is built whole before
#: any solve, so this keeps it ≤ 2·MAX_REPLICATIONS entries, and every SAA seed (seed … seed + 4·10⁴
#: over both stages) below the validation's seed + VALIDATION_SEED_OFFSET.
MAX_TIGHTENED_SOLVES = limits.MAX_REPLICATIONS
#: The largest offset from ``seed`` a bracket draws from: stage 2's validation, one past stage 1's.
MAX_SEED_OFFSET = VALIDATION_SEED_OFFSET + 1

SETTINGS_PARAMETERS: dict[str, Param] = {
    # below 1/2 a one-sided bound lies on the wrong side of its estimate (as evaluate's levels)
    "confidence": Param(DEFAULT_CONFIDENCE, float, "joint confidence 1 − β of the bracket", low=0.5, high=1.0,
                        high_inclusive=False),
    "replications": Param(DEFAULT_REPLICATIONS, int, "M SAA replications for the lower bound", low=1,
                          high=limits.MAX_REPLICATIONS),
    "scenarios": Param(DEFAULT_SCENARIOS, int, "S scenarios per stage-1 SAA solve", low=1),
    "validation": Param(DEFAULT_VALIDATION, int, "N′ fresh draws judging every stage-1 candidate", low=100,
                        high=MAX_VALIDATION),
    "risk_grid": Param(DEFAULT_RISK_GRID, tuple, "factors f of the tightened risk levels γ = f·(1 − ω)",
                       low=0.0, low_inclusive=False, high=1.0),
    "time_limit": TIME_LIMIT.but(default=DEFAULT_TIME_LIMIT, help="seconds per SAA solve (none: no limit)"),
    "seed": offset_seed(MAX_SEED_OFFSET, "stage 2's validation stream",
                        "base seed of the replications (validation: seed + 1000003, stage 2's + 1000004)"),
    # the MILP's own rule: a gap it refuses would end every SAA solve in status error
    "gap": GAP.but(help="MILP relative gap per SAA solve"),
    "lb_share": _share(0.5, "share of β spent on the lower bound"),
    "grid_seeds": Param(DEFAULT_GRID_SEEDS, int, "SAA solves per tightened risk level", low=1,
                        high=MAX_TIGHTENED_SOLVES),
    "target_width": Param(DEFAULT_TARGET_WIDTH, float, "stage 2 runs above this relative width "
                          "(0 or None: never)", low=0.0, high=1.0, high_inclusive=False, nullable=True),
    "refine_share": _share(DEFAULT_REFINE_SHARE, "share of β_L and β_U reserved for stage 2"),
    "refine_replications": Param(DEFAULT_REFINE_REPLICATIONS, int, "M₂ stage-2 replications", low=1,
                                 high=limits.MAX_REPLICATIONS),
    "refine_scenarios": Param(None, int, "S₂ scenarios per stage-2 SAA solve (0 or none: 10·S)", low=0,
                              nullable=True),
    "refine_validation": Param(DEFAULT_REFINE_VALIDATION, int, "N′₂ fresh draws per stage-2 test", low=100,
                               high=MAX_VALIDATION),
    "refine_candidates": Param(DEFAULT_REFINE_CANDIDATES, int, "at most this many stage-2 tests", low=1),
    "refine_risk_grid": Param(DEFAULT_REFINE_RISK_GRID, tuple, "tightened levels of the stage-2 candidates",
                              low=0.0, low_inclusive=False, high=1.0),
    "refine_grid_seeds": Param(DEFAULT_REFINE_GRID_SEEDS, int, "stage-2 SAA solves per level", low=1,
                               high=MAX_TIGHTENED_SOLVES),
    "total_time_limit": Param(None, float, "wall seconds for the whole bracket (None: per solve only); the "
                              "SAA solves end by 80 % of it, validation tests start by 90 %", low=0.0,
                              low_inclusive=False, nullable=True),
}


#: Smallest risk one stage of one bound may be given (β·share·share, :func:`check_risk_split`):
#: it is split further among that stage's tests, and 1 − each test's share must stay below
#: 1 in binary64 (1 − 1e-16 rounds to 1); 1e-12 leaves room for a thousand tests and more.
MIN_STAGE_RISK = 1e-12


def check_risk_split(confidence: float, lb_share: float, refine_share: float, target_width: float | None) -> None:
    """Refuse settings whose split of β = 1 − confidence leaves a stage a risk binary64 cannot state.

    β goes to the lower and the upper bound (``lb_share``), and each side's
    to stage 1 and stage 2 (``refine_share``, when ``target_width`` lets
    stage 2 run; :func:`~deplbench.solvers.certify.refine.split_beta`).
    Each piece must be at least :data:`MIN_STAGE_RISK`: a confidence of
    1 − 1e-16 or a share of 1e-17 made a stage's test confidence round to 1.

    Raises
    ------
    SolverError
        Naming ``confidence``, ``lb_share`` or ``refine_share``, whichever is
        the nearest its edge.
    """
    beta = 1.0 - confidence
    shares = {"lb_share": min(lb_share, 1.0 - lb_share)}
    if target_width:
        shares["refine_share"] = min(refine_share, 1.0 - refine_share)
    smallest = beta * math.prod(shares.values())
    if smallest >= MIN_STAGE_RISK:
        return
    pieces = {"confidence": beta, **shares}
    name = min(pieces, key=lambda k: pieces[k])
    raise SolverError(f"{name}: the smallest share of β = 1 − confidence it leaves one stage of one bound, "
                      f"{smallest:.3g}, is below {MIN_STAGE_RISK:g}, so a test's confidence would round to 1 "
                      f"(confidence {confidence!r}, lb_share {lb_share!r}, refine_share {refine_share!r}; "
                      "use a lower confidence or shares nearer 0.5)")


def check_scenarios_memory(scenarios: int, refine_scenarios: int | None, target_width: float | None) -> None:
    """Refuse an S (or S₂, when stage 2 may run) whose SAA solves' scenario arrays exceed the memory
    budget on every instance (:func:`~deplbench.formulations.milp.data.scenarios_refusal`): each
    such solve would end with status ``error``, and the bracket with none. Like N′ above
    :data:`MAX_VALIDATION`, refused when the settings are built, before any solve.

    Raises
    ------
    SolverError
        Naming ``scenarios`` or ``refine_scenarios``.
    """
    from deplbench.formulations.milp.data import scenarios_refusal

    why = scenarios_refusal(scenarios, limits.MEMORY_BUDGET_GIB, limit_name="memory budget")
    if why:
        raise SolverError(f"parameter 'scenarios': {why}")
    if target_width:
        s2 = refine_scenarios or DEFAULT_REFINE_SCENARIOS_FACTOR * scenarios
        name = "refine_scenarios" if refine_scenarios else "scenarios"
        why = scenarios_refusal(s2, limits.MEMORY_BUDGET_GIB, field=name, limit_name="memory budget")
        if why:
            raise SolverError(f"parameter {name!r}: stage 2's {why}"
                              + ("" if refine_scenarios else f" (S₂ = {DEFAULT_REFINE_SCENARIOS_FACTOR}·S)")
                              + "; or target_width 0: no stage 2")


def check_tightened_solves(risk_grid: tuple, grid_seeds: int, refine_risk_grid: tuple, refine_grid_seeds: int,
                           target_width: float | None) -> None:
    """Refuse a stage whose tightened SAA solves, levels × seeds per level, exceed
    :data:`MAX_TIGHTENED_SOLVES` (stage 2's only when ``target_width`` lets it run): its task
    list, built whole, would take the memory and the seeds of that many solves.

    Raises
    ------
    SolverError
        Naming ``risk_grid`` and ``grid_seeds`` (or their ``refine_`` pair).
    """
    stages = [("risk_grid", risk_grid, "grid_seeds", grid_seeds)]
    if target_width:
        stages.append(("refine_risk_grid", refine_risk_grid, "refine_grid_seeds", refine_grid_seeds))
    for grid_name, grid, seeds_name, seeds in stages:
        if len(grid) * seeds > MAX_TIGHTENED_SOLVES:
            raise SolverError(f"{grid_name} × {seeds_name}: {len(grid)} levels × {seeds} solves each = "
                              f"{len(grid) * seeds} tightened SAA solves, above the {MAX_TIGHTENED_SOLVES} one "
                              f"stage may run; give fewer levels or a smaller {seeds_name}")


@dataclass(frozen=True)
class CertifySettings:
    """Every setting of :func:`~deplbench.solvers.certify.certified.certify`, checked
    against :data:`SETTINGS_PARAMETERS` when built (whichever way: the
    constructor, :meth:`from_options` or :func:`dataclasses.replace`).
    The meaning of each field is in :func:`~deplbench.solvers.certify.certified.certify`."""

    confidence: float = DEFAULT_CONFIDENCE
    replications: int = DEFAULT_REPLICATIONS
    scenarios: int = DEFAULT_SCENARIOS
    validation: int = DEFAULT_VALIDATION
    risk_grid: tuple[float, ...] = DEFAULT_RISK_GRID
    time_limit: float | None = DEFAULT_TIME_LIMIT
    seed: int = 0
    gap: float = 1e-4
    lb_share: float = 0.5
    grid_seeds: int = DEFAULT_GRID_SEEDS
    target_width: float | None = DEFAULT_TARGET_WIDTH
    refine_share: float = DEFAULT_REFINE_SHARE
    refine_replications: int = DEFAULT_REFINE_REPLICATIONS
    refine_scenarios: int | None = None
    refine_validation: int = DEFAULT_REFINE_VALIDATION
    refine_candidates: int = DEFAULT_REFINE_CANDIDATES
    refine_risk_grid: tuple[float, ...] = DEFAULT_REFINE_RISK_GRID
    refine_grid_seeds: int = DEFAULT_REFINE_GRID_SEEDS
    total_time_limit: float | None = None

    def __post_init__(self) -> None:
        checked = resolve(SETTINGS_PARAMETERS, dataclasses.asdict(self), owner="certify", strict=True)
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        self._check_split()

    def _check_split(self) -> CertifySettings:
        check_risk_split(self.confidence, self.lb_share, self.refine_share, self.target_width)
        check_scenarios_memory(self.scenarios, self.refine_scenarios, self.target_width)
        check_tightened_solves(self.risk_grid, self.grid_seeds, self.refine_risk_grid, self.refine_grid_seeds,
                               self.target_width)
        return self

    @classmethod
    def from_options(cls, **options: Any) -> CertifySettings:
        """The settings from keyword options (typed values), each checked once;
        an unknown name is refused naming it."""
        return trusted(cls, resolve(SETTINGS_PARAMETERS, options, owner="certify", strict=True))._check_split()

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> CertifySettings:
        """The settings from values :func:`deplbench.params.resolve` already checked
        against :data:`SETTINGS_PARAMETERS` (the ``milp-certified`` solver's); keys
        that are not settings (``algorithms``, ``workers``) are left out."""
        return trusted(cls, {k: v for k, v in resolved.items() if k in SETTINGS_PARAMETERS})._check_split()

    @property
    def stage2_scenarios(self) -> int:
        """S₂: ``refine_scenarios``, or 10·S when it is None."""
        return (DEFAULT_REFINE_SCENARIOS_FACTOR * self.scenarios if not self.refine_scenarios
                else self.refine_scenarios)

    def record(self) -> dict[str, Any]:
        """The JSON-ready settings, as stored in the bracket record."""
        out = dataclasses.asdict(self)
        out.update(risk_grid=list(self.risk_grid), refine_risk_grid=list(self.refine_risk_grid),
                   target_width=float(self.target_width or 0.0), refine_scenarios=self.stage2_scenarios)
        return out


@dataclass(frozen=True)
class CertifiedSettings:
    """The one settings object of a ``milp-certified`` solve.

    Built by :meth:`~deplbench.solvers.certify.certified.MilpCertified.build_settings`
    from the resolved parameters.

    Attributes
    ----------
    certify : CertifySettings
        The bracket's own settings, passed whole to
        :func:`~deplbench.solvers.certify.certified.certify`.
    algorithms : str
        Comma-separated algorithms whose plans are also UB candidates ("" for none).
    workers : int
        Local processes for the SAA solves.
    """

    certify: CertifySettings
    algorithms: str = ""
    workers: int = 1


__all__ = ["CertifySettings", "CertifiedSettings", "check_scenarios_memory", "check_tightened_solves",
           "SETTINGS_PARAMETERS", "MAX_VALIDATION", "MAX_TIGHTENED_SOLVES", "MAX_SEED_OFFSET", "DEFAULT_CONFIDENCE",
           "DEFAULT_REPLICATIONS", "DEFAULT_SCENARIOS", "DEFAULT_VALIDATION", "DEFAULT_RISK_GRID", "DEFAULT_GRID_SEEDS",
           "DEFAULT_TIME_LIMIT", "VALIDATION_SEED_OFFSET", "DEFAULT_TARGET_WIDTH", "DEFAULT_REFINE_SHARE",
           "DEFAULT_REFINE_VALIDATION", "DEFAULT_REFINE_CANDIDATES", "DEFAULT_REFINE_REPLICATIONS",
           "DEFAULT_REFINE_SCENARIOS_FACTOR", "DEFAULT_REFINE_RISK_GRID", "DEFAULT_REFINE_GRID_SEEDS"]
