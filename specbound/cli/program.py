"""The program: its parser (every command group's, then the installed plugins'), and :func:`main`, the one
boundary every failure leaves through as one stderr line and a status (see the package's docstring).

Example:
    >>> main(["--version"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: 0
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from .._version import __version__
from ..core.errors import SpecboundError
from ..core.limits import LIMITS
from ..core.text import echoed
from ..io.files import describe_os_error
from .analyze import add_analyze_commands
from .arguments import Parser
from .atlas import add_atlas_commands
from .export import add_export_command
from .grid import add_grid_command
from .trajectory import add_trajectory_command

#: Exit statuses: a problem the user can fix, a usage error (argparse's), a bug, an interrupt.
EXIT_ERROR, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 3, 130

#: The entry-point group through which an installed package adds commands: each entry is a function that
#: takes the subcommands of :func:`build_parser` and adds its own parsers to them. The lab beside the
#: library (``specbound_lab``) adds ``specbound lab ...`` this way, so the library never imports it.
COMMAND_PLUGINS = "specbound.commands"


def build_parser() -> argparse.ArgumentParser:
    """Every command, in the order ``specbound --help`` lists them: the library's groups, then the plugins'."""
    parser = Parser(
        prog="specbound",
        description="Spectra and spectrum-adaptive generalization-bound proxies of trained Transformers.",
    )
    parser.add_argument("--version", action="version", version=f"specbound {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    commands = parser.add_subparsers(dest="command", required=True)
    add_analyze_commands(commands)
    add_export_command(commands)
    add_grid_command(commands)
    add_trajectory_command(commands)
    add_atlas_commands(commands)
    _add_plugin_commands(commands)
    return parser


def _add_plugin_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """The commands of every installed package registered under :data:`COMMAND_PLUGINS`, by name.

    A plugin that fails to load or to add its commands (its own dependencies missing, a command name
    already taken) is left out with one stderr line, so that the library's own commands keep working."""
    for entry in sorted(entry_points(group=COMMAND_PLUGINS), key=lambda e: e.name):
        try:
            entry.load()(commands)
        except Exception as exc:  # someone else's code: whatever it raises, the library's commands stay
            first = " ".join(str(exc).split())[:200]
            _fail(
                f"warning: the '{entry.name}' commands of {entry.value} are unavailable: {type(exc).__name__}: {first}"
            )


def _guard_standard_streams() -> bool:
    """Point closed descriptors 0-2 at the null device (so no file opened later takes their number),
    give Python a stderr that swallows what it is told when there is none (never stdout instead),
    and say whether stdout was closed."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    stdout_closed = sys.stdout is None or 1 in closed
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the process's stdout: closed at exit)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return stdout_closed


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure becomes one stderr line and a non-zero status (see EXIT_*)."""
    stdout_closed = _guard_standard_streams()
    args = build_parser().parse_args(argv)
    # a command whose result is what it prints says so (``prints_result``, its name): with stdout closed it
    # has nothing to do
    command = getattr(args, "prints_result", None)
    if stdout_closed and command:
        _fail(f"error: standard output is closed, and the result of '{command}' is what it prints")
        return EXIT_ERROR
    try:
        status = _run_handler(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say, to anyone
        _detach_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        _fail("interrupted")
        return EXIT_INTERRUPTED
    except SpecboundError as exc:
        _fail(f"error: {exc}")
        return EXIT_ERROR
    except OSError as exc:  # a write to stdout or a file outside the package's own handling (a full disk)
        _fail(f"error: {describe_os_error(exc, name_file=True)}")
        return EXIT_ERROR
    except MemoryError:
        _fail("error: out of memory (try a smaller model or --grid-m)")
        return EXIT_ERROR
    except Exception as exc:  # a bug: one line, the traceback only on request
        if args.debug:
            traceback.print_exc()
        first = " ".join(str(exc).split())[:200]
        _fail(
            f"internal error: {type(exc).__name__}{': ' + first if first else ''}; run with --debug for the traceback"
        )
        return EXIT_INTERNAL


def _run_handler(args: argparse.Namespace) -> int:
    """The command, its warnings printed as one line each (the caller's warning filters restored after)."""
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        return int(args.handler(args))


def _warning_line(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one stderr line, ``specbound: warning: ...``, never a source location."""
    print(f"specbound: warning: {echoed(str(message), 4 * LIMITS.max_echoed_chars)}", file=sys.stderr)


def _fail(message: str) -> None:
    """One line on stderr; stdout, if it cannot take its last bytes, is detached so exit stays quiet."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        _detach_stdout()
    line = echoed(message, 4 * LIMITS.max_echoed_chars)
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr may be gone: no one to tell
        sys.stderr.write(f"specbound: {line}\n")
        sys.stderr.flush()


def _detach_stdout() -> None:
    """Point stdout at devnull, as the Python docs advise after EPIPE, so the flush at exit is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (captured in a test)
        pass
