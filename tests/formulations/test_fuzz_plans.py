"""Fuzz corpus for plans: hostile plans meet a clear contract.

Strategies mutate valid plans — wrong types, NaN/inf, negative and huge
numbers, unknown model/cluster/dataset names, wrong lengths, deep nesting,
missing and extra fields, epochs beyond the horizon, allocations above
capacity — and judge them on small instances through the Python API
(:func:`evaluate_plan` given the plan as JSON-like data) and through
``deplbench evaluate`` (in process, stdout and stderr captured). The
contract, for every input:

* either a :class:`~deplbench.errors.PlanError` (CLI: exit status 2, stdout
  empty, one ``error:`` line on stderr) whose message names a field of the
  plan (``epochs[2].allocation: ...``) or the plan file;
* or an evaluation whose numbers are right: cost (2), time (4), the list of
  violated constraints (4)–(6) and the horizon, recomputed here
  independently in plain Python (:func:`reference`); the final loss of a
  deterministic instance exactly; the verdict consistent with its interval;
  no feasible plan cheaper than the brute-force optimum of the tiny
  knapsack instance. With ``--json`` stdout is exactly one JSON object.

Never another exception, never a traceback. Cases that once broke the
contract are kept as explicit regression examples (:data:`REGRESSIONS`).
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from functools import lru_cache

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from deplbench.errors import PlanError, SolverError
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.allocation import TIME_RTOL, plan_from_choices
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from tests.fuzz_common import (
    FULL,
    HOSTILE,
    QUICK,
    check_one_line,
    delete,
    get,
    named_field,
    nested,
    paths,
    put,
    run_cli,
)
from tests.instance_data import base_instance

PLAN_HEADS = {"epochs", "datasets", "plan"}
SAMPLES = 200


# ---------------------------------------------------------------- seeds


def _deterministic_printed() -> dict:
    """base_instance with point-mass laws, eq. (6) as printed and β per epoch."""
    data = base_instance()
    data["models"][0]["improvement"] = {"kind": "point", "value": 1.0}
    data["switches"][0]["jump"] = {"kind": "point", "value": 0.25}
    data["data_rule"] = "printed"
    data["transfer_cost_mode"] = "per_epoch"
    data["loss_max"] = 7.5
    return data


INSTANCES = {
    "base": base_instance(),
    "knapsack": json.loads(generate("knapsack", n_items=3, horizon=3, seed=1).to_json()),
    "printed": _deterministic_printed(),
}
_CHOICES = {
    "base": (["big", "big", "small"], ["A", "A", "B"], {"A": ["d0"], "B": ["d0"]}),
    "knapsack": (["item0", "item0"], ["C0", "C0"], {"C0": ["d0"]}),
    "printed": (["big", "small", "small"], ["B", "B", "B"], {"B": ["d0"]}),
}


@lru_cache(maxsize=None)
def instance(name: str):
    return parse_instance(copy.deepcopy(INSTANCES[name]))


def seed_plan(name: str) -> dict:
    plan = plan_from_choices(instance(name), *_CHOICES[name])
    assert plan is not None, name
    return plan.to_dict()


SEEDS = [(name, seed_plan(name)) for name in INSTANCES]


@lru_cache(maxsize=None)
def knapsack_optimum() -> float:
    """Cost of the cheapest plan of the tiny knapsack instance, by exhaustive
    search over every epoch count and model sequence (allocations by the
    closed form of :func:`plan_from_choices`, the exact real-x optimum)."""
    import itertools

    inst = instance("knapsack")
    names = [m.name for m in inst.models]
    best = math.inf
    for k in range(1, inst.horizon + 1):
        for seq in itertools.product(names, repeat=k):
            plan = plan_from_choices(inst, list(seq), ["C0"] * k, {"C0": ["d0"]})
            if plan is None:
                continue
            loss = reference(INSTANCES["knapsack"], plan.to_dict())["final_loss"]
            if loss <= inst.loss_max + 1e-9 * max(1.0, abs(inst.loss_max)):
                best = min(best, sum(inst.unit_cost[0] * e.allocation for e in plan.epochs))
    return best


# ------------------------------------------------- independent recomputation


def reference(inst: dict, plan: dict) -> dict:
    """Cost, time, violated locations and (point-mass laws) the final loss of
    a plan, from the instance JSON and the model of docs/DESIGN.md alone."""
    models = {m["name"]: m for m in inst["models"]}
    clusters = {c["name"]: c for c in inst["clusters"]}
    datasets = {d["name"]: d for d in inst["datasets"]}
    switches = {(s["from_model"], s["to_model"]): s["jump"] for s in inst["switches"]}
    beta = {(t["dataset"], t["cluster"]): t["cost"] for t in inst.get("transfer_costs", [])}
    held = plan.get("datasets", {})
    epochs = plan.get("epochs", [])
    K = len(epochs)
    bad: set[str] = set()
    if K > inst["horizon"]:
        bad.add("epochs")
    compute_cost = 0.0
    time = 0.0
    loss = inst["initial_loss"]
    deterministic = True
    for k, e in enumerate(epochs):
        m, c, x = models[e["model"]], clusters[e["cluster"]], float(e["allocation"])
        sets = [datasets[d] for d in held.get(e["cluster"], [])]
        volume = sum(d["size"] for d in sets)
        useful = sum(d["size"] * d["usefulness"] for d in sets)
        if volume <= 0:
            bad.add(f"epochs[{k}].cluster")
        if not x > 0:
            bad.add(f"epochs[{k}].allocation")
        elif x > c["capacity"] * (1 + 1e-12):
            bad.add(f"epochs[{k}].allocation")
        compute_cost += c["unit_cost"] * x
        time += (m["compute"] * volume / x if x > 0 else math.inf) + m["size"] / c["bandwidth"]
        if k > 0 and e["model"] != epochs[k - 1]["model"]:
            jump = switches.get((epochs[k - 1]["model"], e["model"]))
            if jump is None:
                bad.add(f"epochs[{k}].model")
            elif jump["kind"] == "point":
                loss += jump["value"]
            else:
                deterministic = False
        gamma = math.log1p(useful) / math.log(2)
        decay = 1 / math.sqrt(k + 1 + m.get("loss_offset", 0.0)) if m.get("decay", "inv_sqrt") == "inv_sqrt" else 1.0
        law = m["improvement"]
        if law["kind"] == "point":
            loss -= gamma * m["loss_scale"] * decay * law["value"]
        else:
            deterministic = False
    if time > inst["time_max"] * (1 + TIME_RTOL):
        bad.add("time")
    trainers = {e["cluster"] for e in epochs}
    for cluster, ds in held.items():
        if ds and (cluster not in trainers if inst.get("data_rule", "intended") == "intended"
                   else any(e["cluster"] != cluster for e in epochs)):
            bad.add(_dataset_loc(cluster))
    once = sum(beta.get((d, c), 0.0) for c, ds in held.items() for d in ds)
    transfer = once * (K if inst.get("transfer_cost_mode", "once") == "per_epoch" else 1)
    return {"compute_cost": compute_cost, "transfer_cost": transfer, "time": time, "bad": bad,
            "final_loss": loss if deterministic else None, "epochs": K}


def _dataset_loc(cluster: str) -> str:
    return f"datasets.{cluster}" if cluster.isidentifier() and cluster.isascii() else f"datasets[{cluster!r}]"


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def check_evaluation(name: str, plan: dict, ev) -> None:
    """The evaluation of a plan that was accepted agrees with :func:`reference`."""
    inst = INSTANCES[name]
    ref = reference(inst, plan)
    assert ev.epochs == ref["epochs"]
    assert _close(ev.compute_cost, ref["compute_cost"]), (ev.compute_cost, ref)
    assert _close(ev.transfer_cost, ref["transfer_cost"]), (ev.transfer_cost, ref)
    assert _close(ev.time, ref["time"]), (ev.time, ref)
    assert {v.split(":")[0] for v in ev.violations} == ref["bad"], (ev.violations, ref["bad"])
    assert ev.constraints_ok == (not ref["bad"])
    lo, hi = ev.quantile_ci
    assert lo <= ev.quantile <= hi
    tol = 1e-9 * max(1.0, abs(inst["loss_max"]))
    if ref["final_loss"] is not None:
        assert ev.exact and _close(ev.quantile, ref["final_loss"]), (ev.quantile, ref["final_loss"])
        assert ev.mc_verdict == ("feasible" if ref["final_loss"] <= inst["loss_max"] + tol else "infeasible")
    else:
        assert ev.mc_verdict == ("feasible" if hi <= inst["loss_max"] + tol
                                 else "infeasible" if lo > inst["loss_max"] + tol else "undecided")
    # the plan's verdict: a broken constraint (4)-(6) makes it infeasible whatever the quantile says
    assert ev.verdict == ("infeasible" if ref["bad"] else ev.mc_verdict)
    assert ev.feasible == (ev.constraints_ok and ev.verdict == "feasible")
    if ev.feasible and name == "knapsack":
        # Brute force: no feasible plan is cheaper than the optimum.
        assert ev.cost >= knapsack_optimum() * (1 - 1e-9), (ev.cost, knapsack_optimum())


def check_plan_error(msg: str, plan_file: str | None = None) -> None:
    """One line naming a field of the plan (or, through a file, the file)."""
    check_one_line(msg)
    if plan_file is not None:
        assert msg.startswith(f"{plan_file}: "), msg
        msg = msg[len(plan_file) + 2:]
        if msg.startswith(("not valid JSON", "JSON nested too deeply", "non-finite number",
                           "not a UTF-8", "the result holds no plan")):
            return
    msg = msg.removeprefix("invalid plan: ")
    for part in msg.split("; "):
        assert named_field(part, PLAN_HEADS), f"no plan field named in {part!r} (message {msg!r})"


# --------------------------------------------------------------- strategies


def _names(name: str) -> list[str]:
    inst = INSTANCES[name]
    return [x["name"] for key in ("models", "clusters", "datasets") for x in inst[key]]


@st.composite
def mutated(draw):
    """(instance name, a seed plan with one to three mutations)."""
    name, plan = draw(st.sampled_from(SEEDS))
    plan = copy.deepcopy(plan)
    caps = [c["capacity"] for c in INSTANCES[name]["clusters"]]
    for _ in range(draw(st.integers(1, 3))):
        where = paths(plan)
        op = draw(st.sampled_from(["replace", "name", "allocation", "delete", "add_key", "grow", "datasets"]))
        if op == "add_key" or not where:
            dicts = [p for p in [()] + where if isinstance(get(plan, p), dict)]
            target = get(plan, draw(st.sampled_from(dicts)))
            key = draw(st.one_of(st.text(min_size=1, max_size=6),
                                 st.sampled_from(["epochs", "model", "allocation", "x", "0", "a b", "\ud800"])))
            target[key] = draw(st.one_of(HOSTILE, st.sampled_from(_names(name))))
            continue
        if op == "name":
            strings = [p for p in where if isinstance(get(plan, p), str)] or where
            put(plan, draw(st.sampled_from(strings)),
                draw(st.sampled_from(_names(name) + ["ghost", "", "A ", "0"])))
        elif op == "allocation":
            epochs = plan.get("epochs")
            if not isinstance(epochs, list) or not epochs:
                continue
            k = draw(st.integers(0, len(epochs) - 1))
            if not isinstance(epochs[k], dict):
                continue
            cap = draw(st.sampled_from(caps))
            plan["epochs"][k]["allocation"] = draw(st.sampled_from(
                [cap, cap * (1 + 1e-9), cap * 2, cap * 1e6, cap / 2, 0.0, -1.0, 5e-324, 1e308, -0.0]))
        elif op == "delete":
            delete(plan, draw(st.sampled_from(where)))
        elif op == "grow":
            path = draw(st.sampled_from(where))
            value = get(plan, path)
            if isinstance(value, list) and value:
                put(plan, path, copy.deepcopy(value) * draw(st.sampled_from([2, 50])))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                put(plan, path, value * draw(st.sampled_from([1e6, 1e300, -1.0, 0.0])))
            else:
                put(plan, path, draw(HOSTILE))
        elif op == "datasets":
            plan["datasets"] = draw(st.dictionaries(
                st.sampled_from(_names(name) + ["ghost"]),
                st.lists(st.sampled_from(_names(name) + ["ghost"]), max_size=3), max_size=3))
        else:
            put(plan, draw(st.sampled_from(where)), draw(HOSTILE))
    return name, plan


# -------------------------------------------------------------------- runs


def python_contract(name: str, plan) -> None:
    """Through the Python API, the plan given as JSON-like data. A numpy
    RuntimeWarning (overflow, invalid value) is a failure: the CLI would
    print it on stderr next to the result."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            ev = evaluate_plan(instance(name), plan, samples=SAMPLES, seed=0)
    except PlanError as exc:
        check_plan_error(str(exc))
    else:
        check_evaluation(name, plan, ev)


