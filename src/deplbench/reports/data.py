"""Loading and normalising what a report is built from.

A report reads exactly two things: the results-store frame (one row per
finished task attempt, the columns of
:class:`deplbench.benchmarks.record.TaskRecord`) and, optionally,
pytest-benchmark JSON files. This module turns the store frame into a
:class:`ReportData`: JSON columns parsed, numbers coerced, and a few derived
columns named below. It reads columns and never guesses: the instance sizes,
the paper set, the algorithm's label, exactness and plotting style, and the
parameters as run are all columns of the record. Every oddity (a missing
column, unparsable JSON, rows written by an older store without the pairing
identity) becomes a note, not an exception.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deplbench.benchmarks import record as _record
from deplbench.errors import DeplbenchError
from deplbench.jsonio import restore_nonfinite
from deplbench.limits import read_text

#: Store columns: the fields of the task record, in order (defined once, by
#: the record the store writes).
STORE_COLUMNS: tuple[str, ...] = _record.COLUMNS

#: Columns holding JSON text; parsed into ``<name>_d`` dict columns.
JSON_COLUMNS: tuple[str, ...] = tuple(c for c in STORE_COLUMNS if c in _record.JSON_COLUMNS)

#: Columns coerced to float (REAL and INTEGER quantities; the instance seed
#: is an identity, not a quantity, and stays text).
NUMERIC_COLUMNS: tuple[str, ...] = tuple(
    c for c in STORE_COLUMNS
    if (c in _record.REAL_COLUMNS or c in _record.INT_COLUMNS) and c != "instance_seed")

#: Text columns (missing values read as "").
TEXT_COLUMNS: tuple[str, ...] = tuple(
    c for c in STORE_COLUMNS if _record.KIND[c] == "text")

#: Statuses whose row carries a usable plan (a time-limited MILP may still
#: hold an incumbent; it counts as a plan only if it has a cost).
PLAN_STATUSES = frozenset({"optimal", "feasible", "time_limit"})

#: Size parameters of Property 2 (plus |N| and S): each is a record column
#: of the same name (sizes of the built instance; η, ε, S as run).
SIZE_PARAMETERS: tuple[str, ...] = ("eta", "epsilon", "n_models", "horizon", "n_datasets",
                                    "n_clusters", "scenarios")

#: Human labels for the size parameters (figure axes, tables).
SIZE_LABELS: dict[str, str] = {
    "eta": "η", "epsilon": "ε", "n_models": "|M|", "horizon": "K̄",
    "n_datasets": "|D|", "n_clusters": "|N|", "scenarios": "S",
}

#: The papers' figure sets, by the record's ``instance_set`` (a sweep's
#: ``[[instances]].set``, default its group id), and the figure each
#: reproduces: DepL Figs. 5/6 (Sec. VI-B) and PACT Fig. 6.
PAPER_SETS: dict[str, str] = {"alexnet": "DepL Fig. 5", "mobilenet": "DepL Fig. 6",
                              "pact-vgg11": "PACT Fig. 6"}

#: Parameter keys that differ between repetitions without changing the
#: configuration (excluded from the ``config`` label and fit signatures).
NON_CONFIG_KEYS = frozenset({"seed", "eval_seed", "samples", "eval_samples", "threads",
                             "verbose", "write_lp"})

#: The model variants of eq. (2) and Sec. III-B and their defaults; rows of
#: another variant solve another instance (their ``instance_sha`` differs).
DEFAULT_VARIANTS = {"transfer_cost_mode": "once", "data_rule": "intended"}


class ReportError(DeplbenchError, ValueError):
    """The report's input (store path, frame, benchmark JSON) is unusable."""


