"""``deplbench adaptive``: the adaptive optimum bracketed, with its cost–risk frontier.

Refines the loss grid until the bracket is ≤ ``--width`` (default 3 %) or
``--time-limit`` (default 300 s) is spent, with one progress line per grid
on stderr, and says which stopped it. Prints the bracket's status, the
proven lower bound and the upper confidence bound on the least expected cost
of any closed-loop policy with P(success) ≥ ω (jointly at ``--confidence``
with the certified P(success)), and the cost–risk frontier. ``--json``
prints one object with keys ``status``, ``message``, ``lower_bound``,
``upper_bound``, ``width``, ``p_success_lo``, ``frontier``, ``refinement``
(and the rest of the record). Exit status 0 when the bracket is certified
(status ``certified``), 1 for every other status (one line on stderr:
unreachable ω, a bound that is not positive, a λ search that did not
converge, a policy not certified), 2 on bad input or a grid beyond
``--memory-limit``. See :mod:`deplbench.formulations.adaptive`.
"""

from __future__ import annotations

import math
import sys

from deplbench.jsonio import print_json

#: CLI option → adaptive-opt parameter.
OPTIONS = ("buckets", "runs", "tune_runs", "seed", "confidence", "rho", "iters_lam", "iters_mu", "width",
           "max_buckets", "memory_limit", "omega", "time_points")
#: The CLI's defaults where they differ from the solver's: a target width and a time for it.
WIDTH, TIME_LIMIT = 0.03, 300.0