def cli_contract(tmp_path, name: str, text: str, check: bool) -> None:
    """``deplbench evaluate INSTANCE PLAN --json`` on a plan file's text."""
    ipath, ppath = tmp_path / f"{name}.json", tmp_path / "plan.json"
    if not ipath.exists():
        ipath.write_text(json.dumps(INSTANCES[name]), encoding="utf-8")
    ppath.write_bytes(text.encode("utf-8", "surrogatepass"))
    status, out, err = run_cli("evaluate", ipath, ppath, "--samples", SAMPLES, "--json",
                               *(["--check"] if check else []))
    if status == 2:
        assert out == "", out
        assert err.startswith("error: ") and err.count("\n") == 1, err
        check_plan_error(err[len("error: "):].rstrip("\n"), plan_file=str(ppath))
        return
    assert status in ((0, 1) if check else (0,)), (status, err)
    assert out.endswith("\n") and out.count("\n") == 1, out          # one JSON object, one line
    record = json.loads(out)
    assert isinstance(record, dict)
    plan = json.loads(text)
    plan = plan["plan"] if "plan" in plan and "epochs" not in plan else plan
    ev = evaluate_plan(instance(name), plan, samples=SAMPLES, seed=0)
    check_evaluation(name, plan, ev)
    assert status == (1 if check and not ev.feasible else 0)
    assert record["feasible"] == ev.feasible and record["violations"] == ev.violations
    assert record["cost"] == (ev.cost if math.isfinite(ev.cost) else None)


