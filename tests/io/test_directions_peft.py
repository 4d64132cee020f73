"""Intruder dimensions (SPEC §14b) against peft's own detection, ``peft.tuners.lora.intruders``.

peft finds intruders inside ``reduce_intruder_dimension``: for every LoRA layer it takes the thin SVD
of the base layer's weight W⁰ and of W⁰ + ΔW *as the module stores them* (``nn.Linear``: (out, in);
GPT-2's ``Conv1D``: (in, out)), and counts the top-k left singular vectors of the merged weight whose
largest |cosine| with any left singular vector of W⁰ is below ε; it logs ``NAME: Intruders: n`` or
``NAME: No intruders``. The tests read those lines.

* Feed-forward matrices are peft's own LoRA layers: the adapter written by peft is loaded by peft
  (float64) and peft's detection runs on it.
* Per-head QK_h and V_h are no module of the model: each is handed to peft as a linear layer whose
  weight is the dense product of the base and whose LoRA update is the product's change (B = ΔW,
  A = I, scale 1), so peft's detection runs on the same merged matrix. peft's U⁰ includes a basis of
  W⁰'s null space, which a solver chooses freely, so the models here have full-rank heads (d = N:
  one head in BERT and GPT-2, ``head_dim`` = N under Llama's grouped-query attention), where the two
  definitions coincide (:mod:`specbound.core.directions`).

Adapters: Llama with grouped-query attention on all seven projections, GPT-2's fused ``c_attn`` and
``c_fc`` (``fan_in_fan_out``), BERT's query, value and both feed-forward layers, the Llama adapter
again with rsLoRA; and a full fine-tune of BERT (30 Adam steps), every matrix handed to peft.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import save_model, transformers_model

import specbound

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
intruders_module = pytest.importorskip("peft.tuners.lora.intruders")

#: peft's defaults, and a smaller k with a stricter ε, so the counts are checked at two settings.
SETTINGS = [(10, 0.5), (4, 0.3)]
#: Per-head overlaps against a dense float64 SVD of each product.
TOL = 1e-10

_LLAMA = dict(
    vocab_size=40,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,  # d = N: every head's product has full rank
    intermediate_size=24,
    max_position_embeddings=32,
)
_LLAMA_LORA = dict(target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "llama-gqa": ("LlamaConfig", "LlamaForCausalLM", _LLAMA, dict(r=4, lora_alpha=8, **_LLAMA_LORA)),
    "llama-rslora": (
        "LlamaConfig",
        "LlamaForCausalLM",
        _LLAMA,
        dict(r=4, lora_alpha=2, use_rslora=True, rank_pattern={"layers.1.mlp.down_proj": 6}, **_LLAMA_LORA),
    ),
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(vocab_size=40, n_embd=16, n_layer=2, n_head=1, n_inner=24, n_positions=16),
        dict(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True),
    ),
    "bert": (
        "BertConfig",
        "BertModel",
        dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=1, intermediate_size=24),
        dict(
            r=4,
            lora_alpha=8,
            target_modules=r".*layer\.\d+\.(attention\.self\.(query|value)|intermediate\.dense|output\.dense)",
        ),
    ),
}
#: Which proxy matrix each family's feed-forward LoRA layers are, by the end of the module's name.
MLP_MODULES = {
    "llama": {"mlp.gate_proj": "M_gate", "mlp.up_proj": "M_in", "mlp.down_proj": "M_out"},
    "gpt2": {"mlp.c_fc": "M_in", "mlp.c_proj": "M_out"},
    "bert": {"intermediate.dense": "M_in", "output.dense": "M_out"},
}
_LOG = re.compile(r"^(?P<name>.+): (?:No intruders|Intruders: (?P<count>\d+))$")


def _model(name: str) -> Any:
    config_class, model_class, fields, _ = CASES[name]
    return transformers_model(config_class, model_class, fields)


def peft_detection(peft_model: Any, k: int, eps: float) -> dict[str, int]:
    """The intruder count peft's own detection logs for every LoRA layer of ``peft_model``."""
    lines: list[str] = []
    intruders_module.reduce_intruder_dimension(peft_model, top_k=k, threshold_epsilon=eps, logging_sink=lines.append)
    counts = {}
    for line in lines:
        found = _LOG.match(line)
        if found:
            counts[found["name"]] = int(found["count"] or 0)
    return counts


