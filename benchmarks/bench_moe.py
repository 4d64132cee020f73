"""Mixtures of experts: one Mixtral-8x7B-shaped layer against WeightWatcher, and against one Llama-7B-shaped layer.

Run with ``python benchmarks/bench_moe.py`` (about twenty minutes on two cores, most of it WeightWatcher);
``--only mixtral,llama,ww`` picks the runs, ``--rounds R`` repeats them interleaved. Everything is measured
in this run:

* **the checkpoints**, written once with a fixed seed and kept under ``$SPECBOUND_BENCH_HOME`` (default
  ``~/.cache/specbound-bench``; ``--work`` puts them elsewhere), both bf16 in three safetensors shards with a
  ``model.safetensors.index.json`` and a small vocabulary (embeddings are never analysed):
  a Mixtral-8x7B-shaped slice (one layer, N = 4096, 32 query heads, 8 key/value heads, 8 experts of
  d_ff = 14336, top-2, Hub names ``block_sparse_moe.experts.{e}.w1/w2/w3.weight`` and the router
  ``block_sparse_moe.gate.weight``; about 2.8 GB), written shard by shard so that this script never holds
  more than one shard; and a one-layer Llama-7B-shaped slice (d_ff = 11008), ``bench_large``'s builder.
* **mixtral** and **llama**: ``specbound analyze DIR --json --no-cache`` on each, a whole process with a
  fresh profile cache, measured for CPU time (user + system of the process and its children) and peak
  resident memory (``bench_large.measured``).
* **ww**: WeightWatcher 0.7.7's ``analyze()`` on the Mixtral directory, the same way, in the virtual
  environment ``bench_large`` installs it into; the layers it analysed are counted and listed by shape.

Printed: specbound's and WeightWatcher's CPU time and peak memory on the Mixtral layer and their ratios
(WeightWatcher / specbound; target: less CPU than WeightWatcher), and specbound's peak on the Mixtral
layer against its peak on the Llama-7B layer plus one expert's three matrices in float64
(3 x 4096 x 14336 x 8 bytes; target: at most that). With ``mixtral`` the JSON is checked (88 matrices,
1 x (2 x 32 + 3 x 8), every MLP one naming its expert) and expert 3's M_in is checked against numpy's
dense SVD of the stored tensor in float64 (every singular value within 1e-9 of σ₁; the spectrum comes
from one more, unmeasured run that stores its profile).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import bench_large
from bench_large import (
    HEADS,
    KV_HEADS,
    SEED,
    SHARDS,
    VOCAB,
    WW_VERSION,
    N,
    bench_home,
    fresh,
    measured,
    per_layer_seconds,
    specbound_env,
    weightwatcher_python,
)

#: Mixtral-8x7B's block
MIX_FFN, EXPERTS, TOP_K, LAYERS = 14336, 8, 2, 1
#: what one expert's three matrices take in float64, in MiB (the unit of ``measured``'s peak_mb)
EXPERT_MB = 3 * N * MIX_FFN * 8 / 2**20
CHECKED_EXPERT = 3

#: WeightWatcher on one directory; prints one JSON line, also when analyze() raises.
WW_SCRIPT = """
import json, logging, sys, traceback
logging.disable(logging.WARNING)
import weightwatcher as ww
try:
    details = ww.WeightWatcher(model=sys.argv[1]).analyze()
    names = [str(v) for v in details.get("longname", details["name"])]
    shapes = [[int(m), int(n)] for m, n in zip(details["M"], details["N"])]
    alphas = [float(a) for a in details["alpha"]] if "alpha" in details else []
    print(json.dumps({"ok": True, "version": ww.__version__, "layers": len(details), "names": names,
                      "shapes": shapes, "alpha": alphas}))
except Exception as error:
    print(json.dumps({"ok": False, "version": ww.__version__, "error": f"{type(error).__name__}: {error}",
                      "traceback": traceback.format_exc()[-3000:]}))
