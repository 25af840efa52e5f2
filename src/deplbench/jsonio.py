"""JSON values, cleaned in one place, and JSON output.

Every layer writes JSON: instance files, result records, solver diagnostics,
the results store's JSON columns and the commands' ``--json`` output. Two
things break strict JSON on the way: numpy scalars and arrays (``json`` does
not know them) and the non-finite floats ``inf``/``nan`` (``json`` writes the
tokens ``Infinity``/``NaN``, which strict parsers such as ``jq`` or
JavaScript's ``JSON.parse`` reject). This bottom module (it imports nothing
from deplbench) is the one place where values are made JSON-safe; see
docs/DESIGN.md for the ``--json`` contract (one JSON object on stdout).
"""

from __future__ import annotations

import decimal
import json
import math
import sys
from typing import Any, TextIO

import numpy as np

__all__ = [
    "finite_number",
    "optional_float",
    "to_jsonable",
    "finite_json",
    "json_default",
    "print_json",
    "canonical_json",
    "strict_json",
    "dumps",
    "write_json",
    "NONFINITE_SUFFIX",
    "number_text",
    "level_percent",
    "number_beside",
    "interval_text",
    "restore_nonfinite",
]


def finite_number(value: Any) -> Any:
    """``value`` unchanged, except a non-finite float, which becomes None.

    Parameters
    ----------
    value : Any
        Typically a float or None (a cost, a bound, a gap).

    Returns
    -------
    Any
        None for ``inf``/``-inf``/``nan``; ``value`` itself otherwise (numpy
        floats are returned as plain floats).
    """
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def optional_float(value: Any) -> float | None:
    """``float(value)``, or None when ``value`` is None or not finite.

    Parameters
    ----------
    value : Any
        None or anything ``float()`` accepts (a numpy scalar, an int).

    Returns
    -------
    float or None
    """
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def to_jsonable(obj: Any, *, finite: bool = False) -> Any:
    """``obj`` as plain Python that :func:`json.dumps` accepts, recursively.

    Parameters
    ----------
    obj : Any
        Dicts, lists, tuples, sets, numpy arrays and scalars, and plain values,
        nested in any way.
    finite : bool, default False
        Also replace every non-finite float by None (strict JSON).

    Returns
    -------
    Any
        Dicts (keys made strings when they are not), lists (from lists,
        tuples, sets in sorted order when sortable, numpy arrays), bool, int,
        float, str, None; other objects are returned unchanged.
    """
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): to_jsonable(v, finite=finite)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, finite=finite) for v in obj]
    if isinstance(obj, (set, frozenset)):
        try:
            items = sorted(obj)
        except TypeError:
            items = list(obj)
        return [to_jsonable(v, finite=finite) for v in items]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist(), finite=finite)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        obj = float(obj)
        return None if finite and not math.isfinite(obj) else obj
    return obj


def finite_json(obj: Any) -> Any:
    """``obj`` made JSON-safe with every non-finite float replaced by None.

    Shorthand for ``to_jsonable(obj, finite=True)``: the form of ``--json``
    output with ``strict=True`` and of anything a strict parser must read.
    """
    return to_jsonable(obj, finite=True)


def json_default(obj: Any) -> Any:
    """The ``default=`` hook of :func:`json.dumps` for records and diagnostics.

    Converts numpy arrays and scalars, pydantic models, objects with
    ``to_dict()`` and sets; anything else becomes its ``repr``. Lossy on
    purpose: the results store would rather keep a finished row with one
    field in a lossy form than lose the row.

    Parameters
    ----------
    obj : Any
        An object :mod:`json` could not serialise.

    Returns
    -------
    Any
        A JSON-serialisable replacement.
    """
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


#: Suffix of the key that says why a sibling value is null (``"gap": null,
#: "gap_nonfinite": "inf"``): strict JSON has no token for ``inf``/``nan``.
NONFINITE_SUFFIX = "_nonfinite"


