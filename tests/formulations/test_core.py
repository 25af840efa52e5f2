"""Core primitives: exact allocation, scenario streams, result record, solver interface."""

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from deplbench.errors import SolverError
from deplbench.formulations.model.allocation import allocate, plan_from_choices
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations, quantile_rank
from deplbench.instances.model import parse_instance
from deplbench.solvers.base import Param, Solver
from deplbench.solvers.run import solve
from tests.instance_data import two_model_data


def make_instance(**over):
    return parse_instance(two_model_data(**over))


@pytest.mark.parametrize("seed", range(25))
def test_allocate_matches_numerical_optimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    c, kappa = rng.uniform(0.5, 5, n), rng.uniform(0.1, 2, n)
    r, comm = rng.uniform(0.5, 3, n), rng.uniform(0, 0.3, n)
    T = np.sum(c / r) + comm.sum() + rng.uniform(0.01, 5)
    a = allocate(c, comm, kappa, r, T)
    assert a.feasible
    assert a.time <= T * (1 + 1e-9)
    assert np.all(a.x <= r * (1 + 1e-12)) and np.all(a.x > 0)
    best = np.inf
    for x0 in (r * 0.999, r * 0.7):
        res = minimize(lambda x: kappa @ x, x0, method="SLSQP", bounds=[(1e-6, ri) for ri in r],
                       constraints=[{"type": "ineq", "fun": lambda x: T - np.sum(c / x) - comm.sum()}],
                       options={"ftol": 1e-13, "maxiter": 1000})
        if res.success and np.sum(c / res.x) + comm.sum() <= T * (1 + 1e-8):
            best = min(best, res.fun)
    # KKT certificate of the convex programme: one price λ with
    # κ_k = λ c_k / x_k² on uncapped epochs and κ_k ≤ λ c_k / r_k² on capped ones.
    lam = a.time_price
    free = ~a.capped
    assert np.allclose(kappa[free], lam * c[free] / a.x[free] ** 2, rtol=1e-7)
    assert np.all(kappa[a.capped] <= lam * c[a.capped] / r[a.capped] ** 2 * (1 + 1e-7))
    assert a.time == pytest.approx(T, rel=1e-9)
    if np.isfinite(best):  # a general-purpose NLP solver never does better
        assert a.cost <= best * (1 + 1e-6)


def test_allocate_closed_form_and_infeasible():
    c = np.array([1.0, 4.0, 9.0])
    a = allocate(c, np.zeros(3), np.ones(3), np.full(3, 1e6), 2.0)
    assert a.cost == pytest.approx(np.sum(np.sqrt(c)) ** 2 / 2.0, rel=1e-12)
    bad = allocate(c, np.zeros(3), np.ones(3), np.ones(3), 10.0)  # needs 14 at capacity
    assert not bad.feasible and "Tmax" in bad.reason


def test_plan_from_choices_respects_constraints():
    inst = make_instance()
    plan = plan_from_choices(inst, ["big", "big", "small"], ["A", "B", "A"], {"A": ["d0"], "B": ["d0"]})
    x = np.array(plan.allocations)
    assert np.all(x <= np.array([2.0, 1.0, 2.0]) + 1e-12)
    time = 4 / x[0] + 4 / x[1] + 1 / x[2] + 1 / 2 + 1 / 1 + 0.5 / 2
    assert time == pytest.approx(40.0, rel=1e-9) or time < 40.0


def test_scenarios_reproducible_and_streams_independent():
    inst = make_instance()
    a = ScenarioSampler(inst, seed=7).in_sample(50)
    b = ScenarioSampler(inst, seed=7).in_sample(50)
    c = ScenarioSampler(inst, seed=7).out_of_sample(50)
    d = ScenarioSampler(inst, seed=8).in_sample(50)
    assert np.array_equal(a.improvement, b.improvement) and np.array_equal(a.jump, b.jump)
    assert not np.array_equal(a.improvement, c.improvement)
    assert not np.array_equal(a.improvement, d.improvement)


