"""The ``general`` solver's settings, work budgets, bounds and reproducibility.

* one frozen settings object, validated through ``deplbench.params.Param``
  (one-line errors naming the option) and recorded in the result's params;
* no test flips a module global of the solver;
* the reported lower bound is never below 0 and the gap never above 1;
* the same instance and settings give the same nodes, bounds and result
  (every phase is budgeted in work units), and a wall-clock stop names the
  phase it stopped in.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re

import pytest

from deplbench.errors import SolverError
from deplbench.formulations.general import solve_general
from deplbench.formulations.general.outcome import clamp_bound
from deplbench.formulations.general.settings import GENERAL_PARAMETERS, GeneralSettings
from tests.milp_instances import tiny_instance

TESTS = pathlib.Path(__file__).parents[2]


def test_settings_fields_are_the_declared_parameters():
    fields = dataclasses.fields(GeneralSettings)
    assert [f.name for f in fields] == list(GENERAL_PARAMETERS)
    assert all(f.default == GENERAL_PARAMETERS[f.name].default for f in fields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        GeneralSettings().pair_search = False


@pytest.mark.parametrize("given,name", [
    ({"pair_serch": True}, "pair_serch"),
    ({"lambda_reset": -1.0}, "lambda_reset"),
    ({"root_kelley_iterations": 1.5}, "root_kelley_iterations"),
    ("max_blocks=7", "max_blocks"),
    ("short_plans=perhaps", "short_plans"),
    ("short_plans", "short_plans"),
    ("max_blocks=8, max_blocks=9", "'max_blocks' given twice"),     # one value each, never the last one wins
])
def test_bad_settings_are_one_line_errors_naming_the_option(given, name):
    with pytest.raises(SolverError) as err:
        GeneralSettings.from_params(given)
    msg = str(err.value)
    assert name in msg and "\n" not in msg


def test_settings_from_a_string_and_into_the_result():
    s = GeneralSettings.from_params("pair_groups=off, root_kelley_iterations=12")
    assert s.pair_groups is False and s.root_kelley_iterations == 12 and s.pair_search is True
    inst = tiny_instance(seed=2, n_datasets=1, n_clusters=1, horizon=3, n_models=2, all_switches=True)
    res = solve_general(inst, scenarios=10, time_limit=None, settings=s)
    assert res.params["general_settings"] == s.as_dict()
    assert GeneralSettings(**res.params["general_settings"]) == s     # a stored result says how it was computed


def test_milp_route_passes_and_validates_the_settings():
    from deplbench.solvers.run import solve

    inst = tiny_instance(seed=2, n_datasets=1, n_clusters=2, horizon=3, n_models=2, all_switches=True)
    res = solve(inst, "milp", scenarios=10, time_limit=None, evaluate=False, formulation="general",
                general_settings="short_plans=no")
    assert res.status == "optimal", res.message
    assert res.params["general_settings"]["short_plans"] is False
    # checked once, with the other parameters, before the run: the caller's mistake raises
    with pytest.raises(SolverError, match="^general_settings: parameter 'max_lambda_resets': must be >= 0, got -1$"):
        solve(inst, "milp", scenarios=10, evaluate=False, general_settings="max_lambda_resets=-1")


def test_no_test_flips_a_module_global_of_the_solver():
    """Settings objects are passed in; no test assigns ``general*.NAME = ...``."""
    pattern = re.compile(r"general\w*\.[A-Z_]+\s*=(?!=)")
    hits = [f"{p.name}: {line.strip()}" for p in TESTS.rglob("test_*.py")
            for line in p.read_text(encoding="utf-8").splitlines() if pattern.search(line)]
    assert hits == []


def test_lower_bound_is_clamped_at_zero_with_the_reason():
    diag: dict = {}
    assert clamp_bound(-376.0, diag) == 0.0
    assert "-376" in diag["lower_bound_clamped"] and "≥ 0" in diag["lower_bound_clamped"]
    diag = {}
    assert clamp_bound(12.5, diag) == 12.5 and diag == {}
    assert clamp_bound(math.inf, diag) == math.inf


@pytest.mark.slow
@pytest.mark.parametrize("node_limit", [1, 2, 3])
def test_stopped_runs_report_a_bound_in_zero_to_cost(node_limit):
    inst = tiny_instance(seed=4, n_datasets=3, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    res = solve_general(inst, scenarios=50, time_limit=None, node_limit=node_limit)
    assert res.lower_bound is not None and 0.0 <= res.lower_bound <= res.cost * (1 + 1e-12)
    assert 0.0 <= res.gap <= 1.0


def _fingerprint(res):
    d = res.diagnostics
    keys = ("nodes", "leaves", "boxes", "leaf_evaluations", "lambda_resets", "enumeration_steps",
            "group_multipliers", "stopped_in")
    return (res.status, res.cost, res.lower_bound, [(e.model, e.cluster, e.allocation) for e in res.plan.epochs],
            {k: d.get(k) for k in keys})


@pytest.mark.slow
@pytest.mark.parametrize("node_limit", [None, 3])
def test_two_runs_give_the_same_nodes_bounds_and_result(node_limit):
    """Every phase is budgeted in work units: a generous wall limit changes nothing."""
    inst = tiny_instance(seed=5, n_datasets=3, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    a = solve_general(inst, scenarios=60, time_limit=None, node_limit=node_limit)
    b = solve_general(inst, scenarios=60, time_limit=3600.0, node_limit=node_limit)
    assert a.diagnostics["nodes"] > 0
    assert _fingerprint(a) == _fingerprint(b)


def test_a_wall_clock_stop_names_its_phase():
    inst = tiny_instance(seed=5, n_datasets=3, n_clusters=2, horizon=6, n_models=3, all_switches=True)
    res = solve_general(inst, scenarios=60, time_limit=1e-9)
    assert res.status == "time_limit"
    assert res.diagnostics["stopped_in"] in ("setup", "bounding", "search")
    assert res.diagnostics["stopped_in"] in res.message
    assert res.lower_bound is None or res.lower_bound >= 0.0


@pytest.mark.slow
def test_cli_offers_the_general_formulation(tmp_path, capsys):
    import json

    from deplbench.cli import main

    inst = tiny_instance(seed=2, n_datasets=1, n_clusters=2, horizon=3, n_models=2, all_switches=True)
    path = tmp_path / "inst.json"
    path.write_text(inst.model_dump_json(), encoding="utf-8")
    code = main(["solve", str(path), "--algo", "milp", "--formulation", "general", "--scenarios", "10",
                 "--param", "general_settings=pair_groups=off", "--eval-samples", "200", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["status"] == "optimal"
    # a misspelt option: the user's input (checked before the run), one line naming it, exit 2
    assert main(["solve", str(path), "--algo", "milp", "--formulation", "general", "--scenarios", "10",
                 "--param", "general_settings=pair_grups=off", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "'pair_grups'" in err and "Traceback" not in err
