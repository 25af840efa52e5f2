"""Loading and normalising what a report is built from.

A report reads exactly two things: the results-store frame (one row per
finished task attempt, column contract in ``docs/DESIGN.md``) and,
optionally, pytest-benchmark JSON files. This module turns the store frame
into a :class:`ReportData`: JSON columns parsed, numbers coerced, the
instance identity used for pairing algorithms fixed, the size parameters of
Property 2 extracted under their documented aliases, and every oddity
(missing column, unparsable JSON) recorded as a note instead of raised.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from deplbench.benchmarks import store as _store
from deplbench.errors import DeplbenchError

#: Store columns, in the order of the contract in docs/DESIGN.md (defined
#: once, by the store that writes them).
STORE_COLUMNS: tuple[str, ...] = _store.COLUMNS

#: Columns holding JSON text; parsed into ``<name>_d`` dict columns.
JSON_COLUMNS: tuple[str, ...] = tuple(c for c in STORE_COLUMNS if c in _store.JSON_COLUMNS)

#: Columns coerced to numbers (the REAL ones and the epoch count; the
#: instance seed is an identity, not a quantity).
NUMERIC_COLUMNS: tuple[str, ...] = tuple(c for c in STORE_COLUMNS if c in _store.REAL_COLUMNS) + ("epochs",)

#: Statuses whose row carries a usable plan (a time-limited MILP may still
#: hold an incumbent; it counts as a plan only if it has a cost).
PLAN_STATUSES = frozenset({"optimal", "feasible", "time_limit"})

#: Algorithms whose ``status == "optimal"`` is a *proven* optimum.
EXACT_ALGORITHMS = ("milp", "brute-force")

#: Size parameters of Property 2 (plus |N| and S, which SPEC §5 adds), the
#: store columns searched (in order) and the key aliases accepted there.
#: The first alias is the documented, expected key (docs/reports.md).
SIZE_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "eta": (("params_d", "instance_params_d"), ("eta", "resolution")),
    "epsilon": (("params_d", "instance_params_d"), ("epsilon", "eps")),
    "n_models": (("instance_params_d", "params_d"),
                 ("n_models", "models", "num_models", "n_items", "items")),
    "horizon": (("instance_params_d", "params_d"),
                ("horizon", "max_epochs", "k_bar", "K")),
    "n_datasets": (("instance_params_d", "params_d"),
                   ("n_datasets", "datasets", "num_datasets")),
    "n_clusters": (("instance_params_d", "params_d"),
                   ("n_clusters", "clusters", "num_clusters")),
    "scenarios": (("params_d", "instance_params_d"),
                  ("scenarios", "n_scenarios", "S")),
}

#: Human labels for the size parameters (figure axes, tables).
SIZE_LABELS: dict[str, str] = {
    "eta": "η", "epsilon": "ε", "n_models": "|M|", "horizon": "K̄",
    "n_datasets": "|D|", "n_clusters": "|N|", "scenarios": "S",
}

#: The paper's figure sets: (label, substrings searched case-insensitively in
#: the family, the instance name and the string values of instance_params).
#: ``family = "realistic", params = {model = "alexnet"}`` is the AlexNet set.
PAPER_SETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("alexnet", ("alexnet",)),
    ("mobilenet", ("mobilenet",)),
    ("pact-vgg11", ("pact", "vgg")),
)

#: Parameter keys that differ between repetitions without changing the
#: configuration (excluded from the ``config`` label).
_NON_CONFIG_KEYS = frozenset({"seed", "eval_seed", "evaluation_seed", "samples",
                              "eval_samples", "threads", "verbose"})


class ReportError(DeplbenchError, ValueError):
    """The report's input (store path, frame, benchmark JSON) is unusable."""


