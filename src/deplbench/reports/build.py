"""Build a static report directory from a results store.

:func:`build_report` is the whole pipeline: read the store frame (and
optional pytest-benchmark JSON), compute the tables, draw the figures, audit
the claims, and write ``index.html``, ``figures/*.png|svg``,
``tables/*.csv|md`` and ``manifest.json`` into the output folder.

Every section is drawn from whatever the store holds. Missing data is a
statement in the report ("no MILP rows in this store"), never an
exception; a section that fails for an unforeseen reason is replaced by an
error paragraph (and listed in the manifest) so the rest still appears.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
import unicodedata
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib as mpl
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg

from deplbench.files import refuse_overwrite, store_files, write_csv
from deplbench.jsonio import dumps
from deplbench.reports import complexity as cx
from deplbench.reports.bracket import (
    BRACKET_COLUMNS,
    CLAIM_COLUMNS,
    RATIO_COLUMNS,
    bracket_section,
)
from deplbench.reports.data import ReportError, load_bench_json, load_store, prepare, text_cell_notes
from deplbench.reports.elements import Figure, Note, Section, Table, markdown_table
from deplbench.reports.headline import headline
from deplbench.reports.html import render
from deplbench.reports.readability import figure_problems
from deplbench.reports.sections import SECTION_BUILDERS, Context
from deplbench.reports.stats import with_ratios
from deplbench.reports.styles import drop_unusable_styles, series_info

#: Re-exported for callers of the old single-module layout.
__all__ = ["ReportOptions", "ReportSummary", "build_report", "validate_options",
           "SECTION_BUILDERS"]


@dataclass
class ReportOptions:
    """Knobs of :func:`build_report` (validated by :func:`validate_options`).

    Attributes
    ----------
    title : str
        Page title.
    sgm_shift : float
        Shift s (seconds) of the shifted geometric mean of solve times.
    scale : float
        Figure size multiplier (0.5 makes small, fast figures for tests).
    dpi : int
        PNG resolution.
    formats : tuple of str
        Figure formats, a subset of ("png", "svg"); PNG is embedded.
    progress : bool
        Write one status line per step to stderr (``deplbench report`` does;
        stdout stays reserved for the result).
    """

    title: str = "deplbench report"
    sgm_shift: float = 1.0
    scale: float = 1.0
    dpi: int = 110
    formats: tuple[str, ...] = ("png", "svg")
    progress: bool = False


@dataclass
class ReportSummary:
    """What :func:`build_report` wrote.

    Attributes
    ----------
    out_dir : Path
        The report folder; ``index`` is its ``index.html``.
    sections : list of (id, title)
    figures, tables : list of str
        File stems written under ``figures/`` and ``tables/``.
    missing : list of str
        Every missing-data statement made.
    errors : list of str
        Sections that failed to build (empty for a healthy report).
    claims : pandas.DataFrame
        The claims-audit table.
    figure_problems : list of str
        What makes a written figure hard to read (clipped text, two
        algorithms in one colour, too many series in a panel, an empty
        panel: :func:`deplbench.reports.readability.figure_problems`);
        empty for a healthy report.
    """

    out_dir: Path
    index: Path
    sections: list[tuple[str, str]] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    claims: pd.DataFrame | None = None
    figure_problems: list[str] = field(default_factory=list)


def validate_options(opts: ReportOptions) -> None:
    """Raise :class:`ReportError` naming the first invalid option."""
    if not isinstance(opts.title, str) or not opts.title.strip():
        raise ReportError("title: must be a non-empty string")
    bad = next((i for i, ch in enumerate(opts.title) if unicodedata.category(ch) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:         # the page's <title> and heading are one line (named by position: it may be long)
        raise ReportError(f"title: must not hold control characters or line breaks; character {bad} is "
                          f"U+{ord(opts.title[bad]):04X}")
    if not (isinstance(opts.sgm_shift, (int, float)) and math.isfinite(opts.sgm_shift)
            and opts.sgm_shift > 0):
        raise ReportError(f"sgm_shift: must be a positive number of seconds, got "
                          f"{opts.sgm_shift!r}")
    if not (isinstance(opts.scale, (int, float)) and 0.2 <= opts.scale <= 5):
        raise ReportError(f"scale: must lie in [0.2, 5], got {opts.scale!r}")
    if not (isinstance(opts.dpi, int) and 30 <= opts.dpi <= 600):
        raise ReportError(f"dpi: must be an integer in [30, 600], got {opts.dpi!r}")
    fm = tuple(opts.formats)
    if not fm or any(f not in ("png", "svg") for f in fm) or len(set(fm)) != len(fm):
        raise ReportError(f"formats: must be distinct values among png, svg; got {fm!r}")


# --------------------------------------------------------------------------
# writing


#: What a build writes into the output folder (swapped in whole at the end).
REPORT_PARTS = ("figures", "tables", "index.html", "manifest.json")


def _prepare_out(out_dir: str | Path) -> tuple[Path, Path]:
    """The output folder and a fresh work folder next to it.

    The report is built in the work folder and :func:`_publish` moves it in
    at the end, so a build that fails leaves the previous report whole (no
    tables without an index).
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ReportError(f"--out: {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.resolve().name}.building-", dir=out.resolve().parent))
    for sub in ("figures", "tables"):
        (work / sub).mkdir()
    return out, work


