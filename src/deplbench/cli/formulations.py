"""``deplbench evaluate``: judge a plan on an instance, out of sample.

Usage::

    deplbench evaluate INSTANCE PLAN [--samples N] [--seed N] [--confidence C]
                       [--exact] [--json] [--check]

``PLAN`` is a plan JSON (``{"epochs": [...], "datasets": {...}}``) or a solver
result holding one under ``"plan"``. The evaluation is
:func:`deplbench.formulations.evaluation.evaluate.evaluate_plan`: cost (2), constraints
(4)–(6) exactly, the ω-quantile of ℓ(K) from fresh trajectories with an
order-statistics confidence interval (3). ``--exact`` adds rigorous bounds
on P(ℓ(K) > ℓmax) and on the quantile computed with no sampling
(:mod:`deplbench.formulations.evaluation.exact_violation`) and the deterministic verdict
``proven feasible`` / ``proven infeasible`` / ``undecided at this precision``;
with ``--json`` the object has the keys ``violation_lo``, ``violation_hi``,
``quantile_lo``, ``quantile_hi``, ``verdict`` (the exact one), ``reason``
and ``evaluation`` (the Monte-Carlo evaluation, the independent cross-check).

Every statement is printed with what it is: the quantile as a Monte Carlo
estimate with its draws, its interval with level and method, the Monte
Carlo verdict as an estimate, the Clopper–Pearson certificate with its
level, and the final ``verdict``, which follows the exact verdict wherever
it decides (``verdict_basis``; docs/certify.md).

Exit status: 0 when the plan was evaluated (whatever the verdict), 1 with
``--check`` when the plan is not feasible, 2 for bad input.
"""

from __future__ import annotations

import argparse

from deplbench.formulations.evaluation.settings import EVALUATE_SAMPLES
from deplbench.jsonio import number_text, print_json


def register(subparsers) -> None:
    """Add the ``evaluate`` sub-command to the deplbench CLI."""
    p = subparsers.add_parser(
        "evaluate",
        help="evaluate a plan: cost, constraints, out-of-sample loss quantile with a CI",
        description="Evaluate a plan against an instance: objective (2), constraints (4)-(6) exactly, "
                    "and the ω-quantile of the final loss (3) from fresh Monte-Carlo trajectories.",
    )
    p.add_argument("instance", metavar="INSTANCE", help="instance JSON file")
    p.add_argument("plan", metavar="PLAN", help="plan JSON file (or a solver result with a 'plan' key)")
    p.add_argument("--samples", type=int, default=EVALUATE_SAMPLES, help=f"trajectories (default {EVALUATE_SAMPLES})")
    p.add_argument("--seed", type=int, default=0, help="seed of the out-of-sample stream (default 0)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="level of the two-sided quantile interval and of each one-sided Clopper-Pearson bound "
                        "on P(loss > lmax) (default 0.95)")
    p.add_argument("--exact", action="store_true",
                   help="also bound P(loss > lmax) and the quantile rigorously, with no sampling, and give the "
                        "verdict proven feasible / proven infeasible / undecided at this precision")
    p.add_argument("--json", action="store_true", help="print the evaluation as one JSON object")
    p.add_argument("--check", action="store_true", help="exit 1 unless the plan is feasible")
    p.set_defaults(func=run_evaluate)


def _summary(ev, cross_check: bool = False) -> str:
    """The evaluation in words; each statement says what it is (an estimate,
    a certificate at a level, a proof). ``cross_check``: the Monte Carlo part
    only, the exact bounds and the final verdict being printed around it."""
    from deplbench.cli.statements import statement_lines

    lines = [
        f"cost           {ev.cost:.6g}  (compute {ev.compute_cost:.6g}, transfer {ev.transfer_cost:.6g})",
        f"time           {ev.time:.6g}",
        f"epochs         {ev.epochs}  " + ", ".join(f"{m}: {n}" for m, n in ev.epochs_per_model.items()),
        ("expected loss  " + (f"{ev.expected_loss:.6g}  (Monte Carlo mean of ℓ(K), an estimate)"
                              if ev.expected_loss is not None else f"{ev.expected_loss_note} (no estimate)")),
    ]
    statements = statement_lines(ev, width=15)
    lines[3:3] = _without_dropped(statements, ("exact", "verdict")) if cross_check else statements
    if not cross_check:
        lines += _tail(ev)
    return "\n".join(lines)


