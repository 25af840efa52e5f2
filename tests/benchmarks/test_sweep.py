"""Sweep files: parsing, expansion, stable keys, fail-fast validation, and
the packaged sweeps."""

from __future__ import annotations

import json
import textwrap
import tomllib

import pytest

from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.sweep import (
    PACKAGED_SWEEPS,
    Task,
    load_sweep,
    parse_sweep,
    resolve_sweep_path,
    task_key,
)
from deplbench.errors import SweepError

BASE = """
[sweep]
name = "demo"
time_limit_s = 30
evaluation = { samples = 1000, seed = 3 }

[[instances]]
id = "alex"
family = "realistic"
params = { family = "alexnet" }
seeds = [0, 1]
targets = { loss_max = [5.0, 9.0, 13.0], omega = 0.99 }

[[instances]]
id = "ks"
family = "knapsack"
params = { n_items = 6 }
grid = { item_class = ["uncorrelated", "strongly"], R = [50, 100] }

[[algorithms]]
name = "depl"
grid = { eta = [50, 100] }

[[algorithms]]
name = "knapsack-dp"
instances = ["ks"]
time_limit_s = 5
"""


def parse(text: str, **kw):
    kw.setdefault("check_names", False)
    return parse_sweep(tomllib.loads(textwrap.dedent(text)), **kw)


def test_expansion_counts_order_and_fields():
    sweep = parse(BASE)
    tasks = sweep.tasks()
    # alex: 2 seeds × 3 targets × depl(2 η) = 12; ks: 4 grid points × (2 + 1) = 12
    assert len(tasks) == 24 and len({t.key for t in tasks}) == 24
    alex = [t for t in tasks if t.group == "alex"]
    assert [(t.instance_seed, t.targets["loss_max"], t.params["eta"]) for t in alex[:4]] == [
        (0, 5.0, 50), (0, 5.0, 100), (0, 9.0, 50), (0, 9.0, 100)]
    assert all(t.targets["omega"] == 0.99 and t.time_limit_s == 30.0 for t in alex)
    dp = [t for t in tasks if t.algorithm == "knapsack-dp"]
    assert len(dp) == 4 and all(t.time_limit_s == 5.0 and t.group == "ks" for t in dp)
    assert {(t.instance_params["item_class"], t.instance_params["R"]) for t in dp} == {
        ("uncorrelated", 50), ("uncorrelated", 100), ("strongly", 50), ("strongly", 100)}
    assert all(t.instance_params["n_items"] == 6 for t in dp)
    assert all(t.evaluation == {"samples": 1000, "seed": 3} for t in tasks)
    t = tasks[0]
    assert Task.from_dict(t.to_dict()) == t


def test_keys_are_stable_and_cover_exactly_what_changes_the_result():
    keys = [t.key for t in parse(BASE).tasks()]
    assert keys == [t.key for t in parse(BASE).tasks()]  # deterministic
    # Label, time limit, sweep name and group id do not change a result...
    cosmetic = BASE.replace('name = "demo"', 'name = "other"').replace(
        "time_limit_s = 30", "time_limit_s = 99").replace('id = "alex"', 'id = "alx"').replace(
        '[[algorithms]]\nname = "depl"', '[[algorithms]]\nname = "depl"\nlabel = "DepL"')
    assert [t.key for t in parse(cosmetic).tasks()] == keys
    # ...evaluation settings, parameters, seeds and code version do.
    assert set(t.key for t in parse(BASE.replace("seed = 3", "seed = 4")).tasks()).isdisjoint(keys)
    moved = parse(BASE.replace("eta = [50, 100]", "eta = [50, 101]")).tasks()
    assert len(set(t.key for t in moved) - set(keys)) == 6 + 4  # only the η = 101 tasks
    base = ({"family": "f", "params": {}, "seed": 0}, {}, "depl", {"eta": 1}, {})
    assert task_key(*base) != task_key(*base, code_version="999")
    assert task_key(*base) != task_key(base[0], {}, "depl", {"eta": 1.0}, {})


def test_duplicate_tasks_collapse():
    text = BASE + '\n[[algorithms]]\nname = "depl"\nparams = { eta = 50 }\ninstances = ["alex"]\n'
    assert len(parse(text).tasks()) == 24


