"""MILP solver names (``--solver``) and a look-up of which are here, importing nothing.

One job: the table of solver names deplbench can drive (the direct
backends ``highs`` and ``scip``, and ``pyomo:NAME`` for the SolverFactory
names whose option names it knows), and :func:`lookup`, which says whether
what a name needs is installed by looking for it: the Python package
(``importlib.util.find_spec``, no import) or the executable on PATH
(``shutil.which``, not run) that Pyomo's plugin for that name looks for
(:data:`PYOMO_NEEDS`). It takes milliseconds, so ``deplbench algorithms``
starts without Pyomo.

Guarantee: the look-up finds what the solver needs, it does not prove the
solver runs (a licence, a broken executable or a Pyomo plugin that changed
are not seen). The exact test is
:func:`deplbench.formulations.milp.peers.availability`, which asks the
solver itself (``deplbench algorithms --check``); ``tests/formulations/milp/test_solver_peers.py``
checks that both agree on the machine running the tests.

The meaning of each name is documented in :mod:`deplbench.formulations.milp.peers`,
which re-exports these names.
"""

from __future__ import annotations

import importlib.util
import re
import shutil

#: Solvers with a backend of their own (matrices passed directly).
DIRECT_SOLVERS = ("highs", "scip")
#: Prefix of the solvers reached through Pyomo's SolverFactory.
PYOMO_PREFIX = "pyomo:"

#: Option names per solver family: relative gap, absolute gap, threads,
#: random seed, node limit (None: the solver has no such option). The time
#: limit goes through Pyomo's own ``timelimit`` argument, which every
#: SolverFactory interface maps to the solver's option.
PYOMO_FAMILIES: dict[str, dict] = {
    "cbc": {"names": ("cbc", "appsi_cbc"),
            "rel_gap": "ratioGap", "abs_gap": "allowableGap", "threads": "threads",
            "seed": "randomCbcSeed", "nodes": "maxNodes"},
    "glpk": {"names": ("glpk",),
             "rel_gap": "mipgap", "abs_gap": None, "threads": None, "seed": None, "nodes": None},
    "gurobi": {"names": ("gurobi", "gurobi_direct", "gurobi_persistent", "appsi_gurobi"),
               "rel_gap": "MIPGap", "abs_gap": "MIPGapAbs", "threads": "Threads", "seed": "Seed",
               "nodes": "NodeLimit"},
    "cplex": {"names": ("cplex", "cplex_direct", "cplex_persistent", "appsi_cplex"),
              "rel_gap": "mip_tolerances_mipgap", "abs_gap": "mip_tolerances_absmipgap",
              "threads": "threads", "seed": "randomseed", "nodes": "mip_limits_nodes"},
    "highs": {"names": ("appsi_highs", "highs"),
              "rel_gap": "mip_rel_gap", "abs_gap": "mip_abs_gap", "threads": "threads",
              "seed": "random_seed", "nodes": "mip_max_nodes"},
    "scip": {"names": ("scip",),
             "rel_gap": "limits/gap", "abs_gap": "limits/absgap", "threads": None,
             "seed": "randomization/randomseedshift", "nodes": "limits/nodes"},
}

#: What each SolverFactory name needs, as Pyomo 6.7-6.10's plugin for it
#: looks for it (``_default_executable``, the ``*_available`` flags): any one
#: of ``"exe:NAME"`` (an executable on PATH) or ``"py:NAME"`` (an importable
#: package); every name needs Pyomo itself too.
PYOMO_NEEDS: dict[str, tuple[str, ...]] = {
    "cbc": ("exe:cbc",), "appsi_cbc": ("exe:cbc",), "glpk": ("exe:glpsol",),
    # the shell interface falls back to gurobipy when gurobi.sh is absent
    "gurobi": ("exe:gurobi.sh", "py:gurobipy"), "gurobi_direct": ("py:gurobipy",),
    "gurobi_persistent": ("py:gurobipy",), "appsi_gurobi": ("py:gurobipy",),
    "cplex": ("exe:cplex",), "cplex_direct": ("py:cplex",), "cplex_persistent": ("py:cplex",),
    "appsi_cplex": ("py:cplex",), "appsi_highs": ("py:highspy",), "highs": ("py:highspy",),
    "scip": ("exe:scip", "exe:scipampl"),
}

#: The Python package behind each direct backend.
DIRECT_PACKAGES = {"highs": "highspy", "scip": "pyscipopt"}

