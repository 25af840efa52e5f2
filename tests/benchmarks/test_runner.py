"""Runner integration tests: local pool, hard limits, resume after SIGKILL,
Ctrl-C, Dask LocalCluster, CLI.

The algorithms and the instance family used here are test-only: they live in
a plugin file written to ``tmp_path`` and are activated through the
``DEPLBENCH_TASK_PLUGINS`` environment variable, so the public solver
registry never sees them.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.executors import DaskExecutor, LocalExecutor
from deplbench.benchmarks.runner import run_sweep
from deplbench.benchmarks.store import COLUMNS, ResultsStore
from deplbench.benchmarks.sweep import load_sweep
from deplbench.cli import main as cli_main
from deplbench.cli.benchmarks import register  # noqa: F401 - import check
from deplbench.errors import SweepError

PLUGIN = textwrap.dedent('''
    """Test-only family and algorithm for the runner tests."""
    import os
    import time
    from deplbench.instances.model import parse_instance

    def tiny(seed=0, n_models=2):
        models = [{"name": f"m{i}", "size": 0.0, "compute": 1.0 + i + seed,
                   "loss_scale": 1.0, "decay": "none",
                   "improvement": {"kind": "point", "value": 1.0}}
                  for i in range(n_models)]
        return parse_instance({
            "name": f"tiny-{seed}-{n_models}", "initial_loss": 10.0, "loss_max": 8.0,
            "omega": 0.9, "time_max": 10.0, "horizon": 4, "models": models,
            "clusters": [{"name": "A", "capacity": 10.0, "unit_cost": 1.0,
                          "bandwidth": 1.0}],
            "datasets": [{"name": "d", "size": 1.0, "usefulness": 1.0}]})

    def work(instance, delay=0.0, mode="ok"):
        pid_file = os.environ.get("TEST_PID_FILE")
        if pid_file:
            with open(pid_file, "a") as f:
                f.write(f"{os.getpid()}\\n")
        time.sleep(delay)
        if mode == "raise":
            raise RuntimeError("boom from test-work")
        if mode == "hang":
            time.sleep(3600)
        if mode == "badstatus":
            return {"algorithm": "test-work", "status": "great", "cost": 1.0}
        if mode == "chatter":  # as a solver banner would
            print("chatter from python")
            os.write(1, b"chatter from C\\n")
        # A cost that depends on the instance and the target, so rows differ.
        cost = sum(m.compute for m in instance.models) * instance.loss_max + delay
        return {"algorithm": "test-work", "status": "feasible", "cost": cost,
                "runtime_s": delay, "params": {"delay": delay, "mode": mode},
                "plan": {"epochs": [{"model": "m0", "cluster": "A", "allocation": 1.0}],
                         "datasets": {"A": ["d"]}}}

    def patient(instance, seconds=60.0, mode="check"):
        # A solver that honours the deadline of deplbench.limits: it raises
        # at the stop ("check") or returns what it has ("return").
        from deplbench import limits
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            if mode == "check":
                limits.check_time("test-patient's loop")
            elif limits.expired():
                return {"algorithm": "test-patient", "status": "time_limit", "cost": 5.0,
                        "lower_bound": 4.0, "message": f"time limit {limits.time_limit_s():g} s reached"}
            time.sleep(0.01)
        return {"algorithm": "test-patient", "status": "feasible", "cost": 1.0}

    FAMILIES = {"test-tiny": tiny}
    ALGORITHMS = {"test-work": work, "test-patient": patient}
    ALGORITHM_PARAMETERS = {"test-work": ["delay", "mode"], "test-patient": ["seconds", "mode"]}
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Write the plugin and point DEPLBENCH_TASK_PLUGINS at it."""
    path = tmp_path / "plugin.py"
    path.write_text(PLUGIN)
    monkeypatch.setenv(task_mod.PLUGIN_ENV, str(path))
    return path