def test_instance_file_group(tmp_path):
    inst = tmp_path / "i.json"
    inst.write_text('{"x": 1}')
    sweep = parse('[[instances]]\nid = "f"\npath = "i.json"\n'
                  '[[algorithms]]\nname = "depl"\n', base_dir=tmp_path)
    (t,) = sweep.tasks()
    assert t.family == "file" and t.instance_seed is None
    assert t.instance_path == str(inst.resolve())
    assert set(t.instance_params) == {"sha256"}  # the content, never the path
    # Moved (another directory, another name): same content, same key.
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    inst.rename(moved / "renamed.json")
    (t_moved,) = parse('[[instances]]\nid = "f"\npath = "renamed.json"\n'
                       '[[algorithms]]\nname = "depl"\n', base_dir=moved).tasks()
    assert t_moved.key == t.key and t_moved.instance_path == str((moved / "renamed.json").resolve())
    (moved / "renamed.json").write_text('{"x": 2}')  # new content, new key
    (t2,) = parse('[[instances]]\nid = "f"\npath = "renamed.json"\n'
                  '[[algorithms]]\nname = "depl"\n', base_dir=moved).tasks()
    assert t2.key != t.key


@pytest.mark.parametrize("edit, where", [
    (("[sweep]", "[sweep]\nbogus = 1"), "sweep.bogus"),
    (("time_limit_s = 30", "time_limit_s = -1"), "sweep.time_limit_s"),
    (("samples = 1000", "samples = 0"), "sweep.evaluation.samples"),
    (('id = "ks"', 'id = "alex"'), "instances[1].id"),
    (("seeds = [0, 1]", "seeds = [0, -1]"), "instances[0].seeds[1]"),
    (("seeds = [0, 1]", 'seeds = "0"'), "instances[0].seeds"),
    # 2**64 loaded, ran, and its row could not be stored (OverflowError out of the runner)
    (("seeds = [0, 1]", "seeds = [0, 18446744073709551616]"), "instances[0].seeds[1]: must be at most 2**63 − 1"),
    (("seed = 3", "seed = 9223372036854775808"), "sweep.evaluation.seed: must be at most 2**63 − 1"),
    # one seed given as `seed` is named as written, not as a `seeds` list the sweep does not have
    (("seeds = [0, 1]", "seed = 18446744073709551616"), "instances[0].seed: must be at most 2**63 − 1"),
    (("seeds = [0, 1]", "seed = -1"), "instances[0].seed: "),
    # the instance format's rule and message (instances.magnitudes.omega_range), under the sweep's key
    (("omega = 0.99", "omega = 1.5"), "instances[0].targets.omega: must lie in [1e-12, 1 − 1e-12], got 1.5 ("),
    (("omega = 0.99", "omega = [0.9, 1e-300]"),                           # 1 − ω rounds to 1
     "instances[0].targets.omega: must lie in [1e-12, 1 − 1e-12], got 1e-300 (1 − ω must neither round to 1"),
    (("loss_max = [5.0, 9.0, 13.0]", 'loss_max = ["a"]'), "instances[0].targets.loss_max[0]"),
    (("targets = {", "targets = { lmax = 1,"), "instances[0].targets.lmax"),
    (("R = [50, 100]", "R = 50"), "instances[1].grid.R"),
    (("R = [50, 100]", "R = [50, 50]"), "instances[1].grid.R"),
    (('family = "knapsack"', 'family = "knapsack"\npath = "x.json"'), "instances[1]"),
    (('grid = { eta = [50, 100] }', 'grid = { eta = [] }'), "algorithms[0].grid.eta"),
    (('instances = ["ks"]', 'instances = ["nope"]'), "algorithms[1].instances[0]"),
    (('[[algorithms]]\nname = "depl"', '[[algorithms]]\nnme = "depl"'), "algorithms[0].nme"),
    (("time_limit_s = 5", "time_limit_s = true"), "algorithms[1].time_limit_s"),
    # names, ids and labels label table rows, CSV cells and one-line messages (a description may span lines)
    (('name = "demo"', 'name = "de\\u0000mo"'), "sweep.name: must not hold control characters or line breaks "
                                                "(tab, newline, U+2028, ...); character 2 is U+0000"),
    (('name = "demo"', 'name = "de\\nmo"'), "sweep.name: must not hold control characters"),
    (('id = "alex"', 'id = "al\\u2028ex"'), "instances[0].id: must not hold control characters or line breaks "
                                            "(tab, newline, U+2028, ...); character 2 is U+2028"),
    (('name = "knapsack-dp"', 'name = "knapsack-dp"\nlabel = "dp\\tfast"'),
     "algorithms[1].label: must not hold control characters"),
    # one series per label in a report: depl's and the DP's rows were averaged as one "algorithm"
    (('name = "knapsack-dp"', 'name = "knapsack-dp"\nlabel = "depl"'),
     "algorithms[1].label: 'depl' is already the label of algorithms[0] (algorithm 'depl')"),
    # the later entry has no `label` key (its label is its name): the key to change is the earlier one's
    (('name = "depl"\n', 'name = "depl"\nlabel = "knapsack-dp"\n'),
     "algorithms[0].label: 'knapsack-dp' is the name of the algorithm of algorithms[1], but algorithms[0] runs 'depl'"),
])
def test_invalid_sweeps_name_the_key(edit, where):
    old, new = edit
    assert old in BASE
    with pytest.raises(SweepError) as info:
        parse(BASE.replace(old, new, 1))
    assert str(info.value).startswith(where), str(info.value)


