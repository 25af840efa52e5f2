"""Training logs: reading, validation and per-epoch loss changes (``docs/fit.md``).

The first step of the DepL paper's calibration (Sec. VI-A): the long log
format ``run,epoch,model,loss`` is read, checked row by row (a one-line
error naming the file, line and column), and turned into the per-epoch loss
changes Δ(k) = ℓ(k) − ℓ(k−1) with the epochs where the model switched.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from deplbench.errors import DeplbenchError
from deplbench.limits import gunzip, read_bytes

#: A loss further than this factor from the logs' median magnitude is refused as a corrupt row.
OUTLIER_FACTOR = 1000.0

#: Largest epoch index a log may hold (far above any training run; below int64 overflow).
MAX_EPOCH = 10**9

#: Columns the long log format must have (extra columns are ignored).
REQUIRED_COLUMNS = ("run", "epoch", "model", "loss")


class LogError(DeplbenchError, ValueError):
    """The training logs are malformed or cannot determine the loss model."""


# --------------------------------------------------------------------- logs
@dataclass(frozen=True)
class Logs:
    """Validated training logs.

    Attributes
    ----------
    frame : pandas.DataFrame
        Columns ``run`` (str), ``epoch`` (int ≥ 0), ``model`` (str, ``""``
        only on epoch-0 rows), ``loss`` (finite float), sorted by run, epoch.
    sha256 : str
        Hex digest of the file's bytes (provenance), ``""`` for a frame.
    source : str
        The file name, or ``"<frame>"``.
    """

    frame: pd.DataFrame
    sha256: str = ""
    source: str = "<frame>"

    @property
    def n_runs(self) -> int:
        return int(self.frame["run"].nunique())

    @property
    def initial_loss(self) -> float | None:
        """Mean loss of the epoch-0 rows (ℓ(0)), or None without such rows."""
        zero = self.frame["loss"][self.frame["epoch"] == 0]
        return float(zero.mean()) if len(zero) else None


def read_logs(path: str | os.PathLike) -> Logs:
    """Read and validate a CSV log file in the long format of ``docs/fit.md`` (plain or gzip).

    Parameters
    ----------
    path : path-like
        CSV with a header containing ``run, epoch, model, loss``.

    Returns
    -------
    Logs
        Validated logs with the file's sha256 (of its bytes as stored, compressed or not).

    Raises
    ------
    LogError
        If the file cannot be read or parsed, or fails :func:`validate_logs`.
    """
    path = Path(path)
    # the hash is the file's as stored (sha256sum), compressed or not
    data = read_bytes(path, "log", LogError, decompress=False)
    digest = hashlib.sha256(data).hexdigest()
    if data[:2] == b"\x1f\x8b":  # gzip magic: the shipped measurements are compressed (docs/measured.md)
        data = gunzip(data, path, "log", LogError)
    try:
        # Everything as text first, so that "abc" (non-numeric) and "" (missing)
        # can be told apart and reported with their line numbers.
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skipinitialspace=True)
        # the header as written: pandas renames a repeated name ("loss", "loss.1") before anyone sees it
        header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, dtype=str, keep_default_na=False,
                             skipinitialspace=True).iloc[0].tolist()
    except pd.errors.EmptyDataError:
        raise LogError(f"{path}: empty log file (expected a header {','.join(REQUIRED_COLUMNS)})") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        # pandas' tokenizer message ends with a newline (and may hold more): one line
        raise LogError(f"{path}: not a valid CSV file ({' '.join(str(exc).split())})") from None
    check_header(header, source=str(path))
    if not isinstance(frame.index, pd.RangeIndex):
        # every row has more fields than the header (a trailing comma): pandas takes the first
        # column as the index, and the fields then sit under the wrong names
        raise LogError(f"{path}: line {_first_long_row(data, len(header))}: more fields than the "
                       f"{len(header)} the header names (a trailing comma?)")
    return Logs(frame=validate_logs(frame, source=str(path)), sha256=digest, source=path.name)


def _first_long_row(data: bytes, fields: int) -> int:
    """The line number (the header is line 1) of the first row of more than ``fields`` fields."""
    import csv

    rows = csv.reader(io.StringIO(data.decode("utf-8-sig", errors="replace")))
    return next((i for i, row in enumerate(rows, 1) if len(row) > fields), 2)


def check_header(names: list, source: str = "logs") -> None:
    """Refuse a header that names a required column twice (spaces around a name ignored).

    Two ``loss`` columns leave it unsaid which one holds the loss: pandas
    would keep the first and rename the other, and two names equal only up
    to spaces would reach the fit as one column holding two (a crash).

    Raises
    ------
    LogError
        ``column 'loss': named twice in the header (columns 4 and 5)``.
    """
    seen: dict[str, int] = {}
    for i, name in enumerate(str(c).strip() for c in names):
        if name in seen and name in REQUIRED_COLUMNS:
            raise LogError(f"{source}: column {name!r}: named twice in the header (columns {seen[name] + 1} and "
                           f"{i + 1}); which one is meant is not said")
        seen[name] = i


def validate_logs(frame: pd.DataFrame, source: str = "logs") -> pd.DataFrame:
    """Check a raw log table and return it normalised and sorted.

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw table (strings or numbers) with columns ``run, epoch, model, loss``.
    source : str
        Prefix of error messages (the file name).

    Returns
    -------
    pandas.DataFrame
        Columns ``run`` (str), ``epoch`` (int64), ``model`` (str), ``loss``
        (float64), sorted by (run, epoch), index reset.

    Raises
    ------
    LogError
        Naming the column (and CSV line) of the first problem: a missing
        column, an empty or non-numeric value, a NaN or infinite loss, a
        negative or fractional epoch, a missing model on a training epoch, a
        duplicate or missing epoch within a run, or fewer than two runs.
    """
    check_header(list(frame.columns), source)
    frame = frame.rename(columns=lambda c: str(c).strip())
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise LogError(
            f"{source}: missing column(s) {', '.join(repr(c) for c in missing)} "
            f"(the long format needs {', '.join(REQUIRED_COLUMNS)}; see docs/fit.md)"
        )
    if len(frame) == 0:
        raise LogError(f"{source}: no data rows")
    # CSV line of row i: the header is line 1.
    line = np.arange(len(frame)) + 2

    def text(col: str) -> pd.Series:
        return frame[col].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip())

    run = text("run")
    bad = np.flatnonzero(run.to_numpy() == "")
    if bad.size:
        raise LogError(f"{source}: column 'run': empty run id on line {line[bad[0]]}")

    def numeric(col: str) -> np.ndarray:
        raw = text(col)
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        empty = raw.to_numpy() == ""
        nonnum = np.flatnonzero(np.isnan(values) & ~empty & ~raw.str.lower().isin(["nan", "-nan", "+nan"]).to_numpy())
        if nonnum.size:
            i = nonnum[0]
            raise LogError(f"{source}: column {col!r}: non-numeric value {raw.iloc[i]!r} on line {line[i]}")
        nonfinite = np.flatnonzero(~np.isfinite(values))
        if nonfinite.size:
            i = nonfinite[0]
            what = "missing value" if empty[i] else f"non-finite value {raw.iloc[i]!r}"
            raise LogError(f"{source}: column {col!r}: {what} on line {line[i]} (run {run.iloc[i]!r})")
        return values

    epoch_f = numeric("epoch")
    bad = np.flatnonzero((epoch_f < 0) | (epoch_f != np.round(epoch_f)) | (epoch_f > MAX_EPOCH))
    if bad.size:
        i = bad[0]   # checked before the int64 cast: 1e20 would overflow it (a RuntimeWarning, a wrong line)
        raise LogError(f"{source}: column 'epoch': {epoch_f[i]:g} on line {line[i]} is not an integer in "
                       f"[0, {MAX_EPOCH}]")
    loss = numeric("loss")
    # One wild row (a typo, a corrupt write: -1e6 among losses near 10) would
    # dominate the decay fit (A scaled by orders of magnitude): a loss more
    # than OUTLIER_FACTOR times the logs' typical magnitude is refused by line.
    scale = float(np.median(np.abs(loss)))
    wild = np.flatnonzero(np.abs(loss) > OUTLIER_FACTOR * max(scale, np.finfo(float).tiny))
    if wild.size and scale > 0:
        i = wild[0]
        raise LogError(f"{source}: column 'loss': {loss[i]:g} on line {line[i]} is over {OUTLIER_FACTOR:g} times "
                       f"the logs' median |loss| {scale:.4g}; a corrupt row?")
    model = text("model")
    epoch = epoch_f.astype(np.int64)
    bad = np.flatnonzero((model.to_numpy() == "") & (epoch >= 1))
    if bad.size:
        i = bad[0]
        raise LogError(
            f"{source}: column 'model': empty on line {line[i]} (run {run.iloc[i]!r}, epoch {epoch[i]}); "
            "only epoch-0 rows (the initial loss) may omit the model"
        )
    out = pd.DataFrame({"run": run.to_numpy(), "epoch": epoch, "model": model.to_numpy(), "loss": loss, "line": line})
    out = out.sort_values(["run", "epoch"], kind="stable").reset_index(drop=True)
    same = out["run"].to_numpy()[1:] == out["run"].to_numpy()[:-1]
    step = np.diff(out["epoch"].to_numpy())
    dup = np.flatnonzero(same & (step == 0))
    if dup.size:
        i = dup[0] + 1
        raise LogError(
            f"{source}: columns 'run','epoch': run {out['run'][i]!r} has epoch {out['epoch'][i]} twice "
            f"(lines {out['line'][i - 1]} and {out['line'][i]})"
        )
    gap = np.flatnonzero(same & (step > 1))
    if gap.size:
        i = gap[0]
        raise LogError(
            f"{source}: column 'epoch': run {out['run'][i]!r} jumps from epoch {out['epoch'][i]} to "
            f"{out['epoch'][i + 1]}; a run's epochs must be consecutive so each loss change spans one epoch"
        )
    runs = out["run"].unique()
    if runs.size < 2:
        raise LogError(
            f"{source}: column 'run': only one run ({runs[0]!r}); at least two runs are needed "
            "to measure the spread of the per-epoch loss change"
        )
    return out.drop(columns="line")


# ------------------------------------------------------------------ changes
@dataclass(frozen=True)
class Changes:
    """Per-epoch loss changes Δ(k) = ℓ(k) − ℓ(k−1) from the logs.

    Arrays of equal length, one entry per pair of consecutive rows of a run:
    ``run``, ``epoch`` (k, the later row's epoch, ≥ 1), ``model`` (trained in
    epoch k), ``previous`` (model of epoch k−1, ``""`` when k−1 = 0),
    ``delta`` and ``switch`` (the model changed between epochs k−1 and k).
    """

    run: np.ndarray
    epoch: np.ndarray
    model: np.ndarray
    previous: np.ndarray
    delta: np.ndarray
    switch: np.ndarray


def loss_changes(logs: Logs) -> Changes:
    """Per-epoch loss changes and switch flags (vectorised over all runs).

    A switch is an epoch k ≥ 2 whose model differs from epoch k−1's (the
    epoch-0 row trains nothing, so it never makes a switch).
    """
    f = logs.frame
    run = f["run"].to_numpy()
    same = run[1:] == run[:-1]
    idx = np.flatnonzero(same) + 1
    epoch = f["epoch"].to_numpy()[idx]
    model = f["model"].to_numpy()[idx]
    prev_epoch = f["epoch"].to_numpy()[idx - 1]
    previous = np.where(prev_epoch >= 1, f["model"].to_numpy()[idx - 1], "")
    loss = f["loss"].to_numpy()
    delta = loss[idx] - loss[idx - 1]
    switch = (previous != "") & (previous != model)
    return Changes(run=run[idx], epoch=epoch, model=model, previous=previous, delta=delta, switch=switch)
