"""Re-solve a library's MPS files and compare with its .solu (MIPLIB-style check).

One job: for each solver asked for, solve every MPS file of a built library
from disk under a time limit, judge agreement with the ``deplbench.solu``
line (:func:`.solu.agrees`: the known value must lie between the solver's
proven bound and its best solution, within a relative tolerance), and
summarise as Mittelmann's MILP benchmark tables do: instances solved within
the limit, the shifted geometric mean of the times (shift 10 s; an unsolved
instance counts at the time limit), and the mean gap at the limit of the
instances not solved.

References
----------
H. Mittelmann, "Benchmarks for optimization software" (plato.asu.edu/bench.html):
shifted geometric means with shift 10 s, unsolved instances at the time limit.
"""

from __future__ import annotations

import math
import os

from deplbench.benchmarks.library.build import SOLU, library_files
from deplbench.benchmarks.library.mps import MPS_SOLVERS, check_fraction, check_seconds, solve_mps
from deplbench.benchmarks.library.solu import agrees, read_solu
from deplbench.benchmarks.sgm import SHIFT_S, shifted_geomean  # noqa: F401 - re-exported
from deplbench.errors import SolverError


def _check_args(solvers, time_limit, gap, rel_tol) -> None:
    """Raise :class:`SolverError` naming the first invalid argument."""
    if not solvers:
        raise SolverError("solver: give at least one solver")
    for s in solvers:
        if s not in MPS_SOLVERS:
            raise SolverError(f"solver: must be one of {list(MPS_SOLVERS)}, got {s!r}")
    check_seconds(time_limit, "time_limit")
    check_fraction(gap, "gap", "relative gap")
    check_fraction(rel_tol, "tolerance", "relative tolerance")


def check_library(root: str, solver: str = "highs", time_limit: float = 60.0, gap: float = 1e-6,
                  rel_tol: float = 1e-5, only: list[str] | None = None, progress=None) -> dict:
    """Re-solve every MPS file of the library at ``root`` with ``solver``.

    Parameters
    ----------
    root : str
        A directory written by :func:`.build.build_library`.
    solver : {"highs", "scip"}
    time_limit : float, default 60
        Seconds per instance.
    gap : float, default 1e-6
        Relative gap at which the solver stops (``optimal``).
    rel_tol : float, default 1e-5
        Relative tolerance of the comparison with the .solu values (the
        .solu values are themselves optimal within the build's gap, 1e-6 by
        default, and solvers' feasibility tolerances move objectives by a
        little more).
    only : list of str, optional
        Check only these instances.
    progress : callable, optional
        Called with one line per instance.

    Returns
    -------
    dict
        ``{"library": dir, "library_version", "solver", "version", "time_limit", "gap",
        "tolerance", "instances": [per-instance outcome with "agrees" and "reason"],
        "summary": {"solver", "version", "instances", "solved", "shifted_geomean_s",
        "mean_gap_unsolved", "mismatches", "errors"}}``. An instance is
        *solved* when the solver proved optimality within ``gap`` inside the
        limit and agrees with the .solu.

    Raises
    ------
    SolverError
        Invalid arguments, a directory that is not a library, an unknown
        name in ``only``.
    """
    _check_args([solver], time_limit, gap, rel_tol)
    manifest = library_files(root)
    solu = read_solu(os.path.join(root, SOLU))
    names = list(solu)
    if only is not None:
        bad = sorted(set(only) - set(names))
        if bad:
            raise SolverError(f"only: not in {SOLU}: {', '.join(bad)}")
        names = [n for n in names if n in set(only)]
    rows = []
    version = ""
    for name in names:
        path = os.path.join(root, "mps", f"{name}.mps")
        entry = solu[name]
        row = {"name": name, "solu_tag": entry.tag, "solu_value": entry.value}
        if not os.path.isfile(path):
            row.update(status="error", primal=None, dual=None, gap=None, seconds=float(time_limit),
                       nodes=None, agrees=False, reason=f"listed in {SOLU} but mps/{name}.mps is missing")
            rows.append(row)
            continue
        out = solve_mps(path, solver, float(time_limit), float(gap))
        version = out.version or version
        ok, why = agrees(entry, out.status, out.primal, out.dual, rel_tol)
        row.update(status=out.status, primal=out.primal, dual=out.dual, gap=out.gap,
                   seconds=round(out.seconds, 3), nodes=out.nodes, retries=out.retries, agrees=ok, reason=why)
        rows.append(row)
        if progress is not None:
            progress(f"{name}: {solver} {out.status} {out.primal} in {out.seconds:.2f} s; "
                     f"{'agrees' if ok else 'MISMATCH' if ok is False else 'not compared'} ({why})")
    return {"library": str(root), "library_version": manifest.get("library_version"), "solver": solver,
            "version": version, "time_limit": float(time_limit), "gap": float(gap), "tolerance": float(rel_tol),
            "instances": rows, "summary": summarise(rows, solver, version, float(time_limit))}


def summarise(rows: list[dict], solver: str, version: str, time_limit: float) -> dict:
    """Mittelmann-style summary of one solver's check rows (see module docstring)."""
    solved = [r for r in rows if r["status"] == "optimal" and r["agrees"] is not False]
    times = [min(r["seconds"], time_limit) if r in solved else time_limit for r in rows]
    gaps = [r["gap"] for r in rows if r not in solved and r.get("gap") is not None and math.isfinite(r["gap"])]
    return {"solver": solver, "version": version, "instances": len(rows), "solved": len(solved),
            "shifted_geomean_s": shifted_geomean(times) if rows else math.nan, "shift_s": SHIFT_S,
            "mean_gap_unsolved": (sum(gaps) / len(gaps)) if gaps else None,
            "mismatches": sum(1 for r in rows if r["agrees"] is False),
            "errors": sum(1 for r in rows if r["status"] == "error")}


__all__ = ["SHIFT_S", "check_library", "shifted_geomean", "summarise"]
