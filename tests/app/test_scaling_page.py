"""The Scaling page over a miniature-shaped family opened from an atlas file: its growth curves and
exponents are the ones specbound.studies.scaling computes, missing miniatures are listed, never skipped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from app_harness import APP, TIMEOUT_S, as_shown, run_clean, table_columns, unescaped
from streamlit.testing.v1 import AppTest

from dashboard.services.scaling import EXPONENT_ORDER
from dashboard.state.atlas import model_name
from dashboard.wording.numbers import shown_value
from dashboard.wording.text import BOUND_NOTE
from specbound.core.bounds import BoundAnalysis
from specbound.present.figures.scaling import predicted_note
from specbound.present.numbers import raised_powers
from specbound.studies.scaling import Axis, Proxy, ScalingStudy, measured_growth, measured_growth_frame, summarize

LAB_FAMILY = "Lab encoders (trained by the specbound lab on the sparse threshold task)"
LAB_GRID = "Lab scaling grid (the Miniatures' stand-in, L 1–4 × N 32–128)"
MINIATURES = "BERT Miniatures"
SHOWN = (Proxy.OURS, Proxy.EDELMAN)


@pytest.fixture
def study(family) -> ScalingStudy:
    """The package's own study of the family: the reference for the page."""
    _, profiles = family
    return ScalingStudy.from_summaries(  # the page names atlas models by model and file, not by path
        summarize(BoundAnalysis.from_profile(p), name=f"{p.model} (atlas family.npz)") for p in profiles
    )


@pytest.fixture
def scaling_app(family) -> AppTest:
    path, _ = family
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params["model"] = model_name(path, "L1-H16")  # a shared link naming an atlas model on the server
    run_clean(at)
    at.switch_page("pages/scaling.py")
    return run_clean(at)


@pytest.fixture
def growth_figure(plotly_specs):
    """growth_figure(at, words) -> the panels of the growth figure titled ``words``, drawn as one figure
    per panel (a phone stacks them): their traces together (legend stand-ins left out), the layout of
    the first, and how many panels there were."""

    def found(at, words: str) -> dict:
        parts = [f for f in plotly_specs(at) if words in f["layout"]["title"]["text"].replace("<br>", " ")]
        assert parts, f"no figure titled '{words}'"
        traces = [t for f in parts for t in f["data"] if t["x"] and t["x"][0] is not None]
        ranges = {tuple(f["layout"]["yaxis"]["range"]) for f in parts}
        assert len(ranges) == 1  # every panel on one scale, as the shared axis of the grid was
        return {"data": traces, "layout": parts[0]["layout"], "panels": len(parts)}

    return found


def _traces(figure: dict) -> dict[tuple[str, tuple[int, ...], tuple[str, ...]], np.ndarray]:
    """The measured curves (the dotted predictions apart: :func:`_predicted`)."""
    return {
        (t["legendgroup"], tuple(int(x) for x in t["x"]), tuple(str(c[0]) for c in t["customdata"])): np.asarray(
            t["y"], dtype=float
        )
        for t in figure["data"]
        if not t["legendgroup"].startswith("predicted")
    }


def _predicted(figure: dict) -> list[dict]:
    return [t for t in figure["data"] if t["legendgroup"].startswith("predicted")]


def _check_curves(figure: dict, study: ScalingStudy, axis: Axis, proxies) -> None:
    traces = _traces(figure)
    expected = [c for c in study.curves(axis) if c.proxy in proxies]
    assert expected and len(traces) == len(expected)
    for curve in expected:
        y = traces[(curve.proxy.value, curve.x, curve.models)]
        assert y[0] == 1.0
        np.testing.assert_allclose(y, curve.ratio, rtol=1e-12)


def _exponents_element(at):
    (element,) = [d for d in at.dataframe if "slope" in d.value.columns]
    return element


def _exponents_table(at):
    return _exponents_element(at).value


