"""The paper's Fig. 4 reproduced on measured logs, with alternatives and an independence test.

Needs no training library: it reads logs in the long format of
``deplbench fit`` (default: the shipped measurement,
``deplbench/instances/data/measured/digits-mlp.csv.gz``) and computes

* **Fig. 4 left**: the multipliers x of eq. (8) of one two-stage cell
  (F1 = 0.5, K1 = 15, F2 = 0.75; the paper's F1, F2 with our nearest K1)
  with the maximum-likelihood inverse-gamma fit and its KS p-value;
* **Fig. 4 centre**: the KS p-value of the inverse-gamma fit in every cell
  of the K1 × K2 × F1 × F2 grid (A, B fitted per cell on its second stage,
  as Sec. VI-A step (i));
* **Fig. 4 right**: the switch jump l_sw of F1 = 0.36 → F2 = 0.5 with the
  Student's t fit of :func:`deplbench.instances.fit.fit_switch`;
* the alternatives (lognormal, gamma, normal; scipy.stats maximum
  likelihood) on the same samples, compared by KS p-value and AIC;
* **independence**: the lag-1 autocorrelation of the per-epoch multipliers
  within runs (raw, as eq. (8) uses them, and after removing the mean curve
  of each configuration), with a 95 % percentile bootstrap interval over
  runs; and the variance of the final loss against what independent
  multipliers predict.

The numbers are estimates; every interval says its level and method.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from deplbench.instances.fit import (
    FitResult,
    LogError,
    Logs,
    compress_samples,
    fit_decay,
    fit_improvement,
    fit_logs,
    loss_changes,
    multipliers,
    read_logs,
)
from deplbench.jsonio import level_percent, number_text

#: KS level of the paper (Sec. VI-A, footnote 2).
ALPHA = 0.05
#: Fig. 4 left: the paper's F1 = 0.5, F2 = 0.75 (K1 = 17 there; ours is the nearest grid K1).
EXAMPLE_CELL = ("p50", 15, "p75", 25)
#: Fig. 4 right: the paper's F1 = 0.36 → F2 = 0.5.
EXAMPLE_SWITCH = ("p36", "p50")
#: Level of the bootstrap intervals.
LEVEL = 0.95
#: The alternatives to the inverse-gamma (scipy.stats names); positive-support ones with loc = 0.
ALTERNATIVES = ("invgamma", "lognorm", "gamma", "norm")


@dataclass
class Analysis:
    """Everything :func:`analyse` measures (``summary()`` is the JSON form)."""

    fit: FitResult
    example_x: np.ndarray
    example: dict
    grid: list[dict]
    alternatives: dict[str, list[dict]]
    switch: dict
    switch_data: np.ndarray
    independence: dict
    variance: list[dict]
    source: str
    sha256: str
    extras: dict = field(default_factory=dict)

    def summary(self) -> dict:
        ps = np.array([c["p_value"] for c in self.grid], dtype=float)
        supp = sum(1 for c in self.grid if not c["support_ok"])
        accepted = {fam: sum(1 for c in self.grid if c["alternatives"].get(fam, {}).get("p_value", 0) >= ALPHA)
                    for fam in ALTERNATIVES}
        return {
            "logs": self.source, "logs_sha256": self.sha256, "runs": self.fit.n_runs, "rows": self.fit.n_rows,
            "models": {name: {"A": mf.decay.A, "B": mf.decay.B, "r2": mf.decay.r2,
                              "n": mf.improvement.n, "x_mean": float(np.mean(mf.improvement.data)),
                              "x_var": float(np.var(mf.improvement.data, ddof=1)),
                              "x_nonpositive": float(np.mean(mf.improvement.data <= 0)),
                              "invgamma_p": mf.improvement.p_value, "chosen": mf.improvement.chosen.kind}
                       for name, mf in self.fit.models.items()},
            "fig4_left": {**self.example, "x_quantiles": compress_samples(self.example_x, 400)},
            "fig4_centre": {"cells": len(self.grid), "alpha": ALPHA,
                            "invgamma_accepted": int(np.sum(ps >= ALPHA)),
                            "invgamma_rejected_support": supp,
                            "median_p": float(np.median(ps)) if ps.size else None,
                            "accepted_by_family": accepted, "grid": self.grid},
            "fig4_right": {**self.switch, "data_quantiles": compress_samples(self.switch_data, 400)}
            if self.switch else {},
            "alternatives": self.alternatives,
            "independence": self.independence,
            "variance": self.variance,
        }


# ---------------------------------------------------------------- fits
def fit_family(x: np.ndarray, family: str) -> dict:
    """Maximum-likelihood fit of one scipy.stats family with its plain KS test and AIC.

    Positive-support families (invgamma, lognorm, gamma) are fitted with
    loc = 0, as eq. (8)'s X; on a sample with a value ≤ 0 they are reported
    as rejected by support (p = 0), since the law gives that value no mass.
    """
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    if family != "norm" and np.any(x <= 0):
        return {"family": family, "n": n, "params": {}, "ks_stat": None, "p_value": 0.0, "aic": None,
                "note": f"{int(np.sum(x <= 0))} of {n} samples <= 0, outside the support"}
    dist = getattr(stats, family)
    try:
        params = dist.fit(x) if family == "norm" else dist.fit(x, floc=0)
    except (ValueError, RuntimeError, FloatingPointError) as exc:
        return {"family": family, "n": n, "params": {}, "ks_stat": None, "p_value": 0.0, "aic": None,
                "note": f"fit failed: {exc}"}
    frozen = dist(*params)
    ks = stats.kstest(x, frozen.cdf)
    ll = float(np.sum(frozen.logpdf(x)))
    k = len(params) - (0 if family == "norm" else 1)
    return {"family": family, "n": n, "params": [float(p) for p in params], "ks_stat": float(ks.statistic),
            "p_value": float(ks.pvalue), "loglik": ll, "aic": 2 * k - 2 * ll if math.isfinite(ll) else None,
            "note": ""}


def compare_families(x: np.ndarray) -> dict[str, dict]:
    """:func:`fit_family` for every family of :data:`ALTERNATIVES`."""
    return {fam: fit_family(x, fam) for fam in ALTERNATIVES}


def _cells(logs: Logs) -> dict[tuple, np.ndarray]:
    """Two-stage run ids grouped by configuration (F1, K1, F2) (ids ``t-F1-K1-F2-seed``)."""
    runs = logs.frame["run"].unique()
    out: dict[tuple, list] = {}
    for r in runs:
        parts = str(r).split("-")
        if len(parts) == 5 and parts[0] == "t":
            if not parts[2].isdigit():
                raise LogError(f"{logs.source}: column 'run': two-stage run {r!r} has K1 = {parts[2]!r}, not a "
                               "whole number of epochs (ids t-F1-K1-F2-seed)")
            out.setdefault((parts[1], int(parts[2]), parts[3]), []).append(r)
    return {k: np.array(v) for k, v in out.items()}


def grid_pvalues(logs: Logs, k2_values=(5, 15, 25)) -> tuple[list[dict], dict[tuple, np.ndarray]]:
    """Fig. 4 centre: the inverse-gamma KS p-value of every (F1, K1, F2, K2) cell.

    In each cell, A and B are fitted (X = 1) to the second stage's
    non-switch changes (epochs K1+2 … K1+K2), the multipliers x follow, and
    :func:`deplbench.instances.fit.fit_improvement` fits the inverse-gamma
    (p = 0 when some x ≤ 0: outside the support).
    """
    ch = loss_changes(logs)
    cells, samples = [], {}
    for (f1, k1, f2), runs in sorted(_cells(logs).items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        in_cell = np.isin(ch.run, runs) & ~ch.switch & (ch.model == f2)
        for k2 in k2_values:
            sel = in_cell & (ch.epoch <= k1 + k2)
            if np.unique(ch.epoch[sel]).size < 3:
                continue
            try:
                dec = fit_decay(ch.epoch[sel], ch.delta[sel], model=f2)
            except LogError:
                continue
            x = multipliers(ch.epoch[sel], ch.delta[sel], dec.A, dec.B)
            imp = fit_improvement(x, alpha=ALPHA)
            p = 0.0 if imp.p_value is None else float(imp.p_value)
            samples[(f1, k1, f2, k2)] = x
            cells.append({"F1": f1, "K1": k1, "F2": f2, "K2": k2, "n": int(x.size), "A": dec.A, "B": dec.B,
                          "p_value": p, "support_ok": bool(np.all(x > 0)),
                          "alternatives": {fam: {"p_value": r["p_value"], "aic": r["aic"]}
                                           for fam, r in compare_families(x).items()}})
    return cells, samples


# -------------------------------------------------------- independence
def _series(logs: Logs, fit: FitResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per non-switch change: (run, epoch, x with the pooled A_m, B_m, noise e).

    e = Δ − mean Δ of the same configuration and epoch over its seeds: the
    SGD noise around the mean curve, whatever the decay law.
    """
    ch = loss_changes(logs)
    keep = ~ch.switch
    run, epoch, model, delta = ch.run[keep], ch.epoch[keep], ch.model[keep], ch.delta[keep]
    x = np.empty(delta.size)
    for name, mf in fit.models.items():
        m = model == name
        x[m] = multipliers(epoch[m], delta[m], mf.decay.A, mf.decay.B)
    config = np.array([r.rsplit("-", 1)[0] for r in run])
    key = np.char.add(np.char.add(config, "|"), epoch.astype(str))
    _, inv = np.unique(key, return_inverse=True)
    means = np.bincount(inv, weights=delta) / np.bincount(inv)
    return run, epoch, x, delta - means[inv]


