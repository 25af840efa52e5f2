"""Build the instance library: instances, full SAA models, .solu files, tables.

One job: for every entry of :mod:`.catalog`, generate the instance, write it
as JSON, build its full SAA model (:mod:`deplbench.formulations.milp.saa_model`)
and write it in two kinds, solve each as a user would, bracket the true
chance-constrained optimum, and tabulate sizes, difficulty and optima.

Which file is which problem, and which optimum its .solu holds
----------------------------------------------------------------
``minlp/<name>.nl.gz``, ``minlp/<name>.gms.gz``
    the **exact** SAA problem of (2)–(6) on S seeded in-sample scenarios
    (seed 0) as a convex MINLP: the discrete model plus rotated-cone rows
    for the real-x compute cost c/x. ``minlp.solu`` holds its optimum =
    the real-x SAA optimum, from deplbench's exact solver (proven within
    relative ``gap``; the value is the exact cost of a plan the file admits).
``pwl/<name>.mps.gz``
    the tangent-grid MILP of the same model, whose optimum z_pwl satisfies
    (1 − ε) z* ≤ z_pwl ≤ z* with ε = :data:`~deplbench.formulations.milp.saa_model.PWL_TOLERANCE`
    (proof in that module). ``pwl.solu`` holds the optimum of *that file*,
    solved from disk by HiGHS (SCIP where HiGHS does not finish).
``true_optimum.csv``
    each instance's bracket on the optimum of the chance-constrained
    problem itself (:mod:`.truth`), with its method and confidence.

The model files are deterministic: no wall-clock limit while they are
built (the incumbent heuristic that prunes dear configurations runs to its
end), gzip without a time stamp, so a file depends only on the instance,
S and the code version.

Difficulty tags (MIPLIB 2017's definition, at the build's limit): ``easy``
— some solver the build ran proved the optimum within min(time limit,
3600 s); ``hard`` — proven only after 3600 s (possible only with a longer
limit); ``open`` — no proof within the limit.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import time
from collections.abc import Callable
from pathlib import Path

from deplbench import __version__
from deplbench.benchmarks.library.catalog import LIBRARY_VERSION, LibraryEntry, entries
from deplbench.benchmarks.library.mps import PARAMETERS, solve_mps
from deplbench.benchmarks.library.solu import SoluEntry, write_solu
from deplbench.benchmarks.library.table import write_tables, write_truth_table
from deplbench.errors import SolverError
from deplbench.formulations.milp import solve_milp
from deplbench.formulations.milp.backends import quiet_stdout
from deplbench.formulations.milp.saa_model import (
    PWL_TOLERANCE,
    NoSaaModel,
    build_saa_model,
    model_digest,
    write_minlp,
    write_pwl_mps,
)
from deplbench.instances.generators import generate
from deplbench.jsonio import write_json

#: File names inside a library directory.
MANIFEST, TRUTH = "manifest.json", "true_optimum.csv"
#: The model kinds: kind → (directory, file suffixes, .solu file).
KINDS = {"pwl": ("pwl", (".mps.gz",), "pwl.solu"),
         "minlp": ("minlp", (".nl.gz", ".gms.gz"), "minlp.solu")}
#: Kept for callers of the old single-.solu layout: the PWL MILP's .solu.
SOLU = KINDS["pwl"][2]
#: MIPLIB 2017: "easy" means solved within one hour.
EASY_SECONDS = 3600.0

SOLU_HEADERS = {
    "pwl": """deplbench instance library {version} (deplbench {code}), MIPLIB .solu format.
Each value is the optimum of the file pwl/<name>.mps.gz (a minimisation): the
piecewise-linear (tangent-grid) MILP of the instance's SAA problem, whose optimum
lies within relative {eps:g} below the SAA optimum (minlp.solu), never above.
=opt=: proven optimal within relative gap {gap:g} by HiGHS {highs} (by SCIP where HiGHS
did not finish: pwl_solver in manifest.json); =best=: best value found,
optimality unproven within {limit:g} s; =inf=: infeasible; =unkn=: no value.""",
    "minlp": """deplbench instance library {version} (deplbench {code}), MIPLIB .solu format.
