"""How the data a cluster holds changes learning and work (our law, not the paper's).

The DepL paper gives no numerical law for data. Sec. IV-A only says that the
number of epochs needed falls roughly *logarithmically* with more data while
the per-epoch work grows *linearly* with it. We make that concrete, and every
layer uses these two functions and nothing else:

* volume          V(S) = Σ_{d∈S} σ_d
* useful volume   U(S) = Σ_{d∈S} u_d σ_d
* per-epoch compute need       c(m, S) = c_m · V(S)             (linear)
* learning-speed multiplier    γ(S)    = ln(1 + U(S)) / ln 2    (logarithmic)

so that one reference dataset (σ = 1, u = 1) gives c(m, S) = c_m and γ = 1,
and the per-epoch loss change of eq. (8) becomes
``l_run = −γ(S) · A_m · decay_m(k) · X``. Epochs needed scale like 1/γ(S),
i.e. they fall like 1/ln(1+U): the logarithmic law.

A cluster that trains must hold at least one dataset (γ(∅) = 0: no data, no
learning).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

LN2 = math.log(2.0)


def data_volume(sizes: Iterable[float]) -> float:
    """V(S) = Σ σ_d."""
    return float(sum(sizes))


def useful_volume(sizes: Iterable[float], usefulness: Iterable[float]) -> float:
    """U(S) = Σ u_d σ_d."""
    return float(sum(s * u for s, u in zip(sizes, usefulness, strict=True)))


def learning_multiplier(useful):
    """γ(S) = ln(1 + U(S)) / ln 2 (0 for no data).

    Parameters
    ----------
    useful : float or array_like
        U(S) of one dataset set, or of many (vectorised: an array in, an
        array out, e.g. for every candidate subset at once).

    Returns
    -------
    float or numpy.ndarray
    """
    if np.ndim(useful) == 0:
        return math.log1p(useful) / LN2 if useful > 0 else 0.0
    u = np.asarray(useful, dtype=float)
    return np.where(u > 0, np.log1p(np.maximum(u, 0.0)) / LN2, 0.0)


def compute_need(model_compute, volume):
    """c(m, S) = c_m · V(S) (scalars or broadcasting NumPy arrays)."""
    return model_compute * volume
