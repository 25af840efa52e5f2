"""Fuzz corpus for sweep files: hostile sweeps meet a clear contract.

Strategies mutate valid sweep TOML files — wrong types, extremes, NaN/inf,
deep nesting, unknown algorithm/parameter/instance names, huge sizes, bad
paths — and raw text (non-UTF-8 bytes, truncation, 5,000 nested arrays),
then run ``deplbench run SWEEP --dry-run`` in this process. The contract:

* either exit status 2, nothing on stdout and one ``error:`` line on stderr
  naming the offending key (``algorithms[1].grid.eta[0]: ...``) or the file;
* or exit status 0, and then every task the sweep lists would not fail for
  input reasons: its parameters pass the solver's own declared ``Param``\\ s
  (strict, as a typed TOML source), its evaluation settings pass
  :func:`deplbench.solvers.run.solve`'s argument checks, its instance builds
  (targets applied) and its generator parameters carry the declared types
  (no ``"6"`` read as 6), and its time limit is a positive finite number.

Cases that once broke the contract are kept as regression examples.
"""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from deplbench.benchmarks.sweep import load_sweep
from deplbench.benchmarks.tasks import build_instance
from deplbench.errors import SweepError
from deplbench.instances.generators import family_parameters
from deplbench.instances.model import Instance
from deplbench.solvers.registry import get_solver
from deplbench.solvers.run import check_solve_arguments
from tests.fuzz_common import FULL, HOSTILE, LOC, QUICK, check_one_line, delete, get, paths, put, run_cli
from tests.instance_data import base_instance

SWEEP_HEADS = {"sweep", "instances", "algorithms"}

#: The valid starting points, as parsed TOML. ``inst.json`` is
#: :func:`base_instance`, written next to the sweep file.
SEEDS = [
    {
        "sweep": {"name": "fuzz", "time_limit_s": 60, "evaluation": {"samples": 1000, "seed": 0}},
        "instances": [
            {"id": "k", "family": "knapsack", "params": {"n_items": 3, "horizon": 3},
             "grid": {"item_class": ["uncorrelated", "strongly"]}, "seeds": [0, 1],
             "targets": {"omega": [0.5]}},
            {"id": "f", "path": "inst.json", "targets": {"loss_max": [6.0, 8.0]}},
        ],
        "algorithms": [
            {"name": "depl", "params": {"epsilon": 0.1}, "grid": {"eta": [10, 20]}},
            {"name": "milp", "params": {"scenarios": 5, "time_limit": 5.0}, "instances": ["k"],
             "time_limit_s": 30},
            {"name": "knapsack-dp", "instances": ["k"]},
        ],
    },
    {
        "instances": [{"id": "d", "family": "datasets", "params": {"n_datasets": 2, "n_clusters": 2, "horizon": 4},
                       "seed": 3}],
        "algorithms": [{"name": "pact", "grid": {"scenarios": [5], "robust_quantile": [0.9]}},
                       {"name": "brute-force", "params": {"scenarios": 3}, "label": "bf"}],
    },
]

_NAMES = ["depl", "milp", "knapsack-dp", "brute-force", "ghost", "milp-certified", "static-learn", "k", "f",
          "d", "eta", "scenarios", "n_items", "horizon", "omega", "loss_max", "knapsack", "datasets",
          "inst.json", "missing.json", "/", "", ".", "../inst.json", "x" * 5000, "a\x00b"]
_NUMBERS = [0, -5, 1, 3, 5000, 5001, 2**63 - 1, -(2**63), 1e300, -1e300, 5e-324, 0.5, 1.5, 1e-12,
            math.inf, -math.inf, math.nan, "abc", "6", "1e3", True]


# ------------------------------------------------------------- TOML writing


