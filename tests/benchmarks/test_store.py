"""Results store: the column contract, one success per key, failure history,
durability settings, export."""

from __future__ import annotations

import importlib.util
import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from deplbench.benchmarks import record as record_mod
from deplbench.benchmarks import tasks as task_mod
from deplbench.benchmarks.export import export
from deplbench.benchmarks.store import COLUMNS, ResultsStore, is_failure
from deplbench.errors import SweepError


def record(key: str, **over) -> dict:
    rec = {
        "key": key, "sweep": "s", "family": "realistic", "instance_name": "alexnet",
        "instance_params": {"family": "alexnet"}, "instance_seed": 0,
        "algorithm": "depl", "params": {"eta": 200}, "status": "feasible", "message": "",
        "cost": 123.5, "lower_bound": None, "gap": None, "runtime_s": 0.25,
        "quantile_oos": 8.9, "quantile_ci_low": 8.8, "quantile_ci_high": 9.0,
        "verdict": "feasible", "loss_max": 9.0, "omega": 0.99, "epochs": 3,
        "plan": {"epochs": [{"model": "m", "cluster": "A1", "allocation": 1.0}] * 3,
                 "datasets": {"A1": ["d0"]}},
        "diagnostics": {"arr": np.arange(3), "x": np.float64(1.5)},
        "evaluation": {"mean": [10.0, 9.5, 9.0], "p01": [1, 2, 3], "p99": [4, 5, 6]},
        "error": None, "started_at": "t0", "finished_at": "t1",
        "env": {"versions": {"numpy": np.__version__}}, "code_version": "0.1.0",
        "wall_s": 0.3,
    }
    rec.update(over)
    return rec


