"""Declared parameters: the one validation path for every tunable value.

A :class:`Param` describes one parameter as data — default, type, bounds or
choices, help text — and :meth:`Param.convert` is the only place a value is
converted and checked. Solvers declare their parameters with it
(``Solver.parameters``), and so can generators and sweep loaders: this module
sits at the bottom of the package (it imports only :mod:`deplbench.errors`),
so every layer may use it.

Two input styles are supported:

* **lenient** (default): command-line strings such as ``eta=200`` or
  ``calibrate=yes`` are converted (``"2.0"`` → 2 for an int; ``"1.5"`` is
  refused, never truncated; so is a number with digits grouped by ``_``,
  ``"1_0"``, which Python's ``int`` and ``float`` would read as 10);
* **strict** (``strict=True``): typed sources (TOML, JSON) must already carry
  the declared type — a string is never coerced to a number, a boolean is
  never a number (``true`` is not 1), and a float is never an integer
  (``3.0`` is refused where an int is declared). A tuple may still be
  written as one comma-separated string (``risk_grid = "0.9,0.8"``), as on
  the command line.

Every refusal raises the caller's error class (default
:class:`~deplbench.errors.SolverError`) with a one-line message naming the
parameter.

Examples
--------
>>> from deplbench.params import Param, resolve
>>> spec = {"eta": Param(200, int, "resolution", low=1)}
>>> resolve(spec, {"eta": "50"}, owner="algorithm 'depl'")
{'eta': 50}
>>> resolve(spec, {}, owner="algorithm 'depl'")
{'eta': 200}
"""

from __future__ import annotations

import builtins
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deplbench.errors import DeplbenchError, SolverError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
#: The integers a parameter, a seed or a task record's column may take: what
#: SQLite's INTEGER holds, a signed 64-bit integer in [MIN_INT, MAX_INT]. A
#: task with 2**64 scenarios would fail, and then its row could not be stored
#: (an OverflowError out of the runner); a 2**64 kept inside a JSON column is
#: read back by SQLite's ``json_extract`` as the float 1.8446744073709552e+19.
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
#: Largest seed: a seed is an integer in [0, MAX_SEED], every reader's rule
#: (:func:`seed_refusal`).
MAX_SEED = MAX_INT
#: 2**53: every integer below it is a binary64 float exactly; from it on, a
#: float stands for several integers (so never for "the integer given").
_EXACT_FLOAT_INTS = 2.0**53


def int_refusal(value: int) -> str:
    """Why the integer ``value`` cannot be stored, or ``""`` when it can.

    The one rule for every integer a results store keeps (:data:`MIN_INT` to
    :data:`MAX_INT`); callers prefix the field's name.
    """
    if MIN_INT <= value <= MAX_INT:
        return ""
    return (f"must lie within [−2**63, 2**63 − 1], got {value} (results are stored with 64-bit integers, "
            "SQLite's INTEGER)")


def seed_refusal(value: int) -> str:
    """Why the integer ``value`` is not a seed, or ``""`` when it is.

    The one rule for every seed (a generator's, a solver's, an evaluation's,
    a closed-loop simulation's): an integer in [0, :data:`MAX_SEED`]. numpy's
    ``SeedSequence`` would take any non-negative integer, but the results
    store keeps seeds as 64-bit integers. Callers prefix the field's name.
    """
    if value < 0:
        return f"must be a non-negative integer, got {value!r}"
    if value > MAX_SEED:
        return (f"must be at most 2**63 − 1 = {MAX_SEED} (the results store keeps seeds as 64-bit integers), "
                f"got {value}")
    return ""


class _InexactInt(ValueError):
    """A float from 2**53 on given where an integer is declared."""


def is_bool(value: Any) -> bool:
    """Python's or numpy's boolean (``np.True_`` is no ``bool`` subclass, and ``float(np.True_)`` is 1.0);
    numpy is not imported for this: its type is recognised by its module and name."""
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))


def _is_array(value: Any) -> bool:
    """An array (numpy's, even 0-d, or any other library's with ``ndim`` and ``shape``), not a numpy
    scalar. ``int(np.array(2.7))`` is 2 and ``np.array(True)`` has ``__index__``: an array is refused
    where one value is declared, never truncated or read as a number (numpy is not imported for this:
    a numpy scalar is recognised by ``numpy.generic`` among its classes)."""
    if not (hasattr(value, "ndim") and hasattr(value, "shape")):
        return False
    return not any(c.__module__ == "numpy" and c.__name__ == "generic" for c in type(value).__mro__)


