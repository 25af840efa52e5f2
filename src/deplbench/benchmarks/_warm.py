"""Forkserver initialisation for the local executor (imported only there).

The local executor's forkserver imports this module once (its "preload"),
so that every task process it forks starts with the solver stack already
imported, and so that the forkserver dies with the runner:

* each task process asks the kernel for SIGKILL when *its* parent — the
  forkserver — dies (``PR_SET_PDEATHSIG``, set in
  ``executors._local_child``);
* the forkserver itself would not notice a ``kill -9`` of the runner while
  tasks run (every task holds a copy of the pipe end the forkserver watches),
  so it asks for SIGKILL when the runner dies too. Killing the runner thus
  takes the forkserver and every running task with it: no orphan solver.

Each import is guarded: a module that fails to import (a layer not
installed, or broken) must not take the forkserver down with it — the task
that needs it will then fail on its own, with the error recorded.
"""

import importlib
import sys

#: Heavy or commonly needed modules, cheapest first. The solvers themselves
#: are not listed: every registered solver (built-in or from an entry point)
#: is loaded through the registry below, so adding one changes nothing here.
MODULES = (
    "numpy", "scipy.stats", "pandas", "pydantic", "networkx",
    "deplbench.instances.model", "deplbench.instances.generators",
    "deplbench.formulations.evaluation.evaluate", "deplbench.formulations.model.scenarios",
    "deplbench.formulations.exact.knapsack", "pyomo.environ", "highspy",
    "deplbench.formulations.milp", "deplbench.solvers.registry",
    "deplbench.benchmarks.tasks",
    # The task process's own entry point (executors._local_child): without
    # it every task would import it, and sweep_expand/validate with it, after
    # the fork, paying that import once per task instead of once per run.
    "deplbench.benchmarks.executors",
)


def _in_forkserver() -> bool:
    # The forkserver runs ``python -c "from multiprocessing.forkserver import
    # main; main(...)"``; never arm the death signal in any other importer.
    return "multiprocessing.forkserver" in sys.modules and sys.argv[:1] == ["-c"]


if _in_forkserver():
    from deplbench.benchmarks.tasks import set_parent_death_signal

    set_parent_death_signal()

for _name in MODULES:
    try:
        importlib.import_module(_name)
    except Exception:  # noqa: BLE001 - see the module docstring
        pass

# Every registered solver's module (available() loads each one).
try:
    importlib.import_module("deplbench.solvers.registry").available()
except Exception:  # noqa: BLE001 - see the module docstring
    pass

# Versions and the git commit, computed once here rather than in every task.
try:
    importlib.import_module("deplbench.benchmarks.tasks").static_environment()
except Exception:  # noqa: BLE001 - see the module docstring
    pass
