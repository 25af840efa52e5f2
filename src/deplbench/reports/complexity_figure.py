"""The complexity figures: a measure (runtime, or a work counter) against one
size parameter on log-log axes, one panel per measure (Property 2, DepL
Sec. V). Drawn by the rules of :mod:`deplbench.reports.figures`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from deplbench.reports.complexity import CLAIMED_EXPONENTS, TIME, VERTEX_EXPONENTS
from deplbench.reports.figures import (
    DASH_CYCLE,
    MARKER_CYCLE,
    PANEL,
    SIZE_AXIS,
    Styles,
    chunks,
    log_axis,
    new_figure,
    value_ticks,
    variant_colour,
)
from deplbench.reports.readability import tag
from deplbench.reports.styles import info_for


def complexity(fits: pd.DataFrame, param: str, styles: Styles, scale: float = 1.0,
               max_series: int = 12, xlabel: str | None = None) -> Figure | None:
    """A measure (runtime, or a work counter) against one size parameter on
    log-log axes, one panel per measure (small multiples; more than
    :data:`MAX_SERIES` series of one measure take several panels): the
    points of each series' best fit, the fitted line (slope and 95 %
    interval in the panel's legend) and the claimed exponent(s) as
    reference lines anchored at the panel's first series. Series whose
    points coincide (one counter on several families of one solver) are
    one line naming them all. The y-range follows the data (the reference
    lines leave the panel at their own slope rather than squash the data).
    ``xlabel`` names the size when it is not :data:`SIZE_AXIS`'s (knapsack
    items)."""
    f = fits[fits["parameter"] == param]
    if f.empty:
        return None
    f = f.head(max_series)
    measure_of = f["measure"] if "measure" in f else pd.Series(TIME, index=f.index)
    panels: list[tuple[str, list]] = []
    for measure in dict.fromkeys(measure_of):
        merged: list[list] = []   # [points key, row, series names]
        for row in f[measure_of == measure].itertuples(index=False):
            key = (row.algorithm, tuple(np.asarray(row.x_values, float).round(9)),
                   tuple(np.asarray(row.y_values, float).round(9)))
            same = next((m for m in merged if m[0] == key), None)
            if same is not None:
                same[2].append(str(row.series))
            else:
                merged.append([key, row, [str(row.series)]])
        for part in chunks(list(range(len(merged)))):
            panels.append((measure, [merged[i] for i in part]))
    ncols = min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, scale=scale,
                           width=PANEL[0] * max(1.9, 1.3 * ncols))
    for ax in axes.ravel()[len(panels):]:
        ax.set_axis_off()
    claimed, implied_time, _ = CLAIMED_EXPONENTS[param]
    for ax, (measure, items) in zip(axes.ravel(), panels):
        implied = implied_time if measure == TIME else VERTEX_EXPONENTS.get(param)
        seen: dict[str, int] = {}
        ys_all, xs_all = [], []
        for i, (_key, row, names) in enumerate(items):
            x = np.asarray(row.x_values, float)
            y = np.asarray(row.y_values, float)
            ys_all.append(y)
            xs_all.append(x)
            st = info_for(styles, row.algorithm)
            # several series of one algorithm: shades of its colour, own marker and dash
            j = seen[row.algorithm] = seen.get(row.algorithm, -1) + 1
            colour = variant_colour(st, j, styles)
            marker, dash = MARKER_CYCLE[j % len(MARKER_CYCLE)], DASH_CYCLE[j % len(DASH_CYCLE)]
            tag(ax.scatter(x, y, s=10, color=colour, alpha=0.6, marker=marker), row.algorithm, j > 0)
            xs = np.geomspace(x.min(), x.max(), 20)
            ci = (f"[{row.ci_low:.2f}, {row.ci_high:.2f}]" if math.isfinite(row.ci_low)
                  else "[n/a]")
            # merged groups with identical counts: name two, count the rest (a legend line
            # naming five instance classes runs past the figure's edge)
            who = " = ".join(names) if len(names) <= 2 else f"{names[0]} = {len(names) - 1} more groups"
            label = f"{row.algorithm} [{who}]: slope {row.slope:.2f} {ci}"
            tag(ax.plot(xs, np.exp(row.intercept) * xs ** row.slope, color=colour, lw=1.2, ls=dash,
                        marker=marker, markevery=[0, len(xs) - 1], ms=3, label=label),
                row.algorithm, j > 0)
            if i == 0:
                x0, y0 = xs[0], float(np.exp(row.intercept) * xs[0] ** row.slope)
                for e, ls, what in ((claimed, "--", "claimed (runtime)"),
                                    (implied, ":", "implied (runtime)" if measure == TIME
                                     else "vertex count |M|Kη²")):
                    if e is None or (ls == ":" and e == claimed):
                        continue
                    ax.plot(xs, y0 * (xs / x0) ** e, color="k", ls=ls, lw=0.9,
                            label=f"{what} exponent {e:+g}")
        ally = np.concatenate(ys_all)
        ally = ally[np.isfinite(ally) & (ally > 0)]
        if ally.size:
            ax.set_ylim(ally.min() / 3.0, ally.max() * 3.0)
        xall = np.concatenate(xs_all)
        log_axis(ax, "x", xall)
        log_axis(ax, "y", ally)
        value_ticks(ax, xall)
        ax.tick_params(labelsize=7)
        ax.set_xlabel(xlabel or SIZE_AXIS[param], fontsize=8)
        ax.set_ylabel("runtime [s]" if measure == TIME else "work counted [count]", fontsize=8)
        algs = {row.algorithm for _k, row, _n in items}
        ax.set_title(("runtime" if measure == TIME else measure)
                     + (f" — {next(iter(algs))}" if len(algs) == 1 else ""), fontsize=8)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(0.0, -0.2),
                  borderaxespad=0.0)
    return fig


__all__ = ["complexity"]
