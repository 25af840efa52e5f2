"""Fuzz corpus for the instance format: hostile input meets a clear contract.

Strategies mutate valid instances — wrong types, extremes, NaN/inf, deep
nesting, unknown names and keys, huge sizes — and feed them to the loader
(:func:`parse_instance` for Python data, :func:`load_instance` for files).
The contract, for every input:

* either an :class:`~deplbench.errors.InstanceError` whose message is one line
  and starts each of its parts with the location of a field of the format
  (``clusters[1].capacity: ...``) or, for a file, the file name;
* or a valid :class:`Instance` whose numbers are finite, whose types are the
  declared ones, and which survives a JSON round trip unchanged.

Never another exception, never a traceback. Cases that once broke the
contract are kept as explicit ``@example``s (see ``REGRESSIONS``).

Examples per test: 60, deterministic (``derandomize``, no database; see
``tests/fuzz_common.py``); set ``DEPLBENCH_FUZZ=full`` for a long random
search.
"""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deplbench.errors import InstanceError
from deplbench.instances.generators import generate
from deplbench.instances.model import Instance, load_instance, parse_instance
from tests.fuzz_common import FULL, HOSTILE, LOC, delete, get, nested, paths, put
from tests.instance_data import base_instance

#: No wall-clock deadline, no example database, deterministic unless
#: DEPLBENCH_FUZZ=full (see tests/fuzz_common.py).
FUZZ = FULL

#: Valid starting points: a hand-written instance with every section, and one
#: of each generator family (small sizes).
SEEDS = [
    base_instance(),
    json.loads(generate("realistic", family="alexnet", switches="any").to_json()),
    json.loads(generate("knapsack", n_items=3, horizon=3, seed=1).to_json()),
    json.loads(generate("datasets", n_datasets=3, seed=2).to_json()),
]
TOP_FIELDS = set(Instance.model_fields)


# ------------------------------------------------------------------ helpers

_paths, _set, _delete, _get, _nested, _LOC = paths, put, delete, get, nested, LOC


def _check_error(msg: str, file_name: str | None = None) -> None:
    """One line; every part names a field of the format (or the file)."""
    assert "\n" not in msg and "Traceback" not in msg, msg
    if file_name is not None:
        assert msg.startswith(f"{file_name}: "), msg
        msg = msg[len(file_name) + 2:]
        if msg.startswith(("not valid JSON", "JSON nested too deeply", "non-finite number")):
            return
    msg = msg.removeprefix("invalid instance: ")
    for part in msg.split("; "):
        m = re.match(rf"({_LOC}|<root>)(?::| \(| )", part)
        assert m, f"no field named in {part!r} (message {msg!r})"
        head = re.split(r"[.\[]", m.group(1))[0]
        assert head in TOP_FIELDS or head in {"<root>", "instance"}, (head, msg)


def _check_valid(inst: Instance) -> None:
    """A valid instance: finite numbers, declared types, a lossless JSON round trip."""
    assert isinstance(inst.horizon, int) and not isinstance(inst.horizon, bool)
    assert inst.format_version == 1 and not isinstance(inst.format_version, bool)
    for x in (inst.initial_loss, inst.loss_max, inst.omega, inst.time_max):
        assert isinstance(x, float) and math.isfinite(x)
    for m in inst.models:
        assert all(isinstance(v, float) and math.isfinite(v)
                   for v in (m.size, m.compute, m.loss_scale, m.loss_offset))
    for c in inst.clusters:
        assert all(isinstance(v, float) and math.isfinite(v) for v in (c.capacity, c.unit_cost, c.bandwidth))
    again = parse_instance(json.loads(inst.to_json()))
    assert again == inst


def _contract(data) -> None:
    """Apply the loader to Python data and check the contract."""
    try:
        inst = parse_instance(data)
    except InstanceError as exc:
        _check_error(str(exc))
    else:
        _check_valid(inst)


# --------------------------------------------------------------- strategies

@st.composite
def mutated(draw):
    """A valid seed instance with one to three mutations."""
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add_key", "grow"]))
        if op == "add_key" or not paths:
            dicts = [p for p in [()] + paths if isinstance(_get(data, p), dict)]
            where = draw(st.sampled_from(dicts))
            key = draw(st.one_of(st.text(min_size=1, max_size=10),
                                 st.sampled_from(["kind", "name", "extra", "0", "\ud800"])))
            target = _get(data, where)
            target[key] = draw(HOSTILE)
            continue
        path = draw(st.sampled_from(paths))
        if op == "delete":
            _delete(data, path)
        elif op == "grow":
            # Huge or duplicated sections: a list repeated (duplicate names),
            # or a number blown up.
            value = _get(data, path)
            if isinstance(value, list) and value:
                _set(data, path, value * draw(st.sampled_from([2, 50])))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                _set(data, path, value * draw(st.sampled_from([1e6, 1e300, -1.0, 0.0])))
            else:
                _set(data, path, draw(HOSTILE))
        else:
            _set(data, path, draw(HOSTILE))
    return data


# -------------------------------------------------------------------- tests

