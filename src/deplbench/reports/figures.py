"""Figures of the report, drawn with matplotlib's object API (Agg).

Every function takes the frames built in :mod:`deplbench.reports.tables`
(so every plotted number is also in a CSV) and returns a
:class:`matplotlib.figure.Figure`, or None when there is nothing to draw;
the caller then says so in the report. No pyplot: figures are plain
objects, never registered in a global state, so building a report leaves
no open figures behind and needs no display.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from deplbench.reports.tables import CLAIMED_EXPONENTS, size_label
from deplbench.reports.stats import performance_profile, profile_curve

#: Base size of one panel, inches; ``scale`` multiplies it (tests use 0.5).
PANEL = (4.2, 3.0)

#: Fixed colours so an algorithm looks the same in every figure.
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
            "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_MARKERS = ("o", "s", "^", "D", "v", "P")
_DASHES = ("-", "--", "-.", ":")
_KNOWN = ("milp", "brute-force", "depl", "best-exp", "pact", "static-learn",
          "one-switch")


def colour(name: str) -> str:
    """Stable colour of an algorithm (known names first, others hashed)."""
    if name in _KNOWN:
        return _PALETTE[_KNOWN.index(name)]
    return _PALETTE[len(_KNOWN) + sum(map(ord, name)) % (len(_PALETTE) - len(_KNOWN))]


def _figure(ncols: int = 1, nrows: int = 1, scale: float = 1.0, sharey: bool = False):
    fig = Figure(figsize=(PANEL[0] * ncols * scale, PANEL[1] * nrows * scale),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    return fig, axes


def _one_panel(scale: float = 1.0):
    """A one-panel figure and its axes."""
    fig, axes = _figure(scale=scale)
    return fig, axes[0, 0]


def _finish_set_panel(ax, paper_set: str, ylabel: str, legend_size: int = 7) -> None:
    """Y label, title (the paper set), legend and grid of a Fig. 5/6 panel."""
    ax.set_ylabel(ylabel)
    ax.set_title(paper_set, fontsize=9)
    ax.legend(fontsize=legend_size)
    ax.grid(alpha=0.3)


def _finish_loglog(ax, param: str, x_values, ylabel: str, legend_outside: bool = False) -> None:
    """Log-log axes against a size parameter, ticks at the values run."""
    _log_axis(ax, "x")
    _log_axis(ax, "y")
    _value_ticks(ax, x_values)
    v = np.asarray(x_values, float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() > 300:
        # Over 2.5 decades the 1-2-5 tick labels collide: tilt them.
        ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel(size_label(param))
    ax.set_ylabel(ylabel)
    if legend_outside:
        # Many series: beside the panel, so the data keep the whole panel.
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=6)
    ax.grid(alpha=0.3, which="both")


def _log_axis(ax, which: str) -> None:
    """Log scale with plain tick labels (1, 2, 5, 10, ...), readable over
    the one or two decades our sweeps span, unlike 3×10¹."""
    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _shared_legend(fig, axes) -> None:
    """One legend for all panels (a panel may lack an algorithm that had no
    plan at its target), outside the axes on the right."""
    seen: dict[str, object] = {}
    for ax in np.ravel(axes):
        for h, lbl in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lbl, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside right upper", fontsize=7)


def _value_ticks(ax, values, max_ticks: int = 8) -> None:
    """Put the x ticks at the values actually run (η = 25, 50, 100, 200)
    when there are few of them; a log locator would skip some."""
    v = np.unique(np.asarray(values, float))
    v = v[np.isfinite(v) & (v > 0)]
    if 0 < v.size <= max_ticks:
        ax.set_xticks(v, [f"{x:g}" for x in v])
        ax.xaxis.set_minor_formatter(NullFormatter())


def _label(alg: str, cfg: str) -> str:
    return f"{alg} ({cfg})" if cfg else alg


def cost_vs_target(tab: pd.DataFrame, paper_set: str, scale: float = 1.0,
                   ylabel: str = "cost (2)") -> Figure | None:
    """Cost against the target ℓmax per algorithm (Figs. 5/6 left): mean
    over instances, shaded between min and max."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    fig, ax = _one_panel(scale)
    for (alg, cfg), g in t.groupby(["algorithm", "config"], sort=True):
        g = g.sort_values("loss_max")
        ax.plot(g["loss_max"], g["cost_mean"], marker="o", ms=3, color=colour(alg),
                label=_label(alg, cfg))
        if (g["instances"] > 1).any():
            ax.fill_between(g["loss_max"], g["cost_min"], g["cost_max"],
                            color=colour(alg), alpha=0.15, lw=0)
    ax.set_xlabel("target ℓmax (ω-quantile of the final loss)")
    _finish_set_panel(ax, paper_set, ylabel)
    return fig


