"""Module-name patterns matched as peft matches them, in bounded time (specbound.core.patterns).

The reference is peft's own expression, ``re.match(rf"(.*\\.)?({key})$", name)``, run by Python's
engine on keys where it is quick: every random key of a small grammar and every name of a small
alphabet must get the same answer. Keys on which that engine backtracks for minutes are matched
without it, each step visiting at most the automaton's states; what no automaton runs is refused.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from specbound.core import patterns
from specbound.core.patterns import MAX_STATES, PatternError, SuffixPattern

#: The 17-character key of issue 59, on which re.match runs for minutes against a 41-character name.
EVIL = r"([\w.]|[\w.])*X"


def _peft(key: str, name: str) -> bool:
    return re.match(rf"(.*\.)?({key})$", name) is not None


_ATOMS = ["a", "b", ".", r"\.", r"\w", r"\d", "[ab]", "[^a]", "[a-c_]", "(a|b)", "(ab|a)", "_", r"\b", r"\B", "^", "$"]
_REPEATS = ["", "", "*", "+", "?", "{2}", "{1,3}", "*?", "{0,2}?"]


def _random_key(rng: random.Random, depth: int = 0) -> str:
    key = ""
    for _ in range(rng.randint(1, 4)):
        if depth < 2 and rng.random() < 0.2:
            inner = _random_key(rng, depth + 1)
            atom = f"({inner}|{_random_key(rng, depth + 1)})" if rng.random() < 0.5 else f"({inner})"
        else:
            atom = rng.choice(_ATOMS)
        key += atom + rng.choice(_REPEATS)
    return key


@pytest.mark.parametrize("seed", [59, 60, 61])
def test_random_keys_match_as_pythons_engine_matches_them(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(1500):
        key = _random_key(rng)
        try:
            re.compile(key)
        except re.error:  # "nothing to repeat" and the like: refused, as peft's re would refuse it
            with pytest.raises(PatternError, match="not a valid regular expression"):
                SuffixPattern(key)
            continue
        matcher = SuffixPattern(key)
        for _ in range(6):
            name = "".join(rng.choice("ab._x1\n") for _ in range(rng.randint(0, 9)))
            assert matcher.matches(name) == _peft(key, name), (key, name)
            checked += 1
    assert checked > 3000  # most keys are valid expressions


@pytest.mark.parametrize("key", ["query", "c_attn", "q_proj", "layer", "dense", "h.0.attn.c_attn", "0.q_proj", "."])
@pytest.mark.parametrize(
    "name",
    [
        "query",
        "x.query",
        "xquery",
        "x.query\n",
        "a\nb.query",
        "query\n",
        ".query",
        "x.c_attn",
        "h.0.attn.c_attn",
        "transformer.h-0-attn-c_attn",
        "transformer.h.0\nattn.c_attn",
        "model.layers.0.q_proj",
        "model.layers.10.q_proj",
        "",
        "a.",
    ],
)
def test_a_plain_key_is_a_suffix_at_a_dot_as_the_expression_says(key: str, name: str) -> None:
    """Plain characters and dots (any character but a line break, as in the expression): one length,
    compared with the end of the name, no automaton."""
    matcher = SuffixPattern(key)
    assert matcher.plain and matcher.states == 0
    assert matcher.matches(name) == _peft(key, name)


@pytest.mark.parametrize(
    ("key", "name", "expected"),
    [
        (r"h.1.attn.c_attn", "transformer.h.1.attn.c_attn", True),  # the dots are any character, as for peft
        (r"h.1.attn.c_attn", "transformer.h-1-attn-c_attn", True),
        (r"h\.1\.attn\.c_attn", "transformer.h-1-attn-c_attn", False),
        (r"layers\.\d+\.mlp\.down_proj", "model.layers.12.mlp.down_proj", True),
        (r"(q|v)_proj", "model.layers.0.self_attn.k_proj", False),
    ],
)
def test_regular_keys_mean_what_they_mean_to_peft(key: str, name: str, expected: bool) -> None:
    assert SuffixPattern(key).matches(name) is expected
    assert _peft(key, name) is expected


def test_the_key_that_hangs_re_is_matched_in_steps_bounded_by_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs: the steps the automaton counts as it runs (each state and edge once per position,
    each alive state's test once) stay within its cost, linear in the name, and the key never reaches
    Python's backtracking engine."""
    matcher = SuffixPattern(EVIL)
    assert 0 < matcher.states < 20

    def no_backtracking(pattern: str | re.Pattern[str], string: str, flags: int = 0) -> re.Match[str] | None:
        assert "X" not in str(pattern), "the key went to Python's backtracking engine"
        return real(pattern, string, flags)

    real = re.match
    monkeypatch.setattr(re, "match", no_backtracking)
    name = "model.layers.0.self_attn.q_proj.lora_A.xy"  # 41 characters, as in the issue
    assert len(name) == 41
    assert matcher.work(name) == (False, matcher.work(name)[1])
    assert matcher.work(name)[1] <= matcher.cost(name) <= 100 * (len(name) + 1)
    long_name = "a.b" * 3000 + "X"
    matched, steps = matcher.work(long_name)
    assert matched is True and steps <= matcher.cost(long_name) <= 100 * (len(long_name) + 1)


