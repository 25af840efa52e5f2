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
:class:`~deplbench.formulations.model.result.SolveResult`. ``docs/extending.md``
shows how to add one.

Layout: the framework sits at the top (:mod:`.base`, :mod:`.registry`,
:mod:`.run`, :mod:`.catalog` and ``catalog.json``); each algorithm family is
a sub-package, whose ``__init__`` lists its modules:

=====================  ===============================================================
:mod:`.depl`           DepL, ``depl-proven``, ``depl-receding`` and DepL's three stages
:mod:`.expanded`       DepL's expanded graph (stage 2) and its minimum-cost path
:mod:`.pact`           PACT, static and closed-loop
:mod:`.baselines`      best-exp, StaticLearn, OneSwitch and what they share
:mod:`.certify`        ``milp-certified``: the certified bracket on the optimum
:mod:`.exact`          ``milp``, ``milp-exact``, ``brute-force``, ``knapsack-dp``
:mod:`.adaptive`       ``adaptive-opt``: the best closed-loop policy, bracketed
=====================  ===============================================================
"""
