"""Compare centred at the baseline (SPEC §14): with the shipped fine-tuning trio, offline, as a link opens it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from app_harness import APP, TIMEOUT_S, page_text, run_clean, unescaped
from streamlit.testing.v1 import AppTest

import specbound
from specbound_lab.finetune import BASE_NAME, FULL_NAME, LORA_NAME


def _compare(model: str, baseline: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": model, "baseline": baseline})
    run_clean(at)
    at.switch_page("pages/compare.py")
    return run_clean(at)


@pytest.mark.parametrize("model", [FULL_NAME, LORA_NAME])
def test_a_fine_tune_against_its_base_shows_what_changed(model, figure_titled) -> None:
    at = _compare(model, BASE_NAME)
    assert not at.error and not at.warning, [w.value for w in at.warning]
    metrics = {m.label: m.value for m in at.metric}
    expected = specbound.analyze(model, base=BASE_NAME, use_cache=False)
    assert metrics[f"Ours centred at {BASE_NAME}"].replace(",", "") == f"{expected.ours_centred:.4g}"
    assert metrics["Matrices changed"] == "12 of 12"
    changes = figure_titled(at, "What changed: ‖W − W⁰‖₂ / ‖W⁰‖₂")
    delta, base = expected.centred.schatten_profile, specbound.analyze(BASE_NAME).profile
    qk = next(t for t in changes["data"] if "ΔQK" in t["hovertemplate"])
    np.testing.assert_allclose(
        np.asarray(qk["z"], dtype=float), base.per_head(delta.spectral_norm / base.spectral_norm, specbound.Kind.QK)
    )
    assert f"centred at {BASE_NAME}: each c(w; p) takes s_p" in page_text(at).lower()
    # beside it, where the fine-tune points (SPEC §14b): the per-head intruder counts
    intruders = figure_titled(at, "Intruders: top 10, |cos| < 0.5")
    qk_count = next(t for t in intruders["data"] if "intruders in QK" in t["hovertemplate"])
    np.testing.assert_array_equal(
        np.asarray(qk_count["z"], dtype=float), base.per_head(expected.directions.intruders, specbound.Kind.QK)
    )
    assert any("What changed: size and direction" in h.value for h in at.subheader)
    assert "Intruder dimensions (Shuttleworth et al. 2025, as peft defines them): of the top k = 10" in page_text(at)


def test_a_twin_or_the_model_itself_has_no_centred_reading() -> None:
    at = _compare(FULL_NAME, f"twin:{FULL_NAME}")
    assert "No centred reading against" in page_text(at) and "without weights to subtract" in page_text(at)
    assert not any("centred" in m.label for m in at.metric)


def test_a_baseline_of_another_shape_says_why_in_one_line() -> None:
    at = _compare(FULL_NAME, "minilm-l6")
    text = page_text(at)
    assert "No centred reading against" in text and "the baseline cannot be the reference of the open model" in text
    assert "there and" in text and "the reference the baseline" not in text


def test_the_bound_explorer_switches_to_the_centred_bound_and_back(figure_titled) -> None:
    """With a matching baseline pinned, the explorer's switch (kept in the link) makes every term the
    centred one: the headline total at p* is ours centred, the drill-down shows the difference's spectrum."""
    from dashboard.wording.text import OPTIMAL_LABEL

    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": LORA_NAME, "baseline": BASE_NAME, "centred": "1"})
    run_clean(at)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert at.toggle(key="centred").value is True
    expected = specbound.analyze(LORA_NAME, use_cache=False)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"{OPTIMAL_LABEL}, centred at {BASE_NAME}"].replace(",", "") == f"{expected.ours_centred:.4g}"
    assert f"centred at {BASE_NAME}" in " ".join(unescaped(c.value) for c in at.caption)
    at.toggle(key="centred").set_value(False)
    run_clean(at)
    assert at.query_params.get("centred") in (None, "0")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[OPTIMAL_LABEL].replace(",", "") == f"{expected.ours:.4g}"


def test_without_a_matching_baseline_the_explorer_has_no_switch() -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": FULL_NAME, "baseline": "minilm-l6", "centred": "1"})
    run_clean(at)
    at.switch_page("pages/bounds.py")
    run_clean(at)
    assert not [t for t in at.toggle if t.key == "centred"]


