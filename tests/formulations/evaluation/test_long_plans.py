"""Long plans under the default evaluation, every evaluation checked against a reference simulation.

The block layout (which draw goes to which trajectory) is checked against a
reference rule written out below; the simulation of a block holds two values
per trajectory value (the draws and the trajectory), where the straightforward
reference simulation below (a zero step array, then a running sum) holds three
or more, so the final losses and a chunk of the bands fit beside one block
within the default 2 GiB: the default 50,000 samples evaluate plans of
K̄ = 4000 epochs. The reference simulation is the bit-for-bit check.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import deplbench.formulations.evaluation.evaluate as evaluate_module
import deplbench.formulations.evaluation.memory as memory_module
from deplbench.errors import PlanError
from deplbench.formulations.evaluation.evaluate import check_evaluation_memory, evaluate_plan
from deplbench.instances.model import parse_instance
from deplbench.solvers.run import DEFAULT_EVAL_SAMPLES, check_solve_arguments
from tests.formulations.test_evaluate import plan, random_instance


def _reference_block_size(n_epochs: int) -> int:
    """The reference block rule: at most 25,000 trajectories, the 2 GiB budget over 24 B per value."""
    return max(1, min(25_000, (2 * 2**30) // ((n_epochs + 1) * 24)))


def _reference_simulate(instance, models, gammas, n, rng):
    """The reference simulation: a zero step array, then ℓ(0) plus its running sum."""
    models = np.asarray(models, dtype=int)
    K = models.size
    steps = np.zeros((n, K))
    if K:
        scale = gammas * instance.run_scale_for(models.size)[np.arange(models.size), models]
        for m in np.unique(models):
            cols = np.nonzero(models == m)[0]
            steps[:, cols] -= scale[cols] * instance.models[m].improvement.sample(rng, (n, cols.size))
        switch_epochs = [k for k in range(1, K) if models[k] != models[k - 1]]
        by_pair: dict[int, list[int]] = {}
        for k in switch_epochs:
            p = instance.switch_index.get((int(models[k - 1]), int(models[k])))
            if p is not None:
                by_pair.setdefault(p, []).append(k)
        for p in sorted(by_pair):
            cols = np.array(by_pair[p])
            steps[:, cols] += instance.switches[p].jump.sample(rng, (n, cols.size))
    traj = np.empty((n, K + 1))
    traj[:, 0] = instance.initial_loss
    np.cumsum(steps, axis=1, out=traj[:, 1:])
    traj[:, 1:] += instance.initial_loss
    return traj


def _instance(horizon: int = 40, back=None, **laws):
    """Both models random (inverse gamma, empirical), the switch jump Student t; with ``back`` a
    p → m switch too, with that jump law."""
    data = {**random_instance(0.9), "horizon": horizon}
    data["models"][1]["improvement"] = laws.get("p", {"kind": "empirical", "samples": [0.2, 0.5, 0.9, 1.4]})
    if back is not None:
        data["switches"].append({**data["switches"][0], "from_model": "p", "to_model": "m", "jump": back})
    return parse_instance(data)


#: A jump law whose sampler makes temporaries of the sample's size.
INV_GAMMA_JUMP = {"kind": "inverse_gamma", "shape": 12.0, "scale": 0.1}


PLANS = {
    "one model": [("m", "A", 5.0)] * 12,
    "one switch": [("m", "A", 5.0)] * 6 + [("p", "A", 5.0)] * 6,
    # m → p has a jump law, p → m is forbidden (simulated without a jump): both branches
    "back and forth": [("m", "A", 5.0), ("p", "A", 5.0)] * 5 + [("m", "A", 5.0)] * 2,
    "no epoch": [],
}


@pytest.mark.parametrize("n_epochs", [0, 1, 12, 3000, 3503, 3578, 3579, 4000, 20_000, 10**6, 89_478_484])
def test_the_block_layout_is_the_reference_rule(n_epochs):
    assert memory_module.block_size(n_epochs) == _reference_block_size(n_epochs)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_trajectories_are_the_reference_ones_bit_for_bit(name):
    inst = _instance()
    models, _, gammas = evaluate_module.plan_indices(inst, plan(PLANS[name], {"A": ["d0"]}))
    for seed in (0, 7):
        got = evaluate_module.simulate_trajectories(inst, models, gammas, 301, np.random.default_rng(seed))
        ref = _reference_simulate(inst, models, gammas, 301, np.random.default_rng(seed))
        assert got.shape == ref.shape and got.tobytes() == ref.tobytes()


def test_a_plan_switching_both_ways_at_every_epoch_draws_the_reference_trajectories():
    inst = _instance(horizon=60, back=INV_GAMMA_JUMP)
    models, _, gammas = evaluate_module.plan_indices(inst, plan([("m", "A", 5.0), ("p", "A", 5.0)] * 30,
                                                                 {"A": ["d0"]}))
    for seed in (0, 7):
        got = evaluate_module.simulate_trajectories(inst, models, gammas, 301, np.random.default_rng(seed))
        ref = _reference_simulate(inst, models, gammas, 301, np.random.default_rng(seed))
        assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("name", ["one switch", "back and forth"])
def test_an_evaluation_in_several_blocks_gives_the_reference_numbers(monkeypatch, name):
    """Several blocks (the layout's budget shrunk to 64 KiB: blocks of 64 KiB / (13 × 24 B) = 210),
    bands kept whole: every number equals the one computed here with the reference block rule and
    the reference simulation."""
    monkeypatch.setattr(memory_module, "MEMORY_BUDGET", 2**16)
    inst, p = _instance(), plan(PLANS[name], {"A": ["d0"]})
    n, seed = 1000, 3
    ev = evaluate_plan(inst, p, samples=n, seed=seed)
    block = max(1, min(25_000, 2**16 // ((p.n_epochs + 1) * 24)))
    assert block == memory_module.block_size(p.n_epochs) == 210
    rng = np.random.default_rng([seed, evaluate_module.OUT_OF_SAMPLE])
    models, _, gammas = evaluate_module.plan_indices(inst, p)
    blocks = [_reference_simulate(inst, models, gammas, min(block, n - s), rng) for s in range(0, n, block)]
    assert len(blocks) == 5
    mean = np.zeros(p.n_epochs + 1)
    for b in blocks:                                    # summed block by block, as the evaluator does
        mean += b.sum(axis=0)
    traj = np.concatenate(blocks)
    finals = np.sort(traj[:, -1])
    p01, p99 = np.percentile(traj, [1, 99], axis=0)
    assert ev.p01 == p01.tolist() and ev.p99 == p99.tolist()
    assert ev.mean == (mean / n).tolist()
    rank = evaluate_module.quantile_rank(inst.omega, n)
    assert ev.quantile == float(finals[rank - 1])
    # the whole record, against the evaluator run on the reference simulation
    monkeypatch.setattr(evaluate_module, "simulate_trajectories", _reference_simulate)
    assert evaluate_plan(inst, p, samples=n, seed=seed).to_dict() == ev.to_dict()


def test_simulating_a_block_holds_two_values_per_trajectory_value():
    """Measured with tracemalloc (numpy reports its buffers to it): the block's peak is within the
    accounted BLOCK_BYTES_PER_VALUE, laws' own temporaries included; the reference simulation
    (`_reference_simulate`) holds 20–32 B."""
    inst = _instance(horizon=400, back=INV_GAMMA_JUMP, p={"kind": "student_t", "df": 5.0, "loc": 1.0, "scale": 0.1})
    n = 2000      # the per-epoch bookkeeping is then a small share of the values
    for epochs in ([("m", "A", 0.2)] * 400, [("m", "A", 0.2)] * 200 + [("p", "A", 0.2)] * 200,
                   [("p", "A", 0.2)] * 400, [("m", "A", 0.2), ("p", "A", 0.2)] * 200):
        models, _, gammas = evaluate_module.plan_indices(inst, plan(epochs, {"A": ["d0"]}))
        values = n * (models.size + 1)
        for simulate, most in ((evaluate_module.simulate_trajectories, memory_module.BLOCK_BYTES_PER_VALUE),
                               (_reference_simulate, None)):
            tracemalloc.start()
            simulate(inst, models, gammas, n, np.random.default_rng(0))
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            if most is not None:
                assert peak <= most * values * 1.01 + 65536
            else:
                assert peak > 1.2 * memory_module.BLOCK_BYTES_PER_VALUE * values     # the reference holds more


def test_the_default_eval_samples_accept_a_plan_of_4000_epochs():
    """The default 50,000 samples fit a plan of K̄ = 4000 epochs, which the reference accounting
    (`_reference_block_size`, 24 B per value) refuses beyond K̄ = 3503: one block of 25,000 (K̄ = 3503) or of
    the whole budget's worth (K̄ ≥ 3579) at 24 B per value leaves no room for the bands' chunk."""
    inst = _instance(horizon=4000)
    assert DEFAULT_EVAL_SAMPLES == 50_000
    ref_block = _reference_block_size(4000)
    ref_need = DEFAULT_EVAL_SAMPLES * 16 + ref_block * 4001 * 24 + DEFAULT_EVAL_SAMPLES * (-(-4001 // 64)) * 16
    assert ref_need > 2 * 2**30                           # what the reference accounting refuses
    check_evaluation_memory(DEFAULT_EVAL_SAMPLES, 4000, True)
    assert check_solve_arguments(inst, "depl", True, DEFAULT_EVAL_SAMPLES, 0).name == "depl"
    # the last horizon the default fits and the first it does not: the finals, one block at 16 B per value and
    # a chunk of ⌈(K̄ + 1)/64⌉ columns pass 2 GiB beside the plan itself (memory.EPOCH_BYTES an epoch)
    check_evaluation_memory(DEFAULT_EVAL_SAMPLES, 52_397, True)
    with pytest.raises(PlanError, match=r"^samples: 50000 trajectories of 52398 epochs need "):
        check_evaluation_memory(DEFAULT_EVAL_SAMPLES, 52_398, True)


def test_a_plan_beyond_one_block_is_evaluated_with_its_bands(monkeypatch):
    """With the budget scaled down 512 times, 2,000 trajectories of 400 epochs fill more than one
    block whole (the bands do not fit): evaluated in epoch chunks, as a 4000-epoch plan with
    22,400 samples is under the default budget, and every band ordered."""
    budget = memory_module.MEMORY_BUDGET // 512
    for mod in (memory_module, evaluate_module):
        monkeypatch.setattr(mod, "MEMORY_BUDGET", budget)
    inst = _instance(horizon=400, p={"kind": "normal", "mean": 0.01, "std": 0.001})
    p = plan([("p", "A", 0.002)] * 400, {"A": ["d0"]})              # normal draws: the cheapest law
    n = 2_000
    assert not memory_module.bands_kept(n, 400, budget)
    ev = evaluate_plan(inst, p, samples=n, seed=1)
    assert ev.samples == n and len(ev.p01) == len(ev.p99) == len(ev.mean) == 401
    assert all(lo <= hi for lo, hi in zip(ev.p01, ev.p99))