Each value is the optimum of the files minlp/<name>.nl.gz and minlp/<name>.gms.gz
(the same convex MINLP, a minimisation): the exact SAA problem of (2)-(6) on the
instance's S in-sample scenarios, i.e. deplbench's real-x SAA optimum.
=opt=: proven optimal within relative gap {gap:g} by deplbench's exact solver (the
value is the exact cost of a plan the file admits); =best=: optimality unproven
within {limit:g} s; =inf=: the SAA problem is infeasible; =unkn=: no value.
This is NOT the chance-constrained optimum: see true_optimum.csv.""",
}


def _check_build_args(out, size, time_limit, gap, overwrite, solve_time_limit) -> Path:
    """Validate the arguments of :func:`build_library` (errors name the argument)."""
    entries(size)          # raises naming `size`
    for name, value in (("time_limit", time_limit), ("gap", gap), ("solve_time_limit", solve_time_limit)):
        PARAMETERS[name].convert(name, value, strict=True)
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise SolverError(f"out: {str(path)!r} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise SolverError(f"out: directory {str(path)!r} is not empty (use --force to overwrite)")
    return path


def _chosen(size: str, only: list[str] | None) -> list[LibraryEntry]:
    chosen = entries(size)
    if only is not None:
        known = {e.name for e in entries("full")}
        bad = sorted(set(only) - known)
        if bad:
            raise SolverError(f"only: unknown library instance(s) {', '.join(bad)}")
        chosen = [e for e in entries("full") if e.name in set(only)]
    return chosen


def build_library(out: str, size: str = "small", time_limit: float = 60.0, gap: float = 1e-6,
                  overwrite: bool = False, only: list[str] | None = None,
                  progress: Callable[[str], None] | None = None,
                  solve_time_limit: float | None = None, true_optimum: bool = True,
                  certify_settings: dict | None = None) -> dict:
    """Write the library into directory ``out``.

    Parameters
    ----------
    out : str
        Target directory (created; must be empty unless ``overwrite``).
    size : {"small", "full"}, default "small"
        Which entries (:func:`.catalog.entries`).
    time_limit : float, default 60
        Seconds for each HiGHS solve of a PWL file (the pwl.solu values).
    gap : float, default 1e-6
        Relative gap of the solves that give the .solu values.
    overwrite : bool
        Allow a non-empty ``out``. The instance and model files that an
        earlier manifest there lists and this build does not are removed,
        so the directory holds what the new manifest lists.
    only : list of str, optional
        Build only the entries with these names (tests, partial rebuilds).
    progress : callable, optional
        Called with one line of text when an entry starts and when it ends.
    solve_time_limit : float, optional
        Seconds for each deplbench real-x solve (the minlp.solu values) and
        each solve of the true-optimum bracket (default ``time_limit``).
    true_optimum : bool, default True
        Bracket each instance's true optimum (:mod:`.truth`, true_optimum.csv).
    certify_settings : dict, optional
        Overrides of :data:`.truth.CERTIFY_SETTINGS`.

    Returns
    -------
    dict
        The manifest (also written to ``out/manifest.json``).

    Raises
    ------
    SolverError
        For an invalid argument (naming it) or an unknown name in ``only``.
    """
    root = _check_build_args(out, size, time_limit, gap, overwrite, solve_time_limit)
    if solve_time_limit is None:
        solve_time_limit = time_limit
    chosen = _chosen(size, only)
    for sub in ("instances", *(k[0] for k in KINDS.values())):
        (root / sub).mkdir(parents=True, exist_ok=True)
    records, highs = [], ""
    for i, entry in enumerate(chosen, 1):
        t0 = time.perf_counter()
        if progress is not None:
            progress(f"[{i}/{len(chosen)}] {entry.name}: building")
        rec = _build_entry(root, entry, float(time_limit), float(gap), float(solve_time_limit))
        if true_optimum:
            rec["true_optimum"] = _truth(entry, rec, float(solve_time_limit), certify_settings)
        highs = rec.get("pwl_solver_version") or highs
        records.append(rec)
        if progress is not None:
            progress(f"[{i}/{len(chosen)}] {entry.name}: {_summary(rec)} ({time.perf_counter() - t0:.1f} s)")
    manifest = {"library_version": LIBRARY_VERSION, "deplbench_version": __version__, "size": size,
                "time_limit": float(time_limit), "solve_time_limit": float(solve_time_limit),
                "gap": float(gap), "pwl_tolerance": PWL_TOLERANCE, "highs_version": highs,
                "solu": {k: v[2] for k, v in KINDS.items()}, "true_optimum": TRUTH if true_optimum else None,
                "entries": records}
    earlier = _listed_files(root)
    _write_solu_files(root, records, highs, gap, time_limit, solve_time_limit)
    write_json(root / MANIFEST, manifest)
    write_tables(str(root), records)
    if true_optimum:
        write_truth_table(str(root / TRUTH), [r["true_optimum"] for r in records if r.get("true_optimum")])
    elif os.path.lexists(root / TRUTH):
        # an earlier build's brackets (--force over a library) are not this build's: the manifest says none
        (root / TRUTH).unlink()
    _remove_unlisted(root, earlier - set().union(*map(_entry_files, records)))
    return manifest


def _entry_files(rec: dict) -> set[str]:
    """The files of one manifest entry, relative to the library: its instance, its model
    files and the AMPL name files (``.col``, ``.row``) written beside its ``.nl``."""
    out: set[str] = set()
    for rel in (rec.get("instance"), rec.get("pwl"), rec.get("minlp"), *(rec.get("minlp_files") or ())):
        if isinstance(rel, str):
            # one spelling per file: an edited manifest's instances/./A.json is this build's instances/A.json
            rel = posixpath.normpath(rel.replace("\\", "/"))
            out.add(rel)
            if rel.endswith(".nl.gz"):
                out.update(rel.removesuffix(".nl.gz") + ext for ext in (".col", ".row"))
    return out


def _listed_files(root: Path) -> set[str]:
    """The files the library's manifest lists; none when it has no readable one
    (then no file is known to be the build's, and none is removed)."""
    from deplbench.instances.model import read_json

    if not (root / MANIFEST).is_file():
        return set()
    try:
        data = read_json(root / MANIFEST, what="manifest", error=SolverError)
    except SolverError:
        return set()
    listed = data.get("entries") if isinstance(data, dict) else None
    return set().union(*(_entry_files(r) for r in listed if isinstance(r, dict))) if isinstance(listed, list) \
        else set()


def _remove_unlisted(root: Path, rels: set[str]) -> None:
    """Remove files an earlier build listed and this one does not (``--force --only A``
    over a library of B), so that the directory holds what manifest.json, the .solu
    files and the tables list. Only regular files inside the build's own folders
    (instances/, pwl/, minlp/) are removed: a manifest is a user's input, and a path
    it names elsewhere, or through a symbolic link, is left alone."""
    from deplbench.benchmarks.library.manifest import confined

    own = {"instances", *(k[0] for k in KINDS.values())}
    for rel in sorted(rels):
        if rel.replace("\\", "/").split("/", 1)[0] not in own:
            continue
        try:
            path = confined(str(root), rel, f"{MANIFEST}: {rel}")
        except SolverError:
            continue
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)


