"""The papers' baselines: best-exp (DepL paper Sec. VI-B), StaticLearn and OneSwitch (PACT paper).

================  ===============================================================
:mod:`.best_exp`  ``best-exp``: :class:`~deplbench.solvers.baselines.best_exp.BestExp`
                  (DepL's stages driven by the expected loss, then trained on)
:mod:`.static`    ``static-learn`` and ``one-switch``:
                  :class:`~deplbench.solvers.baselines.static.StaticLearn`,
                  :class:`~deplbench.solvers.baselines.static.OneSwitch`
:mod:`.common`    what the PACT-family baselines share: data settings, exact plan
                  costs, the SAA quantile, the out-of-sample check
:mod:`.train_on`  "train on until the quantile target is met", the one implementation
================  ===============================================================
"""
