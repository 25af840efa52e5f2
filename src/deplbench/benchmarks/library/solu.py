"""MIPLIB's ``.solu`` file: known optimal values of the library's MPS files.

One job: read and write the format, and judge whether a solver's outcome
agrees with a line of it. The format (as in MIPLIB 2010/2017's
``miplib.solu``) has one instance per line::

    =opt=  alexnet-l9  1802.630198147177     (proven optimum of that MPS file)
    =best= alexnet-any-l9  1781.12           (best known value, optimality unproven)
    =inf=  some-instance                     (the MPS file is infeasible)
    =unkn= some-instance                     (nothing known)

Blank lines and lines starting with ``#`` are ignored (our files start with a
comment saying what the values mean).

Agreement (:func:`agrees`) is the interval test used to validate MIPLIB
solutions: with the solver's best solution value ``p`` and proven bound
``d`` of a minimisation, the known optimum ``v`` must satisfy
``d ≤ v + tol`` and ``v ≤ p + tol`` (``tol = rel_tol · max(1, |v|)``).
It holds whether or not the solver finished: a solver that finds a better
solution than an ``=opt=`` value, or proves a bound above it, disagrees.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from deplbench.errors import DeplbenchError
from deplbench.limits import read_text

TAGS = ("=opt=", "=best=", "=inf=", "=unkn=")


class SoluError(DeplbenchError):
    """A malformed .solu file (the message names the file and the line)."""


@dataclass(frozen=True)
class SoluEntry:
    """One line of a .solu file: ``tag`` in :data:`TAGS`, ``name``, ``value``
    (None for ``=inf=`` and ``=unkn=``)."""

    tag: str
    name: str
    value: float | None = None

    def line(self) -> str:
        if self.value is None:
            return f"{self.tag:<7}{self.name}"
        return f"{self.tag:<7}{self.name}  {self.value!r}"


def write_solu(path: str, entries: list[SoluEntry], header: str = "") -> None:
    """Write ``entries`` (one per line) after ``header`` lines prefixed with ``#``."""
    lines = [f"# {h}" if h else "#" for h in header.splitlines()]
    lines += [e.line() for e in entries]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


#: An instance name of a .solu line: a plain file name inside the library's mps/ folder.
_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")


def read_solu(path: str) -> dict[str, SoluEntry]:
    """Parse a .solu file into ``{name: SoluEntry}``.

    Raises
    ------
    SoluError
        Naming the file and line of an unknown tag, a missing or non-finite
        value, or a name given twice.
    """
    out: dict[str, SoluEntry] = {}
    for no, raw in enumerate(read_text(path, "solu", SoluError).splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        where = f"{path}, line {no}"
        tag = parts[0]
        if tag not in TAGS:
            raise SoluError(f"{where}: unknown tag {tag!r} (expected one of {', '.join(TAGS)})")
        if len(parts) < 2:
            raise SoluError(f"{where}: {tag} without an instance name")
        name = parts[1]
        if not _NAME.fullmatch(name):
            # the name becomes mps/<name>.mps: "../x" or "/etc/x" would leave the library
            raise SoluError(f"{where}: instance name {name!r} is not a plain file name (letters, digits, "
                            "'.', '_', '+', '-'; no '/', no leading '.')")
        value = None
        if tag in ("=opt=", "=best="):
            if len(parts) != 3:
                raise SoluError(f"{where}: {tag} needs exactly a name and a value")
            try:
                value = float(parts[2])
            except ValueError:
                raise SoluError(f"{where}: value {parts[2]!r} is not a number") from None
            if not math.isfinite(value):
                raise SoluError(f"{where}: value {parts[2]!r} is not finite")
        elif len(parts) != 2:
            raise SoluError(f"{where}: {tag} takes a name only")
        if name in out:
            raise SoluError(f"{where}: instance {name!r} listed twice")
        out[name] = SoluEntry(tag, name, value)
    return out


def agrees(entry: SoluEntry, status: str, primal: float | None, dual: float | None,
           rel_tol: float = 1e-6) -> tuple[bool | None, str]:
    """Does a solver's outcome agree with a .solu line?

    Parameters
    ----------
    entry : SoluEntry
    status : str
        The solver's status (``optimal``, ``infeasible``, ``time_limit``, ...).
    primal, dual : float or None
        Best solution value and proven lower bound (minimisation).
    rel_tol : float, default 1e-6
        Relative tolerance (times ``max(1, |v|)``).

    Returns
    -------
    (bool or None, str)
        True/False and why; None when nothing can be compared (``=unkn=``,
        or a solver error without values).
    """
    if entry.tag == "=unkn=":
        return None, "no known value"
    if entry.tag == "=inf=":
        if primal is not None:
            return False, f".solu says infeasible, the solver found a solution of value {primal!r}"
        if status == "infeasible":
            return True, "infeasible, as the .solu says"
        return None, f"status {status}: infeasibility neither confirmed nor refuted"
    if entry.value is None:
        return None, f"{entry.tag} without a value"
    v = float(entry.value)
    tol = rel_tol * max(1.0, abs(v))
    if status == "infeasible":
        return False, f".solu gives {entry.tag} {v!r}, the solver says infeasible"
    if dual is not None and dual > v + tol:
        return False, f"the solver's proven bound {dual!r} exceeds the .solu value {v!r}"
    if entry.tag == "=opt=" and primal is not None and primal < v - tol:
        return False, f"the solver found {primal!r}, better than the .solu optimum {v!r}"
    if primal is None and dual is None:
        return None, f"status {status}: no value to compare"
    if status == "optimal" and entry.tag == "=opt=":
        return True, f"optimum within {rel_tol:g} of the .solu value"
    return True, "the .solu value lies between the solver's bound and its best solution"


__all__ = ["TAGS", "SoluEntry", "SoluError", "agrees", "read_solu", "write_solu"]
