"""Calibrate an instance's loss model from measured loss trajectories.

The DepL paper (Sec. VI-A, Fig. 4) obtains the loss law (8),
``l_run(m, k) = −A_m / sqrt(k + B_m) · X``, from real training runs in two
steps: (i) ``A_m`` and ``B_m`` by least squares with ``X`` fixed to 1, then
(ii) ``X_m`` by distribution fitting (inverse-gamma, judged by the
Kolmogorov–Smirnov p-value, Fig. 4 centre); the switch jump ``l_sw`` is fitted
by Student's t (Fig. 4 right). This module does the same on logs in the long
format documented in ``docs/fit.md``::

    run,epoch,model,loss
    r0,0,,9.81            # optional epoch-0 row: the initial loss ℓ(0)
    r0,1,alexnet-fast,9.12  # loss after epoch 1, which trained alexnet-fast
    ...

and writes an :class:`~deplbench.instances.model.Instance` whose models carry
the fitted ``loss_scale`` (A), ``loss_offset`` (B), ``decay="inv_sqrt"`` and
``improvement`` (inverse-gamma, or the empirical sample when KS rejects the
fit), and whose switches carry the fitted Student's t jumps. Everything the
logs do not determine (clusters, costs, datasets, targets, model size and
compute) comes from a base instance.

Public API
----------
``read_logs(path)``         parse and validate a log file → :class:`Logs`
``validate_logs(frame)``    the same checks on a pandas DataFrame
``loss_changes(logs)``      per-epoch loss changes → :class:`Changes`
``fit_decay(...)``          A_m, B_m by weighted least squares (eq. (8), X = 1)
``fit_inverse_gamma(x)``    maximum-likelihood inverse-gamma (shape, scale)
``fit_improvement(...)``    X_m: inverse-gamma + KS, empirical fallback
``fit_switch(...)``         l_sw: Student's t (deconvolved from the run term)
``fit_logs(logs, ...)``     all of the above → :class:`FitResult`
``build_instance(...)``     map a FitResult onto a base instance
``write_report(fit, dir)``  PNG figures (Fig. 4 style) and a JSON summary
``write_instance_atomic``   write the output file only once everything worked
``fit_instance(...)``       the whole pipeline behind ``deplbench fit``
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from deplbench.errors import DeplbenchError
from deplbench.instances.distributions import Empirical, InverseGamma, PointMass, StudentT

#: Columns the long log format must have (extra columns are ignored).
REQUIRED_COLUMNS = ("run", "epoch", "model", "loss")
#: Fewest distinct epochs with non-switch changes needed to fit (A_m, B_m):
#: two parameters plus at least one degree of freedom for the residual.
MIN_EPOCHS = 3
#: Quadrature nodes of X used to deconvolve the run term from a switch epoch.
SWITCH_NODES = 64
#: Upper bound of B_m; at the bound the decay is flat over any realistic
#: horizon and the fit says so in its diagnostics.
B_MAX = 1e6


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
    """Read and validate a CSV log file in the long format of ``docs/fit.md``.

    Parameters
    ----------
    path : path-like
        CSV with a header containing ``run, epoch, model, loss``.

    Returns
    -------
    Logs
        Validated logs with the file's sha256 (hash of the exact bytes parsed).

    Raises
    ------
    LogError
        If the file cannot be read or parsed, or fails :func:`validate_logs`.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogError(f"{path}: cannot read log file ({exc.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        # Everything as text first, so that "abc" (non-numeric) and "" (missing)
        # can be told apart and reported with their line numbers.
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise LogError(f"{path}: empty log file (expected a header {','.join(REQUIRED_COLUMNS)})") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise LogError(f"{path}: not a valid CSV file ({exc})") from None
    return Logs(frame=validate_logs(frame, source=str(path)), sha256=digest, source=path.name)


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
    bad = np.flatnonzero((epoch_f < 0) | (epoch_f != np.round(epoch_f)))
    if bad.size:
        i = bad[0]
        raise LogError(f"{source}: column 'epoch': {epoch_f[i]!r} on line {line[i]} is not an integer >= 0")
    loss = numeric("loss")
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


# -------------------------------------------------------------- decay fit
@dataclass
class DecayFit:
    """Least-squares fit of the mean loss change to −A/sqrt(k+B) (eq. (8), X = 1)."""

    model: str
    A: float
    B: float
    A_se: float
    B_se: float
    n_changes: int
    epochs: np.ndarray = field(repr=False)
    mean_change: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)
    rmse: float = 0.0
    r2: float = 0.0
    at_bound: bool = False

    def curve(self, k) -> np.ndarray:
        return -self.A / np.sqrt(np.asarray(k, dtype=float) + self.B)

    def diagnostics(self) -> dict:
        return {
            "A": self.A, "B": self.B, "A_se": _num(self.A_se), "B_se": _num(self.B_se),
            "n_changes": self.n_changes, "n_epochs": int(self.epochs.size),
            "first_epoch": int(self.epochs.min()), "last_epoch": int(self.epochs.max()),
            "rmse": self.rmse, "r2": _num(self.r2), "B_at_upper_bound": self.at_bound,
        }