def test_final_losses_by_hand():
    inst = make_instance()
    sc = ScenarioSampler(inst, seed=1).in_sample(5)
    losses = sc.final_losses([0, 0, 1], [1.0, 1.0, 1.0])
    s = 3
    expect = (10.0 - 2.0 / np.sqrt(1) * sc.improvement[s, 0, 0] - 2.0 / np.sqrt(2) * sc.improvement[s, 1, 0]
              - 1.2 / np.sqrt(3 + 1) * sc.improvement[s, 2, 1] + sc.jump[s, 2, 0])
    assert losses[s] == pytest.approx(expect, rel=1e-12)
    with pytest.raises(KeyError):
        sc.final_losses([1, 0], [1.0, 1.0])  # small -> big is not allowed


def test_saa_counts():
    assert allowed_violations(0.99, 100) == 1
    assert allowed_violations(0.99, 1000) == 10
    assert quantile_rank(0.9, 20) == 18


def test_result_round_trip():
    inst = make_instance()
    plan = plan_from_choices(inst, ["big"], ["A"], {"A": ["d0"]})
    r = SolveResult(algorithm="x", status="feasible", plan=plan, cost=1.5, lower_bound=1.0)
    d = json.loads(json.dumps(r.to_dict()))
    back = SolveResult.from_dict(d)
    assert back.plan == plan and back.cost == 1.5
    with pytest.raises(ValueError):
        SolveResult(algorithm="x", status="done")


def test_result_read_back_from_strict_json_keeps_an_infinite_interval_end():
    # `solve -o` writes +inf as null with "quantile_ci_nonfinite" (jsonio.dumps)
    from deplbench.jsonio import dumps

    r = SolveResult(algorithm="x", status="feasible", evaluation={"quantile_ci": [0.25, math.inf], "quantile": 0.3})
    back = SolveResult.from_dict(json.loads(dumps(r.to_dict())))
    assert back.evaluation["quantile_ci"] == [0.25, math.inf] and "quantile_ci_nonfinite" not in back.evaluation


class _Crashing(Solver):
    name = "crashing"
    parameters = {"level": Param(3, int, "a level", low=1, high=5)}

    def run(self, instance, level):
        raise RuntimeError("boom")


def test_solve_turns_crash_into_error_record_and_checks_params():
    inst = make_instance()
    res = solve(inst, _Crashing, level="4")
    assert res.status == "error" and "boom" in res.message and res.params["level"] == 4
    with pytest.raises(SolverError, match="level"):
        solve(inst, _Crashing, level=9)
    with pytest.raises(SolverError, match="colour"):
        solve(inst, _Crashing, colour=1)
    with pytest.raises(SolverError, match="unknown algorithm"):
        solve(inst, "no-such-algo")


def test_param_convert_rejects_fractional_int_strings_and_nan():
    # "1.5" for an int parameter is refused, not truncated to 1 without a word.
    assert Param(3, int, low=1).convert("level", "2") == 2
    assert Param(3, int, low=1).convert("level", "2.0") == 2
    with pytest.raises(SolverError, match="level"):
        Param(3, int, low=1).convert("level", "1.5")
    # NaN passes every bound comparison, so it must be refused explicitly.
    with pytest.raises(SolverError, match="eps"):
        Param(0.1, float, low=0.0, low_inclusive=False, high=10.0).convert("eps", "nan")
    with pytest.raises(SolverError, match="eps"):
        Param(0.1, float).convert("eps", float("nan"))


def test_param_convert_refuses_digits_grouped_with_underscores():
    """int() and float() read "1_0" as 10; a command-line number is its digits alone."""
    for spec, text in ((Param(3, int), "1_0"), (Param(0.1, float), "1_0.5"), (Param(0.1, float), "1e1_0"),
                       (Param((0.9,), tuple, item=float), "0.9,0_8")):
        with pytest.raises(SolverError, match=r"^parameter 'p': expected \w+, got .*'_' between digits is refused"):
            spec.convert("p", text)
    # the numbers themselves, and strings that are no number, are unchanged
    assert Param(3, int).convert("p", 10) == 10 and Param(0.1, float).convert("p", "10.5") == 10.5
    assert Param("a", str).convert("p", "general_settings") == "general_settings"


