"""Reading the package's JSON documents (instances, plans): one line per fault, naming where.

Shared by every JSON format of the package: :func:`read_json` reads a file
(refusing NaN/Infinity, duplicate keys and nesting too deep for the parser),
:func:`check_shape` refuses data nested deeper than :data:`MAX_NESTING` or
text that is not valid Unicode, :func:`reject_unknown_fields` names an
unknown top-level key before anything inside it is looked at, and
:func:`key_loc` writes a location (``models[0].improvement``) the way the
validation messages do (docs/instances.md §1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from deplbench.errors import DeplbenchError, InstanceError
from deplbench.limits import MAX_INPUT_BYTES, read_text

#: Deepest nesting of lists/objects accepted in an instance. The format itself
#: needs 4 levels (``models[0].improvement.samples[0]``); free-form provenance
#: gets room to spare. Deeper data could be validated but not written back
#: (pydantic's serialiser stops at its own depth limit) and, read from a file,
#: would exhaust Python's recursion limit in ``json`` (a 5,000-deep file
#: raises RecursionError there).
MAX_NESTING = 64

def reject_unknown_fields(data: dict, fields, root: str, error: type[DeplbenchError]) -> None:
    """An unknown top-level key is named as such before anything inside it
    is looked at (else a problem in its value would be reported under a
    location the format does not have)."""
    for key in data:
        if key not in fields:
            shown = repr(key).encode("ascii", "backslashreplace").decode() if isinstance(key, str) else repr(key)
            raise error(f"{root}: unknown field {shown} (not part of the format, whose fields are {', '.join(fields)})")


def _check_text(loc: str, text: str, what: str = "text", *, root: str = "instance",
                error: type[DeplbenchError] = InstanceError) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate such as
    ``"\\ud800"``, which JSON's ``\\u`` escapes can carry): it would validate and
    then fail when the instance is saved or stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{loc or root}: {what} is not valid Unicode (character {exc.start}: "
                    f"{exc.reason})") from None


def key_loc(loc: str, key: Any, root: str = "instance") -> str:
    """``loc.key``, or ``loc['key']`` for a key that is not an ASCII identifier."""
    if isinstance(key, str) and key.isidentifier() and key.isascii():
        return f"{loc}.{key}" if loc else key
    return f"{loc or root}[{key!r}]"


def check_shape(data: Any, *, root: str = "instance", error: type[DeplbenchError] = InstanceError) -> None:
    """Refuse data nested deeper than :data:`MAX_NESTING`, or text that is not
    valid Unicode, naming where.

    Iterative (an explicit stack), so any depth is measured without
    recursion. Shared by every JSON format of the package (instances,
    plans: ``root`` names the document, ``error`` is the class raised).

    Raises
    ------
    error
        ``<location>: nested more than 64 levels deep ...`` or ``<location>:
        text is not valid Unicode ...``.
    """
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, loc = stack.pop()
        if isinstance(value, str):
            _check_text(loc, value, root=root, error=error)
            continue
        if isinstance(value, dict):
            for key in value:
                if isinstance(key, str):
                    _check_text(loc or root, key, what="a key", root=root, error=error)
            items = ((key_loc(loc, k, root), v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            items = ((f"{loc}[{i}]", v) for i, v in enumerate(value))
        else:
            continue
        if depth >= MAX_NESTING:
            if len(loc) > 80:  # cut at a segment boundary, so the location stays readable
                loc = loc[:max(loc.rfind("[", 0, 80), loc.rfind(".", 0, 80))] + "…"
            raise error(f"{loc}: nested more than {MAX_NESTING} levels deep (the {root} format "
                        "never needs more than a few)")
        stack.extend((v, depth + 1, child) for child, v in items)


def read_json(path: str | Path, *, what: str = "instance",
              error: type[DeplbenchError] = InstanceError, limit: int = MAX_INPUT_BYTES,
              limit_name: str = "deplbench.limits.MAX_INPUT_BYTES") -> Any:
    """The JSON value of a file, every failure one line naming the file.

    Parameters
    ----------
    path : path-like
    what : str
        The document's kind, for messages (``"instance"``, ``"plan"``).
    error : type
        The :class:`~deplbench.errors.DeplbenchError` subclass raised.
    limit, limit_name : int, str
        The largest file read and where that bound comes from
        (:func:`deplbench.limits.read_bytes`): parsing takes several times
        the text's size in Python objects, so a format whose documents are
        known to be small bounds its files below the general limit.

    Raises
    ------
    error
        Larger than ``limit`` (refused before the read), unreadable or
        non-UTF-8 file, invalid JSON, the non-JSON constants
        ``NaN``/``Infinity`` that Python's ``json`` accepts, or nesting too
        deep for the parser (a ``RecursionError`` otherwise).
    """
    path = Path(path)
    text = read_text(path, what, error, limit, limit_name)
    seen: list[_NonFinite] = []

    def constant(name: str) -> _NonFinite:
        seen.append(_NonFinite(name))
        return seen[-1]

    def integer(digits: str) -> int | _NonFinite:
        # beyond Python's own limit int() raises a message naming no field (and a Python call)
        n = len(digits.lstrip("-"))
        if n <= int_digits_limit():
            return int(digits)
        seen.append(_NonFinite(f"an integer of {n} digits"))
        return seen[-1]

    try:
        doc = json.loads(text, parse_constant=constant, parse_int=integer, object_pairs_hook=_unique_keys)
        if seen:        # named where it stands: the parser's hook does not know the field
            check_shape(doc, root=what, error=error)        # the nesting first: the search then stays short
            loc, name = _find_nonfinite(doc, "", what)
            if name.startswith("an integer of"):
                raise ValueError(f"{loc or '<root>'}: {name}, beyond any number the {what} format holds "
                                 "(integers are at most 64 bits)")
            _reject_constant(name, what, loc or "<root>")
        return doc
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to read (a {what} needs a few levels, "
                    f"the limit is {MAX_NESTING})") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:
        raise error(f"{path}: {exc}") from None


def _unique_keys(pairs: list) -> dict:
    # Python's json keeps the last of two equal keys silently: a duplicated
    # field (two "omega") would hide which value was meant.
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in one JSON object")
        out[key] = value
    return out


def int_digits_limit() -> int:
    """Digits of the longest integer literal read as a number: Python's own limit on converting
    text to int (``sys.get_int_max_str_digits``, 4300 by default; 0, no limit, reads as the
    largest length); a longer one is named where it stands."""
    return sys.get_int_max_str_digits() or sys.maxsize


class _NonFinite:
    """Where the parser met ``NaN``/``Infinity``/``-Infinity`` (or an integer of more than
    :func:`int_digits_limit` digits), kept until the field is found."""

    def __init__(self, name: str) -> None:
        self.name = name


def _find_nonfinite(doc: Any, loc: str, what: str) -> tuple[str, str]:
    """The location (as :func:`key_loc` writes it) and the text of the first :class:`_NonFinite` in ``doc``."""
    if isinstance(doc, _NonFinite):
        return loc, doc.name
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list, _NonFinite)):
            found = _find_nonfinite(value, f"{loc}[{key}]" if isinstance(key, int) else key_loc(loc, key, what),
                                    what)
            if found[1]:
                return found
    return loc, ""


def _reject_constant(name: str, what: str = "instance", loc: str = ""):
    # Python's json accepts NaN/Infinity, which are not JSON and would slip
    # non-finite numbers past the format.
    where = f"{loc}: " if loc else ""
    raise ValueError(f"{where}non-finite number {name} is not allowed in an {what}" if what[0] in "aeiou"
                     else f"{where}non-finite number {name} is not allowed in a {what}")


__all__ = ["MAX_NESTING", "check_shape", "key_loc", "read_json", "reject_unknown_fields"]
