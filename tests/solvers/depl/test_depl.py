"""DepL and best-exp (solvers/depl/depl.py) end to end, plus the quantile
transforms (solvers/depl/quantile_transform.py) and the (1+ε) allocation stage
(solvers/depl/vnf_allocation.py)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from deplbench.errors import SolverError
from deplbench.formulations.evaluation.evaluate import simulate_trajectories
from deplbench.formulations.exact.knapsack import covering_dp
from deplbench.formulations.model.allocation import allocate
from deplbench.formulations.model.scenarios import quantile_rank
from deplbench.instances.distributions import InverseGamma, StudentT
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from deplbench.solvers.depl import calibration as calibration_module
from deplbench.solvers.depl import stages as stages_module
from deplbench.solvers.depl.quantile_transform import (
    LossModel,
    build_bounds,
    chernoff_bound,
    log_laplace,
    log_mgf,
    tangent_bound,
)
from deplbench.solvers.depl.vnf_allocation import place_and_allocate
from deplbench.solvers.run import solve


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def alexnet9():
    return generate("realistic", family="alexnet", loss_max=9)


def knapsack_optimum(inst):
    items = inst.provenance.items
    sol = covering_dp(items["weights"], items["values"], items["target"], inst.horizon)
    return sol.weight**2 / inst.time_max


def depl_cost(inst, **params):
    # Exact re-allocation isolates the effect of η from that of ε.
    params.setdefault("reoptimize", True)
    res = solve(inst, "depl", evaluate=False, **params)
    return res.cost if res.status == "feasible" else math.inf


# --------------------------------------------------------- knapsack-derived
KNAPSACK = [("uncorrelated", 0), ("strongly", 1), ("weakly", 2), ("subset-sum", 3)]


@pytest.mark.parametrize("item_class,seed", KNAPSACK)
@pytest.mark.slow
def test_knapsack_ratio_never_below_one_and_falls_with_eta(item_class, seed):
    """Deterministic knapsack instances (Property 1 run forwards): the DP of
    ``formulations.exact.knapsack`` is the exact optimum. With conservative rounding
    the grids are nested when η doubles, so the ratio is non-increasing; it
    must come close to 1 at the finest η."""
    inst = generate("knapsack", item_class=item_class, n_items=6, R=30, horizon=8, seed=seed)
    opt = knapsack_optimum(inst)
    ratios = [depl_cost(inst, eta=eta, rounding="up") / opt for eta in (8, 32, 128, 512)]
    assert all(r >= 1 - 1e-9 for r in ratios)
    assert all(b <= a + 1e-9 for a, b in zip(ratios, ratios[1:])), ratios
    assert ratios[-1] <= 1.05, ratios
    assert ratios[-1] < ratios[0] or ratios[0] <= 1 + 1e-9
    # The default exact-label axis has no accumulated rounding: on these
    # integer instances it reaches the optimum once η resolves the values.
    label = [depl_cost(inst, eta=eta) / opt for eta in (8, 128, 512)]
    assert all(r >= 1 - 1e-9 for r in label)
    assert label[-1] <= 1 + 1e-9 and label[-1] <= label[0] + 1e-9


# ------------------------------------------------------------ realistic family
@pytest.mark.parametrize("rounding", ["label", "nearest", "up"])
@pytest.mark.slow
def test_depl_plan_passes_the_evaluator(alexnet9, rounding):
    res = solve(alexnet9, "depl", check_samples=20_000, rounding=rounding)
    assert res.status == "feasible", res.message
    ev = res.evaluation
    assert ev["feasible"] and ev["constraints_ok"] and ev["verdict"] == "feasible"
    assert ev["quantile"] <= alexnet9.loss_max
    # The proven Chernoff bound of the plan is above the measured quantile.
    d = res.diagnostics
    assert d["quantile_bound"] <= alexnet9.loss_max + 1e-9
    assert d["quantile_bound"] >= ev["quantile_ci"][0]
    assert d["bound"]["method"] == "chernoff" and "proven" in d["bound"]["guarantee"]
    # diagnostics the report relies on
    for key in ("datasets", "models", "allocation", "evaluation", "total"):
        assert d["stage_seconds"][key] >= 0
    assert d["graph_vertices"] > 0 and d["graph_edges"] > 0 and d["graphs"]
    assert "submodularity" in d and d["dataset_choices"][0]["subset"] == ["d0"]
    json.dumps(res.to_dict())  # JSON-safe (no numpy scalars)


@pytest.mark.slow
def test_unreachable_target_is_reported_no_solution(alexnet9):
    """DepL finding no path proves nothing: no_solution, not infeasible (docs/DESIGN.md)."""
    inst = alexnet9.with_changes(loss_max=0.5)
    res = solve(inst, "depl", check_samples=2000)
    assert res.status == "no_solution" and res.plan is None
    assert "no model path" in res.message


@pytest.mark.slow
def test_out_of_sample_failure_tightens_and_retries(alexnet9):
    """With the expected loss as surrogate the first plan misses the quantile
    target; DepL must tighten ℓmax and retry, or report no_solution."""
    res = solve(alexnet9, "depl", quantile_method="expected", max_retries=6, check_samples=20_000)
    d = res.diagnostics
    assert len(d["retries"]) >= 1
    assert d["retries"][0]["quantile"] > alexnet9.loss_max
    assert res.status == "feasible" and res.evaluation["feasible"]
    assert d["loss_max_effective"] < alexnet9.loss_max
    res0 = solve(alexnet9, "depl", quantile_method="expected", max_retries=0, check_samples=20_000)
    assert res0.status == "no_solution" and res0.plan is None
    assert "out-of-sample" in res0.message


@pytest.mark.slow
def test_best_exp_trains_on_until_quantile_met(alexnet9):
    res = solve(alexnet9, "best-exp", check_samples=20_000)
    assert res.status == "feasible", res.message
    assert res.evaluation["feasible"]
    t = res.diagnostics["train_on"]
    assert t["epochs"] == t["base_epochs"] + t["extra_epochs"] == res.plan.n_epochs
    # its stage-2 plan meets only the expected loss: its quantile was above ℓmax
    assert t["quantile_base"] > alexnet9.loss_max or t["extra_epochs"] == 0
    assert res.diagnostics["quantile_method"] == "expected"


def test_parameter_validation(alexnet9):
    with pytest.raises(SolverError, match="quantile_method"):
        solve(alexnet9, "depl", quantile_method="bogus")
    with pytest.raises(SolverError, match="eta"):
        solve(alexnet9, "depl", eta=0)
    with pytest.raises(SolverError, match="epsilon"):
        solve(alexnet9, "depl", epsilon=0)
    with pytest.raises(SolverError, match="quantile_method"):
        solve(alexnet9, "best-exp", quantile_method="chernoff")


# ------------------------------------------------------------------ backtracking
def two_dataset_instance():
    """{d0} minimises K̂·T̂ (tiny and slow to learn from) but needs ~73 epochs
    > K̄ = 20; the next choice {d1} needs 10."""
    return parse_instance({
        "name": "backtrack", "initial_loss": 11.0, "loss_max": 1.0, "omega": 0.9, "time_max": 10.0,
        "horizon": 20,
        "models": [{"name": "m", "size": 0.0, "compute": 1.0, "loss_scale": 1.0, "decay": "none",
                    "improvement": {"kind": "point", "value": 1.0}}],
        "clusters": [{"name": "A", "capacity": 100.0, "unit_cost": 1.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 0.1, "usefulness": 1.0},
                     {"name": "d1", "size": 1.0, "usefulness": 1.0}],
    })


def test_dataset_blacklist_backtrack():
    inst = two_dataset_instance()
    res = solve(inst, "depl")
    d = res.diagnostics
    assert [c["subset"] for c in d["dataset_choices"][:2]] == [["d0"], ["d1"]]
    assert d["backtracks"][0] == {"stage": "models", "action": "blacklist datasets", "datasets": ["d0"]}
    assert res.status == "feasible" and res.plan.datasets == {"A": ["d1"]}
    assert res.plan.n_epochs == 10
    res0 = solve(inst, "depl", max_backtracks=0)
    assert res0.status == "no_solution"     # the d1 plan above exists: nothing was proven


@pytest.mark.slow
def test_allocation_failure_blacklists_the_path(monkeypatch, alexnet9):
    real = stages_module.place_and_allocate
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            from deplbench.solvers.depl.vnf_allocation import PlacementResult
            return PlacementResult(False, reason="injected failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(stages_module, "place_and_allocate", flaky)
    res = solve(alexnet9, "depl", check_samples=5000)
    assert calls["n"] >= 2
    assert res.diagnostics["backtracks"][0]["stage"] == "allocation"
    assert res.diagnostics["backtracks"][0]["reason"] == "injected failure"
    assert res.status == "feasible" and res.evaluation["feasible"]


@pytest.mark.slow
def test_datasets_family_with_transfer_costs_runs():
    inst = generate("datasets", n_datasets=4, seed=1)
    res = solve(inst, "depl", check_samples=5000)
    assert res.status in ("feasible", "no_solution"), res.message
    assert res.diagnostics["submodularity"]["exhaustive"]
    if res.status == "feasible":
        assert res.evaluation["feasible"]
        ex = res.diagnostics["dataset_exhaustive"]["value"]
        assert res.diagnostics["dataset_choices"][0]["objective"] >= ex - 1e-9 * abs(ex)


# -------------------------------------------------------------- quantile transforms
def test_laplace_transform_of_inverse_gamma_is_a_tight_upper_bound():
    X = InverseGamma.from_moments(1.0, 0.01)  # Table I "intermediate"
    t = np.array([0.1, 1.0, 5.0, 20.0])
    a, b = X.shape, X.scale

    def exact(tt):  # E[e^{-tX}] = 2 (bt)^{a/2} K_a(2 sqrt(bt)) / Γ(a), quadrature as a check
        val, _ = integrate.quad(lambda x: np.exp(-tt * x) * stats.invgamma.pdf(x, a, scale=b), 0, np.inf,
                                limit=200, epsabs=0, epsrel=1e-12)
        return math.log(val)

    grid = log_laplace(X, t)
    ref = np.array([exact(tt) for tt in t])
    bessel = np.log(2) + (a / 2) * np.log(b * t) + np.log(special.kv(a, 2 * np.sqrt(b * t))) - special.gammaln(a)
    np.testing.assert_allclose(ref, bessel, rtol=1e-7)
    assert np.all(grid >= ref - 1e-10)
    np.testing.assert_allclose(grid, ref, rtol=5e-3, atol=5e-3)


def test_truncated_student_t_mgf_is_a_tight_upper_bound():
    J = StudentT(df=4, loc=0.25, scale=0.1)
    delta, theta = 1e-5, 3.0
    tau = float(J.ppf(1 - delta))
    val, _ = integrate.quad(lambda x: np.exp(theta * x) * J._frozen().pdf(x), -np.inf, tau, limit=200)
    exact = math.log(val + delta * math.exp(theta * tau))
    got = log_mgf(J, theta, delta)
    assert exact - 1e-12 <= got <= exact + 5e-3


@pytest.mark.slow
def test_chernoff_bound_covers_the_simulated_quantile(alexnet9):
    """For fixed model sequences, every surrogate of the grid (chernoff,
    cantelli) bounds the Monte-Carlo ω-quantile; the normal one only approximates it."""
    inst = alexnet9
    lm = LossModel.from_instance(inst, gamma=1.0)
    rng = np.random.default_rng(5)
    seqs = [[1] * 40, [0] * 20 + [1] * 20, [0] * 10 + [2] * 30]
    n = 40_000
    rank = quantile_rank(inst.omega, n)
    for seq in seqs:
        traj = simulate_trajectories(inst, np.array(seq), np.ones(len(seq)), n, rng)
        q = float(np.partition(traj[:, -1], rank - 1)[rank - 1])
        for b in build_bounds(lm, "chernoff", 5, ref_model=0, ref_epochs=40):
            assert b.path_bound(inst.initial_loss, seq) >= q
        for b in build_bounds(lm, "cantelli", 3, ref_model=0, ref_epochs=40):
            assert b.path_bound(inst.initial_loss, seq) >= q
        best = min(b.path_bound(inst.initial_loss, seq) for b in build_bounds(lm, "chernoff", 9, 0, 40))
        assert best - q < 0.25 * (inst.initial_loss - q)  # not vacuous
        mean = inst.initial_loss + float(lm.mean_phi()[0][np.arange(len(seq)), seq].sum()) + sum(
            lm.mean_phi()[1][a, b] for a, b in zip(seq[:-1], seq[1:]) if a != b)
        assert build_bounds(lm, "expected")[0].path_bound(inst.initial_loss, seq) == pytest.approx(mean)


def test_cantelli_needs_finite_variance():
    inst = generate("realistic", family="alexnet").model_copy()
    lm = LossModel.from_instance(inst, 1.0)
    heavy = {pair: StudentT(df=2.0, loc=0.2, scale=0.1) for pair in lm.jumps}
    lm2 = LossModel(lm.run_coef, lm.improvement, heavy, lm.allowed, lm.omega)
    with pytest.raises(SolverError, match="infinite variance"):
        tangent_bound(lm2, "cantelli", 1.0)
    # chernoff still works: the df = 2 jumps are truncated, the tail mass is charged to ω
    b = chernoff_bound(lm2, 2.0, tail_share=0.1)
    assert b.tail_delta > 0 and np.all(np.isfinite(b.jump_phi[lm2.allowed]))


def test_deterministic_instances_use_the_exact_loss():
    inst = generate("knapsack", n_items=4, horizon=5, seed=0)
    lm = LossModel.from_instance(inst, 1.0)
    (b,) = build_bounds(lm, "chernoff", 5)
    assert b.method == "exact" and b.offset == 0.0
    v = np.array(inst.provenance.items["values"], dtype=float)
    np.testing.assert_allclose(b.run_phi, -np.broadcast_to(v, b.run_phi.shape))


# ------------------------------------------------------------- (1+ε) allocation
def brute_force_placement(compute, comm, kappa, cap, time_max, transfer=None):
    K, N = comm.shape
    best = math.inf
    for seq in itertools.product(range(N), repeat=K):
        seq = np.array(seq)
        a = allocate(compute, comm[np.arange(K), seq], kappa[seq], cap[seq], time_max)
        if a.feasible:
            extra = transfer(tuple(sorted(set(seq.tolist())))) if transfer else 0.0
            best = min(best, a.cost + extra)
    return best


def placement_case(seed, K=6):
    rng = np.random.default_rng(seed)
    compute = 100.0 * rng.choice([1.0, 1.4, 2.6], K)
    kappa = np.array([1.0, 1.2])
    cap = np.array([100.0, 50.0])
    comm = np.column_stack([np.full(K, 0.5), np.full(K, 0.25)]) * rng.uniform(0.5, 1.5, K)[:, None]
    fastest = float(np.sum(np.min(compute[:, None] / cap[None, :] + comm, axis=1)))
    return compute, comm, kappa, cap, fastest * rng.uniform(1.1, 2.5)


@pytest.mark.parametrize("seed", range(5))
def test_placement_is_within_one_plus_epsilon(seed):
    compute, comm, kappa, cap, tmax = placement_case(seed)
    opt = brute_force_placement(compute, comm, kappa, cap, tmax)
    ratios, states = [], []
    for eps in (0.5, 0.1, 0.02):
        res = place_and_allocate(compute, comm, kappa, cap, tmax, eps, group_key=compute.tolist())
        assert res.feasible and res.guarantee
        K = compute.size
        a = allocate(compute, comm[np.arange(K), res.clusters], kappa[res.clusters], cap[res.clusters], tmax)
        assert opt * (1 - 1e-9) <= a.cost <= res.grid_cost * (1 + 1e-9)
        assert res.grid_cost <= (1 + eps) * opt * (1 + 1e-9)
        assert res.lower_bound <= opt * (1 + 1e-9)
        # the grid allocation itself meets the deadline and the capacities
        t = np.sum(compute / res.x + comm[np.arange(K), res.clusters])
        assert t <= tmax * (1 + 1e-9) and np.all(res.x <= cap[res.clusters] * (1 + 1e-12))
        ratios.append(res.grid_cost / opt)
        states.append(res.states)
    assert ratios[-1] <= ratios[0] + 1e-12
    assert states[0] < states[1] < states[2]  # work grows as ε shrinks


def test_placement_with_transfer_costs_and_printed_rule():
    compute, comm, kappa, cap, tmax = placement_case(3, K=5)
    beta = np.array([40.0, 5.0])

    def transfer(clusters):
        return float(beta[list(clusters)].sum())

    opt = brute_force_placement(compute, comm, kappa, cap, tmax, transfer)
    res = place_and_allocate(compute, comm, kappa, cap, tmax, 0.05, subset_cost=transfer)
    assert res.feasible and opt * (1 - 1e-9) <= res.grid_cost <= 1.05 * opt * (1 + 1e-9)
    single = place_and_allocate(compute, comm, kappa, cap, tmax, 0.05, single_cluster=True)
    if single.feasible:
        assert len(set(single.clusters.tolist())) == 1
    tight = place_and_allocate(compute, comm, kappa, cap, 1e-3, 0.1)
    assert not tight.feasible and tight.reason


# ------------------------------------------------------------- calibrated DepL
@pytest.fixture(scope="module")
def calibrated9(alexnet9):
    return solve(alexnet9, "depl", evaluate=False, calibrate=True)


def _plan_signature(res):
    return [(e.model, e.cluster, e.allocation) for e in res.plan.epochs], res.plan.datasets


@pytest.mark.slow
def test_default_is_unchanged_by_the_calibrate_parameter(alexnet9, calibrated9):
    """calibrate defaults to False, and calibrate=True starts from exactly the
    default's proven plan (same cost) before it searches."""
    plain = solve(alexnet9, "depl", evaluate=False)
    off = solve(alexnet9, "depl", evaluate=False, calibrate=False)
    assert plain.params["calibrate"] is False
    assert _plan_signature(plain) == _plan_signature(off) and plain.cost == off.cost
    assert plain.diagnostics["guarantee"] == "proven" and "calibration" not in plain.diagnostics
    assert plain.diagnostics["quantile_bound"] <= alexnet9.loss_max + 1e-9
    assert calibrated9.diagnostics["calibration"]["base_cost"] == pytest.approx(plain.cost, rel=1e-12)


