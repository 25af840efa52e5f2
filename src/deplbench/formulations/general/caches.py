"""Byte-bounded caches of the ``general`` search's tables (``cachetools.FIFOCache``).

Every table kept for reuse — the per-problem block sums (``cells``) and
largest-decrease tables (``pairs.PairSearch.Dn``), one search's gain tables,
the solve's warm-start multipliers (``node_groups.WarmStarts``) — is kept
within a byte limit, oldest entry dropped first. Eviction follows the order
of insertion only, so the same solve order keeps the same entries on any
machine; a value larger than the whole limit is not kept at all.
"""

from __future__ import annotations

import numpy as np
from cachetools import FIFOCache


def _nbytes(value) -> int:
    """Bytes of an array, or of the arrays of a tuple."""
    return sum(int(np.asarray(x).nbytes) for x in value) if isinstance(value, tuple) else int(value.nbytes)


class ArrayCache(FIFOCache):
    """A FIFO cache of arrays (or tuples of arrays) within ``limit`` bytes;
    ``overhead``: bytes counted per entry beyond its arrays (its key, the dict entry)."""

    def __init__(self, limit: int, overhead: int = 0):
        super().__init__(int(limit), getsizeof=lambda value: _nbytes(value) + overhead)

    def __setitem__(self, key, value) -> None:
        if self.getsizeof(value) <= self.maxsize:       # larger than the whole limit: not kept
            super().__setitem__(key, value)


def problem_cache(prob, name: str, limit: int) -> ArrayCache:
    """The :class:`ArrayCache` ``name`` kept on the problem (one per solve)."""
    cache = prob.__dict__.get(name)
    if cache is None:       # built once: block_sums asks for it at every block
        cache = prob.__dict__[name] = ArrayCache(limit)
    return cache


__all__ = ["ArrayCache", "problem_cache"]
