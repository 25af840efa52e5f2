"""SCIP as a solver peer of HiGHS: the same matrix model, the same cut loop.

What is solved, and what is guaranteed
--------------------------------------
``solver="scip"`` hands a matrix formulation's model (counts, enumeration,
flow) to SCIP through pyscipopt (the ``[peers]`` extra): HiGHS writes the
model as MPS with the named rows and columns of :mod:`.matrix`, SCIP reads
it, and :func:`~.cutloop.cut_loop` drives it exactly as it drives HiGHS —
the master is re-solved with each exact λ cut added, every plan is re-costed
with ``allocate``, and ``optimal`` means (UB − LB)/UB ≤ gap with LB SCIP's
proven dual bound. So the exactness contract (package docstring) holds
whichever solver runs; tests check both give the brute-force optimum.

Between two rounds the transformed problem is freed (SCIP adds rows only to
the original problem) and the incumbent is passed back as a start.

References
----------
T. Achterberg, "SCIP: solving constraint integer programs", Math. Prog.
Comp. 1 (2009); the SCIP Optimization Suite 10.0 documentation.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np

from deplbench.formulations.milp.backends import HighsBackend, MasterOutcome, quiet_stdout
from deplbench.formulations.milp.matrix import MatrixModel


def scip_version() -> str | None:
    """``"pyscipopt X (SCIP Y)"`` or None when pyscipopt is not installed."""
    try:
        import importlib.metadata as md

        import pyscipopt
    except ImportError:
        return None
    with quiet_stdout():
        m = pyscipopt.Model()
        version = m.version()
        m.freeProb()
    return f"pyscipopt {md.version('pyscipopt')} (SCIP {version})"


class ScipBackend:
    """A :class:`MatrixModel` solved by SCIP (same interface as ``HighsBackend``)."""

    def __init__(self, mm: MatrixModel, threads: int, seed: int, verbose: bool = False):
        import pyscipopt

        self.pyscipopt = pyscipopt
        writer = HighsBackend(mm, threads, seed)          # the MPS route (names kept)
        fd, path = tempfile.mkstemp(suffix=".mps")
        os.close(fd)
        try:
            writer.write(path)
            with quiet_stdout():
                m = self.m = pyscipopt.Model()
                if not verbose:
                    m.hideOutput()
                m.readProblem(path)
        finally:
            os.unlink(path)
        self._nnz = int(mm.A.nnz)
        # SCIP orders its variables by type, so they are matched by name (the
        # names of MatrixModel.col_names are unique)
        by_name = {v.name: v for v in m.getVars()}
        names = mm.col_names()
        if len(by_name) != mm.ncol or any(n not in by_name for n in names):
            raise RuntimeError(f"SCIP read {len(by_name)} columns, the model has {mm.ncol}")
        self.vars = [by_name[n] for n in names]
        m.setIntParam("randomization/randomseedshift", int(seed) % (2**31 - 1))
        m.setIntParam("parallel/maxnthreads", int(threads))
        m.setRealParam("limits/absgap", 0.0)
        self.ncol = mm.ncol
        self._rows = mm.nrow
        self._start: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self._rows)

    @property
    def n_nonzeros(self) -> int:
        return self._nnz

    def write(self, path: str) -> None:
        with quiet_stdout():
            self.m.writeProblem(str(path), trans=False, verbose=False)

    def _to_problem_stage(self) -> None:
        if self.m.getStage() != 1:            # SCIP_STAGE_PROBLEM
            self.m.freeTransform()

    def add_cut(self, cols, vals, lo) -> None:
        self._to_problem_stage()
        expr = self.pyscipopt.quicksum(float(v) * self.vars[int(c)] for c, v in zip(cols, vals))
        self.m.addCons(expr >= float(lo), name=f"cut_loop_{self._rows}")
        self._rows += 1
        self._nnz += int(np.count_nonzero(vals))

    def set_start(self, x: np.ndarray) -> None:
        self._start = np.asarray(x, dtype=float)

    def solve(self, time_left: float, rel_gap: float, node_limit: int | None = None) -> MasterOutcome:
        m = self.m
        self._to_problem_stage()
        m.setRealParam("limits/time", max(float(time_left), 1e-3) if math.isfinite(time_left) else 1e20)
        m.setRealParam("limits/gap", float(rel_gap))
        m.setLongintParam("limits/nodes", int(node_limit) if node_limit is not None else -1)
        if rel_gap < 1e-6:
            # SCIP's default feasibility tolerance (1e-6) would keep θ that far
            # below its cut; tighten it to what the gap needs
            m.setRealParam("numerics/feastol", max(1e-9, float(rel_gap)))
        if self._start is not None:
            sol = m.createSol()
            for v, val in zip(self.vars, self._start):
                m.setSolVal(sol, v, float(val))
            m.addSol(sol, free=True)
            self._start = None
        with quiet_stdout():
            m.optimize()
        st = m.getStatus()
        nodes = int(m.getNNodes())
        iters = int(m.getNLPIterations())
        x = None
        obj = math.inf
        if m.getNSols() > 0:
            best = m.getBestSol()
            x = np.array([m.getSolVal(best, v) for v in self.vars], dtype=float)
            obj = float(m.getSolObjVal(best))
        bound = float(m.getDualbound())
        if st in ("optimal", "gaplimit"):
            return MasterOutcome("optimal", x, obj, bound, nodes, iters)
        if st == "infeasible":
            return MasterOutcome("infeasible", None, math.inf, math.inf, nodes, iters)
        if st in ("timelimit", "userinterrupt"):
            return MasterOutcome("time_limit", x, obj, bound, nodes, iters)
        if st in ("nodelimit", "totalnodelimit", "stallnodelimit"):
            return MasterOutcome("node_limit", x, obj, bound, nodes, iters)
        return MasterOutcome("error", x, obj, bound, nodes, iters, message=f"SCIP stopped with status {st!r}")


__all__ = ["ScipBackend", "scip_version"]
