"""The deadline carried (formulations/adaptive/timed.py) against independent exact optima.

Two independent references: the exact solver of tiny lattice instances of
``tests.formulations.adaptive.exact_lattice`` (any closed-loop policy, the deadline on every run,
exact arithmetic; no communication time, capacity not binding), and a
deterministic instance with communication time and a binding capacity whose
optimum is a small convex allocation problem solved here by its KKT
conditions. The carried bound must stay below both, and where the deadline
binds on random runs it must beat the priced bound (E[T] ≤ Tmax) by a margin
the priced relaxation cannot reach: that test fails if the deadline regresses
to being priced.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction

import pytest

from deplbench.formulations import adaptive as A
from deplbench.instances.model import parse_instance
from tests.formulations.adaptive.exact_lattice import LAWS, SCALES, boundary, exact_optimum

POINTS = 256


def _both(inst, buckets=6, points=POINTS):
    chain = A.Chain(inst, buckets, optimistic=True)
    priced = A.lower_bound_search(chain, inst.omega, 6, 6)
    carried = A.timed_search(chain, inst.omega, points)
    return priced, carried


def _check_below(law, scales, points=POINTS):
    for kappa, tm in scales:
        inst, pmax = boundary(*law, kappa, tm)
        for w in (pmax, pmax - Fraction(1, 8)):
            inst_w = inst.with_changes(omega=float(w))
            opt = exact_optimum(inst_w, w)
            carried = A.timed_search(A.Chain(inst_w, 6, optimistic=True), inst_w.omega, points)
            lb = carried.bound()
            assert math.isfinite(lb) and lb > 0
            assert Decimal(lb) <= opt, (law, kappa, tm, float(w), lb, float(opt))
            # every pass is a bound at every level
            for level in A.frontier_levels(inst_w.omega):
                o = exact_optimum(inst_w, level)
                assert o is None or Decimal(carried.bound(level)) <= o
            # the slack is at most Δ of time per epoch: K̄ epochs of Tmax/G
            assert lb >= float(opt) * (1 - 1.5 * inst.horizon / points), (law, kappa, tm, lb, float(opt))


def test_carried_bound_below_the_exact_optimum():
    """Deadline-binding lattice instances (every epoch's money falls with its time), ω the
    highest reachable P(success) and a step below: LB ≤ the exact optimum, within K̄Δ of it."""
    _check_below(LAWS[1], SCALES[1:2], points=64)


@pytest.mark.slow
@pytest.mark.parametrize("law", LAWS, ids=[f"law{i}" for i in range(len(LAWS))])
def test_carried_bound_below_the_exact_optimum_all_laws_and_scales(law):
    _check_below(law, SCALES)


def test_carried_bound_strictly_tighter_than_the_priced_bound():
    """Where run lengths differ (K̄ = 4), pricing time (E[T] ≤ Tmax) leaves the bound
    ≥ 20 % below the optimum at both levels tried; the carried deadline, on 96 time
    points, is within 4 %."""
    inst, pmax = boundary(*LAWS[5], 1.0, 50.0)
    for w in (pmax, pmax - Fraction(1, 8)):
        inst_w = inst.with_changes(omega=float(w))
        opt = float(exact_optimum(inst_w, w))
        priced, carried = _both(inst_w, points=96)
        assert priced.bound() <= 0.8 * opt
        assert 0.96 * opt <= carried.bound() <= opt
        # the bracket reports the larger, and says which
        priced.extra = carried.passes
        assert priced.bound() == carried.bound() and priced.priced_bound() <= 0.8 * opt


def two_cluster(size: float, time_max: float, cap_a: float) -> dict:
    """Deterministic: model a needs exactly two epochs (improvement 1.6 × 0.25 = 0.4 per
    epoch from 1.0 to ℓmax 0.25); model b never improves. Cluster A cheap with capacity
    ``cap_a``, cluster B dear and roomy; communication time ``size`` per epoch."""
    return {
        "name": "two-cluster", "initial_loss": 1.0, "loss_max": 0.25, "omega": 0.9, "time_max": time_max,
        "horizon": 3,
        "models": [
            {"name": "a", "size": size, "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "point", "value": 1.6}},
            {"name": "b", "size": 0.0, "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "point", "value": 0.0}},
        ],
        "switches": [],
        "clusters": [{"name": "A", "capacity": cap_a, "unit_cost": 1.0, "bandwidth": 1.0},
                     {"name": "B", "capacity": 1e3, "unit_cost": 3.0, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    }


def kkt_optimum(inst) -> float:
    """The least cost of a run that succeeds: min Σ κᵢ c/tᵢ over two epochs and their
    clusters, Σ (tᵢ + s) ≤ Tmax, tᵢ ≥ c/rᵢ; for each cluster pair,
    tᵢ = max(c/rᵢ, √(κᵢ c/ν)) with ν bisected so the times fill the budget (KKT of a
    separable convex problem). The adaptive optimum at ω is ω times it (give up at
    once with probability 1 − ω, else run this plan)."""
    c = float(inst.model_compute[0])
    s = float(inst.model_size[0]) / float(inst.bandwidth[0])
    budget = float(inst.time_max) - 2 * s
    best = math.inf
    for pair in itertools.product(range(inst.n_clusters), repeat=2):
        kap = [float(inst.unit_cost[n]) for n in pair]
        tmin = [c / float(inst.capacity[n]) for n in pair]
        if sum(tmin) > budget:
            continue
        lo, hi = 1e-12, 1e12
        for _ in range(300):
            nu = math.sqrt(lo * hi)
            t = [max(a, math.sqrt(k * c / nu)) for a, k in zip(tmin, kap)]
            lo, hi = (nu, hi) if sum(t) > budget else (lo, nu)
        t = [max(a, math.sqrt(k * c / hi)) for a, k in zip(tmin, kap)]
        best = min(best, sum(k * c / ti for k, ti in zip(kap, t)))
    return best


@pytest.mark.parametrize("size, cap_a", [(0.0, 1e3), (1.0, 1e3), (1.0, 0.45), (2.0, 0.3)])
def test_communication_time_and_capacity_are_carried_exactly(size, cap_a):
    """Deterministic two-epoch instance, communication time s per epoch, cluster A's
    capacity binding or not: the carried bound is ≤ the KKT optimum and within
    2Δ of time of it; the priced bound is ≤ it too."""
    inst = parse_instance(two_cluster(size, 10.0, cap_a))
    opt = inst.omega * kkt_optimum(inst)
    priced, carried = _both(inst, buckets=12)
    lb = carried.bound()
    assert lb <= opt and priced.bound() <= opt
    slack = 2 * float(inst.time_max) / POINTS / (float(inst.time_max) - 2 * size)
    assert lb >= opt * (1 - 2.5 * slack), (lb, opt)


def test_carried_policy_never_misses_the_deadline_and_bounds_the_optimum():
    """The certified policy reads the pessimistic carried-deadline tables (cluster A's
    capacity binding): no run late, and UB ≥ the optimum ≥ LB; the runs that train
    cost at most 2Δ of time more than the KKT plan."""
    inst = parse_instance(two_cluster(1.0, 10.0, 0.45))
    plan = kkt_optimum(inst)
    opt = inst.omega * plan
    b = A.adaptive_bounds(inst, buckets=12, runs=2000, tune_runs=1000, seed=3)
    m = b.multipliers
    assert m["time_points"] == POINTS and m["time_points_policy"] == POINTS and m["scaling"] == "carried"
    assert b.status == "certified" and b.certification["deadline_missed"] == 0
    assert b.lower_bound <= opt <= b.upper_bound
    trained = b.cost_mean / (1 - b.multipliers["give_up"])
    assert plan <= trained <= plan * (1 + 4.0 * float(inst.time_max) / POINTS / 8.0)


def test_cli_time_points_option(tmp_path, capsys):
    """``--time-points``: 0 prices the deadline only, G ≥ 2 carries it (the JSON says which and
    gives both bounds), 1 is refused naming the field (exit 2)."""
    import json

    from deplbench.cli import main

    inst, _ = boundary(*LAWS[1], 1.0, 50.0)
    path = tmp_path / "tiny.json"
    inst.with_changes(omega=0.5).save(path)
    common = ["adaptive", str(path), "--one-grid", "--buckets", "6", "--runs", "500", "--tune-runs", "500",
              "--json", "--quiet", "--slopes", "0"]
    main([*common, "--time-points", "0"])
    priced = json.loads(capsys.readouterr().out)
    assert priced["multipliers"]["deadline"].startswith("priced") and priced["multipliers"]["time_points"] == 0
    main([*common, "--time-points", "64"])
    carried = json.loads(capsys.readouterr().out)
    m = carried["multipliers"]
    assert m["deadline"].startswith("carried on 64 time points") and m["time_points"] == 64
    assert carried["lower_bound"] == max(m["lower_bound_priced"], m["lower_bound_carried"])
    assert carried["lower_bound"] > priced["lower_bound"] == m["lower_bound_priced"]
    # the water-filling bound beside them (the default --slopes): the largest of the three is reported
    main([*common[:-2], "--time-points", "64"])
    both = json.loads(capsys.readouterr().out)
    m = both["multipliers"]
    assert m["deadline"].startswith("carried on 64 time points at 6 buckets; carried exactly by water-filling "
                                    "(64 slopes")
    assert both["lower_bound"] == max(m["lower_bound_priced"], m["lower_bound_carried"], m["lower_bound_waterfill"])
    assert main([*common, "--time-points", "1"]) == 2
    assert "--time-points 1: must be 0 (deadline priced) or an integer ≥ 2, got 1" in capsys.readouterr().err


@pytest.mark.parametrize("off", [0, 1])
def test_epoch_step_is_the_same_whatever_its_blocks(monkeypatch, off):
    """``timed._epoch_best`` takes the loss buckets in blocks of ``EPOCH_CELLS``: many blocks
    (8 buckets each) give the chosen values, failure probabilities and lags of one block, bit
    for bit, with ties, infinite charges, NaN and infinite expectations in the input."""
    import numpy as np

    from deplbench.formulations.adaptive import timed

    rng = np.random.default_rng(3)
    R, G1, Q, L1 = 2, 7, 2, 53
    ex = np.round(rng.uniform(0, 4, (R, G1, Q, L1)), 1)      # rounded: many ties between lags
    ex[0, 2, 0, 5:9] = np.inf
    ex[1, 3, 0, 11] = np.nan
    money = np.round(rng.uniform(0, 2, (R, G1)), 1)
    money[:, 0] = np.inf
    money[1, 4] = np.inf
    monkeypatch.setattr(timed, "EPOCH_CELLS", 10 ** 9)
    one = timed._epoch_best(ex, money, off)
    monkeypatch.setattr(timed, "EPOCH_CELLS", 1)
    many = timed._epoch_best(ex, money, off)
    for a, b in zip(one, many):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)
        assert np.array_equal(np.signbit(a), np.signbit(b))