def test_growth_curves_and_exponents_match_the_package(scaling_app, family, study, growth_figure) -> None:
    at = scaling_app
    assert [t.value for t in at.title] == ["Scaling"]
    assert not at.error
    chosen = at.multiselect(key="scaling_models")
    _, profiles = family
    assert sorted(chosen.value) == sorted(model_name(family[0], p.model) for p in profiles)
    assert "minilm-l6 · L = 6, N = 384 · not of the family" in chosen.options  # offered, marked as such
    assert "minilm-l6" not in chosen.value
    assert all(len(option) <= 60 for option in chosen.options)  # chips whole at 1024 px, no "…"
    assert "atlas file: 6 models" in [unescaped(c.value) for c in at.caption]  # where the chosen come from
    assert [c.value for c in at.caption].count(BOUND_NOTE) == 1  # the proxies' note once, not per section

    _check_curves(growth_figure(at, "with width N"), study, Axis.WIDTH, SHOWN)
    depth = growth_figure(at, "with depth L")
    _check_curves(depth, study, Axis.DEPTH, SHOWN)
    # beside them, dotted, the laws the theory predicts against depth: (L / L_ref)^a, √L for ours, L^(3/2)
    # for Edelman's, from the study's reference; none against width
    assert not _predicted(growth_figure(at, "with width N"))
    guides = _predicted(depth)
    assert {t["legendgroup"] for t in guides} == {"predicted-ours", "predicted-edelman"}
    reference = study.reference(Axis.DEPTH)
    for guide in guides:
        exponent = 0.5 if guide["legendgroup"] == "predicted-ours" else 1.5
        np.testing.assert_allclose(guide["y"], (np.asarray(guide["x"], float) / reference) ** exponent, rtol=1e-12)
    # each law with its assumption, its powers raised as the page writes them (no caret)
    assert any(unescaped(c.value) == raised_powers(predicted_note()) for c in at.caption)

    table = _exponents_table(at).reset_index(drop=True)
    expected = study.exponents_frame()
    expected = expected[expected["proxy"].isin([p.value for p in SHOWN])].reset_index(drop=True)
    assert len(table) == len(expected) > 0
    assert list(table["proxy"]) == list(expected["proxy"])
    assert list(table["against"]) == list(expected["against"])
    for column in ("model", "few_points", "residual_df", "num_sizes"):
        assert list(table[column]) == list(expected[column]), column
    assert list(table["better_fit"]) == ["—" if pd.isna(v) else v for v in expected["better_fit"]]  # as drawn
    few = expected["few_points"].astype(bool)
    assert few.any() and (~few).any()  # both kinds of fit are on screen
    for column in ("slope", "slope_se", "ci_low", "ci_high", "r_squared_within"):  # sent as shown: 4 digits
        sent = [shown_value(v) if isinstance(v, str) else v for v in table[column]]  # "—" where it is empty
        # no interval from fewer than three sizes (two points fit any law): "—" there
        wanted = expected[column].where(~few) if column in ("slope_se", "ci_low", "ci_high") else expected[column]
        np.testing.assert_array_equal(sent, as_shown(wanted), err_msg=column)
    pooled = study.exponent(Proxy.OURS, Axis.DEPTH)
    assert pooled.num_groups == 2 and pooled.num_points == 6 and pooled.residual_df == 3
    assert (pooled.num_sizes, pooled.few_points) == (3, False) and pooled.better_fit is not None
    assert study.exponent(Proxy.OURS, Axis.WIDTH).few_points  # N in {16, 32}: two sizes
    assert set(table["model"]) == {"power", "log-linear"}

    element = _exponents_element(at)
    config = json.loads(element.proto.columns)
    headers = {name: config[name]["label"] for name in EXPONENT_ORDER}  # every shown column has a label
    assert not any("_" in label for label in headers.values())
    assert headers["r_squared_within"] == "r² within groups" and headers["slope_se"] == "± s.e."
    assert headers["ci_low"] == "95% CI low" and headers["few_points"] == "Fewer than 3 sizes"
    assert list(element.proto.column_order) == list(EXPONENT_ORDER)
    assert [name for name, spec in config.items() if spec.get("pinned")] == ["proxy"]  # the table scrolls under it
    assert "r_squared" not in element.proto.column_order  # counts group intercepts: CSV only
    assert any("r² within groups" in c.value and "log-linearly" in c.value for c in at.caption)
    assert not at.warning  # the family is complete: every curve has its reference


