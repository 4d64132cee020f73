"""Compiled evaluation graphs: one ``torch.compile``d model per architecture per process, reused by every
run of that architecture, its weights copied in (never recompiled).

What is compiled, and why only that. A run spends its time in three kinds of pass: training steps
(forward and backward on a minibatch), evaluations without gradients (the fit checks and error
measurements of :func:`~specbound_lab.train.train_run`, and every error of the flatness searches,
:mod:`~specbound_lab.flatness`) and the sharpness ascent's gradient passes over the training set.
Measured on one thread of this project's CPU machines (torch 2.13 with gcc; BERT L = 2, N = 64, 2 heads,
17 tokens; ``benchmarks/bench_lab_throughput.py`` and ``benchmarks/README.md``): an inference pass over
900 examples is about 1.3-1.8x faster compiled; a training step is about 2x *slower* compiled (the
eager step already runs its matrix products near the core's matmul rate, and inductor's backward
kernels for these small shapes lose to oneDNN's). So evaluations run through a compiled graph, and
training steps and the sharpness ascent's gradients stay eager: :class:`EvaluationGraph` dispatches on
the autograd mode, compiled under ``torch.inference_mode``, eager otherwise.

Shapes: the sequence length and the architecture are fixed per graph (:class:`GraphKey`); the batch
dimension is dynamic (``dynamic=True``), so the training sets of every n and the test set share one
graph without padding; a chunk of one example (which a dynamic graph specialises) is padded to two.

The searches' own graph: a classifier reads one position of its last layer, so the flatness and
sharpness searches evaluate a summary forward (:func:`summary_route`: the last layer at that position
alone, the same logits up to float reordering) in a second graph per architecture
(``GraphKey.summary``); the fit checks and error measurements, which decide a run's record, keep the
full model's graph.

Reuse: :func:`evaluation_graph` lends a run the process's graph of a run's architecture with the run's
weights copied in (``load_state_dict``; the graph's parameters are its inputs, so new values do not
recompile it). A sweep's worker process, local or on a Dask cluster, keeps its graphs across the runs it
is given (the cache is this module's, per process).

When not: ``compile=False`` (``--no-compile``) evaluates eagerly; so does a run whose evaluations cost
less than compiling would save (:func:`compile_pays`, a single short run), a fine-tuning run (its model
may carry peft adapters), and a process where compiling fails (no C compiler, an unsupported
operation): :func:`evaluation_graph` then gives the eager model and one line saying why.

Example (compiles for a minute on one core, so not run as a doctest)::

    with evaluation_graph(spec, model, compile=True) as (graph, why), torch.inference_mode():
        logits = graph(input_ids=ids).logits  # the compiled graph, with the model's weights

torch is imported inside the functions, so reading lab results stays light.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .train import Family, RunSpec

#: Seconds a graph takes to compile on one loaded core (measured 20-90 s for BERT L = 1-4, N = 32-64).
COMPILE_SECONDS: float = 30.0
#: FLOP/s of an eager evaluation pass on one core (measured 20-35 GFLOP/s at the lab's sizes).
EAGER_FLOPS: float = 2.5e10
#: The fraction of an evaluation's time a compiled graph saves (measured 0.2-0.45).
COMPILED_SAVING: float = 0.25
#: Below this many training examples a compiled pass is no faster: dynamo's guards and the dispatch
#: cost about what inductor's kernels save on a pass of 100 examples (measured: the searches of an
#: n = 100 run took 3.2 s eager, 5.6 s compiled; of an n = 300 run 49 s and 39 s).
MIN_COMPILED_EXAMPLES: int = 256
#: Noise draws plus the final iterates of the sharpness search per bisection step, an upper bound on
#: the evaluations of the training set that the searches make (Jiang et al.'s budget, SPEC §13b).
_SEARCH_PASSES_PER_HALVING: int = 11


@dataclass(frozen=True)
class GraphKey:
    """What a compiled graph is specialised to: the model's class and sizes and the sequence length."""

    family: Family
    causal: bool
    layers: int
    hidden: int
    heads: int
    tokens: int  # the input's length (T + 1 for a classifier, T for next-token prediction)
    vocab: int
    labels: int
    #: the searches' graph: the summary-position forward (:func:`summary_route`), not the full model
    summary: bool = False

    @staticmethod
    def of(spec: RunSpec, summary: bool = False) -> GraphKey:
        task = spec.task
        tokens = task.length if task.causal else task.length + 1
        labels = 0 if task.causal else (task.num_labels or 0)
        return GraphKey(
            spec.family, task.causal, spec.layers, spec.hidden, spec.heads, tokens, task.vocab_size, labels, summary
        )


