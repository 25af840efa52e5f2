"""Test-suite configuration: the ``slow`` and ``integration`` markers.

``make test`` runs everything; ``make test-fast`` runs
``pytest -m "not slow and not integration"``, the quick loop (under a minute
on a 2-core machine) that still exercises every layer. Markers are assigned
here, at collection, so test files need no decorators and a test is marked
by what it does:

* ``integration``: the test starts other processes — it runs the installed
  ``deplbench`` command or ``python -m deplbench`` (a ``subprocess`` call or
  the test modules' ``deplbench(...)`` helper), or runs sweeps through the
  process-pool/Dask executors, or lives in a module that is end-to-end as a
  whole (:data:`INTEGRATION_MODULES`);
* ``system_packages``: the test's source names CBC or Chromium (also set by
  hand in the test files);
* ``slow``: the test takes more than about half a second of CPU on its own,
  listed in :data:`SLOW_TESTS`, or uses a fixture that takes seconds to
  build (:data:`SLOW_FIXTURES`).

A test marked by hand (``@pytest.mark.slow``) keeps its mark.
"""

from __future__ import annotations

import inspect
import re
import warnings

import pytest

#: Modules whose every test is end to end (processes, whole sweeps).
INTEGRATION_MODULES = frozenset({
    "test_algorithms_integration",
    "test_json_stdout",
    "test_library",        # builds a library, re-solves MPS files with HiGHS and SCIP
})

#: What in a test function's source means it starts processes.
_PROCESS_PATTERN = re.compile(
    r"\bsubprocess\.|(?<![\w.])deplbench\(|\bLocalExecutor\(|\bDaskExecutor\(|\bcli_main\(\s*\[?\s*\"run\"")

#: What in a test function's source means it depends on an optional system
#: package (CBC, Chromium): such a test is marked ``system_packages`` and
#: ``.ci/run`` runs it a second time with the packages hidden from PATH.
_SYSTEM_PATTERN = re.compile(r"\bcbc\b|chromium|\bavailability\(", re.IGNORECASE)

#: Module-scoped fixtures that take seconds to build (a whole report, a
#: calibrated DepL run): every test that uses one is slow.
SLOW_FIXTURES = frozenset({"full_report", "calibrated9"})

#: module → tests that take more than about 0.5 s of CPU on their own
#: (measured on this machine as CPU time per test, which a loaded machine
#: inflates far less than wall time; the whole quick loop took 45 s of CPU,
#: collection included). A bare name marks every parametrisation of the test
#: function; a name with ``[id]`` marks that case only, so cheap cases of a
#: parametrised check stay in the quick loop.
SLOW_TESTS: dict[str, tuple[str, ...]] = {
    "test_solver_limits": ("test_best_exp_refuses_train_on_trajectories_at_horizon_100000",),
    "test_closed_loop": ("test_depl_receding_is_registered_and_replans", "test_closed_loop_pact_differs_from_open_loop",
                         "test_report_shows_the_closed_loop_table_and_the_pact_claim", "test_pact_claim_rows_flip_with_the_data"),
    "test_certify": ("test_lb_below_near_exact_optimum_and_every_certified_plan",
                     "test_forced_second_stage_keeps_every_statement_valid",
                     "test_stage_two_skipped_when_stage_one_meets_the_target",
                     "test_replication_stopped_at_its_limit_contributes_its_dual_bound"),
    "test_depl": (
        "test_knapsack_ratio_never_below_one_and_falls_with_eta",
        "test_allocation_failure_blacklists_the_path",
        "test_best_exp_trains_on_until_quantile_met",
        "test_calibration_never_returns_a_plan_its_test_rejects",
        "test_chernoff_bound_covers_the_simulated_quantile",
        "test_datasets_family_with_transfer_costs_runs",
        "test_depl_plan_passes_the_evaluator",
        "test_out_of_sample_failure_tightens_and_retries",
        "test_unreachable_target_is_reported_infeasible",
    ),
    "test_fit": (
        "test_decay_parameters_recovered",
        "test_family_default_base_round_trip",
        "test_inverse_gamma_recovered_and_not_rejected",
        "test_wrong_family_gives_low_p_values",
    ),
    "test_fuzz_instances": ("test_mutated_instances_meet_the_contract",),
    "test_fuzz_plans": ("test_mutated_plans", "test_plan_files"),   # *_quick variants stay in test-fast
    "test_fuzz_sweeps": ("test_mutated_sweeps",),
    "test_instances": ("test_large_instance_with_a_late_duplicate_is_refused",),
    "test_generators": (
        "test_realistic_alexnet_magnitudes_fig7_fig9",
        "test_realistic_mobilenet_is_cheaper_than_alexnet",
    ),
    "test_milp": (
        "test_enumeration_model_runs_without_presolve_and_matches_flow", "test_heuristic_time_changes_the_work_not_the_optimum",
        "test_dominated_clusters_are_pruned_exactly",
        "test_knapsack_weakly_seed0_is_solved_to_the_dp_optimum",
        "test_tiny_omega_makes_the_quantile_vacuous",
        "test_milp_equals_brute_force[0-2-per_epoch-printed-False]",
        "test_milp_equals_brute_force[1-1-once-intended-True]",
        "test_milp_equals_brute_force[2-1-once-intended-False]",
        "test_data_rule_changes_the_optimum_and_both_solvers_follow",
        "test_extreme_values_give_the_brute_force_answer",
        "test_fast_flow_naive_and_pyomo_agree",
        "test_knapsack_dp_between_bound_and_cost",
        "test_milp_equals_brute_force[0-2-once-intended-False]",
        "test_milp_equals_brute_force[1-2-once-intended-True]",
        "test_milp_equals_brute_force[1-2-per_epoch-printed-True]",
        "test_milp_equals_brute_force[2-1-per_epoch-printed-False]",
        "test_milp_equals_brute_force[2-2-once-intended-False]",
        "test_milp_equals_brute_force[2-2-per_epoch-printed-False]",
        "test_naive_at_gap_1e9_equals_brute_force",
        "test_node_limit_stops_deterministically",
        "test_near_infinite_capacity_and_zero_size",
        "test_scip_and_highs_give_the_brute_force_optimum",
        "test_realistic_enumeration_equals_flow",
        "test_work_counters_are_exact_and_repeatable",
    ),
    "test_milp_general": (
        "test_general_is_forceable_and_refuses_scip_by_name",
        "test_many_datasets_cyclic_equals_brute_force[9-3]",
        "test_equals_milp_on_small_stochastic[0-False]",
        "test_equals_milp_on_small_stochastic[1-False]",
        "test_cyclic_three_models_two_clusters_equals_brute_force",
        "test_equals_flow_with_two_datasets",
        "test_equals_milp_on_small_stochastic[4-True]",
        "test_equals_milp_on_small_stochastic[5-True]",
        "test_equals_milp_on_small_stochastic[6-True]",
        "test_many_datasets_cyclic_equals_brute_force[10-4]",
        "test_seven_datasets_two_clusters_equals_brute_force",
        "test_variants_equal_brute_force[per_epoch-intended]",
        "test_group_bound_is_below_every_feasible_completion",
        "test_switch_counting_dp_equals_exhaustive_minimum",
        "test_switch_counting_group_bound_is_below_every_feasible_completion",
        "test_short_plan_enumeration_finds_the_best_short_plan",
        "test_short_plan_coverage_does_not_change_the_optimum",
    ),
    "test_milp_general_pairs": ("test_same_optimum_with_pair_search_and_groups_on_and_off",
                                "test_pair_search_equals_brute_force"),
    "test_milp_general_datasets": ("test_same_optimum_with_class_leaves_on_and_off", "test_every_leaf_bound_is_below_its_assignment_optimum", "test_seven_datasets_two_clusters_equal_brute_force", "test_two_clusters_many_datasets_equal_exhaustive_enumeration", "test_stopped_search_keeps_a_valid_bound_and_never_claims_optimal"),
    "test_reports": (
        "test_missing_columns_and_bad_json",
        "test_no_exact_rows_says_so",
        "test_no_milp_rows_says_so",
        "test_store_roundtrip_and_cli",
    ),
    "test_runner": ("test_warm_dask_task_path_enforces_the_hard_limit_and_reports_crashes",),
    "test_solver_peers": ("test_pyomo_peers_give_the_brute_force_optimum", "test_pyomo_peer_solves_the_naive_pyomo_model",
                          "test_packaged_peers_sweep_runs_every_milp_task_once_per_solver",
                          "test_pyomo_peers_run_the_cut_loop_on_knapsack",
                          "test_a_peer_without_a_dual_bound_never_claims_optimal"),
    "test_sweep": (
        "test_packaged_sweeps_are_valid[complexity]",
        "test_packaged_sweeps_are_valid[knapsack]",
    ),
}


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


