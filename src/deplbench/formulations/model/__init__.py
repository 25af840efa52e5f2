"""The problem's shared pieces: plans, the result record, scenarios, allocation, preprocessing.

What every algorithm and every evaluation of problem (2)–(6) builds on, and
nothing above it in :mod:`deplbench.formulations` (the lowest tier: these
modules import no other sub-package of the layer).

Modules (import a name from its module; this package imports nothing, so
``import deplbench.formulations.model.plan`` stays cheap):

====================  ================================================================
:mod:`.plan`          the decisions of problem (2)–(6): :class:`~.plan.Plan`,
                      :class:`~.plan.Epoch`, :func:`~.plan.load_plan`,
                      :func:`~.plan.parse_plan`
:mod:`.result`        the one result record of every algorithm:
                      :class:`~.result.SolveResult`, :data:`~.result.STATUSES`
:mod:`.scenarios`     joint loss scenarios (eq. (3)) and their two seeded streams:
                      :class:`~.scenarios.ScenarioSampler`, :class:`~.scenarios.Scenarios`,
                      :func:`~.scenarios.quantile_rank`
:mod:`.allocation`    the exact real-x allocation for fixed choices (eqs. (1), (4), (5)):
                      :func:`~.allocation.allocate`, :func:`~.allocation.plan_from_choices`
:mod:`.preprocess`    removal of models, clusters and datasets no feasible plan can use:
                      :func:`~.preprocess.reduce_instance`
:mod:`.last_block`    the fewest epochs of a final block that make a partial plan
                      SAA-feasible, shared by :mod:`~deplbench.formulations.milp` and
                      :mod:`~deplbench.formulations.general`:
                      :func:`~.last_block.shortest_last_block`
====================  ================================================================

``Plan``, ``load_plan`` and ``SolveResult`` are public: import them from
:mod:`deplbench`.
"""
