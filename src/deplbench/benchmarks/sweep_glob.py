"""Instance-file globs of a sweep: the files one ``[[instances]].path`` pattern names.

A ``path`` holding ``*``, ``?`` or ``[...]`` (:data:`GLOB_CHARS`) makes one
instance per matching file (:func:`glob_files`; ``**`` matches any number of
folders). The glob is confined to the sweep file's folder tree: no ``..``,
no symbolic link leading out, no walk through linked folders, and at most
:data:`MAX_GLOB_ENTRIES` entries looked at. Every refusal is a
:class:`~deplbench.errors.SweepError` naming ``instances[i].path``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from deplbench.errors import SweepError

#: Characters that make a ``path`` a glob.
GLOB_CHARS = frozenset("*?[")

#: Most directory entries one glob ``path`` may look at: a glob such as
#: ``**/*.json`` over a huge tree is refused rather than walked for hours.
MAX_GLOB_ENTRIES = 100_000


def _glob_regex(parts: tuple[str, ...]) -> re.Pattern:
    """A regex matching a relative POSIX path against glob components
    (``*`` and ``?`` never cross ``/``; ``**`` matches any number of folders)."""
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        j, piece = 0, []
        while j < len(part):
            ch = part[j]
            if ch == "*":
                piece.append("[^/]*")
            elif ch == "?":
                piece.append("[^/]")
            elif ch == "[":
                k = j + 1
                k += part[k:k + 1] == "!"
                k += part[k:k + 1] == "]"
                end = part.find("]", k)
                if end < 0:
                    piece.append(re.escape(ch))
                else:
                    body = part[j + 1:end]
                    body = "^" + body[1:] if body.startswith("!") else body
                    piece.append("[" + body.replace("\\", "\\\\") + "]")
                    j = end
            else:
                piece.append(re.escape(ch))
            j += 1
        out.append("".join(piece) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.S)


def glob_files(raw: str, base_dir: Path, where: str) -> tuple[str, ...]:
    """The files a glob ``path`` matches (``*``, ``?``, ``[...]``, ``**``), sorted.

    The glob stays inside the sweep file's folder tree: an absolute pattern
    outside it or a ``..`` part is refused, the walk does not follow
    symbolic links to folders (no loop can hang it), looks at no more than
    :data:`MAX_GLOB_ENTRIES` entries, and a matched file whose link leads
    out of the tree is refused.

    Parameters
    ----------
    raw : str
        The ``path`` as written in the sweep file.
    base_dir : Path
        The sweep file's folder.
    where : str
        The entry, ``instances[i]``, named in every refusal.

    Returns
    -------
    tuple of str
        The matching files' resolved paths, sorted; at least one.

    Raises
    ------
    SweepError
        ``{where}.path: ...`` for a pattern leaving the folder, too large a
        walk, an unreadable folder or no match.
    """
    base = Path(os.path.realpath(base_dir))
    pattern = Path(raw)
    if pattern.is_absolute():
        try:
            pattern = Path(os.path.abspath(pattern)).relative_to(base)
        except ValueError:
            try:
                pattern = Path(os.path.abspath(raw)).relative_to(Path(os.path.abspath(base_dir)))
            except ValueError:
                raise SweepError(f"{where}.path: the glob {raw!r} must stay inside the sweep file's folder "
                                 f"{base} (give it relative to the sweep file)") from None
    parts = pattern.parts
    if ".." in parts:
        raise SweepError(f"{where}.path: the glob {raw!r} must stay inside the sweep file's folder (no '..')")
    fixed = []
    for part in parts[:-1]:
        if GLOB_CHARS.intersection(part):
            break
        fixed.append(part)
    start = base.joinpath(*fixed)
    if os.path.commonpath([base, os.path.realpath(start)]) != str(base):
        raise SweepError(f"{where}.path: the glob {raw!r} leads out of the sweep file's folder through a "
                         "symbolic link")
    regex = _glob_regex(parts)
    found, seen = set(), 0
    try:
        for folder, dirs, names in os.walk(start, followlinks=False):
            seen += len(dirs) + len(names)
            if seen > MAX_GLOB_ENTRIES:
                raise SweepError(f"{where}.path: the glob {raw!r} looks at more than {MAX_GLOB_ENTRIES} files "
                                 "and folders; narrow it")
            dirs.sort()
            for name in names:
                full = os.path.join(folder, name)
                rel = os.path.relpath(full, base).replace(os.sep, "/")
                if not regex.match(rel) or not os.path.isfile(full):
                    continue
                real = os.path.realpath(full)
                if os.path.commonpath([base, real]) != str(base):
                    raise SweepError(f"{where}.path: {rel} leads out of the sweep file's folder (to {real})")
                found.add(real)
    except (OSError, ValueError) as exc:
        raise SweepError(f"{where}.path: cannot look up the instance files ({exc})") from None
    if not found:
        raise SweepError(f"{where}.path: no instance file matches {raw} (relative to {base})")
    return tuple(sorted(found))


__all__ = ["GLOB_CHARS", "MAX_GLOB_ENTRIES", "glob_files"]