def lag_autocorrelation(run: np.ndarray, epoch: np.ndarray, v: np.ndarray, lag: int = 1,
                        *, bootstrap: int = 1000, seed: int = 0, centre: bool = True) -> dict:
    """Pooled within-run lag-``lag`` autocorrelation with a run-bootstrap interval.

    r = Σ (v_k − v̄)(v_{k+lag} − v̄) / Σ (v_k − v̄)², over pairs of the same
    run ``lag`` epochs apart (both non-switch epochs). Under eq. (8)'s
    independence r = 0. The interval is the 95 % percentile bootstrap over
    runs (runs resampled with replacement, ``bootstrap`` replicates), so
    dependence within a run is kept.
    """
    order = np.lexsort((epoch, run))
    run, epoch, v = run[order], epoch[order], np.asarray(v, dtype=float)[order]
    c = v - v.mean() if centre else v
    j = np.arange(v.size - lag)
    pair = (run[j + lag] == run[j]) & (epoch[j + lag] - epoch[j] == lag)
    j = j[pair]
    runs, rid = np.unique(run, return_inverse=True)
    num = np.bincount(rid[j], weights=c[j] * c[j + lag], minlength=runs.size)
    den = np.bincount(rid, weights=c * c, minlength=runs.size)
    out: dict[str, Any] = {"lag": lag, "estimate": None, "ci": [None, None], "level": LEVEL,
                           "method": f"percentile bootstrap over runs ({bootstrap} replicates)", "pairs": int(j.size),
                           "runs": int(runs.size), "independent": None}
    # r is 0/0 without a pair of epochs lag apart, or when the series has no spread (one seed per
    # configuration leaves no noise around the mean curve): nothing is measured, and an interval
    # of nan must not read as "not independent"
    if j.size == 0:
        return {**out, "note": f"not measurable: no two non-switch epochs {lag} apart within a run"}
    if not den.sum() > 0:
        return {**out, "note": "not measurable: the series has no spread (e.g. one seed per configuration "
                               "leaves no noise around the mean curve)"}
    est = float(num.sum() / den.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, runs.size, size=(bootstrap, runs.size))
    num_b, den_b = num[idx].sum(axis=1), den[idx].sum(axis=1)
    # a replicate that drew only runs without spread has no r: left out, and counted
    reps = num_b[den_b > 0] / den_b[den_b > 0]
    lo, hi = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    out.update({"estimate": est, "ci": [float(lo), float(hi)], "independent": bool(lo <= 0.0 <= hi)})
    if reps.size < bootstrap:
        out["note"] = f"{bootstrap - reps.size} of {bootstrap} replicates drew only runs without spread: left out"
    return out


