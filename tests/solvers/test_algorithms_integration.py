"""Cross-algorithm integration tests: every registered algorithm, end to end.

For every name in the registry (``solvers.registry.SOLVERS`` — the
*registered* names, so an algorithm whose module is missing fails here
instead of being skipped silently):

* it loads and declares its parameters;
* on a small realistic and a small knapsack-derived instance its status is
  one of the allowed ones and any plan it returns passes the evaluator's
  hard-constraint checks;
* no algorithm's plan is cheaper than an exact optimum it could have been
  compared with: the brute force on tiny instances (when the plan is
  feasible on the brute force's own in-sample scenarios) and the knapsack DP
  of ``formulations.exact.knapsack`` on knapsack-derived instances;
* ``deplbench solve INSTANCE --algo NAME --json`` prints exactly one JSON
  object: run through the command line's ``main`` with standard output
  captured at the file-descriptor level, so a solver's write to fd 1 from C
  counts as a Python print does (tests/cli/test_json_stdout.py runs
  commands as subprocesses).

Each algorithm runs once per small instance, through that command: the
status and constraint checks judge the :class:`SolveResult` its ``solve()``
call returned, the JSON check what it printed.

Parameters that only make runs shorter (scenario counts, time limits,
check sample sizes) are passed to an algorithm only if it declares them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.exact.knapsack import knapsack_optimum_from_instance
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations
from deplbench.instances.generators import generate
from deplbench.solvers.base import Param
from deplbench.solvers.registry import SOLVERS, get_solver
from deplbench.solvers.run import solve

#: End to end as a whole (every test runs every registered algorithm end to end): `make test-fast` leaves it out.
pytestmark = pytest.mark.integration

NAMES = list(SOLVERS)
ALLOWED = {"optimal", "feasible", "time_limit", "infeasible", "no_solution"}
#: Scenario set shared by the brute force and every algorithm that takes one.
SCENARIOS, SEED = 60, 3
#: Run-shortening parameters, applied only where an algorithm declares them.
FAST = {
    "scenarios": SCENARIOS,
    "seed": SEED,
    "time_limit": 600.0,  # a budget tiny instances never reach, not a wall-clock test
    "check_samples": 2000,
    "max_checks": 10,
    # milp-certified: a small bracket (its statistics are tested in test_certify)
    "replications": 4,
    "risk_grid": "0.8",
    "grid_seeds": 1,
    "validation": 2000,
    "target_width": 0.0,  # one stage: the second (80 SAA replications) is tested in test_certify
    # adaptive-opt: a coarse grid and few runs (its bounds are tested in test_adaptive)
    "buckets": 60,
    "runs": 1000,
    "tune_runs": 500,
    "iters_lam": 3,
    "iters_mu": 3,
    # a coarser remaining-time grid than the default's finest affordable one: the deadline is still
    # carried (the timed DP runs), and the lower bound on these instances is the same
    "time_points": 16,
}
EVAL_SAMPLES = 2000


def fast_params(name: str) -> dict:
    try:
        declared = get_solver(name).parameters
    except Exception:  # noqa: BLE001 - a missing algorithm is reported by the tests themselves
        return {}
    return {k: v for k, v in FAST.items() if k in declared}


def policy_only(name: str) -> bool:
    """An algorithm whose result is a closed-loop policy with no static plan
    (reference "adaptive": adaptive-opt)."""
    return get_solver(name).reference == "adaptive"


def declined(name: str, inst, res) -> bool:
    """Whether the algorithm declares that it does not apply to ``inst``
    (:meth:`Solver.applies`); then, and only then, its result is ``skipped``
    with the declared reason and no plan — a declared limit, not a failure."""
    applies, reason = get_solver(name).applies(inst)
    if applies:
        assert res.status != "skipped", f"{name} applies but was skipped: {res.message}"
        return False
    assert res.status == "skipped" and res.message == reason and reason, (name, res.status, res.message)
    assert res.plan is None and res.evaluation is None
    return True


# ------------------------------------------------------------------ instances
@pytest.fixture(scope="module")
def realistic_small():
    """AlexNet versions (DepL Table I) on one A- and one B-class cluster, K̄ = 20."""
    return generate("realistic", family="alexnet", loss_max=16.0, horizon=20, n_a=1, n_b=1, time_max=60.0)


@pytest.fixture(scope="module")
def knapsack_small():
    return generate("knapsack", item_class="uncorrelated", n_items=5, horizon=6, R=20, seed=2)


def tiny_instances():
    """Within the brute force's reach (K̄ ≤ 6, |M| ≤ 3, |N| ≤ 2)."""
    return [
        generate("realistic", family="alexnet", loss_max=18.5, horizon=5, n_a=1, n_b=1, omega=0.9,
                 time_max=20.0),
        generate("scaling", n_models=3, n_clusters=2, horizon=5, seed=1),
        generate("scaling", n_models=2, n_clusters=2, n_datasets=2, horizon=4, seed=4),
    ]


