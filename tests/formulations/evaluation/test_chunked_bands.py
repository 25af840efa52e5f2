"""The per-epoch bands within the memory budget for any plan length.

When the trajectories do not fit the budget whole, the evaluator computes
the 1 %/99 % bands in chunks of epoch columns, re-simulating every block
from its recorded generator state (formulations.evaluation.memory,
``chunked_bands``). The budget is shrunk through the
:func:`deplbench.limits.memory_budget` scope, never by allocating GiBs.
"""

from __future__ import annotations

import numpy as np
import pytest

import deplbench.formulations.evaluation.evaluate as evaluate_module
import deplbench.formulations.evaluation.memory as memory_module
from deplbench.benchmarks.validate import _check_evaluation_memory
from deplbench.errors import PlanError, SolverError, SweepError
from deplbench.formulations.evaluation.evaluate import check_evaluation_memory, evaluate_plan
from deplbench.instances.model import parse_instance
from deplbench.limits import memory_budget
from deplbench.solvers.run import DEFAULT_EVAL_SAMPLES, check_solve_arguments
from tests.formulations.test_evaluate import plan, random_instance

N = 2000
BLOCK = 300          # 7 blocks of N, the last one partial


def _instance(horizon: int = 40):
    return parse_instance({**random_instance(0.9), "horizon": horizon})


def _plan():
    # 12 epochs, one switch m -> p: both random laws (inverse gamma, Student t) drawn
    return plan([("m", "A", 5.0)] * 6 + [("p", "A", 5.0)] * 6, {"A": ["d0"]})


