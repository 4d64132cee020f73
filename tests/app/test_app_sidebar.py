"""The shared sidebar: the miniature grid, opening a local checkpoint, and the error paths
(an uncached Hub id with no network, a directory that is not a checkpoint)."""

from __future__ import annotations

from pathlib import Path

from app_harness import APP, TIMEOUT_S, run_clean, unescaped
from streamlit.testing.v1 import AppTest

from dashboard.widgets.sidebar import CACHED_MARK, DOWNLOAD_MARK
from dashboard.wording.text import TOTAL_LABEL


def _open(at, rerun, source: str, **inputs) -> None:
    at.radio(key="model_source").set_value(source)
    rerun(at)
    for key, value in inputs.items():
        at.text_input(key=key).input(value)
    rerun(at)  # the button is enabled once a name is given
    at.button(key="open_model").click()
    rerun(at)


def _shape_caption(at) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("L = "))


def test_miniature_grid_marks_what_needs_a_download(app, rerun) -> None:
    app.radio(key="model_source").set_value("BERT Miniature")
    rerun(app)
    grid = next(m.value for m in app.sidebar.markdown if m.value.startswith("| L \\ H |"))
    rows = [line for line in grid.splitlines() if line.startswith("| **")]
    assert [r.split("|")[1].strip() for r in rows] == [f"**{n}**" for n in (2, 4, 6, 8, 10, 12)]
    # the test Hub cache is empty: all 24 need a download; L4-H256 is the selection
    assert grid.count(DOWNLOAD_MARK) == 24 and CACHED_MARK not in grid
    assert rows[1].split("|")[3].strip() == f"**[{DOWNLOAD_MARK}]**"
    # the repository pattern is code, so markdown keeps its asterisks (issue 10 saw "L-_H-")
    assert any("`google/bert_uncased_L-*_H-*`" in c.value for c in app.sidebar.caption)
    app.selectbox(key="miniature_layers").select(12)
    app.selectbox(key="miniature_width").select(768)
    rerun(app)
    grid = next(m.value for m in app.sidebar.markdown if m.value.startswith("| L \\ H |"))
    assert grid.splitlines()[-1].split("|")[5].strip() == f"**[{DOWNLOAD_MARK}]**"


def test_uncached_miniature_offline_says_so_and_keeps_the_model(app, rerun, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _open(app, rerun, "BERT Miniature")
    (error,) = [unescaped(e.value) for e in app.error]
    assert "L4-H256" in error and "not in the local Hugging Face cache" in error
    assert "Still showing minilm-l6" in error
    assert _shape_caption(app).startswith("L = 6 layers · N = 384")
    assert len(app.get("plotly_chart")) == 11  # Spectra's panels, one chart each


def test_uncached_hub_id_offline_is_an_error_box(free_p_app, rerun, monkeypatch) -> None:
    bounds_app = free_p_app
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = next(m.value for m in bounds_app.metric if m.label == TOTAL_LABEL)
    _open(bounds_app, rerun, "Hub id or local directory", model_custom="someone/never-downloaded-encoder")
    (error,) = [unescaped(e.value) for e in bounds_app.error]
    assert "someone/never-downloaded-encoder" in error and "not in the local Hugging Face cache" in error
    # the explorer still works on the previous model
    assert next(m.value for m in bounds_app.metric if m.label == TOTAL_LABEL) == before
    bounds_app.slider(key="p_global").set_value(0.5)
    rerun(bounds_app)
    assert next(m.value for m in bounds_app.metric if m.label == TOTAL_LABEL) != before
    assert bounds_app.error  # the message stays until a model opens


def test_directory_that_is_not_a_checkpoint(app, rerun, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a model")
    _open(app, rerun, "Hub id or local directory", model_custom=str(tmp_path))
    (error,) = [unescaped(e.value) for e in app.error]
    assert f"Could not open {tmp_path}" in error and "not a Hugging Face checkpoint directory" in error
    assert _shape_caption(app).startswith("L = 6 layers")


def test_opening_a_local_checkpoint_switches_every_page(app, rerun, make_checkpoint, plotly_specs) -> None:
    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    _open(app, rerun, "Hub id or local directory", model_custom=str(directory))
    assert not app.error
    assert _shape_caption(app).startswith("L = 2 layers · N = 32 · 4 heads of d = 8 · d_ff = 48")
    traces = [
        t
        for part in plotly_specs(app)
        if "Singular-value profiles" in part["layout"]["title"]["text"]  # one chart per kind
        for t in part["data"]
        if t["name"].startswith("L") and t["x"][0] is not None
    ]
    medians = {f"L{layer} {kind} median of 4 heads" for layer in range(2) for kind in ("QK", "V")}
    layer_lines = {f"L{layer} {kind}" for layer in range(2) for kind in ("M_in", "M_out")}
    assert medians | layer_lines <= {t["name"] for t in traces}  # heads aggregated per layer by default
    rerun(app)  # a cache hit: nothing recorded during the load (the progress bar) is replayed
    app.switch_page("pages/bounds.py")
    rerun(app)
    assert any(m.label == TOTAL_LABEL for m in app.metric)
    app.toggle(key="p_layers").set_value(True)
    rerun(app)
    assert app.slider(key="p_layer_1").value == 1.0 and "p_layer_2" not in [s.key for s in app.slider]


def test_a_link_to_a_local_checkpoint_shows_it_in_the_picker(make_checkpoint) -> None:
    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params["model"] = str(directory)
    run_clean(at)
    assert at.session_state["model"] == str(directory)
    assert at.radio(key="model_source").value == "Hub id or local directory"
    assert at.text_input(key="model_custom").value == str(directory)
    assert _shape_caption(at).startswith("L = 2 layers · N = 32")


def test_opening_again_reads_a_checkpoint_rewritten_in_place(app, rerun, make_checkpoint) -> None:
    import shutil

    directory = make_checkpoint("bert", layers=2, hidden=32, heads=4, ffn=48, name="trained")
    _open(app, rerun, "Hub id or local directory", model_custom=str(directory))
    assert _shape_caption(app).startswith("L = 2 layers")
    deeper = make_checkpoint("bert", layers=3, hidden=32, heads=4, ffn=48, name="trained-more")
    shutil.rmtree(directory)
    shutil.copytree(deeper, directory)  # the same path, new weights
    app.button(key="open_model").click()
    rerun(app)
    assert _shape_caption(app).startswith("L = 3 layers")
