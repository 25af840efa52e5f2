"""The task record: one typed row per finished task attempt.

:class:`TaskRecord` is the single schema between the benchmark runner (which
writes it through :class:`~deplbench.benchmarks.store.ResultsStore`) and the
reports (which read it through ``ResultsStore.frame()``). Every column is a
field below with its type and meaning; nothing a report needs is hidden in
JSON text: instance sizes, the algorithm's label and exactness, the solver
parameters η, ε and S, the plan length K and the out-of-sample evaluation
(quantile, interval with its level and method, verdict) are columns of their
own. The JSON columns (``params``, ``plan``, ``evaluation``, ``diagnostics``,
``env``, ``instance_params``, ``style``) keep the complete objects for
whoever needs more.

``docs/DESIGN.md`` ("Results store") and ``/work/coord/H4A_RECORD.md`` list
the same columns; :func:`describe_columns` prints them from this module, so
the list below is the source of truth.

Kinds
-----
``text``  str or None
``int``   int or None (SQLite INTEGER; ``Int64`` in the frame)
``real``  float or None (SQLite REAL; NaN is stored as NULL)
``bool``  stored as INTEGER 0/1; ``boolean`` in the frame
``json``  any JSON-able object, stored as JSON text
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from deplbench.errors import SweepError
from deplbench.formulations.model.result import STATUSES as _SOLVER_STATUSES
from deplbench.jsonio import json_default  # the one numpy/pydantic-aware json.dumps hook
from deplbench.params import int_refusal

#: What a record's ``status`` may be (the solver statuses of
#: ``formulations.model.result.STATUSES``; ``None`` only while a task runs).
STATUSES = _SOLVER_STATUSES

#: How :func:`deplbench.formulations.evaluation.evaluate.evaluate_plan` builds the
#: quantile's interval when the evaluation does not name its method itself.
DEFAULT_CI_METHOD = "order-statistic (distribution-free, binomial)"

KINDS = ("text", "int", "real", "bool", "json")


def _col(kind: str, doc: str, default: Any = None):
    assert kind in KINDS, kind
    return field(default=default, metadata={"kind": kind, "doc": doc})


@dataclass(frozen=True)
class TaskRecord:
    """One finished task attempt (see the module docstring for the kinds).

    Build one with :meth:`from_mapping`; :meth:`to_row` gives the values in
    :data:`COLUMNS` order, converted for SQLite.
    """

    # -- identity ------------------------------------------------------------
    key: str = _col("text", "task key: SHA-256 (24 hex) of instance recipe (family, generator "
                            "params, seed; for a file its content hash, never its path), "
                            "targets, algorithm, parameters as given, evaluation settings "
                            "and code version")
    sweep: str | None = _col("text", "name of the sweep that ran the task ([sweep].name)")
    instance_group: str | None = _col("text", "the sweep's [[instances]].id the instance "
                                              "comes from")
    instance_set: str | None = _col("text", "the paper/figure set the group belongs to "
                                            "([[instances]].set, default the group id), "
                                            "e.g. 'alexnet' for groups 'alexnet' and "
                                            "'alexnet-eta'")
    label: str | None = _col("text", "the sweep's [[algorithms]].label (default the "
                                     "registry name), e.g. 'depl-eta'")
    # -- instance ------------------------------------------------------------
    family: str | None = _col("text", "generator family, or 'file' for an instance file")
    instance_params: Any = _col("json", "generator parameters (for a file: {'sha256'})")
    instance_seed: int | None = _col("int", "generator seed (None for files)")
    instance_path: str | None = _col("text", "instance file path at run time (files only; "
                                             "not part of the key)")
    instance_id: str | None = _col("text", "12-hex id of the instance recipe without "
                                           "targets: equal for every target point and "
                                           "algorithm run on the same generated instance")
    instance_sha: str | None = _col("text", "SHA-256 (24 hex) of the instance as solved "
                                            "(targets applied): equal sha = same instance")
    instance_name: str | None = _col("text", "Instance.name")
    n_models: int | None = _col("int", "|M|: model versions")
    n_clusters: int | None = _col("int", "|N|: clusters")
    n_datasets: int | None = _col("int", "|D|: datasets")
    horizon: int | None = _col("int", "K̄: the largest number of epochs")
    scenarios: int | None = _col("int", "S: in-sample scenarios the algorithm used (its "
                                         "resolved 'scenarios' parameter; None if it has "
                                         "none)")
    omega: float | None = _col("real", "ω: quantile level of eq. (3), targets applied")
    loss_max: float | None = _col("real", "ℓmax: bound on the ω-quantile of ℓ(K), eq. (3), "
                                          "targets applied")
    time_max: float | None = _col("real", "Tmax of eq. (4)")
    initial_loss: float | None = _col("real", "ℓ(0)")
    transfer_cost_mode: str | None = _col("text", "instance variant: 'once' or 'per_epoch'")
    data_rule: str | None = _col("text", "instance variant: 'intended' or 'printed'")
    # -- algorithm -----------------------------------------------------------
    algorithm: str | None = _col("text", "solver registry name, e.g. 'depl'")
    algorithm_label: str | None = _col("text", "display label from the solver's metadata, "
                                               "e.g. 'DepL'")
    exact: bool | None = _col("bool", "the solver proves optimality (its metadata); an "
                                      "'optimal' status of an exact solver is a proven "
                                      "optimum")
    reference_priority: int | None = _col("int", "solver metadata: among exact solvers' "
                                                 "optimal rows, the lowest value is the "
                                                 "trusted reference (knapsack-dp 0, "
                                                 "brute-force 1, milp 2; default 100)")
    reference: str | None = _col("text", "solver metadata: which optimum the result is a "
                                         "reference for ('saa', 'certified-static', "
                                         "'exact-static', 'adaptive'; '' for none)")
    style: Any = _col("json", "plotting style from the solver's metadata "
                              "({'colour', 'marker', 'linestyle'}), or None")
    params: Any = _col("json", "solver parameters as run: resolved, defaults included")
    eta: float | None = _col("real", "η: DepL's discretisation parameter, if the solver "
                                     "has one")
    epsilon: float | None = _col("real", "ε: DepL's approximation parameter, if the solver "
                                         "has one")
    # -- outcome -------------------------------------------------------------
    status: str | None = _col("text", " | ".join(STATUSES))
    message: str | None = _col("text", "the solver's or the runner's explanation")
    cost: float | None = _col("real", "objective (2) of the returned plan")
    lower_bound: float | None = _col("real", "proven lower bound on the optimum (exact "
                                             "solvers)")
    gap: float | None = _col("real", "(cost − lower_bound)/|cost|")
    runtime_s: float | None = _col("real", "the algorithm's own wall time, evaluation "
                                           "excluded (s)")
    wall_s: float | None = _col("real", "task wall time incl. instance build and "
                                        "evaluation (s)")
    epochs: int | None = _col("int", "K: epochs of the returned plan")
    plan: Any = _col("json", "the returned plan (epochs, datasets)")
    # -- out-of-sample evaluation (eq. (3) judged on fresh trajectories) -----
    quantile_oos: float | None = _col("real", "estimated ω-quantile of ℓ(K), out of sample")
    quantile_ci_low: float | None = _col("real", "lower end of the quantile's interval")
    quantile_ci_high: float | None = _col("real", "upper end of the quantile's interval")
    ci_level: float | None = _col("real", "confidence level of that interval, e.g. 0.95")
    ci_method: str | None = _col("text", "how that interval was built")
    verdict: str | None = _col("text", "feasible | infeasible | undecided: the exact violation bounds' "
                                       "verdict where they decide, else the Monte Carlo interval vs ℓmax "
                                       "(an estimate; evaluation.verdict_basis says which)")
    eval_samples: int | None = _col("int", "out-of-sample trajectories")
    eval_seed: int | None = _col("int", "seed of those trajectories")
    eval_exact: bool | None = _col("bool", "the plan was evaluated exactly (deterministic "
                                           "terms)")
    expected_loss: float | None = _col("real", "E[ℓ(K)] out of sample")
    constraints_ok: bool | None = _col("bool", "hard constraints (4)-(6) hold")
    violation_ub: float | None = _col("real", "certified upper bound on P(ℓ(K) > ℓmax) "
                                              "(filled when the evaluation provides it)")
    violation_ub_level: float | None = _col("real", "confidence of violation_ub")
    violation_ub_method: str | None = _col("text", "how violation_ub was built (one-sided exact "
                                                   "Clopper–Pearson upper bound, or exact)")
    violation_lb: float | None = _col("real", "lower confidence bound on P(ℓ(K) > ℓmax) (filled "
                                              "when the evaluation provides it)")
    violation_lb_level: float | None = _col("real", "confidence of violation_lb")
    violation_lb_method: str | None = _col("text", "how violation_lb was built (one-sided exact "
                                                   "Clopper–Pearson lower bound, or exact)")
    certified_verdict: str | None = _col("text", "verdict from violation_ub/violation_lb vs 1 − ω "
                                                 "(Clopper-Pearson at violation_ub_level), or the exact "
                                                 "bounds' where they decide (when provided)")
    evaluation: Any = _col("json", "the complete evaluation (per-epoch mean/p01/p99, "
                                   "per-model epochs and cost, ...)")
    # -- closed-loop simulation (formulations.evaluation.closed_loop; sweep option
    #    [sweep.evaluation] closed_loop = {runs, seed, confidence, sets}) ----
    closed_loop: Any = _col("json", "closed-loop simulation summaries: 'plan' (the plan as a fixed "
                                    "policy), 'plan_stopped' (stopped once ℓ ≤ ℓmax), 'policy' (the "
                                    "algorithm's own policy, or None); None when not simulated")
    cl_mode: str | None = _col("text", "which simulation the cl_* columns give: 'policy' (the "
                                       "algorithm re-plans from observed losses) or 'plan' (fixed plan)")
    cl_runs: int | None = _col("int", "simulated runs of the closed-loop simulation")
    cl_p_success: float | None = _col("real", "share of runs with ℓ(K) ≤ ℓmax within Tmax and K̄")
    cl_p_success_low: float | None = _col("real", "lower end of its two-sided Clopper–Pearson "
                                                  "interval at closed_loop.confidence")
    cl_p_success_high: float | None = _col("real", "upper end of that interval")
    cl_p_success_level: float | None = _col("real", "level of that interval (closed_loop.confidence)")
    cl_p_success_method: str | None = _col("text", "how that interval was built")
    cl_cost_mean: float | None = _col("real", "mean cost (2) actually spent per run")
    cl_cost_q99: float | None = _col("real", "99th percentile of the cost per run")
    cl_epochs_mean: float | None = _col("real", "mean epochs per run")
    cl_loss_quantile: float | None = _col("real", "ω-quantile of the final loss over the runs")
    # -- run -----------------------------------------------------------------
    diagnostics: Any = _col("json", "solver diagnostics (free form)")
    error: str | None = _col("text", "exception/timeout/crash text of a failed attempt")
    env: Any = _col("json", "environment: package versions, CPU, threads, host, pid")
    code_version: str | None = _col("text", "deplbench version")
    git_commit: str | None = _col("text", "git commit of the code ('-dirty' if modified)")
    hostname: str | None = _col("text", "machine that ran the task")
    started_at: str | None = _col("text", "UTC ISO 8601 start time")
    finished_at: str | None = _col("text", "UTC ISO 8601 end time")

    # -----------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TaskRecord:
        """Validate and convert a record dict (extra keys are ignored).

        Raises
        ------
        SweepError
            Missing ``key``, an unknown ``status``, or a value that does not
            convert to its column's kind; the message names the column.
        """
        if not data.get("key"):
            raise SweepError("record.key: required to store a result")
        status = data.get("status")
        if status is not None and status not in STATUSES:
            raise SweepError(f"record.status: must be one of {STATUSES}, got {status!r}")
        values = {f.name: convert(f.name, f.metadata["kind"], data.get(f.name))
                  for f in fields(cls)}
        return cls(**values)

    def to_row(self) -> list:
        """Values in :data:`COLUMNS` order as SQLite stores them."""
        return [to_sql(KIND[c], getattr(self, c)) for c in COLUMNS]

    def to_dict(self) -> dict:
        """Field → value (JSON columns as objects)."""
        return {c: getattr(self, c) for c in COLUMNS}


#: Column names in order.
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TaskRecord))
#: Column → kind.
KIND: dict[str, str] = {f.name: f.metadata["kind"] for f in fields(TaskRecord)}
#: Column → meaning.
DOC: dict[str, str] = {f.name: f.metadata["doc"] for f in fields(TaskRecord)}

JSON_COLUMNS = frozenset(c for c, k in KIND.items() if k == "json")
REAL_COLUMNS = frozenset(c for c, k in KIND.items() if k == "real")
INT_COLUMNS = frozenset(c for c, k in KIND.items() if k == "int")
BOOL_COLUMNS = frozenset(c for c, k in KIND.items() if k == "bool")

#: SQLite type of each kind.
SQL_TYPE = {"text": "TEXT", "int": "INTEGER", "real": "REAL", "bool": "INTEGER",
            "json": "TEXT"}


def convert(name: str, kind: str, value: Any) -> Any:
    """One value converted to its column's kind (None stays None).

    Raises
    ------
    SweepError
        The value cannot represent that kind (names ``record.<name>``).
    """
    if value is None:
        return None
    reason = ""
    try:
        if kind == "real":
            v = float(value)
            return None if math.isnan(v) else v
        if kind == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
            number = int(value)
            # SQLite's INTEGER: storing a wider one would raise out of the runner
            reason = int_refusal(number)
            if not reason:
                return number
        if kind == "bool":
            return bool(value)
        if kind == "text":
            return value if isinstance(value, str) else str(value)
    except (TypeError, ValueError, OverflowError):
        raise SweepError(f"record.{name}: expected {kind}, got {value!r}") from None
    if reason:
        raise SweepError(f"record.{name}: {reason}")
    if kind == "json" and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def to_sql(kind: str, value: Any) -> Any:
    """A converted value as SQLite stores it."""
    if value is None:
        return None
    if kind == "json":
        return dumps(value)
    if kind == "bool":
        return int(value)
    return value


def dumps(value: Any) -> str:
    """JSON text for a record value (numpy, pydantic, sets converted)."""
    return json.dumps(value, default=json_default, allow_nan=True)




# --------------------------------------------------------------------------
# filling groups of columns
# --------------------------------------------------------------------------


def instance_columns(instance) -> dict:
    """The instance-size columns of a built instance (targets applied)."""
    import hashlib

    return {
        "instance_name": instance.name,
        "instance_sha": hashlib.sha256(instance.to_json().encode()).hexdigest()[:24],
        "n_models": instance.n_models, "n_clusters": instance.n_clusters,
        "n_datasets": instance.n_datasets, "horizon": int(instance.horizon),
        "omega": float(instance.omega), "loss_max": float(instance.loss_max),
        "time_max": float(instance.time_max), "initial_loss": float(instance.initial_loss),
        "transfer_cost_mode": instance.transfer_cost_mode, "data_rule": instance.data_rule,
    }


def parameter_columns(params: Mapping[str, Any] | None) -> dict:
    """η, ε and S out of the resolved parameters (None where absent)."""
    params = params or {}

    def number(name: str):
        v = params.get(name)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return {"eta": number("eta"), "epsilon": number("epsilon"),
            "scenarios": number("scenarios")}


def evaluation_columns(evaluation: Mapping[str, Any] | None) -> dict:
    """The evaluation's scalar results as columns.

    Reads the keys of ``Evaluation.to_dict()``
    (:mod:`deplbench.formulations.evaluation.evaluate`): ``quantile``, ``quantile_ci``,
    ``confidence``, ``verdict``, ``samples``, ``seed``, ``exact``,
    ``expected_loss``, ``constraints_ok``; and, when present, ``ci_method``,
    ``violation_ub``, ``violation_ub_level`` (or ``violation_ub_confidence``),
    ``violation_lb`` and ``certified_verdict``; the bounds' methods are
    stated from ``exact``.
    """
    ev = dict(evaluation or {})
    if not ev:
        return {}
    ci = ev.get("quantile_ci")
    low, high = (ci if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None))
    out = {
        "quantile_oos": ev.get("quantile_oos", ev.get("quantile")),
        "quantile_ci_low": low, "quantile_ci_high": high,
        "ci_level": ev.get("ci_level", ev.get("quantile_ci_level", ev.get("confidence"))),
        "ci_method": ev.get("ci_method") or (DEFAULT_CI_METHOD if low is not None else None),
        "verdict": ev.get("verdict"), "eval_samples": ev.get("samples"),
        "eval_seed": ev.get("seed"), "eval_exact": ev.get("exact"),
        "expected_loss": ev.get("expected_loss"), "constraints_ok": ev.get("constraints_ok"),
        "violation_ub": ev.get("violation_ub"),
        "violation_ub_level": ev.get("violation_ub_level", ev.get("violation_ub_confidence")),
        "certified_verdict": ev.get("certified_verdict"),
    }
    if ev.get("violation_ub") is not None:
        level = out["violation_ub_level"]
        exact = bool(ev.get("exact"))
        out["violation_ub_method"] = ("exact (every random term a point mass)" if exact else
                                      "one-sided exact Clopper–Pearson upper bound on the evaluator's draws")
        if ev.get("violation_lb") is not None:
            out.update(violation_lb=ev["violation_lb"], violation_lb_level=level,
                       violation_lb_method=("exact (every random term a point mass)" if exact else
                                            "one-sided exact Clopper–Pearson lower bound on the evaluator's "
                                            "draws"))
    return out


def closed_loop_columns(closed_loop: Mapping[str, Any] | None) -> dict:
    """The cl_* columns from :func:`deplbench.solvers.run.closed_loop` output:
    the algorithm's own policy when it has one, else its plan as a fixed policy."""
    cl = dict(closed_loop or {})
    mode = "policy" if cl.get("policy") else ("plan" if cl.get("plan") else None)
    if mode is None:
        return {"cl_mode": None}
    s = cl[mode]
    ci = s.get("p_success_ci") or (None, None)
    return {"cl_mode": mode, "cl_runs": s.get("runs"), "cl_p_success": s.get("p_success"),
            "cl_p_success_low": ci[0], "cl_p_success_high": ci[1],
            "cl_p_success_level": s.get("confidence", cl.get("confidence")),
            "cl_p_success_method": s.get("p_success_method"),
            "cl_cost_mean": (s.get("cost") or {}).get("mean"), "cl_cost_q99": (s.get("cost") or {}).get("q99"),
            "cl_epochs_mean": (s.get("epochs") or {}).get("mean"), "cl_loss_quantile": s.get("loss_quantile")}