"""


# --- the checkpoints --------------------------------------------------------------------------------------


def build_mixtral(directory: Path) -> Path:
    """One Mixtral-8x7B-shaped layer in bf16, N(0, 0.02²) weights from a fixed seed, in three shards, written
    shard by shard (each tensor drawn in float32 on its own, then kept in bf16 until its shard is saved)."""
    import torch
    import transformers
    from safetensors.torch import save_file

    if (directory / "model.safetensors.index.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    config = transformers.MixtralConfig(
        vocab_size=VOCAB, hidden_size=N, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        intermediate_size=MIX_FFN, num_local_experts=EXPERTS, num_experts_per_tok=TOP_K,
        num_hidden_layers=LAYERS, max_position_embeddings=4096,
    )  # fmt: skip
    d = N // HEADS
    plan: list[tuple[str, tuple[int, ...], bool]] = [
        ("model.embed_tokens.weight", (VOCAB, N), True)
    ]  # (name, shape, random)
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        plan += [
            (prefix + "input_layernorm.weight", (N,), False),
            (prefix + "post_attention_layernorm.weight", (N,), False),
        ]
        plan += [
            (prefix + "self_attn.q_proj.weight", (HEADS * d, N), True),
            (prefix + "self_attn.k_proj.weight", (KV_HEADS * d, N), True),
            (prefix + "self_attn.v_proj.weight", (KV_HEADS * d, N), True),
            (prefix + "self_attn.o_proj.weight", (N, HEADS * d), True),
            (prefix + "block_sparse_moe.gate.weight", (EXPERTS, N), True),
        ]
        for expert in range(EXPERTS):
            moe = f"{prefix}block_sparse_moe.experts.{expert}."
            plan += [(moe + "w1.weight", (MIX_FFN, N), True), (moe + "w2.weight", (N, MIX_FFN), True)]
            plan.append((moe + "w3.weight", (MIX_FFN, N), True))
    plan.append(("model.norm.weight", (N,), False))
    if not config.tie_word_embeddings:
        plan.append(("lm_head.weight", (VOCAB, N), True))
    sizes = [2 * int(np.prod(shape)) for _, shape, _ in plan]
    total = sum(sizes)
    shard_of, running = [], 0
    for size in sizes:  # contiguous runs of about total / SHARDS bytes, in layer order (as bench_large's)
        shard_of.append(min(SHARDS - 1, running * SHARDS // total))
        running += size
    generator = torch.Generator().manual_seed(SEED)
    weight_map = {}
    for k in range(SHARDS):
        part = {}
        for (name, shape, random), shard in zip(plan, shard_of, strict=True):
            if shard != k:
                continue
            if random:
                part[name] = (torch.randn(shape, generator=generator) * 0.02).to(torch.bfloat16)
            else:
                part[name] = torch.ones(shape, dtype=torch.bfloat16)
        file = f"model-{k + 1:05d}-of-{SHARDS:05d}.safetensors"
        save_file(part, directory / file, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, file))
        del part
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    config.save_pretrained(directory)
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))  # last: marks it complete
    return directory


def build_llama(directory: Path) -> Path:
    """One Llama-7B-shaped layer: ``bench_large.build_slice`` with its layer count set to one for the call."""
    layers = bench_large.SLICE_LAYERS
    bench_large.SLICE_LAYERS = 1
    try:
        return bench_large.build_slice(directory)
    finally:
        bench_large.SLICE_LAYERS = layers


# --- checks -----------------------------------------------------------------------------------------------


def json_check(report: dict[str, Any]) -> list[str]:
    """What is wrong with the specbound JSON of the Mixtral slice (nothing: an empty list)."""
    problems = []
    matrices = report["matrices"]
    expected = LAYERS * (2 * HEADS + 3 * EXPERTS)
    if len(matrices) != expected:
        problems.append(f"{len(matrices)} matrices, expected {expected}")
    mlp = [m for m in matrices if m["kind"].startswith("M_")]
    if any("expert" not in m for m in matrices):
        problems.append("a matrix without an expert field")
    seen = {(m["layer"], m.get("expert"), m["kind"]) for m in mlp}
    wanted = {(layer, e, k) for layer in range(LAYERS) for e in range(EXPERTS) for k in ("M_gate", "M_in", "M_out")}
    if seen != wanted:
        problems.append(f"MLP matrices by (layer, expert, kind): {len(seen)} found, {len(seen ^ wanted)} mismatched")
    if any(m.get("expert") is not None for m in matrices if not m["kind"].startswith("M_")):
        problems.append("an attention matrix names an expert")
    for field, value in (("num_experts", EXPERTS), ("experts_per_token", TOP_K), ("ffn_size", MIX_FFN)):
        if report.get(field) != value:
            problems.append(f"{field} = {report.get(field)!r}, expected {value}")
    return problems


def stored_tensor(directory: Path, name: str) -> np.ndarray:
    """One tensor of the checkpoint as float64, read with safetensors."""
    from safetensors import safe_open

    file = json.loads((directory / "model.safetensors.index.json").read_text())["weight_map"][name]
    with safe_open(str(directory / file), framework="pt") as shards:
        tensor: np.ndarray = shards.get_tensor(name).double().numpy()
    return tensor


class DenseCheck(TypedDict):
    """What :func:`dense_check` measured: the seconds of each layer, the two spectra's lengths, and the worst
    |Δσ| / σ₁ of the stored profile and (``json``, when a report was given) of the report's norms."""

    seconds: list[float]
    count: tuple[int, int]
    worst: float
    json: NotRequired[float]


