"""The full SAA model of problem (2)–(6) as a file: exact MINLP and its tangent-grid MILP.

What is built
-------------
:func:`build_saa_model` builds the discrete part exactly as the first master
of :func:`~deplbench.formulations.milp.solve_milp` does (same formulation,
same S in-sample scenarios of ``ScenarioSampler(instance, seed)``, same
exact reductions: unusable and dominated configurations, configurations
dearer than the deterministic block-heuristic incumbent, dominated
sequences) and replaces the λ-cut outer approximation of the compute cost
F(N) (package docstring) by the cost itself. Per usable configuration
j = (model, cluster, data class) with counts N_j, compute need c_j, capacity
r_j, unit cost κ_j and communication time comm_j, two continuous columns:
t_j (total compute time of the N_j epochs) and cc_j (their compute cost):

    time          Σ_j t_j + Σ_j comm_j N_j ≤ Tmax               (eq. (4))
    speed_j       t_j ≥ (c_j / r_j) N_j                           (x ≤ r, eq. (5))
    cone_j        a_j N_j² ≤ cc_j · t_j,   a_j = κ_j c_j           (rotated second-order cone)
    compute_cost  θ ≥ Σ_j cc_j,                 objective  θ + transfer cost.

Why this is the SAA problem exactly: with the N_j epochs of j at one
allocation x_j (optimal, as the package docstring shows), each takes
c_j/x_j + comm_j and costs κ_j x_j; writing t_j = c_j N_j / x_j, the
compute cost is κ_j c_j N_j² / t_j and x_j ≤ r_j reads t_j ≥ c_j N_j / r_j.
Minimising over t gives F(N), so the model's optimum is the real-x SAA
optimum (the reductions keep an optimal plan; every plan the model admits
is SAA-feasible). The cone rows are convex (N² ≤ cc·t with cc, t ≥ 0), so
the model is a convex MINLP (MIQCP): written as ``.nl`` and ``.gms`` by
Pyomo's writers (:func:`write_minlp`).

The piecewise-linear MILP and its tolerance
-------------------------------------------
:func:`write_pwl_mps` replaces each cone row by tangent planes of the
perspective f_j(N, t) = a_j N²/t at the rays ρ = N/t of a geometric grid
ρ_hi = r_j/c_j, ρ_hi/q, ρ_hi/q², … down to ρ_lo = 1/(Tmax − comm_j):

    tangent_j_i   cc_j ≥ a_j (2 ρ_i N_j − ρ_i² t_j).

*Proof that the PWL optimum z_pwl satisfies (1 − ε) z* ≤ z_pwl ≤ z*,*
z* the SAA optimum, ε = ((q − 1)/(q + 1))². Each tangent plane of the
convex f_j lies below it (f_j − plane = a_j t (ρ* − ρ_i)² ≥ 0 with
ρ* = N/t), so every point of the MINLP is a point of the PWL model with an
objective no larger: z_pwl ≤ z*. Conversely, at any integer point with
N_j ≥ 1 the ray ρ* lies in [ρ_lo, ρ_hi] (t_j ≥ c_j N_j / r_j; t_j ≤ Tmax −
comm_j N_j), between two grid points ρ_{i+1} ≤ ρ* ≤ ρ_i = q ρ_{i+1}, and
the better of their planes is below f_j by at most
max_u min((1 − 1/u)², (1 − q/u)²) · f_j = ε f_j (u = ρ*/ρ_{i+1} ∈ [1, q],
worst at u = (1 + q)/2); with N_j = 0, f_j = 0 and cc_j ≥ 0 is exact.
Costs are non-negative, so the PWL objective of every point is at least
(1 − ε) times its MINLP objective, and z_pwl ≥ (1 − ε) z*. The grid ratio
is chosen from ε: q = (1 + √ε)/(1 − √ε) (:data:`PWL_TOLERANCE` = 1e-4 gives
q ≈ 1.0202). Solvers' own feasibility tolerances (1e-6 on rows) move an
optimum by about that much more.

References
----------
DepL paper eqs. (1)–(6); docs/DESIGN.md ("Model semantics"); M. Lubin,
E. Yamangil, R. Bent, J. P. Vielma, "Polyhedral approximation in
mixed-integer convex optimization", Math. Prog. 172 (2018) (tangent
outer approximations of second-order cones).
"""

from __future__ import annotations

