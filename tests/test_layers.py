"""The package's layers import downward only.

``specbound`` is built in layers, each a folder, listed here from the bottom: a module may import its
own layer and the layers below it, never one above. Every import counts, at the top of a module and
inside a function alike (:mod:`import_graph`), and there are no exceptions: a module that needs
something from above is in the wrong layer, or the thing it needs is.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import import_graph

PACKAGE = Path(__file__).resolve().parents[1] / "specbound"

#: Bottom first. The numbers, then where they come from, what is studied with them, how results are
#: shown, the entry points, the command line, the package itself. The lab is not a layer: it is a package
#: beside the library (``tests/lab/test_public_api.py``).
LAYERS = (
    "specbound._version",
    "specbound.core",
    "specbound.io",
    "specbound.studies",
    "specbound.present",
    "specbound.api",
    "specbound.cli",
    "specbound",
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the most specific layer that holds ``module``."""
    best = max((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), key=len)
    return LAYERS.index(best)


def test_every_module_belongs_to_a_layer_and_the_top_level_stays_small() -> None:
    graph = import_graph(PACKAGE)
    assert {LAYERS[layer_of(module)] for module in graph} == set(LAYERS)  # every layer holds modules
    entries = sorted(path.name for path in PACKAGE.iterdir() if path.name != "__pycache__")
    assert len(entries) <= 10, entries
    flat = [name for name in entries if name.endswith(".py") and name not in ("__init__.py", "_version.py")]
    assert flat == [], f"modules outside the layers: {flat}"


def test_no_import_points_upward() -> None:
    graph = import_graph(PACKAGE)
    upward = sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        for imported in imports
        if layer_of(imported) > layer_of(module)
    )
    assert upward == [], "imports from a higher layer:\n" + "\n".join(upward)
