"""The adaptive reference (formulations/adaptive/): DP against exhaustive search,
bounds against every policy of the suite, certification on independent draws."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from deplbench.errors import PlanError
from deplbench.formulations import adaptive as A
from deplbench.formulations.evaluation.binomial import clopper_pearson_lower
from deplbench.instances.distributions import InverseGamma, StudentT
from deplbench.instances.model import parse_instance

LAM = 0.5


def tiny(**over) -> dict:
    """Two models, one cluster, K̄ = 3, grid-aligned point/two-point loss terms
    (h = 0.125 with 6 buckets): the chain is the true process exactly."""
    data = {
        "name": "tiny", "initial_loss": 1.0, "loss_max": 0.25, "omega": 0.75, "time_max": 50.0, "horizon": 3,
        "models": [
            {"name": "a", "size": 0.5, "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "empirical", "samples": [1.0, 2.0]}},
            {"name": "b", "size": 0.25, "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "empirical", "samples": [1.0, 3.0]}},
        ],
        "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0.125}}],
        "clusters": [{"name": "A", "capacity": 2.0, "unit_cost": 1.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    }
    data.update(over)
    return data


def _stage(inst, m: int, lam: float) -> float:
    """κx* + λ(c/x* + s/b) with x* = min(r, sqrt(λc/κ)), by hand."""
    c, cl = inst.models[m].compute, inst.clusters[0]
    x = min(cl.capacity, math.sqrt(lam * c / cl.unit_cost))
    return cl.unit_cost * x + lam * (c / x + inst.models[m].size / cl.bandwidth)


def _pareto(points):
    pts = sorted({(round(c, 12), round(s, 12)) for c, s in points}, key=lambda t: (t[0], -t[1]))
    out, best = [], -1.0
    for c, s in pts:
        if s > best + 1e-12:
            out.append((c, s))
            best = s
    return out


def _exhaustive(inst, lam):
    """(E[priced cost], P(success)) of every deterministic policy, Pareto-pruned,
    by recursion on the *true* loss (no grid): the independent check."""
    lmax, K = inst.loss_max, inst.horizon
    succ = {(inst.switches[0].from_model, inst.switches[0].to_model)}
    names = [m.name for m in inst.models]

    def atoms(m):
        s = inst.models[m].improvement.samples
        return [(v, 1.0 / len(s)) for v in s]

    def rec(k, m, loss):
        opts = [(0.0, 1.0 if loss <= lmax + 1e-12 else 0.0)]
        if k < K:
            for m2 in range(len(names)):
                if m is not None and m2 != m and (names[m], names[m2]) not in succ:
                    continue
                jump = inst.switches[0].jump.value if (m is not None and m2 != m) else 0.0
                branches = [(p, rec(k + 1, m2, loss - inst.models[m2].loss_scale * x + jump))
                            for x, p in atoms(m2)]
                for combo in itertools.product(*[b for _, b in branches]):
                    c = _stage(inst, m2, lam) + sum(p * cs[0] for (p, _), cs in zip(branches, combo))
                    s = sum(p * cs[1] for (p, _), cs in zip(branches, combo))
                    opts.append((c, s))
        return _pareto(opts)

    return rec(0, None, inst.initial_loss)


def _envelope(points, omega):
    """Least cost of a mix of at most two deterministic policies with success ≥ ω."""
    best = min((c for c, s in points if s >= omega - 1e-12), default=math.inf)
    for (c1, s1), (c2, s2) in itertools.combinations(points, 2):
        if min(s1, s2) < omega < max(s1, s2):
            w = (omega - min(s1, s2)) / abs(s2 - s1)
            lo, hi = ((c1, c2) if s1 < s2 else (c2, c1))
            best = min(best, (1 - w) * lo + w * hi)
    return best


@pytest.mark.parametrize("omega", [0.5, 0.75, 0.9])
def test_dp_equals_exhaustive_search_and_the_critical_mix(omega):
    inst = parse_instance(tiny(omega=omega))
    pts = _exhaustive(inst, LAM)
    target = _envelope(pts, omega)
    assert math.isfinite(target)
    chain = A.Chain(inst, 6, optimistic=True)
    pes = A.Chain(inst, 6, optimistic=False)
    # the critical multiplier: the slope of the envelope's segment at ω
    slopes = sorted({(c2 - c1) / (s2 - s1) for (c1, s1), (c2, s2) in itertools.combinations(pts, 2)
                     if s2 > s1 and c2 >= c1})
    vals = []
    for mu in slopes:
        p = A.dp(chain, LAM, mu)
        assert A.dp(pes, LAM, mu).value == pytest.approx(p.value, abs=1e-9)   # exact grid: same chain
        vals.append(p.value - mu * (1 - omega))
    best = max(vals)
    # Lagrangian duality is exact for one constraint (Altman 1999, Beutler & Ross 1985)
    assert best == pytest.approx(target, abs=1e-9)
    # no deterministic policy beats it, and a feasible deterministic one exists at or above it
    assert all(c >= best - 1e-9 for c, s in pts if s >= omega - 1e-12)
    # the randomised mix of the policies on either side of the critical μ attains it
    mu = slopes[int(np.argmax(vals))]
    a, b = A.dp(chain, LAM, mu * (1 - 1e-6)), A.dp(chain, LAM, mu * (1 + 1e-6))
    ca, cb = a.cost + LAM * a.time, b.cost + LAM * b.time
    if abs(a.p_fail - b.p_fail) > 1e-12:
        w = (a.p_fail - (1 - omega)) / (a.p_fail - b.p_fail)
        assert 0 <= w <= 1
        assert w * cb + (1 - w) * ca == pytest.approx(target, abs=1e-9)
    else:
        assert min(ca, cb) == pytest.approx(target, abs=1e-9)


def test_the_bound_is_valid_for_every_multiplier():
    inst = parse_instance(tiny())
    pts = _exhaustive(inst, LAM)
    target = _envelope(pts, inst.omega)
    chain = A.Chain(inst, 6, optimistic=True)
    for mu in (0.0, 0.3, 3.0, 30.0, 300.0):
        assert A.dp(chain, LAM, mu).value - mu * (1 - inst.omega) <= target + 1e-9


def test_kernels_round_in_the_stated_direction():
    X = InverseGamma.from_moments(1.0, 0.01)
    opt, pes = A.kernel(X, -0.1, 0.001, True), A.kernel(X, -0.1, 0.001, False)
    mean = -0.1 * X.mean() / 0.001
    m_opt = float(np.dot(np.arange(opt.p.size) + opt.lo, opt.p))
    m_pes = float(np.dot(np.arange(pes.p.size) + pes.lo, pes.p))
    assert m_opt <= mean <= m_pes and m_pes - m_opt <= 1.0 + 1e-6
    assert opt.p.sum() == pytest.approx(1.0, abs=1e-6) and pes.p.sum() == pytest.approx(1.0, abs=1e-6)
    assert pes.lo + pes.p.size - 1 <= 0                     # a run term never raises the loss
    J = StudentT(df=4.0, loc=0.01, scale=0.004)
    kj = A.kernel(J, 1.0, 0.001, False, A.TAIL_JUMP)
    assert kj.p_inf > 0 and kj.p.sum() + kj.p_inf == pytest.approx(1.0, abs=1e-9)


def test_applies_and_bad_arguments_name_the_field():
    two = tiny(datasets=[{"name": "d0", "size": 1.0, "usefulness": 1.0},
                         {"name": "d1", "size": 1.0, "usefulness": 1.0}])
    ok, why = A.applies(parse_instance(two))
    assert not ok and "dataset" in why
    with pytest.raises(PlanError, match="^instance: "):
        A.adaptive_bounds(parse_instance(two))
    with pytest.raises(PlanError, match="^buckets: "):
        A.adaptive_bounds(parse_instance(tiny()), buckets=1)


@pytest.fixture(scope="module")
def small():
    """The two-model stochastic instance of the core tests (K̄ = 6, two clusters)."""
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data(omega=0.9))
    return inst, A.adaptive_bounds(inst, buckets=200, runs=4000, tune_runs=2000, seed=3)


def test_certification_uses_draws_independent_of_the_tuning(small):
    inst, res = small
    tuned = {t["seed"] for t in res.tuning}
    assert tuned and res.certification["seed"] not in tuned
    # every fresh run is a run of π; the mix gives up q = 1 − ω/CP, read from their bound afterwards
    q, runs = res.multipliers["give_up"], res.certification["runs"]
    cp = clopper_pearson_lower(res.certification["successes"], runs, 0.975)
    # the bracket's joint level 0.95 splits into 0.975 for P(success) and 0.975 for the cost
    assert res.confidence == 0.95 and res.certification["level_each"] == pytest.approx(0.975)
    assert cp > inst.omega and q == pytest.approx(1.0 - inst.omega / cp, abs=1e-11)
    assert res.p_success_lo == inst.omega and (1 - Fraction(q)) * Fraction(cp) >= Fraction(inst.omega)
    # the runs are those of π itself (no give-up during the certification), re-simulated here
    from types import SimpleNamespace

    from deplbench.formulations.evaluation.closed_loop import simulate
    from deplbench.solvers.adaptive.optimum import AdaptiveOpt

    mix = AdaptiveOpt().closed_loop_policy(inst, SimpleNamespace(diagnostics=res.to_dict()), seed=3)
    assert mix.give_up == q
    again = simulate(inst, mix.with_give_up(0.0), runs, res.certification["seed"])
    assert int(again.success.sum()) == res.certification["successes"]
    mean, ucb = A.cost_ucb(again.cost, 1.0 - q, res.certification["largest_cost"], 0.025)
    assert (res.cost_mean, res.upper_bound) == (pytest.approx(mean), pytest.approx(ucb))
    assert res.certified == (res.p_success_lo >= inst.omega)
    assert res.certified and res.lower_bound <= res.upper_bound


@pytest.mark.slow
def test_lower_bound_below_every_certified_policy_of_the_suite(small):
    """LB ≤ the simulated mean cost of every policy with certified P(success) ≥ ω:
    closed-loop PACT, receding DepL, and each algorithm's plan stopped at ℓmax."""
    from deplbench.solvers.run import closed_loop, solve

    inst, res = small
    checked = 0
    for alg in ("pact", "depl-receding", "depl", "best-exp", "static-learn"):
        r = solve(inst, alg, eval_samples=2000)
        if r.plan is None:
            continue
        cl = closed_loop(inst, r, runs=3000, seed=11)
        for key in ("policy", "plan_stopped", "plan"):
            s = cl[key]
            if s is None or clopper_pearson_lower(s["successes"], s["runs"], 0.95) < inst.omega:
                continue
            checked += 1
            # the LB is proven; the mean is an estimate: allow its 3-s.e. noise
            assert res.lower_bound <= s["cost"]["mean"] + 3 * s["cost_sem"], (alg, key)
    assert checked >= 2


