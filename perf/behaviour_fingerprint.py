"""Behaviour fingerprint: node counts, brackets and costs of general / milp / milp-exact.

Solves instances of the target scripts (general_targets, milp_targets,
exact_targets) under work limits (node limits, no wall clock), so the record
does not depend on the machine's speed. Run it on two commits and compare the
JSON files: a refactoring that changes no behaviour gives identical rows.

    PYTHONPATH=src python perf/behaviour_fingerprint.py OUT.json
"""

from __future__ import annotations

import json
import sys
import time

from deplbench.formulations.general import solve_general
from deplbench.formulations.milp import solve_milp
from deplbench.instances.generators import generate
from deplbench.solvers.run import solve

#: Work counters compared (the timing fields are left out: they vary with the machine).
KEYS = ("nodes", "leaves", "boxes", "leaf_evaluations", "group_multipliers", "enumeration_steps", "stopped_in",
        "variant", "lp_iterations", "rounds", "n_vars", "n_cons", "cuts_added")


def record(rows: list, label: str, solve_call) -> None:
    """Run ``solve_call()``, append its fingerprint row to ``rows`` and print one line (stderr)."""
    t0 = time.perf_counter()
    res = solve_call()
    d = res.diagnostics
    row = {"label": label, "status": res.status, "cost": res.cost, "lower_bound": res.lower_bound, "gap": res.gap,
           "message": res.message, **{k: d.get(k) for k in KEYS}}
    if res.evaluation:
        row["exact_verdict"] = res.evaluation.get("exact_verdict")
    rows.append(row)
    print(f"{label:<40} {res.status:<10} cost={res.cost} lb={res.lower_bound} nodes={d.get('nodes')} "
          f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)


def main(out: str) -> None:
    rows: list = []
    for nd, seed in ((6, 0), (7, 1)):
        inst = generate("datasets", n_datasets=nd, n_clusters=2, horizon=50, seed=seed)
        record(rows, f"general datasets D={nd} s={seed} api",
               lambda inst=inst: solve_general(inst, scenarios=200, time_limit=None, node_limit=300))
        record(rows, f"general datasets D={nd} s={seed} solve()",
               lambda inst=inst: solve(inst, "milp", formulation="general", scenarios=200, time_limit=None,
                                       node_limit=300, evaluate=False))
    cyc = generate("realistic", family="alexnet", switches="any")
    record(rows, "general alexnet-any S=100 milp api",
           lambda: solve_milp(cyc, formulation="general", scenarios=100, time_limit=None, node_limit=500))
    alex = generate("realistic", family="alexnet", loss_max=9)
    record(rows, "milp fast alexnet S=300", lambda: solve_milp(alex, scenarios=300, time_limit=None))
    record(rows, "milp flow alexnet S=100 nodes=50",
           lambda: solve_milp(alex, formulation="flow", scenarios=100, time_limit=None, node_limit=50))
    small = generate("scaling", n_models=3, horizon=8, seed=0)
    record(rows, "milp solve() scaling",
           lambda: solve(small, "milp", scenarios=100, time_limit=30, evaluate=True, eval_samples=2000))
    for lm in (9.0, 13.0):
        inst = generate("realistic", family="alexnet", loss_max=lm)
        record(rows, f"milp-exact alexnet lmax={lm}", lambda inst=inst: solve(inst, "milp-exact", time_limit=None,
                                                                    evaluate=False))
    with open(out, "w") as fh:
        json.dump(rows, fh, indent=1, default=str)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python perf/behaviour_fingerprint.py OUT.json")
    main(sys.argv[1])
