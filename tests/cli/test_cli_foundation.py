"""``deplbench generate | validate | schema | evaluate`` run as subprocesses.

Bad input must give a one-line ``error:`` naming the field, a non-zero exit
status and never a traceback. Subprocesses are the slow part (~1 s each), so
each call checks several things; checks that need no process of their own
run the command in this process (both through the ``deplbench_cli`` fixture
of ``conftest.py``).
"""

from __future__ import annotations

import copy
import json

import pytest

from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.instances.generators import generate
from tests.instance_data import base_instance


def assert_clean_failure(proc, *fragments):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


def write_json(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


#: file name → (instance mutation, text the error must contain)
def _bad_files(tmp_path):
    def mutate(fn):
        data = copy.deepcopy(base_instance())
        fn(data)
        return data

    cases = {
        "omega.json": (mutate(lambda d: d.update(omega=1.5)), "omega"),
        "capacity.json": (mutate(lambda d: d["clusters"][1].update(capacity=0)), "clusters[1].capacity"),
        "negcap.json": (mutate(lambda d: d["clusters"][0].update(capacity=-2)), "clusters[0].capacity"),
        "switch.json": (mutate(lambda d: d["switches"][0].update(from_model="nobody")), "switches[0].from_model"),
        "lossmax.json": (mutate(lambda d: d.update(loss_max=10.0)), "loss_max"),
        "nomodels.json": (mutate(lambda d: d.update(models=[])), "models"),
        "dist.json": (mutate(lambda d: d["models"][0]["improvement"].update(scale=-1)),
                      "models[0].improvement.inverse_gamma.scale"),
    }
    paths = {}
    for name, (data, field) in cases.items():
        paths[write_json(tmp_path / name, data)] = field
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(base_instance()).replace('"time_max": 20.0', '"time_max": Infinity'), encoding="utf-8")
    paths[nan] = "non-finite number Infinity"
    notjson = tmp_path / "notjson.json"
    notjson.write_text("models: [alexnet]\n", encoding="utf-8")
    paths[notjson] = "not valid JSON"
    return paths


@pytest.mark.integration
def test_validate_reports_every_bad_file(tmp_path, deplbench_cli):
    bad = _bad_files(tmp_path)
    good = write_json(tmp_path / "good.json", base_instance())
    proc = deplbench_cli.process("validate", good, *bad)
    assert_clean_failure(proc, *bad.values())
    # One error line per bad file, each naming its file.
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(bad)
    for path, field in bad.items():
        assert any(str(path) in line and field in line for line in errors), (path, field)
    assert proc.stdout.startswith(f"ok: {good}")


@pytest.mark.integration
def test_validate_single_bad_file_and_missing_file(tmp_path, deplbench_cli):
    path = write_json(tmp_path / "omega.json", {**base_instance(), "omega": 0})
    proc = deplbench_cli.process("validate", path)
    assert_clean_failure(proc, "omega")
    assert proc.returncode == 2 and proc.stdout == ""
    proc = deplbench_cli.process("validate", tmp_path / "absent.json")
    assert_clean_failure(proc, "cannot read")


@pytest.mark.integration
def test_generate_validate_reproducible(tmp_path, deplbench_cli):
    a, c = tmp_path / "a.json", tmp_path / "c.json"
    for out, seed in ((a, 4), (c, 5)):
        proc = deplbench_cli.process("generate", "knapsack", "--class", "strongly", "--n-items", 6, "--seed", seed,
                                     "--param", "horizon=5", "--param", "R=50", "-o", out)
        assert proc.returncode == 0, proc.stderr
    # The CLI and the library agree byte for byte (the library's same-seed
    # reproducibility is tested in test_generators); seeds change the items.
    for out, seed in ((a, 4), (c, 5)):
        lib = generate("knapsack", item_class="strongly", n_items=6, seed=seed, horizon=5, R=50)
        assert out.read_text(encoding="utf-8") == lib.to_json()
    assert json.loads(a.read_text())["provenance"]["items"] != json.loads(c.read_text())["provenance"]["items"]
    proc = deplbench_cli.process("validate", a, c)
    assert proc.returncode == 0 and proc.stdout.count("ok: ") == 2


@pytest.mark.integration
def test_generate_rejects_bad_parameters_cleanly(tmp_path, deplbench_cli):
    proc = deplbench_cli.process("generate", "realistic", "--family", "alexnet", "--param", "omega=1")
    assert_clean_failure(proc, "omega")
    status, _, err = deplbench_cli("generate", "scaling", "--class", "weakly")
    assert status == 2 and "--class" in err and "knapsack" in err
    status, _, err = deplbench_cli("generate", "datasets", "--param", "n_datasets", "-o", tmp_path / "x.json")
    assert status == 2 and "KEY=VALUE" in err
    assert not (tmp_path / "x.json").exists()
    status, _, err = deplbench_cli("generate", "realistic", "--param", "family=vgg")
    assert status == 2 and "family" in err


