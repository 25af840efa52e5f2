"""The summaries of ``solve``, ``evaluate``, ``simulate`` and ``library
verify`` say what each number is: the Monte Carlo quantile with its draws and
its interval's level and method, the Monte Carlo verdict as an estimate, the
Clopper-Pearson certificate with its level, and the exact verdict, which
decides where it exists (docs/certify.md)."""

from __future__ import annotations

import json
import math

import pytest

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.jsonio import write_json
from tests.formulations.test_evaluate import near_boundary_instance, plan


@pytest.mark.slow
def test_solve_prints_the_proof_beside_the_monte_carlo_estimate(tmp_path, deplbench_cli):
    from deplbench.instances.generators import generate

    ipath, rpath = tmp_path / "pact.json", tmp_path / "result.json"
    generate("realistic", family="pact-vgg11", horizon=30).save(ipath)
    # 100 draws of eval seed 1: too few for an upper end at ω = 0.99, so the Monte Carlo
    # interval is one-sided and straddles ℓmax, while the exact bounds prove the
    # milp-exact plan feasible
    status, out, err = deplbench_cli("solve", ipath, "--algo", "milp-exact", "--eval-samples", 100,
                                     "--eval-seed", 1, "-o", rpath)
    assert status == 0, err
    text = " ".join(out.split())
    assert "Monte Carlo estimate from 100 draws, seed 1" in text
    # [X_(97), +∞): the level of the one tail it keeps, 1 − P(Bin(100, 0.99) ≤ 96), not 0.95
    assert ", +∞) at level 0.9816 (order-statistic (distribution-free, binomial), one-sided lower bound" in text
    assert "estimate undecided (Monte Carlo estimate: the interval straddles ℓmax)" in text
    assert "certified not certified at level 0.95 (one-sided Clopper-Pearson on the same draws: 1 of 100" in text
    assert "exact proven feasible (a proof, no sampling" in text
    assert "verdict feasible, proven by the exact bounds" in text
    assert "-> undecided" not in out
    record = json.loads(rpath.read_text())
    assert record["quantile_ci_level"] == pytest.approx(0.98162596, abs=1e-8)
    assert "one-sided lower bound" in record["quantile_ci_method"]
    assert len(record["quantile_ci"]) == 2                               # the old keys stay
    assert record["quantile_ci"][1] is None and record["quantile_ci_nonfinite"] == {"1": "inf"}
    assert (record["verdict"], record["verdict_basis"]) == ("feasible", "exact")
    ev = record["evaluation"]
    assert (ev["mc_verdict"], ev["exact_verdict"], ev["certified_verdict"]) == (
        "undecided", "proven feasible", "certified feasible")
    assert ev["mc_certified_verdict"] == "not certified" and "Clopper-Pearson" in ev["violation_bounds_method"]

    status, out, err = deplbench_cli("simulate", ipath, "--algorithm", "milp-exact", "--runs", 100,
                                     "--eval-samples", 100, "--seed", 1, "--quiet")
    assert status == 0, err
    text = " ".join(out.split())
    assert "estimate undecided (Monte Carlo estimate" in text and "verdict feasible, proven by the exact" in text


