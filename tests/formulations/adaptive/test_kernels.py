"""The water-filling pass's compiled epoch step (formulations/adaptive/kernels.py): the numpy
reference's numbers, bit for bit, and the reference itself where numba is not there."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from deplbench.formulations.adaptive import kernels
from deplbench.formulations.adaptive.chain import build_chain
from deplbench.formulations.adaptive.correlation import Kernel, correlate
from deplbench.formulations.adaptive.waterfill import envelope, lines, segments, waterfill_pass
from deplbench.instances.generators import generate

pytestmark = pytest.mark.skipif(kernels.compiled() is None, reason="numba is not installed: nothing compiled to "
                                "compare (the pass runs the numpy reference)")


def _same(a, b) -> bool:
    """The same binary64 numbers, bit for bit (the sign of a zero included), any NaN taken as one."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    return bool(np.array_equal(np.where(np.isnan(a), 0.0, a).view(np.uint64),
                               np.where(np.isnan(b), 0.0, b).view(np.uint64)))


@pytest.mark.parametrize("seed", range(6))
def test_segments_and_envelope_give_the_references_numbers_bit_for_bit(seed):
    """Rough input (not concave: y < 0 segments), huge and tiny magnitudes, inf and NaN cells, and an
    unusable epoch's H = inf rows."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        J, C = int(rng.integers(2, 70)), int(rng.integers(1, 200))
        nus = np.concatenate([[0.0], np.sort(rng.uniform(1e-3, 50.0, J - 1))])
        T = rng.normal(size=(J, C)) * 10.0 ** rng.uniform(-200, 200)
        T[rng.random((J, C)) < 0.03] = np.inf
        T[rng.random((J, C)) < 0.03] = np.nan
        with np.errstate(all="ignore"):
            fast, ref = segments(T, nus), segments(T, nus, compiled=False)
            assert all(_same(x, z) for x, z in zip(fast, ref))
            assert (fast[2] is fast[1]) == (ref[2] is ref[1])        # q is D where no y < 0, in both
            H, P = lines(ref, float(10.0 ** rng.uniform(-3, 3)))
            H[rng.random(H.shape) < 0.05] = np.inf
            assert _same(envelope(H, P, nus), envelope(H, P, nus, compiled=False))


def test_ties_signed_zeros_and_repeated_slopes_give_the_references_numbers():
    """np.min keeps the later of two equal candidates (−0 after +0 gives −0), and a repeated slope
    divides by zero: inf and NaN, as numpy gives them, not an exception."""
    nus = np.array([0.0, 1.0, 2.0, 3.0])
    H = np.array([[0.0, -0.0, 1.0], [-0.0, 0.0, 1.0], [0.0, -0.0, 1.0]])
    P = np.array([[0.0, -0.0, np.nan], [-0.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    with np.errstate(all="ignore"):
        assert _same(envelope(H, P, nus), envelope(H, P, nus, compiled=False))
        rep = np.array([0.0, 1.0, 1.0, 3.0])
        T = np.array([[0.0, 0.0], [1.0, -2.0], [2.0, 5.0], [4.0, 1.0]])
        fast, ref = segments(T, rep), segments(T, rep, compiled=False)
        assert not np.isfinite(ref[0]).all()                      # the case is there: a division by 0
        assert all(_same(x, z) for x, z in zip(fast, ref))


def test_the_compiled_steps_refuse_arrays_whose_shapes_do_not_match():
    """numba checks no bounds: a slope vector of the wrong length is refused before the loops read past it."""
    with pytest.raises(ValueError, match="nus"):
        segments(np.ones((5, 3)), np.linspace(0.0, 1.0, 7))
    with pytest.raises(ValueError, match="nus"):
        envelope(np.ones((3, 2)), np.ones((3, 2)), np.linspace(0.0, 1.0, 9))


@pytest.mark.parametrize("family, loss_max", [("pact-vgg11", 0.15), ("mobilenet", 13.0)])
def test_a_pass_is_the_same_with_the_kernels_and_with_the_numpy_reference(family, loss_max, monkeypatch):
    chain = build_chain(generate("realistic", family=family, loss_max=loss_max), 300, True)
    mu = 5.0 * chain.st.cost_scale() / chain.st.time_max
    fast = waterfill_pass(chain, mu, 1.0, slopes=32)
    monkeypatch.setattr(kernels, "compiled", lambda: None)
    ref = waterfill_pass(chain, mu, 1.0, slopes=32)
    assert (fast.value, fast.eta) == (ref.value, ref.eta)


def test_without_numba_the_reference_runs(monkeypatch):
    kernels.compiled.cache_clear()
    monkeypatch.setitem(sys.modules, "numba", None)             # import numba raises ImportError
    try:
        assert kernels.compiled() is None
        nus = np.concatenate([[0.0], np.geomspace(1e-2, 1.0, 7)])
        S = np.minimum(nus, 0.5)[:, None]
        assert _same(envelope(*lines(segments(S, nus), 0.3), nus),
                     envelope(*lines(segments(S, nus, compiled=False), 0.3), nus, compiled=False))
    finally:
        kernels.compiled.cache_clear()


def test_with_numbas_jit_disabled_the_reference_runs_rather_than_python_loops(monkeypatch):
    import numba

    kernels.compiled.cache_clear()
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    try:
        assert kernels.compiled() is None
    finally:
        kernels.compiled.cache_clear()


def test_the_ffts_threads_change_no_bit_of_a_correlation():
    rng = np.random.default_rng(3)
    for _ in range(20):
        B, Q, L1 = int(rng.integers(1, 5)), int(rng.integers(1, 40)), int(rng.integers(5, 5000))
        ks = [Kernel(int(rng.integers(-30, 30)), rng.random(int(rng.integers(1, 60))), float(rng.random()))
              for _ in range(2)]
        kers = [ks[int(rng.integers(0, 2))] for _ in range(B)]
        f = rng.normal(size=(B, Q, L1))
        top = rng.normal(size=(B, Q))
        one = correlate(f, kers, top, with_error=True)
        two = correlate(f, kers, top, with_error=True, workers=2)
        assert all(np.array_equal(a, b) for a, b in zip(one, two))
