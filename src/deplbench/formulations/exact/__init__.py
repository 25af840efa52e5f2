"""Exact references beside the MILP: the true static optimum bracketed, and the knapsack oracle.

The top tier of :mod:`deplbench.formulations` with
:mod:`~deplbench.formulations.adaptive`: these modules build on the
sequence enumeration of :mod:`deplbench.formulations.milp` and the bounds
of :mod:`deplbench.formulations.evaluation`. The registered solvers around
them are in :mod:`deplbench.solvers.exact`.

Modules (import a name from its module; this package imports nothing):

================  ====================================================================
:mod:`.static`    the optimum of the true chance-constrained problem over static plans,
                  bracketed deterministically (``milp-exact``):
                  :func:`~.static.solve_exact_static`, :func:`~.static.exact_static_applies`
:mod:`.lattice`   its scan: every loss term discretised once as spectra, each prefix's
                  last block judged (also ``depl-proven``'s verdicts):
                  :class:`~.lattice.SpectralLattice`, :func:`~.lattice.enumerate_exact`
:mod:`.knapsack`  the exact optimum of knapsack-derived instances (DepL Property 1, run
                  forwards; ``knapsack-dp``): :func:`~.knapsack.knapsack_optimum_from_instance`,
                  :func:`~.knapsack.covering_dp`
================  ====================================================================
"""