def _nonfinite_reason(value: Any) -> str | None:
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return None


def strict_json(obj: Any) -> Any:
    """``obj`` made RFC 8259 JSON: non-finite numbers become null, with the reason beside them.

    Every non-finite float becomes ``null``; where it was the value of a
    key ``k`` of an object, a sibling key ``k_nonfinite`` holds ``"inf"``,
    ``"-inf"`` or ``"nan"``; where it was an element of a list under ``k``,
    ``k_nonfinite`` maps the element's index to its reason. A sibling key
    the object already has is not overwritten.

    Parameters
    ----------
    obj : Any
        As for :func:`to_jsonable`.

    Returns
    -------
    Any
        Plain Python that ``json.dumps(..., allow_nan=False)`` accepts.

    Examples
    --------
    >>> strict_json({"gap": float("inf"), "ci": [0.5, float("nan")]})
    {'gap': None, 'ci': [0.5, None], 'gap_nonfinite': 'inf', 'ci_nonfinite': {'1': 'nan'}}
    """
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        reasons: dict[str, Any] = {}
        for k, v in obj.items():
            key = k if isinstance(k, str) else str(k)
            why = _nonfinite_reason(v)
            if why is not None:
                reasons[key + NONFINITE_SUFFIX] = why
            elif isinstance(v, (list, tuple, np.ndarray)) and not isinstance(v, str):
                items = v.tolist() if isinstance(v, np.ndarray) else v
                marks = {str(i): r for i, r in ((i, _nonfinite_reason(x)) for i, x in enumerate(items))
                         if r is not None}
                if marks:
                    reasons[key + NONFINITE_SUFFIX] = marks
            out[key] = strict_json(v)
        for key, why in reasons.items():
            out.setdefault(key, why)
        return out
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    return to_jsonable(obj, finite=True)


def dumps(obj: Any, *, indent: int | None = None, default: Any = None) -> str:
    """The one JSON writer of every output (``--json``, ``-o`` files, manifests).

    :func:`strict_json` first, then ``json.dumps(..., allow_nan=False)``: the
    text is RFC 8259 JSON, which every strict parser (``jq``, JavaScript,
    deplbench's own readers) reads back.
    """
    return json.dumps(strict_json(obj), indent=indent, allow_nan=False, default=default)


