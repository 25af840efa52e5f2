"""Anytime behaviour of the exact solvers: gap over time and primal integrals.

The exact solvers record ``diagnostics["anytime"]``: a list of events
``[seconds since the solve began, incumbent cost or None, lower bound or
None]`` — the MILP after every master solve of its cut loop
(formulations/milp/cutloop.py; incumbents found inside one solve are not
seen), ``milp-certified`` after each stage and at the end
(solvers/certify/certified.py ``bracket_events``; there the bounds are the
bracket's statistical UB and LB at their stated confidence, not solver
bounds).

Two measures, as in MIP benchmarking:

* the **gap over time** (benchopt-style convergence curve): after each
  event, (incumbent − bound)/|incumbent|, clipped to [0, 1], and 1 while
  either is missing; a step function of time;
* the **primal integral** (Berthold, "Measuring the impact of primal
  heuristics", Oper. Res. Lett. 41 (2013), Def. 2): ∫₀ᵀ p(t) dt with the
  primal gap p(t) = 1 without an incumbent, else |x* − x̃(t)| /
  max(|x*|, |x̃(t)|) (0 when both are 0), where x* is the best incumbent any
  run found for the same problem (instance, ℓmax, ω, algorithm, S) and T
  the run's last event. Seconds; smaller is better (finding good plans
  early).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.reports.elements import Section, Table
from deplbench.reports.figures import add_legend, new_figure
from deplbench.reports.styles import ordered

#: Columns of the per-event frame :func:`anytime_events`.
EVENT_COLUMNS = ("run", "series", "family", "problem", "t", "incumbent", "bound", "gap")
#: Columns of the ``primal_integral`` table.
INTEGRAL_COLUMNS = ("series", "family", "runs", "primal_integral_mean_s", "primal_integral_median_s",
                    "time_to_first_incumbent_median_s", "final_gap_median", "end_s_median")


def _gap(incumbent, bound) -> float:
    if incumbent is None or bound is None or not (math.isfinite(incumbent) and math.isfinite(bound)):
        return 1.0
    if incumbent == 0:
        return 0.0 if bound >= 0 else 1.0
    return float(min(1.0, max(0.0, (incumbent - bound) / abs(incumbent))))


def _series(row) -> str:
    """The series, with the MILP solver where the parameters name one."""
    solver = (row.get("params_d") or {}).get("solver") if isinstance(row.get("params_d"), dict) else None
    return f"{row['algorithm']} ({solver})" if solver else str(row["algorithm"])


def anytime_events(df: pd.DataFrame) -> pd.DataFrame:
    """One row per recorded event of every run with an anytime record.

    Parameters
    ----------
    df : pandas.DataFrame
        The report's prepared frame (``diagnostics_d``, ``params_d``,
        ``algorithm`` = series, ``solver`` = registry name).

    Returns
    -------
    pandas.DataFrame
        :data:`EVENT_COLUMNS`; ``gap`` as defined in the module docstring.
    """
    if df.empty or "diagnostics_d" not in df.columns:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    rows = []
    for idx, row in df.iterrows():
        diag = row.get("diagnostics_d")
        events = diag.get("anytime") if isinstance(diag, dict) else None
        if not isinstance(events, list) or not events:
            continue
        problem = "|".join(str(row.get(c)) for c in ("instance_sha", "loss_max", "omega", "solver", "scenarios"))
        series = _series(row)
        for ev in events:
            if not (isinstance(ev, (list, tuple)) and len(ev) == 3):
                continue
            t, inc, bound = ev
            inc = None if inc is None else float(inc)
            bound = None if bound is None else float(bound)
            rows.append({"run": idx, "series": series, "family": row.get("family"), "problem": problem,
                         "t": float(t), "incumbent": inc, "bound": bound, "gap": _gap(inc, bound)})
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def primal_integral(times, incumbents, best: float) -> float:
    """Berthold's primal integral of one run (module docstring), in seconds.

    Parameters
    ----------
    times : sequence of float
        Event times, non-decreasing; the integral runs from 0 to the last.
    incumbents : sequence of float or None
        The incumbent after each event (None: none yet).
    best : float
        x*, the best known cost of the problem.
    """
    total, prev_t, prev_p = 0.0, 0.0, 1.0     # no incumbent before the first event
    for t, x in zip(times, incumbents):
        total += prev_p * (t - prev_t)
        prev_t, prev_p = t, primal_gap(x, best)
    return total


def primal_gap(x, best: float) -> float:
    """Berthold's primal gap p of an incumbent ``x`` (None: no incumbent, 1)
    against the best known cost ``best``."""
    if x is None or not math.isfinite(x):
        return 1.0
    if x == 0 and best == 0:
        return 0.0
    if x * best < 0:
        return 1.0
    return abs(best - x) / max(abs(best), abs(x))


def integral_table(events: pd.DataFrame) -> pd.DataFrame:
    """The ``primal_integral`` table: per series and family, over runs."""
    if events.empty:
        return pd.DataFrame(columns=INTEGRAL_COLUMNS)
    best = events.dropna(subset=["incumbent"]).groupby("problem")["incumbent"].min().to_dict()
    per_run = []
    for _run, g in events.groupby("run", sort=False):
        g = g.sort_values("t", kind="stable")
        x_star = best.get(g["problem"].iloc[0])
        incs = [None if pd.isna(v) else v for v in g["incumbent"]]
        first = next((t for t, x in zip(g["t"], incs) if x is not None), math.nan)
        per_run.append({"series": g["series"].iloc[0], "family": g["family"].iloc[0],
                        "integral": math.nan if x_star is None else primal_integral(g["t"], incs, x_star),
                        "first": first, "final_gap": g["gap"].iloc[-1], "end": g["t"].iloc[-1]})
    runs = pd.DataFrame(per_run)
    rows = []
    for (series, family), g in runs.groupby(["series", "family"], sort=True):
        rows.append({"series": series, "family": family, "runs": len(g),
                     "primal_integral_mean_s": g["integral"].mean(),
                     "primal_integral_median_s": g["integral"].median(),
                     "time_to_first_incumbent_median_s": g["first"].median(),
                     "final_gap_median": g["final_gap"].median(), "end_s_median": g["end"].median()})
    return pd.DataFrame(rows, columns=INTEGRAL_COLUMNS)


def gap_figure(events: pd.DataFrame, styles, scale: float = 1.0):
    """Per instance family (columns), on a log time axis: top, each run's gap
    (incumbent − bound)/incumbent as a step curve; bottom, its primal gap
    p(t) against the best plan any run found for the same problem, whose
    area is the primal integral (the legend gives each series' median over
    its runs). A series has its algorithm's palette colour (a solver
    variant, e.g. the MILP on SCIP beside HiGHS, a shade of it)."""
    if events.empty:
        return None
    from deplbench.reports.figures import log_axis, variant_colour
    from deplbench.reports.readability import tag
    from deplbench.reports.styles import info_for

    families = sorted(events["family"].dropna().unique())
    every = list(ordered(events["series"], styles))
    base = {s: s.split(" (")[0] for s in every}
    look: dict[str, tuple] = {}
    count: dict[str, int] = {}
    for s in every:
        st = info_for(styles, base[s])
        j = count[base[s]] = count.get(base[s], -1) + 1
        look[s] = (j, variant_colour(st, j, styles), st.linestyle)
    best = events.dropna(subset=["incumbent"]).groupby("problem")["incumbent"].min().to_dict()
    positive = events.loc[events["t"] > 0, "t"]
    t0 = max(1e-4, float(positive.min()) / 2) if len(positive) else 1e-3
    integrals = integral_table(events).groupby("series")["primal_integral_median_s"].median()
    fig, axes = new_figure(ncols=len(families), nrows=2, scale=scale, sharey="row")
    for col, fam in enumerate(families):
        gax, pax = axes[0, col], axes[1, col]
        ev = events[events["family"] == fam]
        for series in every:
            j, colour, ls = look[series]
            pi = integrals.get(series, math.nan)
            label = (f"{series}: primal integral median {pi:.3g} s" if math.isfinite(pi)
                     else series)
            for i, (_, g) in enumerate(ev[ev["series"] == series].groupby("run", sort=False)):
                g = g.sort_values("t", kind="stable")
                t = np.concatenate([[t0], np.maximum(g["t"].to_numpy(), t0)])
                gap = np.concatenate([[1.0], g["gap"].to_numpy()])
                x_star = best.get(g["problem"].iloc[0])
                prim = np.concatenate([[1.0], [primal_gap(None if pd.isna(x) else x, x_star)
                                               if x_star is not None else 1.0
                                               for x in g["incumbent"]]])
                tag(gax.step(t, gap, where="post", color=colour, ls=ls, lw=1.0, alpha=0.8,
                             label=label if i == 0 else None), base[series], j > 0)
                tag(pax.step(t, prim, where="post", color=colour, ls=ls, lw=1.0, alpha=0.8),
                    base[series], j > 0)
        span = ev["t"].to_numpy(float)
        for ax in (gax, pax):
            log_axis(ax, "x", np.concatenate([[t0], span[span > 0]]))
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3, which="both")
            ax.tick_params(labelsize=7)
        gax.set_title(fam, fontsize=8)
        pax.set_xlabel("time since the solve began [s], log", fontsize=8)
    axes[0, 0].set_ylabel("gap (inc. − bound)/inc. [–]", fontsize=8)
    axes[1, 0].set_ylabel("primal gap p(t) [–]", fontsize=8)
    add_legend(fig, axes)
    return fig


def section_anytime(ctx) -> Section:
    """The report section (registered in :data:`deplbench.reports.sections.SECTION_BUILDERS`)."""
    s = Section("anytime", "7. Anytime behaviour of the exact solvers",
                "How fast the exact solvers close their gap: each run's recorded events "
                "(time, incumbent, bound) as a step curve of (incumbent − bound)/incumbent, "
                "1 while either is missing; and Berthold's primal integral (seconds of primal "
                "gap, against the best plan any run found for the same problem). The MILP "
                "records an event after each master solve of its cut loop; milp-certified after "
                "each stage, where the bounds are the bracket's statistical UB and LB at their "
                "stated confidence. Module reports/anytime.py.")
    events = anytime_events(ctx.df)
    if events.empty:
        s.missing("No record carries an anytime trace (diagnostics.anytime): run milp or "
                  "milp-certified tasks.")
        return s
    s.add_figure(gap_figure(events, ctx.styles, ctx.scale), "anytime_gap",
                 "Gap and primal gap over time per solver and instance family",
                 "One step curve per run, on a log time axis (seconds since the solve began, "
                 "model building included for the MILP). Top: relative gap, 1 without an "
                 "incumbent or a bound. Bottom: Berthold's primal gap p(t) against the best plan "
                 "any run found for the same problem; the area under it is the run's primal "
                 "integral (legend: median over the series' runs, seconds).",
                 missing="No anytime trace.")
    s.add(Table("primal_integral", "Primal integral per solver and instance family",
                integral_table(events), INTEGRAL_COLUMNS,
                "primal_integral_*: ∫ p(t) dt in seconds over each run (Berthold 2013), mean and "
                "median over runs; time_to_first_incumbent: first event with a plan; final_gap: "
                "the gap at the last event; end_s: time of the last event."))
    return s


__all__ = ["EVENT_COLUMNS", "INTEGRAL_COLUMNS", "anytime_events", "primal_gap", "primal_integral",
           "integral_table",
           "gap_figure", "section_anytime"]