@pytest.mark.integration
def test_schema_and_evaluate(tmp_path, deplbench_cli):
    status, out, _ = deplbench_cli("schema")
    assert status == 0
    schema = json.loads(out)
    assert {"omega", "models", "clusters"} <= set(schema["properties"])

    inst = generate("realistic", family="alexnet", loss_max=13.0)
    ipath = tmp_path / "inst.json"
    inst.save(ipath)
    good = plan_from_choices(inst, ["intermediate"] * 27, ["A1"] * 27, {"A1": ["d0"]})
    short = plan_from_choices(inst, ["intermediate"] * 5, ["A1"] * 5, {"A1": ["d0"]})
    good.save(tmp_path / "good.json")
    # A solver result wrapping the plan is accepted too.
    write_json(tmp_path / "short.json", {"algorithm": "x", "status": "feasible", "plan": short.to_dict()})

    status, out, err = deplbench_cli("evaluate", ipath, tmp_path / "good.json", "--samples", 20000, "--seed", 1,
                                     "--json")
    assert status == 0, err
    ev = json.loads(out)
    assert ev["verdict"] == "feasible" and ev["epochs"] == 27 and ev["samples"] == 20000
    assert ev["quantile_ci"][0] <= ev["quantile"] <= ev["quantile_ci"][1] <= 13.0
    assert len(ev["mean"]) == 28

    status, out, _ = deplbench_cli("evaluate", ipath, tmp_path / "short.json", "--samples", 1000, "--check")
    assert status == 1 and "verdict        infeasible" in out

    status, _, err = deplbench_cli("evaluate", ipath, ipath)          # an instance is not a plan
    assert status == 2 and f"{ipath}: plan: unknown field 'format_version'" in err
    write_json(tmp_path / "ghost.json", {"epochs": [{"model": "ghost", "cluster": "A1", "allocation": 1}],
                                         "datasets": {"A1": ["d0"]}})
    status, _, err = deplbench_cli("evaluate", ipath, tmp_path / "ghost.json", "--samples", 10)
    assert status == 2 and "samples" in err
    proc = deplbench_cli.process("evaluate", ipath, tmp_path / "ghost.json")
    assert_clean_failure(proc, "epochs[0].model")


@pytest.mark.parametrize("args", [("generate", "--help"), ("evaluate", "--help")])
def test_help_lists_parameters(args, deplbench_cli):
    status, out, _ = deplbench_cli(*args)
    assert status == 0
    if args[0] == "generate":
        assert "target_fraction" in out and "pact-vgg11" in out
    else:
        assert "--samples" in out and "--check" in out


