"""``deplbench solve`` and ``deplbench algorithms``."""

from __future__ import annotations

import json
import sys

from deplbench.jsonio import print_json
from deplbench.errors import SolverError

#: Dedicated flags of ``solve`` → solver parameter names (issue 3's CLI).
_FLAG_PARAMS = {
    "scenarios": "scenarios",
    "seed": "seed",
    "time_limit": "time_limit",
    "gap": "gap",
    "formulation": "formulation",
    "write_lp": "write_lp",
    "eta": "eta",
    "epsilon": "epsilon",
}


def _parse_kv(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SolverError(f"--param: expected key=value, got {item!r}")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def _cmd_solve(args) -> int:
    from deplbench.solvers.base import solve
    from deplbench.solvers.registry import get_solver
    from deplbench.instances.model import load_instance

    instance = load_instance(args.instance)
    cls = get_solver(args.algo)
    params = _parse_kv(args.param)
    for attr, pname in _FLAG_PARAMS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if pname not in cls.parameters:
            flag = "--" + attr.replace("_", "-")
            raise SolverError(f"{flag}: algorithm {args.algo!r} has no parameter {pname!r}")
        params[pname] = value
    result = solve(
        instance, args.algo, eval_samples=args.eval_samples, eval_seed=args.eval_seed, **params
    )
    record = result.to_dict()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2)
            fh.write("\n")
    if args.json:
        print_json(record)
    else:
        ev = result.evaluation or {}
        print(f"algorithm   {result.algorithm}")
        print(f"status      {result.status}" + (f"  ({result.message})" if result.message else ""))
        if result.cost is not None:
            print(f"cost        {result.cost:.6g}")
        if result.lower_bound is not None:
            print(f"lower bound {result.lower_bound:.6g}   gap {result.gap if result.gap is not None else float('nan'):.3g}")
        print(f"runtime     {result.runtime_s:.3f} s")
        if ev:
            lo, hi = ev["quantile_ci"]
            print(
                f"quantile    {ev['quantile']:.6g} (ω={ev['omega']}, CI [{lo:.6g}, {hi:.6g}], "
                f"target {ev['loss_max']:.6g}) -> {ev['verdict']}"
            )
            print(f"epochs      {ev['epochs']}  {ev['epochs_per_model']}")
            for v in ev["violations"]:
                print(f"violation   {v}")
    return 0 if result.status != "error" else 1


def _cmd_algorithms(args) -> int:
    from deplbench.solvers.registry import all_solver_info, problems

    rows = all_solver_info(include_unavailable=True)
    if args.json:
        print_json(rows, indent=2)
        return 0
    for row in rows:
        origin = "" if row["source"]["kind"] == "builtin" else f"  [plugin: {row['source'].get('distribution')}]"
        if not row["available"]:
            print(f"{row['name']:<13} (unavailable: {row['reason']}){origin}")
            continue
        kind = "exact" if row["exact"] else "heuristic"
        print(f"{row['name']:<13} {row['description']}  ({kind}){origin}")
        for pname, p in row["parameters"].items():
            print(f"    {pname:<14} {p['type']:<6} default={p['default']!r:<10} {p['help']}")
    for problem in problems():
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("solve", help="run one algorithm on an instance")
    p.add_argument("instance", help="instance JSON file")
    p.add_argument("--algo", required=True, help="algorithm name (see `deplbench algorithms`)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="algorithm parameter (repeatable)")
    p.add_argument("--scenarios", type=int, help="in-sample scenarios S (MILP, brute force)")
    p.add_argument("--seed", type=int, help="seed of the algorithm's own draws")
    p.add_argument("--time-limit", type=float, help="time limit in seconds")
    p.add_argument("--gap", type=float, help="relative optimality gap tolerance")
    p.add_argument("--formulation", choices=["fast", "flow", "naive"], help="MILP formulation (fast picks counts, enumeration or flow by structure)")
    p.add_argument("--write-lp", metavar="FILE", help="write the MILP as .lp or .mps")
    p.add_argument("--eta", type=int, help="DepL resolution η")
    p.add_argument("--epsilon", type=float, help="DepL allocation accuracy ε")
    p.add_argument("--eval-samples", type=int, default=50_000, help="out-of-sample trajectories (default 50000)")
    p.add_argument("--eval-seed", type=int, default=0, help="seed of the out-of-sample evaluation")
    p.add_argument("-o", "--output", help="also write the result record as JSON")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=_cmd_solve)

    a = subparsers.add_parser("algorithms", help="list algorithms and their parameters")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=_cmd_algorithms)
