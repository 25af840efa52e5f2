"""The water-filling pass split between threads: the same pass, bit for bit, for any number of threads.

``threads`` only splits each epoch's steps by loss bucket (formulations/adaptive/waterfill.py), so a
pass, and a bracket, must not change in a single bit with it; the split must also really happen on
grids of at least ``SPLIT_CELLS`` loss cells (else the first check proves nothing), and a bad value
is refused with the setting named.
"""

from __future__ import annotations

import json

import pytest

from deplbench.errors import PlanError
from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive import waterfill as W
from deplbench.formulations.adaptive.settings import cores, refused, threads_for
from deplbench.instances.generators import generate
from deplbench.solvers.adaptive.optimum import AdaptiveOpt


def _chain(buckets: int):
    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0)
    ch = A.Chain(inst, buckets, optimistic=True)
    s = A.lower_bound_search(ch, inst.omega, 2, 2)
    return inst, ch, s.best


@pytest.fixture
def quarter_split(monkeypatch):
    """SPLIT_CELLS and CHUNK at a quarter of their values: a grid a quarter the size is then cut as the
    full-size one is (the same parts per thread count, the same blocks per part), so every path of the
    split runs, on a quarter of the work. Both are read at each call; the cuts' positions are what
    the equality checks, not the block length."""
    monkeypatch.setattr(W, "SPLIT_CELLS", W.SPLIT_CELLS // 4)
    monkeypatch.setattr(W, "CHUNK", W.CHUNK // 4)


@pytest.mark.slow
def test_a_pass_is_the_same_bit_for_bit_for_any_number_of_threads_and_really_is_split(quarter_split, monkeypatch):
    _, ch, best = _chain(2 * W.SPLIT_CELLS + 11)
    widths: list[int] = []
    real = W.envelope

    def spy(H, P, nus):
        widths.append(H.shape[1])
        return real(H, P, nus)

    monkeypatch.setattr(W, "envelope", spy)
    passes = {}
    L1 = ch.L + 1
    assert L1 >= 2 * W.CHUNK                   # one thread's buckets are split in blocks too
    for t in (1, 2, 3, "whole"):
        widths.clear()
        with monkeypatch.context() as m:
            if t == "whole":                   # one thread, no blocks: whole rows
                m.setattr(W, "CHUNK", 10 * L1)
            passes[t] = W.waterfill_pass(ch, 0.6 * best.mu, best.lam, threads=1 if t == "whole" else t)
        # whole rows, or every step on a part of the buckets
        assert set(widths) == {L1} if t == "whole" else max(widths) < L1, (t, sorted(set(widths)))
    for t in (2, 3, "whole"):
        a, b = passes[1], passes[t]
        assert (a.value, a.eta, a.nu, a.err) == (b.value, b.eta, b.nu, b.err), t
        assert a.bound(0.9) == b.bound(0.9)


def test_the_threads_run_in_the_callers_numpy_error_state(quarter_split, monkeypatch):
    """Under ``adaptive_bounds``' ``quiet`` an overflow is silent on one thread; a worker thread
    starts with numpy's defaults unless it runs in a copy of the caller's context."""
    import numpy as np

    _, ch, best = _chain(2 * W.SPLIT_CELLS + 11)
    seen: list[str] = []
    real = W.segments

    def spy(T, nus):
        seen.append(np.geterr()["over"])
        return real(T, nus)

    monkeypatch.setattr(W, "segments", spy)
    monkeypatch.setattr(ch, "K", 1)                      # one epoch is enough
    with np.errstate(over="ignore"):
        W.waterfill_pass(ch, 0.6 * best.mu, best.lam, threads=2)
    assert seen and set(seen) == {"ignore"}


def test_grids_below_the_split_size_run_on_one_thread(monkeypatch):
    _, ch, best = _chain(W.SPLIT_CELLS // 4)
    made = []
    monkeypatch.setattr(W, "ThreadPoolExecutor", lambda n: made.append(n))
    W.waterfill_pass(ch, 0.6 * best.mu, best.lam, threads=4)
    assert made == []


@pytest.mark.slow
def test_a_bracket_is_the_same_for_any_number_of_threads(quarter_split):
    inst, _, _ = _chain(50)
    kw = dict(buckets=W.SPLIT_CELLS, runs=2000, tune_runs=1000, time_points=0)
    one, two = (A.adaptive_bounds(inst, threads=t, **kw).to_dict() for t in (1, 2))
    for d in (one, two):
        d.pop("work")
        for lv in d.get("refinement", {}).get("levels", []):
            lv.pop("seconds", None)
    assert one["multipliers"]["lower_bound_source"] in ("waterfill", "priced")
    assert one["multipliers"]["waterfill"] is not None
    assert json.dumps(one, sort_keys=True, default=str) == json.dumps(two, sort_keys=True, default=str)


def test_threads_zero_means_every_core_and_bad_values_are_refused_naming_the_setting():
    assert threads_for(0) == cores() >= 1
    assert threads_for(3) == 3
    assert refused("threads", 2) == "" and refused("threads", 0) == ""
    assert refused("threads", -1) and refused("threads", 257)
    inst = generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0)
    with pytest.raises(PlanError, match="^threads: "):
        A.adaptive_bounds(inst, buckets=20, runs=200, tune_runs=200, threads=-1)
    # a sweep's adaptive-opt task runs on one thread unless told otherwise (its tasks run side by side)
    assert AdaptiveOpt.parameters["threads"].default == 1