def write_sweep(tmp_path: Path, body: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


#: One task: test-work on the tiny instance.
TINY_WORK = """
    [[instances]]
    id = "tiny"
    family = "test-tiny"
    [[algorithms]]
    name = "test-work"
"""

#: test-work as it is and as a variant that raises (the TOML tail of a sweep).
WORK_AND_RAISE = """
    [[algorithms]]
    name = "test-work"
    [[algorithms]]
    name = "test-work"
    label = "raises"
    params = { mode = "raise" }
    instances = ["tiny"]
"""

MIXED = """
    [sweep]
    name = "mixed"
    time_limit_s = 300
    [[instances]]
    id = "tiny"
    family = "test-tiny"
    grid = { n_models = [2, 3] }
    targets = { loss_max = [7.0, 8.0] }
""" + WORK_AND_RAISE + """
    [[algorithms]]
    name = "test-work"
    label = "hangs"
    params = { mode = "hang" }
    time_limit_s = 1.0
"""


@pytest.mark.integration
def test_local_sweep_records_ok_raise_and_timeout_then_resumes(tmp_path, plugin):
    sweep = load_sweep(write_sweep(tmp_path, MIXED))
    tasks = sweep.tasks()
    assert len(tasks) == 2 * 2 * 3
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        summary = run_sweep(sweep, store, LocalExecutor(workers=2), progress=False)
        frame = store.frame()
    assert summary.ran == 12 and summary.ok == 4 and summary.failed == 8
    assert sorted(frame["key"]) == sorted(t.key for t in tasks)
    by_mode = {m: frame[frame["params"].map(lambda p: json.loads(p).get("mode", "ok")) == m]
               for m in ("ok", "raise", "hang")}
    ok = by_mode["ok"]
    assert (ok["status"] == "feasible").all() and ok["error"].isna().all()
    # cost = Σ compute × ℓmax: proves the target override reached the instance.
    expected = {(2, 7.0): 21.0, (2, 8.0): 24.0, (3, 7.0): 42.0, (3, 8.0): 48.0}
    got = {(json.loads(p)["n_models"], lm): c
           for p, lm, c in zip(ok["instance_params"], ok["loss_max"], ok["cost"])}
    assert got == expected
    assert (by_mode["raise"]["status"] == "error").all()
    assert by_mode["raise"]["error"].str.contains("boom from test-work").all()
    hang = by_mode["hang"]
    assert (hang["status"] == "error").all()
    assert hang["error"].str.startswith("timeout:").all()
    # Killed at the 1 s limit, not after the hour the task asked for.
    assert (hang["runtime_s"] >= 1.0).all() and (hang["runtime_s"] < 10.0).all()
    env = json.loads(ok["env"].iloc[0])
    assert env["versions"]["numpy"] and "threads" in env and env["cpu_count"] >= 1

    # Resume: nothing runs again; failures are skipped without --retry-failed.
    with ResultsStore(db) as store:
        again = run_sweep(sweep, store, LocalExecutor(workers=2), progress=False)
        assert again.ran == 0 and again.already_done == 4 and again.skipped_failed == 8
        assert store.count() == 12


@pytest.mark.integration
def test_retry_failed_adds_attempts_and_keeps_history(tmp_path, plugin):
    body = MIXED.replace('time_limit_s = 1.0', 'time_limit_s = 0.5').replace(
        'grid = { n_models = [2, 3] }', 'grid = { n_models = [2] }').replace(
        'targets = { loss_max = [7.0, 8.0] }', '')
    sweep = load_sweep(write_sweep(tmp_path, body))
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        first = run_sweep(sweep, store, LocalExecutor(workers=2), progress=False)
        assert (first.ok, first.failed) == (1, 2)
        second = run_sweep(sweep, store, LocalExecutor(workers=2), retry_failed=True,
                           progress=False)
        assert second.ran == 2 and second.failed == 2
        frame = store.frame()
        latest = store.frame(latest=True)
    assert len(frame) == 5 and frame["key"].nunique() == 3
    assert len(latest) == 3 and sorted(latest["key"]) == sorted(frame["key"].unique())


def _kill_sweep(n_tasks: int, delay: float, slow_after: int | None = None, slow_delay: float = 20.0) -> str:
    """A sweep of ``n_tasks`` test-work tasks sleeping ``delay`` s (distinct
    by 1 ms each); from task ``slow_after`` on they sleep ``slow_delay`` s, so
    a test that interrupts after the first rows cannot be overtaken by the
    sweep finishing first, however slowly a loaded machine polls."""
    delays = ", ".join(str(round((delay if slow_after is None or i < slow_after else slow_delay) + i * 1e-3, 4))
                       for i in range(n_tasks))
    return f"""
        [sweep]
        name = "killme"
        time_limit_s = 30
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-work"
        grid = {{ delay = [{delays}] }}
    """


def _rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT attempt, key, status, finished_at FROM results "
                            "ORDER BY attempt").fetchall()
    finally:
        conn.close()


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C's default disposition. A suite started in the background of a
    non-interactive shell (`make test &`, nohup) inherits SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler: the interrupt the tests send would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_cli(sweep: Path, db: Path, workers: int = 2) -> subprocess.Popen:
    return subprocess.Popen(
        # cli.main, not the installed command: only main honours the test plugin hook
        [sys.executable, "-c", "import sys; from deplbench.cli import main; sys.exit(main())", "run", str(sweep),
         "--db", str(db),
         "--workers", str(workers), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ), preexec_fn=_default_sigint)


