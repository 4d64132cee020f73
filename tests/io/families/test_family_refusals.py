"""Architectures specbound does not read are refused, from the library and from the command line, with
one line that says why and names the supported families (SPEC §11): an architecture of no supported
family (XLNet), an encoder-decoder whose two stacks differ in size, a dense family's config that
declares experts (the mixtures of experts of SPEC §12 are read, see ``test_moe.py``), remote code
(``auto_map``) and an activation whose Lipschitz constant is not known.

Each checkpoint is real, written by ``save_pretrained``; the refusals come from config.json alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_runner import assert_one_line_error, cli
from family_models import Built
from tiny_models import save_model

from specbound.core.errors import UnsupportedModelError
from specbound.io.checkpoints import open_checkpoint
from specbound.io.loading import load_profile

#: the model types of SPEC §11's and §12's tables (dense decoders, mixtures of experts, encoder-decoders)
SUPPORTED = (
    "bart",
    "bert",
    "bloom",
    "camembert",
    "distilbert",
    "electra",
    "falcon",
    "gemma",
    "gemma2",
    "gemma3_text",
    "gpt2",
    "gpt_neox",
    "gptj",
    "llama",
    "mbart",
    "mistral",
    "mixtral",
    "mt5",
    "olmo",
    "olmo2",
    "olmoe",
    "opt",
    "phi",
    "phi3",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "roberta",
    "t5",
    "vit",
    "xlm-roberta",
)
SUPPORTED_LINE = "supported families: " + ", ".join(SUPPORTED)


def _save(model: Any, directory: Path) -> Path:
    save_model(model, directory)
    return directory


def _edited(source: Path, directory: Path, **fields: object) -> Path:
    shutil.copytree(source, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, **fields}))
    return directory


@pytest.fixture(scope="module")
def refused(tiny: Callable[[str], Built], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> a checkpoint directory that must be refused."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("refused")
    small: dict[str, Any] = {"vocab_size": 64, "d_model": 32}
    return {
        "xlnet": _save(
            tf.XLNetModel(tf.XLNetConfig(vocab_size=64, d_model=32, n_layer=1, n_head=4, d_inner=64)), root / "xlnet"
        ),
        "bart-two-sizes": _save(
            tf.BartModel(
                tf.BartConfig(
                    **small,
                    encoder_layers=1,
                    decoder_layers=1,
                    encoder_attention_heads=4,
                    decoder_attention_heads=2,
                    encoder_ffn_dim=64,
                    decoder_ffn_dim=64,
                    max_position_embeddings=32,
                )
            ),
            root / "bart",
        ),
        "gpt2-tanh": _save(
            tf.GPT2LMHeadModel(
                tf.GPT2Config(
                    vocab_size=64,
                    n_layer=1,
                    n_embd=32,
                    n_head=4,
                    activation_function="tanh",
                    bos_token_id=0,
                    eos_token_id=0,
                )
            ),
            root / "gpt2-tanh",
        ),
        "remote-code": _edited(
            tiny("llama").dirs["safetensors"],
            root / "remote-code",
            auto_map={"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"},
        ),
        "experts": _edited(tiny("mistral").dirs["safetensors"], root / "experts", num_local_experts=4),
    }


#: name -> words the one line must contain besides the supported families
REFUSALS = {
    "xlnet": ("model type 'xlnet' is not supported",),
    "remote-code": ("remote code", "auto_map"),
    "experts": ("mixture of experts", "num_local_experts"),
}


@pytest.mark.parametrize("name", REFUSALS)
def test_unsupported_architecture_is_refused_naming_the_supported_families(refused: dict[str, Path], name: str) -> None:
    with pytest.raises(UnsupportedModelError) as caught:
        open_checkpoint(refused[name])
    message = str(caught.value)
    assert "\n" not in message
    assert SUPPORTED_LINE in message
    for words in REFUSALS[name]:
        assert words in message
    with pytest.raises(UnsupportedModelError):
        load_profile(str(refused[name]), use_cache=False)


@pytest.mark.parametrize("name", REFUSALS)
def test_cli_refuses_with_one_line(refused: dict[str, Path], name: str) -> None:
    line = assert_one_line_error(cli("analyze", str(refused[name])), SUPPORTED_LINE, *REFUSALS[name])
    assert line.count("supported families") == 1


def test_an_encoder_decoder_whose_stacks_differ_in_heads_is_refused_in_one_line(refused: dict[str, Path]) -> None:
    """Every layer's QK and V are read with one H; the feed-forward widths may differ (test_encoder_decoder)."""
    words = ("encoder 4 and the decoder 2 attention heads", "one number of heads for both stacks")
    with pytest.raises(UnsupportedModelError, match="one number of heads for both stacks"):
        open_checkpoint(refused["bart-two-sizes"])
    assert_one_line_error(cli("analyze", str(refused["bart-two-sizes"])), *words)


def test_unknown_activation_is_refused_by_name(refused: dict[str, Path]) -> None:
    with pytest.raises(UnsupportedModelError, match="activation 'tanh'"):
        open_checkpoint(refused["gpt2-tanh"])
    assert_one_line_error(
        cli("analyze", str(refused["gpt2-tanh"])), "activation 'tanh'", "Lipschitz", "gelu", "relu", "silu"
    )
