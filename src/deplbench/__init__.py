"""deplbench — a benchmark suite for dependable distributed training of
compressed ML models (Malandrino et al., "Dependable Distributed Training of
Compressed Machine Learning Models", the DepL paper).

The layers are installed as sub-packages (see ``docs/DESIGN.md``)::

    deplbench.instances     instance model, JSON format, distributions, generators
    deplbench.formulations  plans, exact evaluation, scenarios, allocation, MILP
    deplbench.solvers    DepL and the baselines behind one solver interface
    deplbench.benchmarks    sweeps, executors, results store, pytest-benchmark suites
    deplbench.reports       HTML/CSV/Markdown reports and the claims audit
"""

__version__ = "0.1.0"