def dense_check(directory: Path, work: Path, report: dict[str, Any] | None) -> DenseCheck:
    """Expert 3's M_in (``w3``, the up projection) of layer 0: the stored profile's singular values and the
    measured run's JSON norms against numpy's dense SVD, as |Δ| / σ₁."""
    cache = fresh(work)
    seconds = per_layer_seconds(directory, cache)  # an unmeasured run that stores its profile in ``cache``
    os.environ["SPECBOUND_CACHE"] = str(cache)
    from specbound import Kind, MatrixId, load_profile

    profile = load_profile(str(directory))  # the cache entry of that run
    ours = profile.singular_values_of(MatrixId(0, Kind.M_IN, expert=CHECKED_EXPERT))
    dense = stored_tensor(directory, f"model.layers.0.block_sparse_moe.experts.{CHECKED_EXPERT}.w3.weight")
    reference = np.linalg.svd(dense, compute_uv=False)
    del dense
    worst = float(np.max(np.abs(ours - reference)) / reference[0]) if ours.size == reference.size else np.inf
    result: DenseCheck = {"seconds": seconds, "count": (ours.size, reference.size), "worst": worst}
    if report is not None:  # the measured run's own numbers for the same matrix
        row = next(m for m in report["matrices"] if m.get("expert") == CHECKED_EXPERT and m["kind"] == "M_in")
        norms = {"spectral_norm": reference[0], "frobenius_norm": np.sqrt(np.sum(reference**2))}
        norms["nuclear_norm"] = np.sum(reference)
        result["json"] = float(max(abs(row[k] - v) / reference[0] for k, v in norms.items()))
    return result


# --- the benchmark ----------------------------------------------------------------------------------------