def _wait_rows(db: Path, at_least: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if db.exists():
            try:
                if len(_rows(db)) >= at_least:
                    return
            except sqlite3.OperationalError:  # schema not created yet
                pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} rows after {timeout} s")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state  # a zombie has stopped running


@pytest.mark.integration
def test_sigkill_mid_sweep_then_resume_loses_nothing_duplicates_nothing(
        tmp_path, plugin, monkeypatch):
    pid_file = tmp_path / "pids.txt"
    monkeypatch.setenv("TEST_PID_FILE", str(pid_file))
    n = 16
    sweep_file = write_sweep(tmp_path, _kill_sweep(n, delay=0.25))
    keys = {t.key for t in load_sweep(sweep_file).tasks()}
    assert len(keys) == n
    db = tmp_path / "k.sqlite"
    proc = _start_cli(sweep_file, db)
    _wait_rows(db, 3, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    before = _rows(db)
    assert 3 <= len(before) < n, "the kill must land mid-sweep"
    # No orphan: every task process dies with the runner (PR_SET_PDEATHSIG).
    pids = [int(p) for p in pid_file.read_text().split()]
    end = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)]
    assert _rows(db) == before

    rc = cli_main(["run", str(sweep_file), "--db", str(db), "--workers", "2", "--no-progress"])
    assert rc == 0
    after = _rows(db)
    assert after[:len(before)] == before  # every finished row kept, unchanged
    assert len(after) == n
    assert {r[1] for r in after} == keys  # no lost task, no duplicate
    assert all(r[2] == "feasible" for r in after)
    monkeypatch.delenv("TEST_PID_FILE")


@pytest.mark.integration
def test_sigkill_leaves_no_orphan_task_process(tmp_path, plugin, monkeypatch):
    pid_file = tmp_path / "pids.txt"
    monkeypatch.setenv("TEST_PID_FILE", str(pid_file))
    sweep_file = write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        seeds = [0, 1]
        [[algorithms]]
        name = "test-work"
        params = { mode = "hang" }
        time_limit_s = 60
    """)
    proc = _start_cli(sweep_file, tmp_path / "o.sqlite")
    pids: list[int] = []
    try:
        end = time.monotonic() + 300
        while len(pids) < 2 and time.monotonic() < end:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
            pids = [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []
        assert len(pids) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # The hung tasks would sleep an hour; they must die with the runner.
        end = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)]
    finally:
        for p in pids:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


@pytest.mark.integration
def test_task_output_never_reaches_the_runners_stdout(tmp_path, plugin):
    sweep_file = write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-work"
        params = { mode = "chatter" }
    """)
    proc = _start_cli(sweep_file, tmp_path / "c.sqlite", workers=1)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert out == b""
    assert b"chatter from python" in err and b"chatter from C" in err
    assert [r[2] for r in _rows(tmp_path / "c.sqlite")] == ["feasible"]


