"""The building blocks of a report: tables, figures, notes, sections.

Section builders return :class:`Section` objects holding these elements in
display order; :mod:`deplbench.reports.build` writes them to disk and
:mod:`deplbench.reports.html` renders them. Keeping the content separate
from its rendering is what lets the tests check *what* a report promises
(columns, files, missing-data notes) without parsing HTML.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Union

import pandas as pd

from deplbench.reports.data import ReportError


@dataclass
class Table:
    """A table written as CSV and Markdown and shown in the HTML.

    Attributes
    ----------
    name : str
        File stem (``tables/<name>.csv`` / ``.md``); ``[a-z0-9_]`` only.
    title : str
        Heading shown above the table.
    frame : pandas.DataFrame
        The content; its columns are exactly ``columns``.
    columns : tuple of str
        The columns this table promises (also when it is empty).
    caption : str
        How to read it: definitions, units, what was excluded.
    collapse : bool
        Show it folded (``<details>``) in the HTML; long tables fold anyway.
    empty : str
        Why the table can be empty, said in the one line that replaces an
        empty table in the HTML (its CSV and Markdown keep the columns).
    """

    name: str
    title: str
    frame: pd.DataFrame
    columns: tuple[str, ...]
    caption: str = ""
    collapse: bool = False
    empty: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name)
        missing = [c for c in self.columns if c not in self.frame.columns]
        if missing:
            raise ReportError(f"table {self.name}: frame lacks promised columns {missing}")
        self.frame = self.frame.loc[:, list(self.columns)].reset_index(drop=True)


@dataclass
class Figure:
    """A matplotlib figure written as PNG and SVG.

    Attributes
    ----------
    name : str
        File stem (``figures/<name>.png`` / ``.svg``).
    title : str
        Heading shown above the figure.
    fig : matplotlib.figure.Figure
        Closed after it is written.
    caption : str
        How to read it.
    """

    name: str
    title: str
    fig: Any
    caption: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name)


@dataclass
class Note:
    """A paragraph of text. ``missing=True`` marks a missing-data statement
    (class ``missing``, listed in the manifest); ``error=True`` marks a
    section that failed to build (class ``error``; a bug, never expected)."""

    text: str
    missing: bool = False
    error: bool = False


Element = Union[Table, Figure, Note]


@dataclass
class Section:
    """One numbered section of the report."""

    id: str
    title: str
    intro: str = ""
    elements: list[Element] = field(default_factory=list)

    def add(self, element: Element | None) -> None:
        if element is not None:
            self.elements.append(element)

    def add_figure(self, fig: Any, name: str, title: str, caption: str = "", *,
                   missing: str) -> None:
        """Add ``fig`` as a :class:`Figure`; when the drawing function had
        nothing to draw (``fig`` is None), record ``missing`` instead."""
        if fig is None:
            self.missing(missing)
        else:
            self.elements.append(Figure(name, title, fig, caption))

    def missing(self, text: str) -> None:
        """Record that something could not be drawn, and why."""
        self.elements.append(Note(text, missing=True))

    def note(self, text: str) -> None:
        self.elements.append(Note(text))


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "_-" for c in name) or not name.isascii():
        raise ReportError(f"name: {name!r} is not a safe file stem")


def fmt_cell(value: Any) -> str:
    """Format a cell for Markdown/HTML: floats to 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.4g}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown for ``frame`` (no external dependency).

    Pipes and newlines inside cells are escaped so a message cannot break
    the table; HTML (``<script>``) becomes entities and Markdown's inline
    markers are backslash-escaped, so a label is shown as written, never
    rendered or run.
    """
    def esc(s: str) -> str:
        s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        s = re.sub(r"([\\`*\[\]|])", r"\\\1", s)   # "_" stays: column names such as with_optimum
        return s.replace("\r", " ").replace("\n", " ")

    head = "| " + " | ".join(esc(str(c)) for c in frame.columns) + " |"
    sep = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(esc(fmt_cell(v)) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, sep, *body]) + "\n"
