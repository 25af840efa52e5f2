"""``deplbench measure``: the loss model measured on real training (docs/measured.md).

Usage::

    deplbench measure run -o LOGS.csv.gz [--tiny] [--threads N]   # needs the extra `measure`
    deplbench measure analyse [LOGS.csv.gz] [--json] [--report DIR]
    deplbench measure refit [LOGS.csv.gz] -o FIT.json [--eq8-output EQ8.json]
    deplbench measure replay [--seeds N] [--loss-max L] [-o REPLAY.json]   # needs the extra `measure`

``run`` trains the network (:mod:`deplbench.measure.experiment`) and writes
the long CSV ``deplbench fit`` reads plus a provenance JSON; ``analyse``
reproduces the paper's Fig. 4 and the independence test on logs (default:
the shipped measurement, no training library needed); ``refit`` writes the
two fitted instances to the files named (never to the shipped data unless
named); ``replay`` plans on
the measured instance and trains each plan on held-out seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deplbench.cli.messages import output_path
from deplbench.errors import DeplbenchError
from deplbench.jsonio import restore_nonfinite


class MeasureError(DeplbenchError, ValueError):
    """A bad ``deplbench measure`` option or a missing training library."""


def register(subparsers) -> None:
    """Add the ``measure`` sub-command to the deplbench CLI."""
    p = subparsers.add_parser(
        "measure", help="train real pruned networks, reproduce Fig. 4, replay proven plans on held-out runs",
        description="Train a real pruned network (needs `pip install deplbench[measure]`), reproduce the "
                    "paper's Fig. 4 on the logs, test independence, replay proven plans on held-out runs.")
    sub = p.add_subparsers(dest="measure_command", required=True, metavar="{run,analyse,refit,replay}")
    r = sub.add_parser("run", help="train the experiment and write the logs + provenance")
    r.add_argument("-o", "--output", type=output_path, required=True, metavar="LOGS.csv[.gz]")
    r.add_argument("--tiny", action="store_true", help="a few epochs, two seeds per batch (a smoke test)")
    r.add_argument("--threads", type=int, default=1, help="PyTorch threads (default 1; fixes the summation order)")
    r.set_defaults(func=run_measure)
    a = sub.add_parser("analyse", help="Fig. 4 fits, alternatives, KS grid and autocorrelation of the logs")
    a.add_argument("logs", nargs="?", default=None, help="logs (default: the shipped measurement)")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.add_argument("--report", type=output_path, metavar="DIR", help="write the Fig. 4 PNGs and analysis.json here")
    a.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates of the ACF interval")
    a.set_defaults(func=run_analyse)
    f = sub.add_parser("refit", help="refit the measured instance (deplbench fit on the measured logs)",
                       description="Fit the measured instance to the logs: deplbench fit's own (-o) and "
                                   "eq. (8) as the paper states it (--eq8-output). Both files are new "
                                   "files of yours; to refresh the shipped fit, name its files explicitly "
                                   "(make measure does).")
    f.add_argument("logs", nargs="?", default=None, help="logs (default: the shipped measurement)")
    f.add_argument("-o", "--output", type=output_path, required=True, metavar="FIT.json",
                   help="the fitted instance (deplbench fit's laws)")
    f.add_argument("--eq8-output", type=output_path, default=None, metavar="EQ8.json",
                   help="the instance with eq. (8)'s laws as stated (default: beside -o as <name>-eq8.json)")
    f.set_defaults(func=run_refit)
    q = sub.add_parser("replay", help="plan on the measured instance, train the plans on held-out seeds")
    q.add_argument("--seeds", type=int, default=1000, help="held-out runs per plan (default 1000)")
    q.add_argument("--solvers", default="milp-exact,depl-proven,depl,best-exp,one-switch,milp")
    q.add_argument("--threads", type=int, default=1,
                   help="PyTorch threads (default 1; more threads slow it down on a busy machine)")
    q.add_argument("--result", action="append", default=[], metavar="NAME=FILE",
                   help="use a solver's result already computed on the default measured instance "
                        "(deplbench solve --json -o FILE) instead of running it (repeatable)")
    q.add_argument("--loss-max", type=float, default=None, metavar="L",
                   help="ℓmax of the measured instance (default: the family's, 0.3)")
    q.add_argument("--merge", action="store_true", help="merge into --output: replace only these solvers' rows")
    q.add_argument("-o", "--output", type=output_path, default=None, metavar="REPLAY.json")
    q.set_defaults(func=run_replay)


def _need_torch() -> None:
    try:
        import sklearn  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise MeasureError(f"deplbench measure: the training library is not installed ({exc.name or exc}); "
                           "install the extra: pip install -r requirements/measure.txt "
                           "(or `make measure-setup`)") from None


def run_measure(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure run``."""
    out = Path(args.output)
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise MeasureError(f"--output {out}: directory {out.parent} does not exist")
    if args.threads < 1:
        raise MeasureError(f"--threads: must be >= 1, got {args.threads}")
    _need_torch()
    from deplbench.measure import experiment

    proto = experiment.tiny_protocol() if args.tiny else experiment.Protocol()
    csv_text, prov = experiment.run_protocol(proto, threads=args.threads,
                                             progress=lambda m: print(m, file=sys.stderr))
    logs, prov_path = experiment.write_outputs(csv_text, prov, out)
    print(f"wrote {logs} and {prov_path} ({prov['wall_seconds']} s)")
    return 0


