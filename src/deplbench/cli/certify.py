"""``deplbench certify``: a certified bracket on the chance-constrained optimum.

Prints LB (statistical lower bound from M SAA replications), UB (the cheapest
plan whose violation probability is certified ≤ 1 − ω by Clopper–Pearson on
N′ fresh draws), the relative width, the confidence and method of each, and
the UB plan; ``--json`` prints the whole record as one JSON object. See
``deplbench.solvers.certify.certified`` and docs/certify.md.
"""

from __future__ import annotations

from deplbench.cli.messages import output_path
from deplbench.errors import SolverError
from deplbench.jsonio import number_text, print_json, write_json
from deplbench.limits import MAX_WORKERS, deadline


def _counting(inner, bar, sequential: bool):
    """``inner`` (a certify ``map``) counting its tasks (SAA solves,
    validations) on ``bar``: one by one when run in this process, by batch
    on a pool (the pool's function must stay picklable)."""
    def run(fn, tasks):
        tasks = list(tasks)
        bar.total = (bar.total or 0) + len(tasks)
        bar.refresh()
        if not sequential:
            out = inner(fn, tasks)
            bar.update(len(tasks))
            return out
        out = []
        for task in tasks:
            out.append(fn(task))
            bar.update(1)
        return out
    return run


def _check_output(path: str, instance: str) -> None:
    """Refuse ``-o`` before any solve when it cannot be written (a bracket takes
    minutes): the instance file itself (the bracket's JSON would replace it), or
    a file :func:`~deplbench.files.unwritable` finds no way to write (a folder, a
    missing folder, /proc, a named pipe no one reads, where the write would wait
    forever after the bracket)."""
    from deplbench.files import refuse_overwrite, require_writable

    refuse_overwrite(path, [instance], "-o", SolverError)
    require_writable(path, "-o", SolverError)


def _check_scenario_memory(instance, settings) -> None:
    """``--scenarios``: every stage-1 SAA solve would end with status ``error`` for its
    memory estimate on this instance (and the bracket with none): refused up front,
    as ``--validation`` is above its cap (exit status 2)."""
    from deplbench.formulations.milp.solve import scenario_memory_problem

    why = scenario_memory_problem(instance, settings.scenarios)
    if why:
        raise SolverError(f"--scenarios: every SAA solve would fail: {why}")


def _cmd_certify(args) -> int:
    from deplbench.cli.progress import counter, native_output_held, progress_wanted
    from deplbench.instances.model import load_instance
    from deplbench.solvers.certify.certified import (
        MilpCertified,
        candidate_names_refused,
        candidate_plans,
        certify,
        parse_risk_grid,
        process_map,
    )
    from deplbench.solvers.certify.settings import CertifySettings

    if args.output:
        _check_output(args.output, args.instance)
    instance = load_instance(args.instance)
    applies, why = MilpCertified.applies(instance)
    if not applies:    # every SAA solve would fail on it: no bracket, and an LB of no replication
        raise SolverError(f"{args.instance}: {why}; the bracket's SAA solves are this MILP")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise SolverError(f"--workers: must be in [1, {MAX_WORKERS}], got {args.workers}")
    refused = candidate_names_refused(args.with_algorithms or "")
    if refused:
        raise SolverError(f"--with {args.with_algorithms}: {refused}")
    show = progress_wanted(args)
    with native_output_held(show) as stream:
        bar = counter(show, "certify", unit="task", stream=stream)
        try:
            # every setting checked before any solve (the candidates' algorithms included)
            options = dict(
                confidence=args.confidence, replications=args.replications, scenarios=args.scenarios,
                validation=args.validation, risk_grid=parse_risk_grid(args.risk_grid), time_limit=args.time_limit,
                seed=args.seed, grid_seeds=args.grid_seeds, target_width=args.target_width,
                refine_share=args.refine_share, refine_replications=args.refine_replications,
                refine_scenarios=args.refine_scenarios, refine_validation=args.refine_validation,
                refine_candidates=args.refine_candidates, total_time_limit=args.total_time_limit)
            try:
                settings = CertifySettings.from_options(**options)
            except SolverError as exc:          # named as typed: --seed -1, not parameter 'seed'
                from deplbench.cli.solvers import as_given

                flags = {k: "--" + k.replace("_", "-") for k in options}
                typed = {**options, "risk_grid": args.risk_grid}
                raise SolverError(as_given(str(exc), typed, flags)) from None
            _check_scenario_memory(instance, settings)
            # --total-time-limit bounds the whole command, the --with candidates' solves included, as
            # solve(..., "milp-certified") bounds them (its clock): a candidate the deadline stops
            # contributes no plan, and certify gets what time is left
            with deadline(settings.total_time_limit):
                extra, failed = candidate_plans(instance, args.with_algorithms or "")
                bracket = certify(instance, settings, candidates=extra,
                                  map=_counting(process_map(args.workers), bar, args.workers == 1))
        finally:
            bar.close()
    if failed:
        bracket["candidate_failures"] = failed
    if args.output:
        write_json(args.output, bracket)
    if args.json:
        print_json(bracket, strict=True)
    else:
        _print_text(bracket)
    return 0 if bracket["status"] == "bracket" else 1


