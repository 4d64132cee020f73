"""The lab stands beside the library: it imports only specbound's public surface, and the library never
imports it.

specbound's public surface is the package itself and the ``__all__`` of its layers (``specbound.core``,
``specbound.io``, ``specbound.studies``, ``specbound.present``, ``specbound.present.figures``). The lab
may import a name from one of these only if that ``__all__`` lists it: a module path below a layer
(``specbound.io.files``) is private to the library, whatever the name. Every import counts, at the top of
a module and inside a function alike.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
from pathlib import Path

import pytest

import specbound
import specbound_lab

LAB = Path(specbound_lab.__file__).resolve().parent
LIBRARY = Path(specbound.__file__).resolve().parent
#: The modules whose ``__all__`` is the public surface, the package itself first.
PUBLIC = (
    "specbound",
    "specbound.core",
    "specbound.io",
    "specbound.studies",
    "specbound.present",
    "specbound.present.figures",
)


def _examples(tree: ast.Module) -> list[tuple[ast.Module, int]]:
    """The code of every docstring example in a module (its ``>>>`` and ``...`` lines), parsed, with the
    line of the definition that holds it: examples run (``tests/test_docstring_examples.py``), so their
    imports count too."""
    parsed = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=True) or ""
            code = [line.strip()[4:] for line in docstring.splitlines() if line.strip().startswith((">>> ", "... "))]
            if code:
                with contextlib.suppress(SyntaxError):
                    parsed.append((ast.parse("\n".join(code)), getattr(node, "lineno", 1)))
    return parsed


def _library_imports(path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """(module, names, line) of each import of a ``specbound`` module in one source file, its docstring
    examples included; names is empty for ``import specbound.x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for code, example_line in [(tree, 0), *_examples(tree)]:
        for node in ast.walk(code):
            line = example_line or getattr(node, "lineno", 0)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "specbound" or node.module.startswith("specbound."):
                    found.append((node.module, tuple(alias.name for alias in node.names), line))
            elif isinstance(node, ast.Import):
                found += [(a.name, (), line) for a in node.names if a.name.split(".")[0] == "specbound"]
    return found


def private_imports(package: Path) -> list[str]:
    """Every import in ``package`` that reaches past specbound's public surface, as 'file:line what'."""
    surface = {module: set(importlib.import_module(module).__all__) for module in PUBLIC}
    found = []
    for path in sorted(package.rglob("*.py")):
        for module, names, line in _library_imports(path):
            where = f"{path.relative_to(package.parent)}:{line}"
            if module not in surface:
                found.append(f"{where} imports from the private module {module}")
                continue
            found += [
                f"{where} imports {module}.{name}, not in its __all__" for name in names if name not in surface[module]
            ]
    return found


def test_the_lab_imports_only_the_public_surface() -> None:
    assert private_imports(LAB) == []
    assert any(_library_imports(path) for path in LAB.rglob("*.py"))  # it does use the library


def test_the_check_names_a_private_import(tmp_path: Path) -> None:
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "good.py").write_text("from specbound.io import load_profile\nfrom specbound import analyze\n")
    (package / "bad.py").write_text(
        "def f():\n    from specbound.io.files import atomic_write\n    from specbound.core import limits\n"
        "    import specbound.core.bounds\n"
        'def g():\n    """An example.\n\n    >>> from specbound.io.models import resolve\n    """\n'
    )
    assert private_imports(package) == [
        "plugin/bad.py:2 imports from the private module specbound.io.files",
        "plugin/bad.py:3 imports specbound.core.limits, not in its __all__",
        "plugin/bad.py:4 imports from the private module specbound.core.bounds",
        "plugin/bad.py:5 imports from the private module specbound.io.models",  # in a docstring example
    ]


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_exists(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in imported.__all__ if not hasattr(imported, name)]
    assert missing == []
    assert len(set(imported.__all__)) == len(imported.__all__)


def test_the_library_never_imports_the_lab() -> None:
    importing = []
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            )  # fmt: skip
            importing += [f"{path.relative_to(LIBRARY.parent)}" for m in modules if m.split(".")[0] == "specbound_lab"]
    assert importing == []


def test_the_shipped_references_live_with_the_lab_not_the_library() -> None:
    from specbound_lab.reference import SHIPPED

    assert SHIPPED and all((shipped.directory / "runs.csv").is_file() for shipped in SHIPPED)
    assert not any(LIBRARY.rglob("runs.csv")) and not any(LIBRARY.rglob("reference*/runs"))