def normalised_loss(tab: pd.DataFrame, paper_set: str, scale: float = 1.0) -> Figure | None:
    """Expected final loss normalised to the optimum's (Fig. 5 centre)."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    fig, ax = _one_panel(scale)
    for alg, g in t.groupby("algorithm", sort=True):
        g = g.sort_values("loss_max")
        ax.plot(g["loss_max"], g["exp_loss_ratio_mean"], marker="o", ms=3,
                color=colour(alg), label=alg)
    ax.axhline(1.0, color="k", lw=0.8, ls=":")
    ax.set_xlabel("target ℓmax")
    _finish_set_panel(ax, paper_set, "E[ℓ(K)] / E[ℓ(K)] of the optimum")
    return fig


def eta_effect(tab: pd.DataFrame, paper_set: str, scale: float = 1.0) -> Figure | None:
    """Cost for each η (Fig. 5 right): against ℓmax when several targets
    were run, else against η itself."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty or t["eta"].nunique() < 2:
        return None
    fig, ax = _one_panel(scale)
    if t["loss_max"].nunique() >= 2:
        groups = list(t.groupby(["algorithm", "eta"], sort=True))
        # a sequential colour map: darker = coarser graph (smaller η)
        shades = colormaps["viridis"](np.linspace(0.0, 0.85, len(groups)))
        for shade, ((alg, eta), g) in zip(shades, groups):
            g = g.sort_values("loss_max")
            ax.plot(g["loss_max"], g["cost_mean"], marker="o", ms=3, color=shade,
                    label=f"{alg} η={eta:g}")
        ax.set_xlabel("target ℓmax")
    else:
        for alg, g in t.groupby("algorithm", sort=True):
            g = g.sort_values("eta")
            ax.plot(g["eta"], g["cost_mean"], marker="o", ms=3, color=colour(alg), label=alg)
        _log_axis(ax, "x")
        _value_ticks(ax, t["eta"])
        ax.set_xlabel("η (graph resolution)")
    _finish_set_panel(ax, paper_set, "cost (2)", legend_size=6)
    return fig