def _print_text(b: dict) -> None:
    lo, up = b["lower_bound"], b["upper_bound"]
    print(f"instance    {b['instance']}  (ω = {number_text(b['omega'])}, ℓmax = {number_text(b['loss_max'])})")
    print(f"status      {b['status']}: {b['message']}")
    if lo["value"] is not None:
        print(f"LB          {lo['value']:.6g}  at confidence {number_text(lo['confidence'])}  [{lo['method']}]")
    else:
        print(f"LB          none  [{lo['method']}]")
    if up is not None:
        print(f"UB          {up['value']:.6g}  at confidence {number_text(up['confidence'])}  [{up['method']}]")
        print(f"            plan from {up['source']}: {up['violation_count']} of {up['draws']} draws "
              f"exceed ℓmax, violation ≤ {up['violation_ub']:.5g} (≤ 1 − ω = {number_text(b['risk'])})")
    else:
        print("UB          none (no candidate plan certified feasible)")
    if b["width"] is not None:
        print(f"width       {100 * b['width']:.3g} %  (UB − LB)/UB, "
              f"bracket confidence ≥ {number_text(b['confidence'])}")
    for st in b.get("stages", []):
        if st["stage"] == 1:
            w = "none" if st["width"] is None else f"{100 * st['width']:.3g} %"
            print(f"stage 1     width {w}  (β_L1 = {number_text(st['beta_lower'])}, "
                  f"β_U1 = {number_text(st['beta_upper'])}, {st['tests']} tests)")
        elif st.get("ran"):
            w = "none" if st.get("width") is None else f"{100 * st['width']:.3g} %"
            print(f"stage 2     ran ({st['reason']}): M₂ = {st['replications']} at S₂ = {st['scenarios']}, "
                  f"{st['tests']} tests on N'₂ = {st['validation']} draws; width {w}  "
                  f"(β_L2 = {number_text(st['beta_lower'])}, β_U2 = {number_text(st['beta_upper'])})")
        else:
            print(f"stage 2     not run ({st['reason']}); its β share (β_L2 = {number_text(st['beta_lower'])}, "
                  f"β_U2 = {number_text(st['beta_upper'])}) stays unused")
    saa = [c for c in b["saa_optima"] if c is not None]
    if saa:
        print(f"SAA optima  {len(saa)} replications, min {min(saa):.6g}, max {max(saa):.6g} "
              "(optimal for their own scenarios only)")
    saa2 = [c for c in b.get("saa_optima_stage2", []) if c is not None]
    if saa2:
        print(f"            stage 2: {len(saa2)} replications, min {min(saa2):.6g}, max {max(saa2):.6g}")
    rt = b["runtime_s"]
    print(f"runtime     {rt['total']:.1f} s (SAA solves {rt['saa_solves_wall']:.1f} s wall, "
          f"validation {rt['validation']:.1f} s; {rt['cpu']:.1f} CPU s in all)")
    if up is not None:
        models = [e["model"] for e in up["plan"]["epochs"]]
        runs: list[list] = []
        prev = None
        for m in models:
            if m == prev:
                runs[-1][1] += 1
            else:
                runs.append([m, 1])
            prev = m
        print(f"UB plan     {len(models)} epochs: " + ", ".join(f"{m} ×{n}" for m, n in runs))
    for name, why in (b.get("candidate_failures") or {}).items():
        print(f"note        candidate algorithm {name} gave no plan ({why})")