def _without_dropped(lines: list[str], labels: tuple[str, ...]) -> list[str]:
    """``lines`` without the labelled paragraphs of ``labels`` (and their continuation lines)."""
    out, keep = [], True
    for line in lines:
        if not line.startswith(" "):
            keep = line.split(" ", 1)[0] not in labels
        if keep:
            out.append(line)
    return out


def _tail(ev) -> list[str]:
    lines = []
    if ev.violations:
        lines.append("violations:")
        lines += [f"  - {v}" for v in ev.violations]
    lines.append(f"feasible       {'yes' if ev.feasible else 'no'}")
    return lines


EXACT_VERDICTS = {"undecided": "undecided at this precision"}


def _print_exact(ev, args) -> int:
    """``--exact`` output: the rigorous bounds first, Monte Carlo beside them."""
    verdict = None if ev.exact_verdict is None else EXACT_VERDICTS.get(ev.exact_verdict, ev.exact_verdict)
    if args.json:
        print_json({"violation_lo": ev.violation_lo, "violation_hi": ev.violation_hi,
                    "quantile_lo": ev.quantile_lo, "quantile_hi": ev.quantile_hi, "verdict": verdict,
                    "reason": ev.exact_reason, "budget_exhausted": ev.exact_budget_exhausted,
                    "target_width": ev.exact_target_width, "risk": 1.0 - ev.omega, "evaluation": ev.to_dict()},
                   strict=True)
    else:
        if ev.exact_verdict is None:
            print(f"exact bounds   not computed: {ev.exact_reason}")
        else:
            print(f"violation      P(ℓ(K) > {ev.loss_max:.6g}) ∈ [{ev.violation_lo:.6g}, {ev.violation_hi:.6g}]"
                  f"  (1 − ω = {1.0 - ev.omega:.6g})")
            print(f"quantile       ℓ_{number_text(ev.omega)}(K) ∈ [{ev.quantile_lo:.6g}, {ev.quantile_hi:.6g}]")
            print(f"exact verdict  {verdict}" + (f" ({ev.exact_reason})" if ev.exact_reason else ""))
        print("monte carlo (cross-check; estimates, and certificates at their level):")
        print("\n".join("  " + line for line in _summary(ev, cross_check=True).splitlines()))
        from deplbench.cli.statements import statement_lines

        print("\n".join(_without_dropped(statement_lines(ev, width=15),
                                         ("quantile", "interval", "estimate", "certified", "exact"))))
        print("\n".join(_tail(ev)))
    return 1 if (args.check and ev.exact_verdict != "proven feasible") else 0


def run_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``deplbench evaluate``.

    Raises
    ------
    DeplbenchError
        Unreadable/invalid instance or plan, a plan naming unknown models,
        clusters or datasets, or ``--samples``/``--confidence`` out of range.
    """
    from deplbench.errors import PlanError
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from deplbench.formulations.model.plan import load_plan
    from deplbench.instances.model import load_instance

    instance = load_instance(args.instance)
    plan = load_plan(args.plan)
    try:
        ev = evaluate_plan(instance, plan, samples=args.samples, seed=args.seed, confidence=args.confidence,
                           exact=args.exact)
    except PlanError as exc:
        msg = str(exc)
        if msg.startswith(("epochs", "datasets")):
            # A name the instance lacks is the plan file's fault: say which file.
            msg = f"{args.plan}: {msg}"
        elif msg.startswith(("samples: ", "seed: ", "confidence: ")):
            msg = f"--{msg}"          # the options, named as typed
        raise PlanError(msg) from None
    if args.exact:
        return _print_exact(ev, args)
    if args.json:
        # Strict JSON: a non-finite number (e.g. the time of a plan with a
        # zero allocation) becomes null rather than the invalid token Infinity.
        print_json(ev.to_dict(), strict=True)
    else:
        print(_summary(ev))
    return 1 if (args.check and not ev.feasible) else 0


__all__ = ["register", "run_evaluate"]