def write_json(path: Any, obj: Any, *, indent: int | None = 2) -> None:
    """Write :func:`dumps` of ``obj`` and a newline to ``path`` (UTF-8)."""
    text = dumps(obj, indent=indent) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def print_json(obj: Any, *, indent: int | None = None, strict: bool = True,
               file: TextIO | None = None) -> None:
    """Print ``obj`` as one JSON document and a newline (the ``--json`` output).

    Parameters
    ----------
    obj : Any
        The document; numpy values are converted (:func:`to_jsonable`).
    indent : int, optional
        Passed to :func:`json.dumps`.
    strict : bool, default True
        Kept for callers; the output is always RFC 8259 JSON (:func:`dumps`):
        non-finite numbers are null with the reason beside them.
    file : text stream, optional
        Where to write; default ``sys.stdout`` at the time of the call (the
        CLI points it at the real standard output while a command runs).
    """
    stream = sys.stdout if file is None else file
    stream.write(dumps(obj, indent=indent))
    stream.write("\n")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal data, equal text (the
    identity of a task's parameters in its key, see docs/DESIGN.md).

    Integral floats are written as floats and ints as ints, so ``eta = 200``
    and ``eta = 200.0`` are *different* keys; TOML keeps the distinction and
    so does the solver's parameter validation.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def number_text(value: Any) -> str:
    """A number as text that reads back as the same number: the shortest repr that round-trips.

    ``f"{x:g}"`` keeps six significant digits, so it shows ω = 0.999999999999
    as ``1`` (a level the format refuses) and ℓmax = 10.0000001 beside ℓ(0) =
    10 as two equal numbers. Messages and summaries that show an input
    number use this instead: what is printed is the number itself.

    Parameters
    ----------
    value : int, float or numpy number

    Returns
    -------
    str
        ``repr(float(value))`` (``"0.999999999999"``, ``"1e-12"``,
        ``"inf"``, ``"nan"``), an integral float below 1e16 without its
        ``.0`` (``"10"``, as ``:g`` prints it), an integer as ``str``.

    Examples
    --------
    >>> number_text(0.999999999999), number_text(10.0), number_text(np.float64(0.9)), number_text(3)
    ('0.999999999999', '10', '0.9', '3')
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def number_beside(value: Any, other: Any, digits: int = 6, *also: Any) -> str:
    """A computed number printed beside a number it is compared with, on the right side of it.

    ``f"{p:.6g}"`` prints a P(success) of 0.98999999 as ``0.99``, so a line
    saying that it falls short of ω = 0.99 reads "0.99 < ω = 0.99". This
    prints ``value`` with ``digits`` significant digits, or with as many
    more as it takes for the printed number to compare with ``other`` as
    ``value`` itself does (below, equal or above): the one place where a
    computed value shown next to its threshold gets its digits.

    Parameters
    ----------
    value : float or numpy number
        The computed value (a probability, a time).
    other : float or numpy number
        What it is compared with in the same line (ω, Tmax), which is printed
        with :func:`number_text`.
    digits : int, default 6
        Significant digits when they already keep the order.
    *also : float or numpy number
        Further numbers the printed value must keep its order with (a
        probability beside ω and beside 1: a bound below 1 never prints as 1).

    Returns
    -------
    str
        ``f"{value:.{d}g}"`` for the smallest ``d ≥ digits`` that keeps the
        order (at most 17, where every float reads back as itself); a
        non-finite ``value`` or ``other``: ``f"{value:.{digits}g}"``.

    Examples
    --------
    >>> number_beside(0.98999999, 0.99), number_beside(0.75, 0.99), number_beside(0.99, 0.99)
    ('0.98999999', '0.75', '0.99')
    >>> number_beside(0.9912345678, 0.9912345, digits=4)
    '0.991235'
    >>> number_beside(0.9999951, 0.999995, 5), number_beside(0.9999951, 0.999995, 5, 1.0)
    ('1', '0.9999951')
    """
    value = float(value)
    others = [float(o) for o in (other, *also)]
    if not (math.isfinite(value) and all(math.isfinite(o) for o in others)):
        return f"{value:.{digits}g}"

    def sides(x: float) -> list[int]:
        return [(x > o) - (x < o) for o in others]

    want = sides(value)
    for d in range(max(int(digits), 1), 18):
        text = f"{value:.{d}g}"
        if sides(float(text)) == want:
            return text
    return repr(value)


def interval_text(low: Any, high: Any, digits: int | None = None) -> str:
    """An interval as text, an infinite end as ``(−∞`` or ``+∞)``: the one way every summary prints one.

    An order-statistic interval's end the draws are too few for is infinite
    (formulations/evaluation/quantile_ci.py); printed ``[0.28, inf]`` it would
    read as a closed interval ending at a number.

    Parameters
    ----------
    low, high : float, numpy number or None
        The ends. None is the infinite end of its side: what a strict JSON
        file holds where the reason (``*_nonfinite``) was not read back.
    digits : int, optional
        Significant digits of a finite end (``.{digits}g``); default
        :func:`number_text`, the number itself.

    Returns
    -------
    str

    Examples
    --------
    >>> interval_text(0.25, float("inf")), interval_text(None, 2.0), interval_text(1 / 3, 0.5, 4)
    ('[0.25, +∞)', '(−∞, 2]', '[0.3333, 0.5]')
    """
    def end(value: Any) -> str | None:
        if value is None or (isinstance(value, (float, np.floating)) and math.isinf(value)):
            return None
        return number_text(value) if digits is None else f"{float(value):.{digits}g}"

    lo, hi = end(low), end(high)
    if lo is None and low is not None and float(low) > 0:       # +inf as a lower end: an empty interval
        lo = "inf"
    if hi is None and high is not None and float(high) < 0:
        hi = "-inf"
    return ("(−∞" if lo is None else f"[{lo}") + ", " + ("+∞)" if hi is None else f"{hi}]")


def restore_nonfinite(obj: Any) -> Any:
    """The inverse of :func:`strict_json`: every null whose sibling ``<key>_nonfinite`` gives
    its reason becomes that float again (``inf``, ``-inf``, ``nan``), and the sibling goes.

    Every reader of a file :func:`dumps` wrote (a ``solve -o`` record, a ``--json``
    output given back) calls it, so that an interval end +∞ stays +∞ and is never
    read as a missing value.

    Parameters
    ----------
    obj : Any
        Parsed JSON (dicts, lists, plain values), nested in any way.

    Returns
    -------
    Any
        A new object; ``obj`` itself is not changed. A ``*_nonfinite`` key whose
        sibling is absent or not null, or whose reason is unknown, is kept as it is.

    Examples
    --------
    >>> restore_nonfinite({"gap": None, "gap_nonfinite": "inf", "ci": [0.5, None], "ci_nonfinite": {"1": "-inf"}})
    {'gap': inf, 'ci': [0.5, -inf]}
    """
    if isinstance(obj, list):
        return [restore_nonfinite(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: restore_nonfinite(v) for k, v in obj.items()}
    for key in [k for k in out if isinstance(k, str) and k.endswith(NONFINITE_SUFFIX)]:
        name, why = key[: -len(NONFINITE_SUFFIX)], out[key]
        if name not in out:
            continue
        if isinstance(why, str) and why in _NONFINITE and out[name] is None:
            out[name] = _NONFINITE[why]
            del out[key]
        elif isinstance(why, dict) and isinstance(out[name], list) and all(
                isinstance(r, str) and r in _NONFINITE and i.isdigit() and int(i) < len(out[name])
                and out[name][int(i)] is None for i, r in why.items()):
            items = list(out[name])
            for i, r in why.items():
                items[int(i)] = _NONFINITE[r]
            out[name] = items
            del out[key]
    return out


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def level_percent(level: Any, decimals: int = 1) -> str:
    """A probability that a statement holds ("≥ level"), as a percentage rounded *down*.

    ``f"{100 * p:.1f}"`` rounds to nearest, so a confidence of 0.99951 reads
    "100.0 %" — a certainty nobody proved — and 0.9496 reads "95.0 %", more
    than was proven. A level is a lower bound on a probability, so its text
    never exceeds it: the shortest repr of ``level`` is rounded to 14
    decimals (below the rounding of a sum like 1 − 3 × 0.05 =
    0.8499999999999999, above the gap 1e-12 a level keeps to 1), scaled by
    100 in decimal arithmetic and cut to ``decimals``.

    Parameters
    ----------
    level : float or numpy number
        A probability in [0, 1]; nan and ±inf are printed as ``number_text``
        prints them.
    decimals : int
        Digits after the point.

    Returns
    -------
    str
        The digits without the ``%`` sign.

    Examples
    --------
    >>> level_percent(0.99951), level_percent(0.95, 0), level_percent(0.9496), level_percent(0.29, 2)
    ('99.9', '95', '94.9', '29.00')
    >>> level_percent(1 - 3 * 0.05), level_percent(1 - 1e-12, 12)
    ('85.0', '99.999999999900')
    """
    x = float(level)
    if not math.isfinite(x):
        return number_text(x)
    q = decimal.Decimal(1).scaleb(-decimals)
    with decimal.localcontext(prec=400):            # every binary64 number, exactly (≤ 309 + 14 digits)
        exact = decimal.Decimal(repr(x)).quantize(decimal.Decimal("1e-14"), rounding=decimal.ROUND_HALF_EVEN)
        return str((exact * 100).quantize(q, rounding=decimal.ROUND_FLOOR))