@pytest.mark.slow
def test_too_few_draws_are_not_called_feasible_at_095(tmp_path, deplbench_cli):
    # the MILP's plan on pact-vgg11 violates with probability 0.0194 > 1 − ω = 0.01 (exact
    # bounds); 100 draws are too few for an upper end on the 0.99-quantile at level 0.95
    inst, res = tmp_path / "vgg.json", tmp_path / "vggmilp.json"
    for args in (("generate", "realistic", "--family", "pact-vgg11", "-o", inst),
                 ("solve", inst, "--algo", "milp", "-o", res)):
        status, _, err = deplbench_cli(*args)
        assert status == 0, err
    args = ("evaluate", inst, res, "--samples", 100, "--seed", 0, "--check")
    status, out, _ = deplbench_cli(*args)
    text = " ".join(out.split())
    assert status == 1 and "feasible yes" not in text
    assert ", +∞) at level 0.9816 (order-statistic" in text and "one-sided lower bound" in text
    assert "estimate undecided" in text and "verdict undecided (Monte Carlo estimate" in text
    assert "at level 0.95" not in text.split("certified")[0]        # the interval does not claim it
    status, out, _ = deplbench_cli(*args, "--exact")
    text = " ".join(out.split())
    assert status == 1 and "exact verdict proven infeasible" in text
    assert "verdict infeasible, proven by the exact bounds" in text
    status, out, _ = deplbench_cli(*args[:-1], "--json")
    ev = json.loads(out)
    assert ev["quantile_ci"][1] is None and ev["quantile_ci_nonfinite"] == {"1": "inf"}
    assert ev["verdict"] == "undecided" and ev["quantile_ci_level"] > 0.98


def test_evaluate_names_the_estimate_and_lets_the_proof_decide(tmp_path, deplbench_cli):
    ipath, ppath = tmp_path / "inst.json", tmp_path / "plan.json"
    near_boundary_instance().save(ipath)
    write_json(ppath, plan([("m", "A", 5.0)], {"A": ["d0"]}).to_dict())
    # seed 278: 124 of 1000 draws violate, though P(violation) = 0.095 < 1 − ω = 0.1
    args = ("evaluate", ipath, ppath, "--samples", 1000, "--seed", 278)
    status, out, _ = deplbench_cli(*args, "--check")
    text = " ".join(out.split())
    assert status == 1 and "verdict infeasible (Monte Carlo estimate, not a proof)" in text
    assert "certified certified infeasible at level 0.95 (one-sided Clopper-Pearson" in text
    assert "124 of 1000 exceed ℓmax" in text
    status, out, _ = deplbench_cli(*args, "--exact", "--check")
    text = " ".join(out.split())
    assert status == 0 and "exact verdict proven feasible" in text
    assert "verdict feasible, proven by the exact bounds (no sampling; the Monte Carlo statements" in text
    assert "feasible yes" in text
    status, out, _ = deplbench_cli(*args, "--json")
    d = json.loads(out)
    assert d["ci_method"].startswith("order-statistic") and d["confidence"] == 0.95
    assert d["verdict_basis"] == "monte_carlo" and d["mc_verdict"] == d["verdict"] == "infeasible"
    status, out, _ = deplbench_cli(*args, "--exact", "--json")
    d = json.loads(out)
    assert d["verdict"] == "proven feasible" and d["evaluation"]["verdict"] == "feasible"
    assert d["evaluation"]["mc_certified_verdict"] == "certified infeasible"


def test_library_verify_names_each_statement():
    from deplbench.benchmarks.library.verify import _monte_carlo_line

    line = _monte_carlo_line({"quantile": 0.29, "quantile_ci": [0.28, 0.3], "confidence": 0.95,
                              "ci_method": "order-statistic", "samples": 500, "mc_verdict": "undecided",
                              "verdict": "feasible", "mc_certified_verdict": "not certified",
                              "certified_verdict": "certified feasible"})
    assert line == ("out of sample (Monte Carlo, 500 draws): quantile estimate 0.29; CI [0.28, 0.3] at level "
                    "0.95 (order-statistic); estimate undecided; chance constraint (3) alone: not certified at "
                    "level 0.95 (one-sided Clopper-Pearson)")


