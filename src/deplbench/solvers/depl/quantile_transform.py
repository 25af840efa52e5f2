"""Additive surrogates of the loss quantile for DepL's expanded graph.

The problem
-----------
An expanded-graph search needs path features that are *sums* of edge
features (DepL paper Sec. IV-B, refs. [20], [21]). Elapsed time is additive;
the ω-quantile of ℓ(K) = ℓ(0) + Σ_k Δ_k is not: the pdf of a sum is the
convolution of the pdfs. The paper moves to the Laplace domain and takes
logarithms so that convolutions become sums. This module makes that idea
precise: for every method below, the bound on the ω-quantile of a path is

    q(path) = ℓ(0) + Σ_{increments Δ on the path} φ(Δ) + offset,

so a path is accepted when ℓ(0) + Σ φ ≤ ℓmax − offset, an *additive*
constraint that the expanded graph tracks on its loss axis.

Methods and the guarantee each gives
------------------------------------
``chernoff`` (default; the paper's transform trick, made rigorous)
    For a fixed θ > 0, the cumulant generating function of a sum of
    independent increments is additive:
    Λ(θ) = log E[e^{θ ℓ(K)}] = θ ℓ(0) + Σ_k log E[e^{θ Δ_k}] (the logarithm of
    the Laplace transform of each increment's pdf — exactly the paper's step
    3). Markov's inequality on e^{θ ℓ(K)} gives P(ℓ(K) > q) ≤ e^{Λ(θ) − θq},
    so q = Λ(θ)/θ + ln(1/α_c)/θ bounds the ω-quantile with α_c = 1 − ω.
    φ(Δ) = (1/θ) log E[e^{θΔ}] ≥ E[Δ] (Jensen).

    *Heavy tails.* The run term is Δ = −a·X with X ≥ 0 for the
    inverse-gamma/log-normal laws, so E[e^{θΔ}] = E[e^{−θaX}] is the Laplace
    transform of X and is finite for every θ > 0. The switch jump l_sw
    (Student's t, or any law with an unbounded right tail) has no moment
    generating function for θ > 0. We truncate honestly: each such increment
    is replaced by min(Δ, τ) with τ its (1 − δ)-quantile (for a run term with
    an unbounded *lower* tail of X, X is replaced by max(X, X_δ)). On the
    event that no truncated increment exceeds its τ, ℓ(K) equals the
    truncated sum, hence by the union bound

        P(ℓ(K) > q) ≤ N_tr·δ + P(truncated sum > q),

    where N_tr is the largest number of truncated increments any plan can
    contain (K̄ − 1 switches, K̄ run terms). We set δ = α_tail / N_tr with
    α_tail = ``tail_share``·(1 − ω) and spend α_c = (1 − ω) − α_tail on the
    Chernoff bound. Every log-moment is computed in closed form (point mass,
    normal, empirical) or as an *upper* Riemann sum of the monotone
    integrand over a quantile grid of the law's ``ppf`` (left end points for
    the decreasing e^{−θax}, right end points for the increasing e^{θj}), so
    the computed φ never under-estimates the exact one (up to floating point
    and the accuracy of ``ppf``).

    **Guarantee.** If the increments are independent and follow the
    instance's laws, every path whose tracked value satisfies the constraint
    has P(ℓ(K) > ℓmax) ≤ 1 − ω: a *proven* quantile bound, not an estimate.
    Its price is conservatism, largest for heavy-tailed switch jumps.

``cantelli``
    One-sided Chebyshev: P(ℓ − μ ≥ z·σ) ≤ 1/(1 + z²), so q = μ + z·σ with
    z = sqrt(ω/(1−ω)) bounds the quantile for any law with finite variance.
    μ and σ² = Σ Var are additive but σ is not; the tangent inequality
    sqrt(V) ≤ (V/s + s)/2 (any s > 0, equality at s = sqrt(V)) gives
    φ(Δ) = E[Δ] + z·Var[Δ]/(2s) and offset z·s/2. **Guarantee:** proven for
    every s, distribution-free; needs every variance finite (Student's t with
    df ≤ 2 or inverse-gamma with shape ≤ 2 make it inapplicable).

``normal``
    The same tangent linearisation with z = Φ⁻¹(ω): the central-limit
    approximation μ + z·σ. **No guarantee** (it under-covers skewed or
    heavy-tailed sums); DepL's out-of-sample check and retry loop catch the
    plans where it fails.

``expected``
    φ(Δ) = E[Δ], offset 0: the expected loss, no quantile at all (the
    *best-exp* baseline of the paper's Sec. VI-B).

Deterministic instances (every increment a point mass, or a degenerate
empirical law) use φ(Δ) = Δ exactly and offset 0 for every method except
``expected`` (the same thing) — the θ → ∞ limit of ``chernoff``.

References
----------
DepL paper, Sec. IV-B (transform trick) and eq. (3). H. Chernoff, "A measure
of asymptotic efficiency for tests of a hypothesis based on the sum of
observations", Ann. Math. Stat. 23 (1952). F. P. Cantelli, "Sui confini della
probabilità", 1928 (one-sided Chebyshev inequality).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from deplbench.errors import SolverError
from deplbench.limits import check_time
from deplbench.params import Param

METHODS = ("chernoff", "cantelli", "normal", "expected")

#: Quantile grid used for the upper Riemann sums: uniform in the bulk,
#: geometric towards both ends so the tails are resolved to ~1e-15.
_GRID_BULK = 1024
_GRID_TAIL = np.logspace(-15, -2, 261)


def _quantile_grid() -> np.ndarray:
    bulk = np.linspace(0.0, 1.0, _GRID_BULK + 1)
    u = np.concatenate([bulk, _GRID_TAIL, 1.0 - _GRID_TAIL])
    return np.unique(np.clip(u, 0.0, 1.0))


_U = _quantile_grid()
#: Laws whose transforms are computed in closed form (no grid).
_CLOSED = ("point", "empirical", "normal")


@dataclass(frozen=True)
class IncrementBound:
    """One additive surrogate of the ω-quantile (one method, one parameter).

    Attributes
    ----------
    method : str
        One of :data:`METHODS` (or ``"exact"`` for deterministic instances).
    param : float
        θ for ``chernoff``, s for ``cantelli``/``normal``, 0 otherwise.
    run_phi : ndarray, shape (K̄, |M|)
        φ of the run term of model m at global epoch k (row k−1).
    jump_phi : ndarray, shape (|M|, |M|)
        φ of the switch m → m' (0 on the diagonal, +inf where not allowed).
    offset : float
        Added to ℓ(0) + Σ φ to obtain the quantile bound.
    tail_delta : float
        δ, the mass cut off each truncated increment (0 if none).
    guarantee : str
        Plain-language statement of what the bound guarantees.
    """

    method: str
    param: float
    run_phi: np.ndarray
    jump_phi: np.ndarray
    offset: float
    tail_delta: float = 0.0
    guarantee: str = ""
    notes: list = field(default_factory=list)

    def path_bound(self, initial_loss: float, models) -> float:
        """The quantile bound ℓ(0) + Σ φ + offset of a model sequence (no rounding)."""
        models = np.asarray(models, dtype=int)
        total = initial_loss + float(self.run_phi[np.arange(models.size), models].sum())
        for a, b in zip(models[:-1], models[1:]):
            if a != b:
                total += float(self.jump_phi[a, b])
        return total + self.offset


def _kind(dist) -> str:
    return getattr(dist, "kind", type(dist).__name__.lower())


def _support(dist) -> tuple[float, float]:
    lo = float(dist.ppf(0.0))
    hi = float(dist.ppf(1.0))
    return lo, hi


def _is_deterministic(dist) -> bool:
    return bool(getattr(dist, "is_deterministic", False))


def _point_value(dist) -> float:
    if _kind(dist) == "point":
        return float(dist.value)
    return float(np.asarray(dist.samples, dtype=float)[0])


def needs_truncation(dist, side: str) -> bool:
    """Whether the log-moment of ``dist`` on ``side`` is infinite.

    Parameters
    ----------
    dist : Distribution
    side : {"upper", "lower"}
        ``"upper"``: E[e^{θJ}] (a jump, loss goes up with J);
        ``"lower"``: E[e^{−tX}] (a run multiplier, loss goes up as X falls).

    Returns
    -------
    bool
        True when the law's support is unbounded on that side and no closed
        form exists (the normal law has one and is never truncated).
    """
    kind = _kind(dist)
    if kind in ("point", "empirical", "normal"):
        return False
    lo, hi = _support(dist)
    return not math.isfinite(hi if side == "upper" else lo)


def _lse(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """log Σ w·e^a along the last axis (w > 0), stable."""
    m = a.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.exp(a - m) @ w) + m[..., 0]


#: Values (float64) of one block of the (t, grid) matrix in :func:`_lse_outer`:
#: 4 Mi values = 32 MiB, so a horizon-100000 transform never holds the whole
#: (K̄, grid) matrix (3.7 GB at K̄ = 100000; docs/DESIGN.md, limits).
_BLOCK_VALUES = 1 << 22


def _lse_outer(t: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """log Σ_i w_i·e^{−t·x_i} for every entry of ``t``, in row blocks.

    Same values as ``_lse(-t[..., None] * x, w)`` with memory bounded by
    :data:`_BLOCK_VALUES`; the deadline is checked once per block.
    """
    flat = t.reshape(-1)
    out = np.empty(flat.size)
    rows = max(1, _BLOCK_VALUES // max(1, x.size))
    for i in range(0, flat.size, rows):
        check_time(f"quantile transform, epoch {i} of {flat.size}")
        out[i:i + rows] = _lse(-flat[i:i + rows, None] * x, w)
    return out.reshape(t.shape)


def lower_grid(dist, delta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(x, weight) of the left-end-point quantile grid of max(X, X_δ)."""
    u = _U
    x = np.asarray(dist.ppf(np.maximum(u[:-1], delta)), dtype=float)
    if not np.all(np.isfinite(x)):
        raise SolverError(f"quantile transform: {_kind(dist)} law has an unbounded lower tail; truncation needed")
    w = np.diff(u)
    keep = w > 0
    return x[keep], w[keep]