def peft_on_matrix(base: np.ndarray, tuned: np.ndarray, k: int, eps: float) -> int:
    """peft's detection on one matrix: a linear layer holding W⁰ as its weight and W - W⁰ as its LoRA
    update (B = W - W⁰, A = I, scale α / r = 1), so that peft merges exactly W."""
    out, inp = base.shape
    holder = torch.nn.Module()
    holder.w = torch.nn.Linear(inp, out, bias=False, dtype=torch.float64)
    holder.w.weight.data = torch.from_numpy(base.copy())
    wrapped = peft.get_peft_model(holder, peft.LoraConfig(r=inp, lora_alpha=inp, target_modules=["w"]))
    layer = wrapped.base_model.model.w
    layer.lora_A["default"].weight.data = torch.eye(inp, dtype=torch.float64)
    layer.lora_B["default"].weight.data = torch.from_numpy(tuned - base)
    (count,) = peft_detection(wrapped, k, eps).values()
    return count


def _head_products(model: Any, family: str, layer: int) -> dict[tuple[str, int], np.ndarray]:
    """QK_h and V_h of one layer as dense N x N products (row-vector form, SPEC §2), from the model's
    own modules in float64."""
    if family == "llama":
        attention = model.model.layers[layer].self_attn
        wq, wk, wv, wo = (getattr(attention, f"{p}_proj").weight.detach().numpy() for p in "qkvo")
        heads, kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
        d = model.config.head_dim
    elif family == "gpt2":
        block = model.transformer.h[layer].attn
        fused = block.c_attn.weight.detach().numpy()  # (N, 3N), Conv1D's (in, out)
        n = fused.shape[0]
        wq, wk, wv = fused[:, :n].T, fused[:, n : 2 * n].T, fused[:, 2 * n :].T
        wo = block.c_proj.weight.detach().numpy().T
        heads = kv_heads = model.config.n_head
        d = n // heads
    else:
        block = model.encoder.layer[layer].attention
        wq, wk, wv = (getattr(block.self, p).weight.detach().numpy() for p in ("query", "key", "value"))
        wo = block.output.dense.weight.detach().numpy()
        heads = kv_heads = model.config.num_attention_heads
        d = wq.shape[0] // heads
    products = {}
    for h in range(heads):
        g = h // (heads // kv_heads)
        s, t = slice(h * d, (h + 1) * d), slice(g * d, (g + 1) * d)
        products[("QK", h)] = wq[s].T @ wk[t]
        products[("V", h)] = wv[t].T @ wo[:, s].T
    return products


def _load64(directory: Path, name: str) -> Any:
    model_class = CASES[name][1] if name in CASES else "BertForSequenceClassification"
    return getattr(transformers, model_class).from_pretrained(directory).to(torch.float64)