def _cmd_adaptive(args) -> int:
    from deplbench.errors import SolverError
    from deplbench.formulations.adaptive import START_BUCKETS, adaptive_bounds
    from deplbench.instances.model import load_instance
    from deplbench.limits import memory_budget
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt

    given = {k: getattr(args, k) for k in OPTIONS if getattr(args, k) is not None}
    if args.one_grid:
        given.pop("width", None)
    else:
        given.setdefault("width", WIDTH)
        given.setdefault("buckets", START_BUCKETS)
    tl = args.time_limit if args.time_limit is not None else TIME_LIMIT
    if not (isinstance(tl, float) and math.isfinite(tl) and tl > 0):
        raise SolverError(f"time_limit: must be positive seconds, got {tl!r}")
    p = AdaptiveOpt.resolve_params(given, strict=True, error=SolverError)
    instance = load_instance(args.instance)
    ok, why = AdaptiveOpt.applies(instance)
    if not ok:
        raise SolverError(f"instance: {why}")
    if p["omega"] is not None:
        instance = instance.with_changes(omega=p["omega"])

    quiet = bool(args.quiet)

    def progress(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    with memory_budget(p["memory_limit"]):
        b = adaptive_bounds(instance, p["buckets"], p["runs"], p["seed"], p["confidence"], p["tune_runs"],
                            p["rho"], p["iters_lam"], p["iters_mu"], width=p["width"],
                            time_limit=tl, max_buckets=p["max_buckets"],
                            progress=progress, time_points=p["time_points"])
    record = {"instance": instance.name, "omega": instance.omega, "loss_max": instance.loss_max, **b.to_dict()}
    if args.json:
        print_json(record, strict=True)
    else:
        _print_text(record)
    if b.status != "certified":
        print(f"adaptive: {b.status}: {b.message}", file=sys.stderr)
        return 1
    return 0


def _num(v, fmt: str = ".6g") -> str:
    return "none" if v is None or not math.isfinite(v) else format(v, fmt)


def _print_text(r: dict) -> None:
    print(f"instance     {r['instance']}  (ω = {r['omega']:g}, ℓmax = {r['loss_max']:g})")
    print(f"status       {r['status']}" + (f": {r['message']}" if r["message"] else ""))
    if r["status"] == "unreachable":
        return
    c = r["certification"]
    m = r["multipliers"]
    what = ("valid by weak duality but no cost estimate: the multipliers ran away (status line)"
            if r["status"] == "multipliers_ran_away" else "proven")
    print(f"LB           {_num(r['lower_bound'])}  {what} (optimistic loss grid, weak duality, less a bound "
          f"{_num(m['rounding_bound'], '.2g')} on its rounding; from the {m['lower_bound_source']} pass at "
          f"λ = {m['lambda']:.4g}, μ = {m['mu']:.4g}); deadline {m['deadline']}")
    if r["certified"]:
        print(f"UB           {_num(r['upper_bound'])}  upper confidence bound on the certified policy's mean cost "
              f"(mean {_num(r['cost_mean'])} over {c['kept_runs']} fresh runs kept of {c['runs']}; "
              f"{c['cost_method']})")
    else:
        print(f"UB           none: the policy is NOT certified, so its cost ({_num(r['uncertified_policy_cost'])}, "
              f"mean {_num(r['cost_mean'])}) bounds nothing")
    w = r["width"]
    print(f"width        {_num(None if w is None else 100 * w, '.3g')} %  (UB − LB)/LB, joint confidence "
          f"{r['confidence']:g} (union bound over the P(success) and cost statements)")
    ref = r["refinement"]
    if ref.get("width_target") is not None:
        target = 100 * ref["width_target"]
        met = w is not None and math.isfinite(w) and w <= ref["width_target"]
        grids = ", ".join(str(lv["buckets"]) for lv in ref["levels"])
        print(f"refinement   target {target:.3g} % {'met' if met else 'NOT met'}; stopped by {ref['stopped_by']} "
              f"(grids {grids})")
    verdict = "certified" if r["certified"] else "NOT certified"
    print(f"P(success)   {r['p_success']:.5f}, ≥ {r['p_success_lo']:.5f} ({c['method']}): {verdict} ≥ ω")
    g = r["grid"]
    print(f"grid         {g['buckets']} loss buckets (step {g['loss_step']:.4g}), {g['states']} states; "
          f"{r['work']['dp_passes']} DP passes, {r['work']['total_s']:.1f} s")
    print("frontier     least cost (proven lower bound, monotone in the level) against the required P(success):")
    for f in r["frontier"]:
        mark = "  ← ω" if abs(f["omega"] - r["omega"]) < 1e-12 else ""
        print(f"             P(success) ≥ {f['omega']:<8g} cost ≥ {_num(f['lower_bound'])}{mark}")


def register(subparsers) -> None:
    """Add ``adaptive`` to the ``deplbench`` command."""
    p = subparsers.add_parser(
        "adaptive", help="bracket on the optimal closed-loop policy and its cost–risk frontier",
        description="Proven lower bound and upper confidence bound on the least expected cost of any policy "
                    "that observes the loss after every epoch and succeeds with probability >= omega "
                    "(a chance-constrained MDP), and the cost-risk frontier. The loss grid is refined until "
                    "the bracket is within --width or --time-limit is spent (progress on stderr). Exit "
                    "status 0 when the bracket is certified, 1 otherwise (the status and its line on "
                    "stderr), 2 on bad input or a grid beyond --memory-limit.")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--width", type=float, help="target (UB - LB)/LB as a fraction (default 0.03 = 3 %%)")
    p.add_argument("--time-limit", dest="time_limit", type=float,
                   help="seconds for the refinement, an outer stop; an explicit --time-points whose passes "
                        "cannot fit in it is refused up front (default 300)")
    p.add_argument("--one-grid", dest="one_grid", action="store_true",
                   help="no refinement: one grid of --buckets")
    p.add_argument("--buckets", type=int, help="loss buckets between lmax and l(0) of the first grid "
                                               "(default 600)")
    p.add_argument("--max-buckets", dest="max_buckets", type=int, help="finest grid of the refinement (default 38400)")
    p.add_argument("--memory-limit", dest="memory_limit", type=float,
                   help="GiB the grid and the runs may take, estimated before allocation (default 2)")
    p.add_argument("--omega", type=float, help="target P(success) (default: the instance's)")
    p.add_argument("--runs", type=int, help="fresh runs certifying the policy (default 100000)")
    p.add_argument("--tune-runs", dest="tune_runs", type=int, help="runs per tuning simulation (default 50000)")
    p.add_argument("--seed", type=int, help="seed of the certification runs (default 0)")
    p.add_argument("--confidence", type=float, help="joint level of the bracket (default 0.95)")
    p.add_argument("--rho", type=float, help="policy: share of the remaining time planned (default 1)")
    p.add_argument("--time-points", dest="time_points", type=int,
                   help="carry the deadline on a grid of this many remaining-time points (0: price it only; "
                        "default: 256, 128 or 64 where affordable, i.e. small instances)")
    p.add_argument("--iters-lam", dest="iters_lam", type=int, help="bisection steps on λ (default 6)")
    p.add_argument("--iters-mu", dest="iters_mu", type=int, help="bisection steps on μ (default 6)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_cmd_adaptive)
