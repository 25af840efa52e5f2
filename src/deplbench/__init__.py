"""deplbench — a benchmark suite for dependable distributed training of
compressed ML models (Malandrino et al., "Dependable Distributed Training of
Compressed Machine Learning Models", the DepL paper).

The public API
--------------
The names below are the contract: they keep working, from this package,
whatever module implements them (``CHANGELOG.md`` lists every moved path).
Import them from ``deplbench``::

    from deplbench import generate, solve, evaluate_plan, load_sweep, run_sweep

===================  ==========================================================
Instances            :func:`generate`, :func:`load_instance`, :class:`Instance`
Plans and judging    :class:`Plan`, :func:`load_plan`, :func:`evaluate_plan`,
                     :class:`Evaluation`
Algorithms           :func:`solve`, :class:`SolveResult`, :func:`closed_loop`,
                     :func:`get_solver`, :func:`solver_info`, :class:`Solver`
Sweeps and results   :func:`load_sweep`, :class:`Sweep`, :func:`run_sweep`,
                     :class:`ResultsStore`, :class:`LocalExecutor`,
                     :class:`DaskExecutor`
Reports              :func:`build_report`
Errors               :class:`DeplbenchError`, :class:`InstanceError`,
                     :class:`PlanError`, :class:`SolverError`,
                     :class:`SweepError`
===================  ==========================================================

Each name is imported on first use (PEP 562 module ``__getattr__``), so
``import deplbench`` — and ``deplbench --help`` — loads no numerical
library; ``from deplbench import solve`` loads only what ``solve`` needs.
The table :data:`PUBLIC_API` says where each name lives. It is read lazily,
after this package is initialised, which is why a name from an upper layer
here is no upward import (docs/DESIGN.md's layering holds for the modules;
tests/test_public_api.py checks that importing this package imports none of
them).

The layers are installed as sub-packages (see ``docs/DESIGN.md``)::

    deplbench.instances     instance model, JSON format, distributions, generators
    deplbench.formulations  plans, exact evaluation, scenarios, allocation, MILP
    deplbench.solvers       DepL and the baselines behind one solver interface
    deplbench.benchmarks    sweeps, executors, results store, pytest-benchmark suites
    deplbench.reports       HTML/CSV/Markdown reports and the claims audit
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing would slow ``deplbench --help``
# (mypy treats any TYPE_CHECKING name as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

#: Every public name → the module that defines it. Order: the user's path
#: from an instance to a report.
PUBLIC_API: dict[str, str] = {
    # instances
    "generate": "deplbench.instances.generators",
    "load_instance": "deplbench.instances.model",
    "Instance": "deplbench.instances.model",
    # formulations: plans and their out-of-sample judgement
    "Plan": "deplbench.formulations.model.plan",
    "load_plan": "deplbench.formulations.model.plan",
    "evaluate_plan": "deplbench.formulations.evaluation.evaluate",
    "Evaluation": "deplbench.formulations.evaluation.evaluate",
    "SolveResult": "deplbench.formulations.model.result",
    # solvers
    "solve": "deplbench.solvers.run",
    "closed_loop": "deplbench.solvers.run",
    "get_solver": "deplbench.solvers.registry",
    "solver_info": "deplbench.solvers.registry",
    "Solver": "deplbench.solvers.base",
    # benchmarks: sweeps and the results store
    "load_sweep": "deplbench.benchmarks.sweep",
    "Sweep": "deplbench.benchmarks.sweep_expand",
    "run_sweep": "deplbench.benchmarks.runner",
    "ResultsStore": "deplbench.benchmarks.store",
    "LocalExecutor": "deplbench.benchmarks.executors",
    "DaskExecutor": "deplbench.benchmarks.executors",
    # reports
    "build_report": "deplbench.reports.build",
    # errors
    "DeplbenchError": "deplbench.errors",
    "InstanceError": "deplbench.errors",
    "PlanError": "deplbench.errors",
    "SolverError": "deplbench.errors",
    "SweepError": "deplbench.errors",
}

__all__ = ["__version__", *PUBLIC_API]


def __getattr__(name: str) -> Any:
    """Import a public name on first use and cache it in this module."""
    module = PUBLIC_API.get(name)
    if module is None:
        raise AttributeError(f"module 'deplbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC_API})
