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
    q.add_argument("-o", "--output", type=output_path, default=None, metavar="REPLAY.json",
                   help="write the replay here (replaced whole); the rows so far are kept in REPLAY.json.partial "
                        "if interrupted (exit 130), and a replay does not start while that file exists")
    q.set_defaults(func=run_replay)


def _need_torch() -> None:
    try:
        import sklearn  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise MeasureError(f"deplbench measure: the training library is not installed ({exc.name or exc}); "
                           "install the extra: pip install -r requirements/measure.txt "
                           "(or `make measure-setup`)") from None


def _check_threads(threads: int) -> None:
    """``--threads`` of ``run`` and ``replay`` in [1, MAX_THREADS]: far more threads than that cannot
    map their thread pools (the training library fails to import), and thousands make a smoke
    test take minutes."""
    from deplbench.limits import MAX_THREADS

    if not 1 <= threads <= MAX_THREADS:
        raise MeasureError(f"--threads: must be in [1, {MAX_THREADS}], got {threads}")


def run_measure(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure run``."""
    out = Path(args.output)
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise MeasureError(f"--output {out}: directory {out.parent} does not exist")
    from deplbench.files import require_writable

    require_writable(out, "--output", MeasureError)     # known before the training, not after it
    _check_threads(args.threads)
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
        array (replicates × runs). ``--report`` that is a file, or a folder
        holding the logs (its ``analysis.json`` and ``fig4.png`` would
        replace an input of that name).
    """
    from deplbench.limits import MAX_BOOTSTRAP

    if not 1 <= args.bootstrap <= MAX_BOOTSTRAP:
        raise MeasureError(f"--bootstrap: must be in [1, {MAX_BOOTSTRAP}] replicates, got {args.bootstrap}")
    if args.report:
        from deplbench.files import refuse_overwrite
        from deplbench.measure.analysis import default_logs_path

        report = Path(args.report)
        if report.exists() and not report.is_dir():
            raise MeasureError(f"--report {report}: is a file; give a folder for the figures")
        refuse_overwrite(report, [args.logs or default_logs_path()], "--report", MeasureError)


def _split_result(item: str) -> tuple[str, str]:
    """``--result NAME=FILE`` as (NAME, FILE); anything else is refused naming the option."""
    name, sep, path = item.partition("=")
    if not sep or not name or not path:
        raise MeasureError(f"--result: expected NAME=FILE, got {item!r}")
    return name, path


def _check_replay(args: argparse.Namespace, solvers: list[str]) -> None:
    """Refuse a ``replay`` option before anything is trained, naming it.

    Raises
    ------
    MeasureError
        ``--seeds`` or ``--threads`` outside their bounds, no ``--solvers``, an unknown
        solver name, a ``--result`` for a solver not replayed (it would be
        ignored), ``--merge`` without an existing ``--output``, an
        ``--output`` whose ``.partial`` file is left from an interrupted replay.
    """
    from deplbench.limits import MAX_REPLAY_SEEDS

    if not 1 <= args.seeds <= MAX_REPLAY_SEEDS:     # the seed list is held in memory: 10**9 seeds exhaust it
        raise MeasureError(f"--seeds: must be in [1, {MAX_REPLAY_SEEDS}], got {args.seeds}")
    _check_threads(args.threads)
    if not solvers:
        raise MeasureError(f"--solvers: names no algorithm, got {args.solvers!r}")
    from deplbench.solvers.registry import registered

    unknown = [s for s in solvers if s not in registered()]
    if unknown:
        raise MeasureError(f"--solvers: unknown algorithm(s) {', '.join(map(repr, unknown))} "
                           f"(registered: {', '.join(registered())})")
    for item in args.result:
        name, _ = _split_result(item)
        if name not in solvers:
            raise MeasureError(f"--result {item}: {name!r} is not among --solvers ({', '.join(solvers)}), "
                               "so its result would not be used")
    if args.merge and not (args.output and Path(args.output).is_file()):
        raise MeasureError("--merge: needs an existing --output file")
    if args.output:
        from deplbench.files import refuse_overwrite, require_writable

        given = [item.partition("=")[2] for item in args.result if item.partition("=")[2]]
        if not Path(args.output).is_dir():     # a folder is refused as one below, whatever it holds
            refuse_overwrite(args.output, [*given, *_measured_instance_files()], "--output", MeasureError)
        # asked here: training first would end in a replay that is never written; after the inputs,
        # so a read-only input given as --output is named as the input, not as "permission denied"
        require_writable(args.output, "--output", MeasureError)
        partial = Path(args.output + ".partial")
        if partial.exists() or partial.is_symlink():
            # the rows an interrupted replay kept: this run's first row would overwrite them
            raise MeasureError(f"--output {args.output}: {partial} holds the rows of an interrupted replay; "
                               f"rename it to {args.output} to keep them (then --merge the rest of the "
                               "solvers), or remove it")


def _provenance_file() -> str:
    """The shipped provenance ``refit``'s base instance is built from (its versions' sizes and FLOPs)."""
    from deplbench.instances.generators.measured import PROVENANCE_FILE

    return str(PROVENANCE_FILE)


def _measured_instance_files() -> list[str]:
    """The shipped files the measured instance is built from (``replay`` and ``refit`` read them)."""
    from deplbench.instances.generators.measured import EQ8_FILE, PROVENANCE_FILE

    return [str(EQ8_FILE), str(PROVENANCE_FILE)]


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
    from deplbench.files import refuse_overwrite, require_writable
    from deplbench.measure import analysis

    out = Path(args.output)
    eq8_out = Path(args.eq8_output) if args.eq8_output else analysis.eq8_path_beside(out)
    option = "--output" if args.eq8_output is None else "--eq8-output"
    for flag, written in (("--output", out), (option, eq8_out)):
        if not (written.parent if str(written.parent) else Path(".")).is_dir():
            raise MeasureError(f"{flag} {written}: directory {written.parent} does not exist")
        # the fitted instances must not replace the logs they come from, nor the provenance of the base;
        # a folder is refused as one below, whatever it holds
        if not written.is_dir():
            refuse_overwrite(written, [args.logs or analysis.default_logs_path(), _provenance_file()], flag,
                             MeasureError)
    if out.resolve() == eq8_out.resolve():
        raise MeasureError(f"--eq8-output {eq8_out}: is the --output file; the two fits need two files")
    for flag, written in (("--output", out), (option, eq8_out)):
        # after the checks above, whose messages name the real problem: a named pipe no one reads would
        # hold the write forever, and one with a reader is written to, not replaced by a file
        require_writable(written, flag, MeasureError)
    instance, eq8, fit = analysis.refit(args.logs, out, eq8_out)
    print(f"fitted {len(fit.models)} models, {len(fit.switches)} switch pairs from {fit.n_runs} runs; wrote "
          f"{out} (deplbench fit's laws) and {eq8_out} (eq. (8) as stated)")
    return 0


def read_result_records(items: list[str], instance) -> dict[str, dict]:
    """The ``--result NAME=FILE`` records of ``replay``, checked before anything is trained.

    Each file must be what ``deplbench solve --json -o FILE`` writes: a JSON
    object with a ``status`` of :data:`~deplbench.formulations.model.result.STATUSES`
    and a ``plan`` (an object, or null when the solve found none) whose
    models, clusters and datasets are the measured instance's, and which
    meets its constraints (4)–(6).

    Returns
    -------
    dict
        Solver name → the record, its ``plan`` parsed.

    Raises
    ------
    MeasureError
        Naming ``--result NAME=FILE`` and what is wrong: not NAME=FILE, an
        unreadable or non-JSON file, another kind of document (an instance,
        a list), an unknown status, a plan that is invalid, names what the
        instance does not have or breaks its constraints (4)–(6).
    """
    from deplbench.errors import PlanError
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from deplbench.formulations.evaluation.settings import MIN_SAMPLES
    from deplbench.formulations.model.plan import check_plan_names, parse_plan
    from deplbench.formulations.model.result import STATUSES
    from deplbench.instances.jsondoc import read_json

    given: dict[str, dict] = {}
    for item in items:
        name, path = _split_result(item)
        flag = f"--result {item}"
        try:
            rec = read_json(path, what="result record", error=MeasureError)
        except MeasureError as exc:
            raise MeasureError(f"{flag}: cannot read a result record ({exc})") from None
        rec = restore_nonfinite(rec)
        if not isinstance(rec, dict):
            raise MeasureError(f"{flag}: expected a result record (a JSON object, as `deplbench solve --json -o "
                               f"FILE` writes), got {type(rec).__name__}")
        if rec.get("status") not in STATUSES or "plan" not in rec:
            missing = [k for k in ("status", "plan") if k not in rec]
            why = (f"no {' or '.join(repr(k) for k in missing)} key" if missing
                   else f"status {rec['status']!r} is not one of {', '.join(STATUSES)}")
            raise MeasureError(f"{flag}: not a result record of `deplbench solve` ({why})")
        if rec["plan"] is not None:
            try:
                plan = parse_plan(rec["plan"])
                check_plan_names(instance, plan)
            except PlanError as exc:
                raise MeasureError(f"{flag}: {exc} (the plan must be for the measured instance "
                                   f"{instance.name!r})") from None
            # a plan of another measured instance (another seed: other clusters, Tmax) can name the same
            # models and clusters; replayed, it would be judged as a plan of this one
            broken = evaluate_plan(instance, plan, samples=MIN_SAMPLES, trajectory=False).violations
            if broken:
                raise MeasureError(f"{flag}: the plan breaks constraints (4)-(6) of the measured instance "
                                   f"{instance.name!r}: {'; '.join(broken[:2])} (solved on another instance?)")
            rec = {**rec, "plan": plan}
        given[name] = rec
    return given


def run_replay(args: argparse.Namespace) -> int:
    """Handler of ``deplbench measure replay``."""
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    _check_replay(args, solvers)
    from deplbench.instances.generators import generate

    instance = generate("measured") if args.loss_max is None else generate("measured", loss_max=args.loss_max)
    given = read_result_records(args.result, instance)
    old = read_merge_target(args.output, instance, args.seeds) if args.merge else None
    _need_torch()
    from deplbench.measure import replay

    partial = Path(args.output + ".partial") if args.output else None
    saved: list[int] = []          # rows in the partial file: each plan trained costs minutes

    def save(res: dict) -> None:
        if partial is not None:
            # merged as --output would be, so the partial file can replace it
            _write_replay(partial, res if old is None else replay.merge(old, res), args.output, whole=True)
            saved.append(len(res["rows"]))

    kept = False
    try:
        result = replay.replay_plans(solvers, n_seeds=args.seeds, threads=args.threads, results=given,
                                     instance=instance,
                                     progress=lambda m: print(m, file=sys.stderr), on_row=save)
        if old is not None:
            result = replay.merge(old, result)
        if args.output:
            # whole: an interrupt during this write leaves OUT as it was (with --merge, its rows)
            _write_replay(Path(args.output), result, args.output, whole=True)
    except KeyboardInterrupt:
        if partial is None or not saved:
            raise
        # a user's stop, not a failure: the plans trained so far are results, kept for the user
        kept = True
        print(f"interrupted: the {saved[-1]} row(s) so far are kept in {partial}"
              + (f" (with the rows of {args.output})" if old is not None else ""), file=sys.stderr)
        return 130
    finally:
        # the rows so far, kept while the run goes on; gone once it ends written or failed
        if partial is not None and not kept:
            partial.unlink(missing_ok=True)
    print(replay.format_table(result))
    return 0


def _write_replay(path: Path, result: dict, given: str, whole: bool = False) -> None:
    """Write a replay (or its rows so far) to ``path``, a failure named as ``--output`` and the path given.

    ``whole``: replace the file in one step (a temporary file renamed), as
    the partial file is written, so that an interrupt during the write
    leaves the rows written before, never half a file.

    Raises
    ------
    MeasureError
        ``--output PATH: cannot write (...)``: a full disk, a folder removed
        during the run.
    """
    text = json.dumps(result, indent=2) + "\n"
    if whole:
        from deplbench.instances.fit import LogError, write_bytes_atomic

        try:
            write_bytes_atomic(path, text.encode("utf-8"))
        except LogError as exc:
            raise MeasureError(f"--output {given}: {str(exc).removeprefix(f'{path}: ')}") from None
        return
    try:
        path.write_text(text)
    except OSError as exc:      # the reason alone: the file named is the one the user gave
        raise MeasureError(f"--output {given}: cannot write ({(exc.strerror or str(exc)).lower()})") from None


def read_merge_target(path: str, instance, seeds: int) -> dict:
    """The replay ``--merge`` adds rows to, checked before anything is trained.

    A file that is not a replay (``{}``, a list, a result record) ended the
    command in a ``KeyError`` traceback, and a replay of another instance or
    seed count in "the replays differ", each after every plan had been
    trained and with the new rows lost.

    Raises
    ------
    MeasureError
        Naming ``--merge``: not a replay of ``measure replay -o``, or one of
        another instance (name, ℓmax, ω) or other held-out seeds.
    """
    from deplbench.instances.jsondoc import read_json
    from deplbench.measure.experiment import REPLAY_SEED_BASE

    old = read_json(path, what="replay", error=MeasureError)
    keys = ("instance", "seeds", "rows", "wall_seconds")
    if not isinstance(old, dict) or any(k not in old for k in keys) or not isinstance(old["rows"], list) \
            or not all(isinstance(r, dict) and "solver" in r for r in old["rows"]):
        raise MeasureError(f"--merge: {path} is not a replay written by `deplbench measure replay -o` "
                           f"(a JSON object with {', '.join(keys)}; every row names its solver)")
    here = {"name": instance.name, "loss_max": instance.loss_max, "omega": instance.omega}
    if old["instance"] != here:
        raise MeasureError(f"--merge: {path} replays instance {old['instance']}, this run {here} "
                           "(give the same --loss-max)")
    if old["seeds"] != {"first": REPLAY_SEED_BASE, "count": seeds}:
        raise MeasureError(f"--merge: {path} replays seeds {old['seeds']}, this run "
                           f"{{'first': {REPLAY_SEED_BASE}, 'count': {seeds}}} (give the same --seeds)")
    return old


__all__ = ["register", "run_measure", "run_analyse", "run_replay", "read_result_records", "read_merge_target",
           "MeasureError"]
