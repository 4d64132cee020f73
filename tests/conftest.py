"""Shared test set-up: an isolated profile cache and Hub cache, and tiny real checkpoints.

The environment is set at import time, before any test module imports huggingface_hub (which reads
its cache location once), so no test touches the user's caches.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

_SCRATCH = Path(tempfile.mkdtemp(prefix="specbound-tests-"))
os.environ["SPECBOUND_CACHE"] = str(_SCRATCH / "profiles")
os.environ["HF_HOME"] = str(_SCRATCH / "hf")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import sys  # noqa: E402

import pytest  # noqa: E402
from tiny_models import MakeCheckpoint, save_tiny  # noqa: E402

#: The test process's own __main__: Streamlit's AppTest runs app.py as __main__ and leaves it there, and
#: a process started with "spawn" (worker processes, Dask's nannies) would run that script again.
MAIN_MODULE = sys.modules["__main__"]

if TYPE_CHECKING:
    from specbound.core.bounds import BoundAnalysis


@pytest.fixture(scope="module")
def own_main_module() -> Iterator[None]:
    """sys.modules["__main__"] restored to the test process's own, for tests that spawn processes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "__main__", MAIN_MODULE)
        yield


@pytest.fixture
def make_checkpoint(tmp_path: Path) -> MakeCheckpoint:
    """Write a tiny randomly initialised encoder with ``save_pretrained`` and return its directory
    (:func:`tiny_models.save_tiny`, the suite's one factory of tiny checkpoints).

    family: "bert", "roberta" or "distilbert"; safe: model.safetensors (True) or pytorch_model.bin.
    """

    def make(
        family: str = "bert",
        *,
        layers: int = 2,
        hidden: int = 32,
        heads: int = 4,
        ffn: int = 48,
        safe: bool = True,
        seed: int = 0,
        name: str | None = None,
    ) -> Path:
        directory = tmp_path / (name or f"{family}-L{layers}-N{hidden}-H{heads}-{'st' if safe else 'pt'}")
        return save_tiny(directory, family, safe=safe, layers=layers, hidden=hidden, heads=heads, ffn=ffn, seed=seed)

    return make


@pytest.fixture(scope="session")
def minilm() -> BoundAnalysis:
    """The package's analysis of the bundled MiniLM, computed once per test session (every test folder).

    It is the reference the CLI and the dashboard must agree with; the first call fills the test
    session's profile cache, so later opens of the model (by the CLI or the app) are cache hits.
    """
    from specbound.core.bounds import BoundAnalysis
    from specbound.io.loading import load_profile

    return BoundAnalysis.from_profile(load_profile("minilm-l6"))
