"""Options of :func:`~deplbench.formulations.milp.solve_milp` and the MILP's constants.

One job: say which options exist and which values they take
(:func:`option_table`, :class:`~deplbench.params.Param` declarations), hold
one solve's options in a frozen :class:`MilpSettings` built once, and
reject anything else with a :class:`~deplbench.errors.SolverError` that
names the option, through :func:`deplbench.params.resolve` like every other
parameter. Nothing here depends on an
instance: an option that is valid but cannot be used on a given instance
(a forced formulation whose structure is absent, a model that would not fit
in memory) is reported as a result with status ``error`` and the reason.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deplbench.formulations.general.settings import GeneralSettings, GeneralSolveSettings
from deplbench.formulations.last_block import LOSS_TOL
from deplbench.formulations.milp.peers import check_solver
from deplbench.limits import MAX_THREADS, MEMORY_BUDGET_GIB, MEMORY_LIMIT_PARAM
from deplbench.params import GAP, SEED, TIME_LIMIT, Param, resolve, trusted

#: Backends for the matrix formulations ("highs": matrices straight to highspy).
BACKENDS = ("highs", "pyomo")
#: MILP solvers with a backend of their own: HiGHS always; SCIP through
#: pyscipopt (the ``[peers]`` extra) for the matrix formulations. Any Pyomo
#: SolverFactory solver is reached as ``"pyomo:NAME"`` (see .peers).
SOLVERS = ("highs", "scip")
#: Largest |D| handled exactly by enumerating each cluster's dataset subset.
MAX_DATASETS = 6
#: Ratio of consecutive λ values in the initial cut grid: the outer
#: approximation of F is then within 1 − (2ρ^{1/4} − ρ^{1/2}) ≈ 2.5e-5.
CUT_RATIO = 1.02
#: The cut grid spans λ_ref·[1/CUT_SPAN, CUT_SPAN].
CUT_SPAN = 1e3
#: The initial cut grid is made coarser when its dense rows over all counts
#: N would hold more non-zeros than this (many clusters); see Data.n_cuts.
MAX_CUT_NONZEROS = 1_000_000
#: Safety margin added to every big-M (absolute, times 1 + |ℓmax|).
BIGM_SLACK = 1e-6
#: Cut-loop iterations at most (each is a master re-solve).
MAX_ROUNDS = 50
#: Default memory budget (GiB) for the scenario arrays and the model; a build
#: estimated above it is refused with status ``error`` before anything large
#: is allocated (docs/DESIGN.md, "what every solver promises about time and
#: memory"); the suite's one budget, deplbench.limits).
MEMORY_LIMIT_GIB = MEMORY_BUDGET_GIB


class BuildTimeout(Exception):
    """The time limit passed while the model was being built (the message
    names the stage); :func:`solve_milp` turns it into status ``time_limit``."""


class Verdict:
    """A build stage's final word instead of a model (e.g. ``infeasible`` with
    the reason): the solve returns it as the result's status and message."""

    def __init__(self, status: str, message: str):
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"Verdict({self.status!r}, {self.message!r})"


