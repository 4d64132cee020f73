"""Large checkpoints (issue "Large checkpoints"): a Llama-7B-shaped slice against WeightWatcher, BERT-large
against a baseline revision, a killed-and-resumed analysis, and the measurement behind the core defaults.

Run with ``python benchmarks/bench_large.py`` (about half an hour on two cores, most of it WeightWatcher);
``--only slice,resume,bert,cores`` picks parts. Everything is measured in this run:

* **slice**: a Llama-7B-shaped slice (N = 4096, 32 query heads, 8 key/value heads, d_ff = 11008, bf16,
  two layers, three safetensors shards, a small vocabulary: embeddings are never analysed) written
  with a fixed seed. ``specbound analyze DIR --json --no-cache`` and WeightWatcher 0.7.7's
  ``analyze()`` on the same directory run as whole processes, interleaved (``--rounds``; specbound
  with its default numpy backend and with ``--backend torch`` on the CPU), each
  measured for CPU time (user + system of the process and its children) and peak resident memory.
  WeightWatcher is installed by this script into its own virtual environment (not a dependency of
  specbound) under ``$SPECBOUND_BENCH_HOME`` (default ``~/.cache/specbound-bench``), borrowing the
  project's PyTorch build through a ``.pth`` file. Targets: at least 5x less CPU time, at most a
  third of its peak memory. The per-layer time is printed and extrapolated to 32 and 80 layers, and
  a few matrices of layer 0 are checked against a dense SVD (every singular value within 1e-9 of σ₁).
* **resume**: the same CLI run is SIGKILLed in its second layer (once layer 1's cache entry exists),
  then run again: the time lost, (killed + resumed) - uninterrupted, must stay within one layer's time,
  and the resumed JSON must equal an uninterrupted one byte for byte.
* **bert**: a BERT-large-shaped encoder (L = 24, N = 1024, 16 heads, d_ff = 4096), time and peak memory
  of ``specbound analyze`` now against the same command of a baseline git revision (``--baseline``,
  default ``main``, extracted with ``git archive``) in the same run: no regression.
* **cores**: BERT-base-shaped layers analysed one at a time against two (or more) in parallel, and the
  eigen-solve of a 4096 x 4096 Gram matrix with one BLAS thread against all (and through torch's
  LAPACK): what :func:`specbound.core.engine.default_workers` and the serial eigen-solves rest on.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WW_VERSION = "0.7.7"
SEED = 0
#: Llama-2-7B's block
N, HEADS, KV_HEADS, FFN, SLICE_LAYERS, SHARDS = 4096, 32, 8, 11008, 2, 3
VOCAB = 128

#: Runs one command as the only child of this wrapper and reports its CPU seconds and peak RSS (MB).
MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
result = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
json.dump({"status": result.returncode, "wall_s": time.perf_counter() - start,
           "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}, open(sys.argv[1], "w"))
"""

WW_SCRIPT = """
import sys, logging
logging.disable(logging.WARNING)
import weightwatcher as ww
watcher = ww.WeightWatcher(model=sys.argv[1])
details = watcher.analyze()
print(len(details), "layers analysed by WeightWatcher", ww.__version__)
"""


def bench_home() -> Path:
    return Path(os.environ.get("SPECBOUND_BENCH_HOME", Path.home() / ".cache" / "specbound-bench")).expanduser()


def measured(command: list[str], env: dict[str, str] | None = None, tag: str = "run") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / f"{tag}.json"
        subprocess.run([sys.executable, "-c", MEASURE, str(report), *command], env=env, check=True)
        result: dict[str, Any] = json.loads(report.read_text())
        result["stdout"] = Path(str(report) + ".out").read_text()
    if result["status"] != 0:
        raise SystemExit(f"{tag} failed with status {result['status']}")
    return result


def fresh(work: Path) -> Path:
    """A new, empty profile cache for one run (a reused one would answer from an earlier run)."""
    return Path(tempfile.mkdtemp(prefix="cache-", dir=work))


def specbound_env(cache: Path, pythonpath: Path = ROOT) -> dict[str, str]:
    return {**os.environ, "SPECBOUND_CACHE": str(cache), "PYTHONPATH": str(pythonpath)}


# --- the Llama-7B-shaped slice ----------------------------------------------------------------------------


