"""A heuristic that finds no plan says ``no_solution``, never the proof word ``infeasible``.

docs/DESIGN.md, "Result record": ``infeasible`` is a proof (an exact solver's,
the preprocessing's, a certified bound's); ``no_solution`` is "no plan found,
infeasibility not proven". On a tiny AlexNet instance (DepL Table I, K̄ = 5)
at ℓmax = 17.5 the exact solvers prove a plan feasible (cost 433.3: five
epochs of one model), while each heuristic family below finds none. At
ℓmax = 17.0 the exact solvers prove infeasibility and the heuristics still
only say ``no_solution``: the word belongs to the proof, not to the outcome.
"""

from __future__ import annotations

import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.run import solve

TINY = dict(family="alexnet", horizon=5, n_a=1, n_b=1, omega=0.9, time_max=20.0)

#: (algorithm, parameters) of every non-exact family, with the parameters under
#: which it finds no plan on the ℓmax = 17.5 instance.
HEURISTICS = [
    ("depl", {}),
    ("depl-receding", {}),
    ("depl-proven", {}),
    ("best-exp", {}),
    # PACT's default robust quantile finds a plan here; at 0.999 its graph has no path
    ("pact", {"robust_quantile": 0.999, "min_robust_quantile": 0.999}),
    ("static-learn", {}),                       # K̄ = 5: no equal-share chain of all three models
    ("one-switch", {"allow_no_switch": False}),  # the optimum uses one model throughout
    # a bracket too small to certify any candidate: a lower bound, no plan, no proof
    ("milp-certified", {"replications": 4, "risk_grid": "0.8", "grid_seeds": 1, "validation": 100,
                        "target_width": 0.0, "scenarios": 60, "seed": 3}),
]


@pytest.fixture(scope="module")
def feasible_tiny():
    """ℓmax = 17.5: milp-exact proves a plan feasible (rigorous violation bounds)."""
    return generate("realistic", loss_max=17.5, **TINY)


@pytest.fixture(scope="module")
def proven_plan(feasible_tiny):
    res = solve(feasible_tiny, "milp-exact", eval_samples=2000)
    assert res.status == "optimal" and res.plan is not None, res.message
    assert res.evaluation["exact_verdict"] == "proven feasible"
    return res


@pytest.mark.parametrize("algo, params", HEURISTICS, ids=[a for a, _ in HEURISTICS])
def test_heuristic_without_a_plan_says_no_solution_where_a_plan_is_proven(feasible_tiny, proven_plan,
                                                                           algo, params):
    res = solve(feasible_tiny, algo, evaluate=False, **params)
    assert res.plan is None
    assert res.status == "no_solution", (algo, res.status, res.message)
    assert res.message                                   # the reason it found none
    if algo == "one-switch":                             # the search it ran, as its parameters say
        assert "exactly one model switch" in res.message, res.message
    if res.lower_bound is not None:                      # milp-certified keeps its bound
        assert res.lower_bound <= proven_plan.cost * (1 + 1e-9)


def test_the_same_heuristics_find_a_plan_with_their_defaults_where_they_can(feasible_tiny, proven_plan):
    """The parameters above are what empties the search: with its defaults PACT finds
    a plan, never cheaper than the proven optimum."""
    res = solve(feasible_tiny, "pact", evaluate=False)
    assert res.status == "feasible" and res.cost >= proven_plan.cost * (1 - 1e-9)


def test_only_the_exact_solver_says_infeasible_where_infeasibility_is_proven():
    inst = generate("realistic", loss_max=17.0, **TINY)
    exact = solve(inst, "milp-exact", evaluate=False)
    assert exact.status == "infeasible"
    for algo, params in HEURISTICS[:4]:
        res = solve(inst, algo, evaluate=False, **params)
        assert res.status == "no_solution", (algo, res.status, res.message)


def test_preprocessing_proof_stays_infeasible_for_a_heuristic():
    """Nothing fits Tmax even at full capacity: a proof, whichever solver runs."""
    inst = generate("realistic", loss_max=17.5, **{**TINY, "time_max": 1e-6})
    res = solve(inst, "depl", evaluate=False)
    assert res.status == "infeasible" and "no usable" in res.message


@pytest.mark.parametrize("algo", ["depl", "best-exp", "static-learn", "one-switch", "pact"])
def test_a_check_with_too_few_draws_for_an_upper_end_still_accepts_a_plan_no_draw_misses(algo):
    """ω = 0.9999 with the default 20,000 check draws: the interval has no upper end
    (ω > 0.025^(1/20000)), so it never says "feasible"; the heuristics' checks accept a
    plan none of whose draws misses ℓmax (evaluation/quantile_ci.check_accepts), and
    DepL's retry never computes an infinite target. Every plan found is proven feasible
    or cheaper than nothing the exact optimum proves."""
    inst = generate("scaling", n_models=1, n_clusters=1, horizon=6, seed=0).with_changes(omega=0.9999,
                                                                                          loss_max=19.5)
    exact = solve(inst, "milp-exact", eval_samples=2000)
    assert exact.status == "optimal"
    res = solve(inst, algo, eval_samples=2000)
    assert res.status == "feasible" and res.plan is not None, (algo, res.status, res.message)
    assert res.cost >= exact.cost * (1 - 1e-9)


def test_the_check_rule_on_a_one_sided_interval():
    from types import SimpleNamespace as E

    from deplbench.formulations.evaluation.quantile_ci import check_accepts, check_excess

    inf = float("inf")
    one_sided = dict(constraints_ok=True, verdict="undecided", quantile_ci=(18.2, inf), quantile=18.3, loss_max=19.5)
    assert check_accepts(E(**one_sided, violation_count=0))
    assert not check_accepts(E(**one_sided, violation_count=1))
    assert not check_accepts(E(**{**one_sided, "constraints_ok": False}, violation_count=0))
    two_sided = dict(one_sided, quantile_ci=(18.2, 19.6))
    assert not check_accepts(E(**two_sided, violation_count=0))       # a real upper end above ℓmax decides
    assert check_excess(E(**one_sided)) == pytest.approx((18.3 - 19.5, 0.1))


@pytest.mark.parametrize("value", [-1.0, 0.0])
@pytest.mark.parametrize("algorithm", ["depl", "depl-receding", "depl-proven", "best-exp"])
def test_the_decision_loop_declines_a_valid_instance_whose_training_never_helps(algorithm, value):
    """Stage 1 (Sec. IV-A) sizes the training by E[X] of the most complex model: with E[X] ≤ 0 (a
    valid instance) the loop's heuristics decline it (``skipped``, the reason naming the field), not
    ``error``: the instance's validation accepts it, so it is no bad input."""
    from deplbench.instances.model import parse_instance
    from deplbench.solvers.depl.dataset_selection import stage_one_applies
    from tests.instance_data import two_model_data

    data = two_model_data()
    for m in data["models"]:
        m["improvement"] = {"kind": "point", "value": value}
    inst = parse_instance(data)
    res = solve(inst, algorithm, evaluate=False)
    assert res.status == "skipped", (res.status, res.message)
    assert "dataset selection (Sec. IV-A) does not apply" in res.message and ".improvement" in res.message
    assert stage_one_applies(parse_instance(two_model_data())) == (True, "")     # E[X] = 1: applies
