"""Time of the worst adapter configs the pattern budget admits, and the cost of a step through a class.

Run with ``python benchmarks/bench_patterns.py``. peft's ``rank_pattern`` / ``alpha_pattern`` keys come
from whoever hands an adapter over; specbound sums what matching them may take
(:meth:`specbound.core.patterns.SuffixPattern.cost`) before it runs any, and refuses a config above
:attr:`specbound.core.limits.Limits.max_pattern_match_steps`, and one whose automata together exceed
``max_pattern_states``. This script builds, for a two-layer GPT-2 adapter's eight module names (and a
7B model's 224 for the plain keys), the most expensive configs of three kinds that stay within both
budgets, and times reading their settings (parsing and building every key, as
:class:`specbound.io.checkpoints.lora.ModuleSettings` does) and matching every key to every module,
the best of three:

* keys ``(?:[^C]*){n}Z`` with a class C of 150 items, and the same with a class of one item: the
  ratio of their times per step is what listing more items in a class costs (about 1: a class is one
  membership test; before, a step ran one predicate per item and 150 items made it 12 times slower);
* the largest automata the state budget admits;
* plain dotted keys, one per module of a 7B model, as a per-module ``rank_pattern`` writes them.

Measured on a busy two-core machine: 0.1 to 0.45 s for each config at the budget (before, 9 keys
``(?:[^\\n]*){4900}ZZ`` on the GPT-2 adapter took 99 s and the 150-item class 462 s), 120 to 275 ns a
step, and a ratio of 1.1 to 1.5 between the 150-item and the 1-item class.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from specbound.core.limits import LIMITS
from specbound.io.checkpoints.lora import ModuleSettings

#: The module names of a two-layer GPT-2 adapter on every linear module (what the review's adapter had).
GPT2 = [f"transformer.h.{i}.{m}" for i in range(2) for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")]
#: A Llama-7B's 224 adapted modules.
LLAMA = [
    f"model.layers.{i}.{'self_attn' if p[0] in 'qkvo' else 'mlp'}.{p}"
    for i in range(32)
    for p in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
]
#: 150 characters no module name holds (punctuation but the dot and the underscore, then letters of
#: Latin Extended-A, every other one so that they stay 150 separate items, not ranges).
_PUNCTUATION = "".join(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum() and c not in "\\]^-[._")
CLASS_150 = _PUNCTUATION + "".join(chr(0x100 + 2 * i) for i in range(150 - len(_PUNCTUATION)))


def timed(config: Mapping[str, Any], modules: list[str]) -> tuple[float, int]:
    """Seconds to read the settings and match every key to every module (best of three), and the
    steps the budget counts for it."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        settings = ModuleSettings.of(config)
        for module in modules:
            settings.rank_of(module)
            settings.scale_of(module, settings.rank_of(module))
        best = min(best, time.perf_counter() - start)
    steps = sum(settings.match_steps(module) for module in modules)
    assert steps <= LIMITS.max_pattern_match_steps, steps
    return best, steps


def largest(make_key: Any, modules: list[str]) -> dict[str, Any]:
    """The config of one key ``make_key(n)`` with the largest repeat count n whose cost on ``modules``
    stays within the budget (the cost grows linearly with n: two points, then a check)."""

    def cost(n: int) -> int:
        config = {"r": 4, "lora_alpha": 8, "alpha_pattern": {make_key(n): 3}}
        return sum(ModuleSettings.of(config).match_steps(m) for m in modules)

    at_10, at_20 = cost(10), cost(20)
    n = min(4900, 10 + (LIMITS.max_pattern_match_steps - at_10) * 10 // (at_20 - at_10))
    while cost(n) > LIMITS.max_pattern_match_steps:
        n -= 1
    return {"r": 4, "lora_alpha": 8, "alpha_pattern": {make_key(n): 3}}


def main() -> None:
    budget = LIMITS.max_pattern_match_steps
    print(f"budget: {budget:,} steps, {LIMITS.max_pattern_states:,} automaton states")
    per_step = {}
    for label, items in (("class of 150 items", CLASS_150), ("class of 1 item", "!")):
        config = largest(lambda n, items=items: f"(?:[^{items}]*){{{n}}}Z", GPT2)
        seconds, steps = timed(config, GPT2)
        per_step[label] = seconds / steps
        print(f"{label:>22}: {seconds:.3f} s for {steps:,} steps ({per_step[label] * 1e9:.0f} ns a step)")
    ratio = per_step["class of 150 items"] / per_step["class of 1 item"]
    print(f"{'ratio 150 items / 1':>22}: {ratio:.2f} (a step through a class costs the same whatever its size)")
    states = LIMITS.max_pattern_states // 10_000
    config = {"r": 4, "lora_alpha": 8, "alpha_pattern": {rf"(?:[^\n]*){{4900}}Z{'Z' * i}": 3 for i in range(states)}}
    seconds, steps = timed(config, GPT2[:1])
    print(f"{'largest automata':>22}: {seconds:.3f} s for {steps:,} steps ({states} keys of 9,800 states, one module)")
    config = {"r": 4, "lora_alpha": 8, "rank_pattern": {module: 4 for module in LLAMA}}
    seconds, steps = timed(config, LLAMA)
    print(f"{'7B per-module keys':>22}: {seconds:.3f} s for {steps:,} steps (224 plain keys, 224 modules)")


if __name__ == "__main__":
    main()
