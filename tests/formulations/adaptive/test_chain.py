"""The rounded loss chain refuses, naming the law, what it cannot grid (formulations.adaptive.chain).

A jump of mean −1e12 or a normal improvement of std 1e13 validates (both stay
within ±1e15) but spans ~1e13 buckets of h = (ℓ(0) − ℓmax)/buckets: building
its kernels would run out of memory, and a heavy inverse-gamma tail (shape 1.5,
1e7 buckets) would run past any time limit. ``Chain`` raises PlanError naming
the law before allocating, and ``deplbench adaptive`` exits 2 with that one
line.
"""

from __future__ import annotations

import json

import pytest

from deplbench.cli import main
from deplbench.errors import PlanError
from deplbench.formulations.adaptive.chain import MAX_CELLS, Chain, chain_refused
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads(generate("scaling", horizon=6).to_json())


def _with(base: dict, where: str, **change) -> dict:
    data = json.loads(json.dumps(base))
    kind, i, key = where.split(".")
    data[kind][int(i)][key] = change[key]
    return data


HUGE = {
    "jump mean -1e12": ("switches.0.jump", {"kind": "normal", "mean": -1e12, "std": 1.0}, "switches[0].jump: "),
    "improvement std 1e13": ("models.0.improvement", {"kind": "normal", "mean": 1.0, "std": 1e13},
                             "models[0].improvement: "),
    "heavy inverse-gamma tail": ("models.0.improvement", {"kind": "inverse_gamma", "shape": 1.5, "scale": 1.0},
                                 "models[0].improvement: "),
    "empirical jump atom -1e12": ("switches.0.jump", {"kind": "empirical", "samples": [0.0, -1e12]},
                                  "switches[0].jump: "),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_a_law_beyond_the_grid_is_refused_naming_it(base, case):
    where, law, field = HUGE[case]
    inst = parse_instance(_with(base, where, **{where.rsplit(".", 1)[1]: law}))
    why = chain_refused(inst, 50)
    assert why.startswith(field) and str(MAX_CELLS) in why
    with pytest.raises(PlanError, match="^" + field.replace("[", r"\[").replace("]", r"\]")):
        Chain(inst, 50, optimistic=True)


def test_the_generated_instance_fits(base):
    inst = parse_instance(base)
    assert chain_refused(inst, 600) == ""
    assert Chain(inst, 50, optimistic=True).L >= 50


def test_adaptive_cli_exits_2_with_one_line(base, tmp_path, capsys):
    path = tmp_path / "far.json"
    path.write_text(json.dumps(_with(base, "switches.0.jump", jump=HUGE["jump mean -1e12"][1])), encoding="utf-8")
    rc = main(["adaptive", str(path), "--one-grid", "--buckets", "50", "--runs", "1000", "--tune-runs", "500",
               "--time-limit", "10", "--quiet"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "switches[0].jump: " in lines[0], captured.err


def test_every_pass_names_the_grid_it_ran_on():
    """A stopped bracket reports the grid of the pass whose bound it keeps (``Pass.grid``)."""
    from deplbench.formulations.adaptive.chain import dp
    from deplbench.formulations.adaptive.timed import timed_dp
    from deplbench.instances.model import parse_instance
    from tests.cli.test_cli_adaptive_options import TINY

    inst = parse_instance(TINY)
    for buckets in (30, 60):
        opt = Chain(inst, buckets, optimistic=True)
        assert opt.grid() == {"buckets": buckets, "loss_step": 0.75 / buckets, "states": 2 * 2 * (opt.L + 1)}
        assert dp(opt, 1.0, 10.0).grid == opt.grid()
        assert timed_dp(opt, 10.0, 16).grid == {**opt.grid(), "time_points": 16}