# ----------------------------------------------------------------- exit codes and messages
@pytest.fixture
def knapsack_file(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(generate("knapsack", n_items=4, seed=0, horizon=4).to_json(), encoding="utf-8")
    return path


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err and "[Errno" not in err
    return lines[0]


@pytest.mark.parametrize("args, fragments", [
    (("--write-lp", "model.txt"), ("--write-lp model.txt", ".lp or .mps")),
    (("--param", "write_lp=model.txt"), ("--param write_lp model.txt", ".lp or .mps")),
    (("--write-lp", "{tmp}/absent/m.lp"), ("--write-lp", "absent", "does not exist")),
])
def test_solve_bad_write_lp_is_input_error(args, fragments, knapsack_file, tmp_path, deplbench_cli):
    """A bad --write-lp is the user's input: exit 2, one line naming the
    option, nothing on stdout (not a solve with status error, exit 1)."""
    args = [a.format(tmp=tmp_path) for a in args]
    status, out, err = deplbench_cli("solve", knapsack_file, "--algo", "milp", *args)
    assert status == 2 and out == ""
    line = _one_error_line(err)
    for fragment in fragments:
        assert fragment in line, line


def test_os_error_message_names_file_and_problem():
    from deplbench.cli import os_error_message

    msg = os_error_message(FileExistsError(17, "File exists", "/etc/hostname"))
    assert msg == "/etc/hostname: file exists"
    assert os_error_message(PermissionError(13, "Permission denied", "/root/x", None)) == \
        "/root/x: permission denied"
    assert os_error_message(OSError(18, "Invalid cross-device link", "a", None, "b")) == \
        "a -> b: invalid cross-device link"
    assert os_error_message(OSError("disk on fire")) == "disk on fire"


def test_file_system_errors_are_one_line(tmp_path, knapsack_file, deplbench_cli):
    """Raw errno text never reaches the user: the line names the file and the
    problem (``[Errno 21] Is a directory: ...`` before)."""
    from deplbench.benchmarks.store import ResultsStore

    db = tmp_path / "s.sqlite"
    with ResultsStore(db):
        pass
    status, out, err = deplbench_cli("export", db, "--format", "csv", "-o", tmp_path)
    assert status == 2 and out == ""
    line = _one_error_line(err)
    assert str(tmp_path) in line and "is a directory" in line
    status, _, err = deplbench_cli("validate", tmp_path)
    assert status == 2 and _one_error_line(err).endswith("is a directory, not an instance file")
    # A file where a directory is expected, in solve's -o (checked before the solve), and a folder.
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    for bad, why in ((tmp_path / "afile" / "r.json", f"directory {tmp_path / 'afile'} does not exist"),
                     (tmp_path / "adir", "is a directory")):
        status, out, err = deplbench_cli("solve", knapsack_file, "--algo", "knapsack-dp",
                                         "--eval-samples", 100, "-o", bad)
        assert status == 2 and out == ""
        assert _one_error_line(err) == f"error: -o {bad}: cannot write ({why})"


def test_main_help_documents_exit_statuses(deplbench_cli):
    status, out, _ = deplbench_cli("--help")
    assert status == 0
    text = out[out.index("exit status:"):]
    for code, word in (("0", "success"), ("1", "failed tasks in `run`"), ("2", "bad input"), ("130", "interrupted")):
        assert f"  {code} " in text and word in text.replace("\n       ", " "), (code, text)


def test_solve_help_has_description_defaults_and_algorithms(deplbench_cli):
    from deplbench.solvers.registry import all_solver_info

    status, out, _ = deplbench_cli("solve", "--help")
    assert status == 0
    flat = " ".join(out.split())
    assert "out of sample" in flat                                     # the description
    assert "(default 50000)" in flat                                   # --eval-samples
    milp = next(r for r in all_solver_info() if r["name"] == "milp")
    assert f"milp {milp['parameters']['scenarios']['default']}" in flat  # per-algorithm default
    algos = out[out.index("algorithms ("):]
    for row in all_solver_info(include_unavailable=True):
        assert f"\n  {row['name']} " in algos, row["name"]


@pytest.mark.parametrize("args,needle", [
    (("validate", "x.json", "--json"), "unrecognized arguments: --json"),
    (("solve",), "required"),
    (("nosuch",), "invalid choice"),
])
def test_usage_errors_are_one_line_with_status_2(args, needle, deplbench_cli):
    # The error contract holds for argparse's own errors too: one line on
    # stderr naming the problem (no usage block), exit 2, nothing on stdout.
    status, out, err = deplbench_cli(*args)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err


@pytest.mark.parametrize("args,command,unknown", [
    (("validate", "--json", "alexnet.json"), "deplbench validate", "--json"),
    (("certify", "x.json", "--width", "0.01"), "deplbench certify", "--width 0.01"),
    (("measure", "refit", "-o", "fit.json", "--bogus"), "deplbench measure refit", "--bogus"),
])
def test_an_unknown_option_is_refused_by_the_sub_command_naming_it(args, command, unknown, deplbench_cli):
    # argparse hands a sub-command's unknown options to the top-level parser,
    # whose message named only `deplbench` and pointed at `deplbench --help`.
    status, out, err = deplbench_cli(*args)
    assert status == 2 and out == ""
    assert err.startswith(f"error: {command}: unrecognized arguments: {unknown} "), err
    assert err.rstrip().endswith(f"(see {command} --help)") and err.count("\n") == 1, err


def test_validate_prints_each_number_as_it_is(tmp_path, deplbench_cli):
    """The summary shows the numbers themselves: with six digits (``:g``)
    ω = 0.999999999999 would read ``ω=1`` (a level the format refuses) and
    ℓ(0) = 10.0000001 beside ℓmax = 10 two equal losses."""
    data = {**base_instance(), "omega": 0.999999999999, "initial_loss": 10.0000001, "loss_max": 10.0,
            "time_max": 12.3456789}
    path = write_json(tmp_path / "near.json", data)
    status, out, err = deplbench_cli("validate", path)
    assert status == 0 and err == ""
    assert out.rstrip().endswith("ω=0.999999999999, ℓ(0)=10.0000001, ℓmax=10, Tmax=12.3456789")


@pytest.mark.parametrize("argv, option", [
    (["solve", "k.json", "--algo", "depl", "--algo", "milp"], "--algo"),
    (["solve", "k.json", "--algo", "milp", "--scenarios", "50", "--scenarios=60"], "--scenarios"),
    (["simulate", "k.json", "--algo", "depl", "--algorithm", "milp"], "--algorithm/--algo"),
    (["certify", "k.json", "--confidence", "0.9", "--confidence", "0.95"], "--confidence"),
    # options of an argument group or a mutually exclusive group (their add_argument is the group's)
    (["certify", "k.json", "--refine-share", "0.3", "--refine-share", "0.4"], "--refine-share"),
    (["fit", "logs.csv", "-o", "f.json", "--family", "alexnet", "--family", "mobilenet"], "--family"),
    (["run", "s.toml", "--dry-run", "--dask-local", "1", "--dask-local", "2"], "--dask-local"),
])
def test_a_single_valued_option_given_twice_is_refused(capsys, argv, option):
    """argparse keeps the last value of an option given twice (`--algo depl --algo milp` would run
    milp), as `--param k=…` twice is not: refused before any file is read."""
    from deplbench.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert f"argument {option}: given twice (one value per option)" in captured.err, captured.err


def test_repeatable_options_still_repeat_and_leave_no_trace_in_the_namespace():
    from deplbench.cli import build_parser

    args = build_parser().parse_args(["library", "check", "lib", "--only", "a", "--only", "b"])
    assert args.only == ["a", "b"]
    assert build_parser().parse_args(["certify", "k.json", "--refine-share", "0.3"]).refine_share == 0.3
    assert not any(name.startswith("_") for name in vars(args))