def forward_flops(spec: RunSpec) -> float:
    """Floating-point operations of one example's forward pass, counted from the architecture.

    Per layer, with t tokens, width N, key/value width N_kv = N · kv_heads / H and feed-forward 4 N:
    2 t (2 N² + 2 N N_kv) for the Q, K, V and output projections, 2 t · k · 4 N² for the feed-forward
    block (k = 2 matrices; 3 for llama's gated MLP) and 4 t² N for the attention scores and their
    weighted sum; plus 2 t N V for a language model's head (a classifier's head is negligible). A
    training step costs about 3 times its batch's forward (the backward pass twice the forward).

    >>> from specbound_lab.train import RunSpec
    >>> forward_flops(RunSpec(layers=1, hidden=32, heads=2, n_train=10))  # t = 17
    454784.0
    """
    key = GraphKey.of(spec)
    t, width = key.tokens, spec.hidden
    kv_width = width * spec.kv_heads // spec.heads
    matrices = 3 if spec.family.gated_mlp else 2
    layer = 2 * t * (2 * width * width + 2 * width * kv_width) + 2 * t * matrices * 4 * width * width
    layer += 4 * t * t * width
    head = 2 * t * width * (key.vocab + 2) if key.causal else 0
    return float(spec.layers * layer + head)


def evaluated_examples(spec: RunSpec) -> int:
    """An upper bound on the examples a run evaluates without gradients: a fit check of the training set
    every ``fit_check_every`` steps up to the cap, the training and test sets at every saved step, and
    the flatness searches' passes over the training set."""
    settings = spec.settings
    checks = settings.steps // settings.fit_check_every + 1 if settings.until_fit else 0
    saved = len(settings.save_steps) * (spec.n_train + settings.test_samples)
    return checks * spec.n_train + saved + search_examples(spec)


def search_examples(spec: RunSpec) -> int:
    """An upper bound on the examples the flatness searches evaluate (their share of
    :func:`evaluated_examples`)."""
    return _SEARCH_PASSES_PER_HALVING * 15 * spec.n_train


def compile_pays(spec: RunSpec, runs: int = 1, summary: bool = False) -> bool:
    """Whether compiling the evaluation graph saves more than it costs for ``runs`` runs like this one:
    ``runs`` · (evaluated examples) · (forward FLOPs) / :data:`EAGER_FLOPS` · :data:`COMPILED_SAVING`
    > :data:`COMPILE_SECONDS`, on training sets of at least :data:`MIN_COMPILED_EXAMPLES`. A sweep
    counts the runs that share the graph; a single run counts one. ``summary``: the searches' graph,
    which evaluates :func:`search_examples` through the summary forward (:func:`summary_flops`).

    >>> from specbound_lab.train import RunSpec
    >>> compile_pays(RunSpec(layers=1, hidden=32, heads=2, n_train=100))
    False
    """
    if spec.n_train < MIN_COMPILED_EXAMPLES:
        return False
    if summary:
        work = search_examples(spec) * summary_flops(spec)
    else:
        work = evaluated_examples(spec) * forward_flops(spec)
    saved = runs * work / EAGER_FLOPS * COMPILED_SAVING
    return saved > COMPILE_SECONDS


class _Graphs:
    """The process's graphs by :class:`GraphKey`, and the keys whose compilation failed (with why)."""

    def __init__(self) -> None:
        self.graphs: dict[GraphKey, Any] = {}
        self.failed: dict[GraphKey, str] = {}
        self.compilations = 0  # graphs compiled in this process (a test and the benchmark read it)
        self.held: set[GraphKey] = set()  # graphs a run is using now
        self.lock = threading.Lock()


_GRAPHS = _Graphs()


def cached_graphs() -> int:
    """How many compiled graphs this process holds."""
    return len(_GRAPHS.graphs)


def compilations() -> int:
    """How many graphs this process has compiled (a reused graph is not compiled again)."""
    return _GRAPHS.compilations


def clear_graphs() -> None:
    """Forget every compiled graph of this process (the next run of each architecture compiles again)."""
    import torch

    _GRAPHS.graphs.clear()
    _GRAPHS.failed.clear()
    torch._dynamo.reset()


