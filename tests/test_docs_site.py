"""The documentation site (mkdocs.yml): it builds with warnings as errors, and
its generated pages cover the whole CLI and the whole public API.

``make docs`` runs the same strict build into ``site/``; here it goes to a
temporary folder.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import deplbench
from deplbench import cli

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_reference_hooks", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_command_s_help():
    text = _hooks().cli_reference()
    for command in cli.COMMANDS:
        assert f"`deplbench {command}`" in text
        assert f"usage: deplbench {command}" in text
    assert "usage: deplbench library build" in text        # sub-sub-commands too
    assert "--time-limit" in text


def test_api_reference_has_a_block_for_every_public_name():
    text = _hooks().api_reference()
    for name, module in deplbench.PUBLIC_API.items():
        assert f"::: {module}.{name}\n" in text
        assert f'heading: "deplbench.{name}"' in text or f"### `deplbench.{name}`" in text
        assert f"Defined in `{module}`." in text


def test_a_guide_page_missing_from_the_nav_is_added_to_the_user_guide(tmp_path):
    """A Markdown file of docs/ that mkdocs.yml's nav does not name still gets
    a page (at the end of the user guide), never silently left out."""
    hooks = _hooks()
    for name in ("index.md", "listed.md", "new-page.md"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    nav = [{"Home": "index.md"}, {"User guide": [{"Listed": "listed.md"}]}, {"API reference": "api.md"}]
    config = hooks.on_config({"docs_dir": str(tmp_path), "nav": nav})
    assert config["nav"][1]["User guide"] == [{"Listed": "listed.md"}, "new-page.md"]
    assert hooks.unlisted_pages(ROOT / "docs", _nav()) == []       # today every page is listed by name


def _nav():
    import yaml

    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]


@pytest.mark.integration
@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = tmp_path / "site"
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="deplbench.solvers.run.solve"' in api and "Run one algorithm on one instance" in api
    assert ":func:" not in api and ":class:" not in api       # Sphinx roles rendered as code
    assert "{seed}" not in api                                 # the generators' shared sections filled
    cli_page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: deplbench solve" in cli_page
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "The public API is the contract" in changelog
    assert (site / "contributing" / "index.html").is_file()
    assert (site / "instances" / "index.html").is_file()


def _slug(heading: str) -> str:
    """The anchor GitHub and MkDocs' toc give a Markdown heading."""
    import re

    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_readme_is_a_front_door_whose_links_resolve():
    """README stays short (the long explanations live in docs/), and every
    relative link in it names a file of the repository and, with a
    ``#fragment``, a heading of that file."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= 12 * 1024
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in relative)
    for link in relative:
        path, _, fragment = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README links to a missing file: {link}"
        if fragment:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), flags=re.M)
            assert fragment in {_slug(h) for h in headings}, f"README links to a missing heading: {link}"
    # every guide page of docs/ is in README's index
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name not in {"index.md", "api.md", "cli.md", "changelog.md", "contributing.md"}:
            assert f"(docs/{page.name})" in readme, f"README's documentation index omits docs/{page.name}"


#: Options whose value a command writes (a file, or a folder for --out).
_WRITES = frozenset({"-o", "--output", "--out", "--db", "--eq8-output"})
#: What a command reads: a path argument with one of these endings.
_READ_SUFFIXES = (".json", ".csv", ".csv.gz", ".sqlite", ".toml")


def _glance_blocks() -> list[tuple[str, str]]:
    """``(page, block)`` of the command blocks a reader pastes as they are."""
    usage = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    glance = usage.split("## The CLI at a glance", 1)[1]
    instances = (ROOT / "docs" / "instances.md").read_text(encoding="utf-8")
    return [("usage.md", glance.split("```sh\n", 1)[1].split("```", 1)[0]),
            ("instances.md", instances.split("```\n", 1)[1].split("```", 1)[0])]


@pytest.mark.parametrize("page, block", _glance_blocks(), ids=["usage.md", "instances.md"])
def test_cli_at_a_glance_reads_only_files_an_earlier_line_wrote(page, block):
    """Pasted in order from a clone's root, each command of the block finds its
    input files: in the repository or written by an earlier line (`-o`, `>`,
    `--db`), and a store's folder exists (`run --db` creates the file only).
    The blocks read vgg.json, logs.csv and plan.json that nothing wrote."""
    import shlex

    made: set[str] = set()
    folders = {"", "."}
    problems = []
    for line in block.splitlines():
        for command in line.split(" #", 1)[0].split("&&"):
            words = shlex.split(command)
            if words[:2] == ["mkdir", "-p"]:
                folders.update(words[2:])
                continue
            for i, word in enumerate(words):
                before = words[i - 1] if i else ""
                if before in _WRITES or before == ">":
                    if before == "--db" and str(Path(word).parent) not in folders | made:
                        problems.append(f"{command.strip()}: folder {Path(word).parent} does not exist yet")
                    made.add(word)
                    made.add(str(Path(word).parent))
                elif word.endswith(_READ_SUFFIXES) and word not in made and not (ROOT / word).exists():
                    problems.append(f"{command.strip()}: reads {word}, which no earlier line writes")
    assert not problems, f"docs/{page}: " + "; ".join(problems)
