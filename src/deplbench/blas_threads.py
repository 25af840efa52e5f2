"""One BLAS thread for the duration of a block: :func:`single_blas_thread`.

Why
---
numpy's and scipy's wheels ship OpenBLAS, which splits a matrix product
over every core once it is larger than a few hundred thousand
multiply-adds. The ``general`` branch-and-bound multiplies *small*
matrices at every search node (the scenario-group bound, a (76 × 67) by
(67 × 340) product on the ``datasets`` instances at S = 200). A product
that small costs far more CPU split over two threads than on one — many
times more on a 2-core machine with another job beside it — and these
products dominate the solve's time (the measurements are in the
changelog's history). One thread is also the reproducible choice: the
result of a product then does not depend on the machine's thread count.

What it does
------------
threadpoolctl (the thread-pool control scikit-learn uses) limits every
loaded BLAS — OpenBLAS, MKL, BLIS — to one thread inside the ``with``
block and restores the previous counts after it. The count is
process-wide: concurrent solves in threads of one process share it (the
suite runs solves in processes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def blas_threads() -> list[int]:
    """The current thread count of every loaded BLAS library (empty: none found)."""
    from threadpoolctl import threadpool_info  # imported on use: the CLI's start-up stays light

    return [int(info["num_threads"]) for info in threadpool_info() if info.get("user_api") == "blas"]


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS on one thread; restore the counts after."""
    # load numpy's BLAS and SciPy's own OpenBLAS before the libraries are listed:
    # threadpoolctl limits only what is loaded when the block starts
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


__all__ = ["blas_threads", "single_blas_thread"]
