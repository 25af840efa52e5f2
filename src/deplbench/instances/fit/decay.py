"""A_m, B_m of the loss law (8) by least squares with X fixed to 1 (DepL Sec. VI-A)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from deplbench.instances.fit.logs import LogError
from deplbench.jsonio import optional_float as _num

#: Fewest distinct epochs with non-switch changes needed to fit (A_m, B_m):
#: two parameters plus at least one degree of freedom for the residual.
MIN_EPOCHS = 3


#: Upper bound of B_m; at the bound the decay is flat over any realistic
#: horizon and the fit says so in its diagnostics.
B_MAX = 1e6


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


#: Magnitudes of the mean per-epoch loss change the fit accepts: their squares
#: (the least-squares objective) stay normal float64 numbers.
_FIT_RANGE = (1e-150, 1e150)


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
    size = float(np.max(np.abs(means))) if means.size else 0.0
    if size > 0 and not _FIT_RANGE[0] <= size <= _FIT_RANGE[1]:
        # squares of such changes under/overflow float64: the bounded least squares
        # would fail with its own text ("Initial guess is outside of provided bounds")
        raise LogError(
            f"loss: model {model!r} changes the loss by up to {size:.3g} per epoch, outside the range "
            f"[{_FIT_RANGE[0]:g}, {_FIT_RANGE[1]:g}] eq. (8) can be fitted in; rescale the log's loss column"
        )
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
    try:
        res = optimize.least_squares(
            residual, x0=[max(a0, 1e-300), min(b0, B_MAX * 0.999)], bounds=([1e-300, 0.0], [np.inf, B_MAX]),
            x_scale=[max(a0, 1e-12), max(b0, 1.0)], method="trf",
        )
    except ValueError as exc:
        raise LogError(f"loss: model {model!r}: the decay of eq. (8) cannot be fitted to its loss changes "
                       f"(least squares: {exc})") from None
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