def fit_decay(epoch: np.ndarray, delta: np.ndarray, model: str = "?", min_epochs: int = MIN_EPOCHS) -> DecayFit:
    """Fit A_m, B_m of eq. (8) to the mean per-epoch loss change, X fixed to 1.

    Parameters
    ----------
    epoch : array of int
        Global epoch index k (≥ 1) of each non-switch loss change of model m.
    delta : array of float
        The loss changes ℓ(k) − ℓ(k−1).
    model : str
        Name used in messages.
    min_epochs : int
        Fewest distinct epochs required.

    Returns
    -------
    DecayFit

    Raises
    ------
    LogError
        Too few distinct epochs, or a loss that does not decrease on average
        (no A_m > 0 fits).

    Notes
    -----
    The paper's step (i) (Sec. VI-A): least squares "under the assumption
    that x = 1". We fit the per-epoch *means* Δ̄(k) weighted by their counts
    n_k, i.e. minimise Σ_k n_k (Δ̄(k) + A/sqrt(k+B))², which equals least
    squares over all individual changes up to a constant, so the estimate is
    unbiased for E[Δ(k)] = −A·E[X]/sqrt(k+B): the fitted A absorbs E[X] and
    the normalised multipliers then have mean ≈ 1. For fixed B the optimal A
    is closed-form; a profile grid over B seeds scipy's bounded
    ``least_squares`` (A > 0, 0 ≤ B ≤ 1e6).
    """
    epoch = np.asarray(epoch, dtype=float)
    delta = np.asarray(delta, dtype=float)
    ks, inverse, counts = np.unique(epoch, return_inverse=True, return_counts=True)
    if ks.size < min_epochs:
        raise LogError(
            f"model {model!r}: only {ks.size} distinct epoch(s) with non-switch loss changes; "
            f"at least {min_epochs} are needed to fit A_m and B_m of eq. (8)"
        )
    means = np.bincount(inverse, weights=delta) / counts
    w = np.sqrt(counts.astype(float))

    def best_a(b: np.ndarray) -> np.ndarray:
        g = 1.0 / np.sqrt(ks[None, :] + b[:, None])
        return -(counts * means * g).sum(axis=1) / (counts * g * g).sum(axis=1)

    grid = np.concatenate([[0.0], np.logspace(-2, math.log10(B_MAX), 121)])
    a_grid = best_a(grid)
    if not np.any(a_grid > 0):
        raise LogError(
            f"model {model!r}: the loss does not decrease on average (mean change {means.mean():+.4g} "
            "per epoch); eq. (8) needs A_m > 0"
        )
    g = 1.0 / np.sqrt(ks[None, :] + grid[:, None])
    sse = (counts * (means[None, :] + np.maximum(a_grid, 1e-300)[:, None] * g) ** 2).sum(axis=1)
    sse[a_grid <= 0] = np.inf
    i0 = int(np.argmin(sse))

    def residual(theta):
        a, b = theta
        return w * (means + a / np.sqrt(ks + b))

    a0, b0 = float(a_grid[i0]), float(grid[i0])
    res = optimize.least_squares(
        residual, x0=[a0, min(b0, B_MAX * 0.999)], bounds=([1e-300, 0.0], [np.inf, B_MAX]),
        x_scale=[max(a0, 1e-12), max(b0, 1.0)], method="trf",
    )
    a, b = (float(v) for v in res.x)
    if not (a > 0 and math.isfinite(a)):
        raise LogError(f"model {model!r}: least squares found no positive A_m (got {a!r})")
    r = means + a / np.sqrt(ks + b)
    dof = max(ks.size - 2, 1)
    # Standard errors from the weighted Jacobian: (JᵀJ)⁻¹ s², s² the weighted
    # residual variance of the per-epoch means.
    s2 = float((res.fun ** 2).sum()) / dof
    try:
        cov = np.linalg.inv(res.jac.T @ res.jac) * s2
        a_se, b_se = (float(math.sqrt(v)) if v >= 0 else math.nan for v in np.diag(cov))
    except np.linalg.LinAlgError:
        a_se = b_se = math.nan
    total = float((counts * (means - np.average(means, weights=counts)) ** 2).sum())
    r2 = 1.0 - float((counts * r * r).sum()) / total if total > 0 else math.nan
    return DecayFit(
        model=model, A=a, B=b, A_se=a_se, B_se=b_se, n_changes=int(delta.size), epochs=ks.astype(int),
        mean_change=means, counts=counts, rmse=float(math.sqrt(np.average(r * r, weights=counts))), r2=r2,
        at_bound=b >= B_MAX * 0.999,
    )


def multipliers(epoch: np.ndarray, delta: np.ndarray, A: float, B: float) -> np.ndarray:
    """Normalised residual multipliers x = Δ / (−A/sqrt(k+B)) (eq. (8) solved for X)."""
    return -np.asarray(delta, dtype=float) * np.sqrt(np.asarray(epoch, dtype=float) + B) / A


