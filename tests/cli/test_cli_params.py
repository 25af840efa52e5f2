"""``--param KEY=VALUE``: one parser for ``solve`` and ``simulate``.

Both commands read ``--param`` through ``deplbench.cli.solvers.parse_kv``;
a malformed item is the user's input (one ``error:`` line naming
``--param``, exit 2) and a key's ``-`` is read as ``_``. A number's text is
converted by ``params.Param`` for these and for ``generate``, which refuses
digits grouped with ``_``.
"""

from __future__ import annotations

import pytest

from deplbench.cli import main
from deplbench.instances.generators import generate


@pytest.fixture(scope="module")
def inst_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("params") / "vgg.json"
    generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0).save(path)
    return path


@pytest.mark.parametrize("command", ["solve", "simulate"])
@pytest.mark.parametrize("item,match", [
    ("noequals", "--param: expected key=value, got 'noequals'"),
    ("=3", "--param: expected key=value, got '=3'"),
    # the dash is read as an underscore: the solver names the key it got
    ("no-such=1", "has no parameter 'no_such'"),
    # an empty value is shown as such, not as a blank before the colon
    ("scenarios=", "--param scenarios '': expected int, got ''"),
])
def test_bad_param_items_are_one_line_exit_2(inst_file, capsys, command, item, match):
    assert main([command, str(inst_file), "--algo", "one-switch", "--param", item]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and match in err, err
    assert captured.out == ""


@pytest.mark.parametrize("argv,match", [
    (["solve", "{inst}", "--algo", "one-switch", "--param", "scenarios=1_000"],
     "--param scenarios 1_000: expected int, got '1_000': '_' between digits is refused"),
    (["simulate", "{inst}", "--algo", "one-switch", "--param", "scenarios=1_0"],
     "--param scenarios 1_0: expected int, got '1_0': '_' between digits is refused"),
    (["solve", "{inst}", "--algo", "one-switch", "--scenarios", "1_0"],
     "--scenarios 1_0: expected int, got '1_0': '_' between digits is refused"),
    (["generate", "knapsack", "--param", "horizon=1_0"],
     "parameter 'horizon': expected int, got '1_0': '_' between digits is refused"),
    (["generate", "realistic", "--param", "loss_max=1_0.5"],
     "parameter 'loss_max': expected float, got '1_0.5': '_' between digits is refused"),
])
def test_digits_grouped_with_underscores_are_refused_naming_the_parameter(inst_file, capsys, argv, match):
    """int() and float() read "1_0" as 10, another number than typed: refused, naming the parameter."""
    assert main([a.format(inst=inst_file) for a in argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("error: " + match), err
    assert captured.out == ""


@pytest.mark.parametrize("argv,flag", [
    (["adaptive", "{inst}", "--buckets", "1_0"], "--buckets"),
    (["solve", "{inst}", "--algo", "depl", "--eval-samples", "1_000"], "--eval-samples"),
    (["adaptive", "{inst}", "--width", "0.0_3"], "--width"),
])
def test_options_argparse_reads_refuse_grouped_digits_too(inst_file, capsys, argv, flag):
    """Options read by argparse's type=int/float (not by a Param) refuse "1_0" the same way."""
    with pytest.raises(SystemExit) as exc:
        main([a.format(inst=inst_file) for a in argv])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and f"argument {flag}: " in err and "'_' between digits is refused" in err, err
    assert captured.out == ""


@pytest.mark.parametrize("algo,params,match", [
    # a combination of parameters, checked where every parameter is (Solver.check_params)
    ("pact", ["min_robust_quantile=0.9", "robust_quantile=0.6"],
     "--param min_robust_quantile 0.9: must be <= robust_quantile (0.6), got 0.9"),
    # the bracket's candidate algorithms, checked before the bracket runs
    ("milp-certified", ["algorithms=milp-certified"], "--param algorithms milp-certified: 'milp-certified' "
     "cannot be its own candidate"),
    ("milp-certified", ["algorithms=depl,no-such"], "--param algorithms depl,no-such: unknown algorithm 'no-such'"),
])
def test_parameter_combinations_are_refused_before_the_run_exit_2(inst_file, deplbench_cli, algo, params, match):
    args = [x for p in params for x in ("--param", p)]
    status, out, err = deplbench_cli("solve", inst_file, "--algo", algo, *args, "--json")
    assert status == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and match in err, err
    assert out == ""


@pytest.mark.parametrize("command", ["solve", "simulate"])
def test_eval_samples_beyond_the_memory_budget_are_refused_naming_the_flag(inst_file, deplbench_cli, command):
    status, out, err = deplbench_cli(command, inst_file, "--algo", "one-switch", "--eval-samples", 100_000_000)
    assert status == 2 and out == "", (out, err)
    assert err == ("error: --eval-samples: 100000000 trajectories of up to K̄ = 20 epochs (the longest plan the "
                   "instance allows) need 2.99 GiB with the per-epoch bands (budget 2 GiB); use at most 66845644 "
                   "samples\n"), err
    status, out, err = deplbench_cli(command, inst_file, "--algo", "one-switch", "--eval-samples", 0)
    assert status == 2 and "--eval-samples" in err and "eval_samples" not in err, err


@pytest.mark.parametrize("algo", ["milp", "milp-certified"])
def test_scenarios_no_instance_could_hold_are_refused_before_the_run_exit_2(inst_file, deplbench_cli, algo):
    # 32 bytes per scenario, epoch and random term: S = 10^10 needs ≥ 298 GiB on any instance, so it
    # is refused before the run (exit status 2), not run to a status-error result (exit status 1)
    status, out, err = deplbench_cli("solve", inst_file, "--algo", algo, "--scenarios", 10_000_000_000, "--json")
    assert status == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and "scenarios" in err and "298.02 GiB" in err, err
    # a tiny memory_limit no instance's scenarios fit: refused too, naming both
    status, out, err = deplbench_cli("solve", inst_file, "--algo", "milp", "--param", "memory_limit=1e-9")
    assert status == 2 and "scenarios" in err and "> memory_limit 1e-09 GiB" in err and "0.00 GiB" not in err, err