#: SolverFactory interfaces known to report no dual bound (Pyomo 6.10's
#: appsi_cbc returns -inf): they run, but the cut loop can never prove
#: ``optimal`` with them (said in listings; enforced by the bound itself).
NO_DUAL_BOUND = frozenset({"appsi_cbc"})

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def pyomo_family(name: str) -> str | None:
    """The family of a SolverFactory name (``"appsi_highs"`` → ``"highs"``), or None."""
    for family, spec in PYOMO_FAMILIES.items():
        if name in spec["names"]:
            return family
    return None


def known_solvers() -> list[str]:
    """Every solver name deplbench knows how to drive (available here or not)."""
    return [*DIRECT_SOLVERS, *(PYOMO_PREFIX + n for spec in PYOMO_FAMILIES.values() for n in spec["names"])]


def name_problem(name) -> str | None:
    """Why ``name`` is no solver deplbench can drive, or None when it is one."""
    if name in DIRECT_SOLVERS:
        return None
    if not isinstance(name, str) or not name.startswith(PYOMO_PREFIX):
        return f"unknown solver {name!r}"
    inner = name[len(PYOMO_PREFIX):]
    if not _NAME.match(inner):
        return f"{name!r} is not a SolverFactory name"
    if pyomo_family(inner) is None:
        known = ", ".join(n for spec in PYOMO_FAMILIES.values() for n in spec["names"])
        return (f"deplbench does not know the time-limit and gap options of {inner!r} "
                f"(known SolverFactory names: {known})")
    return None


def _found(need: str) -> str | None:
    """Where ``"exe:NAME"`` or ``"py:NAME"`` is, or None (nothing imported or run)."""
    kind, _, what = need.partition(":")
    if kind == "exe":
        return shutil.which(what)
    try:
        spec = importlib.util.find_spec(what)
    except (ImportError, ValueError):
        return None
    return None if spec is None else (spec.origin or what)


def _dist_version(dist: str) -> str:
    """``"highspy 1.16.0"`` from the installed metadata (no import of the package)."""
    from importlib import metadata

    try:
        return f"{dist} {metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return dist


def lookup(name) -> tuple[bool, str]:
    """(found here, what was found or why not), importing and running nothing.

    Never raises; an unknown name is ``(False, reason)`` with the reason
    :func:`~deplbench.formulations.milp.peers.availability` gives.
    """
    problem = name_problem(name)
    if problem is not None:
        return False, problem
    if name in DIRECT_PACKAGES:
        package = DIRECT_PACKAGES[name]
        if _found("py:" + package) is None:
            extra = " (pip install 'deplbench[peers]')" if name == "scip" else ""
            return False, f"{package} is not installed{extra}"
        return True, _dist_version(package)
    if _found("py:pyomo") is None:
        return False, "pyomo is not installed"
    needs = PYOMO_NEEDS[name[len(PYOMO_PREFIX):]]
    for need in needs:
        where = _found(need)
        if where is not None:
            what = _dist_version(need[3:]) if need.startswith("py:") else where
            return True, f"{_dist_version('pyomo')}, {what}"
    wanted = " or ".join(f"executable {n[4:]} on PATH" if n.startswith("exe:") else f"package {n[3:]}"
                         for n in needs)
    return False, f"needs {wanted}"


def solver_row(name: str, ok: bool, text: str, checked: bool) -> dict:
    """One row of a solver table: ``name``, ``available``, ``version`` or ``reason``,
    ``checked`` (True: the solver was asked; False: only looked up), ``note``."""
    row = {"name": name, "available": ok, ("version" if ok else "reason"): text, "checked": checked}
    if name[len(PYOMO_PREFIX):] in NO_DUAL_BOUND:
        row["note"] = "reports no dual bound: its results are never 'optimal'"
    return row


def lookup_table() -> list[dict]:
    """:func:`solver_row` of every known solver from :func:`lookup` (no import, ``checked`` False)."""
    return [solver_row(name, *lookup(name), checked=False) for name in known_solvers()]


__all__ = ["DIRECT_SOLVERS", "DIRECT_PACKAGES", "PYOMO_PREFIX", "PYOMO_FAMILIES", "PYOMO_NEEDS", "NO_DUAL_BOUND",
           "pyomo_family", "known_solvers", "name_problem", "lookup", "solver_row", "lookup_table"]
