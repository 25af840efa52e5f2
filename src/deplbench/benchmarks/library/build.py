"""Build the instance library: instance JSON, exact MILP as MPS, .solu, size table.

One job: for every entry of :mod:`.catalog`, generate the instance, write it
as JSON, write its exact MILP master as MPS, solve that MPS file with HiGHS
(read back from disk, as any user would) to get its optimum for the .solu,
solve the instance with deplbench's exact solver for the real-x optimum, and
tabulate sizes and difficulty.

What the MPS file is, and what its optimum means
------------------------------------------------
The MPS file is the **first master MILP** of the cut loop of
:func:`~deplbench.formulations.milp.solve_milp` (its ``write_lp`` option)
for the SAA of problem (2)–(6) on S seeded in-sample scenarios (seed 0):
the discrete choices (models per epoch or counts N(m,n,σ), data classes,
scenario binaries) plus θ, an epigraph variable of the convex real-x compute
cost F(N), bounded below by the initial geometric grid of exact λ cuts
θ ≥ Σ_j g_j(λ) N_j − λ Tmax (ratio 1.02). Every cut is valid for F, so this
MILP is a *relaxation* of the SAA problem: its optimum (the .solu value) is
a lower bound on deplbench's exact real-x SAA optimum, within ~2.5e-5
relative of it before any cut-loop iteration (package docstring of
:mod:`deplbench.formulations.milp`). The .solu value is the optimum of
*that file*, which any MILP solver can re-solve; the real-x optimum (a
different number in general, never smaller) is in the table and the
manifest as ``deplbench_cost``.

The MPS files are deterministic: they are written with no wall-clock limit
(the incumbent heuristic that prunes dear configurations runs to its end)
and a node limit of one, so the file depends only on the instance, S and
the code version.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from deplbench import __version__
from deplbench.benchmarks.library.catalog import LIBRARY_VERSION, LibraryEntry, entries
from deplbench.benchmarks.library.mps import check_fraction, check_seconds, solve_mps
from deplbench.benchmarks.library.solu import SoluEntry, write_solu
from deplbench.benchmarks.library.table import write_tables
from deplbench.errors import SolverError
from deplbench.formulations.milp import solve_milp
from deplbench.formulations.milp.backends import quiet_stdout
from deplbench.instances.generators import generate
from deplbench.jsonio import finite_json

#: File names inside a library directory.
MANIFEST, SOLU = "manifest.json", "deplbench.solu"

SOLU_HEADER = """deplbench instance library {version} (deplbench {code}), MIPLIB .solu format.
Each value is the optimum of the MPS file mps/<name>.mps (a minimisation): the
first cut-loop master of deplbench's exact MILP for the SAA of problem (2)-(6),
a relaxation of the real-x SAA problem. It is NOT the real-x optimum
(deplbench_cost in library.csv), which is never smaller (up to rounding).
=opt=: proven optimal within relative gap {gap:g} by HiGHS {highs} (by SCIP where HiGHS
did not finish or failed: solu_solver in manifest.json); =best=: best value found,
optimality unproven within {limit:g} s; =inf=: infeasible; =unkn=: no value."""


def _check_build_args(out, size, time_limit, gap, overwrite) -> Path:
    """Validate the arguments of :func:`build_library` (errors name the argument)."""
    entries(size)          # raises naming `size`
    check_seconds(time_limit, "time_limit")
    check_fraction(gap, "gap", "relative gap")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise SolverError(f"out: {str(path)!r} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise SolverError(f"out: directory {str(path)!r} is not empty (use --force to overwrite)")
    return path


def build_library(out: str, size: str = "small", time_limit: float = 60.0, gap: float = 1e-6,
                  overwrite: bool = False, only: list[str] | None = None,
                  progress: Callable[[str], None] | None = None,
                  solve_time_limit: float | None = None) -> dict:
    """Write the library into directory ``out``.

    Parameters
    ----------
    out : str
        Target directory (created; must be empty unless ``overwrite``).
    size : {"small", "full"}, default "small"
        Which entries (:func:`.catalog.entries`).
    time_limit : float, default 60
        Seconds for each HiGHS solve of an MPS file (the .solu values).
    gap : float, default 1e-6
        Relative gap of the HiGHS solves that give the .solu values.
    overwrite : bool
        Allow a non-empty ``out``.
    only : list of str, optional
        Build only the entries with these names (tests, partial rebuilds).
    progress : callable, optional
        Called with one line of text per finished entry.
    solve_time_limit : float, optional
        Seconds for each deplbench exact real-x solve (default ``time_limit``);
        it affects only the ``deplbench_*`` columns, never the MPS or .solu.

    Returns
    -------
    dict
        The manifest (also written to ``out/manifest.json``): library and
        code versions, and one record per entry (recipe, sizes, the HiGHS
        outcome on the MPS file, the .solu line, deplbench's real-x result).

    Raises
    ------
    SolverError
        For an invalid argument (naming it) or an unknown name in ``only``.
    """
    root = _check_build_args(out, size, time_limit, gap, overwrite)
    if solve_time_limit is None:
        solve_time_limit = time_limit
    else:
        check_seconds(solve_time_limit, "solve_time_limit")
    chosen = entries(size)
    if only is not None:
        known = {e.name for e in entries("full")}
        bad = sorted(set(only) - known)
        if bad:
            raise SolverError(f"only: unknown library instance(s) {', '.join(bad)}")
        chosen = [e for e in entries("full") if e.name in set(only)]
    (root / "instances").mkdir(parents=True, exist_ok=True)
    (root / "mps").mkdir(exist_ok=True)
    records = []
    highs = ""
    for entry in chosen:
        t0 = time.perf_counter()
        rec = _build_entry(root, entry, float(time_limit), float(gap), float(solve_time_limit))
        highs = rec.get("mps_solver_version") or highs
        records.append(rec)
        if progress is not None:
            mps = (f"MPS {rec['solu_tag']} {rec.get('solu_value')}" if rec.get("mps")
                   else rec.get("note") or "no MPS")
            progress(f"{entry.name}: {mps}, "
                     f"deplbench {rec['deplbench_status']} {rec.get('deplbench_cost')} "
                     f"({time.perf_counter() - t0:.1f} s)")
    manifest = {"library_version": LIBRARY_VERSION, "deplbench_version": __version__, "size": size,
                "time_limit": float(time_limit), "solve_time_limit": float(solve_time_limit),
                "gap": float(gap), "highs_version": highs,
                "solu": SOLU, "entries": records}
    solu = [SoluEntry(r["solu_tag"], r["name"], r.get("solu_value") if r["solu_tag"] in ("=opt=", "=best=")
                      else None) for r in records if r.get("mps")]
    write_solu(str(root / SOLU), solu, SOLU_HEADER.format(version=LIBRARY_VERSION, code=__version__,
                                                          highs=highs, gap=gap, limit=time_limit))
    (root / MANIFEST).write_text(json.dumps(finite_json(manifest), indent=2) + "\n", encoding="utf-8")
    write_tables(str(root), records)
    return manifest


def _build_entry(root: Path, entry: LibraryEntry, time_limit: float, gap: float, solve_time_limit: float) -> dict:
    """Instance JSON, MPS, HiGHS on the MPS, deplbench's real-x solve: one record."""
    inst = generate(entry.family, **entry.params)
    if entry.targets:
        inst = inst.with_changes(**entry.targets)
    text = inst.to_json()
    inst_path = root / "instances" / f"{entry.name}.json"
    inst_path.write_text(text, encoding="utf-8")
    rec = {"name": entry.name, "group": entry.group, "family": entry.family, "params": dict(entry.params),
           "targets": dict(entry.targets), "scenarios": entry.scenarios, "seed": 0,
           "formulation": entry.formulation, "instance": f"instances/{entry.name}.json",
           "instance_sha256": hashlib.sha256(text.encode()).hexdigest(),
           "n_models": inst.n_models, "n_clusters": inst.n_clusters, "n_datasets": inst.n_datasets,
           "horizon": inst.horizon, "loss_max": inst.loss_max, "omega": inst.omega, "mps": None,
           "solu_tag": None, "note": ""}
    real = None
    if entry.formulation is not None:
        mps = root / "mps" / f"{entry.name}.mps"
        # No wall-clock limit while writing: the file must not depend on the
        # machine's speed (module docstring); one node stops the cut loop.
        with quiet_stdout():
            first = solve_milp(inst, scenarios=entry.scenarios, seed=0, time_limit=None, node_limit=1,
                               formulation=entry.formulation, write_lp=str(mps))
        rec["variant"] = first.diagnostics.get("variant")
        if first.status in ("optimal", "infeasible"):
            real = first                      # the cut loop finished within that node, or no plan exists
        if mps.is_file():
            rec["mps"] = f"mps/{entry.name}.mps"
            rec["mps_sha256"] = hashlib.sha256(mps.read_bytes()).hexdigest()
            out = solve_mps(str(mps), "highs", time_limit, gap)
            rec.update(rows=out.rows, cols=out.cols, nonzeros=out.nonzeros, integers=out.integers,
                       mps_solver_version=out.version, mps_status=out.status, mps_value=out.primal,
                       mps_bound=out.dual, mps_gap=out.gap, mps_seconds=round(out.seconds, 3),
                       mps_nodes=out.nodes, mps_retries=out.retries)
            rec["solu_solver"] = "highs"
            if out.status not in ("optimal", "infeasible"):
                # HiGHS did not finish (or failed numerically): a second
                # opinion from SCIP, when installed, may still prove the
                # file's optimum; the table keeps HiGHS's own outcome.
                alt = _scip_second_opinion(str(mps), time_limit, gap)
                if alt is not None and (alt.status in ("optimal", "infeasible") or
                                        (out.primal is None and alt.primal is not None)):
                    out = alt
                    rec["solu_solver"] = f"scip {alt.version}"
            rec["solu_value"] = out.primal
            rec["solu_tag"] = {"optimal": "=opt=", "infeasible": "=inf="}.get(
                out.status, "=best=" if out.primal is not None else "=unkn=")
        else:
            rec["note"] = f"no MPS: the MILP was not built ({first.status}: {first.message})"
    else:
        rec["note"] = "no MPS: no MILP formulation applies (see docs/library.md)"
    if real is None:
        with quiet_stdout():
            real = solve_milp(inst, scenarios=entry.scenarios, seed=0, time_limit=solve_time_limit)
    rec.update(deplbench_status=real.status, deplbench_cost=real.cost, deplbench_lower=real.lower_bound,
               deplbench_seconds=round(float(real.diagnostics.get("total_s", 0.0)), 3),
               deplbench_message=real.message)
    return rec


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
    if not man.is_file():
        raise SolverError(f"library: {str(root)!r} has no {MANIFEST} (build it with `deplbench library build`)")
    try:
        manifest = json.loads(man.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SolverError(f"library: {man} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("entries"), list):
        raise SolverError(f"library: {man} has no 'entries' list")
    if not os.path.isfile(path / SOLU):
        raise SolverError(f"library: {str(root)!r} has no {SOLU}")
    return manifest


__all__ = ["MANIFEST", "SOLU", "build_library", "library_files"]
