"""Standard output carries only the requested output.

Every sub-command that has ``--json`` is run as a subprocess on a small
generated instance and its stdout must parse with one :func:`json.loads`
(exactly one JSON document: a second document, a banner line or a log line
would make it fail). highspy 1.16 prints "Running HiGHS ..." from C++ when a
``Highs()`` object is created, so ``solve --algo milp --json`` is the case
that broke. The mechanism itself (:func:`deplbench.cli.stdout_only_for_output`)
is also tested with a C-level write that does not depend on any solver's
version.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

import pytest

from deplbench.cli import build_parser
from deplbench.instances.generators import generate

#: End to end as a whole (every test runs the command as a subprocess): `make test-fast` leaves it out.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def files(tmp_path_factory, deplbench_cli):
    """A tiny knapsack instance (one cluster, K̄ = 4) and an MILP result for it, a library of one entry and
    HiGHS's solution of its PWL file: inputs of the commands, made in this process (only the commands
    under test need a process of their own)."""
    import highspy

    root = tmp_path_factory.mktemp("json_stdout")
    inst = root / "k.json"
    inst.write_text(generate("knapsack", n_items=4, seed=0, horizon=4).to_json(), encoding="utf-8")
    result = root / "milp.json"
    status, _, err = deplbench_cli("solve", inst, "--algo", "milp", "--eval-samples", 500, "-o", result)
    assert status == 0, err
    lib = root / "lib"
    status, _, err = deplbench_cli("library", "build", "--out", lib, "--only", LIBRARY_ENTRY, "--time-limit", 600,
                                   "--no-true-optimum")
    assert status == 0, err
    sol = root / "pwl.sol"             # HiGHS's solution of the PWL file, for `library verify`
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(lib / "pwl" / f"{LIBRARY_ENTRY}.mps.gz"))
    h.run()
    h.writeSolution(str(sol), 0)
    assert sol.is_file()
    return {"instance": inst, "result": result, "lib": lib, "tmp": root, "sol": sol}


#: One small entry of the instance library (``deplbench library``).
LIBRARY_ENTRY = "scaling-m3-n2-k10"


#: command → arguments after the command name ({instance}/{result} filled in)
#: and the expected top-level JSON type.
JSON_COMMANDS = {
    "solve-milp": (["solve", "{instance}", "--algo", "milp", "--eval-samples", "500", "--json"], dict),
    "solve-depl": (["solve", "{instance}", "--algo", "depl", "--eval-samples", "500", "--json"], dict),
    "algorithms": (["algorithms", "--json"], dict),
    "evaluate": (["evaluate", "{instance}", "{result}", "--samples", "500", "--json"], dict),
    "certify": (["certify", "{instance}", "--replications", "2", "--scenarios", "20",
                 "--validation", "200", "--grid-seeds", "1", "--risk-grid", "1", "--json"], dict),
    # 16 time points: the deadline-carrying passes run, on a coarser grid than the default's
    "adaptive": (["adaptive", "{instance}", "--one-grid", "--buckets", "50", "--runs", "500",
                  "--tune-runs", "200", "--time-points", "16", "--json"], dict),
    "simulate": (["simulate", "{instance}", "--algo", "depl", "--runs", "500",
                  "--eval-samples", "500", "--json"], dict),
    "library-build": (["library", "build", "--out", "{tmp}/lib-json", "--only", LIBRARY_ENTRY,
                       "--time-limit", "600", "--no-true-optimum", "--json"], dict),
    "library-verify": (["library", "verify", "{lib}", LIBRARY_ENTRY, "{sol}", "--samples", "500", "--json"], dict),
    "library-check": (["library", "check", "{lib}", "--only", LIBRARY_ENTRY, "--time-limit", "600",
                       "--json"], dict),
    "measure-analyse": (["measure", "analyse", "--bootstrap", "20", "--json"], dict),
}


def _command(args: list[str]) -> str:
    """The (sub-)command an argument list runs: ``solve``, ``library build``."""
    words = [args[0]]
    if args[0] in ("library", "measure"):
        words.append(args[1])
    return " ".join(words)


def _json_subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    """Every (nested) sub-command that has a ``--json`` option."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if any("--json" in a.option_strings for a in sub._actions):
                    found.add(prefix + name)
                found |= _json_subcommands(sub, prefix + name + " ")
    return found


def test_every_json_command_is_covered():
    """A new ``--json`` command must be added to JSON_COMMANDS."""
    covered = {_command(args) for args, _ in JSON_COMMANDS.values()}
    assert _json_subcommands(build_parser()) == covered


@pytest.mark.parametrize("case", sorted(JSON_COMMANDS))
def test_json_stdout_is_one_document(case, files, deplbench_cli):
    args, kind = JSON_COMMANDS[case]
    proc = deplbench_cli.process(*(a.format(**files) for a in args))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)  # fails on a banner, a log line or a second document
    assert isinstance(doc, kind)
    assert proc.stdout.endswith("}\n" if kind is dict else "]\n")
    if case == "solve-milp":
        assert doc["algorithm"] == "milp" and doc["status"] == "optimal"
    if case == "algorithms":        # the algorithms and the MILP solvers, as the text lists both
        assert "depl" in {r["name"] for r in doc["algorithms"]}
        assert "pyomo:appsi_highs" in {r["name"] for r in doc["solvers"]}


def test_every_json_command_prints_one_object():
    """``--json`` is one JSON object on every command (an array would break that contract)."""
    assert {case: kind for case, (_, kind) in JSON_COMMANDS.items() if kind is not dict} == {}


def test_solve_milp_with_the_pyomo_backend_prints_one_object(tmp_path, deplbench_cli):
    """Pyomo's appsi_highs captures the solver's output with its own fd
    redirections and reader threads; under the command's redirections they
    must neither deadlock nor leave a thread's traceback on stderr."""
    inst = tmp_path / "k3.json"
    inst.write_text(generate("knapsack", n_items=3, seed=0, horizon=3).to_json(), encoding="utf-8")
    proc = deplbench_cli.process("solve", inst, "--algo", "milp", "--param", "backend=pyomo", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception in thread" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict) and proc.stdout.endswith("}\n")
    assert doc["status"] == "optimal" and doc["params"]["backend"] == "pyomo"


def test_c_level_writes_go_to_stderr(tmp_path):
    """What a library writes to file descriptor 1 while a command runs goes
    to stderr; ``print`` (the command's own output) still reaches stdout, and
    descriptor 1 is restored afterwards."""
    script = textwrap.dedent("""
        import os
        from deplbench.cli import stdout_only_for_output
        print("before", flush=True)
        with stdout_only_for_output():
            os.write(1, b"BANNER from C\\n")
            print("requested output")
        print("after", flush=True)
        os.write(1, b"fd1 restored\\n")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "before\nrequested output\nafter\nfd1 restored\n"
    assert proc.stderr == "BANNER from C\n"

