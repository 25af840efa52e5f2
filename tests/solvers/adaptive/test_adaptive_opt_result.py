"""What an ``adaptive-opt`` result says its numbers are, and its time budget.

A certified result's ``cost`` is a one-sided upper confidence bound on a policy's
mean cost, not a plan's cost: its message states that, the certified P(success),
the joint level and the methods, and the width (UB − LB)/LB as ``deplbench
adaptive`` reports it beside the record's MIP-style ``gap`` (UB − LB)/UB.
``deplbench solve --time-limit`` sets the solver's clock ``refine_time``, the
budget ``deplbench adaptive --time-limit`` sets.
"""

from __future__ import annotations

import json

import pytest

from deplbench.cli import main
from deplbench.instances.model import parse_instance
from deplbench.solvers.adaptive.optimum import AdaptiveOpt
from deplbench.solvers.run import solve
from tests.cli.test_cli_adaptive_options import TINY

SMALL = dict(buckets=60, runs=1000, tune_runs=500)


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("adaptive_opt") / "tiny.json"
    parse_instance(TINY).save(path)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_a_certified_result_says_what_its_numbers_are(confidence):
    res = solve(parse_instance(TINY), "adaptive-opt", confidence=confidence, **SMALL)
    d = res.diagnostics
    assert res.status == "feasible" and d["certified"] and res.lower_bound is not None, res.message
    msg = res.message
    assert "\n" not in msg
    assert msg.startswith("cost = one-sided upper confidence bound on the certified policy's mean cost")
    assert "empirical Bernstein" in msg and "one-sided Clopper–Pearson" in msg
    # the share given up is read from the certificate: the mix is certified at ω itself
    assert d["p_success_lo"] == TINY["omega"] and d["multipliers"]["give_up"] > 0
    assert f"P(success) ≥ {TINY['omega']} certified" in msg and f"ω = {TINY['omega']}" in msg
    assert f"jointly at confidence {confidence:g} (union bound, {1 - (1 - confidence) / 2:g} each)" in msg
    # the width as `deplbench adaptive` defines it, told apart from the record's gap
    width = (res.cost - res.lower_bound) / res.lower_bound
    gap = (res.cost - res.lower_bound) / res.cost
    assert width == pytest.approx(d["width"]) and res.gap == pytest.approx(gap) and width > gap > 0
    assert f"width (UB − LB)/LB = {100 * width:.3g} % as `deplbench adaptive` reports it" in msg
    assert f"gap (UB − LB)/UB = {100 * gap:.3g} %" in msg


@pytest.mark.slow
def test_an_uncertified_result_keeps_the_brackets_line():
    # a stricter ω than 1000 runs can certify: the bracket's own line, no upper bound stated
    res = solve(parse_instance(TINY), "adaptive-opt", omega=0.999, **SMALL)
    assert res.status != "feasible" and res.cost is None
    assert res.message == res.diagnostics["message"] and "upper confidence bound" not in res.message


@pytest.mark.slow
def test_solve_time_limit_is_the_solvers_clock(tiny_file, capsys):
    argv = ["solve", tiny_file, "--algo", "adaptive-opt", "--json", "--time-limit", "20"]
    argv += [a for k, v in SMALL.items() for a in ("--param", f"{k}={v}")]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "feasible" and record["params"]["refine_time"] == 20.0
    # the text names both relative differences
    assert main([a for a in argv if a != "--json"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("lower bound"))
    width = record["diagnostics"]["width"]
    assert line.endswith(f"gap {record['gap']:.3g} (UB − LB)/UB, width {width:.3g} (UB − LB)/LB"), line


@pytest.mark.parametrize("extra, words", [
    (["--time-limit", "-1"], ["--time-limit", "must be > 0.0, got -1.0"]),
    (["--time-limit", "5", "--param", "refine_time=5"], ["--time-limit", "also given as --param refine_time"]),
])
def test_solve_time_limit_refusals_name_the_flag(tiny_file, capsys, extra, words):
    assert main(["solve", tiny_file, "--algo", "adaptive-opt", *extra]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert cap.out == "" and err.count("\n") == 0 and all(w in err for w in words), err


def test_solve_help_says_what_time_limit_sets(capsys):
    assert AdaptiveOpt.clock == "refine_time" and AdaptiveOpt.clock in AdaptiveOpt.parameters
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "adaptive-opt: refine_time" in out


@pytest.mark.parametrize("p_lo, omega, shown", [(0.9999631, 0.999962, "0.999963"), (0.9999951, 0.999995, "0.99999")])
def test_the_certified_level_prints_on_its_side_of_omega_and_below_1(p_lo, omega, shown):
    from types import SimpleNamespace

    from deplbench.solvers.adaptive.optimum import certified_statement

    b = SimpleNamespace(certification={"kept_runs": 99_000, "runs": 100_000, "level_each": 0.975}, confidence=0.95,
                        cost_mean=100.0, p_success_lo=p_lo, omega=omega, upper_bound=101.0, multipliers={})
    line = certified_statement(b, None)
    got = line.split("P(success) ≥ ")[1].split(" ")[0]
    assert float(got) >= omega and float(got) < 1.0 and got.startswith(shown), line
