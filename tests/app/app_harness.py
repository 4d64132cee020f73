"""What the AppTest modules share besides fixtures: the entry script, the time limit, running cleanly
and reading Plotly specs back as arrays."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest

from dashboard.wording.text import WORD_JOINER

APP = Path(__file__).resolve().parents[2] / "app.py"
#: The first run computes the bundled model's spectra into the test cache (about a second).
TIMEOUT_S = 120


def decode_arrays(value: Any) -> Any:
    """Plotly's JSON keeps numpy arrays as {"dtype", "bdata"(, "shape")}: turn them back into arrays."""
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array
        return {k: decode_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_arrays(v) for v in value]
    return value


def unescaped(markdown: str) -> str:
    """Text escaped by :func:`dashboard.wording.text.plain`, as the page shows it and a person reads it
    (backslash escapes and the invisible word joiners that break bare URLs removed)."""
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")


def run_clean(at: AppTest) -> AppTest:
    """Run and require that nothing raised (exceptions are shown, not raised, by AppTest)."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_directory(at: AppTest, directory: Path) -> None:
    """Open a checkpoint directory from the sidebar, as a visitor types it, each step run clean."""
    at.radio(key="model_source").set_value("Hub id or local directory")
    run_clean(at)
    at.text_input(key="model_custom").input(str(directory))
    run_clean(at)
    at.button(key="open_model").click()
    run_clean(at)


def page_text(at: AppTest) -> str:
    """Every markdown and caption of the page and the sidebar, unescaped, one per line."""
    return "\n".join(unescaped(e.value) for e in [*at.markdown, *at.caption, *at.sidebar.caption])


def forbid_recomputation(monkeypatch) -> None:
    """Make every file access and decomposition of the analysis raise: the slider path may only evaluate.

    A function is replaced under every name it has in the package and the dashboard, not only in the
    module that defines it: ``specbound.io.loading`` calls the ``fetch`` it imported, which a patch of
    ``specbound.io.checkpoints.fetch`` alone would never reach.
    """
    import specbound.core.engine
    import specbound.io.cache
    import specbound.io.checkpoints
    import specbound.io.loading
    import specbound.io.models

    def forbidden(*_, **__):
        raise AssertionError("the slider path reached file access or a decomposition")

    for module, name in [
        (specbound.io.loading, "load_profile"),
        (specbound.core.engine, "compute_profile"),
        (specbound.io.checkpoints, "fetch"),
        (specbound.io.checkpoints, "is_cached"),
        (specbound.io.checkpoints, "open_checkpoint"),
        (specbound.io.models, "catalog"),
    ]:
        original = getattr(module, name)
        for holder in [m for key, m in list(sys.modules.items()) if key.split(".")[0] in ("specbound", "dashboard")]:
            for alias, value in list(vars(holder).items()):
                if value is original:
                    monkeypatch.setattr(holder, alias, forbidden)
    for module, name in [
        (specbound.io.cache.ProfileCache, "load"),
        (np.linalg, "svd"),
        (np.linalg, "eigvalsh"),
        (np.linalg, "qr"),
    ]:
        monkeypatch.setattr(module, name, forbidden)


def table_columns(element) -> dict[str, dict[str, Any]]:
    """A drawn table's column settings (header, width, pinned) by shown column, as the page sent them."""
    import json

    return {name: spec for name, spec in json.loads(element.proto.columns).items() if not spec.get("hidden")}


def drawn_width(element, *, selectable: bool = False) -> int:
    """The pixels a drawn table asks for: its columns' widths (and the row-selection column)."""
    from dashboard.widgets.tables import SELECT_COLUMN_PX

    widths = [int(spec["width"]) for spec in table_columns(element).values()]
    return sum(widths) + (SELECT_COLUMN_PX if selectable else 0)


def as_shown(values, kind: str = "number") -> np.ndarray:
    """``values`` as a table sends them to the browser: each written by the one number format (``kind``:
    'number', 'log10', 'p', ...) and read back, so a page's table can be checked against the package's
    numbers exactly, digit for digit of what it shows."""
    from dashboard.wording.numbers import shown_value, styled_writers

    write = styled_writers()[kind]
    return np.array([shown_value(write(v)) for v in np.asarray(values, dtype=float).tolist()])