@pytest.fixture(scope="module")
def instance_files(tmp_path_factory, realistic_small, knapsack_small) -> dict:
    root = tmp_path_factory.mktemp("algorithms")
    paths = {}
    for label, inst in (("realistic", realistic_small), ("knapsack", knapsack_small)):
        paths[label] = root / f"{label}.json"
        inst.save(paths[label])
    return paths


@dataclass
class Run:
    """One ``deplbench solve --json`` run: exit status, fds 1 and 2 as the command left them, and the
    result its ``solve()`` call returned (None if it returned none)."""

    status: object
    out: str
    err: str
    result: SolveResult | None


@pytest.fixture(scope="module")
def _runs() -> dict:
    """The module's store of :func:`runs`, filled on first use."""
    return {}


@pytest.fixture
def runs(_runs, instance_files, capfd) -> dict:
    """One run of every algorithm on both small instances (shared by tests), keyed (label, name).

    Function-scoped for ``capfd`` (the file-descriptor capture the command's output is read
    with); the runs themselves are made once per module. They are stored all together: a run
    that raises leaves none stored, so every test shows the cause, not a missing key."""
    if not _runs:
        _runs.update({(label, name): _cli(path, name, capfd)
                      for label, path in instance_files.items() for name in NAMES})
    return _runs


def loaded_result(runs, label: str, name: str) -> SolveResult:
    """The run's result; the test fails if the algorithm cannot be loaded or the command returned none."""
    try:
        get_solver(name)
    except Exception as exc:  # noqa: BLE001 - reported by test_registry_loads too
        pytest.fail(f"{name} cannot be loaded: {exc}")
    run = runs[(label, name)]
    if run.result is None:
        pytest.fail(f"{name}: solve() returned no result (rc={run.status}): {run.err.strip()[-300:]}")
    return run.result


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", NAMES)
def test_registry_loads(name):
    cls = get_solver(name)
    assert cls.name == name
    assert all(isinstance(p, Param) for p in cls.parameters.values())


@pytest.mark.parametrize("label", ["realistic", "knapsack"])
@pytest.mark.parametrize("name", NAMES)
def test_status_and_constraints(runs, realistic_small, knapsack_small, name, label):
    res = loaded_result(runs, label, name)
    inst = realistic_small if label == "realistic" else knapsack_small
    assert res.algorithm == name
    if declined(name, inst, res):
        return
    assert res.status in ALLOWED, f"{name}: {res.status} ({res.message})"
    if res.status in ("infeasible", "no_solution") and res.plan is None:
        assert res.message, "an infeasible or no_solution result must say why"
    if res.plan is not None:
        ev = evaluate_plan(inst, res.plan, samples=EVAL_SAMPLES, seed=5)
        assert ev.constraints_ok, f"{name}: {ev.violations}"
        assert res.cost == pytest.approx(ev.cost, rel=1e-6)
        assert res.evaluation is not None and res.evaluation["samples"] >= 1
    if res.status in ("optimal", "feasible") and not policy_only(name):
        assert res.plan is not None
    if policy_only(name) and res.status == "feasible":
        # a closed-loop policy, no plan: its certified P(success) and its bracket
        assert res.diagnostics["p_success_lo"] >= inst.omega and res.lower_bound <= res.cost
    # The record survives JSON.
    back = SolveResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.status == res.status and back.plan == res.plan


@pytest.mark.parametrize("name", NAMES)
def test_nothing_beats_the_knapsack_dp(runs, knapsack_small, name):
    """A deterministic plan that reaches ℓmax within Tmax costs ≥ the DP optimum."""
    res = loaded_result(runs, "knapsack", name)
    optimum = knapsack_optimum_from_instance(knapsack_small)
    assert math.isfinite(optimum)
    if declined(name, knapsack_small, res):
        return
    if res.plan is None and policy_only(name) and res.status == "feasible":
        # a static plan is a policy: the adaptive lower bound is below the static optimum
        assert res.lower_bound <= optimum * (1 + 1e-9)
        return
    if res.plan is None:
        assert res.status in ("infeasible", "no_solution", "time_limit")
        return
    ev = evaluate_plan(knapsack_small, res.plan, samples=100)
    assert ev.exact
    if ev.feasible:
        assert res.cost >= optimum * (1 - 1e-7), f"{name}: {res.cost} < DP optimum {optimum}"


