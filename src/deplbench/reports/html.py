"""Render a list of sections to one self-contained ``index.html``.

Self-contained means: no script, no web font, no CDN; styles are inline and
every figure or table is a relative link to a file written beside the page
(``figures/``, ``tables/``), so the folder can be zipped, mailed or opened
offline. All text from the store is HTML-escaped.
"""

from __future__ import annotations

import html
import re

from deplbench.reports.elements import Figure, Note, Section, Table, fmt_cell
from deplbench.reports.headline import GLANCE_HEADERS

#: Tables longer than this are cut in the HTML (the CSV has every row).
HTML_MAX_ROWS = 200

#: Tables longer than this are folded (``<details>``) so the page stays short.
FOLD_ROWS = 15

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1400px;
margin:.8em auto;padding:0 1em;color:#222;line-height:1.45;overflow-wrap:break-word}
.scroll{max-width:100%;overflow-x:auto}
.scroll.tall{max-height:32em;overflow-y:auto}
details>summary{cursor:pointer;color:#245;margin:.3em 0}
.headline{border:2px solid #456;border-radius:6px;padding:.2em .7em .4em;background:#f5f8fb;
margin:.4em 0 1.5em}
.headline h2{margin:.1em 0;border:none;font-size:1.15em}
.headline h3{margin:.1em 0;font-size:1em}
.headline .caption{font-size:.74em;margin:.1em 0;line-height:1.3}
.headline .legend{font-size:.74em;margin:.3em 0;color:#333;line-height:1.3}
.cards{display:flex;flex-wrap:wrap;gap:.4em .8em}
.card{flex:1 1 20em;min-width:0}
.card.wide{flex-basis:100%}
.card table{font-size:.7em;width:100%;margin:.15em 0;line-height:1.15}
.card th{font-weight:600}
.card td.c-algorithm,.card td.c-verdict,.card td.c-cost_over_saa_optimum,.card td.c-feasible{white-space:nowrap}
.card table.wrap-feasible td.c-feasible{white-space:normal}
.card td.c-measured{font-size:.92em}
.card td .ci{display:block;font-size:.88em;color:#444;white-space:nowrap}
.card td.c-claim{width:34%}.card td.c-verdict{width:1%}
.card td,.card th{padding:.05em .3em}
td.flag{background:#fff0c0}
@media (max-width:40em){
.card table,.card tbody,.card tr,.card td,table.stack,table.stack tbody,table.stack td{
display:block;width:100%;max-width:none}
.card thead,table.stack thead{display:none}
.card tr,table.stack tr{display:flex;flex-direction:column;border-top:2px solid #9ab;
padding:.15em 0}
.card td,table.stack td{border:none;padding:.05em .3em}
.card td.c-verdict,.card td.c-claim{width:auto}
#card-glance_claims td.c-verdict,table.stack td.c-verdict{order:-1}
.card td::before,table.stack td::before{content:attr(data-label) ": ";font-weight:600;
color:#345}
table.stack td.num{text-align:left}
}
h1{font-size:1.4em;margin:.2em 0}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin-bottom:.3em}
table{border-collapse:collapse;font-size:.82em;margin:.4em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .45em;text-align:left;vertical-align:top;
max-width:28em;overflow-wrap:break-word}
th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.missing{background:#fff6e0;border-left:4px solid #e0a000;padding:.4em .7em}
.omitted{color:#555;font-size:.9em;margin:.4em 0;border-left:4px solid #ccc;padding:.1em .6em}
.error{background:#fde8e8;border-left:4px solid #c00;padding:.4em .7em}
.caption{color:#555;font-size:.9em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figure a.full{display:block;cursor:zoom-in}
.v-holds{background:#e3f5e3}.v-fails{background:#fbe0e0}.v-unmeasured{background:#eee}
nav ol{columns:2}
.meta{color:#555;font-size:.9em}
"""

_VERDICT_CLASS = {"holds": "v-holds", "does not hold": "v-fails",
                  "not measured in this run": "v-unmeasured",
                  "not decided (the reference bracket is too wide)": "v-unmeasured",
                  "not decided by the bracket (too wide)": "v-unmeasured",
                  "not decided (the interval contains the threshold)": "v-unmeasured",
                  "not decided (the interval's level is not computable)": "v-unmeasured",
                  "not applicable (mean vs quantile)": "v-unmeasured",
                  "consistent": "v-holds", "contradicts": "v-fails"}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def render_omitted(t: Table, reason: str = "") -> str:
    """One line in place of an empty table: its title and why it is empty."""
    why = reason or t.empty or "the store holds no rows it could be computed from"
    return (f'<p class="omitted" id="table-{_e(t.name)}"><b>{_e(t.title)}</b>: not shown, '
            f"no rows — {_e(why.rstrip('.'))}. ({_csv(t)}: the columns only)</p>")


def render_table(t: Table) -> str:
    """A table with its caption and links to the CSV and Markdown files."""
    if t.frame.empty:
        return render_omitted(t)
    out = [f'<div class="table" id="table-{_e(t.name)}"><h3>{_e(t.title)}</h3>']
    if t.caption:
        out.append(f'<p class="caption">{_e(t.caption)}</p>')
    out.append(f'<p class="caption">Files: <a href="tables/{_e(t.name)}.csv">CSV</a> · '
               f'<a href="tables/{_e(t.name)}.md">Markdown</a> — {len(t.frame)} row(s).</p>')
    body = [_table_html(t.frame.head(HTML_MAX_ROWS))]
    if len(t.frame) > HTML_MAX_ROWS:
        body.append(f'<p class="caption">Showing the first {HTML_MAX_ROWS} of '
                    f'{len(t.frame)} rows; the CSV has all of them.</p>')
    tall = " tall" if len(t.frame) > FOLD_ROWS else ""
    inner = f'<div class="scroll{tall}">' + "\n".join(body) + "</div>"
    if t.collapse or len(t.frame) > FOLD_ROWS:
        inner = (f"<details><summary>Show the table ({len(t.frame)} rows, "
                 f"{len(t.frame.columns)} columns)</summary>{inner}</details>")
    out.append(inner)
    out.append("</div>")
    return "\n".join(out)


def _table_html(frame) -> str:
    """A plain ``<table>`` of ``frame`` (cells escaped, verdicts coloured)."""
    out = ['<table class="stack"><thead><tr>'
           + "".join(f"<th>{_e(c)}</th>" for c in frame.columns) + "</tr></thead><tbody>"]
    for row in frame.itertuples(index=False, name=None):
        cells = []
        for col, v in zip(frame.columns, row):
            # c-<column> and data-label: on a narrow screen each row stacks
            # into label: value lines, the verdict first (CSS above)
            cls = [f"c-{_css_name(col)}"]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                cls.append("num")
            if col in ("verdict",) and str(v) in _VERDICT_CLASS:
                cls.append(_VERDICT_CLASS[str(v)])
            cells.append(f'<td class="{" ".join(cls)}" data-label="{_e(col)}">'
                         f"{_e(fmt_cell(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _css_name(col) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in str(col))


def render_figure(f: Figure, formats: tuple[str, ...]) -> str:
    """An ``<img>`` of the PNG (or the first format) plus links to all formats.

    The image is a link to itself: on a phone, where the figure is shrunk
    to the screen's width, a tap opens it at full size (pinch to zoom)."""
    main = "png" if "png" in formats else formats[0]
    links = " · ".join(f'<a href="figures/{_e(f.name)}.{fmt}">{fmt.upper()}</a>'
                       for fmt in formats)
    src = f"figures/{_e(f.name)}.{main}"
    return (f'<figure id="figure-{_e(f.name)}"><h3>{_e(f.title)}</h3>'
            f'<a class="full" href="{src}" title="open at full size">'
            f'<img src="{src}" alt="{_e(f.title)}"></a>'
            f'<figcaption class="caption">{_e(f.caption)} ({links})</figcaption></figure>')


def render_note(n: Note) -> str:
    cls = ' class="error"' if n.error else ' class="missing"' if n.missing else ""
    return f"<p{cls}>{_e(n.text)}</p>"


def _glance_class(col: str, value: str) -> str:
    """Colour class of a glance cell: verdicts, and flagged ratios."""
    if col == "verdict":
        if value in _VERDICT_CLASS:
            return _VERDICT_CLASS[value]
        if value.startswith("feasible"):
            # "feasible 9/10": a run returned no plan, so not every run holds
            m = re.fullmatch(r"feasible (\d+)/(\d+)", value)
            return "v-holds" if m is None or m.group(1) == m.group(2) else "v-unmeasured"
        if value.startswith("misses"):
            return "v-fails"
        return "v-unmeasured"
    if col == "vs_reference" and "⚑" in value:
        return "flag"
    return ""


#: Longest "proven, certified · MC met" text kept on one line in a card.
FEASIBLE_ONE_LINE = 22


#: A ratio cell's 95 % interval on the median, " [1.002, 1.117]" or " [n < 6]".
_CI = re.compile(r" \[[^\]]*\]")


def _glance_cell(col: str, text: str) -> str:
    """A glance cell's HTML. In a ratio cell the interval on the median goes
    on a second, smaller line, so that the ratio, its reference count and its
    flags read first and a card row stays two lines high."""
    m = _CI.search(text) if col == "vs_reference" else None
    if m is None:
        return _e(text)
    head = text[:m.start()] + text[m.end():]
    return f'{_e(head)}<span class="ci">{_e(m.group(0).strip())}</span>'


def _glance_table(t: Table) -> str:
    """A compact table of the glance box: every cell carries its column
    (``data-col``) and its header (``data-label``, shown before the value when
    the rows stack on a narrow screen)."""
    heads = [GLANCE_HEADERS.get(c, c) for c in t.frame.columns]
    # the counts stay on one line (one line per row in the tallest card)
    # unless they are long (a policy's "P(success) ≥ ω cert."): then they wrap
    feasible = [fmt_cell(v) for v in t.frame["feasible"]] if "feasible" in t.frame else []
    wrap = ' class="wrap-feasible"' if any(len(x) > FEASIBLE_ONE_LINE for x in feasible) else ""
    out = [f"<table{wrap}><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in heads)
           + "</tr></thead><tbody>"]
    for row in t.frame.itertuples(index=False, name=None):
        cells = []
        for col, head, v in zip(t.frame.columns, heads, row):
            text = fmt_cell(v)
            cls = " ".join(c for c in (f"c-{col}", _glance_class(col, text)) if c)
            cells.append(f'<td class="{cls}" data-col="{_e(col)}" data-label="{_e(head)}">'
                         f"{_glance_cell(col, text)}</td>")
        out.append('<tr class="glance-row">' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _csv(t: Table) -> str:
    return (f'<a href="tables/{_e(t.name)}.csv">CSV</a> · '
            f'<a href="tables/{_e(t.name)}.md">Markdown</a>')


#: The glance's own words, explained in one line under its cards.
GLANCE_LEGEND = (
    "Reading the cards: cost / reference = median over instances of cost ÷ the instance's "
    "proven reference (a–b: cost/UB–cost/LB of a certified bracket; (adaptive): a policy's mean "
    "cost ÷ the adaptive optimum); on n/N: a reference exists on n of the N instances it ran on, "
    "(k no plan): k runs without a plan, which the verdict and proven counts include; "
    "⚑ k below opt. or LB: k plans cheaper than a proven optimum or bound (they cannot be "
    "feasible); ⚑ k below UB: k plans cheaper than the best certified plan (their own verdict "
    "decides; not flagged against the adaptive optimum); proven = exact bounds, "
    "cert. = Clopper–Pearson, MC = Monte Carlo estimate met "
    "ℓmax; SAA ratio = cost ÷ the S-scenario SAA optimum (the sample's, not the problem's).")


def render_headline(box: Section) -> str:
    """The at-a-glance box above the table of contents: one card per set
    (side by side on a wide screen, stacked on a narrow one), the claims,
    and the full numbers folded."""
    out = [f'<div class="headline" id="{_e(box.id)}"><h2>{_e(box.title)}</h2>']
    cards, rest = [], []
    for el in box.elements:
        if isinstance(el, Table) and el.name.startswith("glance_") and el.name != "glance_claims":
            cards.append(f'<div class="card" id="card-{_e(el.name)}"><h3>{_e(el.title)}</h3>'
                         f'<p class="caption">{_e(el.caption)} ({_csv(el)})</p>'
                         f'<div class="scroll">{_glance_table(el)}</div></div>')
        elif isinstance(el, Table) and el.name == "glance_claims":
            rest.append(f'<div class="card wide" id="card-glance_claims"><h3>{_e(el.title)}</h3>'
                        f'<div class="scroll">{_glance_table(el)}</div>'
                        f'<p class="caption">{_e(el.caption)} ({_csv(el)})</p></div>')
        elif isinstance(el, Table):
            rest.append(f"<details><summary>{_e(el.title)} ({_csv(el)})</summary>"
                        f'<div class="scroll">{_table_html(el.frame)}</div></details>')
        elif isinstance(el, Note):
            rest.append(render_note(el))
    if cards:
        out.append('<div class="cards">' + "".join(cards) + "</div>")
        out.append(f'<p class="legend" id="glance-legend">{_e(GLANCE_LEGEND)}</p>')
    out += rest
    if box.intro:
        out.append(f'<p class="caption">{_e(box.intro)}</p>')
    out.append("</div>")
    return "\n".join(out)


def _has_data(s: Section) -> bool:
    return any(isinstance(el, Figure) or (isinstance(el, Table) and not el.frame.empty)
               for el in s.elements)


def render_section(s: Section, formats: tuple[str, ...]) -> str:
    """A section. An empty table becomes one line saying why (the note
    next to it that explains it, when there is one, is that line); a
    section with no figure and no row at all becomes its heading and one
    line listing why."""
    out = [f'<section id="{_e(s.id)}"><h2>{_e(s.title)}</h2>']
    els = s.elements
    if not _has_data(s):
        why = [el.text for el in els if isinstance(el, Note)] or [
            f"{el.title}: no rows" for el in els if isinstance(el, Table)]
        files = "; ".join(f"{_e(el.title)}: {_csv(el)}" for el in els if isinstance(el, Table))
        out.append(f'<p class="omitted">Omitted, nothing to show: {_e(" ".join(why) or "no data.")}'
                   + (f" (the columns only: {files})" if files else "") + "</p>")
        if s.intro:
            out.append(f'<p class="caption">{_e(s.intro)}</p>')
        out.append("</section>")
        return "\n".join(out)
    if s.intro:
        out.append(f"<p>{_e(s.intro)}</p>")
    used: set[int] = set()
    rendered_notes: dict[int, int] = {}
    for i, el in enumerate(els):
        if i in used:
            continue
        if isinstance(el, Table) and el.frame.empty:
            reason = el.empty
            if not reason:
                # the builder's note about this table: the missing-data note
                # right after it, else the note right before it
                nxt = els[i + 1] if i + 1 < len(els) else None
                prv = els[i - 1] if i > 0 else None
                if isinstance(nxt, Note) and nxt.missing and not nxt.error:
                    reason = nxt.text
                    used.add(i + 1)
                elif isinstance(prv, Note) and not prv.error and (i - 1) in rendered_notes:
                    reason = prv.text
                    out[rendered_notes[i - 1]] = ""
            out.append(render_omitted(el, reason))
        elif isinstance(el, Table):
            out.append(render_table(el))
        elif isinstance(el, Figure):
            out.append(render_figure(el, formats))
        elif isinstance(el, Note):
            rendered_notes[i] = len(out)
            out.append(render_note(el))
    out.append("</section>")
    return "\n".join(x for x in out if x)


def render(title: str, meta: list[str], sections: list[Section],
           formats: tuple[str, ...] = ("png", "svg"), headline: Section | None = None) -> str:
    """The whole page.

    Parameters
    ----------
    title : str
        Page title and heading.
    meta : list of str
        Lines under the heading (source, row count, code versions).
    sections : list of Section
        In display order; each becomes ``<section id=...>``.
    formats : tuple of str
        Figure formats written (the first PNG is embedded).
    headline : Section, optional
        The at-a-glance box, drawn above the table of contents.

    Returns
    -------
    str
        HTML5 text.
    """
    out = ["<!DOCTYPE html>", ('<html lang="en"><head><meta charset="utf-8">'
                               '<meta name="viewport" content="width=device-width, '
                               'initial-scale=1">'),
           f"<title>{_e(title)}</title>", f"<style>{_CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>"]
    if headline is not None:  # first: the first screen carries the findings
        out.append(render_headline(headline))
    out += [f'<p class="meta">{_e(m)}</p>' for m in meta]
    out.append("<nav><ol>" + "".join(f'<li><a href="#{_e(s.id)}">{_e(s.title)}</a></li>'
                                     for s in sections) + "</ol></nav>")
    for s in sections:
        out.append(render_section(s, formats))
    out.append("</body></html>")
    return "\n".join(out) + "\n"
