"""The formulation table: which MILP formulations exist and which one ``fast`` picks.

One job: name every formulation, say when it applies, and choose. A
formulation is a :class:`Formulation` row; ``formulation="fast"`` tries the
rows of :data:`FAST_CHAIN` in order and uses the first one that applies to
the instance and builds (a build may decline, e.g. enumeration with too many
candidates); the last row of the chain is the fallback that always applies.
Any registered name can also be forced (``formulation="flow"``); forcing a
formulation whose structure the instance lacks gives status ``error`` with
the reason, never a wrong model.

How a formulation plugs in
--------------------------
Write one module in this package with a model class and a build function
``build(ctx: BuildContext) -> model | None | Verdict`` (None declines, a
:class:`~.options.Verdict` ends the solve with its status, e.g. an
``infeasible`` proof), then add one :class:`Formulation` row to
:data:`BUILTIN` below (and its name to :data:`FAST_CHAIN` if ``fast`` should
try it; the last name of the chain is the fallback). The model
must offer what :func:`~.cutloop.cut_loop` and
:func:`~.routes.make_backend` use:

``mm``
    a finished :class:`~.matrix.MatrixModel` (any backend), or instead
``pyomo_model`` and ``xvars``
    a Pyomo model and its variables in column order (Pyomo backend);
``theta``
    the column of the cost epigraph θ ≥ F(N);
``cut_row(lam) -> (cols, vals, lo)``
    the λ cut θ ≥ Σ_j g_j(λ) N_j − λ Tmax as a row ``vals·x[cols] ≥ lo``;
``extra_lams``
    list of the λ of cuts added after the build (the loop appends);
``solution_from_choice(choice) -> ndarray | None``
    a MIP start for a :class:`~.data.Choice` (None if it cannot give one);
``choice_from_solution(x) -> Choice | None``
    the plan a master solution encodes, evaluated with ``data.evaluate``.

Subclassing :class:`~.matrix.MatrixFormulation` provides ``theta``,
``cut_row``, the counts N, data binaries q and the shared rows.

References
----------
docs/DESIGN.md ("Registry names → classes"); the package docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from deplbench.formulations.milp.bounds import Bounds
from deplbench.formulations.milp.counts import build_counts, order_invariant
from deplbench.formulations.milp.data import Data
from deplbench.formulations.milp.enumeration import build_enumeration
from deplbench.formulations.milp.flow import build_flow
from deplbench.formulations.milp.naive import build_naive
from deplbench.limits import gib_text

#: Rough bytes per non-zero of a matrix model while it is built and handed to
#: the solver (COO blocks, CSC, the solver's own copy and presolve).
BYTES_PER_NONZERO = 120


class ModelTooLarge(Exception):
    """The estimated model exceeds the memory limit (the message says by how much)."""


def _always(data: Data) -> bool:
    return True


@dataclass(frozen=True)
class Formulation:
    """One row of the formulation table.

    Attributes
    ----------
    name : str
        The ``formulation=`` value that forces it.
    build : callable
        ``build(ctx) -> model | None | Verdict`` (see the module docstring).
    applies : callable
        ``applies(data) -> bool``: a cheap structural test; ``fast`` skips a
        row that does not apply, forcing it gives status ``error``.
    requires : str
        What ``applies`` checks, for that error message.
    incumbent : bool
        Run the block heuristic before building (an incumbent for bounds and
        a MIP start); False where it would not pay.
    description : str
    """

    name: str
    build: Callable
    applies: Callable[[Data], bool] = _always
    requires: str = ""
    incumbent: bool = True
    description: str = ""


@dataclass
class BuildContext:
    """What a build function receives.

    ``diag`` and ``timing`` are the result's diagnostics and build-time
    breakdown (a build adds its own entries); ``options`` the validated
    options of :func:`solve_milp`.
    """

    data: Data
    bounds: Bounds
    memory_bytes: float
    diag: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)

    def check_size(self, label: str, rows: int, cols: int, nonzeros: int,
                   bytes_per_nonzero: float = BYTES_PER_NONZERO) -> None:
        """Record the estimated size; raise :class:`ModelTooLarge` when it
        would not fit in the memory limit."""
        need = float(nonzeros) * bytes_per_nonzero + 64.0 * (rows + cols)
        self.diag.setdefault("size_estimates", {})[label] = {
            "rows": int(rows), "columns": int(cols), "nonzeros": int(nonzeros), "bytes": int(need)}
        if need > self.memory_bytes:
            raise ModelTooLarge(
                f"the {label} model would need about {gib_text(need / 2**30)} GiB ({rows:,} rows, {cols:,} columns, "
                f"{nonzeros:,} non-zeros) > memory_limit {gib_text(self.memory_bytes / 2**30)} GiB; "
                "use fewer scenarios, a smaller horizon or fewer clusters")


#: The table (order matters only through FAST_CHAIN).
BUILTIN: tuple[Formulation, ...] = (
    Formulation("counts", build_counts, order_invariant,
                requires="an order-invariant loss (no decay, epoch-independent draws, zero jumps, "
                         "every switch allowed)",
                incumbent=False, description="integer epoch counts only (the knapsack family)"),
    Formulation("enumeration", build_enumeration, lambda d: d.Sig == 1,
                requires="one data class (and, to build, an acyclic switch graph with few enough sequences)",
                description="one binary per undominated SAA-feasible model sequence"),
    Formulation("flow", build_flow, description="epoch × model flow with one row per distinct scenario"),
    Formulation("naive", build_naive, incumbent=False,
                description="the textbook per-epoch model in Pyomo (the reference)"),
)

#: Read-only: the table is fixed when the module is imported, so no call
#: can change what ``formulation="fast"`` picks for later solves.
_TABLE: Mapping[str, Formulation] = MappingProxyType({f.name: f for f in BUILTIN})
#: What ``fast`` tries, in order; the last entry is the fallback.
FAST_CHAIN: tuple[str, ...] = ("counts", "enumeration", "flow")


#: Complete exact solvers that are not matrix models for the cut loop: they
#: are dispatched by :func:`~.solve.solve_milp` before any matrix stage and
#: return a finished result under the same exactness contract.
#: ``general`` (:mod:`deplbench.formulations.general`) handles any switch graph and up to
#: :data:`~deplbench.formulations.general.MAX_DATASETS_GENERAL` datasets.
DIRECT: tuple[str, ...] = ("general",)


#: ``general`` searches every set of training clusters as a root box (2^|N| − 1)
#: and has no cluster-dominance pruning; with more clusters ``fast`` keeps ``flow``.
MAX_CLUSTERS_GENERAL_FAST = 4


def _cyclic(allowed) -> bool:
    """Whether the switch graph (off-diagonal of ``allowed``) has a directed cycle."""
    import numpy as np

    adj = np.array(allowed, dtype=bool)
    np.fill_diagonal(adj, False)
    # Kahn's algorithm: a DAG empties by repeatedly removing sources
    alive = np.ones(adj.shape[0], dtype=bool)
    while alive.any():
        src = alive & ~adj[alive].any(axis=0)
        if not src.any():
            return True
        alive &= ~src
    return False


def _counts_structure(instance) -> bool:
    """The order-invariant structure of ``counts`` checked on the instance
    alone (every switch allowed, point-mass runs without decay, zero jumps)."""
    import numpy as np

    return (bool(np.all(instance.allowed)) and bool(np.all(instance.run_scale == instance.run_scale[:1]))
            and all(m.improvement.is_deterministic for m in instance.models)
            and all(sw.jump.is_deterministic and getattr(sw.jump, "value", None) == 0.0
                    for sw in instance.switches))


def fast_prefers_general(instance, max_datasets: int) -> tuple[bool, str]:
    """Whether ``fast`` should dispatch to the direct ``general`` solver.

    By structure: more than ``max_datasets`` datasets (the matrix
    formulations enumerate each cluster's subsets), or — outside the
    order-invariant ``counts`` structure, with at most
    :data:`MAX_CLUSTERS_GENERAL_FAST` clusters — a cyclic switch graph or
    several datasets (``enumeration`` needs an acyclic graph and one data
    class; measured side by side, ``general`` beats ``flow`` on both:
    perf/general_targets.py and perf/route_multiclass.py).
    Returns (choice, reason).
    """
    if instance.n_datasets > max_datasets:
        return True, f"{instance.n_datasets} datasets > {max_datasets}"
    if _counts_structure(instance) or instance.n_clusters > MAX_CLUSTERS_GENERAL_FAST:
        return False, ""
    if _cyclic(instance.allowed):
        return True, "cyclic switch graph"
    if instance.n_datasets > 1:
        # the sequence enumeration needs one data class; flow's scenario rows
        # made certify's SAA replications minutes each (perf/route_multiclass.py:
        # general 3-30x less CPU on the tiny and datasets instances, same optima)
        return True, f"{instance.n_datasets} datasets (several data classes)"
    return False, ""


def formulation_names() -> tuple[str, ...]:
    """Every value ``formulation=`` accepts: ``fast``, each row's name and
    the direct solvers of :data:`DIRECT`."""
    return ("fast", *_TABLE, *DIRECT)


def get(name: str) -> Formulation:
    return _TABLE[name]


def candidates(name: str, data: Data) -> tuple[list[Formulation], str]:
    """The rows to try for ``formulation=name``, or ([], reason) when a
    forced formulation does not apply to this instance."""
    if name == "fast":
        rows = [_TABLE[n] for n in FAST_CHAIN if _TABLE[n].applies(data)]
        return rows, "" if rows else "no formulation of the fast chain applies"
    row = _TABLE[name]
    if not row.applies(data):
        return [], f"formulation: {name!r} needs {row.requires or 'a structure this instance lacks'}"
    return [row], ""


__all__ = ["Formulation", "BuildContext", "ModelTooLarge", "BUILTIN", "FAST_CHAIN", "fast_prefers_general",
           "DIRECT", "formulation_names", "get", "candidates", "BYTES_PER_NONZERO"]
