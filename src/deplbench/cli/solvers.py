"""``deplbench solve`` and ``deplbench algorithms``."""

from __future__ import annotations

import argparse
import sys
import textwrap

from deplbench.cli.messages import os_error_message, output_path, split_params
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.settings import SOLVE_SAMPLES

#: Dedicated flags of ``solve`` → solver parameter names.
_FLAG_PARAMS = {
    "scenarios": "scenarios",
    "seed": "seed",
    "time_limit": "time_limit",
    "gap": "gap",
    "formulation": "formulation",
    "solver": "solver",
    "write_lp": "write_lp",
    "eta": "eta",
    "epsilon": "epsilon",
}



#: Names ``solve()`` takes itself, so never an algorithm parameter: what to use instead.
RESERVED_PARAMS = {"instance": "give the instance file as the first argument",
                   "algorithm": "use --algo (solve) or --algorithm (simulate)",
                   "evaluate": "reserved by solve()",
                   "eval_samples": "use --eval-samples", "eval_seed": "use --eval-seed (solve) or --seed (simulate)"}


def parse_kv(items: list[str]) -> dict[str, str]:
    """``--param KEY=VALUE`` items as {key: value} (``solve`` and ``simulate``).

    Keys have ``-`` turned into ``_`` (``--param time-limit=5``); values
    stay strings, converted by the solver's ``Param`` table.

    Raises
    ------
    SolverError
        An item without ``=`` or without a key, or a key given twice,
        naming ``--param`` (exit 2).
    """
    out = split_params(items, SolverError, "--param: expected key=value, got {item!r}")
    for key in out:
        if key in RESERVED_PARAMS:
            # solve()'s own arguments: passing one as a parameter would be a TypeError deep inside
            raise SolverError(f"--param: {key!r} is not an algorithm parameter ({RESERVED_PARAMS[key]})")
    return out


def _cmd_solve(args) -> int:
    if args.output:        # before the solver stack is imported: a refusal costs nothing
        from deplbench.files import refuse_overwrite, require_writable

        refuse_overwrite(args.output, [args.instance], "-o", SolverError)
        require_writable(args.output, "-o", SolverError)    # a long solve must not end in a lost result
    from deplbench.instances.model import load_instance
    from deplbench.jsonio import print_json, write_json
    from deplbench.solvers.registry import get_solver
    from deplbench.solvers.run import solve

    instance = load_instance(args.instance)
    cls = get_solver(args.algo)
    args.eval_samples, eval_flag = eval_samples_given(args.eval_samples, EVAL_SAMPLES)
    params = parse_kv(args.param)
    given_as = {name: f"--param {name}" for name in params}     # how the user named each parameter
    for attr, pname in _FLAG_PARAMS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        flag = "--" + attr.replace("_", "-")
        if attr == "time_limit" and pname not in cls.parameters and cls.clock in cls.parameters:
            pname = cls.clock      # the solver's own name for its time budget (adaptive-opt: refine_time)
        if pname not in cls.parameters:
            raise SolverError(f"{flag}: algorithm {args.algo!r} has no parameter {pname!r}")
        if pname in params:        # as generate: one value, never "the last one wins"
            raise SolverError(f"{flag}: also given as --param {pname}")
        params[pname] = value
        given_as[pname] = flag
    if params.get("write_lp"):      # before the solve: the model file must not replace what the run reads or writes
        _check_model_file(params["write_lp"], given_as["write_lp"], args.instance, args.output)
    try:
        # solve() checks every parameter once, before the run: a refusal is the user's input (exit 2)
        result = solve(
            instance, args.algo, eval_samples=args.eval_samples, eval_seed=args.eval_seed, **params
        )
    except SolverError as exc:
        own = {"eval_samples": args.eval_samples, "eval_seed": args.eval_seed}     # solve()'s own, as flags
        flags = {**given_as, "eval_samples": eval_flag, "eval_seed": "--eval-seed"}
        raise SolverError(as_given(str(exc), {**params, **own}, flags)) from None
    record = result.to_dict()
    if args.output:
        try:
            write_json(args.output, record)
        except OSError as exc:
            raise SolverError(f"--output {args.output}: cannot write ({os_error_message(exc)})") from None
    if args.json:
        print_json(record)
    else:
        ev = result.evaluation or {}
        print(f"algorithm   {result.algorithm}" + solver_used(result))
        print(f"status      {result.status}" + (f"  ({result.message})" if result.message else ""))
        if result.cost is not None:
            print(f"cost        {result.cost:.6g}")
        if result.lower_bound is not None:
            gap = result.gap if result.gap is not None else float("nan")
            width = (result.diagnostics or {}).get("width") if getattr(cls, "reference", "") == "adaptive" else None
            # an adaptive bracket's width is (UB − LB)/LB (`deplbench adaptive`), the record's gap (UB − LB)/UB
            print(f"lower bound {result.lower_bound:.6g}   gap {gap:.3g}"
                  + (f" (UB − LB)/UB, width {width:.3g} (UB − LB)/LB" if isinstance(width, float) else ""))
        print(f"runtime     {result.runtime_s:.3f} s")
        if ev:
            from deplbench.cli.statements import statement_lines

            print("\n".join(statement_lines(ev)))
            print(f"epochs      {ev['epochs']}  {ev['epochs_per_model']}")
            for v in ev["violations"]:
                print(f"violation   {v}")
            hint = saa_hint(result, getattr(cls, "reference", ""))
            if hint:
                print(textwrap.fill(hint, 78, initial_indent="note        ", subsequent_indent=" " * 12))
    return 0 if result.status != "error" else 1


