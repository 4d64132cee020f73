"""Runs per core-hour of the lab's ``fit`` and ``study`` presets, before and after, against the floor.

Run with ``python benchmarks/bench_lab_throughput.py [--preset fit study] [--configs 2] [--family bert]``.
A run of these presets trains until it fits its training set (SPEC §13b), then its flatness and
sharpness are searched with Jiang et al.'s budget and its saved checkpoints are analysed. The same runs
(configurations spread over each preset: depth, width and n, the first seed and learning rate) are
trained twice, on one thread, in this process:

* **before**: the path the lab ran before its evaluations were compiled: every evaluation eager under
  ``torch.no_grad``, the searches as they were (the sharpness ascent recomputing its first iterate,
  u = 0, at every bisection step; every error a pass of the full model) and the former training loop
  (a minibatch drawn and gathered per step, the per-parameter AdamW): ``train_run(compile=False,
  hoisted=False)`` with the former searches, kept below;
* **after**: the path as it is: the hoisted training loop (bit-identical to the former one), fit
  checks and error measurements through the process's compiled evaluation graph of the architecture
  (:mod:`specbound_lab.compiled`) under ``torch.inference_mode``, the searches through the summary
  forward (the last layer at the summary position alone, :func:`specbound_lab.compiled.summary_route`)
  in a compiled graph of its own, the ascent's first iterate computed once. The graphs' compilation
  is timed apart and charged to the runs of the preset that share them (a sweep's worker compiles
  each once); where compiling does not pay (:func:`specbound_lab.compiled.compile_pays` over those
  runs, e.g. a training set under 256 examples) the run evaluates eagerly, as a sweep would.

Both must end every run at the same fitted step (or within one fit-check interval: compiled kernels
sum in another order, which can move a loss across the 0.01 threshold at a check) with every measure
within a tolerance (printed); the summary forward's logits are the full model's up to float
reordering. Printed per run: the seconds in training (steps, fit checks, checkpoints and their error
measurements), searches and analysis; per preset: runs per core-hour before and after and the ratio;
and the floor: the fraction of this machine's single-core matmul FLOP/s (a 1024³ float32
product, measured here) that the training phase reaches, its FLOPs counted from the architecture
(:func:`specbound_lab.compiled.forward_flops`: 3 forwards per training example, 1 per evaluated one).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

#: Relative tolerance between the two routes' losses and flatness measures (a bisection that meets a
#: training error differing by one example near δ moves by one resolution step, 11 / 2^15 octave).
TOLERANCE = 0.02


@dataclass(frozen=True)
class Phases:
    training: float  # training steps, fit checks, checkpoints and their error measurements
    searches: float  # the flatness and sharpness searches
    analysis: float  # the spectral analysis of every saved checkpoint

    @property
    def total(self) -> float:
        return self.training + self.searches + self.analysis


# --- the former evaluation path of the searches (kept here as the "before" route) -------------------


def _old_error(model: Any, ids: Any, labels: Any) -> float:
    import torch

    wrong = 0
    with torch.no_grad():
        for start in range(0, ids.shape[0], 4096):
            logits = model(input_ids=ids[start : start + 4096]).logits
            wrong += int((logits.argmax(dim=1) != labels[start : start + 4096]).sum())
    return wrong / int(ids.shape[0])


def _old_sharpness_alpha(model: Any, ids: Any, labels: Any, *, settings: Any = None) -> float:
    """The sharpness search as it was: every bisection step recomputes the ascent's first iterate."""
    import torch

    from specbound_lab.flatness import DEFAULT_FLATNESS, _restored, bisect_scale

    settings = settings or DEFAULT_FLATNESS
    model.eval()
    parameters = list(model.parameters())
    base = _old_error(model, ids, labels)
    with _restored(parameters) as weights:

        def fits(alpha: float) -> bool:
            boxes = [alpha * (w.abs() + settings.epsilon) for w in weights]
            shifts = [torch.zeros_like(w) for w in weights]
            worst = 0.0
            for _ in range(settings.ascent_steps):
                with torch.no_grad():
                    for p, w, u in zip(parameters, weights, shifts, strict=True):
                        p.copy_(w + u)
                model.zero_grad(set_to_none=True)
                logits = model(input_ids=ids).logits
                worst = max(worst, float((logits.argmax(dim=1) != labels).double().mean()) - base)
                if settings.early_stop and worst > settings.target:
                    model.zero_grad(set_to_none=True)
                    return False
                torch.nn.functional.cross_entropy(logits, labels).backward()
                with torch.no_grad():
                    for p, u, box in zip(parameters, shifts, boxes, strict=True):
                        grad = p.grad if p.grad is not None else torch.zeros_like(u)
                        u.add_(2.0 * box / settings.ascent_steps * grad.sign())
                        torch.minimum(torch.maximum(u, -box), box, out=u)
            with torch.no_grad():
                for p, w, u in zip(parameters, weights, shifts, strict=True):
                    p.copy_(w + u)
            worst = max(worst, _old_error(model, ids, labels) - base)
            model.zero_grad(set_to_none=True)
            return bool(worst <= settings.target)

        return bisect_scale(fits, settings)