def build_slice(directory: Path) -> Path:
    """Two Llama-7B-shaped layers in bf16, N(0, 0.02²) weights from a fixed seed, in three shards."""
    import torch
    import transformers
    from safetensors.torch import save_file

    if (directory / "model.safetensors.index.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=N, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        intermediate_size=FFN, num_hidden_layers=SLICE_LAYERS, max_position_embeddings=4096,
    )  # fmt: skip
    config.save_pretrained(directory)
    d = N // HEADS
    shapes = {
        "self_attn.q_proj.weight": (HEADS * d, N),
        "self_attn.k_proj.weight": (KV_HEADS * d, N),
        "self_attn.v_proj.weight": (KV_HEADS * d, N),
        "self_attn.o_proj.weight": (N, HEADS * d),
        "mlp.gate_proj.weight": (FFN, N),
        "mlp.up_proj.weight": (FFN, N),
        "mlp.down_proj.weight": (N, FFN),
    }
    generator = torch.Generator().manual_seed(SEED)

    def normal(shape: tuple[int, ...]) -> torch.Tensor:
        return (torch.randn(shape, generator=generator) * 0.02).to(torch.bfloat16)

    tensors = [("model.embed_tokens.weight", normal((VOCAB, N)))]
    for layer in range(SLICE_LAYERS):
        tensors.append((f"model.layers.{layer}.input_layernorm.weight", torch.ones(N, dtype=torch.bfloat16)))
        tensors.append((f"model.layers.{layer}.post_attention_layernorm.weight", torch.ones(N, dtype=torch.bfloat16)))
        tensors += [(f"model.layers.{layer}.{name}", normal(shape)) for name, shape in shapes.items()]
    tensors.append(("model.norm.weight", torch.ones(N, dtype=torch.bfloat16)))
    total = sum(t.numel() * 2 for _, t in tensors)
    shards: list[list[tuple[str, torch.Tensor]]] = [[] for _ in range(SHARDS)]
    running = 0
    for name, tensor in tensors:  # contiguous runs of about total / SHARDS bytes, in layer order
        shards[min(SHARDS - 1, running * SHARDS // total)].append((name, tensor))
        running += tensor.numel() * 2
    weight_map = {}
    for k, part in enumerate(shards, start=1):
        file = f"model-{k:05d}-of-{SHARDS:05d}.safetensors"
        save_file(dict(part), directory / file, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys((name for name, _ in part), file))
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    return directory


def weightwatcher_python() -> Path:
    """The interpreter of a virtual environment holding WeightWatcher 0.7.7, created on first use."""
    venv = bench_home() / f"weightwatcher-{WW_VERSION}"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import torch, weightwatcher; assert weightwatcher.__version__ == '{WW_VERSION}'"]
    if python.is_file() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"installing WeightWatcher {WW_VERSION} into {venv} ...", flush=True)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"weightwatcher=={WW_VERSION}"], check=True)
    import torch

    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # PyTorch (which WeightWatcher reads safetensors with) from this project, appended after the
    # environment's own packages, so that WeightWatcher's other dependencies are its own.
    (Path(site) / "zz_borrowed_torch.pth").write_text(
        f"import sys; sys.path.append({str(Path(torch.__file__).parent.parent)!r})\n"
    )
    subprocess.run(probe, check=True)
    return python


def dense_check(directory: Path, cache: Path) -> float:
    """Worst |σ_i - σ_i(dense)| / σ₁ over QK and V of heads 0 and 31 and M_in of layer 0."""
    os.environ["SPECBOUND_CACHE"] = str(cache)
    from specbound import Kind, MatrixId, load_profile
    from specbound.core.matrices import layer_factors
    from specbound.io.checkpoints import open_checkpoint

    profile = load_profile(str(directory))  # the cache entry of the run above
    checkpoint = open_checkpoint(directory)
    factors = layer_factors(checkpoint.layer(0), checkpoint.shape)
    worst = 0.0
    for matrix, dense in (
        (MatrixId(0, Kind.QK, 0), factors.qk_left[0] @ factors.qk_right[0]),
        (MatrixId(0, Kind.V, 31), factors.v_left[31] @ factors.v_right[31]),
        (MatrixId(0, Kind.M_IN), factors.m_in),
    ):
        reference = np.linalg.svd(dense, compute_uv=False)
        ours = profile.singular_values_of(matrix)
        worst = max(worst, float(np.max(np.abs(ours - reference)) / reference[0]))
    return worst