def _check_model_file(path: str, flag: str, instance: str, output: str | None) -> None:
    """Refuse a model file (``--write-lp``) that is the instance read or the ``-o`` file written.

    Parameters
    ----------
    path : str
        The model file to write.
    flag : str
        How the user named it (``--write-lp``, ``--param write_lp``).
    instance : str
        The instance file the solve reads.
    output : str or None
        The result file ``-o`` names, if any.

    Raises
    ------
    SolverError
        ``--write-lp inst.lp: is the input inst.lp ...`` (the path resolved:
        ``..``, symbolic and hard links), or ``--write-lp m.lp: is the -o
        file m.lp ...`` (the result would replace the model).
    """
    import os

    from deplbench.files import refuse_overwrite

    refuse_overwrite(path, [instance], flag, SolverError)
    if output is None:
        return
    same = os.path.realpath(path) == os.path.realpath(output)
    if not same and os.path.exists(path) and os.path.exists(output):
        same = os.path.samefile(path, output)
    if same:
        raise SolverError(f"{flag} {path}: is the -o file {output}; the model and the result need two files")


def saa_hint(result, reference: str) -> str:
    """Why an SAA plan can be ``optimal`` in sample and infeasible out of
    sample; "" for every other result.

    An SAA solver proves optimality for its S drawn scenarios (at most
    ⌊(1 − ω)S⌋ may exceed ℓmax), not for the chance constraint (3) itself:
    the fresh draws of the evaluation can put the ω-quantile above ℓmax."""
    ev = result.evaluation or {}
    if reference != "saa" or result.status != "optimal" or ev.get("verdict") != "infeasible":
        return ""
    if ev.get("violations"):
        return ""
    s = (result.diagnostics or {}).get("scenarios") or (result.params or {}).get("scenarios")
    sample = f"its {s} in-sample scenarios" if s else "its in-sample scenarios"
    return (f"optimal for {sample} (the sample average approximation), not for the chance "
            "constraint itself: out of sample the ω-quantile exceeds ℓmax. More scenarios "
            "(--scenarios), a certified plan (--algo milp-certified) or the true static "
            "optimum (--algo milp-exact, where it applies) close the gap.")


def solver_used(result) -> str:
    """``"  (solver scip, pyscipopt 6.3.0 (SCIP 10.0))"``: the MILP solver the
    result says it ran (diagnostics), or "" for algorithms without one."""
    diag = result.diagnostics or {}
    if not isinstance(diag.get("solver"), str):
        return ""
    version = diag.get("solver_version")
    return f"  (solver {diag['solver']}" + (f", {version})" if version else ")")


