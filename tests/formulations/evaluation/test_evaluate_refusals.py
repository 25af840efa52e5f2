"""The evaluator's honest memory estimate, an expected loss that does not exist, and allocations ≤ 0.

1. The memory rule counts the plan itself (about 1 KB an epoch of objects and per-epoch arrays)
   beside the trajectories: a plan too long for the budget is refused up front naming ``epochs``
   and the budget; a plan longer than any horizon (``MAX_HORIZON``) is refused when parsed, and a
   plan file larger than any such plan can usefully be (``MAX_PLAN_BYTES``) before it is read.
2. A law with no finite mean (Student t with df ≤ 1) in the loss: ``expected_loss`` is None with
   a note naming the law, never a Monte Carlo average that changes with the seed.
3. An allocation ≤ 0 is not a plan: refused, naming ``epochs[k].allocation``.
"""

from __future__ import annotations

import json

import pytest

import deplbench.formulations.evaluation.memory as memory_module
from deplbench.errors import PlanError
from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.model.plan import MAX_PLAN_BYTES, PLAN_EPOCH_BYTES, load_plan, parse_plan
from deplbench.instances.model import MAX_HORIZON, parse_instance
from deplbench.limits import memory_budget
from tests.formulations.test_evaluate import plan, random_instance


def _epochs(n: int, allocation: float = 5.0) -> list[dict]:
    return [{"model": "m", "cluster": "A", "allocation": allocation}] * n


# ---------------------------------------------------------------- 1. memory


def test_a_plan_longer_than_any_horizon_is_refused_before_it_is_built():
    with pytest.raises(PlanError, match=rf"^epochs: {MAX_HORIZON + 1} epochs exceed the largest horizon an "
                                        rf"instance may have \(K̄ ≤ {MAX_HORIZON}\)"):
        parse_plan({"epochs": _epochs(MAX_HORIZON + 1), "datasets": {"A": ["d0"]}})


def test_the_memory_estimate_counts_the_plan_itself():
    # 100 trajectories of 3000 epochs, the bands in chunks of ⌈3001 / 64⌉ = 47 columns: the finals, one
    # block of 100 × 3001 values (16 B each) and a chunk, and 3000 × EPOCH_BYTES for the plan itself
    need = memory_module.evaluation_bytes(100, 3000, True, 2**31)
    assert need == 3000 * memory_module.EPOCH_BYTES + 100 * 16 + 100 * 3001 * 16 + 100 * 47 * 16
    assert memory_module.EPOCH_BYTES >= 1000       # measured: ~880 B of plan objects + ~110 B of arrays


def test_a_plan_too_long_for_the_budget_is_refused_naming_epochs_and_the_budget():
    inst = parse_instance({**random_instance(0.9), "horizon": 2000})
    p = plan([("m", "A", 5.0)] * 2000, {"A": ["d0"]})
    # the plan alone (2000 × EPOCH_BYTES ≈ 2.2 MiB) exceeds a 2 MiB budget: no sample count fits
    with memory_budget(2 / 1024), pytest.raises(PlanError) as info:
        evaluate_plan(inst, p, samples=100)
    msg = str(info.value)
    assert msg.startswith("epochs: a plan of 2000 epochs is too long to evaluate within the memory budget of "
                          "0.00195312 GiB") and "\n" not in msg
    # room for the plan but not for 100 trajectories beside it: still the plan's length is to blame
    budget = (memory_module.epoch_bytes(2000) + 50 * (16 + 2001 * 24)) / 2**30
    with memory_budget(budget), pytest.raises(PlanError, match=r"^epochs: .* at most 50 samples would fit, "
                                                               r"fewer than 100\)$"):
        evaluate_plan(inst, p, samples=100)
    # room for 100 but not 1000: the sample count is named, with what fits
    budget = (memory_module.epoch_bytes(2000) + 100 * (16 + 2001 * 24)) / 2**30
    with memory_budget(budget):
        assert len(evaluate_plan(inst, p, samples=100, seed=1).p01) == 2001
        with pytest.raises(PlanError, match=r"^samples: 1000 trajectories of 2000 epochs need .*; use at most"):
            evaluate_plan(inst, p, samples=1000)


def test_the_cli_refuses_a_plan_longer_than_any_horizon_with_exit_2(tmp_path, deplbench_cli):
    ipath, ppath = tmp_path / "inst.json", tmp_path / "huge.json"
    parse_instance(random_instance(0.9)).save(ipath)
    ppath.write_text(json.dumps({"epochs": _epochs(MAX_HORIZON + 1), "datasets": {"A": ["d0"]}}))
    status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 100, "--json")
    assert status == 2 and out == ""
    assert err.startswith(f"error: {ppath}: epochs: {MAX_HORIZON + 1} epochs exceed the largest horizon")
    assert err.count("\n") == 1


def test_a_plan_file_above_its_byte_cap_is_refused_before_it_is_read(tmp_path, deplbench_cli):
    """Parsed, a file of tiny epochs takes about 8 bytes of objects per byte before its epoch
    count is known: a plan file above MAX_PLAN_BYTES is refused from its size, in
    one line naming the file and the cap."""
    ipath, ppath = tmp_path / "inst.json", tmp_path / "huge.json"
    parse_instance(random_instance(0.9)).save(ipath)
    with open(ppath, "wb") as fh:
        fh.truncate(MAX_PLAN_BYTES + 1)                 # sparse: no disk used, and nothing is read
    status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 100)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {ppath}: plan file of {MAX_PLAN_BYTES + 1} bytes is larger than the limit of "
                          f"98 MiB ({MAX_PLAN_BYTES} bytes) "
                          "(deplbench.formulations.model.plan.MAX_PLAN_BYTES: 1024 B for each of the "
                          f"{MAX_HORIZON} epochs a plan may have)"), err


