"""PACT (Performance-Aware Compression and Training), adapted to the DepL problem.

==============  ==============================================================
:mod:`.pact`    ``pact``: :class:`~deplbench.solvers.pact.pact.Pact`
:mod:`.graph`   PACT's expanded graph (PACT Sec. V, Algs. 1–2) for one dataset set
:mod:`.policy`  PACT as its paper runs it: one action per epoch, re-planned (closed loop)
==============  ==============================================================

What PACT shares with the static baselines is in
:mod:`deplbench.solvers.baselines.common`.
"""