class _Overcommitting(Solver):
    """Returns a plan whose allocation exceeds the cluster's capacity (5)."""

    name = "overcommitting"
    parameters = {}

    def run(self, instance):
        from deplbench.formulations.model.plan import Epoch, Plan

        plan = Plan(epochs=[Epoch(model="big", cluster="A", allocation=5.0)], datasets={"A": ["d0"]})
        return SolveResult(algorithm=self.name, status="feasible", plan=plan, cost=5.0)


class _Misnaming(Solver):
    name = "misnaming"
    parameters = {}

    def run(self, instance):
        from deplbench.formulations.model.plan import Epoch, Plan

        plan = Plan(epochs=[Epoch(model="nope", cluster="A", allocation=1.0)], datasets={"A": ["d0"]})
        return SolveResult(algorithm=self.name, status="optimal", plan=plan, cost=1.0)


class _Declining(Solver):
    """Declares it applies only to one-cluster instances; run() must then never be called."""

    name = "declining"
    parameters = {"level": Param(1, int, low=1)}

    @classmethod
    def applies(cls, instance):
        return (instance.n_clusters == 1, f"needs one cluster, got {instance.n_clusters}")

    def run(self, instance, level):
        raise AssertionError("run() called although applies() said no")


class _BrokenDeclaration(_Declining):
    name = "broken-declaration"

    @classmethod
    def applies(cls, instance):
        raise ValueError("boom")


def test_solve_records_skipped_when_the_algorithm_does_not_apply():
    from deplbench.benchmarks.record import STATUSES
    from deplbench.benchmarks.store import is_failure

    inst = make_instance()
    assert inst.n_clusters != 1
    res = solve(inst, _Declining, level=2)
    assert res.status == "skipped" and res.message == f"needs one cluster, got {inst.n_clusters}"
    assert res.plan is None and res.evaluation is None and res.params == {"level": 2}
    # bad parameters are still the caller's mistake, checked first
    with pytest.raises(SolverError, match="level"):
        solve(inst, _Declining, level=0)
    # skipped is a status of records, and not a failure (never retried)
    record = {"status": res.status, "message": res.message, "error": None}
    assert "skipped" in STATUSES and not is_failure(record)
    # a declaration that crashes is an error, not a traceback
    broken = solve(inst, _BrokenDeclaration)
    assert broken.status == "error" and "boom" in broken.message


def test_solve_downgrades_plans_that_break_hard_constraints():
    inst = make_instance()
    res = solve(inst, _Overcommitting, eval_samples=1000)
    assert res.status == "infeasible" and "capacity" in res.message
    assert res.diagnostics["reported_status"] == "feasible"
    bad = solve(inst, _Misnaming, eval_samples=1000)
    assert bad.status == "error" and "nope" in bad.message


# --------------------------------------------------------------------------
# deplbench.params: the one validation path and strict typing
# --------------------------------------------------------------------------


def test_param_is_one_class_reexported_from_solvers_base():
    from deplbench import params

    assert Param is params.Param


