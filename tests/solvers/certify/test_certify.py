"""The certified bracket (solvers/certify/certified.py) and the evaluator's certified verdict.

References are independent of the code under test: the covering DP for
knapsack-derived instances, brute force over 10⁵ scenarios for tiny
stochastic ones, and the Clopper–Pearson definition for the verdicts.
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from deplbench.errors import SolverError
from deplbench.formulations.evaluation.binomial import CERTIFIED_FEASIBLE, clopper_pearson_upper
from deplbench.formulations.evaluation.evaluate import evaluate_plan, plan_indices, simulate_trajectories
from deplbench.formulations.exact.knapsack import knapsack_optimum_from_instance
from deplbench.instances.generators import generate
from deplbench.solvers.certify import tasks as certified_tasks
from deplbench.solvers.certify.certified import certify, process_map
from deplbench.solvers.certify.refine import predicted_certifiable, select_for_refinement, split_beta
from deplbench.solvers.run import solve

#: A budget, not a limit: tiny instances solve in well under a second, so the
#: results never depend on the machine's speed (a 5 s limit could be hit on a
#: loaded machine and change the bracket).
FAST = dict(time_limit=600.0)


# ------------------------------------------------------------- deterministic


@pytest.mark.parametrize("item_class,seed", [("uncorrelated", 0), ("strongly", 1), ("subset-sum", 2)])
def test_knapsack_bracket_collapses_to_dp_optimum(item_class, seed):
    inst = generate("knapsack", n_items=6, horizon=6, item_class=item_class, seed=seed)
    opt = knapsack_optimum_from_instance(inst)
    b = certify(inst, replications=4, scenarios=50, validation=1000, **FAST)
    assert b["exact"] and b["status"] == "bracket"
    assert b["lower_bound"]["value"] == pytest.approx(opt, rel=1e-6)
    assert b["upper_bound"]["value"] == pytest.approx(opt, rel=1e-6)
    assert b["width"] <= 1e-6
    assert b["lower_bound"]["confidence"] == 1.0 and b["confidence"] == 1.0


def test_milp_certified_algorithm_on_deterministic_instance():
    inst = generate("knapsack", n_items=5, horizon=5, seed=3)
    opt = knapsack_optimum_from_instance(inst)
    res = solve(inst, "milp-certified", replications=2, scenarios=10, validation=500, time_limit=600.0,
                eval_samples=1000)
    assert res.status == "feasible"
    assert res.cost == pytest.approx(opt, rel=1e-6)
    assert res.lower_bound == pytest.approx(opt, rel=1e-6)
    assert res.diagnostics["bracket"]["status"] == "bracket"
    assert res.evaluation["certified_verdict"] == CERTIFIED_FEASIBLE
    json.dumps(res.to_dict())  # the record is JSON-ready


# ------------------------------------------------------------- stochastic


def _boundary_instance(seed, level=0.905):
    """A tiny stochastic instance whose optimal plan P sits near the chance
    constraint's edge (violation ≈ 1 − ``level``, ω = 0.9): SAA replications
    then disagree on whether P is feasible, so the order statistic matters."""
    base = generate("scaling", n_models=3, n_clusters=1, horizon=6, omega=0.9, seed=seed)
    inst0 = base.with_changes(loss_max=float(base.initial_loss - 0.5))
    plan = solve(inst0, "brute-force", scenarios=2000, evaluate=False).plan
    m, _, g = plan_indices(inst0, plan)
    finals = simulate_trajectories(inst0, m, g, 400_000, np.random.default_rng(12345))[:, -1]
    return base.with_changes(loss_max=float(np.quantile(finals, level)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_lb_below_near_exact_optimum_and_every_certified_plan(seed):
    inst = _boundary_instance(seed)
    # Near-exact reference: the exhaustive optimum over 10^5 scenarios.
    ref = solve(inst, "brute-force", scenarios=100_000, seed=99, evaluate=False)
    assert ref.status == "optimal"
    # one stage (target_width=0): the whole β_L = 0.025 goes to this LB
    b = certify(inst, replications=8, scenarios=200, validation=20_000, risk_grid=(), target_width=0, **FAST)
    lb = b["lower_bound"]["value"]
    assert b["lower_bound"]["order"] == 2 and b["lower_bound"]["confidence"] == pytest.approx(0.975)
    assert len(b["stages"]) == 1 and b["beta"]["lower_stages"] == [pytest.approx(0.025), 0.0]
    # the replications disagree, so the test exercises the order statistic
    assert len({round(v, 6) for v in b["saa_optima"]}) > 1
    assert lb <= ref.cost * (1 + 1e-9)
    certified = [c for c in b["candidates"] if c["certified"]]
    assert certified and all(lb <= c["cost"] * (1 + 1e-9) for c in certified)
    assert b["upper_bound"]["value"] == min(c["cost"] for c in certified)
    # the UB plan really meets the chance constraint on fresh, larger draws
    from deplbench.formulations.model.plan import parse_plan
    ev = evaluate_plan(inst, parse_plan(b["upper_bound"]["plan"]), samples=200_000, seed=4242, trajectory=False)
    assert ev.violation_count / ev.samples <= 1 - inst.omega + 0.003


def test_plan_missing_lmax_out_of_sample_is_never_certified():
    # P now violates with probability ≈ 0.12 > 1 − ω: SAA optima on 20
    # scenarios (2 may be violated) often pick it anyway and miss ℓmax.
    inst = _boundary_instance(0, level=0.88)
    missed = 0
    for s in range(6):
        plan = solve(inst, "brute-force", scenarios=20, seed=s, evaluate=False).plan
        if plan is None:
            continue
        ev = evaluate_plan(inst, plan, samples=20_000, seed=7, trajectory=False)
        if ev.verdict == "infeasible" or ev.quantile > inst.loss_max:
            missed += 1
            assert ev.certified_verdict != CERTIFIED_FEASIBLE
            assert ev.violation_ub > 1 - inst.omega
    assert missed >= 1  # the check above ran on at least one failing plan


def test_evaluation_certificate_matches_clopper_pearson():
    inst = _boundary_instance(2)
    plan = solve(inst, "brute-force", scenarios=500, seed=1, evaluate=False).plan
    ev = evaluate_plan(inst, plan, samples=5000, seed=3, confidence=0.9, trajectory=False)
    m, _, g = plan_indices(inst, plan)
    assert ev.violation_ub == pytest.approx(clopper_pearson_upper(ev.violation_count, 5000, 0.9))
    assert ev.violation_ub_level == 0.9
    assert ev.violation_lb <= ev.violation_count / 5000 <= ev.violation_ub


def test_process_map_gives_the_same_bracket():
    inst = generate("knapsack", n_items=5, horizon=5, seed=4)
    seq = certify(inst, replications=2, scenarios=5, validation=200, **FAST)
    par = certify(inst, replications=2, scenarios=5, validation=200, map=process_map(2), **FAST)
    assert par["lower_bound"]["value"] == seq["lower_bound"]["value"]
    assert par["upper_bound"]["value"] == seq["upper_bound"]["value"]


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs,field", [
    (dict(confidence=1.2), "confidence"),
    (dict(confidence=0.001), "confidence"),            # a one-sided bound below its own estimate
    (dict(replications=0), "replications"),
    (dict(validation=10), "validation"),
    (dict(risk_grid=(1.5,)), "risk_grid"),
    (dict(time_limit=-1.0), "time_limit"),
    (dict(grid_seeds=0), "grid_seeds"),
    (dict(target_width=-0.1), "target_width"),
    (dict(target_width=1.0), "target_width"),
    (dict(refine_share=0.0), "refine_share"),
    (dict(refine_validation=10), "refine_validation"),
    (dict(validation=10**15), "validation"),           # beyond the evaluator's memory: refused up front
    (dict(refine_validation=10**15), "refine_validation"),
    (dict(refine_candidates=0), "refine_candidates"),
    (dict(refine_scenarios=-1), "refine_scenarios"),       # 0, like none, means 10·S
    # S whose scenario arrays exceed the memory budget on any instance: refused before any solve
    (dict(scenarios=10**12), "scenarios"),
    (dict(scenarios=10**7), "scenarios"),                  # S₂ = 10·S, when stage 2 may run
    (dict(scenarios=100, refine_scenarios=10**9), "refine_scenarios"),
    (dict(refine_replications=0), "refine_replications"),
    (dict(refine_risk_grid=(0.0,)), "refine_risk_grid"),
])
def test_bad_arguments_name_the_field(kwargs, field):
    inst = generate("knapsack", n_items=4, horizon=4, seed=0)
    with pytest.raises(SolverError, match=f"^parameter {field!r}:"):
        certify(inst, **kwargs)


def test_cli_json_and_bad_option(tmp_path, capsys):
    from deplbench.cli import main

    path = tmp_path / "k.json"
    generate("knapsack", n_items=4, horizon=4, seed=0).save(path)
    code = main(["certify", str(path), "--json", "--replications", "2", "--scenarios", "5",
                 "--validation", "200", "--time-limit", "600"])
    out = capsys.readouterr().out
    record = json.loads(out)  # exactly one JSON object
    assert code == 0 and record["status"] == "bracket"
    assert record["lower_bound"]["value"] == pytest.approx(record["upper_bound"]["value"], rel=1e-6)
    code = main(["certify", str(path), "--replications", "0"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip().count("\n") == 0 and "replications" in captured.err
    code = main(["certify", str(path), "--refine-share", "1.5"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip().count("\n") == 0 and "--refine-share 1.5: must be < 1.0" in captured.err
    assert not math.isnan(record["width"])


@pytest.mark.parametrize("args, field", [
    (["--validation", str(10**15)], "validation"),
    (["-o", "DIR"], "-o"),
    (["-o", "DIR/missing/b.json"], "-o"),
    # the instance itself: the bracket's JSON would replace it once the bracket is done
    (["-o", "INSTANCE"], "is the input"),
    (["--with", "depl,nope"], "--with depl,nope: unknown algorithm 'nope'"),
    (["--with", "milp-certified"], "--with milp-certified: 'milp-certified' cannot be its own candidate"),
    # a stray comma is a typo, not a list with fewer candidates
    (["--with", ","], "--with ,: an empty name in the list"),
    (["--with", ", "], "--with , : an empty name in the list"),
    (["--with", "depl,,best-exp"], "--with depl,,best-exp: an empty name in the list"),
    (["--with", "depl,"], "--with depl,: an empty name in the list"),
])
def test_cli_refuses_what_it_can_check_before_solving(tmp_path, capsys, monkeypatch, args, field):
    """--validation 1e15 and an -o that cannot be written are refused before any
    SAA solve (planted: a solve raises), not after the bracket is computed
    (32–70 s), and --validation is named as given, not "samples"."""
    from deplbench.cli import main
    from deplbench.instances.model import load_instance
    from deplbench.solvers.certify import certified

    path = tmp_path / "k.json"
    generate("knapsack", n_items=4, horizon=4, seed=0).save(path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")

    def no_solve(*a, **k):
        raise AssertionError("a solve started before the arguments were checked")

    monkeypatch.setattr(certified, "candidate_plans", no_solve)
    monkeypatch.setattr(certified, "certify", no_solve)
    argv = [a.replace("DIR", str(tmp_path / "full")).replace("INSTANCE", str(path)) for a in args]
    code = main(["certify", str(path), "--replications", "2", "--scenarios", "5", *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "", captured
    assert captured.err.strip().count("\n") == 0 and field in captured.err
    assert load_instance(path).name.startswith("knapsack")      # the instance file is intact


@pytest.mark.parametrize("given", [[], ["--with", ""], ["--with", " "]])
def test_cli_with_nothing_names_no_candidate(tmp_path, capsys, monkeypatch, given):
    """``--with ""`` (the default) is no candidate algorithm, as leaving the option out is; only an
    empty name inside a list (``a,,b``) is refused."""
    from deplbench.cli import main
    from deplbench.solvers.certify import certified

    path = tmp_path / "k.json"
    generate("knapsack", n_items=4, horizon=4, seed=0).save(path)
    seen = []
    monkeypatch.setattr(certified, "certify", lambda inst, settings, candidates, map: seen.append(candidates)
                        or {"status": "bracket"})
    assert main(["certify", str(path), "--json", "--quiet", *given]) == 0
    assert seen == [{}] and json.loads(capsys.readouterr().out) == {"status": "bracket"}


def test_solver_parameter_algorithms_refuses_an_empty_name_as_certify_with_does():
    from deplbench.solvers.certify.certified import MilpCertified

    param = MilpCertified.parameters["algorithms"]
    assert param.convert("algorithms", "") == "" and param.convert("algorithms", "depl, best-exp") == "depl, best-exp"
    for value in (",", "depl,,best-exp", " ,depl"):
        with pytest.raises(SolverError, match="^parameter 'algorithms': an empty name in the list"):
            param.convert("algorithms", value)


# ------------------------------------------------------------- report section


def _frame_rows():
    """A prepared-frame stand-in: one AlexNet instance with a bracket
    [900, 1000], DepL certified at 1010, best-exp certified at 1500, the SAA
    MILP plan (cost 950) not certified; a second instance without bracket."""
    bracket = {"status": "bracket", "confidence": 0.95,
               "lower_bound": {"value": 900.0, "confidence": 0.975, "method": "order statistic"},
               "upper_bound": {"value": 1000.0, "method": "Clopper-Pearson"}}
    base = dict(paper_set="alexnet", instance_set="alexnet", family="realistic", loss_max=9.0,
                has_plan=True, params_d={}, scenarios=None, lower_bound=None, diagnostics_d={},
                is_exact=False, reference_priority=100, reference="")
    return [
        {**base, "solver": "milp-certified", "algorithm": "milp-certified", "instance_key": "a",
         "cost": 1000.0, "lower_bound": 900.0, "status": "feasible", "certified_verdict": "certified feasible",
         "diagnostics_d": {"bracket": bracket}},
        {**base, "solver": "depl", "algorithm": "depl", "instance_key": "a", "cost": 1010.0,
         "status": "feasible", "certified_verdict": "certified feasible"},
        {**base, "solver": "best-exp", "algorithm": "best-exp", "instance_key": "a", "cost": 1500.0,
         "status": "feasible", "certified_verdict": "certified feasible"},
        {**base, "solver": "milp", "algorithm": "milp", "instance_key": "a", "cost": 950.0,
         "status": "optimal", "certified_verdict": "certified infeasible", "scenarios": 1000,
         "is_exact": True, "reference_priority": 2, "reference": "saa"},
        # an exact SAA optimum on fewer scenarios (a looser SAA): not the yardstick
        {**base, "solver": "brute-force", "algorithm": "brute-force", "instance_key": "a", "cost": 940.0,
         "status": "optimal", "certified_verdict": "certified infeasible", "scenarios": 500,
         "is_exact": True, "reference_priority": 1, "reference": "saa"},
        {**base, "solver": "depl", "algorithm": "depl", "instance_key": "b", "cost": 5.0,
         "status": "feasible", "certified_verdict": "certified feasible"},
    ]


def test_bracket_report_ratios_and_rejudged_claims():
    import pandas as pd

    from deplbench.reports import bracket as rb
    from deplbench.reports.claims import FAILS, HOLDS, NOT_DECIDED

    df = pd.DataFrame(_frame_rows())
    sec = rb.bracket_section(df)
    br = sec["brackets"]
    assert list(br["instance_key"]) == ["a"]
    assert br.loc[0, "width"] == pytest.approx(0.1)
    ratios = sec["ratios"].set_index("algorithm")
    assert ratios.loc["depl", "cost_over_ub"] == pytest.approx(1.01)
    assert ratios.loc["depl", "cost_over_lb"] == pytest.approx(1010 / 900)
    assert ratios.loc["depl", "cost_over_saa_opt"] == pytest.approx(1010 / 950)
    # the SAA optimum is found by what the record declares, not by the name "milp"
    renamed = df.replace({"solver": {"milp": "my-saa"}, "algorithm": {"milp": "my-saa"}})
    again = rb.bracket_section(renamed)["ratios"].set_index("algorithm")
    assert again.loc["depl", "cost_over_saa_opt"] == pytest.approx(1010 / 950)
    undeclared = df.assign(reference="")
    assert math.isnan(rb.bracket_section(undeclared)["ratios"].set_index("algorithm")
                      .loc["depl", "cost_over_saa_opt"])
    # the SAA plan is not certified feasible: listed, never compared
    assert math.isnan(ratios.loc["milp", "cost_over_ub"]) and ratios.loc["milp", "certified_verdict"] == \
        "certified infeasible"
    claims = sec["claims"].set_index("claim")
    match = claims.loc["Figs. 5–6: DepL virtually matches the optimum"]
    # one distinct instance: no 95 % interval on a median, so nothing is decided
    assert match["verdict"] == NOT_DECIDED and "1 distinct instances" in match["measured"]
    beats = claims.loc["Figs. 5–6: DepL beats best-exp by over 27 %"]
    assert beats["verdict"] == NOT_DECIDED and "32.7 %" in beats["measured"]  # 1 − 1010/1500

    def population(rows, n=6):
        """Instance "a" copied to n distinct instances (b untouched)."""
        out = [r for r in rows if r["instance_key"] != "a"]
        for i in range(n):
            out += [{**r, "instance_key": f"a{i}"} for r in rows if r["instance_key"] == "a"]
        return pd.DataFrame(out)

    # six instances with gap in [1 %, 12.2 %]: the interval straddles 2 %
    m1 = rb.rejudged_claims(population(_frame_rows())).set_index("claim")
    assert m1.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == NOT_DECIDED
    assert m1.loc["Figs. 5–6: DepL beats best-exp by over 27 %", "verdict"] == HOLDS
    # a tighter bracket decides the first claim
    rows = _frame_rows()
    rows[0]["lower_bound"] = 995.0
    m2 = rb.rejudged_claims(population(rows)).set_index("claim")
    assert m2.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == HOLDS
    # six certified brackets at their confidence: the interval's level is the union bound
    assert "jointly" in m2.loc["Figs. 5–6: DepL virtually matches the optimum", "measured"]
    rows[1]["cost"] = 1100.0   # 10 % above UB: fails whatever z* is in the bracket
    m3 = rb.rejudged_claims(population(rows)).set_index("claim")
    assert m3.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == FAILS


def test_bracket_report_without_brackets_is_unmeasured():
    import pandas as pd

    from deplbench.reports import bracket as rb
    from deplbench.reports.claims import UNMEASURED

    df = pd.DataFrame(_frame_rows()[1:])
    sec = rb.bracket_section(df)
    assert sec["brackets"].empty and sec["ratios"].empty
    assert set(sec["claims"]["verdict"]) == {UNMEASURED}


def test_infeasible_deterministic_instance_is_reported_not_bracketed():
    inst = generate("knapsack", n_items=4, horizon=4, seed=0)
    # ℓmax far below what K̄ epochs of the best item can reach
    impossible = inst.with_changes(loss_max=float(inst.initial_loss) - 1e6)
    b = certify(impossible, replications=2, scenarios=5, validation=200, **FAST)
    assert b["status"] == "infeasible" and b["upper_bound"] is None
    res = solve(impossible, "milp-certified", replications=2, scenarios=5, validation=200, time_limit=5.0)
    assert res.status == "infeasible" and res.plan is None and "infeasible" in res.message


# ------------------------------------------------------------- stage 2 (refinement)


def test_beta_split_sums_to_beta_and_reserves_nothing_without_refinement():
    b = split_beta(0.95, 0.5, 0.5, refining=True)
    assert b["lower_stages"] == [pytest.approx(0.0125), pytest.approx(0.0125)]
    assert b["upper_stages"] == [pytest.approx(0.0125), pytest.approx(0.0125)]
    assert sum(b["lower_stages"]) + sum(b["upper_stages"]) == pytest.approx(0.05)
    b = split_beta(0.9, 0.3, 0.25, refining=True)
    assert b["lower_stages"] == [pytest.approx(0.0225), pytest.approx(0.0075)]
    assert b["upper_stages"] == [pytest.approx(0.0525), pytest.approx(0.0175)]
    # stage 2 impossible: stage 1 gets the whole β
    b = split_beta(0.95, 0.5, 0.5, refining=False)
    assert b["lower_stages"] == [pytest.approx(0.025), 0.0] and b["upper_stages"] == [pytest.approx(0.025), 0.0]


def test_predicted_certifiable_hand_values():
    # 0 of N′₁ scales to 0 of N′₂: p̄ = 1 − β^(1/N′₂); 1 − 0.01^(1/1000) = 0.0046 ≤ 0.01
    assert predicted_certifiable(0, 1000, 1000, 0.01, 0.99)
    # 0.95 % on 10⁶ draws: p̄ ≈ 0.0095 + 2.33·√(0.0095·0.9905/10⁶) ≈ 0.00973 ≤ 0.01
    assert predicted_certifiable(1900, 200_000, 1_000_000, 0.01, 0.99)
    # 1.0 % cannot be certified ≤ 1 % by any number of draws
    assert not predicted_certifiable(2000, 200_000, 1_000_000, 0.01, 0.99)


def test_selection_keeps_cheap_plausible_plans_only():
    def cand(cost, v, ok=True, certified=False):
        return {"cost": cost, "violation_count": v, "draws": 200_000, "constraints_ok": ok,
                "certified": certified}
    pool = [cand(90, 1900), cand(80, 2400), cand(95, 1000), cand(85, 1500, ok=False), cand(70, 100, certified=True),
            cand(120, 0), cand(99, 1800)]
    chosen = select_for_refinement(pool, 100.0, 0.01, 1_000_000, 0.0125, max_tests=2)
    # 80 (1.2 %) cannot be certified, 85 breaks (4)–(6), 70 is certified, 120 is dearer than UB
    assert [c["cost"] for c in chosen] == [90, 95]
    assert [c["cost"] for c in select_for_refinement(pool, None, 0.01, 1_000_000, 0.0125, 10)] == [90, 95, 99, 120]


@pytest.mark.slow
def test_forced_second_stage_keeps_every_statement_valid():
    """Stage 2 forced (target width 0.1 %): LB = the larger stage LB and still
    below the near-exact optimum and every certified plan; stage-2 seeds and
    draws are disjoint from stage 1's; every certified plan meets the chance
    constraint on 2·10⁵ further draws."""
    from deplbench.formulations.model.plan import parse_plan

    inst = _boundary_instance(1)
    ref = solve(inst, "brute-force", scenarios=100_000, seed=99, evaluate=False)
    b = certify(inst, replications=8, scenarios=100, validation=5_000, risk_grid=(0.8,), grid_seeds=1,
                target_width=0.001, refine_replications=8, refine_scenarios=300, refine_validation=100_000,
                refine_candidates=3, refine_risk_grid=(0.9,), refine_grid_seeds=1, **FAST)
    st1, st2 = b["stages"]
    assert st2["ran"] and st2["scenarios"] == 300
    assert b["beta"]["lower_stages"] == [pytest.approx(0.0125), pytest.approx(0.0125)]
    assert b["lower_bound"]["confidence"] == pytest.approx(0.975) and b["confidence"] == 0.95
    lbs = [s["value"] for s in b["lower_bound"]["stages"]]
    assert b["lower_bound"]["value"] == max(v for v in lbs if v is not None)
    assert [s["confidence"] for s in b["lower_bound"]["stages"]] == [pytest.approx(0.9875)] * 2
    lb = b["lower_bound"]["value"]
    assert lb <= ref.cost * (1 + 1e-9)
    seeds1 = {r["seed"] for r in b["replications"] if r["stage"] == 1}
    seeds2 = {r["seed"] for r in b["replications"] if r["stage"] == 2}
    assert len(seeds1) == 8 and len(seeds2) == 8 and not seeds1 & seeds2
    tests1 = [c for c in b["candidates"] if c["test"] == "stage 1"]
    tests2 = [c for c in b["candidates"] if c["test"] == "stage 2"]
    assert 1 <= len(tests2) == st2["tests"] <= 3
    # The optimal plan P violates with probability ≈ 0.095 < 0.1: 5000 draws
    # cannot certify it (stage 1 keeps a dearer plan), 10⁵ fresh draws can.
    assert st1["upper"] is not None and b["upper_bound"]["test"] == "stage 2"
    assert b["upper_bound"]["value"] < st1["upper"]
    c1seed = tests1[0]["validation_seed"]
    c2seed = c1seed + 1
    assert all(c["validation_seed"] == c1seed for c in tests1)
    assert all(c["test_confidence"] == pytest.approx(1 - 0.0125 / len(tests1)) for c in tests1)
    assert all(c["test_confidence"] == pytest.approx(1 - 0.0125 / len(tests2)) for c in tests2)
    for c in tests2:   # on N′₂ fresh draws, Bonferroni within stage 2
        assert c["draws"] == 100_000 and c["validation_seed"] == c2seed
    certified = [c for c in b["candidates"] if c["certified"]]
    assert all(c["test"] in ("stage 1", "stage 2") for c in certified)  # screens never certify
    assert all(lb <= c["cost"] * (1 + 1e-9) for c in certified)
    if b["upper_bound"] is not None:
        assert b["upper_bound"]["value"] == min(c["cost"] for c in certified)
        assert b["upper_bound"]["confidence"] == pytest.approx(0.975)
    if b["upper_bound"] is not None:
        ev = evaluate_plan(inst, parse_plan(b["upper_bound"]["plan"]), samples=200_000, seed=4243,
                           trajectory=False)
        assert ev.violation_count / ev.samples <= 1 - inst.omega + 0.003
    assert len(tests1) == st1["tests"]


@pytest.mark.slow
def test_stage_two_skipped_when_stage_one_meets_the_target():
    inst = _boundary_instance(2)
    b = certify(inst, replications=6, scenarios=100, validation=5_000, risk_grid=(0.8,), grid_seeds=1,
                target_width=0.99, **FAST)
    assert b["status"] == "bracket" and b["width"] <= 0.99
    assert b["stages"][1]["ran"] is False
    # the reserved share stays reserved: the statement is the unconditional one
    assert b["lower_bound"]["confidence"] == pytest.approx(0.975)
    assert b["lower_bound"]["stages"][0]["confidence"] == pytest.approx(0.9875)
    assert {r["stage"] for r in b["replications"]} == {1}


# ------------------------------------------------------------- MILP stopped at its limit


@pytest.mark.slow
def test_replication_stopped_at_its_limit_contributes_its_dual_bound(monkeypatch):
    """A replication stopped by its time limit gives the MILP's dual bound, not 0.

    The general search stops on the wall clock only as an outer stop (in
    whichever phase it is), so a 1 ms limit stops it before any plan with a
    valid bound in [0, optimum]. To test certify's bookkeeping independently
    of where that stop falls, the replications are the real SAA solves
    reported as stopped at their limit with 90 % of their proven bound (a
    valid dual bound by construction)."""
    inst = generate("scaling", n_models=3, n_clusters=2, horizon=8, omega=0.9, seed=0)
    full = solve(inst, "milp", evaluate=False, scenarios=30, seed=1, formulation="general", time_limit=None)
    stopped = solve(inst, "milp", evaluate=False, scenarios=30, seed=1, formulation="general", time_limit=1e-3)
    assert stopped.status == "time_limit" and stopped.plan is None
    assert stopped.lower_bound is not None and 0 <= stopped.lower_bound <= full.cost * (1 + 1e-9)

    real_solve = certified_tasks.solve

    def stopped_at_limit(instance, name, **kw):
        res = real_solve(instance, name, **{**kw, "time_limit": None})
        assert res.status == "optimal" and res.lower_bound > 0
        return dataclasses.replace(res, status="time_limit", plan=None, cost=None, gap=None,
                                   lower_bound=0.9 * res.lower_bound)

    monkeypatch.setattr(certified_tasks, "solve", stopped_at_limit)
    b = certify(inst, replications=5, scenarios=30, validation=500, risk_grid=(), time_limit=1e-3,
                target_width=0)
    reps = b["replications"]
    assert all(r["status"] == "time_limit" and r["value_kind"] == "milp bound" for r in reps)
    assert b["lower_bound"]["trivial_replications"] == 0 and b["lower_bound"]["time_limit_bounds"] == 5
    assert b["lower_bound"]["value"] > 0
    assert b["lower_bound"]["value"] == sorted(r["lower_bound"] for r in reps)[b["lower_bound"]["order"] - 1]


def test_candidate_algorithms_are_checked_with_the_parameters():
    # before the bracket runs: an unknown or self-referring candidate is the caller's error
    from deplbench.solvers.certify.certified import MilpCertified

    with pytest.raises(SolverError, match=r"^parameter 'algorithms': unknown algorithm 'no-such'"):
        MilpCertified.resolve_params({"algorithms": "depl, no-such"})
    with pytest.raises(SolverError, match=r"^parameter 'algorithms': 'milp-certified' cannot be its own"):
        MilpCertified.resolve_params({"algorithms": "milp-certified"})
    assert MilpCertified.resolve_params({"algorithms": "depl,pact"})["algorithms"] == "depl,pact"


@pytest.mark.parametrize("kwargs, field", [
    (dict(confidence=1 - 1e-16), "confidence"),
    (dict(refine_share=1e-300), "refine_share"),
    (dict(refine_share=1 - 1e-16), "refine_share"),
    (dict(lb_share=1e-17), "lb_share"),
])
def test_a_risk_split_binary64_cannot_state_is_refused_naming_the_field(kwargs, field):
    """β = 1 − confidence split until a stage's test confidence rounds to 1 passed the
    bounds and ended in "confidence: must be in (0, 1), got 1.0" (a value nobody gave)."""
    from deplbench.solvers.certify.settings import CertifySettings

    for build in (lambda: CertifySettings(**kwargs), lambda: CertifySettings.from_options(**kwargs)):
        with pytest.raises(SolverError, match=f"^{field}: the smallest share of β .* is below 1e-12"):
            build()
    # without stage 2 (target_width 0) refine_share splits nothing, so it cannot be too small
    if field == "refine_share":
        assert CertifySettings(target_width=0.0, **kwargs).refine_share == kwargs["refine_share"]


def test_cli_certify_names_a_confidence_too_near_1(tmp_path, capsys):
    from deplbench.cli import main

    path = tmp_path / "a.json"
    generate("realistic", family="alexnet", horizon=5).save(path)
    assert main(["certify", str(path), "--confidence", "0.9999999999999999"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: --confidence: the smallest share of β"), captured.err


@pytest.mark.parametrize("grid, message", [
    ("", "--risk-grid: expected one or more comma-separated factors in (0, 1], got '' (no tightened level)"),
    (",,,", "--risk-grid: expected one or more comma-separated factors in (0, 1], got ',,,'"),
    ("0.9,,0.8", "--risk-grid: item 2 of '0.9,,0.8' is empty"),
    ("0.9,x", "--risk-grid: expected comma-separated numbers"),
])
def test_cli_refuses_an_empty_risk_grid_exit_2(tmp_path, capsys, grid, message):
    """An empty grid silently dropped every tightened candidate (exit status 0)."""
    from deplbench.cli import main

    path = tmp_path / "k.json"
    generate("knapsack", n_items=4, horizon=4, seed=0).save(path)
    assert main(["certify", str(path), "--risk-grid", grid, "--replications", "2", "--scenarios", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err, captured.err
    assert certified_tasks.parse_risk_grid(" 0.9, 0.8 ") == (0.9, 0.8)


def test_cli_refuses_scenarios_beyond_the_memory_budget_exit_2(tmp_path, capsys):
    """Every SAA solve would end in status error (rc 1, "no usable SAA replication"): refused up front,
    from the instance's own estimate (S × K̄ × random terms), as --validation is above its cap."""
    from deplbench.cli import main

    path = tmp_path / "s.json"
    generate("scaling", n_models=2, n_clusters=2, horizon=8, seed=0).save(path)
    assert main(["certify", str(path), "--scenarios", "10000000", "--target-width", "0", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: --scenarios: every SAA solve would fail: the in-sample scenarios would "
                                   "need about"), captured.err
    assert main(["certify", str(path), "--scenarios", "1000000000000", "--json"]) == 2
    assert "--scenarios 1000000000000: S = " in capsys.readouterr().err


def test_refine_scenarios_zero_is_the_documented_default():
    """0, like none, means S₂ = 10·S: the CLI help and docs/certify.md say so."""
    from deplbench.solvers.certify.settings import CertifySettings

    assert CertifySettings.from_options(scenarios=30, refine_scenarios=0).stage2_scenarios == 300


@pytest.mark.parametrize("factor, status, gap", [(1.2, "inconsistent", None), (1 + 1e-10, "bracket", 0.0)])
def test_a_bracket_with_lb_above_ub_is_a_record_with_no_negative_gap(monkeypatch, factor, status, gap):
    """LB > UB (one statement failed) has no relative gap: the record keeps the plan and the advice,
    its gap is none (within the tolerance: 0) and the signed width stays in the diagnostics."""
    import deplbench.solvers.certify.certified as certified_mod

    inst = generate("knapsack", n_items=4, seed=0)
    real = certify(inst, replications=2, scenarios=20, validation=1000)
    ub = real["upper_bound"]["value"]
    lb = ub * factor
    width = (ub - lb) / ub
    fake = {**real, "lower_bound": {**real["lower_bound"], "value": lb}, "width": width}
    fake["status"], fake["message"] = certified_mod._status(fake["lower_bound"], real["upper_bound"], width,
                                                            False, 0.95, seed=0)
    assert fake["status"] == status
    monkeypatch.setattr(certified_mod, "certify", lambda *args, **kwds: fake)
    res = solve(inst, "milp-certified", evaluate=False)
    assert res.status == "feasible" and res.plan is not None and res.gap == gap, res.message
    assert res.diagnostics["width"] == width < 0 and res.lower_bound == lb