def _evaluation_module() -> type:
    """The wrapper class (defined on first use, so that importing this module does not import torch)."""
    global _EvaluationGraph
    if _EvaluationGraph is not None:
        return _EvaluationGraph
    import torch

    class EvaluationGraph(torch.nn.Module):
        """A model whose forward runs compiled under ``torch.inference_mode`` and eagerly otherwise
        (a training step, a gradient of the sharpness ascent); its parameters are the eager model's.
        ``route``: what it computes from the model (the model itself, or its :class:`SummaryHead`)."""

        compiled: Callable[..., Any]
        route: Any
        ready: bool
        notice: Callable[[str], None]

        def __init__(self, module: Any, key: GraphKey, route: Any = None) -> None:
            super().__init__()
            self.module = module
            self.key = key
            route = module if route is None else route
            # kept out of the module tree: the route and its compiled wrapper share the module's parameters
            object.__setattr__(self, "route", route)
            object.__setattr__(self, "compiled", torch.compile(route, dynamic=True))
            object.__setattr__(self, "ready", False)
            object.__setattr__(self, "notice", lambda line: None)

        @property
        def summary(self) -> bool:
            """Whether it computes the summary position's logits alone (:func:`summary_route`)."""
            return self.key.summary

        def forward(self, input_ids: torch.Tensor, **kwargs: Any) -> Any:
            if not torch.is_inference_mode_enabled() or kwargs:
                return self.route(input_ids=input_ids, **kwargs)
            single = input_ids.shape[0] == 1
            if single:  # a dynamic graph specialises a batch of one: pad it to two, keep the first
                input_ids = input_ids.expand(2, -1)
            if self.ready:
                out = self.compiled(input_ids=input_ids)
            else:
                out = self._first_call(input_ids)
            if single:
                out.logits = out.logits[:1]
            return out

        def _first_call(self, input_ids: torch.Tensor) -> Any:
            """Compile on the first call; on failure, evaluate eagerly from now on and say why once."""
            try:
                out = self.compiled(input_ids=input_ids)
            except Exception as exc:  # inductor raises many kinds (a missing compiler, an unsupported op)
                why = f"compiling the evaluation graph failed ({type(exc).__name__}): evaluating eagerly"
                _GRAPHS.failed[self.key] = why
                _GRAPHS.graphs.pop(self.key, None)
                object.__setattr__(self, "compiled", self.route)
                self.notice(why)
                out = self.route(input_ids=input_ids)
            else:
                _GRAPHS.compilations += 1
            object.__setattr__(self, "ready", True)
            return out

    _EvaluationGraph = EvaluationGraph
    return EvaluationGraph


_EvaluationGraph: type | None = None


@contextmanager
def evaluation_graph(
    spec: RunSpec,
    model: Any,
    *,
    compile: bool,
    runs: int = 1,
    notice: Callable[[str], None] = lambda line: None,
    summary: bool = False,
) -> Iterator[tuple[Any, str | None]]:
    """The model to evaluate ``spec``'s ``model`` with, and why it is eager (None when compiled), held
    for the block.

    ``summary``: the searches' model, which computes the summary position's logits alone
    (:func:`summary_route`; the model in full where the family has no summary forward), compiled or
    eager by the same rules (:func:`compile_pays` of the searches' passes), in a graph of its own.

    Compiled: the process's :class:`EvaluationGraph` of the run's architecture (built once, its
    compilation happening on its first inference pass), with the model's current weights copied in
    (copy them again after they change: ``graph.module.load_state_dict``). The graph is the block's
    alone: a run of the same architecture in another thread meanwhile (the dashboard trains in
    threads) evaluates eagerly rather than overwrite its weights. Eager: the model itself, when
    ``compile`` is False, the run fine-tunes a base, the graph is held by another run, compiling does
    not pay (:func:`compile_pays` over ``runs`` runs, unless the graph is already compiled) or failed
    before in this process. ``notice`` receives the line of a compilation that fails on first use, and
    the line saying why a summary forward was asked of a family without one.
    """
    import torch

    from .train import build_model

    eager = model
    if summary:
        eager, no_summary = summary_route(model)
        summary = no_summary is None  # a family without a summary forward: the full model's graph
        if no_summary is not None:
            notice(no_summary)
    if not compile:
        yield eager, "--no-compile: evaluating eagerly"
        return
    if spec.fine_tuning is not None:
        yield eager, "a fine-tuning run evaluates eagerly"
        return
    key = GraphKey.of(spec, summary)
    with _GRAPHS.lock:
        why = _GRAPHS.failed.get(key)
        if why is None and key in _GRAPHS.held:
            why = "evaluating eagerly: another run of this architecture holds its graph"
        graph = _GRAPHS.graphs.get(key)
        if why is None and graph is None and not compile_pays(spec, runs, summary):
            why = "evaluating eagerly: compiling the evaluation graph would cost more than it saves here"
        if why is None:
            _GRAPHS.held.add(key)
    if why is not None:
        yield eager, why
        return
    try:
        if graph is None:
            with torch.random.fork_rng(devices=[]):  # building the twin leaves the run's random stream alone
                twin = build_model(spec).eval()
            route = summary_route(twin)[0] if summary else None
            graph = _evaluation_module()(twin, key, route)
            _GRAPHS.graphs[key] = graph
        object.__setattr__(graph, "notice", notice)
        with torch.no_grad():
            graph.module.load_state_dict(model.state_dict())
        yield graph, None
    finally:
        with _GRAPHS.lock:
            _GRAPHS.held.discard(key)