def test_the_statements_say_what_each_number_is():
    from deplbench.cli.statements import evaluation_statements

    p = plan([("m", "A", 5.0)], {"A": ["d0"]})
    ev = evaluate_plan(near_boundary_instance(), p, samples=1000, seed=278, trajectory=False, exact=True)
    said = dict(evaluation_statements(ev))
    assert "Monte Carlo estimate from 1000 draws" in said["quantile"]
    assert "at level 0.95" in said["interval"] and "order-statistic" in said["interval"]
    assert said["estimate"].startswith("infeasible (Monte Carlo estimate")
    assert said["certified"].startswith("certified infeasible at level 0.95 (one-sided Clopper-Pearson")
    assert said["exact"].startswith("proven feasible (a proof, no sampling")
    assert said["verdict"].startswith("feasible, proven by the exact bounds")
    assert "contradict" in said["verdict"]
    mc = dict(evaluation_statements(evaluate_plan(near_boundary_instance(), p, samples=1000, seed=278,
                                                  trajectory=False)))
    assert "exact" not in mc and mc["verdict"] == "infeasible (Monte Carlo estimate, not a proof)"


def test_a_deterministic_plan_is_not_called_an_estimate():
    from deplbench.cli.statements import evaluation_statements
    from deplbench.instances.model import parse_instance
    from tests.formulations.test_evaluate import det_instance

    inst = parse_instance(det_instance())
    for exact in (False, True):
        ev = evaluate_plan(inst, plan([("m", "A", 2.0)], {"A": ["d0"]}), samples=100, exact=exact)
        said = dict(evaluation_statements(ev))
        assert "exact: every random term is a point mass" in said["quantile"]
        assert "estimate" not in said and "interval" not in said and "Monte Carlo" not in said["verdict"]


def test_the_statements_show_omega_and_the_target_as_they_are():
    """ω close to 1 and ℓmax are inputs, shown as they are: with six digits
    (``:g``, ``.6g``) ω = 0.9999999 would read "ω = 1" and ℓmax = 5.0000001 "5"."""
    from deplbench.cli.statements import evaluation_statements
    from deplbench.instances.model import parse_instance
    from tests.formulations.test_evaluate import det_instance

    inst = parse_instance({**det_instance(), "omega": 0.9999999})
    inst = inst.with_changes(loss_max=inst.loss_max + 1e-7)
    said = dict(evaluation_statements(evaluate_plan(inst, plan([("m", "A", 2.0)], {"A": ["d0"]}), samples=100)))
    assert "(ω = 0.9999999; exact" in said["quantile"]
    assert said["quantile"].endswith(f"target ℓmax = {inst.loss_max!r}") and len(repr(inst.loss_max)) > 8


def test_certify_page_chains_solve_into_evaluate_and_names_the_output_fields(tmp_path, deplbench_cli):
    # docs/certify.md: the solve writes the result file the evaluate reads, and
    # the comment names fields the evaluation's --json output has
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "certify.md").read_text(encoding="utf-8")
    solve_line = next(ln for ln in doc.splitlines() if ln.startswith("deplbench solve") and "milp-exact" in ln)
    eval_line = next(ln for ln in doc.splitlines() if ln.startswith("deplbench evaluate") and "--exact" in ln)
    solve_args, eval_args = solve_line.split("#")[0].split(), eval_line.split("#")[0].split()
    assert solve_args[solve_args.index("-o") + 1] == eval_args[3]         # result.json
    ipath, ppath = tmp_path / "inst.json", tmp_path / "plan.json"
    near_boundary_instance().save(ipath)
    write_json(ppath, plan([("m", "A", 5.0)], {"A": ["d0"]}).to_dict())
    status, out, err = deplbench_cli("evaluate", ipath, ppath, *eval_args[4:], "--samples", 1000)
    assert status == 0, err
    d = json.loads(out)
    named = []                                  # "violation_lo/hi" names violation_lo and violation_hi
    for token in eval_line.split("#")[1].replace(",", " ").split():
        first, *others = token.split("/")
        named += [first] + [f"{first.rsplit('_', 1)[0]}_{o}" for o in others]
    assert sorted(named) == ["quantile_hi", "quantile_lo", "verdict", "violation_hi", "violation_lo"]
    assert all(d.get(k) is not None for k in named), d


