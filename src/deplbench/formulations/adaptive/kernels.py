"""The water-filling pass's epoch step, compiled: the same floating-point operations in one loop.

:func:`~deplbench.formulations.adaptive.waterfill.segments` and
:func:`~deplbench.formulations.adaptive.waterfill.envelope` are written as whole-array numpy
operations: the envelope makes, per loss bucket, J(J − 1)/2 candidate lines H_c + ν_i P_c and takes
their least per slope ν_i, so numpy writes and reads every candidate through memory. The kernels
here do the very same IEEE-754 binary64 operations, element by element in the same order (one
product, then one sum, never a fused multiply-add; minima exact, a NaN candidate making the minimum
NaN as ``np.min`` does), in loops that keep each candidate in a register. So they give the same
numbers, bit for bit, as the numpy reference (tested on whole passes of two families and on random
envelopes with inf and NaN), and the pass's rounding analysis (waterfill.py, "Rounding") is theirs
unchanged. Compiled with numba, without ``fastmath`` (which would allow contractions and reordering)
and releasing the GIL, so that the pass's threads run them side by side.

Where numba cannot be imported (a platform without its wheels), :func:`compiled` is None and the
pass runs the numpy reference: the same numbers, slower.

References
----------
numba: Lam, Pitrou, Seibert, "Numba: a LLVM-based Python JIT compiler", LLVM-HPC 2015;
``fastmath`` off keeps LLVM from contracting a·b + c (numba documentation, "Performance tips").
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

#: Unit roundoff of binary64 (as :data:`deplbench.formulations.adaptive.correlation.UNIT`).
_U = float(np.finfo(float).eps) / 2


def _segments(T, nus, y, D, q):                 # pragma: no cover - compiled; tested against the reference
    """:func:`~deplbench.formulations.adaptive.waterfill.segments` on T (J, C) into y, D, q (J − 1, C);
    returns whether some y < 0 (then q holds the slope of the line A + νq where y < 0 and D elsewhere;
    else q is not written)."""
    J, C = T.shape
    u4 = 4.0 * _U
    neg = False
    for c in range(J - 1):
        dn = nus[c + 1] - nus[c]
        n0, n1 = nus[c], nus[c + 1]
        for k in range(C):
            t0 = 0.0 if c == 0 else T[c, k]
            t1 = T[c + 1, k]
            d = (t1 - t0) / dn
            if c == 0:
                # through the origin: σ(0) = 0 exactly
                y[c, k] = 0.0
                D[c, k] = d - u4 * abs(d)
                continue
            a = t0 - n0 * d
            b = t1 - n1 * d
            v = a if (a < b or a != a) else b                         # np.minimum: a NaN wins
            mag = abs(t0) + abs(t1)
            mag = mag + n1 * abs(d)
            v = v - u4 * mag
            y[c, k] = v
            D[c, k] = d
            if v < 0.0:
                neg = True
    if neg:
        for c in range(J - 1):
            nc = nus[c] if nus[c] > 0 else 1.0
            for k in range(C):
                v = y[c, k]
                d = D[c, k]
                if v < 0.0:
                    yq = v / nc
                    w = yq + d
                    q[c, k] = w - u4 * (abs(yq) + abs(d))
                else:
                    q[c, k] = d
    return neg


def _envelope(H, P, nus, best):                  # pragma: no cover - compiled; tested against the reference
    """The least over c < i of H_c + ν_i P_c into best[i] (J, C), best[0] = 0, as ``np.min`` reduces
    them: the minimum so far first, a tie taking the later candidate (the sign of a zero), the first
    NaN kept. The rounding slack is the caller's."""
    J, C = best.shape
    for k in range(C):
        best[0, k] = 0.0
    for i in range(1, J):
        nu = nus[i]
        for k in range(C):
            best[i, k] = H[0, k] + nu * P[0, k]
        for c in range(1, i):
            for k in range(C):
                v = H[c, k] + nu * P[c, k]
                m = best[i, k]
                best[i, k] = m if (m < v or m != m) else v


@functools.cache
def compiled() -> SimpleNamespace | None:
    """The compiled kernels (``segments``, ``envelope``), compiled once per process on first use;
    None where numba cannot be loaded (not installed, a numpy it does not support, its LLVM library
    missing) or compiles nothing (``NUMBA_DISABLE_JIT``: the loops would run as Python).

    ``error_model="numpy"``: a division by zero gives inf or NaN as numpy's does, not Python's
    exception."""
    try:
        import numba
    except Exception:           # ImportError, or an OSError from llvmlite's shared library
        return None
    if getattr(numba.config, "DISABLE_JIT", False):     # read at run time: numba sets it from the environment
        return None
    jit = numba.njit(nogil=True, fastmath=False, error_model="numpy", cache=False)
    return SimpleNamespace(segments=jit(_segments), envelope=jit(_envelope))


__all__ = ["compiled"]