# --- the summary-position forward of the searches --------------------------------------------------------

#: Why a model is evaluated in full by the searches, by family (the summary forward is written for these
#: two; llama and neox rotate their queries and keys by position, which their own attention does).
_NO_SUMMARY_WHY = "the summary-position forward is written for bert and gpt2: a {name} is evaluated in full"


def summary_route(model: Any) -> tuple[Any, str | None]:
    """The model the flatness and sharpness searches evaluate, and why it is the full model (None when
    it is the summary forward).

    A classifier reads one position of its last layer: bert's [CLS] (position 0, the pooler's input), a
    decoder's summary token (the last position, the padding id never occurring); the probe of a language
    model (:func:`~specbound_lab.train._probe_model`) reads the last position too. The last layer's keys
    and values are needed at every position, but its query, attention output, feed-forward block (and a
    language model's head) only there: :class:`SummaryHead` computes the first L − 1 layers with the
    model's own modules and the last one at that position alone. Per example, with t tokens, that is
    (L − 1) (12 N² t + 2 t² N) + 2 N² t + 10 N² + 2 t N multiply-adds (+ N V for a language model's
    head) against L (12 N² t + 2 t² N) (+ t N V): 0.60 of a pass at L = 2, 0.20 at L = 1
    (:func:`summary_flops`; measured faster still: 3x at L = 2 on a pass of 300 examples, one thread).
    The logits are the full model's up to the order of floating-point sums (tested within 1e-5 per
    family).

    The summary head's parameters are the model's (``head.parameters()`` yields them, so the searches'
    perturbations reach it), and its forward works with gradients (the sharpness ascent's). Families
    other than bert and gpt2 (or a model in eager attention where the causal mask matters, or any
    other module) are evaluated in full, with the line saying why.

    >>> from specbound_lab.train import RunSpec, build_model
    >>> head, why = summary_route(build_model(RunSpec(layers=2, hidden=8, heads=2, n_train=4)))
    >>> type(head).__name__, why
    ('SummaryHead', None)
    >>> summary_route(build_model(RunSpec(layers=1, hidden=8, heads=2, n_train=4, family="llama")))[1]
    'the summary-position forward is written for bert and gpt2: a LlamaForSequenceClassification is evaluated in full'
    """
    if getattr(model, "summary", False) is True:
        return model, None
    name = type(model).__name__
    if name not in _SUMMARY_CLASSES:
        return model, _NO_SUMMARY_WHY.format(name=name)
    return _summary_module()(model), None


#: The transformers classes with a summary forward: BERT's classifier, GPT-2's classifier and language model.
_SUMMARY_CLASSES = frozenset({"BertForSequenceClassification", "GPT2ForSequenceClassification", "GPT2LMHeadModel"})


def summary_flops(spec: RunSpec) -> float:
    """Floating-point operations of one example's summary forward (:func:`summary_route`), counted as
    :func:`forward_flops` counts the full one: the first L − 1 layers in full, the last one's key and
    value projections at all t positions and the rest of it (query, output projection, feed-forward,
    attention of one query over t keys) at one, and a language model's head at one position.

    >>> from specbound_lab.train import RunSpec
    >>> spec = RunSpec(layers=2, hidden=32, heads=2, n_train=10)  # t = 17
    >>> round(summary_flops(spec) / forward_flops(spec), 3)
    0.601
    """
    key = GraphKey.of(spec)
    t, width = key.tokens, spec.hidden
    kv_width = width * spec.kv_heads // spec.heads
    matrices = 3 if spec.family.gated_mlp else 2
    full = forward_flops(spec)
    head = 2 * t * width * (key.vocab + 2) if key.causal else 0
    layer = (full - head) / spec.layers
    last = 2 * t * 2 * width * kv_width + 2 * (2 * width * width) + 2 * matrices * 4 * width * width + 4 * t * width
    return float(full - layer - head + last + (head / t if key.causal else 0))