def _written_before(out: Path) -> list[str]:
    """The files an earlier report wrote into ``out``, from its manifest.json.

    Only these are ever removed: ``files`` (every file the build wrote),
    else the ``figures`` and ``tables`` lists of an older manifest, plus
    index.html and manifest.json. A name that is not a plain figure or
    table file (.png, .svg, .csv, .md) under figures/ or tables/, or one of
    the two top-level files, is ignored: a manifest is a file anyone can edit, not a licence to delete.
    """
    man = out / "manifest.json"
    if not man.is_file() or man.is_symlink():
        return []
    try:
        doc = json.loads(man.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict):
        return []
    listed = doc.get("files")
    if not isinstance(listed, list):
        listed = [*(doc.get("figures") or []), *(doc.get("tables") or []), "index.html", "manifest.json"]
    keep = []
    for rel in listed:
        if not isinstance(rel, str):
            continue
        parts = rel.split("/")
        top = len(parts) == 1 and rel in ("index.html", "manifest.json")
        sub = (len(parts) == 2 and parts[0] in ("figures", "tables") and not parts[1].startswith(".")
               and parts[1].endswith((".csv", ".md", ".png", ".svg")))
        if (top or sub) and "\\" not in rel:
            keep.append(rel)
    return keep


def _publish(work: Path, out: Path) -> None:
    """Move the finished build in ``work`` into ``out``, file by file.

    The previous report's files (its manifest's list, :func:`_written_before`)
    that this build does not write again are removed; every other file in
    ``out`` — a store, notes, a user's own table — is left alone. A
    ``figures``/``tables`` folder that is a symbolic link leading out of
    ``out`` is refused before anything moves.
    """
    from deplbench.files import confined

    base = out.resolve()
    for sub in ("figures", "tables"):
        confined(base, sub, f"--out {out}/{sub}", ReportError)
        if (out / sub).exists() and not (out / sub).is_dir():
            raise ReportError(f"--out: {out / sub} exists and is not a directory")
    old = _written_before(out)
    new = sorted(str(p.relative_to(work)).replace(os.sep, "/") for p in work.rglob("*") if p.is_file())
    for sub in ("figures", "tables"):
        (out / sub).mkdir(exist_ok=True)
    # manifest.json last: until it lands, the old manifest still lists every old file
    for rel in sorted(new, key=lambda r: r == "manifest.json"):
        os.replace(work / rel, out / rel)
    for rel in set(old) - set(new):
        target = out / rel
        if target.is_file() or target.is_symlink():
            target.unlink()
    shutil.rmtree(work, ignore_errors=True)


def _write_table(out: Path, t: Table) -> None:
    write_csv(t.frame, out / "tables" / f"{t.name}.csv")
    md = f"# {t.title}\n\n" + (f"{t.caption}\n\n" if t.caption else "")
    md += markdown_table(t.frame) if len(t.columns) else "(no columns)\n"
    (out / "tables" / f"{t.name}.md").write_text(md, encoding="utf-8")


