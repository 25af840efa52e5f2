"""A confidence level is printed so that it reads back as itself: never rounded to 1 (jsonio.number_text)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from deplbench.cli.certify import _print_text
from deplbench.cli.simulate import _bound_line
from deplbench.formulations.evaluation.closed_loop import FixedPlanPolicy, simulate
from deplbench.formulations.model.allocation import plan_from_choices
from deplbench.instances.generators import generate
from deplbench.reports.adaptive import levels_text
from deplbench.solvers.certify.certified import _status

JOINT, EACH = 0.99999999, 0.999999995


def test_certify_status_and_text_print_each_level_as_computed(capsys):
    lower = {"value": 250.0, "confidence": EACH, "method": "order statistic"}
    upper = {"value": 251.0, "confidence": EACH, "method": "Clopper-Pearson", "source": "depl",
             "violation_count": 0, "draws": 1000, "violation_ub": 0.01, "plan": {"epochs": []}}
    status, line = _status(lower, upper, 0.004, False, JOINT)
    assert status == "bracket" and "jointly at confidence ≥ 0.99999999 " in line
    assert "confidence 0.999999995" in _status(lower, None, None, False, JOINT)[1]
    b = {"instance": "x", "omega": 0.9, "loss_max": 1.0, "status": status, "message": line, "risk": 0.1,
         "lower_bound": lower, "upper_bound": upper, "width": 0.004, "confidence": JOINT, "stages": [],
         "saa_optima": [], "runtime_s": {"total": 0.0, "saa_solves_wall": 0.0, "validation": 0.0, "cpu": 0.0}}
    _print_text(b)
    out = capsys.readouterr().out
    assert out.count("at confidence 0.999999995") == 2 and "bracket confidence ≥ 0.99999999\n" in out
    assert not re.search(r"confidence (≥ )?1\b", out)


def test_closed_loop_and_simulate_lines_print_the_level_as_given():
    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6)
    plan = plan_from_choices(inst, [inst.models[0].name] * 2, [inst.clusters[0].name] * 2,
                             {inst.clusters[0].name: [inst.datasets[0].name]})
    s = simulate(inst, FixedPlanPolicy(inst, plan), runs=20, seed=0, confidence=0.999999999999).summary()
    assert s["p_success_method"] == "Clopper–Pearson, two-sided, level 0.999999999999"
    line = _bound_line({"upper_bound": 1.0, "level": EACH, "joint_level": JOINT, "sample_mean": None})
    assert "at level 0.999999995 (0.99999999 jointly" in line
    assert levels_text([EACH]) == "level 0.999999995"
    assert levels_text(np.array([EACH, JOINT])).startswith("levels differ (ci_level: 0.99999999")


def test_no_level_is_formatted_with_a_rounding_g_spec():
    """Guard for the rule: a confidence, level or β share goes through number_text, not :g/.3g/.4g."""
    src = Path(__file__).resolve().parents[1] / "src" / "deplbench"
    spec = re.compile(r"\{[^{}]*(confidence|conf\b|conf_each|level|lv\b|beta)[^{}]*:\.?\d*g\}")
    found = [f"{p.relative_to(src)}:{i}" for p in sorted(src.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if spec.search(line)]
    assert found == [], found


def test_a_level_as_a_percentage_is_rounded_down_never_up_to_certainty():
    from deplbench.jsonio import level_percent
    from deplbench.reports.median import MedianInterval, median_interval

    assert [level_percent(x) for x in (0.99951, 0.9496, 0.95, 0.29)] == ["99.9", "94.9", "95.0", "29.0"]
    assert level_percent(0.999999995, 3) == "99.999" and level_percent(1.0, 0) == "100"
    # a level computed in binary64 just below its exact value (1 − 3 × 0.05) reads as that value
    assert level_percent(1 - 3 * 0.05) == "85.0" and level_percent(1 - 10 * 0.05) == "50.0"
    assert level_percent(1e300, 0) == "1" + "0" * 302 and level_percent(5e-324) == "0.0"
    ci = median_interval(np.arange(10.0), level=0.95)
    assert isinstance(ci, MedianInterval)
    from dataclasses import replace
    txt = replace(ci, level=0.99951).level_text()
    assert "(exact 99.9 %)" in txt and "100.0" not in txt


def test_the_adaptive_rows_levels_in_percent_are_rounded_down():
    from deplbench.reports.adaptive import ci_level_text

    text = ci_level_text([0.9999])
    assert "one-sided 99.99 % lower bound" in text and "100 %" not in text


def test_no_level_is_formatted_as_a_percentage_rounded_to_nearest():
    """Guard for the rule: a level shown in percent goes through jsonio.level_percent, not 100 * x:.Nf."""
    src = Path(__file__).resolve().parents[1] / "src" / "deplbench"
    spec = re.compile(r"\{100 \* [^{}]*(level|joint|nominal|confidence|alpha|\bc\b|\blv\b)[^{}]*:[+]?\.\d+[fg]\}",
                      re.IGNORECASE)
    found = [f"{p.relative_to(src)}:{i}" for p in sorted(src.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if spec.search(line)]
    assert found == [], found
