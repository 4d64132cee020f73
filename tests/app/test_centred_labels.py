"""Every surface that shows a centred number names its centring (issue 56): "centred at BASE".

One list, :data:`SURFACES`, names each place a number centred at a reference reaches a person or a
file: the Bound explorer's metrics, subheadings, chart titles and subtitles (what a PNG export
carries), tables and download file names, its HTML report's title and headings, the Compare page's
centred totals, heading and map, and the command line's and the API's tables and JSON. Each entry
gives the texts found there, and the test fails on any of them that does not say "centred at
finetune-base" (the base's short name, never a folder) or, for a table, on a centred quantity under
a plain column name. The surfaces are read from the real app (Streamlit's AppTest, opened by a link
as a visitor's click would) with the lab's shipped LoRA adapter and its base, offline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import streamlit
from app_harness import APP, TIMEOUT_S, run_clean, unescaped
from cli_runner import run_main
from streamlit.testing.v1 import AppTest

import specbound
from dashboard.routing import guard_apptest_runs
from dashboard.safety import SERVER_PATHS_ENV
from dashboard.widgets.export import safe_file_part
from specbound.present.report import CENTRED_PREFIX, centred_label
from specbound_lab.finetune import BASE_NAME, LORA_NAME

LABEL = centred_label(BASE_NAME)
#: What the weights' own columns are called (their rank and norms, the scales, the chosen p): no prefix.
WEIGHT_COLUMNS = {
    "matrix",
    "layer",
    "kind",
    "head",
    "p",
    "rank",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "stable_rank",
    "norm_21",
    "norm_11",
    "gamma",
    "log10_scale",
    "log10_alpha",
    "tensors",
}
#: Metrics of the weights themselves, not of the centred reading (the same with or without a reference).
UNCENTRED_METRICS = {"√L", "γ", "log10 s_W", "Ours at p*: model", "Matrices changed"}


#: Streamlit's own download button, which the recording one hands every call to.
_DOWNLOAD_BUTTON = streamlit.download_button


def _titles(at: AppTest) -> list[str]:
    """Each chart's title with its subtitle: what a PNG export of it shows."""
    found = []
    for chart in at.get("plotly_chart"):
        title = json.loads(chart.proto.spec)["layout"].get("title", {})
        found.append(f"{title.get('text', '')} | {title.get('subtitle', {}).get('text', '')}")
    return found


def _run(params: dict[str, str], page: str, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, list[str]]:
    """The app opened by a link on ``page``, and the file names of its download buttons."""
    files: list[str] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        files.append(kwargs["file_name"])
        return _DOWNLOAD_BUTTON(*args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", recording)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.query_params.update(params)
    run_clean(at)
    at.switch_page(page)
    files.clear()
    run_clean(at)
    assert not at.error, [e.value for e in at.error]
    return at, files


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Any]:
    """The Bound explorer centred (tables open, one matrix drilled into) and Compare, each run once;
    the explorer's report as its download builds it; the command line's export and JSON."""
    undo = guard_apptest_runs()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SERVER_PATHS_ENV, "1")
        explorer = {"model": LORA_NAME, "baseline": BASE_NAME, "centred": "1", "show_tables": "1", "matrix": "3"}
        bounds, bounds_files = _run(explorer, "pages/bounds.py", patch)
        compare, _ = _run({"model": LORA_NAME, "baseline": BASE_NAME}, "pages/compare.py", patch)
    undo()
    out = tmp_path_factory.mktemp("export")
    run_main("export", LORA_NAME, "--base", BASE_NAME, "--out", str(out))
    return {
        "bounds": bounds,
        "bounds_files": bounds_files,
        "compare": compare,
        "export": out,
        "json": json.loads(run_main("analyze", LORA_NAME, "--json")),
        "frame": specbound.analyze(LORA_NAME, p=1.0).to_frame(),
    }


def _report(pages: dict[str, Any]) -> list[str]:
    """The explorer's HTML report, built as its download button builds it: its title and headings."""
    from dashboard.views.bounds import depth_figure, explorer_view
    from specbound.core.bounds import BoundAnalysis, PAssignment
    from specbound.present.figures.bounds import SumsView

    result = specbound.analyze(LORA_NAME)
    centred = result.centred
    assert centred is not None and result.profile.model == BoundAnalysis.from_profile(result.profile).profile.model
    view = explorer_view(
        centred,
        centred.optimal,
        assignment=PAssignment(),
        p_text="default p*",
        model=LORA_NAME,
        sums_view=SumsView.LOG,
        curve_rows=[0],
        depth=depth_figure(centred, f"{LORA_NAME} · {LABEL}"),
        source=f"{LORA_NAME} · default p*, {LABEL}",
        centring=LABEL,
    )
    return [view.heading.title, *(section.heading for section in view.report()), *(t for t, _ in view.totals[:3])]