@dataclass
class ReportData:
    """A normalised store frame plus the notes gathered while reading it.

    Attributes
    ----------
    df : pandas.DataFrame
        One row per task attempt with the store columns plus derived ones:
        ``<json>_d`` dicts; ``solver`` (the registry name, the record's
        ``algorithm``); ``algorithm`` (the series a row belongs to: the
        sweep entry's ``label``, default the registry name); ``is_exact``
        (the record's ``exact``, False where unknown); ``instance_key``
        (pairing identity: the record's ``instance_sha``); ``config`` (the
        parameters that vary within the series, e.g. ``"eta=50"``);
        ``variant`` (non-default model variants, "" for the defaults);
        ``paper_set`` (the ``instance_set`` when it is one of
        :data:`PAPER_SETS`, else ""); ``has_plan``; ``exp_final_loss``.
    notes : list of str
        Data problems found while reading (missing columns, bad JSON).
    source : str
        Where the frame came from (store path or ``"<DataFrame>"``).
    """

    df: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    source: str = "<DataFrame>"

    @property
    def empty(self) -> bool:
        return self.df.empty


# --------------------------------------------------------------------------
# validation and loading


def validate_frame(frame: Any) -> None:
    """Check that ``frame`` is something a report can be built from.

    Parameters
    ----------
    frame : object
        Expected: a :class:`pandas.DataFrame` (possibly empty, possibly with
        missing columns; both are reported, not rejected).

    Raises
    ------
    ReportError
        If ``frame`` is not a DataFrame, or has duplicate column names.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ReportError(
            f"frame: expected a pandas DataFrame from ResultsStore.frame(), got "
            f"{type(frame).__name__}")
    dup = frame.columns[frame.columns.duplicated()].tolist()
    if dup:
        raise ReportError(f"frame: duplicate column names {dup}")


def load_store(path: str | Path) -> pd.DataFrame:
    """Read a results store through its public interface.

    Parameters
    ----------
    path : str or Path
        Path of a store written by ``deplbench run`` (``ResultsStore``).

    Returns
    -------
    pandas.DataFrame
        ``ResultsStore(path, readonly=True).frame(params=False)``.

    Raises
    ------
    ReportError
        If the path does not exist or the store cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise ReportError(f"DB: no results store at {path}")
    from deplbench.benchmarks.store import ResultsStore

    try:
        with ResultsStore(path, readonly=True) as store:  # a report never writes
            return store.frame(params=False)
    except DeplbenchError:
        raise
    except Exception as exc:  # a corrupt file is user input, not a bug
        raise ReportError(f"DB: cannot read results store {path}: {exc}") from exc


def text_cell_notes(path: str | Path) -> list[str]:
    """Notes on a store's numeric cells that hold text, and on plans stored without a
    finite cost (a hand-edited or foreign store).

    The frame reads such a cell as missing; ``export`` warns about it, and the
    report says so too, instead of leaving a row out of every table silently.
    """
    from deplbench.benchmarks.store import ResultsStore
    from deplbench.benchmarks.store_audit import (
        costless_plans,
        costless_plans_note,
        non_integers,
        non_integers_note,
        text_in_numbers,
    )

    with ResultsStore(path, readonly=True) as store:
        bad = text_in_numbers(store._conn) if store._conn is not None else {}
        costless = costless_plans(store._conn) if store._conn is not None else 0
        whole = non_integers(store._conn) if store._conn is not None else {}
    return ([f"{n} stored row(s) of column {col!r} hold text, not a number: read as missing values"
             for col, n in bad.items()]
            + [f"{non_integers_note(col, n)}: read as missing values" for col, n in whole.items()]
            + ([costless_plans_note(costless)] if costless else []))


def parse_json(value: Any) -> tuple[dict, bool]:
    """Parse one JSON cell into a dict; returns (dict, ok). Empty cells are ok."""
    if isinstance(value, dict):
        return value, True
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {}, True
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        if not value.strip():
            return {}, True
        try:
            parsed = json.loads(value)
        except (ValueError, TypeError):
            return {}, False
        if parsed is None:
            return {}, True
        # a cell stored from strict JSON keeps null + "<key>_nonfinite": ±inf again, never a missing value
        return (restore_nonfinite(parsed), True) if isinstance(parsed, dict) else ({}, False)
    return {}, False


