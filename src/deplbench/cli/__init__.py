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
import re
import sys
import textwrap
from collections.abc import Iterator

from deplbench import __version__
from deplbench.cli.messages import os_error_message
from deplbench.errors import DeplbenchError
from deplbench.files import release_pipes
from deplbench.params import GROUPED_DIGITS

#: Modules contributing sub-commands, in the order they appear in ``--help``.
#: A module that is missing (a command group not installed) is skipped.
COMMAND_MODULES = (
    "deplbench.cli.instances",
    "deplbench.cli.fit",
    "deplbench.cli.measure",
    "deplbench.cli.formulations",
    "deplbench.cli.solvers",
    "deplbench.cli.simulate",
    "deplbench.cli.certify",
    "deplbench.cli.adaptive",
    "deplbench.cli.benchmarks",
    "deplbench.cli.library",
    "deplbench.cli.reports",
)

#: Every sub-command: name → (its module, the one-line help of ``deplbench
#: --help``). Only the module of the command being run is imported and
#: registered (:func:`build_parser`); the others appear in ``--help`` from
#: this table, so ``deplbench --help``/``--version`` import no numerical
#: library. tests/cli/test_cli_startup.py checks that it matches what the
#: modules register. A command missing here still works (every module is
#: then registered).
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("deplbench.cli.instances", "generate a seeded instance (realistic, knapsack, scaling, datasets)"),
    "validate": ("deplbench.cli.instances", "check instance files against the format and its rules"),
    "schema": ("deplbench.cli.instances", "print the JSON Schema of the instance format"),
    "fit": ("deplbench.cli.fit", "fit an instance's loss model (eq. (8), l_sw) to training logs (DepL Sec. VI-A)"),
    "measure": ("deplbench.cli.measure",
                "train real pruned networks, reproduce Fig. 4, replay proven plans on held-out runs"),
    "evaluate": ("deplbench.cli.formulations",
                 "evaluate a plan: cost, constraints, out-of-sample loss quantile with a CI"),
    "solve": ("deplbench.cli.solvers", "run one algorithm on an instance"),
    "algorithms": ("deplbench.cli.solvers", "list algorithms and their parameters"),
    "simulate": ("deplbench.cli.simulate", "closed-loop simulation: an algorithm judged as it runs"),
    "certify": ("deplbench.cli.certify", "certified bracket [LB, UB] on the chance-constrained optimum"),
    "adaptive": ("deplbench.cli.adaptive", "bracket on the optimal closed-loop policy and its cost–risk frontier"),
    "run": ("deplbench.cli.benchmarks", "run a benchmark sweep into a results store (resumable)"),
    "export": ("deplbench.cli.benchmarks", "export a results store to CSV or Parquet"),
    "library": ("deplbench.cli.library",
                "build, check or verify the instance library (full SAA models, .solu files of optima)"),
    "report": ("deplbench.cli.reports", "build a static HTML/CSV/Markdown report from a results store"),
}

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


#: Namespace attribute holding the single-valued options given so far in one parse.
_GIVEN = "_deplbench_options_given"


class _StoreOnce(argparse._StoreAction):
    """A single-valued option given twice is refused, as ``--param key=…`` twice is:
    argparse keeps the last value, so ``--algo depl --algo milp`` ran milp and
    ``--scenarios 50 --scenarios 60`` solved with 60, the first value dropped unsaid."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not self.option_strings:     # a positional is read once by construction
            return super().__call__(parser, namespace, values, option_string)
        given = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice (one value per option)")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _SubParsersNamingTheCommand(argparse._SubParsersAction):
    """Options a sub-command does not know are refused by that sub-command's
    parser, so the error names it (``deplbench validate: unrecognized
    arguments: --json (see deplbench validate --help)``). argparse leaves
    them to the top-level parser, whose message names only ``deplbench``."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        unknown = getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if unknown:
            # the innermost sub-command refuses first (``measure refit``): each
            # level's parser runs its own sub-command's parser before returning
            self._name_parser_map[values[0]].error(f"unrecognized arguments: {' '.join(unknown)}")


#: What argparse takes for a negative number rather than an option (see _OneLineErrorParser).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


def _ungrouped(kind: type) -> object:
    """argparse's ``type=int`` / ``type=float`` without PEP 515 grouping: ``int("1_0")`` is 10, so a
    typo for 1.0 would pass as another number; refused as :class:`~deplbench.params.Param` refuses it."""
    def convert(text: str):
        if "_" in text:
            raise argparse.ArgumentTypeError(f"{text!r}: {GROUPED_DIGITS}")
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
    return convert


