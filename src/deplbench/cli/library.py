"""``deplbench library``: build, check and verify the instance library.

Usage::

    deplbench library build --out DIR [--size small|full] [--time-limit T] [--gap G] [--force]
    deplbench library check DIR [--solver highs|scip|pyomo:NAME ...] [--model pwl|minlp|all] [--json]
    deplbench library verify DIR NAME SOLUTION_FILE [--model pwl|minlp] [--json]

``check`` runs HiGHS and SCIP on the PWL MILP files (``pwl/*.mps.gz``) and
SCIP on the MINLP files (``minlp/*.nl.gz``); any other solver is reported
skipped with the reason. ``verify`` judges an outside solver's ``.sol``.

What the files mean (which value the .solu holds, and how it relates to
deplbench's real-x optimum) is documented in ``docs/library.md``; the
library is :mod:`deplbench.benchmarks.library`.
"""

from __future__ import annotations

import argparse
import sys

from deplbench.cli.messages import output_path
from deplbench.formulations.evaluation.settings import VERIFY_SAMPLES
from deplbench.jsonio import print_json


def register(subparsers) -> None:
    """Add the ``library`` command group to the deplbench CLI."""
    p = subparsers.add_parser(
        "library", help="build, check or verify the instance library (full SAA models, .solu files of optima)",
        description="A curated, versioned set of instances with their full SAA models (a convex MINLP as "
                    ".nl/.gms, a piecewise-linear MILP within 1e-4 as .mps.gz), MIPLIB-format .solu files, "
                    "a table of true chance-constrained optima, sizes and difficulty (docs/library.md).")
    sub = p.add_subparsers(dest="library_command", metavar="ACTION")
    sub.required = True

    b = sub.add_parser("build", help="write the library into a directory",
                       description="Generate every library instance, write it as JSON and its full SAA model "
                                   "(minlp/*.nl.gz, *.gms.gz; pwl/*.mps.gz), solve each PWL file with HiGHS "
                                   "for pwl.solu and each instance with deplbench's exact solver for "
                                   "minlp.solu, bracket each true optimum (true_optimum.csv), and write "
                                   "library.csv / library.md and manifest.json. Progress goes to stderr.")
    b.add_argument("--out", type=output_path, required=True, metavar="DIR",
                   help="output directory (created; must be empty)")
    b.add_argument("--size", choices=("small", "full"), default="small",
                   help="small: a couple of minutes to build (default); full: every entry")
    b.add_argument("--time-limit", type=float, default=60.0, metavar="T",
                   help="seconds per HiGHS solve of a PWL file, which gives the pwl.solu value (default 60)")
    b.add_argument("--solve-time-limit", type=float, default=None, metavar="T",
                   help="seconds per deplbench exact real-x solve (minlp.solu) and per true-optimum solve "
                        "(default: --time-limit)")
    b.add_argument("--gap", type=float, default=1e-6, help="relative gap of the .solu solves (default 1e-6)")
    b.add_argument("--only", action="append", metavar="NAME", help="build only this instance (repeatable)")
    b.add_argument("--force", action="store_true",
                   help="write into a non-empty directory; the instance and model files an earlier "
                        "manifest.json there lists and this build does not are removed")
    b.add_argument("--no-true-optimum", action="store_true",
                   help="skip the true-optimum brackets (true_optimum.csv; certify runs SAA replications)")
    b.add_argument("--json", action="store_true", help="print the manifest as one JSON object")
    b.add_argument("--quiet", action="store_true",
                   help="no progress on stderr: neither the bar nor the per-instance lines printed instead "
                        "of it when stderr is not a terminal")
    b.set_defaults(func=run_build)

    c = sub.add_parser("check", help="re-solve the library's model files and compare with the .solu files",
                       description="Solve every model file of DIR with each --solver (HiGHS and SCIP on "
                                   "pwl/*.mps.gz, SCIP on minlp/*.nl.gz, pyomo:NAME on the models it can take; "
                                   "others skipped with the reason) and compare with that kind's .solu "
                                   "(the value must lie between the solver's proven bound and "
                                   "its best solution, within --tolerance). Prints one line per instance and "
                                   "a solver-vs-solver table: solved within the limit, shifted geometric "
                                   "mean of time (shift 10 s), mean gap at the limit. Exit status 1 on any "
                                   "mismatch, and when nothing was checked (every solve skipped, or none "
                                   "compared with a .solu value): one line on stderr says why.")
    c.add_argument("dir", metavar="DIR", help="a library directory written by `deplbench library build`")
    c.add_argument("--solver", action="append", metavar="NAME",
                   help="highs (default), scip or pyomo:NAME; repeat to compare (a solver that cannot read a "
                        "model kind is reported skipped with the reason)")
    c.add_argument("--model", choices=("pwl", "minlp", "all"), default="all",
                   help="which files: the PWL MILP (pwl/*.mps.gz), the MINLP (minlp/*.nl.gz) or both (default)")
    c.add_argument("--time-limit", type=float, default=60.0, metavar="T", help="seconds per instance (default 60)")
    c.add_argument("--gap", type=float, default=1e-6, help="relative gap at which a solve stops (default 1e-6)")
    c.add_argument("--tolerance", type=float, default=1e-5,
                   help="relative tolerance of the comparison with the .solu (default 1e-5)")
    c.add_argument("--only", action="append", metavar="NAME", help="check only this instance (repeatable)")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.set_defaults(func=run_check)

    v = sub.add_parser("verify", help="check an outside solver's solution file against a library model",
                       description="Read SOLUTION_FILE (one `name value` line per variable, as SCIP, MIPLIB "
                                   "and HiGHS write; missing variables are 0, an empty file is refused) and "
                                   "judge it against the PWL MILP or the MINLP of NAME: bounds, integrality, "
                                   "rows and cones within 1e-6 (the violated ones by name), objective, gap to "
                                   "the .solu value, and the plan it encodes (exact cost, out-of-sample "
                                   "verdict). Exit status 1 when the solution is infeasible.")
    v.add_argument("dir", metavar="DIR", help="a library directory")
    v.add_argument("name", metavar="NAME", help="an instance of the library")
    v.add_argument("solution", metavar="SOLUTION_FILE", help="the solution (.sol)")
    v.add_argument("--model", choices=("pwl", "minlp"), default="pwl",
                   help="the model the solution is for (default pwl: pwl/NAME.mps.gz; minlp: minlp/NAME.nl.gz)")
    v.add_argument("--samples", type=int, default=VERIFY_SAMPLES,
                   help=f"out-of-sample draws judging the plan (default {VERIFY_SAMPLES})")
    v.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    v.set_defaults(func=run_verify)


