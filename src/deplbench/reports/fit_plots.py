"""The fit report's figures (``deplbench fit --report DIR``), in the style of DepL Fig. 4.

Drawn from a :class:`~deplbench.instances.fit.FitResult` (the fitting itself
lives in the instance layer, which never imports matplotlib; docs/DESIGN.md):

``model-<name>.png``
    Left: mean loss change per epoch against the fitted −A/sqrt(k+B)
    (eq. (8) with X = 1). Right: histogram of the multipliers X against the
    fitted inverse-gamma pdf, with the KS p-value (Fig. 4 left).
``switch-<from>--<to>.png``
    Histogram of the switch residuals Δ + c·E[X] against the fitted
    Student's t pdf convolved with the run noise, and l_sw alone (Fig. 4
    right).
``pvalues.png``
    Histogram of the KS p-values of all fits with the α line (Fig. 4
    centre).
``fit-report.json``
    :meth:`FitResult.diagnostics` (written by
    :func:`deplbench.instances.fit.write_report_json`).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
from scipy import stats

from deplbench.instances.fit import FitResult, report_directory, write_bytes_atomic, write_report_json


def _slug(text: str) -> str:
    """A file-name-safe version of a model name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def write_report(fit: FitResult, directory: str | os.PathLike) -> list[Path]:
    """Write the fit report: Fig. 4-style PNGs and ``fit-report.json``.

    Parameters
    ----------
    fit : FitResult
        From :func:`deplbench.instances.fit.fit_logs`.
    directory : path-like
        Created if missing.

    Returns
    -------
    list of Path
        The files written (see the module docstring).

    Raises
    ------
    LogError
        When the directory cannot be created or a file cannot be written
        (the message names it).

    Notes
    -----
    Uses matplotlib's object API with the Agg canvas directly, so it never
    touches the global pyplot backend of the calling process.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = report_directory(directory)
    written: list[Path] = []

    def save(fig, fname: str) -> None:
        FigureCanvasAgg(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        target = out / fname
        write_bytes_atomic(target, buf.getvalue())
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
    ax.hist(pv, bins=np.linspace(0, 1, 21).tolist(), color="tab:blue", alpha=0.7)
    ax.axvline(fit.settings["alpha"], color="r", linestyle="--", label=f"alpha = {fit.settings['alpha']}")
    ax.set(xlabel="KS p-value", ylabel="number of fits", title=f"p-values of {len(pv)} fits")
    ax.legend(fontsize=8)
    save(fig, "pvalues.png")

    written.append(write_report_json(fit, out))
    return written


__all__ = ["write_report"]