@pytest.mark.slow
def test_calibrated_cost_not_above_default_and_its_own_test_accepts_it(alexnet9, calibrated9):
    res = calibrated9
    assert res.status == "feasible", res.message
    d = res.diagnostics
    cal = d["calibration"]
    default_cost = cal["base_cost"]
    assert res.cost <= default_cost * (1 + 1e-12)
    # On this instance the proven bound leaves room: calibration must use it.
    assert d["guarantee"] == "statistical" and res.cost < 0.97 * default_cost
    assert cal["improved"] and 1 <= len(cal["tests"]) <= calibration_module.CALIBRATION_STEPS
    # The returned plan is the first (and only) test that passed, and
    # re-running that test (its seed, level and sample count) accepts it.
    passed = [t for t in cal["tests"] if t["passed"]]
    assert len(passed) == 1 and cal["tests"][-1] is passed[0] and passed[0]["cost"] == pytest.approx(res.cost)
    level = cal["confidence_per_test"]
    assert level == pytest.approx(1 - 0.05 / calibration_module.CALIBRATION_STEPS)
    ev = calibration_module.evaluate_plan(alexnet9, res.plan, samples=passed[0]["samples"], seed=passed[0]["seed"],
                                   confidence=level, trajectory=False)
    assert ev.feasible and ev.quantile_ci[1] <= alexnet9.loss_max
    # Test seeds are DepL's own: never the suite's evaluation seed (0) nor the first check's.
    seeds = {t["seed"] for t in cal["tests"]}
    assert 0 not in seeds and stages_module.check_seed(0) not in seeds
    assert "statistical" in d["bound"]["guarantee"]
    json.dumps(res.to_dict())


