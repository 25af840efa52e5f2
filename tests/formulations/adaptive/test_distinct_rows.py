"""The DP passes correlate each distinct (next-state row, kernel) once (formulations.adaptive.chain).

Every action (m', n') of a DP step reads the next state's row of model m' through the
kernel ``chain.kx[k][m'][n']``; on every generated instance γ(n) is one number, so the
kernels are equal across clusters and the passes correlate one row per model
(:func:`~deplbench.formulations.adaptive.chain.distinct_rows`), the switch correlations
likewise. The reference here is every (m', n') correlated on its own row, as the passes
did before: :func:`every_row` put in place of ``distinct_rows``, so that the passes call
``correlate_rows`` on the repeated rows. Every field of every pass — the priced
:func:`dp` (with and without its tables), :func:`best_success`, the carried-deadline
:func:`timed_dp` and :func:`timed_best_success` — must be bit for bit the reference's, on
the realistic families (K̄ cut so that the policy neither always nor never trains), on a
fine grid whose rows pass numpy's 8192-element reduction buffer, and on a chain whose
kernels do differ across clusters. That needs a correlation's rounding bound to depend on
its own row alone, not on the rest of its batch: checked directly at the end.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplbench.formulations.adaptive import chain as chain_mod
from deplbench.formulations.adaptive import correlation as correlation_mod
from deplbench.formulations.adaptive import timed as timed_mod
from deplbench.formulations.adaptive.chain import Chain, Kernel, best_success, distinct_rows, dp, kernel
from deplbench.formulations.adaptive.search import MU_PROBE
from deplbench.formulations.adaptive.timed import timed_best_success, timed_dp
from deplbench.instances.generators import generate

#: (family, ℓmax, K̄): K̄ cut from 100 so that a pass is cheap and its policy trains on part
#: of the states (P(fail) strictly between 0 and 1 on at least one of the two chains).
CASES = [("pact-vgg11", 0.3, 20), ("alexnet", 9.0, 30), ("mobilenet", 13.0, 15)]
BUCKETS = 100
POINTS = 16
PASS_FLOATS = ("lam", "mu", "value", "p_fail", "time", "cost", "err", "err_fail")


def every_row(chain: Chain, k: int):
    """The reference grouping: each (m', n') its own row (the repeated rows)."""
    M, N = chain.M, chain.N
    return (np.repeat(np.arange(M), N), [chain.kx[k][m][n] for m in range(M) for n in range(N)],
            np.arange(M * N))


def passes(chain: Chain) -> dict:
    mu = MU_PROBE * chain.st.cost_scale()
    return {"dp": dp(chain, 1.0, mu, keep=True), "dp_values": dp(chain, 3.0, mu),
            "best_success": best_success(chain), "timed_dp": timed_dp(chain, mu, POINTS, keep=True),
            "timed_best_success": timed_best_success(chain, POINTS)}


def reference_passes(chain: Chain, monkeypatch) -> dict:
    with monkeypatch.context() as mp:
        mp.setattr(chain_mod, "distinct_rows", every_row)
        mp.setattr(timed_mod, "distinct_rows", every_row)
        return passes(chain)


def assert_bit_identical(new: dict, ref: dict) -> None:
    for name, p in new.items():
        q = ref[name]
        if isinstance(p, tuple):                       # best_success's (p, err)
            assert p == q, name
            continue
        for f in PASS_FLOATS:
            a, b = getattr(p, f), getattr(q, f)
            assert a == b or (math.isnan(a) and math.isnan(b)), (name, f, a, b)
        for f in ("action", "remaining"):
            a, b = getattr(p, f), getattr(q, f)
            assert (a is None) == (b is None), (name, f)
            if a is not None:
                assert a.dtype == b.dtype and np.array_equal(a, b), (name, f)
        assert p.grid == q.grid, name


@pytest.fixture
def count_rows(monkeypatch):
    """The rows each :func:`correlate` call of the passes transforms, in order."""
    rows: list[int] = []
    real = correlation_mod.correlate

    def counted(f, *a, **k):
        rows.append(f.shape[0])
        return real(f, *a, **k)

    monkeypatch.setattr(correlation_mod, "correlate", counted)      # correlate_rows' (dp, best_success)
    monkeypatch.setattr(timed_mod, "correlate", counted)
    return rows


@pytest.mark.parametrize("optimistic", [True, False], ids=["optimistic", "pessimistic"])
@pytest.mark.parametrize("family, loss_max, horizon", CASES, ids=[c[0] for c in CASES])
def test_the_passes_are_bit_identical_to_one_row_per_action(family, loss_max, horizon, optimistic, monkeypatch,
                                                            count_rows):
    inst = generate("realistic", family=family, loss_max=loss_max).with_changes(horizon=horizon)
    ch = Chain(inst, BUCKETS, optimistic=optimistic)
    M, N = ch.M, ch.N
    for k in range(ch.K):                              # γ(n) one number: one kernel per model
        models, kers, index = distinct_rows(ch, k)
        assert models.tolist() == list(range(M)) and index.tolist() == [m for m in range(M) for _ in range(N)]
        assert all(kers[m] is ch.kx[k][m][0] for m in range(M))
    new = passes(ch)
    n_new = sum(count_rows)
    count_rows.clear()
    ref = reference_passes(ch, monkeypatch)
    assert sum(count_rows) == N * n_new                # the reference correlates every row N times
    assert_bit_identical(new, ref)
    assert 0.0 < new["dp"].p_fail < 1.0 or 0.0 < new["timed_dp"].p_fail < 1.0
    assert (new["dp"].action >= 0).any()               # the tables compared are not all "stop"


def _edited(inst, edit: bool):
    """The VGG chain with its kernels made to differ across clusters: cluster 1 of every
    model reduces the loss 1.5 times faster, cluster 2 holds an equal copy (another object)
    of cluster 0's kernel; with ``edit`` False the chain as generated."""
    ch = Chain(inst, BUCKETS, optimistic=True)
    if not edit:
        return ch
    for k in range(ch.K):
        for m in range(ch.M):
            k0 = ch.kx[k][m][0]
            factor = -1.5 * ch.st.gamma[1] * ch.st.scale[k, m]
            ch.kx[k][m][1] = kernel(inst.models[m].improvement, factor, ch.h, ch.optimistic)
            ch.kx[k][m][2] = Kernel(k0.lo, k0.p.copy(), k0.p_inf)
    return ch