def toml_value(v) -> str:
    """One TOML value (inline tables and arrays: any nesting on one line)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)          # JSON escapes are TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}"
                               for k, x in v.items() if x is not None) + "}"
    raise TypeError(type(v))


def toml_text(data: dict) -> str:
    return "".join(f"{json.dumps(str(k))} = {toml_value(v)}\n" for k, v in data.items() if v is not None)


# --------------------------------------------------------------- strategies


@st.composite
def mutated(draw):
    """A seed sweep (parsed) with one to three mutations."""
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        where = paths(data)
        op = draw(st.sampled_from(["replace", "name", "number", "delete", "add_key", "grow"]))
        if op == "add_key" or not where:
            dicts = [p for p in [()] + where if isinstance(get(data, p), dict)]
            target = get(data, draw(st.sampled_from(dicts)))
            key = draw(st.one_of(st.text(min_size=1, max_size=6), st.sampled_from(_NAMES[:17])))
            target[key] = draw(st.one_of(HOSTILE, st.sampled_from(_NUMBERS), st.sampled_from(_NAMES)))
            continue
        path = draw(st.sampled_from(where))
        if op == "name":
            put(data, path, draw(st.sampled_from(_NAMES)))
        elif op == "number":
            put(data, path, draw(st.sampled_from(_NUMBERS)))
        elif op == "delete":
            delete(data, path)
        elif op == "grow":
            value = get(data, path)
            if isinstance(value, list) and value:
                # Huge sizes: a long list (duplicates included) or a long grid axis.
                put(data, path, draw(st.sampled_from([value * 2, value * 300, list(range(2000))])))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                put(data, path, value * draw(st.sampled_from([10**6, 1e300, -1, 0])))
            else:
                put(data, path, draw(HOSTILE))
        else:
            put(data, path, draw(HOSTILE))
    return data


# -------------------------------------------------------------------- runs


def check_sweep_error(msg: str, sweep_file: str) -> None:
    """One line naming a key of the sweep, or the file."""
    check_one_line(msg)
    if msg.startswith(f"{sweep_file}: ") or msg.startswith("sweep file not found"):
        return
    if msg.startswith("top level: "):
        return
    m = re.match(rf"({LOC})(?::| \()", msg)
    assert m, f"no key named in {msg!r}"
    head = re.split(r"[.\[]", m.group(1))[0]
    # An unknown top-level key is itself the location it names.
    assert head in SWEEP_HEADS or msg.startswith(f"{head}: unknown key"), msg


def check_tasks(path) -> None:
    """Every task of an accepted sweep would not fail for input reasons."""
    sweep = load_sweep(path)
    tasks = sweep.tasks()
    assert tasks
    built: dict[str, Instance] = {}
    for task in tasks:
        cls = get_solver(task.algorithm)
        cls.resolve_params(task.params, strict=True)
        ev = task.evaluation
        # multiprocessing's poll() takes the limit in milliseconds as a C int
        assert 0 < task.time_limit_s <= (2**31 - 1) / 1000
        if task.family != "file":
            defaults = family_parameters(task.family)
            for name, value in task.instance_params.items():
                default = defaults[name]
                if isinstance(default, (int, float)) and not isinstance(default, bool):
                    assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
                elif isinstance(default, str):
                    assert isinstance(value, str), (name, value)
        ident = json.dumps([task.family, task.instance_params, task.instance_seed, task.instance_path,
                            task.targets], sort_keys=True)
        if ident not in built:
            built[ident] = build_instance(task.to_dict())
        check_solve_arguments(built[ident], cls, True, ev.get("samples", 50_000), ev.get("seed", 0))


def contract(tmp_path, text: bytes | str) -> None:
    (tmp_path / "inst.json").write_text(json.dumps(base_instance()), encoding="utf-8")
    path = tmp_path / "sweep.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    status, out, err = run_cli("run", path, "--db", tmp_path / "never.sqlite", "--dry-run")
    assert not (tmp_path / "never.sqlite").exists()
    if status == 2:
        assert out == "", out
        assert err.startswith("error: ") and err.count("\n") == 1, err
        check_sweep_error(err[len("error: "):].rstrip("\n"), str(path))
        return
    assert status == 0, (status, err)
    assert out.strip(), "a dry run reports its task counts"
    check_tasks(path)


def raw(data: dict, how: str) -> bytes | str:
    text = toml_text(data)
    if how == "latin1":
        return text.encode("utf-8").replace(b"\"fuzz\"", b"\"f\xfczz\"").replace(b"\"k\"", b"\"\xe9\"")
    if how == "truncated":
        return text[: len(text) // 2]
    if how == "deep":
        return text + '"x" = ' + "[" * 5000 + "]" * 5000 + "\n"
    return text


# -------------------------------------------------------------------- tests

#: Sweeps that once broke the contract (fixed regression examples).
REGRESSIONS = {
    # a generator parameter given as a string was converted silently ("6" → 6)
    "n-items-string": lambda d: _with(d, ("instances", 0, "params", "n_items"), "6"),
    "horizon-float": lambda d: _with(d, ("instances", 0, "params", "horizon"), 3.0),
    "item-class-number": lambda d: _with(d, ("instances", 0, "grid", "item_class"), [1]),
    # a grid product so large that expanding it would exhaust memory
    "huge-product": lambda d: _with(d, ("algorithms", 0, "grid"),
                                    {"eta": list(range(1, 1001)), "epsilon": [i / 1000 for i in range(1, 1001)],
                                     "check_samples": list(range(100, 1100))}),
    # an instance path that the file system refuses to look up (too long, NUL byte)
    "path-too-long": lambda d: _with(d, ("instances", 1, "path"), "x" * 5000),
    "path-nul": lambda d: _with(d, ("instances", 1, "path"), "a\x00b"),
    # evaluation.samples far beyond what the evaluator can hold
    "samples-huge": lambda d: _with(d, ("sweep", "evaluation", "samples"), 2**62),
    # a negative DepL seed passed the Param and failed at run time
    "depl-seed-negative": lambda d: _with(d, ("algorithms", 0, "params", "seed"), -5),
    # evaluation.samples below what solve() accepts: every task failed
    "samples-five": lambda d: _with(d, ("sweep", "evaluation", "samples"), 5),
    # a float for an integer solver parameter was truncated silently
    "eta-float": lambda d: _with(d, ("algorithms", 0, "grid", "eta"), [10.0, 20]),
    # a list inside `instances`: TypeError (unhashable) from the membership test
    "instances-nested-list": lambda d: _with(d, ("algorithms", 2, "instances"), [[]]),
    # a time limit beyond 2^31 ms: OverflowError in the executor's wait
    "time-limit-huge": lambda d: _with(d, ("sweep", "time_limit_s"), 1e7),
    # a key with a newline made the message two lines; "0" did not read as a location
    "key-newline": lambda d: _with(d, ("instances", 0, "params", "a\nb"), 1),
    "top-key-0": lambda d: _with(d, ("0",), 1),
    # a glob over the whole file system (or above the sweep's folder) hung --dry-run
    "glob-root": lambda d: _with(d, ("instances", 1, "path"), "/**/*.json"),
    "glob-parent": lambda d: _with(d, ("instances", 1, "path"), "../**/*.json"),
    # repetitions multiplied the tasks past max_tasks without being counted
    "repetitions-past-cap": lambda d: _with(_with(d, ("sweep", "max_tasks"), 50),
                                            ("algorithms", 0, "repetitions"), 1000),
}


def _with(data, path, value):
    put(data, path, value)
    return data


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_regressions(tmp_path, case):
    data = REGRESSIONS[case](copy.deepcopy(SEEDS[0]))
    contract(tmp_path, toml_text(data))
    status, _, err = run_cli("run", tmp_path / "sweep.toml", "--db", tmp_path / "x.sqlite", "--dry-run")
    assert status == 2, (case, err)


@pytest.mark.parametrize("seed", range(len(SEEDS)))
def test_seed_sweeps_pass(tmp_path, seed):
    """The unmutated sweeps pass the dry run and every check on their tasks."""
    contract(tmp_path, toml_text(SEEDS[seed]))
    status, out, _ = run_cli("run", tmp_path / "sweep.toml", "--db", tmp_path / "x.sqlite", "--dry-run")
    assert status == 0 and re.search(r"\b\d+ task", out), out


def test_raw_text_regressions(tmp_path):
    for how in ("latin1", "truncated", "deep"):
        contract(tmp_path, raw(SEEDS[0], how))
        status, _, err = run_cli("run", tmp_path / "sweep.toml", "--db", tmp_path / "x.sqlite", "--dry-run")
        assert status == 2 and str(tmp_path / "sweep.toml") in err, (how, err)


def test_load_sweep_api_raises_sweep_error(tmp_path):
    """The Python path: every refusal is a SweepError naming the key."""
    (tmp_path / "inst.json").write_text(json.dumps(base_instance()), encoding="utf-8")
    for case in ("path-too-long", "path-nul", "n-items-string", "huge-product"):
        path = tmp_path / "s.toml"
        path.write_text(toml_text(REGRESSIONS[case](copy.deepcopy(SEEDS[0]))), encoding="utf-8")
        with pytest.raises(SweepError) as err:
            load_sweep(path)
        check_one_line(str(err.value))
        assert str(err.value).startswith(("instances[", "algorithms[", "sweep.")), err.value


@example(REGRESSIONS["n-items-string"](copy.deepcopy(SEEDS[0])))
@QUICK
@given(mutated())
def test_mutated_sweeps_quick(tmp_path_factory, data):
    contract(tmp_path_factory.mktemp("sweep"), toml_text(data))


@FULL
@given(mutated(), st.sampled_from(["plain", "plain", "plain", "latin1", "truncated", "deep"]))
@pytest.mark.slow
def test_mutated_sweeps(tmp_path_factory, data, how):
    contract(tmp_path_factory.mktemp("sweep"), raw(data, how))


def test_toml_writer_round_trips():
    import tomllib

    for seed in SEEDS:
        assert tomllib.loads(toml_text(seed)) == seed
