"""A user's algorithm that misbehaves (docs/extending.md): the record stays true.

`solve()` judges what an algorithm returns; these algorithms break the
contract in the ways a plug-in can — printing on stdout, calling
``sys.exit``, changing the instance it was given, reporting a cost that is
not its plan's, claiming ``optimal`` without declaring ``exact`` — and each
test checks that the record and the command's output say what happened,
instead of a silent wrong number, a broken ``--json`` or an exit 0 with
nothing printed. The in-process tests pass the classes to ``solve()``; the
CLI tests register them through a hand-written entry point (a
``.dist-info`` folder on ``sys.path``), the same path an installed plug-in
takes.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap

import pytest

from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.formulations.model.result import SolveResult
from deplbench.instances.model import parse_instance
from deplbench.params import Param
from deplbench.solvers import registry
from deplbench.solvers.base import PlotStyle, Solver
from deplbench.solvers.run import solve
from tests.instance_data import base_instance


def deterministic_instance():
    """Point-mass laws: a plan's verdict and cost are exact (one trajectory)."""
    data = base_instance()
    for m in data["models"]:
        m["improvement"] = {"kind": "point", "value": 1.0}
    data["switches"] = []
    return parse_instance(data)


def one_model_plan(instance, epochs: int):
    """``epochs`` epochs of the first model on cluster A, at the allocation meeting Tmax exactly."""
    model, cluster = instance.models[0].name, instance.clusters[0].name
    return plan_from_choices(instance, [model] * epochs, [cluster] * epochs,
                             {cluster: [d.name for d in instance.datasets]})


class _Base(Solver):
    label = "user"
    description = "a user's algorithm that breaks the contract"
    exact = False
    style = PlotStyle(colour="#123456", marker="o", linestyle="-")
    parameters = {"seed": Param(0, int, "seed", low=0)}


class Prints(_Base):
    name = "user-prints"

    def run(self, instance, seed):
        print("chatter from a user's algorithm")
        return SolveResult(self.name, "feasible", plan=one_model_plan(instance, 3))


class Exits(_Base):
    name = "user-exits"

    def run(self, instance, seed):
        sys.exit(0)


class WidensTmax(_Base):
    """Plans one epoch against a Tmax it raised on the instance it was given."""

    name = "user-widens-tmax"

    def run(self, instance, seed):
        object.__setattr__(instance, "time_max", instance.time_max * 1000)
        return SolveResult(self.name, "feasible", plan=one_model_plan(instance, 1))


def reporting(claimed: float) -> type[Solver]:
    """An algorithm returning a feasible plan with the cost ``claimed`` (0.001, nan) and the bound 0."""

    class ReportsCost(_Base):
        name = "user-reports-cost"

        def run(self, instance, seed):
            return SolveResult(self.name, "feasible", plan=one_model_plan(instance, 3), cost=claimed,
                               lower_bound=0.0)

    return ReportsCost


class ClaimsOptimal(_Base):
    name = "user-claims-optimal"

    def run(self, instance, seed):
        return SolveResult(self.name, "optimal", plan=one_model_plan(instance, 3))


def test_print_inside_an_algorithm_goes_to_stderr(capsys):
    res = solve(deterministic_instance(), Prints, eval_samples=1000)
    captured = capsys.readouterr()
    assert res.status == "feasible"
    assert captured.out == "" and "chatter from a user's algorithm" in captured.err


def test_sys_exit_inside_an_algorithm_is_a_status_error_record():
    res = solve(deterministic_instance(), Exits, eval_samples=1000)
    assert res.status == "error" and res.plan is None
    assert "sys.exit(0)" in res.message


def test_an_algorithm_that_changes_its_instance_is_judged_on_the_callers():
    inst = deterministic_instance()
    tmax = inst.time_max
    res = solve(inst, WidensTmax, eval_samples=1000)
    assert inst.time_max == tmax                          # the caller's instance is untouched
    # one epoch of the whole work within 1000 Tmax breaks (4) of the real instance
    assert res.status == "infeasible" and "Tmax" in res.message
    assert res.evaluation["feasible"] is False


