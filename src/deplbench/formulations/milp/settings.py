"""One exact MILP solve's options as a frozen :class:`MilpSettings`, checked once.

Built from the one table of :func:`.options.option_table` (which the
registered ``milp`` solver declares as its parameters) and passed whole to
:func:`.solve.run_milp`, the stages and the ``general`` search: nothing
below it parses or checks an option again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deplbench.errors import SolverError
from deplbench.formulations.general.settings import GeneralSettings, GeneralSolveSettings
from deplbench.formulations.milp.catalog import formulation_names as _formulation_names
from deplbench.formulations.milp.options import MEMORY_LIMIT_GIB, option_table
from deplbench.formulations.milp.peers import check_solver
from deplbench.params import resolve, trusted


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
        _check_scenarios(self.scenarios, self.memory_limit)

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
        _check_scenarios(settings.scenarios, settings.memory_limit)
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


def _check_scenarios(scenarios: int, memory_limit: float) -> None:
    """Refuse an S whose scenario arrays exceed ``memory_limit`` on every instance
    (:func:`~.data.scenarios_refusal`), before any work; a given instance's own
    estimate stays the solve's (status ``error``)."""
    from deplbench.formulations.milp.data import scenarios_refusal

    why = scenarios_refusal(scenarios, memory_limit)
    if why:
        raise SolverError(f"parameter 'scenarios': {why} (or raise memory_limit)")


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


__all__ = ["MilpSettings"]
