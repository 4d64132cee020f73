"""The shared look: palette, layout helper, and full-valued log ticks on short and long ranges."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from specbound.core.architecture import CROSS_KINDS, Kind
from specbound.present.figures import bounds, html_report, scaling, spectra, style, theory
from specbound.present.figures.style import (
    KIND_COLORS,
    OKABE_ITO,
    PALETTE,
    PANEL_TITLE_ROOM,
    TOP_MARGIN_SUBTITLE,
    figure,
    format_tick,
    has_top_panel_titles,
    log_axis,
    log_axis_ticks,
    on_panel,
    palette_color,
    panel_grid,
    panel_ref,
)
from specbound_lab import figures as lab


def test_less_than_a_decade_still_gets_ticks() -> None:
    assert log_axis_ticks(0.3, 0.8) == ([0.4, 0.6, 0.8], ["0.4", "0.6", "0.8"])
    assert log_axis_ticks(0.55, 0.62) == ([0.56, 0.58, 0.6, 0.62], ["0.56", "0.58", "0.6", "0.62"])
    values, text = log_axis_ticks(2.1e5, 9e5)
    assert values == [4e5, 6e5, 8e5] and text == ["4×10<sup>5</sup>", "6×10<sup>5</sup>", "8×10<sup>5</sup>"]
    assert log_axis_ticks(5.0, 5.0) == ([5.0], ["5"])


def test_one_to_two_decades_get_1_2_5_and_longer_ranges_powers_of_ten() -> None:
    assert log_axis_ticks(3, 40) == ([5.0, 10.0, 20.0], ["5", "10", "20"])
    assert log_axis_ticks(1, 100)[1] == ["1", "2", "5", "10", "20", "50", "100"]
    assert log_axis_ticks(1, 384) == ([1.0, 10.0, 100.0], ["1", "10", "100"])
    values, text = log_axis_ticks(1e-3, 1e20)  # 24 decades: every third
    assert values == [10.0**e for e in range(-3, 19, 3)]
    # one notation per axis: beside 10¹⁸, 10⁻³ and 10³ rather than "0.001" and "1000" (1 reads best as 1)
    assert text[:3] == ["10<sup>-3</sup>", "1", "10<sup>3</sup>"] and text[-1] == "10<sup>18</sup>"


def test_an_axis_never_mixes_plain_and_power_labels_for_large_values() -> None:
    """A parameter-count axis from 3×10⁴ to 2×10⁶ used to read "50000" beside "10⁶"."""
    values, text = log_axis_ticks(3e4, 2e6)
    assert values[0] == 5e4 and text[0] == "5×10<sup>4</sup>"
    assert all("<sup>" in label for label in text)
    assert log_axis_ticks(3, 40)[1] == ["5", "10", "20"]  # no power anywhere: plain throughout


def test_huge_ranges_stay_few_and_round() -> None:
    values, text = log_axis_ticks(1e-300, 1e300)
    assert values == [10.0**e for e in range(-300, 301, 100)]
    assert text[0] == "10<sup>-300</sup>" and text[3] == "1"


def test_labels_are_full_values_never_bare_mantissas() -> None:
    assert [format_tick(v) for v in (0.5, 0.05, 2e-4, 1e12, 3.5e7, 20)] == [
        "0.5",
        "0.05",
        "2×10<sup>-4</sup>",
        "10<sup>12</sup>",
        "3.5×10<sup>7</sup>",
        "20",
    ]
    with pytest.raises(ValueError, match="positive"):
        log_axis_ticks(0.0, 1.0)


def test_palette_is_okabe_ito_and_kinds_use_it() -> None:
    assert set(PALETTE) <= set(OKABE_ITO.values()) and len(set(PALETTE)) == len(PALETTE)
    self_kinds = {kind: color for kind, color in KIND_COLORS.items() if kind not in CROSS_KINDS}
    assert set(self_kinds.values()) <= set(PALETTE) and len(set(self_kinds.values())) == len(self_kinds)
    assert palette_color(len(PALETTE)) == PALETTE[0]


def test_cross_attention_kinds_are_darker_shades_of_their_self_attention_kinds() -> None:
    def rgb(color: str) -> np.ndarray:
        return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    for cross, own in ((Kind.QK_X, Kind.QK), (Kind.V_X, Kind.V)):
        dark, light = rgb(KIND_COLORS[cross]), rgb(KIND_COLORS[own])
        shade = dark[light > 0] / light[light > 0]
        assert np.all(dark[light == 0] == 0) and np.ptp(shade) < 0.02 and 0.5 < shade.mean() < 0.75


def test_layout_puts_source_in_the_subtitle_and_the_legend_below() -> None:
    fig = figure([go.Scatter(x=[1], y=[1])], "Short title", source="minilm-l6 · p*", height=300)
    assert fig.layout.title.text == "Short title" and fig.layout.title.subtitle.text == "minilm-l6 · p*"
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.yanchor == "bottom"
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin and fig.layout.height == 300
    assert fig.layout.margin.t > figure([], "t").layout.margin.t  # room for the subtitle


def test_a_figure_s_own_axis_settings_sit_on_top_of_the_shared_axis_style() -> None:
    fig = figure(
        [{"type": "scatter", "x": [1, 10], "y": [2, 3]}],
        "t",
        layout={"xaxis": log_axis([1, 10], title={"text": "index"}), "yaxis": {"gridcolor": "red"}, "barmode": "stack"},
    )
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "index"
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 5, 10] and fig.layout.xaxis.automargin
    assert fig.layout.yaxis.gridcolor == "red" and fig.layout.yaxis.zeroline is False  # own colour, shared rest
    assert fig.layout.barmode == "stack" and fig.data[0].type == "scatter"


def test_log_axis_without_positive_values_is_a_plain_log_axis() -> None:
    assert log_axis([0.0, -1.0, float("nan")], dtick=1) == {"type": "log", "dtick": 1}


def test_panel_grid_matches_make_subplots_and_every_panel_gets_the_style() -> None:
    reference = make_subplots(rows=2, cols=2, subplot_titles=["a", "b", "c", "d"], horizontal_spacing=0.1)
    layout = panel_grid(2, 2, titles=["a", "b", "c", "d"], horizontal_spacing=0.1, title_size=12)
    for panel in range(1, 5):
        x_key, y_key = panel_ref(panel)
        assert list(layout[x_key]["domain"]) == list(reference.layout[x_key].domain)
        assert list(layout[y_key]["domain"]) == list(reference.layout[y_key].domain)
    assert [note["text"] for note in layout["annotations"]] == ["a", "b", "c", "d"]
    assert {note["font"]["size"] for note in layout["annotations"]} == {12}
    layout["xaxis4"]["title"] = {"text": "changed"}  # each call is a fresh copy
    assert "title" not in panel_grid(2, 2, titles=["a", "b", "c", "d"], horizontal_spacing=0.1)["xaxis4"]
    fig = figure([on_panel({"type": "scatter", "x": [1], "y": [1]}, 4)], "grid", layout=layout)
    assert (fig.data[0].xaxis, fig.data[0].yaxis) == ("x4", "y4")
    assert all(fig.layout[key].automargin for panel in range(1, 5) for key in panel_ref(panel))


def test_titles_on_top_panels_get_room_under_the_subtitle_by_themselves() -> None:
    source = "minilm-l6 · default p*"
    titled = figure([], "grid", source=source, layout=panel_grid(2, 2, titles=["a", "b", "c", "d"]))
    plain = figure([], "grid", source=source, layout=panel_grid(2, 2))
    assert titled.layout.margin.t == TOP_MARGIN_SUBTITLE + PANEL_TITLE_ROOM
    assert plain.layout.margin.t == TOP_MARGIN_SUBTITLE
    # a note inside the plot area is not a panel title
    noted = figure([], "t", source=source, layout={"annotations": [{"text": "n", "y": 0.5, "yanchor": "bottom"}]})
    assert noted.layout.margin.t == TOP_MARGIN_SUBTITLE
    assert not has_top_panel_titles({}) and has_top_panel_titles(panel_grid(1, 2, titles=["a", "b"]))


def test_figures_are_built_in_one_constructor_call_not_patched_afterwards() -> None:
    """Each update_layout / update_xaxes / add_trace re-parses plotly property paths (milliseconds each):
    the builders on the slider's path must build their figure once."""
    sources = [inspect.getsource(module) for module in (bounds, spectra, scaling, theory, lab)]
    for text in sources:
        for call in ("update_layout(", "update_xaxes(", "update_yaxes(", "add_trace(", "add_traces(", "make_subplots("):
            assert call not in text, call