import gzip
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from deplbench.formulations.milp import catalog
from deplbench.formulations.milp.backends import quiet_stdout
from deplbench.formulations.milp.bounds import structural_bounds
from deplbench.formulations.milp.data import Data
from deplbench.formulations.milp.options import MAX_DATASETS, MEMORY_LIMIT_GIB, Verdict

#: Relative tolerance ε of the piecewise-linear MILP (module docstring).
PWL_TOLERANCE = 1e-4


class NoSaaModel(Exception):
    """No matrix model covers the instance (``reason`` says why; ``status``
    is ``"infeasible"`` when the SAA problem has no plan at all)."""

    def __init__(self, reason: str, status: str = "not covered"):
        super().__init__(reason)
        self.reason, self.status = reason, status


def pwl_ratio(tolerance: float) -> float:
    """Grid ratio q whose tangent planes are within relative ``tolerance``:
    q = (1 + √ε)/(1 − √ε) (module docstring)."""
    s = math.sqrt(float(tolerance))
    return (1.0 + s) / (1.0 - s)


@dataclass
class SaaModel:
    """The full SAA model (module docstring) as arrays.

    Attributes
    ----------
    col_names, lb, ub, integer, cost
        Columns: the formulation's (N, q, θ, sequences, flow, violations)
        then t_j and cc_j per usable configuration.
    A, row_lo, row_hi, row_names
        Linear rows shared by both models (λ cuts of the master removed).
    cone : dict of arrays
        ``n``, ``cost``, ``time`` (column indices), ``a`` (coefficient) and
        ``name`` of each cone row a·N² ≤ cc·t; ``rho_lo``, ``rho_hi`` the
        tangent range of the PWL model.
    formulation : object
        The built formulation (``choice_from_solution`` decodes a plan).
    """

    data: Data
    formulation: Any
    variant: str
    col_names: list
    lb: np.ndarray
    ub: np.ndarray
    integer: np.ndarray
    cost: np.ndarray
    A: sp.csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    row_names: list
    cone: dict = field(default_factory=dict)
    pwl_tolerance: float = PWL_TOLERANCE

    @property
    def n_master_cols(self) -> int:
        """Columns of the formulation's master (those a plan is decoded from)."""
        return int(self.formulation.mm.ncol)

    def tangent_rows(self):
        """(A, lo, hi, names) of the PWL model's tangent rows (module docstring)."""
        q = pwl_ratio(self.pwl_tolerance)
        r, c, v, names = [], [], [], []
        row = 0
        cone = self.cone
        for k in range(cone["a"].size):
            a, hi, lo = float(cone["a"][k]), float(cone["rho_hi"][k]), float(cone["rho_lo"][k])
            n = 1 if hi <= lo else math.ceil(math.log(hi / lo) / math.log(q)) + 1
            rho = hi * q ** -np.arange(n, dtype=float)
            # cc − 2aρ N + aρ² t ≥ 0
            r.append(np.repeat(np.arange(row, row + n), 3))
            c.append(np.tile([cone["cost"][k], cone["n"][k], cone["time"][k]], n))
            v.append(np.column_stack([np.ones(n), -2.0 * a * rho, a * rho * rho]).ravel())
            names += [f"tangent_{cone['name'][k]}_{i}" for i in range(n)]
            row += n
        ncol = len(self.col_names)
        if not row:
            return sp.csr_matrix((0, ncol)), np.zeros(0), np.zeros(0), []
        A = sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(row, ncol))
        return A, np.zeros(row), np.full(row, np.inf), names

    def pwl_rows(self):
        """(A, lo, hi, names) of every linear row of the PWL MILP."""
        At, lo, hi, names = self.tangent_rows()
        return (sp.vstack([self.A, At]).tocsr(), np.concatenate([self.row_lo, lo]),
                np.concatenate([self.row_hi, hi]), list(self.row_names) + names)


