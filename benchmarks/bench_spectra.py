"""Benchmark of SPEC §7 on a BERT-base-shaped encoder (L = 12, N = 768, 12 heads, d_ff = 3072).

Run with ``python benchmarks/bench_spectra.py`` (or ``make bench``). It writes a randomly initialised
checkpoint with ``save_pretrained`` to a temporary directory, then measures in the same run:

* the spectral analysis of all 312 proxy matrices (``compute_profile``; reading the file is timed
  apart) against the baseline, a dense ``np.linalg.svd`` of each matrix formed in float64, and checks
  that every singular value agrees with the baseline to 1e-9 of sigma_1;
* re-opening the analysed model from the profile cache, in this process and in a fresh one;
* recomputing every bound term for a new assignment of p (a slider move);
* the peak resident memory of a ``specbound analyze DIR --json`` process.

Timings are reported against their targets; only a disagreement of the spectra fails the run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from specbound.core.bounds import BoundAnalysis, BoundTerms, PAssignment
from specbound.core.matrices import LayerWeights
from specbound.core.threads import serial_blas

SEED = 0
LAYERS, HIDDEN, HEADS, FFN = 12, 768, 12, 3072
VOCAB = 128  # the embeddings are never analysed; a small vocabulary keeps the file small
AGREEMENT = 1e-9  # relative to sigma_1 of each matrix

TARGET_SPEEDUP = 8.0
TARGET_REOPEN_S = 1.0
TARGET_SLIDER_S = 0.050
TARGET_RSS_MB = 1536.0


def build_checkpoint(directory: Path) -> None:
    import torch
    import transformers

    torch.manual_seed(SEED)
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        num_hidden_layers=LAYERS,
        hidden_size=HIDDEN,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=64,
    )
    transformers.BertModel(config).save_pretrained(directory)


def dense_matrices(layer: LayerWeights) -> list[np.ndarray]:
    """The 2H + 2 proxy matrices of one layer, formed densely in float64, in profile order."""
    assert layer.ffn_in is not None and layer.ffn_out is not None  # BERT's dense MLP
    d = HIDDEN // HEADS
    heads = [slice(h * d, (h + 1) * d) for h in range(HEADS)]
    qk = [layer.query[s].T @ layer.key[s] for s in heads]  # (N, N) each
    v = [layer.value[s].T @ layer.attn_out.T[s] for s in heads]  # (N, N) each
    return [*qk, *v, layer.ffn_in.T, layer.ffn_out.T]  # M_in (N, d_ff), M_out (d_ff, N)


def time_call(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


FRESH_PROCESS = """
import sys, time
start = time.perf_counter()
from specbound import load_profile
profile = load_profile(sys.argv[1])
assert profile.shape.num_matrices == 312
print(time.perf_counter() - start)
"""


def main() -> int:
    from specbound import BoundAnalysis, Kind, PAssignment, compute_profile, load_profile
    from specbound.io.checkpoints import open_checkpoint

    rows: list[tuple[str, str, str, str]] = []

    def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
        rows.append((name, value, target, "" if ok is None else ("ok" if ok else "MISSED")))

    with tempfile.TemporaryDirectory(prefix="specbound-bench-") as tmp:
        tmp_path = Path(tmp)
        os.environ["SPECBOUND_CACHE"] = str(tmp_path / "profiles")  # never the user's cache
        model_dir = tmp_path / "bert-base-shaped"
        print(f"building a BERT-base-shaped checkpoint (L={LAYERS}, N={HIDDEN}, H={HEADS}, d_ff={FFN}) ...", flush=True)
        build_checkpoint(model_dir)

        # Peak memory of a whole CLI process, first, so that no other child sets the high-water mark.
        cli = [sys.executable, "-m", "specbound.cli", "analyze", str(model_dir), "--json", "--no-cache"]
        start = time.perf_counter()
        subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)
        cli_seconds = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux

        checkpoint = open_checkpoint(model_dir)
        start = time.perf_counter()
        layers = list(checkpoint.layers())  # float64 weights of every layer
        read_seconds = time.perf_counter() - start

        start = time.perf_counter()
        profile = compute_profile(layers, checkpoint.shape)
        ours_seconds = time.perf_counter() - start
        assert profile.shape.num_matrices == LAYERS * (2 * HEADS + 2) == 312

        print("dense SVD baseline of 312 matrices ...", flush=True)
        # The baseline's SVDs follow the analysis' LAPACK thread policy, so the ratio compares methods.
        blas = serial_blas()
        baseline_seconds = 0.0
        worst = 0.0
        index = 0
        for layer in layers:
            for matrix in dense_matrices(layer):
                start = time.perf_counter()
                dense_sv = np.linalg.svd(matrix, compute_uv=False)
                baseline_seconds += time.perf_counter() - start
                ours = profile.singular_values_of(index)  # zero-padded to min(rows, cols)
                assert ours.shape == dense_sv.shape
                worst = max(worst, float(np.max(np.abs(ours - dense_sv)) / dense_sv[0]))
                index += 1
        blas.restore_original_limits()
        del layers
        speedup = baseline_seconds / ours_seconds

        # Profile cache: the first load computes and stores, the second only reads the entry.
        start = time.perf_counter()
        load_profile(str(model_dir))
        cold_seconds = time.perf_counter() - start
        reopen_seconds = time_call(lambda: load_profile(str(model_dir)), repeat=5)
        start = time.perf_counter()
        fresh = subprocess.run(
            [sys.executable, "-c", FRESH_PROCESS, str(model_dir)], check=True, capture_output=True, text=True
        )
        fresh_total = time.perf_counter() - start
        fresh_inside = float(fresh.stdout.strip())

        # Slider move: all terms for a new assignment of p, from the cached spectra only.
        analysis = BoundAnalysis.from_profile(profile)
        moves = [
            PAssignment(default=0.5, by_kind={Kind.QK: 1.25}, by_layer={3: 0.75}),
            PAssignment(default=1.0),
            PAssignment(by_kind={Kind.M_IN: 2.0}),
        ]
        slider_seconds = max(time_call(partial(_touch_at, analysis, move), repeat=20) for move in moves)
        from_profile_seconds = time_call(lambda: BoundAnalysis.from_profile(profile), repeat=5)

    agree = worst <= AGREEMENT
    row("read weights (12 layers, float64)", f"{read_seconds:.2f} s")
    row("spectral analysis, 312 matrices", f"{ours_seconds:.2f} s")
    row("dense SVD baseline, 312 matrices (LAPACK on 1 thread)", f"{baseline_seconds:.2f} s")
    row("speed-up over dense SVD", f"{speedup:.1f}x", f">= {TARGET_SPEEDUP:g}x", speedup >= TARGET_SPEEDUP)
    row("max |sigma - sigma_dense| / sigma_1", f"{worst:.2e}", f"<= {AGREEMENT:g}", agree)
    row("first load_profile (read + analyse + store)", f"{cold_seconds:.2f} s")
    row(
        "re-open from cache, same process",
        f"{reopen_seconds * 1e3:.1f} ms",
        f"< {TARGET_REOPEN_S:g} s",
        reopen_seconds < TARGET_REOPEN_S,
    )
    row(
        "re-open from cache, fresh process (import + load)",
        f"{fresh_inside:.2f} s",
        f"< {TARGET_REOPEN_S:g} s",
        fresh_inside < TARGET_REOPEN_S,
    )
    row("  same, including interpreter start-up", f"{fresh_total:.2f} s")
    row(
        "slider move: BoundAnalysis.evaluate (worst of 3)",
        f"{slider_seconds * 1e3:.2f} ms",
        f"< {TARGET_SLIDER_S * 1e3:g} ms",
        slider_seconds < TARGET_SLIDER_S,
    )
    row("  BoundAnalysis.from_profile (once per model)", f"{from_profile_seconds * 1e3:.1f} ms")
    row(
        "peak RSS of 'specbound analyze --json'",
        f"{peak_mb:.0f} MB",
        f"<= {TARGET_RSS_MB:g} MB",
        peak_mb <= TARGET_RSS_MB,
    )
    row("  its wall time", f"{cli_seconds:.2f} s")

    header = ("measure", "value", "target", "status")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    print()
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    if not agree:
        print(
            f"\nFAILED: the spectra differ from the dense SVD by {worst:.2e} of sigma_1 (> {AGREEMENT:g})",
            file=sys.stderr,
        )
        return 1
    return 0


def _touch_at(analysis: BoundAnalysis, move: PAssignment) -> None:
    """Evaluate one slider move, timed whole (:func:`_touch`)."""
    _touch(analysis.evaluate(move))


def _touch(terms: BoundTerms) -> None:
    """Force the lazily computed totals so that the timing covers every term."""
    terms.contribution, terms.schatten, terms.log_total, terms.log_per_kind()


if __name__ == "__main__":
    sys.exit(main())
