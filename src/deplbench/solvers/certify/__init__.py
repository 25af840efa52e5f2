"""The certified bracket: LB ≤ z* ≤ UB on the optimum of the chance-constrained problem (2)–(6).

=================  =================================================================
:mod:`.certified`  ``milp-certified`` and :func:`~deplbench.solvers.certify.certified.certify`
                   (:class:`~deplbench.solvers.certify.certified.MilpCertified`)
:mod:`.settings`   its defaults, ``Param`` table and frozen
                   :class:`~deplbench.solvers.certify.settings.CertifySettings`
:mod:`.refine`     the stages: SAA solves, the order-statistic LB, tests on fresh draws
:mod:`.tasks`      the units of work and their executors (picklable, JSON-ready results)
=================  =================================================================

``deplbench certify`` and ``docs/certify.md`` use it.
"""
