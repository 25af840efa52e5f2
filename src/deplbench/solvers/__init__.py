"""The algorithm layer: DepL, the exact references and the baselines behind one interface.

Public names (importable from :mod:`deplbench`, the contract):

=====================  ===============================================
``solve``              :func:`deplbench.solvers.run.solve`
``closed_loop``        :func:`deplbench.solvers.run.closed_loop`
``get_solver``         :func:`deplbench.solvers.registry.get_solver`
``solver_info``        :func:`deplbench.solvers.registry.solver_info`
``Solver``             :class:`deplbench.solvers.base.Solver`
=====================  ===============================================

Every algorithm is a :class:`~deplbench.solvers.base.Solver` subclass with
its parameters as data, registered by name in :mod:`.registry` (the
built-ins are listed in ``catalog.json``; ``deplbench algorithms`` prints
them) and run through :func:`~deplbench.solvers.run.solve`, which returns a
:class:`~deplbench.formulations.result.SolveResult`. ``docs/extending.md``
shows how to add one.
"""