@pytest.mark.parametrize("claimed", [0.001, math.nan, -5.0])
def test_the_record_cost_is_the_plans_objective_whatever_the_algorithm_says(claimed):
    inst = deterministic_instance()
    res = solve(inst, reporting(claimed), eval_samples=1000)
    plan_cost = res.evaluation["cost"]
    assert res.status == "feasible" and math.isfinite(plan_cost) and plan_cost > 0.1
    assert res.cost == plan_cost
    reported = res.diagnostics["cost_mismatch"]["reported"]
    assert reported == claimed or (math.isnan(claimed) and math.isnan(reported))
    assert "the algorithm reported" in res.message
    assert res.gap == pytest.approx(1.0)                  # (cost − 0) / cost, against the evaluated cost


def test_an_unevaluated_nan_cost_is_an_error_that_does_not_blame_an_overflow():
    res = solve(deterministic_instance(), reporting(math.nan), evaluate=False)
    assert res.status == "error" and "reported a cost of nan" in res.message
    assert "overflow" not in res.message


def test_optimal_from_an_algorithm_that_is_not_exact_is_recorded_as_feasible():
    res = solve(deterministic_instance(), ClaimsOptimal, eval_samples=1000)
    assert res.status == "feasible" and res.diagnostics["reported_status"] == "optimal"
    assert "declares exact = False" in res.message


def returning(make) -> type[Solver]:
    """An algorithm whose record is ``make(plan)`` for a 3-epoch plan of the instance."""

    class Returns(_Base):
        name = "user-returns"

        def run(self, instance, seed):
            return make(one_model_plan(instance, 3))

    return Returns


def _with_status_none(plan):
    res = SolveResult("user-returns", "feasible", plan=plan)
    res.status = None                                     # set after the constructor's check
    return res


@pytest.mark.parametrize("make, message", [
    (lambda plan: SolveResult("user-returns", "feasible", plan=plan.model_dump()),
     "returned a plan of type dict, not a Plan"),          # was an AttributeError traceback
    (lambda plan: SolveResult("user-returns", "feasible", plan=plan, cost="cheap"),
     "returned cost = 'cheap', not a number"),             # was a TypeError traceback
    (lambda plan: SolveResult("user-returns", "feasible", plan=plan, lower_bound=True),
     "returned lower_bound = True, not a number"),
    (_with_status_none, "returned status None, not one of optimal"),   # was printed, exit 0
    (lambda plan: SolveResult("user-returns", "feasible", plan=plan, diagnostics=[1]),
     "returned diagnostics of type list, not a dict"),
    (lambda plan: SolveResult("user-returns", "feasible", plan=plan.model_copy(update={"epochs": [
        e.model_copy(update={"allocation": math.nan}) for e in plan.epochs]})),   # model_copy skips the checks
     "returned a plan that is not valid: invalid plan: epochs[0].allocation: Input should be a finite number"),
    # a bound or gap that would read as a proof: max(0, nan) is 0, and (cost − inf)/cost clamps to 0
    (lambda plan: SolveResult("user-returns", "optimal", plan=plan, lower_bound=math.nan),
     "returned lower_bound = nan, not a number"),
    (lambda plan: SolveResult("user-returns", "optimal", plan=plan, lower_bound=math.inf),
     "returned lower_bound = inf (no plan costs that much) beside a plan"),
    (lambda plan: SolveResult("user-returns", "optimal", plan=plan, gap=math.nan), "returned gap = nan, not a number"),
    (lambda plan: SolveResult("user-returns", "optimal", plan=plan, gap=-5.0), "returned gap = -5.0: a relative gap"),
    (lambda plan: SolveResult("user-returns", "optimal", plan=plan, gap=math.inf),
     "returned gap = inf: a relative gap"),
])
def test_a_record_that_breaks_the_contract_is_a_status_error_naming_the_field(make, message):
    res = solve(deterministic_instance(), returning(make), eval_samples=1000)
    assert res.status == "error" and res.plan is None, res.message
    assert res.message.startswith("Returns.run ") and message in res.message