def test_frame_has_the_record_columns_then_params_and_round_trips(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a", exact=False, eta=200, eval_exact=0))
        frame = store.frame()
        bare = store.frame(params=False)
    assert tuple(frame.columns) == COLUMNS + ("param_eta",)
    assert tuple(bare.columns) == COLUMNS
    assert COLUMNS == record_mod.COLUMNS  # one schema, defined by the record
    row = frame.iloc[0]
    assert row["cost"] == 123.5 and row["epochs"] == 3 and row["instance_seed"] == 0
    assert row["param_eta"] == 200 and row["eta"] == 200.0
    assert row["exact"] is False or row["exact"] == False  # noqa: E712 - pandas boolean
    assert frame["exact"].dtype == "boolean" and frame["eval_exact"].iloc[0] == False  # noqa: E712
    assert json.loads(row["diagnostics"]) == {"arr": [0, 1, 2], "x": 1.5}
    assert json.loads(row["evaluation"])["mean"] == [10.0, 9.5, 9.0]
    assert json.loads(row["plan"])["datasets"] == {"A1": ["d0"]}
    assert math.isnan(row["lower_bound"]) and pd.isna(row["error"])
    assert frame["cost"].dtype == np.float64 and str(frame["n_models"].dtype) == "Int64"


def test_every_column_is_documented_with_a_kind():
    assert set(record_mod.KIND) == set(COLUMNS) == set(record_mod.DOC)
    assert all(record_mod.DOC[c].strip() for c in COLUMNS)
    assert set(record_mod.KIND.values()) <= set(record_mod.KINDS)
    table = record_mod.describe_columns()
    assert all(f"| `{c}` |" in table for c in COLUMNS)


def test_record_rejects_wrong_kinds_naming_the_column(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(SweepError, match="record.status"):
            store.add(record("a", status="great"))
        with pytest.raises(SweepError, match="record.cost"):
            store.add(record("a", cost="cheap"))
        with pytest.raises(SweepError, match="record.epochs"):
            store.add(record("a", epochs=2.5))
        # beyond SQLite's 64-bit INTEGER: an OverflowError the runner did not catch (it stores a
        # SweepError's attempt as failed and goes on)
        with pytest.raises(SweepError, match=r"^record.scenarios: must lie within \[−2\*\*63, 2\*\*63 − 1\], "
                                             "got 18446744073709551616"):
            store.add(record("a", scenarios=2**64))
        with pytest.raises(SweepError, match=r"^record.scenarios: must lie within .*got -9223372036854775809"):
            store.add(record("a", scenarios=-(2**63) - 1))
        assert store.count() == 0


def test_record_int_columns_hold_sqlites_whole_integer_range(tmp_path):
    # params.MIN_INT..MAX_INT is SQLite's INTEGER: both ends are stored and read back exactly
    from deplbench.params import MAX_INT, MIN_INT

    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a", scenarios=MIN_INT))
        assert store.add(record("b", scenarios=MAX_INT))
        assert sorted(store.frame()["scenarios"].tolist()) == [MIN_INT, MAX_INT]


def test_params_parameter_columns_keep_one_value_per_cell(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.add(record("a", params={"eta": 50, "grid": [1, 2]}))
        store.add(record("b", algorithm="milp", params={"scenarios": 100, "backend": "highs"}))
        frame = store.frame()
    assert list(frame.columns[len(COLUMNS):]) == ["param_eta", "param_grid", "param_scenarios",
                                                 "param_backend"]
    assert frame["param_eta"].tolist()[0] == 50 and pd.isna(frame["param_eta"].iloc[1])
    assert frame["param_grid"].iloc[0] == "[1, 2]"
    assert frame["param_scenarios"].iloc[1] == 100


def test_evaluation_and_instance_columns_are_expanded_from_a_real_solve():
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from deplbench.instances.generators import generate

    inst = generate("knapsack", seed=0, n_items=4, horizon=4)
    task = {"key": "k", "sweep": "s", "group": "ks", "instance_set": "knap",
            "family": "knapsack", "instance_params": {"n_items": 4}, "instance_seed": 0,
            "targets": {}, "algorithm": "depl", "label": "depl", "params": {"eta": 50},
            "evaluation": {}, "time_limit_s": 5.0}
    rec = task_mod.base_record(task)
    rec.update(record_mod.instance_columns(inst))
    from deplbench.solvers.run import solve

    res = solve(inst, "depl", eta=50, eval_samples=500)
    task_mod.fill_from_result(rec, res.to_dict())
    ev = evaluate_plan(inst, res.plan, samples=500, seed=0)
    row = record_mod.TaskRecord.from_mapping(rec)
    assert row.instance_group == "ks" and row.instance_set == "knap"
    assert row.n_models == inst.n_models and row.horizon == inst.horizon
    assert row.n_clusters == inst.n_clusters and row.n_datasets == inst.n_datasets
    assert row.time_max == inst.time_max and row.loss_max == inst.loss_max
    assert row.eta == 50 and row.epsilon == res.params["epsilon"]
    assert row.algorithm_label and row.exact is False
    assert row.quantile_oos == ev.quantile and row.verdict == ev.verdict
    assert (row.quantile_ci_low, row.quantile_ci_high) == tuple(ev.quantile_ci)
    assert row.ci_level == ev.confidence and row.ci_method
    assert row.eval_samples == ev.samples and row.eval_exact == ev.exact
    assert row.epochs == len(res.plan.epochs)
    assert row.instance_id == task_mod.instance_id(task) and len(row.instance_sha) == 24


def test_an_older_store_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE results (attempt INTEGER PRIMARY KEY AUTOINCREMENT,
            failed INTEGER NOT NULL, key TEXT NOT NULL, sweep TEXT, status TEXT,
            cost REAL, params TEXT, task TEXT, record TEXT);
        INSERT INTO results (failed, key, sweep, status, cost, params)
            VALUES (0, 'old', 's', 'feasible', 5.0, '{"eta": 10}');
    """)
    conn.commit()
    conn.close()
    with ResultsStore(path, readonly=True) as ro:  # read-only: missing columns read NULL
        frame = ro.frame()
    assert frame["cost"].tolist() == [5.0] and frame["n_models"].isna().all()
    with ResultsStore(path) as store:
        assert store.add(record("new"))
        frame = store.frame()
    assert frame["key"].tolist() == ["old", "new"] and frame["param_eta"].tolist() == [10, 200]


def test_one_success_per_key_but_failures_are_history(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a", status="error", error="timeout: x", cost=None))
        assert store.add(record("a", status="error", message="solver crashed"))
        assert store.failed_keys() == {"a"} and store.finished_keys() == set()
        assert store.add(record("a"))
        assert not store.add(record("a", cost=999.0))  # a second success is refused
        assert store.finished_keys() == {"a"} and store.failed_keys() == set()
        frame = store.frame()
        latest = store.frame(latest=True, extra=True)
    assert len(frame) == 3 and list(frame["status"]) == ["error", "error", "feasible"]
    assert len(latest) == 1 and latest["cost"].iloc[0] == 123.5
    assert latest["failed"].iloc[0] == 0 and json.loads(latest["record"].iloc[0])["wall_s"] == 0.3


@pytest.mark.parametrize("rec, failed", [
    ({"status": "feasible"}, False), ({"status": "infeasible"}, False), ({"status": "no_solution"}, False),
    ({"status": "time_limit"}, False), ({"status": "error"}, True),
    ({"status": None, "error": "crash: died"}, True),
])
def test_what_counts_as_a_failure(rec, failed):
    assert is_failure(rec) is failed


def test_store_is_wal_with_full_sync_and_survives_reopen(tmp_path):
    path = tmp_path / "sub" / "r.sqlite"
    with ResultsStore(path) as store:
        store.add(record("a"))
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        # Committed: visible to another connection before this one closes.
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
        other.close()
    with ResultsStore(path, readonly=True) as ro:
        assert ro.count() == 1 and ro.integrity_ok()
        with pytest.raises(SweepError, match="read-only"):
            ro.add(record("b"))


def test_a_read_leaves_no_side_files_and_keeps_a_writers(tmp_path):
    """A read-only connection to a WAL store creates ``-wal``/``-shm`` it cannot remove; reading a
    store (export, report) leaves the folder as it found it, and never takes a writer's files."""
    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as store:
        store.add(record("a"))
    side = [tmp_path / "r.sqlite-wal", tmp_path / "r.sqlite-shm"]
    assert not any(p.exists() for p in side)
    export(str(path), str(tmp_path / "out.csv"))
    with ResultsStore(path, readonly=True) as ro:
        assert ro.count() == 1
    assert not any(p.exists() for p in side)
    with ResultsStore(path) as writer:              # a sweep writing while a report reads
        with ResultsStore(path, readonly=True) as ro:
            assert ro.count() == 1
        assert side[0].exists()
        writer.add(record("b"))
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 2
        other.close()
    with ResultsStore(path, readonly=True) as ro:
        assert ro.count() == 2


def test_bad_stores_are_clear_errors(tmp_path):
    with pytest.raises(SweepError, match="not found"):
        ResultsStore(tmp_path / "missing.sqlite", readonly=True)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SweepError, match="not a usable SQLite database"):
        ResultsStore(junk)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(SweepError, match="not a deplbench store"):
        ResultsStore(other)
    # ...and the foreign database was left untouched.
    conn = sqlite3.connect(other)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"people"}
    with ResultsStore(tmp_path / "ok.sqlite") as store:
        with pytest.raises(SweepError, match="record.key"):
            store.add({"status": "feasible"})


def test_export_csv_and_parquet(tmp_path):
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        store.add(record("a"))
        store.add(record("b", status="error", error="timeout: t", cost=None))
    n = export(db, tmp_path / "r.csv", "csv")
    back = pd.read_csv(tmp_path / "r.csv")
    assert n == 2 and tuple(back.columns) == COLUMNS + ("param_eta",)
    assert back.set_index("key").loc["a", "cost"] == 123.5
    with pytest.raises(SweepError, match="--format"):
        export(db, tmp_path / "r.xlsx", "xlsx")
    if importlib.util.find_spec("pyarrow") is None:
        with pytest.raises(SweepError, match="pyarrow"):
            export(db, tmp_path / "r.parquet", "parquet")
    else:
        assert export(db, tmp_path / "r.parquet", "parquet") == 2
        assert tuple(pd.read_parquet(tmp_path / "r.parquet").columns) == COLUMNS + ("param_eta",)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None,
                    reason="Parquet export needs pyarrow (the locked environment has it)")
