"""Calibrate an instance's loss model from measured loss trajectories.

The DepL paper (Sec. VI-A, Fig. 4) obtains the loss law (8),
``l_run(m, k) = −A_m / sqrt(k + B_m) · X``, from real training runs in two
steps: (i) ``A_m`` and ``B_m`` by least squares with ``X`` fixed to 1, then
(ii) ``X_m`` by distribution fitting (inverse-gamma, judged by the
Kolmogorov–Smirnov p-value, Fig. 4 centre); the switch jump ``l_sw`` is fitted
by Student's t (Fig. 4 right). This module does the same on logs in the long
format documented in ``docs/fit.md``::

    run,epoch,model,loss
    r0,0,,9.81            # optional epoch-0 row: the initial loss ℓ(0)
    r0,1,alexnet-fast,9.12  # loss after epoch 1, which trained alexnet-fast
    ...

and writes an :class:`~deplbench.instances.model.Instance` whose models carry
the fitted ``loss_scale`` (A), ``loss_offset`` (B), ``decay="inv_sqrt"`` and
``improvement`` (inverse-gamma, or the empirical sample when KS rejects the
fit), and whose switches carry the fitted Student's t jumps. Everything the
logs do not determine (clusters, costs, datasets, targets, model size and
compute) comes from a base instance.

Public API
----------
``read_logs(path)``         parse and validate a log file → :class:`Logs`
``validate_logs(frame)``    the same checks on a pandas DataFrame
``loss_changes(logs)``      per-epoch loss changes → :class:`Changes`
``fit_decay(...)``          A_m, B_m by weighted least squares (eq. (8), X = 1)
``fit_inverse_gamma(x)``    maximum-likelihood inverse-gamma (shape, scale)
``fit_improvement(...)``    X_m: inverse-gamma + KS, empirical fallback
``fit_switch(...)``         l_sw: Student's t (deconvolved from the run term)
``fit_logs(logs, ...)``     all of the above → :class:`FitResult`
``build_instance(...)``     map a FitResult onto a base instance
``write_report_json``       the JSON summary of a fit report
``write_instance_atomic``   write the output file only once everything worked
``fit_instance(...)``       the whole pipeline behind ``deplbench fit``

The report's PNG figures (Fig. 4 style) are drawn one layer up, by
:func:`deplbench.reports.fit_plots.write_report`: the instance layer never
imports matplotlib.

Modules, one job each: :mod:`.logs` (reading and checking the logs, loss
changes), :mod:`.decay` (A_m, B_m), :mod:`.distfit` (X_m and l_sw with KS
tests), :mod:`.pipeline` (the whole fit and the instance it builds),
:mod:`.output` (atomic writes).
"""

from deplbench.instances.fit.decay import B_MAX, MIN_EPOCHS, DecayFit, fit_decay, multipliers
from deplbench.instances.fit.distfit import (
    SWITCH_NODES,
    DistFit,
    compress_samples,
    fit_improvement,
    fit_inverse_gamma,
    fit_switch,
)
from deplbench.instances.fit.logs import (
    REQUIRED_COLUMNS,
    Changes,
    LogError,
    Logs,
    loss_changes,
    read_logs,
    validate_logs,
)
from deplbench.instances.fit.output import (
    REPORT_JSON,
    report_directory,
    write_bytes_atomic,
    write_instance_atomic,
    write_report_json,
)
from deplbench.instances.fit.pipeline import FitResult, ModelFit, build_instance, family_base, fit_instance, fit_logs

__all__ = [
    "REQUIRED_COLUMNS", "MIN_EPOCHS", "SWITCH_NODES", "B_MAX", "REPORT_JSON",
    "LogError", "Logs", "Changes", "DecayFit", "DistFit", "ModelFit", "FitResult",
    "read_logs", "validate_logs", "loss_changes", "fit_decay", "multipliers", "fit_inverse_gamma",
    "fit_improvement", "fit_switch", "fit_logs", "family_base", "build_instance", "write_report_json",
    "write_instance_atomic", "write_bytes_atomic", "report_directory", "fit_instance", "compress_samples",
]
