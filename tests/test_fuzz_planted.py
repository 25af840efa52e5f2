"""Fuzz properties that state what validation must do (docs/mutation.md).

The older fuzz corpora (``test_fuzz_instances``, ``test_fuzz_sweeps``) check
that an error *names a field* or that a result is finite and round-trips;
with a range or cross-reference check deleted from the source they still
pass. Here every example is a **valid** instance or sweep with **one known
invalid value planted** (a non-positive capacity, ω outside (0, 1), ℓmax ≥
ℓ(0), a duplicate or unknown name, ...). The property: the loader refuses it
and the message names *that* field. Deleting any one of those checks makes
the property fail — shown here by monkeypatching the validator, and for
every single check by ``benchmarks/mutate_validation.py``.
"""

from __future__ import annotations

import copy
import json

import pytest
from fuzz_common import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from instance_data import base_instance

from deplbench.benchmarks.sweep import parse_sweep
from deplbench.errors import InstanceError, SweepError
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance

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
    loose.metadata = [m for m in field.metadata if type(m).__name__ not in ("Gt", "Lt")]  # range removed
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


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