def _truth(entry: LibraryEntry, rec: dict, seconds: float, settings: dict | None) -> dict:
    """The entry's true-optimum row (:mod:`.truth`); not attempted for an
    instance no matrix model covers, where every SAA solve of ``certify``
    would run the general block solver (tens of seconds each)."""
    from deplbench.benchmarks.library.truth import not_bracketed, true_optimum

    if not rec.get("pwl"):
        return not_bracketed(entry.name, f"not bracketed by the build ({rec['note']}; each SAA solve of "
                             f"certify would run the general solver): run `deplbench certify "
                             f"instances/{entry.name}.json`")
    inst = generate(entry.family, **entry.params)
    inst = inst.with_changes(**entry.targets) if entry.targets else inst
    return true_optimum(inst, entry.name, entry.scenarios, seconds, settings=settings)


def _summary(rec: dict) -> str:
    """The progress line's verdict on one entry."""
    if not rec.get("pwl"):
        return f"{rec['note']}; deplbench {rec['deplbench_status']} {rec.get('deplbench_cost')}"
    return (f"PWL {rec['pwl_tag']} {rec.get('pwl_value')} [{rec['pwl_difficulty']}], "
            f"MINLP {rec['minlp_tag']} {rec.get('minlp_value')} [{rec['minlp_difficulty']}]")