def test_parquet_keeps_every_csv_column_with_mixed_parameter_types(tmp_path):
    """Parameters of several solvers share param_* columns of mixed types
    (str, int, float, bool, lists, missing): Parquet keeps every column CSV
    has, and each value comes back (as a JSON literal where types mix)."""
    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        store.add(record("a", params={"eta": 200, "solver": "highs", "grid": [1, 2], "warm": True}))
        store.add(record("b", algorithm="milp", params={"eta": 12.5, "solver": 3, "time_limit": 60.0}))
        store.add(record("c", algorithm="knapsack-dp", params={"grid": "auto", "warm": False}))
    export(db, tmp_path / "r.csv", "csv")
    export(db, tmp_path / "r.parquet", "parquet")
    csv = pd.read_csv(tmp_path / "r.csv")
    pq = pd.read_parquet(tmp_path / "r.parquet").set_index("key")
    assert list(pq.reset_index().columns) == list(csv.columns)
    assert {"param_eta", "param_solver", "param_grid", "param_warm", "param_time_limit"} <= set(pq.columns)
    assert pq.loc["b", "param_time_limit"] == 60.0 and pd.isna(pq.loc["a", "param_time_limit"])
    solver = {k: (None if pd.isna(pq.loc[k, "param_solver"]) else json.loads(pq.loc[k, "param_solver"]))
              for k in "abc"}
    assert solver == {"a": "highs", "b": 3, "c": None}
    # list values are JSON text in the frame already, as in the CSV
    assert pq.loc["a", "param_grid"] == csv.set_index("key").loc["a", "param_grid"] == "[1, 2]"
    assert pq.loc["b", "param_eta"] == 12.5 and pd.isna(pq.loc["c", "param_eta"])   # numbers stay numbers
    assert pq.loc["a", "param_warm"] in (True, "true")
    assert pq.loc["a", "cost"] == 123.5 and len(pq) == 3


