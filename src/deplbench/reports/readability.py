"""Checks that a drawn figure can be read: nothing clipped, one colour per
algorithm, few series per panel, no empty panel.

The report's figure functions tag every artist that draws an algorithm's
data with a ``gid`` (:func:`tag`): ``"alg:NAME"`` for the series itself,
drawn in the colour the palette (:mod:`deplbench.reports.styles`) gives
NAME, and ``"variant:NAME"`` for a variant of it (another ε of the same
series, another target), drawn in a shade of that colour.
:func:`figure_problems` then checks, on the figure as drawn:

* every visible text (titles, axis labels, tick labels, legend entries)
  lies inside the figure: nothing is clipped at its edge;
* an ``alg:`` artist has its algorithm's palette colour, so one algorithm
  looks the same in every figure;
* two algorithms never share a colour within one figure;
* no panel draws more than :data:`MAX_SERIES` algorithms (small multiples
  instead);
* no visible panel is empty.

:func:`deplbench.reports.build.build_report` runs it on every figure it
writes and lists what it finds in ``ReportSummary.figure_problems``.
"""

from __future__ import annotations

from collections.abc import Mapping

from matplotlib.colors import to_hex

#: Most algorithms one panel may draw before it must be split.
MAX_SERIES = 6

#: Slack for text extents at the figure's edge, display pixels (antialiasing).
EDGE_PX = 1.0


def tag(artist, name: str, variant: bool = False):
    """Mark ``artist`` as drawing series ``name`` (or a variant of it)."""
    items = artist if isinstance(artist, (list, tuple)) else [artist]
    for a in items:
        a.set_gid(("variant:" if variant else "alg:") + str(name))
    return artist


def _colour(artist) -> str | None:
    for getter in ("get_color", "get_facecolor", "get_edgecolor"):
        f = getattr(artist, getter, None)
        if f is None:
            continue
        try:
            c = f()
        except (TypeError, ValueError):
            continue
        if hasattr(c, "ndim") and getattr(c, "ndim", 0) == 2:
            if len(c) == 0:
                continue
            c = c[0]
        try:
            return to_hex(c, keep_alpha=False).lower()
        except (TypeError, ValueError):
            continue
    return None


def _tagged(fig):
    """(axes, kind, name, colour) of every tagged artist."""
    out = []
    for ax in fig.axes:
        for a in [*ax.lines, *ax.collections, *ax.patches]:
            gid = a.get_gid()
            if not isinstance(gid, str) or ":" not in gid:
                continue
            kind, name = gid.split(":", 1)
            if kind not in ("alg", "variant"):
                continue
            c = _colour(a)
            if c is not None:
                out.append((ax, kind, name, c))
    return out


def _drawn_texts(fig):
    """Every text the figure draws: figure texts and legends, and per
    visible axes its titles, axis labels, the tick labels of the ticks in
    view (ticks outside the view keep stale positions and are not drawn),
    its texts and its legend."""
    texts = list(fig.texts)
    for leg in fig.legends:
        texts += list(leg.get_texts())
        if leg.get_title() is not None:
            texts.append(leg.get_title())
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):
            texts += [axis.label, axis.get_offset_text()]
            try:
                ticks = axis._update_ticks()
            except (AttributeError, RuntimeError, ValueError):
                ticks = []
            for tick in ticks:
                texts += [tick.label1, tick.label2]
        leg = ax.get_legend()
        if leg is not None:
            texts += list(leg.get_texts())
    return texts


def _clipped(fig, renderer) -> list[str]:
    box = fig.bbox
    out = []
    for t in _drawn_texts(fig):
        if t is None or not t.get_visible() or not str(t.get_text()).strip():
            continue
        try:
            e = t.get_window_extent(renderer)
        except (RuntimeError, ValueError):
            continue
        if e.width <= 0 or e.height <= 0:
            continue
        if (e.x0 < box.x0 - EDGE_PX or e.y0 < box.y0 - EDGE_PX or e.x1 > box.x1 + EDGE_PX
                or e.y1 > box.y1 + EDGE_PX):
            out.append(f"text {str(t.get_text())[:60]!r} is clipped at the figure's edge "
                       f"(extent x {e.x0:.0f}–{e.x1:.0f}, y {e.y0:.0f}–{e.y1:.0f}; figure "
                       f"{box.width:.0f}×{box.height:.0f} px)")
    return out


def figure_problems(fig, styles: Mapping | None = None, name: str = "figure",
                    draw: bool = True) -> list[str]:
    """What makes ``fig`` hard to read, one sentence each ([] when nothing).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure of the report (drawn here if it was not yet).
    styles : mapping, optional
        Series name → :class:`~deplbench.reports.styles.SeriesInfo`; with
        it, each ``alg:NAME`` artist must have NAME's palette colour.
    name : str
        Prefix of each sentence (the figure's file stem).
    draw : bool
        Draw the figure first; False when it was just saved at its own dpi
        (its layout is then the one written).
    """
    if draw:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
        canvas.draw()
    renderer = fig._get_renderer()
    problems = [f"{name}: {p}" for p in _clipped(fig, renderer)]
    tagged = _tagged(fig)
    owner: dict[str, str] = {}
    for _ax, _kind, alg, colour in tagged:
        other = owner.setdefault(colour, alg)
        if other != alg:
            problems.append(f"{name}: {other} and {alg} are drawn in one colour {colour}")
            owner[colour] = alg
    if styles:
        for _ax, kind, alg, colour in tagged:
            info = styles.get(alg)
            if kind == "alg" and info is not None and to_hex(info.colour).lower() != colour:
                problems.append(f"{name}: {alg} is drawn in {colour}, not its palette colour "
                                f"{to_hex(info.colour).lower()}")
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        algs = {alg for a, _k, alg, _c in tagged if a is ax}
        if len(algs) > MAX_SERIES:
            problems.append(f"{name}: panel {i + 1} draws {len(algs)} algorithms (at most "
                            f"{MAX_SERIES}: split into small multiples)")
        if not (ax.lines or ax.collections or ax.patches or ax.images):
            problems.append(f"{name}: panel {i + 1} is empty")
    return list(dict.fromkeys(problems))


__all__ = ["MAX_SERIES", "figure_problems", "tag"]