def test_a_description_may_span_lines():
    assert parse(BASE.replace('name = "demo"', 'name = "demo"\ndescription = """two\nlines"""', 1)).description \
        == "two\nlines"


def test_missing_sections_and_bad_toml(tmp_path):
    with pytest.raises(SweepError, match="^instances:"):
        parse('[[algorithms]]\nname = "depl"\n')
    with pytest.raises(SweepError, match="^algorithms:"):
        parse('[[instances]]\nid = "a"\nfamily = "realistic"\n')
    bad = tmp_path / "bad.toml"
    bad.write_text("[[instances]\nid = 1")
    with pytest.raises(SweepError, match="invalid TOML"):
        load_sweep(bad, check_names=False)
    with pytest.raises(SweepError, match="not found"):
        load_sweep(tmp_path / "nope.toml")


def test_names_are_checked_against_the_lower_layers():
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.name: unknown algorithm 'nope'"):
        parse(BASE.replace('name = "depl"', 'name = "nope"'), check_names=True)
    with pytest.raises(SweepError, match=r"^instances\[1\]\.family: unknown family"):
        parse(BASE.replace('family = "knapsack"', 'family = "knapsak"'), check_names=True)
    with pytest.raises(SweepError, match=r"^instances\[1\]\.grid\.R2: unknown parameter"):
        parse(BASE.replace("R = [50, 100]", "R2 = [50, 100]"), check_names=True)
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.grid\.etaa: unknown parameter"):
        parse(BASE.replace("eta = [50, 100]", "etaa = [50, 100]"), check_names=True)
    assert len(parse(BASE, check_names=True).tasks()) == 24


PACKAGED = ("quick", "paper", "complexity", "knapsack")


@pytest.mark.parametrize("name", ["quick", "paper", pytest.param("complexity", marks=pytest.mark.slow),
                                  pytest.param("knapsack", marks=pytest.mark.slow)])
def test_packaged_sweeps_are_valid(name):
    assert resolve_sweep_path(name) == PACKAGED_SWEEPS / f"{name}.toml"
    # Full validation: names, every parameter value through the solver's
    # Param, every instance built with its targets.
    sweep = load_sweep(name)
    tasks = sweep.tasks()
    assert sweep.name == name and tasks
    names = task_mod.available_algorithms()
    for a in sweep.algorithms:
        assert a.name in names, a.name
        known = task_mod.algorithm_parameters(a.name)
        assert set(a.params) | set(a.grid) <= known, (a.name, known)


