"""``deplbench adaptive``: the adaptive optimum bracketed, with its cost–risk frontier.

Prints the proven lower bound and the certified upper bound on the least
expected cost of any closed-loop policy with P(success) ≥ ω, the certified
policy's P(success) with its one-sided Clopper–Pearson bound, and the
cost–risk frontier (proven lower bound at ω and a few levels around it).
``--json`` prints one object with keys ``lower_bound``, ``upper_bound``,
``p_success_lo``, ``frontier`` (and the rest of the record). See
:mod:`deplbench.formulations.adaptive`.
"""

from __future__ import annotations

from deplbench.jsonio import print_json

#: CLI option → adaptive-opt parameter.
OPTIONS = ("buckets", "runs", "tune_runs", "seed", "confidence", "rho", "iters_lam", "iters_mu")


def _cmd_adaptive(args) -> int:
    from deplbench.errors import SolverError
    from deplbench.formulations.adaptive import adaptive_bounds
    from deplbench.instances.model import load_instance
    from deplbench.solvers.adaptive_opt import AdaptiveOpt

    given = {k: getattr(args, k) for k in OPTIONS if getattr(args, k) is not None}
    p = AdaptiveOpt.resolve_params(given, strict=True, error=SolverError)
    instance = load_instance(args.instance)
    ok, why = AdaptiveOpt.applies(instance)
    if not ok:
        raise SolverError(f"instance: {why}")
    from deplbench.cli.progress import Stages, native_output_held, progress_wanted
    from deplbench.formulations.adaptive.certify import STAGES

    show = progress_wanted(args)
    with native_output_held(show) as stream, Stages(show, "adaptive", list(STAGES), stream) as bar:
        b = adaptive_bounds(instance, p["buckets"], p["runs"], p["seed"], p["confidence"], p["tune_runs"],
                            p["rho"], p["iters_lam"], p["iters_mu"], stage=bar.stage)
    record = {"instance": instance.name, "omega": instance.omega, "loss_max": instance.loss_max, **b.to_dict()}
    if args.json:
        print_json(record, strict=True)
    else:
        _print_text(record)
    return 0 if b.certified else 1


def _print_text(r: dict) -> None:
    c = r["certification"]
    print(f"instance     {r['instance']}  (ω = {r['omega']:g}, ℓmax = {r['loss_max']:g})")
    print(f"LB           {r['lower_bound']:.6g}  proven (optimistic loss grid, weak duality; "
          f"λ = {r['multipliers']['lambda']:.4g}, μ = {r['multipliers']['mu']:.4g})")
    lo, hi = r["upper_bound_ci"]
    print(f"UB           {r['upper_bound']:.6g}  mean cost of the certified policy over {c['runs']} fresh runs "
          f"[{lo:.6g}, {hi:.6g}] ({c['cost_ci_method']})")
    print(f"width        {100 * r['width']:.3g} %  (UB − LB)/LB")
    verdict = "certified" if r["certified"] else "NOT certified"
    print(f"P(success)   {r['p_success']:.5f}, ≥ {r['p_success_lo']:.5f} ({c['method']}): {verdict} ≥ ω")
    g = r["grid"]
    print(f"grid         {g['buckets']} loss buckets (step {g['loss_step']:.4g}), {g['states']} states; "
          f"{r['work']['dp_passes']} DP passes, {r['work']['total_s']:.1f} s")
    print("frontier     least cost (proven lower bound) against the required P(success):")
    for f in r["frontier"]:
        mark = "  ← ω" if abs(f["omega"] - r["omega"]) < 1e-12 else ""
        print(f"             P(success) ≥ {f['omega']:<8g} cost ≥ {f['lower_bound']:.6g}{mark}")


def register(subparsers) -> None:
    """Add ``adaptive`` to the ``deplbench`` command."""
    p = subparsers.add_parser(
        "adaptive", help="bracket on the optimal closed-loop policy and its cost–risk frontier",
        description="Proven lower bound and certified upper bound on the least expected cost of any policy "
                    "that observes the loss after every epoch and succeeds with probability >= omega "
                    "(a chance-constrained MDP), and the cost-risk frontier. Exit status 1 when the "
                    "policy's P(success) >= omega is not certified.")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--buckets", type=int, help="loss buckets between lmax and l(0) (default 600)")
    p.add_argument("--runs", type=int, help="fresh runs certifying the policy (default 100000)")
    p.add_argument("--tune-runs", dest="tune_runs", type=int, help="runs per tuning simulation (default 50000)")
    p.add_argument("--seed", type=int, help="seed of the certification runs (default 0)")
    p.add_argument("--confidence", type=float, help="level of the bounds (default 0.95)")
    p.add_argument("--rho", type=float, help="policy: share of the remaining time planned (default 1)")
    p.add_argument("--iters-lam", dest="iters_lam", type=int, help="bisection steps on λ (default 6)")
    p.add_argument("--iters-mu", dest="iters_mu", type=int, help="bisection steps on μ (default 6)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    p.set_defaults(func=_cmd_adaptive)