def per_model(tab: pd.DataFrame, paper_set: str, ylabel: str,
              scale: float = 1.0) -> Figure | None:
    """Stacked bars per target of what each model version received
    (Figs. 7/8), one panel per algorithm."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    algs = sorted(t["algorithm"].unique(), key=lambda a: (a not in _KNOWN, _KNOWN.index(a)
                                                          if a in _KNOWN else 0, a))
    models = sorted(t["model"].unique())
    ncols = min(len(algs), 4)  # wrap: seven algorithms side by side are unreadable
    nrows = -(-len(algs) // ncols)
    fig, axes = _figure(ncols=ncols, nrows=nrows, scale=scale * 0.8, sharey=True)
    for ax in axes.ravel()[len(algs):]:
        ax.set_axis_off()
    targets = sorted(t["loss_max"].unique())
    pos = np.arange(len(targets))
    mcol = {m: _PALETTE[(i + 2) % len(_PALETTE)] for i, m in enumerate(models)}
    for ax, alg in zip(axes.ravel(), algs):
        g = t[t["algorithm"] == alg].pivot_table(index="loss_max", columns="model",
                                                 values="value", aggfunc="mean")
        g = g.reindex(index=targets, columns=models).fillna(0.0)
        bottom = np.zeros(len(targets))
        for m in models:
            ax.bar(pos, g[m].to_numpy(), bottom=bottom, color=mcol[m], label=m, width=0.7)
            bottom += g[m].to_numpy()
        ax.set_xticks(pos, [f"{x:g}" for x in targets], fontsize=7, rotation=45)
        ax.set_title(alg, fontsize=9)
        ax.set_xlabel("target ℓmax", fontsize=8)
    for row in axes:
        row[0].set_ylabel(ylabel)
    _shared_legend(fig, axes)
    return fig


def trajectories(rows: pd.DataFrame, targets: list[float],
                 scale: float = 1.0) -> Figure | None:
    """Expected loss with the 1st–99th percentile band (Fig. 9), one panel
    per target, one line per algorithm (its first instance at that target).
    """
    if rows.empty or not targets:
        return None
    fig, axes = _figure(ncols=len(targets), scale=scale * 0.9, sharey=True)
    drawn = 0
    for ax, lm in zip(axes[0], targets):
        g = rows[rows["loss_max"] == lm]
        for alg, ga in g.groupby("algorithm", sort=True):
            ev = ga.iloc[0]["evaluation_d"]
            mean = np.asarray(ev.get("mean") or [], float)
            if mean.size == 0:
                continue
            k = np.arange(mean.size)  # entry 0 is ℓ(0)
            ax.plot(k, mean, color=colour(alg), label=alg, lw=1.2)
            lo, hi = ev.get("p01") or [], ev.get("p99") or []
            if len(lo) == mean.size and len(hi) == mean.size:
                ax.fill_between(k, lo, hi, color=colour(alg), alpha=0.15, lw=0)
            drawn += 1
        ax.axhline(lm, color="k", ls=":", lw=0.8)
        ax.set_title(f"guaranteed loss ℓmax = {lm:g}", fontsize=9)
        ax.set_xlabel("epoch k")
        ax.grid(alpha=0.3)
    if not drawn:
        return None
    axes[0, 0].set_ylabel("loss ℓ(k): mean, 1st–99th pct")
    _shared_legend(fig, axes)
    return fig


def profiles(matrices: dict[tuple[str, str], pd.DataFrame],
             scale: float = 1.0) -> Figure | None:
    """Dolan–Moré performance profiles: one row of panels per family,
    one panel per metric (runtime, cost)."""
    mats = {k: v for k, v in matrices.items() if not v.empty}
    if not mats:
        return None
    families = list(dict.fromkeys(f for f, _ in mats))
    metrics = list(dict.fromkeys(m for _, m in mats))
    fig, axes = _figure(ncols=len(metrics), nrows=len(families), scale=scale)
    for i, fam in enumerate(families):
        for j, metric in enumerate(metrics):
            ax = axes[i, j]
            m = mats.get((fam, metric))
            if m is None:
                ax.set_axis_off()
                continue
            r = performance_profile(m)
            vals = r.to_numpy(float)
            finite = vals[np.isfinite(vals)]
            top = max(2.0, float(finite.max()) * 1.1) if finite.size else 2.0
            taus = np.geomspace(1.0, top, 200)
            for alg in r.columns:
                ax.step(taus, profile_curve(r[alg], taus), where="post",
                        color=colour(alg), label=alg)
            _log_axis(ax, "x")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("τ (ratio to the best on each problem)", fontsize=8)
            ax.set_ylabel("ρ(τ)", fontsize=8)
            ax.set_title(f"{fam}: {metric}, {len(r)} problems", fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
    return fig


def ratio_vs(tab: pd.DataFrame, param: str, scale: float = 1.0,
             max_series_per_algorithm: int = 3) -> Figure | None:
    """Measured competitive ratio against η or ε with Property 3's
    (1/η)(1+ε) drawn beside it, and the line ratio = 1 that no feasible
    plan of a minimisation problem can go below.

    Per algorithm only the ``max_series_per_algorithm`` values of the other
    parameter with the most points along ``param`` are drawn (a full η × ε
    grid would otherwise bury the panel); the table has every series."""
    if tab.empty or tab[param].nunique() < 1:
        return None
    other = "epsilon" if param == "eta" else "eta"
    groups = []
    for (alg, ov), g in tab.groupby(["algorithm", other], sort=True, dropna=False):
        if g[param].nunique() < 2 and param == "epsilon":
            continue
        groups.append((alg, ov, g.sort_values(param)))
    kept: list = []
    for alg in sorted({a for a, _, _ in groups}):
        mine = [x for x in groups if x[0] == alg]
        mine.sort(key=lambda x: -x[2][param].nunique())
        kept += sorted(mine[:max_series_per_algorithm], key=lambda x: (pd.isna(x[1]), x[1]))
    fig, ax = _one_panel(scale * 1.3)
    drawn = False
    for alg, ov, g in kept:
        lbl = (f"{alg} ({size_label(other)}={ov:g})" if not pd.isna(ov)
               else f"{alg} ({size_label(other)} not recorded)")
        ax.plot(g[param], g["ratio_median"], marker="o", ms=3, color=colour(alg),
                label=f"{lbl}: measured median")
        ax.fill_between(g[param], g["ratio_min"], g["ratio_max"], color=colour(alg),
                        alpha=0.15, lw=0)
        if g["property3_bound"].notna().any():
            ax.plot(g[param], g["property3_bound"], ls="--", color=colour(alg), lw=1,
                    label=f"{lbl}: Property 3, (1/η)(1+ε)")
        drawn = True
    if not drawn:
        return None
    ax.axhline(1.0, color="k", lw=0.8, ls=":", label="ratio = 1 (optimum)")
    _finish_loglog(ax, param, tab[param], "competitive ratio cost / optimum", legend_outside=True)
    return fig


def complexity(fits: pd.DataFrame, param: str, scale: float = 1.0,
               max_series: int = 12) -> Figure | None:
    """Runtime against one size parameter on log-log axes: the points of
    each series' best fit, the fitted line (slope and 95 % interval in the
    legend) and the claimed exponent(s) as reference lines anchored at the
    first series' first point. The y-range follows the data (the reference
    lines leave the panel at their own slope rather than squash the data)."""
    f = fits[fits["parameter"] == param]
    if f.empty:
        return None
    f = f.head(max_series)
    fig, ax = _one_panel(scale * 1.1)
    claimed, implied, _ = CLAIMED_EXPONENTS[param]
    seen: dict[str, int] = {}
    ys_all = []
    for i, row in enumerate(f.itertuples(index=False)):
        x = np.asarray(row.x_values, float)
        y = np.asarray(row.y_values, float)
        ys_all.append(y)
        c = colour(row.algorithm) if row.source == "store" else _PALETTE[i % len(_PALETTE)]
        # several series of one algorithm share its colour: tell them apart
        # by marker and dash
        j = seen[row.algorithm] = seen.get(row.algorithm, -1) + 1
        marker, dash = _MARKERS[j % len(_MARKERS)], _DASHES[j % len(_DASHES)]
        name = f"{row.algorithm} [{row.series}]"
        ax.scatter(x, y, s=10, color=c, alpha=0.6, marker=marker)
        xs = np.geomspace(x.min(), x.max(), 20)
        ci = (f"[{row.ci_low:.2f}, {row.ci_high:.2f}]" if math.isfinite(row.ci_low)
              else "[n/a]")
        ax.plot(xs, np.exp(row.intercept) * xs ** row.slope, color=c, lw=1.2, ls=dash,
                marker=marker, markevery=[0, len(xs) - 1], ms=3,
                label=f"{name}: slope {row.slope:.2f} {ci}")
        if i == 0:
            x0, y0 = xs[0], float(np.exp(row.intercept) * xs[0] ** row.slope)
            for e, ls, what in ((claimed, "--", "claimed"), (implied, ":", "implied")):
                if e is None or (what == "implied" and e == claimed):
                    continue
                ax.plot(xs, y0 * (xs / x0) ** e, color="k", ls=ls, lw=0.9,
                        label=f"{what} exponent {e:+g}")
    ally = np.concatenate(ys_all)
    ally = ally[np.isfinite(ally) & (ally > 0)]
    if ally.size:
        ax.set_ylim(ally.min() / 3.0, ally.max() * 3.0)
    _finish_loglog(ax, param, np.concatenate([np.asarray(v, float) for v in f["x_values"]]), "runtime [s]")
    return fig