@pytest.mark.slow
def test_calibration_never_returns_a_plan_its_test_rejects(monkeypatch, alexnet9):
    """Make every calibration test fail: DepL must fall back on the proven plan."""
    real = calibration_module.evaluate_plan
    calls = []

    def rejecting(instance, plan, samples=100_000, seed=0, confidence=0.95, trajectory=True):
        ev = real(instance, plan, samples=samples, seed=seed, confidence=confidence, trajectory=trajectory)
        if seed != stages_module.check_seed(0):  # a calibration test
            calls.append(seed)
            ev.verdict, ev.feasible = "infeasible", False
        return ev

    monkeypatch.setattr(calibration_module, "evaluate_plan", rejecting)
    res = solve(alexnet9, "depl", evaluate=False, calibrate=True, check_samples=5000)
    plain = solve(alexnet9, "depl", evaluate=False, check_samples=5000)
    cal = res.diagnostics["calibration"]
    assert calls and len(calls) == len(cal["tests"]) <= calibration_module.CALIBRATION_STEPS
    assert not cal["improved"] and all(not t["passed"] for t in cal["tests"])
    assert res.status == "feasible" and res.diagnostics["guarantee"] == "proven"
    assert _plan_signature(res) == _plan_signature(plain)


def test_calibration_is_skipped_on_deterministic_instances():
    inst = generate("knapsack", n_items=4, horizon=5, seed=0)
    res = solve(inst, "depl", evaluate=False, calibrate=True)
    assert res.status == "feasible"
    assert "deterministic" in res.diagnostics["calibration"]["skipped"]
    assert res.diagnostics["guarantee"] == "proven"
    assert res.cost == pytest.approx(solve(inst, "depl", evaluate=False).cost)


def test_best_exp_has_no_calibrate_parameter(alexnet9):
    with pytest.raises(SolverError, match="calibrate"):
        solve(alexnet9, "best-exp", calibrate=True)


def test_best_exp_is_composed_not_derived_from_depl():
    """best-exp shares DepL's stages and the one train-on rule
    instead of subclassing DepL and deleting parameters."""
    from deplbench.solvers.baselines.best_exp import BestExp
    from deplbench.solvers.depl.depl import DepL
    from deplbench.solvers.depl.stages import LOOP_PARAMS

    assert not issubclass(BestExp, DepL)
    assert set(BestExp.parameters) == set(LOOP_PARAMS)
    assert set(LOOP_PARAMS) < set(DepL.parameters)