@dataclass
class ReportData:
    """A normalised store frame plus the notes gathered while reading it.

    Attributes
    ----------
    df : pandas.DataFrame
        One row per task attempt with the store columns plus derived ones:
        ``<json>_d`` dicts, ``instance_key`` (pairing identity), ``config``
        (the varying solver parameters, e.g. ``"eta=50"``), ``variant``
        (non-default SPEC §1 variants, "" for the defaults), ``paper_set``,
        ``has_plan``,
        ``exp_final_loss``, and one float column per :data:`SIZE_PARAMETERS`.
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
        ``ResultsStore(path).frame()``.

    Raises
    ------
    ReportError
        If the path does not exist or the store cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise ReportError(f"DB: no results store at {path}")
    try:
        from deplbench.benchmarks.store import ResultsStore
    except ImportError as exc:  # the benchmarks layer is not installed
        raise ReportError(f"DB: cannot import the results store ({exc})") from exc
    try:
        return ResultsStore(path, readonly=True).frame()  # a report never writes to the store
    except DeplbenchError:
        raise
    except Exception as exc:  # a corrupt file is user input, not a bug
        raise ReportError(f"DB: cannot read results store {path}: {exc}") from exc


def _parse_json(value: Any) -> tuple[dict, bool]:
    """Parse one JSON cell; returns (dict, ok). Empty / null cells are ok."""
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
        return (parsed, True) if isinstance(parsed, dict) else ({}, False)
    return {}, False


def _canonical(d: dict) -> str:
    """Key-order independent JSON text of a dict (pairing identity)."""
    return json.dumps(d, sort_keys=True, default=str)


def _as_number(value: Any) -> float:
    """A size value as float: numbers as is, sequences by their length."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple, dict)):
        return float(len(value))
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def lookup(row_dicts: Iterable[dict], aliases: Iterable[str]) -> Any:
    """First value found under any alias, in any of the dicts (in order).

    Also looks one level into nested dicts (``{"sizes": {"n_models": 3}}``),
    because generators group their parameters differently.
    """
    aliases = tuple(aliases)
    dicts = [d for d in row_dicts if isinstance(d, dict)]
    for d in dicts:
        for a in aliases:
            if a in d and d[a] is not None:
                return d[a]
    for d in dicts:
        for sub in d.values():
            if isinstance(sub, dict):
                for a in aliases:
                    if a in sub and sub[a] is not None:
                        return sub[a]
    return None


def _final_mean(ev: dict) -> float:
    """Expected final loss E[ℓ(K)]: the evaluation's ``expected_loss``, else
    the last entry of its per-epoch ``mean`` array (k = 0..K)."""
    if not isinstance(ev, dict):
        return math.nan
    try:
        v = float(ev.get("expected_loss"))
        if math.isfinite(v):
            return v
    except (TypeError, ValueError):
        pass
    mean = ev.get("mean")
    if isinstance(mean, (list, tuple)) and mean:
        try:
            return float(mean[-1])
        except (TypeError, ValueError):
            return math.nan
    return math.nan


#: SPEC §1's variants and their defaults (the text's intent).
DEFAULT_VARIANTS = {"transfer_cost_mode": "once", "data_rule": "intended"}


def variant_tag(diagnostics: dict) -> str:
    """"" for the default model variants, else e.g. ``"data_rule=printed"``.

    The runner stores a result's ``variants`` in ``diagnostics.variants``;
    rows without it (oracles) are taken to use the defaults, so they still
    pair with the default-variant rows of the same instance.
    """
    v = diagnostics.get("variants") if isinstance(diagnostics, dict) else None
    if not isinstance(v, dict):
        return ""
    return ", ".join(f"{k}={v[k]}" for k in sorted(v)
                     if v[k] is not None and DEFAULT_VARIANTS.get(k) != v[k])


def paper_set(family: str, instance_name: str, instance_params: dict) -> str:
    """Which of the paper's figure sets a row belongs to ("" for none)."""
    parts = [family, instance_name]
    parts += [v for v in instance_params.values() if isinstance(v, str)]
    text = " ".join(parts).lower()
    for label, needles in PAPER_SETS:
        if any(n in text for n in needles):
            return label
    return ""