def _write_solu_files(root: Path, records, highs, gap, time_limit, solve_time_limit) -> None:
    for kind, (_, _, solu_name) in KINDS.items():
        lines = [SoluEntry(r[f"{kind}_tag"], r["name"], r.get(f"{kind}_value")
                           if r[f"{kind}_tag"] in ("=opt=", "=best=") else None)
                 for r in records if r.get(kind)]
        limit = time_limit if kind == "pwl" else solve_time_limit
        write_solu(str(root / solu_name), lines,
                   SOLU_HEADERS[kind].format(version=LIBRARY_VERSION, code=__version__, highs=highs, gap=gap,
                                             limit=limit, eps=PWL_TOLERANCE))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def difficulty(seconds: float | None, solved: bool, time_limit: float) -> str:
    """MIPLIB 2017's tag from a measured solve (module docstring)."""
    if not solved or seconds is None or seconds > time_limit:
        return "open"
    return "easy" if seconds <= EASY_SECONDS else "hard"


def _build_entry(root: Path, entry: LibraryEntry, time_limit: float, gap: float, solve_time_limit: float) -> dict:
    """Instance JSON, both model kinds, their optima, deplbench's real-x solve: one record."""
    inst = generate(entry.family, **entry.params)
    if entry.targets:
        inst = inst.with_changes(**entry.targets)
    text = inst.to_json()
    (root / "instances" / f"{entry.name}.json").write_text(text, encoding="utf-8")
    rec = {"name": entry.name, "group": entry.group, "family": entry.family, "params": dict(entry.params),
           "targets": dict(entry.targets), "scenarios": entry.scenarios, "seed": 0,
           "formulation": entry.formulation, "instance": f"instances/{entry.name}.json",
           "instance_sha256": hashlib.sha256(text.encode()).hexdigest(),
           "n_models": inst.n_models, "n_clusters": inst.n_clusters, "n_datasets": inst.n_datasets,
           "horizon": inst.horizon, "loss_max": inst.loss_max, "omega": inst.omega,
           "pwl": None, "minlp": None, "pwl_tag": None, "minlp_tag": None, "note": ""}
    model = None
    try:
        with quiet_stdout():
            model = build_saa_model(inst, entry.scenarios, 0, entry.formulation or "fast")
    except NoSaaModel as exc:
        rec["note"] = f"no model file: {exc.reason}"
    if model is not None:
        _write_models(root, entry, model, rec, time_limit, gap)
    with quiet_stdout():
        real = solve_milp(inst, scenarios=entry.scenarios, seed=0, time_limit=solve_time_limit, gap=gap)
    secs = float(real.diagnostics.get("total_s", 0.0))
    rec.update(deplbench_status=real.status, deplbench_cost=real.cost, deplbench_lower=real.lower_bound,
               deplbench_seconds=round(secs, 3), deplbench_message=real.message)
    if model is not None:
        rec["minlp_value"] = real.cost
        rec["minlp_tag"] = {"optimal": "=opt=", "infeasible": "=inf="}.get(
            real.status, "=best=" if real.cost is not None else "=unkn=")
        rec["minlp_difficulty"] = difficulty(secs, real.status == "optimal", solve_time_limit)
    return rec