def _summary_module() -> type:
    """The :class:`SummaryHead` class (defined on first use, so that importing this module does not import
    torch)."""
    global _SummaryHead
    if _SummaryHead is not None:
        return _SummaryHead
    import torch
    from transformers.masking_utils import create_causal_mask
    from transformers.modeling_outputs import SequenceClassifierOutput

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, scale: float) -> torch.Tensor:
        """One query position against every key: (n, 1, N) from q (n, 1, N) and k, v (n, t, N)."""
        n, t, width = k.shape
        q = q.view(n, 1, heads, -1).transpose(1, 2)  # (n, H, 1, d)
        k = k.view(n, t, heads, -1).transpose(1, 2)  # (n, H, t, d)
        v = v.view(n, t, heads, -1).transpose(1, 2)  # (n, H, t, d)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)  # (n, H, 1, d)
        return out.transpose(1, 2).reshape(n, 1, width)  # (n, 1, N)

    class SummaryHead(torch.nn.Module):
        """The model's logits at its summary position, its last layer computed there alone
        (:func:`summary_route`); the model is its only submodule, so its parameters are the model's."""

        summary = True

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model
            self.kind = type(model).__name__

        def forward(self, input_ids: torch.Tensor) -> Any:
            if self.kind == "BertForSequenceClassification":
                logits = self._bert(input_ids)
            else:
                logits = self._gpt2(input_ids)
            return SequenceClassifierOutput(logits=logits)

        def _bert(self, ids: torch.Tensor) -> torch.Tensor:
            bert = self.model.bert
            h = bert.embeddings(input_ids=ids)  # (n, t, N); no padding: no attention mask
            layers = bert.encoder.layer
            for layer in layers[:-1]:
                h = layer(h, None)  # (n, t, N)
            last = layers[-1]
            attention = last.attention.self
            first = h[:, :1]  # (n, 1, N): the [CLS] position
            context = attend(
                attention.query(first),
                attention.key(h),
                attention.value(h),
                attention.num_attention_heads,
                attention.scaling,
            )  # (n, 1, N)
            a = last.attention.output(context, first)  # (n, 1, N)
            out = last.output(last.intermediate(a), a)  # (n, 1, N)
            pooled = bert.pooler(out)  # (n, N): the pooler reads position 0
            return self.model.classifier(self.model.dropout(pooled))  # type: ignore[no-any-return]

        def _gpt2(self, ids: torch.Tensor) -> torch.Tensor:
            body = self.model.transformer
            n, t = ids.shape
            positions = torch.arange(t, device=ids.device).unsqueeze(0)  # (1, t)
            h = body.drop(body.wte(ids) + body.wpe(positions))  # (n, t, N)
            mask = create_causal_mask(
                config=body.config, inputs_embeds=h, attention_mask=None, cache=None, position_ids=positions
            )  # None under sdpa (its causal flag), the additive mask otherwise: what the model passes
            blocks = body.h
            for block in blocks[:-1]:
                h = block(h, attention_mask=mask)  # (n, t, N)
            block = blocks[-1]
            attention = block.attn
            width = attention.embed_dim
            y = block.ln_1(h)  # (n, t, N)
            weight, bias = attention.c_attn.weight, attention.c_attn.bias  # (N, 3N), (3N,): Conv1D
            q = torch.addmm(bias[:width], y[:, -1], weight[:, :width]).unsqueeze(1)  # (n, 1, N)
            kv = torch.addmm(bias[width:], y.reshape(n * t, width), weight[:, width:])  # (n t, 2N)
            k, v = kv.view(n, t, 2 * width).split(width, dim=2)  # (n, t, N) each
            # the last position sees every position: no mask
            context = attend(q, k.contiguous(), v.contiguous(), attention.num_heads, attention.scaling)
            x = attention.resid_dropout(attention.c_proj(context)) + h[:, -1:]  # (n, 1, N)
            x = x + block.mlp(block.ln_2(x))  # (n, 1, N)
            x = body.ln_f(x)  # (n, 1, N)
            head = self.model.lm_head if self.kind == "GPT2LMHeadModel" else self.model.score
            return head(x)[:, 0]  # type: ignore[no-any-return]  # (n, C) or (n, V)

    _SummaryHead = SummaryHead
    return SummaryHead


_SummaryHead: type | None = None
