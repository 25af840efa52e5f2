"""Static reports built from a results store (``deplbench report``).

The layer reads only :meth:`deplbench.benchmarks.store.ResultsStore.frame`
(the columns of :class:`deplbench.benchmarks.record.TaskRecord`) and,
optionally, pytest-benchmark JSON files; it never imports the solver
registry (an algorithm's label, exactness and style are record columns).
:func:`deplbench.reports.build.build_report` writes a self-contained directory: ``index.html``, ``figures/*.png|svg``,
``tables/*.csv|md`` and ``manifest.json``. What each section computes, and
which store keys it expects, is documented in ``docs/reports.md``.

Public name (importable from :mod:`deplbench`, the contract): ``build_report``
(:func:`deplbench.reports.build.build_report`).
"""

__all__ = ["build_report"]


def build_report(*args, **kwargs):
    """Build a report; see :func:`deplbench.reports.build.build_report`.

    Imported lazily so that ``import deplbench.reports`` does not pull in
    matplotlib (the CLI imports every layer to register its sub-commands).
    """
    from deplbench.reports.build import build_report as _build

    return _build(*args, **kwargs)