def test_a_cell_of_what_changed_opens_its_spectrum_beside_the_difference(figure_titled) -> None:
    """The map's drill-down (SPEC §14): a head's cell and an MLP cell locate their matrices, and the
    opened matrix (kept in the link) shows the weights' singular values beside the difference's, whose
    count is the difference's rank: 4 for a feed-forward matrix of the rank-4 adapter."""
    from dashboard.widgets.drilldown import change_cell

    expected = specbound.analyze(LORA_NAME, use_cache=False).centred
    profile = expected.profile
    locate = change_cell(profile)
    assert locate(0, 1, 1) == specbound.MatrixId(1, specbound.Kind.QK, 1)  # panel QK: head 1 of layer 1
    assert locate(1, 0, 0) == specbound.MatrixId(0, specbound.Kind.V, 0)
    assert locate(5, "M_out", 1) == specbound.MatrixId(1, specbound.Kind.M_OUT)  # the MLP panel's cells trace
    index = profile.index(specbound.MatrixId(1, specbound.Kind.M_IN))
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": LORA_NAME, "baseline": BASE_NAME, "matrix": str(index)})
    run_clean(at)
    at.switch_page("pages/compare.py")
    run_clean(at)
    assert not at.error
    spectrum = figure_titled(at, "L1 M_in: the weights' spectrum and the difference's")
    weights, difference = spectrum["data"]
    assert weights["name"] == "W (the weights)" and difference["name"] == "W − W⁰ (the difference)"
    delta = expected.schatten_profile
    assert len(difference["y"]) == int(delta.rank[index]) == 4
    np.testing.assert_allclose(difference["y"], delta.singular_values[index, :4], rtol=1e-12)
    assert len(weights["y"]) == int(profile.rank[index])


@pytest.mark.parametrize(
    ("given", "why"), [("SERVER", "does not open files or directories on its server"), ("twin:", "names no model")]
)
def test_a_refused_baseline_link_says_why_not_no_baseline_yet(monkeypatch, tmp_path, given: str, why: str) -> None:
    """A link whose ``baseline=`` the visitor rules refuse (a directory of the server, a twin of
    nothing) is not silently taken for no baseline: the page says the link's baseline was not used, and why."""
    from dashboard.safety import SERVER_PATHS_ENV

    monkeypatch.delenv(SERVER_PATHS_ENV)  # as a visitor opens the link, server paths off
    given = str(tmp_path) if given == "SERVER" else given  # a directory that exists on the server
    at = _compare(FULL_NAME, given)
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert len(warnings) == 1 and "The link's baseline was not used" in warnings[0] and why in warnings[0]
    assert str(tmp_path) not in page_text(at).replace("\\", "")
    at.button(key="baseline_pin").click()
    at = run_clean(at)
    assert not at.warning  # a baseline of the visitor's own: the link's refusal is not said again


def test_the_directions_switch_leaves_out_the_map_of_intruders_and_nothing_else(monkeypatch) -> None:
    """The Compare page's switch for the comparison of singular vectors (issue 56): on by default, as the
    library's ``analyze(..., directions=...)`` is; off (kept in the link), the map of intruders and its
    sentence are gone, nothing of the singular vectors is computed, and every other metric, figure and
    text of the page is as it was."""
    import inspect

    from dashboard.state import baseline, data
    from dashboard.views.compare import DIRECTIONS_OFF

    def charts(at: AppTest) -> dict[str, str]:
        specs = {}
        for chart in at.get("plotly_chart"):
            title = json.loads(chart.proto.spec)["layout"].get("title", {}).get("text", "")
            specs[title] = chart.proto.spec
        return specs

    at = _compare(LORA_NAME, BASE_NAME)
    assert at.toggle(key=baseline.DIRECTIONS_KEY).value is True
    assert inspect.signature(specbound.analyze).parameters["directions"].default is True
    on_charts, on_metrics = charts(at), [(m.label, m.value) for m in at.metric]
    on_text = page_text(at)
    intruders = [title for title in on_charts if "Intruders: top 10" in title]
    assert len(intruders) == 1 and "Intruder dimensions (Shuttleworth" in on_text

    at.toggle(key=baseline.DIRECTIONS_KEY).set_value(False)
    run_clean(at)
    assert at.query_params.get(baseline.DIRECTIONS_KEY) == "0"
    off_charts, off_text = charts(at), page_text(at)
    assert [(m.label, m.value) for m in at.metric] == on_metrics
    assert set(off_charts) == set(on_charts) - set(intruders)
    assert all(off_charts[title] == on_charts[title] for title in off_charts)  # the same figures, byte for byte
    off_caption = f"No map of directions: {DIRECTIONS_OFF}."
    assert "Intruder dimensions (Shuttleworth" not in off_text and off_caption in off_text
    assert off_text.replace(f"{off_caption}\n", "") == "\n".join(
        line for line in on_text.split("\n") if not line.startswith("Intruder dimensions (Shuttleworth")
    )

    # a link with the switch off, in a session of its own: the singular vectors are never compared
    def forbidden(*_: object) -> None:
        raise AssertionError("the singular vectors were compared with the switch off")

    monkeypatch.setattr(data, "directions_for", forbidden)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update({"model": LORA_NAME, "baseline": BASE_NAME, baseline.DIRECTIONS_KEY: "0"})
    run_clean(at)
    at.switch_page("pages/compare.py")
    run_clean(at)
    assert at.toggle(key=baseline.DIRECTIONS_KEY).value is False and not at.error
    assert set(charts(at)) == set(off_charts)