# --------------------------------------------------------------------------
# leases: several runners on one store


@pytest.mark.integration
def test_a_lease_is_exclusive_until_stored_expired_or_its_owner_dies(tmp_path):
    import subprocess
    import sys
    import time

    from deplbench.benchmarks.leases import Owner

    path = tmp_path / "r.sqlite"
    a, b = Owner(ttl_s=60.0), Owner(ttl_s=60.0)
    with ResultsStore(path) as one, ResultsStore(path) as two:
        assert one.claim("k1", a)
        assert not two.claim("k1", b)          # live lease of another owner
        assert one.claim("k1", a)              # re-claiming one's own is fine
        assert two.claim("k2", b) and not one.claim("k2", a)
        # Storing the row drops the lease in the same transaction; a finished
        # key is never claimed again.
        assert one.add(record("k1"), lease_owner=a.id)
        assert {r["key"] for r in one.leases()} == {"k2"}
        assert not two.claim("k1", b)
        # Expired (owner stopped renewing): free.
        short = Owner(ttl_s=0.05)
        assert one.claim("k3", short)
        time.sleep(0.1)
        assert two.claim("k3", b)
        # Renewal keeps it: a heartbeat moves the expiry forward.
        before = {r["key"]: r["expires"] for r in two.leases()}["k3"]
        assert two.renew(b) == 2
        assert {r["key"]: r["expires"] for r in two.leases()}["k3"] >= before
        # An owner on this host whose pid is gone: free at once, long before
        # its expiry.
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        ghost = Owner(pid=int(dead.stdout), ttl_s=3600.0)
        assert one.claim("k4", ghost)
        assert two.claim("k4", b)
        # A failed attempt stored after a runner started counts as handled
        # for that runner (no second try within one run) ...
        since = one.last_attempt()
        assert one.add(record("k5", status="error", error="boom"))
        assert not two.claim("k5", b, since_attempt=since)
        # ... but a later run (--retry-failed) may take it.
        assert two.claim("k5", b, since_attempt=two.last_attempt())
        two.release_all(b)
        assert all(r["owner"] != b.id for r in two.leases())


