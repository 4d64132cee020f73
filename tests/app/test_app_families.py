"""Every page on a decoder: a gated, grouped-query Llama and a parallel-residual GPT-NeoX.

The kinds, sliders, tables and notes come from the model (SPEC §11): M_gate appears where the model
has it, the adaptations are named on the model card and under the numbers, and the slider path of
such a model still runs no SVD and reads no file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import forbid_recomputation, open_directory, page_text, run_clean
from tiny_models import save_tiny

from dashboard.wording.text import TOTAL_LABEL
from dashboard.wording.totals import total_texts
from specbound.core.bounds import BoundAnalysis, snap_to_grid
from specbound.io.loading import load_profile


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("llama") / "tiny-llama"
    return save_tiny(directory, "llama", head="LlamaForCausalLM", num_key_value_heads=2)


@pytest.fixture(scope="module")
def neox_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("neox") / "tiny-neox"
    return save_tiny(
        directory, "gpt_neox", head="GPTNeoXForCausalLM", ffn=64, vocab_size=40, max_position_embeddings=32,
        use_parallel_residual=True, seed=1,
    )  # fmt: skip


def test_the_model_card_names_the_family_and_its_adaptations(landing_app, llama_dir) -> None:
    at = landing_app
    open_directory(at, llama_dir)
    text = page_text(at)
    assert "family Llama" in text
    assert "4 heads of d = 8 sharing 2 key/value heads" in text and "gated MLP" in text
    assert "22 proxy matrices" in text  # L (2H + 3) = 2 · 11
    for adaptation in ("causal", "rotary", "grouped-query attention", "gated MLP"):
        assert f"**{adaptation}**" in text
    assert "Adapted proxy (llama): causal, rotary, grouped-query attention, gated MLP." in text
    assert "activation silu" in text


def test_the_bound_explorer_has_a_slider_per_kind_the_model_has(landing_app, llama_dir, neox_dir) -> None:
    at = landing_app
    open_directory(at, llama_dir)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    at.toggle(key="p_optimal").set_value(False)
    at.toggle(key="p_kinds").set_value(True)
    run_clean(at)
    modes = {s.key for s in at.selectbox if s.key and s.key.startswith("p_kind_") and s.key.endswith("_mode")}
    assert modes == {f"p_kind_{k}_mode" for k in ("QK", "V", "M_gate", "M_in", "M_out")}
    at.selectbox(key="p_kind_M_gate_mode").select("own p")
    run_clean(at)
    at.slider(key="p_kind_M_gate").set_value(0.5)
    run_clean(at)
    analysis = BoundAnalysis.from_profile(load_profile(str(llama_dir)))
    from specbound.core.architecture import Kind
    from specbound.core.bounds import PAssignment

    terms = analysis.evaluate(PAssignment(default=1.0, by_kind={Kind.M_GATE: 0.5}))
    (total,) = [m.value for m in at.metric if m.label == TOTAL_LABEL]
    assert total.replace(",", "").startswith(f"{terms.total:.6g}"[:5].replace(",", ""))
    open_directory(at, neox_dir)
    modes = {s.key for s in at.selectbox if s.key and s.key.startswith("p_kind_") and s.key.endswith("_mode")}
    assert modes == {f"p_kind_{k}_mode" for k in ("QK", "V", "M_in", "M_out")}  # no gate on a plain MLP


def test_the_slider_path_of_a_gated_grouped_query_model_runs_no_svd(landing_app, llama_dir, monkeypatch) -> None:
    at = landing_app
    open_directory(at, llama_dir)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    at.toggle(key="p_optimal").set_value(False)
    run_clean(at)
    analysis = BoundAnalysis.from_profile(load_profile(str(llama_dir)))  # before the guard: it reads the cache
    forbid_recomputation(monkeypatch)
    for p in (0.25, 1.75):
        at.slider(key="p_global").set_value(p)
        run_clean(at)
        terms = analysis.evaluate(float(snap_to_grid(p, analysis.grid_m)))  # the slider snaps to P_m
        (total,) = [m.value for m in at.metric if m.label == TOTAL_LABEL]
        assert total == total_texts(terms.log_total, analysis.optimal.log_total)[0]


@pytest.mark.parametrize("model", ["llama", "neox"])
@pytest.mark.parametrize("page", ["spectra", "why", "theory", "compare", "bounds"])
def test_every_page_works_on_a_decoder(landing_app, llama_dir, neox_dir, model: str, page: str) -> None:
    at = landing_app
    directory = llama_dir if model == "llama" else neox_dir
    open_directory(at, directory)
    at.switch_page(f"pages/{page}.py")
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    text = page_text(at)
    if page != "compare":  # Compare shows its numbers only once a baseline is pinned
        assert "Adapted proxy (" in text
    if page == "spectra":
        kinds = at.multiselect(key="spectra_kinds").options
        assert ("M_gate" in kinds) == (model == "llama")
    if page == "theory":
        assert ("**This model's MLP is gated**" in text) == (model == "llama")
        assert ("**This model has a parallel residual**" in text) == (model == "neox")
    if page == "why":
        assert ("M_gate" in at.radio(key="rank_kind").options) == (model == "llama")
    if page == "compare":
        at.button(key="baseline_twin").click()
        run_clean(at)
        assert not at.error and not at.warning, [w.value for w in at.warning]
        assert "random twin of" in page_text(at)
