"""``deplbench library``: build and check the MPS instance library.

Usage::

    deplbench library build --out DIR [--size small|full] [--time-limit T] [--gap G] [--force]
    deplbench library check DIR [--solver highs|scip ...] [--time-limit T] [--tolerance R] [--json]

``--solver`` on ``check`` takes the solvers that read MPS files (HiGHS,
SCIP); ``deplbench solve --solver`` also takes Pyomo's SolverFactory solvers,
which are given models rather than files.

What the files mean (which value the .solu holds, and how it relates to
deplbench's real-x optimum) is documented in ``docs/library.md``; the
library is :mod:`deplbench.benchmarks.library`.
"""

from __future__ import annotations

import argparse
import sys

from deplbench.jsonio import print_json


def register(subparsers) -> None:
    """Add the ``library`` command group to the deplbench CLI."""
    p = subparsers.add_parser(
        "library", help="build or check the MPS instance library with its .solu of known optima",
        description="A curated, versioned set of instances with their exact MILP masters as MPS files, a "
                    "MIPLIB-format deplbench.solu and a table of sizes and difficulty (docs/library.md).")
    sub = p.add_subparsers(dest="library_command", metavar="ACTION")
    sub.required = True

    b = sub.add_parser("build", help="write the library into a directory",
                       description="Generate every library instance, write it as JSON and its exact MILP "
                                   "master as MPS, solve each MPS with HiGHS for deplbench.solu, and write "
                                   "library.csv / library.md and manifest.json. Progress goes to stderr.")
    b.add_argument("--out", required=True, metavar="DIR", help="output directory (created; must be empty)")
    b.add_argument("--size", choices=("small", "full"), default="small",
                   help="small: a couple of minutes to build (default); full: every entry")
    b.add_argument("--time-limit", type=float, default=60.0, metavar="T",
                   help="seconds per HiGHS solve of an MPS file, which gives the .solu value (default 60)")
    b.add_argument("--solve-time-limit", type=float, default=None, metavar="T",
                   help="seconds per deplbench exact real-x solve, for the table (default: --time-limit)")
    b.add_argument("--gap", type=float, default=1e-6, help="relative gap of the .solu solves (default 1e-6)")
    b.add_argument("--only", action="append", metavar="NAME", help="build only this instance (repeatable)")
    b.add_argument("--force", action="store_true", help="write into a non-empty directory")
    b.add_argument("--json", action="store_true", help="print the manifest as one JSON object")
    b.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    b.set_defaults(func=run_build)

    c = sub.add_parser("check", help="re-solve the library's MPS files and compare with deplbench.solu",
                       description="Solve every MPS file of DIR with each --solver and compare with "
                                   "deplbench.solu (the value must lie between the solver's proven bound and "
                                   "its best solution, within --tolerance). Prints one line per instance and "
                                   "a solver-vs-solver table: solved within the limit, shifted geometric "
                                   "mean of time (shift 10 s), mean gap at the limit. Exit status 1 on any "
                                   "mismatch.")
    c.add_argument("dir", metavar="DIR", help="a library directory written by `deplbench library build`")
    c.add_argument("--solver", action="append", metavar="NAME",
                   help="highs (default) or scip (the solvers that read MPS files here); repeat to compare")
    c.add_argument("--time-limit", type=float, default=60.0, metavar="T", help="seconds per instance (default 60)")
    c.add_argument("--gap", type=float, default=1e-6, help="relative gap at which a solve stops (default 1e-6)")
    c.add_argument("--tolerance", type=float, default=1e-5,
                   help="relative tolerance of the comparison with the .solu (default 1e-5)")
    c.add_argument("--only", action="append", metavar="NAME", help="check only this instance (repeatable)")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.set_defaults(func=run_check)


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _entry_lines(bar):
    """A progress callback: one line per finished entry, above the bar (or
    alone on stderr when there is no bar)."""
    def say(line: str) -> None:
        if bar.disable:
            _progress(line)
        else:
            bar.write(line, file=sys.stderr)
            bar.update(1)
    return say


def run_build(args: argparse.Namespace) -> int:
    """Handler of ``deplbench library build``; returns the exit status."""
    from deplbench.benchmarks.library import build_library
    from deplbench.benchmarks.library.catalog import entries
    from deplbench.cli.progress import counter, native_output_held, progress_wanted

    total = len(args.only) if args.only else len(entries(args.size))
    show = progress_wanted(args)
    with native_output_held(show) as stream:
        bar = counter(show, "library build", total=total, unit="instance", stream=stream)
        try:
            manifest = build_library(args.out, size=args.size, time_limit=args.time_limit, gap=args.gap,
                                     overwrite=args.force, only=args.only, progress=_entry_lines(bar),
                                     solve_time_limit=args.solve_time_limit)
        finally:
            bar.close()
    if args.json:
        print_json(manifest)
    else:
        n_mps = sum(1 for e in manifest["entries"] if e.get("mps"))
        print(f"wrote {len(manifest['entries'])} instances ({n_mps} MPS files) to {args.out}: "
              "deplbench.solu, library.csv, library.md, manifest.json")
    return 0


def _check_mps_solvers(solvers: list[str]) -> None:
    """``--solver``: a solver that reads MPS files and is installed (one-line
    error naming the option, exit status 2, before anything is solved)."""
    from deplbench.benchmarks.library import MPS_SOLVERS
    from deplbench.errors import SolverError
    from deplbench.formulations.milp.peers import availability

    for name in solvers:
        if name not in MPS_SOLVERS:
            hint = (" (Pyomo's solvers are given models, not files: use it with `deplbench solve --solver`)"
                    if name.startswith("pyomo:") else "")
            raise SolverError(f"--solver: {name!r} cannot re-solve library files; these read MPS files: "
                              f"{', '.join(MPS_SOLVERS)}{hint}")
        ok, why = availability(name)
        if not ok:
            here = ", ".join(n for n in MPS_SOLVERS if availability(n)[0])
            raise SolverError(f"--solver: {name!r} is not available: {why} (available here: {here})")


def run_check(args: argparse.Namespace) -> int:
    """Handler of ``deplbench library check``; exit status 1 on any mismatch."""
    from deplbench.benchmarks.library import check_library, format_check

    solvers = list(dict.fromkeys(args.solver or ["highs"]))
    _check_mps_solvers(solvers)
    runs = [check_library(args.dir, solver=s, time_limit=args.time_limit, gap=args.gap, rel_tol=args.tolerance,
                          only=args.only, progress=_progress) for s in solvers]
    summaries = [r["summary"] for r in runs]
    if args.json:
        print_json({"library": args.dir, "library_version": runs[0]["library_version"], "runs": runs,
                    "summary": summaries})
    else:
        for r in runs:
            print(format_check(r))
            print()
        if len(runs) > 1:
            from deplbench.benchmarks.library.table import align_table
            head = ("solver", "version", "solved", "sgm time s (shift 10)", "mean gap at limit", "mismatches")
            print(align_table([head] + [(s["solver"], s["version"], f"{s['solved']}/{s['instances']}",
                                    f"{s['shifted_geomean_s']:.2f}",
                                    "-" if s["mean_gap_unsolved"] is None else f"{s['mean_gap_unsolved']:.2e}",
                                    str(s["mismatches"])) for s in summaries]))
    return 1 if any(s["mismatches"] for s in summaries) else 0