def upper_grid(dist, delta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(x, weight) of the right-end-point quantile grid of min(J, J_{1−δ})."""
    u = _U
    x = np.asarray(dist.ppf(np.minimum(u[1:], 1.0 - delta)), dtype=float)
    if not np.all(np.isfinite(x)):
        raise SolverError(f"quantile transform: {_kind(dist)} law has an unbounded upper tail; truncation needed")
    w = np.diff(u)
    keep = w > 0
    return x[keep], w[keep]


def log_laplace(dist, t: np.ndarray, delta: float = 0.0, grid=None) -> np.ndarray:
    """Upper bound of log E[e^{−t·max(X, X_δ)}] for an array of t ≥ 0.

    Parameters
    ----------
    dist : Distribution
        The law of X (``X_m`` of eq. (8)).
    t : ndarray
        Non-negative arguments.
    delta : float
        Lower truncation mass (0 when X's lower support is finite).
    grid : tuple, optional
        Precomputed :func:`lower_grid` (x, weight).

    Returns
    -------
    ndarray
        Same shape as ``t``. Exact for point/empirical/normal laws; otherwise
        the upper Riemann sum over the quantile grid (left end points, since
        e^{−tx} decreases in x and x(u) increases in u).
    """
    t = np.asarray(t, dtype=float)
    kind = _kind(dist)
    if kind == "point":
        return -t * float(dist.value)
    if kind == "empirical":
        x = np.asarray(dist.samples, dtype=float)
        return _lse_outer(t, x, np.full(x.size, 1.0 / x.size))
    if kind == "normal":
        return -t * dist.mean() + 0.5 * t * t * dist.var()
    x, w = grid if grid is not None else lower_grid(dist, delta)
    return _lse_outer(t, x, w)


def log_mgf(dist, theta: float, delta: float = 0.0, grid=None) -> float:
    """Upper bound of log E[e^{θ·min(J, J_{1−δ})}] for θ > 0.

    Exact for point/empirical/normal laws; otherwise the upper Riemann sum
    with right end points (e^{θj} increases in j). ``grid`` is an optional
    precomputed :func:`upper_grid`.
    """
    kind = _kind(dist)
    if kind == "point":
        return theta * float(dist.value)
    if kind == "empirical":
        x = np.asarray(dist.samples, dtype=float)
        return float(_lse(theta * x, np.full(x.size, 1.0 / x.size)))
    if kind == "normal":
        return theta * dist.mean() + 0.5 * theta * theta * dist.var()
    x, w = grid if grid is not None else upper_grid(dist, delta)
    return float(_lse(theta * x, w))


@dataclass(frozen=True)
class LossModel:
    """The numbers the transforms need, extracted from an instance and γ.

    Attributes
    ----------
    run_coef : ndarray, shape (K̄, |M|)
        a[k, m] = γ · A_m · decay_m(k) ≥ 0: the run term is −a·X_m.
    improvement : list
        X_m laws.
    jumps : dict[(int, int), Distribution]
        l_sw laws of the allowed switches.
    allowed : ndarray of bool, shape (|M|, |M|)
    omega : float
    """

    run_coef: np.ndarray
    improvement: list
    jumps: dict
    allowed: np.ndarray
    omega: float
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def grid(self, dist, side: str, delta: float):
        """Cached quantile grid of one law (ppf calls dominate the cost)."""
        key = (id(dist), side, delta)
        if key not in self._cache:
            self._cache[key] = (lower_grid if side == "lower" else upper_grid)(dist, delta)
        return self._cache[key]

    def truncated(self, dist, side: str) -> bool:
        """Cached :func:`needs_truncation`."""
        key = (id(dist), side, "trunc")
        if key not in self._cache:
            self._cache[key] = needs_truncation(dist, side)
        return self._cache[key]

    @classmethod
    def from_instance(cls, instance, gamma: float) -> "LossModel":
        jumps = {pair: instance.switches[p].jump for p, pair in enumerate(instance.switch_pairs)}
        return cls(
            run_coef=gamma * np.asarray(instance.run_scale, dtype=float),
            improvement=[m.improvement for m in instance.models],
            jumps=jumps,
            allowed=np.asarray(instance.allowed, dtype=bool),
            omega=float(instance.omega),
        )

    @property
    def deterministic(self) -> bool:
        return all(_is_deterministic(d) for d in self.improvement) and all(
            _is_deterministic(d) for d in self.jumps.values()
        )

    def mean_phi(self) -> tuple[np.ndarray, np.ndarray]:
        """(run, jump) expected increments E[Δ]."""
        means = np.array([d.mean() for d in self.improvement])
        run = -self.run_coef * means[None, :]
        jump = self._jump_matrix(lambda d: d.mean())
        return run, jump

    def var_phi(self) -> tuple[np.ndarray, np.ndarray]:
        """(run, jump) increment variances Var[Δ] (may be inf)."""
        var = np.array([d.var() for d in self.improvement])
        run = self.run_coef**2 * var[None, :]
        jump = self._jump_matrix(lambda d: d.var())
        return run, jump

    def _jump_matrix(self, fn) -> np.ndarray:
        m = self.allowed.shape[0]
        out = np.full((m, m), np.inf)
        np.fill_diagonal(out, 0.0)
        for i, ((a, b), d) in enumerate(self.jumps.items()):
            check_time(f"quantile transform, switch {i} of {len(self.jumps)}")
            out[a, b] = float(fn(d))
        return out

    def reference_std(self, model: int, epochs: int) -> float:
        """Std of the run-term sum of ``epochs`` epochs of one model: the scale
        around which the θ (or s) grid is centred. Uses a robust spread when
        the variance is infinite."""
        d = self.improvement[model]
        var = float(d.var())
        if not math.isfinite(var):
            q = np.asarray(d.ppf([0.1587, 0.8413]), dtype=float)
            var = float(((q[1] - q[0]) / 2.0) ** 2) if np.all(np.isfinite(q)) else 1.0
        a = self.run_coef[: max(1, epochs), model]
        sd = math.sqrt(float(np.sum(a * a)) * var)
        return sd


def _exact_bound(lm: LossModel) -> IncrementBound:
    vals = np.array([_point_value(d) for d in lm.improvement])
    run = -lm.run_coef * vals[None, :]
    jump = lm._jump_matrix(_point_value)
    return IncrementBound(
        method="exact", param=0.0, run_phi=run, jump_phi=jump, offset=0.0,
        guarantee="exact: every increment is deterministic, the tracked value is the loss itself",
    )


def chernoff_bound(lm: LossModel, theta: float, tail_share: float) -> IncrementBound:
    """The Chernoff surrogate at one θ (see the module docstring).

    Parameters
    ----------
    lm : LossModel
    theta : float
        θ > 0.
    tail_share : float
        Fraction of 1 − ω spent on truncating heavy-tailed increments
        (used only if some increment needs truncation).

    Returns
    -------
    IncrementBound
    """
    alpha = 1.0 - lm.omega
    horizon, n_models = lm.run_coef.shape
    run_trunc = [lm.truncated(d, "lower") for d in lm.improvement]
    n_jumps = len(lm.jumps)
    jump_trunc = {}
    # one law's support, then its quantile grid, per switch: checked per switch
    # (20,000 switch laws take seconds before the DP's first layer)
    for i, (pair, d) in enumerate(lm.jumps.items()):
        check_time(f"quantile transform, support of switch {i} of {n_jumps}")
        jump_trunc[pair] = lm.truncated(d, "upper")
    n_tr = (horizon if any(run_trunc) else 0) + (max(horizon - 1, 0) if any(jump_trunc.values()) else 0)
    alpha_tail = tail_share * alpha if n_tr else 0.0
    delta = alpha_tail / n_tr if n_tr else 0.0
    alpha_c = alpha - alpha_tail
    run = np.empty((horizon, n_models))
    for m, d in enumerate(lm.improvement):
        t = theta * lm.run_coef[:, m]
        dl = delta if run_trunc[m] else 0.0
        grid = lm.grid(d, "lower", dl) if _kind(d) not in _CLOSED else None
        run[:, m] = log_laplace(d, t, dl, grid) / theta
    jump = np.full((n_models, n_models), np.inf)
    np.fill_diagonal(jump, 0.0)
    for i, (pair, d) in enumerate(lm.jumps.items()):
        if horizon < 2:
            break  # a one-epoch plan never switches: no jump to bound
        check_time(f"quantile transform, switch {i} of {n_jumps}")
        dl = delta if jump_trunc[pair] else 0.0
        grid = lm.grid(d, "upper", dl) if _kind(d) not in _CLOSED else None
        jump[pair] = log_mgf(d, theta, dl, grid) / theta
    notes = []
    if n_tr:
        notes.append(
            f"{n_tr} heavy-tailed increments per plan at most; each truncated at mass δ={delta:.3g} "
            f"(α_tail={alpha_tail:.3g} of 1−ω={alpha:.3g})"
        )
    return IncrementBound(
        method="chernoff", param=theta, run_phi=run, jump_phi=jump,
        offset=math.log(1.0 / alpha_c) / theta, tail_delta=delta,
        guarantee=(
            "proven: P(loss(K) > bound) <= 1 - omega for independent increments with the instance's laws "
            "(Chernoff bound + union bound over truncated heavy tails)"
        ),
        notes=notes,
    )


def tangent_bound(lm: LossModel, method: str, s: float) -> IncrementBound:
    """The mean + z·σ surrogate linearised at σ ≈ s (``cantelli`` or ``normal``).

    Raises
    ------
    SolverError
        If ``cantelli`` is asked for and some variance is infinite.
    """
    alpha = 1.0 - lm.omega
    z = math.sqrt(lm.omega / alpha) if method == "cantelli" else float(stats.norm.ppf(lm.omega))
    mrun, mjump = lm.mean_phi()
    vrun, vjump = lm.var_phi()
    if not (np.all(np.isfinite(vrun)) and np.all(np.isfinite(vjump[np.isfinite(mjump)]))):
        raise SolverError(
            f"quantile_method {method!r}: some increment has infinite variance "
            "(Student's t with df <= 2 or inverse-gamma with shape <= 2); use 'chernoff'"
        )
    run = mrun + z * vrun / (2.0 * s)
    jump = np.where(np.isfinite(mjump), mjump + z * vjump / (2.0 * s), np.inf)
    guarantee = (
        "proven for any law with finite variance (one-sided Chebyshev/Cantelli)"
        if method == "cantelli"
        else "approximate (central-limit normal quantile); no guarantee, checked out-of-sample"
    )
    return IncrementBound(method=method, param=s, run_phi=run, jump_phi=jump, offset=z * s / 2.0,
                          guarantee=guarantee)


def expected_bound(lm: LossModel) -> IncrementBound:
    """The expected-loss surrogate (no quantile): best-exp's view."""
    run, jump = lm.mean_phi()
    return IncrementBound(method="expected", param=0.0, run_phi=run, jump_phi=jump, offset=0.0,
                          guarantee="none: expected loss only")


#: The surrogate's options: the one declaration of their defaults and limits, shared
#: by DepL's parameter table (``quantile_method``, ``n_theta``, ``tail_share``) and
#: :func:`validate_method` (a direct :func:`build_bounds` call refuses what
#: ``--param`` refuses, with the same message).
QUANTILE_METHOD = Param("chernoff", str, "additive quantile surrogate: " + ", ".join(METHODS), choices=METHODS)
N_THETA = Param(5, int, "θ (or s) values tried for the surrogate", low=1, high=64)
TAIL_SHARE = Param(0.1, float, "share of 1−ω spent truncating heavy-tailed increments (chernoff)",
                   low=0.0, low_inclusive=False, high=0.99)


def validate_method(method: str, n_params: int, tail_share: float) -> tuple[str, int, float]:
    """The quantile-method options, checked against :data:`QUANTILE_METHOD`,
    :data:`N_THETA` and :data:`TAIL_SHARE`.

    Returns
    -------
    tuple of (str, int, float)
        The three values, converted.

    Raises
    ------
    SolverError
        Naming the offending parameter.
    """
    return (QUANTILE_METHOD.convert("quantile_method", method), N_THETA.convert("n_theta", n_params),
            TAIL_SHARE.convert("tail_share", tail_share))


def build_bounds(
    lm: LossModel,
    method: str = "chernoff",
    n_params: int = 5,
    ref_model: int = 0,
    ref_epochs: int = 1,
    tail_share: float = 0.1,
    spread: float = 4.0,
) -> list[IncrementBound]:
    """The family of surrogates DepL tries (one expanded graph each).

    Parameters
    ----------
    lm : LossModel
    method : str
        One of :data:`METHODS`.
    n_params : int
        Number of θ (chernoff) or s (cantelli/normal) values.
    ref_model, ref_epochs : int
        The reference plan (a model kept for ``ref_epochs`` epochs) whose
        loss std σ_ref centres the grid: θ* = sqrt(2 ln(1/α))/σ_ref (the
        minimiser of the Chernoff bound of a normal sum), s* = σ_ref.
    tail_share : float
        See :func:`chernoff_bound`.
    spread : float
        The grid spans [centre/spread, centre·spread] geometrically.

    Returns
    -------
    list of IncrementBound
        A single exact bound when the instance is deterministic.

    Notes
    -----
    θ must be the same along a whole path (it is one Chernoff bound), so it
    cannot be optimised per edge; trying a small grid and keeping the
    cheapest feasible plan is the usual remedy.
    """
    # a direct call is checked as the parameter table checks it (the same Params)
    method, n_params, tail_share = validate_method(method, n_params, tail_share)
    if method == "expected":
        return [expected_bound(lm)]
    if lm.deterministic:
        return [_exact_bound(lm)]
    sd = lm.reference_std(ref_model, ref_epochs)
    sd = sd if sd > 0 and math.isfinite(sd) else 1.0
    factors = np.geomspace(1.0 / spread, spread, n_params) if n_params > 1 else np.array([1.0])
    alpha = 1.0 - lm.omega
    if method == "chernoff":
        centre = math.sqrt(2.0 * math.log(1.0 / alpha)) / sd
        return [chernoff_bound(lm, float(centre * f), tail_share) for f in factors]
    return [tangent_bound(lm, method, float(sd * f)) for f in factors]


__all__ = [
    "METHODS",
    "N_THETA",
    "QUANTILE_METHOD",
    "TAIL_SHARE",
    "IncrementBound",
    "LossModel",
    "build_bounds",
    "chernoff_bound",
    "tangent_bound",
    "expected_bound",
    "log_laplace",
    "log_mgf",
    "needs_truncation",
    "validate_method",
]
