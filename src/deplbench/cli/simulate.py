"""``deplbench simulate``: an algorithm judged as it runs (closed-loop simulation)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from deplbench.cli.solvers import as_given, parse_kv, solver_used
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.settings import CONFIDENCE, RUNS, SEED, check_closed_loop, check_samples
from deplbench.jsonio import print_json

#: ``--eval-samples``' default: the static evaluation beside the closed loop.
EVAL_SAMPLES = 20_000


def _check(args) -> None:
    """Refuse bad numbers before any work, naming the flag (exit 2): the limits
    every front shares (:mod:`deplbench.formulations.evaluation.settings`)."""
    check_closed_loop(args.runs, args.seed, args.confidence, field="--{}", error=SolverError)
    check_samples(args.eval_samples, field="--eval-samples", error=SolverError)


def _line(name: str, s: dict | None) -> str:
    if s is None:
        return f"{name:<14} (none)"
    lo, hi = s["p_success_ci"]
    return (f"{name:<14} P(success) {s['p_success']:.4f} [{lo:.4f}, {hi:.4f}]  cost mean "
            f"{s['cost']['mean']:.6g} (q50 {s['cost']['q50']:.6g}, q99 {s['cost']['q99']:.6g})  "
            f"epochs {s['epochs']['mean']:.2f}  ω-quantile ℓ(K) {s['loss_quantile']:.6g}")


def _cmd_simulate(args) -> int:
    from deplbench.instances.model import load_instance
    from deplbench.solvers.registry import get_solver
    from deplbench.solvers.run import closed_loop, solve

    _check(args)
    instance = load_instance(args.instance)
    get_solver(args.algorithm)
    params: dict[str, Any] = parse_kv(args.param)
    from deplbench.cli.progress import Stages, native_output_held, progress_wanted

    show = progress_wanted(args)
    with native_output_held(show) as stream, \
            Stages(show, "simulate", ["solve", "closed loop"], stream=stream) as stages:
        stages.stage(f"solve with {args.algorithm}")
        try:
            result = solve(instance, args.algorithm, eval_samples=args.eval_samples, eval_seed=args.seed,
                           **params)
        except SolverError as exc:      # solve()'s own arguments, named as the flags that gave them
            raise SolverError(as_given(str(exc), {**params, "eval_samples": args.eval_samples, "eval_seed": args.seed},
                                       {**{k: f"--param {k}" for k in params}, "eval_samples": "--eval-samples",
                                        "eval_seed": "--seed"})) from None
        stages.stage(f"closed loop, {args.runs} runs")
        cl = closed_loop(instance, result, args.algorithm, runs=args.runs, seed=args.seed,
                         confidence=args.confidence)
    ev = result.evaluation or {}
    out = {"algorithm": result.algorithm, "status": result.status, "message": result.message,
           "static": {"cost": result.cost, "quantile": ev.get("quantile"), "quantile_ci": ev.get("quantile_ci"),
                      "quantile_ci_level": ev.get("quantile_ci_level", ev.get("confidence")),
                      "quantile_ci_method": ev.get("ci_method"),
                      "verdict": ev.get("verdict"), "verdict_basis": ev.get("verdict_basis"),
                      "epochs": ev.get("epochs")},
           "closed_loop": cl}
    if args.json:
        print_json(out)
    else:
        print(f"algorithm      {result.algorithm}" + solver_used(result))
        print(f"status         {result.status}" + (f"  ({result.message})" if result.message else ""))
        if result.cost is not None:
            print(f"static plan    cost {result.cost:.6g}")
        if ev:
            from deplbench.cli.statements import statement_lines

            print("\n".join(statement_lines(ev, width=15)))
        print(f"closed loop    {args.runs} runs, seed {args.seed}, intervals at {args.confidence:g} "
              "(Clopper–Pearson, two-sided)")
        print(_line("plan", cl["plan"]))
        print(_line("plan stopped", cl["plan_stopped"]))
        print(_line("own policy", cl["policy"]) if "policy_error" not in cl
              else f"{'own policy':<14} failed: {cl['policy_error']}")
    return 0 if result.status != "error" and "policy_error" not in cl else 1


def register(subparsers) -> None:
    """Add ``simulate`` to the deplbench CLI."""
    p = subparsers.add_parser(
        "simulate", help="closed-loop simulation: an algorithm judged as it runs",
        description=textwrap.fill(
            "Solve the instance with one algorithm, then simulate it on seeded runs that observe "
            "the loss after every epoch: its plan run to its end (the static evaluator's draws), "
            "the plan stopped as soon as the loss meets ℓmax, and the algorithm's own re-planning "
            "policy when it has one (pact, depl-receding). Prints P(success) with a Clopper–Pearson "
            "interval and the cost distribution, or with --json one JSON object.", 78),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--algorithm", "--algo", required=True, metavar="NAME", help="algorithm name")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm parameter (repeatable)")
    p.add_argument("--runs", type=int, default=RUNS, metavar="N", help=f"simulated runs (default {RUNS})")
    p.add_argument("--seed", type=int, default=SEED, metavar="N",
                   help=f"seed of the runs and of the static evaluation (default {SEED})")
    p.add_argument("--confidence", type=float, default=CONFIDENCE, metavar="P",
                   help=f"level of the intervals (default {CONFIDENCE:g})")
    p.add_argument("--eval-samples", type=int, default=EVAL_SAMPLES, metavar="N",
                   help=f"static out-of-sample trajectories (default {EVAL_SAMPLES})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    p.set_defaults(func=_cmd_simulate)


__all__ = ["register"]