def _solver_table(check: bool) -> list[dict]:
    """The MILP solvers: looked up without importing any (default) or each asked (``--check``)."""
    if check:
        from deplbench.formulations.milp.peers import solver_table

        return solver_table()
    from deplbench.formulations.peer_lookup import lookup_table

    return lookup_table()


def _solver_lines(check: bool = False) -> list[str]:
    """The MILP solvers (``--solver``) and whether each is here (found, or checked with ``check``)."""
    how = ("each asked to start (--check)" if check else
           "found = what it needs is installed, looked up without running it; --check asks each")
    lines = textwrap.wrap("MILP solvers (--solver NAME or --param solver=NAME, for exact algorithms with a "
                          f"`solver` parameter; docs/library.md; {how}):", 78)
    yes, no = ("available", "unavailable") if check else ("found", "not found")
    for row in _solver_table(check):
        what = f"{yes}: {row['version']}" if row["available"] else f"{no}: {row['reason']}"
        if row.get("note"):
            what += f" ({row['note']})"
        lines += textwrap.wrap(what, 78, initial_indent=f"  {row['name']:<24} ", subsequent_indent=" " * 27)
    return lines


def _cmd_algorithms(args) -> int:
    from deplbench.solvers.catalog import all_info
    from deplbench.solvers.registry import problems

    if args.json:   # numpy (for numpy values a plugin's metadata might hold): only when JSON is asked for
        from deplbench.jsonio import print_json
    if args.solvers:
        if args.name is not None:         # one listing or the other, never NAME silently dropped
            raise SolverError(f"--solvers: lists the MILP solvers, not the parameters of algorithm "
                              f"{args.name!r}; drop NAME or --solvers")
        if args.json:
            print_json({"solvers": _solver_table(args.check)}, indent=2)
        else:
            print("\n".join(_solver_lines(args.check)))
        return 0
    rows = all_info(include_unavailable=True)
    if args.name is not None:
        rows = [_one_algorithm(rows, args.name)]
    if args.json:
        # one JSON object, as every --json: the algorithms and the MILP solvers, as the text lists them
        print_json({"algorithms": rows, "solvers": _solver_table(args.check)} if args.name is None else rows[0],
                   indent=2)
        return 0
    if args.name is not None:
        print("\n".join(_parameter_lines(rows[0])))
        return 0
    width = max(len(r["name"]) for r in rows) if rows else 0
    for row in rows:
        origin = "" if row["source"]["kind"] == "builtin" else f"  [plugin: {row['source'].get('distribution')}]"
        if not row["available"]:
            print(f"{row['name']:<{width}}  (unavailable: {row['reason']}){origin}")
            continue
        kind = "exact" if row["exact"] else "heuristic"
        print(f"{row['name']:<{width}}  {kind:<9}  {_first_sentence(row['description'])}{origin}")
    print()
    print(f"{len(rows)} algorithms; `deplbench algorithms NAME` lists one's parameters "
          "(`--json`: all of them).")
    print()
    print("\n".join(_solver_lines(args.check)))
    for problem in problems():
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def _first_sentence(text: str, limit: int = 90) -> str:
    """The description's first sentence, on one line (cut at a word with
    "…" past ``limit`` characters): the short list is one line per algorithm."""
    text = " ".join(str(text).split())
    head = text.split(". ")[0].rstrip(".")
    return head if len(head) <= limit else head[:limit].rsplit(" ", 1)[0] + " …"


def _one_algorithm(rows: list[dict], name: str) -> dict:
    """The catalog row of ``name``; an unknown name is the user's input
    error naming the closest algorithms."""
    import difflib

    for row in rows:
        if row["name"] == name:
            return row
    names = [r["name"] for r in rows]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else "`deplbench algorithms` lists them"
    raise SolverError(f"algorithm: no algorithm named {name!r} ({hint})")


