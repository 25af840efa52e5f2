"""One BLAS thread for the duration of a block: :func:`single_blas_thread`.

Why
---
numpy's and scipy's wheels ship OpenBLAS, which splits a matrix product
over every core once it is larger than a few hundred thousand
multiply-adds. The ``general`` branch-and-bound multiplies *small*
matrices at every search node (the scenario-group bound, a (76 × 67) by
(67 × 340) product on the ``datasets`` instances at S = 200); handing those
to two threads on this project's 2-core machine with another job beside it
made each product 0.1 ms → 3.9 ms of CPU (measured), and the product was
80 % of the solve's time. One thread is also the reproducible choice: the
result of a product then does not depend on the machine's thread count.

What it does
------------
Finds the OpenBLAS libraries loaded in this process (``/proc/self/maps``;
numpy's 64-bit-integer build and scipy's) and calls their
``*_set_num_threads`` entry points: one thread inside the ``with`` block,
the previous count restored after it. Where none is found (another BLAS,
another operating system) it does nothing; set ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS`` or ``OMP_NUM_THREADS`` to 1 before Python starts there.
The thread count is process-wide: concurrent solves in threads of one
process share it (the suite runs solves in processes).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Iterator

#: (set, get) entry points of the OpenBLAS builds, first match per library.
_ENTRY_POINTS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


@functools.lru_cache(maxsize=None)
def _controls(paths: tuple[str, ...]) -> tuple:
    """(set, get) ctypes functions of each OpenBLAS library among ``paths``."""
    out = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _ENTRY_POINTS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                setter, getter = getattr(lib, set_name), getattr(lib, get_name)
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                out.append((setter, getter))
                break
    return tuple(out)


def openblas_libraries() -> tuple[str, ...]:
    """Paths of the OpenBLAS shared libraries loaded in this process (empty off Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            names = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return ()
    return tuple(sorted(p for p in names if os.path.isabs(p) and ".so" in os.path.basename(p)))


def blas_threads() -> list[int]:
    """The current thread count of every loaded OpenBLAS library (empty: none found)."""
    return [int(get()) for _, get in _controls(openblas_libraries())]


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the block with every loaded OpenBLAS on one thread; restore the counts after."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS before the libraries are listed)

    controls = _controls(openblas_libraries())
    before = [int(get()) for _, get in controls]
    for setter, _ in controls:
        setter(1)
    try:
        yield
    finally:
        for (setter, _), n in zip(controls, before):
            setter(max(1, n))


__all__ = ["blas_threads", "openblas_libraries", "single_blas_thread"]
