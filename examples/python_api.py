"""Use deplbench from Python: generate, solve, evaluate, run a sweep, load results.

The same code as README.md's "Use it from Python" section; tests/test_python_api.py
runs this file in CI. Usage::

    python examples/python_api.py [WORKDIR]     # default: a new temporary directory

WORKDIR is created (with its parents) if it does not exist.

The ``if __name__ == "__main__":`` guard is needed: the sweep runner starts
worker processes, which import the main module.
"""

import sys
import tempfile
from pathlib import Path

from deplbench import LocalExecutor, ResultsStore, evaluate_plan, generate, load_sweep, run_sweep, solve

MINI_SWEEP = """
[sweep]
name = "mini"
evaluation = { samples = 2000, seed = 0 }

[[instances]]
id = "knapsack"
family = "knapsack"
params = { item_class = "uncorrelated", n_items = 8 }
seeds = [0, 1]

[[algorithms]]
name = "depl"
grid = { eta = [25, 100] }

[[algorithms]]
name = "knapsack-dp"
"""


def main(work: Path) -> None:
    # Generate an instance (DepL Sec. VI-B, Table I).
    inst = generate("realistic", family="alexnet", loss_max=9.0)
    print(inst.name, [m.name for m in inst.models], "K̄ =", inst.horizon)

    # Solve it: DepL, and the true static optimum (exact probabilities, no sampling) for comparison.
    r = solve(inst, "depl", eta=50, eval_samples=2000)
    print("DepL:", r.status, "cost", round(r.cost, 2), "epochs", r.plan.n_epochs)
    print("  Monte Carlo estimate of the 0.99-quantile of the final loss:", round(r.quantile, 3),
          "95% order-statistic CI", tuple(round(v, 3) for v in r.quantile_ci), "vs lmax", inst.loss_max)
    opt = solve(inst, "milp-exact", eval_samples=2000)
    print("milp-exact:", opt.status, "cost", round(opt.cost, 2), "proven lower bound", round(opt.lower_bound, 2),
          "plan", opt.evaluation["exact_verdict"], "ratio DepL/optimum", round(r.cost / opt.cost, 3))

    # Evaluate any plan (here DepL's) again, with other samples.
    ev = evaluate_plan(inst, r.plan, samples=5000, seed=1)
    print("re-evaluated quantile", round(ev.quantile, 3), "constraints ok:", ev.constraints_ok)

    # Run a small sweep into a results store, then load it as a DataFrame.
    (work / "mini.toml").write_text(MINI_SWEEP)
    sweep = load_sweep(work / "mini.toml")
    with ResultsStore(work / "results.sqlite") as store:
        summary = run_sweep(sweep, store, LocalExecutor(workers=1), progress=False)
    print("sweep:", summary.ok, "tasks ok,", summary.failed, "failed")
    df = ResultsStore(work / "results.sqlite", readonly=True).frame()
    print(df[["instance_name", "algorithm", "param_eta", "status", "cost", "quantile_oos", "verdict"]]
          .to_string(index=False))


def work_folder(arg: str) -> Path:
    """The folder WORKDIR, created with its parents; one line and exit status 2 if it cannot be."""
    path = Path(arg)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:      # a file of that name, no permission, ...
        print(f"error: {path}: cannot use it as the work folder ({exc.strerror or exc})", file=sys.stderr)
        raise SystemExit(2) from None
    return path


if __name__ == "__main__":
    if len(sys.argv) > 1:
        work_folder(sys.argv[1])
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="deplbench-")))
