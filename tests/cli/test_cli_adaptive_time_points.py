"""``time_points`` of the adaptive yardstick, refused up front with one line (exit 2).

G = 1 has no time step, through ``deplbench solve --algo adaptive-opt --param`` as through
``deplbench adaptive --time-points``; an explicit G whose carried passes cannot fit in the
time limit is refused before any pass, naming the field (the estimate is a least time at a
rate above any core's, so the refusal does not depend on this machine's speed).
"""

from __future__ import annotations

import pytest

from deplbench.cli import main
from deplbench.errors import PlanError
from deplbench.formulations import adaptive as A
from deplbench.instances.generators import generate


@pytest.fixture(scope="module")
def vgg(tmp_path_factory):
    inst = generate("realistic", family="pact-vgg11", loss_max=0.3)
    path = tmp_path_factory.mktemp("adaptive") / "vgg.json"
    inst.save(path)
    return inst, path


@pytest.mark.parametrize("argv", [
    ["solve", "{}", "--algo", "adaptive-opt", "--param", "time_points=1"],
    ["adaptive", "{}", "--time-points", "1"],
])
def test_one_time_point_is_refused_exit_2(vgg, capsys, argv):
    assert main([a.format(vgg[1]) for a in argv]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.count("\n") == 0 and ("time_points" in err or "--time-points" in err) and "got 1" in err, err
    assert cap.out == ""


def test_time_points_beyond_the_time_limit_refused_exit_2(vgg, capsys):
    assert main(["adaptive", str(vgg[1]), "--time-points", "256", "--time-limit", "60"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.count("\n") == 0 and err.startswith("error: --time-points: 256 time points at 600 buckets"), err
    assert "beyond --time-limit 60 s" in err and "time_limit" not in err and cap.out == ""


def test_time_points_refusal_follows_the_estimate(vgg):
    inst = vgg[0]
    chain = A.Chain(inst, 75, optimistic=True)
    need = A.timed_seconds(chain, 64, 6)
    with pytest.raises(PlanError, match="^time_points: 64 time points at 75 buckets"):
        A.adaptive_bounds(inst, buckets=75, time_points=64, time_limit=need / 2)
    assert need > A.timed_seconds(chain, 16, 6) > 0                  # fewer points: less work
