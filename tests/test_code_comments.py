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

import pytest

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


_N = r"\d+(?:\.\d+)?"
#: A duration: "38 s", "0.1 s", "48–68 s", "10 ms", "5 minutes".
_T = rf"{_N}(?:\s*[-–]\s*{_N})?\s?(?:s|ms|min|seconds?|minutes?)\b"
#: A measured time or the code's history in a comment: "25 CPU-seconds",
#: "3.5-7 CPU-seconds", "309 CPU-s", "40x slower"; a duration said as a
#: measurement ("took 38 s", "about 0.1 s", "27 s of 76 s", "20 s vs 58 s",
#: "20.7 s without", "35 s on one core", "0.1 s per task"); an ISO date;
#: "before this"; "round three". A bare duration is not flagged: a limit or a
#: default ("a 60 s MILP", "default 300 s") says what the code does.
TIMING_FIGURE = re.compile(
    r"\d[\d.,]*\s*(?:[-–]\s*\d[\d.,]*\s*)?CPU[- ]?s(?:econds?)?\b|\d+\s*[x×]\s*slower"
    rf"|\b(?:took|takes|taking|spent|needs?|needed|about|measured|now)\s+(?:about\s+|only\s+)?{_T}"
    rf"|{_N}\s?(?:s|ms|min)?\s+(?:of|vs\.?)\s+{_N}\s?(?:s|ms|min)\b"
    rf"|(?<![≤<]\s)(?<![≤<]){_T}\s+(?:in total|wall|without|on (?:one|\d+) cores?"
    r"|per (?:task|solve|instance|run|master))"
    r"|\b\d{4}-\d{2}-\d{2}\b|\bbefore this\b|\bround (?:\d+|one|two|three|four|five)\b",
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
    with the command and the load, not in code comments or sweep files; the
    code's history (dates, "before this", "round three") goes to the changelog."""
    package = ROOT / "src" / "deplbench"
    files = (sorted(package.rglob("*.py")) + sorted((package / "benchmarks" / "sweeps").glob("*.toml"))
             + sorted((ROOT / "perf").rglob("*.py")))
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


@pytest.mark.parametrize("comment, hit", [
    # the lines this rule was written against
    ("# sorts whole rows and took 38 s at K̄ = 1e5", "took 38 s"),
    ("#: almost all of the solve (6.5 of 6.6 s on realistic AlexNet", "6.5 of 6.6 s"),
    ("#: in total with presolve, 20.7 s without.", "20.7 s without"),
    ("# the node budget (|D| = 9 seed 2: none of 36 above 10 %, 27 s of 76 s)", "27 s of 76 s"),
    ("# the fork — about 0.1 s per task", "about 0.1 s"),
    ("# wrap around (an IndexError before this guard).", "before this"),
    ("# (2026-11-23, the whole sweep timed with `deplbench run`)", "2026-11-23"),
    ("#: The hostile-input regressions of round three", "round three"),
    ("# (S = 100: 15 s, S = 300: 35 s on one core)", "35 s on one core"),
    ("# HiGHS needs 48–68 s per master", "needs 48–68 s"),
    # limits, defaults and rates say what the code does
    ("# waits behind a long task (a 60 s MILP)", None),
    ("# --time-limit (default 300 s; inf: no limit)", None),
    ("# the system monitor every 2 s instead of 0.5 s", None),
    ("# shifted geometric mean with shift 10 s", None),
    ("2. ≤ 5 minutes per instance on a 2-core machine", None),
    ("# a round-trip of the JSON, before the solve", None),
])
def test_the_timing_pattern_catches_history_not_limits(comment, hit):
    found = [m.group(0) for m in TIMING_FIGURE.finditer(comment)]
    assert found == ([hit] if hit else []), found
