"""Routes: the backend for one built formulation (HiGHS, Pyomo, SCIP or a
Pyomo ``SolverFactory`` peer).

One job: map (model, ``backend``, ``solver``) to a backend object of
:mod:`.backends`, :mod:`.scip` or :mod:`.pyomo_peer`. It sits above all
three so that none of them imports another back (the peers build on
:mod:`.backends`); nothing here solves or checks names (:mod:`.peers` does).
"""

from __future__ import annotations

from deplbench.formulations.milp.backends import HighsBackend, PyomoBackend, pyomo_from_matrix
from deplbench.formulations.milp.pyomo_peer import PyomoPeerBackend
from deplbench.formulations.milp.scip import ScipBackend


def make_backend(model, backend: str, threads: int, seed: int, verbose: bool = False, solver: str = "highs"):
    """The backend for one built formulation.

    A model with ``mm`` (a :class:`MatrixModel`) goes to highspy directly
    (``backend="highs"``), through Pyomo (``backend="pyomo"``) or to SCIP
    (``solver="scip"``, see :mod:`.scip`); a model with ``pyomo_model`` and
    ``xvars`` (the naive one) through Pyomo to HiGHS. ``solver="pyomo:NAME"``
    sends either kind to Pyomo's ``SolverFactory(NAME)`` (:mod:`.pyomo_peer`;
    names and availability in :mod:`.peers`).
    Returns (backend object, name of the route actually used).
    """
    mm = getattr(model, "mm", None)
    if solver.startswith("pyomo:"):
        return PyomoPeerBackend.from_model(solver, model, threads, seed, verbose), solver
    if solver == "scip":
        if mm is None:
            raise ValueError("solver 'scip' needs a matrix formulation")
        return ScipBackend(mm, threads, seed, verbose), "scip"
    if mm is not None:
        if backend == "highs":
            return HighsBackend(mm, threads, seed, verbose, getattr(model, "highs_options", None)), "highs"
        pm, xs = pyomo_from_matrix(mm)
        return PyomoBackend(pm, xs, threads, seed, verbose), "pyomo"
    return PyomoBackend(model.pyomo_model, model.xvars, threads, seed, verbose), "pyomo"


__all__ = ["make_backend"]