def test_a_plan_whose_evaluated_cost_overflows_is_an_error_even_when_the_algorithm_gave_no_cost():
    """With cost=None the judge filled in the evaluated cost, inf, and the record said feasible
    (the overflow check ran only on the algorithm's own number, before the judging)."""
    import warnings

    from deplbench.instances.generators import generate

    data = json.loads(generate("knapsack", seed=0).to_json())
    data["clusters"][0]["unit_cost"] = 3.75e306       # valid: the cheapest epoch costs less than 1.8e308
    make = lambda plan: SolveResult("user-returns", "feasible", plan=plan)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = solve(parse_instance(data), returning(make), eval_samples=1000)
    assert res.status == "error" and res.cost == math.inf
    assert res.message.startswith("cost: the plan's cost (2) is inf in binary64"), res.message


def test_an_evaluation_the_algorithm_brings_is_dropped():
    """A record with no plan but an `evaluation` of its own said verdict feasible, quantile 0.1."""
    make = lambda plan: SolveResult("user-returns", "no_solution", message="none found",  # noqa: E731
                                    evaluation={"verdict": "feasible", "quantile": 0.1, "feasible": True})
    res = solve(deterministic_instance(), returning(make), eval_samples=1000)
    record = res.to_dict()
    assert res.status == "no_solution" and res.evaluation is None
    assert record["verdict"] is None and record["quantile_oos"] is None
    assert "evaluation_dropped" in res.diagnostics


def test_diagnostics_json_cannot_hold_are_kept_as_text_with_the_plan():
    """An arbitrary object in diagnostics ended `solve --json` in a TypeError traceback."""
    import numpy as np

    make = lambda plan: SolveResult("user-returns", "feasible", plan=plan,  # noqa: E731
                                    diagnostics={"obj": object(), "arr": np.arange(2)})
    res = solve(deterministic_instance(), returning(make), eval_samples=1000)
    assert res.status == "feasible" and res.plan is not None
    assert res.diagnostics["obj"].startswith("<object object") and res.diagnostics["arr"] == [0, 1]
    json.dumps(res.to_dict())


class PlansPastTheHorizon(_Base):
    """500 epochs on an instance of K̄ = 5."""

    name = "user-plans-past-the-horizon"

    def run(self, instance, seed):
        plan = one_model_plan(instance, 1)
        return SolveResult(self.name, "feasible", plan=plan.model_copy(update={"epochs": plan.epochs * 500}))


def test_a_plan_past_the_horizon_too_long_to_simulate_is_infeasible_not_an_error():
    """eval_samples is sized for K̄ epochs: the judging of a far longer plan ran out of budget and the
    record said status error, "use at most N samples", for a plan that plainly breaks (5)."""
    from deplbench.limits import memory_budget

    inst = parse_instance(base_instance())            # random laws: the plan is simulated, with its bands
    with memory_budget(1 / 1024):                       # 1 MiB: K̄ + 1 columns fit, 501 do not
        res = solve(inst, PlansPastTheHorizon, eval_samples=1000)
    assert res.status == "infeasible", res.message
    # 1 MiB holds neither the bands of 501 columns nor the plan with 100 samples: the reason names epochs
    assert "epochs: 500 epochs exceed the horizon K̄ = 5 (not simulated: epochs: a plan of 500 epochs" in res.message
    assert res.diagnostics["reported_status"] == "feasible"


def with_hook(hook: str, body) -> type[Solver]:
    """An algorithm whose classmethod ``hook`` (check_params, build_settings) is ``body``."""

    class Hooked(_Base):
        name = "user-hooked"

        def run(self, instance, seed):
            return SolveResult(self.name, "feasible", plan=one_model_plan(instance, 3))

    setattr(Hooked, hook, classmethod(body))
    return Hooked


def _raise_key_error(cls, resolved):
    raise KeyError("oops")