@pytest.mark.integration
def test_ctrl_c_stops_cleanly_without_failed_rows(tmp_path, plugin):
    sweep_file = write_sweep(tmp_path, _kill_sweep(12, delay=0.5, slow_after=2))
    db = tmp_path / "c.sqlite"
    proc = _start_cli(sweep_file, db)
    _wait_rows(db, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    rows = _rows(db)
    assert 2 <= len(rows) < 12
    assert all(r[2] == "feasible" for r in rows)  # the interrupt is not a failure


@pytest.mark.integration
def test_dask_local_cluster_stores_the_same_rows_as_local(tmp_path, plugin):
    body = """
    [sweep]
    name = "dask"
    time_limit_s = 60
    [[instances]]
    id = "tiny"
    family = "test-tiny"
    seeds = [0, 1]
    targets = { loss_max = [7.0, 8.0] }
""" + WORK_AND_RAISE
    sweep = load_sweep(write_sweep(tmp_path, body))
    cols = ["key", "family", "instance_name", "instance_params", "instance_seed",
            "algorithm", "params", "status", "cost", "loss_max", "omega", "epochs", "plan"]
    frames = {}
    for name, executor in (("local", LocalExecutor(workers=2)),
                           ("dask", DaskExecutor(local_workers=2))):
        with ResultsStore(tmp_path / f"{name}.sqlite") as store:
            summary = run_sweep(sweep, store, executor, progress=False)
            assert summary.ran == 8 and summary.ok == 4 and summary.failed == 4
            frames[name] = store.frame().sort_values("key")[cols].reset_index(drop=True)
    assert frames["local"].equals(frames["dask"])
    assert not executor._client and not executor._cluster  # shut down


@pytest.mark.integration
def test_dask_function_failure_is_a_failed_row_not_a_crash(tmp_path, plugin, monkeypatch):
    """Results arrive with their completions (as_completed with_results): a
    failure of the Dask-side function (not of the task) still becomes one
    failed row per task, and the sweep goes on."""
    from deplbench.benchmarks import executors as ex_mod

    def broken(task, time_limit_s):
        raise RuntimeError("worker lost its disk")

    monkeypatch.setattr(ex_mod, "run_task_isolated", broken)
    sweep = load_sweep(write_sweep(tmp_path, _kill_sweep(3, delay=0.0)))
    with ResultsStore(tmp_path / "d.sqlite") as store:
        summary = run_sweep(sweep, store, DaskExecutor(local_workers=1), progress=False)
        frame = store.frame()
    assert (summary.ran, summary.failed) == (3, 3)
    assert frame["error"].str.startswith("dask: RuntimeError: worker lost its disk").all()


@pytest.mark.integration
def test_dask_scheduler_unreachable_is_a_clear_error(tmp_path, plugin):
    sweep = load_sweep(write_sweep(tmp_path, _kill_sweep(1, delay=0.0)))
    # A closed loopback port: nothing listens there.
    executor = DaskExecutor(scheduler="tcp://127.0.0.1:9", connect_timeout_s=1.0)
    with ResultsStore(tmp_path / "x.sqlite") as store:
        with pytest.raises(SweepError, match="--dask-scheduler: cannot reach"):
            run_sweep(sweep, store, executor, progress=False)
        assert store.count() == 0


@pytest.mark.integration
def test_cli_unreachable_scheduler_leaves_no_store(tmp_path, plugin, monkeypatch, capsys):
    """The scheduler is reached before the store is created: a refused one leaves no empty store behind."""
    from deplbench.benchmarks import executors as ex_mod

    class QuickDask(DaskExecutor):          # the refusal in a second, not the default 20 s
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "connect_timeout_s": 1.0})

    monkeypatch.setattr(ex_mod, "DaskExecutor", QuickDask)
    sweep_file = write_sweep(tmp_path, _kill_sweep(1, delay=0.0))
    db = tmp_path / "new.sqlite"
    # A closed loopback port: nothing listens there.
    rc = cli_main(["run", str(sweep_file), "--db", str(db), "--dask-scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --dask-scheduler: cannot reach tcp://127.0.0.1:9"), err
    assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("new.sqlite")) == []


