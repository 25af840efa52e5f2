"""Closed-loop and out-of-sample settings: one set of limits and defaults for every front.

:mod:`deplbench.formulations.evaluation.settings` is the one place ``runs``,
``seed``, ``confidence`` and ``samples`` are checked and defaulted; the
Python functions (``simulate``, ``closed_loop``, ``evaluate_plan``), the
command line (``deplbench simulate``, ``deplbench library verify``) and a
sweep's ``[sweep.evaluation] closed_loop`` table refuse the same values for
the same reason, each naming the field as its user wrote it.
"""

from __future__ import annotations

import inspect

import pytest

from deplbench import limits
from deplbench.benchmarks.sweep import parse_sweep
from deplbench.benchmarks.tasks import CLOSED_LOOP_KEYS
from deplbench.errors import PlanError, SweepError
from deplbench.formulations.evaluation import settings
from deplbench.formulations.evaluation.closed_loop import FixedPlanPolicy, simulate
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.result import SolveResult
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import closed_loop
from tests.instance_data import two_model_data


@pytest.fixture(scope="module")
def inst():
    return parse_instance(two_model_data())


@pytest.fixture(scope="module")
def inst_file(inst, tmp_path_factory):
    path = tmp_path_factory.mktemp("evaluation_settings") / "small.json"
    inst.save(path)
    return path


def _sweep(closed: dict) -> dict:
    return {"sweep": {"name": "s", "evaluation": {"closed_loop": closed}},
            "instances": [{"id": "k", "family": "knapsack", "params": {"n_items": 5}}],
            "algorithms": [{"name": "milp"}]}


BAD = [
    ("runs", 1, f"need between 2 and {limits.MAX_RUNS} simulated runs, got 1"),
    ("runs", limits.MAX_RUNS + 1, f"need between 2 and {limits.MAX_RUNS} simulated runs, got {limits.MAX_RUNS + 1}"),
    ("seed", -1, "must be a non-negative integer, got -1"),
    # every seed's rule (params.seed_refusal): a 2**64 ran, and the store's JSON kept a number SQLite reads as a float
    ("seed", 2**64, "must be at most 2**63 − 1 = 9223372036854775807 (the results store keeps seeds as 64-bit "
                    "integers), got 18446744073709551616"),
    ("seed", 2**63, "must be at most 2**63 − 1 = 9223372036854775807 (the results store keeps seeds as 64-bit "
                    "integers), got 9223372036854775808"),
    ("confidence", 1.0, "must be in [0.5, 1 − 1e-12], got 1.0"),
    ("confidence", 0.0, "must be in [0.5, 1 − 1e-12], got 0.0"),
    # below 1/2 a one-sided upper bound lies below its own estimate
    ("confidence", 0.49, "must be in [0.5, 1 − 1e-12], got 0.49"),
    # (1 + level)/2 rounded to 1: the simulation ran, then its Clopper–Pearson end said "got 1.0"
    ("confidence", 1 - 1e-16, "must be in [0.5, 1 − 1e-12], got 0.9999999999999999"),
]


@pytest.mark.parametrize("name,value,reason", BAD, ids=[f"{b[0]}={b[1]}" for b in BAD])
def test_one_closed_loop_limit_from_every_front(inst, inst_file, deplbench_cli, name, value, reason):
    # the command line: one line naming the flag, exit 2, before any solve
    status, out, err = deplbench_cli("simulate", inst_file, "--algo", "one-switch", f"--{name}", value)
    assert status == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and f"--{name}: {reason}" in err, err
    # a sweep's table, at load
    with pytest.raises(SweepError) as exc:
        parse_sweep(_sweep({name: value}), check_names=False)
    assert str(exc.value) == f"sweep.evaluation.closed_loop.{name}: {reason}"
    # closed_loop(): refused before anything is simulated, even with no plan to simulate
    # (it checked nothing then before, and had no upper limit on runs)
    empty = SolveResult(algorithm="one-switch", status="no_solution")
    with pytest.raises(PlanError) as exc:
        closed_loop(inst, empty, **{name: value})
    assert str(exc.value) == f"{name}: {reason}"
    # simulate(): the same
    plan = Plan(epochs=[Epoch(model=inst.models[0].name, cluster=inst.clusters[0].name, allocation=1.0)])
    with pytest.raises(PlanError) as exc:
        simulate(inst, FixedPlanPolicy(inst, plan), **{name: value})
    assert str(exc.value) == f"{name}: {reason}"
    # evaluate_plan(): its interval's level by the same rule (its seed too)
    if name in ("seed", "confidence"):
        with pytest.raises(PlanError) as exc:
            evaluate_plan(inst, plan, samples=200, **{name: value})
        assert str(exc.value) == f"{name}: {reason}"