def test_an_interval_level_close_to_1_is_never_printed_as_1():
    # `evaluate --confidence 0.99999` printed "at level 1", a certainty no interval has
    from deplbench.cli.statements import evaluation_statements

    p = plan([("m", "A", 5.0)], {"A": ["d0"]})
    ev = evaluate_plan(near_boundary_instance(), p, samples=2000, seed=278, confidence=0.99999, trajectory=False)
    level = dict(evaluation_statements(ev))["interval"].split(" at level ")[1].split(" ")[0]
    assert float(level) < 1.0 and float(level) >= 0.99999, level


def test_a_level_near_1_is_printed_as_given_never_as_1():
    """`{level:g}` printed a certificate at level 1 − 1e-16 as "at level 1" (certainty)."""
    from deplbench.cli.statements import evaluation_statements

    ev = {"confidence": 0.9999999999999999, "omega": 0.99, "verdict_basis": "monte_carlo", "mc_verdict": "undecided",
          "quantile": 8.7, "quantile_ci": [8.6, math.inf], "quantile_ci_level": 0.9999999999999999, "samples": 1000,
          "seed": 0, "loss_max": 9.0, "certified_verdict": "not certified", "violation_count": 1,
          "violation_lb": 1e-19, "violation_ub": 0.04, "violations": []}
    said = dict(evaluation_statements(ev))
    assert said["certified"].startswith("not certified at level 0.9999999999999999 (one-sided"), said["certified"]


def test_a_broken_constraint_is_certain_and_the_certificate_is_about_the_chance_constraint(tmp_path, deplbench_cli):
    """A plan with an allocation 20 above capacity r(A) = 10 breaks (4)-(6): that is certain (no
    level), named in the verdict;
    the Clopper-Pearson certificate beside it speaks of the chance constraint (3) alone, and here
    says it holds (never "certified infeasible at level 0.95 (… in [x, y] against 1 − ω …)"
    beside an interval that says the opposite)."""
    from deplbench.instances.model import parse_instance
    from tests.formulations.test_evaluate import random_instance

    data = random_instance(0.9)
    data["loss_max"] = 9.6                       # P(ℓ(1) > ℓmax) ≈ 0.003 ≪ 1 − ω = 0.1
    ipath, ppath = tmp_path / "inst.json", tmp_path / "bad.json"
    parse_instance(data).save(ipath)
    write_json(ppath, plan([("m", "A", 20.0)], {"A": ["d0"]}).to_dict())
    for extra in ((), ("--exact",)):
        status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 1000, "--seed", 0, *extra)
        assert status == 0, err
        text = " ".join(out.split())
        assert ("verdict infeasible: constraints (4)-(6) broken (epochs[0].allocation: 20 exceeds capacity "
                "r = 10 (eq. (5))") in text
        assert "certain (checked exactly, no sampling, no level)" in text
        assert "certified infeasible" not in text and "(4)-(6) broken)" not in text.split("verdict")[0]
        assert ("certified chance constraint (3) alone: certified feasible at level 0.95 (one-sided "
                "Clopper-Pearson") in text
        assert "feasible no" in text
    status, out, _ = deplbench_cli("evaluate", ipath, ppath, "--samples", 1000, "--seed", 0, "--json")
    d = json.loads(out)
    # the plan's verdicts say infeasible (certain: basis "constraints"); the certificate on (3) is its own
    assert (d["verdict"], d["certified_verdict"], d["verdict_basis"]) == (
        "infeasible", "certified infeasible", "constraints")
    assert d["mc_certified_verdict"] == "certified feasible" and d["violation_ub"] <= 0.1
    assert d["feasible"] is False and d["constraints_ok"] is False
    # solve's summary prints the exact bounds too: as bounds on (3) alone, not as the plan's verdict
    from deplbench.cli.statements import evaluation_statements

    ev = evaluate_plan(parse_instance(data), plan([("m", "A", 20.0)], {"A": ["d0"]}), samples=1000,
                       trajectory=False, exact=True)
    said = dict(evaluation_statements(ev))
    assert ev.exact_verdict == "proven infeasible" and ev.violation_hi <= 0.1
    assert said["exact"].startswith("chance constraint (3) alone: P(ℓ(K) > ℓmax) in [")
    assert said["exact"].endswith("(a proof, no sampling)")
    assert said["verdict"].startswith("infeasible: constraints (4)-(6) broken (epochs[0].allocation")


