"""Every seed a solver accepts leaves its derived streams seeds too.

DepL and best-exp check their candidates on draws seeded by
``check_seed(seed)`` (104729 + 7919·seed), ``calibrate=True`` on the seeds
just above it; PACT, OneSwitch and StaticLearn on ``seed + 7919``; the
certified bracket's advice on an inconsistent run names a fresh seed. A
seed the solver accepts must never end in a refusal of a derived seed the
user never typed.
"""

from __future__ import annotations

import pytest

from deplbench.errors import SolverError
from deplbench.instances.generators import generate
from deplbench.params import MAX_SEED
from deplbench.solvers.baselines.common import CHECK_SEED_OFFSET
from deplbench.solvers.depl.calibration import CALIBRATION_STEPS, _calibration_seed, _estimation_seed
from deplbench.solvers.depl.streams import CHECK_STREAMS, check_seed
from deplbench.solvers.run import solve


@pytest.fixture(scope="module")
def random_instance():
    """Three models with random improvements: every check draws from its seed."""
    return generate("scaling", n_models=3, horizon=8, seed=0)


def test_check_seed_keeps_its_value_below_the_fold_and_stays_a_seed_above_it():
    for seed in (0, 1, 12345, 10**15):
        assert check_seed(seed) == 104729 + 7919 * seed
    assert CALIBRATION_STEPS + 1 <= CHECK_STREAMS
    for seed in (2 * 10**15, 2**53, 2**62, MAX_SEED - 1, MAX_SEED):
        derived = [check_seed(seed), _estimation_seed(seed),
                   *(_calibration_seed(seed, step) for step in range(CALIBRATION_STEPS))]
        assert all(104729 <= d <= MAX_SEED for d in derived), (seed, derived)


@pytest.mark.parametrize("algorithm, extra", [("depl", {}), ("depl", {"calibrate": True}), ("best-exp", {})])
def test_depl_and_best_exp_run_at_the_largest_seed(random_instance, algorithm, extra):
    res = solve(random_instance, algorithm, seed=MAX_SEED, eval_samples=200, check_samples=200, **extra)
    assert res.status in ("feasible", "no_solution"), res.message
    assert "seed" not in res.message


@pytest.mark.parametrize("algorithm", ["pact", "one-switch", "static-learn"])
def test_the_oos_check_seed_is_refused_up_front_naming_the_seed(random_instance, algorithm):
    top = MAX_SEED - CHECK_SEED_OFFSET
    refusal = rf"^parameter 'seed': must be at most 2\*\*63 − 1 − 7919 = {top} .*got {top + 1}$"
    with pytest.raises(SolverError, match=refusal):
        solve(random_instance, algorithm, seed=top + 1, scenarios=50, check_samples=100)
    res = solve(random_instance, algorithm, seed=top, scenarios=50, check_samples=100, eval_samples=200)
    assert res.status != "error", res.message


def test_the_fresh_seed_of_an_inconsistent_bracket_is_a_seed_the_bracket_takes():
    from deplbench.solvers.certify.certified import VALIDATION_SEED_OFFSET, fresh_seed
    from deplbench.solvers.certify.settings import MAX_SEED_OFFSET

    top = MAX_SEED - MAX_SEED_OFFSET
    for seed in (0, 7, top - 2 * VALIDATION_SEED_OFFSET - 2, top - 1, top):
        fresh = fresh_seed(seed)
        assert 0 <= fresh <= top, seed
        # the two runs' seeds [s, s + MAX_SEED_OFFSET] do not meet
        assert fresh > seed + MAX_SEED_OFFSET or fresh + MAX_SEED_OFFSET < seed, (seed, fresh)
