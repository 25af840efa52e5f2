"""Closed-loop simulation (formulations/evaluation/closed_loop.py), closed-loop PACT,
receding-horizon DepL, the sweep option and the report section."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from deplbench.errors import PlanError, SweepError
from deplbench.formulations.evaluation.closed_loop import (
    BLOCK,
    STOP,
    ClosedLoopPolicy,
    ClosedLoopResult,
    Decision,
    FixedPlanPolicy,
    StopAtTarget,
    simulate,
)
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.instances.generators import generate


@pytest.fixture(scope="module")
def vgg():
    return generate("realistic", family="pact-vgg11", loss_max=0.3)


@pytest.fixture(scope="module")
def plan(vgg):
    # L for 18 epochs, then M for 16, all on gold: one allowed switch (L→M)
    p = plan_from_choices(vgg, ["L"] * 18 + ["M"] * 16, ["gold"] * 34, {"gold": ["d0"]})
    assert p is not None
    return p


def test_fixed_plan_gives_the_static_evaluators_quantile_exactly(vgg, plan):
    ev = evaluate_plan(vgg, plan, samples=3000, seed=5, trajectory=False)
    res = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=3000, seed=5)
    s = res.summary()
    # same draws: the same order statistic, bit for bit, and the same interval
    assert s["loss_quantile"] == ev.quantile
    assert tuple(s["loss_quantile_ci"]) == tuple(ev.quantile_ci)
    assert s["violations"] == ev.violation_count
    assert s["cost"]["mean"] == pytest.approx(ev.cost, rel=1e-12)
    assert s["epochs"]["min"] == s["epochs"]["max"] == plan.n_epochs
    # another seed draws other losses
    other = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=3000, seed=6).summary()
    assert other["loss_quantile"] != s["loss_quantile"]


def test_too_few_runs_give_a_one_sided_loss_quantile_interval(vgg, plan):
    # 50 runs at ω = 0.99: no order statistic is an upper end at 0.95, so none is stated
    s = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=50, seed=0).summary()
    lo, hi = s["loss_quantile_ci"]
    assert hi == math.inf and lo <= s["loss_quantile"] and "one-sided lower bound" in s["loss_quantile_method"]
    assert s["loss_quantile_ci_level"] >= 0.95
    big = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=3000, seed=0).summary()
    assert math.isfinite(big["loss_quantile_ci"][1]) and big["loss_quantile_ci_level"] == 0.95
    assert "two-sided" in big["loss_quantile_method"]


def test_fixed_plan_matches_across_evaluator_blocks(vgg, plan):
    n = BLOCK + 500                       # two blocks, as the evaluator draws them
    ev = evaluate_plan(vgg, plan, samples=n, seed=1, trajectory=False)
    s = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=n, seed=1).summary()
    assert s["loss_quantile"] == ev.quantile and s["violations"] == ev.violation_count


def test_stopping_at_target_is_never_dearer_run_by_run(vgg, plan):
    full = simulate(vgg, FixedPlanPolicy(vgg, plan), runs=4000, seed=2)
    stop = simulate(vgg, StopAtTarget(FixedPlanPolicy(vgg, plan), vgg.loss_max), runs=4000, seed=2)
    # common random numbers: compare the same runs
    assert np.all(stop.cost <= full.cost + 1e-9)
    assert np.all(stop.epochs <= full.epochs)
    assert stop.cost.mean() < full.cost.mean()          # this plan often reaches ℓmax early
    # a run whose plan ends at ℓ(K) ≤ ℓmax has met ℓmax at some epoch: the stopped run succeeds too
    assert np.all(stop.success[full.success])
    assert stop.successes >= full.successes


class _Greedy(ClosedLoopPolicy):
    """Trains L on gold at full capacity until ℓ ≤ ℓmax (uses the observations)."""

    name = "greedy"

    def __init__(self, instance):
        self.instance = instance

    def datasets(self):
        return {"gold": ["d0"]}

    def decide(self, state):
        d = Decision.constant(state.size, 0, 0, self.instance.capacity[0])
        d.model[state.loss <= self.instance.loss_max] = STOP
        return d


def test_simulator_accounts_time_cost_and_success(vgg):
    res = simulate(vgg, _Greedy(vgg), runs=500, seed=0)
    s = res.summary()
    tau = vgg.model_compute[0] / vgg.capacity[0] + vgg.model_size[0] / vgg.bandwidth[0]
    np.testing.assert_allclose(res.time, res.epochs * tau)
    np.testing.assert_allclose(res.cost, res.epochs * vgg.capacity[0] * vgg.unit_cost[0])
    assert np.all(res.final_loss[res.success] <= vgg.loss_max)
    lo, hi = s["p_success_ci"]
    assert lo <= s["p_success"] <= hi and "Clopper" in s["p_success_method"]


def _runs(costs) -> ClosedLoopResult:
    n = len(costs)
    return ClosedLoopResult(policy="p", runs=n, seed=0, confidence=0.95, loss_max=0.3, omega=0.99,
                            time_max=300.0, final_loss=np.full(n, 0.2), cost=np.asarray(costs, float),
                            epochs=np.full(n, 30), time=np.full(n, 200.0), success=np.ones(n, bool),
                            deadline_missed=np.zeros(n, bool), horizon_hit=np.zeros(n, bool),
                            invalid=np.zeros(n, int))


def test_one_run_has_no_standard_error_and_it_travels_as_null(tmp_path):
    """A standard error needs two runs: one run's cost_sem is NaN (not computable), never 0,
    and the JSON writer, the results store and the report table carry it without crashing."""
    from deplbench.benchmarks.store import ResultsStore
    from deplbench.jsonio import dumps
    from deplbench.reports.closed_loop import closed_loop_table
    from deplbench.reports.data import prepare
    from tests.benchmarks.test_store import record

    assert _runs([100.0, 104.0]).summary()["cost_sem"] == pytest.approx(2.0)   # s = 2√2, /√2
    s = _runs([100.0]).summary()
    assert math.isnan(s["cost_sem"]) and s["cost"]["mean"] == 100.0
    out = json.loads(dumps(s))
    assert out["cost_sem"] is None and out["cost_sem_nonfinite"] == "nan"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.add(record("a", closed_loop={"plan": s, "plan_stopped": None, "policy": None}))
        df = store.frame()
    t = closed_loop_table(prepare(df).df)
    assert list(t["mode"]) == ["plan"] and t["cost_mean"].iloc[0] == 100.0
    assert pd.isna(t["cost_sem"].iloc[0])


def test_bad_arguments_name_the_field(vgg, plan):
    pol = FixedPlanPolicy(vgg, plan)
    for kwargs, field in ((dict(runs=1), "runs"), (dict(runs=True), "runs"), (dict(seed=-1), "seed"),
                          (dict(confidence=1.5), "confidence"), (dict(max_epochs=0), "max_epochs")):
        with pytest.raises(PlanError, match=f"^{field}:"):
            simulate(vgg, pol, **kwargs)


@pytest.mark.slow
def test_closed_loop_pact_differs_from_open_loop():
    """A short, loose case: PACT's per-step 0.95 robust estimates are far more
    pessimistic than what the runs realise, so observing the loss matters."""
    from deplbench.solvers.run import closed_loop, solve

    inst = generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0)
    common = dict(evaluate=False, check_samples=2000, scenarios=200, closed_loop_resolution=100)
    closed = solve(inst, "pact", mode="closed-loop", **common)
    opened = solve(inst, "pact", mode="open-loop", **common)
    assert closed.plan == opened.plan                    # the static plan does not depend on the mode
    a = closed_loop(inst, closed, runs=2000, seed=0)
    b = closed_loop(inst, opened, runs=2000, seed=0)
    assert b["policy"] is None                           # open loop: PACT's plan is a fixed policy
    drop = ("wall_s",)
    assert {k: v for k, v in a["plan"].items() if k not in drop} == \
        {k: v for k, v in b["plan"].items() if k not in drop}
    pol = a["policy"]
    assert pol["policy_info"]["replans"] > 1
    # closed-loop PACT spends less than its open-loop plan run to its end...
    assert pol["cost"]["mean"] < 0.9 * a["plan"]["cost"]["mean"]
    # ...and chooses other actions than that plan merely stopped at ℓmax
    assert abs(pol["cost"]["mean"] / a["plan_stopped"]["cost"]["mean"] - 1) > 0.05
    assert pol["p_success"] >= 0.99


@pytest.mark.slow
def test_depl_receding_is_registered_and_replans():
    from deplbench.solvers.registry import available
    from deplbench.solvers.run import closed_loop, solve

    assert "depl-receding" in available()
    inst = generate("realistic", family="pact-vgg11", horizon=30, loss_max=0.6, time_max=400.0)
    res = solve(inst, "depl-receding", evaluate=False, replan_every=5)
    assert res.status == "feasible"
    cl = closed_loop(inst, res, runs=1000, seed=0)
    info = cl["policy"]["policy_info"]
    assert info["replans"] >= 1
    # the re-planned sub-problem starts where the run is
    from deplbench.solvers.depl.receding import sub_instance

    sub = sub_instance(inst, 10, 1, 0.9, 150.0, ["gold"])
    assert sub.initial_loss == 0.9 and sub.time_max == pytest.approx(250.0) and sub.horizon == 20
    assert [m.name for m in sub.models] == ["M", "S"]    # L cannot be reached back from M
    assert sub.models[0].loss_offset == pytest.approx(inst.models[1].loss_offset + 10)


# --------------------------------------------------------------------------
# sweep option and record


def test_sweep_option_validated_with_named_fields():
    from deplbench.benchmarks.sweep import parse_sweep
    from deplbench.benchmarks.tasks import check_closed_loop, closed_loop_settings

    base = {"instances": [{"id": "p", "family": "realistic", "params": {"family": "pact-vgg11"}}],
            "algorithms": [{"name": "one-switch"}]}
    ok = parse_sweep({**base, "sweep": {"evaluation": {"closed_loop": {"runs": 100, "sets": ["p"]}}}})
    task = ok.tasks()[0].to_dict()
    assert closed_loop_settings(task)["runs"] == 100
    assert closed_loop_settings({**task, "instance_set": "other"}) is None
    for bad, field in (({"runs": 1}, "runs"), ({"rnus": 5}, "rnus"), ({"sets": "p"}, "sets"),
                       ({"confidence": 2}, "confidence")):
        with pytest.raises(SweepError, match=f"closed_loop.{field}"):
            parse_sweep({**base, "sweep": {"evaluation": {"closed_loop": bad}}})
    assert check_closed_loop({})["runs"] == 10_000
    # a misspelt set would simulate nothing, silently: refused at load, naming the entry and the sweep's sets
    with pytest.raises(SweepError) as exc:
        parse_sweep({**base, "sweep": {"evaluation": {"closed_loop": {"runs": 100, "sets": ["p", "pp"]}}}})
    assert str(exc.value) == "sweep.evaluation.closed_loop.sets[1]: unknown instance set 'pp' (the sweep's: 'p')"
    named = {**base, "instances": [{**base["instances"][0], "set": "fig5"}]}
    assert parse_sweep({**named, "sweep": {"evaluation": {"closed_loop": {"sets": ["fig5"]}}}})
    with pytest.raises(SweepError, match=r"sets\[0\]: unknown instance set 'p' \(the sweep's: 'fig5'\)"):
        parse_sweep({**named, "sweep": {"evaluation": {"closed_loop": {"sets": ["p"]}}}})


def test_task_record_carries_the_closed_loop_columns():
    from deplbench.benchmarks.record import TaskRecord
    from deplbench.benchmarks.sweep import parse_sweep
    from deplbench.benchmarks.tasks import run_task

    sweep = parse_sweep({
        "sweep": {"evaluation": {"samples": 1000, "closed_loop": {"runs": 300}}},
        "instances": [{"id": "p", "family": "realistic",
                       "params": {"family": "pact-vgg11", "horizon": 20, "time_max": 300.0},
                       "targets": {"loss_max": 0.8}}],
        "algorithms": [{"name": "one-switch", "params": {"scenarios": 100, "check_samples": 1000}}]})
    rec = run_task(sweep.tasks()[0].to_dict())
    assert rec["status"] == "feasible", rec.get("error")
    row = TaskRecord.from_mapping(rec)
    assert row.cl_mode == "plan" and row.cl_runs == 300
    assert row.cl_p_success_low <= row.cl_p_success <= row.cl_p_success_high
    assert row.cl_cost_mean == pytest.approx(rec["cost"])            # a fixed plan spends its cost
    assert row.closed_loop["plan_stopped"]["cost"]["mean"] <= row.cl_cost_mean


# --------------------------------------------------------------------------
# report


def _summary(cost_mean, p=1.0, sem=0.5):
    return {"runs": 1000, "p_success": p, "p_success_ci": [p - 0.01, p], "confidence": 0.95,
            "cost": {"mean": cost_mean, "q50": cost_mean, "q99": cost_mean}, "cost_sem": sem, "epochs": {"mean": 30.0},
            "time": {"mean": 900.0}, "loss_quantile": 0.1, "deadline_missed": 0, "policy_calls": 40,
            "wall_s": 0.1, "policy_info": {}}


def pact_frame(pact_closed=(1.01, 0.99), one_switch=1.05, adaptive=None, seeds=4) -> pd.DataFrame:
    """PACT-set records on ``seeds`` distinct instances per target (the claims
    need 6 for a 95 % interval on a median); ``adaptive`` = (LB factor, UB
    factor) of the optimum adds adaptive-opt records (reference "adaptive")
    on the same instances."""
    from deplbench.benchmarks.record import COLUMNS

    rows = []
    for lm, opt, seed in ((lm, opt, i) for lm, opt in ((0.15, 1500.0), (0.3, 880.0)) for i in range(seeds)):
        base = dict(sweep="t", family="realistic", instance_set="pact-vgg11", instance_sha=f"v-{lm}-{seed}",
                    instance_name="vgg", loss_max=lm, omega=0.99, n_models=3, horizon=100,
                    code_version="0", plan={"epochs": []}, status="feasible", quantile_oos=lm - 0.01,
                    verdict="feasible")
        f = pact_closed[0] if lm == 0.15 else pact_closed[1]
        for alg, exact, cost, pol in (("milp", True, opt, None), ("pact", False, 1.8 * opt, f * opt),
                                      ("static-learn", False, 1.5 * opt, None),
                                      ("one-switch", False, one_switch * opt, None)):
            cl = {"plan": _summary(cost, sem=0.0), "plan_stopped": _summary(0.93 * cost),
                  "policy": _summary(pol) if pol else None}
            rows.append({**base, "key": f"{alg}-{lm}-{seed}", "algorithm": alg, "exact": exact, "cost": cost,
                         "status": "optimal" if exact else "feasible", "closed_loop": cl,
                         "reference": "certified-static" if alg == "milp" else ""})
        if adaptive:
            lb, ub = adaptive[0] * opt, adaptive[1] * opt
            diag = {"p_success_lo": 0.991, "p_success": 0.995, "confidence": 0.95,
                    "frontier": [{"omega": 0.9, "lower_bound": 0.9 * lb}, {"omega": 0.99, "lower_bound": lb},
                                 {"omega": 0.999, "lower_bound": 1.02 * lb}]}
            pol = _summary(ub, p=0.995)
            rows.append({**base, "key": f"adaptive-{lm}-{seed}", "algorithm": "adaptive-opt", "exact": False,
                         "cost": ub, "lower_bound": lb, "status": "feasible", "plan": None,
                         "reference": "adaptive", "diagnostics": diag,
                         "closed_loop": {"plan": None, "plan_stopped": None, "policy": pol}})
    return pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], columns=list(COLUMNS))


@pytest.mark.slow
def test_pact_claim_rows_flip_with_the_data():
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.data import prepare

    def rows(frame):
        return {r["claim"].split(" — ")[1].split(" ")[0]: r for r in claims_mod.pact_claims(prepare(frame).df)}

    r = rows(pact_frame())
    assert list(r) == ["against", "open", "closed"]                   # the matched-risk row first
    assert r["open"]["verdict"] == claims_mod.FAILS                   # +80 %
    assert "superseded" in r["closed"]["claim"] and "static" in r["open"]["claim"]
    # closed-loop PACT's mean against static plans held to a quantile: never judged, whatever the data
    for f in (pact_frame(), pact_frame(pact_closed=(1.10, 1.08)), pact_frame(one_switch=1.01)):
        assert rows(f)["closed"]["verdict"] == claims_mod.NOT_APPLICABLE
    tie = rows(pact_frame(one_switch=1.01))["closed"]                 # OneSwitch as cheap as PACT: described
    assert "vs OneSwitch's plan: median" in tie["measured"]
    assert rows(pact_frame(seeds=1))["open"]["verdict"] == claims_mod.NOT_DECIDED  # 2 instances


@pytest.mark.slow
def test_report_shows_the_closed_loop_table_and_the_pact_claim(tmp_path):
    from deplbench.reports.build import ReportOptions, build_report

    summary = build_report(pact_frame(), tmp_path, options=ReportOptions(scale=0.4, dpi=40,
                                                                         formats=("png",)))
    assert not summary.errors
    assert "closed_loop" in summary.tables and "pact_comparison" in summary.tables
    assert "pact_fig6_left" in summary.figures
    t = pd.read_csv(tmp_path / "tables" / "closed_loop.csv")
    assert set(t["mode"]) == {"plan", "plan_stopped", "policy"}
    assert {"static_cost", "cost_mean", "p_success_low"} <= set(t.columns)   # static beside closed loop
    claims = summary.claims.set_index("claim")
    pact_rows = [c for c in claims.index if c.startswith("PACT Fig. 6")]
    assert len(pact_rows) == 3 and "adaptive optimum" in pact_rows[0] and "superseded" in pact_rows[2]
    assert claims.loc[pact_rows[2], "verdict"] == "not applicable (mean vs quantile)"
    glance = pd.read_csv(tmp_path / "tables" / "glance_claims.csv")
    shown = [c for c in glance["claim"] if c.startswith("PACT Fig. 6")]
    assert len(shown) == 2 and not any("superseded" in c for c in shown)     # never the PACT verdict there
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "Closed-loop evaluation" in html


def test_pact_claim_against_the_adaptive_optimum_flips_with_the_bracket():
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.adaptive import matched_risk_table, price_of_adaptivity
    from deplbench.reports.data import prepare

    def row(frame):
        return claims_mod.pact_claims(prepare(frame).df)[0]

    assert row(pact_frame())["verdict"] == claims_mod.UNMEASURED          # no adaptive record
    # PACT at 1.01 / 0.99 × opt, P(success) 1.0: within 2 % of LB = 0.995 × opt → holds
    r = row(pact_frame(adaptive=(0.995, 1.0)))
    assert r["verdict"] == claims_mod.HOLDS and "true loss evolution" in r["paper_says"]
    # the optimum's LB at 0.8 × opt, certified policy at 0.9 × opt: PACT ≥ 10 % dearer → fails
    assert row(pact_frame(adaptive=(0.8, 0.9)))["verdict"] == claims_mod.FAILS
    # a wide bracket that cannot decide: the interval on the median contains the threshold
    assert row(pact_frame(adaptive=(0.8, 1.0)))["verdict"] == claims_mod.NOT_DECIDED
    # matched risk: PACT certified at P(success) ≥ 0.99; an adaptive policy certified only at
    # ≥ 0.985 is no upper bound there, however cheap
    low = pact_frame(adaptive=(0.8, 0.9))
    for d in low["diagnostics"]:
        if d:
            d["p_success_lo"] = 0.985
    r = row(low)
    assert r["verdict"] == claims_mod.NOT_DECIDED
    assert "on 8 instance(s) no adaptive policy is certified at PACT's level" in r["measured"]
    assert row(pact_frame(adaptive=(0.8, 0.9)))["measured"].startswith(
        "8 distinct instances: PACT's excess over the adaptive optimum at its certified P(success) (0.9900–0.9900)")
    df = prepare(pact_frame(adaptive=(0.8, 0.9), seeds=1)).df
    m = matched_risk_table(df)
    pol = m[(m["algorithm"] == "pact") & (m["series"] == "policy")]
    assert len(pol) == 2
    # own level: the lower end 0.99 of the interval on p = 1.0 (not the estimate 1.0, whose frontier
    # bound at 0.999 is no bound at the true level); at ω the ratio lies in [cost/UB, cost/LB]
    r15 = pol[pol["loss_max"] == 0.15].iloc[0]
    assert r15["lb_own"] == pytest.approx(0.8 * 1500.0) and r15["p_success_low"] == pytest.approx(0.99)
    assert r15["ratio_omega_low"] == pytest.approx(1.01 / 0.9) and r15["ratio_omega_high"] == pytest.approx(1.01 / 0.8)
    price = price_of_adaptivity(df)
    assert list(price["static_reference"]) == ["certified-static (UB of its bracket)"] * 2
    assert price["price_low"].tolist() == pytest.approx([1 / 0.9] * 2)


def test_report_section_6_shows_the_frontier_and_the_matched_risk_table(tmp_path):
    from deplbench.reports.build import ReportOptions, build_report

    summary = build_report(pact_frame(adaptive=(0.9, 0.95)), tmp_path,
                           options=ReportOptions(scale=0.4, dpi=40, formats=("png",)))
    assert not summary.errors
    assert "matched_risk" in summary.tables and "price_of_adaptivity" in summary.tables
    assert "adaptive_frontier" in summary.figures
    t = pd.read_csv(tmp_path / "tables" / "matched_risk.csv")
    assert {"pact", "static-learn", "one-switch", "milp", "adaptive-opt"} <= set(t["algorithm"])


def test_cli_simulate_json_and_bad_input(tmp_path, capsys):
    import json

    from deplbench.cli import main

    path = tmp_path / "vgg.json"
    generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0).save(path)
    assert main(["simulate", str(path), "--algorithm", "one-switch", "--runs", "300", "--eval-samples", "500",
                 "--param", "scenarios=100", "--param", "check_samples=500", "--json"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)                          # exactly one JSON object on stdout
    assert data["closed_loop"]["plan"]["runs"] == 300 and data["closed_loop"]["policy"] is None
    assert data["closed_loop"]["plan"]["cost"]["mean"] == pytest.approx(data["static"]["cost"])
    for argv, field in ((["--runs", "1"], "--runs"), (["--confidence", "2"], "--confidence"),
                        (["--seed", "-3"], "--seed")):
        assert main(["simulate", str(path), "--algorithm", "one-switch", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and field in err


def test_fig6_left_splits_more_than_six_algorithms_into_panels():
    from deplbench.reports.closed_loop import CLOSED_LOOP_COLUMNS, fig6_left
    from deplbench.reports.figures import MAX_SERIES

    algs = [f"alg{i}" for i in range(MAX_SERIES + 1)]
    rows = [{**dict.fromkeys(CLOSED_LOOP_COLUMNS), "set": "pact-vgg11", "loss_max": lm, "algorithm": a,
             "mode": "plan", "static_cost": 100.0 + i + lm} for i, a in enumerate(algs) for lm in (0.15, 0.3)]
    fig = fig6_left(pd.DataFrame(rows, columns=list(CLOSED_LOOP_COLUMNS)), {}, 0.4)
    panels = [ax for ax in fig.axes if ax.lines]
    assert len(panels) == 2 and all(len(ax.lines) <= MAX_SERIES for ax in panels)


def test_fig6_left_draws_no_error_bar_without_a_standard_error():
    """A closed-loop point whose cost_sem is not computable (one run) gets no bar, not one of width 0."""
    import math

    from matplotlib.collections import LineCollection

    from deplbench.reports.closed_loop import CLOSED_LOOP_COLUMNS, fig6_left

    rows = [{**dict.fromkeys(CLOSED_LOOP_COLUMNS), "set": "pact-vgg11", "loss_max": lm, "algorithm": "pact",
             "mode": "policy", "cost_mean": 100.0, "cost_sem": sem} for lm, sem in ((0.15, math.nan), (0.3, 2.0))]
    fig = fig6_left(pd.DataFrame(rows, columns=list(CLOSED_LOOP_COLUMNS)), {}, 0.4)
    bars = [c for ax in fig.axes for c in ax.collections if isinstance(c, LineCollection)]
    assert len(bars) == 1
    segments = bars[0].get_segments()
    drawn = [seg for seg in segments if len(seg)]
    assert len(segments) == 2 and len(drawn) == 1
    assert float(drawn[0][1][1] - drawn[0][0][1]) == pytest.approx(2 * 1.96 * 2.0)     # ± 1.96 s.e.


def test_closed_loop_quantiles_keep_infinite_values_infinite():
    from deplbench.formulations.evaluation.quantile_ci import sample_quantile as _quantile

    inf = np.inf
    for a, q in [([1.0, 2.0, 3.0, 4.0], 0.5), ([0.5, 7.0, 2.0], 0.9), ([3.0], 0.1)]:
        assert _quantile(np.array(a), q) == float(np.quantile(a, q))      # finite: numpy's own number
    assert _quantile(np.array([inf, inf, inf]), 0.5) == inf
    assert _quantile(np.array([1.0, inf]), 0.5) == inf
    assert _quantile(np.array([1.0, 2.0, inf]), 0.25) == 1.5
    assert _quantile(np.array([1.0, 2.0, inf]), 0.5) == 2.0
    assert _quantile(np.array([-inf, 1.0]), 0.5) == -inf