def register(subparsers) -> None:
    """Add ``certify`` to the ``deplbench`` command."""
    # the settings module, not solvers.certified: --help must not import scipy
    from deplbench.solvers.certify.settings import (
        DEFAULT_CONFIDENCE,
        DEFAULT_GRID_SEEDS,
        DEFAULT_REFINE_CANDIDATES,
        DEFAULT_REFINE_REPLICATIONS,
        DEFAULT_REFINE_SHARE,
        DEFAULT_REFINE_VALIDATION,
        DEFAULT_REPLICATIONS,
        DEFAULT_RISK_GRID,
        DEFAULT_SCENARIOS,
        DEFAULT_TARGET_WIDTH,
        DEFAULT_TIME_LIMIT,
        DEFAULT_VALIDATION,
    )

    p = subparsers.add_parser(
        "certify", help="certified bracket [LB, UB] on the chance-constrained optimum",
        description="Statistical lower bound from M SAA replications (Luedtke & Ahmed 2008) and the "
                    "cheapest plan whose violation probability is certified <= 1 - omega by an exact "
                    "Clopper-Pearson bound on N' fresh draws. Exit status 1 when no full bracket results.")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                   help=f"joint confidence 1 - beta of the bracket (default {DEFAULT_CONFIDENCE})")
    p.add_argument("--replications", type=int, default=DEFAULT_REPLICATIONS,
                   help=f"M SAA replications for the lower bound (default {DEFAULT_REPLICATIONS})")
    p.add_argument("--scenarios", type=int, default=DEFAULT_SCENARIOS,
                   help=f"S scenarios per SAA solve (default {DEFAULT_SCENARIOS})")
    p.add_argument("--validation", type=int, default=DEFAULT_VALIDATION,
                   help=f"N' fresh draws certifying candidate plans (default {DEFAULT_VALIDATION})")
    p.add_argument("--risk-grid", default=",".join(f"{f:g}" for f in DEFAULT_RISK_GRID),
                   help="tightened SAA risk factors f, gamma = f*(1-omega), comma-separated "
                        "(default %(default)s)")
    p.add_argument("--grid-seeds", type=int, default=DEFAULT_GRID_SEEDS,
                   help=f"SAA solves per tightened level (default {DEFAULT_GRID_SEEDS})")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                   help=f"wall seconds per SAA solve (default {DEFAULT_TIME_LIMIT:g})")
    p.add_argument("--total-time-limit", type=float, default=None, metavar="SECONDS",
                   help="wall seconds for the whole bracket: SAA solves end by 80 %% of it, validation "
                        "tests start by 90 %% (default: none)")
    p.add_argument("--seed", type=int, default=0, help="base seed of the replications (default 0)")
    p.add_argument("--with", dest="with_algorithms", metavar="ALGOS", default="",
                   help="comma-separated algorithms whose plans are also UB candidates, e.g. depl,best-exp")
    p.add_argument("--workers", type=int, default=1, help="local processes for the SAA solves (default 1)")
    g = p.add_argument_group("refinement (stage 2, run only when the stage-1 bracket is wider than the target)")
    g.add_argument("--target-width", type=float, default=DEFAULT_TARGET_WIDTH,
                   help=f"relative width (UB - LB)/UB above which stage 2 runs; 0 disables it and gives "
                        f"stage 1 the whole beta (default {DEFAULT_TARGET_WIDTH:g})")
    g.add_argument("--refine-share", type=float, default=DEFAULT_REFINE_SHARE,
                   help=f"share of beta_L and beta_U reserved for stage 2 (default {DEFAULT_REFINE_SHARE:g})")
    g.add_argument("--refine-replications", type=int, default=DEFAULT_REFINE_REPLICATIONS,
                   help=f"M2 stage-2 replications (default {DEFAULT_REFINE_REPLICATIONS})")
    g.add_argument("--refine-scenarios", type=int, default=None,
                   help="S2 scenarios per stage-2 SAA solve (default, or 0: 10*S)")
    g.add_argument("--refine-validation", type=int, default=DEFAULT_REFINE_VALIDATION,
                   help=f"N'2 fresh draws per stage-2 test (default {DEFAULT_REFINE_VALIDATION})")
    g.add_argument("--refine-candidates", type=int, default=DEFAULT_REFINE_CANDIDATES,
                   help=f"at most this many stage-2 tests (default {DEFAULT_REFINE_CANDIDATES})")
    p.add_argument("-o", "--output", type=output_path, help="also write the bracket record as JSON")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    p.set_defaults(func=_cmd_certify)