def final_variance(logs: Logs, fit: FitResult) -> list[dict]:
    """Single-model runs: the variance of ℓ(K) − ℓ(0) over seeds against eq. (8)'s
    prediction with independent multipliers, Σ_k (A/√(k+B))² · Var(X).

    Var(X) is the sample variance of the version's multipliers; the ratio's
    interval is the chi-square interval of the observed variance under
    normality of the final loss, the prediction held fixed (level and method
    stated with it).
    """
    f = logs.frame
    out = []
    single = f[f["run"].str.startswith("s-")]
    for name, mf in fit.models.items():
        rows = single[single["model"] == name]
        if rows.empty:
            continue
        k_max = int(rows["epoch"].max())
        runs = single[single["run"].isin(rows["run"].unique())]
        end = runs[runs["epoch"] == k_max].set_index("run")["loss"]
        start = runs[runs["epoch"] == 0].set_index("run")["loss"]
        change = (end - start).dropna().to_numpy()
        k = np.arange(1, k_max + 1)
        data = np.asarray(mf.improvement.data, dtype=float)
        var_x = float(np.var(data, ddof=1)) if data.size > 1 else 0.0
        predicted = float(np.sum(mf.decay.A ** 2 / (k + mf.decay.B)) * var_x)
        n = change.size
        row = {"model": name, "epochs": k_max, "runs": int(n), "observed_var": None,
               "predicted_var_independent": predicted, "ratio": None, "ci": [None, None], "level": LEVEL,
               "method": "chi-square interval of a variance (normal final loss), prediction fixed"}
        # a sample variance needs two runs with both ℓ(0) and ℓ(K), and the ratio a positive prediction
        if n < 2:
            row["note"] = (f"not measurable: {n} run(s) with both epoch 0 and epoch {k_max}; "
                           "a variance needs at least 2")
        elif not predicted > 0:
            row["observed_var"] = float(np.var(change, ddof=1))
            row["note"] = "not measurable: eq. (8) predicts no spread (the multipliers have no variance)"
        else:
            observed = float(np.var(change, ddof=1))
            lo, hi = (observed / predicted) / stats.chi2.ppf([(1 + LEVEL) / 2, (1 - LEVEL) / 2], n - 1) * (n - 1)
            row.update({"observed_var": observed, "ratio": observed / predicted, "ci": [float(lo), float(hi)]})
        out.append(row)
    return out