def _check_analyse(args: argparse.Namespace) -> None:
    """Refuse an ``analyse`` option no analysis can use, naming it.

    Raises
    ------
    MeasureError
        ``--bootstrap`` outside [1, MAX_BOOTSTRAP]: no replicate leaves the
        percentile interval undefined, and the replicates are drawn as one
        array (replicates × runs).
    """
    from deplbench.limits import MAX_BOOTSTRAP

    if not 1 <= args.bootstrap <= MAX_BOOTSTRAP:
        raise MeasureError(f"--bootstrap: must be in [1, {MAX_BOOTSTRAP}] replicates, got {args.bootstrap}")


def _check_replay(args: argparse.Namespace, solvers: list[str]) -> None:
    """Refuse a ``replay`` option before anything is trained, naming it.

    Raises
    ------
    MeasureError
        ``--seeds`` or ``--threads`` below 1, no ``--solvers``, an unknown
        solver name, a ``--result`` for a solver not replayed (it would be
        ignored), ``--merge`` without an existing ``--output``.
    """
    if args.seeds < 1:
        raise MeasureError(f"--seeds: must be >= 1, got {args.seeds}")
    if args.threads < 1:
        raise MeasureError(f"--threads: must be >= 1, got {args.threads}")
    if not solvers:
        raise MeasureError(f"--solvers: names no algorithm, got {args.solvers!r}")
    from deplbench.solvers.registry import registered

    unknown = [s for s in solvers if s not in registered()]
    if unknown:
        raise MeasureError(f"--solvers: unknown algorithm(s) {', '.join(map(repr, unknown))} "
                           f"(registered: {', '.join(registered())})")
    for item in args.result:
        name = item.partition("=")[0]
        if name not in solvers:
            raise MeasureError(f"--result {item}: {name!r} is not among --solvers ({', '.join(solvers)}), "
                               "so its result would not be used")
    if args.merge and not (args.output and Path(args.output).is_file()):
        raise MeasureError("--merge: needs an existing --output file")
    if args.output:
        from deplbench.files import refuse_overwrite

        given = [item.partition("=")[2] for item in args.result if item.partition("=")[2]]
        refuse_overwrite(args.output, given, "--output", MeasureError)


def run_analyse(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure analyse``."""
    _check_analyse(args)
    from deplbench.measure import analysis

    result = analysis.analyse(args.logs, bootstrap=args.bootstrap)
    if args.report:
        from deplbench.reports.measured import write_fig4

        write_fig4(result, args.report)
    if args.json:
        from deplbench.jsonio import print_json

        print_json(result.summary())
    else:
        print(analysis.format_summary(result.summary()))
    return 0


def run_refit(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure refit``."""
    from deplbench.files import refuse_overwrite
    from deplbench.measure import analysis

    out = Path(args.output)
    eq8_out = Path(args.eq8_output) if args.eq8_output else analysis.eq8_path_beside(out)
    option = "--output" if args.eq8_output is None else "--eq8-output"
    for flag, written in (("--output", out), (option, eq8_out)):
        if not (written.parent if str(written.parent) else Path(".")).is_dir():
            raise MeasureError(f"{flag} {written}: directory {written.parent} does not exist")
        # the fitted instances must not replace the logs they come from
        refuse_overwrite(written, [args.logs or analysis.default_logs_path()], flag, MeasureError)
    if out.resolve() == eq8_out.resolve():
        raise MeasureError(f"--eq8-output {eq8_out}: is the --output file; the two fits need two files")
    instance, eq8, fit = analysis.refit(args.logs, out, eq8_out)
    print(f"fitted {len(fit.models)} models, {len(fit.switches)} switch pairs from {fit.n_runs} runs; wrote "
          f"{out} (deplbench fit's laws) and {eq8_out} (eq. (8) as stated)")
    return 0


def _result_record(item: str) -> dict:
    """The ``solve -o`` record of ``--result NAME=FILE``, its plan checked.

    Raises
    ------
    MeasureError
        Not NAME=FILE, an unreadable file, or not a result record: ``{}`` or
        a record without ``status`` would be replayed as a solver that found
        no plan, and a JSON list failed with a traceback.
    """
    from deplbench.errors import PlanError
    from deplbench.formulations.model.plan import parse_plan

    name, sep, path = item.partition("=")
    if not sep:
        raise MeasureError(f"--result: expected NAME=FILE, got {item!r}")
    try:
        record = restore_nonfinite(json.loads(Path(path).read_text()))     # a `solve -o` record
    except (OSError, ValueError) as exc:
        raise MeasureError(f"--result {item}: cannot read a result record ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get("status"), str) or "plan" not in record:
        raise MeasureError(f"--result {item}: not a result record (a JSON object with 'status' and 'plan', as "
                           "`deplbench solve -o` writes)")
    if record["plan"] is not None:
        try:
            parse_plan(record["plan"])
        except PlanError as exc:
            raise MeasureError(f"--result {item}: {exc}") from None
    return record


def run_replay(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure replay``."""
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    _check_replay(args, solvers)
    given = {item.partition("=")[0]: _result_record(item) for item in args.result}
    _need_torch()
    from deplbench.measure import replay

    partial = Path(args.output + ".partial") if args.output else None

    def save(res: dict) -> None:
        if partial is not None:
            partial.write_text(json.dumps(res, indent=2) + "\n")

    instance = None
    if args.loss_max is not None:
        from deplbench.instances.generators import generate

        instance = generate("measured", loss_max=args.loss_max)
    result = replay.replay_plans(solvers, n_seeds=args.seeds, threads=args.threads, results=given,
                                 instance=instance,
                                 progress=lambda m: print(m, file=sys.stderr), on_row=save)
    if partial is not None:
        partial.unlink(missing_ok=True)
    if args.merge:
        result = replay.merge(json.loads(Path(args.output).read_text()), result)
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(replay.format_table(result))
    return 0


__all__ = ["register", "run_measure", "run_analyse", "run_replay", "MeasureError"]