def describe_columns() -> str:
    """A Markdown table of every column: name, kind, meaning."""
    lines = ["| column | kind | meaning |", "|---|---|---|"]
    for c in COLUMNS:
        lines.append(f"| `{c}` | {KIND[c]} | {DOC[c]} |")
    return "\n".join(lines)



def check_schema_version(conn: Any, where: str, current: str) -> None:
    """Refuse a store whose ``meta.schema_version`` this code cannot read.

    An older store (a smaller version, or none: no ``meta`` table yet) is read
    with its missing columns NULL and migrated when written. A newer one may
    hold columns or meanings this code does not know, and a run into it would
    stamp it with the older version (checked before that migration).

    Parameters
    ----------
    conn : sqlite3.Connection
        The open store.
    where : str
        How messages name the store.
    current : str
        The version this code writes (``store.SCHEMA_VERSION``).

    Raises
    ------
    SweepError
        A version that is not a whole number, or one above ``current``.
    """
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() is None:
        return
    row = conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone()
    if row is None:
        return
    text = str(row[0]).strip()
    if not (text.isascii() and text.isdigit()):
        raise SweepError(f"{where}: meta.schema_version {row[0]!r} is not a schema version (a whole number); "
                         "not a store deplbench wrote?")
    if int(text) > int(current):
        raise SweepError(f"{where}: schema version {int(text)} was written by a newer deplbench (this one reads "
                         f"versions up to {current}); upgrade deplbench to read or add to it")

__all__ = ["TaskRecord", "check_schema_version", "COLUMNS", "KIND", "DOC", "JSON_COLUMNS", "REAL_COLUMNS",
           "INT_COLUMNS", "BOOL_COLUMNS", "STATUSES", "convert", "dumps", "json_default",
           "instance_columns", "parameter_columns", "evaluation_columns", "closed_loop_columns",
           "describe_columns"]
