"""How each series looks and in which order it is listed, from the records.

A solver declares its plotting style (colour, marker, line style) and
whether it is exact; the runner stores both in every task record (columns
``style`` and ``exact``). This module turns those columns into a
:class:`SeriesInfo` per series, so a third-party algorithm appears in every
figure with its own style and no report module keeps a list of algorithms.
A record without a style gets a deterministic one from :data:`PALETTE`,
picked by a CRC-32 of the name (stable across processes, unlike ``hash``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from matplotlib.colors import is_color_like, to_hex, to_rgb
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle

#: Fallback colours, markers and line styles (matplotlib's tab10 and friends).
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")


@dataclass(frozen=True)
class SeriesInfo:
    """One series (a sweep entry: label, default the registry name).

    Attributes
    ----------
    name : str
        Series name as shown (the record's ``label``).
    solver : str
        Registry name of the algorithm behind it.
    display : str
        The solver's display label (``algorithm_label``).
    exact : bool
        The solver proves optimality.
    colour, marker, linestyle : str
        Matplotlib style.
    """

    name: str
    solver: str
    display: str
    exact: bool
    colour: str
    marker: str
    linestyle: str


def _crc(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def fallback_style(name: str) -> tuple[str, str, str]:
    """A deterministic (colour, marker, linestyle) for a name."""
    h = _crc(name)
    return (PALETTE[h % len(PALETTE)], MARKERS[(h // 7) % len(MARKERS)],
            LINESTYLES[(h // 71) % len(LINESTYLES)])


def _declared(style: Mapping | None) -> tuple[str, str, str] | None:
    """(colour, marker, linestyle) of a record's style object, or None."""
    if not isinstance(style, Mapping):
        return None
    colour = style.get("colour") or style.get("color")
    if not isinstance(colour, str) or not colour:
        return None
    marker: str = style["marker"] if isinstance(style.get("marker"), str) else "o"
    ls: str = style["linestyle"] if isinstance(style.get("linestyle"), str) else "-"
    return colour, marker, ls


def style_problem(style: Mapping | None) -> str | None:
    """Why matplotlib cannot draw a record's declared style, or None when it can (or none is declared).

    A style reaches the store from the solver class (a plug-in's
    :class:`~deplbench.solvers.base.PlotStyle` is not checked against
    matplotlib) or from a hand-edited store.
    """
    declared = _declared(style)
    if declared is None:
        return None
    colour, marker, linestyle = declared
    if not is_color_like(colour):
        return f"colour {colour!r} is not a matplotlib colour"
    try:
        MarkerStyle(marker)
    except (ValueError, TypeError):
        return f"marker {marker!r} is not a matplotlib marker"
    try:
        Line2D([], [], linestyle=linestyle)  # type: ignore[arg-type]  # checking any text is the point
    except (ValueError, TypeError):
        return f"linestyle {linestyle!r} is not a matplotlib line style"
    return None


def drop_unusable_styles(df: pd.DataFrame) -> list[str]:
    """Replace, in ``df["style_d"]``, every style matplotlib cannot draw by none (the
    :func:`fallback_style` is used), and say which: one bad colour made every figure,
    and with it the whole report, fail ("Invalid RGBA argument")."""
    if df.empty or "style_d" not in df:
        return []
    problems = [style_problem(s) for s in df["style_d"]]
    bad = [i for i, why in enumerate(problems) if why is not None]
    if not bad:
        return []
    notes = []
    for solver, why in sorted({(str(df["solver"].iat[i]), problems[i]) for i in bad}):
        notes.append(f"algorithm {solver!r}: the stored style's {why}; drawn with a fallback style")
    col = list(df["style_d"])
    for i in bad:
        col[i] = {}
    df["style_d"] = pd.Series(col, index=df.index, dtype=object)
    return notes


def series_info(df: pd.DataFrame) -> dict[str, SeriesInfo]:
    """A :class:`SeriesInfo` for every series and every solver in ``df``.

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared store frame (columns ``algorithm`` = series, ``solver``,
        ``algorithm_label``, ``is_exact``, ``style_d``).

    Returns
    -------
    dict
        Keyed by series name, and by solver name for solvers that only run
        under other labels (complexity fits are per solver). A series whose
        name differs from its solver's (``depl-calibrated``) keeps the
        solver's hue (a shade of its colour, :func:`_distinct_colours`) with
        its own marker and line style, so variants of one algorithm read as a
        family and no two series share a colour.
    """
    out: dict[str, SeriesInfo] = {}
    if df.empty:
        return out
    cols = ["algorithm", "solver", "algorithm_label", "is_exact", "style_d"]
    by_solver: dict[str, tuple] = {}
    for _alg, solver, display, exact, style in df[cols].itertuples(index=False, name=None):
        base = _declared(style)
        if solver not in by_solver or (by_solver[solver][0] is None and base is not None):
            by_solver[solver] = (base, display or solver, bool(exact))
    for solver, (base, display, exact) in by_solver.items():
        c, m, ls = base or fallback_style(solver)
        out[solver] = SeriesInfo(solver, solver, display, exact, c, m, ls)
    for alg, solver in df[["algorithm", "solver"]].drop_duplicates().itertuples(
            index=False, name=None):
        if alg in out:
            continue
        parent = out[solver]
        h = _crc(alg)
        markers = [x for x in MARKERS if x != parent.marker]
        styles = [x for x in LINESTYLES if x != parent.linestyle]
        out[alg] = SeriesInfo(alg, solver, parent.display, parent.exact, parent.colour,
                              markers[h % len(markers)], styles[(h // 7) % len(styles)])
    return _distinct_colours(out)


#: Shades given to the 2nd, 3rd, ... series of one declared colour: blend
#: factors toward black (< 0) or white (> 0), so a family keeps its hue and
#: each member its own colour.
SHADES = (-0.45, 0.45, -0.7, 0.65, -0.25, 0.25)


def shade(colour: str, factor: float) -> str:
    """``colour`` blended toward white (factor > 0) or black (< 0), as #rrggbb."""
    c = np.asarray(to_rgb(colour), float)
    c = c + (1.0 - c) * factor if factor > 0 else c * (1.0 + factor)
    return to_hex(tuple(np.clip(c, 0.0, 1.0)))


def _distinct_colours(out: dict[str, SeriesInfo]) -> dict[str, SeriesInfo]:
    """Give every series of one colour but the first its own shade of it.

    Series of one solver (``depl``, ``depl-eta``, ``depl-calibrated``) and
    solvers declaring one colour (``milp``, ``milp-certified``) would be
    drawn alike; the first (the solver's own name, then the shortest) keeps
    the declared colour, the others get :data:`SHADES` of it. A solver key
    that is also a series name is one entry, so keys are the unit."""
    groups: dict[str, list[str]] = {}
    for name, info in out.items():
        groups.setdefault(info.colour.lower(), []).append(name)
    taken = {c for c in groups}
    for colour, names in groups.items():
        names.sort(key=lambda n: (out[n].name != out[n].solver, len(n), n))
        k = 0
        for name in names[1:]:
            while True:
                new = shade(colour, SHADES[k % len(SHADES)] * (1 - 0.1 * (k // len(SHADES))))
                k += 1
                if new not in taken:
                    break
            taken.add(new)
            out[name] = replace(out[name], colour=new)
    return out


def info_for(styles: Mapping[str, SeriesInfo], name: str) -> SeriesInfo:
    """The series' info, or a fallback for a name no record carries (a
    pytest-benchmark series)."""
    got = styles.get(name)
    if got is not None:
        return got
    c, m, ls = fallback_style(name)
    return SeriesInfo(name, name, name, False, c, m, ls)


def ordered(names: Iterable[str], styles: Mapping[str, SeriesInfo]) -> list[str]:
    """Series in listing order: exact solvers first (they are the reference),
    then by name; the order is the same in every table and figure."""
    return sorted(set(names), key=lambda n: (not info_for(styles, n).exact, n))
