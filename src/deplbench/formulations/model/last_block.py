"""The last-block test shared by the exact MILP and the general search.

Both the enumeration formulation (:mod:`deplbench.formulations.milp`) and
the general branch-and-bound (:mod:`deplbench.formulations.general`) close a
partial plan with a final block of one model and need the fewest epochs that
make it SAA-feasible: at most ``p`` of the S scenarios may end above ℓmax,
the scenario quantile constraint (3) of the DepL paper. The test lives in
:mod:`deplbench.formulations.model`, the tier below both packages.
"""

from __future__ import annotations

import numpy as np

from deplbench.formulations.model.scenarios import loss_threshold


def shortest_last_block(data, pre: np.ndarray, start: np.ndarray, model: int,
                         cum_t: np.ndarray, k_lo: int, k_hi: int) -> np.ndarray:
    """Fewest epochs L ≥ 1 of a final block of ``model`` that make each partial
    plan SAA-feasible (0 where no L up to k_hi − start works).

    ``pre`` (S, P) is each partial plan's loss just before the block (switch
    jump included), ``start`` (P,) its first epoch, ``cum_t`` (M, K+1, S) the
    cumulative improvement per (virtual) model; ``data`` gives ``lmax``, ``p``
    (violations allowed) and ``nonneg``. With non-negative improvements the
    loss falls as the block grows, so all P searches bisect together;
    otherwise every length is tried.
    """
    P = start.size
    lo = np.maximum(1, k_lo - start)
    hi = k_hi - start
    found = np.zeros(P, dtype=np.int64)
    if P == 0:
        return found
    cum_m = cum_t[model]                          # (K+1, S), rows contiguous
    base = pre.T + cum_m[start]                   # (P, S): loss before the block plus its start offset
    threshold = loss_threshold(data.lmax)

    def ok(length):
        # The same test as quantile_ok, on the (P, S) layout.
        loss = base - cum_m[start + length]
        return np.count_nonzero(loss > threshold, axis=1) <= data.p

    valid = lo <= hi
    if data.nonneg:
        good = np.zeros(P, dtype=bool)
        good[valid] = ok(np.where(valid, hi, 1))[valid]
        a, b = lo.copy(), hi.copy()          # invariant: b works for `good`
        while True:
            open_ = good & (a < b)
            if not open_.any():
                break
            mid = (a + b) // 2
            res = ok(np.where(open_, mid, b))
            b = np.where(open_ & res, mid, b)
            a = np.where(open_ & ~res, mid + 1, a)
        found[good] = b[good]
    else:
        todo = valid.copy()
        length = lo.copy()
        while todo.any():
            res = ok(np.where(todo, np.minimum(length, hi), lo))
            hit = todo & res
            found[hit] = length[hit]
            todo &= ~res
            length += 1
            todo &= length <= hi
    return found


__all__ = ["shortest_last_block"]
