"""The ``deplbench`` command: one CLI fronting every layer.

Each layer contributes its sub-commands through a module exposing
``register(subparsers)``; this module only assembles them and turns user
errors into one-line messages (exit status 2) instead of tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from deplbench import __version__
from deplbench.errors import DeplbenchError

#: Modules contributing sub-commands, in the order they appear in ``--help``.
#: A module that is missing (a layer not installed) is skipped.
COMMAND_MODULES = (
    "deplbench.instances.cli",
    "deplbench.instances.fit_cli",
    "deplbench.formulations.cli",
    "deplbench.heuristics.cli",
    "deplbench.benchmarks.cli",
    "deplbench.reports.cli",
)


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
    except (OSError, ValueError) as exc:
        # File-system problems and value errors raised by libraries are still
        # the user's input (a missing file, a bad number): one line, no trace.
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
