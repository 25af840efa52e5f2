"""The certified bracket's counts, gap and seed: refused before any task is built or solved.

Unchecked, a ``grid_seeds`` of 10⁹ builds a task list of 4·10⁹ entries (a
MemoryError after 3.5 GB); a ``gap`` the MILP refuses ends every SAA solve in
status error; a seed near 2**63 − 1 leaves the validation's seed + 1000003
past the largest seed, refused naming a value the user never typed.
"""

from __future__ import annotations

import pytest

from deplbench.errors import SolverError
from deplbench.instances.generators import generate
from deplbench.params import MAX_SEED
from deplbench.solvers.certify import certified
from deplbench.solvers.certify.settings import MAX_SEED_OFFSET, MAX_TIGHTENED_SOLVES, CertifySettings

#: The largest seed a bracket takes: its stage-2 validation draws from seed + 1000004.
TOP_SEED = MAX_SEED - MAX_SEED_OFFSET


@pytest.fixture
def knapsack_file(tmp_path):
    path = tmp_path / "k.json"
    generate("knapsack", n_items=4, horizon=4, seed=0).save(path)
    return path


@pytest.fixture
def no_solve(monkeypatch):
    """Every bracket and candidate solve raises: a refusal must come before them."""
    def refuse(*a, **k):
        raise AssertionError("a solve started before the arguments were checked")

    monkeypatch.setattr(certified, "candidate_plans", refuse)
    monkeypatch.setattr(certified, "certify", refuse)
    monkeypatch.setattr(certified, "saa_tasks", refuse)


def _one_line_refusal(deplbench_cli, *args) -> str:
    status, out, err = deplbench_cli(*args)
    assert status == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), (status, out, err)
    return err


@pytest.mark.parametrize("args, message", [
    (["--grid-seeds", "1000000000"], f"--grid-seeds 1000000000: must be <= {MAX_TIGHTENED_SOLVES}, got 1000000000"),
    (["--grid-seeds", "5000"], "risk_grid × grid_seeds: 4 levels × 5000 solves each = 20000 tightened SAA solves, "
                               f"above the {MAX_TIGHTENED_SOLVES} one stage may run"),
    (["--seed", str(TOP_SEED + 1)],
     f"--seed {TOP_SEED + 1}: must be at most 2**63 − 1 − 1000004 = {TOP_SEED} so that seed + 1000004, stage "
     f"2's validation stream, is a seed, got {TOP_SEED + 1}"),
    (["--seed", str(MAX_SEED - 1)], f"got {MAX_SEED - 1}"),
])
def test_certify_refuses_counts_and_seeds_up_front(knapsack_file, no_solve, deplbench_cli, args, message):
    err = _one_line_refusal(deplbench_cli, "certify", knapsack_file, "--replications", "2", "--scenarios", "5",
                            "--validation", "1000", "--target-width", "0", "--total-time-limit", "5", *args)
    assert message in err, err


@pytest.mark.parametrize("param, message", [
    ("gap=0.9999999", "--param gap 0.9999999: must be <= 0.999999, got 0.9999999"),
    ("grid_seeds=1000000000", f"--param grid_seeds 1000000000: must be <= {MAX_TIGHTENED_SOLVES}"),
    (f"seed={MAX_SEED - 1}", f"--param seed {MAX_SEED - 1}: must be at most 2**63 − 1 − 1000004"),
])
def test_milp_certified_refuses_them_up_front_exit_2(knapsack_file, no_solve, deplbench_cli, param, message):
    err = _one_line_refusal(deplbench_cli, "solve", knapsack_file, "--algo", "milp-certified", "--param", param)
    assert message in err, err


def test_the_top_seed_is_taken_and_one_above_it_refused():
    assert CertifySettings(seed=TOP_SEED).seed == TOP_SEED
    with pytest.raises(SolverError, match=f"^parameter 'seed': .* got {TOP_SEED + 1}$"):
        CertifySettings(seed=TOP_SEED + 1)


def test_the_tightened_solves_of_each_stage_are_capped_naming_its_pair():
    per_level = MAX_TIGHTENED_SOLVES // 2
    assert CertifySettings(risk_grid=(0.9, 0.8), grid_seeds=per_level).grid_seeds == per_level
    with pytest.raises(SolverError, match="^risk_grid × grid_seeds: 3 levels × "):
        CertifySettings(risk_grid=(0.9, 0.8, 0.7), grid_seeds=per_level)
    with pytest.raises(SolverError, match="^refine_risk_grid × refine_grid_seeds: 3 levels × "):
        CertifySettings.from_options(refine_risk_grid=(0.95, 0.9, 0.85), refine_grid_seeds=per_level)
    # stage 2 never runs without a target width: its pair builds no task
    assert CertifySettings(target_width=0.0, refine_risk_grid=(0.95, 0.9, 0.85),
                           refine_grid_seeds=per_level).refine_grid_seeds == per_level


def test_a_bracket_at_the_top_seed_runs(knapsack_file, deplbench_cli):
    """Every stream of a bracket at the top seed is a seed: the validation's is seed + 1000003."""
    status, out, err = deplbench_cli("certify", knapsack_file, "--replications", "2", "--scenarios", "5",
                                     "--validation", "200", "--seed", str(TOP_SEED), "--target-width", "0")
    assert status == 0 and "error" not in err, (status, out, err)
