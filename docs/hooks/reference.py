"""MkDocs hook: the CLI and API reference pages, generated at build time.

``docs/cli.md`` and ``docs/api.md`` each hold a marker line that this hook
replaces when the site is built (``make docs``), so neither page can fall
behind the code:

``<!-- generated: cli -->``
    ``deplbench --help`` and every sub-command's ``--help`` (sub-sub-commands
    included), rendered from the argparse parser itself
    (:func:`deplbench.cli.build_parser`) at a fixed width of 100 columns.
``<!-- generated: api -->``
    One mkdocstrings block per name of :data:`deplbench.PUBLIC_API`, grouped
    by layer: the docstrings are the reference.

A Markdown file of ``docs/`` that mkdocs.yml's nav does not list is added
to the end of its "User guide" section (:func:`on_config`), so a new guide
page is never left out of the site.

Run as a script it prints both, e.g. ``python docs/hooks/reference.py cli``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

CLI_MARKER = "<!-- generated: cli -->"
API_MARKER = "<!-- generated: api -->"
WIDTH = "100"

#: Section titles of the API reference, by the layer that defines a name.
LAYER_TITLES = {
    "instances": "Instances",
    "formulations": "Plans, evaluation and results",
    "solvers": "Algorithms",
    "benchmarks": "Sweeps and the results store",
    "reports": "Reports",
    "errors": "Errors",
}


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def _help(parser: argparse.ArgumentParser) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH      # argparse wraps at the terminal's width
    try:
        return parser.format_help().rstrip()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _render(parser: argparse.ArgumentParser, level: int) -> list[str]:
    lines = [f"{'#' * level} `{parser.prog}`", "", "```text", _help(parser), "```", ""]
    for _name, sub in _subcommands(parser):
        lines += _render(sub, min(level + 1, 4))
    return lines


def cli_reference() -> str:
    """Markdown of ``deplbench --help`` and every sub-command's help."""
    from deplbench.cli import build_parser

    parser = build_parser("*")
    lines = _render(parser, 2)
    return "\n".join(lines)


def api_reference() -> str:
    """Markdown with one mkdocstrings block per public name, by layer."""
    import deplbench

    groups: dict[str, list[str]] = {}
    for name, module in deplbench.PUBLIC_API.items():
        layer = module.split(".")[1]
        groups.setdefault(layer, []).append(name)
    unknown = set(groups) - set(LAYER_TITLES)
    if unknown:
        raise ValueError(f"docs/hooks/reference.py: no section title for the layers {sorted(unknown)}")
    lines = []
    for layer, title in LAYER_TITLES.items():
        if layer not in groups:
            continue
        lines += [f"## {title}", ""]
        for name in groups[layer]:
            module = deplbench.PUBLIC_API[name]
            if name[:1].isupper():
                # A class (public classes are CamelCase): mkdocstrings' class heading
                # ignores the ``heading`` option, so the page gives its own.
                lines += [f"### `deplbench.{name}`", "", f"::: {module}.{name}", "    options:",
                          "      show_root_heading: false", "      heading_level: 4", ""]
            else:
                lines += [f"::: {module}.{name}", "    options:", "      show_root_heading: true",
                          f'      heading: "deplbench.{name}"', f'      toc_label: "{name}"',
                          "      heading_level: 3", ""]
            lines += [f"Defined in `{module}`.", ""]
    return "\n".join(lines)


GUIDE_SECTION = "User guide"


def _listed(nav) -> set[str]:
    """Every page file a nav (list of str / {title: str or list}) names."""
    found: set[str] = set()
    for item in nav or ():
        values = item.values() if isinstance(item, dict) else [item]
        for value in values:
            found |= _listed(value) if isinstance(value, list) else {value}
    return found


def unlisted_pages(docs_dir, nav) -> list[str]:
    """The top-level Markdown files of ``docs_dir`` that ``nav`` does not name."""
    listed = _listed(nav)
    return sorted(p.name for p in Path(docs_dir).glob("*.md") if p.name not in listed)


def on_config(config):
    """Append every unlisted page of docs/ to the nav's "User guide" section."""
    extra = unlisted_pages(config["docs_dir"], config["nav"])
    for item in config["nav"] or ():
        if isinstance(item, dict) and isinstance(item.get(GUIDE_SECTION), list):
            item[GUIDE_SECTION].extend(extra)
            break
    else:
        if extra:
            raise ValueError(f"mkdocs.yml: no '{GUIDE_SECTION}' section in nav for {extra}")
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    """Replace the markers of docs/cli.md and docs/api.md with the generated text."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    return markdown


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "cli"
    print(cli_reference() if which == "cli" else api_reference())
