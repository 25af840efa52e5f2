"""``--param KEY=VALUE``: one parser for ``solve`` and ``simulate``.

Both commands read ``--param`` through ``deplbench.cli.solvers.parse_kv``;
a malformed item is the user's input (one ``error:`` line naming
``--param``, exit 2) and a key's ``-`` is read as ``_``.
"""

from __future__ import annotations

import pytest

from deplbench.cli import main
from deplbench.instances.generators import generate


@pytest.fixture(scope="module")
def inst_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("params") / "vgg.json"
    generate("realistic", family="pact-vgg11", horizon=20, loss_max=0.8, time_max=300.0).save(path)
    return path


@pytest.mark.parametrize("command", ["solve", "simulate"])
@pytest.mark.parametrize("item,match", [
    ("noequals", "--param: expected key=value, got 'noequals'"),
    ("=3", "--param: expected key=value, got '=3'"),
    # the dash is read as an underscore: the solver names the key it got
    ("no-such=1", "has no parameter 'no_such'"),
])
def test_bad_param_items_are_one_line_exit_2(inst_file, capsys, command, item, match):
    assert main([command, str(inst_file), "--algo", "one-switch", "--param", item]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and match in err, err
    assert captured.out == ""