def _words(file_name: str) -> str:
    """A file name as words: the centring written into it (``centred-at-finetune-base`` or with ``_``)
    read back as the label."""
    return file_name.replace(safe_file_part(LABEL), LABEL).replace(LABEL.replace(" ", "_"), LABEL)


def _columns(frame_columns: Any) -> list[str]:
    """The columns of a table that hold a centred quantity: every one not of the weights themselves."""
    return [str(c) for c in frame_columns if str(c) not in WEIGHT_COLUMNS]


#: Each surface: what it shows, as texts that must name the centring ("centred at finetune-base").
SURFACES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "explorer metrics": lambda pg: [m.label for m in pg["bounds"].metric if m.label not in UNCENTRED_METRICS],
    "explorer subheadings": lambda pg: [s.value for s in pg["bounds"].subheader],
    "explorer chart titles and subtitles (PNG exports)": lambda pg: _titles(pg["bounds"]),
    "explorer download file names": lambda pg: [_words(f) for f in pg["bounds_files"]],
    "explorer HTML report title, headings and totals": _report,
    "compare centred metric": lambda pg: [
        m.label for m in pg["compare"].metric if m.label not in UNCENTRED_METRICS and "baseline" not in m.label
    ],
    "compare centred heading": lambda pg: [
        s.value for s in pg["compare"].subheader if "what changed" in s.value.lower()
    ],
    "compare map of what changed": lambda pg: [t for t in _titles(pg["compare"]) if "W⁰" in t],
    "JSON reference": lambda pg: [f"centred at {Path(pg['json']['reference']['model']).name}"],
}
#: Each table: its columns of centred quantities, which must all carry the prefix delta_.
TABLES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "explorer tables": lambda pg: [c for d in pg["bounds"].dataframe for c in _columns(d.value.columns)],
    "export matrices.csv": lambda pg: _columns((pg["export"] / "matrices.csv").read_text().splitlines()[0].split(",")),
    "export layers.csv": lambda pg: _columns((pg["export"] / "layers.csv").read_text().splitlines()[0].split(",")),
    "Analysis.to_frame()": lambda pg: [c for c in _columns(pg["frame"].columns) if c.startswith(CENTRED_PREFIX)],
}


@pytest.mark.parametrize("surface", SURFACES)
def test_every_surface_names_the_centring(pages, surface) -> None:
    texts = SURFACES[surface](pages)
    assert texts, f"{surface}: nothing found to check"
    missing = [text for text in texts if LABEL.lower() not in unescaped(text).lower()]
    assert not missing, f"{surface} does not say '{LABEL}': {missing}"


@pytest.mark.parametrize("table", TABLES)
def test_every_centred_column_is_named_as_the_api_names_it(pages, table) -> None:
    columns = TABLES[table](pages)
    assert columns, f"{table}: no centred column"
    plain = [c for c in columns if not c.startswith(CENTRED_PREFIX)]
    if table.startswith("export"):  # the export keeps the uncentred terms beside the centred ones
        plain = [c for c in plain if f"{CENTRED_PREFIX}{c}" not in columns and c not in _UNCENTRED_TERMS]
    assert not plain, f"{table} holds centred numbers under plain names: {plain}"


#: The uncentred terms the export writes beside the centred columns (the weights' own bound).
_UNCENTRED_TERMS = {"schatten_p", "contribution", "p_opt", "contribution_at_p_opt", "sum_c", "log10_xi"}


def test_the_export_and_the_api_name_the_same_centred_columns(pages) -> None:
    """One scheme: the export's per-matrix centred columns are to_frame()'s, with the chosen p's two."""
    exported = set((pages["export"] / "matrices.csv").read_text().splitlines()[0].split(","))
    api = {c for c in pages["frame"].columns if c.startswith(CENTRED_PREFIX)}
    assert api <= exported and exported - api >= {"delta_schatten_p"}
    assert {"delta_rank", "delta_p_opt", "delta_contribution", "delta_contribution_at_p"} <= api
    summary = json.loads((pages["export"] / "summary.json").read_text())
    assert summary["reference"]["model"] == BASE_NAME and summary["proxies"]["ours_centred"] > 0
