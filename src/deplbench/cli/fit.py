"""``deplbench fit``: calibrate an instance from measured loss trajectories.

Usage::

    deplbench fit LOGS.csv [--base INSTANCE | --family alexnet] -o INSTANCE.json
                  [--report DIR] [--alpha 0.05] [--ks-bootstrap N] [--seed S]
                  [--data-gamma G] [--loss-max L] [--name NAME]

The log format and the method are documented in ``docs/fit.md``; the library
is :mod:`deplbench.instances.fit`. The output file is written atomically and
only after the fit (and the report, when asked for) succeeded.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from deplbench.cli.messages import output_path


def register(subparsers) -> None:
    """Add the ``fit`` sub-command to the deplbench CLI."""
    p = subparsers.add_parser(
        "fit",
        help="fit an instance's loss model (eq. (8), l_sw) to training logs (DepL Sec. VI-A)",
        description=(
            "Fit A_m, B_m (least squares, X = 1), X_m (inverse-gamma by ML, KS p-value, empirical "
            "fallback) and the switch jumps (Student's t) to training logs in the long CSV format "
            "run,epoch,model,loss (docs/fit.md), and write an instance whose other fields come from "
            "--base or the realistic family defaults."
        ),
    )
    p.add_argument("logs", metavar="LOGS.csv", help="training logs: columns run, epoch, model, loss")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--base", metavar="INSTANCE", help="instance supplying clusters, costs, datasets, targets, "
                     "model size and compute (default: the realistic --family instance)")
    # default None, not "alexnet": argparse lets a mutually exclusive option through when its value
    # is the default object, so `--base X --family alexnet` would pass with --family ignored
    src.add_argument("--family", default=None, help="realistic family used when --base is absent "
                     "(default: alexnet)")
    p.add_argument("-o", "--output", type=output_path, required=True, metavar="INSTANCE.json",
                   help="output instance file")
    p.add_argument("--report", type=output_path, metavar="DIR",
                   help="write the fit report (PNG figures, fit-report.json) here")
    p.add_argument("--alpha", type=float, default=0.05, help="KS significance level (default 0.05)")
    p.add_argument("--ks-bootstrap", type=int, default=0, metavar="N",
                   help="parametric-bootstrap replicates for the X fits' KS p-values (default 0: plain KS)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap draws (default 0)")
    p.add_argument("--data-gamma", type=float, default=1.0, metavar="G",
                   help="learning multiplier γ of the logs' data (datalaw); A is divided by it (default 1)")
    p.add_argument("--loss-max", type=float, default=None, metavar="L",
                   help="override the base's loss target ℓmax (the logs' loss scale may differ): a finite number "
                        "below the initial loss")
    p.add_argument("--name", default=None, help="instance name (default: <base>-fit)")
    p.add_argument("--max-empirical", type=int, default=1000, metavar="N",
                   help="samples kept by an empirical fallback (default 1000)")
    p.add_argument("--min-switch-samples", type=int, default=5, metavar="N",
                   help="fewest observed switches of a pair to fit Student's t (default 5)")
    p.set_defaults(func=run_fit)


def run_fit(args: argparse.Namespace) -> int:
    """Handler of ``deplbench fit``; returns the exit status.

    Raises
    ------
    DeplbenchError
        Every user error (bad logs, missing base, unwritable output); the
        top-level CLI turns it into ``error: ...`` and exit status 2.
    """
    from deplbench.instances import fit as fitlib  # pandas, scipy: only when fitting
    from deplbench.instances.model import load_instance

    out = Path(args.output)
    _check_outputs(args, out, fitlib.LogError)
    if args.name is not None and not args.name.strip():
        # a blank name labels the instance with nothing one can see; omitting --name gives the default
        raise fitlib.LogError(f"--name: must not be blank, got {args.name!r} (omit it for the default <base>-fit)")
    if args.loss_max is not None and not math.isfinite(args.loss_max):
        # argparse reads nan, inf and 1e400 as floats; none is a loss target
        raise fitlib.LogError(f"--loss-max: must be a finite number, got {args.loss_max}")
    base = load_instance(args.base) if args.base else None
    try:
        instance, fit = fitlib.fit_instance(
            args.logs, base=base, base_label=str(args.base or ""), family=args.family or "alexnet", name=args.name,
            data_gamma=args.data_gamma, loss_max=args.loss_max, alpha=args.alpha, ks_bootstrap=args.ks_bootstrap,
            seed=args.seed, max_empirical=args.max_empirical, min_switch_samples=args.min_switch_samples,
        )
    except fitlib.LogError as exc:
        raise fitlib.LogError(_as_option(str(exc), args)) from None
    if args.report:
        from deplbench.reports.fit_plots import write_report

        files = write_report(fit, args.report)
    fitlib.write_instance_atomic(instance, out)
    _summary(instance, fit)
    if args.report:
        print(f"report: {len(files)} files in {args.report}")
    print(f"wrote {out}")
    return 0


#: fit_instance's arguments → this command's options (a refusal names what the user typed).
_FLAGS = {"alpha": "--alpha", "ks_bootstrap": "--ks-bootstrap", "seed": "--seed", "data_gamma": "--data-gamma",
          "loss_max": "--loss-max", "max_empirical": "--max-empirical", "min_switch_samples": "--min-switch-samples"}


def _as_option(message: str, args: argparse.Namespace) -> str:
    """``alpha: must be in (0, 1), got 2.0`` (the library's refusal) as ``--alpha 2: must be ...``."""
    from deplbench.jsonio import number_text

    for name, flag in _FLAGS.items():
        if message.startswith(f"{name}: "):
            return f"{flag} {number_text(getattr(args, name))}: {message[len(name) + 2:]}"
    return message


def _check_outputs(args: argparse.Namespace, out: Path, error: type) -> None:
    """Refuse ``-o`` and ``--report`` before the fit, naming the option.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options (``logs``, ``base``, ``report``).
    out : Path
        The instance file ``-o`` names.
    error : type
        The :class:`~deplbench.errors.DeplbenchError` subclass raised.

    Raises
    ------
    error
        ``-o`` in a missing folder, a folder or an unwritable file; ``-o``
        that is the logs or the ``--base`` instance; ``--report`` that is a
        file, or a folder holding the logs or the base (the report's
        ``fit-report.json`` and PNGs would replace an input of that name).
    """
    from deplbench.files import refuse_overwrite, require_writable

    inputs = [p for p in (args.logs, args.base) if p]
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise error(f"--output {out}: directory {out.parent} does not exist")
    # never overwrite an input (fit X -o X would replace the training log by the instance)
    refuse_overwrite(out, inputs, "--output", error)
    require_writable(out, "--output", error)
    if args.report:
        report = Path(args.report)
        if report.exists() and not report.is_dir():
            raise error(f"--report {report}: is a file; give a folder for the report")
        refuse_overwrite(report, inputs, "--report", error)


def _summary(instance, fit) -> None:
    print(f"fitted {len(fit.models)} model(s), {len(fit.switches)} switch pair(s) from {fit.n_runs} runs "
          f"({fit.n_rows} rows, sha256 {fit.sha256[:12]}...)")
    for name, mf in fit.models.items():
        d, imp = mf.decay, mf.improvement
        p = "n/a" if imp.p_value is None else f"{imp.p_value:.3g}"
        print(f"  {name}: A={d.A:.4g} B={d.B:.4g} (n={d.n_changes}) X: {imp.chosen.kind} KS p={p}"
              + (f" [{imp.reason}]" if imp.reason else ""))
    for (a, b), sf in fit.switches.items():
        p = "n/a" if sf.p_value is None else f"{sf.p_value:.3g}"
        print(f"  {a} -> {b}: l_sw {sf.chosen.kind} (n={sf.n}) KS p={p}" + (f" [{sf.reason}]" if sf.reason else ""))


__all__ = ["register", "run_fit"]
