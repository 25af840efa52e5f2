"""Cheap behaviour check: node counts, brackets, costs of general / milp / milp-exact (work limits, no wall clock)."""
import json, sys, time
from deplbench.instances.generators import generate
from deplbench.formulations.milp import solve_milp
from deplbench.formulations.general import solve_general
from deplbench.solvers.run import solve

KEYS = ("nodes", "leaves", "boxes", "leaf_evaluations", "group_multipliers", "enumeration_steps", "stopped_in",
        "variant", "lp_iterations", "rounds", "n_vars", "n_cons", "cuts_added")
rows = []
def rec(label, res, t0):
    d = res.diagnostics
    row = {"label": label, "status": res.status, "cost": res.cost, "lower_bound": res.lower_bound, "gap": res.gap,
           "message": res.message, **{k: d.get(k) for k in KEYS}}
    if res.evaluation:
        row["exact_verdict"] = res.evaluation.get("exact_verdict")
    rows.append(row)
    print(f"{label:<40} {res.status:<10} cost={res.cost} lb={res.lower_bound} nodes={d.get('nodes')} "
          f"{time.perf_counter()-t0:.1f}s", flush=True)

for nd, seed in ((6, 0), (7, 1)):
    inst = generate("datasets", n_datasets=nd, n_clusters=2, horizon=50, seed=seed)
    t0 = time.perf_counter(); rec(f"general datasets D={nd} s={seed} api", solve_general(inst, scenarios=200, time_limit=None, node_limit=300), t0)
    t0 = time.perf_counter(); rec(f"general datasets D={nd} s={seed} solve()", solve(inst, "milp", formulation="general", scenarios=200, time_limit=None, node_limit=300, evaluate=False), t0)
cyc = generate("realistic", family="alexnet", switches="any")
t0 = time.perf_counter(); rec("general alexnet-any S=100 milp api", solve_milp(cyc, formulation="general", scenarios=100, time_limit=None, node_limit=500), t0)
alex = generate("realistic", family="alexnet", loss_max=9)
t0 = time.perf_counter(); rec("milp fast alexnet S=300", solve_milp(alex, scenarios=300, time_limit=None), t0)
t0 = time.perf_counter(); rec("milp flow alexnet S=100 nodes=50", solve_milp(alex, formulation="flow", scenarios=100, time_limit=None, node_limit=50), t0)
small = generate("scaling", n_models=3, horizon=8, seed=0)
t0 = time.perf_counter(); rec("milp solve() scaling", solve(small, "milp", scenarios=100, time_limit=30, evaluate=True, eval_samples=2000), t0)
for lm in (9.0, 13.0):
    inst = generate("realistic", family="alexnet", loss_max=lm)
    t0 = time.perf_counter(); rec(f"milp-exact alexnet lmax={lm}", solve(inst, "milp-exact", time_limit=None, evaluate=False), t0)
json.dump(rows, open(sys.argv[1], "w"), indent=1, default=str)