def _config_labels(df: pd.DataFrame) -> pd.Series:
    """Label each row with the solver parameters that vary within its
    (family, algorithm) group, e.g. ``"eta=50, epsilon=0.1"``.

    Only *varying* keys are named so that tables stay readable, and rows of
    different configurations are never averaged together silently.
    """
    labels = pd.Series("", index=df.index, dtype=object)
    if df.empty:
        return labels
    for _, grp in df.groupby(["family", "algorithm"], dropna=False, sort=False):
        keys: set[str] = set()
        for d in grp["params_d"]:
            keys.update(k for k in d if k not in _NON_CONFIG_KEYS)
        varying = sorted(
            k for k in keys
            if len({_canonical({"v": d.get(k)}) for d in grp["params_d"]}) > 1)
        if not varying:
            continue
        for idx, d in zip(grp.index, grp["params_d"]):
            labels[idx] = ", ".join(f"{k}={d.get(k)}" for k in varying)
    return labels


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

    for c in ("family", "sweep", "instance_name", "algorithm", "status", "verdict",
              "message", "error", "code_version"):
        df[c] = df[c].astype(object).where(df[c].notna(), "").map(str)
    for c in NUMERIC_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df["instance_seed"] = df["instance_seed"].astype(object).where(
        df["instance_seed"].notna(), "").map(str)

    for c in JSON_COLUMNS:
        parsed = [_parse_json(v) for v in df[c]]
        df[c + "_d"] = pd.Series([p[0] for p in parsed], index=df.index, dtype=object)
        bad = sum(not p[1] for p in parsed)
        if bad:
            notes.append(f"{bad} row(s) have unparsable JSON in column '{c}' "
                         "(treated as empty)")

    # Pairing identity: the same generated instance with the same targets.
    # instance_params is canonicalised so key order in the JSON never splits
    # one instance into two.
    def obj(values) -> pd.Series:  # keeps str dtype on an empty frame too
        return pd.Series(list(values), index=df.index, dtype=object)

    df["variant"] = obj(variant_tag(d) for d in df["diagnostics_d"])
    df["instance_key"] = obj(
        "|".join((f, n, s, _canonical(p), repr(lm), repr(om), v))
        for f, n, s, p, lm, om, v in zip(df["family"], df["instance_name"],
                                         df["instance_seed"], df["instance_params_d"],
                                         df["loss_max"], df["omega"], df["variant"]))
    nondefault = df.loc[df["variant"] != "", "variant"].value_counts()
    for tag, count in nondefault.items():
        notes.append(f"{count} row(s) use the non-default model variant {tag} (SPEC §1); "
                     "they are paired only with rows of the same variant")
    # DepL's opt-in calibrated variant trades the proven quantile bound for a
    # statistical one: it is a different algorithm for every comparison
    # (Figs. 5-6, the claims audit keeps the paper's guaranteed DepL).
    calibrated = (df["algorithm"] == "depl") & obj(
        bool(d.get("calibrate")) for d in df["params_d"]).astype(bool)
    df.loc[calibrated, "algorithm"] = "depl-calibrated"
    df["config"] = _config_labels(df)
    df["paper_set"] = obj(paper_set(f, n, p) for f, n, p in
                          zip(df["family"], df["instance_name"], df["instance_params_d"]))
    df["has_plan"] = df["status"].isin(PLAN_STATUSES) & df["cost"].notna()
    df["has_plan"] = df["has_plan"].astype(bool)
    df["exp_final_loss"] = pd.Series([_final_mean(e) for e in df["evaluation_d"]],
                                     index=df.index, dtype=float)
    for name, (cols, aliases) in SIZE_PARAMETERS.items():
        df[name] = pd.Series([
            _as_number(v) if (v := lookup([row[c] for c in cols], aliases)) is not None
            else math.nan
            for row in df[list(cols)].to_dict("records")], index=df.index, dtype=float)
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
        per :data:`SIZE_PARAMETERS` found in the benchmark's ``params`` or
        ``extra_info``.
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
    files = [path] if path.is_file() else sorted(path.rglob("*.json"))
    rows = []
    for f in files:
        try:
            doc = json.loads(f.read_text())
            benches = doc["benchmarks"]
            if not isinstance(benches, list):
                raise TypeError("'benchmarks' is not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            notes.append(f"{f.name}: not a pytest-benchmark JSON file ({exc})")
            continue
        for b in benches:
            if not isinstance(b, dict):
                continue
            stats = b.get("stats") or {}
            params = b.get("params") or {}
            extra = b.get("extra_info") or {}
            row = {
                "file": f.name,
                "group": b.get("group") or "",
                "name": b.get("name", ""),
                "fullname": b.get("fullname", ""),
                "param_json": _canonical(params if isinstance(params, dict) else {}),
                "min_s": stats.get("min"), "median_s": stats.get("median"),
                "mean_s": stats.get("mean"), "stddev_s": stats.get("stddev"),
                "rounds": stats.get("rounds"),
            }
            for name, (_, aliases) in SIZE_PARAMETERS.items():
                v = lookup([params, extra], aliases)
                row[name] = _as_number(v) if v is not None else math.nan
            rows.append(row)
    if files and not rows:
        notes.append("no benchmark entries found in the pytest-benchmark JSON files")
    out = pd.DataFrame(rows, columns=cols)
    for c in ("min_s", "median_s", "mean_s", "stddev_s", "rounds"):
        out[c] = pd.to_numeric(out[c], errors="coerce")
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
