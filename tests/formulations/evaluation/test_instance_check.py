"""``check_instance``: an instance changed in code is refused as ``load_instance`` refuses the same file.

Both depths (``full=False`` before every ``evaluate_plan``, ``full=True``
before ``solve``) must give, after their ``instance: `` prefix, exactly the
message :func:`~deplbench.instances.model.parse_instance` gives for the same
data: the same field named, the same wording, and no rule skipped.
"""

from __future__ import annotations

import math

import pytest

from deplbench.errors import InstanceError
from deplbench.formulations.evaluation.instance_check import check_instance
from deplbench.instances.model import parse_instance
from tests.milp_instances import tiny_instance


def _parse_message(data: dict) -> str:
    with pytest.raises(InstanceError) as err:
        parse_instance(data)
    text = str(err.value)     # "invalid instance: <message>" from the model, "<field>: ..." from the text rule
    return text.removeprefix("invalid instance: ")


@pytest.mark.parametrize("update,field", [
    ({"initial_loss": -1.0, "loss_max": 0.0}, "initial_loss"),     # a negative ℓ(0) is the odd one out
    ({"loss_max": 1e9}, "loss_max"),
    ({"loss_max": 10.0, "initial_loss": 10.0}, "loss_max"),
    ({"time_max": -1.0}, "time_max"),
    ({"time_max": 1e-320}, "time_max"),                            # subnormal
    ({"omega": 5.0}, "omega"),
    ({"omega": math.nan}, "omega"),
    ({"omega": True}, "omega"),
    ({"horizon": 0}, "horizon"),
    ({"horizon": 2.0}, "horizon"),
    ({"initial_loss": 1e300}, "initial_loss"),                     # beyond ±MAX_LOSS
    ({"loss_max": -1e16}, "loss_max"),
    ({"loss_max": 1e-320}, "loss_max"),
])
@pytest.mark.parametrize("full", [False, True])
def test_a_changed_top_level_number_reads_as_load_instance_says(update, field, full):
    good = tiny_instance(0)
    bad = good.model_copy(update=update)
    expected = _parse_message({**good.model_dump(), **update})
    assert expected.startswith(f"{field}: ")
    with pytest.raises(InstanceError) as err:
        check_instance(bad, full=full)
    assert str(err.value) == f"instance: {expected}"


@pytest.mark.parametrize("kind", ["models", "clusters", "datasets"])
@pytest.mark.parametrize("full", [False, True])
def test_an_appended_duplicate_reads_as_load_instance_says(kind, full):
    inst = tiny_instance(0)
    getattr(inst, kind).append(getattr(inst, kind)[0])
    expected = _parse_message(inst.model_dump())
    assert expected == f"{kind}: duplicate names {[getattr(inst, kind)[0].name]}"
    with pytest.raises(InstanceError, match=r"^instance: ") as err:
        check_instance(inst, full=full)
    assert str(err.value) == f"instance: {expected}"


def test_full_check_refuses_text_a_file_could_not_hold():
    """The full depth applies parse_instance's text rule too: a lone surrogate
    validates as a str but cannot be written as UTF-8."""
    bad = tiny_instance(0).model_copy(update={"name": "a\ud800"})
    expected = _parse_message(bad.model_dump())
    with pytest.raises(InstanceError) as err:
        check_instance(bad, full=True)
    assert str(err.value) == f"instance: {expected}" and "name: text is not valid Unicode" in expected


def test_a_valid_instance_passes_both_depths():
    inst = tiny_instance(0)
    check_instance(inst, full=False)
    check_instance(inst, full=True)