def build_saa_model(instance, scenarios: int, seed: int = 0, formulation: str = "fast",
                    pwl_tolerance: float = PWL_TOLERANCE) -> SaaModel:
    """The full SAA model of ``instance`` (module docstring).

    Deterministic: no wall-clock limit anywhere (the block heuristic whose
    incumbent prunes dear configurations runs to its end), so the model
    depends only on the instance, S, the seed and the code.

    Raises
    ------
    NoSaaModel
        When no matrix formulation covers the instance (|D| above
        MAX_DATASETS, a formulation that declines) or the SAA problem is
        infeasible (``status="infeasible"``).
    """
    if instance.n_datasets > MAX_DATASETS:
        raise NoSaaModel(f"|D| = {instance.n_datasets} datasets exceed the matrix models' limit of "
                         f"{MAX_DATASETS} (each cluster's dataset subset is enumerated)")
    data = Data(instance, scenarios, seed)
    rows, why = catalog.candidates(formulation, data)
    if not rows:
        raise NoSaaModel(why)
    want = rows[0].incumbent or data.badly_scaled()
    bounds = structural_bounds(data, tight=want, bigm=False,
                                heuristic_budget=math.inf if want else 0.0)
    if bounds.infeasible:
        raise NoSaaModel(bounds.infeasible, "infeasible")
    if bounds.incumbent is not None:
        data.prune_dearer_than(bounds.incumbent.cost)
    ctx = catalog.BuildContext(data, bounds, MEMORY_LIMIT_GIB * 2**30)
    for spec in rows:
        model = spec.build(ctx)
        if isinstance(model, Verdict):
            raise NoSaaModel(model.message, model.status)
        if model is not None and getattr(model, "mm", None) is not None:
            return _assemble(data, model, spec.name, float(pwl_tolerance))
    raise NoSaaModel("no matrix formulation could be built (every candidate declined)")


def _assemble(data: Data, model, variant: str, tol: float) -> SaaModel:
    """Master columns and rows without the λ cuts, plus the cost block."""
    mm = model.mm
    keep = np.ones(mm.nrow, dtype=bool)
    for name, start, n, _labels in mm._row_names:
        if name == "cut":                         # the master's λ-cut grid
            keep[start:start + n] = False
    A = mm.A.tocsr()[keep]
    names = [nm for nm, k in zip(mm.row_names(), keep) if k]
    cols = mm.col_names()
    j = np.flatnonzero(data.usable.ravel())
    nN = model.N.ravel()[j]
    labels = [cols[i].removeprefix("N_") for i in nN]
    c, comm = data.c.ravel()[j], data.comm.ravel()[j]
    kap, cap = data.kap.ravel()[j], data.cap.ravel()[j]
    base, m = mm.ncol, j.size
    t_col, cc_col = base + np.arange(m), base + m + np.arange(m)
    cols = cols + [f"t_{lab}" for lab in labels] + [f"cc_{lab}" for lab in labels]
    lb = np.concatenate([mm.lb, np.zeros(2 * m)])
    ub = np.concatenate([mm.ub, np.full(2 * m, np.inf)])
    integer = np.concatenate([mm.integer, np.zeros(2 * m, dtype=bool)])
    cost = np.concatenate([mm.cost, np.zeros(2 * m)])
    ncol = base + 2 * m
    # time: Σ t + Σ comm N ≤ T; speed_j: t_j − (c/r) N_j ≥ 0; compute: θ − Σ cc ≥ 0
    r_ = [np.zeros(2 * m), 1 + np.repeat(np.arange(m), 2), np.full(m + 1, 1 + m)]
    c_ = [np.concatenate([t_col, nN]), np.column_stack([t_col, nN]).ravel(),
          np.concatenate([[model.theta], cc_col])]
    v_ = [np.concatenate([np.ones(m), comm]), np.column_stack([np.ones(m), -c / cap]).ravel(),
          np.concatenate([[1.0], -np.ones(m)])]
    extra = sp.csr_matrix((np.concatenate(v_), (np.concatenate(r_), np.concatenate(c_))), shape=(m + 2, ncol))
    A = sp.vstack([sp.hstack([A, sp.csr_matrix((A.shape[0], 2 * m))]), extra]).tocsr()
    A.eliminate_zeros()
    row_lo = np.concatenate([mm.row_lo[keep], [-np.inf], np.zeros(m), [0.0]])
    row_hi = np.concatenate([mm.row_hi[keep], [data.T], np.full(m, np.inf), [np.inf]])
    names = names + ["time"] + [f"speed_{lab}" for lab in labels] + ["compute_cost"]
    a = kap * c
    on = a > 0                                   # κ = 0 or c = 0: the epochs cost nothing
    with np.errstate(divide="ignore"):
        rho_hi = np.where(c > 0, cap / np.where(c > 0, c, 1.0), np.inf)
        # N_j ≥ 1 epochs fit only if t_j/N_j ≤ Tmax − comm_j; a configuration
        # admitted within the 1e-9 slack of `usable` with no room left runs at x = r
        room = data.T - comm
        rho_lo = np.where(room > 0, 1.0 / np.where(room > 0, room, 1.0), rho_hi)
        rho_lo = np.minimum(rho_lo, rho_hi)
    cone = {"n": nN[on], "cost": cc_col[on], "time": t_col[on], "a": a[on],
            "name": [lab for lab, o in zip(labels, on) if o], "rho_hi": rho_hi[on], "rho_lo": rho_lo[on]}
    return SaaModel(data, model, variant, cols, lb, ub, integer, cost, A, row_lo, row_hi, names, cone, tol)