# ---------------------------------------------------------------- entry
def default_logs_path() -> str:
    """The shipped measurement."""
    from deplbench.instances.generators.measured import LOGS_FILE

    return str(LOGS_FILE)


def analyse(logs_path: str | os.PathLike | None = None, *, bootstrap: int = 1000, seed: int = 0) -> Analysis:
    """Fig. 4, the alternatives and the independence test on ``logs_path``.

    Raises
    ------
    LogError
        Bad logs (as ``deplbench fit``), or logs without the two-stage cells
        the figure needs.
    """
    path = logs_path or default_logs_path()
    logs = read_logs(path)
    fit = fit_logs(logs, alpha=ALPHA, seed=seed)
    grid, samples = grid_pvalues(logs)
    if not grid:
        raise LogError(f"{path}: no two-stage runs (ids t-F1-K1-F2-seed) to fill the Fig. 4 grid")
    key = EXAMPLE_CELL if EXAMPLE_CELL in samples else max(samples, key=lambda k: samples[k].size)
    ex = samples[key]
    ig = compare_families(ex)
    example = {"cell": {"F1": key[0], "K1": key[1], "F2": key[2], "K2": key[3]}, "n": int(ex.size),
               "mean": float(ex.mean()), "std": float(ex.std(ddof=1)), "fits": ig}
    pair = EXAMPLE_SWITCH if EXAMPLE_SWITCH in fit.switches else next(iter(fit.switches), None)
    if pair is None:
        switch, sdata = {}, np.empty(0)
    else:
        sf = fit.switches[pair]
        sdata = sf.data
        switch = {"from_model": pair[0], "to_model": pair[1], **sf.diagnostics(),
                  "mean_jump": float(np.mean(sdata)), "positive_share": float(np.mean(sdata > 0)),
                  "alternatives": {"norm": fit_family(sdata, "norm")},
                  "all_pairs": [{"from_model": a, "to_model": b, "n": f.n, "p_value": f.p_value,
                                 "accepted": f.accepted, "mean_jump": float(np.mean(f.data))}
                                for (a, b), f in fit.switches.items()]}
    alternatives = {name: list(compare_families(mf.improvement.data).values()) for name, mf in fit.models.items()}
    run, epoch, x, noise = _series(logs, fit)
    independence = {
        "x_lag1": lag_autocorrelation(run, epoch, x, 1, bootstrap=bootstrap, seed=seed),
        "noise_lag1": lag_autocorrelation(run, epoch, noise, 1, bootstrap=bootstrap, seed=seed),
        "noise_lag2": lag_autocorrelation(run, epoch, noise, 2, bootstrap=bootstrap, seed=seed),
    }
    return Analysis(fit, ex, example, grid, {k: v for k, v in alternatives.items()}, switch, sdata,
                    independence, final_variance(logs, fit), logs.source, logs.sha256)


