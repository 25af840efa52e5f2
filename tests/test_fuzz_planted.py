"""Fuzz properties that state what validation must do (docs/mutation.md).

The older fuzz corpora (``test_fuzz_instances``, ``test_fuzz_sweeps``) check
that an error *names a field* or that a result is finite and round-trips;
with a range or cross-reference check deleted from the source they still
pass. Here every example is a **valid** instance or sweep with **one known
invalid value planted** (a non-positive capacity, ω outside (0, 1), ℓmax ≥
ℓ(0), a duplicate or unknown name, ...). The property: the loader refuses it
and the message names *that* field. Deleting any one of those checks makes
the property fail — shown here by monkeypatching the validator, and for
every single check by ``perf/mutate_validation.py``.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deplbench.benchmarks.library import LIBRARY_VERSION
from deplbench.benchmarks.sweep import parse_sweep
from deplbench.errors import InstanceError, SweepError
from deplbench.instances.generators import generate
from deplbench.instances.magnitudes import MAX_LOSS, MIN_NORMAL
from deplbench.instances.model import parse_instance
from tests.fuzz_common import fuzz_settings
from tests.instance_data import base_instance

#: Examples per planted kind (every kind runs: a parametrised test each).
PER_KIND = fuzz_settings(12)

SEEDS = [
    base_instance(),
    json.loads(generate("realistic", family="alexnet", switches="any").to_json()),
    json.loads(generate("datasets", n_datasets=3, seed=2).to_json()),
]

_nonpos = st.one_of(st.just(0.0), st.floats(max_value=0.0, allow_nan=False, allow_infinity=False))
_neg = st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False)
_not_prob = st.one_of(st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
                      st.floats(min_value=1.0, allow_nan=False, allow_infinity=False))


def _plant_list_field(section: str, field: str, values):
    """In ``section[i].field`` (i drawn), a value drawn from ``values``."""
    @st.composite
    def plant(draw, data):
        i = draw(st.integers(0, len(data[section]) - 1))
        data[section][i][field] = draw(values)
        return f"{section}[{i}].{field}"
    return plant


def _plant_top(field: str, values):
    @st.composite
    def plant(draw, data):
        data[field] = draw(values)
        return field
    return plant


@st.composite
def _loss_max_not_below(draw, data):
    data["loss_max"] = data["initial_loss"] + draw(st.floats(0.0, 1e6, allow_nan=False))
    return "loss_max"


@st.composite
def _duplicate_name(draw, data):
    section = draw(st.sampled_from([s for s in ("models", "clusters", "datasets") if len(data[s]) >= 1]))
    item = copy.deepcopy(draw(st.sampled_from(data[section])))
    data[section].append(item)
    return section


@st.composite
def _unknown_switch_model(draw, data):
    if not data.get("switches"):
        names = [m["name"] for m in data["models"]]
        data["switches"] = [{"from_model": names[0], "to_model": "x", "jump": {"kind": "point", "value": 0.0}}]
    i = draw(st.integers(0, len(data["switches"]) - 1))
    attr = draw(st.sampled_from(["from_model", "to_model"]))
    data["switches"][i][attr] = "no-such-model-" + draw(st.text("abc", min_size=1, max_size=4))
    return f"switches[{i}].{attr}"


@st.composite
def _unknown_transfer_ref(draw, data):
    attr = draw(st.sampled_from(["dataset", "cluster"]))
    entry = {"dataset": data["datasets"][0]["name"], "cluster": data["clusters"][0]["name"], "cost": 1.0}
    entry[attr] = "no-such-" + draw(st.text("xyz", min_size=1, max_size=4))
    data.setdefault("transfer_costs", []).append(entry)
    return f"transfer_costs[{len(data['transfer_costs']) - 1}].{attr}"


@st.composite
def _switch_to_itself(draw, data):
    if not data.get("switches"):
        name = data["models"][0]["name"]
        data["switches"] = [{"from_model": name, "to_model": name, "jump": {"kind": "point", "value": 0.0}}]
        return "switches[0]"
    i = draw(st.integers(0, len(data["switches"]) - 1))
    data["switches"][i]["to_model"] = data["switches"][i]["from_model"]
    return f"switches[{i}]"


@st.composite
def _duplicate_switch(draw, data):
    """A copy of a switch appended (a model pair appears twice): the copy is named."""
    if not data.get("switches"):
        a, b = (m["name"] for m in data["models"][:2])
        data["switches"] = [{"from_model": a, "to_model": b, "jump": {"kind": "point", "value": 0.0}}]
    data["switches"].append(copy.deepcopy(draw(st.sampled_from(data["switches"]))))
    return f"switches[{len(data['switches']) - 1}]"


@st.composite
def _duplicate_transfer_entry(draw, data):
    entries = data.setdefault("transfer_costs", [])
    if not entries:
        entries.append({"dataset": data["datasets"][0]["name"], "cluster": data["clusters"][0]["name"], "cost": 1.0})
    entry = copy.deepcopy(draw(st.sampled_from(entries)))
    entry["cost"] = draw(st.floats(0.0, 1e6, allow_nan=False))
    entries.append(entry)
    return f"transfer_costs[{len(entries) - 1}]"


@st.composite
def _loss_beyond_max(draw, data):
    """ℓ(0) above +MAX_LOSS or ℓmax below −MAX_LOSS (ℓmax < ℓ(0) still holds)."""
    big = draw(st.floats(min_value=math.nextafter(MAX_LOSS, math.inf), allow_nan=False, allow_infinity=False))
    field = draw(st.sampled_from(["initial_loss", "loss_max"]))
    data[field] = big if field == "initial_loss" else -big
    return field


_subnormal = st.floats(min_value=math.ulp(0.0), max_value=math.nextafter(MIN_NORMAL, 0.0), allow_subnormal=True)

#: (kind, planter): each planter breaks exactly one rule and returns the field it broke.
INSTANCE_PLANTS = {
    "capacity <= 0": _plant_list_field("clusters", "capacity", _nonpos),
    "bandwidth <= 0": _plant_list_field("clusters", "bandwidth", _nonpos),
    "unit_cost < 0": _plant_list_field("clusters", "unit_cost", _neg),
    "compute <= 0": _plant_list_field("models", "compute", _nonpos),
    "loss_scale <= 0": _plant_list_field("models", "loss_scale", _nonpos),
    "model size < 0": _plant_list_field("models", "size", _neg),
    "dataset size <= 0": _plant_list_field("datasets", "size", _nonpos),
    "usefulness <= 0": _plant_list_field("datasets", "usefulness", _nonpos),
    "omega not in (0, 1)": _plant_top("omega", _not_prob),
    "time_max <= 0": _plant_top("time_max", _nonpos),
    "horizon < 1": _plant_top("horizon", st.integers(max_value=0)),
    "loss_max >= initial_loss": _loss_max_not_below,
    "duplicate name": _duplicate_name,
    "unknown switch model": _unknown_switch_model,
    "unknown transfer reference": _unknown_transfer_ref,
    "switch to itself": _switch_to_itself,
    "duplicate switch": _duplicate_switch,
    "duplicate transfer entry": _duplicate_transfer_entry,
    "loss beyond MAX_LOSS": _loss_beyond_max,
    "subnormal number": _plant_list_field("clusters", "unit_cost", _subnormal),
}


def refused_naming(parse, data, field: str, error) -> None:
    """The property: ``parse(data)`` raises ``error`` and the message names ``field``."""
    try:
        parse(data)
    except error as exc:
        assert field in str(exc), f"refused, but the message does not name {field!r}: {exc}"
        return
    raise AssertionError(f"accepted an instance with an invalid {field}")


@st.composite
def planted_instance(draw, kinds=tuple(INSTANCE_PLANTS)):
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    kind = draw(st.sampled_from(kinds))
    field = draw(INSTANCE_PLANTS[kind](data))
    return kind, data, field


@pytest.mark.parametrize("kind", list(INSTANCE_PLANTS))
def test_planted_invalid_instance_is_refused_naming_the_field(kind):
    @PER_KIND
    @given(planted_instance((kind,)))
    def prop(case):
        _, data, field = case
        refused_naming(parse_instance, data, field, InstanceError)
    prop()


def test_every_seed_is_valid_before_planting():
    for data in SEEDS:
        parse_instance(copy.deepcopy(data))


# ---- the property can fail: remove a check and it does -------------------------------------------

def _property_fails(kinds) -> bool:
    """Run the planted-instance property over ``kinds``; True when it failed."""
    @PER_KIND
    @given(planted_instance(kinds))
    def prop(case):
        _, data, field = case
        refused_naming(parse_instance, data, field, InstanceError)
    try:
        prop()
    except AssertionError:
        return True
    return False


@pytest.mark.slow
def test_property_fails_without_the_duplicate_name_check(monkeypatch):
    from deplbench.instances import model

    assert not _property_fails(("duplicate name",))
    monkeypatch.setattr(model, "_duplicates", lambda names: [])      # the cross-reference check removed
    assert _property_fails(("duplicate name",))


@pytest.mark.slow
def test_property_fails_without_the_omega_range_check(monkeypatch):
    from pydantic.fields import FieldInfo

    from deplbench.instances.model import Instance

    assert not _property_fails(("omega not in (0, 1)",))
    field = Instance.model_fields["omega"]
    loose = FieldInfo.merge_field_infos(field)
    # the range removed: the Field bounds and the readable check before them (instances.magnitudes.omega_range)
    loose.metadata = [m for m in field.metadata if type(m).__name__ not in ("Ge", "Le", "BeforeValidator")]
    monkeypatch.setitem(Instance.model_fields, "omega", loose)
    Instance.model_rebuild(force=True)
    try:
        assert _property_fails(("omega not in (0, 1)",))
    finally:
        monkeypatch.undo()
        Instance.model_rebuild(force=True)
    assert not _property_fails(("omega not in (0, 1)",))


# ---- sweeps ---------------------------------------------------------------------------------------

def _valid_sweep() -> dict:
    return {"sweep": {"name": "s", "time_limit_s": 60.0},
            "instances": [{"id": "a", "family": "knapsack", "params": {"n_items": 5}},
                          {"id": "b", "family": "realistic", "params": {"family": "alexnet"},
                           "targets": {"omega": [0.9, 0.95]}}],
            "algorithms": [{"name": "milp", "instances": ["a"]}, {"name": "depl"}]}


SWEEP_PLANTS = ("omega target", "duplicate id", "unknown group", "time limit", "seed", "output path")


@st.composite
def planted_sweep(draw, kind):
    data = _valid_sweep()
    if kind == "omega target":
        data["instances"][1]["targets"]["omega"] = [0.9, draw(_not_prob)]
        return data, "instances[1].targets.omega"
    if kind == "duplicate id":
        data["instances"][1]["id"] = "a"
        return data, "instances[1].id"
    if kind == "unknown group":
        data["algorithms"][0]["instances"] = ["a", "zz-" + draw(st.text("xyz", min_size=1, max_size=3))]
        return data, "algorithms[0].instances[1]"
    if kind == "time limit":
        data["algorithms"][1]["time_limit_s"] = draw(_nonpos)
        return data, "algorithms[1].time_limit_s"
    if kind == "seed":
        data["instances"][0]["seeds"] = [0, draw(st.integers(max_value=-1))]
        return data, "instances[0].seeds[1]"
    data["algorithms"][0]["params"] = {"write_lp": draw(st.sampled_from(["../x.lp", "/tmp/x.lp", "a/../../x.lp"]))}
    return data, "algorithms[0].params.write_lp"


@pytest.mark.parametrize("kind", SWEEP_PLANTS)
def test_planted_invalid_sweep_is_refused_naming_the_field(kind):
    @PER_KIND
    @given(planted_sweep(kind))
    def prop(case):
        data, field = case
        refused_naming(lambda d: parse_sweep(d, check_names=False), data, field, SweepError)
    prop()


def test_valid_sweep_before_planting():
    assert parse_sweep(_valid_sweep(), check_names=False).name == "s"


# ---- sweeps: globs and counts (files on disk) -----------------------------------------------------

@st.composite
def planted_glob_sweep(draw):
    """A glob ``path`` that leaves the sweep's folder, or repetitions past ``max_tasks``."""
    data = {"sweep": {"name": "s", "max_tasks": 6},
            "instances": [{"id": "g", "path": "inst/*.json"}], "algorithms": [{"name": "depl"}]}
    kind = draw(st.sampled_from(["outside", "count"]))
    if kind == "outside":
        data["instances"][0]["path"] = draw(st.sampled_from(["/**/*.json", "../*.json", "inst/../../*.json",
                                                             "../**/*.json"]))
        return data, "instances[0].path"
    data["algorithms"][0]["repetitions"] = draw(st.integers(4, 1000))   # 2 files × 4+ > 6
    return data, "sweep.max_tasks"


