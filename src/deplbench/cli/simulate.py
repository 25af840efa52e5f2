"""``deplbench simulate``: an algorithm judged as it runs (closed-loop simulation)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from deplbench.cli.solvers import as_given, eval_samples_given, parse_kv, solver_used
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.settings import (
    CONFIDENCE,
    RUNS,
    SEED,
    SIMULATE_SAMPLES,
    check_closed_loop,
    check_samples,
)
from deplbench.jsonio import number_text, print_json

#: ``--eval-samples``' default: the static evaluation beside the closed loop.
EVAL_SAMPLES = SIMULATE_SAMPLES


def _check(args) -> None:
    """Refuse bad numbers before any work, naming the flag (exit 2): the limits
    every front shares (:mod:`deplbench.formulations.evaluation.settings`)."""
    check_closed_loop(args.runs, args.seed, args.confidence, field="--{}", error=SolverError)
    args.eval_samples, args.eval_flag = eval_samples_given(args.eval_samples, EVAL_SAMPLES)
    check_samples(args.eval_samples, field=args.eval_flag, error=SolverError)


def _line(name: str, s: dict | None, none: str = "(none)") -> str:
    if s is None:
        return f"{name:<14} {none}"
    lo, hi = s["p_success_ci"]
    return (f"{name:<14} P(success) {s['p_success']:.4f} [{lo:.4f}, {hi:.4f}]  cost mean "
            f"{s['cost']['mean']:.6g} (q50 {s['cost']['q50']:.6g}, q99 {s['cost']['q99']:.6g})  "
            f"epochs {s['epochs']['mean']:.2f}  ω-quantile ℓ(K) {s['loss_quantile']:.6g}")


def policy_cost_bound(result, reference: str) -> dict | None:
    """What the ``cost`` of an adaptive reference's result is; None for any other result.

    ``adaptive-opt`` (solver ``reference`` "adaptive") returns a certified closed-loop policy, no
    plan: its ``cost`` is the one-sided empirical-Bernstein upper confidence bound on that policy's
    mean cost (the adaptive bracket's upper end, :mod:`deplbench.solvers.adaptive.optimum`), not
    the cost of any plan.
    """
    if reference != "adaptive" or result.plan is not None or result.cost is None:
        return None
    diag = result.diagnostics or {}
    found = diag.get("certification")
    cert: dict = found if isinstance(found, dict) else {}
    joint = diag.get("confidence")
    each = cert.get("level_each", 1.0 - (1.0 - joint) / 2.0 if isinstance(joint, (int, float)) else None)
    return {"upper_bound": result.cost, "level": each, "joint_level": joint,
            "sample_mean": diag.get("cost_mean"),
            "method": "one-sided upper confidence bound on the mean cost of the certified closed-loop policy "
                      "(empirical Bernstein); joint_level: together with its P(success) certificate "
                      "(union bound)"}


def _bound_line(b: dict) -> str:
    level = f" at level {number_text(b['level'])}" if isinstance(b["level"], (int, float)) else ""
    joint = (f" ({number_text(b['joint_level'])} jointly with its P(success))"
             if isinstance(b["joint_level"], (int, float)) else "")
    mean = f"; sample mean {b['sample_mean']:.6g}" if isinstance(b["sample_mean"], (int, float)) else ""
    return (f"policy cost    ≤ {b['upper_bound']:.6g}: upper confidence bound on its policy's mean cost"
            f"{level}{joint}{mean}; no static plan")


def _cmd_simulate(args) -> int:
    from deplbench.instances.model import load_instance
    from deplbench.solvers.registry import get_solver
    from deplbench.solvers.run import closed_loop, solve

    _check(args)
    instance = load_instance(args.instance)
    solver = get_solver(args.algorithm)
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
                                       {**{k: f"--param {k}" for k in params}, "eval_samples": args.eval_flag,
                                        "eval_seed": "--seed"})) from None
        stages.stage(f"closed loop, {args.runs} runs")
        cl = closed_loop(instance, result, args.algorithm, runs=args.runs, seed=args.seed,
                         confidence=args.confidence)
    ev = result.evaluation or {}
    bound = policy_cost_bound(result, getattr(solver, "reference", ""))
    # "static" describes a static plan; a result without one (adaptive-opt's policy) has none, and its
    # cost, a bound on the policy's mean cost, goes under "policy_cost"
    static = None if result.plan is None else {
        "cost": result.cost, "quantile": ev.get("quantile"), "quantile_ci": ev.get("quantile_ci"),
        "quantile_ci_level": ev.get("quantile_ci_level", ev.get("confidence")),
        "quantile_ci_method": ev.get("ci_method"),
        "verdict": ev.get("verdict"), "verdict_basis": ev.get("verdict_basis"),
        "epochs": ev.get("epochs")}
    out = {"algorithm": result.algorithm, "status": result.status, "message": result.message,
           "static": static, "policy_cost": bound, "closed_loop": cl}
    if args.json:
        print_json(out)
    else:
        print(f"algorithm      {result.algorithm}" + solver_used(result))
        print(f"status         {result.status}" + (f"  ({result.message})" if result.message else ""))
        if bound is not None:
            print(_bound_line(bound))
        elif result.cost is not None and result.plan is None:
            print(f"cost           {result.cost:.6g} (no static plan: the status line says what it is)")
        elif result.cost is not None:
            print(f"static plan    cost {result.cost:.6g}")
        if ev:
            from deplbench.cli.statements import statement_lines

            print("\n".join(statement_lines(ev, width=15)))
        print(f"closed loop    {args.runs} runs, seed {args.seed}, intervals at {number_text(args.confidence)} "
              "(Clopper–Pearson, two-sided)")
        no_plan = "(none: no static plan)" if result.plan is None else "(none)"
        print(_line("plan", cl["plan"], no_plan))
        print(_line("plan stopped", cl["plan_stopped"], no_plan))
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
            "policy when it has one (pact, depl-receding, adaptive-opt). Prints P(success) with a "
            "Clopper–Pearson interval and the cost distribution, or with --json one JSON object: "
            "\"static\" describes the static plan (null when the result has none, as adaptive-opt's), "
            "\"policy_cost\" adaptive-opt's cost, an upper confidence bound on its policy's mean "
            "cost (null for every other algorithm), \"closed_loop\" the simulations.", 78),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--algorithm", "--algo", required=True, metavar="NAME", help="algorithm name")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm parameter (repeatable)")
    p.add_argument("--runs", type=int, default=RUNS, metavar="N", help=f"simulated runs (default {RUNS})")
    p.add_argument("--seed", type=int, default=SEED, metavar="N",
                   help=f"seed of the runs and of the static evaluation (default {SEED})")
    p.add_argument("--confidence", type=float, default=CONFIDENCE, metavar="P",
                   help=f"level of the intervals (default {number_text(CONFIDENCE)})")
    p.add_argument("--eval-samples", type=int, default=None, metavar="N",
                   help=f"static out-of-sample trajectories (default {EVAL_SAMPLES})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    p.set_defaults(func=_cmd_simulate)


__all__ = ["register"]
