"""Probability distributions of the random loss terms.

The DepL paper models the per-epoch improvement multiplier X_m of eq. (8) as
inverse-gamma and the model-switch jump l_sw as Student's t (Sec. VI-A,
Fig. 4). Deterministic instances (the knapsack reduction of Property 1) need a
point mass, and users with measured trajectories need an empirical
distribution. Every distribution is a small pydantic model, discriminated by
``kind`` in JSON, with a vectorised interface:

``sample(rng, size)``, ``mean()``, ``var()``, ``ppf(q)``, ``cdf(x)``,
``is_deterministic``.

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
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Parameters are strict JSON numbers: ``true`` or ``"0.5"`` is refused, not
#: coerced (docs/instances.md §1).
_Finite = Annotated[float, Field(allow_inf_nan=False, strict=True)]


@lru_cache(maxsize=512)
def _scipy_law(dist: "_Dist"):
    """The frozen SciPy law of ``dist``, built once per distinct parameters.

    Freezing a SciPy distribution costs milliseconds; the exact violation
    bounds and the adaptive DP call cdf/sf/pdf thousands of times on the
    same few laws. The models are frozen (hashable, immutable), so a cache
    keyed on them cannot go stale."""
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

    def _frozen(self):  # pragma: no cover - overridden
        raise NotImplementedError


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

        return stats.invgamma(self.shape, scale=self.scale)

    def mean(self) -> float:
        return self.scale / (self.shape - 1.0) if self.shape > 1 else math.inf

    def var(self) -> float:
        if self.shape <= 2:
            return math.inf
        m = self.scale / (self.shape - 1.0)  # mean²/(a−2) as m·(m/(a−2)): no float ** overflow (shape 1e300)
        return m * (m / (self.shape - 2.0))

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        # X = b / G with G ~ Gamma(a, 1): the same law as scipy's
        # invgamma.rvs in one vectorised numpy draw, without scipy's per-call
        # argument handling.
        return self.scale / rng.standard_gamma(self.shape, size)


class StudentT(_Dist):
    """Student's t with ``df`` degrees of freedom, location and scale."""

    kind: Literal["student_t"] = "student_t"
    df: _Finite = Field(gt=0)
    loc: _Finite = Field(default=0.0)
    scale: _Finite = Field(gt=0)

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return stats.t(self.df, loc=self.loc, scale=self.scale)

    def mean(self) -> float:
        return self.loc if self.df > 1 else math.nan

    def var(self) -> float:
        if self.df <= 2:
            return math.inf
        return self.scale**2 * self.df / (self.df - 2.0)

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

        return stats.norm(loc=self.mu, scale=self.std)

    def mean(self) -> float:
        return self.mu

    def var(self) -> float:
        return self.std**2

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.normal(self.mu, self.std, size)


class LogNormal(_Dist):
    """Log-normal: exp(N(mu, sigma²))."""

    kind: Literal["lognormal"] = "lognormal"
    mu: _Finite
    sigma: _Finite = Field(gt=0)

    def _frozen(self):
        from scipy import stats  # imported on use: loading an instance need not import scipy

        return stats.lognorm(self.sigma, scale=math.exp(self.mu))

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
    samples: tuple[Annotated[float, Field(strict=True)], ...] = Field(min_length=1)

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
    "Normal",
    "LogNormal",
    "PointMass",
    "Empirical",
]