def weightwatcher(python: Path, directory: Path) -> dict[str, Any]:
    """One measured WeightWatcher run, its report parsed; a failure is reported, not raised."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        run = measured([str(python), "-c", WW_SCRIPT, str(directory)], env, "weightwatcher")
    except SystemExit as error:  # the process died (its stderr went to this script's)
        return {"ok": False, "error": str(error)}
    lines = [line for line in run["stdout"].splitlines() if line.startswith("{")]
    if not lines:
        return {**run, "ok": False, "error": f"no report in its output: {run['stdout'][-500:]!r}"}
    return {**run, **json.loads(lines[-1])}


def describe_ww(result: dict[str, Any]) -> None:
    if not result["ok"]:
        print(f"WeightWatcher {WW_VERSION} FAILED on the Mixtral slice: {result['error']}")
        if result.get("traceback"):
            print(result["traceback"])
        return
    print(f"WeightWatcher {result['version']} analysed {result['layers']} layers of the Mixtral slice", end="")
    print(f" (specbound: {LAYERS * (2 * HEADS + 3 * EXPERTS)} proxy matrices):")
    by_shape: dict[tuple[int, int], list[str]] = {}
    for name, shape in zip(result["names"], result["shapes"], strict=True):
        by_shape.setdefault(tuple(shape), []).append(name)
    for (m, n), names in sorted(by_shape.items()):
        shown = ", ".join(names[:4]) + (f", ... ({len(names)} in all)" if len(names) > 4 else "")
        print(f"  {len(names):3d} x ({m} x {n}): {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="mixtral,llama,ww", help="runs, comma-separated: mixtral, llama, ww")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of the runs")
    parser.add_argument("--work", default=None, help="directory for the checkpoints (default: the bench home)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if parts - {"mixtral", "llama", "ww"}:
        parser.error(f"unknown parts: {', '.join(sorted(parts - {'mixtral', 'llama', 'ww'}))}")
    home = Path(args.work) if args.work else bench_home()
    home.mkdir(parents=True, exist_ok=True)
    print("building (or reusing) the checkpoints ...", flush=True)
    mixtral = build_mixtral(home / "mixtral8x7b-slice-1layer") if parts & {"mixtral", "ww"} else None
    llama = build_llama(home / "llama7b-slice-1layer") if "llama" in parts else None
    python = weightwatcher_python() if "ww" in parts else None
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in ("mixtral", "llama", "ww") if name in parts}
    with tempfile.TemporaryDirectory(prefix="specbound-moe-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):  # interleaved, so that a change in the machine's load hits every run
            for name, directory in (("mixtral", mixtral), ("llama", llama)):
                if name in parts:
                    print(f"round {r + 1}: specbound on the {name} slice ...", flush=True)
                    cli = [sys.executable, "-m", "specbound.cli", "analyze", str(directory), "--json", "--no-cache"]
                    runs[name].append(measured(cli, specbound_env(fresh(work)), f"specbound-{name}"))
            if "ww" in parts:
                print(f"round {r + 1}: WeightWatcher {WW_VERSION} on the mixtral slice ...", flush=True)
                assert python is not None and mixtral is not None  # both made above when "ww" is asked for
                runs["ww"].append(weightwatcher(python, mixtral))
        report = json.loads(runs["mixtral"][0]["stdout"]) if "mixtral" in parts else None
        if "mixtral" in parts:
            print("checking expert 3's M_in against a dense SVD ...", flush=True)
            assert mixtral is not None  # made above when "mixtral" is asked for
            checked = dense_check(mixtral, work, report)

    labels = {
        "mixtral": "specbound, Mixtral layer",
        "llama": "specbound, Llama-7B layer",
        "ww": "WeightWatcher, Mixtral",
    }
    print(f"\n== one Mixtral-8x7B-shaped layer (E={EXPERTS}, top-{TOP_K}, d_ff={MIX_FFN}, bf16, {SHARDS} shards) ==")
    for name, rows in runs.items():
        for i, row in enumerate(rows):
            if "cpu_s" not in row:
                print(f"{labels[name]:<27} round {i + 1}: failed")
                continue
            print(f"{labels[name]:<27} round {i + 1}: {row['cpu_s']:7.1f} s CPU, ", end="")
            print(f"{row['wall_s']:7.1f} s wall, {row['peak_mb']:6.0f} MB peak")
    verdict = {True: "PASS", False: "FAIL"}
    for row in runs.get("ww", [])[:1]:
        describe_ww(row)
    ww_ok = [r for r in runs.get("ww", []) if r["ok"] and "cpu_s" in r]
    if "mixtral" in runs:
        cpu_sb, mem_sb = max(r["cpu_s"] for r in runs["mixtral"]), max(r["peak_mb"] for r in runs["mixtral"])
        if ww_ok:  # specbound's worst run against WeightWatcher's best
            cpu_ww, mem_ww = min(r["cpu_s"] for r in ww_ok), min(r["peak_mb"] for r in ww_ok)
            ratios = f"CPU {cpu_ww / cpu_sb:.2f}x, memory {mem_ww / mem_sb:.2f}x"
            print(f"WeightWatcher / specbound on the Mixtral layer: {ratios}")
            print(
                f"target: specbound takes less CPU than WeightWatcher ({cpu_sb:.1f} s against {cpu_ww:.1f} s):", end=" "
            )
            print(verdict[cpu_sb < cpu_ww])
        elif "ww" in runs:
            print("target: specbound takes less CPU than WeightWatcher: not measured (WeightWatcher failed)")
        if "llama" in runs:
            mem_llama = min(r["peak_mb"] for r in runs["llama"])
            bound = mem_llama + EXPERT_MB
            extra = mem_sb - mem_llama
            peaks = f"Mixtral layer {mem_sb:.0f} MB, Llama-7B layer {mem_llama:.0f} MB (+{extra:.0f} MB)"
            print(f"specbound's peak: {peaks}")
            print(
                f"target: Mixtral-layer peak <= Llama-7B-layer peak + one expert's three matrices in float64 "
                f"(3 x {N} x {MIX_FFN} x 8 bytes = {EXPERT_MB:.0f} MB), i.e. <= {bound:.0f} MB: "
                f"{verdict[mem_sb <= bound]}"
            )
        assert report is not None  # read above from the mixtral runs
        problems = json_check(report)
        print(f"JSON: {len(report['matrices'])} matrices, expected {LAYERS} x (2 x {HEADS} + 3 x {EXPERTS}) = ", end="")
        print(f"{LAYERS * (2 * HEADS + 3 * EXPERTS)}, every MLP one with its expert:", verdict[not problems])
        for problem in problems:
            print(f"  {problem}")
        count, reference = checked["count"]
        print(
            f"dense SVD of expert {CHECKED_EXPERT}'s M_in ({count} singular values against numpy's {reference}): ",
            end="",
        )
        print(f"worst |Δσ| / σ₁ = {checked['worst']:.2e}", verdict[checked["worst"] <= 1e-9])
        if "json" in checked:
            print("  the measured run's JSON norms of it (spectral, Frobenius, nuclear): worst |Δ| / σ₁ = ", end="")
            print(f"{checked['json']:.2e}", verdict[checked["json"] <= 1e-9])
        print(f"  (the unmeasured run for it took {sum(checked['seconds']):.1f} s wall)")
    print(f"\npeak memory of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
