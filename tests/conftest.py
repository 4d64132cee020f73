"""Shared test set-up: an isolated profile cache and Hub cache, and tiny real checkpoints.

The environment is set at import time, before any test module imports huggingface_hub (which reads
its cache location once), so no test touches the user's caches.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_SCRATCH = Path(tempfile.mkdtemp(prefix="specbound-tests-"))
os.environ["SPECBOUND_CACHE"] = str(_SCRATCH / "profiles")
os.environ["HF_HOME"] = str(_SCRATCH / "hf")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import sys  # noqa: E402

import pytest  # noqa: E402

#: The test process's own __main__: Streamlit's AppTest runs app.py as __main__ and leaves it there, and
#: a process started with "spawn" (worker processes, Dask's nannies) would run that script again.
MAIN_MODULE = sys.modules["__main__"]


@pytest.fixture(scope="module")
def own_main_module():
    """sys.modules["__main__"] restored to the test process's own, for tests that spawn processes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "__main__", MAIN_MODULE)
        yield


@pytest.fixture
def make_checkpoint(tmp_path: Path):
    """Write a tiny randomly initialised encoder with ``save_pretrained`` and return its directory.

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
        import torch
        import transformers

        torch.manual_seed(seed)
        if family == "distilbert":
            config = transformers.DistilBertConfig(
                vocab_size=50, n_layers=layers, dim=hidden, n_heads=heads, hidden_dim=ffn, max_position_embeddings=16
            )
            model = transformers.DistilBertModel(config)
        elif family == "roberta":
            config = transformers.RobertaConfig(
                vocab_size=50,
                num_hidden_layers=layers,
                hidden_size=hidden,
                num_attention_heads=heads,
                intermediate_size=ffn,
                max_position_embeddings=24,
            )
            model = transformers.RobertaModel(config)
        else:
            config = transformers.BertConfig(
                vocab_size=50,
                num_hidden_layers=layers,
                hidden_size=hidden,
                num_attention_heads=heads,
                intermediate_size=ffn,
                max_position_embeddings=16,
            )
            model = transformers.BertModel(config)
        directory = tmp_path / (name or f"{family}-L{layers}-N{hidden}-H{heads}-{'st' if safe else 'pt'}")
        model.save_pretrained(directory)
        if not safe:
            # transformers 5 writes only safetensors; a PyTorch-format checkpoint is the same config
            # beside the state dict pickled as transformers 4 wrote it.
            (directory / "model.safetensors").unlink()
            torch.save(model.state_dict(), directory / "pytorch_model.bin")
        return directory

    return make


@pytest.fixture(scope="session")
def minilm():
    """The package's analysis of the bundled MiniLM, computed once per test session (every test folder).

    It is the reference the CLI and the dashboard must agree with; the first call fills the test
    session's profile cache, so later opens of the model (by the CLI or the app) are cache hits.
    """
    from specbound.core.bounds import BoundAnalysis
    from specbound.io.loading import load_profile

    return BoundAnalysis.from_profile(load_profile("minilm-l6"))