@pytest.mark.integration
def test_claims_are_atomic_across_processes(tmp_path):
    """Many processes race for the same keys: each key goes to exactly one."""
    import subprocess
    import sys

    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    script = (
        "import sys\n"
        "from deplbench.benchmarks.store import ResultsStore\n"
        "from deplbench.benchmarks.leases import Owner\n"
        "o = Owner()\n"
        "with ResultsStore(sys.argv[1]) as s:\n"
        "    got = [k for k in map(str, range(40)) if s.claim(k, o)]\n"
        "print(' '.join(got), flush=True)\n"
        # Stay alive until every racer has claimed: a dead owner's leases are
        # free, so an early exit would hand its keys to the next racer.
        "sys.stdin.read()\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.stdout.readline().split() for p in procs]
    for p in procs:
        p.communicate(timeout=600)
    assert all(p.returncode == 0 for p in procs)
    claimed = [k for out in outs for k in out]
    assert sorted(claimed, key=int) == [str(k) for k in range(40)]  # each once


def test_the_record_verdict_follows_a_proof_over_a_wrong_monte_carlo_certificate():
    """The report's missed/certified counts read the record's columns: where the
    exact bounds prove the plan feasible, a chance Monte Carlo miss is not one."""
    from deplbench.formulations.evaluation.evaluate import evaluate_plan
    from tests.formulations.test_evaluate import near_boundary_instance, plan

    ev = evaluate_plan(near_boundary_instance(), plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=1000,
                       seed=278, trajectory=False, exact=True)
    assert ev.mc_verdict == "infeasible" and ev.mc_certified_verdict == "certified infeasible"
    cols = record_mod.evaluation_columns(ev.to_dict())
    assert (cols["verdict"], cols["certified_verdict"]) == ("feasible", "certified feasible")
    assert cols["ci_level"] == 0.95 and cols["ci_method"] == ev.ci_method != record_mod.DEFAULT_CI_METHOD


def test_every_exported_interval_states_its_level_and_method():
    """violation_ub/lb and the closed-loop P(success) interval carry their level and method."""
    ev = {"quantile": 9.0, "quantile_ci": [8.5, 9.5], "confidence": 0.95, "exact": False,
          "violation_ub": 0.004, "violation_lb": 0.001, "violation_ub_level": 0.95}
    cols = record_mod.evaluation_columns(ev)
    assert "one-sided" in cols["violation_ub_method"] and "upper" in cols["violation_ub_method"]
    assert cols["violation_lb"] == 0.001 and cols["violation_lb_level"] == 0.95
    assert "one-sided" in cols["violation_lb_method"] and "lower" in cols["violation_lb_method"]
    assert record_mod.evaluation_columns({**ev, "exact": True})["violation_ub_method"].startswith("exact")
    cl = {"confidence": 0.95, "policy": {"runs": 100, "p_success": 0.99, "p_success_ci": [0.94, 0.999],
                                         "p_success_method": "Clopper–Pearson, two-sided, level 0.95"}}
    c = record_mod.closed_loop_columns(cl)
    assert c["cl_p_success_level"] == 0.95 and c["cl_p_success_method"].startswith("Clopper–Pearson, two-sided")
    assert {"violation_ub_method", "violation_lb_level", "cl_p_success_method"} <= set(COLUMNS)


def test_an_infinite_interval_end_read_back_from_strict_json_stays_infinite_through_the_store(tmp_path):
    # `solve -o` and --json write +inf as null with "<key>_nonfinite": "inf" (jsonio); a store
    # (and the report reading it) that took the null for a missing value would lose the one-sided interval
    from deplbench.jsonio import dumps
    from deplbench.reports.data import prepare

    ev = {"quantile": 8.9, "quantile_ci": [8.8, math.inf], "confidence": 0.95, "quantile_ci_level": 0.98,
          "verdict": "undecided", "samples": 100, "seed": 0, "exact": False}
    strict = json.loads(dumps(record("a", quantile_ci_high=math.inf, evaluation=ev)))
    assert strict["quantile_ci_high"] is None and strict["evaluation"]["quantile_ci"] == [8.8, None]
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(strict)
        frame = store.frame()
        rec = store.records()[0]
    assert frame["quantile_ci_high"].iloc[0] == math.inf and frame["quantile_ci_low"].iloc[0] == 8.8
    assert rec["quantile_ci_high"] == math.inf and "quantile_ci_high_nonfinite" not in rec
    assert rec["evaluation"]["quantile_ci"] == [8.8, math.inf]
    df = prepare(frame).df
    assert df["quantile_ci_high"].iloc[0] == math.inf


def test_a_report_reads_an_infinite_end_a_json_cell_kept_as_null_with_its_reason():
    from deplbench.reports.data import parse_json

    cell = json.dumps({"quantile_ci": [8.8, None], "quantile_ci_nonfinite": {"1": "inf"}})
    assert parse_json(cell) == ({"quantile_ci": [8.8, math.inf]}, True)


def _stamped(tmp_path, version: str):
    path = tmp_path / f"v{len(list(tmp_path.iterdir()))}.sqlite"
    with ResultsStore(path) as store:
        store.add(record("k"))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (version,))
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("version, message", [
    ("999", r"schema version 999 was written by a newer deplbench \(this one reads versions up to 2\)"),
    ("abc", r"meta.schema_version 'abc' is not a schema version"),
    ("²", r"meta.schema_version '²' is not a schema version"),
])
def test_a_store_of_a_newer_or_unknown_schema_is_refused_and_left_alone(tmp_path, version, message):
    """A newer store was read as if it were this version's, and a run into it re-stamped it with version 2."""
    path = _stamped(tmp_path, version)
    for readonly in (True, False):
        with pytest.raises(SweepError, match=message):
            ResultsStore(path, readonly=readonly)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone() == (version,)
    assert conn.execute("SELECT count(*) FROM results").fetchone() == (1,)
    conn.close()