def _saa_feasible(inst, plan, scenarios) -> bool:
    models = [inst.model_index[m] for m in plan.models]
    gammas = [inst.data_effect(plan.datasets.get(c, []))[1] for c in plan.clusters]
    losses = scenarios.final_losses(models, gammas)
    return int(np.count_nonzero(losses > inst.loss_max + 1e-9)) <= allowed_violations(inst.omega, losses.size)


@pytest.mark.parametrize("index", range(3))
def test_no_algorithm_beats_brute_force_on_tiny_instances(index):
    inst = tiny_instances()[index]
    bf = solve(inst, "brute-force", evaluate=False, **fast_params("brute-force"))
    assert bf.status in ("optimal", "infeasible"), bf.message
    scen = ScenarioSampler(inst, SEED).in_sample(SCENARIOS)
    checked = []
    # StaticLearn's equal-share chains need longer horizons than the brute
    # force reaches; its single-model mode is compared as well.
    runs = [(name, {}) for name in NAMES if name != "brute-force"] + [("static-learn", {"mode": "single"})]
    for name, extra in runs:
        res = solve(inst, name, evaluate=False, **fast_params(name), **extra)
        if declined(name, inst, res):
            continue
        assert res.status in ALLOWED, f"{name}: {res.status} ({res.message})"
        if bf.status == "optimal" and not get_solver(name).exact:
            # a plan exists: a heuristic that finds none has no proof to claim (docs/DESIGN.md)
            assert res.status != "infeasible", f"{name}{extra}: infeasible ({res.message})"
        if res.plan is None:
            continue
        ev = evaluate_plan(inst, res.plan, samples=200)
        if not (ev.constraints_ok and _saa_feasible(inst, res.plan, scen)):
            continue
        # The plan is feasible for the brute force's own SAA problem.
        assert bf.status == "optimal", f"{name} found an SAA-feasible plan the brute force missed"
        assert res.cost >= bf.cost * (1 - 1e-6), f"{name}{extra}: {res.cost} < brute-force optimum {bf.cost}"
        checked.append(name)
    assert len(checked) >= 3, f"too few comparable plans: {checked}"


def _cli(path, name, capfd) -> Run:
    """``deplbench solve PATH --algo NAME --json``, its output as file descriptors 1 and 2 saw it and
    the result its ``solve()`` call returned."""
    import deplbench.solvers.run as run_module
    from deplbench.cli import main

    args = ["solve", str(path), "--algo", name, "--json", "--eval-samples", str(EVAL_SAMPLES)]
    for key, value in fast_params(name).items():
        args += ["--param", f"{key}={value}"]
    returned: list[SolveResult] = []
    real = run_module.solve

    def recorded(*a, **kw):
        returned.append(real(*a, **kw))
        return returned[-1]

    capfd.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_module, "solve", recorded)   # the command looks solve() up when it runs
        try:
            status = main(args)
        except SystemExit as exc:            # argparse
            status = exc.code
    out, err = capfd.readouterr()
    assert len(returned) <= 1, f"{name}: one command, {len(returned)} solves"
    return Run(status, out, err, returned[0] if returned else None)


@pytest.mark.parametrize("label", ["realistic", "knapsack"])
def test_cli_solve_json_for_every_algorithm(runs, realistic_small, knapsack_small, label):
    inst = realistic_small if label == "realistic" else knapsack_small
    failures = []
    for name in NAMES:
        status, out, err = (getattr(runs[(label, name)], f) for f in ("status", "out", "err"))
        lines = [ln for ln in out.splitlines() if ln.strip()]
        if status not in (0, 1) or len(lines) != 1:
            failures.append(f"{name}: rc={status}, stdout lines={len(lines)}, stderr={err.strip()[-300:]}")
            continue
        assert "Traceback" not in err, f"{name}: {err}"
        record = json.loads(lines[0])
        assert record["algorithm"] == name
        applies, reason = get_solver(name).applies(inst)
        if not applies:   # a declared limit: skipped with the declared reason
            assert record["status"] == "skipped" and record["message"] == reason, record
            continue
        assert record["status"] in ALLOWED, f"{name}: {record['status']} ({record['message']})"
        if record["plan"] is not None:
            assert record["quantile_oos"] is not None and len(record["quantile_ci"]) == 2
    assert not failures, "\n".join(failures)
