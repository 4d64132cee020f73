"""Count the functions longer than a limit in the shipped code, the number the house review tracks.

The rule, so that two counts taken months apart compare:

* the code counted is every ``.py`` file of the library (``specbound/``), the lab (``lab/specbound_lab/``),
  the dashboard (``dashboard/``, ``pages/``, ``app.py``); tests, benchmarks, tools and notebooks are not;
* a function is every ``def`` and ``async def``, methods and nested functions included (a long nested
  function makes its outer function long too, and both count);
* its length is the lines from its ``def`` to its last line, both included (``end_lineno - lineno + 1`` of
  Python's own parser), less its docstring's lines: the house asks a docstring to carry the formula, the
  reason and an example, and that prose should not push a function over the limit; comments and blank
  lines inside count, decorators above do not (``--with-docstrings`` counts the docstring too);
* "long" is strictly more than ``--limit`` lines (default 50).

Usage, from the repository root::

    python tools/long_functions.py            # the count, then each long function, longest first
    python tools/long_functions.py --limit 80 --quiet --with-docstrings

Example output::

    26 functions over 50 lines
      87  specbound/io/loading.py:412  load_profile
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: The shipped code, relative to the repository root: folders searched recursively, and single files.
COUNTED = ("specbound", "lab/specbound_lab", "dashboard", "pages", "app.py")
LIMIT = 50


@dataclass(frozen=True)
class Function:
    """One function of the counted code: where it is, its name and its length in lines."""

    path: str
    line: int
    name: str
    lines: int


def python_files(root: Path) -> Iterator[Path]:
    """Every ``.py`` file of :data:`COUNTED` under ``root``, in a stable order."""
    for entry in COUNTED:
        path = root / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.is_file() else []


def docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of a function's docstring (its first statement, when that is a string), else 0."""
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def functions(path: Path, root: Path, *, with_docstrings: bool = False) -> Iterator[Function]:
    """Every ``def`` of one file (nested ones too) with its length: ``end_lineno - lineno + 1``, less the
    docstring's lines unless ``with_docstrings``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            length -= 0 if with_docstrings else docstring_lines(node)
            yield Function(path.relative_to(root).as_posix(), node.lineno, node.name, length)


def long_functions(root: Path, limit: int = LIMIT, *, with_docstrings: bool = False) -> list[Function]:
    """The functions over ``limit`` lines, longest first (then by place, so the list is stable)."""
    found = [
        f
        for path in python_files(root)
        for f in functions(path, root, with_docstrings=with_docstrings)
        if f.lines > limit
    ]
    return sorted(found, key=lambda f: (-f.lines, f.path, f.line))


def main(argv: list[str] | None = None) -> int:
    """Print the count and, unless ``--quiet``, each long function; the status is 0 either way."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--limit", type=int, default=LIMIT, help=f"longest allowed, in lines (default {LIMIT})")
    parser.add_argument("--with-docstrings", action="store_true", help="count docstrings' lines too")
    parser.add_argument("--quiet", action="store_true", help="print the count only")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="repository root")
    args = parser.parse_args(argv)
    found = long_functions(args.root, args.limit, with_docstrings=args.with_docstrings)
    counted = ", docstrings counted" if args.with_docstrings else ""
    lines = [f"{len(found)} functions over {args.limit} lines{counted}"]
    lines += [] if args.quiet else [f"  {f.lines:>3}  {f.path}:{f.line}  {f.name}" for f in found]
    try:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # read by `| head`: the reader has what it wanted; the flush at exit stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