def _as_text(plan, how: str) -> str:
    text = json.dumps(plan, allow_nan=True)
    if how == "result":          # a solver result wrapping the plan
        text = json.dumps({"algorithm": "x", "status": "feasible", "plan": plan}, allow_nan=True)
    elif how == "nan":
        text = text.replace('"allocation": ', '"allocation": NaN, "_": ', 1)
    elif how == "deep":
        text = text[:-1] + ', "datasets": ' + "[" * 5000 + "]" * 5000 + "}"
    elif how == "huge":
        text = text.replace('"allocation": ', '"allocation": 1e400, "_": ', 1)
    return text


# -------------------------------------------------------------------- tests

#: Plans that once broke the contract (kept as fixed regression examples).
REGRESSIONS = {
    # silently converted: the string "2.0" and true were read as allocations
    "allocation-string": ("base", lambda p: _with(p, ("epochs", 0, "allocation"), "2.0")),
    "allocation-true": ("base", lambda p: _with(p, ("epochs", 0, "allocation"), True)),
    # a location written "epochs.0.allocation", unlike every other message
    "allocation-null": ("base", lambda p: _with(p, ("epochs", 1, "allocation"), None)),
    # a key that is not an identifier read as "datasets.a b"
    "dataset-key-space": ("base", lambda p: _with(p, ("datasets",), {"a b": [1]})),
    # nested 5,000 deep inside the plan: a RecursionError traceback from json
    "deep": ("base", lambda p: {"epochs": nested(5000)}),
    # a lone surrogate in a name (valid JSON escape, not valid Unicode)
    "surrogate": ("base", lambda p: _with(p, ("epochs", 0, "model"), "\ud800")),
}


