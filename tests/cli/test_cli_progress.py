"""Progress of the long commands: a bar on a terminal only, never on a pipe
or with --quiet; no native solver output while it shows; the solver used
named in the summary."""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import textwrap

import pytest

from deplbench.cli.progress import Stages, counter, native_output_held, progress_wanted

BANNER = "Running HiGHS"


class _Tty:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_only_on_a_terminal_and_not_with_quiet():
    ns = argparse.Namespace
    assert progress_wanted(ns(), _Tty(True))
    assert not progress_wanted(ns(), _Tty(False))
    assert not progress_wanted(ns(quiet=True), _Tty(True))
    assert not progress_wanted(ns(no_progress=True), _Tty(True))
    assert not progress_wanted(ns(), object())        # no isatty at all


def test_native_output_is_discarded_while_a_bar_shows_and_python_messages_are_not(capfd):
    with native_output_held(True) as stream:
        os.write(1, b"native to fd 1\n")
        os.write(2, b"native to fd 2\n")
        print("python to sys.stderr", file=sys.stderr)
        stream.write("the bar\n")
    os.write(2, b"after\n")
    out, err = capfd.readouterr()
    assert "native" not in out and "native" not in err
    assert "python to sys.stderr" in err and "the bar" in err and err.endswith("after\n")
    # disabled: nothing is redirected
    with native_output_held(False):
        os.write(2, b"native passes\n")
    assert "native passes" in capfd.readouterr().err


def test_disabled_bars_print_nothing(capfd):
    with Stages(False, "x", ["a", "b"]) as st:
        st.stage("a")
        st.stage("b")
    bar = counter(False, "y", total=3)
    bar.update(3)
    bar.close()
    assert capfd.readouterr() == ("", "")


def _on_a_terminal(argv: list[str], cwd) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal; (status, stdout, terminal text)."""
    master, slave = pty.openpty()
    # a new pseudo-terminal is 0 columns wide, where tqdm draws nothing
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "deplbench", *argv], stdout=subprocess.PIPE,
                            stderr=slave, cwd=cwd, env={**os.environ, "COLUMNS": "100"})
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    proc.wait(timeout=300)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


def _knapsack(tmp_path, deplbench_cli):
    """``deplbench generate knapsack --n-items 4 --param horizon=4``, in this process: the instance the
    commands under test read."""
    inst = tmp_path / "k.json"
    status, _, err = deplbench_cli("generate", "knapsack", "--n-items", "4", "--param", "horizon=4", "-o", inst)
    assert status == 0, err
    return inst


def _sweep(tmp_path, solver: str) -> str:
    (tmp_path / "s.toml").write_text(textwrap.dedent(f"""
        [sweep]
        name = "bar"
        evaluation = {{ samples = 500, seed = 0 }}
        [[instances]]
        id = "k"
        family = "knapsack"
        params = {{ n_items = 4, horizon = 4 }}
        seeds = [0, 1]
        [[algorithms]]
        name = "milp"
        params = {{ scenarios = 20, solver = "{solver}" }}
    """))
    return str(tmp_path / "s.toml")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_run_shows_a_bar_on_a_terminal_without_solver_banners(tmp_path, solver):
    if solver == "scip" and importlib.util.find_spec("pyscipopt") is None:
        pytest.skip("pyscipopt (the peers extra) is not installed")
    sweep = _sweep(tmp_path, solver)
    status, out, term = _on_a_terminal(["run", sweep, "--db", str(tmp_path / "r.sqlite"),
                                        "--workers", "1"], tmp_path)
    assert status == 0, term
    assert "bar:" in term and "2/2" in term          # the tqdm bar, on the terminal
    assert BANNER not in term and BANNER not in out
    assert f"solvers used: {solver} ×2" in term      # the summary names the solver
    # on a pipe (not a terminal): no bar, same summary
    proc = subprocess.run([sys.executable, "-m", "deplbench", "run", sweep, "--db",
                           str(tmp_path / "r2.sqlite"), "--workers", "1"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2/2" not in proc.stderr and "\r" not in proc.stderr
    assert f"solvers used: {solver} ×2" in proc.stderr and BANNER not in proc.stderr


@pytest.mark.integration
def test_solve_with_scip_prints_no_highs_banner_and_names_the_solver(tmp_path, deplbench_cli):
    if importlib.util.find_spec("pyscipopt") is None:
        pytest.skip("pyscipopt (the peers extra) is not installed")
    inst = _knapsack(tmp_path, deplbench_cli)
    for solver in ("scip", "highs"):
        proc = subprocess.run([sys.executable, "-m", "deplbench", "solve", str(inst), "--algo", "milp",
                               "--solver", solver, "--scenarios", "20"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert BANNER not in proc.stderr and BANNER not in proc.stdout
        assert proc.stdout.splitlines()[0].startswith(f"algorithm   milp  (solver {solver}")


@pytest.mark.integration
def test_simulate_shows_its_stages_on_a_terminal(tmp_path, deplbench_cli):
    inst = _knapsack(tmp_path, deplbench_cli)
    status, out, term = _on_a_terminal(["simulate", str(inst), "--algo", "knapsack-dp", "--runs", "200"],
                                       tmp_path)
    assert status == 0, term
    assert "simulate:" in term and "2/2 stages" in term and "closed loop" in term
    assert out.startswith("algorithm")
    status, out, term = _on_a_terminal(["simulate", str(inst), "--algo", "knapsack-dp", "--runs", "200",
                                        "--quiet"], tmp_path)
    assert status == 0 and "stages" not in term


@pytest.mark.integration
def test_certify_counts_its_tasks_on_a_terminal(tmp_path, deplbench_cli):
    inst = _knapsack(tmp_path, deplbench_cli)
    status, out, term = _on_a_terminal(["certify", str(inst), "--validation", "2000"], tmp_path)
    assert status in (0, 1), term
    assert "certify:" in term and "task" in term and BANNER not in term
    assert out.strip()                                  # the bracket itself, on stdout


@pytest.mark.integration
def test_adaptive_shows_its_stages_on_a_terminal(tmp_path, deplbench_cli):
    inst = _knapsack(tmp_path, deplbench_cli)
    # --slopes 0 and --time-points 0 (the deadline priced, not carried): the stages shown are the same;
    # the water-filling and deadline-carrying passes would only add time
    small = ["--one-grid", "--buckets", "40", "--runs", "2000", "--tune-runs", "2000", "--iters-lam", "2",
             "--iters-mu", "2", "--slopes", "0", "--time-points", "0"]
    status, out, term = _on_a_terminal(["adaptive", str(inst), *small], tmp_path)
    assert status in (0, 1), term
    assert "adaptive: 40 buckets" in term
    assert out.startswith("instance")
    status, out, term = _on_a_terminal(["adaptive", str(inst), *small, "--quiet"], tmp_path)
    assert status in (0, 1) and "buckets" not in term


@pytest.mark.integration
@pytest.mark.slow
def test_library_build_bar_holds_the_highs_banner(tmp_path):
    status, out, term = _on_a_terminal(["library", "build", "--out", str(tmp_path / "lib"), "--only",
                                        "knapsack-uncorrelated-n10", "--no-true-optimum",
                                        "--time-limit", "10"], tmp_path)
    assert status == 0, term
    assert "1/1" in term and "knapsack-uncorrelated-n10" in term
    assert BANNER not in term and BANNER not in out
