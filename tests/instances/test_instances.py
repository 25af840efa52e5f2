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
from tests.instance_data import base_instance


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
    # K̄ = 10^9, if accepted, would exhaust memory in every layer.
    (("horizon",), 10**9, "horizon"),
    (("transfer_costs", 0, "cluster"), "Z", "transfer_costs[0].cluster"),
    (("datasets", 0, "size"), 0.0, "datasets[0].size"),
    (("clusters",), _DELETE, "clusters"),
    # names label table rows, CSV rows and one-line messages: blank or with control characters, refused
    (("name",), "", "name"),
    (("name",), "   ", "name"),
    (("name",), "a\nb", "name"),
    (("models", 0, "name"), "\t", "models[0].name"),
    (("clusters", 0, "name"), "A\x7f", "clusters[0].name"),
    (("datasets", 0, "name"), " ", "datasets[0].name"),
    (("name",), "a\x85b", "name"),                       # C1 control (NEL): a line break to str.splitlines
    (("models", 1, "name"), "a\u2028b", "models[1].name"),  # line separator
    (("clusters", 0, "name"), "A ", "clusters[0].name"),    # "A" and "A " would print as one name
    (("name",), " toy", "name"),
    (("name",), "\u200b", "name"),                        # a zero-width space alone prints nothing
    (("models", 0, "name"), "\u200b\u2060 ", "models[0].name"),
    (("clusters", 0, "name"), "A\u200b", "clusters[0].name"),  # prints as "A"
    (("datasets", 0, "name"), "\ufeffd0", "datasets[0].name"),  # a BOM in front
]


def test_base_instance_is_valid():
    inst = parse_instance(base_instance())
    assert inst.n_models == 2 and inst.switch_pairs == [(0, 1)]


def test_names_with_inner_spaces_and_any_script_are_accepted():
    inst = parse_instance(mutated(("name",), "VGG-11 prune à 30 % — ε"))
    assert inst.name == "VGG-11 prune à 30 % — ε"
    # an inner joiner (emoji sequences, some scripts) is part of a visible name
    assert parse_instance(mutated(("name",), "a\u200db")).name == "a\u200db"


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


# ------------------------------------------------ strict types

#: (mutation path, wrong-typed value, field the message must name). Each was
#: silently coerced before: ``true`` read as 1, ``"4"`` as 4, ``false`` as 0.
LAX_TYPES = [
    (("horizon",), True, "horizon"),
    (("horizon",), "4", "horizon"),
    (("horizon",), 4.5, "horizon"),
    (("horizon",), 4.0, "horizon"),
    (("omega",), "0.9", "omega"),
    (("omega",), True, "omega"),
    (("clusters", 0, "unit_cost"), False, "clusters[0].unit_cost"),
    (("clusters", 1, "capacity"), "100.0", "clusters[1].capacity"),
    (("format_version",), True, "format_version"),
    (("format_version",), "1", "format_version"),
    (("initial_loss",), "10", "initial_loss"),
    (("models", 0, "compute"), None, "models[0].compute"),
    (("models", 1, "loss_scale"), [1.5], "models[1].loss_scale"),
    (("models", 0, "improvement", "shape"), "12", "models[0].improvement.inverse_gamma.shape"),
    (("models", 1, "improvement", "value"), True, "models[1].improvement.point.value"),
    (("switches", 0, "jump", "df"), "4", "switches[0].jump.student_t.df"),
    (("datasets", 0, "usefulness"), True, "datasets[0].usefulness"),
    (("transfer_costs", 0, "cost"), "3", "transfer_costs[0].cost"),
    (("provenance",), {"seed": True}, "provenance.seed"),
]


@pytest.mark.parametrize("path, value, field", LAX_TYPES, ids=[f"{b[2]}={b[1]!r}" for b in LAX_TYPES])
def test_wrong_types_are_refused_naming_the_field(path, value, field):
    with pytest.raises(InstanceError) as err:
        parse_instance(mutated(path, value))
    msg = str(err.value)
    assert field in msg and "\n" not in msg
    assert "valid" in msg or "must be" in msg or "Input should be" in msg


