"""The loss model of DepL eq. (8) measured on real training (docs/measured.md).

Modules, one job each:

:mod:`.network`
    The digits MLP, trained for many seeds at once, pruned with
    ``torch.nn.utils.prune.ln_structured`` (needs the optional extra
    ``measure``: PyTorch, scikit-learn).
:mod:`.experiment`
    The Sec. VI-A protocol (single-model and two-stage runs), the long CSV of
    ``deplbench fit`` and the provenance file (needs the extra).
:mod:`.analysis`
    Fig. 4 on logs, the alternative laws, the independence test, the refit
    (numpy/scipy only: works on the shipped logs without the extra).
:mod:`.replay`
    Plans of the measured family trained on held-out seeds, with
    Clopper–Pearson intervals (training needs the extra).

Nothing here is imported by the lower layers; the measured instance family
(:mod:`deplbench.instances.generators.measured`) reads only the shipped files.
"""