def format_summary(s: dict) -> str:
    """A short text summary of :meth:`Analysis.summary`; every interval with its level and method."""
    from deplbench.jsonio import interval_text

    c = s["fig4_centre"]
    lines = [f"logs {s['logs']} ({s['runs']} runs, {s['rows']} rows, sha256 {s['logs_sha256'][:12]}...)",
             f"Fig. 4 centre: inverse-gamma accepted (KS p >= {c['alpha']}) in {c['invgamma_accepted']} of "
             f"{c['cells']} cells ({c['invgamma_rejected_support']} with x <= 0); accepted by family: "
             + ", ".join(f"{k} {v}" for k, v in c["accepted_by_family"].items())]
    ex = s["fig4_left"]
    lines.append(f"Fig. 4 left {ex['cell']}: n={ex['n']} mean={ex['mean']:.3g} std={ex['std']:.3g}; KS p "
                 + ", ".join(f"{k} {v['p_value']:.3g}" for k, v in ex["fits"].items()))
    sw = s["fig4_right"]
    if sw:
        lines.append(f"Fig. 4 right {sw['from_model']}->{sw['to_model']}: n={sw['n']} Student t KS p="
                     f"{(sw['p_value'] or 0):.3g} mean jump {sw['mean_jump']:.3g} (positive in "
                     f"{100 * sw['positive_share']:.0f}%)")
    for key, r in s["independence"].items():
        if r["estimate"] is None:
            lines.append(f"{key}: {r['note']} ({r['pairs']} pairs)")
            continue
        lines.append(f"{key}: r={r['estimate']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}] "
                     f"({level_percent(r['level'], 0)}% {r['method']}, {r['pairs']} pairs)")
    for v in s["variance"]:
        if v["ratio"] is None:
            lines.append(f"final-loss variance {v['model']}: {v['note']}")
            continue
        lines.append(f"final-loss variance {v['model']}: observed/predicted = {v['ratio']:.3g} "
                     f"{interval_text(v['ci'][0], v['ci'][1], 3)} ({number_text(100 * v['level'])}% {v['method']}; "
                     f"{v['runs']} runs)")
    return "\n".join(lines)


__all__ = ["Analysis", "analyse", "fit_family", "compare_families", "grid_pvalues", "lag_autocorrelation",
           "final_variance", "format_summary", "default_logs_path", "ALTERNATIVES", "ALPHA"]


def eq8_path_beside(output: str | os.PathLike) -> Path:
    """Where :func:`refit` writes the eq. (8) instance by default: ``<name>-eq8.json`` beside ``output``."""
    out = Path(output)
    return out.with_name(out.name.removesuffix(".json") + "-eq8.json")


def refit(logs_path: str | os.PathLike | None, output: str | os.PathLike,
          eq8_output: str | os.PathLike | None = None):
    """``deplbench fit`` on the measured logs with the measured base; writes the two fits.

    Two instances are written: ``deplbench fit``'s own to ``output`` (the
    empirical sample wherever KS rejects; shipped as ``digits-mlp-fit.json``)
    and the paper's law to ``eq8_output`` (default :func:`eq8_path_beside`;
    shipped as ``digits-mlp-eq8.json``): X_m ~ inverse-gamma moment-matched
    to the measured multipliers' mean and variance (as the paper's Table I
    reports X) and l_sw ~ the maximum-likelihood Student's t, whether or not
    KS accepts them. Plans "proven under eq. (8)" are proven on the latter.
    Nothing is written to the shipped files unless they are named.

    Parameters
    ----------
    logs_path : path or None
        Logs in ``deplbench fit``'s long format; None: the shipped measurement.
    output, eq8_output : path
        The two instance files written.

    Returns
    -------
    (Instance, Instance, FitResult)
    """
    from deplbench.instances.fit import fit_instance, write_instance_atomic
    from deplbench.instances.generators.common import inverse_gamma, student_t
    from deplbench.instances.generators.measured import MEASURED_LOSS_MAX, measured_base
    from deplbench.instances.model import parse_instance

    instance, fit = fit_instance(logs_path or default_logs_path(), base=measured_base(),
                                 base_label="deplbench.instances.generators.measured.measured_base()",
                                 name="measured-digits-mlp-fit", loss_max=MEASURED_LOSS_MAX)
    data = instance.model_dump(by_alias=True)
    for m in data["models"]:
        x = fit.models[m["name"]].improvement.data
        m["improvement"] = inverse_gamma(float(np.mean(x)), float(np.var(x, ddof=1)))
    for sw in data["switches"]:
        sf = fit.switches.get((sw["from_model"], sw["to_model"]))
        if sf is not None and sf.params:
            sw["jump"] = student_t(sf.params["df"], sf.params["loc"], sf.params["scale"])
    data["name"] = "measured-digits-mlp-eq8"
    data["provenance"]["assumptions"] = [
        "eq. (8) as the paper states it: X_m ~ inverse-gamma moment-matched to the mean and variance of the "
        "measured multipliers, l_sw ~ maximum-likelihood Student's t, whatever the KS tests say "
        "(docs/measured.md)"] + list(data["provenance"]["assumptions"])
    eq8 = parse_instance(data)
    for inst, path in ((instance, output), (eq8, eq8_output or eq8_path_beside(output))):
        write_instance_atomic(inst, path)
        if os.path.isfile(path):    # the renamed temporary file's 0600; a named pipe keeps its owner's mode
            os.chmod(path, 0o644)
    return instance, eq8, fit