def _lp_file(path: str) -> str:
    """Why ``write_lp`` cannot be written ("" when it can)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".lp", ".mps"):
        return f"file name must end in .lp or .mps, got {path!r}"
    parent = os.path.dirname(os.path.abspath(path))
    return "" if os.path.isdir(parent) else f"directory {parent!r} does not exist"


def option_table(formulations) -> dict[str, Param]:
    """The options of :func:`solve_milp` as :class:`~deplbench.params.Param`
    declarations: the one table, read by :class:`MilpSettings` and declared
    by the registered ``milp`` solver as its parameters. ``formulations`` are
    the formulation names accepted (``"fast"`` and every registered one, see
    :mod:`deplbench.formulations.milp.catalog`). ``time_limit``, ``seed``,
    ``gap`` and ``memory_limit`` are the suite's shared declarations
    (:mod:`deplbench.params`, :mod:`deplbench.limits`)."""
    return {
        "scenarios": Param(1000, int, "in-sample scenarios S of the SAA quantile", low=1),
        "seed": SEED.but(help="seed of the in-sample scenarios (ScenarioSampler) and of the solver"),
        "time_limit": TIME_LIMIT.but(default=60.0, help="wall-clock seconds for build and solve (none: no limit)"),
        "gap": GAP,
        "threads": Param(1, int, "HiGHS threads", low=1, high=MAX_THREADS),
        "formulation": Param("fast", str, "fast (picks by structure: counts for order-invariant losses, "
                             "sequence enumeration for acyclic switch graphs, else flow; general beyond 6 "
                             "datasets) or one of them forced; naive is the textbook model, general the block "
                             "branch-and-bound for any switch graph and up to 12 datasets",
                             choices=tuple(formulations)),
        "write_lp": Param(None, str, "write the first master model to FILE (.lp or .mps)", nullable=True,
                          check=_lp_file),
        "backend": Param("highs", str, "fast/flow model to HiGHS directly (highs) or through Pyomo (pyomo)",
                         choices=BACKENDS),
        "node_limit": Param(None, int, "branch-and-bound nodes over all master solves (a machine-independent "
                            "limit); none = unlimited", low=1, nullable=True),
        "solver": Param("highs", str, "MILP solver the cut loop drives: highs, scip (pyscipopt, the [peers] "
                        "extra; matrix formulations) or pyomo:NAME (a Pyomo SolverFactory solver, e.g. "
                        "pyomo:cbc); `deplbench solve --help` lists those available"),
        "heuristic_time": Param(None, float, "seconds the block heuristic may spend seeding the incumbent (0: off; "
                                "none: min(3, time_limit/10), unlimited without a time limit; matrix "
                                "formulations only)", low=0.0, finite=True, nullable=True),
        "general_settings": Param(None, str, "settings of the general formulation as NAME=VALUE[,NAME=VALUE...] "
                                  "(switches, tuning constants, work budgets; docs/DESIGN.md)", nullable=True),
        "memory_limit": MEMORY_LIMIT_PARAM.but(help="GiB the scenarios and the model may take (estimated "
                                               "before building; larger builds are refused)"),
    }


def _formulation_names() -> tuple[str, ...]:
    from deplbench.formulations.milp.catalog import formulation_names  # catalog imports this module

    return formulation_names()


@dataclass(frozen=True)
class MilpSettings:
    """Every option of one exact MILP solve, checked once and passed down whole.

    Built by :meth:`from_params` (keywords or CLI strings), by
    :meth:`from_resolved` (values already checked by
    :func:`deplbench.params.resolve`, as :func:`deplbench.solvers.run.solve`
    gives them) or directly (every field checked, strictly). Whichever way,
    each value is validated once, ``general_settings`` is parsed once into a
    :class:`~deplbench.formulations.general.GeneralSettings`, and the
    solver is checked against the formulation and backend
    (:func:`.peers.check_solver`). The meaning of each field:
    :func:`~deplbench.formulations.milp.solve_milp`.
    """

    scenarios: int = 1000
    seed: int = 0
    time_limit: float | None = 60.0
    gap: float = 1e-4
    threads: int = 1
    formulation: str = "fast"
    write_lp: str | None = None
    backend: str = "highs"
    node_limit: int | None = None
    memory_limit: float = MEMORY_LIMIT_GIB
    solver: str = "highs"
    heuristic_time: float | None = None
    general_settings: GeneralSettings | None = None

    def __post_init__(self) -> None:
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "general_settings"}
        checked = resolve(option_table(_formulation_names()), _fspath(given), owner="solve_milp", strict=True)
        for name, value in checked.items():
            if name != "general_settings":
                object.__setattr__(self, name, value)
        object.__setattr__(self, "general_settings", _general(self.general_settings))
        _check_solver(self.solver, self.formulation, self.backend)

    @classmethod
    def from_params(cls, given: Mapping[str, Any], *, strict: bool = False) -> MilpSettings:
        """The settings from options: keywords (``strict``: typed values, as
        :func:`solve_milp` passes them) or CLI strings.

        Raises
        ------
        SolverError
            One line naming the first unknown or invalid option.
        """
        given = dict(given)
        general = given.pop("general_settings", None)
        values = resolve(option_table(_formulation_names()), _fspath(given), owner="solve_milp", strict=strict)
        return cls.from_resolved({**values, "general_settings": general})

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> MilpSettings:
        """The settings from values :func:`deplbench.params.resolve` already
        checked against :func:`option_table` (nothing is converted again);
        ``general_settings`` is parsed here, once, and the solver checked
        against the formulation and backend."""
        settings = trusted(cls, {**resolved, "general_settings": _general(resolved.get("general_settings"))})
        _check_solver(settings.solver, settings.formulation, settings.backend)
        return settings

    def record(self) -> dict[str, Any]:
        """The options as a result's ``params`` record them."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["general_settings"] = None if self.general_settings is None else self.general_settings.as_dict()
        return out

    def for_general(self) -> GeneralSolveSettings:
        """The options the ``general`` branch-and-bound reads, passed on without a second check."""
        return trusted(GeneralSolveSettings, {
            "scenarios": self.scenarios, "seed": self.seed, "time_limit": self.time_limit, "gap": self.gap,
            "threads": self.threads, "node_limit": self.node_limit,
            "general": self.general_settings if self.general_settings is not None else GeneralSettings()})


def _fspath(given: dict[str, Any]) -> dict[str, Any]:
    """``write_lp`` given as a path object, as its string (the Python API accepts both)."""
    if isinstance(given.get("write_lp"), os.PathLike):
        given = {**given, "write_lp": os.fspath(given["write_lp"])}
    return given


def _general(value) -> GeneralSettings | None:
    """``general_settings`` as given (None, ``"NAME=VALUE,..."``, a mapping or the object), parsed once."""
    return None if value is None else GeneralSettings.from_params(value)


def _check_solver(solver: str, formulation: str, backend: str) -> None:
    """Whether ``solver`` exists here and can run ``formulation`` through ``backend``
    (a check across options, which no single Param can make)."""
    check_solver(solver, "solver", formulation, backend)


__all__ = ["BACKENDS", "SOLVERS", "MAX_DATASETS", "CUT_RATIO", "CUT_SPAN", "MAX_CUT_NONZEROS", "BIGM_SLACK", "LOSS_TOL",
           "MAX_ROUNDS", "MEMORY_LIMIT_GIB", "BuildTimeout", "MilpSettings", "Verdict", "option_table"]
