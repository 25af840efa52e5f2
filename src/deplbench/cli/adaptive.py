"""``deplbench adaptive``: the adaptive optimum bracketed, with its cost–risk frontier.

Refines the loss grid until the bracket is ≤ ``--width`` (default 3 %) or
``--time-limit`` (default 300 s; ``inf`` or ``none``: no limit, as for
``deplbench solve``) is spent, with one progress line per grid on stderr,
and says which stopped it. Prints the bracket's status, the proven lower
bound and the upper confidence bound on the least expected cost of any
closed-loop policy with P(success) ≥ ω (jointly at ``--confidence`` with the
certified P(success)), and the cost–risk frontier. ``--json`` prints one
object with keys ``status``, ``message``, ``lower_bound``, ``upper_bound``,
``width``, ``p_success_lo``, ``frontier``, ``refinement`` (and the rest of
the record).

Exit status 0 when the bracket is certified (status ``certified``); 1 for
every other status of
:data:`~deplbench.formulations.adaptive.BRACKET_STATUSES`, with its one
line on stderr (:data:`FAILURE_STATUSES`): ``unreachable`` (no policy
reaches ω), ``time_limit`` (``--time-limit`` passed before the bracket was
done: the best proven lower bound so far, no upper bound), ``multipliers_ran_away`` (ω looks out of reach but is not
proven so; the bound is no cost estimate), ``bound_not_positive``,
``lambda_not_converged`` (the bound is valid but may be loose),
``not_certified`` (the policy's P(success) ≥ ω is not certified); 2 on bad
input, a grid beyond ``--memory-limit``, or options that contradict each
other (``--one-grid`` with ``--width`` or ``--max-buckets``; ``--max-buckets``
below ``--buckets``), one line naming them. See
:mod:`deplbench.formulations.adaptive`.
"""

from __future__ import annotations

import math
import sys

from deplbench.formulations.adaptive.settings import (
    CLI_THREADS,
    CLI_TIME_LIMIT,
    CLI_WIDTH,
    MAX_BUCKETS,
    SETTINGS,
    START_BUCKETS,
    refinement_refused,
)
from deplbench.jsonio import number_beside, number_text, print_json

#: CLI option → adaptive-opt parameter.
OPTIONS = ("buckets", "runs", "tune_runs", "seed", "confidence", "rho", "iters_lam", "iters_mu", "width",
           "max_buckets", "memory_limit", "omega", "time_points", "slopes", "threads")
#: The CLI's defaults where they deliberately differ from the solver's: a target width and a
#: time for it (:data:`~deplbench.formulations.adaptive.settings.CLI_WIDTH`, ``CLI_TIME_LIMIT``).
WIDTH, TIME_LIMIT = CLI_WIDTH, CLI_TIME_LIMIT
#: The bracket's statuses that end the command with exit status 1 and their line on stderr:
#: every status of :data:`deplbench.formulations.adaptive.BRACKET_STATUSES` but
#: ``certified`` (kept here so that ``--help`` imports no numerical library; a test
#: checks the two lists agree).
FAILURE_STATUSES = ("unreachable", "time_limit", "multipliers_ran_away", "bound_not_positive", "lambda_not_converged",
                    "not_certified")


def refuse_conflicts(args) -> None:
    """Options that contradict each other: one line naming both (exit status 2).

    ``--one-grid`` runs no refinement, so a target ``--width`` or a finest grid
    ``--max-buckets`` would be silently ignored. (A ``--max-buckets`` below the
    first grid is the solver's own check:
    :func:`~deplbench.formulations.adaptive.settings.refinement_refused`.)

    Raises
    ------
    SolverError
    """
    from deplbench.errors import SolverError

    if args.one_grid:
        for name, opt in (("width", "--width"), ("max_buckets", "--max-buckets")):
            if getattr(args, name) is not None:
                raise SolverError(f"--one-grid and {opt} contradict each other: --one-grid runs one grid of "
                                  f"--buckets with no refinement, so {opt} would be ignored; drop one of them")