def _parameter_lines(row: dict) -> list[str]:
    """``algorithms NAME``: the description, then one line per parameter
    (type, default, help)."""
    origin = "" if row["source"]["kind"] == "builtin" else f"  [plugin: {row['source'].get('distribution')}]"
    if not row["available"]:
        return [f"{row['name']}  (unavailable: {row['reason']}){origin}"]
    kind = "exact" if row["exact"] else "heuristic"
    lines = [f"{row['name']}  ({kind}){origin}"]
    lines += textwrap.wrap(" ".join(str(row["description"]).split()), 78, initial_indent="  ",
                           subsequent_indent="  ")
    params = row["parameters"]
    if not params:
        return lines + ["", "  no parameters"]
    lines += ["", f"parameters (--param KEY=VALUE; {len(params)}):"]
    for pname, p in params.items():
        lines += textwrap.wrap(f"{p['type']:<6} default={p['default']!r}  {p['help']}", 78,
                               initial_indent=f"  {pname:<16} ", subsequent_indent=" " * 19)
    return lines


class _HelpWithAlgorithms(argparse.Action):
    """``solve --help``: the algorithm list and each flag's per-algorithm
    defaults are read from the registry only when help is asked for (loading
    every solver for every command would slow them all down)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from deplbench.solvers.catalog import all_info

        rows = all_info(include_unavailable=True)
        for action in parser._actions:
            pname = _FLAG_PARAMS.get(action.dest)
            if pname is None:
                continue
            defaults = [f"{r['name']} {_show(r['parameters'][pname]['default'])}" for r in rows
                        if r["available"] and pname in r["parameters"]]
            action.help = (f"{action.help} (default per algorithm: " + ", ".join(defaults) + ")"
                           if defaults else f"{action.help} (no algorithm takes it)")
        lines = ["algorithms (`deplbench algorithms` lists every parameter; --param KEY=VALUE sets it):"]
        for r in rows:
            if not r["available"]:
                lines.append(f"  {r['name']:<15} unavailable: {r['reason']}")
                continue
            kind = "exact" if r["exact"] else "heuristic"
            lines += textwrap.wrap(f"{r['description']} ({kind})", 78,
                                   initial_indent=f"  {r['name']:<15} ", subsequent_indent=" " * 18)
        lines += [""] + _solver_lines()
        lines += [""] + textwrap.wrap(
            "exit status: 0 a result was produced (any status but error), 1 the algorithm "
            "failed (status error), 2 bad input (one line naming the option or field).", 78)
        parser.epilog = "\n".join(lines)
        parser.print_help()
        parser.exit()


def _show(value) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


#: ``solve --eval-samples``' default.
EVAL_SAMPLES = SOLVE_SAMPLES


def eval_samples_given(value: int | None, default: int) -> tuple[int, str]:
    """``--eval-samples`` as given (None: not typed) → the count and how a refusal names it: a refused
    default is named as one, since the user did not type the option."""
    if value is None:
        return default, f"--eval-samples (default {default})"
    return value, "--eval-samples"


def as_given(message: str, params: dict, given_as: dict[str, str]) -> str:
    """A parameter's refusal, naming the option as the user typed it.

    ``parameter 'write_lp': ...`` (a :class:`~deplbench.params.Param`'s
    message) becomes ``--write-lp FILE: ...``, and ``solver: ...`` (a check
    across parameters) ``--solver: ...``; any other message is kept. A value
    argparse already read as a float is shown in its shortest form
    (:func:`~deplbench.jsonio.number_text`): ``--width 0``, as typed, not
    ``--width 0.0``.
    """
    for name, flag in given_as.items():
        head = f"parameter {name!r}: "
        if message.startswith(head):
            value = params[name]
            if isinstance(value, float):
                from deplbench.jsonio import number_text

                value = number_text(value)
            shown = value if str(value) else "''"     # an empty value stays visible
            return f"{flag} {shown}: {message[len(head):]}"
        if message.startswith(f"{name}: "):
            return f"{flag}: {message[len(name) + 2:]}"
    return message


def register(subparsers) -> None:
    """Add ``solve`` and ``algorithms`` to the deplbench CLI."""
    p = subparsers.add_parser(
        "solve", help="run one algorithm on an instance",
        description=textwrap.fill(
            "Run one algorithm on an instance and judge the plan it returns out of sample: cost "
            "(2), the hard constraints (4)-(6), and the quantile constraint (3): a Monte Carlo "
            "estimate of the ω-quantile of the final loss from --eval-samples fresh trajectories "
            "with its 0.95 distribution-free order-statistic interval (one-sided, at the level of "
            "the end it keeps, when the draws are too few for the other), a one-sided "
            "Clopper-Pearson certificate at 0.95 on the same draws, and, where the laws allow, "
            "the exact violation bounds (no sampling), whose verdict decides. Prints a summary "
            "saying which statement is which, or with --json the result record as one JSON "
            "object.", 78),
        formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    p.add_argument("-h", "--help", action=_HelpWithAlgorithms,
                   help="show this help (with the algorithm list) and exit")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--algo", required=True, metavar="NAME",
                   help="algorithm name (listed below and by `deplbench algorithms`)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="algorithm parameter (repeatable); the flags below are shortcuts")
    # The parameter flags keep their values as text: the algorithm's Param table
    # converts and checks each one once (solve()), naming the flag on refusal.
    p.add_argument("--scenarios", metavar="S", help="in-sample scenarios S")
    p.add_argument("--seed", metavar="N", help="seed of the algorithm's own draws")
    p.add_argument("--time-limit", metavar="SEC",
                   help="time limit in seconds (none: no limit); sets the algorithm's time budget, its parameter "
                        "time_limit or, where it has none, its clock (adaptive-opt: refine_time, the outer stop "
                        "of its whole solve, as `deplbench adaptive --time-limit`)")
    p.add_argument("--gap", help="relative optimality gap tolerance")
    p.add_argument("--formulation", metavar="NAME",
                   help="MILP formulation: fast, counts, enumeration, flow, naive or general (fast picks counts, "
                        "enumeration or flow by structure; general is the exact block branch-and-bound for any "
                        "switch graph, tuned with --param general_settings=NAME=VALUE,...)")
    p.add_argument("--solver", metavar="NAME",
                   help="MILP solver of an exact algorithm: highs, scip or pyomo:NAME (a Pyomo SolverFactory "
                        "solver, e.g. pyomo:cbc); listed below with what is available here")
    p.add_argument("--write-lp", type=output_path, metavar="FILE", help="write the MILP model to FILE (.lp or .mps)")
    p.add_argument("--eta", help="DepL resolution η")
    p.add_argument("--epsilon", help="DepL allocation accuracy ε")
    p.add_argument("--eval-samples", type=int, default=None, metavar="N",
                   help=f"out-of-sample trajectories (default {EVAL_SAMPLES})")
    p.add_argument("--eval-seed", type=int, default=0, metavar="N",
                   help="seed of the out-of-sample evaluation (default 0)")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE", help="also write the result record as JSON")
    p.add_argument("--json", action="store_true", help="print the result record as one JSON object")
    p.set_defaults(func=_cmd_solve)

    a = subparsers.add_parser("algorithms", help="list algorithms and their parameters",
                              description="One line per algorithm (name, exact or heuristic, what it "
                                          "does) and the MILP solvers available here; with NAME, that "
                                          "algorithm's parameters (type, default, meaning).")
    a.add_argument("name", nargs="?", metavar="NAME",
                   help="show this algorithm's parameters (default: the short list of every algorithm)")
    a.add_argument("--json", action="store_true",
                   help='print one JSON object: {"algorithms": [...], "solvers": [...]} (with --solvers, only '
                        '"solvers"; with NAME, that algorithm\'s object)')
    a.add_argument("--solvers", action="store_true",
                   help="list only the MILP solvers (--solver) and which are available here (not with NAME)")
    a.add_argument("--check", action="store_true",
                   help="ask each MILP solver whether it starts (imports Pyomo and the solvers, runs their "
                        "executables: seconds) instead of looking up what it needs")
    a.set_defaults(func=_cmd_algorithms)
