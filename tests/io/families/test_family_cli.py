"""``specbound analyze DIR`` on other families: the JSON carries SPEC §11's fields (family, key/value
heads, MLP and residual layout, activation, adaptations, the M_gate kind) with the values of the
model, and the text header names every adaptation.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cli_runner import cli, strict_json
from family_models import FAMILIES, Built

from specbound.io.checkpoints import open_checkpoint

#: name -> (family, H, H_kv, d, mlp, residual, activation, L_φ, adaptations)
EXPECTED = {
    "llama": (
        "llama",
        6,
        2,
        8,
        "gated",
        "sequential",
        "silu",
        1.0998,
        ["causal", "rotary", "grouped-query attention", "gated MLP"],
    ),
    "gpt_neox": (
        "gpt_neox",
        4,
        4,
        8,
        "plain",
        "parallel",
        "gelu",
        1.13,
        ["causal", "partial rotary", "parallel residual"],
    ),
    "opt": ("opt", 4, 4, 8, "plain", "sequential", "relu", 1.0, ["causal"]),
    "bert": ("bert", 4, 4, 8, "plain", "sequential", "gelu", 1.13, []),
}


@pytest.mark.parametrize("name", EXPECTED)
def test_analyze_json_has_the_family_fields(tiny: Callable[[str], Built], name: str) -> None:
    family, heads, kv_heads, head_dim, mlp, residual, activation, l_phi, adaptations = EXPECTED[name]
    result = cli("analyze", str(tiny(name).dirs["safetensors"]), "--json")
    assert result.returncode == 0, result.stderr
    report = strict_json(result.stdout)
    assert report["family"] == family
    assert (report["num_heads"], report["num_kv_heads"], report["head_dim"]) == (heads, kv_heads, head_dim)
    assert (report["mlp"], report["residual"], report["activation"]) == (mlp, residual, activation)
    assert report["adaptations"] == adaptations
    assert report["l_phi"] == l_phi
    mlp_kinds = ["M_gate", "M_in", "M_out"] if mlp == "gated" else ["M_in", "M_out"]
    per_layer = ["QK"] * heads + ["V"] * heads + mlp_kinds
    assert [m["kind"] for m in report["matrices"]] == per_layer * report["num_layers"]
    assert [m["head"] for m in report["matrices"][: 2 * heads]] == [*range(heads), *range(heads)]
    assert all(m["rank"] == head_dim for m in report["matrices"] if m["kind"] in ("QK", "V"))
    assert report["proxies"]["ours"] > 0 and report["proxies"]["edelman"] > 0


def test_gated_model_lists_m_gate_with_its_own_numbers(tiny: Callable[[str], Built]) -> None:
    report = strict_json(cli("analyze", str(tiny("llama").dirs["safetensors"]), "--json").stdout)
    gates = [m for m in report["matrices"] if m["kind"] == "M_gate"]
    ups = [m for m in report["matrices"] if m["kind"] == "M_in"]
    assert [m["layer"] for m in gates] == [0, 1] and all(m["head"] is None for m in gates)
    assert all(
        g["spectral_norm"] > 0 and g["spectral_norm"] != u["spectral_norm"] for g, u in zip(gates, ups, strict=True)
    )
    assert all(g["gamma"] is not None and g["gamma"] > 0 for g in gates)


@pytest.mark.parametrize("name", ["llama", "gpt_neox"])
def test_analyze_header_names_the_adaptations(tiny: Callable[[str], Built], name: str) -> None:
    result = cli("analyze", str(tiny(name).dirs["safetensors"]))
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[:2]
    family, *_, adaptations = EXPECTED[name]
    assert header[1] == f"adapted proxy ({family}): " + ", ".join(adaptations)


def test_bert_family_header_has_no_adaptation_line(tiny: Callable[[str], Built]) -> None:
    result = cli("analyze", str(tiny("roberta").dirs["safetensors"]))
    assert result.returncode == 0, result.stderr
    assert "adapted proxy" not in result.stdout


@pytest.mark.parametrize("name", [n for n in FAMILIES if n not in EXPECTED and FAMILIES[n].causal])
def test_analyze_json_works_for_every_decoder_family(tiny: Callable[[str], Built], name: str) -> None:
    """Every other decoder of family_models: the JSON names its family, heads and adaptations as read."""
    directory = tiny(name).dirs["safetensors"]
    result = cli("analyze", str(directory), "--json")
    assert result.returncode == 0, result.stderr
    report, shape = strict_json(result.stdout), open_checkpoint(directory).shape
    assert report["family"] == shape.family == FAMILIES[name].model_type
    assert (report["num_heads"], report["num_kv_heads"], report["head_dim"]) == (
        shape.num_heads,
        shape.num_kv_heads,
        shape.head_dim,
    )
    assert report["adaptations"] == [a.value for a in shape.adaptations]
    assert len(report["matrices"]) == shape.num_matrices
    assert report["proxies"]["ours"] > 0 and report["proxies"]["edelman"] > 0


@pytest.mark.parametrize("name", ["gemma2", "bloom", "olmo"])
def test_analyze_header_names_the_new_adaptations(tiny: Callable[[str], Built], name: str) -> None:
    """SPEC §12's adaptations (softcapping, sliding window, ALiBi, clipped QKV) in the text header."""
    directory = tiny(name).dirs["safetensors"]
    result = cli("analyze", str(directory))
    assert result.returncode == 0, result.stderr
    shape = open_checkpoint(directory).shape
    expected = f"adapted proxy ({shape.family}): " + ", ".join(a.value for a in shape.adaptations)
    assert result.stdout.splitlines()[1] == expected
