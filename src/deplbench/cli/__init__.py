"""The ``deplbench`` command: one CLI fronting every layer.

The CLI is the top layer (docs/DESIGN.md): each command group is one module
of this package exposing ``register(subparsers)`` and importing the layers it
fronts, never the other way round. This module assembles them, keeps
standard output for the requested output only, and turns user errors into
one-line messages with the exit statuses listed in :data:`EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import textwrap
from collections.abc import Iterator

from deplbench import __version__
from deplbench.errors import DeplbenchError
from deplbench.cli.messages import os_error_message
from deplbench.jsonio import finite_json, print_json  # noqa: F401  (re-exported)

#: Modules contributing sub-commands, in the order they appear in ``--help``.
#: A module that is missing (a command group not installed) is skipped.
COMMAND_MODULES = (
    "deplbench.cli.instances",
    "deplbench.cli.fit",
    "deplbench.cli.formulations",
    "deplbench.cli.solvers",
    "deplbench.cli.simulate",
    "deplbench.cli.certify",
    "deplbench.cli.adaptive",
    "deplbench.cli.benchmarks",
    "deplbench.cli.library",
    "deplbench.cli.reports",
)

#: Exit statuses of every sub-command (also shown by ``deplbench --help``).
EXIT_STATUSES = {
    0: "success",
    1: "the command ran but its result is a failure: a solver error, a plan that is "
       "not feasible under `evaluate --check`, failed tasks in `run`, failed report sections",
    2: "bad input (a file, an option, a value): one line `error: ...` naming it",
    130: "interrupted (Ctrl-C)",
}


def _epilog() -> str:
    lines = ["exit status:"]
    for code, text in EXIT_STATUSES.items():
        lines += textwrap.wrap(text, 72, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
    lines.append("")
    lines += textwrap.wrap("Standard output carries only what a command was asked for (with "
                           "--json: one JSON object); solver banners, logs and progress go to "
                           "standard error.", 79)
    return "\n".join(lines)


class _OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr with exit
    status 2 (the CLI's error contract), e.g. ``error: deplbench validate:
    unrecognized arguments: --json (see deplbench validate --help)``.
    Sub-command parsers inherit the class through ``add_subparsers``."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        sys.stderr.write(f"error: {self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The ``deplbench`` argument parser with every available command group.

    Returns
    -------
    argparse.ArgumentParser

    Raises
    ------
    ModuleNotFoundError
        When a command module exists but one of its own imports is missing
        (only a command module that is itself absent is skipped).
    """
    parser = _OneLineErrorParser(
        prog="deplbench",
        description="Benchmark suite for dependable training orchestration (DepL).",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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


@contextlib.contextmanager
def stdout_only_for_output() -> Iterator[None]:
    """While a command runs, file descriptor 1 is standard error.

    Solvers written in C/C++ print straight to file descriptor 1 (highspy
    1.16 prints "Running HiGHS ..." when a ``Highs()`` object is created,
    before any option can silence it), bypassing ``sys.stdout``. So for the
    duration of the command, descriptor 1 is pointed at standard error and
    ``sys.stdout`` at a stream on a duplicate of the real standard output:
    ``print`` and :func:`~deplbench.jsonio.print_json` in the command
    modules reach the real stdout, a solver's banner cannot. Child processes
    (the runner's workers) inherit descriptor 1, so their output goes to
    standard error too.

    When ``sys.stdout`` has no file descriptor (pytest's ``capsys``, an
    embedding application) nothing is redirected.
    """
    original = sys.stdout
    try:
        fd = original.fileno()
        err_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    original.flush()
    saved = os.dup(fd)
    # Line-buffered on a terminal (as Python's own stdout), else block-buffered.
    real = open(saved, "w", encoding=getattr(original, "encoding", None) or "utf-8",
                errors=getattr(original, "errors", None) or "strict",
                buffering=1 if getattr(original, "line_buffering", False) else -1, closefd=True)
    os.dup2(err_fd, fd)
    sys.stdout = real
    try:
        yield
    finally:
        sys.stdout = original
        try:
            real.flush()
        except BrokenPipeError:
            # The reader left (`deplbench algorithms | head`): drop the rest.
            os.dup2(os.open(os.devnull, os.O_WRONLY), saved)
        os.dup2(saved, fd)
        with contextlib.suppress(OSError):
            real.close()


def main(argv: list[str] | None = None) -> int:
    """Run ``deplbench`` with ``argv``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (:data:`EXIT_STATUSES`). argparse's own usage errors
        and ``--help`` raise :class:`SystemExit` (status 2 and 0).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with stdout_only_for_output():
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
    except OSError as exc:
        # File-system problems are still the user's input (a missing file, an
        # existing path, no permission): one line naming the file, no trace.
        print(f"error: {os_error_message(exc)}", file=sys.stderr)
        return 2
    except ValueError as exc:
        # Value errors raised by libraries on the user's numbers: one line.
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
