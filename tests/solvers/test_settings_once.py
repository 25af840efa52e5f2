"""One settings object per solve, validated once; one clock.

A parameter walked from the command line to the search passes through each
layer once: ``solve()`` resolves it against the solver's one ``Param`` table,
the family's frozen settings object is built from the resolved values
without a second check, and every layer below reads that object (or the
one :func:`deplbench.limits.deadline` that ``solve()`` opened), never a
re-parsed keyword or a deadline of its own.
"""

from __future__ import annotations

import collections
import contextlib
import json

import pytest

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.general import GeneralSettings, GeneralSolveSettings, run_general
from deplbench.formulations.general import solver as general_solver
from deplbench.formulations.milp import MilpSettings, option_table, solve_milp
from deplbench.formulations.milp import solve as milp_solve
from deplbench.params import GAP, SEED, TIME_LIMIT, Param, offset_seed
from deplbench.solvers import registry
from deplbench.solvers import run as solvers_run
from tests.milp_instances import tiny_instance


def _general_instance():
    """Cyclic switch graph, two clusters: the general branch-and-bound solves it in milliseconds."""
    return tiny_instance(seed=2, n_datasets=1, n_clusters=2, horizon=3, n_models=2, all_switches=True)


@pytest.fixture
def walk(monkeypatch):
    """Counts every Param check by parameter name, every GeneralSettings parse,
    every deadline opened, and the time limit the general search runs under."""
    seen: dict = {"checked": collections.Counter(), "general_parses": 0, "deadlines": [],
                  "search_limit": [], "search_left": []}
    # the registry checks a class's declared defaults once, when it first loads it (not a solve's
    # check): loaded before the count, the count is the same alone as after other tests
    for name in ("milp", "milp-certified"):
        registry.get_solver(name)

    convert = Param.convert

    def counting_convert(self, name, value, **kw):
        seen["checked"][name] += 1
        return convert(self, name, value, **kw)

    monkeypatch.setattr(Param, "convert", counting_convert)

    from_params = GeneralSettings.from_params.__func__

    def counting_from_params(cls, given=None):
        seen["general_parses"] += 1
        return from_params(cls, given)

    monkeypatch.setattr(GeneralSettings, "from_params", classmethod(counting_from_params))

    deadline = limits.deadline

    @contextlib.contextmanager
    def counting_deadline(time_limit):
        seen["deadlines"].append(time_limit)
        with deadline(time_limit):
            yield

    # solve() imported the name; the formulations call it as limits.deadline
    monkeypatch.setattr(solvers_run, "deadline", counting_deadline)
    monkeypatch.setattr(limits, "deadline", counting_deadline)

    solve_phases = general_solver._solve

    def watching_solve(instance, settings, verbose):
        seen["search_limit"].append(limits.time_limit_s())
        seen["search_left"].append(limits.time_left())
        return solve_phases(instance, settings, verbose)

    monkeypatch.setattr(general_solver, "_solve", watching_solve)
    return seen


