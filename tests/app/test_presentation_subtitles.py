"""Presentation mode: the figures' subtitles keep the p and leave the model's name to the page's heading,
so the narrow panels of a projector (the p* map's three) are not crowded by a long name."""

from __future__ import annotations

from app_harness import APP, TIMEOUT_S, run_clean
from streamlit.testing.v1 import AppTest

LONG = "finetune-full"


def _subtitles(plotly_specs, present: bool) -> list[str]:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": LONG, **({"present": "1"} if present else {})})
    run_clean(at)
    at.switch_page("pages/why.py")
    run_clean(at)
    return [f["layout"]["title"].get("subtitle", {}).get("text", "") for f in plotly_specs(at)]


def test_subtitles_name_the_model_except_on_a_projector(plotly_specs) -> None:
    shown = _subtitles(plotly_specs, present=False)
    assert shown and all(LONG in text for text in shown if text)
    projected = _subtitles(plotly_specs, present=True)
    assert len(projected) == len(shown) and not any(LONG in text for text in projected)
    assert any("p*" in text for text in projected)