class _GroupedDigits(ValueError):
    """A number written with ``_`` between its digits (``1_0``)."""


#: Why a number written with ``_`` between its digits is refused, for every front that reads one.
GROUPED_DIGITS = "'_' between digits is refused (Python would drop it and read 1_0 as 10); write the number without '_'"


def _int_text(text: str) -> int | float:
    """A command-line integer: its digits exactly (``int``), else its float
    value (``"2.0"``, ``"1e3"``) for :meth:`Param._coerce` to check."""
    try:
        return int(text)
    except ValueError:
        return float(text)


@dataclass(frozen=True)
class Param:
    """A parameter: default, type, optional bounds/choices, help text.

    Parameters
    ----------
    default : object
        Value used when the parameter is not given (``None`` makes it optional).
    type : {float, int, bool, str}
        Declared type.
    help : str
        One line for ``deplbench algorithms`` and the docs.
    low, high : float, optional
        Bounds (``low`` exclusive when ``low_inclusive`` is False, ``high``
        exclusive when ``high_inclusive`` is False).
    choices : tuple, optional
        The admissible values.
    nullable : bool, default False
        Whether ``None`` (or the strings ``"none"``/``"null"``) is accepted.
    finite : bool, default False
        Whether ±inf is refused (NaN always is).
    item : type, optional
        With ``type=tuple``: the type of every element (a CLI string is split
        at commas); bounds and ``finite`` then apply to each element.
    check : callable, optional
        A last check of the converted value, ``check(value) -> str``: a
        non-empty string is the reason it is refused (e.g. a file name whose
        directory does not exist).
    high_reason : str, optional
        Why ``high`` is where it is, said in its refusal instead of the bare
        bound (``must be at most <high_reason>, got ...``).
    """

    default: Any
    type: builtins.type = float
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    choices: tuple | None = None
    nullable: bool = False
    high_inclusive: bool = True
    finite: bool = False
    item: builtins.type | None = None
    check: Callable[[Any], str] | None = None
    high_reason: str = ""

    def convert(self, name: str, value: Any, *, strict: bool = False,
                error: builtins.type[DeplbenchError] = SolverError) -> Any:
        """Convert and check one value.

        Parameters
        ----------
        name : str
            The parameter's name, used in every message.
        value : object
            The value as given (CLI string, TOML/JSON value, Python object).
        strict : bool, default False
            Refuse strings for non-string types (typed sources such as TOML).
        error : type, default SolverError
            Error class raised on refusal (e.g. ``SweepError`` for sweeps).

        Returns
        -------
        object
            The value as ``self.type`` (or None when nullable).

        Raises
        ------
        error
            Wrong type, fractional int, NaN/inf for a bounded number,
            out-of-range or not among ``choices``.
        """
        if value is None or (not strict and isinstance(value, str) and value.lower() in ("none", "null")):
            if self.nullable or self.default is None:
                return None
            raise error(f"parameter {name!r}: a value is required")
        expected = self.type.__name__
        if self.type is not tuple and _is_array(value):
            raise error(f"parameter {name!r}: expected {expected}, got an array, {value!r} (pass the number "
                        "itself, e.g. x.item())")
        # A tuple may be written as one comma-separated string in any source ("0.9,0.8").
        if strict and isinstance(value, str) and self.type not in (str, tuple):
            raise error(f"parameter {name!r}: expected {expected}, got the string {value!r}")
        if self.type is not bool and is_bool(value):
            # bool is an int subclass: true/false would silently become 1/0.
            raise error(f"parameter {name!r}: expected {expected}, got {value!r}")
        if strict and self.type is int and isinstance(value, float):
            # A typed source tells 3 from 3.0: a float where an integer is
            # declared is refused, never truncated or silently converted.
            raise error(f"parameter {name!r}: expected int, got the float {value!r}")
        try:
            value = self._coerce(value)
        except _InexactInt:
            raise error(f"parameter {name!r}: expected int, got {value!r}, a float that stands for many "
                        "integers from 2**53 on (write the integer in digits)") from None
        except _GroupedDigits:
            raise error(f"parameter {name!r}: expected {expected}, got {value!r}: {GROUPED_DIGITS}") from None
        except (TypeError, ValueError, OverflowError):
            raise error(f"parameter {name!r}: expected {expected}, got {value!r}") from None
        if self.choices is not None and value not in self.choices:
            raise error(f"parameter {name!r}: must be one of {list(self.choices)}, got {value!r}")
        for element in (value if self.type is tuple else (value,)):
            self._check_bounds(name, element, error, of="every element " if self.type is tuple else "")
        reason = self.check(value) if self.check is not None else ""
        if reason:
            raise error(f"parameter {name!r}: {reason}")
        return value

    def _check_bounds(self, name: str, value: Any, error: builtins.type[DeplbenchError], of: str) -> None:
        """NaN, ±inf (when ``finite``), the bounds, and an int's 64 bits (:func:`int_refusal`), for one number."""
        if isinstance(value, float) and math.isnan(value):
            # NaN passes every bound comparison; reject it here by name.
            raise error(f"parameter {name!r}: {of}expected a number, got nan")
        if self.finite and isinstance(value, float) and math.isinf(value):
            raise error(f"parameter {name!r}: {of}must be finite, got {value!r}")
        if self.low is not None and (value < self.low or (not self.low_inclusive and value == self.low)):
            op = ">=" if self.low_inclusive else ">"
            raise error(f"parameter {name!r}: {of}must be {op} {self.low}, got {value!r}")
        if self.high is not None and (value > self.high or (not self.high_inclusive and value == self.high)):
            if self.high_reason:
                raise error(f"parameter {name!r}: {of}must be at most {self.high_reason}, got {value!r}")
            op = "<=" if self.high_inclusive else "<"
            raise error(f"parameter {name!r}: {of}must be {op} {self.high}, got {value!r}")
        reason = int_refusal(value) if isinstance(value, int) and not isinstance(value, bool) else ""
        if reason:
            raise error(f"parameter {name!r}: {of}{reason}")

    def _coerce(self, value: Any) -> Any:
        """``value`` as ``self.type``; ValueError/TypeError when it is not one."""
        if self.type is tuple:
            if isinstance(value, str):
                value = [v for v in value.split(",") if v.strip()]
            elif isinstance(value, (bytes, Mapping)) or not hasattr(value, "__iter__"):
                raise TypeError(value)
            element = Param(None, self.item or float)
            if any(_is_array(v) or (element.type is not bool and is_bool(v)) for v in value):
                raise TypeError(value)   # as for a single number: true is not 1, an array is not a number
            return tuple(element._coerce(v) for v in value)
        if self.type is bool:
            if isinstance(value, str):
                low = value.strip().lower()
                if low in _TRUE:
                    return True
                if low in _FALSE:
                    return False
                raise ValueError(value)
            if is_bool(value):
                return bool(value)
            if isinstance(value, (int, float)) and value in (0, 1):
                return bool(value)
            raise TypeError(value)
        if self.type in (int, float) and isinstance(value, str) and "_" in value:
            # int() and float() read "1_0" as 10 (PEP 515 grouping), so a
            # typo such as 1_0 for 1.0 would pass as another number.
            raise _GroupedDigits(value)
        if self.type is int:
            # A CLI string "1.5" must not be truncated to 1 silently, so
            # strings go through the same integrality check as floats. Digits
            # are read as an exact integer first: through a float,
            # "9007199254740993" would become ...992 (a different seed).
            number = _int_text(value) if isinstance(value, str) else value
            if isinstance(number, float) and not number.is_integer():
                raise ValueError(value)
            if isinstance(number, float) and abs(number) >= _EXACT_FLOAT_INTS:
                # 1e300 is not the integer 10**300, and 1e16 + 1 rounds to 1e16:
                # past 2**53 a float does not name the integer the user meant.
                raise _InexactInt(value)
            if not isinstance(number, (int, float)) and not hasattr(number, "__index__"):
                raise TypeError(value)
            return int(number)
        if self.type is float:
            if not isinstance(value, (int, float, str)) and not hasattr(value, "__float__"):
                raise TypeError(value)
            return float(value)
        if self.type is str and not isinstance(value, str):
            raise TypeError(value)
        return self.type(value)

    def but(self, **changes: Any) -> Param:
        """This parameter with ``changes`` (e.g. another ``default`` or ``help``).

        A solver reuses a shared declaration (:data:`TIME_LIMIT`, :data:`SEED`)
        with its own default and help text; the type and the bounds, which
        decide what is accepted, stay the shared ones (but for a seed that must
        leave room for streams at seed + offset, :func:`offset_seed`).
        """
        return dataclasses.replace(self, **changes)

    def same_rule(self, other: Param) -> bool:
        """Whether ``other`` accepts exactly what this parameter accepts (the
        declarations may differ in ``default`` and ``help`` only)."""
        return dataclasses.replace(other, default=self.default, help=self.help) == self

    def describe(self) -> dict[str, Any]:
        """JSON-able description: default, type, help, and any bounds/choices."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        d: dict[str, Any] = {"default": _json_value(default), "type": self.type.__name__,
                             "help": self.help}
        if self.choices is not None:
            d["choices"] = list(self.choices)
        if self.low is not None:
            d["low"] = self.low
            d["low_inclusive"] = self.low_inclusive
        if self.high is not None:
            d["high"] = self.high
            if not self.high_inclusive:
                d["high_inclusive"] = False
        if self.item is not None:
            d["item"] = self.item.__name__
        if self.finite:
            d["finite"] = True
        if self.nullable:
            d["nullable"] = True
        return d


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


#: ``time_limit``, declared once for every solver: wall-clock seconds, the
#: outer stop read through :func:`deplbench.limits.deadline` (solvers give
#: their own default with :meth:`Param.but`). ``inf`` and ``none`` both mean
#: no limit.
TIME_LIMIT = Param(None, float, "wall-clock seconds (none: no limit); past it the result is status time_limit "
                   "(docs/DESIGN.md, limits)", low=0.0, low_inclusive=False, nullable=True)
#: ``seed``, declared once for every solver: the seed of its random draws.
SEED = Param(0, int, "seed of the algorithm's random draws", low=0)


def offset_seed(offset: int, stream: str, help: str) -> Param:
    """:data:`SEED` for an algorithm that also draws from ``seed + offset`` (``stream``, e.g.
    "the validation's stream"): a seed above ``MAX_SEED − offset`` would be accepted, then that
    stream's seed refused, naming a value the user never typed; so it is refused up front."""
    return SEED.but(help=help, high=MAX_SEED - offset,
                    high_reason=f"2**63 − 1 − {offset} = {MAX_SEED - offset} so that seed + {offset}, {stream}, "
                                "is a seed")
