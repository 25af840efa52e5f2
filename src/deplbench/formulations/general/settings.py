"""Settings of the ``general`` branch-and-bound: switches, tuning constants, work budgets.

One frozen :class:`GeneralSettings` is passed into
:func:`~.solver.solve_general` and from there to every search (as
``Problem.settings``); no module global changes behaviour. Every phase
before the outer wall-clock stop is budgeted in work units — Kelley
iterations (one DP and one LP each), enumerated last blocks, exact leaf
evaluations, search nodes — never in shares of the time limit, so the same
instance and settings give the same nodes, bounds and result on any
machine. The wall-clock ``time_limit`` only stops the whole solve; the
result then names the phase it stopped in (``diagnostics["stopped_in"]``).

The options are validated through :data:`GENERAL_PARAMETERS` (the suite's
one validation path, :mod:`deplbench.params`): an invalid one raises a
one-line :class:`~deplbench.errors.SolverError` naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deplbench.errors import SolverError
from deplbench.params import GAP, SEED, TIME_LIMIT, Param, resolve, trusted

#: Every field of :class:`GeneralSettings` as a declared parameter (same names, same defaults).
GENERAL_PARAMETERS: dict[str, Param] = {
    # ---- switches (the off positions are kept for comparison tests)
    "class_leaves": Param(True, bool, "search every class assignment as its own leaf while they are few "
                          "(classes); off: the box search over classes"),
    "pair_search": Param(True, bool, "two γ-groups: search model blocks with counts (pairs); "
                         "off: the interleaving search"),
    "pair_groups": Param(True, bool, "with pair_search: bound neighbouring two-cluster assignments by their "
                         "corner first (pair_groups)"),
    "short_plans": Param(True, bool, "enumerate every plan of at most max_blocks blocks exactly and let the "
                         "search skip them (incumbent.cover)"),
    "scenario_bounds_when_covered": Param(False, bool, "keep the per-scenario completion bound where the "
                                          "switch-counting group bound applies (slower, rarely stronger)"),
    # ---- tuning constants
    "lambda_reset": Param(0.02, float, "re-set λ to the incumbent's time price when |log(price/λ)| exceeds "
                          "log(1 + this)", low=0.0, low_inclusive=False),
    "max_lambda_resets": Param(8, int, "λ re-sets allowed in one solve", low=0),
    "assignment_limit": Param(20_000, int, "most class assignments searched one by one (class_leaves)", low=1),
    "max_blocks": Param(3, int, "blocks of the exactly enumerated short plans", low=1, high=3),
    "kelley_rel_tol": Param(2e-3, float, "a group's Kelley loop stops when LP bound − best value ≤ this × |best|",
                            low=0.0),
    "kelley_smoothing": Param(0.5, float, "in-out smoothing weight of Kelley's next query (0: plain Kelley)",
                              low=0.0, high=1.0),
    "pi_box": Param(3.0, float, "upper bound on each group multiplier π_s relative to μ_ref", low=0.0,
                    low_inclusive=False),
    # ---- work budgets (deterministic: counted, never timed)
    "root_kelley_iterations": Param(40, int, "Kelley iterations per scenario group at the root", low=1),
    "refresh_kelley_iterations": Param(15, int, "Kelley iterations per group after a λ re-set", low=0),
    "rebound_kelley_iterations": Param(40, int, "Kelley iterations per group on the first incumbent's "
                                       "assignment", low=0),
    "enumeration_steps": Param(50_000, int, "work units of one short-plan enumeration (a last-block search or "
                               "an exact leaf evaluation each)", low=1),
    "enumeration_steps_total": Param(2_000_000, int, "work units of all short-plan enumerations together",
                                     low=1),
    "node_iterations": Param(8, int, "Kelley iterations of the group multipliers re-tuned at every batch of "
                             "children (node_groups; 0: the root pool only)", low=0),
    "node_rows": Param(4096, int, "most (candidate, group) pairs re-tuned in one batch of children, the nearest "
                       "to pruning first (node_groups)", low=1),
    "node_warm_start": Param(True, bool, "start each re-tuned row from the π last tuned for the same node "
                             "(block sequence) and group in any search of the solve (node_groups.WarmStarts); "
                             "off: from the pool's best"),
    "corner_root_gap": Param(0.10, float, "pair_groups searches a block's corner only when its root bound is "
                             "within this share of the incumbent", low=0.0),
    "open_rebounds": Param(20, int, "open boxes re-bounded at the final λ when a search stops early", low=0),
    "max_splits": Param(50_000, int, "most integer cluster splits enumerated at one leaf (leaves)", low=1),
    "max_placements": Param(20_000, int, "partial placements kept per level of the two-group placement search "
                            "(placement)", low=1),
}


@dataclass(frozen=True)
class GeneralSettings:
    """Switches, tuning constants and work budgets of one ``general`` solve.

    Field meanings: :data:`GENERAL_PARAMETERS` (the help text of each).
    Build from a mapping with :meth:`from_params` (validated); the defaults
    are the tuned ones. :meth:`as_dict` is what a result records.
    """

    class_leaves: bool = True
    pair_search: bool = True
    pair_groups: bool = True
    short_plans: bool = True
    scenario_bounds_when_covered: bool = False
    lambda_reset: float = 0.02
    max_lambda_resets: int = 8
    assignment_limit: int = 20_000
    max_blocks: int = 3
    kelley_rel_tol: float = 2e-3
    kelley_smoothing: float = 0.5
    pi_box: float = 3.0
    root_kelley_iterations: int = 40
    refresh_kelley_iterations: int = 15
    rebound_kelley_iterations: int = 40
    enumeration_steps: int = 50_000
    enumeration_steps_total: int = 2_000_000
    node_iterations: int = 8
    node_rows: int = 4096
    node_warm_start: bool = True
    corner_root_gap: float = 0.10
    open_rebounds: int = 20
    max_splits: int = 50_000
    max_placements: int = 20_000

    def __post_init__(self) -> None:
        # the one validation path: every field through its Param (one-line error naming it)
        for f in dataclasses.fields(self):
            value = GENERAL_PARAMETERS[f.name].convert(f.name, getattr(self, f.name), strict=True)
            object.__setattr__(self, f.name, value)

    @classmethod
    def from_params(cls, given: Mapping[str, Any] | str | GeneralSettings | None = None) -> GeneralSettings:
        """Settings from overrides, validated: a mapping (CLI strings accepted as values)
        or one string ``"NAME=VALUE,NAME=VALUE"`` (the ``general_settings`` parameter).

        Raises
        ------
        SolverError
            One line naming the unknown or invalid option.
        """
        if given is None:
            return cls()
        if isinstance(given, GeneralSettings):
            return given
        if isinstance(given, str):
            pairs = [item.strip() for item in given.split(",") if item.strip()]
            bad = [item for item in pairs if "=" not in item]
            if bad:
                raise SolverError(f"general_settings: expected NAME=VALUE, got {bad[0]!r}")
            split = [(k.strip(), v.strip()) for k, v in (item.split("=", 1) for item in pairs)]
            keys = [k for k, _ in split]
            twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
            if twice is not None:        # one value per option, never "the last one wins"
                raise SolverError(f"general_settings: {twice!r} given twice")
            given = dict(split)
        if not isinstance(given, Mapping):
            raise SolverError(f"general_settings: expected a mapping of option = value, got {given!r}")
        try:
            values = resolve(GENERAL_PARAMETERS, given, owner="the general solver's settings")
        except SolverError as exc:
            # the option is one of general_settings': the message says where it was given
            raise SolverError(f"general_settings: {exc}") from None
        return trusted(cls, values)

    def as_dict(self) -> dict[str, Any]:
        """Every field, for a result's params (a stored result says how it was computed)."""
        return dataclasses.asdict(self)


