"""The adaptive yardstick: the best closed-loop policy, bracketed.

=================  ==================================================================
:mod:`.optimum`    ``adaptive-opt``: :class:`~deplbench.solvers.adaptive.optimum.AdaptiveOpt`
=================  ==================================================================

The model is :mod:`deplbench.formulations.adaptive`; ``deplbench adaptive``
and ``docs/adaptive.md`` use it.
"""