def bench_slice(work: Path, rounds: int) -> dict[str, Any]:
    directory = build_slice(work / "llama7b-slice")
    python = weightwatcher_python()
    cli = [sys.executable, "-m", "specbound.cli", "analyze", str(directory), "--json", "--no-cache"]
    commands = {"specbound": cli, "specbound --backend torch": [*cli, "--backend", "torch"]}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in (*commands, "weightwatcher")}
    for r in range(rounds):  # interleaved, so that a change in the machine's load hits every tool
        for name, command in commands.items():
            print(f"round {r + 1}: {name} ...", flush=True)
            runs[name].append(measured(command, specbound_env(fresh(work)), name.replace(" ", "")))
        print(f"round {r + 1}: WeightWatcher {WW_VERSION} ...", flush=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        runs["weightwatcher"].append(measured([str(python), "-c", WW_SCRIPT, str(directory)], env, "weightwatcher"))
    # per-layer time, from the progress events of one more run in this process's child
    cache = fresh(work)
    layer_times = per_layer_seconds(directory, cache)
    worst = dense_check(directory, cache)
    per_layer = float(np.mean(layer_times))
    print("\n== Llama-7B-shaped slice (2 layers, 3 shards, bf16) ==")
    for name, rows in runs.items():
        for i, row in enumerate(rows):
            print(f"{name:<26} round {i + 1}: {row['cpu_s']:7.1f} s CPU, ", end="")
            print(f"{row['wall_s']:7.1f} s wall, {row['peak_mb']:6.0f} MB peak")
    verdict = {True: "ok", False: "MISSED"}
    ww = runs["weightwatcher"]
    cpu_ww, mem_ww = min(r["cpu_s"] for r in ww), min(r["peak_mb"] for r in ww)
    for name in commands:  # specbound's worst run against WeightWatcher's best
        cpu_sb, mem_sb = max(r["cpu_s"] for r in runs[name]), max(r["peak_mb"] for r in runs[name])
        print(f"{name}: CPU time {cpu_ww / cpu_sb:.1f}x less than WeightWatcher's (target >= 5x)", end=" ")
        print(verdict[cpu_ww >= 5 * cpu_sb])
        print(f"{name}: peak memory {mem_sb / mem_ww:.2f} of WeightWatcher's (target <= 1/3)", end=" ")
        print(verdict[3 * mem_sb <= mem_ww])
    print(f"per layer (wall): {', '.join(f'{t:.1f} s' for t in layer_times)}; mean {per_layer:.1f} s")
    print(
        f"extrapolated at this width: 32 layers {32 * per_layer / 60:.1f} min, 80 layers {80 * per_layer / 60:.1f} min"
    )
    print(f"dense SVD check of layer 0 (QK h0, V h31, M_in): worst |Δσ| / σ₁ = {worst:.2e}", verdict[worst <= 1e-9])
    return {"runs": runs, "per_layer_s": layer_times, "worst": worst}


PER_LAYER = """
import json, sys, time
from specbound.io.loading import load_profile
stamps = [time.perf_counter()]
load_profile(sys.argv[1], progress=lambda e: stamps.append(time.perf_counter()) if e.stage == "analyse" else None)
print(json.dumps(stamps))
"""


def per_layer_seconds(directory: Path, cache: Path) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", PER_LAYER, str(directory)],
        env=specbound_env(cache), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [float(t) for t in np.diff(json.loads(out))]  # the first includes opening the checkpoint


# --- killed and resumed ---------------------------------------------------------------------------------------


def bench_resume(work: Path) -> None:
    directory = build_slice(work / "llama7b-slice")
    cli = [sys.executable, "-m", "specbound.cli", "analyze", str(directory), "--json"]
    print("\n== killed in layer 2, then resumed ==", flush=True)
    start = time.perf_counter()
    whole = subprocess.run(cli, env=specbound_env(fresh(work)), capture_output=True, text=True, check=True)
    uninterrupted = time.perf_counter() - start
    cache = fresh(work)
    start = time.perf_counter()
    victim = subprocess.Popen(cli, env=specbound_env(cache), stdout=subprocess.DEVNULL)
    while not list(cache.glob("*.layer.npz")):  # layer 1 is stored: the run is in layer 2
        time.sleep(0.2)
        if victim.poll() is not None:
            raise SystemExit("the run ended before it could be killed")
    entered = time.perf_counter()
    time.sleep(max(1.0, 0.5 * (entered - start)))  # well inside layer 2
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed = time.perf_counter() - start
    start = time.perf_counter()
    again = subprocess.run(cli, env=specbound_env(cache), capture_output=True, text=True, check=True)
    resumed = time.perf_counter() - start
    layer = uninterrupted / SLICE_LAYERS
    lost = killed + resumed - uninterrupted
    print(f"uninterrupted {uninterrupted:.1f} s; killed after {killed:.1f} s, resumed in {resumed:.1f} s")
    print(f"time lost {lost:.1f} s against one layer's {layer:.1f} s  {'ok' if lost <= layer else 'MISSED'}")
    print(f"resumed JSON byte-identical to the uninterrupted one: {again.stdout == whole.stdout}")


# --- BERT-large against a baseline revision -------------------------------------------------------------------


def bench_bert(work: Path, baseline: str) -> None:
    import torch
    import transformers

    directory = work / "bert-large-shaped"
    if not directory.is_dir():
        torch.manual_seed(SEED)
        config = transformers.BertConfig(
            vocab_size=128, num_hidden_layers=24, hidden_size=1024, num_attention_heads=16,
            intermediate_size=4096, max_position_embeddings=64,
        )  # fmt: skip
        transformers.BertModel(config).save_pretrained(directory)
    old = work / f"baseline-{baseline.replace('/', '-')}"
    if not old.is_dir():
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    cli = ["-m", "specbound.cli", "analyze", str(directory), "--json", "--no-cache"]
    print(f"\n== BERT-large shape (L=24, N=1024, H=16, d_ff=4096): now against {baseline} ==", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, path in (("baseline", old), ("now", ROOT), ("baseline", old), ("now", ROOT)):
        result = measured([sys.executable, *cli], specbound_env(fresh(work), path), name)
        rows.setdefault(name, []).append(result)
    outputs = {name: {r["stdout"] for r in results} for name, results in rows.items()}
    for name, results in rows.items():
        wall, cpu = min(r["wall_s"] for r in results), min(r["cpu_s"] for r in results)
        print(f"{name:<9} wall {wall:6.1f} s, CPU {cpu:6.1f} s, peak {max(r['peak_mb'] for r in results):5.0f} MB")
    print(f"same JSON as the baseline: {outputs['now'] == outputs['baseline']}")


# --- cores ----------------------------------------------------------------------------------------------------


def bench_cores() -> None:
    from threadpoolctl import threadpool_limits

    from specbound import ModelShape, compute_profile
    from specbound.core.matrices import LayerWeights

    print("\n== cores ==", flush=True)
    rng = np.random.default_rng(SEED)
    shape = ModelShape(12, 768, 12, 3072)
    layers = [
        LayerWeights.of_fields({k: rng.normal(0, 0.02, s) for k, s in LayerWeights.expected_shapes(shape).items()})
        for _ in range(shape.num_layers)
    ]
    cores = os.cpu_count() or 1
    for workers in sorted({1, 2, cores}):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            compute_profile(layers, shape, workers=workers)
            times.append(time.perf_counter() - start)
        print(f"BERT-base shape, {workers} layer(s) in parallel: {min(times):.2f} s (best of 3)")
    gram = rng.standard_normal((4096, 4096))
    gram = gram @ gram.T
    for threads in sorted({1, cores}):
        with threadpool_limits(limits=threads, user_api="blas"):
            start = time.perf_counter()
            np.linalg.eigvalsh(gram)
            seconds = time.perf_counter() - start
            print(f"eigen-solve of a 4096 x 4096 Gram matrix, {threads} BLAS thread(s): {seconds:.1f} s")
    import torch

    from specbound.core.threads import torch_threads

    for threads in sorted({1, cores}):
        with torch_threads(threads):
            start = time.perf_counter()
            torch.linalg.eigvalsh(torch.from_numpy(gram))
            print(
                f"the same with torch's LAPACK (--backend torch), {threads} thread(s): "
                f"{time.perf_counter() - start:.1f} s"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="slice,resume,bert,cores", help="parts to run, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved specbound/WeightWatcher rounds")
    parser.add_argument("--baseline", default="main", help="git revision BERT-large is compared against")
    parser.add_argument("--work", default=None, help="directory for the checkpoints (default: a temporary one)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="specbound-large-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "slice" in parts:
            bench_slice(work, args.rounds)
        if "resume" in parts:
            bench_resume(work)
        if "bert" in parts:
            bench_bert(work, args.baseline)
        if "cores" in parts:
            bench_cores()
    print(f"\npeak memory of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