# ------------------------------------------------------ distribution fits
@dataclass
class DistFit:
    """One distribution fit with its Kolmogorov–Smirnov diagnostics.

    ``family`` is the tried parametric family, ``params`` its fitted
    parameters (empty when it could not be fitted), ``chosen`` the
    distribution written into the instance (the fit, or the empirical
    fallback), ``reason`` why the fallback was taken (``""`` otherwise).
    """

    family: str
    params: dict
    n: int
    ks_stat: float | None
    p_value: float | None
    p_method: str
    accepted: bool
    chosen: Any
    reason: str = ""
    data: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    #: Switch fits only: the run-term noise −c_i (x_j − E[X]) at every
    #: observation i and X node j, so the report can draw the fitted density
    #: of the residuals (t convolved with the run noise) over their histogram.
    noise: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)), repr=False)

    def diagnostics(self) -> dict:
        return {
            "family": self.family, "params": {k: float(v) for k, v in self.params.items()}, "n": self.n,
            "ks_stat": _num(self.ks_stat), "p_value": _num(self.p_value), "p_method": self.p_method,
            "accepted": self.accepted, "chosen": self.chosen.kind, "reason": self.reason,
        }


def fit_inverse_gamma(x: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood inverse-gamma (shape a, scale b), location fixed at 0.

    Parameters
    ----------
    x : array of float
        Positive samples with some spread.

    Returns
    -------
    (shape, scale) : tuple of float

    Raises
    ------
    LogError
        If a sample is ≤ 0 or all samples are equal (the MLE does not exist).

    Notes
    -----
    X ~ IG(a, b) iff Y = 1/X ~ Gamma(a, rate b), so the MLE is the gamma MLE
    of Y: a solves ln a − ψ(a) = ln ȳ − mean(ln y) (a one-dimensional
    monotone root, Minka 2002), and b = a / ȳ. Exact and much faster than a
    generic optimiser, which makes the parametric-bootstrap KS affordable.
    """
    x = np.asarray(x, dtype=float)
    if x.size < 2 or np.any(x <= 0):
        raise LogError("inverse-gamma fit needs at least two samples, all > 0")
    y = 1.0 / x
    s = math.log(y.mean()) - float(np.log(y).mean())
    if not s > 1e-14:
        raise LogError("inverse-gamma fit needs samples with some spread")
    f = lambda a: math.log(a) - special.digamma(a) - s  # noqa: E731 - decreasing in a
    a0 = (3.0 - s + math.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)
    lo, hi = a0 / 2.0, a0 * 2.0
    while f(lo) < 0:
        lo /= 2.0
    while f(hi) > 0:
        hi *= 2.0
    a = optimize.brentq(f, lo, hi, xtol=1e-12 * a0, rtol=1e-12)
    return float(a), float(a / y.mean())


def _ks_invgamma(x: np.ndarray, a: float, b: float) -> tuple[float, float]:
    res = stats.kstest(x, stats.invgamma(a, scale=b).cdf)
    return float(res.statistic), float(res.pvalue)


def compress_samples(x: np.ndarray, max_samples: int) -> list[float]:
    """At most ``max_samples`` evenly spaced order statistics of ``x``.

    Keeps the empirical fallback's JSON small while preserving its quantiles
    (rank i+½ of every block of n/max_samples): the empirical ppf of the kept
    points differs from the full sample's by at most one block.
    """
    s = np.sort(np.asarray(x, dtype=float))
    if max_samples <= 0 or s.size <= max_samples:
        return s.tolist()
    idx = np.floor((np.arange(max_samples) + 0.5) * s.size / max_samples).astype(int)
    return s[idx].tolist()


def fit_improvement(
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    ks_bootstrap: int = 0,
    rng: np.random.Generator | None = None,
    max_empirical: int = 1000,
) -> DistFit:
    """Fit X_m of eq. (8): inverse-gamma by ML, KS p-value, empirical fallback.

    Parameters
    ----------
    x : array of float
        Normalised residual multipliers of one model (:func:`multipliers`).
    alpha : float
        KS significance level; p < alpha rejects the fit (paper: 0.05).
    ks_bootstrap : int
        0: plain KS p-value with the fitted parameters (conservative, see
        Notes). N > 0: parametric-bootstrap p-value from N refits.
    rng : numpy.random.Generator
        Required when ``ks_bootstrap > 0``.
    max_empirical : int
        Cap on the samples kept by the empirical fallback.

    Returns
    -------
    DistFit
        ``chosen`` is an InverseGamma when accepted (KS p >= alpha and shape
        > 2, so that mean and variance are finite), otherwise an Empirical of
        the multipliers (a PointMass when they have no spread at all).

    Notes
    -----
    Plain KS with parameters estimated from the same sample (paper's Fig. 4
    centre) makes the p-value conservative: the fitted cdf is closer to the
    data than the true one, so the test rejects *less* often than alpha.
    The bootstrap (Lilliefors-style: draw n from the fitted law, refit,
    recompute D) corrects this for the X fit; it does not account for the
    estimation of A_m, B_m.
    """
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    spread = float(np.ptp(x)) if n else 0.0
    if n >= 1 and spread <= 1e-12 * max(abs(float(x.mean())), 1.0):
        value = float(x.mean())
        return DistFit("inverse_gamma", {}, n, None, None, "none", False, PointMass(value=value),
                       "the multipliers have no spread (deterministic logs): point mass", x)
    nonpos = int(np.count_nonzero(x <= 0))
    if nonpos:
        return DistFit(
            "inverse_gamma", {}, n, None, 0.0, "support", False,
            Empirical(samples=compress_samples(x, max_empirical)),
            f"{nonpos} of {n} multipliers are <= 0 (loss increases in non-switch epochs); "
            "the inverse-gamma support is x > 0", x,
        )
    a, b = fit_inverse_gamma(x)
    d, p = _ks_invgamma(x, a, b)
    method = "ks-plain"
    if ks_bootstrap > 0:
        if rng is None:
            raise ValueError("fit_improvement: ks_bootstrap needs an rng")
        exceed = 0
        for _ in range(int(ks_bootstrap)):
            xb = b / rng.standard_gamma(a, n)
            exceed += _ks_invgamma(xb, *fit_inverse_gamma(xb))[0] >= d
        p = (exceed + 1.0) / (ks_bootstrap + 1.0)
        method = f"ks-bootstrap-{int(ks_bootstrap)}"
    params = {"shape": a, "scale": b}
    if p >= alpha and a <= 2.0:
        # Accepted by KS but with an infinite variance (mean too for a <= 1):
        # expectation- and moment-driven algorithms could not use it.
        return DistFit(
            "inverse_gamma", params, n, d, p, method, False, Empirical(samples=compress_samples(x, max_empirical)),
            f"fitted shape {a:.3g} <= 2 gives an infinite variance; empirical sample kept", x,
        )
    if p >= alpha:
        return DistFit("inverse_gamma", params, n, d, p, method, True, InverseGamma(shape=a, scale=b), "", x)
    return DistFit(
        "inverse_gamma", params, n, d, p, method, False, Empirical(samples=compress_samples(x, max_empirical)),
        f"KS rejects the inverse-gamma fit (p = {p:.3g} < {alpha})", x,
    )


def _t_logpdf(z: np.ndarray, df: float) -> np.ndarray:
    # Standard Student's t log-density, written out because scipy's frozen
    # distributions are ~10x slower inside an optimiser loop.
    return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2 * np.log1p(z * z / df))


def fit_switch(
    delta: np.ndarray,
    run_scale: np.ndarray,
    improvement,
    *,
    alpha: float = 0.05,
    min_samples: int = 5,
    min_df: float = 2.1,
    max_empirical: int = 1000,
) -> DistFit:
    """Fit the switch jump l_sw of one model pair by Student's t.

    Parameters
    ----------
    delta : array of float
        Loss change of each observed switch epoch, Δ = ℓ(k) − ℓ(k−1).
    run_scale : array of float
        A/sqrt(k+B) of the *new* model at that epoch (the switch epoch also
        trains it: Δ = l_sw − run_scale · X).
    improvement : Distribution
        The fitted X of the new model.
    alpha, min_samples, min_df, max_empirical
        KS level; fewest switches to attempt a t fit; lower bound on the
        degrees of freedom (> 2 keeps the jump's mean and variance finite,
        which expectation-driven baselines use); empirical cap.

    Returns
    -------
    DistFit
        ``chosen`` is a StudentT when accepted; otherwise an Empirical of the
        residuals r = Δ + run_scale · E[X].

    Notes
    -----
    Paper Sec. VI-A measures l_sw as "the difference between the test loss
    values after and before the model switching", which in model (2)/(8)
    also contains that epoch's training step. We remove it by maximum
    likelihood on the convolution: the density of Δ_i is
    (1/J) Σ_j t((Δ_i + c_i x_j − loc)/scale; df)/scale over J = 64 quantile
    nodes x_j of X. The KS test is applied to the probability-integral
    transforms u_i = F_i(Δ_i) against U(0, 1) (each Δ_i has its own c_i).
    The empirical fallback subtracts only the mean run term, so it keeps
    the run noise: conservative (wider) on purpose.
    """
    delta = np.asarray(delta, dtype=float)
    c = np.asarray(run_scale, dtype=float)
    n = int(delta.size)
    mean_x = float(improvement.mean())
    resid = delta + c * mean_x
    fallback = lambda: Empirical(samples=compress_samples(resid, max_empirical))  # noqa: E731
    if n < min_samples:
        return DistFit("student_t", {}, n, None, None, "none", False, fallback(),
                       f"only {n} switch(es) observed (< {min_samples}): empirical sample kept", resid)
    q = (np.arange(SWITCH_NODES) + 0.5) / SWITCH_NODES
    nodes = np.asarray(improvement.ppf(q), dtype=float)
    shifted = delta[:, None] + c[:, None] * nodes[None, :]  # Δ_i + c_i x_j, shape (n, J)
    spread = float(np.std(shifted))
    if spread <= 1e-12 * max(abs(float(resid.mean())), 1.0):
        return DistFit("student_t", {}, n, None, None, "none", False, PointMass(value=float(resid.mean())),
                       "the switch losses have no spread: point mass", resid)

    def nll(theta):
        ldf, loc, lscale = theta
        df, scale = math.exp(ldf), math.exp(lscale)
        lp = _t_logpdf((shifted - loc) / scale, df) - lscale
        return -float(special.logsumexp(lp, axis=1).sum()) + n * math.log(SWITCH_NODES)

    med = float(np.median(resid))
    mad = 1.4826 * float(np.median(np.abs(resid - med)))
    s0 = max(mad, 1e-3 * spread, 1e-12)
    bounds = [(math.log(min_df), math.log(1e3)), (None, None), (math.log(s0) - 25, math.log(s0) + 10)]
    best = None
    for df0 in (4.0, 30.0):
        r = optimize.minimize(nll, x0=[math.log(max(df0, min_df)), med, math.log(s0)], method="L-BFGS-B",
                              bounds=bounds)
        if best is None or r.fun < best.fun:
            best = r
    df, loc, scale = math.exp(best.x[0]), float(best.x[1]), math.exp(best.x[2])
    u = special.stdtr(df, (shifted - loc) / scale).mean(axis=1)
    ks = stats.kstest(u, "uniform")
    d, p = float(ks.statistic), float(ks.pvalue)
    params = {"df": df, "loc": loc, "scale": scale}
    noise = -c[:, None] * (nodes[None, :] - mean_x)
    if p >= alpha:
        return DistFit("student_t", params, n, d, p, "ks-plain-pit", True, StudentT(df=df, loc=loc, scale=scale),
                       "", resid, noise)
    return DistFit("student_t", params, n, d, p, "ks-plain-pit", False, fallback(),
                   f"KS rejects the Student's t fit (p = {p:.3g} < {alpha})", resid, noise)


# -------------------------------------------------------------- full fit
@dataclass
class ModelFit:
    """Everything fitted for one model version."""

    decay: DecayFit
    improvement: DistFit


@dataclass
class FitResult:
    """The fitted loss model of a set of logs (see :func:`fit_logs`)."""

    models: dict[str, ModelFit]
    switches: dict[tuple[str, str], DistFit]
    initial_loss: float | None
    n_runs: int
    n_rows: int
    sha256: str
    source: str
    settings: dict

    def diagnostics(self) -> dict:
        """JSON-ready fit diagnostics (recorded in the instance provenance)."""
        return {
            "logs": self.source, "logs_sha256": self.sha256, "runs": self.n_runs, "rows": self.n_rows,
            "initial_loss_from_logs": _num(self.initial_loss), "settings": self.settings,
            "models": {
                name: {"decay": mf.decay.diagnostics(), "improvement": mf.improvement.diagnostics()}
                for name, mf in self.models.items()
            },
            "switches": [
                {"from_model": a, "to_model": b, **fit.diagnostics()} for (a, b), fit in self.switches.items()
            ],
        }

    def p_values(self) -> list[float]:
        """KS p-values of every parametric fit that was tested (Fig. 4 centre)."""
        fits = [mf.improvement for mf in self.models.values()] + list(self.switches.values())
        return [f.p_value for f in fits if f.p_value is not None and f.p_method != "support"]


def fit_logs(
    logs: Logs,
    *,
    alpha: float = 0.05,
    ks_bootstrap: int = 0,
    seed: int = 0,
    max_empirical: int = 1000,
    min_switch_samples: int = 5,
    min_epochs: int = MIN_EPOCHS,
) -> FitResult:
    """Fit the loss model (8) and the switch jumps to validated logs.

    Parameters
    ----------
    logs : Logs
        From :func:`read_logs` (or ``Logs(validate_logs(frame))``).
    alpha : float
        KS significance level in (0, 1) (paper: 0.05).
    ks_bootstrap : int
        Parametric-bootstrap replicates for the X fits' p-values (0: plain KS).
    seed : int
        Seed of the bootstrap's ``numpy.random.Generator``.
    max_empirical : int
        Samples kept by an empirical fallback.
    min_switch_samples : int
        Fewest observed switches of a pair to try a Student's t fit.
    min_epochs : int
        Fewest distinct epochs (non-switch changes) per model.

    Returns
    -------
    FitResult

    Raises
    ------
    LogError
        Bad settings, or a model the logs cannot fit (too few epochs, no
        decrease).
    """
    _validate_settings(alpha, ks_bootstrap, max_empirical, min_switch_samples, min_epochs)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        # numpy's own message ("expected non-negative integer") names no field.
        raise LogError(f"seed: must be an integer >= 0, got {seed!r}")
    ch = loss_changes(logs)
    rng = np.random.default_rng(seed)
    order = list(dict.fromkeys(logs.frame["model"][logs.frame["epoch"] >= 1]))
    models: dict[str, ModelFit] = {}
    for name in order:
        sel = (ch.model == name) & ~ch.switch
        decay = fit_decay(ch.epoch[sel], ch.delta[sel], model=name, min_epochs=min_epochs)
        x = multipliers(ch.epoch[sel], ch.delta[sel], decay.A, decay.B)
        imp = fit_improvement(x, alpha=alpha, ks_bootstrap=ks_bootstrap, rng=rng, max_empirical=max_empirical)
        models[name] = ModelFit(decay, imp)
    switches: dict[tuple[str, str], DistFit] = {}
    pairs = sorted({(a, b) for a, b in zip(ch.previous[ch.switch], ch.model[ch.switch])},
                   key=lambda p: (order.index(p[0]), order.index(p[1])))
    for a, b in pairs:
        sel = ch.switch & (ch.previous == a) & (ch.model == b)
        dec = models[b].decay
        c = dec.A / np.sqrt(ch.epoch[sel] + dec.B)
        switches[(a, b)] = fit_switch(ch.delta[sel], c, models[b].improvement.chosen, alpha=alpha,
                                      min_samples=min_switch_samples, max_empirical=max_empirical)
    settings = {"alpha": alpha, "ks_bootstrap": ks_bootstrap, "seed": seed, "max_empirical": max_empirical,
                "min_switch_samples": min_switch_samples, "min_epochs": min_epochs}
    return FitResult(models, switches, logs.initial_loss, logs.n_runs, len(logs.frame), logs.sha256,
                     logs.source, settings)


def _validate_settings(alpha, ks_bootstrap, max_empirical, min_switch_samples, min_epochs) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise LogError(f"alpha: must be in (0, 1), got {alpha!r}")
    if not (isinstance(ks_bootstrap, int) and ks_bootstrap >= 0):
        raise LogError(f"ks_bootstrap: must be an integer >= 0, got {ks_bootstrap!r}")
    if not (isinstance(max_empirical, int) and max_empirical >= 1):
        raise LogError(f"max_empirical: must be an integer >= 1, got {max_empirical!r}")
    if not (isinstance(min_switch_samples, int) and min_switch_samples >= 1):
        raise LogError(f"min_switch_samples: must be an integer >= 1, got {min_switch_samples!r}")
    if not (isinstance(min_epochs, int) and min_epochs >= 3):
        raise LogError(f"min_epochs: must be an integer >= 3 (two parameters plus one residual), got {min_epochs!r}")


# ---------------------------------------------------------- the instance
def family_base(family: str = "alexnet"):
    """The realistic family default instance (``generators.generate``).

    Raises
    ------
    LogError
        If the generator module is missing or rejects the family.
    """
    try:
        from deplbench.instances import generators
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise LogError(f"--family: the instance generators are not available ({exc}); pass --base") from None
    try:
        return generators.generate("realistic", family=family)
    except DeplbenchError as exc:
        raise LogError(f"--family {family!r}: {exc}") from None
    except (TypeError, ValueError, KeyError) as exc:
        raise LogError(f"--family {family!r}: cannot build the realistic default instance ({exc})") from None


def build_instance(
    fit: FitResult,
    base,
    *,
    name: str | None = None,
    data_gamma: float = 1.0,
    loss_max: float | None = None,
    base_label: str = "",
):
    """Map a fit onto a base instance's fields.

    Parameters
    ----------
    fit : FitResult
    base : Instance
        Supplies clusters, datasets, transfer costs, ω, Tmax, K̄, ℓmax, the
        variant flags, and each model's size s(m) and compute c_m (matched by
        name). ℓ(0) comes from the logs' epoch-0 rows when present.
    name : str, optional
        Instance name (default ``"<base>-fit"``).
    data_gamma : float
        γ(S) of the data the logs were measured on (``datalaw``); the fitted
        A is divided by it, so loss_scale is per reference dataset. Default 1:
        the logs' data is the reference data.
    loss_max : float, optional
        Overrides the base's ℓmax (the logs may live on another loss scale).
    base_label : str
        How the base was obtained, for the provenance.

    Returns
    -------
    Instance
        Models: exactly those in the logs (loss_scale = A/γ, loss_offset = B,
        decay "inv_sqrt", improvement = the chosen X). Switches: every
        observed pair (fitted), plus base switches between fitted models that
        the logs never show (kept from the base, listed in the provenance).

    Raises
    ------
    LogError
        A logged model absent from the base, a bad ``data_gamma`` or an
        ``loss_max`` not below ℓ(0).
    InstanceError
        If the result fails the instance validation (should not happen).
    """
    from deplbench.instances.model import parse_instance

    if not (isinstance(data_gamma, (int, float)) and math.isfinite(data_gamma) and data_gamma > 0):
        raise LogError(f"data_gamma: must be a positive finite number, got {data_gamma!r}")
    base_models = {m.name: m for m in base.models}
    unknown = [m for m in fit.models if m not in base_models]
    if unknown:
        raise LogError(
            f"column 'model': {', '.join(repr(m) for m in unknown)} not in the base instance "
            f"{base.name!r} (its models are {sorted(base_models)}); a model's size and compute come from the "
            "base: pass --base with matching model names"
        )
    models = []
    for bm in base.models:  # keep the base's order
        if bm.name not in fit.models:
            continue
        mf = fit.models[bm.name]
        models.append({
            "name": bm.name, "size": bm.size, "compute": bm.compute,
            "loss_scale": mf.decay.A / data_gamma, "loss_offset": mf.decay.B, "decay": "inv_sqrt",
            "improvement": mf.improvement.chosen.model_dump(by_alias=True),
        })
    switches = [{"from_model": a, "to_model": b, "jump": f.chosen.model_dump(by_alias=True)}
                for (a, b), f in fit.switches.items()]
    kept = [sw for sw in base.switches
            if sw.from_model in fit.models and sw.to_model in fit.models
            and (sw.from_model, sw.to_model) not in fit.switches]
    switches += [sw.model_dump(by_alias=True) for sw in kept]
    initial = fit.initial_loss if fit.initial_loss is not None else base.initial_loss
    target = base.loss_max if loss_max is None else float(loss_max)
    if not (math.isfinite(target) and target < initial):
        raise LogError(
            f"loss_max: {target} is not below the initial loss {initial:.6g} "
            f"({'mean epoch-0 loss of the logs' if fit.initial_loss is not None else 'from the base'}); "
            "pass --loss-max on the logs' loss scale"
        )
    dropped = [m.name for m in base.models if m.name not in fit.models]
    _, gamma_all = base.data_effect(base.all_datasets)
    diagnostics = fit.diagnostics()
    diagnostics.update({
        "data_gamma": data_gamma, "base_gamma_all_datasets": gamma_all,
        "base_models_dropped": dropped,
        "switches_kept_from_base": [[sw.from_model, sw.to_model] for sw in kept],
    })
    assumptions = [
        "loss model fitted from training logs (DepL Sec. VI-A): A_m, B_m by least squares on the mean "
        "per-epoch change with X = 1, X_m inverse-gamma by ML (empirical when KS rejects at "
        f"{fit.settings['alpha']}), l_sw Student's t deconvolved from the switch epoch's training step",
        f"fitted A_m divided by data_gamma = {data_gamma:g} (the learning multiplier of the logs' data)",
        "initial_loss = mean epoch-0 loss of the logs" if fit.initial_loss is not None
        else "initial_loss from the base (the logs have no epoch-0 rows)",
    ]
    if dropped:
        assumptions.append(f"base models without logs dropped: {dropped}")
    if kept:
        assumptions.append(f"unobserved switches kept from the base: {[[s.from_model, s.to_model] for s in kept]}")
    assumptions += [f"base: {a}" for a in base.provenance.assumptions]
    data = base.model_dump(by_alias=True)
    data.update({
        "name": name or f"{base.name}-fit",
        "initial_loss": initial,
        "loss_max": target,
        "models": models,
        "switches": switches,
        "provenance": {
            "generator": "fit",
            "parameters": {
                "logs": fit.source, "logs_sha256": fit.sha256, "base": base_label or base.name,
                "base_generator": base.provenance.generator, "data_gamma": data_gamma,
                "loss_max_override": loss_max, **fit.settings,
            },
            "seed": fit.settings["seed"],
            "assumptions": assumptions,
            "fit": diagnostics,
        },
    })
    return parse_instance(data)


# ----------------------------------------------------------------- output
def write_instance_atomic(instance, path: str | os.PathLike) -> Path:
    """Write ``instance.to_json()`` to ``path`` via a temporary file + rename.

    The rename is atomic on POSIX, so ``path`` is either untouched or complete.

    Raises
    ------
    LogError
        If the target directory does not exist or is not writable.
    """
    path = Path(path)
    _write_atomic(path, instance.to_json().encode("utf-8"))
    return path


def _write_atomic(path: Path, data: bytes) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise LogError(f"{path}: directory {parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise LogError(f"{path}: cannot write ({exc.strerror})") from None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def write_report(fit: FitResult, directory: str | os.PathLike) -> list[Path]:
    """Write the fit report: Fig. 4-style PNGs and ``fit-report.json``.

    Files
    -----
    ``model-<name>.png``
        Left: mean loss change per epoch against the fitted −A/sqrt(k+B).
        Right: histogram of the multipliers X against the fitted
        inverse-gamma pdf, with the KS p-value (Fig. 4 left).
    ``switch-<from>--<to>.png``
        Histogram of the switch residuals Δ + c·E[X] against the fitted
        Student's t pdf (Fig. 4 right).
    ``pvalues.png``
        Histogram of the KS p-values of all fits with the 0.05 line
        (Fig. 4 centre).
    ``fit-report.json``
        :meth:`FitResult.diagnostics`.

    Returns
    -------
    list of Path
        The files written.

    Notes
    -----
    Uses matplotlib's object API with the Agg canvas directly, so it never
    touches the global pyplot backend of the calling process.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LogError(f"--report {out}: cannot create directory ({exc.strerror})") from None
    written: list[Path] = []

    def save(fig, fname: str) -> None:
        FigureCanvasAgg(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        target = out / fname
        _write_atomic(target, buf.getvalue())
        written.append(target)

    for name, mf in fit.models.items():
        fig = Figure(figsize=(10, 4), layout="constrained")
        ax1, ax2 = fig.subplots(1, 2)
        d = mf.decay
        ax1.scatter(d.epochs, d.mean_change, s=np.clip(d.counts, 4, 40), alpha=0.7, label="mean observed change")
        kk = np.linspace(d.epochs.min(), d.epochs.max(), 200)
        ax1.plot(kk, d.curve(kk), "r-", label=f"−A/√(k+B), A={d.A:.3g}, B={d.B:.3g}")
        ax1.set(xlabel="epoch k", ylabel="loss change ℓ(k) − ℓ(k−1)", title=f"{name}: eq. (8), X = 1")
        ax1.legend(fontsize=8)
        imp = mf.improvement
        x = imp.data
        # Clip the drawn range to the central 99.9 % so a heavy tail does not
        # squash the bulk (the density is then normalised over that 99.9 %).
        ax2.hist(x, bins=min(60, max(10, int(np.sqrt(x.size)))), density=True, alpha=0.5, label="empirical X",
                 range=(float(np.quantile(x, 0.0005)), float(np.quantile(x, 0.9995))))
        if imp.params:
            xs = np.linspace(max(np.quantile(x, 0.001), 1e-9), np.quantile(x, 0.999), 300)
            pdf = stats.invgamma(imp.params["shape"], scale=imp.params["scale"]).pdf(xs)
            ax2.plot(xs, pdf, "r-" if imp.accepted else "r--",
                     label=f"inverse-gamma ({'accepted' if imp.accepted else 'rejected'})")
        ptxt = "n/a" if imp.p_value is None else f"{imp.p_value:.3g}"
        ax2.set(xlabel="multiplier X", ylabel="density", title=f"X fit: KS p = {ptxt}, kept {imp.chosen.kind}")
        ax2.legend(fontsize=8)
        save(fig, f"model-{_slug(name)}.png")

    for (a, b), sf in fit.switches.items():
        fig = Figure(figsize=(5.5, 4), layout="constrained")
        ax = fig.subplots()
        r = sf.data
        ax.hist(r, bins=min(50, max(5, int(np.sqrt(r.size)))), density=True, alpha=0.5,
                label="Δ + c·E[X] (observed)")
        if sf.params:
            lo, hi = float(np.min(r)), float(np.max(r))
            pad = 0.1 * (hi - lo + 1e-12)
            xs = np.linspace(lo - pad, hi + pad, 300)
            t = stats.t(sf.params["df"], loc=sf.params["loc"], scale=sf.params["scale"])
            # The histogram holds l_sw plus the switch epoch's run noise: draw
            # the fitted model of exactly that (t convolved with the noise,
            # averaged over a thinned set of observations, each with all its
            # X nodes so the thinning keeps the noise distribution), and l_sw alone.
            noise = sf.noise[:: max(1, sf.noise.shape[0] // 64)].ravel()
            mix = np.mean([t.pdf(xs - e) for e in noise], axis=0)
            ax.plot(xs, mix, "r-" if sf.accepted else "r--", label="fit: l_sw + run noise")
            ax.plot(xs, t.pdf(xs), "k:", label="fitted l_sw (Student's t)")
        ptxt = "n/a" if sf.p_value is None else f"{sf.p_value:.3g}"
        ax.set(xlabel="loss jump l_sw", ylabel="density", title=f"{a} → {b}: KS p = {ptxt}, n = {sf.n}")
        ax.legend(fontsize=8)
        save(fig, f"switch-{_slug(a)}--{_slug(b)}.png")

    fig = Figure(figsize=(5.5, 4), layout="constrained")
    ax = fig.subplots()
    pv = fit.p_values()
    ax.hist(pv, bins=np.linspace(0, 1, 21), color="tab:blue", alpha=0.7)
    ax.axvline(fit.settings["alpha"], color="r", linestyle="--", label=f"alpha = {fit.settings['alpha']}")
    ax.set(xlabel="KS p-value", ylabel="number of fits", title=f"p-values of {len(pv)} fits")
    ax.legend(fontsize=8)
    save(fig, "pvalues.png")

    _write_atomic(out / "fit-report.json", (json.dumps(fit.diagnostics(), indent=2) + "\n").encode())
    written.append(out / "fit-report.json")
    return written


def fit_instance(
    logs_path: str | os.PathLike,
    *,
    base=None,
    base_label: str = "",
    family: str = "alexnet",
    name: str | None = None,
    data_gamma: float = 1.0,
    loss_max: float | None = None,
    **fit_kwargs,
):
    """Read logs, fit, and build the instance (nothing is written).

    Parameters
    ----------
    logs_path : path-like
    base : Instance, optional
        Defaults to ``family_base(family)``.
    base_label, family, name, data_gamma, loss_max
        See :func:`build_instance` and :func:`family_base`.
    **fit_kwargs
        Passed to :func:`fit_logs`.

    Returns
    -------
    (Instance, FitResult)
    """
    logs = read_logs(logs_path)
    fit = fit_logs(logs, **fit_kwargs)
    if base is None:
        base = family_base(family)
        base_label = base_label or f"realistic family {family!r}"
    return build_instance(fit, base, name=name, data_gamma=data_gamma, loss_max=loss_max,
                          base_label=base_label), fit


def _num(v) -> float | None:
    """A JSON-safe float (None for missing/NaN/inf)."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


__all__ = [
    "REQUIRED_COLUMNS", "LogError", "Logs", "Changes", "DecayFit", "DistFit", "ModelFit", "FitResult",
    "read_logs", "validate_logs", "loss_changes", "fit_decay", "multipliers", "fit_inverse_gamma",
    "fit_improvement", "fit_switch", "fit_logs", "family_base", "build_instance", "write_report",
    "write_instance_atomic", "fit_instance", "compress_samples",
]
