"""Name lookup: a test plugin (DEPLBENCH_TASK_PLUGINS) may only add names;
reusing a registered solver or family name is refused, naming the file."""

from __future__ import annotations

import pytest

from deplbench.benchmarks import lookup
from deplbench.errors import SweepError


def _plugin(tmp_path, monkeypatch, body: str):
    path = tmp_path / "clash_plugin.py"
    path.write_text(body, encoding="utf-8")
    monkeypatch.setenv(lookup.PLUGIN_ENV, str(path))
    return path


@pytest.mark.parametrize("attr", ["ALGORITHMS", "ALGORITHM_INFO", "ALGORITHM_PARAMETERS"])
def test_a_plugin_reusing_a_solver_name_is_refused(tmp_path, monkeypatch, attr):
    value = "lambda instance: {}" if attr == "ALGORITHMS" else "{}"
    path = _plugin(tmp_path, monkeypatch, f"{attr} = {{'milp': {value}}}\n")
    with pytest.raises(SweepError) as err:
        lookup.available_algorithms() if attr == "ALGORITHMS" else lookup.plugin_table(attr)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "'milp'" in message


def test_a_plugin_reusing_a_family_name_is_refused(tmp_path, monkeypatch):
    path = _plugin(tmp_path, monkeypatch, "FAMILIES = {'realistic': lambda seed=0: None}\n")
    with pytest.raises(SweepError, match="'realistic'") as err:
        lookup.available_families()
    assert str(path) in str(err.value)


def test_the_registry_answers_for_its_own_names_with_a_plugin_loaded(tmp_path, monkeypatch):
    _plugin(tmp_path, monkeypatch, "ALGORITHMS = {'test-extra': lambda instance: {}}\n")
    names = lookup.available_algorithms()
    assert {"test-extra", "milp"} <= names
    assert lookup.parameter_specs("milp") is not None
    assert lookup.parameter_specs("test-extra") is None
