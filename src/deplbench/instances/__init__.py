"""The instance layer: the instance model, its JSON format, distributions, generators.

Public names (importable from :mod:`deplbench`, the contract):

=====================  ===============================================
``generate``           :func:`deplbench.instances.generators.generate`
``load_instance``      :func:`deplbench.instances.model.load_instance`
``Instance``           :class:`deplbench.instances.model.Instance`
=====================  ===============================================

Modules: :mod:`.model` (the instance model, DepL Sec. III, and its JSON
format), :mod:`.distributions` (laws of the random loss terms),
:mod:`.datalaw` (how the data a cluster holds changes learning),
:mod:`.generators` (seeded instance families), :mod:`.fit` (the loss model
fitted to training logs, DepL Sec. VI-A). ``docs/instances.md`` documents
the format.
"""
