"""Where the bracket carries the deadline by default (``time_points=None``).

The choice is work-based (:func:`~deplbench.formulations.adaptive.timed.timed_work`
against :data:`~deplbench.formulations.adaptive.timed.TIMED_WORK` on the first
grid), never the machine's speed, so these checks only build chains: small
instances (2 models, 2 clusters, K̄ = 6) carry it, the nine realistic instances
of docs/adaptive.md stay priced, and a refinement keeps the first grid's choice.
"""

from __future__ import annotations

import pytest

from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive import bracket
from deplbench.formulations.adaptive.settings import ITERS_MU
from deplbench.instances.generators import generate
from deplbench.instances.model import parse_instance
from tests.cli.test_cli_adaptive_options import TINY

#: The realistic instances whose widths docs/adaptive.md and README.md quote (perf/adaptive_targets.py).
REALISTIC = [("pact-vgg11", 0.15), ("pact-vgg11", 0.3), ("pact-vgg11", 0.45), ("alexnet", 5.0), ("alexnet", 9.0),
             ("alexnet", 13.0), ("mobilenet", 5.0), ("mobilenet", 9.0), ("mobilenet", 13.0)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_small_instance_carries_the_deadline_by_default(seed):
    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=seed)
    chain = A.Chain(inst, A.START_BUCKETS, optimistic=True)
    g = A.time_points_for(chain, None)
    assert g in A.TIME_POINTS and A.timed_work(chain, g) <= A.TIMED_WORK
    # the finest affordable: the next finer grid of time points is not
    finer = [p for p in A.TIME_POINTS if p > g]
    assert all(A.timed_work(chain, p) > A.TIMED_WORK for p in finer)
    assert A.time_points_for(chain, 0) == 0 and A.time_points_for(chain, 16) == 16     # explicit G as given
    # a time limit the passes cannot fit in (predicted at the measured rate's low end) takes the
    # finest coarser grid that fits, and prices the deadline only when none does
    need = {p: A.timed_seconds(chain, p, ITERS_MU) for p in A.TIME_POINTS}
    assert A.time_points_for(chain, None, need[g]) == g
    coarser = [p for p in A.TIME_POINTS if p < g]
    if coarser:
        assert A.time_points_for(chain, None, need[coarser[0]]) == coarser[0]
    assert A.time_points_for(chain, None, need[min(A.TIME_POINTS)] / 2) == 0


@pytest.mark.parametrize("family,loss_max", REALISTIC, ids=[f"{f}-{lm:g}" for f, lm in REALISTIC])
def test_the_realistic_instances_keep_the_deadline_priced(family, loss_max):
    inst = generate("realistic", family=family, loss_max=loss_max)
    # the default first grid, and the coarsest of the grid table docs/adaptive.md measures (VGG11, ℓmax 0.3)
    for buckets in (A.START_BUCKETS, 150) if (family, loss_max) == ("pact-vgg11", 0.3) else (A.START_BUCKETS,):
        chain = A.Chain(inst, buckets, optimistic=True)
        assert A.time_points_for(chain, None) == 0
        assert A.timed_work(chain, min(A.TIME_POINTS)) > 2 * A.TIMED_WORK     # not a near thing


@pytest.mark.slow
def test_a_refinement_keeps_the_first_grids_time_points(monkeypatch):
    """The default G is chosen on the first grid and kept on the finer ones (whose passes cost more),
    as an explicit ``time_points`` is: a refined bracket never falls back to a priced-only policy."""
    inst = parse_instance(TINY)
    first = A.Chain(inst, 30, optimistic=True)
    g = max(A.TIME_POINTS)
    # a work limit the first grid meets at G and the second (60 buckets) does not
    monkeypatch.setattr(bracket, "TIMED_WORK", A.timed_work(first, g))
    assert A.time_points_for(A.Chain(inst, 60, optimistic=True), None) < g
    seen = []
    real = bracket.timed_search

    def spy(chain, omega, points, *args, **kwargs):
        seen.append((chain.i0, points))
        return real(chain, omega, points, *args, **kwargs)

    monkeypatch.setattr(bracket, "timed_search", spy)
    b = A.adaptive_bounds(inst, buckets=30, runs=300, tune_runs=300, width=1e-9, max_buckets=60)
    assert [lv["buckets"] for lv in b.refinement["levels"]] == [30, 60]
    assert [p for _, p in seen] == [g, g] and b.multipliers["time_points"] == g


def test_the_help_states_the_work_limit_in_force(capsys):
    from deplbench.cli import main
    from deplbench.formulations.adaptive.settings import SETTINGS

    limit = f"{A.TIMED_WORK:g}".replace("e+0", "e")        # 2.5e8
    assert limit in SETTINGS["time_points"].help
    with pytest.raises(SystemExit):
        main(["adaptive", "--help"])
    assert limit in capsys.readouterr().out


def test_a_time_limit_too_short_for_the_finest_grid_takes_a_coarser_one():
    # 1 model, 1 cluster: every grid of TIME_POINTS is affordable by work; a limit that only the
    # coarser ones fit must not price the deadline (the help: "the finest ... that fits")
    inst = generate("scaling", n_models=1, n_clusters=1, horizon=6, seed=0)
    chain = A.Chain(inst, A.START_BUCKETS, optimistic=True)
    finest = A.time_points_for(chain, None)
    assert finest == max(A.TIME_POINTS)
    for p in sorted(A.TIME_POINTS)[:-1]:
        assert A.time_points_for(chain, None, A.timed_seconds(chain, p, ITERS_MU)) == p