def _write_figure(out: Path, f: Figure, opts: ReportOptions, styles=None) -> list[str]:
    """Write ``f`` in every format; return what makes it hard to read
    (:func:`~deplbench.reports.readability.figure_problems`, measured on the
    PNG's layout when PNG is among the formats).

    The PNG is drawn by the Agg canvas at the report's dpi, so a user's
    ``savefig.*`` settings (bbox, facecolor, transparency) apply to the SVG
    only: the report's PNGs look the same on every machine."""
    # drawn at the dpi it is saved at, PNG last (SVG lays out at 72 dpi), so
    # the readability check measures the layout of the PNG as written
    f.fig.set_dpi(opts.dpi)
    # The Agg canvas draws the PNG once, laying the figure out in that draw
    # (savefig would first draw it unrendered just to lay it out), and the
    # readability check measures the texts with the renderer of that draw
    # (without PNG: with that canvas's renderer, the figure laid out by the
    # SVG's save). The figure's own canvas is put back after, so that the Agg
    # canvas and its pixel buffer are freed at once.
    canvas = f.fig.canvas
    agg = FigureCanvasAgg(f.fig)
    try:
        for fmt in sorted(opts.formats, key=lambda x: x == "png"):
            with warnings.catch_warnings():
                # small --scale figures with long legends cannot be laid out tightly;
                # matplotlib then draws them unadjusted, which is fine for a report
                warnings.filterwarnings("ignore", message="constrained_layout not applied")
                # matplotlib's note when placing a legend took a second: a matter of the
                # machine's load, not of the figure
                warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow')
                if fmt == "png":
                    agg.print_png(out / "figures" / f"{f.name}.png", metadata={"Software": None})
                else:
                    f.fig.savefig(out / "figures" / f"{f.name}.{fmt}", dpi=opts.dpi,
                                  metadata={"Date": None})
        return figure_problems(f.fig, styles, f.name, draw=False)
    finally:
        f.fig.set_canvas(canvas)


def build_report(source, out_dir: str | Path, bench_json: str | Path | None = None,
                 options: ReportOptions | None = None) -> ReportSummary:
    """Build the static report.

    Parameters
    ----------
    source : pandas.DataFrame or path-like
        ``ResultsStore.frame()`` output, or the path of a results store.
    out_dir : path-like
        Output folder (created; figure/table files of a previous build are
        replaced).
    bench_json : path-like, optional
        A pytest-benchmark JSON file or a folder of them.
    options : ReportOptions, optional
        Title, SGM shift, figure scale/dpi/formats.

    Returns
    -------
    ReportSummary
        Paths and names of everything written.

    Raises
    ------
    ReportError
        Unreadable store or benchmark path, an output path that is a file,
        invalid options. Missing *data* never raises.
    """
    opts = options or ReportOptions()
    validate_options(opts)
    say = _Progress(opts.progress)
    # the output folder must neither be nor contain what the report reads
    inputs = [] if not isinstance(source, (str, os.PathLike)) else store_files(source)
    refuse_overwrite(out_dir, inputs + ([bench_json] if bench_json is not None else []), "--out", ReportError)
    if isinstance(source, pd.DataFrame):
        data = prepare(source)
    elif not isinstance(source, (str, os.PathLike)):
        raise ReportError(f"source: expected a DataFrame from ResultsStore.frame() or the "
                          f"path of a results store, got {type(source).__name__}")
    else:
        data = prepare(load_store(source), source=str(source))
        data.notes.extend(text_cell_notes(source))
        say(f"read {source}")
    bench, bench_notes = load_bench_json(bench_json)
    out, work = _prepare_out(out_dir)
    try:
        # Labels come from the data (algorithm names): every text of every
        # figure, tick labels made while drawing included, is plain text,
        # never parsed as mathtext, so "x_{$\\frac$}" is a label, not a parse error.
        with mpl.rc_context({"text.parse_math": False}):
            summary = _build(data, bench, bench_notes, bench_json, out, work, opts, say)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    _publish(work, out)
    say(f"done: {summary.index}")
    return summary


