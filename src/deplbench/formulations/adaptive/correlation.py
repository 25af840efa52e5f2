"""The adaptive reference: the DP passes' batched FFT correlations and their rounding bound.

A DP pass (:func:`~deplbench.formulations.adaptive.chain.dp`, the carried-deadline
:func:`~deplbench.formulations.adaptive.timed.timed_dp`) takes, at every epoch, the
expectation of the next state's values over a loss step: a correlation of each row with
its kernel (:class:`Kernel`, built by :func:`~deplbench.formulations.adaptive.chain.kernel`),
batched in real FFTs per epoch. :func:`fft_error` bounds the rounding of each output a priori (Higham
2002), so that the pass's value carries a proven error bound
(:meth:`~deplbench.formulations.adaptive.chain.Pass.bound`). A row's output and bound
depend on that row and its kernel alone, not on the rest of its batch: the passes
correlate only the distinct (model, kernel) rows
(:func:`~deplbench.formulations.adaptive.chain.distinct_rows`) and get what one
correlation per action would give, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft as sp_fft


@dataclass
class Kernel:
    """P(rounded step = lo + t) = p[t]; ``p_inf`` the mass at +∞ (fail, pessimistic
    chain only). Mass at −∞ (optimistic chain only) is simply left out: it
    lands in the success bucket, whose value is 0."""

    lo: int
    p: np.ndarray
    p_inf: float = 0.0


#: Unit roundoff of float64.
UNIT = float(np.finfo(float).eps) / 2
#: Relative error of one FFT stage (butterfly and twiddle), in units of
#: :data:`UNIT`: Higham's η = μ + γ₄(√2 + μ) ≈ 6.7u for radix 2 with twiddles
#: accurate to u, taken 16u for pocketfft's radix-3/4/5 butterflies.
FFT_ETA = 16.0


def _sum_squares(x: np.ndarray) -> np.ndarray:
    """Σ x² over the last axis, each leading row of ``x`` summed on its own: (B, ..., n) → (B, ...).

    Row by row because ``np.einsum`` sums a batch in pieces of its 8192-element
    buffer, which straddle rows longer than that when the rows are not
    separated by another axis: a row's sum, hence its correlation's bound,
    would depend on the other rows of its batch."""
    sub = "bqn,bqn->bq" if x.ndim == 3 else "bn,bn->b"
    out = np.empty(x.shape[:-1])
    with np.errstate(over="ignore"):
        for b in range(x.shape[0]):
            out[b] = np.einsum(sub, x[b:b + 1], x[b:b + 1])[0]
    return out


def fft_error(ext: np.ndarray, ker: np.ndarray, pinf: np.ndarray, nfft: int,
              rows: np.ndarray | None = None) -> np.ndarray:
    """A-priori bound on |computed − exact| of every output of :func:`correlate`, per (row, quantity).

    ``ext`` (B, Q, n): the padded rows; ``ker`` (B, P) their kernels, or with
    ``rows`` (B,) the distinct kernels (U, P), row b's being ``ker[rows[b]]``;
    ``pinf`` (B,) the masses at +∞. Each row's bound depends on that row and
    its kernel alone, not on the rest of the batch.

    FFT convolution (Higham, *Accuracy and Stability of Numerical Algorithms*,
    2nd ed. 2002, Thm 24.2 and §24.1): with δ = s·η/(1 − s·η), s = log₂ n + 2
    stages (the real transforms' pre/post twiddle counted as two more),
    ‖fl(FFT a) − FFT a‖₂ ≤ δ√n‖a‖₂; the pointwise complex product adds 3u
    (√2·γ₂, Higham §3.6) and the inverse transform δ again, so every output
    is within (3δ + 4u)(1 + δ)²·‖a‖₂·(‖b‖₁ + √n‖b‖₂) of the exact
    correlation of the stored operands (|b̂ⱼ| ≤ ‖b‖₁ and
    ‖â‖∞ ≤ √n‖a‖₂ bound the cross terms). Added: the kernel probabilities
    themselves (a count divided by the sample size, or a difference of two
    c.d.f. values, assumed within 2 ulps each) — 4u·P·max|a| — and the
    mass at +∞ times ``top`` — u·p_inf·max|a|.
    """
    n = int(nfft)
    stages = math.log2(n) + 2.0
    eta = FFT_ETA * UNIT
    delta = stages * eta / (1.0 - stages * eta)
    amax = np.max(np.abs(ext), axis=-1)
    a2 = np.sqrt(_sum_squares(ext))
    big = (~np.isfinite(a2) | (amax < 1e-140)) & np.isfinite(amax) & (amax > 0)
    if big.any():   # squares past binary64 or underflowing (costs near 1e154, 1e-154): scaled by max|a|
        scaled = ext[big] / amax[big][:, None]
        a2[big] = amax[big] * np.sqrt(_sum_squares(scaled))
    b1, b2 = ker.sum(axis=-1), np.sqrt(_sum_squares(ker))
    if rows is not None:
        b1, b2 = b1[rows], b2[rows]
    fft = (3.0 * delta + 4.0 * UNIT) * (1.0 + delta) ** 2 * a2 * (b1 + math.sqrt(n) * b2)[:, None]
    return fft + UNIT * (4.0 * ker.shape[-1] + pinf + 1.0)[:, None] * amax


def correlate(f: np.ndarray, kernels: list[Kernel], top: np.ndarray, with_error: bool = False, workers: int = 1):
    """E[f(clip(i + step))] for i = 0..L, one kernel per leading row.

    f : (B, Q, L+1) stacked quantities; below bucket 0 reads f[..., 0]
    (success), above L reads ``top`` (Q,), or (B, Q) one per row — the
    clamped f[..., L] for the optimistic chain, failure for the pessimistic
    one. Batched FFT; a kernel given for several rows (the same object) is
    transformed once. With
    ``with_error`` also returns (B, Q): :func:`fft_error`'s bound on the
    rounding error of each row (rounding only; f's own error is propagated
    by the caller) and the kernels' total masses ‖p‖₁ + p_inf (B,).
    ``workers``: threads of the FFTs (``scipy.fft``'s), which share out whole
    one-dimensional transforms of the same length and plan: every row's
    output is the same, bit for bit, for any number — as a row's output does
    not depend on the rest of its batch, this rests on pocketfft rounding a
    transform alike on its vectorised and its scalar path (no fused
    multiply-add in the x86-64 baseline wheels; tested on this platform).
    """
    B, Q, L1 = f.shape
    lo = min(k.lo for k in kernels)
    hi = max(k.lo + k.p.size - 1 for k in kernels)
    P = hi - lo + 1
    A, Bp = max(0, -lo), max(0, hi)
    tt = top[None, :] if top.ndim == 1 else top            # (1 or B, Q)
    n = A + L1 + Bp
    nfft = sp_fft.next_fast_len(n + P, real=True)
    # the padded rows written once, in place, into the transform's own length (zeros after them): a
    # shorter input would be padded by a copy of its own; the transform of the same numbers
    buf = np.empty((B, Q, nfft))
    buf[..., :A] = f[..., :1]
    buf[..., A:A + L1] = f
    buf[..., A + L1:n] = tt[:, :, None]
    buf[..., n:] = 0.0
    ext = buf[..., :n]
    of: dict[int, int] = {}
    rows = np.array([of.setdefault(id(k), len(of)) for k in kernels], dtype=np.intp)
    distinct = list({id(k): k for k in kernels}.values())  # in the order of ``of``
    ker = np.zeros((len(distinct), P))
    for j, k in enumerate(distinct):
        ker[j, k.lo - lo:k.lo - lo + k.p.size] = k.p
    pinf = np.array([k.p_inf for k in distinct], dtype=float)[rows]
    ker_hat = sp_fft.rfft(ker[:, ::-1], nfft)[rows]
    spec = sp_fft.rfft(buf, nfft, workers=workers)
    spec *= ker_hat[:, None, :]
    conv = sp_fft.irfft(spec, nfft, overwrite_x=True, workers=workers)
    start = lo + A + P - 1
    out = conv[..., start:start + L1] + pinf[:, None, None] * tt[:, :, None]
    if not with_error:
        return out
    return out, fft_error(ext, ker, pinf, nfft, rows), ker.sum(axis=-1)[rows] + pinf


def correlate_rows(f, kernels, tops, err_in=None, workers: int = 1):
    """:func:`correlate` with one ``top`` row per leading row. With ``err_in``
    (Q,) — a bound on the error of f and of the tops, per quantity — also
    returns the bound on the outputs' error, (B, Q): err_in times the kernel's
    mass plus the rounding of the correlation. ``workers``: :func:`correlate`'s."""
    out = np.empty_like(f)
    err = np.empty(f.shape[:2]) if err_in is not None else None
    uniq: dict[tuple, list[int]] = {}
    for j, t in enumerate(map(tuple, tops)):
        uniq.setdefault(t, []).append(j)
    for t, rows in uniq.items():
        if err is None:
            out[rows] = correlate(f[rows], [kernels[j] for j in rows], np.array(t), workers=workers)
        else:
            out[rows], e, mass = correlate(f[rows], [kernels[j] for j in rows], np.array(t), with_error=True,
                                           workers=workers)
            err[rows] = e + mass[:, None] * err_in[None, :]
    return out if err is None else (out, err)


__all__ = ["FFT_ETA", "UNIT", "Kernel", "correlate", "correlate_rows", "fft_error"]