@pytest.mark.parametrize("hook, body, message", [
    ("check_params", _raise_key_error, "algorithm 'user-hooked': check_params failed (KeyError: 'oops')"),
    ("check_params", lambda cls, resolved: "no", "check_params returned 'no', not None or (name, reason)"),
    ("build_settings", _raise_key_error, "algorithm 'user-hooked': build_settings failed (KeyError: 'oops')"),
])
def test_a_failing_parameter_hook_is_one_error_naming_the_algorithm(hook, body, message):
    """A KeyError in a plug-in's check_params or build_settings ended `solve` and `run --dry-run` in a
    traceback; a check_params returning a string said "too many values to unpack (expected 2)"."""
    from deplbench.errors import SolverError

    with pytest.raises(SolverError) as info:
        solve(deterministic_instance(), with_hook(hook, body), eval_samples=1000)
    assert str(info.value) == message or message in str(info.value)


class PolicyRaises(_Base):
    name = "user-policy-raises"

    def run(self, instance, seed):
        return SolveResult(self.name, "feasible", plan=one_model_plan(instance, 3))

    def closed_loop_policy(self, instance, result, **params):
        raise RuntimeError("policy boom")


class PolicyOfTheWrongType(PolicyRaises):
    name = "user-policy-wrong-type"

    def closed_loop_policy(self, instance, result, **params):
        return "not a policy"


@pytest.mark.parametrize("cls, message", [
    (PolicyRaises, "PolicyRaises.closed_loop_policy: RuntimeError: policy boom"),
    (PolicyOfTheWrongType, "returned str, not a ClosedLoopPolicy"),    # was an AttributeError traceback
])
def test_a_failing_closed_loop_policy_keeps_the_plans_simulations(cls, message):
    from deplbench.solvers.run import closed_loop

    inst = deterministic_instance()
    res = solve(inst, cls, eval_samples=1000)
    out = closed_loop(inst, res, cls, runs=50)
    assert out["policy"] is None and message in out["policy_error"]
    assert out["plan"]["runs"] == 50 and out["plan_stopped"] is not None


# ------------------------------------------------------------ through the CLI
PLUGIN_MODULE = textwrap.dedent('''
    from deplbench.params import Param
    from tests.solvers import test_user_algorithms as user

    class Prints(user.Prints):
        name = "hunt-prints"

    class Exits(user.Exits):
        name = "hunt-exits"

    class PolicyRaises(Prints):
        name = "hunt-policy-raises"
        closed_loop_policy = user.PolicyRaises.closed_loop_policy

    class BadPriority(Prints):
        name = "hunt-bad-priority"
        reference_priority = "x"

    class BadDefault(Prints):
        name = "hunt-bad-default"
        parameters = {"seed": Param(-5, int, "seed", low=0)}

    class BadBuild(Prints):
        name = "hunt-bad-build"
        @classmethod
        def build_settings(cls, resolved):
            raise TypeError("bad build")
''')


