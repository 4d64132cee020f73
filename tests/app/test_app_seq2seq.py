"""Every page on an encoder-decoder (SPEC §12): a tiny T5 of two encoder and three decoder layers. The
pages take the stacks from the model: the model card counts L_enc (2H + 2) + L_dec (4H + 2)
matrices and names the adaptation "in series", the p* map shows the encoder's and the decoder's maps
side by side (the decoder's with QK_x and V_x), and the Bound explorer has a slider per kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from app_harness import open_directory, page_text, run_clean
from tiny_models import save_model, tiny_model


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory) -> Path:
    import torch

    model = tiny_model("t5", head="T5ForConditionalGeneration", d_kv=8, num_decoder_layers=3)
    with torch.no_grad():  # weights at which p* takes several values, so the p* map is drawn
        for parameter in model.parameters():
            if parameter.ndim >= 2:
                parameter.normal_(0.0, 0.05)
    directory = tmp_path_factory.mktemp("seq2seq") / "tiny-t5"
    save_model(model, directory)
    return directory


def test_the_model_card_counts_both_stacks_and_names_the_adaptation(landing_app, t5_dir) -> None:
    at = landing_app
    open_directory(at, t5_dir)
    text = page_text(at)
    assert "74 proxy matrices" in text  # 2 (2·4 + 2) + 3 (4·4 + 2)
    assert "**encoder-decoder in series**" in text and "**relative position bias**" in text
    assert "2 encoder and 3 decoder layers" in text
    # the card and the glossary name the cross-attention's kinds
    assert "74 proxy matrices (QK, V, QK_x and V_x per query head (QK_x and V_x in the decoder layers only)" in text
    from dashboard.wording.vocabulary import glossary_markdown

    assert all(f"**{kind}**" in glossary_markdown() for kind in ("QK\\_x", "V\\_x", "expert"))


@pytest.mark.parametrize("page", ["spectra", "why", "theory", "compare", "bounds"])
def test_every_page_works_on_an_encoder_decoder(landing_app, t5_dir, page: str) -> None:
    at = landing_app
    open_directory(at, t5_dir)
    at.switch_page(f"pages/{page}.py")
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    if page == "bounds":  # a slider per kind the model has, and per layer named by its stack
        at.toggle(key="p_kinds").set_value(True)
        at.toggle(key="p_layers").set_value(True)
        run_clean(at)
        assert not at.error, [e.value for e in at.error]
        keys = {s.key for s in at.slider}
        assert {f"p_kind_{kind}" for kind in ("QK", "V", "QK_x", "V_x", "M_in", "M_out")} <= keys
        assert "p_kind_M_gate" not in keys and {f"p_layer_{layer}" for layer in range(5)} <= keys
        assert "layer 3 (decoder 1)" in [s.label for s in at.selectbox]
    if page == "spectra":  # the encoder's heads beside the decoder's; the cross-attention's in the decoder only
        assert at.radio(key="heatmap_kind").options == ["QK", "V", "QK_x", "V_x"]
        assert _chart_titles(at, "head_heatmaps") == [
            "QK heads of the encoder: layer × head",
            "QK heads of the decoder: layer × head",
        ]
        at.radio(key="heatmap_kind").set_value("QK_x")
        run_clean(at)
        assert not at.error, [e.value for e in at.error]
        assert _chart_titles(at, "head_heatmaps") == ["QK_x heads of the decoder: layer × head"]
    if page == "theory":  # the cross-attention's factor and the MLP's, beside the formulas that use them
        from dashboard.services import theory as live

        labels = {m.label: m.value for m in at.metric}
        assert live.CROSS_FACTOR_LABEL in labels and live.MLP_FACTOR_LABEL in labels
        assert any("read in series" in m.value for m in at.markdown)
    if page == "why":
        assert _chart_titles(at, "p_star_map") == [
            "p* of every matrix of the encoder",
            "p* of every matrix of the decoder",
        ]
        assert "QK, V, QK_x, V_x heads can reach rank d = 8 (the head size), M_in, M_out min(N, d_ff)" in page_text(at)
    if page == "compare":
        at.button(key="baseline_twin").click()
        run_clean(at)
        assert not at.error and not at.warning, [w.value for w in at.warning]


def _chart_titles(at, key: str) -> list[str]:
    """The titles of the charts drawn under ``key`` (``key_0``, ``key_1``, ...), in order."""
    charts = [chart for chart in at.get("plotly_chart") if str(chart.key or "").startswith(f"{key}_")]
    titles = [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in charts]
    return [" ".join(re.sub(r"<span.*", "", t).replace("<br>", " ").split()) for t in titles]  # not the subtitle