#: ``gap``, declared once for the exact SAA solvers: the relative gap
#: (UB − LB)/UB at which a plan is declared optimal.
GAP = Param(1e-4, float, "relative optimality gap (UB − LB)/UB", low=0.0, low_inclusive=False, high=0.999999)


def trusted(cls: builtins.type, values: Mapping[str, Any]) -> Any:
    """An instance of the frozen dataclass ``cls`` from values already checked.

    The settings objects (``MilpSettings``, ``GeneralSettings``,
    ``CertifySettings``) check their fields when constructed directly; a
    settings object built from the output of :func:`resolve` is built with
    this instead, so that each value is validated once. Fields absent from
    ``values`` take their defaults.
    """
    obj: Any = object.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.name in values:
            value = values[f.name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        else:
            value = f.default_factory()  # type: ignore[operator]
        object.__setattr__(obj, f.name, value)
    return obj


def resolve(parameters: Mapping[str, Param], given: Mapping[str, Any], *, owner: str,
            strict: bool = False, error: type[DeplbenchError] = SolverError) -> dict[str, Any]:
    """Defaults filled in, unknown names rejected, every value converted.

    Parameters
    ----------
    parameters : mapping of str to Param
        The declared parameters.
    given : mapping
        The values supplied by the caller.
    owner : str
        What the parameters belong to, for messages (``"algorithm 'depl'"``).
    strict, error
        Passed to :meth:`Param.convert`.

    Returns
    -------
    dict
        One entry per declared parameter, in declaration order.

    Raises
    ------
    error
        Naming the first unknown or invalid parameter.
    """
    unknown = sorted(set(given) - set(parameters))
    if unknown:
        known = ", ".join(sorted(parameters)) or "none"
        raise error(f"{owner} has no parameter {unknown[0]!r} (parameters: {known})")
    return {key: spec.convert(key, given[key], strict=strict, error=error) if key in given else spec.default
            for key, spec in parameters.items()}


__all__ = ["GAP", "GROUPED_DIGITS", "MAX_INT", "MAX_SEED", "MIN_INT", "SEED", "TIME_LIMIT", "Param", "int_refusal",
           "is_bool", "offset_seed", "resolve", "seed_refusal", "trusted"]