@pytest.mark.integration
def test_cli_invalid_sweep_fails_fast_naming_the_key(tmp_path, plugin, capsys):
    bad = write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-work"
        grid = { dealy = [1, 2] }
    """)
    db = tmp_path / "never.sqlite"
    rc = cli_main(["run", str(bad), "--db", str(db)])
    err = capsys.readouterr().err
    assert rc == 2 and "algorithms[0].grid.dealy" in err and "Traceback" not in err
    assert not db.exists()  # failed before touching the store


@pytest.mark.integration
def test_cli_run_dry_run_and_export_csv(tmp_path, plugin, capsys):
    sweep_file = write_sweep(tmp_path, _kill_sweep(3, delay=0.0))
    db = tmp_path / "e.sqlite"
    assert cli_main(["run", str(sweep_file), "--db", str(db), "--dry-run"]) == 0
    assert "3 to run" in capsys.readouterr().out
    assert cli_main(["run", str(sweep_file), "--db", str(db), "--no-progress",
                     "--workers", "1"]) == 0
    out = tmp_path / "out" / "r.csv"
    out.parent.mkdir()          # export never creates folders (a typo must not scatter files)
    assert cli_main(["export", str(db), "--format", "csv", "-o", str(out)]) == 0
    import pandas as pd

    exported = pd.read_csv(out)
    assert len(exported) == 3 and tuple(exported.columns)[:len(COLUMNS)] == COLUMNS
    assert cli_main(["export", str(tmp_path / "missing.sqlite"), "--format", "csv",
                     "-o", str(out)]) == 2
    assert "not found" in capsys.readouterr().err


def test_task_error_paths_never_raise(plugin):
    base = {"key": "k", "sweep": "s", "group": "g", "family": "test-tiny",
            "instance_params": {}, "instance_seed": 0, "targets": {"loss_max": 99.0},
            "algorithm": "test-work", "label": "x", "params": {}, "evaluation": {},
            "time_limit_s": 5.0}
    # ℓmax above ℓ(0): the instance rejects the target, the record says why.
    rec = task_mod.run_task(base)
    assert rec["status"] == "error" and "loss_max" in rec["message"]
    rec = task_mod.run_task({**base, "targets": {}, "family": "no-such-family"})
    assert rec["status"] == "error" and rec["error"]
    rec = task_mod.run_task({**base, "targets": {}})
    assert rec["status"] == "feasible" and rec["loss_max"] == 8.0 and rec["omega"] == 0.9


def test_the_solver_is_stopped_before_the_hard_limit_and_keeps_what_it_has(plugin):
    # Killed at time_limit_s, a task keeps nothing; the solver is stopped a
    # margin before (tasks.solver_stop_s) under the deadline every solver reads.
    base = {"key": "k", "sweep": "s", "group": "g", "family": "test-tiny",
            "instance_params": {}, "instance_seed": 0, "targets": {},
            "algorithm": "test-patient", "label": "x", "params": {"mode": "return"}, "evaluation": {},
            "time_limit_s": 1.0}
    assert task_mod.solver_stop_s(1.0) == 0.5
    kept = task_mod.run_task(base)
    assert kept["status"] == "time_limit" and not kept["error"]
    assert (kept["cost"], kept["lower_bound"]) == (5.0, 4.0)
    assert kept["message"].startswith("time limit 0.5 s reached; stopped at 0.5 s by the task's hard "
                                      "limit of 1 s (sweep time_limit_s)")
    assert kept["diagnostics"]["task_stop_s"] == 0.5
    assert 0.5 <= kept["wall_s"] < 60.0
    # a loop that raises at the stop: status time_limit (an answer), not error
    raised = task_mod.run_task({**base, "params": {"mode": "check"}})
    assert raised["status"] == "time_limit" and not raised["error"]
    assert raised["message"].startswith("time limit 0.5 s reached (test-patient's loop)")
    # done before the stop: untouched
    quick = task_mod.run_task({**base, "params": {"mode": "return", "seconds": 0.0}})
    assert quick["status"] == "feasible" and quick["message"] == ""
    assert "task_stop_s" not in (quick["diagnostics"] or {})


def test_a_registry_solver_stops_at_the_task_stop_not_its_own_limit():
    # milp-exact's own time_limit is 300 s; a stop already passed ends it at
    # its first check, with status time_limit and the note naming the task's limit.
    task = {"key": "k-stop", "sweep": "s", "group": "g", "family": "scaling",
            "instance_params": {"n_models": 2, "horizon": 6}, "instance_seed": 0, "targets": {},
            "algorithm": "milp-exact", "label": "milp-exact", "params": {}, "evaluation": {},
            "time_limit_s": 1e-9}
    rec = task_mod.run_task(task)
    assert rec["status"] == "time_limit" and not rec["error"], rec["message"]
    assert rec["params"]["time_limit"] == 300.0
    assert "by the task's hard limit of 1e-09 s" in rec["message"]
    own = task_mod.run_task({**task, "time_limit_s": 60.0, "params": {"time_limit": 1e-9}})
    assert own["status"] == "time_limit" and "hard limit" not in own["message"]


@pytest.mark.integration
def test_dry_run_warns_when_the_hard_limit_is_below_the_solvers_own(tmp_path, plugin, capsys):
    sweep_file = write_sweep(tmp_path, """
        [sweep]
        time_limit_s = 3
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "milp-exact"
        [[algorithms]]
        name = "milp-exact"
        label = "capped"
        params = { time_limit = 2.0 }
        [[algorithms]]
        name = "depl"
        grid = { time_limit = [1.0, 10.0] }
        [[algorithms]]
        name = "milp-exact"
        label = "between"
        params = { time_limit = 2.9 }
        [[algorithms]]
        name = "test-work"
    """)
    assert cli_main(["run", str(sweep_file), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    # stopped at 2 s: a solver's own limit above the stop is cut short, even below the hard limit (2.9 s)
    assert lines == [
        "warning: the hard task limit time_limit_s = 3 s stops the solver at 2 s, before its own time_limit = "
        "2.9 s of between: it ends there with status time_limit and what it has (raise time_limit_s or lower "
        "time_limit to run it as its parameters say)",
        "warning: the hard task limit time_limit_s = 3 s stops the solver at 2 s, before its own time_limit = "
        "10 s of depl: it ends there with status time_limit and what it has (raise time_limit_s or lower "
        "time_limit to run it as its parameters say)",
        "warning: the hard task limit time_limit_s = 3 s stops the solver at 2 s, before its own time_limit = "
        "300 s of milp-exact: it ends there with status time_limit and what it has (raise time_limit_s "
        "or lower time_limit to run it as its parameters say)"]
    assert "warning" not in out and "6 to run" in out


# --------------------------------------------------------------------------
# exit status, dry run, file moves


@pytest.mark.integration
def test_cli_run_exits_1_when_a_task_failed(tmp_path, plugin, capsys):
    sweep_file = write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
    """ + WORK_AND_RAISE)
    db = tmp_path / "f.sqlite"
    rc = cli_main(["run", str(sweep_file), "--db", str(db), "--workers", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1 and "1 ok, 1 failed" in err and "boom from test-work" in err
    # Nothing left to run: the failure is history, the status says all is well.
    assert cli_main(["run", str(sweep_file), "--db", str(db), "--no-progress"]) == 0


@pytest.mark.integration
def test_dry_run_builds_every_instance_and_never_creates_the_db(tmp_path, plugin, capsys):
    # ℓmax = 12 is above the tiny instance's ℓ(0) = 10: every task would fail.
    sweep_file = write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        targets = { loss_max = [7.0, 12.0] }
        [[algorithms]]
        name = "test-work"
    """)
    db = tmp_path / "sub" / "never.sqlite"
    assert cli_main(["run", str(sweep_file), "--db", str(db), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "instances[0]" in err and "loss_max" in err and "Traceback" not in err
    assert not db.exists() and not db.parent.exists()
    good = write_sweep(tmp_path, _kill_sweep(2, delay=0.0), name="good.toml")
    assert cli_main(["run", str(good), "--db", str(db), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "2 to run" in out
    # the preview says what the run would refuse (the store's folder is not created)
    assert f"warning: --db {db}: directory {db.parent} does not exist; the run itself will refuse it" in err
    assert not db.exists()
    assert cli_main(["run", str(good), "--db", str(db)]) == 2
    assert f"error: --db {db}: directory {db.parent} does not exist" in capsys.readouterr().err


@pytest.mark.integration
def test_moving_an_instance_file_does_not_rerun_its_tasks(tmp_path, plugin):
    from deplbench.benchmarks.lookup import load_plugins

    tiny = next(m for m in load_plugins() if hasattr(m, "tiny")).tiny
    first = tmp_path / "a"
    first.mkdir()
    tiny(seed=3).save(first / "inst.json")
    body = """
        [[instances]]
        id = "f"
        path = "inst.json"
        [[algorithms]]
        name = "test-work"
        grid = { delay = [0.0, 0.001] }
    """
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        s1 = run_sweep(load_sweep(write_sweep(first, body)), store, LocalExecutor(workers=1),
                       progress=False)
        assert (s1.ran, s1.ok) == (2, 2)
        second = tmp_path / "b"
        (first).rename(second)
        (second / "inst.json").rename(second / "renamed.json")
        moved = load_sweep(write_sweep(second, body.replace("inst.json", "renamed.json")))
        s2 = run_sweep(moved, store, LocalExecutor(workers=1), progress=False)
        assert s2.ran == 0 and s2.already_done == 2
        frame = store.frame()
    assert frame["instance_path"].str.endswith("a/inst.json").all()
    assert frame["family"].eq("file").all() and frame["instance_sha"].nunique() == 1


# --------------------------------------------------------------------------
# several runners on one store

STABLE = ["key", "sweep", "instance_group", "family", "instance_params", "instance_seed",
          "instance_id", "instance_sha", "algorithm", "label", "params", "status", "cost",
          "loss_max", "omega", "epochs", "plan"]


def _frame(db: Path):
    with ResultsStore(db, readonly=True) as store:
        return store.frame().sort_values("key")[STABLE].reset_index(drop=True)


@pytest.mark.integration
def test_two_runners_on_one_store_split_the_sweep_without_duplicates(
        tmp_path, plugin, monkeypatch):
    pid_file = tmp_path / "pids.txt"
    monkeypatch.setenv("TEST_PID_FILE", str(pid_file))
    n = 8
    sweep_file = write_sweep(tmp_path, _kill_sweep(n, delay=0.2))
    db = tmp_path / "shared.sqlite"
    procs = [_start_cli(sweep_file, db, workers=1) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    # Each task executed exactly once in all (the plugin logs every execution).
    assert len(pid_file.read_text().split()) == n
    rows = _rows(db)
    assert len(rows) == n and len({r[1] for r in rows}) == n
    # Nothing left leased.
    with ResultsStore(db) as store:
        assert store.leases() == []
    # The same rows as one runner alone.
    pid_file.unlink()
    alone = tmp_path / "alone.sqlite"
    with ResultsStore(alone) as store:
        run_sweep(load_sweep(sweep_file), store, LocalExecutor(workers=1), progress=False)
    assert _frame(db).equals(_frame(alone))
    monkeypatch.delenv("TEST_PID_FILE")


@pytest.mark.integration
def test_kill_9_of_one_of_two_runners_loses_nothing(tmp_path, plugin):
    n = 8
    sweep_file = write_sweep(tmp_path, _kill_sweep(n, delay=0.3))
    keys = {t.key for t in load_sweep(sweep_file).tasks()}
    db = tmp_path / "shared.sqlite"
    victim = _start_cli(sweep_file, db, workers=1)
    survivor = _start_cli(sweep_file, db, workers=1)
    _wait_rows(db, 2, victim)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    # The survivor takes over whatever the victim held: no re-run needed.
    _, err = survivor.communicate(timeout=600)
    assert survivor.returncode == 0, err
    rows = _rows(db)
    assert {r[1] for r in rows} == keys and len(rows) == n
    assert all(r[2] == "feasible" for r in rows)


@pytest.mark.integration
def test_a_result_outside_the_record_schema_is_a_failed_row(tmp_path, plugin):
    sweep = load_sweep(write_sweep(tmp_path, """
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-work"
        grid = { mode = ["ok", "badstatus"] }
    """))
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary = run_sweep(sweep, store, LocalExecutor(workers=1), progress=False)
        frame = store.frame()
    assert (summary.ok, summary.failed, summary.exit_status) == (1, 1, 1)
    bad = frame[frame["param_mode"] == "badstatus"]
    assert len(bad) == 1 and bad["status"].iloc[0] == "error"
    assert "record.status" in bad["error"].iloc[0]


@pytest.mark.integration
def test_a_sweep_task_under_a_short_hard_limit_returns_time_limit_not_timeout(tmp_path, plugin):
    sweep = load_sweep(write_sweep(tmp_path, """
        [sweep]
        time_limit_s = 1.5
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-patient"
        params = { mode = "return" }
    """))
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary = run_sweep(sweep, store, LocalExecutor(workers=1), progress=False)
        frame = store.frame()
    assert (summary.ok, summary.failed) == (1, 0)
    row = frame.iloc[0]
    assert row["status"] == "time_limit" and row["error"] is None
    assert (row["cost"], row["lower_bound"]) == (5.0, 4.0)
    assert "hard limit of 1.5 s" in row["message"]


@pytest.mark.slow
def test_warm_dask_task_path_enforces_the_hard_limit_and_reports_crashes(plugin):
    from deplbench.benchmarks.executors import run_task_warm

    base = {"key": "k", "sweep": "s", "group": "g", "family": "test-tiny",
            "instance_params": {}, "instance_seed": 0, "targets": {},
            "algorithm": "test-work", "label": "x", "params": {}, "evaluation": {},
            "time_limit_s": 1.0}
    ok = run_task_warm(base, 60.0)
    assert ok["status"] == "feasible" and ok["cost"] == 8.0 * 3.0
    hung = run_task_warm({**base, "params": {"mode": "hang"}}, 1.0)
    assert hung["status"] == "error" and hung["error"].startswith("timeout:")
    assert 1.0 <= hung["runtime_s"] < 60.0


def test_a_declined_task_is_stored_as_skipped_not_failed(tmp_path):
    """A task whose algorithm declares it does not apply (brute force beyond
    its reach) is recorded with status skipped and the reason, and the store
    counts it as finished, not as a failure to retry."""
    from deplbench.instances.generators import generate
    from deplbench.solvers.exact.brute_force import BruteForce

    task = {"key": "k-skip", "sweep": "s", "group": "g", "family": "scaling",
            "instance_params": {"n_models": 3, "horizon": 8}, "instance_seed": 0, "targets": {},
            "algorithm": "brute-force", "label": "brute-force", "params": {}, "evaluation": {},
            "time_limit_s": 60.0}
    applies, reason = BruteForce.applies(generate("scaling", n_models=3, horizon=8, seed=0))
    assert not applies
    rec = task_mod.run_task(task)
    assert rec["status"] == "skipped" and rec["message"] == reason and not rec["error"]
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.add(rec, task=task)
        assert store.finished_keys() == {"k-skip"} and store.failed_keys() == set()


def test_rows_stopped_by_a_shorter_hard_limit_are_named_when_reused(tmp_path, plugin):
    """The task key leaves time_limit_s out, so a sweep re-run with a longer limit reused the rows
    that had stopped at the shorter one and said only "1 already done"."""
    from deplbench.benchmarks.runner import dry_run, stopped_by_a_shorter_limit
    from tests.benchmarks.test_store import record

    body = """
        [sweep]
        time_limit_s = {limit}
        [[instances]]
        id = "tiny"
        family = "test-tiny"
        [[algorithms]]
        name = "test-work"
    """
    short = load_sweep(write_sweep(tmp_path, body.format(limit=2), "short.toml"))
    longer = load_sweep(write_sweep(tmp_path, body.format(limit=20), "long.toml"))
    (task,) = short.tasks()
    assert [t.key for t in longer.tasks()] == [task.key]
    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add(record(task.key, status="time_limit"), task={"time_limit_s": 2.0})
        assert stopped_by_a_shorter_limit(longer.tasks(), store) == 1
        assert stopped_by_a_shorter_limit(short.tasks(), store) == 0        # the same limit: nothing to say
        summary = run_sweep(longer, store, _InlineExecutor(), progress=False)
    assert summary.already_done == 1 and summary.ran == 0 and summary.shorter_limit == 1
    assert "note: 1 task(s) already done stopped at a time limit under a smaller time_limit_s" in summary.text("s")
    dry = dry_run(longer, db, check_instances=False)
    assert dry.shorter_limit == 1 and "run into a new store to give them the longer limit" in dry.text()
    with ResultsStore(db) as store:                 # a row that did not stop at its limit: reused silently
        store.add(record("other", status="feasible"), task={"time_limit_s": 2.0})
        assert store.time_limited_keys() == {task.key: 2.0}


class _InlineExecutor:
    """Runs each task in this process (no pool): the store's side of the runner under test."""

    def describe(self) -> str:
        return "inline"

    def run(self, tasks):
        for task in tasks:
            yield task, task_mod.run_task(task.to_dict())


def _locked_for(store, calls: int, monkeypatch):
    """Make ``store.add`` raise SQLite's "database is locked" ``calls`` times (-1: always)."""
    import sqlite3

    real, seen = store.add, []

    def add(*args, **kwargs):
        seen.append(1)
        if calls < 0 or len(seen) <= calls:
            raise sqlite3.OperationalError("database is locked")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "add", add)
    return seen


def test_a_store_locked_by_another_process_is_waited_for(tmp_path, plugin, monkeypatch, capsys):
    """A store kept locked past SQLite's 30 s busy timeout (an open transaction in another program)
    ended the run in an OperationalError traceback, the finished record lost."""
    from deplbench.benchmarks import runner as runner_mod

    monkeypatch.setattr(runner_mod, "STORE_RETRY_S", 0.0)
    sweep = load_sweep(write_sweep(tmp_path, TINY_WORK))
    with ResultsStore(tmp_path / "s.sqlite") as store:
        seen = _locked_for(store, 2, monkeypatch)
        summary = run_sweep(sweep, store, _InlineExecutor(), progress=False)
        assert summary.ok == 1 and len(seen) == 3 and store.count() == 1
    assert capsys.readouterr().err.count("is locked by another process") == 2


def test_a_store_locked_for_good_stops_the_run_with_the_finished_record_saved(tmp_path, plugin, monkeypatch):
    from deplbench.benchmarks import runner as runner_mod

    monkeypatch.setattr(runner_mod, "STORE_WAIT_S", 0.0)
    sweep = load_sweep(write_sweep(tmp_path, TINY_WORK))
    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        _locked_for(store, -1, monkeypatch)
        with pytest.raises(runner_mod.StoreLocked, match=r"locked by another process .* the finished record of "
                                                         r"test-work .* is in .*s\.sqlite\.unstored/"):
            run_sweep(sweep, store, _InlineExecutor(), progress=False)
    (saved,) = (tmp_path / "s.sqlite.unstored").iterdir()
    kept = json.loads(saved.read_text())
    assert kept["record"]["status"] == "feasible" and kept["task"]["key"] == kept["record"]["key"]
