"""DepL's expanded graph (solvers/expanded/graph.py): the vectorised DAG DP
against the networkx reference and against brute force, conservative
rounding, and monotonicity in η."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.errors import SolverError
from deplbench.solvers.expanded.graph import build_spec, solve_dp, solve_dp_labels
from deplbench.solvers.expanded.reference import (
    build_networkx,
    exact_loss_units,
    path_features,
    reachable_size,
    solve_networkx,
)


def random_features(rng, M=3, horizon=6):
    """Random real features of a small expanded graph (loss improves on average)."""
    weights = rng.uniform(0.5, 2.0, M)
    epoch_time = rng.uniform(0.5, 2.0, M)
    run_phi = -rng.uniform(0.5, 3.0, (horizon, M))
    jump = rng.uniform(0.0, 1.5, (M, M))
    np.fill_diagonal(jump, 0.0)
    allowed = rng.random((M, M)) < 0.7
    np.fill_diagonal(allowed, True)
    jump = np.where(allowed, jump, np.inf)
    return weights, epoch_time, run_phi, jump, allowed


def brute_force(spec):
    """Least-weight model sequence that is feasible in the spec's rounded arithmetic."""
    best = math.inf
    for K in range(1, spec.horizon + 1):
        for seq in itertools.product(range(spec.n_models), repeat=K):
            if any(not spec.allowed[a, b] for a, b in zip(seq[:-1], seq[1:])):
                continue
            # every prefix must stay represented (time <= η, loss bucket <= J)
            ok = True
            i, j = 0, spec.start_loss
            for k, m in enumerate(seq):
                i += int(spec.time_steps[m])
                j += int(spec.first_shift[m]) if k == 0 else int(spec.shift[k, seq[k - 1], m])
                if i > spec.n_time or j > spec.n_loss or (j <= 0 and k < K - 1):
                    ok = False
                    break
            if ok and j <= 0:
                best = min(best, float(sum(spec.weights[m] for m in seq)))
    return best


def random_spec(rng, M: int, horizon: int, etas: tuple[int, int], rounding: str):
    """A random graph spec and its switch matrix: features, then η drawn from
    [etas[0], etas[1]), then ℓmax; Tmax is 0.8 × mean epoch time × K̄, ℓ(0) = 10."""
    w, tau, run, jump, allowed = random_features(rng, M, horizon)
    eta = int(rng.integers(*etas))
    spec = build_spec(w, tau, time_max=float(tau.mean() * horizon * 0.8), run_phi=run, jump_phi=jump,
                      allowed=allowed, initial_loss=10.0, target=10.0 - float(rng.uniform(2, 8)), eta=eta,
                      rounding=rounding)
    return spec, allowed


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("rounding", ["up", "nearest"])
def test_dp_matches_networkx_and_brute_force(seed, rounding):
    rng = np.random.default_rng(seed)
    M, horizon = (2, 6) if seed % 2 else (3, 5)
    spec, allowed = random_spec(rng, M, horizon, (5, 13), rounding)
    dp = solve_dp(spec)
    ref = solve_networkx(spec)
    full = solve_networkx(spec, full=True)  # the paper's graph: every (m, k, i, j)
    bf = brute_force(spec)
    assert dp.feasible == ref.feasible == full.feasible == math.isfinite(bf)
    assert full.vertices >= ref.vertices
    if dp.feasible:
        assert dp.weight == pytest.approx(ref.weight, rel=1e-12)
        assert dp.weight == pytest.approx(full.weight, rel=1e-12)
        assert dp.weight == pytest.approx(bf, rel=1e-12)
        # the recovered path really has that weight and reaches Ω in the graph
        weight, i_end, j_end = path_features(spec, dp.models)
        assert weight == pytest.approx(dp.weight, rel=1e-12)
        assert i_end <= spec.n_time and j_end <= 0
        assert all(allowed[a, b] for a, b in zip(dp.models[:-1], dp.models[1:]))


def test_up_rounding_is_conservative_in_real_quantities():
    """Every path the 'up' graph accepts meets the real time budget and the real
    (unrounded) surrogate target."""
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        w, tau, run, jump, allowed = random_features(rng, 3, 8)
        time_max = float(tau.mean() * 5)
        target = 10.0 - float(rng.uniform(3, 12))
        spec = build_spec(w, tau, time_max, run, jump, allowed, 10.0, target, eta=int(rng.integers(4, 40)))
        res = solve_dp(spec)
        if not res.feasible:
            continue
        m = res.models
        real_time = float(tau[m].sum())
        real_loss = 10.0 + float(run[np.arange(len(m)), m].sum()) + float(
            sum(jump[a, b] for a, b in zip(m[:-1], m[1:]) if a != b))
        assert real_time <= time_max * (1 + 1e-12)
        assert real_loss <= target + 1e-9


def test_weight_non_increasing_when_eta_doubles():
    """Nested grids (η doubling) only add feasible paths: the optimum cannot rise."""
    rng = np.random.default_rng(7)
    w, tau, run, jump, allowed = random_features(rng, 3, 10)
    weights = []
    for eta in (4, 8, 16, 32, 64, 128):
        spec = build_spec(w, tau, float(tau.mean() * 7), run, jump, allowed, 20.0, 20.0 - 14.0, eta)
        res = solve_dp(spec)
        weights.append(res.weight)
    assert all(b <= a + 1e-12 for a, b in zip(weights, weights[1:]))
    assert math.isfinite(weights[-1])
    assert weights[-1] < weights[0] or not math.isfinite(weights[0])