def test_importing_the_builders_changes_no_global_plotly_state() -> None:
    before = (pio.templates.default, pio.renderers.default, tuple(pio.templates))
    for module in (style, spectra, bounds, scaling, theory, html_report):
        importlib.reload(module)
    assert (pio.templates.default, pio.renderers.default, tuple(pio.templates)) == before


def test_a_model_name_made_of_markup_stays_text_in_titles_legends_and_hovers() -> None:
    import dataclasses

    from hand_profiles import flat_one_layer

    from specbound.present.figures.spectra import overlaid_spectra

    name = '<a href="http://evil.example">x</a> <img src=x>'
    profile = dataclasses.replace(flat_one_layer(1.0, 1.0, 1.0, 1.0), model=name)
    figure = overlaid_spectra(profile, profile, "M_in", 0, source=f"{name} · p*")
    texts = [figure.layout.title.subtitle.text] + [t.name for t in figure.data if t.name]
    assert texts and all("<a" not in t and "<img" not in t for t in texts)
    assert "&lt;a href=" in figure.layout.title.subtitle.text  # Plotly shows the entity as the character


def test_split_panels_gives_each_panel_its_own_figure() -> None:
    """A grid of panels as one figure per panel (side by side in columns, stacked on a phone): each part
    keeps its traces on plain axes, its own axis settings and colour bar, the source line, a title
    naming the panel, and legend entries for what it draws."""
    from specbound.core.architecture import ModelShape
    from specbound.core.bounds import BoundAnalysis
    from specbound.present.figures.style import split_panels
    from specbound.studies.twin import random_twin

    shape = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)
    analysis = BoundAnalysis.from_profile(random_twin(shape, model="tiny", initializer_range=0.08))
    whole = spectra.singular_value_profiles(analysis.profile, source="tiny · spectra")
    parts = split_panels(whole)
    assert len(parts) == 4
    for number, (part, kind) in enumerate(zip(parts, ("QK", "V", "M_in", "M_out"), strict=True), start=1):
        x_key = panel_ref(number)[0]
        assert all(t.xaxis in (None, "x") and t.yaxis in (None, "y") for t in part.data)
        assert part.layout.title.text.startswith("Singular-value profiles") and kind in part.layout.title.text
        assert part.layout.title.subtitle.text == "tiny · spectra"
        assert part.layout.xaxis.type == whole.layout[x_key].type == "log" and part.layout.xaxis.domain is None
        assert part.layout.yaxis.title.text  # every part names its y axis, not only the left column
        drawn = [t for t in part.data if not (isinstance(t.x, tuple) and t.x == (None,))]  # not a stand-in
        assert {t.name for t in drawn} == {t.name for t in whole.data if t.xaxis == x_key.replace("axis", "")} - {
            f"layer {layer}" for layer in range(2)
        }
        legend = [t.name for t in part.data if t.showlegend is not False and t.name.startswith("layer")]
        assert legend == ["layer 0", "layer 1"]  # each part lists the layers it draws
        assert not part.layout.annotations  # the panel title moved into the title
    assert sum(p.layout.height for p in parts[::2]) >= whole.layout.height  # two rows of parts, no shorter

    heatmaps = split_panels(spectra.head_heatmaps(analysis.profile, "QK"), titles=["a", "b", "c"], subtitles="xyz")
    assert [p.layout.title.text for p in heatmaps] == ["a", "b", "c"]
    assert [p.layout.title.subtitle.text for p in heatmaps] == ["x", "y", "z"]
    assert all(p.layout.margin.t >= TOP_MARGIN_SUBTITLE for p in heatmaps)  # room for the subtitle
    assert all(p.data[0].colorbar.x is None for p in heatmaps)  # each colour bar beside its own heatmap
    assert all(p.layout.yaxis.showticklabels for p in heatmaps)
    single = bounds.p_star_histogram(analysis)
    assert split_panels(single) == [single]


def test_a_split_part_is_its_validated_figure() -> None:
    """The parts are built without plotly's validation (their values come out of a validated figure): each
    one's JSON equals that of the same figure built with validation, for line panels with stand-in legend
    entries and for heatmaps with colour bars."""
    from specbound.core.architecture import ModelShape
    from specbound.core.bounds import BoundAnalysis
    from specbound.present.figures.style import split_panels
    from specbound.studies.twin import random_twin

    shape = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)
    analysis = BoundAnalysis.from_profile(random_twin(shape, model="tiny", initializer_range=0.08))
    profiles = split_panels(spectra.singular_value_profiles(analysis.profile, source="tiny · spectra"))
    heatmaps = split_panels(spectra.head_heatmaps(analysis.profile, "QK"), titles=["a", "b", "c"], subtitles="xyz")
    for part in (*profiles, *heatmaps):
        assert part.to_plotly_json() == go.Figure(part.to_plotly_json()).to_plotly_json()