def resolve_options(args) -> dict:
    """The options as ``adaptive-opt``'s resolved parameters: every value checked once, by the
    solver's own table (:data:`~deplbench.formulations.adaptive.settings.SETTINGS`), a refusal
    naming the option (``--time-limit -1: must be > 0.0, got -1.0``; a number in its shortest form,
    ``--width 0``). A ``--max-buckets`` below the first grid is the solver's rule
    (:func:`~deplbench.formulations.adaptive.settings.refinement_refused`), said with the options
    that set both grids.

    ``--time-limit`` is read as ``solve --time-limit`` reads it (the solver's ``refine_time``:
    ``inf`` or ``none`` for no limit); absent, it is :data:`TIME_LIMIT`. Without ``--one-grid``
    the refinement's defaults are filled in: ``--width`` :data:`WIDTH`, ``--buckets``
    :data:`~deplbench.formulations.adaptive.settings.START_BUCKETS`, and a finest grid never
    below the first.

    Raises
    ------
    SolverError
        One line naming the option (exit status 2).
    """
    from deplbench.cli.solvers import as_given
    from deplbench.errors import SolverError
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt

    refuse_conflicts(args)
    given = {k: getattr(args, k) for k in OPTIONS if getattr(args, k) is not None}
    flags = {k: "--" + k.replace("_", "-") for k in given}
    given["refine_time"] = TIME_LIMIT if args.time_limit is None else args.time_limit
    flags["refine_time"] = "--time-limit" if args.time_limit is not None else f"--time-limit (default {TIME_LIMIT:g})"
    if not args.one_grid:
        given.setdefault("width", WIDTH)
        given.setdefault("buckets", START_BUCKETS)
        # the default finest grid is never below the first one asked for
        given.setdefault("max_buckets", max(MAX_BUCKETS, given["buckets"]))
    if not args.one_grid:
        reason = refinement_refused(given["buckets"], given["max_buckets"], given["width"])
        if reason:
            first = "--buckets" if args.buckets is not None else f"--buckets (default {START_BUCKETS})"
            if args.width is None:      # a default the user did not type is named as one
                w = f"{given['width']:g}"
                reason = reason.replace(f"width = {w}", f"--width {w} (the default)")
            raise SolverError(bracket_refusal(f"--max-buckets {given['max_buckets']}: {reason}; give "
                                              f"--max-buckets ≥ {first}", given))
    try:
        return AdaptiveOpt.resolve_params(given, error=SolverError)
    except SolverError as exc:
        raise SolverError(as_given(str(exc), given, flags)) from None


#: ``adaptive_bounds``' argument names → this command's options, for the refusals it makes
#: once the instance is read (an explicit ``--time-points`` that cannot fit in ``--time-limit``,
#: a grid beyond ``--memory-limit``).
BRACKET_FLAGS = {"time_limit": "--time-limit", "time_points": "--time-points", "buckets": "--buckets",
                 "runs": "--runs", "tune_runs": "--tune-runs", "max_buckets": "--max-buckets"}


def bracket_refusal(message: str, p: dict) -> str:
    """A refusal of the bracket's own, naming this command's options: ``time_points: ...``
    becomes ``--time-points: ...``, "parameter memory_limit raises it" "--memory-limit raises it" and
    "beyond time_limit = 1.5 s" "beyond --time-limit 1.5 s"
    (``p``: the resolved options, for a value the message names)."""
    from deplbench.cli.solvers import as_given

    message = message.replace("parameter memory_limit raises it", "--memory-limit raises it")
    # the settings a message quotes mid-sentence, named as this command's options
    message = message.replace("beyond time_limit = ", "beyond --time-limit ")
    message = message.replace("refinement to width = ", "refinement to --width ")
    values = {name: p.get("refine_time" if name == "time_limit" else name) for name in BRACKET_FLAGS}
    return as_given(message, values, BRACKET_FLAGS)


