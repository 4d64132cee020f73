"""Server time of the Spectra figures on the bundled MiniLM (SPEC §7, issue target: well under 0.5 s).

Run with ``python benchmarks/bench_figures.py``. For each figure the page builds by default, and for
the per-head variant, it reports the best of five builds and of five builds plus the JSON
serialisation the server sends to the browser, with the trace count.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import plotly.graph_objects as go  # noqa: E402

from specbound.analysis import load_profile  # noqa: E402
from specbound.figures import spectra  # noqa: E402

REPEATS = 5


def best_of(build: Callable[[], go.Figure]) -> tuple[int, float, float]:
    """(traces, best build time, best build + to_json time) in seconds."""
    build()  # warm plotly's validators
    built, sent = [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        figure = build()
        middle = time.perf_counter()
        figure.to_json()
        built.append(middle - start)
        sent.append(time.perf_counter() - start)
    return len(figure.data), min(built), min(sent)


def main() -> None:
    profile = load_profile("minilm-l6")
    cases = {
        "singular_value_profiles (default: heads aggregated)": lambda: spectra.singular_value_profiles(profile),
        "singular_value_profiles, normalised": lambda: spectra.singular_value_profiles(profile, normalise=True),
        "cumulative_energy_curves": lambda: spectra.cumulative_energy_curves(profile),
        "head_heatmaps (QK)": lambda: spectra.head_heatmaps(profile, "QK"),
        "singular_value_profiles, every head": lambda: spectra.singular_value_profiles(
            profile, heads=range(profile.shape.num_heads)),
    }
    for name, build in cases.items():
        traces, built, sent = best_of(build)
        print(f"{name}: {traces} traces, build {built:.3f} s, build + to_json {sent:.3f} s")


if __name__ == "__main__":
    main()
