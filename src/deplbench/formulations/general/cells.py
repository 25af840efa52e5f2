"""The cells of a model block and their per-scenario sums (``pairs.PairSearch``).

A block of model m from epoch k with ℓ epochs, j of them on the γ_hi group,
is the cell (ℓ, j), 0 ≤ j ≤ ℓ. Its optimistic loss decrease in scenario s is
γ_lo·Σ a + (γ_hi − γ_lo)·(the j largest a of the block), largest when the
γ_hi epochs are the j largest draws (``pairs`` module docstring). The cells
are kept in one ℓ-major array, so the cells of the shorter blocks are a
prefix; the sums depend on the problem only, not on the assignment.

References
----------
DepL paper eqs. (3)–(5); G. H. Hardy, J. E. Littlewood, G. Pólya,
*Inequalities* (1934), Thm. 368 (rearrangement inequality).
"""

from __future__ import annotations

import numpy as np

from deplbench.formulations.general.caches import problem_cache

#: Bytes the per-problem block sums (``block_sums``) may keep.
BLOCK_CACHE_BYTES = 256 * 2**20


def block_cells(span: int):
    """The cells (ℓ − 1, j) of blocks of 1..``span`` epochs, ℓ-major: row ℓ − 1 holds
    j = 0..ℓ, so cell (ℓ − 1, j) is at :func:`cell_index` and the cells of the
    shorter blocks are a prefix. Returns ``(ll, jj)``, each (span·(span+3)/2,)."""
    return np.nonzero(np.arange(span + 1)[None, :] <= np.arange(1, span + 1)[:, None])


def cell_index(li, j):
    """Position of cell (ℓ − 1 = ``li``, j) in the ℓ-major order of :func:`block_cells`."""
    return li * (li + 3) // 2 + j


def block_sums(prob, k: int, m: int):
    """Per scenario and cell (ℓ, j) of :func:`block_cells`, the sums of a block of
    model m from epoch k: ``total`` (S, n) (Σ a over its ℓ epochs) and ``top``
    (S, n) (the j largest of them), for every ℓ ≤ L = K̄ − k (n = L(L+3)/2).
    Independent of the assignment, so kept on the problem (within
    ``BLOCK_CACHE_BYTES``, oldest dropped first)."""
    cache = problem_cache(prob, "_pair_blocks", BLOCK_CACHE_BYTES)
    hit = cache.get((k, m))
    if hit is not None:
        return hit
    S, L = prob.S, prob.K - k
    win = prob.a[:, k:, m]                                                   # (S, L)
    ll, _ = block_cells(L)
    total = np.cumsum(win, axis=1)[:, ll]
    top = np.empty((S, ll.size))
    for ell in range(1, L + 1):
        at = cell_index(ell - 1, 0)
        top[:, at] = 0.0
        top[:, at + 1:at + ell + 1] = np.cumsum(np.sort(win[:, :ell], axis=1)[:, ::-1], axis=1)
    cache[(k, m)] = (total, top)
    return total, top


__all__ = ["BLOCK_CACHE_BYTES", "block_cells", "block_sums", "cell_index"]