def test_quick_sweep_feeds_every_report_section():
    tasks = load_sweep("quick", check_names=False).tasks()
    algos = {t.algorithm for t in tasks}
    assert {"depl", "best-exp", "milp", "pact", "static-learn", "one-switch"} <= algos
    alex = [t for t in tasks if t.instance_params.get("family") == "alexnet"]
    assert len({t.targets.get("loss_max") for t in alex}) >= 3  # Figs. 5, 7-9
    assert len({t.params.get("eta") for t in alex if t.algorithm == "depl"}) >= 3  # η effect
    ks = [t for t in tasks if t.family == "knapsack"]
    assert {"milp", "depl"} <= {t.algorithm for t in ks}
    assert {t.family for t in tasks} >= {"realistic", "knapsack", "scaling"}
    assert len(tasks) <= 290  # a few minutes on 2 cores (seeded variants, milp-exact, adaptive-opt at PACT's level)


def _paper_instances(tasks, sets=("alexnet", "mobilenet", "pact-vgg11")):
    """{set: {distinct instance recipe}} and {set: recipes milp-exact solves}."""
    every: dict = {s: set() for s in sets}
    exact: dict = {s: set() for s in sets}
    for t in tasks:
        if t.instance_set in sets:
            recipe = (json.dumps(t.instance_params, sort_keys=True), t.instance_seed,
                      t.targets.get("loss_max"))
            every[t.instance_set].add(recipe)
            if t.algorithm == "milp-exact":
                exact[t.instance_set].add(recipe)
    return every, exact


@pytest.mark.parametrize("name, least", [("quick", 8), ("paper", 30)])
def test_paper_sets_are_judged_on_a_population_each_against_its_exact_optimum(name, least):
    every, exact = _paper_instances(load_sweep(name, check_names=False).tasks())
    for s, recipes in every.items():
        assert len(recipes) >= least, s
        assert len({r[1] for r in recipes}) >= 4, s  # seeded variants, not only targets
        assert exact[s] == recipes, s                # milp-exact on every one


# --------------------------------------------------------------------------
# complete validation at load and hostile files

VALUES = """
[[instances]]
id = "ks"
family = "knapsack"
params = { n_items = 4, horizon = 4 }

[[algorithms]]
name = "ALGO"
params = { PARAMS }
"""


@pytest.mark.parametrize("algo, params, where", [
    ("depl", "eta = -5", "algorithms[0].params.eta"),
    ("depl", 'eta = "abc"', "algorithms[0].params.eta"),
    ("depl", 'eta = "200"', "algorithms[0].params.eta"),  # a string is not a number
    ("depl", "epsilon = nan", "algorithms[0].params.epsilon"),
    ("milp", "scenarios = -10", "algorithms[0].params.scenarios"),
    ("milp", "time_limit = -1", "algorithms[0].params.time_limit"),
])
def test_every_parameter_value_goes_through_the_solvers_param(tmp_path, algo, params, where):
    path = tmp_path / "s.toml"
    path.write_text(VALUES.replace("ALGO", algo).replace("PARAMS", params))
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    msg = str(info.value)
    assert msg.startswith(where) and "\n" not in msg


def test_grid_values_are_checked_one_by_one(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(VALUES.replace("ALGO", "depl").replace("params = { PARAMS }",
                                                           "grid = { eta = [50, 0] }"))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.grid\.eta\[1\]: .*>= 1"):
        load_sweep(path)


def test_combinations_only_the_settings_object_checks_are_refused_at_load(tmp_path):
    # the MILP's solver against its formulation is checked by build_settings, not by a
    # Param: the sweep must refuse it before any task runs, as `solve` does
    path = tmp_path / "s.toml"
    path.write_text(VALUES.replace("ALGO", "milp").replace(
        "params = { PARAMS }", 'grid = { formulation = ["fast", "naive"] }\nparams = { solver = "scip" }'))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params at grid point \{'formulation': 'naive'\}: "
                                         r"solver: 'scip' solves the matrix formulations") as info:
        load_sweep(path)
    assert "\n" not in str(info.value)
    # the same combination reached through a solvers axis instead of a grid
    path.write_text(VALUES.replace("ALGO", "milp").replace(
        "params = { PARAMS }", 'params = { formulation = "naive" }\nsolvers = ["highs", "scip"]'))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params at grid point \{'solver': 'scip'\}: "):
        load_sweep(path)