def model_digest(model: SaaModel) -> str:
    """SHA-256 of the model's arrays, names and tolerance: the fingerprint
    ``deplbench library verify`` compares with the manifest before it judges
    a solution against a rebuilt model."""
    import hashlib

    h = hashlib.sha256()
    for arr in (model.lb, model.ub, model.integer.astype(np.int8), model.cost, model.A.indptr, model.A.indices,
                model.A.data, model.row_lo, model.row_hi, model.cone["n"], model.cone["cost"],
                model.cone["time"], model.cone["a"], model.cone["rho_lo"], model.cone["rho_hi"]):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update("\n".join(model.col_names + model.row_names).encode())
    h.update(repr(float(model.pwl_tolerance)).encode())
    return h.hexdigest()


# ----------------------------------------------------------------- writers
def _gzip_to(src: str, dst: str) -> None:
    """Compress ``src`` into ``dst`` deterministically (no name, mtime 0)."""
    with open(src, "rb") as fin, open(dst, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fout:
        shutil.copyfileobj(fin, fout)


def _write_maybe_gz(path: str, write_plain) -> None:
    """``write_plain(p)`` writes an uncompressed file; gzip it when ``path`` ends in ``.gz``."""
    path = str(path)
    if not path.endswith(".gz"):
        write_plain(path)
        return
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, os.path.basename(path[:-3]))
        write_plain(plain)
        _gzip_to(plain, path)


def write_pwl_mps(model: SaaModel, path: str) -> tuple[int, int, int]:
    """Write the PWL MILP (free MPS, named; gzip when ``path`` ends in ``.gz``).

    Returns (rows, columns, non-zeros).
    """
    import highspy

    A, lo, hi, names = model.pwl_rows()
    Ac = A.tocsc()
    with quiet_stdout(discard=True):    # the banner: no solver log is asked for (output_flag off)
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(model.col_names), A.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = model.cost, model.lb, model.ub
    lp.row_lower_, lp.row_upper_ = lo, hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Ac.indptr.astype(np.int32)
    lp.a_matrix_.index_ = Ac.indices.astype(np.int32)
    lp.a_matrix_.value_ = Ac.data
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in model.integer]
    lp.col_names_, lp.row_names_ = list(model.col_names), list(names)
    with quiet_stdout():
        h.passModel(lp)
        _write_maybe_gz(path, h.writeModel)
    return int(A.shape[0]), len(model.col_names), int(A.nnz)


def _identifier(name: str) -> str:
    """A name GAMS and AMPL accept (letters, digits, ``_``; a letter first)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s[:1].isalpha() else f"x_{s}"


def minlp_column_names(col_names: list) -> list:
    """The MINLP files' column names: :func:`_identifier` of each column name,
    made unique in column order (``_2``, ``_3``, ...). Rows are named after
    the columns, so a row never takes a column's name."""
    out, seen = [], set()
    for name in col_names:
        base, k = _identifier(name), 1
        cand = base
        while cand in seen:
            k += 1
            cand = f"{base}_{k}"
        seen.add(cand)
        out.append(cand)
    return out


