"""``deplbench report DB --out DIR [--bench-json DIR]``.

Builds the static report of :mod:`deplbench.reports.build` from a results
store. Bad input (no store at DB, an --out that is a file, a bad option)
is a one-line ``error:`` from the top-level CLI, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from deplbench.cli.messages import output_path


def register(subparsers) -> None:
    """Add the ``report`` sub-command to the ``deplbench`` parser."""
    p = subparsers.add_parser(
        "report",
        help="build a static HTML/CSV/Markdown report from a results store",
        description="Build a self-contained report (index.html, figures/*.png|svg, "
                    "tables/*.csv|md, manifest.json): the papers' figures, optimality "
                    "gaps, competitive ratio, complexity fits and the claims audit.")
    p.add_argument("db", metavar="DB", help="results store written by `deplbench run`")
    p.add_argument("--out", type=output_path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--bench-json", metavar="DIR", default=None,
                   help="pytest-benchmark JSON file or folder (make bench writes "
                        "results/bench/)")
    p.add_argument("--title", default="deplbench report", help="page title")
    p.add_argument("--sgm-shift", type=float, default=1.0, metavar="S",
                   help="shift in seconds of the shifted geometric mean (default 1)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="figure size multiplier in [0.2, 5] (default 1)")
    p.add_argument("--dpi", type=int, default=110, help="PNG resolution (default 110)")
    p.add_argument("--no-svg", action="store_true", help="write PNG figures only")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines (there are none either when stderr is not a terminal)")
    p.set_defaults(func=_run)


def _check_bench_file(bench_json: str | None) -> None:
    """A ``--bench-json`` naming one file must be a pytest-benchmark file.

    When scanning a folder, files that are not are skipped with a note in
    the report (a folder may hold other JSON); but a single file the user
    named that cannot be used is the user's input error, not a note in the
    HTML that exit status 0 would hide.

    Raises
    ------
    ReportError
        ``--bench-json FILE: not a pytest-benchmark JSON file (...)``.
    """
    from pathlib import Path

    from deplbench.reports.data import ReportError, load_bench_json

    if bench_json is None or not Path(bench_json).is_file():
        return          # a folder, or a missing path (load_bench_json names it)
    _, notes = load_bench_json(bench_json)
    head = f"{Path(bench_json).name}: "
    for note in notes:
        if note.startswith(head):
            raise ReportError(f"--bench-json {bench_json}: {note[len(head):]}")


def _run(args: argparse.Namespace) -> int:
    from deplbench.cli.progress import native_output_held, progress_wanted
    from deplbench.reports.build import ReportOptions, build_report

    _check_bench_file(args.bench_json)
    show = progress_wanted(args)
    opts = ReportOptions(title=args.title, sgm_shift=args.sgm_shift, scale=args.scale,
                         dpi=args.dpi, formats=("png",) if args.no_svg else ("png", "svg"),
                         progress=show)  # a status line per section on stderr, with the elapsed time
    with native_output_held(show):
        summary = build_report(args.db, args.out, args.bench_json, opts)
    print(f"report: {summary.index} ({len(summary.figures)} figures, "
          f"{len(summary.tables)} tables, {len(summary.missing)} missing-data notes)")
    if summary.claims is not None:
        for row in summary.claims.itertuples(index=False):
            print(f"  [{row.verdict}] {row.claim}")
    for p in summary.figure_problems:
        print(f"warning: figure hard to read: {p}", file=sys.stderr)
    if summary.errors:
        for e in summary.errors:
            print(f"warning: section failed: {e.splitlines()[0]}")
        return 1
    return 0