def test_graph_sizes_are_reported_and_consistent():
    rng = np.random.default_rng(3)
    w, tau, run, jump, allowed = random_features(rng, 3, 6)
    spec = build_spec(w, tau, float(tau.mean() * 6), run, jump, allowed, 10.0, 2.0, eta=10)
    g = build_networkx(spec)
    dp = solve_dp(spec)
    assert g.number_of_nodes() > 2 and g.number_of_edges() > 0
    assert 2 < dp.vertices <= spec.nominal_vertices
    # The DP prunes states that cannot beat the best sink; never more than the full graph.
    assert dp.edges <= g.number_of_edges()


def test_infeasible_graph():
    w = np.array([1.0])
    spec = build_spec(w, [1.0], 3.0, np.full((5, 1), -1.0), np.zeros((1, 1)), np.ones((1, 1), bool),
                      10.0, 0.0, eta=10)  # needs 10 epochs of time 1 with Tmax 3
    assert not solve_dp(spec).feasible
    assert not solve_networkx(spec).feasible


def test_bad_parameters():
    with pytest.raises(SolverError, match="eta"):
        build_spec([1.0], [1.0], 1.0, np.zeros((2, 1)), np.zeros((1, 1)), np.ones((1, 1), bool), 1.0, 0.0, eta=0)
    with pytest.raises(SolverError, match="rounding"):
        build_spec([1.0], [1.0], 1.0, np.zeros((2, 1)), np.zeros((1, 1)), np.ones((1, 1), bool), 1.0, 0.0,
                   eta=3, rounding="down")


def brute_force_exact(spec):
    """Least weight over model sequences whose *exact* surrogate meets the target
    (time still in rounded buckets, as in the label DP)."""
    best = math.inf
    for K in range(1, spec.horizon + 1):
        for seq in itertools.product(range(spec.n_models), repeat=K):
            if any(not spec.allowed[a, b] for a, b in zip(seq[:-1], seq[1:])):
                continue
            if sum(int(spec.time_steps[m]) for m in seq) > spec.n_time:
                continue
            u = [spec.start_exact + float(spec.first_exact[seq[0]])]
            for k in range(1, K):
                u.append(u[-1] + float(spec.shift_exact[k, seq[k - 1], seq[k]]))
            # a path stops at the first feasible epoch and never leaves the axis top
            if u[-1] <= 0 and all(0 < x <= spec.n_loss for x in u[:-1]):
                best = min(best, float(sum(spec.weights[m] for m in seq)))
    return best


@pytest.mark.parametrize("seed", range(10))
def test_label_dp_is_exactly_feasible_and_never_beats_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    M, horizon = (2, 6) if seed % 2 else (3, 5)
    w, tau, run, jump, allowed = random_features(rng, M, horizon)
    spec = build_spec(w, tau, float(tau.mean() * horizon * 0.8), run, jump, allowed, 10.0,
                      10.0 - float(rng.uniform(2, 8)), eta=int(rng.integers(5, 13)), rounding="label")
    lab = solve_dp_labels(spec)
    exact = brute_force_exact(spec)
    up = solve_dp(build_spec(w, tau, float(tau.mean() * horizon * 0.8), run, jump, allowed, 10.0,
                             spec.target, eta=spec.n_time, rounding="up"))
    if up.feasible:  # a conservative path exists, so exact-feasible paths exist
        assert math.isfinite(exact)
    if not lab.feasible:
        return
    assert exact_loss_units(spec, lab.models) <= 1e-9
    assert sum(int(spec.time_steps[m]) for m in lab.models) <= spec.n_time
    assert lab.weight == pytest.approx(float(sum(w[m] for m in lab.models)), rel=1e-12)
    assert lab.weight >= exact - 1e-12


def test_label_dp_matches_brute_force_on_most_random_graphs():
    """Merging within buckets is the only approximation: with a fine loss axis
    it rarely loses the optimum."""
    hits = total = 0
    for seed in range(30):
        rng = np.random.default_rng(400 + seed)
        w, tau, run, jump, allowed = random_features(rng, 2, 6)
        spec = build_spec(w, tau, float(tau.mean() * 5), run, jump, allowed, 10.0,
                          10.0 - float(rng.uniform(2, 8)), eta=60, rounding="label")
        exact = brute_force_exact(spec)
        if not math.isfinite(exact):
            continue
        total += 1
        hits += solve_dp_labels(spec).weight == pytest.approx(exact, rel=1e-12)
    assert total >= 15 and hits >= 0.8 * total


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("rounding", ["up", "nearest"])
def test_reachable_size_equals_the_networkx_reference_graph(seed, rounding):
    """The vertex/edge work counter is exact — the networkx graph's size on small η."""
    rng = np.random.default_rng(100 + seed)
    M, horizon = (2, 7) if seed % 2 else (3, 5)
    spec, _ = random_spec(rng, M, horizon, (4, 15), rounding)
    g = build_networkx(spec)
    assert reachable_size(spec) == (g.number_of_nodes(), g.number_of_edges())
    assert reachable_size(spec) == reachable_size(spec)  # deterministic
