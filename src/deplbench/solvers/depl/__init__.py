"""The DepL family: the DepL heuristic (DepL paper Sec. IV, Fig. 3) and its variants.

Modules (import a name from its module; this package imports nothing, so
listing the algorithms stays cheap):

=========================  ===============================================================
:mod:`.depl`               ``depl``: :class:`~deplbench.solvers.depl.depl.DepL`
:mod:`.proven`             ``depl-proven``: DepL's plan with an exact proof
                           (:class:`~deplbench.solvers.depl.proven.DepLProven`)
:mod:`.receding`           ``depl-receding``: DepL re-planned from the observed state
                           (:class:`~deplbench.solvers.depl.receding.DepLReceding`)
:mod:`.stages`             the three stages and the decision loop, shared with best-exp
:mod:`.calibration`        the optional calibration of the stage-2 target
:mod:`.dataset_selection`  stage 1: dataset selection (Sec. IV-A)
:mod:`.quantile_transform` stage 2's additive surrogates of the loss quantile
:mod:`.vnf_allocation`     stage 3: cluster selection and allocation, a (1+ε) scheme
=========================  ===============================================================

Stage 2's expanded graph and its minimum-cost path are in
:mod:`deplbench.solvers.expanded`.
"""