def test_a_sweep_keeps_tomls_types():
    # a typed source tells 3 from 3.0 (as Param's strict mode does for solver parameters)
    with pytest.raises(SweepError, match=r"^sweep.evaluation.closed_loop.runs: must be an integer, got 300.0$"):
        parse_sweep(_sweep({"runs": 300.0}), check_names=False)
    with pytest.raises(SweepError, match=r"closed_loop.seed: must be an integer, got True"):
        parse_sweep(_sweep({"seed": True}), check_names=False)


def test_one_set_of_closed_loop_defaults(deplbench_cli):
    from deplbench.cli import build_parser

    defaults = {"runs": settings.RUNS, "seed": settings.SEED, "confidence": settings.CONFIDENCE}
    assert defaults == {"runs": 10_000, "seed": 0, "confidence": 0.95}     # the numbers docs/sweeps.md states
    for fn in (closed_loop, simulate):
        sig = inspect.signature(fn).parameters
        assert {k: sig[k].default for k in defaults} == defaults, fn.__name__
    assert {k: CLOSED_LOOP_KEYS[k] for k in defaults} == defaults
    args = build_parser().parse_args(["simulate", "x.json", "--algo", "one-switch"])
    assert {k: getattr(args, k) for k in defaults} == defaults


@pytest.mark.parametrize("samples", [99, 0])
def test_one_samples_limit_from_every_front(inst, inst_file, deplbench_cli, tmp_path, samples):
    reason = f"need at least {settings.MIN_SAMPLES} trajectories, got {samples}"
    status, out, err = deplbench_cli("simulate", inst_file, "--algo", "one-switch", "--eval-samples", samples)
    assert status == 2 and err.strip() == f"error: --eval-samples: {reason}", err
    status, out, err = deplbench_cli("library", "verify", tmp_path, "none", tmp_path / "none.sol",
                                     "--samples", samples)
    assert status == 2 and err.strip() == f"error: --samples: {reason}", err
    plan = Plan(epochs=[Epoch(model=inst.models[0].name, cluster=inst.clusters[0].name, allocation=1.0)])
    with pytest.raises(PlanError) as exc:
        evaluate_plan(inst, plan, samples=samples)
    assert str(exc.value) == f"samples: {reason}"


def test_each_front_reads_its_default_sample_count_here():
    """The default out-of-sample counts differ by front (their cost differs) and are declared once:
    the functions' defaults and every command's --help read the settings' constants."""
    from deplbench.benchmarks.library.verify import verify_solution
    from deplbench.cli import build_parser
    from deplbench.solvers.run import solve

    assert inspect.signature(evaluate_plan).parameters["samples"].default == settings.EVALUATE_SAMPLES
    assert inspect.signature(solve).parameters["eval_samples"].default == settings.SOLVE_SAMPLES
    assert inspect.signature(verify_solution).parameters["samples"].default == settings.VERIFY_SAMPLES
    parser = build_parser()
    for argv, dest, value in ((["evaluate", "i.json", "p.json"], "samples", settings.EVALUATE_SAMPLES),
                              (["library", "verify", "lib", "x", "s.sol"], "samples", settings.VERIFY_SAMPLES)):
        assert getattr(parser.parse_args(argv), dest) == value
    from deplbench.cli import simulate as simulate_cli
    from deplbench.cli import solvers as solvers_cli
    assert (solvers_cli.EVAL_SAMPLES, simulate_cli.EVAL_SAMPLES) == (settings.SOLVE_SAMPLES, settings.SIMULATE_SAMPLES)


@pytest.mark.parametrize("name,value", [("trajectory", "no"), ("exact", 1), ("exact", None), ("trajectory", "False")])
def test_evaluate_plans_yes_no_arguments_are_booleans(inst, name, value):
    """``if trajectory`` would read ``"no"`` as yes (any truthy value), ``exact=None`` as no."""
    plan = Plan(epochs=[Epoch(model=inst.models[0].name, cluster=inst.clusters[0].name, allocation=1.0)])
    with pytest.raises(PlanError) as exc:
        evaluate_plan(inst, plan, samples=200, **{name: value})
    assert str(exc.value) == f"{name}: must be True or False, got {value!r}"
    import numpy as np

    assert evaluate_plan(inst, plan, samples=200, **{name: np.bool_(False)}).samples == 200
