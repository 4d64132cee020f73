"""One colour per quantity in every figure: each matrix kind, ours, Edelman's proxy, √L and the lab's
errors take the colour that ``figures.style`` gives them, whichever builder draws them.

Every builder of the package is run on small inputs; each trace (or bar) that names a quantity by its
legend name, its category or its matrix label must carry that quantity's colour. A second check reads
the figure modules' source: no colour is written there by hand, so a new figure cannot pick its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import plotly.graph_objects as go
import pytest

from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.proxies import Proxy
from specbound.core.synthetic import Decay, contribution_curve, synthetic_spectrum
from specbound.present.figures import bounds, scaling, spectra, theory, trajectory
from specbound.present.figures.style import KIND_COLORS, QUANTITY_COLORS, Quantity, p_color
from specbound.studies.compare import compare
from specbound.studies.scaling import ModelSummary, ScalingStudy
from specbound.studies.twin import random_twin
from specbound_lab import figures as lab
from specbound_lab.reference import load_reference
from specbound_lab.views import trajectory_frame

SHAPE = ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48)
FIGURES_DIR = Path(bounds.__file__).parent

#: What a trace's name says it draws -> its colour (checked in this order: "ours at p = 0" is not ours at p*).
NAMED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^ours at p = 0|^p = 0 \(rank\)"), p_color(0.0)),
    (re.compile(r"^ours at p = 1|^p = 1 \(nuclear\)"), p_color(1.0)),
    (re.compile(r"^ours at p = 2|^p = 2 \(Frobenius\)"), p_color(2.0)),
    (re.compile(r"^ours at the chosen p"), QUANTITY_COLORS[Quantity.OURS_AT_P]),
    (re.compile(r"^ours( at p\*| \(p\*\))"), QUANTITY_COLORS[Proxy.OURS]),
    (re.compile(r"Edelman|ξ"), QUANTITY_COLORS[Proxy.EDELMAN]),
    (re.compile(r"^log10 α"), QUANTITY_COLORS[Quantity.ALPHA]),
    (re.compile(r"^√L$"), QUANTITY_COLORS[Quantity.SQRT_DEPTH]),
    (re.compile(r"^train error"), QUANTITY_COLORS[Quantity.TRAIN_ERROR]),
    (re.compile(r"^test error"), QUANTITY_COLORS[Quantity.TEST_ERROR]),
    (re.compile(r"^gap"), QUANTITY_COLORS[Quantity.GAP]),
    # a kind by its name (bars, points); a single matrix's curve by its label ("L1 QK h2", see below)
    *((re.compile(rf"^{kind.value}$"), color) for kind, color in KIND_COLORS.items()),
)


def expected_color(name: str) -> str | None:
    return next((color for pattern, color in NAMED if pattern.search(name)), None)


def trace_color(trace: go.BaseTraceType) -> object:
    line = getattr(trace, "line", None)
    if trace.type in ("scatter",) and line is not None and line.color is not None and "lines" in (trace.mode or ""):
        return line.color
    return trace.marker.color


def named_colors(fig: go.Figure) -> Iterator[tuple[str, str, str]]:
    """(what, expected colour, colour drawn) for every trace or bar that names a quantity."""
    for trace in fig.data:
        color = trace_color(trace)
        categories = trace.y if getattr(trace, "orientation", None) == "h" else None
        if isinstance(color, (list, tuple)) and categories is not None:  # one bar per quantity
            for category, drawn in zip(categories, color, strict=True):
                if (wanted := expected_color(str(category))) is not None:
                    yield str(category), wanted, drawn
        elif trace.name and (wanted := expected_color(str(trace.name))) is not None and color is not None:
            yield str(trace.name), wanted, str(color)


@pytest.fixture(scope="module")
def mixed() -> BoundAnalysis:
    return BoundAnalysis.from_profile(random_twin(SHAPE, model="tiny", initializer_range=0.08))


def _study() -> ScalingStudy:
    return ScalingStudy.from_summaries(
        ModelSummary(
            f"L{l}-H{n}",
            l,
            n,
            log_ours=0.5 * math.log(l) + math.log(n),
            log_edelman=1.5 * math.log(l) + 2 * math.log(n),
            log_fixed={0.0: math.log(l * n), 1.0: math.log(l) + 1, 2.0: 2 * math.log(l * n)},
        )
        for l in (2, 4, 6)
        for n in (128, 256)
    )


def every_figure(analysis: BoundAnalysis) -> Iterator[tuple[str, go.Figure]]:
    terms = analysis.evaluate(0.5)
    profile = analysis.profile
    for view in bounds.SumsView:
        yield f"term_sums {view.value}", bounds.term_sums(analysis, terms, view)
    yield "depth_factors", bounds.depth_factors(analysis)
    yield "contribution_curves", bounds.contribution_curves(analysis, [0, 1, 4, 8, 9], terms)
    yield (
        "proxy_comparison",
        bounds.proxy_comparison(
            {Quantity.OURS_AT_P: terms.log_total, Proxy.OURS: analysis.optimal.log_total, Proxy.EDELMAN: 9.0}
        ),
    )
    yield "p_star_histogram", bounds.p_star_histogram(analysis)
    yield "break_even", bounds.break_even_figure(analysis)
    other = BoundAnalysis.from_profile(random_twin(SHAPE, model="twin", initializer_range=0.02))
    yield "compare_bars", bounds.compare_bars(compare(analysis, other, p=1.0))
    for layers, kinds, heads in ((None, None, None), ([1], [Kind.QK], [2]), ([0], [Kind.M_OUT], None)):
        yield f"spectra {layers} {kinds}", spectra.singular_value_profiles(profile, layers, kinds, heads=heads)
        yield f"energy {layers} {kinds}", spectra.cumulative_energy_curves(profile, layers, kinds, heads=heads)
    study = _study()
    for against in ("L", "N"):
        yield f"growth {against}", scaling.growth_figure(study.curves(against), against, study.exponents)
    sv = synthetic_spectrum(32, Decay.POWER, 1.0)
    yield "playground", theory.playground_figure(sv, contribution_curve(sv, hidden_size=32, scale=1e3, grid_m=6))
    run = load_reference().runs[0]
    frame = trajectory_frame(run)
    yield "proxies through training", trajectory.proxies_figure(frame)
    yield "errors through training", lab.errors_figure(frame)


def test_every_figure_draws_each_quantity_in_its_one_colour(mixed: BoundAnalysis) -> None:
    checked: set[str] = set()
    for where, fig in every_figure(mixed):
        for what, wanted, drawn in named_colors(fig):
            assert str(drawn).upper() == wanted.upper(), (where, what, drawn, wanted)
            checked.add(what.split(" ~ ")[0])
    # the check ran on every kind of quantity, not on a lucky few
    for needed in ("QK", "V", "M_in", "M_out", "√L", "Edelman-style", "ours at p*", "train error", "gap"):
        assert any(c.startswith(needed) for c in checked), (needed, sorted(checked))


def test_the_palette_gives_distinct_colours_to_the_kinds_and_proxies() -> None:
    shown_together = [*KIND_COLORS.values(), QUANTITY_COLORS[Proxy.OURS], QUANTITY_COLORS[Proxy.EDELMAN]]
    assert len({c.upper() for c in shown_together}) == len(shown_together)
    assert len({p_color(p) for p in (0.0, 1.0, 2.0)}) == 3  # three places along the p scale


HEX_OR_RGB = re.compile(r"#[0-9A-Fa-f]{6}\b|\brgba?\(")


@pytest.mark.parametrize("module", sorted(p.name for p in FIGURES_DIR.glob("*.py") if p.name != "style.py"))
def test_no_figure_module_picks_a_colour_of_its_own(module: str) -> None:
    """Colours live in style.py; a builder names a quantity, a kind or a palette position, never a colour."""
    source = (FIGURES_DIR / module).read_text(encoding="utf-8")
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    found = HEX_OR_RGB.findall(code)
    if module == "html_report.py":  # the report's CSS: table borders and header shading, no data
        found = [f for f in found if not f.startswith("#")]
    assert found == [], (module, found)
    assert not re.search(r'"color": "(?!white"|black")[a-z]+"', code), module


@pytest.mark.parametrize("index", [0, 5, 9])  # L0 QK h0, L0 V h1, L0 M_out
def test_a_single_matrix_is_drawn_in_its_kinds_colour_without_a_legend(mixed: BoundAnalysis, index: int) -> None:
    """The drill-down's charts: one matrix, one colour (its kind's) whichever matrix is open, no legend."""
    profile = mixed.profile
    matrix = profile.ids[index]
    heads = [matrix.head] if matrix.head is not None else None
    for fig in (
        spectra.singular_value_profiles(profile, [matrix.layer], [matrix.kind], heads=heads),
        spectra.cumulative_energy_curves(profile, [matrix.layer], [matrix.kind], heads=heads),
    ):
        drawn = [t for t in fig.data if t.x is not None and len(t.x) and t.x[0] is not None]
        assert drawn and {t.line.color for t in drawn} == {KIND_COLORS[matrix.kind]}
        assert fig.layout.showlegend is False and not fig.layout.legend.title.text
    curve = bounds.contribution_curves(mixed, [index], mixed.optimal)
    assert next(t for t in curve.data if t.name == matrix.label).line.color == KIND_COLORS[matrix.kind]
    assert curve.layout.showlegend is False


def test_several_layers_keep_their_layer_colours(mixed: BoundAnalysis) -> None:
    fig = spectra.singular_value_profiles(mixed.profile, None, [Kind.M_IN])
    legend = [t for t in fig.data if t.showlegend is not False and t.name and t.name.startswith("layer")]
    assert [t.name for t in legend] == ["layer 0", "layer 1"]
    assert len({t.line.color for t in legend}) == 2 and fig.layout.legend.title.text == "layer (0 = bottom)"


#: A hover placeholder of a trace's own x, y or z, with its d3 format if any: %{y:.4g}, %{x}.
PLACEHOLDER = re.compile(r"%\{([xyz])(?::([^}]*))?\}")


def _values(trace: go.BaseTraceType, axis: str) -> list[float]:
    raw = getattr(trace, axis, None)
    if raw is None or isinstance(raw, str):
        return []
    flat = [v for row in raw for v in (row if isinstance(row, (list, tuple)) else [row])]
    return [float(v) for v in flat if isinstance(v, (int, float)) and math.isfinite(float(v))]


@pytest.mark.parametrize("scale", [0.08, 1.0])  # σ = 1: terms of 10¹⁰ and more, where Plotly writes "1.5e+10"
def test_hovers_write_numbers_as_the_pages_do(scale: float) -> None:
    """A hover shows a large or tiny number through the project's format (pre-written in customdata),
    never through a Plotly format that would print E-notation ('1.499e+12') or SI prefixes ('1.5T')."""
    analysis = BoundAnalysis.from_profile(random_twin(SHAPE, model="tiny", initializer_range=scale))
    for where, fig in every_figure(analysis):
        for trace in fig.data:
            template = (trace.hovertemplate or "") + (getattr(trace, "texttemplate", None) or "")
            for axis, fmt in PLACEHOLDER.findall(template):
                if fmt and fmt.rstrip("~").endswith("f"):  # fixed decimals: p, log10, gaps
                    continue
                if trace.type == "bar" and axis == ("y" if trace.orientation == "h" else "x"):
                    continue  # the category
                values = _values(trace, axis)
                assert all(v == 0 or 1e-3 <= abs(v) < 1e5 for v in values) or not values, (
                    where,
                    trace.name,
                    template,
                    max(values, key=abs),
                )
    big = bounds.term_sums(analysis, analysis.evaluate(2.0))
    hover = [row[1] for row in big.data[0].customdata]
    assert all("e+" not in text and "E" not in text for text in hover)
