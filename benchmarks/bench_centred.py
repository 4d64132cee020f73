"""The bound centred at a base (SPEC §14): ``specbound analyze TUNED --base BASE`` against the uncentred
``specbound analyze TUNED`` in the same run, on a BERT-base shape and on the Llama-7B-shaped slice.

Run with ``python benchmarks/bench_centred.py`` (a few minutes on two cores); ``--only bert,slice``
picks parts. For each shape a base is written with a fixed seed and a fine-tune beside it (every
weight moved by noise of a tenth of its scale, the slice's first layer's attention left as the base
has it), both in the base's storage type. Both commands run as whole processes with an empty profile
cache, interleaved over ``--rounds``, each measured for wall time, CPU time and peak resident memory
(:data:`bench_large.MEASURE`); the ratios centred / uncentred are printed. The centred run reads the
fine-tune twice (its own profile, then the difference) and the base once: about three analyses'
reading, and the difference's heads are twice as wide (2d), so a ratio near 2-3 in time is the
expectation, and the memory target is about one analysis's peak (the feed-forward differences are
subtracted block by block from both memory maps, neither model held whole). The centred run also
reads where each matrix points (intruder dimensions, SPEC §14b), a pass of its own over both models
(``bench_directions.py`` times it against the difference pass: about 1.4 times it on BERT-base), and
that pass holds a feed-forward matrix of each model whole in float64.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import SEED, build_slice, fresh, measured, specbound_env


def _fine_tune_of(base: Path, tuned: Path, keep: tuple[str, ...] = ()) -> Path:
    """Every weight file of ``base`` copied with each 2-D tensor moved by noise of a tenth of its
    standard deviation, except the tensors whose names contain one of ``keep``."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    if tuned.is_dir():
        return tuned
    shutil.copytree(base, tuned)
    generator = torch.Generator().manual_seed(SEED + 1)
    for file in sorted(tuned.glob("*.safetensors")):
        tensors = load_file(file)
        for name, tensor in tensors.items():
            if tensor.ndim == 2 and not any(fragment in name for fragment in keep):
                noise = torch.randn(tensor.shape, generator=generator) * 0.1 * float(tensor.float().std())
                tensors[name] = (tensor.float() + noise).to(tensor.dtype)
        save_file(tensors, file, metadata={"format": "pt"})
    return tuned


def _bert_base(work: Path) -> Path:
    import torch
    import transformers

    directory = work / "bert-base-shaped"
    if not directory.is_dir():
        torch.manual_seed(SEED)
        config = transformers.BertConfig(
            vocab_size=128, num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=64,
        )  # fmt: skip
        transformers.BertModel(config).save_pretrained(directory)
    return directory


def compare(work: Path, label: str, base: Path, tuned: Path, rounds: int) -> None:
    plain = ["-m", "specbound.cli", "analyze", str(tuned), "--json", "--no-cache"]
    centred = [*plain, "--base", str(base)]
    print(f"\n== {label}: centred at the base against uncentred ==", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for name, command in (("uncentred", plain), ("centred", centred)):
            result = measured([sys.executable, *command], specbound_env(fresh(work)), name)
            rows.setdefault(name, []).append(result)
    best = {
        name: {key: min(r[key] for r in runs) for key in ("wall_s", "cpu_s", "peak_mb")} for name, runs in rows.items()
    }
    for name, values in best.items():
        print(
            f"{name:<10} wall {values['wall_s']:7.1f} s, CPU {values['cpu_s']:7.1f} s, peak {values['peak_mb']:6.0f} MB"
        )
    ratio = {key: best["centred"][key] / best["uncentred"][key] for key in ("wall_s", "cpu_s", "peak_mb")}
    print(f"ratio      wall {ratio['wall_s']:.2f}x, CPU {ratio['cpu_s']:.2f}x, peak memory {ratio['peak_mb']:.2f}x")
    data = json.loads(rows["centred"][0]["stdout"])
    changed = sum(m["delta"]["rank"] > 0 for m in data["matrices"])
    print(
        f"ours {data['proxies']['ours_log10']:.4f}, ours_centred {data['proxies']['ours_centred_log10']:.4f} (log10); "
        f"{changed} of {len(data['matrices'])} matrices changed"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="bert,slice", help="comma-separated parts: bert, slice")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved runs of each command")
    parser.add_argument("--work", type=Path, default=None, help="where the checkpoints are written")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-centred-"))
    parts = set(args.only.split(","))
    if "bert" in parts:
        base = _bert_base(work)
        compare(
            work,
            "BERT-base shape (L=12, N=768, H=12, d_ff=3072)",
            base,
            _fine_tune_of(base, work / "bert-tuned"),
            args.rounds,
        )
    if "slice" in parts:
        base = build_slice(work / "llama-slice")
        tuned = _fine_tune_of(base, work / "llama-slice-tuned", keep=("layers.0.self_attn",))
        compare(
            work, "Llama-7B-shaped slice (2 layers, N=4096, 32/8 heads, d_ff=11008, bf16)", base, tuned, args.rounds
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
