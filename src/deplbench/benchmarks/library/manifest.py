"""The library's ``manifest.json``, validated before anything it names is read.

One job: a manifest is a user's input like an instance file (a library may
come from anywhere), so :func:`validate_manifest` checks its shape and
types and confines every path it names to the library: a relative path
without ``..``, not absolute, and not leading through a symbolic link
anywhere (the resolved file must be the file the path names inside the
library). Its ``library_version`` must be one this code reads
(:data:`KNOWN_VERSIONS`) and it must list at least one entry. Each violation is one line naming the field, e.g.
``manifest.json: entries[0]: expected an object, got int``.
"""

from __future__ import annotations

import math
import os
import re

from deplbench.benchmarks.library.catalog import LIBRARY_VERSION
from deplbench.errors import SolverError

#: The library versions this code reads: the one it writes (the catalog's, raised with every
#: change of the entries or of how they are written, so an older library is refused, not misread).
KNOWN_VERSIONS = (LIBRARY_VERSION,)
#: An entry's name: a plain file stem (it becomes instances/<name>.json, pwl/<name>.mps.gz, ...).
NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")
#: Entry fields that name a file inside the library (None when the entry has no such file).
PATH_FIELDS = ("instance", "pwl", "minlp")


def _type_name(value) -> str:
    return "null" if value is None else type(value).__name__


def confined(root: str, rel, where: str) -> str:
    """The path ``root/rel`` after checking ``rel`` stays inside the library.

    Parameters
    ----------
    root : str
        The library directory.
    rel : str
        A path from the manifest.
    where : str
        The field, for messages (``manifest.json: entries[2].pwl``).

    Returns
    -------
    str
        ``os.path.join(root, rel)``.

    Raises
    ------
    SolverError
        ``rel`` is not a string, is absolute, has a ``..`` part, or resolves
        (through a symbolic link) to another file than the one it names.
    """
    if not isinstance(rel, str) or not rel:
        raise SolverError(f"{where}: expected a relative file path, got {_type_name(rel)} {rel!r}")
    if os.path.isabs(rel) or rel.startswith("~"):
        raise SolverError(f"{where}: {rel!r} is an absolute path; paths must stay inside the library")
    parts = re.split(r"[\\/]", rel)
    if ".." in parts or "\0" in rel:
        raise SolverError(f"{where}: {rel!r} leaves the library ('..'); paths must stay inside it")
    base = os.path.realpath(root)
    named = os.path.normpath(os.path.join(base, rel))
    if os.path.realpath(named) != named:
        raise SolverError(f"{where}: {rel!r} leads through a symbolic link; paths must name files inside "
                          "the library itself")
    return os.path.join(root, rel)


def validate_manifest(manifest, root: str, label: str = "manifest.json") -> dict:
    """Check a library manifest's shape, types and paths (module docstring).

    Parameters
    ----------
    manifest : Any
        The parsed JSON.
    root : str
        The library directory the paths are relative to.
    label : str
        The file, for messages.

    Returns
    -------
    dict
        ``manifest`` itself.

    Raises
    ------
    SolverError
        One line naming the first invalid field.
    """
    if not isinstance(manifest, dict):
        raise SolverError(f"{label}: expected a JSON object, got {_type_name(manifest)}")
    version = manifest.get("library_version")
    if version not in KNOWN_VERSIONS:
        raise SolverError(f"{label}: library_version: {version!r} is not a library version this deplbench reads "
                          f"(known: {', '.join(map(repr, KNOWN_VERSIONS))}); rebuild the library with "
                          "`deplbench library build`")
    entries = manifest.get("entries")
    if not isinstance(entries, list):
        raise SolverError(f"{label}: entries: expected a list of objects, got {_type_name(entries)}")
    if not entries:
        raise SolverError(f"{label}: entries: the manifest lists no entries (an empty library); rebuild it")
    tol = manifest.get("pwl_tolerance", 1e-4)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (math.isfinite(tol) and 0 < tol < 1):
        raise SolverError(f"{label}: pwl_tolerance: expected a number in (0, 1), got {tol!r}")
    seen: set[str] = set()
    for i, rec in enumerate(entries):
        at = f"{label}: entries[{i}]"
        if not isinstance(rec, dict):
            raise SolverError(f"{at}: expected an object, got {_type_name(rec)}")
        name = rec.get("name")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise SolverError(f"{at}.name: expected a plain file name (letters, digits, '.', '_', '+', '-'), "
                              f"got {name!r}")
        if name in seen:
            raise SolverError(f"{at}.name: {name!r} appears twice")
        seen.add(name)
        for field in PATH_FIELDS:
            value = rec.get(field)
            if value is not None or field == "instance":
                confined(root, value, f"{at}.{field}")
        files = rec.get("minlp_files")
        if files is not None:
            if not isinstance(files, list):
                raise SolverError(f"{at}.minlp_files: expected a list of paths, got {_type_name(files)}")
            for j, f in enumerate(files):
                confined(root, f, f"{at}.minlp_files[{j}]")
        for field, low in (("scenarios", 1), ("seed", 0)):
            value = rec.get(field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise SolverError(f"{at}.{field}: expected an integer ≥ {low}, got {value!r}")
        for field in ("formulation", "model_sha256", "instance_sha256", "note"):
            value = rec.get(field)
            if value is not None and not isinstance(value, str):
                raise SolverError(f"{at}.{field}: expected a string, got {_type_name(value)}")
        if rec.get("pwl") is not None and rec.get("scenarios") is None:
            raise SolverError(f"{at}.scenarios: an entry with model files needs its scenario count")
    return manifest


__all__ = ["KNOWN_VERSIONS", "NAME", "PATH_FIELDS", "confined", "validate_manifest"]
