"""Every page on a mixture of experts (SPEC §12): a tiny Qwen2-MoE with four routed experts and a
shared one. The pages take the experts from the model: the model card counts L (2H + 3E + 3)
matrices and names the router adaptation, the Spectra page has an expert picker where it shows one
MLP, and the Bound explorer's sliders are the kinds the model has."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import open_directory, page_text, run_clean
from tiny_models import save_tiny


@pytest.fixture(scope="module")
def moe_dir(tmp_path_factory) -> Path:
    return save_tiny(
        tmp_path_factory.mktemp("moe") / "tiny-qwen-moe", "qwen2_moe", head="Qwen2MoeForCausalLM",
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
        shared_expert_intermediate_size=40,
    )  # fmt: skip


def test_the_model_card_counts_the_experts_and_names_the_router(landing_app, moe_dir) -> None:
    at = landing_app
    open_directory(at, moe_dir)
    text = page_text(at)
    assert "46 proxy matrices" in text  # L (2H + 3E + 3) = 2 (8 + 12 + 3)
    assert "**router held fixed**" in text
    assert "4 experts" in text and "top-2" in text and "shared expert" in text


@pytest.mark.parametrize("page", ["spectra", "why", "theory", "compare", "bounds"])
def test_every_page_works_on_a_mixture_of_experts(landing_app, moe_dir, page: str) -> None:
    at = landing_app
    open_directory(at, moe_dir)
    at.switch_page(f"pages/{page}.py")
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    if page == "spectra":
        assert at.selectbox(key="spectra_expert").options == [*(f"expert {e}" for e in range(4)), "shared expert"]
    if page == "compare":
        at.button(key="baseline_twin").click()
        run_clean(at)
        assert not at.error and not at.warning, [w.value for w in at.warning]


def test_every_report_opens_with_the_model_card_and_its_adaptations(moe_dir) -> None:
    """A report read away from the dashboard names the family, the shape and every adaptation of the proxy
    with its plain explanation (a Mixtral-like report used to name none of causal, rotary, grouped, gated,
    router)."""
    from dashboard.widgets.export import model_card_section
    from dashboard.wording.text import model_card_caption
    from specbound.io.loading import load_profile
    from specbound.present.figures.html_report import html_report

    shape = load_profile(str(moe_dir)).shape
    card = model_card_section(shape, 12)
    assert card.heading == "Model card" and model_card_caption(shape, 12) in card.note
    (table,) = card.tables
    assert list(table["adaptation"]) == [a.value for a in shape.adaptations]
    report = html_report("Spectra", [card], model="tiny-qwen-moe", p="p*")
    for name in ("causal", "rotary", "grouped-query attention", "gated MLP", "router held fixed"):
        assert name in report, name
    assert all(a.explanation.split(":")[0] in report for a in shape.adaptations)
    from specbound.core.architecture import ModelShape

    plain_card = model_card_section(ModelShape(2, 32, 4, 48), 7)
    assert not plain_card.tables and "BERT-family encoder" in plain_card.note