def canonical(d: Any) -> str:
    """Key-order independent JSON text (pairing and grouping identity)."""
    return json.dumps(d, sort_keys=True, default=str)


def _as_float(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def variant_tag(transfer_cost_mode: str, data_rule: str) -> str:
    """"" for the default model variants, else e.g. ``"data_rule=printed"``."""
    given = {"transfer_cost_mode": transfer_cost_mode, "data_rule": data_rule}
    return ", ".join(f"{k}={v}" for k, v in sorted(given.items())
                     if v and DEFAULT_VARIANTS.get(k) != v)


def config_labels(df: pd.DataFrame, by: tuple[str, ...] = ("family", "algorithm")
                  ) -> pd.Series:
    """Label each row with the solver parameters that vary within its
    ``by`` group, e.g. ``"eta=50, epsilon=0.1"``.

    The record stores parameters as run (defaults included), so the keys
    that vary are exactly what the sweep varied; naming only those keeps
    tables readable, and rows of different configurations are never
    averaged together silently.
    """
    labels = pd.Series("", index=df.index, dtype=object)
    if df.empty:
        return labels
    for _, grp in df.groupby(list(by), dropna=False, sort=False):
        keys: set[str] = set()
        for d in grp["params_d"]:
            keys.update(k for k in d if k not in NON_CONFIG_KEYS)
        varying = sorted(
            k for k in keys
            if len({canonical({"v": d.get(k)}) for d in grp["params_d"]}) > 1)
        if not varying:
            continue
        for idx, d in zip(grp.index, grp["params_d"]):
            labels[idx] = ", ".join(f"{k}={d.get(k)}" for k in varying)
    return labels


def separate_shared_labels(series: pd.Series, solvers: pd.Series) -> tuple[pd.Series, dict[str, list[str]]]:
    """Series names with every label that holds rows of several solvers split per solver.

    A report draws one series per label; a sweep refuses two algorithms under
    one label, but two sweeps run into one store (or an edited store) can still
    give one label to rows of different algorithms. Those rows are renamed
    ``"<label> (<solver>)"`` so that no table or claim averages two algorithms.

    Returns
    -------
    tuple of (pandas.Series, dict)
        The series names (unchanged where a label has one solver), and
        ``{label: [solvers]}`` of the labels that were split.
    """
    owners: dict[str, set[str]] = {}
    for label, solver in zip(series, solvers):
        owners.setdefault(label, set()).add(solver)
    shared = {label: sorted(s) for label, s in owners.items() if len(s) > 1}
    if not shared:
        return series, {}
    renamed = [f"{label} ({solver})" if label in shared else label for label, solver in zip(series, solvers)]
    return pd.Series(renamed, index=series.index, dtype=object), shared


def prepare(frame: pd.DataFrame, source: str = "<DataFrame>") -> ReportData:
    """Normalise a store frame for the report builders.

    Parameters
    ----------
    frame : pandas.DataFrame
        ``ResultsStore.frame()`` or a frame with the same columns.
    source : str, optional
        Shown in the report header.

    Returns
    -------
    ReportData
        Never raises for missing columns or bad cells; those become notes
        (the report must say what it could not read, not crash on it).

    Raises
    ------
    ReportError
        Only if ``frame`` is not a DataFrame at all (:func:`validate_frame`).
    """
    validate_frame(frame)
    notes: list[str] = []
    df = frame.copy()
    missing = [c for c in STORE_COLUMNS if c not in df.columns]
    if missing and not df.empty:
        notes.append("store frame lacks columns " + ", ".join(missing)
                     + "; sections that need them say so")
    for c in missing:
        df[c] = None
    df = df.reset_index(drop=True)

    def obj(values) -> pd.Series:  # keeps object dtype on an empty frame too
        return pd.Series(list(values), index=df.index, dtype=object)

    for c in TEXT_COLUMNS:
        df[c] = obj("" if pd.isna(v) else str(v) for v in df[c])
    for c in NUMERIC_COLUMNS:
        df[c] = pd.to_numeric(df[c].astype(object), errors="coerce").astype(float)
    # No solve stores an infinite cost (an overflow is status error): a hand-edited or foreign
    # store's ±inf is no cost, left out of every cost figure as text_cell_notes says.
    df.loc[np.isinf(df["cost"].to_numpy(float)), "cost"] = np.nan
    df["instance_seed"] = obj("" if pd.isna(v) else str(v) for v in df["instance_seed"])

    for c in JSON_COLUMNS:
        parsed = [parse_json(v) for v in df[c]]
        df[c + "_d"] = obj(p[0] for p in parsed)
        bad = sum(not p[1] for p in parsed)
        if bad:
            notes.append(f"{bad} row(s) have unparsable JSON in column '{c}' "
                         "(treated as empty)")

    # The series a row belongs to is its sweep entry: the record's label
    # (e.g. "depl-calibrated"), by default the registry name.
    df["solver"] = df["algorithm"]
    df["algorithm"] = obj(lbl or alg for lbl, alg in zip(df["label"], df["solver"]))
    df["algorithm"], shared = separate_shared_labels(df["algorithm"], df["solver"])
    for label, solvers in shared.items():
        notes.append(f"label {label!r} holds rows of {len(solvers)} algorithms ({', '.join(solvers)}; written by "
                     f"different sweeps into one store): they are drawn as separate series "
                     f"{', '.join(repr(f'{label} ({s})') for s in solvers)}, never averaged as one")
    df["is_exact"] = obj(bool(v) if not pd.isna(v) else False
                         for v in df["exact"]).astype(bool)
    unknown = int((df["exact"].isna() & (df["solver"] != "")).sum()) if not df.empty else 0
    if unknown:
        notes.append(f"{unknown} row(s) do not record whether their solver is exact "
                     "(column 'exact'); they never serve as a proven optimum")

    # Pairing identity: the instance as solved (targets and variants
    # applied). A row without it is paired with nothing.
    nosha = df["instance_sha"] == ""
    df["instance_key"] = obj(s if s else f"row:{k}:{i}"
                             for i, (s, k) in enumerate(zip(df["instance_sha"], df["key"])))
    n_unpaired = int((nosha & (df["status"].isin(PLAN_STATUSES))).sum())
    if n_unpaired:
        notes.append(f"{n_unpaired} row(s) with a plan record no instance_sha (a failed "
                     "build or an older store): they are compared with no other row")
    df["variant"] = obj(variant_tag(t, r) for t, r in
                        zip(df["transfer_cost_mode"], df["data_rule"]))
    for tag, count in df.loc[df["variant"] != "", "variant"].value_counts().items():
        notes.append(f"{count} row(s) use the non-default model variant {tag}; their "
                     "instances differ from the default ones, so they are paired only "
                     "with rows of the same variant")
    df["config"] = config_labels(df)
    df["paper_set"] = obj(s if s in PAPER_SETS else "" for s in df["instance_set"])
    df["has_plan"] = (df["status"].isin(PLAN_STATUSES) & df["cost"].notna()).astype(bool)
    df["exp_final_loss"] = df["expected_loss"].astype(float)
    return ReportData(df=df, notes=notes, source=source)


# --------------------------------------------------------------------------
# pytest-benchmark JSON


def load_bench_json(directory: str | Path | None) -> tuple[pd.DataFrame, list[str]]:
    """Read every pytest-benchmark JSON file under ``directory``.

    Parameters
    ----------
    directory : str, Path or None
        A folder (searched recursively for ``*.json``) or one JSON file.

    Returns
    -------
    frame : pandas.DataFrame
        One row per benchmark: ``file, group, name, fullname, param_json,
        min_s, median_s, mean_s, stddev_s, rounds`` plus one float column
        per :data:`SIZE_PARAMETERS`, read from the benchmark's ``params``
        (pytest parametrisation) or ``extra_info`` under that exact name.
    notes : list of str
        Files that could not be read, and why.

    Raises
    ------
    ReportError
        If ``directory`` is given but does not exist.
    """
    cols = ["file", "group", "name", "fullname", "param_json", "min_s", "median_s",
            "mean_s", "stddev_s", "rounds", *SIZE_PARAMETERS]
    notes: list[str] = []
    if directory is None:
        return pd.DataFrame(columns=cols), notes
    path = Path(directory)
    if not path.exists():
        raise ReportError(f"--bench-json: no such file or directory {path}")
    if not (path.is_file() or path.is_dir()):
        raise ReportError(f"--bench-json: {path} is neither a regular file nor a folder (a device, FIFO or "
                          "socket)")
    files = [path] if path.is_file() else sorted(path.rglob("*.json"))
    if not files:
        notes.append(f"no *.json files under {path}")
    rows = []
    for f in files:
        try:
            try:
                doc = json.loads(read_text(f, "benchmark JSON", ReportError))
            except RecursionError:
                raise ValueError("JSON nested too deeply to read") from None
            if not isinstance(doc, dict) or "benchmarks" not in doc:
                raise TypeError("no 'benchmarks' list at its top level")
            benches = doc["benchmarks"]
            if not isinstance(benches, list):
                raise TypeError("'benchmarks' is not a list")
        except (OSError, ValueError, KeyError, TypeError, ReportError) as exc:
            notes.append(f"{f.name}: not a pytest-benchmark JSON file ({exc})")
            continue
        for b in benches:
            if not isinstance(b, dict):
                continue
            stats = b.get("stats") or {}
            params: dict = b["params"] if isinstance(b.get("params"), dict) else {}
            extra: dict = b["extra_info"] if isinstance(b.get("extra_info"), dict) else {}
            row = {
                "file": f.name, "group": b.get("group") or "", "name": b.get("name", ""),
                "fullname": b.get("fullname", ""), "param_json": canonical(params),
                "min_s": stats.get("min"), "median_s": stats.get("median"),
                "mean_s": stats.get("mean"), "stddev_s": stats.get("stddev"),
                "rounds": stats.get("rounds"),
            }
            for name in SIZE_PARAMETERS:
                row[name] = _as_float(params.get(name, extra.get(name)))
            rows.append(row)
    if files and not rows:
        notes.append("no benchmark entries found in the pytest-benchmark JSON files")
    out = pd.DataFrame(rows, columns=cols)
    for c in ("min_s", "median_s", "mean_s", "stddev_s", "rounds", *SIZE_PARAMETERS):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out, notes


def bench_algorithm(name: str, fullname: str = "", group: str = "") -> str:
    """The benchmark's series name: its group, else its test name without
    the ``[params]`` suffix and ``test_``/``bench_`` prefix."""
    if group:
        return group
    base = (name or fullname.rsplit("::", 1)[-1]).split("[", 1)[0]
    for prefix in ("test_", "bench_"):
        if base.startswith(prefix):
            base = base[len(prefix):]
    return base or "benchmark"


def finite_or(v, default: float = math.nan) -> float:
    """``v`` as a float when it is a finite number (a store cell may be None, NaN,
    text or a number), else ``default``."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return default
    return v if math.isfinite(v) else default


__all__ = ["finite_or", "STORE_COLUMNS", "JSON_COLUMNS", "NUMERIC_COLUMNS", "PLAN_STATUSES",
           "SIZE_PARAMETERS", "SIZE_LABELS", "PAPER_SETS", "NON_CONFIG_KEYS",
           "ReportError", "ReportData", "validate_frame", "load_store", "text_cell_notes",
           "separate_shared_labels", "parse_json", "canonical", "variant_tag", "config_labels", "prepare",
           "load_bench_json", "bench_algorithm"]