def test_combinations_of_parameters_are_checked_at_every_grid_point(tmp_path):
    # through the solver's own resolve_params (Solver.check_params), so --dry-run catches them
    path = tmp_path / "s.toml"
    path.write_text(VALUES.replace("ALGO", "pact").replace(
        "params = { PARAMS }", "params = { robust_quantile = 0.8 }\ngrid = { min_robust_quantile = [0.5, 0.9] }"))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params at grid point \{'min_robust_quantile': 0\.9\}: "
                                         r"parameter 'min_robust_quantile': must be <= robust_quantile \(0\.8\)"):
        load_sweep(path)
    path.write_text(VALUES.replace("ALGO", "pact").replace(
        "PARAMS", "robust_quantile = 0.6, min_robust_quantile = 0.7"))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.params: parameter 'min_robust_quantile'"):
        load_sweep(path)
    path.write_text(VALUES.replace("ALGO", "pact").replace("PARAMS", "min_robust_quantile = 0.6"))
    assert load_sweep(path).algorithms[0].params == {"min_robust_quantile": 0.6}


def test_generator_parameters_targets_and_files_are_checked_at_load(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(VALUES.replace("ALGO", "depl").replace("params = { PARAMS }", "")
                    .replace("n_items = 4", 'n_items = "six"'))
    with pytest.raises(SweepError, match=r"^instances\[0\]\.params\.n_items: .*expected int"):
        load_sweep(path)
    # A target the instance rejects: ℓmax above ℓ(0).
    path.write_text(VALUES.replace("ALGO", "depl").replace("params = { PARAMS }", "")
                    .replace('id = "ks"', 'id = "ks"\ntargets = { loss_max = [1e9] }'))
    with pytest.raises(SweepError, match=r"^instances\[0\] .*loss_max"):
        load_sweep(path)
    # An instance file that exists but is not a valid instance.
    (tmp_path / "bad.json").write_text('{"format_version": 1, "name": "x"}')
    path.write_text('[[instances]]\nid = "f"\npath = "bad.json"\n'
                    '[[algorithms]]\nname = "depl"\n')
    with pytest.raises(SweepError, match=r"^instances\[0\] \(id 'f'; path .*bad.json"):
        load_sweep(path)
    # Inspection without the lower layers stays possible.
    assert load_sweep(path, check_names=False).tasks()


def test_unknown_algorithm_lists_every_registered_one():
    from deplbench.solvers.registry import available

    with pytest.raises(SweepError) as info:
        parse(BASE.replace('name = "depl"', 'name = "nope"'), check_names=True)
    listed = str(info.value).split("(available: ", 1)[1]
    assert set(available()) <= set(listed.rstrip(")").split(", "))
    assert "knapsack-dp" in listed


def test_non_utf8_and_deeply_nested_sweeps_are_one_line_errors(tmp_path):
    latin = tmp_path / "latin.toml"
    latin.write_bytes('[sweep]\ndescription = "caf\u00e9"\n'.encode("latin-1"))
    with pytest.raises(SweepError) as info:
        load_sweep(latin)
    assert str(latin) in str(info.value) and "UTF-8" in str(info.value)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SweepError) as info:
        load_sweep(deep)
    assert str(deep) in str(info.value) and "nested too deeply" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.integration
def test_hostile_sweeps_through_the_cli_exit_2_with_one_line(tmp_path, capsys):
    from deplbench.cli import main as cli_main

    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    bad_value = tmp_path / "bad.toml"
    bad_value.write_text(VALUES.replace("ALGO", "milp").replace("PARAMS", "time_limit = -1"))
    for path in (deep, bad_value):
        db = tmp_path / "never.sqlite"
        assert cli_main(["run", str(path), "--db", str(db), "--dry-run"]) == 2
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert captured.out == "" and "Traceback" not in err and len(err.splitlines()) == 1
        assert not db.exists()


# ------------------------------------------- the solver axis (H4)

SOLVER_AXIS = """
[sweep]
name = "peers"
[[instances]]
id = "ks"
family = "knapsack"
params = { n_items = 6 }
{instance_extra}
[[algorithms]]
name = "milp"
params = { scenarios = 50 }
{milp_extra}
[[algorithms]]
name = "depl"
"""