@pytest.fixture
def entry_point_plugin(tmp_path, monkeypatch):
    """A plug-in installed the way pip leaves one: a module and its ``.dist-info`` on sys.path."""
    site = tmp_path / "site"
    info = site / "hunt_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hunt-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[deplbench.solvers]\nhunt-prints = hunt_plugin:Prints\nhunt-exits = hunt_plugin:Exits\n"
        "hunt-policy-raises = hunt_plugin:PolicyRaises\nhunt-bad-priority = hunt_plugin:BadPriority\n"
        "hunt-bad-default = hunt_plugin:BadDefault\nhunt-bad-build = hunt_plugin:BadBuild\n", encoding="utf-8")
    (site / "hunt_plugin.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    yield
    sys.modules.pop("hunt_plugin", None)
    monkeypatch.undo()
    registry.refresh()


def test_cli_json_stays_one_object_and_a_plugins_exit_is_reported(entry_point_plugin, deplbench_cli, tmp_path):
    path = tmp_path / "inst.json"
    path.write_text(deterministic_instance().model_dump_json(by_alias=True), encoding="utf-8")
    status, out, err = deplbench_cli("solve", path, "--algo", "hunt-prints", "--json", "--eval-samples", 1000)
    assert status == 0, err
    assert json.loads(out)["status"] == "feasible"        # stdout is the one JSON object, nothing else
    assert "chatter from a user's algorithm" in err
    status, out, err = deplbench_cli("solve", path, "--algo", "hunt-exits", "--json", "--eval-samples", 1000)
    assert status == 1, (out, err)                        # a failed solve, not exit 0 with nothing
    rec = json.loads(out)
    assert rec["status"] == "error" and "sys.exit(0)" in rec["message"]


def test_cli_simulate_reports_a_failing_policy_in_its_record(entry_point_plugin, deplbench_cli, tmp_path):
    """A RuntimeError in a plug-in's closed_loop_policy ended `simulate` in a traceback."""
    path = tmp_path / "inst.json"
    path.write_text(deterministic_instance().model_dump_json(by_alias=True), encoding="utf-8")
    status, out, err = deplbench_cli("simulate", path, "--algo", "hunt-policy-raises", "--json", "--runs", 50,
                                     "--eval-samples", 1000)
    assert status == 1 and "Traceback" not in err, err
    cl = json.loads(out)["closed_loop"]
    assert "RuntimeError: policy boom" in cl["policy_error"] and cl["plan"]["runs"] == 50


def test_a_plugin_with_bad_metadata_is_listed_unavailable_not_the_end_of_the_listing(entry_point_plugin,
                                                                                     deplbench_cli, tmp_path):
    """reference_priority = "x" on one plug-in stopped `deplbench algorithms` (and --json) with
    "error: invalid literal for int() with base 10: 'x'"; a default failing its own Param ran."""
    status, out, err = deplbench_cli("algorithms")
    assert status == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    assert "unavailable" not in lines["depl"] and "unavailable" not in lines["hunt-prints"]
    assert "BadPriority.reference_priority = 'x': expected an int" in lines["hunt-bad-priority"]
    assert ("BadDefault.parameters['seed']: its default -5 fails its own declaration"
            in lines["hunt-bad-default"])
    status, out, err = deplbench_cli("algorithms", "--json")
    assert status == 0 and json.loads(out), err
    path = tmp_path / "inst.json"
    path.write_text(deterministic_instance().model_dump_json(by_alias=True), encoding="utf-8")
    status, _, err = deplbench_cli("solve", path, "--algo", "hunt-bad-default")
    assert status == 2 and "its default -5 fails its own declaration" in err


def test_a_sweep_of_a_plugin_whose_settings_hook_fails_is_refused_at_load(entry_point_plugin, tmp_path):
    from deplbench.benchmarks.sweep import load_sweep
    from deplbench.errors import SweepError

    sweep = tmp_path / "s.toml"
    sweep.write_text(textwrap.dedent("""
        [sweep]
        name = "hooks"
        [[instances]]
        id = "k"
        family = "knapsack"
        params = { n_items = 4, horizon = 4 }
        [[algorithms]]
        name = "hunt-bad-build"
    """), encoding="utf-8")
    with pytest.raises(SweepError) as info:           # what `run --dry-run` prints after "error: "
        load_sweep(sweep)
    assert str(info.value) == ("algorithms[0].params: algorithm 'hunt-bad-build': build_settings failed "
                               "(TypeError: bad build)")


@pytest.mark.parametrize("bound, gap", [(1e300, None), (-1.0, "(cost + 1)/cost"), ("cost", 0.0)])
def test_a_bound_above_the_plans_cost_gives_no_gap(bound, gap):
    """A lower bound above the plan's cost (beyond rounding) means the plan is not feasible or the
    bound not valid: the record has no gap, where max(0, ·) would have said 0, a proof."""
    ref = solve(deterministic_instance(), returning(lambda plan: SolveResult("user-returns", "feasible", plan=plan)),
                eval_samples=1000)
    lb = ref.cost * (1 + 1e-12) if bound == "cost" else bound
    res = solve(deterministic_instance(),
                returning(lambda plan: SolveResult("user-returns", "feasible", plan=plan, lower_bound=lb)),
                eval_samples=1000)
    assert res.status == "feasible" and res.lower_bound == lb
    if bound == -1.0:
        assert res.gap == pytest.approx((ref.cost + 1.0) / ref.cost)
    else:
        assert res.gap == gap
