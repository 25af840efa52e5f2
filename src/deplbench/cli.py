"""The ``deplbench`` command: one CLI fronting every layer.

Each layer contributes its sub-commands through a module exposing
``register(subparsers)``; this module only assembles them and turns user
errors into one-line messages (exit status 2) instead of tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import Any

from deplbench import __version__
from deplbench.errors import DeplbenchError

#: Modules contributing sub-commands, in the order they appear in ``--help``.
#: A module that is missing (a layer not installed) is skipped.
COMMAND_MODULES = (
    "deplbench.instances.cli",
    "deplbench.instances.fit_cli",
    "deplbench.formulations.cli",
    "deplbench.solvers.cli",
    "deplbench.benchmarks.cli",
    "deplbench.reports.cli",
)


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None, recursively
    (dicts, lists, tuples), so that it is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def print_json(obj: Any, *, indent: int | None = None, strict: bool = False) -> None:
    """Print ``obj`` as one JSON document on stdout (the sub-commands' ``--json``).

    ``strict``: non-finite numbers become null (see :func:`finite_json`)
    rather than the tokens ``Infinity``/``NaN`` that strict parsers reject.
    """
    if strict:
        obj = finite_json(obj)
    json.dump(obj, sys.stdout, indent=indent, allow_nan=not strict)
    sys.stdout.write("\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deplbench",
        description="Benchmark suite for dependable training orchestration (DepL).",
    )
    parser.add_argument("--version", action="version", version=f"deplbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only tolerate the command module itself being absent, never a
            # missing dependency inside it.
            if exc.name == module_name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except DeplbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `deplbench algorithms | head`: the reader left; not an error.
        # Point stdout at devnull so the interpreter's final flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, ValueError) as exc:
        # File-system problems and value errors raised by libraries are still
        # the user's input (a missing file, a bad number): one line, no trace.
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
