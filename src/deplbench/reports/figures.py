"""Figures of the report, drawn with matplotlib's object API (Agg).

Every function takes the frames built in :mod:`deplbench.reports.tables`
(so every plotted number is also in a CSV) and the series styles of
:mod:`deplbench.reports.styles` (so every algorithm, a third-party one
included, looks the same in every figure), and returns a
:class:`matplotlib.figure.Figure`, or None when there is nothing to draw;
the caller then says so in the report. No pyplot: figures are plain
objects, never registered in a global state, so building a report leaves
no open figures behind and needs no display.

Layout rules: legends sit outside the axes, every axis names its unit,
ratio axes are linear near 1, log axes label only as many ticks as fit;
one colour per algorithm in every figure (its palette colour; a variant of
it, another target or parameter value, a shade of it); at most
:data:`~deplbench.reports.readability.MAX_SERIES` algorithms per panel,
more are split into small multiples. Every artist drawing an algorithm's
data is tagged (:func:`~deplbench.reports.readability.tag`) so that
:func:`~deplbench.reports.readability.figure_problems` can check the rules
on the drawn figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, NullFormatter

from deplbench.reports.readability import MAX_SERIES, tag
from deplbench.reports.stats import performance_profile, profile_curve
from deplbench.reports.styles import SeriesInfo, info_for, ordered, shade

#: Base size of one panel, inches; ``scale`` multiplies it (tests use 0.4).
PANEL = (4.2, 3.0)

#: Axis labels with units for the size parameters.
SIZE_AXIS = {
    "eta": "η (graph resolution, steps per unit) [–]", "epsilon": "ε (allocation tolerance) [–]",
    "n_models": "|M| [model versions]", "horizon": "K̄ [epochs]",
    "n_datasets": "|D| [datasets]", "n_clusters": "|N| [clusters]",
    "scenarios": "S [in-sample scenarios]",
}
COST_AXIS = "cost, eq. (2) [cost units]"
TARGET_AXIS = "target ℓmax, ω-quantile of ℓ(K) [loss]"

Styles = Mapping[str, SeriesInfo]
_T = TypeVar("_T")

MARKER_CYCLE = ("o", "s", "^", "D", "v", "P")
DASH_CYCLE = ("-", "--", "-.", ":")


def new_figure(ncols: int = 1, nrows: int = 1, scale: float = 1.0, sharey: bool | str = False,
            width: float | None = None):
    w = PANEL[0] * ncols if width is None else width
    fig = Figure(figsize=(w * scale, PANEL[1] * nrows * scale), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    return fig, axes


def one_panel(scale: float = 1.0, width: float | None = None):
    """A one-panel figure (room on the right for the legend) and its axes."""
    fig, axes = new_figure(scale=scale, width=width if width is not None else PANEL[0] * 1.5)
    return fig, axes[0, 0]


#: Smallest legend font, points: at the report's 110 dpi a point is 1.53 px,
#: so 8 pt is 12 px at natural size and stays ≥ 9 px while a figure is shown
#: at no less than 3/4 of its natural width (the widest, Figs. 7/8 with four
#: panels, is about 1600 px at scale 1; the page is 1400 px wide at 1440).
LEGEND_PT = 8.0


def add_legend(fig, axes, fontsize: float = LEGEND_PT) -> None:
    """One legend for all panels, below the axes (a panel may lack a series
    that had no plan at its target). Below, not beside: on a narrow screen
    the plot keeps the figure's width and the legend wraps into columns."""
    seen: dict[str, object] = {}
    for ax in np.ravel(axes):
        for h, lbl in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lbl, h)
    if seen:
        longest = max(len(str(lbl)) for lbl in seen)
        width_in = fig.get_figwidth()
        ncol = max(1, min(len(seen), int(width_in * 72 / (0.62 * max(fontsize, LEGEND_PT)
                                                             * (longest + 4)))))
        rows = -(-len(seen) // ncol)
        # grow the figure by the legend's height, so the axes keep theirs
        fig.set_figheight(fig.get_figheight() + rows * 1.45 * max(fontsize, LEGEND_PT) / 72)
        fig.legend(list(seen.values()), list(seen), loc="outside lower center",
                   fontsize=max(fontsize, LEGEND_PT), ncols=ncol, frameon=False)


class InView(Locator):
    """The ticks of ``locator`` that lie in the axis' view.

    A log locator also returns the ticks of the decades on either side of
    the view, and matplotlib makes, positions and measures a tick for each
    of them at every layout step, then draws only those in view. Where a
    tick's label depends on its own value alone (a NullFormatter, a
    FuncFormatter of the value; not a ScalarFormatter, whose digits follow
    every location), the ones outside are dropped here: the ticks drawn
    are the ones the wrapped locator alone gives.
    """

    def __init__(self, locator: Locator) -> None:
        self.locator = locator

    def set_axis(self, axis) -> None:
        super().set_axis(axis)
        self.locator.set_axis(axis)

    def __call__(self):
        locs = np.asarray(self.locator(), float)
        if locs.size == 0 or self.axis is None:
            return locs
        tr = self.axis.get_transform()
        lo, hi = sorted(tr.transform(np.asarray(self.axis.get_view_interval(), float)))
        t = tr.transform(locs)
        # generous slack: what matplotlib keeps within 1e-10 of the view stays
        slack = 1e-6 * (hi - lo)
        return locs[(t >= lo - slack) & (t <= hi + slack)]

    def tick_values(self, vmin, vmax):
        return self.locator.tick_values(vmin, vmax)

    def nonsingular(self, v0, v1):
        return self.locator.nonsingular(v0, v1)

    def view_limits(self, vmin, vmax):
        return self.locator.view_limits(vmin, vmax)


def unlabelled_minor_ticks(axis) -> None:
    """No labels on ``axis``' minor ticks, and only those in view made."""
    axis.set_minor_formatter(NullFormatter())
    loc = axis.get_minor_locator()
    if not isinstance(loc, InView):
        axis.set_minor_locator(InView(loc))


def log_axis(ax, which: str, values=None) -> None:
    """Log scale with plain tick labels (1, 2, 5, 10, ...). Over more than
    1.5 decades only the powers of ten are labelled, so labels never run
    into each other ("100200")."""
    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    subs = (1.0, 2.0, 5.0)
    if values is not None:
        v = np.asarray(values, float)
        v = v[np.isfinite(v) & (v > 0)]
        if v.size and v.max() / v.min() > 30:
            subs = (1.0,)
    axis.set_major_locator(InView(LogLocator(base=10, subs=subs)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    unlabelled_minor_ticks(axis)


def value_ticks(ax, values, max_ticks: int = 8) -> None:
    """Put the x ticks at the values actually run (η = 25, 50, 100, 200)
    when there are few of them; tilt them when they would crowd."""
    v = np.unique(np.asarray(values, float))
    v = v[np.isfinite(v) & (v > 0)]
    if 0 < v.size <= max_ticks:
        ax.set_xticks(v, [f"{x:g}" for x in v])
        ax.xaxis.set_minor_formatter(NullFormatter())
        close = v.size > 1 and np.min(np.diff(np.log(v))) < 0.25 * np.log(v[-1] / v[0]) / v.size
        if close or v.size > 5:
            ax.tick_params(axis="x", labelrotation=45)


def _label(alg: str, cfg: str) -> str:
    return f"{alg} ({cfg})" if cfg else alg


#: Shade factors of the 2nd, 3rd, ... variant of one series (toward black
#: < 0, toward white > 0), away from :data:`~deplbench.reports.styles.SHADES`
#: so a variant rarely takes another series' shade.
VARIANT_SHADES = (-0.55, 0.5, -0.3, 0.7, -0.8, 0.3)


def variant_colour(st: SeriesInfo, j: int, styles: Styles | None = None) -> str:
    """Colour of the ``j``-th variant of a series: its own colour for j = 0,
    else a shade of it that no other series of ``styles`` has."""
    if j == 0:
        return st.colour
    taken = {v.colour.lower() for v in (styles or {}).values()}
    for k in range(len(VARIANT_SHADES) * 3):
        f = VARIANT_SHADES[(j - 1 + k) % len(VARIANT_SHADES)] * (1 - 0.12 * ((j - 1 + k) // len(VARIANT_SHADES)))
        c = shade(st.colour, f)
        if c.lower() not in taken:
            return c
    return shade(st.colour, 0.9)


def _line(ax, x, y, st: SeriesInfo, label: str, variant: int = 0, styles: Styles | None = None,
          **kw) -> None:
    """One series' line in its palette colour (a variant: a shade of it),
    tagged for the readability check."""
    colour = variant_colour(st, variant, styles)
    tag(ax.plot(x, y, color=colour, marker=st.marker, ls=st.linestyle, ms=3, label=label, **kw),
        st.name, variant=variant > 0)


def chunks(names: list[_T], size: int = MAX_SERIES) -> list[list[_T]]:
    """``names`` in at most ``size`` per panel, the panels as even as can be
    (11 series: 4, 4, 3)."""
    if not names:
        return []
    n = -(-len(names) // size)
    base, extra = divmod(len(names), n)
    out, i = [], 0
    for k in range(n):
        w = base + (k < extra)
        out.append(names[i:i + w])
        i += w
    return out


def small_multiples(algorithms, styles: dict, scale: float = 1.0, nrows: int = 1, sharey: bool = False,
                    widen: float = 1.1):
    """The algorithms in panels of at most :data:`MAX_SERIES` (:func:`chunks`,
    in display order) and a figure with one column per panel, wider with more
    columns: ``(groups, fig, axes)``."""
    groups = chunks(ordered(algorithms, styles))
    fig, axes = new_figure(ncols=len(groups), nrows=nrows, scale=scale, sharey=sharey,
                           width=PANEL[0] * max(1.5, widen * len(groups)))
    return groups, fig, axes


def cost_vs_target(tab: pd.DataFrame, paper_set: str, styles: Styles,
                   scale: float = 1.0) -> Figure | None:
    """Cost against the target ℓmax per series (Figs. 5/6 left). Top row:
    the ratio of each plan's cost to the reference of its own instance (mean
    over instances, band min–max), where differences of a few percent show;
    bottom row: the cost itself, as the papers draw it. More than
    :data:`MAX_SERIES` series are split over columns (small multiples, each
    panel on its own y-scale, so a few percent stay visible)."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    has_ratio = "ratio_ref_mean" in t and t["ratio_ref_mean"].notna().any()
    nrows = 2 if has_ratio else 1
    groups, fig, axes = small_multiples(t["algorithm"], styles, scale, nrows=nrows, widen=1.15)
    kinds = sorted(set(t["reference_kind"].dropna()) - {""}) if has_ratio else []
    for col, algs in enumerate(groups):
        rax = axes[0, col] if has_ratio else None
        cax = axes[nrows - 1, col]
        for alg in algs:
            st = info_for(styles, alg)
            for j, (cfg, g) in enumerate(t[t["algorithm"] == alg].groupby("config", sort=True)):
                g = g.sort_values("loss_max")
                _line(cax, g["loss_max"], g["cost_mean"], st, _label(alg, cfg), j, styles)
                colour = variant_colour(st, j, styles)
                if (g["instances"] > 1).any():
                    tag(cax.fill_between(g["loss_max"], g["cost_min"], g["cost_max"],
                                         color=colour, alpha=0.15, lw=0), alg, j > 0)
                if rax is not None and g["ratio_ref_mean"].notna().any():
                    _line(rax, g["loss_max"], g["ratio_ref_mean"], st, _label(alg, cfg), j, styles)
                    tag(rax.fill_between(g["loss_max"], g["ratio_ref_min"], g["ratio_ref_max"],
                                         color=colour, alpha=0.12, lw=0), alg, j > 0)
        if rax is not None:
            rax.axhline(1.0, color="k", lw=0.8, ls=":")
            rax.set_title("ratio to " + (", ".join(kinds) or "reference"), fontsize=9)
            rax.grid(alpha=0.3)
        cax.set_xlabel(TARGET_AXIS, fontsize=8)
        cax.set_title(f"{paper_set}: cost", fontsize=9)
        cax.grid(alpha=0.3)
    if has_ratio:
        axes[0, 0].set_ylabel("cost / reference [ratio]", fontsize=8)
    axes[nrows - 1, 0].set_ylabel(COST_AXIS, fontsize=8)
    add_legend(fig, axes)
    return fig


def normalised_loss(tab: pd.DataFrame, paper_set: str, styles: Styles,
                    scale: float = 1.0) -> Figure | None:
    """Expected final loss normalised to the optimum's (Fig. 5 centre), at
    most :data:`MAX_SERIES` series per panel."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    groups, fig, axes = small_multiples(t["algorithm"], styles, scale, sharey=True)
    for ax, algs in zip(axes[0], groups):
        for alg in algs:
            g = t[t["algorithm"] == alg].sort_values("loss_max")
            _line(ax, g["loss_max"], g["exp_loss_ratio_mean"], info_for(styles, alg), alg)
        ax.axhline(1.0, color="k", lw=0.8, ls=":", label="the optimum")
        ax.set_xlabel(TARGET_AXIS, fontsize=8)
        ax.set_title(paper_set, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("E[ℓ(K)] / E[ℓ(K)] of the optimum [ratio]", fontsize=8)
    add_legend(fig, axes)
    return fig


def eta_effect(tab: pd.DataFrame, paper_set: str, styles: Styles,
               scale: float = 1.0) -> Figure | None:
    """Cost for each η (Fig. 5 right). With several targets: one panel per
    algorithm run at two or more η, cost against ℓmax, one line per η in
    shades of the algorithm's colour (darker = smaller η, a coarser graph);
    with one target: cost against η itself."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty or t["eta"].nunique() < 2:
        return None
    if t["loss_max"].nunique() >= 2:
        # one panel per solver run at two or more η (its series together:
        # DepL's default entry and its η sweep), one line per series and η
        solver_of = {a: info_for(styles, a).solver for a in t["algorithm"].unique()}
        solvers = [v for v in dict.fromkeys(solver_of[a] for a in ordered(t["algorithm"], styles))
                   if t.loc[t["algorithm"].map(solver_of) == v, "eta"].nunique() >= 2]
        if not solvers:
            return None
        etas = sorted(t["eta"].unique())
        ncols = min(len(solvers), 3)
        nrows = -(-len(solvers) // ncols)
        fig, axes = new_figure(ncols=ncols, nrows=nrows, scale=scale, sharey=True,
                               width=PANEL[0] * max(1.6, 1.1 * ncols))
        for ax in axes.ravel()[len(solvers):]:
            ax.set_axis_off()
        for ax, solver in zip(axes.ravel(), solvers):
            for alg in [a for a in ordered(t["algorithm"], styles) if solver_of[a] == solver]:
                st = info_for(styles, alg)
                mine = t[t["algorithm"] == alg]
                # the series' own colour at the η it runs most; darker = smaller η
                counts = mine.groupby("eta").size()
                main = float(counts.idxmax())
                others = [e for e in sorted(counts.index) if e != main]
                for eta in sorted(counts.index):
                    g = mine[mine["eta"] == eta].sort_values("loss_max")
                    j = 0 if eta == main else 1 + others.index(eta)
                    colour = variant_colour(st, j, styles)
                    tag(ax.plot(g["loss_max"], g["cost_mean"], marker=st.marker, ms=3,
                                color=colour, ls=DASH_CYCLE[etas.index(eta) % len(DASH_CYCLE)],
                                label=f"{alg} η={eta:g}"), alg, j > 0)
            ax.set_title(solver, fontsize=9)
            ax.set_xlabel(TARGET_AXIS, fontsize=8)
            ax.grid(alpha=0.3)
        for row in axes:
            row[0].set_ylabel(COST_AXIS, fontsize=8)
        add_legend(fig, axes)
        return fig
    groups, fig, axes = small_multiples(t["algorithm"], styles, scale, sharey=True)
    for ax, algs in zip(axes[0], groups):
        for alg in algs:
            g = t[t["algorithm"] == alg].sort_values("eta")
            _line(ax, g["eta"], g["cost_mean"], info_for(styles, alg), alg)
        log_axis(ax, "x", t["eta"])
        value_ticks(ax, t["eta"])
        ax.set_xlabel(SIZE_AXIS["eta"], fontsize=8)
        ax.set_title(paper_set, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(COST_AXIS, fontsize=8)
    add_legend(fig, axes)
    return fig


def per_model(tab: pd.DataFrame, paper_set: str, ylabel: str, styles: Styles,
              scale: float = 1.0) -> Figure | None:
    """Stacked bars per target of what each model version received
    (Figs. 7/8), one panel per series."""
    t = tab[tab["paper_set"] == paper_set]
    if t.empty:
        return None
    algs = ordered(t["algorithm"], styles)
    models = sorted(t["model"].unique())
    ncols = min(len(algs), 4)  # wrap: seven series side by side are unreadable
    nrows = -(-len(algs) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, scale=scale * 0.8, sharey=True,
                        width=PANEL[0] * ncols + 1.5)
    for ax in axes.ravel()[len(algs):]:
        ax.set_axis_off()
    targets = sorted(t["loss_max"].unique())
    pos = np.arange(len(targets))
    # model versions, not algorithms: a sequential map, so no bar takes the
    # colour an algorithm has in the other figures
    mcol = {m: colormaps["cividis"](0.15 + 0.7 * i / max(1, len(models) - 1))
            for i, m in enumerate(models)}
    for ax, alg in zip(axes.ravel(), algs):
        g = t[t["algorithm"] == alg].pivot_table(index="loss_max", columns="model",
                                                 values="value", aggfunc="mean")
        ran = g.reindex(index=targets).notna().any(axis=1).to_numpy()
        g = g.reindex(index=targets, columns=models).fillna(0.0)
        bottom = np.zeros(len(targets))
        for m in models:
            ax.bar(pos, g[m].to_numpy(), bottom=bottom, color=mcol[m], label=m, width=0.7)
            bottom += g[m].to_numpy()
        # a target this series has no plan at is said, not left as a gap
        for x in pos[~ran]:
            ax.text(x, 0.04, "no plan", ha="center", va="bottom", fontsize=7, color="0.35",
                    transform=ax.get_xaxis_transform())
        ax.set_xticks(pos, [f"{x:g}" for x in targets], fontsize=7, rotation=45)
        ax.set_title(alg, fontsize=9)
        ax.set_xlabel("target ℓmax [loss]", fontsize=8)
    for row in axes:
        row[0].set_ylabel(ylabel)
    add_legend(fig, axes)
    return fig


def trajectories(rows: pd.DataFrame, targets: list[float], styles: Styles,
                 scale: float = 1.0) -> Figure | None:
    """Loss trajectories (Fig. 9) as small multiples: one panel per series,
    one line per target ℓmax (its first instance there) with the 1st–99th
    percentile band, in shades of the series' colour (the first target in
    the colour itself); dotted: each ℓmax."""
    if rows.empty or not targets:
        return None
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    algs = [a for a in ordered(rows["algorithm"], styles)
            if any(len(e.get("mean") or []) for e in rows.loc[rows["algorithm"] == a, "evaluation_d"])]
    if not algs:
        return None
    ncols = min(len(algs), 4)
    nrows = -(-len(algs) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, scale=scale * 0.9, sharey=True,
                           width=PANEL[0] * ncols + 0.6)
    for ax in axes.ravel()[len(algs):]:
        ax.set_axis_off()
    factors = (0.0, -0.45, 0.45, -0.7, 0.65)
    for ax, alg in zip(axes.ravel(), algs):
        st = info_for(styles, alg)
        for i, lm in enumerate(targets):
            g = rows[(rows["algorithm"] == alg) & (rows["loss_max"] == lm)]
            ev = g.iloc[0]["evaluation_d"] if not g.empty else {}
            mean = np.asarray(ev.get("mean") or [], float)
            if mean.size == 0:
                continue
            colour = variant_colour(st, i, styles)
            dash = DASH_CYCLE[i % len(DASH_CYCLE)]
            k = np.arange(mean.size)  # entry 0 is ℓ(0)
            tag(ax.plot(k, mean, color=colour, ls=dash, lw=1.3), alg, i > 0)
            lo, hi = ev.get("p01") or [], ev.get("p99") or []
            if len(lo) == mean.size and len(hi) == mean.size:
                tag(ax.fill_between(k, lo, hi, color=colour, alpha=0.18, lw=0), alg, i > 0)
            ax.axhline(lm, color=colour, ls=":", lw=0.9)
        ax.set_title(alg, fontsize=9)
        ax.set_xlabel("epoch k [epochs]", fontsize=8)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("loss ℓ(k) [loss]", fontsize=8)
    grey = [shade("#555555", factors[i % len(factors)]) for i in range(len(targets))]
    handles = [Line2D([], [], color=grey[i], ls=DASH_CYCLE[i % len(DASH_CYCLE)])
               for i in range(len(targets))]
    labels = [f"mean loss, target ℓmax = {lm:g} (dotted: ℓmax)" for lm in targets]
    handles.append(Patch(color="0.6", alpha=0.4))
    labels.append("band: 1st–99th percentile of the out-of-sample runs")
    fig.set_figheight(fig.get_figheight() + 1.45 * LEGEND_PT / 72 * (1 + len(handles) // 2))
    fig.legend(handles, labels, loc="outside lower center", fontsize=LEGEND_PT,
               ncols=2, frameon=False)
    return fig


def negative_means(rows: pd.DataFrame) -> list[str]:
    """Series and targets whose expected loss goes below 0 (Fig. 9 rows):
    "pact at ℓmax 0.15 (min −0.09 after 65 epochs)"."""
    out = []
    for r in rows.itertuples(index=False):
        mean = np.asarray((r.evaluation_d or {}).get("mean") or [], float)
        if mean.size and mean.min() < 0:
            out.append(f"{r.algorithm} at ℓmax {r.loss_max:g} (min {mean.min():.3g} after "
                       f"{mean.size - 1} epochs)")
    return list(dict.fromkeys(out))


def profiles(matrices: dict[tuple[str, str], pd.DataFrame], styles: Styles,
             scale: float = 1.0) -> Figure | None:
    """Dolan–Moré performance profiles: one row of panels per family,
    one panel per metric (runtime, cost)."""
    mats = {k: v for k, v in matrices.items() if not v.empty}
    if not mats:
        return None
    families = list(dict.fromkeys(f for f, _ in mats))
    metrics = list(dict.fromkeys(m for _, m in mats))
    # one row per family, or several when it has more than MAX_SERIES
    # algorithms (ratios are always to the best of all of them)
    rows = []
    for fam in families:
        algs = ordered(set().union(*(mats[(fam, m)].columns for m in metrics if (fam, m) in mats)),
                       styles)
        parts = chunks(algs)
        rows += [(fam, part, k, len(parts)) for k, part in enumerate(parts)]
    fig, axes = new_figure(ncols=len(metrics), nrows=len(rows), scale=scale,
                           width=PANEL[0] * len(metrics) + 1.5)
    for i, (fam, part, k, nparts) in enumerate(rows):
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
            for alg in [a for a in part if a in r.columns]:
                st = info_for(styles, alg)
                tag(ax.step(taus, profile_curve(r[alg], taus), where="post", color=st.colour,
                            ls=st.linestyle, label=alg), alg)
            log_axis(ax, "x", [1.0, top])
            ax.tick_params(labelsize=7)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("τ, ratio to the best on each problem [–]", fontsize=8)
            ax.set_ylabel("ρ(τ) [share of problems]", fontsize=8)
            ax.set_title(f"{fam}: {metric}, {len(r)} problems"
                         + (f" ({k + 1}/{nparts})" if nparts > 1 else ""), fontsize=8)
            ax.grid(alpha=0.3)
    add_legend(fig, axes)
    return fig


def ratio_vs(tab: pd.DataFrame, param: str, styles: Styles, scale: float = 1.0,
             max_series_per_algorithm: int = 3) -> Figure | None:
    """Measured competitive ratio against η or ε: left, on a linear axis
    around 1 (DepL's few-percent excess is visible); right, on log axes
    beside Property 3's (1/η)(1+ε), which lies two orders of magnitude
    below the line ratio = 1 that no feasible plan of a minimisation
    problem can go below.

    Per series only the ``max_series_per_algorithm`` values of the other
    parameter with the most points along ``param`` are drawn (a full η × ε
    grid would otherwise bury the panel); the table has every series."""
    if tab.empty or tab[param].nunique() < 1:
        return None
    other = "epsilon" if param == "eta" else "eta"
    groups = []
    for (alg, ov), g in tab.groupby(["algorithm", other], sort=True, dropna=False):
        if g[param].nunique() < 2:  # a single point is no line: the table has it
            continue
        groups.append((alg, ov, g.sort_values(param)))
    kept: list = []
    for alg in ordered({a for a, _, _ in groups}, styles):
        mine = [x for x in groups if x[0] == alg]
        mine.sort(key=lambda x: -x[2][param].nunique())
        kept += sorted(mine[:max_series_per_algorithm], key=lambda x: (pd.isna(x[1]), x[1]))
    if not kept:
        return None
    fig, axes = new_figure(ncols=2, scale=scale, width=PANEL[0] * 2 + 2.2)
    lin, log = axes[0]
    seen: dict[str, int] = {}
    for alg, ov, g in kept:
        st = styles.get(alg) or info_for(styles, alg.split(" [")[0])
        # several values of the other parameter: the first in the series'
        # colour and style, the others in shades of it with their own marker
        # and dash
        j = seen[alg] = seen.get(alg, -1) + 1
        marker = st.marker if j == 0 else MARKER_CYCLE[j % len(MARKER_CYCLE)]
        dash = st.linestyle if j == 0 else DASH_CYCLE[j % len(DASH_CYCLE)]
        colour = variant_colour(st, j, styles)
        lbl = (f"{alg} ({SIZE_AXIS[other].split(' ')[0]}={ov:g})" if not pd.isna(ov)
               else f"{alg} ({other} not recorded)")
        for ax in (lin, log):
            tag(ax.plot(g[param], g["ratio_median"], marker=marker, ms=3, color=colour,
                        ls=dash, label=f"{lbl}: measured median (band min–max)"), st.name, j > 0)
            tag(ax.fill_between(g[param], g["ratio_min"], g["ratio_max"], color=colour,
                                alpha=0.15, lw=0), st.name, j > 0)
        if g["property3_bound"].notna().any():
            tag(log.plot(g[param], g["property3_bound"], ls="--", color=colour, lw=1,
                         marker="x", ms=3, label=f"{lbl}: Property 3, (1/η)(1+ε)"), st.name, j > 0)
    for ax in (lin, log):
        ax.axhline(1.0, color="k", lw=0.8, ls=":", label="ratio = 1 (the optimum)")
        log_axis(ax, "x", tab[param])
        value_ticks(ax, tab[param])
        ax.set_xlabel(SIZE_AXIS[param], fontsize=8)
        ax.grid(alpha=0.3, which="both")
    shown = pd.concat([g for _, _, g in kept])
    lo = min(1.0, float(shown["ratio_min"].min()))
    hi = max(1.0, float(shown["ratio_max"].max()))
    pad = max(0.01, 0.08 * (hi - lo))
    lin.set_ylim(lo - pad, hi + pad)
    # a series named "[vs SAA optimum (S = …)]" is divided by an SAA optimum (tables.ratio_vs)
    lin.set_ylabel("cost / optimum [ratio], linear", fontsize=8)
    lin.set_title("measured ratio", fontsize=9)
    vals = np.concatenate([shown[c].to_numpy(float) for c in
                           ("ratio_min", "ratio_max", "property3_bound")])
    log_axis(log, "y", vals)
    log.set_ylabel("cost / optimum [ratio], log", fontsize=8)
    log.set_title("measured vs Property 3's claim", fontsize=9)
    add_legend(fig, axes)
    return fig


def single_point_series(tab: pd.DataFrame, param: str) -> list[str]:
    """Series of :func:`ratio_vs`'s table run at one value of ``param`` only
    (for every value of the other parameter): a point, not drawn as a line."""
    if tab.empty:
        return []
    other = "epsilon" if param == "eta" else "eta"
    n = tab.groupby(["algorithm", other], dropna=False)[param].nunique().groupby(level=0).max()
    return sorted(n[n < 2].index)
