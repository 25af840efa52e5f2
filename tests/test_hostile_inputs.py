"""Hostile input: statuses that do not mislead, reserved names, bounds at
load (docs/DESIGN.md, "Limits").

The rules checked: ⌊(1−ω)S⌋ is exact (no tolerance rounds it up to S),
``milp-certified`` reports ``error`` with the reason, not ``infeasible``,
when no SAA replication ran, a reserved name such as ``--param eval_seed=…``
is refused in one line with exit 2, counts are bounded at load, and the (1+ε) allocation DP
handles a free cluster whose best cost is 0 (no log(0)).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from deplbench import limits
from deplbench.benchmarks.sweep import parse_sweep
from deplbench.cli import main
from deplbench.errors import DeplbenchError, InstanceError, SolverError, SweepError
from deplbench.formulations.model.scenarios import allowed_violations, quantile_rank
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import solve
from tests.instance_data import two_model_data

# ---- finding 2: ⌊(1−ω)S⌋ exactly, never rounded up to a vacuous count -------------------------

def test_allowed_violations_equals_exact_integer_floor_over_many_omega_and_s():
    """ω = k/10^d written as a decimal: ⌊(1−ω)S⌋ = ((10^d − k)·S) // 10^d exactly."""
    rng = np.random.default_rng(31)
    checked = 0
    for d in range(1, 13):
        for k in rng.integers(1, 10**d, size=40):
            k = int(k)
            omega = float(f"{k}e-{d}")          # the decimal k/10^d as the user writes it
            if Fraction(repr(omega)) != Fraction(k, 10**d):
                continue                         # not exactly this decimal after float round-trip
            for s in (1, 2, 3, 7, 10, 99, 100, 1000, 12345, int(rng.integers(1, 10**6))):
                exact = ((10**d - k) * s) // 10**d
                assert allowed_violations(omega, s) == exact, (omega, s)
                assert quantile_rank(omega, s) == s - exact
                checked += 1
    assert checked > 3000


@pytest.mark.parametrize("omega,s,count", [(1e-12, 1000, 999), (0.99, 100, 1), (0.9, 10, 1),
                                           (0.95, 20, 1), (1 - 1e-9, 10**9, 1), (0.5, 1, 0)])
def test_allowed_violations_known_values(omega, s, count):
    # (1 − 1e-12)·1000 = 999.999999999 is 999: a +1e-9 guard would make it 1000 (every scenario may miss)
    assert allowed_violations(omega, s) == count


def test_allowed_violations_refuses_a_vacuous_count():
    with pytest.raises(InstanceError, match="omega: .*vacuous"):
        allowed_violations(0.0, 50)


def test_milp_at_tiny_omega_is_not_vacuous_and_says_the_sample_is_thin():
    """At ω = 1e-12 and S = 1000 the SAA still needs 1 scenario below ℓmax: the
    same optimum as at ω = 1e-4 (also 999 allowed), not the cheapest plan."""
    tiny = solve(parse_instance(two_model_data(omega=1e-12)), "milp", scenarios=1000, evaluate=False)
    same = solve(parse_instance(two_model_data(omega=1e-4)), "milp", scenarios=1000, evaluate=False)
    assert tiny.diagnostics["allowed_violations"] == 999
    assert tiny.status == same.status == "optimal"
    assert tiny.cost == pytest.approx(same.cost)
    assert "ω·S" in tiny.message and tiny.diagnostics["thin_sample"]
    wide = solve(parse_instance(two_model_data(omega=0.5)), "milp", scenarios=1000, evaluate=False)
    assert "thin_sample" not in wide.diagnostics


# ---- finding 3: no usable replication is an error, never "infeasible" -----------------------------

@pytest.fixture(scope="module")
def huge_two_model():
    # S × K̄ = 2000 × 100000: every SAA replication is refused by the MILP's memory estimate
    return parse_instance(two_model_data(horizon=100_000, time_max=1e9))


