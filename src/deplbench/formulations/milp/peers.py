"""Which MILP solvers the cut loop can drive: names, availability, versions.

One job: say which solver names exist, whether each is usable on this
machine (and why not), which version runs, and refuse anything else with a
:class:`~deplbench.errors.SolverError` naming the option. The backends
themselves are in :mod:`.backends` (HiGHS), :mod:`.scip` and
:mod:`.pyomo_peer`.

Names
-----
``highs``
    HiGHS through highspy, matrices passed directly (the default).
``scip``
    SCIP through pyscipopt (the ``[peers]`` extra); matrix formulations.
``pyomo:NAME``
    Any solver Pyomo's ``SolverFactory(NAME)`` reaches — ``pyomo:cbc``,
    ``pyomo:gurobi``, ``pyomo:cplex``, ``pyomo:appsi_highs``, ... — for the
    matrix formulations and the naive (Pyomo) one. The prefix keeps Pyomo's
    own names unchanged (``pyomo:highs`` and ``highs`` are different routes
    to the same solver) and says which layer resolves the name. NAME must
    belong to a family in :data:`PYOMO_FAMILIES`: deplbench has to pass a
    time limit and a relative gap in the solver's own option names, and
    refuses a name whose option names it does not know rather than run it
    without a limit.

Every solver runs the same cut loop (:mod:`.cutloop`), so the exactness
contract holds for each: the plan is re-costed exactly (real x), the bound
is the solver's proven dual bound, and ``optimal`` needs (UB − LB)/UB ≤ gap.
A solver that reports no dual bound therefore never yields ``optimal``.

The names and a look-up that imports nothing (``deplbench algorithms``
without ``--check``) are in :mod:`deplbench.formulations.peer_lookup`;
:func:`availability` here is the exact test, which asks the solver.
"""

from __future__ import annotations

import contextlib
import functools
import logging

from deplbench.errors import SolverError
from deplbench.formulations.peer_lookup import (  # noqa: F401 - re-exported: the names live there
    DIRECT_SOLVERS,
    NO_DUAL_BOUND,
    PYOMO_FAMILIES,
    PYOMO_NEEDS,
    PYOMO_PREFIX,
    known_solvers,
    lookup,
    name_problem,
    pyomo_family,
    solver_row,
)


@contextlib.contextmanager
def quiet_pyomo():
    """Pyomo logs a warning for every solver executable it cannot find; a
    probe is a question, so its answer is returned instead of logged."""
    logger = logging.getLogger("pyomo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@functools.lru_cache(maxsize=None)
def availability(name: str) -> tuple[bool, str]:
    """(usable here, version or the reason why not) for a solver name.

    Never raises; an unknown name is ``(False, reason)``. Cached per process
    (probing starts solver executables); ``availability.cache_clear()``
    forgets the answers.
    """
    if name == "highs":
        from deplbench.formulations.milp.backends import highs_version

        return True, highs_version()
    if name == "scip":
        from deplbench.formulations.milp.scip import scip_version

        version = scip_version()
        return (True, version) if version else (False, "pyscipopt is not installed "
                                                       "(pip install 'deplbench[peers]')")
    problem = name_problem(name)
    if problem is not None:
        return False, problem
    inner = name[len(PYOMO_PREFIX):]
    from deplbench.formulations.milp.backends import quiet_stdout

    try:
        import pyomo.environ  # noqa: F401 - registers the solver plugins
        from pyomo.opt import SolverFactory

        # appsi_highs constructs a Highs object here, whose banner goes to fd 1:
        # an availability probe, with no log anyone asked for
        with quiet_pyomo(), quiet_stdout(discard=True):
            opt = SolverFactory(inner)
            ok = bool(opt.available(exception_flag=False))
            if ok and hasattr(opt, "license_is_valid"):
                ok = bool(opt.license_is_valid())
                if not ok:
                    return False, f"SolverFactory({inner!r}) has no valid licence here"
            version = opt.version() if ok else None
    except Exception as exc:  # noqa: BLE001 - a probe reports, never raises
        return False, f"SolverFactory({inner!r}) failed: {exc}"
    if not ok:
        return False, f"not installed here (SolverFactory({inner!r}) finds no solver)"
    return True, f"pyomo {_pyomo_version()} {inner} {_dotted(version)}".rstrip()


def _pyomo_version() -> str:
    import pyomo.version

    return str(pyomo.version.version)


def _dotted(version) -> str:
    if version is None:
        return ""
    if isinstance(version, (tuple, list)):
        return ".".join(str(v) for v in version)
    return str(version)


def solver_version(name: str) -> str | None:
    """The version string recorded in results (None when not available)."""
    ok, text = availability(name)
    return text if ok else None


def solver_table() -> list[dict]:
    """:func:`~deplbench.formulations.peer_lookup.solver_row` of every known solver,
    each asked by :func:`availability` (``checked`` True; the quick form without
    imports is :func:`~deplbench.formulations.peer_lookup.lookup_table`)."""
    return [solver_row(name, *availability(name), checked=True) for name in known_solvers()]


def available_solvers() -> list[str]:
    """The known solvers usable on this machine."""
    return [r["name"] for r in solver_table() if r["available"]]


def check_solver(name, option: str = "solver", formulation: str | None = None,
                 backend: str = "highs") -> None:
    """Refuse a solver that is unknown, unavailable or cannot run ``formulation``.

    Parameters
    ----------
    name : str
        A solver name (module docstring).
    option : str
        How the caller names the option in messages (``"solver"``,
        ``"--solver"``, ``"algorithms[0].solvers[1]"``).
    formulation : str, optional
        The formulation asked for; ``"naive"`` is a Pyomo model, which SCIP
        does not take (HiGHS and the Pyomo peers do); ``"general"`` is a
        branch-and-bound of its own on HiGHS, which only ``highs`` runs.
    backend : str
        ``"pyomo"`` routes HiGHS through Pyomo; only ``solver="highs"`` takes it.

    Raises
    ------
    SolverError
        One line naming ``option``, what was given and what is available.
    """
    if not isinstance(name, str) or not name:
        raise SolverError(f"{option}: must be a solver name (highs, scip or pyomo:NAME), got {name!r}")
    if name not in DIRECT_SOLVERS and not name.startswith(PYOMO_PREFIX):
        raise SolverError(f"{option}: unknown solver {name!r}; known: {', '.join(known_solvers())} "
                          f"(available here: {', '.join(available_solvers())})")
    if name == "scip" and formulation == "naive":
        raise SolverError(f"{option}: 'scip' solves the matrix formulations; naive is a Pyomo model "
                          "(use highs or a pyomo: solver)")
    if name != "highs" and formulation == "general":
        raise SolverError(f"{option}: {name!r} cannot run the 'general' formulation (a branch-and-bound of its "
                          "own on HiGHS, not a matrix model; use highs)")
    if name != "highs" and backend != "highs":
        raise SolverError(f"{option}: {name!r} reads the model itself; backend='pyomo' only routes HiGHS "
                          "(use backend='highs' with it)")
    ok, why = availability(name)
    if not ok:
        raise SolverError(f"{option}: {name!r} is not available: {why} "
                          f"(available here: {', '.join(available_solvers())})")


__all__ = ["DIRECT_SOLVERS", "PYOMO_PREFIX", "PYOMO_FAMILIES", "PYOMO_NEEDS", "NO_DUAL_BOUND", "pyomo_family",
           "known_solvers", "lookup", "name_problem", "solver_row", "availability",
           "solver_version", "solver_table", "available_solvers", "check_solver", "quiet_pyomo"]
