"""The Spectra page on the bundled model: it renders, and its charts carry the profile's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from app_harness import as_shown, table_columns

from specbound.core.architecture import Kind
from specbound.core.profile import MatrixId
from specbound.core.spectrum import cumulative_energy
from specbound.present.numbers import format_log


def _parts(at, plotly_specs, words: str) -> list[dict]:
    """The figures of one grid, drawn panel by panel (each its own figure, stacked on a phone)."""
    found = [f for f in plotly_specs(at) if words in _title(f)]
    assert found, f"no figure titled '{words}'"
    return found


def _title(figure: dict) -> str:
    """A figure's title as one line (the page wraps titles to their column)."""
    return figure["layout"]["title"]["text"].replace("<br>", " ")


def _merged(at, plotly_specs, words: str) -> dict:
    """The traces of every panel of one grid, with the first panel's layout."""
    parts = _parts(at, plotly_specs, words)
    return {"data": [t for part in parts for t in part["data"]], "layout": parts[0]["layout"]}


def _matrix_traces(figure: dict) -> dict[str, dict]:
    """Traces that draw a matrix (the legend stand-ins have no points)."""
    return {t["name"]: t for t in figure["data"] if t["name"].startswith("L") and len(t["x"]) and t["x"][0] is not None}


def test_spectra_page_renders_its_panels_as_charts(app) -> None:
    assert [t.value for t in app.title] == ["Spectra"]
    assert not app.error
    keys = [chart.key for chart in app.get("plotly_chart")]
    # one chart per kind for the profiles and the energy, one per quantity for the heads: columns stack on a phone
    assert keys == [f"sv_profiles_{n}" for n in range(4)] + [f"cumulative_energy_{n}" for n in range(4)] + [
        f"head_heatmaps_{n}" for n in range(3)
    ]
    assert any("`minilm-l6`" in m.value for m in app.sidebar.markdown)


def _median_of_heads(profile, layer: int, kind: Kind) -> np.ndarray:
    """The package's own numbers: per index, the median over the heads whose rank reaches it."""
    rows = profile.rows_of(layers=[layer], kinds=[kind])
    width = int(profile.rank[rows].max())
    sv = np.where(profile.above_threshold[rows, :width], profile.singular_values[rows, :width], np.nan)
    return np.nanmedian(sv, axis=0)


def test_profiles_chart_aggregates_heads_and_keeps_every_layer_matrix(app, plotly_specs, minilm) -> None:
    profile = minilm.profile
    figure = _merged(app, plotly_specs, "Singular-value profiles")
    traces = _matrix_traces(figure)
    # per layer: QK and V as a median with a min-max band (3 traces each), M_in and M_out one line each
    assert len(figure["data"]) < 90 and len(traces) == 6 * (2 * 3 + 2)
    for layer in (0, 5):
        for kind in (Kind.QK, Kind.V):
            median = traces[f"L{layer} {kind.value} median of 12 heads"]
            np.testing.assert_allclose(median["y"], _median_of_heads(profile, layer, kind), rtol=1e-12)
    i = profile.index(MatrixId(5, Kind.M_IN))
    rank = int(profile.rank[i])
    np.testing.assert_array_equal(traces["L5 M_in"]["x"], np.arange(1, rank + 1))
    np.testing.assert_allclose(traces["L5 M_in"]["y"], profile.singular_values[i, :rank], rtol=1e-15)
    assert figure["layout"]["xaxis"]["type"] == "log" and figure["layout"]["yaxis"]["type"] == "log"
    # QK heads have rank 32 out of N = 384: the zeros are counted, not drawn
    zeros_qk = int((profile.full_dims - profile.rank)[profile.mask(Kind.QK)].sum())
    titles = [_title(part) for part in _parts(app, plotly_specs, "Singular-value profiles")]
    assert f"Singular-value profiles (σᵢ): QK · {zeros_qk:,} zero σ not drawn" in titles
    assert zeros_qk == 72 * (384 - 32)
    assert figure["layout"]["title"]["subtitle"]["text"].startswith("minilm-l6")  # provenance on exports


def test_chosen_heads_are_drawn_one_by_one(app, rerun, plotly_specs, minilm) -> None:
    app.multiselect(key="spectra_heads").set_value([3])
    rerun(app)
    traces = _matrix_traces(_merged(app, plotly_specs, "Singular-value profiles"))
    assert {f"L{layer} {kind} h3" for layer in range(6) for kind in ("QK", "V")} <= set(traces)
    assert not any("median" in name for name in traces)
    i = minilm.profile.index(MatrixId(2, Kind.V, 3))
    rank = int(minilm.profile.rank[i])
    np.testing.assert_allclose(traces["L2 V h3"]["y"], minilm.profile.singular_values[i, :rank], rtol=1e-15)


def test_normalised_profiles_start_at_one(app, rerun, plotly_specs, minilm) -> None:
    app.toggle(key="spectra_normalise").set_value(True)
    rerun(app)
    traces = _matrix_traces(_merged(app, plotly_specs, "σᵢ / σ₁"))
    i = minilm.profile.index(MatrixId(5, Kind.M_IN))
    sv = minilm.profile.singular_values[i, : minilm.profile.rank[i]]
    np.testing.assert_allclose(traces["L5 M_in"]["y"], sv / sv[0], rtol=1e-15)
    assert all(t["y"][0] == 1.0 for name, t in traces.items() if "min" not in name.split()[-1])