def test_kernels_that_differ_across_clusters_are_correlated_apart(monkeypatch):
    """Kernels compared by value: the copy shares cluster 0's row, the faster kernel gets its own,
    and every pass is still the reference's bit for bit (and not the unedited chain's)."""
    inst = generate("realistic", family="pact-vgg11", loss_max=0.3).with_changes(horizon=20)
    ch = _edited(inst, True)
    assert ch.N == 3
    for k in range(ch.K):
        models, kers, index = distinct_rows(ch, k)
        assert models.tolist() == [m for m in range(ch.M) for _ in range(2)]
        assert index.tolist() == [j for m in range(ch.M) for j in (2 * m, 2 * m + 1, 2 * m)]
        assert kers[1] is ch.kx[k][0][1] and kers[0] is ch.kx[k][0][0]
    new = passes(ch)
    assert_bit_identical(new, reference_passes(ch, monkeypatch))
    plain = dp(_edited(inst, False), 1.0, MU_PROBE * ch.st.cost_scale())
    assert new["dp"].value < plain.value               # the faster cluster is used: the edit matters
    assert np.isin(new["dp"].action, [3 * m + 1 for m in range(ch.M)]).any()


@pytest.mark.slow
def test_a_fine_grid_is_bit_identical_too(monkeypatch, count_rows):
    """MobileNet at 9600 buckets (K̄ = 3): rows of ~16,000 cells and a switch kernel of
    13,441, longer than numpy's 8192-element reduction buffer (:func:`correlation._sum_squares`)."""
    inst = generate("realistic", family="mobilenet", loss_max=13.0).with_changes(horizon=3)
    ch = Chain(inst, 9600, optimistic=True)
    assert ch.L > 8192 and max(k.p.size for k in ch.kj.values()) > 8192
    new = passes(ch)
    assert_bit_identical(new, reference_passes(ch, monkeypatch))


@pytest.mark.parametrize("Q", [1, 3])
def test_a_rows_correlation_and_bound_do_not_depend_on_its_batch(Q):
    """Rows and kernels longer than 8192 cells: each row's output, bound and mass are the same
    correlated alone as in a batch (a kernel repeated over rows, others distinct)."""
    rng = np.random.default_rng(5)
    n, P, B = 9000, 8500, 5
    f = rng.random((B, Q, n))
    top = rng.random(Q)
    base = [Kernel(-P // 2, p / p.sum() * 0.999, 0.001) for p in rng.random((3, P))]
    kers = [base[0], base[1], base[0], base[2], base[1]]
    out, err, mass = correlation_mod.correlate(f, kers, top, with_error=True)
    for j in range(B):
        o, e, m = correlation_mod.correlate(f[j:j + 1], [kers[j]], top, with_error=True)
        assert np.array_equal(o[0], out[j]) and np.array_equal(e[0], err[j]) and m[0] == mass[j], j