def _axis(instance_extra="", milp_extra="", **kw):
    return parse(SOLVER_AXIS.replace("{instance_extra}", instance_extra).replace("{milp_extra}", milp_extra), **kw)


def test_solver_axis_on_an_algorithm_expands_tasks_and_keys():
    plain = _axis().tasks()
    tasks = _axis(milp_extra='solvers = ["highs", "pyomo:appsi_highs"]').tasks()
    assert len(plain) == 2 and len(tasks) == 3
    milp = [t for t in tasks if t.algorithm == "milp"]
    assert [t.params["solver"] for t in milp] == ["highs", "pyomo:appsi_highs"]
    assert len({t.key for t in tasks}) == 3                       # the solver is part of the key
    assert all("solver" not in t.params for t in tasks if t.algorithm == "depl")


def test_solver_axis_on_an_instance_reaches_only_algorithms_that_take_a_solver():
    tasks = _axis(instance_extra='solvers = ["highs", "scip"]', check_names=True,
                  milp_extra="").tasks()
    assert sorted((t.algorithm, t.params.get("solver")) for t in tasks) == [
        ("depl", None), ("milp", "highs"), ("milp", "scip")]
    # an algorithm's own axis wins over the instance's
    tasks = _axis(instance_extra='solvers = ["highs", "scip"]', milp_extra='solvers = ["pyomo:appsi_highs"]').tasks()
    assert [t.params["solver"] for t in tasks if t.algorithm == "milp"] == ["pyomo:appsi_highs"]


@pytest.mark.parametrize("inst,milp,where", [
    ("", 'solvers = ["highs", "gurobi"]', r"^algorithms\[0\]\.solvers\[1\]: unknown solver 'gurobi'"),
    ("", 'solvers = ["pyomo:nosuch"]', r"^algorithms\[0\]\.solvers\[0\]: unknown solver 'pyomo:nosuch'"),
    ("", "solvers = []", r"^algorithms\[0\]\.solvers: must be a non-empty list"),
    ("", 'solvers = ["highs", "highs"]', r"^algorithms\[0\]\.solvers: duplicate"),
    ("", "solvers = [1]", r"^algorithms\[0\]\.solvers\[0\]"),
    ('solvers = "highs"', "", r"^instances\[0\]\.solvers: must be a non-empty list"),
    ("", 'solvers = ["highs"]\ngrid = { solver = ["scip"] }', r"^algorithms\[0\]\.solvers: the solver is also set"),
])
def test_bad_solver_axes_name_the_field(inst, milp, where):
    with pytest.raises(SweepError, match=where):
        _axis(instance_extra=inst, milp_extra=milp)


@pytest.mark.system_packages
def test_solver_axis_checks_availability_and_the_algorithm_at_load(monkeypatch):
    from deplbench.formulations.milp import peers

    text = SOLVER_AXIS.replace("{instance_extra}", "").replace("{milp_extra}", "")
    text = text.replace('[[algorithms]]\nname = "depl"', '[[algorithms]]\nname = "depl"\nsolvers = ["highs"]')
    with pytest.raises(SweepError, match=r"^algorithms\[1\]\.solvers: algorithm 'depl' has no solver parameter"):
        parse(text, check_names=True)
    monkeypatch.setattr("deplbench.benchmarks.solver_axis.availability",
                        lambda name: (False, "not installed") if name == "scip" else peers.availability(name))
    with pytest.raises(SweepError, match=r"^algorithms\[0\]\.solvers\[1\]: solver 'scip' is not available here"):
        _axis(milp_extra='solvers = ["highs", "scip"]', check_names=True)


def test_the_largest_seed_a_sweep_accepts_is_stored(tmp_path):
    """2**63 − 1 is accepted at load and its row fits the store's INTEGER column."""
    from deplbench.benchmarks.store import ResultsStore
    from tests.benchmarks.test_store import record

    text = BASE.replace("seeds = [0, 1]", "seeds = [9223372036854775807]", 1)
    assert {t.instance_seed for t in parse(text).tasks() if t.group == "alex"} == {2**63 - 1}
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert store.add(record("k", instance_seed=2**63 - 1, eval_seed=2**63 - 1))
        assert store.frame()["instance_seed"].tolist() == [2**63 - 1]