@pytest.fixture(scope="module")
def adapters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """name -> (adapter directory written by peft, its base directory)."""
    root = tmp_path_factory.mktemp("intruders")
    made = {}
    for name, (_, _, _, lora) in CASES.items():
        base_dir, adapter_dir = root / f"{name}-base", root / f"{name}-adapter"
        save_model(_model(name), base_dir)
        torch.manual_seed(1)
        wrapped = peft.get_peft_model(_model(name), peft.LoraConfig(init_lora_weights=False, **lora))
        wrapped.save_pretrained(adapter_dir)
        config = json.loads((adapter_dir / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = str(base_dir)
        (adapter_dir / "adapter_config.json").write_text(json.dumps(config))
        made[name] = (adapter_dir, base_dir)
    return made


def _family(name: str) -> str:
    return name.split("-")[0]


def _ours(frame: Any, layer: int, kind: str, head: int | None = None) -> Any:
    rows = frame[(frame["layer"] == layer) & (frame["kind"] == kind)]
    if head is not None:
        rows = rows[rows["head"] == head]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.parametrize("k, eps", SETTINGS)
@pytest.mark.parametrize("name", CASES)
def test_intruder_counts_equal_peft_detection_on_adapters_it_wrote(
    adapters: dict[str, tuple[Path, Path]], name: str, k: int, eps: float
) -> None:
    adapter, base = adapters[name]
    family = _family(name)
    frame = specbound.analyze(str(adapter), use_cache=False, intruder_k=k, intruder_eps=eps).to_frame()
    # feed-forward matrices: peft's detection on its own LoRA layers of the adapter it wrote
    peft_model = peft.PeftModel.from_pretrained(_load64(base, name), adapter)
    theirs = peft_detection(peft_model, k, eps)
    compared = 0
    for module, count in theirs.items():
        for suffix, kind in MLP_MODULES[family].items():
            if module.endswith(suffix) and not module.endswith("attention.output.dense"):
                layer = int(re.search(r"\.(\d+)\.", module).group(1))  # type: ignore[union-attr]
                assert _ours(frame, layer, kind)["delta_intruders"] == count, (module, kind)
                compared += 1
    assert compared == (2 if family == "gpt2" else 2 * len(MLP_MODULES[family]))  # GPT-2 adapts c_fc only
    # heads: peft's detection on the same merged N x N products
    merged = peft.PeftModel.from_pretrained(_load64(base, name), adapter).merge_and_unload()
    reference = _load64(base, name)
    heads_compared = 0
    for layer in range(2):
        tuned_heads, base_heads = _head_products(merged, family, layer), _head_products(reference, family, layer)
        for (kind, head), product in tuned_heads.items():
            row = _ours(frame, layer, kind, head)
            assert row["delta_intruders"] == peft_on_matrix(base_heads[kind, head], product, k, eps), (
                layer,
                kind,
                head,
            )
            heads_compared += 1
    assert heads_compared == 2 * 2 * reference.config.num_attention_heads
    if (k, eps) == SETTINGS[0]:  # at peft's defaults the counts compared are neither all zero nor all k
        assert frame["delta_intruders"].sum() > 0
        assert (frame["delta_intruders"] < frame["delta_top_k"]).any()


@pytest.fixture(scope="module")
def full_finetune(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A BERT classifier (one head, d = N) and its full fine-tune: 30 Adam steps on random labels."""
    root = tmp_path_factory.mktemp("full")
    config = transformers.BertConfig(**CASES["bert"][2], num_labels=2)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    save_model(model, root / "base")
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-2)
    generator = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, 40, (16, 8), generator=generator)
    labels = torch.randint(0, 2, (16,), generator=generator)
    for _ in range(30):
        optimiser.zero_grad()
        model(input_ids=tokens, labels=labels).loss.backward()
        optimiser.step()
    save_model(model, root / "tuned")
    return root / "tuned", root / "base"


@pytest.mark.parametrize("k, eps", SETTINGS)
def test_intruder_counts_equal_peft_detection_on_a_full_finetune(
    full_finetune: tuple[Path, Path], k: int, eps: float
) -> None:
    tuned_dir, base_dir = full_finetune
    frame = specbound.analyze(str(tuned_dir), base=str(base_dir), use_cache=False, intruder_k=k, intruder_eps=eps)
    frame = frame.to_frame()
    tuned, base = _load64(tuned_dir, "full"), _load64(base_dir, "full")
    for layer in range(2):
        tuned_heads, base_heads = _head_products(tuned.bert, "bert", layer), _head_products(base.bert, "bert", layer)
        for (kind, head), product in tuned_heads.items():
            assert _ours(frame, layer, kind, head)["delta_intruders"] == peft_on_matrix(
                base_heads[kind, head], product, k, eps
            )
        for module, kind in (("intermediate", "M_in"), ("output", "M_out")):
            weight = getattr(tuned.bert.encoder.layer[layer], module).dense.weight.detach().numpy()  # (out, in)
            weight0 = getattr(base.bert.encoder.layer[layer], module).dense.weight.detach().numpy()
            assert _ours(frame, layer, kind)["delta_intruders"] == peft_on_matrix(weight0, weight, k, eps)
    if (k, eps) == SETTINGS[0]:
        assert frame["delta_intruders"].sum() > 0


def test_per_head_overlaps_equal_a_dense_svd_of_each_product(adapters: dict[str, tuple[Path, Path]]) -> None:
    """The factored route (QR cores, never an N x N product) against LAPACK's SVD of each merged head's
    dense product, on the grouped-query Llama adapter: overlaps and cosines to 1e-10."""
    from specbound.core.directions import DirectionSettings, compare_directions, dense_vectors

    adapter, base = adapters["llama-gqa"]
    frame = specbound.analyze(str(adapter), use_cache=False, intruder_k=5).to_frame()
    merged = peft.PeftModel.from_pretrained(_load64(base, "llama-gqa"), adapter).merge_and_unload()
    reference = _load64(base, "llama-gqa")
    for layer in range(2):
        tuned_heads, base_heads = _head_products(merged, "llama", layer), _head_products(reference, "llama", layer)
        for (kind, head), product in tuned_heads.items():
            want = compare_directions(
                dense_vectors(product), dense_vectors(base_heads[kind, head]), DirectionSettings(k=5)
            )
            row = _ours(frame, layer, kind, head)
            assert row["delta_overlap_left"] == pytest.approx(want.overlap_left, abs=TOL)
            assert row["delta_overlap_right"] == pytest.approx(want.overlap_right, abs=TOL)
            assert row["delta_min_cosine"] == pytest.approx(want.min_cosine, abs=TOL)
