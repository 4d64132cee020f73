"""Command line: ``specbound analyze | models | export | grid | trajectory | atlas`` (and the plugins' commands).

One boundary (:func:`~specbound.cli.program.main`): whatever goes wrong leaves with a non-zero status and one
plain line on stderr, a traceback only with ``--debug``. Output is built whole before it is written:
``--json`` prints one strict JSON object or nothing, files are written atomically. Progress goes to stderr
only when it is a terminal, so output can be piped.

Standard streams that are not there (SPEC §8):

* a closed pipe (``| head``) ends the program quietly, status 1;
* a full device (``> /dev/full``) is one error line, status 1;
* a closed stdout (``>&-``): a command whose result is its output (``analyze``, ``models``, ``atlas
  show``, ``lab show``) stops at once with one error line, status 1; a command whose result is files
  runs and writes them;
* a closed stderr (``2>&-``): the status alone tells of an error; the error text never goes to stdout.

A closed descriptor 0, 1 or 2 is pointed at the null device first, so no file the program opens
later takes its number.

Everything echoed from input (usage errors, model names, report lines) is escaped and shortened
(:func:`specbound.core.text.echoed`), on stdout as on stderr.

One module per command group, each adding its parsers and holding its handlers; beneath them the options
they share and the terminal they write to:

* :mod:`.program`: the parser, :func:`main` (the boundary above) and the plugins' commands;
* :mod:`.analyze` (``analyze``, ``models``), :mod:`.export`, :mod:`.grid`, :mod:`.trajectory`,
  :mod:`.atlas` (``atlas export | show``);
* :mod:`.arguments`: the checked argument types and the option groups several commands share;
* :mod:`.terminal`: the progress bar and the one-write output.

Example:
    >>> from specbound.cli import build_parser
    >>> build_parser().parse_args(["analyze", "--p", "1.5"]).p
    1.5
"""

from .program import COMMAND_PLUGINS, EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, build_parser, main

__all__ = [
    "COMMAND_PLUGINS",
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]
