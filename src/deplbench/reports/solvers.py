"""Solver vs solver: the same exact algorithm run with several MILP solvers.

One job: from the store's rows of exact algorithms that recorded a
``solver`` parameter (``milp`` with ``--solver`` or a sweep's ``solvers``
axis), compare the MILP solvers as Mittelmann's benchmark tables do, on the
problems every compared solver ran:

* **solved** — status ``optimal`` (the cut loop proved the gap with the
  solver's own dual bound) within the task's limit;
* **sgm_time_s** — shifted geometric mean of the solve time with shift
  10 s, an unsolved problem counted at its time limit (its measured time
  when it had none);
* **mean_gap_at_limit** — mean relative gap (incumbent − bound)/incumbent of
  the runs that stopped at the time limit with both.

A problem is an instance as solved (``instance_key``) with every other
parameter equal (S, gap, seed, ...): only the solver differs. When a store
holds a single solver the table is empty and the section says so.

References
----------
H. Mittelmann, "Benchmarks for optimization software" (shift 10 s, unsolved
instances at the time limit); T. Achterberg, "Constraint Integer
Programming" (2007), App. A.
"""

from __future__ import annotations

import math

import pandas as pd

from deplbench.benchmarks.sgm import SHIFT_S, shifted_geomean
from deplbench.reports.data import canonical
from deplbench.reports.elements import Section, Table

#: Columns of the solver-vs-solver table.
SOLVER_COLUMNS = ("family", "algorithm", "solver", "version", "problems", "solved", "sgm_time_s",
                  "mean_gap_at_limit", "at_time_limit", "errors", "shift_s")

#: Parameters that name the solver or do not change what a run computes.
_NOT_PROBLEM = frozenset({"solver", "threads", "verbose", "write_lp", "backend"})


def _solver_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of exact algorithms with a recorded ``solver`` parameter, with
    the columns ``milp_solver``, ``problem`` and ``limit_s`` added."""
    if df.empty or "params_d" not in df.columns:
        return df.iloc[0:0]
    has = df["is_exact"] & df["params_d"].map(lambda d: isinstance(d, dict) and isinstance(d.get("solver"), str))
    sub = df[has].copy()
    if sub.empty:
        return sub
    sub["milp_solver"] = sub["params_d"].map(lambda d: d["solver"])
    sub["problem"] = [f"{k}|{canonical({p: v for p, v in d.items() if p not in _NOT_PROBLEM})}"
                      for k, d in zip(sub["instance_key"], sub["params_d"])]
    sub["limit_s"] = sub["params_d"].map(lambda d: _limit(d.get("time_limit")))
    return sub


def _limit(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) and v > 0 else math.nan


def _version(g: pd.DataFrame) -> str:
    if "diagnostics_d" not in g.columns:
        return ""
    versions = sorted({d["solver_version"] for d in g["diagnostics_d"]
                       if isinstance(d, dict) and isinstance(d.get("solver_version"), str)})
    return "; ".join(versions)


def solver_comparison(df: pd.DataFrame, shift: float = SHIFT_S) -> pd.DataFrame:
    """The solver-vs-solver table (module docstring), one row per
    (family, algorithm, solver); empty when no algorithm ran with two solvers.

    Parameters
    ----------
    df : pandas.DataFrame
        The prepared report frame (:func:`deplbench.reports.data.prepare`).
    shift : float, default 10
        Shift of the geometric mean, seconds.
    """
    sub = _solver_rows(df)
    rows = []
    if not sub.empty:
        for (fam, alg), grp in sub.groupby(["family", "algorithm"], sort=True):
            solvers = sorted(grp["milp_solver"].unique())
            if len(solvers) < 2:
                continue
            # the latest attempt per (problem, solver); only problems every solver ran
            last = grp.drop_duplicates(["problem", "milp_solver"], keep="last")
            ran = last.groupby("problem")["milp_solver"].nunique()
            common = set(ran[ran == len(solvers)].index)
            if not common:
                continue
            for solver in solvers:
                g = last[(last["milp_solver"] == solver) & last["problem"].isin(common)]
                solved = g["status"] == "optimal"
                limit = g["limit_s"].where(g["limit_s"].notna(), g["runtime_s"])
                times = g["runtime_s"].where(solved, limit).clip(lower=0.0)
                at_limit = g[g["status"] == "time_limit"]
                gaps = at_limit["gap"].dropna()
                rows.append({"family": fam, "algorithm": alg, "solver": solver, "version": _version(g),
                             "problems": len(g), "solved": int(solved.sum()),
                             "sgm_time_s": shifted_geomean(times.to_numpy(float), shift),
                             "mean_gap_at_limit": float(gaps.mean()) if len(gaps) else math.nan,
                             "at_time_limit": len(at_limit), "errors": int((g["status"] == "error").sum()),
                             "shift_s": float(shift)})
    return pd.DataFrame(rows, columns=list(SOLVER_COLUMNS))


def add_solver_table(section: Section, df: pd.DataFrame) -> None:
    """Add the table to ``section``, or say why it is empty (never raises
    for missing data)."""
    table = solver_comparison(df)
    sub = _solver_rows(df)
    if table.empty:
        present = sorted(sub["milp_solver"].unique()) if not sub.empty else []
        if present:
            s = "s" if len(present) > 1 else ""
            section.note(f"Solver vs solver: this store holds exact runs with the MILP solver{s} "
                         f"{', '.join(present)} but no problem that two solvers both ran, so there "
                         "is nothing to compare. A sweep entry with solvers = [\"highs\", \"scip\"] "
                         "(or `deplbench solve --solver`) runs one problem with several.")
        else:
            section.note("Solver vs solver: no exact run in this store records a MILP solver "
                         "(parameter solver), so there is nothing to compare.")
    section.add(Table("solver_comparison", "Solver vs solver (same exact algorithm, same problems)", table,
                      SOLVER_COLUMNS,
                      "Per exact algorithm run with two or more MILP solvers, on the problems every one "
                      "of them ran (same instance and parameters): solved = status optimal, the gap "
                      "proven with that solver's own dual bound; sgm_time_s = exp(mean(log(t + s))) − s "
                      "with shift s = 10 s (Mittelmann), an unsolved problem counted at its time limit; "
                      "mean_gap_at_limit = mean relative gap of the runs stopped at the limit; version as "
                      "the result records it."))


__all__ = ["SOLVER_COLUMNS", "solver_comparison", "add_solver_table"]
