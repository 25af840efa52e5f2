"""Shared pieces of the fuzz corpus (``test_fuzz_*.py`` in tests/instances/,
tests/formulations/ and tests/benchmarks/).

Hostile values, structural mutations of JSON-like data, the error-message
contract, the CLI run in this process (:func:`run_cli`), and the example
budget:

* every fuzz property exists twice: a quick variant (:data:`QUICK`, few
  examples, part of ``make test-fast``) and a thorough one (:data:`FULL`,
  marked ``@pytest.mark.slow`` where it is defined, so only ``make test``
  runs it);
* examples are derandomized and no example database is written, so every
  run tries the same inputs (reproducible CI); ``DEPLBENCH_FUZZ=full``
  switches to a long random search for local bug hunting.
"""

from __future__ import annotations

import copy
import os
import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from deplbench.instances.model import MAX_NESTING
from tests.conftest import CliRunner

RANDOM = os.environ.get("DEPLBENCH_FUZZ", "").lower() == "full"


def fuzz_settings(examples: int) -> settings:
    """No wall-clock deadline (the machine may be loaded), no example
    database in the working tree, deterministic unless ``DEPLBENCH_FUZZ=full``."""
    return settings(
        max_examples=2000 if RANDOM else examples,
        deadline=None,
        database=None,
        derandomize=not RANDOM,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    )


#: Few examples: the quick loop (``make test-fast``).
QUICK = fuzz_settings(15)
#: The full suite's share (tests marked slow).
FULL = fuzz_settings(60)


# ------------------------------------------------------------ data surgery


def paths(data, prefix=()):
    """Every location in ``data`` (dict keys and list indices), depth first."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append(prefix + (k,))
            out += paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.append(prefix + (i,))
            out += paths(v, prefix + (i,))
    return out


def get(data, path):
    for key in path:
        data = data[key]
    return data


def put(data, path, value):
    get(data, path[:-1])[path[-1]] = value


def delete(data, path):
    del get(data, path[:-1])[path[-1]]


def nested(depth, leaf=1.0):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# ---------------------------------------------------------- hostile values

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, 1e-300, 1e300, 0.5, 1.0, 2.0, 99.0]),
)
INTS = st.one_of(st.integers(-10, 10), st.sampled_from([0, 1, 100_000, 100_001, 2**31, 2**63, -(2**63), 10**30]))
_HOSTILE = st.one_of(
    st.booleans(),
    st.none(),
    INTS,
    FLOATS,
    st.text(max_size=8),
    st.sampled_from(["0.9", "4", "1e3", "NaN", "inf", "true", "", "ghost", "\ud800", "a\udfffb"]),
    st.lists(FLOATS, max_size=3),
    st.dictionaries(st.text(max_size=5), INTS, max_size=2),
    st.sampled_from([nested(MAX_NESTING + 5), nested(10), [[[]]], {}, []]),
)
#: Values of the wrong type or at the extremes, for any location. A fresh
#: copy each draw: a shared mutable value changed by a later mutation would
#: make the strategy depend on earlier examples (or build a cycle).
HOSTILE = _HOSTILE.map(copy.deepcopy)


# ---------------------------------------------------------- error messages

#: A field location as the loaders write it: ``name``, ``a.b``, ``a[0].b``,
#: ``a['key with spaces']``.
LOC = r"[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\]|\['(?:[^'\\]|\\.)*'\]|\[\"(?:[^\"\\]|\\.)*\"\]|\.[A-Za-z0-9_]+)*(?:…)?"


def check_one_line(msg: str) -> None:
    assert msg and "\n" not in msg.strip() and "Traceback" not in msg, msg


def named_field(part: str, heads: set[str]) -> bool:
    """Whether ``part`` starts with a location whose first segment is in ``heads``."""
    m = re.match(rf"({LOC}|<root>)(?::| \(| )", part)
    return bool(m) and (re.split(r"[.\[]", m.group(1))[0] in heads or m.group(1) == "<root>")


# ------------------------------------------------------------------ the CLI


#: ``deplbench ARGS`` in this process: (status, stdout, stderr). The runner of
#: the ``deplbench_cli`` fixture (conftest.py), as a module attribute so that
#: hypothesis examples, which take no function-scoped fixture, can call it.
run_cli = CliRunner()