def test_planted_invalid_glob_sweep_is_refused_naming_the_field(tmp_path_factory):
    folder = tmp_path_factory.mktemp("glob")
    (folder / "inst").mkdir()
    for i in range(2):
        (folder / "inst" / f"i{i}.json").write_text(json.dumps(base_instance()), encoding="utf-8")

    @PER_KIND
    @given(planted_glob_sweep())
    def prop(case):
        data, field = case
        refused_naming(lambda d: parse_sweep(d, base_dir=folder, check_names=False), data, field, SweepError)
    prop()


# ---- the library's manifest and an outside solver's solution ------------------------------------

def _valid_manifest() -> dict:
    return {"library_version": LIBRARY_VERSION, "pwl_tolerance": 1e-4,
            "entries": [{"name": f"e{i}", "instance": f"instances/e{i}.json", "pwl": f"pwl/e{i}.mps.gz",
                         "minlp": f"minlp/e{i}.nl.gz", "minlp_files": [f"minlp/e{i}.nl.gz", f"minlp/e{i}.gms.gz"],
                         "scenarios": 10, "seed": 0, "formulation": "fast"} for i in range(3)]}


_BAD_PATHS = st.sampled_from(["/etc/passwd", "../x.json", "instances/../../x.json", "~/x.json", ""])


