"""Compiled evaluation graphs: one per architecture and process, reused by runs of other n and learning
rate without recompiling, giving the records of eager evaluation within stated tolerances; the fallbacks.

One tiny architecture (BERT L = 1, N = 16, 2 heads) is compiled once for the whole module (a shared
fixture: about half a minute on a loaded core); every other test reuses it or never compiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn

import pytest
import torch
import torch._dynamo.utils

from specbound_lab import compiled, train
from specbound_lab.compiled import GraphKey, clear_graphs, compilations, compile_pays, forward_flops
from specbound_lab.train import Family, RunSpec, TrainResult, TrainSettings, train_run

SETTINGS = TrainSettings(steps=200, save_every=100, fit_every=25, until_fit=True, test_samples=300, learning_rate=5e-3)
SPEC = RunSpec(layers=1, hidden=16, heads=2, n_train=128, settings=SETTINGS)
#: Another n and learning rate, the same architecture: the same graph.
OTHER = replace(SPEC, n_train=96, settings=replace(SETTINGS, learning_rate=2e-3))
#: So many runs share the graph that compiling pays (:func:`compile_pays`).
MANY = 10**9

pytestmark = pytest.mark.slow  # one compilation (half a minute to a minute on a loaded core)


def _traced() -> int:
    """Graphs dynamo has traced in this process (a recompilation adds one)."""
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """SPEC compiled fresh (alone), then OTHER and SPEC again through the same graph, and SPEC eager."""
    clear_graphs()
    out = tmp_path_factory.mktemp("compiled")
    compiled_before = compilations()
    with pytest.MonkeyPatch.context() as patch:  # a training set this small would not compile otherwise
        patch.setattr(compiled, "MIN_COMPILED_EXAMPLES", 0)
        alone = train_run(SPEC, out / "alone", compile=True, graph_runs=MANY)
    traced = _traced()
    with pytest.MonkeyPatch.context() as patch:  # its searches are not what this run is for
        patch.setattr(train, "model_measures", lambda: ())
        other = train_run(OTHER, out / "other", compile=True, graph_runs=MANY)
    again = train_run(SPEC, out / "again", compile=True, graph_runs=MANY)
    eager = train_run(SPEC, out / "eager", compile=False)
    result = SimpleNamespace(
        alone=alone,
        other=other,
        again=again,
        eager=eager,
        compiled=compilations() - compiled_before,
        retraced=_traced() - traced,
    )
    yield result
    clear_graphs()


def test_one_graph_serves_runs_of_other_n_and_learning_rate_each_with_its_own_record(runs: SimpleNamespace) -> None:
    # compiled once, never again (dynamic batch): the evaluations' graph and the searches' summary graph
    assert runs.compiled == 2 and runs.retraced == 0
    assert {GraphKey.of(SPEC), GraphKey.of(SPEC, summary=True)} <= compiled._GRAPHS.graphs.keys()
    assert runs.again.steps == runs.alone.steps  # every float of every step, bit for bit
    assert dict(runs.again.model_values) == dict(runs.alone.model_values)
    assert runs.other.spec == OTHER and runs.other.steps != runs.alone.steps  # its own run, not a copy


def test_compiled_evaluations_give_the_eager_record_within_tolerance(runs: SimpleNamespace) -> None:
    """Compiled kernels sum in another order: the fitted step may move by one fit check (a loss within
    rounding of 0.01 at a check), losses agree to 1e-4 relative, error rates to one example, and the
    flatness measures to 0.05 in log2 (a probe meeting an error one example apart near δ moves the
    bisection's bracket); on this run they agree exactly but for the losses' last bits."""
    compiled_steps, eager_steps = runs.alone.steps, runs.eager.steps
    assert abs(compiled_steps[-1].step - eager_steps[-1].step) <= SETTINGS.fit_check_every
    for fast, slow in zip(compiled_steps, eager_steps, strict=False):
        assert fast.step == slow.step
        assert math.isclose(fast.train_loss, slow.train_loss, rel_tol=1e-4, abs_tol=1e-7)
        assert math.isclose(fast.test_loss, slow.test_loss, rel_tol=1e-4, abs_tol=1e-7)
        assert abs(fast.train_error - slow.train_error) <= 1 / SPEC.n_train + 1e-12
        assert abs(fast.test_error - slow.test_error) <= 1 / SETTINGS.test_samples + 1e-12
    assert runs.alone.steps[-1].train_loss <= train.FIT_LOSS  # a run that fitted, at a check
    for name, value in runs.eager.model_values.items():
        assert abs(math.log2(runs.alone.model_values[name]) - math.log2(value)) <= 0.05, name


def test_a_run_where_compiling_does_not_pay_evaluates_eagerly_and_says_why(
    runs: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train, "_SAID", set())
    monkeypatch.setattr(compiled, "_GRAPHS", compiled._Graphs())  # a process that holds no graph yet
    assert not compile_pays(SPEC)  # one run of it alone
    lines: list[str] = []
    result = train_run(SPEC, tmp_path / "auto", notice=lines.append)
    assert lines == ["evaluating eagerly: compiling the evaluation graph would cost more than it saves here"]
    assert compilations() == 0 and compiled.cached_graphs() == 0
    assert result.steps == runs.eager.steps and dict(result.model_values) == dict(runs.eager.model_values)


def test_no_compile_says_nothing_and_compiles_nothing(
    runs: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train, "_SAID", set())
    monkeypatch.setattr(compiled, "_GRAPHS", compiled._Graphs())
    monkeypatch.setattr(train, "model_measures", lambda: ())
    lines: list[str] = []
    result = train_run(SPEC, tmp_path / "eager", compile=False, graph_runs=MANY, notice=lines.append)
    assert lines == [] and compiled.cached_graphs() == 0  # --no-compile asked for it: nothing to say
    assert result.steps == runs.eager.steps


def test_a_compilation_that_fails_falls_back_to_eager_with_one_line(
    runs: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(module: Any, **options: Any) -> Callable[..., Any]:
        def call(**inputs: Any) -> NoReturn:
            raise RuntimeError("no C compiler")

        return call

    monkeypatch.setattr(train, "_SAID", set())
    monkeypatch.setattr(compiled, "_GRAPHS", compiled._Graphs())
    monkeypatch.setattr(torch, "compile", broken)
    monkeypatch.setattr(compiled, "MIN_COMPILED_EXAMPLES", 0)
    lines: list[str] = []
    fallen = train_run(SPEC, tmp_path / "fallen", graph_runs=MANY, notice=lines.append)
    assert lines == ["compiling the evaluation graph failed (RuntimeError): evaluating eagerly"]
    # the same eager evaluations (of the graph's own copy of the weights): the eager record, bit for bit
    assert fallen.steps == runs.eager.steps and dict(fallen.model_values) == dict(runs.eager.model_values)
    assert compiled._GRAPHS.failed[GraphKey.of(SPEC)].startswith("compiling the evaluation graph failed")
    monkeypatch.setattr(train, "model_measures", lambda: ())
    again: list[str] = []
    train_run(SPEC, tmp_path / "again", graph_runs=MANY, notice=again.append)
    assert again == [] and compilations() == 0  # no second try, and the reason was given once


def test_a_graph_is_lent_to_one_run_at_a_time(runs: SimpleNamespace) -> None:
    """Two runs of one architecture at once (the dashboard trains in threads): the second evaluates
    eagerly instead of overwriting the first's weights in the shared graph; the graph is lent again
    once the first is done."""
    from specbound_lab.compiled import evaluation_graph
    from specbound_lab.train import build_model

    first, second = build_model(SPEC), build_model(SPEC)
    with evaluation_graph(SPEC, first, compile=True, runs=MANY) as (graph, why):
        assert why is None and graph is not first
        assert all(torch.equal(a, b) for a, b in zip(graph.parameters(), first.parameters(), strict=True))
        with evaluation_graph(SPEC, second, compile=True, runs=MANY) as (other, other_why):
            assert other is second
            assert other_why == "evaluating eagerly: another run of this architecture holds its graph"
    with evaluation_graph(SPEC, second, compile=True, runs=MANY) as (again, why):
        assert again is graph and why is None
        assert all(torch.equal(a, b) for a, b in zip(again.parameters(), second.parameters(), strict=True))


def test_forward_flops_count_the_architecture() -> None:
    """t = 17 tokens, N = 16: 2 t (4 N²) projections + 2 t (2 · 4 N²) feed-forward + 4 t² N attention."""
    t, n = 17, 16
    assert forward_flops(SPEC) == 2 * t * 4 * n * n + 2 * t * 2 * 4 * n * n + 4 * t * t * n
    llama = RunSpec(layers=2, hidden=16, heads=2, n_train=8, family=Family.LLAMA)  # 1 kv head, gated MLP
    per_layer = 2 * t * (2 * n * n + 2 * n * 8) + 2 * t * 3 * 4 * n * n + 4 * t * t * n
    assert forward_flops(llama) == 2 * per_layer


def test_no_compile_reaches_the_run_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from specbound.cli import main
    from specbound_lab import sweep

    asked: list[bool] = []

    def recorded(*args: Any, **kwargs: Any) -> TrainResult:
        asked.append(kwargs["compile"])
        return train_run(*args, **kwargs)

    monkeypatch.setattr(sweep, "train_run", recorded)
    monkeypatch.setattr(train, "model_measures", lambda: ())
    tiny = ["lab", "train", "--layers", "1", "--hidden", "8", "--heads", "2", "--n-train", "16", "--steps", "2"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*tiny, "--out", str(tmp_path / "eager"), "--no-compile"]) == 0
        assert main([*tiny, "--out", str(tmp_path / "default")]) == 0
    assert asked == [False, True]