def test_choosing_layers_and_kinds(app, rerun, plotly_specs, minilm) -> None:
    app.multiselect(key="spectra_layers").set_value([2])
    app.multiselect(key="spectra_kinds").set_value(["M_in", "V"])
    rerun(app)
    traces = _matrix_traces(_merged(app, plotly_specs, "Singular-value profiles"))
    assert sorted(traces) == sorted(
        ["L2 M_in", "L2 V median of 12 heads", "L2 V median of 12 heads min", "L2 V median of 12 heads max"]
    )
    energy = _matrix_traces(_merged(app, plotly_specs, "Cumulative energy"))
    i = minilm.profile.index(MatrixId(2, Kind.M_IN))
    rank = minilm.profile.rank[i]
    np.testing.assert_allclose(
        energy["L2 M_in"]["y"], cumulative_energy(minilm.profile.singular_values[i, :rank]), rtol=1e-12
    )
    assert energy["L2 M_in"]["y"][-1] == 1.0


def test_head_heatmaps_match_the_profile(app, rerun, plotly_specs, minilm) -> None:
    profile = minilm.profile
    for kind in (Kind.QK, Kind.V):
        app.radio(key="heatmap_kind").set_value(kind.value)
        rerun(app)
        heatmaps = [t for t in _merged(app, plotly_specs, f"{kind.value} heads")["data"] if t["type"] == "heatmap"]
        mask = profile.mask(kind)
        expected = [profile.rank, profile.stable_rank, profile.spectral_norm]
        assert [h["name"] for h in heatmaps] == ["numerical rank", "stable rank", "spectral norm σ₁"]
        for heatmap, values in zip(heatmaps, expected, strict=True):
            assert heatmap["z"].shape == (6, 12)
            np.testing.assert_allclose(heatmap["z"], values[mask].reshape(6, 12), rtol=1e-15)


def test_matrix_table_is_the_profile_frame_with_readable_headers(app, minilm) -> None:
    (element,) = [d for d in app.dataframe if "stable_rank" in d.value.columns]
    frame = element.value
    assert table_columns(element)["matrix"]["pinned"]  # wider than a projector: it scrolls under the matrix
    expected = minilm.profile.to_frame()
    assert list(frame.columns)[:2] == ["matrix", "layer"] and set(expected.columns) <= set(frame.columns)
    assert len(frame) == 156
    np.testing.assert_array_equal(frame["stable_rank"], as_shown(expected["stable_rank"], "log10"))  # as shown
    assert set(frame.loc[frame["kind"] == "M_in", "head"]) == {"—"}  # no "None" cell for per-layer matrices
    assert {b.label for b in app.get("download_button")} >= {
        "Download this table (CSV)",
        "Download every singular value (CSV)",
        "Download this view as an HTML report",
    }


def test_a_matrix_opens_with_its_spectrum_curve_and_terms(app, rerun, figure_titled, minilm) -> None:
    from dashboard.widgets.drilldown import GAMMA_LABEL, P_OPT_LABEL, SHARE_LABEL

    i = minilm.profile.index(MatrixId(1, Kind.QK, 4))
    app.selectbox(key="matrix").set_value(i)
    rerun(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics[P_OPT_LABEL] == f"{minilm.p_opt[i]:.3f}"
    assert metrics[GAMMA_LABEL] == format_log(float(minilm.log_gamma[i]))
    share = minilm.optimal.contribution[i] / minilm.optimal.total
    assert metrics[SHARE_LABEL] == f"{100 * share:.1f} %"
    curve = figure_titled(app, "c(W; p) against p")
    assert [t["name"] for t in curve["data"] if t.get("showlegend", True)] == ["L1 QK h4"]
    star = next(t for t in curve["data"] if t["name"] == "L1 QK h4 p*")
    assert star["y"][0] == pytest.approx(minilm.optimal.contribution[i], rel=1e-12)
    assert app.query_params["matrix"] == str(i)  # the open matrix is part of the link
    # its eigenvalue spectrum with WeightWatcher's fit, the package's own figure
    from specbound.present.figures.spectra import esd_figure

    expected = esd_figure(minilm.profile, i).to_dict()["layout"]["title"]["text"]
    esd = figure_titled(app, expected.split("<br>")[0])
    assert esd["layout"]["title"]["text"].startswith(expected) and "WeightWatcher's fit" in expected


def test_a_link_restores_the_spectra_view(plotly_specs) -> None:
    from app_harness import APP, TIMEOUT_S, run_clean
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update(
        {
            "spectra_layers": "2,9",
            "spectra_kinds": "M_in,V",
            "spectra_heads": "3",
            "spectra_normalise": "1",
            "heatmap_kind": "V",
        }
    )
    run_clean(at)
    at.switch_page("pages/spectra.py")
    run_clean(at)
    assert at.multiselect(key="spectra_layers").value == [2]  # layer 9 does not exist in a 6-layer model
    assert at.multiselect(key="spectra_kinds").value == ["M_in", "V"]
    assert at.multiselect(key="spectra_heads").value == [3] and at.toggle(key="spectra_normalise").value
    traces = _matrix_traces(_merged(at, plotly_specs, "σᵢ / σ₁"))
    assert sorted(traces) == ["L2 M_in", "L2 V h3"]
    assert _parts(at, plotly_specs, "V heads")
    assert at.query_params["spectra_layers"] == "2" and at.query_params["heatmap_kind"] == "v"