@pytest.mark.parametrize("spec, value, expected", [
    # an exclusive upper bound (a share in (0, 1))
    (Param(0.5, float, low=0.0, low_inclusive=False, high=1.0, high_inclusive=False), 0.999, 0.999),
    (Param(0.5, float, low=0.0, low_inclusive=False, high=1.0, high_inclusive=False), 1.0, "must be < 1.0"),
    (Param(0.5, float, high=1.0), 1.0, 1.0),
    # finite refuses ±inf; without it inf passes a lower bound
    (Param(1.0, float, low=0.0, finite=True), float("inf"), "must be finite"),
    (Param(1.0, float, low=0.0), float("inf"), float("inf")),
    # tuples: a CLI string is split, every element converted and bounded
    (Param((0.9,), tuple, low=0.0, low_inclusive=False, high=1.0), "0.9,0.8", (0.9, 0.8)),
    (Param((0.9,), tuple, low=0.0, low_inclusive=False, high=1.0), [1, 0.5], (1.0, 0.5)),
    (Param((0.9,), tuple, low=0.0, low_inclusive=False, high=1.0), (0.9, 1.5), "every element must be <= 1.0"),
    (Param((0.9,), tuple, low=0.0, low_inclusive=False, high=1.0), (0.9, float("nan")), "every element"),
    (Param((0.9,), tuple), (True,), "expected tuple"),
    (Param((0.9,), tuple), 0.9, "expected tuple"),
    (Param((2,), tuple, item=int, low=1), (3, 2.0), (3, 2)),
    # a last check with its own reason
    (Param("a.lp", str, check=lambda v: "" if v.endswith(".lp") else "must end in .lp"), "m.txt",
     "must end in .lp"),
    (Param("a.lp", str, check=lambda v: "" if v.endswith(".lp") else "must end in .lp"), "m.lp", "m.lp"),
])
def test_param_bounds_tuples_and_checks(spec, value, expected):
    if isinstance(expected, str) and expected != value:
        with pytest.raises(SolverError, match=rf"^parameter 'x': .*{expected}"):
            spec.convert("x", value, strict=True)
    else:
        assert spec.convert("x", value) == expected


@pytest.mark.parametrize("value", [True, False])
def test_param_never_reads_a_boolean_as_a_number(value):
    with pytest.raises(SolverError, match="eta"):
        Param(200, int, low=1).convert("eta", value)
    with pytest.raises(SolverError, match="eps"):
        Param(0.1, float).convert("eps", value)


def test_param_strict_refuses_strings_for_numbers_and_names_the_error_class():
    from deplbench.errors import SweepError
    from deplbench.params import resolve

    spec = {"eta": Param(200, int, low=1), "calibrate": Param(False, bool)}
    assert resolve(spec, {"eta": "50", "calibrate": "yes"}, owner="x") == {"eta": 50, "calibrate": True}
    with pytest.raises(SweepError, match="'eta'.*string"):
        resolve(spec, {"eta": "50"}, owner="x", strict=True, error=SweepError)
    with pytest.raises(SweepError, match="has no parameter 'etaa'"):
        resolve(spec, {"etaa": 5}, owner="algorithm 'depl'", strict=True, error=SweepError)
    with pytest.raises(SolverError, match="calibrate"):
        Param(False, bool).convert("calibrate", 2)
    with pytest.raises(SolverError, match="name"):
        Param("a", str).convert("name", 3)
    assert resolve(spec, {"eta": 7}, owner="x", strict=True) == {"eta": 7, "calibrate": False}


# --------------------------------------------------------------------------
# registry: solvers declare themselves
# --------------------------------------------------------------------------


def test_every_builtin_declares_label_style_and_exactness():
    import json as _json

    from deplbench.solvers.registry import SOLVERS, available, solver_info

    names = available()
    assert "knapsack-dp" in names and "best-exp" in names
    styles = set()
    for name in names:
        info = solver_info(name)
        assert _json.loads(_json.dumps(info)) == info  # JSON-able, as stored in task records
        assert info["name"] == name and info["label"] and info["description"]
        assert set(info["style"]) == {"colour", "marker", "linestyle"}
        styles.add(tuple(sorted(info["style"].items())))
        assert info["source"]["kind"] == "builtin" and name in SOLVERS
    assert len(styles) == len(names)  # no two built-ins look the same in a figure
    exact = {n for n in names if solver_info(n)["exact"]}
    assert {"brute-force", "knapsack-dp"} <= exact and not exact & {"depl", "best-exp", "pact"}


def test_default_style_is_deterministic_and_not_a_builtin_colour():
    from deplbench.solvers.base import PALETTE, PlotStyle

    a, b = PlotStyle.for_name("my-greedy"), PlotStyle.for_name("my-greedy")
    assert a == b and a.colour in PALETTE[7:]