def _full_route(model: Any) -> tuple[Any, str | None]:
    """The searches' model before the summary forward: the model itself, evaluated in full."""
    return model, None if getattr(model, "summary", False) is True else "the full model (the former route)"


# --- measuring ----------------------------------------------------------------------------------------


def matmul_flops() -> float:
    """This core's float32 matmul rate: the best of five 1024³ products (2 · 1024³ FLOPs each)."""
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a @ b
    best = math.inf
    for _ in range(5):
        started = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - started)
    return 2 * 1024**3 / best


def training_flops(spec: Any, result: Any) -> float:
    """FLOPs of the training phase, from the architecture: 3 forwards per training example of every
    step, 1 per example of every fit check and of the sets measured at every saved step."""
    from specbound_lab.compiled import forward_flops

    settings = spec.settings
    steps = result.steps[-1].step
    batch = min(settings.batch_size, spec.n_train)
    checks = steps // settings.fit_check_every + 1 if settings.until_fit else 0
    evaluated = checks * spec.n_train + len(result.steps) * (spec.n_train + result.steps[-1].test_samples)
    return float(forward_flops(spec) * (3 * batch * steps + evaluated))


#: A run's final values: (step, training loss, test error, log10 ours, the model measures by name).
FinalValues = tuple[int, float, float, float, tuple[tuple[str, float], ...]]


def run_once(spec: Any, directory: Path, *, before: bool, sharing: int = 1) -> tuple[Phases, FinalValues, Any]:
    """Train and analyse one run by one route: its phases' seconds, its final values and its result."""
    import torch

    from specbound_lab import compiled, flatness, registry
    from specbound_lab.train import train_run
    from specbound_lab.trajectory import analyse_run

    with ExitStack() as stack:
        if before:
            stack.enter_context(mock.patch.object(registry, "sharpness_alpha", _old_sharpness_alpha))
            stack.enter_context(mock.patch.object(flatness, "_error", _old_error))
            stack.enter_context(mock.patch.object(torch, "inference_mode", torch.no_grad))
            stack.enter_context(mock.patch.object(compiled, "summary_route", _full_route))
        result = train_run(spec, directory, compile=not before, graph_runs=sharing, hoisted=not before)
    trajectory = analyse_run(result, directory, use_cache=False)
    final = trajectory.final
    measures = tuple(sorted(result.model_values.items()))
    values: FinalValues = (final.step, final.train_loss, final.test_error, final.ours_log10, measures)
    return Phases(result.seconds, result.model_seconds, trajectory.analysis_seconds), values, result


def agree(then: FinalValues, now: FinalValues, fit_every: int) -> str | None:
    """Why the two routes' final values disagree beyond the stated tolerances (None: they agree)."""
    if abs(then[0] - now[0]) > fit_every:
        return f"fitted at step {then[0]} before and {now[0]} after"
    if then[0] != now[0]:
        return None  # a check apart: the rest of the values belong to other steps
    names = ("train loss", "test error", "log10 ours")
    for name, a, b in zip(names, then[1:4], now[1:4], strict=True):
        if not math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=2e-3):
            return f"{name} {a} before, {b} after"
    for (name, a), (_, b) in zip(then[4], now[4], strict=True):
        if not math.isclose(math.log2(a), math.log2(b), abs_tol=8 * 11 / 2**15 + TOLERANCE):
            return f"{name} {a} before, {b} after"
    return None


def chosen_specs(preset: str, family: str, configs: int) -> list[Any]:
    """``configs`` configurations of the preset (the first seed, the larger learning rate) at the
    quantiles (i + 1/2) / configs of their cost, forward FLOPs times n: small and large runs alike."""
    from specbound_lab.compiled import forward_flops
    from specbound_lab.grid import preset_grid

    grid = preset_grid(preset, family=family)
    specs = [s for s in grid.specs() if s.seed == grid.seeds[0]]
    rate = max(s.settings.learning_rate for s in specs)
    specs = sorted((s for s in specs if s.settings.learning_rate == rate), key=lambda s: forward_flops(s) * s.n_train)
    return [specs[int((i + 0.5) / configs * len(specs))] for i in range(min(configs, len(specs)))]


def compile_graph(spec: Any, summary: bool = False) -> float:
    """Seconds to build and compile the evaluation graph of the run's architecture (its first pass);
    ``summary``: the searches' summary-forward graph."""
    import torch

    from specbound_lab.compiled import GraphKey, evaluation_graph
    from specbound_lab.train import _training_context, build_model

    started = time.perf_counter()
    # in a run's global state (deterministic kernels: a graph guards on it) on a normal tensor, as a run's
    lent = evaluation_graph(spec, build_model(spec), compile=True, runs=10**9, summary=summary)
    with _training_context(spec.settings.threads), lent as (graph, why):
        assert why is None, why
        tokens = GraphKey.of(spec).tokens - (1 if summary and spec.task.causal else 0)  # a probe's inputs
        ids = torch.randint(0, spec.task.vocab_size, (4, tokens))
        with torch.inference_mode():
            graph(input_ids=ids)
    return time.perf_counter() - started