#: The options of :func:`~.solver.solve_general` (the one validation path,
#: :mod:`deplbench.params`); ``time_limit``, ``seed`` and ``gap`` are the
#: suite's shared declarations.
SOLVE_PARAMETERS: dict[str, Param] = {
    "scenarios": Param(1000, int, "in-sample scenarios S", low=1),
    "seed": SEED.but(help="seed of the in-sample scenarios"),
    "time_limit": TIME_LIMIT.but(default=60.0, help="wall-clock seconds (the outer stop); none: no limit"),
    "gap": GAP,
    "threads": Param(1, int, "accepted for interface compatibility (the solve runs on one thread, BLAS "
                     "included)", low=1),
    "node_limit": Param(None, int, "search nodes allowed; none: unlimited", low=1, nullable=True),
}


@dataclass(frozen=True)
class GeneralSolveSettings:
    """Everything one ``general`` solve reads: the options of
    :data:`SOLVE_PARAMETERS` and the :class:`GeneralSettings`.

    Built once — by :meth:`from_params` (``solve_general``'s keywords) or by
    the exact MILP from its own settings, whose values are already checked —
    and passed whole to the search. Constructed directly, every field is
    checked against :data:`SOLVE_PARAMETERS` (strictly: typed values).
    """

    scenarios: int = 1000
    seed: int = 0
    time_limit: float | None = 60.0
    gap: float = 1e-4
    threads: int = 1
    node_limit: int | None = None
    general: GeneralSettings = field(default_factory=GeneralSettings)

    def __post_init__(self) -> None:
        given = {name: getattr(self, name) for name in SOLVE_PARAMETERS}
        for name, value in resolve(SOLVE_PARAMETERS, given, owner="solve_general", strict=True).items():
            object.__setattr__(self, name, value)
        if not isinstance(self.general, GeneralSettings):
            raise SolverError(f"general: expected GeneralSettings, got {type(self.general).__name__}")

    @classmethod
    def from_params(cls, given: Mapping[str, Any],
                    general: Mapping[str, Any] | str | GeneralSettings | None = None) -> GeneralSolveSettings:
        """The settings from options (CLI strings accepted) and the general
        settings (:meth:`GeneralSettings.from_params`), each checked once.

        Raises
        ------
        SolverError
            One line naming the unknown or invalid option.
        """
        values = resolve(SOLVE_PARAMETERS, given, owner="solve_general")
        return trusted(cls, {**values, "general": GeneralSettings.from_params(general)})

    def record(self) -> dict[str, Any]:
        """The options as a result's params record them."""
        return {**{name: getattr(self, name) for name in SOLVE_PARAMETERS}, "formulation": "general",
                "general_settings": self.general.as_dict()}


__all__ = ["GENERAL_PARAMETERS", "SOLVE_PARAMETERS", "GeneralSettings", "GeneralSolveSettings"]
