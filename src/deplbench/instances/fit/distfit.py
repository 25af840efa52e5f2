"""Distribution fits of X_m (inverse-gamma, eq. (8)) and l_sw (Student's t), with KS tests.

DepL Sec. VI-A, Fig. 4: X_m is fitted as inverse-gamma and judged by the
Kolmogorov–Smirnov p-value (Fig. 4 centre), with the empirical sample as a
fallback when KS rejects; the switch jump l_sw is fitted as Student's t,
deconvolved from the switch epoch's own training step (Fig. 4 right).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from deplbench.instances.distributions import Empirical, InverseGamma, PointMass, StudentT
from deplbench.instances.fit.logs import LogError
from deplbench.jsonio import optional_float as _num

#: Quadrature nodes of X used to deconvolve the run term from a switch epoch.
SWITCH_NODES = 64
#: Largest degrees of freedom of a fitted switch jump (Student's t): beyond, it is a normal law.
MAX_DF = 1e3
#: A fitted df whose log-likelihood beats MAX_DF's (loc and scale refitted) by at most this many nats
#: is reported as MAX_DF (:func:`fit_switch`): a likelihood-ratio statistic of 0.02 is no evidence of
#: heavy tails, and a gap in nats does not depend on the loss's unit.
FLAT_DF = 0.01


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
            Empirical(samples=tuple(compress_samples(x, max_empirical))),
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
            "inverse_gamma", params, n, d, p, method, False,
            Empirical(samples=tuple(compress_samples(x, max_empirical))),
            f"fitted shape {a:.3g} <= 2 gives an infinite variance; empirical sample kept", x,
        )
    if p >= alpha:
        return DistFit("inverse_gamma", params, n, d, p, method, True, InverseGamma(shape=a, scale=b), "", x)
    return DistFit(
        "inverse_gamma", params, n, d, p, method, False, Empirical(samples=tuple(compress_samples(x, max_empirical))),
        f"KS rejects the inverse-gamma fit (p = {p:.3g} < {alpha})", x,
    )


def _t_logpdf(z: np.ndarray, df: float) -> np.ndarray:
    # Standard Student's t log-density, written out because scipy's frozen
    # distributions add per-call overhead inside an optimiser loop.
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
    fallback = lambda: Empirical(samples=tuple(compress_samples(resid, max_empirical)))  # noqa: E731
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
    bounds = [(math.log(min_df), math.log(MAX_DF)), (None, None), (math.log(s0) - 25, math.log(s0) + 10)]
    best = None
    for df0 in (4.0, 30.0):
        r = optimize.minimize(nll, x0=[math.log(max(df0, min_df)), med, math.log(s0)], method="L-BFGS-B",
                              bounds=bounds)
        if best is None or r.fun < best.fun:
            best = r
    assert best is not None      # the loop above ran at least once
    df, loc, scale = math.exp(best.x[0]), float(best.x[1]), math.exp(best.x[2])
    # Near-normal jumps leave the likelihood flat in df: where the optimiser stops there depends on
    # the last bits of its arithmetic, e.g. on the BLAS kernel a CPU selects (docs/fit.md, "Method").
    # A df whose likelihood beats the cap's (loc and scale refitted) by at most
    # FLAT_DF nats is no evidence of heavy tails: the cap is reported, on every machine. (A fit at
    # the bound comes back as exp(log(1000)) < 1000 and is refitted at the cap too.)
    cap = optimize.minimize(lambda th: nll([math.log(MAX_DF), th[0], th[1]]), x0=[loc, math.log(scale)],
                            method="L-BFGS-B", bounds=bounds[1:])
    if df < MAX_DF and math.isfinite(cap.fun) and cap.fun - best.fun <= FLAT_DF:
        df, loc, scale = MAX_DF, float(cap.x[0]), math.exp(cap.x[1])
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