def _cmd_adaptive(args) -> int:
    from deplbench.errors import PlanError, SolverError
    from deplbench.instances.model import load_instance
    from deplbench.limits import memory_budget
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt, bracket

    p = resolve_options(args)
    instance = load_instance(args.instance)
    ok, why = AdaptiveOpt.applies(instance)
    if not ok:
        raise SolverError(f"instance: {why}")

    quiet = bool(args.quiet)

    def progress(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        with memory_budget(p["memory_limit"]):
            instance, b = bracket(instance, p, progress)
    except (SolverError, PlanError) as exc:
        raise SolverError(bracket_refusal(str(exc), p)) from None
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
    print(f"instance     {r['instance']}  (ω = {number_text(r['omega'])}, ℓmax = {number_text(r['loss_max'])})")
    print(f"status       {r['status']}" + (f": {r['message']}" if r["message"] else ""))
    if r["status"] == "unreachable":
        return
    m = r["multipliers"]
    if r["status"] == "time_limit":
        if m:
            print(f"LB           {_num(r['lower_bound'])}  proven (the best DP pass finished, from the "
                  f"{m['lower_bound_source']} pass at λ = {m['lambda']:.4g}, μ = {m['mu']:.4g})")
        print("UB           none: no policy was certified before the time limit")
        g, on = r["grid"], r["refinement"].get("stopped_on_grid")
        if g:
            print(f"grid         the bound's: {g['buckets']} loss buckets (step {g['loss_step']:.4g})"
                  + (f", {g['time_points']} time points" if g.get("time_points") else ""))
        if on:
            print(f"stopped on   {on['buckets']} loss buckets (step {on['loss_step']:.4g}); "
                  f"{r['work']['dp_passes']} DP passes finished, {r['work']['total_s']:.1f} s")
        _print_refinement(r, None)
        return
    c = r["certification"]
    what = ("valid by weak duality but no cost estimate: the multipliers ran away (status line)"
            if r["status"] == "multipliers_ran_away" else "proven")
    print(f"LB           {_num(r['lower_bound'])}  {what} (optimistic loss grid, weak duality, less a bound "
          f"{_num(m['rounding_bound'], '.2g')} on its rounding; from the {m['lower_bound_source']} pass at "
          f"λ = {m['lambda']:.4g}, μ = {m['mu']:.4g}); deadline {m['deadline']}")
    if r["certified"]:
        print(f"UB           {_num(r['upper_bound'])}  upper confidence bound on the certified policy's mean cost "
              f"(the mix's mean {_num(r['cost_mean'])}: (1 − give_up) × the mean of {c['runs']} fresh runs; "
              f"{c['cost_method']})")
    else:
        print(f"UB           none: the policy is NOT certified, so its cost ({_num(r['uncertified_policy_cost'])}, "
              f"mean {_num(r['cost_mean'])}) bounds nothing")
    w = r["width"]
    print(f"width        {_num(None if w is None else 100 * w, '.3g')} %  (UB − LB)/LB, joint confidence "
          f"{number_text(r['confidence'])} (union bound over the P(success) and cost statements)")
    _print_refinement(r, w)
    verdict = "certified" if r["certified"] else "NOT certified"
    print(f"P(success)   {r['p_success']:.5f}, ≥ {number_beside(r['p_success_lo'], r['omega'], 5, 1.0)} "
          f"({c['method']}): {verdict} ≥ ω")
    g = r["grid"]
    print(f"grid         {g['buckets']} loss buckets (step {g['loss_step']:.4g}), {g['states']} states; "
          f"{r['work']['dp_passes']} DP passes, {r['work']['total_s']:.1f} s")
    print("frontier     least cost (proven lower bound, monotone in the level) against the required P(success):")
    for f in r["frontier"]:
        mark = "  ← ω" if abs(f["omega"] - r["omega"]) < 1e-12 else ""
        print(f"             P(success) ≥ {f['omega']:<8g} cost ≥ {_num(f['lower_bound'])}{mark}")


#: ``refinement.stopped_by`` in words, where its name alone would not say it.
STOPS = {"policy": "the policy (a finer grid's tuning gained nothing)"}


def _print_refinement(r: dict, w: float | None) -> None:
    ref = r["refinement"]
    if ref.get("width_target") is not None:
        target = 100 * ref["width_target"]
        met = w is not None and math.isfinite(w) and w <= ref["width_target"]
        grids = ", ".join(str(lv["buckets"]) for lv in ref["levels"]) or "none finished"
        finer = ", ".join(str(x["buckets"]) + ("" if x["finished"] else " stopped by the time limit")
                          for x in ref.get("bound_only") or [])
        why = STOPS.get(ref["stopped_by"], ref["stopped_by"])
        print(f"refinement   target {target:.3g} % {'met' if met else 'NOT met'}; stopped by {why} "
              f"(grids {grids})" + (f"; then the lower bound alone on {finer}" if finer else ""))


def register(subparsers) -> None:
    """Add ``adaptive`` to the ``deplbench`` command."""
    p = subparsers.add_parser(
        "adaptive", help="bracket on the optimal closed-loop policy and its cost–risk frontier",
        description="Proven lower bound and upper confidence bound on the least expected cost of any policy "
                    "that observes the loss after every epoch and succeeds with probability >= omega "
                    "(a chance-constrained MDP), and the cost-risk frontier. The loss grid is refined until "
                    "the bracket is within --width or --time-limit is spent (progress on stderr). Exit "
                    "status 0 when the bracket is certified; 1 for every other status ("
                    + ", ".join(FAILURE_STATUSES) + "), with its line on stderr; 2 on bad input, a grid "
                    "beyond --memory-limit, or contradicting options (--one-grid with --width or "
                    "--max-buckets; --max-buckets below --buckets).")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--width", type=float, help=f"target (UB - LB)/LB as a fraction (default {CLI_WIDTH:g} = "
                                               f"{100 * CLI_WIDTH:g} %%); not with --one-grid")
    p.add_argument("--time-limit", dest="time_limit", metavar="SEC",
                   help="seconds for the whole bracket, an outer stop (status time_limit with the best proven "
                        "bound so far); the refinement plans its grids by it; an explicit --time-points whose passes "
                        f"cannot fit in it is refused up front (default {CLI_TIME_LIMIT:g}; inf or none: no limit)")
    p.add_argument("--one-grid", dest="one_grid", action="store_true",
                   help="no refinement: one grid of --buckets (refused with --width or --max-buckets)")
    p.add_argument("--buckets", type=int, help="loss buckets between lmax and l(0) of the first grid "
                                               f"(default {START_BUCKETS})")
    p.add_argument("--max-buckets", dest="max_buckets", type=int,
                   help=f"finest grid of the refinement, at least --buckets (default {MAX_BUCKETS}, or --buckets "
                        "when larger); not with --one-grid")
    p.add_argument("--memory-limit", dest="memory_limit", type=float,
                   help="GiB the grid and the runs may take, estimated before allocation (default 2)")
    p.add_argument("--omega", type=float, help="target P(success) (default: the instance's)")
    p.add_argument("--runs", type=int, default=SETTINGS["runs"].default,
                   help="fresh runs certifying the policy (default %(default)s)")
    p.add_argument("--tune-runs", dest="tune_runs", type=int, default=SETTINGS["tune_runs"].default,
                   help="runs per tuning simulation (default %(default)s)")
    p.add_argument("--seed", type=int, default=SETTINGS["seed"].default,
                   help="seed of the certification runs (default %(default)s)")
    p.add_argument("--confidence", type=float, default=SETTINGS["confidence"].default,
                   help="joint level of the bracket (default %(default)s)")
    p.add_argument("--rho", type=float, default=SETTINGS["rho"].default,
                   help="policy: share of the remaining time planned (default %(default)g)")
    p.add_argument("--time-points", dest="time_points", type=int,
                   help="carry the deadline on a grid of this many remaining-time points (0: no time grid; "
                        "default: the finest of 256, 128, 64 whose pass on the first grid costs <= 2.5e8 "
                        "multiply-adds and fits --time-limit, kept on finer grids, e.g. 2 models and 2 clusters "
                        "at K = 6; else 0, as on the realistic families; docs/adaptive.md)")
    p.add_argument("--slopes", type=int, default=SETTINGS["slopes"].default,
                   help="slopes of the water-filling lower bound, which carries the deadline exactly on every run "
                        "(capacity relaxed); the bound is the larger of it and the others (0: not computed; "
                        "default %(default)s; docs/adaptive.md)")
    p.add_argument("--threads", type=int, default=CLI_THREADS,
                   help="threads of the water-filling pass on grids of >= 2048 loss cells (0: one per core "
                        "available, the default here; adaptive-opt's default in a sweep is 1); a pass is the "
                        "same, bit for bit, for any number (a bracket too on the same grids; under --time-limit "
                        "the grids reached depend on wall time)")
    # What the two numbers control (formulations/adaptive: search.py's BRACKET_STEPS, LAM_RTOL and
    # COARSE, bracket.py's warm starts): any multiplier gives a valid bound, the steps only tighten it.
    p.add_argument("--iters-lam", dest="iters_lam", type=int, metavar="N", default=SETTINGS["iters_lam"].default,
                   help="steps of the time-price (lambda) search once E[T] - Tmax has changed sign; before "
                        "that, up to 40 more steps look for the sign change, and the search stops early once "
                        "E[T] is within 0.1 %% of Tmax. 0: no step after the sign change. On a first grid of "
                        ">= 400 buckets the N steps run on a grid of 1/8 the buckets, then 2 warm-started "
                        "steps on the grid itself; every later grid of the refinement takes 2 warm-started "
                        "steps, and a fresh search of N steps only when those do not converge (default %(default)s)")
    p.add_argument("--iters-mu", dest="iters_mu", type=int, metavar="N", default=SETTINGS["iters_mu"].default,
                   help="cutting-plane steps on the failure price mu at each lambda, at least 1 (0 acts as "
                        "1), after mu has been grown until P(fail) <= 1 - omega; the steps stop early when "
                        "the cuts meet. Warm-started searches take max(2, N - 2) steps, the carried-deadline "
                        "search N + 2 (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_cmd_adaptive)
