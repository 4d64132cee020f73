"""The Spectra page on the bundled model: it renders, and its charts carry the profile's numbers."""

from __future__ import annotations

import numpy as np

from specbound.matrices import Kind
from specbound.spectrum import cumulative_energy


def _matrix_traces(figure: dict) -> dict[str, dict]:
    """Traces that draw a matrix (the legend stand-ins have no points)."""
    return {t["name"]: t for t in figure["data"] if t["name"].startswith("L") and len(t["x"]) and t["x"][0] is not None}


def test_spectra_page_renders_three_charts(app) -> None:
    assert [t.value for t in app.title] == ["Spectra"]
    assert not app.error
    assert len(app.get("plotly_chart")) == 3
    assert any("`minilm-l6`" in m.value for m in app.sidebar.markdown)


def test_profiles_chart_holds_every_nonzero_singular_value(app, figure_titled, minilm) -> None:
    profile = minilm.profile
    figure = figure_titled(app, "Singular-value profiles")
    traces = _matrix_traces(figure)
    assert len(traces) == profile.shape.num_matrices == 156
    for i in (0, 30, 154, 155):  # L0 QK h0, L1 V h6, L5 M_in, L5 M_out
        trace = traces[profile.ids[i].label]
        rank = int(profile.rank[i])
        np.testing.assert_array_equal(trace["x"], np.arange(1, rank + 1))
        np.testing.assert_allclose(trace["y"], profile.singular_values[i, :rank], rtol=1e-15)
    assert figure["layout"]["xaxis"]["type"] == "log" and figure["layout"]["yaxis"]["type"] == "log"
    # QK heads have rank 32 out of N = 384: the zeros are counted, not drawn
    zeros_qk = int((profile.full_dims - profile.rank)[profile.mask(Kind.QK)].sum())
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert f"QK · {zeros_qk:,} zero σ not drawn" in titles and zeros_qk == 72 * (384 - 32)


def test_normalised_profiles_start_at_one(app, rerun, figure_titled, minilm) -> None:
    app.toggle(key="spectra_normalise").set_value(True)
    rerun(app)
    traces = _matrix_traces(figure_titled(app, "σᵢ / σ₁"))
    i = minilm.profile.index(minilm.profile.ids[154])
    sv = minilm.profile.singular_values[i, : minilm.profile.rank[i]]
    np.testing.assert_allclose(traces["L5 M_in"]["y"], sv / sv[0], rtol=1e-15)
    assert all(t["y"][0] == 1.0 for t in traces.values())


def test_choosing_layers_and_kinds(app, rerun, figure_titled, minilm) -> None:
    app.multiselect(key="spectra_layers").set_value([2])
    app.multiselect(key="spectra_kinds").set_value(["M_in", "V"])
    rerun(app)
    traces = _matrix_traces(figure_titled(app, "Singular-value profiles"))
    assert sorted(traces) == sorted(["L2 M_in"] + [f"L2 V h{h}" for h in range(12)])
    energy = _matrix_traces(figure_titled(app, "Cumulative energy"))
    i = minilm.profile.index(minilm.profile.ids[2 * 26 + 24])  # L2 M_in
    assert minilm.profile.ids[i].label == "L2 M_in"
    rank = minilm.profile.rank[i]
    np.testing.assert_allclose(energy["L2 M_in"]["y"],
                               cumulative_energy(minilm.profile.singular_values[i, :rank]), rtol=1e-12)
    assert energy["L2 M_in"]["y"][-1] == 1.0


def test_head_heatmaps_match_the_profile(app, rerun, figure_titled, minilm) -> None:
    profile = minilm.profile
    for kind in (Kind.QK, Kind.V):
        app.radio(key="heatmap_kind").set_value(kind.value)
        rerun(app)
        heatmaps = figure_titled(app, f"{kind.value} heads")["data"]
        mask = profile.mask(kind)
        expected = [profile.rank, profile.stable_rank, profile.spectral_norm]
        assert [h["name"] for h in heatmaps] == ["numerical rank", "stable rank", "spectral norm σ₁"]
        for heatmap, values in zip(heatmaps, expected):
            assert heatmap["z"].shape == (6, 12)
            np.testing.assert_allclose(heatmap["z"], values[mask].reshape(6, 12), rtol=1e-15)


def test_matrix_table_is_the_profile_frame(app, minilm) -> None:
    table = app.dataframe[0].value
    expected = minilm.profile.to_frame()
    assert list(table.columns) == list(expected.columns) and len(table) == 156
    np.testing.assert_allclose(table["stable_rank"], expected["stable_rank"])
    assert {b.label for b in app.get("download_button")} >= {"Download this table (CSV)",
                                                               "Download every singular value (CSV)"}
