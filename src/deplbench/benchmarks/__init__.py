"""The benchmark layer: sweeps as data, executors, the results store.

Public names (importable from :mod:`deplbench`, the contract):

=====================  ===============================================
``load_sweep``         :func:`deplbench.benchmarks.sweep.load_sweep`
``Sweep``              :class:`deplbench.benchmarks.sweep_expand.Sweep`
``run_sweep``          :func:`deplbench.benchmarks.runner.run_sweep`
``ResultsStore``       :class:`deplbench.benchmarks.store.ResultsStore`
``LocalExecutor``      :class:`deplbench.benchmarks.executors.LocalExecutor`
``DaskExecutor``       :class:`deplbench.benchmarks.executors.DaskExecutor`
=====================  ===============================================

Modules: :mod:`.sweep` (read a TOML sweep file; the file format),
:mod:`.sweep_parse` (validate it), :mod:`.sweep_expand` (the sweep as data,
expanded into tasks with stable keys), :mod:`.runner` (run what the store
does not have yet), :mod:`.executors` (a local process pool or a Dask
cluster), :mod:`.store` (one SQLite row per task attempt), :mod:`.record`
(the row's columns), :mod:`.library` (the instance library and its model
files). ``docs/sweeps.md`` is the sweep-file reference.
"""
