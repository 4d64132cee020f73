"""Module-name patterns from a file, matched in bounded time (peft's ``rank_pattern`` / ``alpha_pattern``).

peft picks a module's rank or alpha with the first key ``k`` of the pattern for which

    re.match(rf"(.*\\.)?({k})$", module_name)

matches: the key is a regular expression matched at the end of the name, at a dot boundary. Keys come
from an adapter's config, that is from whoever hands the adapter over, and Python's backtracking
engine takes exponential time on some short ones: ``([\\w.]|[\\w.])*X`` (17 characters) against a
41-character name runs for minutes. So a key is never given to that engine here:

- a key of plain characters and dots (``query``, ``c_attn``, ``layers.0.self_attn.q_proj``) has one
  length, so it is compared with the end of the name at that length, a dot matching any character
  but a line break as in the expression (a plain suffix at a dot boundary);
- any other key is parsed by Python's own parser (so it means exactly what it means to peft) and run
  as a Thompson automaton (Thompson 1968; Cox, "Regular Expression Matching Can Be Simple And Fast",
  2007): one pass over the name that keeps the set of automaton states alive, at most
  ``(len(name) + 1) · (2 states + edges)`` steps however the key nests its repeats.

Every step costs a bounded time whatever the key: a character class is compiled once into one
membership test (:class:`CharClass`), so the steps :meth:`SuffixPattern.cost` counts before a key runs
bound its time, not only its count (a caller sums them against a budget:
``specbound.core.limits.Limits.max_pattern_match_steps``). The automaton has at most
  :data:`MAX_STATES` states (``x{1000}`` unrolls to a thousand copies of ``x``); a larger one, and the
  constructs no automaton runs (backreferences, lookarounds, possessive repeats, atomic groups, flags)
  are refused with :class:`PatternError`: none of them is needed to name a module.

Examples:
    >>> SuffixPattern("query").matches("bert.encoder.layer.0.attention.self.query")
    True
    >>> SuffixPattern(r"layer\\.[01]\\.attention\\.self\\.(query|key)").matches("encoder.layer.1.attention.self.key")
    True
    >>> SuffixPattern("([\\\\w.]|[\\\\w.])*X").matches("a" * 41)   # at once, not after minutes
    False
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

_parser: Any = importlib.import_module("re._parser")

#: The largest automaton a pattern may unroll to (each step of a match visits at most this many states).
MAX_STATES = 10_000
#: Characters of a name that one unit of work may scan in C (``str.rfind`` for a line break before a
#: plain key's suffix): a scan of 1024 characters at memory speed takes about as long as one Python-level
#: operation of the matcher.
SCAN_CHARS_PER_STEP = 1024

#: The steps one call of a plain key's match counts for itself (the calls and the tuple of the name's
#: ends), beside two per end tried and two per segment compared.
_PLAIN_CALL_STEPS = 4

#: Python's default flags for a str pattern (Unicode matching); any other flag is refused.
_DEFAULT_FLAGS = re.UNICODE.value

#: What Python's ``re`` engine calls a digit, a space and a word character in a str pattern are
#: ``str.isdecimal``, ``str.isspace`` and ``str.isalnum`` or ``_`` (its ``Py_UNICODE_ISDECIMAL``,
#: ``_ISSPACE``, ``_ISALNUM``). Digits are word characters and no space is one, so every character is
#: in exactly one of four kinds, and each of ``\d \D \s \S \w \W`` is a set of kinds: a class's
#: categories together are one set, tested by one call of :func:`_kind` however many the class names
#: (a test checks the kinds against ``re`` on all 1,114,112 code points).
_DIGIT, _OTHER_WORD, _SPACE, _OTHER = range(4)
_CATEGORIES: dict[str, frozenset[int]] = {
    "CATEGORY_DIGIT": frozenset({_DIGIT}),
    "CATEGORY_NOT_DIGIT": frozenset({_OTHER_WORD, _SPACE, _OTHER}),
    "CATEGORY_SPACE": frozenset({_SPACE}),
    "CATEGORY_NOT_SPACE": frozenset({_DIGIT, _OTHER_WORD, _OTHER}),
    "CATEGORY_WORD": frozenset({_DIGIT, _OTHER_WORD}),
    "CATEGORY_NOT_WORD": frozenset({_SPACE, _OTHER}),
}


def _kind(char: str) -> int:
    """Which of the four kinds ``char`` is (a digit, another word character, a space, anything else)."""
    if char.isalnum() or char == "_":
        return _DIGIT if char.isdecimal() else _OTHER_WORD
    return _SPACE if char.isspace() else _OTHER


class PatternError(ValueError):
    """A pattern that is not a regular expression, or uses what a bounded matcher cannot run."""


class PatternTooLarge(PatternError):
    """A pattern whose automaton would have more states than it may."""


def _is_word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and _kind(text[at]) in _CATEGORIES["CATEGORY_WORD"]


#: Zero-width assertions by the parser's name, as predicates of (text, position).
_ASSERTIONS: dict[str, Callable[[str, int], bool]] = {
    "AT_BEGINNING": lambda text, at: at == 0,
    "AT_BEGINNING_STRING": lambda text, at: at == 0,
    "AT_END": lambda text, at: at == len(text) or (at == len(text) - 1 and text[-1] == "\n"),
    "AT_END_STRING": lambda text, at: at == len(text),
    "AT_BOUNDARY": lambda text, at: _is_word(text, at - 1) != _is_word(text, at),
    # as Python's engine, \B holds nowhere in an empty name
    "AT_NON_BOUNDARY": lambda text, at: bool(text) and _is_word(text, at - 1) == _is_word(text, at),
}


class CharClass:
    """A ``[...]`` class compiled once into a membership test of constant cost, however many items it
    lists: its single characters as a frozenset of code points, its ranges merged into sorted disjoint
    ones searched by bisection (at most 21 halvings for the 1,114,112 code points), its categories
    (``\\w``, ``\\d``, ``\\s`` and their complements) as one set of kinds (:func:`_kind`). A class
    of 150 items costs what a class of one does, so one step of the automaton costs a bounded time (a
    predicate per item made a step through ``[^!"#...]`` 150 times slower, which no step count saw).

    Example:
        >>> items = [("LITERAL", ord("_")), ("RANGE", (ord("a"), ord("z"))), ("CATEGORY", "CATEGORY_DIGIT")]
        >>> member = CharClass(items)
        >>> member("q"), member("_"), member("7"), member("Q"), member(".")
        (True, True, True, False, False)
    """

    __slots__ = ("_codes", "_highs", "_kinds", "_lows", "_negate")

    def __init__(self, items: Iterable[tuple[Any, Any]]) -> None:
        items = list(items)
        self._negate = bool(items) and str(items[0][0]) == "NEGATE"
        codes: set[int] = set()
        ranges: list[tuple[int, int]] = []
        kinds: set[int] = set()
        for op, arg in items[1:] if self._negate else items:
            kind = str(op)
            if kind == "LITERAL":
                codes.add(arg)
            elif kind == "RANGE":
                ranges.append((arg[0], arg[1]))
            elif kind == "CATEGORY":
                kinds |= _CATEGORIES[str(arg)]
            else:
                raise PatternError(f"uses {kind.lower()} in a character class")
        merged: list[list[int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        self._codes = frozenset(codes)
        self._lows = tuple(low for low, _ in merged)
        self._highs = tuple(high for _, high in merged)
        self._kinds = frozenset(kinds)

    def __call__(self, char: str) -> bool:
        code = ord(char)
        hit = code in self._codes
        if not hit and self._lows:
            index = bisect_right(self._lows, code) - 1
            hit = index >= 0 and code <= self._highs[index]
        if not hit and self._kinds:
            hit = _kind(char) in self._kinds
        return hit != self._negate


def _equals(code: int) -> Callable[[str], bool]:
    return lambda char: ord(char) == code


def _differs(code: int) -> Callable[[str], bool]:
    return lambda char: ord(char) != code


def _not_line_break(char: str) -> bool:
    return char != "\n"


@dataclass(eq=False)
class _State:
    """One automaton state while it is built: consumes a character (``accepts``), asserts a position
    (``holds``), splits (two ``out``), or matches (no ``out``)."""

    out: list[_State | None] = field(default_factory=list)
    accepts: Callable[[str], bool] | None = None
    holds: Callable[[str, int], bool] | None = None


#: The constructs refused, in words (each needs a backtracking engine, or changes what a group means).
_UNSUPPORTED = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "a lookaround",
    "ASSERT_NOT": "a lookaround",
    "POSSESSIVE_REPEAT": "a possessive repeat",
    "ATOMIC_GROUP": "an atomic group",
}


class _Builder:
    """Thompson's construction, built backwards: each item is given the state that follows it."""

    def __init__(self, max_states: int) -> None:
        self.count, self.max_states = 0, max_states
        #: each distinct character test built once and shared by every copy of it (``x{1000}``: one
        #: test, so :meth:`_Automaton.run` tries it once per position, not once per copy)
        self.tests: dict[tuple[str, int], tuple[Any, Callable[[str], bool]]] = {}

    def test(self, kind: str, arg: Any) -> Callable[[str], bool]:
        """The character test of a LITERAL, NOT_LITERAL, ANY or IN item, shared by its copies (a
        class by the identity of its parsed items, which every copy of a repeat shares: a class is
        compiled once, not once per copy)."""
        key = (kind, arg if isinstance(arg, int) else id(arg))
        if key not in self.tests:
            test: Callable[[str], bool]
            if kind == "LITERAL":
                test = _equals(arg)
            elif kind == "NOT_LITERAL":
                test = _differs(arg)
            elif kind == "ANY":
                test = _not_line_break
            else:
                test = CharClass(arg)
            self.tests[key] = (arg, test)  # the items kept alive, so that their identity is not reused
        return self.tests[key][1]

    def state(self, **kwargs: Any) -> _State:
        self.count += 1
        if self.count > self.max_states:
            raise PatternTooLarge(f"unrolls to more than {self.max_states} automaton states")
        return _State(**kwargs)

    def sequence(self, items: Any, then: _State) -> _State:
        for item in reversed(list(items)):
            then = self.item(item, then)
        return then

    def item(self, item: tuple[Any, Any], then: _State) -> _State:
        op, arg = item
        kind = str(op)
        if kind in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return self.state(out=[then], accepts=self.test(kind, arg))
        if kind == "AT":
            if str(arg) not in _ASSERTIONS:
                raise PatternError(f"uses the anchor {str(arg).lower()}")
            return self.state(out=[then], holds=_ASSERTIONS[str(arg)])
        if kind == "SUBPATTERN":
            _, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                raise PatternError("sets flags inside a group")
            return self.sequence(body, then)
        if kind == "BRANCH":
            return self.state(out=[self.sequence(branch, then) for branch in arg[1]])
        if kind in ("MAX_REPEAT", "MIN_REPEAT"):  # lazy or greedy: the same strings match
            low, high, body = arg
            return self.repeat(body, low, None if high == _parser.MAXREPEAT else high, then)
        raise PatternError(f"uses {_UNSUPPORTED.get(kind, kind.lower())}, which no bounded matcher runs")

    def repeat(self, body: Any, low: int, high: int | None, then: _State) -> _State:
        """``body{low,high}`` (``high`` None: unbounded) as ``low`` copies, then optional ones or a loop."""
        if high is None:
            loop = self.state(out=[None, then])
            loop.out[0] = self.sequence(body, loop)
            tail = loop
        else:
            tail = then
            for _ in range(high - low):
                tail = self.state(out=[self.sequence(body, tail), then])
        for _ in range(low):
            tail = self.sequence(body, tail)
        return tail


@dataclass(frozen=True, eq=False)
class _Automaton:
    """The automaton as arrays indexed by state: each state's successors, its character test (a
    consuming state) and its position test (an assertion); a state with neither splits, or accepts
    when it has no successor. Every operation of :meth:`run` is a constant-time step over them."""

    start: int
    accept: int
    outs: tuple[tuple[int, ...], ...]
    tests: tuple[Callable[[str], bool] | None, ...]
    holds: tuple[Callable[[str, int], bool] | None, ...]

    @classmethod
    def of(cls, start: _State, accept: _State) -> _Automaton:
        index: dict[int, int] = {}
        order: list[_State] = []
        stack = [start]
        while stack:
            state = stack.pop()
            if id(state) not in index:
                index[id(state)] = len(order)
                order.append(state)
                stack.extend(s for s in state.out if s is not None)
        if id(accept) not in index:  # a key that can never reach the end of the name
            index[id(accept)] = len(order)
            order.append(accept)
        return cls(
            index[id(start)],
            index[id(accept)],
            tuple(tuple(index[id(s)] for s in state.out if s is not None) for state in order),
            tuple(state.accepts for state in order),
            tuple(state.holds for state in order),
        )

    @property
    def edges(self) -> int:
        return sum(len(out) for out in self.outs)

    def steps_per_position(self) -> int:
        """At most this many steps at one position of the name: every state and every edge
        popped once by the closure (a state is expanded once, so it pushes its successors once), and
        every alive consuming state's character test."""
        return 2 * len(self.outs) + self.edges

    def run(self, text: str) -> tuple[bool, int]:
        """Whether the automaton accepts ``text`` (anchored at its start), and the steps it took.

        One pass (Thompson's simulation): the set of states alive before each character, closed under
        splits and assertions that hold there, then moved over the character. ``seen`` stamps a state
        with the position where it was last expanded, so each is expanded at most once per position.
        """
        outs, tests = self.outs, self.tests
        seen = [-1] * len(outs)
        steps = len(outs)  # the stamps
        alive, spent = self._closure([self.start], text, 0, seen)
        steps += spent
        at = 0
        while True:
            if seen[self.accept] == at:
                return True, steps
            if at == len(text) or not alive:
                return False, steps
            char, moved = text[at], []
            verdicts: dict[Callable[[str], bool], bool] = {}
            for state in alive:  # each distinct test tried once at this position
                test = tests[state]
                assert test is not None  # the closure keeps consuming states only
                hit = verdicts.get(test)
                if hit is None:
                    hit = verdicts[test] = test(char)
                if hit:
                    moved.append(outs[state][0])
            steps += len(alive)
            at += 1
            alive, spent = self._closure(moved, text, at, seen)
            steps += spent

    def _closure(self, seeds: list[int], text: str, at: int, seen: list[int]) -> tuple[list[int], int]:
        """The consuming states reachable from ``seeds`` without a character at ``at``, and the pops."""
        outs, tests, holds = self.outs, self.tests, self.holds
        stack, reached, pops = seeds, [], 0
        while stack:
            state = stack.pop()
            pops += 1
            if seen[state] == at:
                continue
            seen[state] = at
            if tests[state] is not None:
                reached.append(state)
            else:
                hold = holds[state]
                if hold is None or hold(text, at):
                    stack.extend(outs[state])
        return reached, pops


@dataclass(frozen=True, eq=False)
class SuffixPattern:
    """A ``rank_pattern`` / ``alpha_pattern`` key, matched as peft matches it, in bounded time
    (module docstring). :class:`PatternError` for a key that is not a regular expression or that
    uses what the automaton cannot run."""

    key: str
    #: at most this many automaton states (:data:`MAX_STATES`; less where several keys share a budget)
    max_states: int = MAX_STATES
    plain: bool = field(init=False)
    states: int = field(init=False)  # the automaton's size; 0 for a plain key
    _automaton: _Automaton | None = field(init=False, repr=False)
    _segments: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        plain = bool(self.key) and all(c == "." or re.escape(c) == c for c in self.key)
        automaton = None if plain else _compile(self.key, self.max_states)
        object.__setattr__(self, "plain", plain)
        object.__setattr__(self, "_automaton", automaton)
        object.__setattr__(self, "states", 0 if automaton is None else len(automaton.outs))
        object.__setattr__(self, "_segments", tuple(self.key.split(".")) if plain else ())

    def cost(self, name: str) -> int:
        """An upper bound of the steps :meth:`matches` takes on ``name``, each of bounded time
        whatever the key (:meth:`work` counts them as they run): for a plain key, its dot-separated
        segments compared at each of the at most two ends of the name, and a scan of the name for a
        line break (:data:`SCAN_CHARS_PER_STEP` characters a unit); else the automaton's stamps, and at
        each position of the name every state and edge once and every state's character test."""
        if self._automaton is None:
            return _PLAIN_CALL_STEPS + 2 * (2 + 2 * len(self._segments) + len(name) // SCAN_CHARS_PER_STEP)
        return self.states + (len(name) + 1) * self._automaton.steps_per_position()

    def matches(self, name: str) -> bool:
        """Whether ``re.match(rf"(.*\\.)?({key})$", name)`` would match, computed without backtracking."""
        return self.work(name)[0]

    def work(self, name: str) -> tuple[bool, int]:
        """:meth:`matches` and the steps it took (at most :meth:`cost`), counted as they run."""
        if self._automaton is None:
            return _plain_match(self._segments, len(self.key), name)
        return self._automaton.run(name)


def _compile(key: str, max_states: int) -> _Automaton:
    """The automaton of peft's expression around ``key``."""
    try:
        parsed = _parser.parse(rf"(.*\.)?({key})$")
    except (re.error, RecursionError, OverflowError) as exc:
        raise PatternError("is not a valid regular expression") from exc
    if parsed.state.flags & ~_DEFAULT_FLAGS:
        raise PatternError("sets flags")
    accept = _State()
    return _Automaton.of(_Builder(max_states).sequence(list(parsed), accept), accept)


def _plain_match(segments: tuple[str, ...], length: int, name: str) -> tuple[bool, int]:
    """``(.*\\.)?(key)$`` for a key of plain characters and dots (``segments``: the key split at its
    dots, ``length`` its length): the name ends with ``length`` characters that match the key (a dot
    any character but a line break), after nothing or after a dot with no line break before it
    (``.*`` stops at one); ``$`` also before a final line break. Returns the answer and the steps
    taken (:meth:`SuffixPattern.cost` counts them)."""
    steps = _PLAIN_CALL_STEPS
    ends = (len(name), len(name) - 1) if name.endswith("\n") else (len(name),)
    for end in ends:
        steps += 2
        start = end - length
        if start < 0:
            continue
        at, fits = start, True
        for i, segment in enumerate(segments):
            steps += 2
            if i:  # the dot before this segment: any character but a line break
                if name[at] == "\n":
                    fits = False
                    break
                at += 1
            if not name.startswith(segment, at):
                fits = False
                break
            at += len(segment)
        if fits and start > 0:
            steps += start // SCAN_CHARS_PER_STEP
            fits = name[start - 1] == "." and name.rfind("\n", 0, start) == -1
        if fits:
            return True, steps
    return False, steps
