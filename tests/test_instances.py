"""The instance format: validation messages, JSON round trip, distributions."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from deplbench.errors import InstanceError
from deplbench.instances.distributions import InverseGamma
from deplbench.instances.generators import TABLE_I, generate
from deplbench.instances.model import load_instance, parse_instance
from instance_data import base_instance


def mutated(path, value):
    data = copy.deepcopy(base_instance())
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()

#: (mutation path, new value, text the error message must contain).
BAD_INPUTS = [
    (("omega",), 1.0, "omega"),
    (("omega",), 0.0, "omega"),
    (("omega",), -0.5, "omega"),
    (("clusters", 0, "capacity"), 0.0, "clusters[0].capacity"),
    (("clusters", 1, "capacity"), -3.0, "clusters[1].capacity"),
    (("clusters", 0, "unit_cost"), -1.0, "clusters[0].unit_cost"),
    (("switches", 0, "to_model"), "ghost", "switches[0].to_model"),
    (("loss_max",), 10.0, "loss_max"),
    (("loss_max",), 12.0, "loss_max"),
    (("models",), [], "models"),
    (("time_max",), float("nan"), "time_max"),
    (("initial_loss",), float("inf"), "initial_loss"),
    (("models", 0, "compute"), float("inf"), "models[0].compute"),
    (("models", 0, "improvement", "shape"), -1.0, "models[0].improvement.inverse_gamma.shape"),
    (("switches", 0, "jump", "df"), 0.0, "switches[0].jump.student_t.df"),
    (("models", 1, "improvement"), {"kind": "gamma", "value": 1}, "models[1].improvement"),
    (("horizon",), 0, "horizon"),
    # A validated K̄ of 10^9 used to pass and then exhaust memory in every layer.
    (("horizon",), 10**9, "horizon"),
    (("transfer_costs", 0, "cluster"), "Z", "transfer_costs[0].cluster"),
    (("datasets", 0, "size"), 0.0, "datasets[0].size"),
    (("clusters",), _DELETE, "clusters"),
]


def test_base_instance_is_valid():
    inst = parse_instance(base_instance())
    assert inst.n_models == 2 and inst.switch_pairs == [(0, 1)]


@pytest.mark.parametrize("path, value, field", BAD_INPUTS, ids=[b[2] + "-" + repr(b[1])[:10] for b in BAD_INPUTS])
def test_bad_input_message_names_the_field(path, value, field):
    with pytest.raises(InstanceError) as err:
        parse_instance(mutated(path, value))
    assert field in str(err.value)


def test_not_a_json_object_or_file(tmp_path):
    with pytest.raises(InstanceError, match="JSON object"):
        parse_instance([1, 2])
    bad = tmp_path / "bad.json"
    bad.write_text("{ this is not json", encoding="utf-8")
    with pytest.raises(InstanceError, match="not valid JSON"):
        load_instance(bad)
    # Python's json would accept NaN; the format does not.
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(base_instance()).replace('"time_max": 20.0', '"time_max": NaN'), encoding="utf-8")
    with pytest.raises(InstanceError, match="NaN"):
        load_instance(nan)
    with pytest.raises(InstanceError, match="cannot read"):
        load_instance(tmp_path / "missing.json")
    # Not UTF-8: a one-line error naming the file (was a bare codec message
    # without the file name, which also aborted `validate` on later files).
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InstanceError, match="binary.json: not a UTF-8"):
        load_instance(binary)


@pytest.mark.parametrize("family, params", [
    ("realistic", {"family": "alexnet"}),
    ("realistic", {"family": "pact-vgg11"}),
    ("knapsack", {"item_class": "weakly", "n_items": 4}),
    ("scaling", {"n_models": 4, "n_datasets": 2}),
    ("datasets", {}),
])
def test_json_round_trip(tmp_path, family, params):
    inst = generate(family, seed=7, **params)
    path = tmp_path / "inst.json"
    inst.save(path)
    again = load_instance(path)
    assert again == inst
    assert again.to_json() == path.read_text(encoding="utf-8")
    # Distributions keep their concrete type and parameters.
    assert type(again.models[0].improvement) is type(inst.models[0].improvement)


def test_round_trip_of_hand_instance_keeps_every_field(tmp_path):
    inst = parse_instance(base_instance())
    back = parse_instance(json.loads(inst.to_json()))
    assert back == inst
    assert back.transfer_matrix.tolist() == [[0.0, 3.0]]
    assert back.switches[0].jump.df == 4.0


@pytest.mark.parametrize("network", ["alexnet", "mobilenet"])
@pytest.mark.parametrize("version", ["fast-unsteady", "intermediate", "slow-steady"])
def test_moment_matching_recovers_table_i(network, version):
    mean, var, _ = TABLE_I[network][version]
    dist = InverseGamma.from_moments(mean, var)
    assert dist.mean() == pytest.approx(mean, rel=1e-12)
    assert dist.var() == pytest.approx(var, rel=1e-12)
    n = 200_000
    x = dist.sample(np.random.default_rng(11), n)
    # Sampling error: the standard errors of the sample mean and variance
    # (the latter from the sample's fourth central moment; inverse-gamma
    # with shape > 4 has one). 5 standard errors: a false alarm is ~1e-6.
    se_mean = np.sqrt(var / n)
    centred = (x - x.mean()) ** 2
    se_var = np.sqrt(centred.var() / n)
    assert abs(x.mean() - mean) < 5 * se_mean
    assert abs(x.var() - var) < 5 * se_var
    # The generated instance carries exactly this distribution.
    inst = generate("realistic", family=network)
    model = next(m for m in inst.models if m.name == version)
    assert model.improvement.mean() == pytest.approx(mean, rel=1e-12)
    assert model.improvement.var() == pytest.approx(var, rel=1e-12)


def test_from_moments_rejects_bad_moments():
    with pytest.raises(ValueError, match="var"):
        InverseGamma.from_moments(1.0, 0.0)
    with pytest.raises(ValueError, match="mean"):
        InverseGamma.from_moments(float("nan"), 0.1)