def _with(plan, path, value):
    put(plan, path, value)
    return plan


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_regressions(case):
    name, mutate = REGRESSIONS[case]
    plan = mutate(copy.deepcopy(dict(SEEDS)[name]))
    with pytest.raises(PlanError) as err:
        evaluate_plan(instance(name), plan, samples=SAMPLES)
    check_plan_error(str(err.value))


@pytest.mark.parametrize("name", list(INSTANCES))
def test_seed_plans_are_feasible_and_recomputed(name):
    """The unmutated plans pass (so the checks below can tell a broken one)."""
    plan = dict(SEEDS)[name]
    ev = evaluate_plan(instance(name), plan, samples=SAMPLES)
    check_evaluation(name, plan, ev)
    assert ev.constraints_ok, ev.violations
    assert ev.feasible == (name != "base")      # base: ℓmax = 5 is out of reach


def test_knapsack_optimum_is_the_solvers():
    """The exhaustive search above agrees with the registered exact solvers."""
    from deplbench.solvers.run import solve

    for algo in ("brute-force", "knapsack-dp"):
        r = solve(instance("knapsack"), algo, eval_samples=SAMPLES)
        assert r.status == "optimal" and r.cost == pytest.approx(knapsack_optimum(), rel=1e-9)


def test_plan_file_regressions(tmp_path):
    """Through files: NaN and 1e400, 5,000-deep nesting, not UTF-8, a result without a plan."""
    plan = dict(SEEDS)["base"]
    cases = {"nan": _as_text(plan, "nan"), "deep": _as_text(plan, "deep"), "huge": _as_text(plan, "huge"),
             "empty-result": json.dumps({"status": "infeasible", "plan": None})}
    for _how, text in cases.items():
        cli_contract(tmp_path, "base", text, check=False)
    ppath = tmp_path / "latin1.json"
    ppath.write_bytes(b'{"epochs": [], "datasets": {"\xe9": []}}')
    (tmp_path / "base.json").write_text(json.dumps(INSTANCES["base"]), encoding="utf-8")
    status, out, err = run_cli("evaluate", tmp_path / "base.json", ppath)
    assert status == 2 and out == "" and err.startswith(f"error: {ppath}: not a UTF-8"), err


