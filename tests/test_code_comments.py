"""Comments and docstrings say what the code does and why, never which
ticket of a tracker asked for it: the tracker is not part of the repository,
so "issue 16" or "(#25)" is a reference no reader can follow.

References to other projects' trackers stay (``HiGHS issue #2782`` names
the project whose tracker it is).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: "issue 16", "issues 11 and 16", "Issue #3", "(#25)", a bare "#25".
TRACKER_REFERENCE = re.compile(r"\bissues?\s*#?\d+|\(#\d+\)|(?<![\w&/#])#\d+\b", re.IGNORECASE)
#: A reference preceded by one of these names another project's tracker.
OTHER_PROJECTS = ("HiGHS",)

#: Files exempt from the rule (none).
ALLOWED: set[str] = set()


def _comments_and_docstrings(source: str):
    """(line, text) of every comment and every string statement (docstrings)."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def tracker_references(path: Path) -> list[str]:
    """Where ``path``'s comments and docstrings cite an issue of a tracker."""
    source = path.read_text(encoding="utf-8")
    if not TRACKER_REFERENCE.search(source):          # most files: no candidate at all
        return []
    found = []
    for line, text in _comments_and_docstrings(source):
        for match in TRACKER_REFERENCE.finditer(text):
            before = text[max(0, match.start() - 30):match.start()]
            if not any(name in before for name in OTHER_PROJECTS):
                found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    return found


def _allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == a or rel.startswith(a + "/") for a in ALLOWED)


def test_no_comment_or_docstring_cites_a_tracker_issue():
    files = [p for folder in ("src", "perf") for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 100
    found = [hit for p in files if not _allowed(p) for hit in tracker_references(p)]
    assert not found, "comments/docstrings cite tracker issues:\n" + "\n".join(found)


def test_the_check_sees_comments_and_docstrings_but_not_code(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    module = tmp_path / "m.py"
    module.write_text('"""Docs (issue 16)."""\n'
                      'X = "#3 in a string literal is data"\n'
                      '# see (#25)\n'
                      '# HiGHS issue #2782 is another project\'s\n'
                      'COLOR = "#222"\n', encoding="utf-8")
    assert [hit.split(": ", 1)[1] for hit in tracker_references(module)] == ["'(#25)'", "'issue 16'"]


#: A measured time in a comment: "25 CPU-seconds", "3.5-7 CPU-seconds", "309 CPU-s", "40x slower".
TIMING_FIGURE = re.compile(r"\d[\d.,]*\s*(?:[-–]\s*\d[\d.,]*\s*)?CPU[- ]?s(?:econds?)?\b|\d+\s*[x×]\s*slower",
                           re.IGNORECASE)


def timing_figures(path: Path) -> list[str]:
    """Where ``path``'s comments (TOML) or comments and docstrings (Python) state a timing."""
    source = path.read_text(encoding="utf-8")
    if not TIMING_FIGURE.search(source):
        return []
    if path.suffix == ".toml":
        texts = [(n, line) for n, line in enumerate(source.splitlines(), 1) if line.lstrip().startswith("#")]
    else:
        texts = list(_comments_and_docstrings(source))
    return [f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r}" for line, text in texts
            for m in TIMING_FIGURE.finditer(text)]


def test_no_comment_states_a_timing():
    """Timings depend on the machine and its load: they belong in docs/performance.md
    with the command and the load, not in code comments or sweep files."""
    package = ROOT / "src" / "deplbench"
    files = sorted(package.rglob("*.py")) + sorted((package / "benchmarks" / "sweeps").glob("*.toml"))
    found = [hit for p in files for hit in timing_figures(p)]
    assert not found, "comments state timings (move them to docs/performance.md):\n" + "\n".join(found)


def test_the_timing_check_sees_figures(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    sweep = tmp_path / "s.toml"
    sweep.write_text('# about 3.5-7 CPU-seconds per task\nname = "x"  # fine\n', encoding="utf-8")
    module = tmp_path / "m.py"
    module.write_text('"""Fast."""\n# up to 40x slower threaded\nX = "25 CPU-s in a literal is data"\n',
                      encoding="utf-8")
    assert [h.split(": ", 1)[1] for h in timing_figures(sweep)] == ["'3.5-7 CPU-seconds'"]
    assert [h.split(": ", 1)[1] for h in timing_figures(module)] == ["'40x slower'"]
