"""Server time of the Spectra figures on the bundled MiniLM (SPEC §7, issue target: well under 0.5 s).

Run with ``python benchmarks/bench_figures.py``. For each figure the page builds by default, and for
the per-head variant, it reports the trace count, the size of the JSON the server sends, and the best
of five builds plus that serialisation in wall-clock time and in CPU time of this process (the CPU
time is the steadier number on a shared machine).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import plotly.graph_objects as go

from specbound.io.loading import load_profile
from specbound.present.figures import spectra

REPEATS = 5


def best_of(build: Callable[[], go.Figure]) -> tuple[int, int, float, float]:
    """(traces, JSON bytes, best wall time, best CPU time) of build + to_json, in seconds."""
    build()  # warm plotly's validators
    wall, cpu = [], []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        payload = build().to_json()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return len(build().data), len(payload), min(wall), min(cpu)


def main() -> None:
    profile = load_profile("minilm-l6")
    cases = {
        "singular_value_profiles (default: heads aggregated)": lambda: spectra.singular_value_profiles(profile),
        "singular_value_profiles, normalised": lambda: spectra.singular_value_profiles(profile, normalise=True),
        "cumulative_energy_curves": lambda: spectra.cumulative_energy_curves(profile),
        "head_heatmaps (QK)": lambda: spectra.head_heatmaps(profile, "QK"),
        "singular_value_profiles, every head": lambda: spectra.singular_value_profiles(
            profile, heads=range(profile.shape.num_heads)
        ),
    }
    for name, build in cases.items():
        traces, size, wall, cpu = best_of(build)
        print(f"{name}: {traces} traces, {size / 1e3:.0f} kB JSON, build + to_json {wall:.3f} s wall, {cpu:.3f} s CPU")


if __name__ == "__main__":
    main()
