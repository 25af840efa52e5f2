"""``deplbench run`` and ``deplbench export``: the benchmark layer's commands.

::

    deplbench run SWEEP.toml --db results.sqlite [--workers N] [--retry-failed]
                  [--dask-scheduler ADDR | --dask-local N] [--no-progress]
    deplbench run SWEEP.toml [--db results.sqlite] --dry-run
    deplbench export DB [--format {csv,parquet}] -o FILE|- [--latest]

``SWEEP`` may also name a packaged sweep (``quick``, ``paper``,
``complexity``, ``knapsack``). ``--db`` is required to run; a dry run
without it counts every task as to run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deplbench.cli.messages import output_path
from deplbench.errors import SweepError


def register(subparsers) -> None:
    """Add the ``run`` and ``export`` sub-commands."""
    run = subparsers.add_parser(
        "run", help="run a benchmark sweep into a results store (resumable)",
        description="Expand a TOML sweep into tasks and run those the results store does "
                    "not have yet. Each task runs in its own process under a hard time "
                    "limit; each finished task is committed at once.")
    run.add_argument("sweep", metavar="SWEEP.toml",
                     help="sweep file, or the name of a packaged sweep (quick, paper, "
                          "complexity, knapsack)")
    run.add_argument("--db", type=output_path, default=None, metavar="DB",
                     help="SQLite results store (created if missing, in a folder that exists); required, "
                          "except with --dry-run, where it is only read to count the tasks already done "
                          "(without it none is)")
    run.add_argument("--workers", type=int, default=None, metavar="N",
                     help="local task processes (default: usable CPU cores)")
    run.add_argument("--retry-failed", action="store_true",
                     help="re-run tasks whose earlier attempts all failed")
    dask = run.add_mutually_exclusive_group()
    dask.add_argument("--dask-scheduler", metavar="ADDR", default=None,
                      help="submit tasks to a running dask.distributed scheduler (reached before DB is "
                           "created: one that cannot be reached is refused and leaves no DB behind)")
    dask.add_argument("--dask-local", type=int, metavar="N", default=None,
                      help="start a LocalCluster of N workers in this process (each task "
                           "still runs in a process of its own, forked warm)")
    run.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                     help="no progress bar (there is none either when stderr is not a terminal); "
                          "solver output, hidden while a bar shows, then reaches stderr")
    run.add_argument("--algo", action="append", metavar="NAME",
                     help="run only the [[algorithms]] entries whose name or label matches "
                          "(shell glob such as 'depl*'; repeatable)")
    run.add_argument("--instance", action="append", metavar="GLOB",
                     help="run only the [[instances]] groups whose id or set matches "
                          "(shell glob; repeatable)")
    run.add_argument("--dry-run", action="store_true",
                     help="validate everything a run would use (every parameter value, "
                          "every instance built with its targets), count the tasks and list "
                          "the first of those to run (--show-tasks); runs nothing and never "
                          "creates DB (--db is optional here)")
    run.add_argument("--show-tasks", type=int, default=None, metavar="N",
                     help="with --dry-run: list the first N tasks to run, one line each "
                          "(default 20; 0: counts only)")
    run.set_defaults(func=_run)

    export = subparsers.add_parser(
        "export", help="export a results store to CSV or Parquet",
        description="Write the results store's frame (the DESIGN.md column contract) "
                    "to a file, or as CSV to standard output (-o -).")
    export.add_argument("db", metavar="DB", help="SQLite results store")
    export.add_argument("--format", default=None, choices=("csv", "parquet"),
                        help="output format (parquet needs pyarrow; the same columns as csv, a "
                             "param_* column mixing value types as JSON text); default: the one "
                             "the -o suffix names (.csv or .parquet, csv for -o -); refused when "
                             "the suffix names the other one")
    export.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE",
                        help="output file; - writes CSV to standard output (parquet is refused there)")
    export.add_argument("--latest", action="store_true",
                        help="only the last attempt of each task")
    export.set_defaults(func=_export)


#: Tasks ``run --dry-run`` lists when ``--show-tasks`` is not given.
SHOW_TASKS = 20


def _check_run_args(args: argparse.Namespace) -> None:
    """Refuse ``run`` options that contradict each other, naming the option (before any work).

    Raises
    ------
    SweepError
        No ``--db`` for a real run, or one in a folder that does not exist, ``--workers`` with Dask, ``--show-tasks``
        without ``--dry-run`` (it would be ignored) or below 0.
    """
    if args.db is None and not args.dry_run:
        raise SweepError("--db: a results store is required to run a sweep (only --dry-run works without one)")
    if args.db is not None:
        # As every output option: the store file is created, its folder is not (a typo in
        # the folder would otherwise leave the results somewhere no one looks). A dry run
        # needs no store, but previews the run: it warns of the refusal to come.
        folder = Path(args.db).parent
        if not (folder if str(folder) else Path(".")).is_dir():
            if not args.dry_run:
                raise SweepError(f"--db {args.db}: directory {folder} does not exist")
            print(f"warning: --db {args.db}: directory {folder} does not exist; the run itself will refuse it "
                  "(create the folder first)", file=sys.stderr)
    if (args.dask_scheduler is not None or args.dask_local is not None) and args.workers is not None:
        raise SweepError("--workers: applies to local runs; with Dask the cluster decides")
    if args.show_tasks is not None:
        if not args.dry_run:
            raise SweepError("--show-tasks: lists the tasks of a --dry-run and a real run lists none; "
                             "add --dry-run or drop --show-tasks")
        if args.show_tasks < 0:
            raise SweepError(f"--show-tasks: must be 0 or more, got {args.show_tasks}")


def _run(args: argparse.Namespace) -> int:
    """Run (or dry-run) a sweep; exit status 1 when any task failed."""
    from deplbench.benchmarks.executors import DaskExecutor, LocalExecutor
    from deplbench.benchmarks.runner import dry_run, limit_warnings, run_sweep
    from deplbench.benchmarks.store import ResultsStore
    from deplbench.benchmarks.sweep import load_sweep
    from deplbench.benchmarks.sweep_expand import select

    _check_run_args(args)
    dask = args.dask_scheduler is not None or args.dask_local is not None
    executor: DaskExecutor | LocalExecutor
    if dask:
        executor = DaskExecutor(scheduler=args.dask_scheduler, local_workers=args.dask_local)
    else:
        executor = LocalExecutor(workers=args.workers, field="--workers")
    if not args.dry_run:
        # The task processes' warm forkserver imports the solver stack (seconds)
        # while the sweep below is validated, not after it.
        executor.prepare()
    # Validated completely here (every parameter value, every instance built
    # with its targets), so --dry-run catches what would fail for input reasons.
    sweep = select(load_sweep(args.sweep), algorithms=args.algo, instances=args.instance)
    for line in limit_warnings(sweep):
        print(line, file=sys.stderr)
    if args.dry_run:
        # Never creates the database: an existing one is only read; without --db nothing is done yet.
        report = dry_run(sweep, args.db, executor.describe(), retry_failed=args.retry_failed,
                         check_instances=False)
        print(report.text(show=SHOW_TASKS if args.show_tasks is None else args.show_tasks))
        return 0
    from deplbench.cli.progress import native_output_held, progress_wanted

    show = progress_wanted(args)
    try:
        if isinstance(executor, DaskExecutor):
            # Before the store is created: a scheduler that cannot be reached
            # must not leave an empty results store behind.
            executor.connect()
        with ResultsStore(args.db) as store, native_output_held(show) as stream:
            summary = run_sweep(sweep, store, executor, retry_failed=args.retry_failed,
                                progress=show, stream=stream)
    finally:
        executor.close()
    print(summary.text(sweep.name), file=sys.stderr)
    return summary.exit_status


def _export(args: argparse.Namespace) -> int:
    from deplbench.benchmarks.export import export

    # "-" is standard output, as for `generate -o -`; sys.stdout is looked up
    # here, the real standard output while the command runs.
    to_stdout = args.output == "-"
    n = export(args.db, sys.stdout if to_stdout else args.output, args.format, latest=args.latest,
               warn=lambda line: print(line, file=sys.stderr))
    print(f"wrote {n} rows to {'standard output' if to_stdout else args.output}", file=sys.stderr)
    return 0