def test_unknown_names_name_the_plan_file(tmp_path):
    plan = copy.deepcopy(dict(SEEDS)["base"])
    plan["epochs"][2]["cluster"] = "ghost"
    text = json.dumps(plan)
    cli_contract(tmp_path, "base", text, check=False)
    status, _, err = run_cli("evaluate", tmp_path / "base.json", tmp_path / "plan.json")
    assert status == 2 and err == f"error: {tmp_path / 'plan.json'}: epochs[2].cluster: unknown cluster 'ghost'\n"


def test_option_errors_name_the_option(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps(INSTANCES["base"]), encoding="utf-8")
    (tmp_path / "plan.json").write_text(json.dumps(dict(SEEDS)["base"]), encoding="utf-8")
    for args, needle in [(("--samples", "5"), "--samples"), (("--confidence", "nan"), "--confidence"),
                         (("--seed", "-1"), "--seed"), (("--samples", "10000000000"), "--samples")]:
        status, out, err = run_cli("evaluate", tmp_path / "base.json", tmp_path / "plan.json", *args)
        assert status == 2 and out == "" and err.startswith(f"error: {needle}: ") and err.count("\n") == 1, err


def test_long_plans_are_simulated_in_bounded_blocks(monkeypatch):
    """Trajectory blocks are sized to the evaluator's memory budget (25,000
    trajectories of a 10^5-epoch plan would need 60 GB), and per-epoch bands
    beyond it are refused naming ``samples``. Here the budget is shrunk to
    1 MB so that a small plan needs several blocks."""
    import deplbench.formulations.evaluation.evaluate as evaluate_module

    plan = {"epochs": [{"model": "big", "cluster": "A", "allocation": 1.0}] * 99, "datasets": {"A": ["d0"]}}
    import deplbench.formulations.evaluation.memory as memory_module

    monkeypatch.setattr(memory_module, "MEMORY_BUDGET", 2**20)
    sizes = []
    real = evaluate_module.simulate_trajectories

    def spy(instance, models, gammas, n, rng):
        sizes.append(n)
        return real(instance, models, gammas, n, rng)

    monkeypatch.setattr(evaluate_module, "simulate_trajectories", spy)
    ev = evaluate_plan(instance("base"), plan, samples=2000, trajectory=False)
    assert sum(sizes) == 2000 and len(sizes) > 1
    assert max(sizes) * 100 * 24 <= 2**20
    assert {v.split(":")[0] for v in ev.violations} >= {"epochs"} and ev.epochs == 99     # K̄ = 5
    # what may be held at once is the scope's budget: here the plan itself (99 × EPOCH_BYTES), the
    # finals and one block of 436 × 100 values (16 B each at its peak) do not fit 0.7 MiB; every
    # trajectory kept (24 B a value) does for 256
    from deplbench.limits import memory_budget

    with memory_budget(0.7 * 2**20 / 2**30), pytest.raises(
            PlanError, match=r"^samples: 2000 trajectories of 99 epochs need .* use at most 256 samples$"):
        evaluate_plan(instance("base"), plan, samples=2000)