def _build(data, bench, bench_notes, bench_json, out: Path, work: Path, opts: ReportOptions,
           say) -> ReportSummary:
    """Every section, table, figure, index and manifest, written to ``work``."""

    notes = list(data.notes) + bench_notes
    df = data.df
    notes.extend(drop_unusable_styles(df))
    say(f"{len(df)} row(s): optima and ratios")
    ratios = with_ratios(df)
    say("complexity fits")
    try:
        fits = cx.complexity_fits(df, bench)
    except Exception as exc:  # keep the report; the complexity section says why
        fits = cx.complexity_fits(df.iloc[0:0])
        notes.append(f"complexity fits failed: {type(exc).__name__}: {exc}")
    try:
        bracket = bracket_section(df)
    except Exception as exc:  # keep the report; the sections say the bracket is missing
        bracket = {"brackets": pd.DataFrame(columns=list(BRACKET_COLUMNS)),
                   "ratios": pd.DataFrame(columns=list(RATIO_COLUMNS)),
                   "claims": pd.DataFrame(columns=list(CLAIM_COLUMNS))}
        notes.append(f"certified bracket failed: {type(exc).__name__}: {exc}")
    ctx = Context(data, df, ratios, fits, bench, bench_json is not None, opts, notes,
                  series_info(df), bracket)

    summary = ReportSummary(out_dir=out, index=out / "index.html")
    sections: list[Section] = []
    for builder in SECTION_BUILDERS:
        name = builder.__name__.removeprefix("section_")
        say(f"section {name}")
        try:
            sec = builder(ctx)
        except Exception as exc:  # one broken section must not hide the others
            sec = Section(name, f"Section '{name}'")
            sec.elements.append(Note(
                f"This section could not be built ({type(exc).__name__}: {exc}). "
                "This is a bug in deplbench.reports; the other sections are unaffected.",
                error=True))
            summary.errors.append(f"{name}: {type(exc).__name__}: {exc}\n"
                                  + traceback.format_exc(limit=3))
        sections.append(sec)
    claims = next((el.frame for sec in sections for el in sec.elements
                   if isinstance(el, Table) and el.name == "claims_audit"), None)
    try:
        box = headline(df, claims, ctx.styles)
    except Exception as exc:  # the box is a summary: never lose the report over it
        box = Section("glance", "At a glance")
        box.elements.append(Note(f"The summary could not be built ({type(exc).__name__}: "
                                 f"{exc}); see the sections below.", error=True))
        summary.errors.append(f"glance: {type(exc).__name__}: {exc}\n"
                              + traceback.format_exc(limit=3))

    for sec in [box, *sections]:
        if sec is not box:
            summary.sections.append((sec.id, sec.title))
        n_fig = sum(isinstance(el, Figure) for el in sec.elements)
        n_tab = sum(isinstance(el, Table) for el in sec.elements)
        say(f"writing {sec.id}: {n_tab} table(s), {n_fig} figure(s)")
        for el in sec.elements:
            if isinstance(el, Table):
                _write_table(work, el)
                summary.tables.append(el.name)
                if el.name == "claims_audit":
                    summary.claims = el.frame
            elif isinstance(el, Figure):
                problems = _write_figure(work, el, opts, ctx.styles)
                summary.figures.append(el.name)
                summary.figure_problems += problems
                el.fig.clear()  # release memory: reports can hold many figures
            elif isinstance(el, Note) and el.missing:
                summary.missing.append(el.text)
    dup = {n for n in summary.tables if summary.tables.count(n) > 1} | {
        n for n in summary.figures if summary.figures.count(n) > 1}
    if dup:  # two elements writing one file would silently lose one of them
        summary.errors.append(f"duplicate file stems: {sorted(dup)}")

    meta = [f"Source: {data.source} — {len(df)} row(s), "
            f"{df['family'].nunique() if not df.empty else 0} family(ies), "
            f"{df['algorithm'].nunique() if not df.empty else 0} algorithm(s).",
            "Code version(s): " + (", ".join(sorted(v for v in set(df["code_version"]) if v))
                                   or "unknown") if not df.empty else "Code version: n/a",
            f"Generated {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC}. "
            "Self-contained: open index.html offline; figures in figures/, tables (CSV, "
            "Markdown) in tables/."]
    (work / "index.html").write_text(render(opts.title, meta, sections, tuple(opts.formats),
                                    headline=box), encoding="utf-8")
    manifest = {
        "title": opts.title, "source": data.source, "rows": int(len(df)),
        "sections": [{"id": i, "title": t} for i, t in summary.sections],
        "figures": [f"figures/{n}.{fmt}" for n in summary.figures for fmt in opts.formats],
        "tables": [f"tables/{n}.{ext}" for n in summary.tables for ext in ("csv", "md")],
        "missing": summary.missing, "errors": summary.errors,
        "claims": json.loads(summary.claims.to_json(orient="records"))
        if summary.claims is not None else [],
        "options": {"sgm_shift_s": opts.sgm_shift, "scale": opts.scale, "dpi": opts.dpi,
                    "formats": list(opts.formats)},
    }
    # every file of this build: what the next build may remove (and nothing else)
    manifest["files"] = sorted([str(p.relative_to(work)).replace(os.sep, "/") for p in work.rglob("*")
                                if p.is_file()] + ["manifest.json"])
    (work / "manifest.json").write_text(dumps(manifest, indent=2, default=str), encoding="utf-8")
    return summary


class _Progress:
    """Status lines on stderr with the elapsed time (stdout stays clean)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, text: str) -> None:
        if self.enabled:
            print(f"report [{time.perf_counter() - self.t0:5.1f} s] {text}", file=sys.stderr,
                  flush=True)
