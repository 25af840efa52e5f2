"""Anytime records of the exact solvers and the report's gap-over-time and
primal-integral measures (reports/anytime.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from deplbench.formulations import milp
from deplbench.reports.anytime import EVENT_COLUMNS, INTEGRAL_COLUMNS, anytime_events, integral_table, primal_integral
from deplbench.solvers.certify.certified import bracket_events
from deplbench.solvers.exact.brute_force import search as brute_force_search
from tests.milp_instances import tiny_instance


@pytest.mark.parametrize("seed", [0, 1])
def test_milp_records_monotone_events_ending_at_its_result(seed):
    inst = tiny_instance(seed, horizon=3)
    r = milp.solve_milp(inst, scenarios=20, seed=0, time_limit=None)
    bf_cost, _, _ = brute_force_search(inst, 20, 0)
    events = r.diagnostics["anytime"]
    assert r.status == "optimal" and len(events) >= 2
    times = [e[0] for e in events]
    assert times == sorted(times) and times[0] >= 0
    incs = [e[1] for e in events if e[1] is not None]
    bounds = [e[2] for e in events if e[2] is not None]
    assert incs == sorted(incs, reverse=True) and bounds == sorted(bounds)   # never worse over time
    assert events[-1][1] == pytest.approx(r.cost) == pytest.approx(bf_cost, rel=1e-6)
    assert events[-1][2] == pytest.approx(r.lower_bound)
    assert all(b <= bf_cost * (1 + 1e-6) for b in bounds)                   # a bound is a bound


def test_primal_integral_closed_form():
    # no plan until t=3 (p=1), then 12 against x*=10 (p=2/12) until t=6
    assert primal_integral([1.0, 3.0, 6.0], [None, 12.0, 10.0], 10.0) == pytest.approx(1 + 2 + 3 * 2 / 12)
    assert primal_integral([2.0], [10.0], 10.0) == pytest.approx(2.0)      # [0, 2]: no plan yet
    assert primal_integral([0.0, 5.0], [10.0, 10.0], 10.0) == 0.0


def _frame(runs):
    rows = []
    for alg, solver, fam, events in runs:
        rows.append({"algorithm": alg, "solver": "milp", "family": fam, "instance_sha": "i1", "loss_max": 9.0,
                     "omega": 0.99, "scenarios": 100, "params_d": {"solver": solver},
                     "diagnostics_d": {"anytime": events}})
    rows.append({"algorithm": "depl", "solver": "depl", "family": "realistic", "instance_sha": "i1",
                 "loss_max": 9.0, "omega": 0.99, "scenarios": None, "params_d": {}, "diagnostics_d": {}})
    return pd.DataFrame(rows)


def test_events_gap_and_integral_table():
    df = _frame([("milp", "highs", "realistic", [[1.0, None, 5.0], [2.0, 12.0, 8.0], [4.0, 10.0, 10.0]]),
                 ("milp", "scip", "realistic", [[3.0, 10.0, 10.0]])])
    ev = anytime_events(df)
    assert tuple(ev.columns) == EVENT_COLUMNS and len(ev) == 4          # depl has no record
    assert list(ev["gap"]) == [1.0, pytest.approx(4 / 12), 0.0, 0.0]
    assert set(ev["series"]) == {"milp (highs)", "milp (scip)"}
    t = integral_table(ev).set_index("series")
    assert tuple(t.reset_index().columns) == INTEGRAL_COLUMNS
    # x* = 10 over both runs of the same problem
    assert t.loc["milp (highs)", "primal_integral_mean_s"] == pytest.approx(2 + 2 * 2 / 12)
    assert t.loc["milp (scip)", "primal_integral_mean_s"] == pytest.approx(3.0)
    assert t.loc["milp (highs)", "time_to_first_incumbent_median_s"] == 2.0
    assert t.loc["milp (highs)", "final_gap_median"] == 0.0


def test_certified_bracket_events_follow_its_stages():
    bracket = {"stages": [{"stage": 1, "lower": 90.0, "upper": 110.0, "elapsed_s": 5.0},
                          {"stage": 2, "ran": False},
                          ],
               "runtime_s": {"total": 6.5}, "upper_bound": {"value": 110.0}, "lower_bound": {"value": -math.inf}}
    assert bracket_events(bracket) == [[5.0, 110.0, 90.0], [6.5, 110.0, None]]


def test_section_draws_the_figure_and_the_table_for_milp_and_milp_certified():
    from types import SimpleNamespace

    from deplbench.reports.anytime import section_anytime
    from deplbench.reports.elements import Figure, Table

    df = _frame([("milp", "highs", "knapsack", [[0.5, 12.0, None], [1.0, 10.0, 10.0]]),
                 ("milp-certified", None, "knapsack", [[2.0, 11.0, 9.0], [2.5, 11.0, 9.5]])])
    df["params_d"] = [{"solver": "highs"}, {}, {}]
    s = section_anytime(SimpleNamespace(df=df, styles={}, scale=0.4))
    figs = [e for e in s.elements if isinstance(e, Figure)]
    tables = {e.name: e for e in s.elements if isinstance(e, Table)}
    assert [f.name for f in figs] == ["anytime_gap"]
    labels = {t.get_label().split(": primal integral")[0] for ax in figs[0].fig.axes
              for t in ax.get_lines()}
    assert {"milp (highs)", "milp-certified"} <= labels
    # on a log time axis, with the primal gap below the gap
    assert all(ax.get_xscale() == "log" for ax in figs[0].fig.axes)
    assert any("primal integral median" in t.get_label() for ax in figs[0].fig.axes
               for t in ax.get_lines())
    assert set(tables["primal_integral"].frame["series"]) == {"milp (highs)", "milp-certified"}
