"""Shared fixtures of the pytest-benchmark suites ``perf/bench_*.py``.

``make bench`` runs these suites and writes ``results/bench/bench.json``
(pytest-benchmark's format), which ``deplbench report`` reads. This file:

* pins BLAS/OpenMP pools to one thread unless the environment says
  otherwise, so a timing measures the algorithm, not the thread pool;
* offers :func:`make_instance`, a cached instance factory, so that instance
  generation never lands inside a timed region twice;
* adds the deplbench environment (package versions, git commit, CPU, thread
  settings — the same record the results store keeps per row) to the JSON
  under ``machine_info.deplbench``.
"""

from __future__ import annotations

import functools
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402


@functools.lru_cache(maxsize=256)
def _generate(generator: str, seed: int, items: tuple):
    from deplbench.instances.generators import generate

    return generate(generator, seed=seed, **dict(items))


@pytest.fixture(scope="session")
def make_instance():
    """``make_instance(generator, seed=0, **params)`` → a cached generated Instance.

    Instances are immutable (frozen pydantic models), so sharing one across
    benchmarks is safe.
    """

    # The first argument is positional-only so that ``family=`` (the realistic
    # generator's own parameter: alexnet, mobilenet, pact-vgg11) passes through.
    def factory(generator: str, /, seed: int = 0, **params):
        return _generate(generator, seed, tuple(sorted(params.items())))

    return factory


def pytest_benchmark_update_machine_info(config, machine_info):
    """Record where the timings were taken (versions, commit, CPU, threads)."""
    from deplbench.benchmarks.tasks import environment

    machine_info["deplbench"] = environment()