@pytest.mark.parametrize("kwargs, field", [
    ({"samples": "200"}, "samples"), ({"samples": 150.5}, "samples"), ({"samples": True}, "samples"),
    ({"confidence": "0.9"}, "confidence"), ({"confidence": math.nan}, "confidence"),
    ({"seed": -1}, "seed"), ({"seed": "1"}, "seed"), ({"seed": 0.5}, "seed"),
])
def test_evaluate_api_arguments_are_named(kwargs, field):
    with pytest.raises(PlanError, match=rf"^{field}: "):
        evaluate_plan(instance("base"), dict(SEEDS)["base"], **{"samples": SAMPLES, **kwargs})


@pytest.mark.parametrize("args, field", [
    (({"horizon": 3},), "instance"), (("not an instance",), "instance"),
    ((None, ["not a plan"]), "plan"), ((None, {"epochs": 3}), "epochs"),
])
def test_evaluate_api_wrong_objects_are_named(args, field):
    inst = instance("base") if args[0] is None else args[0]
    plan = args[1] if len(args) > 1 else dict(SEEDS)["base"]
    with pytest.raises(PlanError) as err:
        evaluate_plan(inst, plan, samples=SAMPLES)
    assert str(err.value).startswith(field) or str(err.value).startswith(f"invalid plan: {field}"), err.value


@pytest.mark.parametrize("args, kwargs, field", [
    (("not an instance", "depl"), {}, "instance"),
    ((None, 3), {}, "algorithm"),
    ((None, "no-such-algorithm"), {}, "no-such-algorithm"),
    ((None, "depl"), {"eval_samples": -5}, "eval_samples"),
    ((None, "depl"), {"eval_samples": "many"}, "eval_samples"),
    ((None, "depl"), {"eval_seed": -1}, "eval_seed"),
    ((None, "depl"), {"eval_seed": 1.5}, "eval_seed"),
    ((None, "depl"), {"evaluate": "yes"}, "evaluate"),
    ((None, "depl"), {"seed": -5}, "seed"),          # passed validation, then numpy's ValueError
    ((None, "depl"), {"eta": math.inf}, "eta"),
    ((None, "depl"), {"ghost": 1}, "ghost"),
])
def test_solve_api_arguments_are_named(args, kwargs, field):
    from deplbench.solvers.run import solve

    inst = instance("knapsack") if args[0] is None else args[0]
    with pytest.raises(SolverError) as err:
        solve(inst, args[1], **kwargs)
    check_one_line(str(err.value))
    assert field in str(err.value)


@example(("base", {"epochs": [{"model": "big", "cluster": "A", "allocation": "2.0"}], "datasets": {"A": ["d0"]}}))
@example(("base", {"epochs": [{"model": "big", "cluster": "A", "allocation": 1}] * 7, "datasets": {"A": ["d0"]}}))
@example(("printed", {"epochs": [{"model": "big", "cluster": "A", "allocation": 10.0}], "datasets": {"B": ["d0"]}}))
# an allocation of 5e-324 / 1e308: overflow RuntimeWarnings on stderr (time and cost are inf)
@example(("base", {"epochs": [{"model": "big", "cluster": "A", "allocation": 5e-324}], "datasets": {"A": ["d0"]}}))
@example(("knapsack", {"epochs": [{"model": "item0", "cluster": "C0", "allocation": 1e308}] * 3,
                       "datasets": {"C0": ["d0"]}}))
@QUICK
@given(mutated())
def test_mutated_plans_quick(case):
    python_contract(*case)


@FULL
@given(mutated())
@pytest.mark.slow
def test_mutated_plans(case):
    python_contract(*case)


@QUICK
@given(mutated(), st.sampled_from(["plain", "result", "nan", "deep", "huge"]), st.booleans())
def test_plan_files_quick(tmp_path_factory, case, how, check):
    name, plan = case
    cli_contract(tmp_path_factory.mktemp("plan"), name, _as_text(plan, how), check)


@FULL
@given(mutated(), st.sampled_from(["plain", "plain", "result", "nan", "deep", "huge"]), st.booleans())
@pytest.mark.slow
def test_plan_files(tmp_path_factory, case, how, check):
    name, plan = case
    cli_contract(tmp_path_factory.mktemp("plan"), name, _as_text(plan, how), check)