def _write_models(root: Path, entry: LibraryEntry, model, rec: dict, time_limit: float, gap: float) -> None:
    """Write pwl/<name>.mps.gz and minlp/<name>.{nl,gms}.gz; solve the PWL file."""
    name = entry.name
    rec["variant"] = model.variant
    rec["model_sha256"] = model_digest(model)
    pwl = root / "pwl" / f"{name}.mps.gz"
    rows, cols, nnz = write_pwl_mps(model, str(pwl))
    rec.update(pwl=f"pwl/{name}.mps.gz", pwl_sha256=_sha(pwl), rows=rows, cols=cols, nonzeros=nnz,
               integers=int(model.integer.sum()), cones=int(model.cone["a"].size),
               minlp_rows=int(model.A.shape[0]) + int(model.cone["a"].size))
    files = []
    for suffix in KINDS["minlp"][1]:
        path = root / "minlp" / f"{name}{suffix}"
        write_minlp(model, str(path))
        files.append(f"minlp/{name}{suffix}")
        rec[f"minlp_sha256{suffix.replace('.', '_')}"] = _sha(path)
    rec["minlp"] = files[0]
    rec["minlp_files"] = files
    out = solve_mps(str(pwl), "highs", time_limit, gap)
    rec.update(pwl_solver_version=out.version, pwl_status=out.status, pwl_bound=out.dual, pwl_gap=out.gap,
               pwl_seconds=round(out.seconds, 3), pwl_nodes=out.nodes, pwl_retries=out.retries,
               pwl_solver="highs")
    solved_s = out.seconds if out.status == "optimal" else None
    if out.status not in ("optimal", "infeasible"):
        alt = _scip_second_opinion(str(pwl), time_limit, gap)
        if alt is not None and (alt.status in ("optimal", "infeasible") or
                                (out.primal is None and alt.primal is not None)):
            out = alt
            rec["pwl_solver"] = f"scip {alt.version}"
            solved_s = alt.seconds if alt.status == "optimal" else None
    rec["pwl_value"] = out.primal
    rec["pwl_tag"] = {"optimal": "=opt=", "infeasible": "=inf="}.get(
        out.status, "=best=" if out.primal is not None else "=unkn=")
    rec["pwl_difficulty"] = difficulty(solved_s, solved_s is not None, time_limit)


def _scip_second_opinion(path: str, time_limit: float, gap: float):
    """SCIP's outcome on ``path``, or None when pyscipopt is not installed."""
    try:
        return solve_mps(path, "scip", time_limit, gap)
    except SolverError:
        return None


def library_files(root: str) -> dict:
    """The manifest of a built library (``root/manifest.json``).

    Raises
    ------
    SolverError
        When ``root`` is not a library directory (naming what is missing).
    """
    path = Path(root)
    if not path.is_dir():
        raise SolverError(f"library: no directory {str(root)!r}")
    man = path / MANIFEST
    if not os.path.lexists(man):
        raise SolverError(f"library: {str(root)!r} has no {MANIFEST} (build it with `deplbench library build`)")
    from deplbench.benchmarks.library.manifest import validate_manifest
    from deplbench.instances.model import read_json

    manifest = validate_manifest(read_json(man, what="manifest", error=SolverError), str(root), str(man))
    for _, _, solu in KINDS.values():
        if not os.path.lexists(path / solu):
            raise SolverError(f"library: {str(root)!r} has no {solu}")
    return manifest


__all__ = ["EASY_SECONDS", "KINDS", "MANIFEST", "SOLU", "TRUTH", "build_library", "difficulty", "library_files"]