def test_adaptive_lower_bound_below_the_static_optimum():
    """Deterministic loss terms: the static optimum (brute force over plans) is a
    policy, so the adaptive LB is below it."""
    from deplbench.solvers.run import solve

    det = parse_instance(tiny(omega=0.9, time_max=12.0, models=[
        {**m, "improvement": {"kind": "point", "value": v}}
        for m, v in zip(tiny()["models"], (1.0, 1.0))]))
    lb_det = A.lower_bound_search(A.Chain(det, 6, True), det.omega, 6, 6).bound()
    r = solve(det, "brute-force", eval_samples=200)
    assert r.status == "optimal" and r.cost is not None
    assert lb_det <= r.cost + 1e-9
    assert lb_det >= 0.5 * r.cost            # the bound is not vacuous here


@pytest.mark.slow
def test_solver_registered_and_its_policy_runs_in_closed_loop():
    """adaptive-opt: reference "adaptive", cost = UB ≥ lower_bound, and the policy
    rebuilt by closed_loop_policy reproduces the certification run (its share given up at once aside)."""
    from deplbench.solvers.registry import get_solver, solver_info
    from deplbench.solvers.run import closed_loop, solve
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data(omega=0.9))
    cls = get_solver("adaptive-opt")
    assert cls.reference == "adaptive" and solver_info("adaptive-opt")["reference"] == "adaptive"
    r = solve(inst, "adaptive-opt", buckets=120, runs=1500, tune_runs=800, seed=4)
    assert r.status == "feasible" and r.plan is None
    assert r.lower_bound <= r.cost and r.diagnostics["p_success_lo"] >= inst.omega
    assert [f["omega"] for f in r.diagnostics["frontier"]] == A.frontier_levels(inst.omega)
    lbs = [f["lower_bound"] for f in r.diagnostics["frontier"]]
    assert lbs == sorted(lbs)                      # a stricter target never costs less
    cl = closed_loop(inst, r, runs=1500, seed=4)
    # the mix on the certification's seed: a run given up draws nothing, so the runs after it are not
    # the certification's; its success rate and mean cost are the mix's, (1 − q) × π's, up to sampling
    # (4 standard errors of the difference of two samples of 1500 runs)
    q, k = r.diagnostics["multipliers"]["give_up"], r.diagnostics["certification"]["successes"]
    p_mix = (1 - q) * k / 1500
    assert cl["plan"] is None and 0 < q
    assert abs(cl["policy"]["successes"] / 1500 - p_mix) <= 4 * math.sqrt(2 * p_mix * (1 - p_mix) / 1500)
    assert abs(cl["policy"]["cost"]["mean"] - r.diagnostics["cost_mean"]) <= 4 * math.sqrt(2) * cl["policy"]["cost_sem"]
    # cost is the upper confidence bound on that mean (empirical Bernstein), above it
    assert r.cost > r.diagnostics["cost_mean"]
    two = parse_instance(two_model_data(datasets=[{"name": "d0", "size": 1.0, "usefulness": 1.0},
                                                  {"name": "d1", "size": 1.0, "usefulness": 1.0}]))
    ok, why = cls.applies(two)
    assert not ok and why
    s = solve(two, "adaptive-opt")
    assert s.status == "skipped" and s.message == why