def test_empirical_samples_must_be_numbers():
    data = mutated(("models", 1, "improvement"), {"kind": "empirical", "samples": [1.0, True, 0.9]})
    with pytest.raises(InstanceError, match=r"models\[1\]\.improvement\.empirical\.samples\[1\]"):
        parse_instance(data)
    data = mutated(("models", 1, "improvement"), {"kind": "empirical", "samples": [1.0, "0.9"]})
    with pytest.raises(InstanceError, match=r"samples\[1\]"):
        parse_instance(data)


def test_right_types_still_accepted():
    # Integers are numbers; NumPy scalars from callers are numbers too.
    data = mutated(("omega",), 0.9)
    data.update(initial_loss=10, time_max=np.float64(20.0), horizon=np.int64(5), format_version=1)
    data["clusters"][0]["capacity"] = 10
    inst = parse_instance(data)
    assert inst.horizon == 5 and type(inst.horizon) is int and inst.clusters[0].capacity == 10.0
    assert inst.with_changes(horizon=3, loss_max=4).horizon == 3


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def test_deep_nesting_is_a_clear_error(tmp_path):
    # A JSON file nested 5,000 deep gave a RecursionError traceback.
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    with pytest.raises(InstanceError, match="deep.json: JSON nested too deeply"):
        load_instance(deep)
    inside = tmp_path / "inside.json"
    inside.write_text(json.dumps(base_instance())[:-1] + ', "provenance": {"x": ' + "[" * 5000 + "]" * 5000 + "}}",
                      encoding="utf-8")
    with pytest.raises(InstanceError, match="inside.json"):
        load_instance(inside)
    # Deep but readable: validated data that pydantic could not write back.
    with pytest.raises(InstanceError, match=r"provenance\.x\[0\]\[0\].*nested more than 64"):
        parse_instance(mutated(("provenance",), {"x": _nested(500)}))
    # Reasonable nesting in provenance stays allowed.
    assert parse_instance(mutated(("provenance",), {"x": _nested(20)})).provenance.x == _nested(20)


@pytest.mark.integration
def test_validate_cli_one_line_per_bad_file(tmp_path):
    """`deplbench validate` (a subprocess, once for every file: the CLI import
    is slow on a loaded machine): exit 2 and exactly one stderr line per bad
    file, naming the file and the field."""
    import subprocess
    import sys

    cases = {
        "horizon": mutated(("horizon",), True), "omega": mutated(("omega",), "0.9"),
        "clusters[0].unit_cost": mutated(("clusters", 0, "unit_cost"), False),
        "clusters[1].capacity": mutated(("clusters", 1, "capacity"), "100.0"),
        "format_version": mutated(("format_version",), True),
    }
    files = {}
    for i, (field, data) in enumerate(cases.items()):
        files[field] = tmp_path / f"bad{i}.json"
        files[field].write_text(json.dumps(data), encoding="utf-8")
    files["nested too deeply"] = tmp_path / "deep.json"
    files["nested too deeply"].write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "deplbench", "validate", *map(str, files.values())],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == len(files), r.stderr
    for line, (field, path) in zip(lines, files.items()):
        assert line.startswith(f"error: {path}") and field in line, line


class _Counted(str):
    """A name that counts its equality comparisons."""

    calls = 0

    def __eq__(self, other):
        type(self).calls += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_duplicate_name_check_is_linear():
    """The duplicate-name check compares each name a bounded number of times
    (it was ``names.count(n)`` per name: N² comparisons, minutes for 200,000
    datasets). Counted, not timed, so a loaded machine cannot make it flaky."""
    from deplbench.instances.model import _duplicates

    n = 3000
    names = [_Counted(f"d{i}") for i in range(n)] + [_Counted("d7"), _Counted("d11")]
    _Counted.calls = 0
    assert _duplicates(names) == ["d11", "d7"]
    assert _Counted.calls <= 4 * n        # the quadratic check made about n² = 9·10⁶


@pytest.mark.slow
def test_large_instance_with_a_late_duplicate_is_refused():
    """100,000 datasets are checked in about a second of CPU; the quadratic
    check made 10^10 comparisons (over three minutes on this machine)."""
    data = base_instance()
    data["datasets"] = [{"name": f"d{i}", "size": 1.0, "usefulness": 1.0} for i in range(100_000)]
    data["datasets"].append({"name": "d12345", "size": 1.0, "usefulness": 1.0})
    with pytest.raises(InstanceError, match=r"datasets: duplicate names \['d12345'\]"):
        parse_instance(data)