#: Inputs that once broke the contract, kept as fixed regression examples
#: (built lazily: hypothesis's printer recurses on deeply nested examples).
REGRESSIONS = {
    # Silently coerced before strict types
    "horizon-true": lambda: {**base_instance(), "horizon": True},
    "horizon-str": lambda: {**base_instance(), "horizon": "4"},
    "omega-str": lambda: {**base_instance(), "omega": "0.9"},
    "version-true": lambda: {**base_instance(), "format_version": True},
    "unit-cost-false": lambda: _with(base_instance(), ("clusters", 0, "unit_cost"), False),
    "capacity-str": lambda: _with(base_instance(), ("clusters", 1, "capacity"), "100.0"),
    # Deep nesting inside free-form provenance was validated but
    # could not be serialised back (pydantic's depth limit)
    "provenance-deep": lambda: {**base_instance(), "provenance": {"x": _nested(500)}},
    # found by this corpus: an unknown top-level key "0" was reported as "0: Extra inputs ..."
    "unknown-key-0": lambda: {**base_instance(), "0": 1},
    # found by this corpus: a lone surrogate (JSON "\ud800") validated, then
    # the instance could not be written back as UTF-8
    "surrogate-name": lambda: {**base_instance(), "name": "\ud800"},
    "surrogate-key": lambda: {**base_instance(), "provenance": {"a\udfff": 1}},
}


def _with(data, path, value):
    _set(data, path, value)
    return data


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_regressions(name):
    data = REGRESSIONS[name]()
    with pytest.raises(InstanceError) as err:
        parse_instance(data)
    _check_error(str(err.value))


@pytest.mark.parametrize("how", ["dev-zero", "fifo", "directory", "sparse-3GB", "gzip-bomb"])
def test_file_regressions(tmp_path, how):
    """Files that are not instance files: refused before reading, one line naming the file
    (a MemoryError traceback, a read blocked forever, or an inflated bomb before)."""
    import gzip
    import os

    if how == "dev-zero":
        path = "/dev/zero"
    elif how == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)                    # nobody writes: reading it would block
    elif how == "directory":
        path = tmp_path
    elif how == "sparse-3GB":
        path = tmp_path / "big.json"
        with open(path, "wb") as fh:
            fh.truncate(3 * 10**9)
    else:
        path = tmp_path / "bomb.json.gz"
        path.write_bytes(gzip.compress(b" " * (4 * 2**20), mtime=0))
    if how == "gzip-bomb":
        from deplbench import limits

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(limits, "MAX_UNCOMPRESSED_BYTES", 2**20)
            with pytest.raises(InstanceError) as err:
                load_instance(path)
    else:
        with pytest.raises(InstanceError) as err:
            load_instance(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    why = {"dev-zero": "not a regular file", "fifo": "not a regular file", "directory": "is a directory",
           "sparse-3GB": "larger than the limit", "gzip-bomb": "inflates beyond the limit"}[how]
    assert why in msg, msg


@FUZZ
@given(mutated())
@pytest.mark.slow
def test_mutated_instances_meet_the_contract(data):
    _contract(data)


@FUZZ
@given(st.sampled_from(SEEDS), st.sampled_from(sorted(TOP_FIELDS - {"provenance"})), HOSTILE)
def test_any_top_level_field_any_value(seed, field, value):
    data = copy.deepcopy(seed)
    data[field] = value
    _contract(data)


@FUZZ
@given(mutated(), st.sampled_from(["plain", "nan", "deep"]))
def test_files_meet_the_contract(tmp_path_factory, data, how):
    """Through a file: non-finite constants and deep nesting at the JSON level."""
    path = tmp_path_factory.mktemp("fuzz") / "inst.json"
    text = json.dumps(data, allow_nan=True)
    if how == "nan":
        text = text.replace('"omega": ', '"omega": NaN, "x_": ', 1)
    elif how == "deep":
        text = text[:-1] + ', "provenance": ' + "[" * 5000 + "]" * 5000 + "}"
    path.write_text(text, encoding="utf-8")
    try:
        inst = load_instance(path)
    except InstanceError as exc:
        _check_error(str(exc), file_name=str(path))
    else:
        assert how == "plain"
        _check_valid(inst)


@pytest.mark.parametrize("field, item", [("transfer_costs", 0), ("models", 0), ("switches", {}),
                                         ("datasets", "d")])
def test_a_long_list_of_wrong_items_costs_one_error(field, item):
    """A list stops at its first bad item (pydantic's FailFast): 10^5 wrong items give one short
    error line naming the first, not 10^5 error records and a line of megabytes."""
    from deplbench.errors import InstanceError
    from deplbench.instances.model import parse_instance
    from tests.instance_data import two_model_data

    data = two_model_data()
    data[field] = [item] * 100_000
    with pytest.raises(InstanceError) as exc:
        parse_instance(data)
    assert f"{field}[0]" in str(exc.value) and f"{field}[1]" not in str(exc.value)
    assert len(str(exc.value)) < 500, len(str(exc.value))


def test_a_plan_with_many_wrong_items_costs_one_error_per_list():
    from deplbench.errors import PlanError
    from deplbench.formulations.model.plan import parse_plan

    with pytest.raises(PlanError) as exc:
        parse_plan({"epochs": [{"model": 1}] * 100_000, "datasets": {"c": [0] * 100_000}})
    assert len(str(exc.value)) < 1000 and "epochs[1]" not in str(exc.value), str(exc.value)[:300]


def test_an_error_message_lists_at_most_twenty_errors():
    from pydantic import BaseModel, ValidationError, create_model

    from deplbench.instances.model import MAX_LISTED_ERRORS, format_validation_error

    many: type[BaseModel] = create_model("Many", **{f"f{i}": (int, ...) for i in range(MAX_LISTED_ERRORS + 5)})
    with pytest.raises(ValidationError) as exc:
        many.model_validate({})
    text = format_validation_error(exc.value)
    assert text.count("Field required") == MAX_LISTED_ERRORS and text.endswith("and 5 more error(s)"), text