@st.composite
def planted_manifest(draw):
    data = _valid_manifest()
    i = draw(st.integers(0, 2))
    kind = draw(st.sampled_from(["path", "files", "not an object", "name", "duplicate", "count"]))
    if kind == "path":
        field = draw(st.sampled_from(["instance", "pwl", "minlp"]))
        data["entries"][i][field] = draw(_BAD_PATHS)
        return data, f"entries[{i}].{field}"
    if kind == "files":
        data["entries"][i]["minlp_files"][1] = draw(_BAD_PATHS)
        return data, f"entries[{i}].minlp_files[1]"
    if kind == "not an object":
        data["entries"][i] = draw(st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)))
        return data, f"entries[{i}]"
    if kind == "name":
        data["entries"][i]["name"] = draw(st.sampled_from(["../e", "/e", ".e", "", "a b", 7]))
        return data, f"entries[{i}].name"
    if kind == "duplicate":
        data["entries"][i]["name"] = data["entries"][(i + 1) % 3]["name"]
        return data, f"entries[{max(i, (i + 1) % 3)}].name"
    data["entries"][i]["scenarios"] = draw(st.one_of(st.integers(max_value=0), st.just("10"), st.just(1.5)))
    return data, f"entries[{i}].scenarios"


def test_planted_invalid_manifest_is_refused_naming_the_field(tmp_path_factory):
    from deplbench.benchmarks.library.manifest import validate_manifest
    from deplbench.errors import SolverError

    root = str(tmp_path_factory.mktemp("lib"))
    validate_manifest(_valid_manifest(), root)                 # valid before planting

    @PER_KIND
    @given(planted_manifest())
    def prop(case):
        data, field = case
        refused_naming(lambda d: validate_manifest(d, root), data, field, SolverError)
    prop()


