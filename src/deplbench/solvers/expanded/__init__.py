"""DepL's expanded graph (DepL paper Sec. IV-B) and its minimum-cost path to Ω.

Stage 2 of :mod:`deplbench.solvers.depl` (and of best-exp) reduces the model
and epoch decisions to a shortest path on this graph.

==================  ==============================================================
:mod:`.graph`       the entry point: ``build_spec``, ``solve_dp``, ``solve_dp_labels``
:mod:`.spec`        the graph as data: ``GraphSpec``, ``PathResult``, ``build_spec``
:mod:`.dp`          the layer-vectorised DAG dynamic programs
:mod:`.reference`   the reference (networkx) implementation and exact size counts
==================  ==============================================================
"""