def test_a_long_list_of_broken_constraints_is_cut_with_its_count():
    from deplbench.cli.statements import BROKEN_SHOWN, broken_text

    broken = [f"epochs[{k}].allocation: must be > 0 (got -1.0)" for k in range(BROKEN_SHOWN + 2)]
    text = broken_text(broken)
    assert text.count("must be > 0") == BROKEN_SHOWN and text.endswith("; and 2 more")
    assert broken_text(broken[:1]) == broken[0]


def test_simulate_labels_adaptive_opt_cost_as_a_bound_on_its_policy_not_a_static_plan():
    """adaptive-opt returns a policy, no plan: its cost is the upper confidence bound on the
    policy's mean cost, never "static plan cost"; a static solver's plan keeps its line."""
    from deplbench.cli.simulate import _bound_line, policy_cost_bound
    from deplbench.formulations.model.result import SolveResult

    res = SolveResult(algorithm="adaptive-opt", status="feasible", cost=430.056, lower_bound=400.0,
                      diagnostics={"confidence": 0.95, "cost_mean": 428.1, "certification": {"level_each": 0.975}})
    b = policy_cost_bound(res, "adaptive")
    assert b is not None
    assert (b["upper_bound"], b["level"], b["joint_level"], b["sample_mean"]) == (430.056, 0.975, 0.95, 428.1)
    line = _bound_line(b)
    assert line.startswith("policy cost    ≤ 430.056: upper confidence bound on its policy's mean cost at level "
                           "0.975 (0.95 jointly with its P(success)); sample mean 428.1; no static plan")
    assert "static plan    cost" not in line
    # without the certification's own level: 1 − (1 − joint)/2 each (the union bound it was built with)
    res.diagnostics = {"confidence": 0.9}
    assert policy_cost_bound(res, "adaptive")["level"] == pytest.approx(0.95)
    # a result with a plan, or from a solver that is no adaptive reference, has no policy bound
    assert policy_cost_bound(res, "") is None
    assert policy_cost_bound(SolveResult(algorithm="adaptive-opt", status="no_solution"), "adaptive") is None


@pytest.mark.slow
def test_simulate_adaptive_opt_text_and_json(tmp_path, deplbench_cli):
    from deplbench.instances.generators import generate

    path = tmp_path / "vgg.json"
    generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0).save(path)
    # time_points=0: the deadline priced and carried by water-filling, not on a time grid
    # (the output is the same kind; the time grid's passes are what takes the time here)
    args = ("simulate", path, "--algo", "adaptive-opt", "--runs", 100, "--eval-samples", 500, "--quiet",
            "--param", "runs=2000", "--param", "tune_runs=500", "--param", "buckets=50",
            "--param", "time_points=0")
    status, out, err = deplbench_cli(*args)
    assert status == 0, err
    assert "static plan    cost" not in out and "policy cost    ≤ " in out
    assert "plan           (none: no static plan)" in out
    status, out, err = deplbench_cli(*args, "--json")
    assert status == 0, err
    d = json.loads(out)
    assert d["static"] is None and d["status"] == "feasible"
    pc = d["policy_cost"]
    assert pc["joint_level"] == 0.95 and pc["level"] == pytest.approx(0.975)
    # an upper confidence bound on the mean: above the sample mean it rests on
    assert pc["upper_bound"] >= pc["sample_mean"] > 0
