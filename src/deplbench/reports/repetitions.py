"""Timing spread of repeated tasks (a sweep's ``repetitions = N``).

A repeated task is run N times, each run a row of its own (its repetition
index is part of the task key). Rows that differ only in that index — same
series label, instance (content hash), ℓmax, ω and solver parameters, with
a result (failed runs excluded) — are one *configuration*; for each with
at least two runs this module reports the runtime's median and
inter-quartile range (IQR = Q3 − Q1, numpy's linear-interpolation
quantiles), i.e. how much a timing varies between runs of the same work on
the same machine. These are descriptive statistics of the runs, not
confidence intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from deplbench.reports.elements import Section, Table

#: Columns of the ``timing_spread`` table.
TIMING_COLUMNS = ("label", "family", "instance_name", "loss_max", "omega", "params", "runs",
                  "runtime_median_s", "runtime_q1_s", "runtime_q3_s", "runtime_iqr_s",
                  "runtime_min_s", "runtime_max_s", "cost_distinct")

_CONFIG = ("label", "instance_sha", "loss_max", "omega", "params")

#: Statuses of runs without a result.
_FAILED = ("error", "crashed", "skipped")


def timing_spread(df: pd.DataFrame) -> pd.DataFrame:
    """Median and IQR of ``runtime_s`` per configuration run at least twice.

    Parameters
    ----------
    df : pandas.DataFrame
        The report's prepared store frame (one row per stored attempt).

    Returns
    -------
    pandas.DataFrame
        :data:`TIMING_COLUMNS`, one row per repeated configuration, sorted
        by label and instance; empty when nothing was repeated.
    """
    need = {*_CONFIG, "runtime_s", "status"}
    if df.empty or not need <= set(df.columns):
        return pd.DataFrame(columns=TIMING_COLUMNS)
    ok = df[~df["status"].isin(_FAILED) & df["runtime_s"].notna()].copy()
    for col in _CONFIG:
        ok[col] = ok[col].astype(str)      # NaN targets and JSON params group as text
    rows = []
    for keys, g in ok.groupby(list(_CONFIG), sort=True, dropna=False):
        if len(g) < 2:
            continue
        t = g["runtime_s"].to_numpy(dtype=float)
        q1, med, q3 = np.quantile(t, [0.25, 0.5, 0.75])
        first = g.iloc[0]
        rows.append({"label": keys[0], "family": first.get("family"),
                     "instance_name": first.get("instance_name"), "loss_max": first.get("loss_max"),
                     "omega": first.get("omega"), "params": keys[4], "runs": len(g),
                     "runtime_median_s": med, "runtime_q1_s": q1, "runtime_q3_s": q3,
                     "runtime_iqr_s": q3 - q1, "runtime_min_s": t.min(), "runtime_max_s": t.max(),
                     "cost_distinct": int(g["cost"].nunique(dropna=False)) if "cost" in g else None})
    return pd.DataFrame(rows, columns=TIMING_COLUMNS)


def section_timing(ctx) -> Section:
    """The report section (registered in :data:`deplbench.reports.sections.SECTION_BUILDERS`)."""
    s = Section("timing", "8. Timing spread over repeated runs",
                "Tasks of a sweep with repetitions = N run N times, each run stored as its own "
                "row. Per configuration (series, instance, ℓmax, ω, parameters) run at least "
                "twice: the runtime's median and inter-quartile range over the runs that gave a "
                "result (descriptive statistics of these runs on this machine, not confidence "
                "intervals; module reports/repetitions.py).")
    t = timing_spread(ctx.df)
    if t.empty:
        s.missing("No configuration was run more than once: set repetitions = N in the sweep "
                  "([sweep] or an [[algorithms]] entry, docs/sweeps.md) to measure timing spread.")
        return s
    s.add(Table("timing_spread", "Runtime median and IQR per repeated configuration", t, TIMING_COLUMNS,
                "runtime_* in seconds (the record's runtime_s); q1/q3 by linear interpolation; "
                "cost_distinct = number of distinct costs over the runs (1 for a deterministic "
                "algorithm)."))
    return s


__all__ = ["TIMING_COLUMNS", "timing_spread", "section_timing"]