def pyomo_model(model: SaaModel, kind: str = "minlp"):
    """The exact MINLP (linear rows and cone rows; ``kind="minlp"``) or the
    PWL MILP (linear and tangent rows; ``kind="pwl"``) as a Pyomo model with
    one named component per column and per row; returns (model, columns)."""
    import pyomo.environ as pe
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pe.ConcreteModel(name="deplbench_saa")
    xs = []
    cols = minlp_column_names(model.col_names)
    seen = set(cols)

    def unique(name):
        base, k = _identifier(name), 1
        out = base
        while out in seen or hasattr(m, out):
            k += 1
            out = f"{base}_{k}"
        seen.add(out)
        return out

    for i, name in enumerate(cols):
        lo = float(model.lb[i]) if math.isfinite(model.lb[i]) else None
        hi = float(model.ub[i]) if math.isfinite(model.ub[i]) else None
        var = pe.Var(domain=pe.Integers if model.integer[i] else pe.Reals, bounds=(lo, hi))
        m.add_component(name, var)
        xs.append(var)
    nz = np.flatnonzero(model.cost)
    m.add_component(unique("objective"), pe.Objective(expr=LinearExpression(
        constant=0.0, linear_coefs=model.cost[nz].tolist(), linear_vars=[xs[i] for i in nz]), sense=pe.minimize))
    A, row_lo, row_hi, names = (model.pwl_rows() if kind == "pwl" else
                                (model.A, model.row_lo, model.row_hi, model.row_names))
    for r in range(A.shape[0]):
        a, b = A.indptr[r], A.indptr[r + 1]
        expr = LinearExpression(constant=0.0, linear_coefs=A.data[a:b].tolist(),
                                linear_vars=[xs[i] for i in A.indices[a:b]])
        lo, hi = row_lo[r], row_hi[r]
        m.add_component(unique(names[r]), pe.Constraint(
            expr=(float(lo) if math.isfinite(lo) else None, expr, float(hi) if math.isfinite(hi) else None)))
    cone = model.cone
    for k in range(cone["a"].size if kind == "minlp" else 0):
        N, cc, t = xs[cone["n"][k]], xs[cone["cost"][k]], xs[cone["time"][k]]
        m.add_component(unique(f"cone_{cone['name'][k]}"),
                        pe.Constraint(expr=float(cone["a"][k]) * N ** 2 - cc * t <= 0))
    return m, xs


#: Pyomo solver families that solve convex quadratic (cone) rows.
QUADRATIC_FAMILIES = ("gurobi", "cplex", "scip")


def solve_with_pyomo(model: SaaModel, kind: str, solver: str, time_limit: float, gap: float) -> dict:
    """Solve the ``kind`` model with ``solver`` = ``"pyomo:NAME"`` through
    Pyomo's SolverFactory (options, bounds and statuses as for the MILP's
    Pyomo peers, :mod:`.pyomo_peer`).

    Returns
    -------
    dict
        ``status`` (optimal, infeasible, time_limit, error), ``primal``,
        ``dual`` (the solver's reported bound, None when it gives none),
        ``seconds``, ``nodes``, ``message``.
    """
    import time

    from deplbench.formulations.milp.pyomo_peer import PyomoPeerBackend

    pm, xs = pyomo_model(model, kind)
    be = PyomoPeerBackend(solver, pm, xs, 1, 0)
    t0 = time.perf_counter()
    out = be.solve(float(time_limit), float(gap))
    status = {"node_limit": "time_limit"}.get(out.status, out.status)
    primal = float(out.objective) if out.x is not None and math.isfinite(out.objective) else None
    dual = float(out.bound) if math.isfinite(out.bound) else None
    return {"status": status, "primal": primal, "dual": dual, "seconds": time.perf_counter() - t0,
            "nodes": int(out.nodes), "message": out.message or (be.bound_note or "")}


def write_minlp(model: SaaModel, path: str) -> None:
    """Write the exact MINLP through Pyomo's writers: ``.nl`` (AMPL; with
    ``.col``/``.row`` name files beside it when uncompressed) or ``.gms``
    (GAMS); gzip when ``path`` ends in ``.gz``."""
    pm, _ = pyomo_model(model)
    plain = str(path).removesuffix(".gz")
    fmt = "nl" if plain.endswith(".nl") else "gams" if plain.endswith(".gms") else None
    if fmt is None:
        raise ValueError(f"path: {path!r} must end in .nl or .gms (optionally .gz)")
    opts = {"symbolic_solver_labels": True}
    if fmt == "nl":
        opts["linear_presolve"] = False      # keep every column: outside .sol files name them all

    def write(p):
        with quiet_stdout():
            pm.write(p, format=fmt, io_options=opts)
        if fmt == "nl" and p != plain:
            # the names of the .nl's columns and rows (AMPL's stub.col and
            # stub.row, read by SCIP once the .nl is decompressed beside them)
            for ext in (".col", ".row"):
                src = p[:-3] + ext
                if os.path.isfile(src):
                    shutil.copyfile(src, plain[:-3] + ext)

    _write_maybe_gz(path, write)


__all__ = [
    "PWL_TOLERANCE",
    "QUADRATIC_FAMILIES",
    "NoSaaModel",
    "SaaModel",
    "build_saa_model",
    "minlp_column_names",
    "model_digest",
    "pwl_ratio",
    "pyomo_model",
    "solve_with_pyomo",
    "write_minlp",
    "write_pwl_mps",
]
