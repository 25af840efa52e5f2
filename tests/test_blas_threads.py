"""``deplbench.blas_threads``: one OpenBLAS thread inside the block, the counts restored after.

The ``general`` solver runs inside :func:`single_blas_thread` (its node bounds
multiply small matrices, which a threaded OpenBLAS made up to 40× slower on
a shared 2-core machine); a solve must leave the process's thread counts as
it found them.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.blas_threads import blas_threads, single_blas_thread
from deplbench.formulations.general import solve_general
from tests.milp_instances import tiny_instance


def _controls_or_skip():
    np.ones((2, 2)) @ np.ones((2, 2))      # numpy's OpenBLAS is loaded with numpy
    if not blas_threads():
        pytest.skip("no BLAS with a thread control is loaded")
    return blas_threads()


def test_one_thread_inside_and_counts_restored_after():
    before = _controls_or_skip()
    with single_blas_thread():
        assert blas_threads() == [1] * len(before)
        a = np.arange(400.0).reshape(20, 20)
        assert float((a @ a.T)[0, 0]) == float(np.sum(a[0] * a[0]))
    assert blas_threads() == before


def test_counts_restored_after_an_exception():
    before = _controls_or_skip()
    with pytest.raises(RuntimeError), single_blas_thread():
        raise RuntimeError("inside")
    assert blas_threads() == before


def test_general_solve_leaves_the_thread_counts_as_it_found_them():
    before = _controls_or_skip()
    res = solve_general(tiny_instance(), scenarios=20, time_limit=None)
    assert res.status == "optimal"
    assert blas_threads() == before