def _counting(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = evaluate_module.simulate_trajectories

    def spy(instance, models, gammas, n, rng):
        sizes.append(n)
        return real(instance, models, gammas, n, rng)

    monkeypatch.setattr(evaluate_module, "simulate_trajectories", spy)
    return sizes


def test_bands_in_three_or_more_chunks_equal_the_bands_kept_whole_bit_for_bit(monkeypatch):
    monkeypatch.setattr(memory_module, "_BLOCK", BLOCK)
    sizes = _counting(monkeypatch)
    inst, p = _instance(), _plan()
    whole = evaluate_plan(inst, p, samples=N, seed=5)
    assert sizes == [BLOCK] * 6 + [200]                  # kept whole: one pass, nothing re-simulated
    width = p.n_epochs + 1
    # room for the finals, one block and 4 epoch columns: not for every trajectory
    budget = N * 16 + BLOCK * width * memory_module.BLOCK_BYTES_PER_VALUE + 4 * N * 16
    assert N * (16 + width * 24) > budget
    sizes.clear()
    with memory_budget(budget / 2**30):
        chunked = evaluate_plan(inst, p, samples=N, seed=5)
    chunks = len(sizes) // 7 - 1
    assert sizes == ([BLOCK] * 6 + [200]) * (1 + chunks) and chunks >= 3
    assert len(whole.p01) == width and whole.p01 != whole.p99
    # every number the same, bit for bit: bands, mean, finals' quantile and interval, counts, verdicts
    assert chunked.to_dict() == whole.to_dict()
    # the bands are the exact percentiles of all N trajectories, across the 7 blocks
    rng = np.random.default_rng([5, evaluate_module.OUT_OF_SAMPLE])
    models, _, gammas = evaluate_module.plan_indices(inst, p)
    monkeypatch.undo()
    traj = np.concatenate([evaluate_module.simulate_trajectories(inst, models, gammas, s, rng)
                           for s in [BLOCK] * 6 + [200]])
    p01, p99 = np.percentile(traj, [1, 99], axis=0)
    assert chunked.p01 == p01.tolist() and chunked.p99 == p99.tolist()


def test_the_finals_quantile_and_interval_do_not_depend_on_the_bands(monkeypatch):
    monkeypatch.setattr(memory_module, "_BLOCK", BLOCK)
    inst, p = _instance(), _plan()
    bare = evaluate_plan(inst, p, samples=N, seed=8, trajectory=False)
    with memory_budget((N * 16 + BLOCK * 13 * memory_module.BLOCK_BYTES_PER_VALUE + 2 * N * 16) / 2**30):
        chunked = evaluate_plan(inst, p, samples=N, seed=8)
    assert len(chunked.p99) == 13 and bare.p99 == []
    for key in ("quantile", "quantile_ci", "expected_loss", "violation_count", "violation_lb", "violation_ub",
                "verdict", "certified_verdict"):
        assert getattr(chunked, key) == getattr(bare, key), key


def test_bands_are_refused_only_when_not_one_column_fits_beside_the_finals_and_a_block(monkeypatch):
    monkeypatch.setattr(memory_module, "_BLOCK", BLOCK)
    inst, p = _instance(), _plan()
    width = p.n_epochs + 1
    one_column = (memory_module.epoch_bytes(p.n_epochs) + N * 16 + BLOCK * width * memory_module.BLOCK_BYTES_PER_VALUE
                  + N * 16)
    with memory_budget(one_column / 2**30 * (1 - 1e-9)):
        with pytest.raises(PlanError, match=r"^samples: 2000 trajectories of 12 epochs need .* GiB with the "
                                            r"per-epoch bands \(budget .* GiB\); use at most (\d+) samples$") as info:
            evaluate_plan(inst, p, samples=N, seed=1)
        assert "\n" not in str(info.value)
        fits = int(str(info.value).rsplit(" ", 2)[1])
        # the count offered fits, one more does not; without the bands the finals alone are sized
        check_evaluation_memory(fits, p.n_epochs, True)
        with pytest.raises(PlanError, match=f"use at most {fits} samples"):
            check_evaluation_memory(fits + 1, p.n_epochs, True)
        check_evaluation_memory(N, p.n_epochs, False)
    with memory_budget(one_column / 2**30 * (1 + 1e-9)):
        assert len(evaluate_plan(inst, p, samples=N, seed=1).p01) == width     # one column per chunk


def test_the_default_eval_samples_on_a_random_instance_of_horizon_3000_are_accepted():
    inst = _instance(horizon=3000)
    assert DEFAULT_EVAL_SAMPLES == 50_000
    # every trajectory kept would need 50,000 × (16 + 3001·24) B = 3.35 GiB > 2 GiB
    assert not memory_module.bands_kept(DEFAULT_EVAL_SAMPLES, 3000, memory_module.MEMORY_BUDGET)
    cls = check_solve_arguments(inst, "depl", True, DEFAULT_EVAL_SAMPLES, 0)
    assert cls.name == "depl"
    # beyond what fits beside one block of 25,000 × 3001 values (16 B each at its peak), with chunks of
    # ⌈3001 / 64⌉ = 47 columns (at most MAX_BAND_CHUNKS re-simulations): a one-line refusal naming the
    # argument; (2 GiB − 3000 × EPOCH_BYTES − 25,000 × 3001 × 16 B) / (16 B + 47 × 16 B) = 1,228,681
    # samples fit beside the plan itself
    assert memory_module.MAX_BAND_CHUNKS == 64 and memory_module.BLOCK_BYTES_PER_VALUE == 16
    assert (2**31 - 3000 * memory_module.EPOCH_BYTES - 25_000 * 3001 * 16) // (16 + 47 * 16) == 1_228_681
    with pytest.raises(SolverError, match=r"^eval_samples: 20000000 trajectories of up to K̄ = 3000 epochs "
                                          r"\(the longest plan the instance allows\) need 15.4 GiB with the per-epoch "
                                          r"bands \(budget 2 GiB\); use at most 1228681 samples$"):
        check_solve_arguments(inst, "depl", True, 20_000_000, 0)
    assert check_solve_arguments(inst, "depl", True, 1_228_681, 0) is cls
    with pytest.raises(SolverError, match="use at most 1228681 samples"):
        check_solve_arguments(inst, "depl", True, 1_228_682, 0)


def test_the_sweep_check_is_the_evaluators_rule():
    inst = _instance(horizon=3000)
    # 50,000 × 3001 values do not fit whole, but do in epoch chunks beside one block: accepted
    _check_evaluation_memory(DEFAULT_EVAL_SAMPLES, inst, "instances[0]")
    with pytest.raises(SweepError) as info:
        _check_evaluation_memory(20_000_000, inst, "instances[0]")
    msg = str(info.value)
    assert msg.startswith("sweep.evaluation.samples: 20000000 trajectories of up to K̄ = 3000 epochs")
    assert msg.endswith("samples (instances[0])") and "\n" not in msg
    with pytest.raises(SolverError) as same:
        check_evaluation_memory(20_000_000, 3000, True, field="sweep.evaluation.samples", error=SolverError,
                                up_to=True)
    assert msg == f"{same.value} (instances[0])"


def test_the_sweep_check_accepts_what_solve_accepts_on_a_deterministic_instance():
    # every law a point mass: one trajectory is judged, whatever eval_samples, so solve() checks
    # the final losses only; the sweep's load check applies the same rule, not samples × K̄
    from tests.formulations.test_evaluate import det_instance

    inst = parse_instance({**det_instance(), "horizon": 3000})
    assert check_solve_arguments(inst, "depl", True, 20_000_000, 0).name == "depl"
    _check_evaluation_memory(20_000_000, inst, "instances[0]")
    with pytest.raises(SweepError, match=r"^sweep\.evaluation\.samples: 2000000000 trajectories need .* "
                                         r"\(instances\[0\]\)$"):
        _check_evaluation_memory(2_000_000_000, inst, "instances[0]")     # the finals alone: 30 GiB


def test_the_bands_are_never_computed_in_more_than_max_band_chunks(monkeypatch):
    # each chunk re-simulates every trajectory: a budget that leaves room for fewer than
    # ⌈(K + 1) / MAX_BAND_CHUNKS⌉ columns is refused rather than run (K + 1) / 2 times over
    monkeypatch.setattr(memory_module, "_BLOCK", 100)
    n = 500
    inst = _instance(horizon=200)
    p = plan([("m", "A", 0.05)] * 65 + [("p", "A", 0.05)] * 65, {"A": ["d0"]})
    width = p.n_epochs + 1
    assert -(-width // memory_module.MAX_BAND_CHUNKS) == 3
    base = memory_module.epoch_bytes(p.n_epochs) + n * 16 + 100 * width * memory_module.BLOCK_BYTES_PER_VALUE
    sizes = _counting(monkeypatch)
    with memory_budget((base + 2 * n * 16) / 2**30), pytest.raises(PlanError, match=r"^samples: 500 trajectories "):
        evaluate_plan(inst, p, samples=n, seed=2)
    assert sizes == []                                   # refused before any draw
    with memory_budget((base + 3 * n * 16) / 2**30):
        chunked = evaluate_plan(inst, p, samples=n, seed=2)
    chunks = len(sizes) // 5 - 1
    assert chunks == -(-width // 3) and chunks <= memory_module.MAX_BAND_CHUNKS
    monkeypatch.undo()
    monkeypatch.setattr(memory_module, "_BLOCK", 100)
    whole = evaluate_plan(inst, p, samples=n, seed=2)
    assert chunked.to_dict() == whole.to_dict()


@pytest.mark.parametrize("command,default", [("solve", DEFAULT_EVAL_SAMPLES), ("simulate", 20_000)])
def test_a_refused_default_sample_count_is_named_as_the_default(tmp_path, capsys, command, default):
    """The user who typed no --eval-samples is told the default was refused, not an option they never gave."""
    from deplbench.cli import main
    from deplbench.cli.solvers import EVAL_SAMPLES

    assert EVAL_SAMPLES == DEFAULT_EVAL_SAMPLES     # the CLI's default is solve()'s
    path = tmp_path / "inst.json"
    _instance(horizon=3000).save(path)
    with memory_budget(0.05):
        assert main([command, str(path), "--algo", "depl"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert err.startswith(f"error: --eval-samples (default {default}): {default} trajectories"), err
        assert main([command, str(path), "--algo", "depl", "--eval-samples", str(default)]) == 2
        assert capsys.readouterr().err.startswith(f"error: --eval-samples: {default} trajectories")