def test_registry_loads_entry_points_and_reports_broken_ones(monkeypatch):
    from importlib import metadata

    from deplbench.solvers import registry

    class EP:
        def __init__(self, name, value):
            self.name, self.value, self.dist = name, value, None

    eps = [EP("crashing", f"{__name__}:_Crashing"), EP("depl", "x:Y"), EP("ghost", "no_such_mod:X"),
           EP("misnamed", f"{__name__}:_Overcommitting")]
    monkeypatch.setattr(metadata, "entry_points", lambda group=None: eps if group == registry.ENTRY_POINT_GROUP else [])
    registry.refresh()
    try:
        assert "crashing" in registry.available() and registry.get_solver("crashing").__qualname__ == "_Crashing"
        assert registry.solver_info("crashing")["source"]["kind"] == "entry point"
        assert any("'depl'" in p and "built-in" in p for p in registry.problems())
        assert registry.get_solver("depl").__name__ == "DepL"  # the built-in wins
        with pytest.raises(SolverError, match="cannot be loaded"):
            registry.get_solver("ghost")
        with pytest.raises(SolverError, match="name"):
            registry.get_solver("misnamed")
        rows = {r["name"]: r for r in registry.all_solver_info(include_unavailable=True)}
        assert rows["ghost"]["available"] is False and rows["crashing"]["available"] is True
    finally:
        monkeypatch.undo()
        registry.refresh()


def test_solve_result_quantile_properties_read_the_evaluation():
    inst = make_instance()
    res = solve(inst, "brute-force", scenarios=50, eval_samples=500)
    assert res.quantile == res.evaluation["quantile"]
    assert res.quantile_ci == tuple(res.evaluation["quantile_ci"]) and res.quantile_ci[0] <= res.quantile
    bare = SolveResult(algorithm="x", status="infeasible")
    assert bare.quantile is None and bare.quantile_ci is None


# --------------------------------------------------------------- one success tolerance
def _deterministic_plan():
    """A plan on point-mass laws (its final loss is one number) and that loss."""
    from deplbench.formulations.evaluation.evaluate import plan_indices
    from deplbench.formulations.model.plan import Epoch, Plan

    point = {"kind": "point", "value": 1.0}
    data = two_model_data(initial_loss=300.0, loss_max=1.0)
    for m in data["models"]:
        m["improvement"] = point
    data["models"][0]["loss_scale"] = 90.0
    inst = make_instance(**{k: v for k, v in data.items()})
    plan = Plan(epochs=[Epoch(model="big", cluster="A", allocation=2.0)] * 3, datasets={"A": ["d0"]})
    models, _, gammas = plan_indices(inst, plan)
    scen = ScenarioSampler(inst, seed=0).in_sample(20)
    final = scen.final_losses(models, gammas)
    assert np.all(final == final[0]) and final[0] > 2.0
    return inst, plan, scen, models, gammas, float(final[0])


@pytest.mark.parametrize("offset, meets", [(0.5, True), (2.0, False)])
def test_every_sampled_success_test_uses_the_one_tolerance(offset, meets):
    # ℓmax = ℓ − offset·LOSS_TOL·|ℓ|: within the tolerance (0.5) or beyond it (2). With |ℓmax| > 2
    # an absolute 1e-9 and the relative LOSS_TOL·|ℓmax| disagreed in between.
    from deplbench.formulations.evaluation.closed_loop import reached
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from deplbench.formulations.milp.bounds import quantile_ok
    from deplbench.formulations.model.scenarios import LOSS_TOL, loss_threshold
    from deplbench.measure.replay import count_violations

    inst, plan, scen, models, gammas, loss = _deterministic_plan()
    lmax = loss - offset * LOSS_TOL * abs(loss)
    assert (loss <= loss_threshold(lmax)) == meets and loss > lmax + 1e-9
    verdicts = {
        "in-sample (Scenarios.violations)": scen.violations(models, gammas, lmax) == 0,
        "MILP (quantile_ok)": bool(quantile_ok(np.full((scen.n_scenarios, 1), loss), 0, lmax)[0]),
        "closed loop (reached)": bool(reached(loss, lmax)),
        "measured replay": count_violations(np.array([loss]), lmax) == 0,
        "out of sample (evaluate_plan)": evaluate_plan(inst.with_changes(loss_max=lmax), plan,
                                                       samples=200).verdict == "feasible",
    }
    assert verdicts == dict.fromkeys(verdicts, meets)


