"""Re-solve a library's model files and compare with its .solu files (MIPLIB-style check).

One job: for each solver and model kind asked for, solve every file of that
kind (``pwl/*.mps.gz``: HiGHS, SCIP; ``minlp/*.nl.gz``: SCIP, which reads
AMPL files; any other solver is reported ``skipped`` with the reason) of a
built library from disk under a time limit, judge agreement with the line
of that kind's ``.solu`` (:func:`.solu.agrees`: the known value must lie between the solver's
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
import time

from deplbench.benchmarks.library.build import KINDS, library_files
from deplbench.benchmarks.library.mps import MPS_SOLVERS, PARAMETERS, solve_mps
from deplbench.benchmarks.library.solu import agrees, read_solu
from deplbench.benchmarks.sgm import SHIFT_S, shifted_geomean  # noqa: F401 - re-exported
from deplbench.errors import SolverError

#: Which solver reads which model kind here (others are reported skipped, with the reason).
READS = {"pwl": ("highs", "scip"), "minlp": ("scip",)}


def skip_reason(solver: str, kind: str) -> str:
    """Why ``solver`` cannot run the ``kind`` models here ("" when it can).

    HiGHS and SCIP read the files; a ``pyomo:NAME`` solver is given the
    model as Pyomo gives it every model (rebuilt from the instance and
    checked against the manifest's fingerprint): the PWL MILP when it is
    installed, the MINLP when its family also solves convex quadratic rows
    (:data:`~deplbench.formulations.milp.saa_model.QUADRATIC_FAMILIES`).
    """
    if solver in READS[kind]:
        return ""
    if solver == "highs":
        return "HiGHS solves no nonlinear (cone) rows: run it on the PWL MILP"
    if solver.startswith("pyomo:"):
        from deplbench.formulations.milp.peers import availability, pyomo_family
        from deplbench.formulations.milp.saa_model import QUADRATIC_FAMILIES

        ok, why = availability(solver)
        if not ok:
            return f"{solver}: {why}"
        family = pyomo_family(solver[len("pyomo:"):])
        if kind == "minlp" and family not in QUADRATIC_FAMILIES:
            return f"{solver} solves no quadratic (cone) rows: run it on the PWL MILP"
        return ""
    return f"{solver!r} reads no {kind} file here (these do: {', '.join(READS[kind])})"


def _solve(root: str, rec: dict, path: str, solver: str, kind: str, time_limit: float, gap: float,
           tolerance: float) -> dict:
    """One solve: the file by HiGHS or SCIP, the model by a Pyomo solver."""
    if not solver.startswith("pyomo:"):
        out = solve_mps(path, solver, time_limit, gap)
        return {"status": out.status, "primal": out.primal, "dual": out.dual, "gap": out.gap,
                "seconds": out.seconds, "nodes": out.nodes, "retries": out.retries, "version": out.version}
    from deplbench.benchmarks.library.mps import relative_gap
    from deplbench.benchmarks.library.verify import rebuild_model
    from deplbench.formulations.milp.peers import solver_version
    from deplbench.formulations.milp.saa_model import solve_with_pyomo

    _, model = rebuild_model(root, rec, tolerance)
    out = solve_with_pyomo(model, kind, solver, time_limit, gap)
    return {**out, "gap": relative_gap(out["primal"], out["dual"]), "retries": 0,
            "version": solver_version(solver) or ""}


def _file_problem(rec: dict, kind: str, path: str, seconds: float | None = None) -> str:
    """Why the model file at ``path`` must not be handed to a solver ("" when it may).

    The file must be a regular file whose uncompressed size is bounded (a
    gzip bomb is refused after counting) and whose sha256 is the one the
    manifest recorded when the library was built: a corrupt or edited file
    is an error of the library, reported as such.
    """
    import hashlib

    from deplbench.limits import check_gzip_size

    try:
        check_gzip_size(path, f"{kind} model", SolverError, seconds=seconds)
    except SolverError as exc:
        return str(exc)
    suffix = next((s for s in KINDS[kind][1] if path.endswith(s)), "")
    expected = rec.get("pwl_sha256" if kind == "pwl" else "minlp_sha256" + suffix.replace(".", "_"))
    if not isinstance(expected, str):
        return ""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        return f"{path}: the file differs from the one the library was built with (sha256 in manifest.json)"
    return ""


def _check_args(solvers, time_limit, gap, rel_tol, kind="pwl") -> None:
    """Raise :class:`SolverError` naming the first invalid argument."""
    if not solvers:
        raise SolverError("solver: give at least one solver")
    for s in solvers:
        if s not in MPS_SOLVERS and not str(s).startswith("pyomo:"):
            raise SolverError(f"solver: must be one of {list(MPS_SOLVERS)} or pyomo:NAME, got {s!r}")
    if kind not in KINDS:
        raise SolverError(f"model: must be one of {list(KINDS)}, got {kind!r}")
    for name, value in (("time_limit", time_limit), ("gap", gap), ("tolerance", rel_tol)):
        PARAMETERS[name].convert(name, value, strict=True)


def check_library(root: str, solver: str = "highs", time_limit: float = 60.0, gap: float = 1e-6,
                  rel_tol: float = 1e-5, only: list[str] | None = None, progress=None,
                  kind: str = "pwl") -> dict:
    """Re-solve every model file of one kind of the library at ``root`` with ``solver``.

    Parameters
    ----------
    root : str
        A directory written by :func:`.build.build_library`.
    solver : str
        ``highs``, ``scip`` or ``pyomo:NAME``; a solver that cannot read
        ``kind`` files (:func:`skip_reason`) gives rows with status
        ``skipped`` and the reason, counted apart from the solved ones.
    time_limit : float, default 60
        Seconds per instance.
    gap : float, default 1e-6
        Relative gap at which the solver stops (``optimal``).
    rel_tol : float, default 1e-5
        Relative tolerance of the comparison with the .solu values.
    only : list of str, optional
        Check only these instances.
    progress : callable, optional
        Called with one line per instance.
    kind : {"pwl", "minlp"}, default "pwl"
        The PWL MILP files (pwl/*.mps.gz) or the MINLP files (minlp/*.nl.gz).

    Returns
    -------
    dict
        ``{"library", "library_version", "solver", "model", "version", "time_limit", "gap",
        "tolerance", "instances": [per-instance outcome with "agrees" and "reason"],
        "summary": {"solver", "model", "version", "instances", "solved", "skipped",
        "shifted_geomean_s", "mean_gap_unsolved", "compared", "mismatches", "errors", "missing"}}``. An
        instance is *solved* when the solver proved optimality within
        ``gap`` inside the limit and agrees with the .solu; *compared* when
        its outcome was judged against the .solu (agreeing or not).

    Raises
    ------
    SolverError
        Invalid arguments, a directory that is not a library, an unknown
        name in ``only``.
    """
    _check_args([solver], time_limit, gap, rel_tol, kind)
    manifest = library_files(root)
    files = {e.get("name"): e.get(kind) for e in manifest["entries"]}
    solu_name = KINDS[kind][2]
    solu = read_solu(os.path.join(root, solu_name))
    names = list(solu)
    if only is not None:
        bad = sorted(set(only) - set(names))
        if bad:
            raise SolverError(f"only: not in {solu_name}: {', '.join(bad)}")
        names = [n for n in names if n in set(only)]
    skip = skip_reason(solver, kind)
    recs = {e.get("name"): e for e in manifest["entries"]}
    tol = float(manifest.get("pwl_tolerance", 1e-4))
    rows = []
    version = ""
    for name in names:
        entry = solu[name]
        t0 = time.perf_counter()
        row = {"name": name, "solu_tag": entry.tag, "solu_value": entry.value}
        rel = files.get(name)
        path = os.path.join(root, rel) if isinstance(rel, str) else None
        if skip:
            row.update(status="skipped", primal=None, dual=None, gap=None, seconds=0.0, nodes=None,
                       agrees=None, reason=skip)
        elif name not in recs:
            # the .solu and the manifest disagree: no file to look for, no solve
            row.update(status="missing", primal=None, dual=None, gap=None, seconds=_since(t0), nodes=None,
                       agrees=False, reason=f"listed in {solu_name} but not among the entries of manifest.json")
        elif path is None or not os.path.lexists(path):
            what = f"its {kind} file {rel} is missing" if isinstance(rel, str) else \
                f"manifest.json gives it no {kind} file"
            row.update(status="missing", primal=None, dual=None, gap=None, seconds=_since(t0), nodes=None,
                       agrees=False, reason=f"listed in {solu_name} but {what}")
        elif (bad := _file_problem(recs[name], kind, path, float(time_limit))):
            row.update(status="error", primal=None, dual=None, gap=None, seconds=_since(t0),
                       nodes=None, agrees=False, reason=bad)
        else:
            out = _solve(root, recs[name], path, solver, kind, float(time_limit), float(gap), tol)
            version = out["version"] or version
            ok, why = agrees(entry, out["status"], out["primal"], out["dual"], rel_tol)
            if out["status"] == "error" and ok is None:
                # a file the solver cannot read is a broken library, not "nothing to compare"
                ok, why = False, f"the solver could not solve the file ({why})"
            row.update(status=out["status"], primal=out["primal"], dual=out["dual"], gap=out["gap"],
                       seconds=round(out["seconds"], 3), nodes=out["nodes"], retries=out["retries"], agrees=ok,
                       reason=why)
        rows.append(row)
        if progress is not None:
            progress(_progress_line(name, kind, solver, row))
    summary = summarise(rows, solver, version, float(time_limit))
    summary["model"] = kind
    return {"library": str(root), "library_version": manifest.get("library_version"), "solver": solver,
            "model": kind, "version": version, "time_limit": float(time_limit), "gap": float(gap),
            "tolerance": float(rel_tol), "instances": rows, "summary": summary}


def _since(t0: float) -> float:
    """Seconds since ``t0``, as a row's ``seconds`` (what the check took, not a solve's limit)."""
    return round(time.perf_counter() - t0, 3)


def _progress_line(name: str, kind: str, solver: str, row: dict) -> str:
    """One instance's progress line; a skipped solve says only why (it has no value or time), a
    missing file that no solver ran."""
    head = f"{name} ({kind}): {solver} {row['status']}"
    if row["status"] == "skipped":
        return f"{head} ({row['reason']})"
    if row["status"] == "missing":
        return f"{name} ({kind}): MISSING, not solved ({row['reason']})"
    ok = row["agrees"]
    value = "" if row["primal"] is None else f" {row['primal']!r}"
    return (f"{head}{value} in {row['seconds']:.2f} s; "
            f"{'agrees' if ok else 'MISMATCH' if ok is False else 'not compared'} ({row['reason']})")


def nothing_checked(runs: list[dict]) -> str:
    """Why the runs of one ``check`` compared no solve with a ``.solu`` value ("" when one was).

    A check that compared nothing proved nothing: every solve skipped (no
    asked solver reads the files), none compared (``=unkn=`` lines, no value
    within the limit), or no instance with a model file. ``deplbench library
    check`` prints this line and exits with status 1, so that a CI job does
    not pass on an empty check.

    Parameters
    ----------
    runs : list of dict
        Outputs of :func:`check_library`.
    """
    summaries = [r["summary"] for r in runs]
    if any(s["compared"] for s in summaries):
        return ""
    solves = sum(s["instances"] + s["skipped"] for s in summaries)
    if not solves:
        files = ", ".join(sorted({KINDS[r["model"]][2] for r in runs}))
        return ("nothing checked: no instance of the library has a model file of the kinds asked for "
                f"({files} list none)")
    skipped = sum(s["skipped"] for s in summaries)
    parts = [f"{skipped} skipped ("
             + "; ".join(f"{s['solver']} on {s['model']}: {s['skip_reason']}" for s in summaries if s["skipped"])
             + ")"] if skipped else []
    if solves > skipped:
        parts.append(f"{solves - skipped} with no value to compare")
    return f"nothing checked: no solve was compared with a .solu value (of {solves}: {', '.join(parts)})"


def summarise(rows: list[dict], solver: str, version: str, time_limit: float) -> dict:
    """Mittelmann-style summary of one solver's check rows (see module docstring)."""
    skipped = [r for r in rows if r["status"] == "skipped"]
    rows = [r for r in rows if r["status"] != "skipped"]
    solved = [r for r in rows if r["status"] == "optimal" and r["agrees"] is not False]
    # a missing file is never solved: it counts as unsolved, but not at the time limit in the mean
    times = [min(r["seconds"], time_limit) if r in solved else time_limit
             for r in rows if r["status"] != "missing"]
    gaps = [r["gap"] for r in rows if r not in solved and r.get("gap") is not None and math.isfinite(r["gap"])]
    return {"solver": solver, "version": version, "instances": len(rows), "solved": len(solved),
            "skipped": len(skipped), "skip_reason": skipped[0]["reason"] if skipped else "",
            "shifted_geomean_s": shifted_geomean(times) if times else math.nan, "shift_s": SHIFT_S,
            "mean_gap_unsolved": (sum(gaps) / len(gaps)) if gaps else None,
            "compared": sum(1 for r in rows if r["agrees"] is not None),
            "mismatches": sum(1 for r in rows if r["agrees"] is False),
            "errors": sum(1 for r in rows if r["status"] == "error"),
            "missing": sum(1 for r in rows if r["status"] == "missing")}


__all__ = ["READS", "SHIFT_S", "check_library", "nothing_checked", "shifted_geomean", "skip_reason", "summarise"]