class _OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr with exit
    status 2 (the CLI's error contract), e.g. ``error: deplbench validate:
    unrecognized arguments: --json (see deplbench validate --help)``.
    Sub-command parsers inherit the class through ``add_subparsers``.

    Option prefixes are not accepted (``allow_abbrev=False``): argparse
    would otherwise read ``--bucket 100`` as ``--buckets 100``, and a new
    option sharing a prefix would silently change what an old command
    line means. A single-valued option may be given once (:class:`_StoreOnce`)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # The store action is replaced in the parser's registry, not in its add_argument: argument
        # groups and mutually exclusive groups share the registry but have add_argument of their own.
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        self.register("action", "parsers", _SubParsersNamingTheCommand)
        # every option declared type=int or type=float reads its number through this registry entry
        self.register("type", int, _ungrouped(int))
        self.register("type", float, _ungrouped(float))
        # A value such as -inf, -1e3 or -nan is read as the option's value (argparse's own pattern
        # knows only -1 and -1.5 and reads -inf as an option: "expected one argument"), so that the
        # option's own check refuses it, naming it. No option of the CLI looks like a number.
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse's method
        parsed, rest = super().parse_known_args(args, namespace)
        parsed.__dict__.pop(_GIVEN, None)
        return parsed, rest

    def error(self, message: str):  # noqa: D102 - argparse's hook
        sys.stderr.write(f"error: {self.prog}: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def __getattr__(name: str):
    # finite_json and print_json are re-exported here for importers; imported on first
    # use so that starting the CLI does not import numpy (through jsonio).
    if name in ("finite_json", "print_json"):
        from deplbench import jsonio

        return getattr(jsonio, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def requested_command(argv: list[str] | None) -> str | None:
    """The sub-command named in ``argv`` (its first non-option word), or None.

    The top-level parser has only ``-h`` and ``--version``, neither of which
    takes a value, so the first word not starting with ``-`` is the command.
    """
    for word in argv or ():
        if not word.startswith("-"):
            return word
    return None


def _import_command_module(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only tolerate the command module itself being absent, never a
        # missing dependency inside it.
        if exc.name == module_name:
            return None
        raise


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The ``deplbench`` argument parser.

    Parameters
    ----------
    command : str or None, optional
        The sub-command about to run: only its module is imported and
        registered in full; every other command of :data:`COMMANDS` is a
        stub carrying its one-line help (enough for ``deplbench --help``).
        None: stubs only (``--help``, ``--version``). ``"*"`` (default), or
        a command :data:`COMMANDS` does not list: every module registered.

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
    full = command == "*" or (command is not None and command not in COMMANDS)
    wanted = None if full or command is None else COMMANDS[command][0]
    for module_name in COMMAND_MODULES:
        stubs = [(name, text) for name, (mod, text) in COMMANDS.items() if mod == module_name]
        if not full and module_name != wanted and stubs:
            for name, text in stubs:
                subparsers.add_parser(name, help=text, add_help=False)
            continue
        module = _import_command_module(module_name)
        if module is not None:
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


def one_line(exc: BaseException) -> str:
    r"""``exc``'s message on one line, whitespace collapsed: a library's text
    (pandas' tokenizer ends its message with a newline) must not break the
    CLI's error contract of one ``error: ...`` line.

    >>> one_line(ValueError("Expected 2 fields in line 3, saw 5\n"))
    'Expected 2 fields in line 3, saw 5'
    """
    return " ".join(str(exc).split())


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
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(requested_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with stdout_only_for_output():
            return int(args.func(args) or 0)
    except DeplbenchError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
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
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        release_pipes()


#: The test hook that loads algorithms from any .py file (deplbench.benchmarks.lookup.PLUGIN_ENV).
TEST_PLUGIN_ENV = "DEPLBENCH_TASK_PLUGINS"


def command() -> int:
    """The installed ``deplbench`` command (and ``python -m deplbench``).

    The same as :func:`main`, except that the test-only plugin hook
    :data:`TEST_PLUGIN_ENV` is dropped from the environment first: a
    variable must not make the user's command (and its task processes) run
    an arbitrary ``.py`` file. Tests call :func:`main` to use the hook.
    """
    os.environ.pop(TEST_PLUGIN_ENV, None)
    return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(command())