@pytest.mark.parametrize("seed", [59, 60])
def test_the_steps_taken_never_exceed_the_cost_counted_before(seed: int) -> None:
    """The budget is summed from :meth:`SuffixPattern.cost` before any key runs: what a match then
    counts as it runs (every pop of a state, every test, every segment compared) is never more, for
    random keys of the parity grammar, plain keys, and names with line breaks, dots and long runs
    (Python's engine backtracks for minutes on some of them: only the counts are compared here)."""
    rng = random.Random(seed)
    names = ["", "\n", "a.b.query", "x.query\n", "a\nb.query", "." * 12, "ab" * 8 + ".query\n"]
    keys = ["query", "a.b", ".", "h.0.attn.c_attn", EVIL, r"(?:[^\n]*){40}Z", r"[\w.]*(q|k)_proj"]
    keys += [_random_key(rng) for _ in range(400)]
    checked = 0
    for key in keys:
        try:
            matcher = SuffixPattern(key)
        except PatternError:
            continue
        for name in [*names, "".join(rng.choice("ab._x1\n") for _ in range(rng.randint(0, 12)))]:
            matched, steps = matcher.work(name)  # the answers: the parity tests above
            assert matched == matcher.matches(name) and 0 < steps <= matcher.cost(name), (key, name)
            checked += 1
        long_name = "ab." * 700 + "query\n"
        assert 0 < matcher.work(long_name)[1] <= matcher.cost(long_name), key
    assert checked > 1000


def test_a_class_is_one_membership_test_however_many_items_it_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs: a class of 150 single characters (the review's key that took 462 s) is compiled
    once for every copy of its repeat and tried once per position of the name, each try a set lookup
    and a bisection, never a predicate per item; the steps are those of a class of one item."""
    punctuation = "".join(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum() and c not in "\\]^-[._")
    items = punctuation + "".join(chr(0x100 + 2 * i) for i in range(150 - len(punctuation)))
    tries = []
    original = patterns.CharClass.__call__

    def counted(self: patterns.CharClass, char: str) -> bool:
        tries.append(char)
        return original(self, char)

    monkeypatch.setattr(patterns.CharClass, "__call__", counted)
    name = "transformer.h.0.attn.c_attn"
    wide, narrow = SuffixPattern(f"(?:[^{items}]*){{300}}Z"), SuffixPattern("(?:[^!]*){300}Z")
    assert wide.states == narrow.states
    assert wide.work(name) == narrow.work(name)  # the same answer in the same steps
    # once per position, not once per copy (300) or item (150); [^!] is a single NOT_LITERAL, no class
    assert len(tries) == len(name)


def test_a_class_answers_as_pythons_engine_on_every_code_point() -> None:
    """``\\d``, ``\\s``, ``\\w`` and their complements are one set of kinds of a character: the same
    answer as ``re`` on all 1,114,112 code points, alone and combined with ranges and negation."""
    import sys

    for expression in (r"\w", r"[\d\s]", r"[^\w\s]", r"[\D\W]", r"[^\S\da-f\x80-\u0400]"):
        compiled = re.compile(expression)
        member = patterns.CharClass(patterns._parser.parse(expression)[0][1])
        wrong = [code for code in range(sys.maxunicode + 1) if member(chr(code)) != bool(compiled.fullmatch(chr(code)))]
        assert wrong == [], (expression, wrong[:5])


@pytest.mark.parametrize(
    ("key", "words"),
    [
        (r"(a)\1", "backreference"),
        (r"(?=query)query", "lookaround"),
        (r"(?<!x)query", "lookaround"),
        (r"a*+", "possessive"),
        (r"(?>a)", "atomic group"),
        (r"(?i:query)", "flags"),
        (r"(a{100}){200}", f"more than {MAX_STATES}"),
        (r"(", "not a valid regular expression"),
        (r"[z-a]", "not a valid regular expression"),
    ],
)
def test_what_no_bounded_matcher_runs_is_refused(key: str, words: str) -> None:
    with pytest.raises(PatternError, match=re.escape(words)):
        SuffixPattern(key)


def test_a_repeat_that_unrolls_too_far_is_refused_before_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size is counted as the automaton is built: ``(a{1000}){1000}`` stops at the limit, it does
    not build a million states first."""
    built = []
    original = patterns._Builder.state

    def counted(self: patterns._Builder, **kwargs: Any) -> patterns._State:
        built.append(1)
        return original(self, **kwargs)

    monkeypatch.setattr(patterns._Builder, "state", counted)
    with pytest.raises(PatternError):
        SuffixPattern("(a{1000}){1000}")
    assert len(built) == MAX_STATES + 1
