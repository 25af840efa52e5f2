"""The out-of-sample evaluator against hand-computed cases (eqs. (1)–(6), (8))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import trapezoid
from scipy.optimize import brentq

from deplbench.errors import PlanError
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.instances.model import parse_instance


def det_instance(**changes) -> dict:
    """Deterministic two-model, two-cluster instance (every term a point mass)."""
    data = {
        "name": "det", "initial_loss": 10.0, "loss_max": 7.5, "omega": 0.9, "time_max": 10.0, "horizon": 4,
        "models": [
            # run term −A/sqrt(k+B)·X with A = 2, B = 3, X = 1: −1 at k = 1, −2/sqrt(5) at k = 2
            {"name": "m", "size": 1.0, "compute": 4.0, "loss_scale": 2.0, "loss_offset": 3.0,
             "decay": "inv_sqrt", "improvement": {"kind": "point", "value": 1.0}},
            # no decay: −1.5·0.8 = −1.2 every epoch
            {"name": "p", "size": 0.5, "compute": 1.0, "loss_scale": 1.5, "loss_offset": 0.0,
             "decay": "none", "improvement": {"kind": "point", "value": 0.8}},
        ],
        "switches": [{"from_model": "m", "to_model": "p", "jump": {"kind": "point", "value": 0.3}}],
        "clusters": [{"name": "A", "capacity": 10.0, "unit_cost": 1.0, "bandwidth": 2.0},
                     {"name": "B", "capacity": 4.0, "unit_cost": 2.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0},
                     {"name": "d1", "size": 3.0, "usefulness": 1.0}],
        "transfer_costs": [{"dataset": "d0", "cluster": "A", "cost": 5.0},
                           {"dataset": "d0", "cluster": "B", "cost": 7.0}],
    }
    data.update(changes)
    return data


def plan(epochs, datasets) -> Plan:
    return Plan(epochs=[Epoch(model=m, cluster=c, allocation=x) for m, c, x in epochs], datasets=datasets)


def test_deterministic_three_epochs_by_hand():
    inst = parse_instance(det_instance())
    p = plan([("m", "A", 2.0), ("m", "A", 4.0), ("p", "A", 1.0)], {"A": ["d0"]})
    ev = evaluate_plan(inst, p, samples=1000)
    # ℓ(3) = 10 − 2/sqrt(4) − 2/sqrt(5) − 1.2 + 0.3 (switch m → p at k = 3)
    expected = 10 - 1 - 2 / math.sqrt(5) - 1.2 + 0.3
    assert ev.exact and ev.samples == 1
    assert ev.quantile == pytest.approx(expected, abs=1e-12)
    assert ev.quantile_ci == (ev.quantile, ev.quantile)
    assert ev.mean == pytest.approx([10, 9, 9 - 2 / math.sqrt(5), expected])
    # eq. (1): T = 4/2 + 1/2 + 4/4 + 1/2 + 1/1 + 0.5/2 = 5.25
    assert ev.time == pytest.approx(5.25)
    # eq. (2): κ·Σx = 7, plus the one-time transfer β(d0, A) = 5
    assert ev.compute_cost == pytest.approx(7.0) and ev.transfer_cost == pytest.approx(5.0)
    assert ev.cost == pytest.approx(12.0)
    assert ev.verdict == "feasible" and ev.feasible and ev.violations == []
    assert ev.epochs_per_model == {"m": 2, "p": 1}
    assert ev.cost_per_model == pytest.approx({"m": 6.0, "p": 1.0})
    # The same plan misses a tighter target: verdict follows ℓmax exactly.
    strict = evaluate_plan(parse_instance(det_instance(loss_max=7.0)), p, samples=1000)
    assert strict.verdict == "infeasible" and not strict.feasible


def test_transfer_cost_once_versus_per_epoch():
    p = plan([("m", "A", 2.0), ("m", "A", 2.0), ("m", "A", 2.0)], {"A": ["d0"]})
    once = evaluate_plan(parse_instance(det_instance()), p, samples=100)
    per_epoch = evaluate_plan(parse_instance(det_instance(transfer_cost_mode="per_epoch")), p, samples=100)
    # Text (default): β paid once = 5. Printed eq. (2): inside Σ_k, K = 3 times.
    assert once.transfer_cost == pytest.approx(5.0)
    assert per_epoch.transfer_cost == pytest.approx(15.0)
    assert per_epoch.cost - once.cost == pytest.approx(10.0)
    assert once.compute_cost == per_epoch.compute_cost == pytest.approx(6.0)


def test_data_rule_intended_versus_printed():
    handover = plan([("m", "A", 3.0), ("p", "B", 3.0)], {"A": ["d0"], "B": ["d0"]})
    idle_holder = plan([("m", "A", 3.0), ("m", "A", 3.0)], {"A": ["d0"], "B": ["d0"]})
    single = plan([("m", "A", 3.0), ("p", "A", 3.0)], {"A": ["d0"]})
    intended = parse_instance(det_instance())
    printed = parse_instance(det_instance(data_rule="printed"))
    # Intended reading: the sequential hand-over A → B is allowed.
    assert evaluate_plan(intended, handover, samples=100).constraints_ok
    # Printed eq. (6) for every k: a cluster holding data must train in every epoch.
    ev = evaluate_plan(printed, handover, samples=100)
    assert not ev.constraints_ok
    assert any("datasets.A" in v and "every epoch" in v for v in ev.violations)
    assert any("datasets.B" in v for v in ev.violations)
    # Both readings forbid data on a cluster that never trains.
    for inst in (intended, printed):
        ev = evaluate_plan(inst, idle_holder, samples=100)
        assert any(v.startswith("datasets.B") for v in ev.violations)
    # One cluster holding the data and training throughout satisfies both.
    for inst in (intended, printed):
        assert evaluate_plan(inst, single, samples=100).constraints_ok
    # The transfer of a second holder is paid: β(d0, A) + β(d0, B) = 12.
    assert evaluate_plan(intended, handover, samples=100).transfer_cost == pytest.approx(12.0)


def test_data_law_scales_work_and_learning():
    inst = parse_instance(det_instance(loss_max=9.5))
    # d1: σ = 3, u = 1 → V = 3 (three times the work), γ = log2(1 + 3) = 2.
    ev = evaluate_plan(inst, plan([("p", "A", 3.0)], {"A": ["d1"]}), samples=100)
    assert ev.quantile == pytest.approx(10 - 2 * 1.2)
    assert ev.time == pytest.approx(3 * 1.0 / 3.0 + 0.5 / 2.0)
    both = evaluate_plan(inst, plan([("p", "A", 3.0)], {"A": ["d0", "d1"]}), samples=100)
    # V = 4, U = 4 → γ = log2(5)
    assert both.quantile == pytest.approx(10 - math.log2(5) * 1.2)
    assert both.time == pytest.approx(4 / 3 + 0.25)


def test_constraint_violations_are_named():
    inst = parse_instance(det_instance(horizon=2, time_max=3.0))
    bad = plan([("p", "A", 1.0), ("m", "A", 20.0), ("m", "B", 0.5)], {"A": ["d0"], "B": ["d0"]})
    ev = evaluate_plan(inst, bad, samples=100)
    text = " | ".join(ev.violations)
    assert "exceed the horizon" in text                       # K = 3 > K̄ = 2
    assert "epochs[1].model" in text and "not allowed" in text  # p → m is not in the switch table
    assert "epochs[1].allocation" in text and "capacity" in text  # 20 > r(A) = 10 (eq. (5))
    assert "time:" in text                                     # eq. (4)
    assert not ev.feasible


@pytest.mark.parametrize("p, field", [
    (plan([("ghost", "A", 1.0)], {"A": ["d0"]}), "epochs[0].model"),
    (plan([("m", "Z", 1.0)], {"A": ["d0"]}), "epochs[0].cluster"),
    (plan([("m", "A", 1.0)], {"A": ["d9"]}), "datasets.A"),
])
def test_plan_naming_unknown_things_is_an_error(p, field):
    with pytest.raises(PlanError, match=field.replace("[", r"\[").replace("]", r"\]")):
        evaluate_plan(parse_instance(det_instance()), p, samples=100)


def random_instance(omega: float) -> dict:
    data = det_instance(omega=omega, loss_max=9.9)
    data["models"][0]["improvement"] = {"kind": "inverse_gamma", "shape": 12.0, "scale": 11.0}
    data["switches"][0]["jump"] = {"kind": "student_t", "df": 5.0, "loc": 0.3, "scale": 0.1}
    return data


@pytest.mark.parametrize("omega", [0.5, 0.9, 0.99])
def test_one_random_epoch_matches_the_analytic_quantile(omega):
    inst = parse_instance(random_instance(omega))
    ev = evaluate_plan(inst, plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=200_000, seed=3)
    # ℓ(1) = 10 − (2/sqrt(1 + 3))·X, so its ω-quantile is 10 − 1·F_X^{-1}(1 − ω).
    truth = 10 - stats.invgamma(12.0, scale=11.0).ppf(1 - omega)
    lo, hi = ev.quantile_ci
    assert lo <= truth <= hi
    assert hi - lo < 0.02
    assert not ev.exact and ev.samples == 200_000


def test_switch_jump_distribution_enters_the_quantile():
    inst = parse_instance(random_instance(0.9))
    ev = evaluate_plan(inst, plan([("m", "A", 5.0), ("p", "A", 5.0)], {"A": ["d0"]}), samples=200_000, seed=4)
    # ℓ(2) = 10 − X − 1.2 + J with X ~ IG(12, 11) and J ~ 0.3 + 0.1·t5, independent:
    # its 0.9-quantile by numerical convolution of the two densities.
    x = np.linspace(0.2, 3.0, 4001)
    fx = stats.invgamma(12.0, scale=11.0).pdf(x)
    # P(−X + J ≤ z) = ∫ f_X(x) F_J(z + x) dx
    def cdf(z):
        return trapezoid(fx * stats.t(5.0, loc=0.3, scale=0.1).cdf(z + x), x)
    z90 = brentq(lambda z: cdf(z) - 0.9, -3.0, 2.0)
    truth = 10 - 1.2 + z90
    lo, hi = ev.quantile_ci
    assert lo <= truth <= hi
    # Expected loss: 10 − E[X] − 1.2 + E[J] = 10 − 1 − 1.2 + 0.3
    assert ev.expected_loss == pytest.approx(8.1, abs=0.005)


def test_evaluation_is_seeded():
    inst = parse_instance(random_instance(0.9))
    p = plan([("m", "A", 5.0), ("m", "A", 5.0)], {"A": ["d0"]})
    a, b = (evaluate_plan(inst, p, samples=5000, seed=9) for _ in range(2))
    c = evaluate_plan(inst, p, samples=5000, seed=10)
    assert a.quantile == b.quantile and a.p99 == b.p99
    assert a.quantile != c.quantile


def test_bad_evaluation_arguments():
    inst = parse_instance(det_instance())
    p = plan([("m", "A", 2.0)], {"A": ["d0"]})
    with pytest.raises(PlanError, match="samples"):
        evaluate_plan(inst, p, samples=10)
    with pytest.raises(PlanError, match="confidence"):
        evaluate_plan(inst, p, confidence=1.5)
    # numpy's "expected non-negative integer" named no field.
    with pytest.raises(PlanError, match="seed"):
        evaluate_plan(inst, p, samples=100, seed=-1)


def test_out_of_memory_is_a_plan_error_naming_samples(monkeypatch):
    import deplbench.formulations.evaluation.evaluate as evaluate_module

    def no_memory(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(evaluate_module, "simulate_trajectories", no_memory)
    inst = parse_instance(random_instance(0.9))
    with pytest.raises(PlanError, match="samples: 1000 trajectories"):
        evaluate_plan(inst, plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=1000)


def test_load_plan_rejects_non_utf8_file_by_name(tmp_path):
    from deplbench.formulations.model.plan import load_plan

    path = tmp_path / "plan.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(PlanError, match="plan.json: not a UTF-8"):
        load_plan(path)


@pytest.mark.parametrize("text", ["{}", '{"datasets": {}}', '{"status": "feasible", "plan": {}}'])
def test_a_plan_without_epochs_is_refused_not_read_as_no_epochs(tmp_path, deplbench_cli, text):
    """{} was read as the plan of no epochs and judged (cost 0, verdict infeasible, exit 0/1):
    an empty or truncated object is no plan anyone wrote. "epochs": [] stays the empty plan."""
    from deplbench.formulations.model.plan import load_plan, parse_plan

    inst = tmp_path / "inst.json"
    parse_instance(det_instance()).save(inst)
    path = tmp_path / "plan.json"
    path.write_text(text)
    reason = "plan: missing field 'epochs' (a plan of no epochs is written \"epochs\": [])"
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    assert str(exc.value) == f"{path}: {reason}"
    status, out, err = deplbench_cli("evaluate", inst, path, "--samples", 100)
    assert (status, out, err) == (2, "", f"error: {path}: {reason}\n")
    assert parse_plan({"epochs": []}).n_epochs == 0


def near_boundary_instance():
    """One epoch of ℓ(1) = 10 − X, X ~ IG(12, 11), ω = 0.9 and ℓmax set so
    that P(ℓ(1) > ℓmax) = F_X(10 − ℓmax) = 0.0950005 < 1 − ω = 0.1: feasible,
    by a margin the exact bounds resolve and 1000 draws do not."""
    data = random_instance(0.9)
    data["loss_max"] = 9.34223
    return parse_instance(data)


def test_a_proof_overrules_a_monte_carlo_certificate_that_is_wrong_by_chance():
    inst = near_boundary_instance()
    truth = stats.invgamma(12.0, scale=11.0).cdf(10 - inst.loss_max)
    assert truth == pytest.approx(0.095, abs=1e-5) and truth < 1 - inst.omega
    p = plan([("m", "A", 5.0)], {"A": ["d0"]})
    # seed 278: 124 of 1000 draws violate, a chance excess (expected 95): the
    # Monte Carlo interval lies above ℓmax and Clopper-Pearson's lower bound
    # exceeds 1 − ω at 0.95 -- both wrong, as a statement at a level may be.
    mc = evaluate_plan(inst, p, samples=1000, seed=278, trajectory=False)
    assert mc.violation_count == 124 and mc.violation_lb > 0.1
    assert (mc.verdict, mc.certified_verdict, mc.verdict_basis) == ("infeasible", "certified infeasible",
                                                                    "monte_carlo")
    assert not mc.feasible
    ev = evaluate_plan(inst, p, samples=1000, seed=278, trajectory=False, exact=True)
    assert ev.exact_verdict == "proven feasible" and ev.violation_lo <= truth <= ev.violation_hi
    # the proof decides; the Monte Carlo statements stay, named as such
    assert (ev.verdict, ev.certified_verdict, ev.verdict_basis, ev.feasible) == (
        "feasible", "certified feasible", "exact", True)
    assert (ev.mc_verdict, ev.mc_certified_verdict) == ("infeasible", "certified infeasible")
    d = ev.to_dict()
    assert d["verdict"] == "feasible" and d["mc_verdict"] == "infeasible"


def test_a_proof_of_infeasibility_decides_and_broken_constraints_stay_infeasible():
    data = random_instance(0.9)
    data["loss_max"] = 9.2                      # P(violation) = F_X(0.8) ≈ 0.29 > 0.1
    inst = parse_instance(data)
    ev = evaluate_plan(inst, plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=1000, trajectory=False, exact=True)
    assert (ev.exact_verdict, ev.verdict, ev.certified_verdict, ev.verdict_basis) == (
        "proven infeasible", "infeasible", "certified infeasible", "exact")
    # a plan breaking (4) (time 4/0.3 > Tmax = 10) whose quantile is proven fine: the plan is infeasible
    # (verdict and its basis say so), the quantile's own statements stay beside it
    data["loss_max"] = 9.6
    inst = parse_instance(data)
    ev = evaluate_plan(inst, plan([("m", "A", 0.3)], {"A": ["d0"]}), samples=1000, trajectory=False, exact=True)
    assert ev.violations and ev.verdict == "infeasible" and ev.verdict_basis == "constraints"
    assert ev.mc_verdict == "feasible" and ev.violation_hi <= 1 - inst.omega
    assert not ev.feasible and ev.certified_verdict == "certified infeasible"
    assert ev.exact_verdict == "proven infeasible"


@pytest.mark.parametrize("exact", [False, True])
def test_a_plan_breaking_hard_constraints_is_never_verdict_feasible(exact):
    """An allocation above capacity (eq. (5)) broken: the JSON's ``verdict`` alone must
    not read "feasible" (the quantile estimate stays in ``mc_verdict``)."""
    data = random_instance(0.9)
    data["loss_max"] = 9.6
    inst = parse_instance(data)
    bad = plan([("m", "A", 20.0), ("m", "A", 5.0)], {"A": ["d0"]})
    d = evaluate_plan(inst, bad, samples=500, trajectory=False, exact=exact).to_dict()
    assert d["violations"] and d["verdict"] == "infeasible" and d["feasible"] is False
    assert d["verdict_basis"] == "constraints"


def test_an_undecided_proof_leaves_the_monte_carlo_verdict(monkeypatch):
    import deplbench.formulations.evaluation.evaluate as evaluate_module
    from deplbench.formulations.evaluation.exact_violation import violation_bounds

    def undecided(*args, **kwargs):
        b = violation_bounds(*args, **kwargs)
        return type(b)(0.0, 1.0, b.q_lo, b.q_hi, "undecided", b.risk)

    monkeypatch.setattr(evaluate_module, "violation_bounds", undecided)
    ev = evaluate_plan(near_boundary_instance(), plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=1000,
                       seed=278, trajectory=False, exact=True)
    assert ev.exact_verdict == "undecided" and ev.verdict_basis == "monte_carlo"
    assert (ev.verdict, ev.certified_verdict) == ("infeasible", "certified infeasible")


def test_every_evaluation_names_its_interval_method_and_basis():
    from deplbench.formulations.evaluation.evaluate import CI_METHOD, CI_METHOD_DETERMINISTIC

    sampled = evaluate_plan(near_boundary_instance(), plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=500,
                            confidence=0.9, trajectory=False).to_dict()
    assert sampled["ci_method"] == CI_METHOD and "two-sided" in CI_METHOD and sampled["confidence"] == 0.9
    assert "Clopper-Pearson" in sampled["violation_bounds_method"]
    assert "one-sided" in sampled["violation_bounds_method"]
    det = evaluate_plan(parse_instance(det_instance()), plan([("m", "A", 2.0)], {"A": ["d0"]}), samples=100)
    assert det.ci_method == CI_METHOD_DETERMINISTIC and det.verdict_basis == "deterministic"



# ------------------------------------------------ the order-statistic interval at small samples


def _ranks(ci, n: int) -> tuple[int, int]:
    """The ranks of an interval on the draws 1..n (an infinite end: rank 0 or n + 1)."""
    return (0 if ci.low == -math.inf else int(ci.low)), (n + 1 if ci.high == math.inf else int(ci.high))


def _coverage(lo: int, hi: int, n: int, omega: float) -> float:
    """P(X_(lo) ≤ ξ_ω ≤ X_(hi)) for a continuous law: 1 − P(B ≤ lo − 1) − P(B ≥ hi), B ~ Bin(n, ω)."""
    return 1.0 - stats.binom.cdf(lo - 1, n, omega) - (stats.binom.sf(hi - 1, n, omega) if hi <= n else 0.0)


@pytest.mark.parametrize("n", [100, 300, 2000])
@pytest.mark.parametrize("omega", [0.99, 0.999])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_quantile_interval_has_the_level_it_states(n, omega, confidence):
    from deplbench.formulations.evaluation.evaluate import CI_METHOD, order_statistic_ci

    ci = order_statistic_ci(np.arange(1.0, n + 1), omega, confidence)
    lo, hi = _ranks(ci, n)
    cover = _coverage(lo, hi, n, omega)
    assert cover >= ci.level - 1e-12 and ci.level >= confidence
    # an end is infinite only where no order statistic would do: X_(n) is too low at α/2
    assert (hi == n + 1) == (stats.binom.sf(n - 1, n, omega) > (1 - confidence) / 2)
    assert (ci.method == CI_METHOD) == (hi <= n and lo >= 1)
    if hi == n + 1:                                   # one-sided: its level is the exact coverage
        assert "one-sided lower bound" in ci.method and ci.level == pytest.approx(cover, abs=1e-12)
    # the ends are tight: one rank further in breaks the α/2 tail
    assert stats.binom.cdf(lo, n, omega) > (1 - confidence) / 2
    assert hi == n + 1 or stats.binom.sf(hi - 2, n, omega) > (1 - confidence) / 2


def test_quantile_interval_coverage_by_simulation():
    # independent of the binomial law: 20000 samples of 100 uniforms, ω = 0.99
    from deplbench.formulations.evaluation.evaluate import order_statistic_ci

    n, omega, reps = 100, 0.99, 20_000
    u = np.sort(np.random.default_rng(7).random((reps, n)), axis=1)
    ci = order_statistic_ci(np.arange(1.0, n + 1), omega, 0.95)
    lo, hi = _ranks(ci, n)
    low = u[:, lo - 1] if lo >= 1 else np.full(reps, -np.inf)
    high = u[:, hi - 1] if hi <= n else np.full(reps, np.inf)
    hit = float(np.mean((low <= omega) & (omega <= high)))
    # 4 standard errors below the stated level; the clamped [X_(97), X_(100)] hits 0.62
    assert hit >= ci.level - 4 * math.sqrt(ci.level * (1 - ci.level) / reps)
    clamped = float(np.mean((low <= omega) & (omega <= u[:, n - 1])))
    assert clamped < 0.7


@pytest.mark.parametrize("samples, verdict", [(100, "undecided"), (300, "undecided"), (2000, "feasible")])
def test_too_few_draws_for_an_upper_end_never_say_feasible(samples, verdict):
    # ℓ(1) = 10 − X, X ~ IG(12, 11), and ℓmax = 9.9 (X ≥ 0.1) above every draw in
    # practice: any finite upper end would say "feasible"
    inst = parse_instance(random_instance(0.99))
    ev = evaluate_plan(inst, plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=samples, seed=0)
    assert ev.mc_verdict == ev.verdict == verdict and ev.feasible == (verdict == "feasible")
    lo, hi = ev.quantile_ci
    if verdict == "undecided":
        assert hi == math.inf and lo <= ev.quantile and "one-sided" in ev.ci_method
        r = int(stats.binom.ppf(0.025, samples, 0.99))
        assert ev.quantile_ci_level == pytest.approx(stats.binom.sf(r - 1, samples, 0.99), abs=1e-9)
        assert ev.to_dict()["quantile_ci_level"] > 0.95
    else:
        assert lo <= ev.quantile <= hi <= 9.9 and ev.quantile_ci_level == 0.95 and "two-sided" in ev.ci_method


def test_too_few_draws_still_say_infeasible_from_the_lower_end():
    # ℓmax below every draw: the one-sided [X_(l), +∞) lies above it at its level
    inst = parse_instance(random_instance(0.99) | {"loss_max": 5.0})
    ev = evaluate_plan(inst, plan([("m", "A", 5.0)], {"A": ["d0"]}), samples=100, seed=0)
    assert ev.quantile_ci[1] == math.inf and ev.quantile_ci[0] > 5.0 and ev.verdict == "infeasible"
