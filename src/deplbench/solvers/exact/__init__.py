"""The exact references: the MILP, the exact static optimum, exhaustive search and the knapsack DP.

Each is a thin registered solver around a model in :mod:`deplbench.formulations`.

==================  ===================================================================
:mod:`.milp`        ``milp``: the SAA MILP (:class:`~deplbench.solvers.exact.milp.Milp`)
:mod:`.milp_exact`  ``milp-exact``: the true chance-constrained optimum over static plans
                    (:class:`~deplbench.solvers.exact.milp_exact.MilpExact`)
:mod:`.brute_force` ``brute-force``: every plan of a tiny instance
                    (:class:`~deplbench.solvers.exact.brute_force.BruteForce`)
:mod:`.knapsack_dp` ``knapsack-dp``: the covering-knapsack DP
                    (:class:`~deplbench.solvers.exact.knapsack_dp.KnapsackDP`)
==================  ===================================================================
"""