def test_the_tolerance_on_lmax_is_defined_once():
    # every sampled test reads deplbench.formulations.model.scenarios.LOSS_TOL (loss_threshold)
    import re
    from pathlib import Path

    import deplbench

    root = Path(deplbench.__file__).parent
    pattern = re.compile(r"LOSS_TOL\s*=|(lmax|loss_max)\s*\+\s*(\d|_?LOSS_TOL|tol\b)")
    found = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line.split("#")[0])]
    assert found and {f.partition(":")[0] for f in found} == {"formulations/model/scenarios.py"}, found


@pytest.mark.parametrize("kind", [float, int, tuple])
def test_param_refuses_a_numpy_boolean_where_a_number_is_declared(kind):
    """np.True_ is no bool subclass and float(np.True_) is 1.0: refused as True is, not read as 1."""
    import numpy as np

    from deplbench.params import Param

    value = [np.True_, 1.0] if kind is tuple else np.True_
    from deplbench.errors import SolverError

    with pytest.raises(SolverError, match=r"parameter 'epsilon': expected"):
        Param(None, kind).convert("epsilon", value)
    assert Param(False, bool).convert("flag", np.True_) is True


def test_solve_refuses_a_numpy_boolean_for_a_float_parameter():
    import numpy as np

    from deplbench.errors import SolverError
    from deplbench.instances.model import parse_instance
    from deplbench.solvers.run import solve
    from tests.instance_data import two_model_data

    with pytest.raises(SolverError, match=r"parameter 'epsilon': expected float, got np.True_"):
        solve(parse_instance(two_model_data()), "depl", epsilon=np.True_, evaluate=False)


@pytest.mark.parametrize(("kind", "value"), [(int, np.array(2.7)), (int, np.array(3)), (int, np.array(True)),
                                             (float, np.array(2.7)), (bool, np.array(True)), (int, np.array([3])),
                                             (tuple, [np.array(0.9), 0.8])])
def test_param_refuses_an_array_where_one_number_is_declared(kind, value):
    """int(np.array(2.7)) is 2 and np.array(True) has __index__: an array, even 0-d, is refused by name."""
    from deplbench.params import Param

    with pytest.raises(SolverError, match=r"parameter 'replications': expected .*array"):
        Param(None, kind).convert("replications", value)
    # numpy scalars stay numbers, and a 1-d array is still a sequence where a tuple is declared
    assert Param(None, int).convert("n", np.int64(3)) == 3
    assert Param(None, tuple).convert("grid", np.array([0.9, 0.8])) == (0.9, 0.8)


def test_solve_and_generate_refuse_a_0d_array_before_any_work():
    from deplbench.errors import InstanceError
    from deplbench.instances.generators import generate

    inst = parse_instance(two_model_data())
    with pytest.raises(SolverError, match=r"parameter 'replications': expected int, got an array, array\(2.7\)"):
        solve(inst, "milp-certified", replications=np.array(2.7), evaluate=False)
    with pytest.raises(InstanceError, match=r"parameter 'seed': expected int, got an array"):
        generate("scaling", seed=np.array(150.7), n_models=2, n_clusters=2, horizon=6)


def test_solve_evaluates_with_the_evaluation_arguments_it_checked(monkeypatch):
    """solve() checks eval_samples/eval_seed up front and judges with the converted values, not the raw ones."""
    from deplbench.solvers import run

    seen = {}
    monkeypatch.setattr(run, "_judge", lambda instance, result, plan, samples, seed: seen.update(
        samples=samples, seed=seed))
    inst = parse_instance(two_model_data())
    solve(inst, "one-switch", eval_samples=np.int64(150), eval_seed=np.uint8(3))
    assert seen == {"samples": 150, "seed": 3}
    assert type(seen["samples"]) is int and type(seen["seed"]) is int
    seen.clear()
    for name, value in (("eval_samples", np.array(150)), ("eval_seed", np.array(3))):
        with pytest.raises(SolverError, match=rf"parameter '{name}': expected int, got an array"):
            solve(inst, "one-switch", **{name: value})
    assert seen == {}       # refused before the solve: nothing was judged
