"""One solver interface for every algorithm (benchopt-style).

An algorithm is a small declarative class: a registry ``name``, a display
``label``, its ``parameters`` as data (:class:`~deplbench.params.Param`,
re-exported here: default, type, bounds, help), whether it is ``exact``, its
plotting ``style`` (:class:`PlotStyle`), whether it ``applies`` to an
instance, and a ``run(instance, **params) -> SolveResult`` method. The
runner and the CLI call :func:`deplbench.solvers.run.solve` and know
nothing about any single algorithm; the reports read the metadata stored
with each row (:func:`deplbench.solvers.registry.solver_info`). A third-party
package adds one through an entry point (docs/extending.md).

This module is the interface only: :mod:`deplbench.solvers.registry` (the
names) imports it, and :mod:`deplbench.solvers.run` (``solve``,
``closed_loop``) imports both, so no import goes back.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

from deplbench import limits
from deplbench.errors import DeplbenchError, SolverError
from deplbench.formulations.evaluation.closed_loop import (  # noqa: F401 - the policy interface, re-exported
    STOP,
    ClosedLoopPolicy,
    Decision,
    FixedPlanPolicy,
    PolicyState,
    StopAtTarget,
    simulate,
)
from deplbench.formulations.model.result import SolveResult
from deplbench.params import Param, resolve

#: What an algorithm's result can be a reference for (:attr:`Solver.reference`).
REFERENCE_KINDS = ("", "saa", "certified-static", "exact-static", "adaptive")

#: Colours of the built-in algorithms come first; a solver that declares no
#: style gets one of the remaining colours, picked by a stable hash of its
#: name (the same in every process and every report).
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")


@dataclass(frozen=True)
class PlotStyle:
    """How an algorithm looks in every figure: matplotlib colour, marker, line style."""

    colour: str
    marker: str = "o"
    linestyle: str = "-"

    def to_dict(self) -> dict[str, str]:
        return {"colour": self.colour, "marker": self.marker, "linestyle": self.linestyle}

    @classmethod
    def for_name(cls, name: str) -> "PlotStyle":
        """A deterministic style for a solver that declares none.

        Drawn from the palette's last colours (the first seven belong to the
        built-in algorithms) with a CRC-32 of the name, which unlike
        ``hash()`` does not change between processes.
        """
        h = zlib.crc32(name.encode("utf-8"))
        spare = PALETTE[7:]
        return cls(spare[h % len(spare)], MARKERS[(h // 7) % len(MARKERS)],
                   LINESTYLES[(h // 71) % len(LINESTYLES)])


class Solver:
    """Base class of every algorithm: metadata as class data, and :meth:`run`.

    A solver declares itself completely; nothing else in deplbench has to
    change to add one (see docs/extending.md).

    Attributes
    ----------
    name : str
        Registry name (``--algo NAME``, the ``algorithm`` column of results).
    label : str
        Display name in tables and figures (default: ``name``).
    description : str
        One line for ``deplbench algorithms``.
    parameters : dict of str to Param
        Every tunable parameter, validated by :mod:`deplbench.params`.
    exact : bool
        True for methods that prove optimality (their ``optimal`` rows serve
        as the reference optimum in reports).
    reference_priority : int
        Among exact methods, which optimum a report trusts first when several
        ran on one instance (lower first).
    reference : str
        Which optimum this algorithm's result is a reference for, read by the
        reports from the task record (never by name): ``""`` (none, the
        default), ``"saa"`` (optimum of the sample-average problem on its S
        scenarios), ``"certified-static"`` (statistical bracket on the true
        static optimum), ``"exact-static"`` (deterministic bracket on the
        true chance-constrained static optimum, exact violation
        probabilities), ``"adaptive"`` (bracket on the least expected cost of
        any closed-loop policy with P(success) >= omega). See
        :data:`REFERENCE_KINDS`.
    style : PlotStyle or None
        Colour, marker, line style; None picks :meth:`PlotStyle.for_name`.
    preprocess : bool
        Whether :func:`~deplbench.solvers.run.solve` removes unusable models/clusters first
        (:mod:`deplbench.formulations.model.preprocess`); True for every built-in.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Param]] = {}
    exact: ClassVar[bool] = False
    reference_priority: ClassVar[int] = 100
    reference: ClassVar[str] = ""
    style: ClassVar[PlotStyle | None] = None
    preprocess: ClassVar[bool] = True
    #: The parameter that is the whole solve's wall-clock deadline (the one
    #: clock, :mod:`deplbench.limits`). ``time_limit`` for most solvers; a
    #: solver whose ``time_limit`` bounds one inner solve names its outer
    #: budget instead (``milp-certified``: ``total_time_limit``), and so does a solver with
    #: no ``time_limit`` (``adaptive-opt``: ``refine_time``); ``solve --time-limit`` sets it then.
    clock: ClassVar[str] = "time_limit"

    def run(self, instance, **params) -> SolveResult:
        """Solve with keyword parameters: the front for direct calls.

        Resolves ``params`` against :attr:`parameters`, builds the settings
        once (:meth:`build_settings`) and runs :meth:`run_settings` under the
        deadline of :attr:`clock` and the ``memory_limit`` budget
        (:mod:`deplbench.limits`), as :func:`~deplbench.solvers.run.solve`
        does. A solver overrides :meth:`run_settings` (the settings built
        once, passed down whole) or, the simple way, this method.
        """
        if type(self).run_settings is Solver.run_settings:
            raise NotImplementedError(f"{type(self).__name__} defines neither run nor run_settings")
        resolved = self.resolve_params(params)
        settings = self.settings_of(resolved)
        with limits.deadline(resolved.get(self.clock)), limits.memory_budget(resolved.get("memory_limit")):
            return self.run_settings(instance, settings)

    def run_settings(self, instance, settings: Any) -> SolveResult:
        """Solve with the settings :meth:`build_settings` made from resolved parameters.

        :func:`~deplbench.solvers.run.solve` calls this, after validating
        every parameter once against :attr:`parameters`; below it only checks
        that need the instance remain. A lower-level function that users may
        also call on its own (e.g. DepL's ``place_and_allocate`` or
        ``build_spec``) checks its argument with the very
        :class:`~deplbench.params.Param` the table holds, so both refuse the
        same values with the same message. The default hands the resolved
        mapping to :meth:`run` (a solver that overrides only ``run``).
        """
        return self.run(instance, **settings)

    @classmethod
    def build_settings(cls, resolved: dict[str, Any]) -> Any:
        """The settings object of one solve, built once from resolved parameters.

        ``resolved`` is what :meth:`resolve_params` returned: every value is
        already converted and checked, so nothing is parsed again. A family
        with a frozen settings object (the MILP's, certify's) returns it
        here, and refuses combinations of parameters that no single
        :class:`~deplbench.params.Param` can check, raising
        :class:`~deplbench.errors.SolverError` naming the parameter (before
        the run, so the caller's mistake is an error, not a result). The
        default is the resolved mapping itself.
        """
        return resolved

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """Whether the algorithm applies to ``instance``, and if not, why (one line).

        The default applies everywhere. An algorithm that declines an
        instance (its structure is outside what the method handles) returns
        ``(False, reason)``; the runner and :func:`~deplbench.solvers.run.solve` then record status
        ``skipped`` with the reason, which is not a failure.
        """
        return True, ""

    def closed_loop_policy(self, instance, result: SolveResult, **params) -> ClosedLoopPolicy | None:
        """Optional: how the algorithm acts when it observes each epoch's loss.

        Returns a :class:`~deplbench.formulations.evaluation.closed_loop.ClosedLoopPolicy`
        built from the result of :meth:`run` on ``instance``, or None (the
        default): the algorithm is a fixed plan, simulated by
        :class:`~deplbench.formulations.evaluation.closed_loop.FixedPlanPolicy`. See
        :func:`~deplbench.solvers.run.closed_loop`.
        """
        return None

    @classmethod
    def resolve_params(cls, params: dict[str, Any], *, strict: bool = False,
                       error: type[DeplbenchError] = SolverError) -> dict[str, Any]:
        """Defaults filled in, unknown names rejected, values converted.

        ``strict`` refuses strings for numbers (typed sources such as sweep
        TOML files); ``error`` is the exception class raised (default
        :class:`~deplbench.errors.SolverError`). Every value is checked on
        its own (:meth:`~deplbench.params.Param.convert`), then the
        combination (:meth:`check_params`), with the same error class and
        message form, so a refusal is the caller's error before any work.
        """
        resolved = resolve(cls.parameters, params, owner=f"algorithm {cls.name!r}", strict=strict, error=error)
        try:
            refused = cls.check_params(resolved)
        except DeplbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plug-in's hook: named in one line, never a traceback
            raise error(f"algorithm {cls.name!r}: check_params failed ({type(exc).__name__}: {exc})") from None
        if refused:
            if not (isinstance(refused, tuple) and len(refused) == 2):
                raise error(f"algorithm {cls.name!r}: check_params returned {refused!r}, not None or "
                            "(name, reason)")
            name, reason = refused
            raise error(f"parameter {name!r}: {reason}")
        return resolved

    @classmethod
    def settings_of(cls, resolved: dict[str, Any], error: type[DeplbenchError] = SolverError) -> Any:
        """:meth:`build_settings`, with a failure of a plug-in's own hook named in one line.

        Raises
        ------
        DeplbenchError
            What ``build_settings`` raises for a refused combination, or
            ``error`` naming the algorithm when it fails otherwise (a
            ``TypeError`` in a user's hook, not a traceback).
        """
        try:
            return cls.build_settings(resolved)
        except DeplbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plug-in's hook: named in one line, never a traceback
            raise error(f"algorithm {cls.name!r}: build_settings failed ({type(exc).__name__}: {exc})") from None

    @classmethod
    def check_params(cls, resolved: dict[str, Any]) -> tuple[str, str] | None:
        """Refuse a combination of parameters no single :class:`~deplbench.params.Param` can check.

        Called by :meth:`resolve_params` (the one validation path) once
        every value is converted, so before any solve work and without the
        instance. A check that needs the instance stays in the solve.

        Parameters
        ----------
        resolved : dict
            Every parameter, converted and checked on its own.

        Returns
        -------
        tuple of (str, str) or None
            None (the default) to accept; else ``(name, reason)``: the
            parameter to name and why its value is refused with the others,
            raised as ``parameter 'name': reason``.
        """
        return None

    @classmethod
    def display_label(cls) -> str:
        return cls.label or cls.name

    @classmethod
    def plot_style(cls) -> PlotStyle:
        return cls.style if cls.style is not None else PlotStyle.for_name(cls.name)

    @classmethod
    def info(cls) -> dict[str, Any]:
        """JSON-able metadata: what the runner stores in each task record."""
        return {
            "name": cls.name,
            "label": cls.display_label(),
            "exact": bool(cls.exact),
            "reference_priority": int(cls.reference_priority),
            "reference": str(cls.reference),
            "description": cls.description,
            "style": cls.plot_style().to_dict(),
            "parameters": {k: p.describe() for k, p in cls.parameters.items()},
        }


__all__ = ["Param", "PlotStyle", "Solver", "REFERENCE_KINDS", "PALETTE", "MARKERS", "LINESTYLES",
           "ClosedLoopPolicy", "FixedPlanPolicy", "StopAtTarget", "PolicyState", "Decision", "STOP",
           "simulate"]
