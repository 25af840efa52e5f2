"""The formulation layer: plans, their exact and out-of-sample evaluation, scenarios, MILP models.

Public names (importable from :mod:`deplbench`, the contract):

=====================  ===============================================
``Plan``               :class:`deplbench.formulations.plan.Plan`
``load_plan``          :func:`deplbench.formulations.plan.load_plan`
``evaluate_plan``      :func:`deplbench.formulations.evaluate.evaluate_plan`
``Evaluation``         :class:`deplbench.formulations.evaluate.Evaluation`
``SolveResult``        :class:`deplbench.formulations.result.SolveResult`
=====================  ===============================================

Modules: :mod:`.plan` (the decisions of problem (2)–(6)), :mod:`.evaluate`
(objective (2), constraints (4)–(6), the out-of-sample loss quantile with
its interval), :mod:`.result` (the one result record of every algorithm),
:mod:`.scenarios` (joint loss scenarios, eq. (3)), :mod:`.milp`,
:mod:`.general` and :mod:`.adaptive` (the exact references), and the
helpers they share (allocation, bounds, closed-loop simulation).
"""