@st.composite
def planted_solution(draw):
    n = draw(st.integers(1, 6))
    values = [repr(draw(st.floats(-1e6, 1e6, allow_nan=False))) for _ in range(n)]
    i = draw(st.integers(0, n - 1))
    values[i] = draw(st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "+nan"]))
    lines = ["# solution"] + [f"x_{j} {v}" for j, v in enumerate(values)]
    return "\n".join(lines) + "\n", f"line {i + 2}: value {values[i]!r} of 'x_{i}'"


def test_planted_non_finite_solution_value_is_refused_naming_line_and_variable(tmp_path_factory):
    from deplbench.benchmarks.library.verify import read_sol
    from deplbench.errors import SolverError

    path = tmp_path_factory.mktemp("sol") / "s.sol"

    @PER_KIND
    @given(planted_solution())
    def prop(case):
        text, field = case
        path.write_text(text, encoding="utf-8")
        refused_naming(lambda _: read_sol(str(path)), None, field, SolverError)
    prop()


# ---- the mutation run stays applicable ------------------------------------------------------------

def test_every_mutation_of_the_mutation_run_applies_to_the_source():
    """Each of ``perf/mutate_validation.py``'s mutations finds its source text
    exactly once: a check renamed or moved would otherwise leave its mutation
    "not applied" and the check unprotected without anyone noticing."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "perf" / "mutate_validation.py"
    spec = importlib.util.spec_from_file_location("mutate_validation", script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    stale = [(name, problem) for name, rel, old, new, *_ in mod.MUTATIONS for path, o, n in mod.edits(rel, old, new)
             if (problem := mod.mutated((mod.ROOT / "src" / path).read_text(encoding="utf-8"), o, n)[1])]
    assert not stale, f"update MUTATIONS in perf/mutate_validation.py: {stale}"


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