@pytest.mark.slow
def test_the_longest_plan_pretty_printed_with_long_names_is_read(tmp_path):
    """MAX_HORIZON epochs as a ``solve -o`` result holds them (indented, with the three per-epoch
    loss bands) and model and cluster names of 400 characters: within the cap, and read."""
    from deplbench.jsonio import write_json

    name = "n" * 399
    epochs = [{"model": name + "m", "cluster": name + "c", "allocation": 16.93908138652787}] * MAX_HORIZON
    band = [17.267178266216774] * (MAX_HORIZON + 1)
    path = tmp_path / "result.json"
    write_json(path, {"algorithm": "depl", "status": "feasible",
                      "plan": {"epochs": epochs, "datasets": {name + "c": ["d0"]}},
                      "evaluation": {"mean": band, "p01": band, "p99": band}})
    size = path.stat().st_size
    assert MAX_HORIZON * 900 < size <= MAX_HORIZON * PLAN_EPOCH_BYTES <= MAX_PLAN_BYTES
    assert load_plan(path).n_epochs == MAX_HORIZON


# ---------------------------------------------------------------- 2. expected loss


def _cauchy_jump_instance(df: float):
    data = random_instance(0.9)
    data["switches"][0]["jump"] = {"kind": "student_t", "df": df, "loc": 0.3, "scale": 0.1}
    return parse_instance(data)


def test_a_cauchy_jump_leaves_the_expected_loss_undefined_not_a_number():
    inst = _cauchy_jump_instance(1.0)
    p = plan([("m", "A", 5.0), ("m", "A", 5.0), ("p", "A", 5.0)], {"A": ["d0"]})
    evs = [evaluate_plan(inst, p, samples=2000, seed=s) for s in (0, 1)]
    for ev in evs:
        assert ev.expected_loss is None
        assert ev.expected_loss_note == ("undefined: the jump law of switch 'm' -> 'p' (student_t, df = 1) "
                                         "has no finite mean")
        # ℓ(0..2) have a mean; from the switch (epoch 3, ℓ(3)) on there is none
        assert ev.mean[:3] == pytest.approx(evs[0].mean[:3], rel=0.05) and ev.mean[3:] == [None]
        assert ev.to_dict()["expected_loss"] is None
        assert ev.quantile == ev.quantile and len(ev.p99) == 4         # the quantiles exist: estimated
    # without the switch the loss sums laws with means: a number
    assert evaluate_plan(inst, plan([("m", "A", 5.0)] * 3, {"A": ["d0"]}), samples=500).expected_loss is not None
    assert evaluate_plan(_cauchy_jump_instance(1.5), p, samples=500).expected_loss is not None


def test_an_improvement_law_without_a_mean_is_named():
    data = random_instance(0.9)
    data["models"][0]["improvement"] = {"kind": "inverse_gamma", "shape": 1.0, "scale": 1.0}
    ev = evaluate_plan(parse_instance(data), plan([("m", "A", 5.0)] * 2, {"A": ["d0"]}), samples=500)
    assert ev.expected_loss is None and ev.mean[1:] == [None, None]
    assert ev.expected_loss_note == ("undefined: the improvement law of model 'm' (inverse_gamma, shape = 1) "
                                     "has no finite mean")


def test_the_cli_says_undefined_in_text_and_null_in_json(tmp_path, deplbench_cli):
    ipath, ppath = tmp_path / "inst.json", tmp_path / "sw.json"
    _cauchy_jump_instance(1.0).save(ipath)
    ppath.write_text(json.dumps(plan([("m", "A", 5.0), ("p", "A", 5.0)], {"A": ["d0"]}).to_dict()))
    status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 1000)
    assert status == 0, err
    assert "expected loss  undefined: the jump law of switch 'm' -> 'p' (student_t, df = 1) has no finite mean" in out
    status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 1000, "--json")
    d = json.loads(out)
    assert d["expected_loss"] is None and d["expected_loss_note"].startswith("undefined: ")
    assert d["mean"][-1] is None and d["quantile"] is not None


# ---------------------------------------------------------------- 3. allocations


@pytest.mark.parametrize("x", [-5.0, 0.0, -0.0])
def test_an_allocation_that_is_not_positive_is_not_a_plan(x):
    data = {"epochs": _epochs(2), "datasets": {"A": ["d0"]}}
    data["epochs"] = [{**data["epochs"][0], "allocation": x}, data["epochs"][1]]
    with pytest.raises(PlanError, match=rf"^epochs\[0\]\.allocation: must be > 0, got {x!r}$"):
        parse_plan(data)
    # a Plan built in code is refused by the evaluator the same way: never a cost with −5·κ in it
    with pytest.raises(PlanError, match=r"^epochs\[0\]\.allocation: must be > 0"):
        evaluate_plan(parse_instance(random_instance(0.9)), plan([("m", "A", x), ("m", "A", 5.0)], {"A": ["d0"]}),
                      samples=100)


def test_the_cli_refuses_a_negative_allocation_with_exit_2(tmp_path, deplbench_cli):
    ipath, ppath = tmp_path / "inst.json", tmp_path / "neg.json"
    parse_instance(random_instance(0.9)).save(ipath)
    ppath.write_text(json.dumps({"epochs": [{"model": "m", "cluster": "A", "allocation": -5}],
                                 "datasets": {"A": ["d0"]}}))
    status, out, err = deplbench_cli("evaluate", ipath, ppath, "--samples", 100)
    assert status == 2 and out == ""
    assert err == f"error: {ppath}: epochs[0].allocation: must be > 0, got -5.0\n"
