"""Probability distributions of the random loss terms.

The DepL paper models the per-epoch improvement multiplier X_m of eq. (8) as
inverse-gamma and the model-switch jump l_sw as Student's t (Sec. VI-A,
Fig. 4). Deterministic instances (the knapsack reduction of Property 1) need a
point mass, and users with measured trajectories need an empirical
distribution. Every distribution is a small pydantic model, discriminated by
``kind`` in JSON, with a vectorised interface:

``sample(rng, size)``, ``mean()``, ``var()``, ``ppf(q)``, ``cdf(x)``,
``is_deterministic``, and the two tail quantiles ``tails(p)`` with a
SciPy-free bound on them, ``tail_bound(p)``.

Examples
--------
>>> import numpy as np
>>> X = InverseGamma.from_moments(mean=1.02, var=0.031)   # Table I, AlexNet fast-unsteady
>>> round(X.mean(), 6), round(X.var(), 6)
(1.02, 0.031)
>>> X.sample(np.random.default_rng(0), 3).shape
(3,)
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, FailFast, Field, field_validator

#: Parameters are strict JSON numbers: ``true`` or ``"0.5"`` is refused, not
#: coerced (docs/instances.md §1).
_Finite = Annotated[float, Field(allow_inf_nan=False, strict=True)]
#: Relative slack of :meth:`_Dist.tail_bound` over the closed form it
#: evaluates: room for the quantile functions' own rounding error, so that
#: the bound also holds for the computed :meth:`_Dist.tails`.
_BOUND_SLACK = 1e-9


class _BoundLaw:
    """A SciPy distribution with its parameters bound: what ``stats.t(df, loc=…, scale=…)``
    freezes, without freezing.

    A frozen SciPy law builds a new distribution instance and its docstring
    for every law, which dominates an instance of many switch laws; this one
    calls the shared distribution object with the law's arguments, so every
    value is the frozen law's.
    """

    __slots__ = ("dist", "args", "kwds")

    def __init__(self, dist, *args, **kwds):
        self.dist, self.args, self.kwds = dist, args, kwds

    def cdf(self, x):
        return self.dist.cdf(x, *self.args, **self.kwds)

    def ppf(self, q):
        return self.dist.ppf(q, *self.args, **self.kwds)

    def sf(self, x):
        return self.dist.sf(x, *self.args, **self.kwds)

    def pdf(self, x):
        return self.dist.pdf(x, *self.args, **self.kwds)

    def mean(self):
        return self.dist.mean(*self.args, **self.kwds)

    def var(self):
        return self.dist.var(*self.args, **self.kwds)


@lru_cache(maxsize=512)
def _scipy_law(dist: "_Dist"):
    """The SciPy law of ``dist`` (a :class:`_BoundLaw`), built once per distinct parameters.

    The exact violation bounds and the adaptive DP call cdf/sf/pdf thousands
    of times on the same few laws. The models are frozen (hashable,
    immutable), so a cache keyed on them cannot go stale."""
    return dist._frozen()


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def is_deterministic(self) -> bool:
        return False

    def cdf(self, x):
        return _scipy_law(self).cdf(x)

    def ppf(self, q):
        return _scipy_law(self).ppf(q)

    def sf(self, x):
        """P(X > x), accurate in the upper tail (no 1 − cdf cancellation)."""
        return _scipy_law(self).sf(x)

    def pdf(self, x):
        """Density (continuous kinds only)."""
        return _scipy_law(self).pdf(x)

    def mean(self) -> float:
        return float(_scipy_law(self).mean())

    def var(self) -> float:
        return float(_scipy_law(self).var())

    def tails(self, p: float) -> tuple[float, float]:
        """The ``p`` and ``1 − p`` quantiles, ±inf where they overflow.

        Parameters
        ----------
        p : float
            The tail mass, in (0, 1/2).

        Returns
        -------
        (float, float)
            The lower and upper quantile (Python floats).

        Notes
        -----
        The one computation of a law's tails: the binary64 check of
        :mod:`deplbench.instances.magnitudes` and the kernels of the adaptive
        chain both take them from here. An atomic law (point mass,
        empirical) gives its smallest and largest atom whatever ``p``: the
        check must see every atom, and the chain's kernels keep them all.
        Overflow raises no warning: finding laws whose tails overflow is what
        the check is for.
        """
        with np.errstate(all="ignore"):
            lo, hi = self.ppf([p, 1.0 - p])
        return float(lo), float(hi)

    def tail_bound(self, p: float) -> float:
        """A bound on the magnitude of :meth:`tails`, from a closed form, without SciPy.

        Parameters
        ----------
        p : float
            The tail mass, in (0, 1/2).

        Returns
        -------
        float
            B ≥ max(|lo|, |hi|) of ``tails(p)``; ``inf`` where no closed form
            gives one (or it overflows).

        Notes
        -----
        A law whose bound clears a limit has its tails within it, so the
        binary64 check of :mod:`deplbench.instances.magnitudes` computes the
        tails (and imports SciPy) only for a law its bound does not clear.
        The upper quantile is computed at ``fl(1 − p)``, whose tail mass is
        ``p`` up to 2⁻⁵³: the bounds hold at the mass ``p − 2⁻⁵²`` and carry
        a relative slack of 1e-9 for the quantile functions' rounding.
        """
        return math.inf

    def _frozen(self):  # pragma: no cover - overridden
        raise NotImplementedError


def _bound_mass(p: float) -> float:
    """The tail mass :meth:`_Dist.tail_bound` bounds at (its Notes): ``p`` less 2⁻⁵², or 0."""
    return max(0.0, p - 2.0**-52)


def _slack(x: float) -> float:
    return x * (1.0 + _BOUND_SLACK)


def _exp_or_inf(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


class InverseGamma(_Dist):
    """Inverse-gamma(shape a, scale b): density ∝ x^(−a−1) e^(−b/x), x > 0.

    Mean b/(a−1) for a > 1, variance b²/((a−1)²(a−2)) for a > 2.
    """

    kind: Literal["inverse_gamma"] = "inverse_gamma"
    shape: _Finite = Field(gt=0)
    scale: _Finite = Field(gt=0)

    @classmethod
    def from_moments(cls, mean: float, var: float) -> "InverseGamma":
        """Moment matching: the inverse-gamma with the given mean and variance.

        Solving mean = b/(a−1), var = mean²/(a−2) gives a = mean²/var + 2 and
        b = mean (a−1). This is how Table I's (expected improvement, variance)
        columns become the X_m of eq. (8).

        Raises
        ------
        ValueError
            If ``mean`` or ``var`` is not a positive finite number.
        """
        if not (math.isfinite(mean) and mean > 0):
            raise ValueError(f"mean must be a positive finite number, got {mean!r}")
        if not (math.isfinite(var) and var > 0):
            raise ValueError(f"var must be a positive finite number, got {var!r}")
        shape = mean * mean / var + 2.0
        return cls(shape=shape, scale=mean * (shape - 1.0))

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return _BoundLaw(stats.invgamma, self.shape, scale=self.scale)

    def mean(self) -> float:
        return self.scale / (self.shape - 1.0) if self.shape > 1 else math.inf

    def var(self) -> float:
        if self.shape <= 2:
            return math.inf
        m = self.scale / (self.shape - 1.0)  # mean²/(a−2) as m·(m/(a−2)): no float ** overflow (shape 1e300)
        return m * (m / (self.shape - 2.0))

    def tail_bound(self, p: float) -> float:
        # X = b/G with G ~ Gamma(a, 1), and P(G ≤ g) ≤ g^a/Γ(a + 1) (e^(−t) ≤ 1
        # under the integral): G's p-quantile is at least g* = (p Γ(a + 1))^(1/a),
        # so X's upper quantile is at most b/g*; X > 0 bounds the lower one by it.
        q = _bound_mass(p)
        try:
            log_g = (math.log(q) + math.lgamma(self.shape + 1.0)) / self.shape
        except (OverflowError, ValueError):     # q = 0, or Γ(a + 1) beyond binary64
            return math.inf
        return _slack(_exp_or_inf(math.log(self.scale) - log_g))

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        # X = b / G with G ~ Gamma(a, 1): the same law as scipy's
        # invgamma.rvs in one vectorised numpy draw, without scipy's per-call
        # argument handling.
        return self.scale / rng.standard_gamma(self.shape, size)


#: Smallest accepted ``df`` of :class:`StudentT`. The t law's p-quantile grows
#: like p^(−1/df), and SciPy's ``t.ppf`` returns wrong finite numbers (capped
#: near 2e153, e.g. 6.7e3 at df = 1e-300 for every p ≤ 0.01) once the true
#: quantile passes about 1e150. At df ≥ 1/8 every tail mass down to 1e-16 (below
#: which 1 − p rounds to 1 in binary64) has its quantile within 1e130, and
#: ``t.cdf(t.ppf(p)) = p`` to 1e-15 relative (docs/instances.md §1).
MIN_STUDENT_DF = 0.125


class StudentT(_Dist):
    """Student's t with ``df`` degrees of freedom, location and scale.

    ``df`` ≥ :data:`MIN_STUDENT_DF`: below it the quantiles that the binary64
    check and the exact bounds read (:meth:`tails`) are not computable.
    """

    kind: Literal["student_t"] = "student_t"
    df: _Finite = Field(gt=0)
    loc: _Finite = Field(default=0.0)
    scale: _Finite = Field(gt=0)

    @field_validator("df")
    @classmethod
    def _computable(cls, value: float) -> float:
        if value < MIN_STUDENT_DF:
            raise ValueError(f"must be at least {MIN_STUDENT_DF:g}, got {value!r}: below it the law's quantiles "
                             "(of order p^(-1/df)) exceed what SciPy's t.ppf computes correctly in binary64")
        return value

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return _BoundLaw(stats.t, self.df, loc=self.loc, scale=self.scale)

    def mean(self) -> float:
        return self.loc if self.df > 1 else math.nan

    def var(self) -> float:
        if self.df <= 2:
            return math.inf
        return self.scale**2 * self.df / (self.df - 2.0)

    def tail_bound(self, p: float) -> float:
        # Markov on |T|^r for 0 < r < df: P(T ≥ t) = P(|T| ≥ t)/2 ≤ E|T|^r/(2t^r),
        # so the standard t's upper quantile is at most (E|T|^r/(2p))^(1/r).
        # r = 2 (E T² = df/(df − 2)) for df > 2; else r = 0.9 df, with
        # E|T|^r = df^(r/2) Γ((r + 1)/2) Γ((df − r)/2) / (√π Γ(df/2)).
        q, df = _bound_mass(p), self.df
        try:
            if df > 2:
                r, log_m = 2.0, math.log(df / (df - 2.0))
            else:
                r = 0.9 * df
                log_m = (0.5 * r * math.log(df) + math.lgamma(0.5 * (r + 1.0)) + math.lgamma(0.5 * (df - r))
                         - 0.5 * math.log(math.pi) - math.lgamma(0.5 * df))
            t = _exp_or_inf((log_m - math.log(2.0 * q)) / r)
        except (OverflowError, ValueError):     # q = 0, or a Γ beyond binary64
            return math.inf
        return _slack(abs(self.loc) + self.scale * t)

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return self.loc + self.scale * rng.standard_t(self.df, size)


class Normal(_Dist):
    """Normal(mean, std)."""

    kind: Literal["normal"] = "normal"
    mu: _Finite = Field(alias="mean")
    std: _Finite = Field(gt=0)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return _BoundLaw(stats.norm, loc=self.mu, scale=self.std)

    def mean(self) -> float:
        return self.mu

    def var(self) -> float:
        return self.std**2

    def tail_bound(self, p: float) -> float:
        q = _bound_mass(p)
        if q <= 0:
            return math.inf
        return _slack(abs(self.mu) - NormalDist().inv_cdf(q) * self.std)   # μ ± z σ (Python floats: ±inf on overflow)

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.normal(self.mu, self.std, size)


class LogNormal(_Dist):
    """Log-normal: exp(N(mu, sigma²))."""

    kind: Literal["lognormal"] = "lognormal"
    mu: _Finite
    sigma: _Finite = Field(gt=0)

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return _BoundLaw(stats.lognorm, self.sigma, scale=math.exp(self.mu))

    def tails(self, p: float) -> tuple[float, float]:
        try:
            return super().tails(p)
        except OverflowError:   # exp(mu) beyond binary64: SciPy's law (scale exp(mu)) cannot be built
            return _exp_or_inf(self.mu + NormalDist().inv_cdf(p) * self.sigma), math.inf

    def tail_bound(self, p: float) -> float:
        q = _bound_mass(p)
        if q <= 0:
            return math.inf
        return _slack(_exp_or_inf(self.mu - NormalDist().inv_cdf(q) * self.sigma))   # both tails are positive

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, size)


class PointMass(_Dist):
    """A deterministic value (DepL Property 1's knapsack instances)."""

    kind: Literal["point"] = "point"
    value: _Finite

    @property
    def is_deterministic(self) -> bool:
        return True

    def cdf(self, x):
        return np.where(np.asarray(x, dtype=float) >= self.value, 1.0, 0.0)

    def sf(self, x):
        """P(X > x): 1 below the point, 0 from it on."""
        return np.where(np.asarray(x, dtype=float) >= self.value, 0.0, 1.0)

    def pdf(self, x):
        raise ValueError("a point mass has no density; use cdf/sf")

    def ppf(self, q):
        return np.full(np.shape(q), self.value, dtype=float) if np.ndim(q) else self.value

    def tails(self, p: float) -> tuple[float, float]:
        return self.value, self.value

    def tail_bound(self, p: float) -> float:
        return abs(self.value)

    def mean(self) -> float:
        return self.value

    def var(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        # Draw nothing: a point mass must not shift the generator's stream,
        # so adding a deterministic term never changes the other draws.
        return np.full(size, self.value, dtype=float)


class Empirical(_Dist):
    """The empirical distribution of measured samples (bootstrap draws)."""

    kind: Literal["empirical"] = "empirical"
    #: A tuple, so that the frozen model is hashable like every other law
    #: (the law cache :func:`_scipy_law` and any set or dict key need that);
    #: a JSON array or a Python list is accepted and stored as a tuple.
    samples: Annotated[tuple[Annotated[float, Field(strict=True)], ...], FailFast()] = Field(min_length=1)

    @field_validator("samples")
    @classmethod
    def _finite(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if not all(math.isfinite(v) for v in value):
            raise ValueError("samples must all be finite numbers")
        return value

    @property
    def is_deterministic(self) -> bool:
        return len(set(self.samples)) == 1

    def _array(self) -> np.ndarray:
        return np.asarray(self.samples, dtype=float)

    def cdf(self, x):
        s = np.sort(self._array())
        return np.searchsorted(s, np.asarray(x, dtype=float), side="right") / s.size

    def sf(self, x):
        """P(X > x): the share of samples above ``x`` (exact, no 1 − cdf)."""
        s = np.sort(self._array())
        return (s.size - np.searchsorted(s, np.asarray(x, dtype=float), side="right")) / s.size

    def pdf(self, x):
        raise ValueError("an empirical law has no density (it is discrete); use cdf/sf")

    def ppf(self, q):
        # Inverse of the right-continuous empirical cdf (the lower quantile).
        s = np.sort(self._array())
        q = np.asarray(q, dtype=float)
        idx = np.clip(np.ceil(q * s.size).astype(int) - 1, 0, s.size - 1)
        out = s[idx]
        return out if out.ndim else float(out)

    def tails(self, p: float) -> tuple[float, float]:
        return min(self.samples), max(self.samples)

    def tail_bound(self, p: float) -> float:
        lo, hi = self.tails(p)
        return max(abs(lo), abs(hi))

    def mean(self) -> float:
        return float(self._array().mean())

    def var(self) -> float:
        return float(self._array().var())

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        if self.is_deterministic:
            # Like a point mass: a constant draws nothing from the stream.
            return np.full(size, self.samples[0], dtype=float)
        return rng.choice(self._array(), size=size, replace=True)


Distribution = Annotated[
    Union[InverseGamma, StudentT, Normal, LogNormal, PointMass, Empirical],
    Field(discriminator="kind"),
]

__all__ = [
    "Distribution",
    "InverseGamma",
    "StudentT",
    "MIN_STUDENT_DF",
    "Normal",
    "LogNormal",
    "PointMass",
    "Empirical",
]