def test_the_exponents_table_writes_plain_names_and_a_dash_for_empty_cells(study) -> None:
    from dashboard.services.scaling import exponents_shown

    frame = study.exponents_frame()
    assert frame["fixed"].isna().any() and frame["slope_se"].isna().any()  # pooled fits, two-point fits
    shown = exponents_shown(frame)
    body = shown._translate(False, False)["body"]
    cells = [[str(cell["display_value"]) for cell in row if cell.get("type") == "td"] for row in body]
    header = list(frame.columns)
    pooled = next(row for row, fixed in zip(cells, frame["fixed"].isna(), strict=True) if fixed)
    assert pooled[header.index("fixed")] == "—"
    assert not any(cell in ("None", "nan", "<NA>") for row in cells for cell in row)
    # what the browser keeps (and reads out, and copies) for an empty cell is the dash it draws, not a null
    assert not shown.data[list(EXPONENT_ORDER)].isna().any().any()
    assert shown.data["slope_se"][frame["slope_se"].isna()].eq("—").all()
    assert {row[header.index("proxy")] for row in cells} <= {
        "ours (p*)",
        "Edelman et al.",
        "p = 0 (rank)",
        "p = 1 (nuclear)",
        "p = 2 (Frobenius)",
    }
    # the values stay numbers, so the columns sort as numbers; each is the number its cell shows
    np.testing.assert_array_equal(shown.data["slope"], as_shown(frame["slope"]))
    assert shown.data["slope"].dtype == float and shown.data.index.equals(frame.index)


def test_the_models_table_names_each_proxy_plainly(scaling_app, study) -> None:
    from dashboard.services.scaling import models_shown

    (element,) = [d for d in scaling_app.dataframe if "ours_log10" in d.value.columns]
    headers = {name: spec["label"] for name, spec in json.loads(element.proto.columns).items() if "label" in spec}
    assert headers["ours"] == "ours (p*)" and headers["edelman_log10"] == "log10 Edelman et al."
    assert not any("_" in label for label in headers.values())
    pinned = [name for name, spec in table_columns(element).items() if spec.get("pinned")]
    assert pinned == ["name"]  # the proxies scroll sideways under the model's name
    shown, _ = models_shown(study.models_frame())
    body = shown._translate(False, False)["body"]
    cells = [str(cell["display_value"]) for row in body for cell in row if cell.get("type") == "td"]
    assert not any(cell in ("None", "nan", "<NA>") for cell in cells)


def test_fixed_p_regimes_are_optional_curves(scaling_app, study, growth_figure) -> None:
    at = scaling_app
    at.toggle(key="scaling_fixed_p").set_value(True)
    run_clean(at)
    _check_curves(growth_figure(at, "with width N"), study, Axis.WIDTH, tuple(Proxy))
    assert set(_exponents_table(at)["proxy"]) == {p.value for p in Proxy}


def test_a_curve_without_its_reference_model_is_left_out_with_a_note(scaling_app, family, growth_figure) -> None:
    at = scaling_app
    chosen = [model_name(family[0], p.model) for p in family[1] if p.model != "L1-H32"]
    at.multiselect(key="scaling_models").set_value(chosen)
    run_clean(at)
    assert [unescaped(w.value) for w in at.warning] == [
        "No curve against L at N = 32: the study has no model with L = 1 and N = 32, and every curve against L "
        "is normalised at L = 1 (the smallest L in the study)."
    ]
    depth = growth_figure(at, "with depth L")
    assert {tuple(t["x"]) for t in depth["data"]} == {(1, 2, 3)}  # N = 16 only
    assert depth["layout"]["yaxis"]["title"]["text"] == "ratio to L = 1"


def test_missing_miniatures_are_listed_with_how_to_get_them(scaling_app) -> None:
    at = scaling_app
    (missing,) = [d.value for d in at.dataframe if "how to get it" in d.value.columns]
    # the test family is not the real grid and the Hub cache is empty: all 24 miniatures are missing
    assert len(missing) == 24
    assert "L2-H128" in set(missing["model"])
    assert all("specbound grid" in how for how in missing["how to get it"])
    assert at.multiselect(key="scaling_download_models").options == list(missing["model"])