_HELPERS: dict[str, re.Pattern | None] = {}


def _process_helpers(module) -> re.Pattern | None:
    """Calls of the module's non-test functions that start processes,
    directly or through each other (``run_cli(...)``, ``_start_cli(...)``)."""
    name = module.__name__
    if name not in _HELPERS:
        funcs = {n: _source(f) for n, f in vars(module).items()
                 if inspect.isfunction(f) and not n.startswith("test")
                 and getattr(f, "__module__", None) == name}
        starters: set[str] = set()
        while True:   # to a fixed point: helpers calling helpers
            more = {n for n, src in funcs.items() if n not in starters
                    and (_PROCESS_PATTERN.search(src)
                         or any(re.search(rf"(?<![\w.]){re.escape(h)}\(", src)
                                for h in starters if h != n))}
            if not more:
                break
            starters |= more
        _HELPERS[name] = (re.compile("|".join(rf"(?<![\w.]){re.escape(n)}\(" for n in starters))
                          if starters else None)
    return _HELPERS[name]


def _starts_processes(item: pytest.Item) -> bool:
    source = _source(getattr(item, "function", None))
    if not source:
        return False
    if _PROCESS_PATTERN.search(source):
        return True
    helpers = _process_helpers(item.module)
    return bool(helpers and helpers.search(source))


@pytest.hookimpl(tryfirst=True)   # before `-m` deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: dict[str, set[str]] = {}
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in INTEGRATION_MODULES or _starts_processes(item):
            item.add_marker(pytest.mark.integration)
        if _SYSTEM_PATTERN.search(_source(getattr(item, "function", None))):
            item.add_marker(pytest.mark.system_packages)
        listed = SLOW_TESTS.get(module, ())
        function = getattr(item, "originalname", None) or item.name
        seen.setdefault(module, set()).update((item.name, function))
        if (item.name in listed or function in listed
                or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)
    # A renamed or removed test would silently lose its mark: say so.
    stale = [f"{module}::{name}" for module, names in SLOW_TESTS.items() if module in seen
             for name in names if name not in seen[module]]
    if stale and not config.getoption("keyword") and not config.getoption("markexpr"):
        warnings.warn(pytest.PytestWarning(
            "tests/conftest.py SLOW_TESTS names tests that do not exist: " + ", ".join(stale)))