def traced_graphs() -> int:
    """Graphs dynamo has traced in this process (a recompilation adds one)."""
    import torch._dynamo.utils

    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def warm_up() -> None:
    """One tiny run through both routes first, so that neither pays the process's first-use costs
    (imports, kernel initialisation) inside its timings."""
    from specbound_lab.train import RunSpec, TrainSettings

    tiny = RunSpec(layers=1, hidden=8, heads=2, n_train=16, settings=TrainSettings(steps=2, save_every=1))
    with tempfile.TemporaryDirectory() as tmp:
        run_once(tiny, Path(tmp) / "before", before=True)
        run_once(tiny, Path(tmp) / "after", before=False)


def main() -> int:
    from specbound.core import torch_threads
    from specbound_lab import compiled
    from specbound_lab.compiled import GraphKey, compile_pays
    from specbound_lab.grid import preset_grid
    from specbound_lab.train import build_model

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", nargs="+", default=["fit", "study"], help="presets to time (fit, study)")
    parser.add_argument("--configs", type=int, default=2, help="configurations of each preset (spread over it)")
    parser.add_argument("--family", default="bert", help="the presets' family (bert, gpt2, llama, neox)")
    args = parser.parse_args()

    with torch_threads(1):
        peak = matmul_flops()
        print(f"single-core float32 matmul: {peak / 1e9:.1f} GFLOP/s (1024^3, best of 5)", flush=True)
        warm_up()
        failures = 0
        for preset in args.preset:
            grid = preset_grid(preset, family=args.family)
            sharing: dict[GraphKey, int] = {}
            for spec in grid.specs():
                sharing[GraphKey.of(spec)] = sharing.get(GraphKey.of(spec), 0) + 1
            totals: dict[str, list[float]] = {"before": [], "after": []}
            shares: dict[str, list[Phases]] = {"before": [], "after": []}
            floors: dict[str, list[float]] = {"before": [], "after": []}
            for spec in chosen_specs(preset, args.family, args.configs):
                compiled.clear_graphs()
                with tempfile.TemporaryDirectory() as tmp:
                    then, then_values, then_result = run_once(spec, Path(tmp) / "before", before=True)
                    shared = sharing[GraphKey.of(spec)]
                    compile_seconds = 0.0  # where compiling does not pay, "after" evaluates eagerly, as a sweep would
                    searched = spec.settings.model_measures and compiled.summary_route(build_model(spec))[1] is None
                    for summary in (False, True) if searched else (False,):
                        if compile_pays(spec, shared, summary):
                            before_compiles = compiled.compilations()
                            compile_seconds += compile_graph(spec, summary)  # timed apart: paid once a worker
                            assert compiled.compilations() == before_compiles + 1, "the graph did not compile"
                    traced = traced_graphs()
                    now, now_values, now_result = run_once(spec, Path(tmp) / "after", before=False, sharing=shared)
                    assert traced_graphs() == traced, "the run recompiled its graph"
                why = agree(then_values, now_values, spec.settings.fit_check_every)
                if why is not None:
                    print(f"{spec.name}: the two routes disagree: {why}", file=sys.stderr)
                    failures += 1
                amortised = compile_seconds / sharing[GraphKey.of(spec)]
                totals["before"].append(then.total)
                totals["after"].append(now.total + amortised)
                shares["before"].append(then)
                shares["after"].append(now)
                for route, phases, result in (("before", then, then_result), ("after", now, now_result)):
                    floors[route].append(training_flops(spec, result) / phases.training / peak)
                print(
                    f"{preset} {spec.name}: fitted at step {then_values[0]} before, {now_values[0]} after; "
                    f"before {then.total:.1f} s (training {then.training:.1f}, searches {then.searches:.1f}, "
                    f"analysis {then.analysis:.1f}), after {now.total:.1f} s (training {now.training:.1f}, "
                    f"searches {now.searches:.1f}, analysis {now.analysis:.1f}) + compile {compile_seconds:.1f} s "
                    f"/ {sharing[GraphKey.of(spec)]} runs sharing the graph; training at "
                    f"{floors['before'][-1]:.0%} / {floors['after'][-1]:.0%} of the matmul rate; "
                    f"measures before {dict(then_values[4])}, after {dict(now_values[4])}",
                    flush=True,
                )
            rates = {route: 3600.0 * len(seconds) / sum(seconds) for route, seconds in totals.items()}
            for route, route_phases in shares.items():
                whole = sum(p.total for p in route_phases)
                parts = ", ".join(
                    f"{name} {sum(getattr(p, name) for p in route_phases) / whole:.0%}"
                    for name in ("training", "searches", "analysis")
                )
                floor = sum(floors[route]) / len(floors[route])
                print(
                    f"{preset} {route}: {rates[route]:.0f} runs per core-hour ({parts}); training at "
                    f"{floor:.0%} of the single-core matmul rate"
                )
            print(f"{preset} speed-up: {rates['after'] / rates['before']:.2f}x", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"benchmark wall time {time.perf_counter() - started:.0f} s")
    raise SystemExit(code)
