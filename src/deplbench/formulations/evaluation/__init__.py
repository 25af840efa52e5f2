"""Judging plans and policies: objective (2), constraints (4)–(6), and the quantile constraint (3).

Every plan from every algorithm is judged here, out of sample, and every
closed-loop policy is simulated here; the exact binomial bounds behind the
certified statements and the rigorous violation bounds of a static plan live
beside them. These modules import only :mod:`deplbench.formulations.model`
within the layer.

Modules (import a name from its module; this package imports nothing):

=======================  ================================================================
:mod:`.evaluate`         a plan's exact cost and constraints and its out-of-sample loss
                         quantile with a distribution-free interval:
                         :func:`~.evaluate.evaluate_plan`, :class:`~.evaluate.Evaluation`
:mod:`.closed_loop`      a policy judged as it runs, epoch by epoch, on seeded runs:
                         :class:`~.closed_loop.ClosedLoopPolicy`,
                         :func:`~.closed_loop.simulate`, :class:`~.closed_loop.ClosedLoopResult`
:mod:`.binomial`         exact binomial (Clopper–Pearson, order-statistic) bounds:
                         :func:`~.binomial.clopper_pearson_upper`,
                         :func:`~.binomial.clopper_pearson_lower`,
                         :func:`~.binomial.violation_verdict`
:mod:`.exact_violation`  rigorous bounds on a static plan's violation probability and
                         ω-quantile, no sampling: :func:`~.exact_violation.violation_bounds`,
                         :func:`~.exact_violation.plan_violation_bounds`,
                         :class:`~.exact_violation.ExactSettings`
:mod:`.means`            whether E[ℓ(k)] exists: :func:`~.means.law_without_mean` names
                         the first law without a finite mean
:mod:`.settings`         the limits and defaults of runs, seed, confidence and samples,
                         checked in one place by every front:
                         :func:`~.settings.check_closed_loop`, :func:`~.settings.check_samples`
=======================  ================================================================

``evaluate_plan`` and ``Evaluation`` are public: import them from
:mod:`deplbench`.
"""