def test_a_store_of_an_older_schema_version_is_still_read_and_migrated(tmp_path):
    path = _stamped(tmp_path, "1")
    with ResultsStore(path, readonly=True) as ro:
        assert ro.count() == 1
    with ResultsStore(path) as store:
        assert store.add(record("k2"))
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone() == ("2",)
    conn.close()


def test_plans_stored_without_a_finite_cost_are_named_by_export_and_report(tmp_path):
    """A feasible row with cost inf (or nan, stored as NULL) was left out of every report table
    ("no reference", blank ratios) and exported without a word."""
    import lzma

    from deplbench.benchmarks.store_audit import costless_plans
    from deplbench.reports.data import text_cell_notes
    from tests.demo_store import FIXTURE

    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add(record("inf", cost=math.inf))
        store.add(record("nan", cost=math.nan))
        store.add(record("ok"))
        store.add(record("no-plan", status="error", cost=None, plan=None))
    with sqlite3.connect(db) as conn:
        assert costless_plans(conn) == 2
    warnings: list[str] = []
    assert export(db, tmp_path / "s.csv", "csv", warn=warnings.append) == 4
    assert warnings == ["warning: 2 stored row(s) of status optimal/feasible/time_limit hold a plan but no finite "
                        "cost (inf, or empty where nan was stored; a hand-edited or foreign store): no cost figure "
                        "can count them"]
    assert text_cell_notes(db) == [warnings[0].removeprefix("warning: ")]
    # the report's frame leaves them out, as the note says: no inf in any cost sum or spread
    from deplbench.reports.data import load_store, prepare

    frame = prepare(load_store(db), source=str(db)).df
    assert frame["cost"].isna().sum() == 3 and np.isfinite(frame["cost"].dropna()).all()
    demo = tmp_path / "demo.sqlite"                       # a real store: nothing to say
    demo.write_bytes(lzma.decompress(FIXTURE.read_bytes()))
    assert text_cell_notes(demo) == []


def test_a_store_locked_by_another_process_is_said_to_be_locked_not_unusable(tmp_path, monkeypatch):
    """It said "not a usable SQLite database (database is locked)", as for a broken file."""
    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add(record("k1"))
    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real(*a, **{**k, "timeout": 0.05}))
    holder = real(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SweepError, match=r"s\.sqlite: locked by another process for over 30 s "
                                             r"\(database is locked\)$"):
            ResultsStore(db)
    finally:
        holder.execute("COMMIT")
        holder.close()


@pytest.mark.parametrize("value", ["1.5", "1e300", "-1e300", "9e999"])
def test_a_non_integer_in_an_integer_column_is_read_as_missing_with_a_warning(tmp_path, value):
    """A REAL such as 1.5 or 1e300 in an INTEGER column (a hand-edited store) made export print a
    pandas traceback and report fail on the frame, with a RuntimeWarning from pandas on stderr."""
    import warnings

    from deplbench.benchmarks.store_audit import non_integers
    from deplbench.reports.data import load_store, text_cell_notes

    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add(record("a"))
        store.add(record("b"))
        store.add(record("c"))
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE results SET reference_priority = {value} WHERE key = 'a'")
        conn.execute("UPDATE results SET reference_priority = 3.0 WHERE key = 'b'")   # integral: kept
        conn.execute("UPDATE results SET reference_priority = 4 WHERE key = 'c'")
        assert non_integers(conn) == {"reference_priority": 1}
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no stray library warning either
        assert export(db, tmp_path / "s.csv", "csv", warn=lines.append) == 3
        frame = load_store(db)
        notes = text_cell_notes(db)
    assert lines == [f"warning: {db}: 1 stored row(s) of integer column 'reference_priority' hold a value "
                     "that is not an integer; exported as missing values"]
    assert notes == ["1 stored row(s) of integer column 'reference_priority' hold a value that is not an "
                     "integer: read as missing values"]
    assert frame["reference_priority"].dtype == "Int64"
    assert frame["reference_priority"].isna().tolist() == [True, False, False]
    assert frame["reference_priority"].iloc[1:].tolist() == [3, 4]
    exported = pd.read_csv(tmp_path / "s.csv")
    assert exported["reference_priority"].isna().tolist() == [True, False, False]
