"""The report's timing spread over repeated runs (reports/repetitions.py),
checked against numpy's quantiles computed by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from deplbench.reports.repetitions import TIMING_COLUMNS, timing_spread


def _row(label, sha, runtime, status="optimal", loss_max=9.0, params=None, cost=10.0):
    return {"label": label, "instance_sha": sha, "loss_max": loss_max, "omega": 0.99,
            "params": json.dumps(params or {"eta": 50}), "runtime_s": runtime, "status": status,
            "family": "realistic", "instance_name": sha, "cost": cost}


def test_median_and_iqr_per_repeated_configuration_only():
    times = [1.0, 4.0, 2.0, 10.0]
    rows = [_row("depl", "a", t) for t in times]
    rows += [_row("depl", "a", 99.0, status="error")]               # a failed run is not a timing
    rows += [_row("depl", "a", 5.0, loss_max=13.0)]                  # another target: run once
    rows += [_row("depl", "a", 7.0, params={"eta": 100})]            # other parameters: run once
    rows += [_row("milp", "b", 3.0, cost=5.0), _row("milp", "b", 5.0, cost=6.0)]
    t = timing_spread(pd.DataFrame(rows))
    assert tuple(t.columns) == TIMING_COLUMNS and len(t) == 2
    depl = t[t["label"] == "depl"].iloc[0]
    q1, med, q3 = np.quantile(times, [0.25, 0.5, 0.75])
    assert depl["runs"] == 4 and depl["runtime_median_s"] == med == 3.0
    assert depl["runtime_iqr_s"] == q3 - q1 and (depl["runtime_min_s"], depl["runtime_max_s"]) == (1.0, 10.0)
    assert depl["cost_distinct"] == 1
    milp = t[t["label"] == "milp"].iloc[0]
    assert milp["runs"] == 2 and milp["runtime_median_s"] == 4.0 and milp["cost_distinct"] == 2


def test_nothing_repeated_gives_an_empty_table():
    t = timing_spread(pd.DataFrame([_row("depl", "a", 1.0), _row("depl", "b", 2.0)]))
    assert t.empty and tuple(t.columns) == TIMING_COLUMNS
    assert timing_spread(pd.DataFrame()).empty
