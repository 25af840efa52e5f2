"""``adaptive-opt``'s closed-loop policy is the policy it certified.

The sweeps and report section 6 simulate the policy rebuilt from the result's
``multipliers`` (:meth:`AdaptiveOpt.closed_loop_policy`). The bound may come
from another pass than the policy's — the deadline carried (λ = 0) while the
tuning kept the priced policy — so the rebuild must use the policy's own
prices: rebuilt and run on the certification seed (without the share it gives
up at once, which is read from the certificate), it must succeed on exactly
the runs the certificate counted.
"""

from __future__ import annotations

import pytest

from deplbench.formulations.evaluation.closed_loop import simulate
from deplbench.instances.generators import generate
from deplbench.solvers.adaptive.optimum import AdaptiveOpt


@pytest.mark.slow
@pytest.mark.parametrize(("slopes", "source"), [(0, "carried"), (64, "waterfill")])
def test_rebuilt_policy_reproduces_the_certification_when_the_bound_is_carried(slopes, source):
    # a small instance whose certified policy fails on some of its runs, so the count of successes
    # tells the policy certified from a stricter or a looser one
    inst = generate("scaling", n_models=2, n_clusters=1, horizon=4, seed=2)
    solver = AdaptiveOpt()
    params = dict(buckets=40, runs=2000, tune_runs=2000, time_points=32, slopes=slopes)
    res = solver.run(inst, **params)
    mult, cert = res.diagnostics["multipliers"], res.diagnostics["certification"]
    # the case the rebuild must handle: bound from another pass (carried: λ = 0; water-filling:
    # its own μ), the priced policy kept
    assert mult["lower_bound_source"] == source and mult["time_points_policy"] == 0, mult
    assert mult["lambda_policy"] > 0 and mult["mu_policy"] != mult["mu"], mult
    if source == "carried":
        assert mult["lambda"] == 0.0, mult
    pol = solver.closed_loop_policy(inst, res, **params)
    # the certificate counts the runs of π itself; the mix gives up its share q on top of them
    assert pol.give_up == mult["give_up"]
    sim = simulate(inst, pol.with_give_up(0.0), cert["runs"], cert["seed"])
    assert int(sim.success.sum()) == cert["successes"] > 0
    assert cert["successes"] < cert["runs"], cert