def test_time_limit_from_the_cli_to_the_search_is_validated_once(walk, tmp_path, capsys):
    """``deplbench solve --algo milp --formulation general --time-limit 30``: the
    time limit is checked once (the milp solver's table), one deadline is opened
    (by solve()), and the general search runs under it; the general settings
    given with --param are parsed once."""
    from deplbench.cli import main

    path = tmp_path / "tiny.json"
    _general_instance().save(path)
    code = main(["solve", str(path), "--algo", "milp", "--formulation", "general", "--time-limit", "30",
                 "--scenarios", "10", "--eval-samples", "1000", "--param", "general_settings=short_plans=no",
                 "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["status"] == "optimal", record["message"]
    assert record["diagnostics"]["variant"] == "general"          # the search that was walked to
    assert record["params"]["time_limit"] == 30.0
    assert record["params"]["general_settings"]["short_plans"] is False

    assert walk["checked"]["time_limit"] == 1, walk["checked"]
    for name in ("formulation", "scenarios", "general_settings", "short_plans"):
        assert walk["checked"][name] == 1, (name, walk["checked"])
    assert walk["general_parses"] == 1
    # one clock: solve() opens it; run_milp and run_general open nested scopes of the same
    # limit, which keep the earlier deadline
    assert walk["deadlines"][0] == 30.0 and set(walk["deadlines"]) == {30.0}
    assert walk["search_limit"] == [30.0] and 0 < walk["search_left"][0] <= 30.0


def test_solve_milp_keywords_are_a_front_validated_once(walk):
    """The Python front: keywords checked once into a MilpSettings, one deadline."""
    res = solve_milp(_general_instance(), scenarios=10, time_limit=30.0, formulation="general",
                     general_settings={"short_plans": False})
    assert res.status == "optimal", res.message
    assert walk["checked"]["time_limit"] == 1 and walk["checked"]["short_plans"] == 1
    assert walk["general_parses"] == 1
    assert set(walk["deadlines"]) == {30.0} and walk["search_limit"] == [30.0]


def test_solve_general_keywords_are_a_front_validated_once(walk):
    res = general_solver.solve_general(_general_instance(), scenarios=10, time_limit=30.0)
    assert res.status == "optimal", res.message
    assert walk["checked"]["time_limit"] == 1
    assert set(walk["deadlines"]) == {30.0} and walk["search_limit"] == [30.0]


def test_matrix_route_opens_no_other_limit(walk):
    """solve() opens the deadline; the MILP's matrix route opens only a nested scope of
    the same limit (run_milp's own, for direct calls). (With the incumbent heuristic
    on, its own budget, ``heuristic_time``, is a scope nested inside: off here.)"""
    res = solvers_run.solve(tiny_instance(0), "milp", scenarios=10, time_limit=30.0, heuristic_time=0.0,
                            evaluate=False)
    assert res.status == "optimal", res.message
    assert res.diagnostics["variant"] != "general"
    assert walk["checked"]["time_limit"] == 1
    assert walk["deadlines"] == [30.0, 30.0]


def test_the_general_search_reads_the_one_clock():
    """No deadline of its own: inside an expired limits.deadline the general
    search stops at once and names the phase."""
    settings = GeneralSolveSettings.from_params({"scenarios": 10, "time_limit": 30.0})
    with limits.deadline(1e-9):
        res = run_general(_general_instance(), settings)
    assert res.status == "time_limit" and res.diagnostics["stopped_in"] == "setup"
    assert res.params["time_limit"] == 30.0        # recorded as given; the clock is the caller's
    with limits.deadline(None):
        assert run_general(_general_instance(), settings).status == "optimal"


def _time_limit_tables():
    """Every table that declares a time_limit, seed or gap: each solver's, and
    the formulations' own fronts."""
    from deplbench.formulations.general import SOLVE_PARAMETERS
    from deplbench.solvers.certify.settings import SETTINGS_PARAMETERS

    tables = {f"solver {name}": registry.get_solver(name).parameters for name in registry.SOLVERS}
    tables.update({"solve_milp": option_table(("fast",)), "solve_general": SOLVE_PARAMETERS,
                   "certify": SETTINGS_PARAMETERS})
    return tables


def _seed_offsets():
    """The tables whose seed leaves room for streams drawn at seed + offset: their largest offset."""
    from deplbench.formulations.adaptive.settings import TUNING_SEED_OFFSET
    from deplbench.solvers.baselines.common import CHECK_SEED_OFFSET
    from deplbench.solvers.certify.settings import MAX_SEED_OFFSET

    return {"solver milp-certified": MAX_SEED_OFFSET, "certify": MAX_SEED_OFFSET,
            "solver adaptive-opt": TUNING_SEED_OFFSET, "solver pact": CHECK_SEED_OFFSET,
            "solver one-switch": CHECK_SEED_OFFSET, "solver static-learn": CHECK_SEED_OFFSET}


def test_every_time_limit_seed_and_memory_limit_is_the_shared_declaration():
    tables = _time_limit_tables()
    shared = {"time_limit": TIME_LIMIT, "seed": SEED, "memory_limit": limits.MEMORY_LIMIT_PARAM}
    offsets = _seed_offsets()
    found = collections.Counter()
    for owner, table in tables.items():
        for name, declared in shared.items():
            if name in table:
                found[name] += 1
                if name == "seed" and owner in offsets:
                    declared = offset_seed(offsets[owner], "", "")
                    assert table[name].high == declared.high and table[name].high_reason, (owner, table[name])
                    declared = declared.but(high_reason=table[name].high_reason)
                assert declared.same_rule(table[name]), (owner, name, table[name])
    # the walk above is not vacuous: most solvers declare them
    assert found["time_limit"] >= 8 and found["seed"] >= 8 and found["memory_limit"] >= 8, found


def test_the_exact_solvers_share_one_gap_rule():
    """The MILP, its keyword front, the general search and the certified bracket (whose SAA
    solves are that MILP) accept the same gaps (one rule, :data:`deplbench.params.GAP`: 0 < gap ≤ 0.999999)."""
    from deplbench.formulations.general import SOLVE_PARAMETERS
    from deplbench.solvers.certify.settings import SETTINGS_PARAMETERS, CertifySettings

    # milp-certified's SAA solves are this MILP: a gap it refuses would end every one in status error
    for table in (registry.get_solver("milp").parameters, option_table(("fast",)), SOLVE_PARAMETERS,
                  registry.get_solver("milp-certified").parameters, SETTINGS_PARAMETERS):
        assert GAP.same_rule(table["gap"])
    for gap in (0.9999995, 1.0):
        with pytest.raises(SolverError, match="^parameter 'gap'"):
            MilpSettings(gap=gap)
        with pytest.raises(SolverError, match="^parameter 'gap'"):
            GeneralSolveSettings(gap=gap)
        with pytest.raises(SolverError, match="^parameter 'gap'"):
            CertifySettings(gap=gap)


def test_a_settings_object_is_checked_when_built_and_passed_whole():
    with pytest.raises(SolverError, match="^parameter 'time_limit': must be > 0.0"):
        MilpSettings(time_limit=0.0)
    with pytest.raises(SolverError, match="^solver: 'scip' solves the matrix formulations"):
        MilpSettings(solver="scip", formulation="naive")            # a check across options, at build
    settings = MilpSettings(scenarios=10, time_limit=None, formulation="general",
                            general_settings=GeneralSettings(short_plans=False))
    res = solve_milp(_general_instance(), settings=settings)
    assert res.status == "optimal" and res.params["general_settings"]["short_plans"] is False
    with pytest.raises(SolverError, match="^scenarios: give solve_milp's options either as a MilpSettings"):
        solve_milp(_general_instance(), scenarios=20, settings=settings)


@pytest.mark.parametrize("given", [{"time_limit": 60.0}, {"gap": 1e-4}, {"general_settings": None}])
def test_an_option_beside_settings_is_refused_even_at_its_default(given):
    """Which keywords were passed decides, not whether they differ from the defaults:
    ``time_limit=60.0`` beside ``settings`` would otherwise be dropped silently."""
    settings = MilpSettings(scenarios=10, time_limit=None, formulation="general")
    name = next(iter(given))
    with pytest.raises(SolverError, match=f"^{name}: give solve_milp's options either as a MilpSettings"):
        solve_milp(_general_instance(), settings=settings, **given)
    with pytest.raises(SolverError, match="^the positional options: give solve_milp's options"):
        solve_milp(_general_instance(), 1000, settings=settings)


def test_run_milp_and_run_general_open_their_own_deadline(monkeypatch):
    """Called directly (no solve(), no keyword front), run_milp and run_general still
    run under ``settings.time_limit``: the probes see the deadline set."""
    seen = []

    def probe(body):
        def watching(*args, **kwargs):
            seen.append((limits.time_limit_s(), limits.time_left()))
            return body(*args, **kwargs)
        return watching

    monkeypatch.setattr(general_solver, "_solve", probe(general_solver._solve))
    monkeypatch.setattr(milp_solve, "_solve_stages", probe(milp_solve._solve_stages))
    run_general(_general_instance(), GeneralSolveSettings(scenarios=10, time_limit=0.5))
    milp_solve.run_milp(_general_instance(), MilpSettings(scenarios=10, time_limit=0.5, formulation="general"))
    milp_solve.run_milp(tiny_instance(0), MilpSettings(scenarios=10, time_limit=0.5, heuristic_time=0.0))
    assert len(seen) == 3
    for limit, left in seen:
        assert limit == 0.5 and left <= 0.5
    # a caller's earlier deadline is kept (one clock): the nested scope does not extend it
    seen.clear()
    with limits.deadline(0.25):
        run_general(_general_instance(), GeneralSolveSettings(scenarios=10, time_limit=30.0))
    assert seen[0][1] <= 0.25


def test_an_error_inside_general_settings_names_it():
    with pytest.raises(SolverError, match=r"^general_settings: parameter 'max_blocks': must be <= 3"):
        GeneralSettings.from_params("max_blocks=9")
    with pytest.raises(SolverError, match=r"^general_settings: the general solver's settings has no "
                                          r"parameter 'nope'"):
        GeneralSettings.from_params({"nope": 1})
    with pytest.raises(SolverError, match=r"^general_settings: parameter 'max_blocks'"):
        MilpSettings.from_params({"general_settings": "max_blocks=9"})


def test_the_milp_stages_take_the_settings_not_keywords():
    """The stages of the matrix route take the settings object whole (no keyword re-spreading)."""
    import inspect

    assert list(inspect.signature(milp_solve._solve_stages).parameters)[:2] == ["instance", "settings"]
    assert list(inspect.signature(milp_solve.run_milp).parameters)[:2] == ["instance", "settings"]
    assert list(inspect.signature(general_solver.run_general).parameters)[:2] == ["instance", "settings"]