def test_milp_certified_without_usable_replication_is_error(huge_two_model):
    res = solve(huge_two_model, "milp-certified", scenarios=2000, replications=3, risk_grid="",
                target_width=0, evaluate=False)
    assert res.status == "error"
    assert res.lower_bound is None and res.plan is None
    assert "no usable SAA replication" in res.message and "GiB" in res.message


def test_certify_cli_gives_the_real_reason(huge_two_model, tmp_path, capsys):
    path = tmp_path / "huge.json"
    huge_two_model.save(path)
    # every SAA solve would fail for its memory estimate: refused up front with that reason (exit 2)
    rc = main(["certify", str(path), "--scenarios", "2000", "--replications", "3", "--risk-grid", "0.9",
               "--target-width", "0", "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert "raise validation" not in captured.err and "fewer scenarios" in captured.err, captured.err
    assert captured.err.startswith("error: --scenarios: every SAA solve would fail"), captured.err


# ---- finding 6: solve()'s own argument names are not algorithm parameters ------------------------

@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "small.json"
    parse_instance(two_model_data()).save(path)
    return path


@pytest.mark.parametrize("command", ["solve", "simulate"])
@pytest.mark.parametrize("name", ["eval_samples", "eval_seed", "instance", "algorithm", "evaluate"])
def test_reserved_param_names_are_one_line_exit_2(small_file, capsys, command, name):
    assert main([command, str(small_file), "--algo", "one-switch", "--param", f"{name}=1"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and f"'{name}' is not an algorithm parameter" in err, err
    assert captured.out == ""


@pytest.mark.parametrize("command", ["solve", "simulate"])
def test_eval_samples_beyond_memory_refused_before_the_solve(small_file, capsys, monkeypatch, command):
    """An evaluation whose final losses alone exceed the memory budget is refused up front
    (exit 2, one line naming --eval-samples), not after the solve as a status-error record."""
    import deplbench.solvers.base as base

    monkeypatch.setattr(base.Solver, "run_settings", lambda *a, **k: pytest.fail("the solve ran"))
    assert main([command, str(small_file), "--algo", "one-switch", "--eval-samples", str(10**11)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: --eval-samples: ") and "GiB" in err, err


# ---- finding 8: bounds at load on every count --------------------------------------------------------

def _sweep(**over) -> dict:
    data = {"sweep": {"name": "s"},
            "instances": [{"id": "k", "family": "knapsack", "params": {"n_items": 5}}],
            "algorithms": [{"name": "milp"}]}
    for path, value in over.items():
        table, key = path.rsplit(".", 1)
        node = data
        for part in table.split("."):
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[key] = value
    return data


@pytest.mark.parametrize("over,field", [
    ({"algorithms.0.params": {"solver": "nosuch"}}, "algorithms[0].params.solver"),
    ({"algorithms.0.grid": {"solver": ["highs", "nosuch"]}}, "algorithms[0].grid.solver[1]"),
    ({"sweep.evaluation": {"closed_loop": {"runs": 10**10}}}, "sweep.evaluation.closed_loop.runs"),
    ({"algorithms.0.params": {"threads": 100_000}}, "threads"),
    ({"sweep.max_tasks": 0}, "sweep.max_tasks"),
])
def test_sweep_counts_and_solver_names_refused_at_load(over, field):
    with pytest.raises(SweepError) as err:
        parse_sweep(_sweep(**over))
    assert field in str(err.value) and "\n" not in str(err.value)


def test_sweep_grid_size_capped_with_an_explicit_override():
    big = {"algorithms.0.grid": {"seed": list(range(2000)), "gap": [1e-4 * (i + 1) for i in range(60)]}}
    with pytest.raises(SweepError, match=r"sweep.max_tasks: the sweep expands to up to 120000 tasks > the cap"):
        parse_sweep(_sweep(**big), check_names=False)
    sweep = parse_sweep(_sweep(**big, **{"sweep.max_tasks": 120_000}), check_names=False)
    assert sweep.name == "s"


@pytest.mark.integration
def test_solver_and_api_counts_have_upper_bounds(small_file):
    inst = parse_instance(two_model_data())
    with pytest.raises(SolverError, match="threads"):
        solve(inst, "milp", threads=limits.MAX_THREADS + 1)
    for name in ("replications", "refine_replications", "workers"):
        high = limits.MAX_WORKERS if name == "workers" else limits.MAX_REPLICATIONS
        with pytest.raises(SolverError, match=name):
            solve(inst, "milp-certified", **{name: high + 1})
    from deplbench.benchmarks.executors import LocalExecutor
    with pytest.raises(SweepError, match=f"^workers: must be an integer in \\[1, {limits.MAX_WORKERS}\\]"):
        LocalExecutor(workers=limits.MAX_WORKERS + 1)
    with pytest.raises(SweepError, match="^--workers: "):
        LocalExecutor(workers=0, field="--workers")
    assert LocalExecutor(workers=np.int64(2)).workers == 2            # numpy's integers, as solve() takes them
    with pytest.raises(SweepError, match="^workers: .* got np.True_|^workers: .* got True"):
        LocalExecutor(workers=np.True_)


@pytest.mark.parametrize("argv,flag", [
    (["simulate", "{f}", "--algo", "one-switch", "--runs", "100000000"], "--runs"),
    (["certify", "{f}", "--replications", "100000000"], "replications"),
    (["certify", "{f}", "--workers", "100000000"], "--workers"),
    (["run", "quick", "--workers", "100000000", "--db", "{d}"], "--workers: must be an integer"),
])
def test_cli_counts_have_upper_bounds(small_file, tmp_path, capsys, argv, flag):
    assert main([a.format(f=small_file, d=tmp_path / "r.sqlite") for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and flag in err, err
    assert not (tmp_path / "r.sqlite").exists()


def test_fit_bootstrap_has_an_upper_bound(tmp_path):
    from deplbench.instances.fit import pipeline

    with pytest.raises(DeplbenchError, match="ks_bootstrap"):
        pipeline._validate_settings(0.05, 10**8, 200, 5, 3)


@pytest.mark.parametrize("algo", ["depl", "best-exp"])
def test_free_cluster_kappa_zero_matches_brute_force(algo):
    """κ = 0 on a cluster: the best cost is 0, and the allocation DP's cost cap
    upper·(1+ε)/κ of every paid cluster is 0, and the DP takes no log(0)."""
    data = two_model_data()
    data["clusters"][1]["unit_cost"] = 0.0
    inst = parse_instance(data)
    ref = solve(inst, "brute-force", evaluate=False)
    res = solve(inst, algo, evaluate=False)
    assert ref.status == "optimal" and ref.cost == 0.0
    assert res.status in ("optimal", "feasible"), res.message
    assert res.cost == pytest.approx(ref.cost, abs=1e-12)


# ---- laws and magnitudes binary64 cannot compute with (instances.magnitudes) ----------------------

def _scaling_file(tmp_path, name, change):
    from deplbench.instances.generators import generate

    data = json.loads(generate("scaling", horizon=6).to_json())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


HOSTILE_LAWS = {
    "jump_neg": (lambda e: e["switches"][0].update(jump={"kind": "normal", "mean": -1e20, "std": 1}),
                 "switches[0].jump"),
    "imp_logn": (lambda e: e["models"][0].update(improvement={"kind": "lognormal", "mu": 1000, "sigma": 1}),
                 "models[0].improvement"),
    "imp_normal": (lambda e: e["models"][0].update(improvement={"kind": "normal", "mean": 1, "std": 1e308}),
                   "models[0].improvement"),
    "omega_tiny": (lambda e: e.update(omega=1e-320), "omega"),
    "compute_tiny": (lambda e: e["models"][0].update(compute=1e-320), "models[0].compute"),
    # Tmax·(1 + 1e-9) is inf: a plan of infinite time met the deadline (`evaluate --check`: feasible, exit 0)
    "tmax_top": (lambda e: e.update(time_max=1.7976931348623157e308), "time_max"),
}


@pytest.mark.parametrize("argv", [["validate", "{f}"], ["solve", "{f}", "--algo", "milp", "--json"],
                                  ["certify", "{f}"], ["evaluate", "{f}", "P", "--exact"]])
@pytest.mark.parametrize("name", list(HOSTILE_LAWS))
def test_laws_binary64_cannot_compute_with_exit_2_naming_the_field(tmp_path, capsys, name, argv):
    """Each validated ("ok") and then crashed the solvers, the evaluation or the adaptive DP,
    or gave a cost with a hard-constraint violation (compute 1e-320, Tmax 1.8e308)."""
    change, field = HOSTILE_LAWS[name]
    path = _scaling_file(tmp_path, f"{name}.json", change)
    assert main([a.format(f=path) for a in argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert f": {field}: " in lines[0] and "Traceback" not in lines[0]


def test_a_plan_that_never_ends_misses_the_largest_deadline(tmp_path, capsys):
    """At Tmax = 1e308 (the largest accepted) an allocation of 1e-307 takes time inf: (4) is broken."""
    path = _scaling_file(tmp_path, "top.json", lambda e: e.update(time_max=1e308))
    data = json.loads(path.read_text(encoding="utf-8"))
    epoch = {"model": data["models"][2]["name"], "cluster": data["clusters"][0]["name"], "allocation": 1e-307}
    plan = tmp_path / "slow.json"
    plan.write_text(json.dumps({"epochs": [epoch] * data["horizon"],
                                "datasets": {epoch["cluster"]: [d["name"] for d in data["datasets"]]}}))
    assert main(["evaluate", str(path), str(plan), "--samples", "200", "--check", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"] is False and any(v.startswith("time: total inf exceeds Tmax") for v in out["violations"])


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("argv", [["solve", "{f}", "--algo", "depl"], ["solve", "{f}", "--algo", "best-exp"],
                                  ["solve", "{f}", "--algo", "milp", "--scenarios", "20"],
                                  ["simulate", "{f}", "--algo", "depl", "--runs", "20"]])
def test_the_largest_deadline_reaches_stderr_as_no_numpy_warning(tmp_path, deplbench_cli, argv):
    """Tmax = 1e308: 2·Tmax (DepL's edge weight), K̄ epoch times summed in the allocation DP, λ·Tmax (the
    MILP's epoch bound) and the closed loop's mean time pass binary64; each is handled (inf, as it
    truly is, or the mean of values scaled down), and no numpy RuntimeWarning reached stderr."""
    path = _scaling_file(tmp_path, "top.json", lambda e: e.update(time_max=1e308))
    status, out, err = deplbench_cli(*[a.format(f=path) for a in argv], "--eval-samples", 200, "--json")
    assert status == 0 and err == "", err
    result = json.loads(out)
    assert result["status"] in ("optimal", "feasible"), result["message"]
    if argv[0] == "simulate":
        assert math.isfinite(result["closed_loop"]["plan"]["time"]["mean"]), result["closed_loop"]["plan"]["time"]


def test_exact_bounds_not_computable_keep_the_json_answer(tmp_path, capsys):
    """A jump of −1e12 validates; the exact bounds cannot resolve it and say so (they raised
    IndexError in exact_violation._take at −1e20, with stdout empty)."""
    path = _scaling_file(tmp_path, "far.json",
                         lambda e: e["switches"][0].update(jump={"kind": "normal", "mean": -1e12, "std": 1}))
    rc = main(["solve", str(path), "--algo", "one-switch", "--scenarios", "50", "--eval-samples", "500", "--json"])
    captured = capsys.readouterr()
    assert rc == 0 and captured.err == ""
    out = json.loads(captured.out)
    assert out["status"] == "feasible" and out["evaluation"]["exact_verdict"] is None
    assert out["evaluation"]["exact_reason"].startswith("exact bounds not computable: losses of magnitude")


def test_a_tiny_memory_limit_is_printed_with_its_digits(small_file):
    # a limit no instance's scenarios fit is refused before the run, naming scenarios and the limit
    with pytest.raises(SolverError) as exc:
        solve(parse_instance(json.loads(small_file.read_text())), "milp", memory_limit=1e-9, evaluate=False)
    assert "> memory_limit 1e-09 GiB" in str(exc.value) and "0.00 GiB" not in str(exc.value)
    res = solve(parse_instance(json.loads(small_file.read_text())), "milp", memory_limit=1e-6, scenarios=10,
                evaluate=False)
    assert res.status == "error" and "> memory_limit 1e-06 GiB" in res.message and "0.00 GiB" not in res.message
    assert limits.gib_text(2.0) == "2.00" and limits.gib_text(1e-3) == "0.001" and limits.gib_text(0.0) == "0.00"


# ---- an integer parameter given as text is that integer, or refused --------------------------

@pytest.mark.parametrize("text, value", [("9007199254740993", 9007199254740993), ("2.0", 2), ("1e3", 1000),
                                         ("4611686018427387905", 2**62 + 1)])
def test_an_integer_given_in_digits_is_read_exactly(text, value):
    """Read through a float, 2**53 + 1 became 2**53 (a different seed run and recorded, silently)."""
    from deplbench.params import SEED

    assert SEED.convert("seed", text) == value


@pytest.mark.parametrize("given", ["1e300", "1e16", 1e300, 2.0**53])
def test_a_float_past_2_53_is_refused_where_an_integer_is_declared(given):
    """1e300 is not the integer 10**300 (int(1e300) has other digits): no float names one integer past 2**53."""
    from deplbench.params import SEED

    with pytest.raises(SolverError, match=r"^parameter 'seed': expected int, got .*write the integer in digits"):
        SEED.convert("seed", given)


def test_solve_records_the_seed_given_in_digits(small_file, capsys):
    assert main(["solve", str(small_file), "--algo", "milp", "--scenarios", "20", "--seed", "9007199254740993",
                 "--eval-samples", "200", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["seed"] == 9007199254740993
    assert main(["solve", str(small_file), "--algo", "milp", "--seed", "1e300"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --seed 1e300: expected int"), err


def test_a_cluster_whose_plans_cost_inf_is_refused_before_any_solve(tmp_path, capsys):
    """unit_cost 1e308 on a knapsack instance's one cluster: every plan would cost inf
    (the MILP would answer `feasible` with cost inf and gap nan), so the instance is
    refused naming the field."""
    from deplbench.instances.generators import generate

    data = json.loads(generate("knapsack", n_items=3, horizon=4, seed=0).to_json())
    data["clusters"][0]["unit_cost"] = 1e308
    path = tmp_path / "k.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["solve", str(path), "--algo", "milp", "--scenarios", "5", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "clusters[0].unit_cost: 1e+308 × K̄ × the least compute" in captured.err, captured.err


@pytest.mark.parametrize("algorithm", [pytest.param("milp", marks=pytest.mark.slow), "depl"])
def test_a_plan_whose_cost_overflows_is_an_error_not_a_feasible_inf(algorithm):
    """unit_cost 3.75e306 passes the instance's rule (its cheapest plan is finite), but the plans the
    solvers return sum past 1.8e308: they said `feasible` with cost inf and gap nan."""
    import warnings

    from deplbench.instances.generators import generate
    from deplbench.instances.model import parse_instance
    from deplbench.solvers.run import solve

    data = json.loads(generate("knapsack", seed=0).to_json())
    data["clusters"][0]["unit_cost"] = 3.75e306
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # numpy's overflow notes on the way
        res = solve(parse_instance(data), algorithm, evaluate=False)
    assert res.status == "error", (res.status, res.cost, res.message)
    assert res.message.startswith("cost: the plan's cost (2) is inf in binary64"), res.message
    assert res.to_dict()["status"] == "error"


@pytest.mark.parametrize("given", [2**63, -(2**63) - 1, "18446744073709551616"])
def test_an_integer_parameter_beyond_64_bits_is_refused(given):
    """scenarios = 2**64 in a sweep passed --dry-run, failed its task, and then its row could not be
    stored: an OverflowError traceback out of the runner, and the other tasks' rows lost with it."""
    from deplbench.params import MAX_INT, MIN_INT, Param

    unbounded = Param(1, int, "a count with no upper bound of its own")
    with pytest.raises(SolverError, match=r"^parameter 'n': must lie within \[−2\*\*63, 2\*\*63 − 1\]"):
        unbounded.convert("n", given)
    # the rule is SQLite's INTEGER, the same as the store's columns: both ends are accepted
    assert unbounded.convert("n", MAX_INT) == MAX_INT and unbounded.convert("n", MIN_INT) == MIN_INT == -(2**63)


def test_a_sweep_with_2_64_scenarios_is_refused_at_load():
    sweep = {"sweep": {"name": "s"}, "instances": [{"id": "k", "family": "knapsack", "params": {"n_items": 3}}],
             "algorithms": [{"name": "milp", "params": {"scenarios": 2**64}}]}
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params\.scenarios: .*within \[−2\*\*63, 2\*\*63 − 1\]"):
        parse_sweep(sweep)


def test_every_seed_reader_keeps_one_rule():
    """A seed is an integer in [0, 2**63 − 1] wherever it is read (params.seed_refusal): a closed-loop
    seed, an evaluation's and a fit's had no upper bound (a 2**64 ran, and SQLite's json_extract
    read the one kept in the store's JSON back as a float)."""
    from deplbench.benchmarks.validate import seed_int
    from deplbench.errors import PlanError
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from deplbench.formulations.evaluation.settings import check_closed_loop
    from deplbench.formulations.model.plan import Epoch, Plan
    from deplbench.instances.fit.logs import LogError
    from deplbench.instances.fit.pipeline import fit_logs
    from deplbench.params import MAX_SEED, SEED, seed_refusal

    assert MAX_SEED == 2**63 - 1 and seed_refusal(0) == seed_refusal(MAX_SEED) == ""
    inst = parse_instance(two_model_data())
    plan = Plan(epochs=[Epoch(model=inst.models[0].name, cluster=inst.clusters[0].name, allocation=1.0)])
    readers = {
        "solver parameter": lambda s: SEED.convert("seed", s),
        "sweep seed": lambda s: seed_int(s, "seed"),
        "closed loop": lambda s: check_closed_loop(10, s, 0.95)[1],
        "evaluate_plan": lambda s: evaluate_plan(inst, plan, samples=100, seed=s).seed,
    }
    for name, read in readers.items():
        assert read(MAX_SEED) == MAX_SEED, name
        for bad in (MAX_SEED + 1, 2**64, -1):
            with pytest.raises((SolverError, SweepError, PlanError), match=r"seed'?: must ") as exc:
                read(bad)
            assert str(exc.value).count("\n") == 0, (name, bad)
            if bad > MAX_SEED and name != "solver parameter":
                assert str(exc.value).endswith(seed_refusal(bad)), (name, exc.value)
    with pytest.raises(LogError, match=r"^seed: must be at most 2\*\*63 − 1 .* got 18446744073709551616$"):
        fit_logs(None, seed=2**64)      # refused before the logs are read


def _overflowing_instance(tmp_path, family: str = "knapsack"):
    """A unit cost the instance rule accepts (its cheapest epoch is finite) while the plans the
    solvers return cost more than binary64 holds."""
    from deplbench.instances.generators import generate

    data = json.loads(generate(family, seed=0).to_json())
    for cluster in data["clusters"]:
        cluster["unit_cost"] = 3.75e306 if family == "knapsack" else cluster["unit_cost"] * 1e306
    path = tmp_path / f"{family}-overflow.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("algorithm", ["depl", "best-exp", "pact", "one-switch", "static-learn", "knapsack-dp",
                                       pytest.param("milp", marks=pytest.mark.slow),
                                       pytest.param("depl-proven", marks=pytest.mark.slow)])
def test_costs_past_binary64_reach_stderr_as_no_numpy_warning(tmp_path, deplbench_cli, algorithm):
    """numpy's overflow RuntimeWarnings (vnf_allocation, bounds, pact.graph's float32 risk table,
    the baselines' weights, the evaluator) reached stderr beside the result: where the overflow is
    expected and handled (an inf cost, reported by the solve's cost check) they are silenced there.
    knapsack-dp said `infeasible` ("no multiset ... reaches the covering target") for an optimum
    that exists but costs more than binary64 holds."""
    status, out, err = deplbench_cli("solve", _overflowing_instance(tmp_path), "--algo", algorithm, "--json")
    assert err == "", err
    result = json.loads(out)
    assert status == (1 if result["status"] == "error" else 0), (status, result["status"])
    if result["status"] == "error":
        assert result["message"].startswith("cost: the plan's cost (2) is inf in binary64"), result["message"]
    if algorithm == "knapsack-dp":
        assert result["status"] == "error" and result["plan"] is not None, result


@pytest.mark.slow
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_simulation_of_inf_costs_reports_inf_quantiles_without_warnings(tmp_path, deplbench_cli):
    """Every run's cost inf: np.quantile said nan (inf − inf) with a RuntimeWarning; the q50 of
    infinite costs is inf."""
    status, out, err = deplbench_cli("simulate", _overflowing_instance(tmp_path, "scaling"), "--algo", "depl",
                                     "--runs", 20, "--eval-samples", 100, "--json")
    assert err == "", err
    cost = json.loads(out)["closed_loop"]["plan"]["cost"]
    assert all(cost[f"{k}_nonfinite"] == "inf" for k in ("mean", "q10", "q50", "q90", "q99")), cost


@pytest.mark.parametrize("values, mean, sem", [([1e301] * 20, 1e301, 0.0), ([1e306] * 1000, 1e306, 0.0),
                                               ([1e200, 3e200], 2e200, 1e200), ([1.0, 3.0], 2.0, 1.0)])
def test_mean_and_standard_error_of_large_finite_values_are_finite(values, mean, sem):
    """numpy's sum (mean) and squares (standard deviation) pass binary64 for finite values: equal costs
    of 1e301 had the standard error inf, a thousand of 1e306 the mean inf."""
    from deplbench.formulations.evaluation.quantile_ci import finite_mean, standard_error

    a = np.array(values)
    with np.errstate(all="raise"):
        assert finite_mean(a) == pytest.approx(mean) and standard_error(a) == pytest.approx(sem)
    assert finite_mean(np.array([1.0, math.inf])) == math.inf and math.isnan(standard_error(np.array([1.0, math.inf])))


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_simulation_of_costs_near_binary64_reports_a_finite_standard_error(tmp_path, deplbench_cli):
    """Costs of about 1e301, each finite: the closed loop's cost_sem was inf (null, "inf"), with a numpy
    overflow warning, where the plan's equal costs have the standard error 0."""
    def dear(data):
        for cluster in data["clusters"]:
            cluster["unit_cost"] *= 1e300
    path = _scaling_file(tmp_path, "dear.json", dear)
    status, out, err = deplbench_cli("simulate", path, "--algo", "depl", "--runs", 20, "--eval-samples", 200, "--json")
    assert status == 0 and err == "", err
    plan = json.loads(out)["closed_loop"]["plan"]
    assert plan["cost_sem"] == 0.0 and "cost_sem_nonfinite" not in plan, plan
    assert plan["cost"]["mean"] == pytest.approx(plan["cost"]["min"])


@pytest.mark.integration
def test_solve_on_overflowing_costs_writes_nothing_to_stderr(tmp_path, deplbench_cli):
    p = deplbench_cli.process("solve", _overflowing_instance(tmp_path), "--algo", "depl")
    assert p.returncode == 1 and p.stderr == "", p.stderr
    assert "status      error  (cost: the plan's cost (2) is inf in binary64" in p.stdout, p.stdout