def test_cli_adaptive_json_text_and_bad_input(tmp_path, capsys):
    import json

    from deplbench.cli import main
    from tests.instance_data import two_model_data

    path = tmp_path / "small.json"
    parse_instance(two_model_data(omega=0.9)).save(path)
    # the deadline priced (--time-points 0): the output's form is the subject, not the carried passes' cost
    args = [str(path), "--one-grid", "--buckets", "60", "--runs", "400", "--tune-runs", "200", "--iters-lam", "2",
            "--iters-mu", "2", "--time-points", "0"]
    assert main(["adaptive", *args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("status", "lower_bound", "upper_bound", "p_success_lo", "frontier", "width", "confidence"):
        assert key in d
    assert d["status"] == "certified" and d["message"] == ""
    assert d["lower_bound"] <= d["cost_mean"] <= d["upper_bound"] and d["p_success_lo"] >= 0.9
    assert main(["adaptive", *args]) == 0
    out = capsys.readouterr().out
    assert "LB" in out and "UB" in out and "frontier" in out and "← ω" in out and "joint confidence 0.95" in out
    assert main(["adaptive", str(path), "--buckets", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "buckets" in err[0]
    for bad in (["--width", "0"], ["--time-limit", "-1"], ["--omega", "1.5"]):
        assert main(["adaptive", str(path), *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {bad[0]} "), err
    for bad in (["--buckets", "1000000000"], ["--runs", "1000000", "--memory-limit", "0.001"]):
        assert main(["adaptive", str(path), *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "would need about" in err[0] and "memory budget" in err[0]
    assert main(["adaptive", str(path), "--runs", "10000000000"]) == 2     # beyond MAX_RUNS: no estimate needed
    assert capsys.readouterr().err.strip() == "error: --runs 10000000000: must be <= 1000000, got 10000000000"
    two = tmp_path / "two.json"
    parse_instance(two_model_data(datasets=[{"name": "d0", "size": 1.0, "usefulness": 1.0},
                                            {"name": "d1", "size": 1.0, "usefulness": 1.0}])).save(two)
    assert main(["adaptive", str(two)]) == 2
    assert capsys.readouterr().err.startswith("error: instance: ")


def test_cli_width_stops_at_the_width_asked_with_progress(tmp_path, capsys):
    """--width: grids doubled from --buckets until the estimated width meets it; one
    progress line per grid on stderr; the text says what stopped it."""
    import json

    from deplbench.cli import main
    from tests.instance_data import two_model_data

    path = tmp_path / "small.json"
    parse_instance(two_model_data(omega=0.9)).save(path)
    args = [str(path), "--buckets", "30", "--runs", "1000", "--tune-runs", "500", "--time-points", "0",
            "--width", "0.4"]
    assert main(["adaptive", *args, "--json"]) == 0
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    ref = d["refinement"]
    levels = ref["levels"]
    assert ref["stopped_by"] == "width" and ref["width_target"] == 0.4
    assert [lv["buckets"] for lv in levels] == [30 * 2**i for i in range(len(levels))] and len(levels) >= 2
    assert levels[-1]["width_estimate"] <= 0.4 < min(lv["width_estimate"] for lv in levels[:-1])
    assert d["grid"]["buckets"] == levels[-1]["buckets"]
    progress = [ln for ln in captured.err.splitlines() if ln.startswith("adaptive: ")]
    assert len(progress) == len(levels)
    assert main(["adaptive", *args[:-1], "0.001", "--time-limit", "0.05"]) in (0, 1)
    out = capsys.readouterr().out
    assert "target 0.1 % NOT met; stopped by time_limit" in out


def test_statuses_each_with_its_line(monkeypatch):
    """λ search not converged and a bound that is not positive: their own status and
    line (the unreachable target and the uncertified policy: test_adaptive_exact)."""
    from deplbench.formulations.adaptive import bracket as certify
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data(omega=0.9))
    real = certify._search_at

    def stuck(*a, **k):
        s = real(*a, **k)
        s.lam_converged = False
        return s

    monkeypatch.setattr(certify, "_search_at", stuck)
    b = A.adaptive_bounds(inst, buckets=60, runs=1000, tune_runs=500, time_points=0)
    assert b.status == "lambda_not_converged" and b.message.startswith("the time-price search did not converge")
    assert b.certified and b.messages == [b.message]
    # with the deadline carried the λ search only matters when the priced bound is the larger
    b = A.adaptive_bounds(inst, buckets=60, runs=1000, tune_runs=500, time_points=64, slopes=0)
    m = b.multipliers
    assert m["time_points"] == 64 and m["lower_bound_carried"] > m["lower_bound_priced"]
    assert b.status == "certified" and b.lower_bound == m["lower_bound_carried"]
    # the water-filling bound rests on λ (its tangent): it keeps the status when it is the larger
    b = A.adaptive_bounds(inst, buckets=60, runs=1000, tune_runs=500, time_points=64)
    m = b.multipliers
    assert m["lower_bound_source"] == "waterfill" and b.lower_bound == m["lower_bound_waterfill"]
    assert m["lower_bound_waterfill"] > max(m["lower_bound_carried"], m["lower_bound_priced"])
    assert b.status == "lambda_not_converged"

    def negative(*a, **k):
        s = stuck(*a, **k)
        for p in s.passes:
            p.value -= 1e6
        return s

    monkeypatch.setattr(certify, "_search_at", negative)
    b = A.adaptive_bounds(inst, buckets=60, runs=1000, tune_runs=500, time_points=0, slopes=0)
    assert b.status == "bound_not_positive" and len(b.messages) == 2
    assert math.isinf(b.width)
    r = A.adaptive_bounds(inst, buckets=60, runs=1000, tune_runs=500, max_buckets=120, width=1e-4, time_points=0,
                          slopes=0)
    assert r.refinement["stopped_by"] == "max_buckets" and r.grid["buckets"] == 120


def test_the_certified_policy_spends_its_risk_budget(small):
    """The share given up at once is read from the certificate, so that the mix is
    certified at ω itself (the whole risk budget is used), and the tuning's own share
    estimate uses a tuning seed that played no part in choosing the policy."""
    inst, res = small
    assert res.certified and res.p_success_lo == inst.omega
    assert 0.0 < res.multipliers["give_up"] < 1.0
    roles = {t["role"]: t["seed"] for t in res.tuning}
    assert roles["select"] != roles["share"] and res.certification["seed"] not in roles.values()


def test_give_up_share_and_second_moment():
    """give_up stops that share of the runs at once (low-discrepancy picks);
    the DP's second moment of the remaining compute time is ≥ its squared mean
    (Jensen), with equality when the loss terms are deterministic."""
    from deplbench.formulations.evaluation.closed_loop import simulate
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data(omega=0.9))
    chain = A.Chain(inst, 60, optimistic=False)
    p = A.dp(chain, 0.5, 1e4, keep=True)
    u, u2 = p.remaining[..., 0].astype(float), p.remaining[..., 2].astype(float)
    assert np.all(u2 >= u * u * (1 - 1e-5) - 1e-6) and np.any(u2 > u * u * (1 + 1e-3))
    pol = A.AdaptivePolicy(chain, p, 1.0)
    base = simulate(inst, pol, 4000, 9)
    mixed = simulate(inst, pol.with_give_up(0.3), 4000, 9)
    stopped = (mixed.epochs == 0).sum() - (base.epochs == 0).sum()
    assert abs(stopped / 4000 - 0.3) < 0.002
    with pytest.raises(PlanError, match="give_up"):
        A.AdaptivePolicy(chain, p, 1.0, give_up=1.0)
    det = parse_instance(tiny(models=[{**m, "improvement": {"kind": "point", "value": 1.0}} for m in tiny()["models"]]))
    q = A.dp(A.Chain(det, 6, optimistic=False), LAM, 10.0, keep=True)
    np.testing.assert_allclose(q.remaining[..., 2], q.remaining[..., 0] ** 2, rtol=1e-5, atol=1e-6)


def test_an_uncertified_policy_is_no_solution_with_no_upper_bound():
    """A policy that fails its certificate proves nothing: the solver answers
    ``no_solution`` (never ``infeasible``, which only an unreachable ω proves),
    with the proven lower bound, no cost, and the bracket has no width and no
    upper bound (its policy's cost is kept apart)."""
    from deplbench.solvers.run import solve
    from tests.instance_data import two_model_data

    inst = parse_instance(two_model_data(omega=0.9))
    # certify at a level the policy cannot reach on so few runs: ω = 0.9999 with 200 runs
    b = A.adaptive_bounds(inst.with_changes(omega=0.9999), buckets=60, runs=200, tune_runs=200, time_points=0)
    assert not b.certified and b.status != "unreachable"
    assert math.isinf(b.width)
    d = b.to_dict()
    assert d["upper_bound"] is None and d["uncertified_policy_cost"] == b.upper_bound
    r = solve(inst, "adaptive-opt", omega=0.9999, buckets=60, runs=200, tune_runs=200, time_points=0)
    assert r.status == "no_solution" and r.cost is None
    assert r.lower_bound is not None and r.lower_bound > 0