def _check_options(args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """The numeric options through the library's declared parameters
    (:data:`~deplbench.benchmarks.library.mps.PARAMETERS`) before anything is
    built or solved, a refusal naming the option and its value in its shortest form
    (``--time-limit 0: must be > 0.0, got 0.0``; exit status 2)."""
    from deplbench.benchmarks.library.mps import PARAMETERS
    from deplbench.cli.solvers import as_given
    from deplbench.errors import SolverError

    values = {name: getattr(args, name) for name in names}
    flags = {name: "--" + name.replace("_", "-") for name in names}
    for name, value in values.items():
        try:
            PARAMETERS[name].convert(name, value, strict=True)
        except SolverError as exc:
            raise SolverError(as_given(str(exc), values, flags)) from None


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _build_progress(total: int, show: bool, stream, quiet: bool = False):
    """(callback, close): a tqdm bar on ``stream`` (the real stderr while
    native output is held) when ``show``, plain lines otherwise (logs,
    pipes); nothing at all under --quiet (``quiet``)."""
    if quiet:
        return None, lambda: None
    if not show:
        return _progress, lambda: None
    from deplbench.cli.progress import counter

    bar = counter(True, "library", total=total, unit="instance", stream=stream)

    def step(line: str) -> None:
        if line.endswith(": building"):
            bar.set_description(line.split("] ", 1)[-1].rsplit(":", 1)[0])
            return
        bar.write(line, file=stream)
        bar.update(1)

    return step, bar.close


def run_build(args: argparse.Namespace) -> int:
    """Handler of ``deplbench library build``; returns the exit status."""
    from deplbench.benchmarks.library import build_library
    from deplbench.benchmarks.library.catalog import entries
    from deplbench.cli.progress import native_output_held, progress_wanted

    _check_options(args, ("time_limit", "solve_time_limit", "gap"))
    total = len(args.only) if args.only else len(entries(args.size))
    show = progress_wanted(args)
    # while the bar shows, what HiGHS and SCIP print from C (the "Running
    # HiGHS" banner) goes to the null device instead of through the bar
    with native_output_held(show) as stream:
        step, close = _build_progress(total, show, stream, quiet=args.quiet)
        try:
            manifest = build_library(args.out, size=args.size, time_limit=args.time_limit, gap=args.gap,
                                     overwrite=args.force, only=args.only, progress=step,
                                     solve_time_limit=args.solve_time_limit,
                                     true_optimum=not args.no_true_optimum)
        finally:
            close()
    if args.json:
        print_json(manifest)
    else:
        n = sum(1 for e in manifest["entries"] if e.get("pwl"))
        print(f"wrote {len(manifest['entries'])} instances ({n} with model files: pwl/*.mps.gz, "
              f"minlp/*.nl.gz, minlp/*.gms.gz) to {args.out}: pwl.solu, minlp.solu, "
              + ("true_optimum.csv, " if manifest.get("true_optimum") else "")
              + "library.csv, library.md, manifest.json")
    return 0


def _check_solvers(solvers: list[str]) -> None:
    """``--solver``: a known solver name (one-line error naming the option,
    exit status 2, before anything is solved). HiGHS and SCIP must be
    installed; a ``pyomo:`` name is accepted and reported skipped on files."""
    from deplbench.benchmarks.library import MPS_SOLVERS
    from deplbench.errors import SolverError
    from deplbench.formulations.milp.peers import availability

    for name in solvers:
        if name.startswith("pyomo:"):
            continue
        if name not in MPS_SOLVERS:
            raise SolverError(f"--solver: {name!r} cannot re-solve library files; these read them: "
                              f"{', '.join(MPS_SOLVERS)} (pyomo:NAME is reported skipped)")
        ok, why = availability(name)
        if not ok:
            here = ", ".join(n for n in MPS_SOLVERS if availability(n)[0])
            raise SolverError(f"--solver: {name!r} is not available: {why} (available here: {here})")


def run_check(args: argparse.Namespace) -> int:
    """Handler of ``deplbench library check``; exit status 1 on any mismatch or when nothing was checked."""
    from deplbench.benchmarks.library import check_library, format_check, nothing_checked
    from deplbench.benchmarks.library.table import SUMMARY_HEAD, align_table, summary_row

    _check_options(args, ("time_limit", "gap", "tolerance"))
    solvers = list(dict.fromkeys(args.solver or ["highs"]))
    _check_solvers(solvers)
    kinds = ["pwl", "minlp"] if args.model == "all" else [args.model]
    runs = [check_library(args.dir, solver=s, time_limit=args.time_limit, gap=args.gap, rel_tol=args.tolerance,
                          only=args.only, progress=_progress, kind=k) for k in kinds for s in solvers]
    summaries = [r["summary"] for r in runs]
    empty = nothing_checked(runs)
    if args.json:
        print_json({"library": args.dir, "library_version": runs[0]["library_version"], "runs": runs,
                    "summary": summaries, "nothing_checked": empty or None})
    else:
        for r in runs:
            print(format_check(r))
            print()
        if len(runs) > 1:
            print(align_table([SUMMARY_HEAD] + [summary_row(s) for s in summaries]))
    if empty:
        # a check that compared nothing proved nothing: a CI job must not pass on it
        print(empty, file=sys.stderr)
        return 1
    return 1 if any(s["mismatches"] for s in summaries) else 0


def run_verify(args: argparse.Namespace) -> int:
    """Handler of ``deplbench library verify``; exit status 1 when infeasible."""
    from deplbench.benchmarks.library.verify import format_verify, verify_solution
    from deplbench.errors import SolverError
    from deplbench.formulations.evaluation.settings import check_samples

    check_samples(args.samples, field="--samples", error=SolverError)
    res = verify_solution(args.dir, args.name, args.solution, kind=args.model, samples=args.samples)
    if args.json:
        print_json(res)
    else:
        print(format_verify(res))
    return 0 if res["feasible"] else 1
