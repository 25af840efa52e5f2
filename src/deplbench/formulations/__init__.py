"""The formulation layer: plans, their exact and out-of-sample evaluation, scenarios, MILP models.

Public names (importable from :mod:`deplbench`, the contract):

=====================  ===============================================
``Plan``               :class:`deplbench.formulations.model.plan.Plan`
``load_plan``          :func:`deplbench.formulations.model.plan.load_plan`
``evaluate_plan``      :func:`deplbench.formulations.evaluation.evaluate.evaluate_plan`
``Evaluation``         :class:`deplbench.formulations.evaluation.evaluate.Evaluation`
``SolveResult``        :class:`deplbench.formulations.model.result.SolveResult`
=====================  ===============================================

Sub-packages, in tiers (a module imports its own tier and the tiers below,
never one above; ``tests/test_architecture.py`` checks it):

======================  ==========================================================
:mod:`.model`           plans, the result record, scenarios (eq. (3)), the exact
                        real-x allocation, preprocessing, the last-block test
:mod:`.evaluation`      a plan judged exactly and out of sample, closed-loop
                        simulation, exact binomial and violation bounds
:mod:`.milp`            the SAA MILP of problem (2)–(6) and its formulations
:mod:`.general`         the direct branch-and-bound behind ``formulation="general"``
:mod:`.exact`           the true static optimum bracketed, the knapsack oracle
:mod:`.adaptive`        the adaptive optimum bracketed (the yardstick of closed loop)
======================  ==========================================================

``model`` is the lowest tier, then ``evaluation``, then ``milp`` and
``general``, then ``exact`` and ``adaptive``. One module stays at the top
of the layer, with the lowest tier: :mod:`.peer_lookup`, the table of MILP
solver names and an import-free look-up of which are installed. The MILP
package and the command line (``deplbench algorithms``) both read it; inside
:mod:`.milp` it would load numpy and scipy with that package's ``__init__``.

This package imports nothing on import, nor do ``model``, ``evaluation`` and
``exact``: import a name from the module that defines it, or a public name
from :mod:`deplbench`.
"""