def test_fewer_than_two_models_says_what_is_needed(scaling_app, family, figure_titled, plotly_specs) -> None:
    at = scaling_app
    at.multiselect(key="scaling_models").set_value([model_name(family[0], "L1-H16")])
    run_clean(at)
    assert plotly_specs(at) == []
    assert any("at least two models" in i.value for i in at.info)
    assert not at.error


def test_two_models_of_one_shape_are_refused_plainly(scaling_app, family, plotly_specs) -> None:
    at = scaling_app
    at.multiselect(key="scaling_models").set_value([model_name(family[0], "L1-H16"), model_name(family[0], "L2-H16")])
    run_clean(at)
    assert len(plotly_specs(at)) == 1  # against L only; no two widths share a depth
    assert any("No curve against N" in i.value for i in at.info)


def test_atlas_export_of_the_study(scaling_app, family, tmp_path) -> None:
    from dashboard.state.atlas import atlas_bytes
    from specbound.io.atlas import load_atlas

    at = scaling_app
    labels = [b.label for b in at.get("download_button")]
    assert "Export the 6 models of the study" in labels
    _, profiles = family
    exported = tmp_path / "exported.npz"
    exported.write_bytes(atlas_bytes(profiles))  # what the button serves
    again = load_atlas(exported)
    assert [p.model for p in again] == [p.model for p in profiles]
    np.testing.assert_array_equal(again[0].singular_values, profiles[0].singular_values)


def test_the_chosen_models_travel_in_the_link(scaling_app, family) -> None:
    at = scaling_app
    chosen = [model_name(family[0], "L1-H16"), model_name(family[0], "L2-H16")]
    at.multiselect(key="scaling_models").set_value(chosen)
    run_clean(at)
    link = dict(at.query_params)
    assert link["scaling_models"].split(",") == chosen  # atlas models on the server, as the model link names them
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    again.query_params.update(link)
    run_clean(again)
    again.switch_page("pages/scaling.py")
    run_clean(again)
    assert again.multiselect(key="scaling_models").value == chosen


def _offline_scaling_page() -> AppTest:
    """The Scaling page where no miniature is here: no atlas and an empty Hub cache."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    run_clean(at)
    at.switch_page("pages/scaling.py")
    return run_clean(at)


def _measured_table(at) -> pd.DataFrame:
    (element,) = [d for d in at.dataframe if "measured_exponent" in d.value.columns]
    return element.value.reset_index(drop=True)


def _grid_study() -> ScalingStudy:
    """The package's study of the shipped scaling grid, named as the page names its models."""
    from specbound.io.atlas import load_atlas
    from specbound_lab.reference import ATLAS_FILE, SCALING_REFERENCE

    profiles = load_atlas(SCALING_REFERENCE.directory / ATLAS_FILE)
    return ScalingStudy.from_summaries(summarize(BoundAnalysis.from_profile(p)) for p in profiles)


