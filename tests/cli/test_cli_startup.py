"""CLI start-up: ``deplbench --help``, ``--version`` and ``validate`` import
no numerical library they do not need.

Counted, not timed: each command runs in a fresh interpreter, which then
lists the modules it imported (``sys.modules``). Seconds depend on the
machine and its load; the set of imported packages does not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from deplbench import cli

#: Packages whose import alone takes ~0.3-3 s each.
HEAVY = ("scipy", "pandas", "pyomo", "matplotlib", "dask", "highspy", "pyscipopt", "networkx")

_PROBE = """
import json, sys
from deplbench.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted({{m.partition(".")[0] for m in sys.modules}})), file=sys.stderr)
"""


def _imported(argv: list[str]) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True,
                          text=True, timeout=120, check=False)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_numerical_library(argv):
    imported = _imported(argv)
    assert "deplbench" in imported
    assert not imported & {*HEAVY, "numpy"}, sorted(imported & {*HEAVY, "numpy"})


@pytest.mark.integration
@pytest.mark.parametrize("command", ["validate", "algorithms", "run", "report", "simulate", "library", "certify"])
def test_a_command_s_help_imports_no_heavy_package(command):
    imported = _imported([command, "--help"])
    assert "deplbench" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["algorithms"], ["algorithms", "--solvers"], ["solve", "--help"]])
def test_algorithms_imports_no_numerical_library(argv):
    """The built-ins come from solvers/catalog.json and the MILP solvers are
    looked up, not imported (``--check`` imports them)."""
    imported = _imported(argv)
    assert {"deplbench", "json"} <= imported
    assert not imported & {*HEAVY, "numpy"}, sorted(imported & {*HEAVY, "numpy"})


@pytest.mark.integration
def test_validate_imports_only_numpy_and_pydantic(tmp_path):
    inst = tmp_path / "k.json"
    assert cli.main(["generate", "knapsack", "--seed", "1", "-o", str(inst)]) == 0
    imported = _imported(["validate", "--quiet", str(inst)])
    assert {"numpy", "pydantic"} <= imported   # the probe did load and validate the instance
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def _registered(parser: argparse.ArgumentParser) -> dict[str, str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {c.dest: c.help for c in sub._choices_actions}


def test_command_table_matches_what_the_modules_register():
    """The stubs ``--help`` shows are the commands the modules register,
    with the same one-line help, in the same order."""
    full = _registered(cli.build_parser())
    assert full == {name: text for name, (_, text) in cli.COMMANDS.items()}
    assert list(full) == list(cli.COMMANDS)
    assert _registered(cli.build_parser(None)) == full
    for name in cli.COMMANDS:
        parser = cli.build_parser(name)
        assert _registered(parser) == full
        # the requested command is registered in full (a handler and its options)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert sub.choices[name]._actions, name
        others = [n for n in cli.COMMANDS if cli.COMMANDS[n][0] != cli.COMMANDS[name][0]]
        assert not any(sub.choices[n]._actions for n in others)   # stubs: not even -h


def test_requested_command_is_the_first_word():
    assert cli.requested_command(["--version"]) is None
    assert cli.requested_command(["-h", "run", "x.toml"]) == "run"
    assert cli.requested_command(None) is None