def test_with_no_miniatures_here_the_page_opens_on_the_lab_grid_with_predicted_beside_fitted(growth_figure) -> None:
    """Offline, the study opens on the shipped scaling grid (at least 4 depths by 3 widths): each proxy's
    fitted exponent with its t-interval beside the exponent its bound predicts, the laws drawn dotted."""
    at = _offline_scaling_page()
    assert at.radio(key="scaling_family").value == LAB_GRID
    assert at.query_params["scaling_family"] == "lab-grid"
    assert len(at.multiselect(key="scaling_lab_grid_models").value) == 12
    (models,) = [d.value for d in at.dataframe if "ours_log10" in d.value.columns]
    assert models["L"].nunique() >= 4 and models["N"].nunique() == 3 and len(models) == 12

    depth = growth_figure(at, "with depth L")
    assert depth["panels"] == 3  # one panel per width, each curve through every depth
    assert all(len(t["x"]) >= 4 for t in depth["data"] if not t["legendgroup"].startswith("predicted"))
    assert {t["legendgroup"] for t in _predicted(depth)} == {"predicted-ours", "predicted-edelman"}
    assert depth["layout"]["yaxis"]["title"]["text"] == "ratio to L = 1"  # the whole title, not cut

    study = _grid_study()
    table = _measured_table(at)
    assert [tuple(r) for r in table[["against", "predicted_law"]].itertuples(index=False)] == [
        ("L", "√L"),
        ("L", "L^(3/2)"),
        ("N", "—"),
        ("N", "—"),
    ]
    expected = measured_growth_frame(measured_growth(study))
    for column in ("predicted_exponent", "measured_exponent", "ci_low", "ci_high"):  # predicted beside fitted
        sent = [shown_value(v) if isinstance(v, str) else v for v in table[column]]  # "—" where it is empty
        np.testing.assert_array_equal(sent, as_shown(expected[column]), err_msg=column)
    assert [shown_value(v) for v in table["predicted_exponent"][:2]] == [0.5, 1.5]
    assert (table["num_sizes"][:2] >= 4).all() and (table["num_sizes"][2:] == 3).all()
    assert list(table["agreement"]) == list(expected["agreement"])
    assert set(table["agreement"][2:]) == {"not predicted"}
    sentences = [unescaped(m.value) for m in at.markdown if "in depth L:" in unescaped(m.value)]
    assert len(sentences) == 1 and sentences[0].count("95 % t-interval") == 4


def test_the_lab_encoders_two_sizes_get_no_interval_anywhere(growth_figure) -> None:
    """The class sweep's family has two depths and two widths: a slope, but no "±" and no interval in the
    legend, the measured table or its sentences; the exponents table sends its empty cells as the dash."""
    at = _offline_scaling_page()
    at.radio(key="scaling_family").set_value(LAB_FAMILY)
    run_clean(at)
    assert len(at.multiselect(key="scaling_lab_models").value) == 4
    assert at.query_params["scaling_family"] == "lab"
    for axis in ("with width N", "with depth L"):
        names = [t["name"] for t in growth_figure(at, axis)["data"]]
        assert names and not any("±" in name for name in names)
        assert any("(2 sizes only)" in name for name in names)
    table = _measured_table(at)
    assert table["ci_low"].eq("—").all() and table["ci_high"].eq("—").all()
    assert list(table["agreement"]) == ["no interval", "no interval", "not predicted", "not predicted"]
    sentences = " ".join(unescaped(m.value) for m in at.markdown if "in depth L:" in unescaped(m.value))
    assert "in depth L: measured L" in sentences and "interval [" not in sentences and "±" not in sentences
    assert "^" not in sentences  # powers raised, as the page writes every number
    # the lab's two-point fits have no standard error: those cells are sent as the dash drawn, and the
    # column is set as text (right-aligned), so that the browser neither says "None" nor flags a bad number
    (exponents,) = [d for d in at.dataframe if "slope_se" in d.value.columns]
    assert exponents.value["slope_se"].eq("—").any()
    assert not exponents.value[list(EXPONENT_ORDER)].isna().any().any()
    settings = table_columns(exponents)
    assert settings["slope_se"]["type_config"]["type"] == "text" and settings["slope_se"]["alignment"] == "right"
    assert settings["slope"]["type_config"]["type"] == "number"  # a column without an empty cell stays numeric
    at.radio(key="scaling_family").set_value(MINIATURES)  # the visitor's own choice then stands
    run_clean(at)
    assert at.radio(key="scaling_family").value == MINIATURES
    assert any("at least two models" in i.value for i in at.info)


def test_a_family_of_miniatures_keeps_the_page_on_them(scaling_app) -> None:
    assert scaling_app.radio(key="scaling_family").value == MINIATURES
    assert scaling_app.query_params["scaling_family"] == "mini"  # the first family depends on the server


def test_a_link_naming_the_miniatures_opens_them_even_where_none_are_here() -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params["scaling_family"] = "mini"
    run_clean(at)
    at.switch_page("pages/scaling.py")
    run_clean(at)
    assert at.radio(key="scaling_family").value == MINIATURES
    assert any("at least two models" in i.value for i in at.info)
