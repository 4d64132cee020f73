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
  ``(len(name) + 1) · states`` steps however the key nests its repeats. The automaton has at most
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
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_parser: Any = importlib.import_module("re._parser")

#: The largest automaton a pattern may unroll to (each step of a match visits at most this many states).
MAX_STATES = 10_000

#: Python's default flags for a str pattern (Unicode matching); any other flag is refused.
_DEFAULT_FLAGS = re.UNICODE.value

#: The classes ``\\d``, ``\\s``, ``\\w`` and their complements, as Python's parser names them.
_CATEGORIES: dict[str, str] = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


class PatternError(ValueError):
    """A pattern that is not a regular expression, or uses what a bounded matcher cannot run."""


class PatternTooLarge(PatternError):
    """A pattern whose automaton would have more states than it may."""


@lru_cache(maxsize=4096)
def _in_category(category: str, char: str) -> bool:
    """Whether one character is in ``\\d``, ``\\w``, ... (Python's own Unicode definition; constant time)."""
    return re.fullmatch(_CATEGORIES[category], char) is not None


def _is_word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and _in_category("CATEGORY_WORD", text[at])


#: Zero-width assertions by the parser's name, as predicates of (text, position).
_ASSERTIONS = {
    "AT_BEGINNING": lambda text, at: at == 0,
    "AT_BEGINNING_STRING": lambda text, at: at == 0,
    "AT_END": lambda text, at: at == len(text) or (at == len(text) - 1 and text[-1] == "\n"),
    "AT_END_STRING": lambda text, at: at == len(text),
    "AT_BOUNDARY": lambda text, at: _is_word(text, at - 1) != _is_word(text, at),
    # as Python's engine, \B holds nowhere in an empty name
    "AT_NON_BOUNDARY": lambda text, at: bool(text) and _is_word(text, at - 1) == _is_word(text, at),
}


@dataclass(eq=False)
class _State:
    """One automaton state: consumes a character (``accepts``), asserts a position (``holds``), splits
    (two ``out``), or matches (no ``out``)."""

    out: list[_State | None] = field(default_factory=list)
    accepts: Any = None  # (char) -> bool
    holds: Any = None  # (text, position) -> bool


def _char_class(items: list[tuple[Any, Any]]) -> Any:
    """The predicate of a ``[...]`` class from the parser's items."""
    negate = bool(items) and str(items[0][0]) == "NEGATE"
    tests: list[Any] = []
    for op, arg in items[1:] if negate else items:
        kind = str(op)
        if kind == "LITERAL":
            tests.append(lambda c, code=arg: ord(c) == code)
        elif kind == "RANGE":
            tests.append(lambda c, lo=arg[0], hi=arg[1]: lo <= ord(c) <= hi)
        elif kind == "CATEGORY":
            tests.append(lambda c, cat=str(arg): _in_category(cat, c))
        else:
            raise PatternError(f"uses {kind.lower()} in a character class")
    return lambda c: any(test(c) for test in tests) != negate


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
        if kind == "LITERAL":
            return self.state(out=[then], accepts=lambda c, code=arg: ord(c) == code)
        if kind == "NOT_LITERAL":
            return self.state(out=[then], accepts=lambda c, code=arg: ord(c) != code)
        if kind == "ANY":
            return self.state(out=[then], accepts=lambda c: c != "\n")
        if kind == "IN":
            return self.state(out=[then], accepts=_char_class(list(arg)))
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


def _closure(states: list[_State], text: str, at: int) -> list[_State]:
    """Every state reachable from ``states`` without consuming a character at position ``at``."""
    seen: set[int] = set()
    reached: list[_State] = []
    stack = list(reversed(states))
    while stack:
        state = stack.pop()
        if id(state) in seen:
            continue
        seen.add(id(state))
        if state.holds is not None:
            if state.holds(text, at):
                stack.extend(s for s in reversed(state.out) if s is not None)
        elif state.accepts is None and state.out:  # a split
            stack.extend(s for s in reversed(state.out) if s is not None)
        else:
            reached.append(state)
    return reached


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
    _automaton: tuple[_State, _State] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        plain = bool(self.key) and all(c == "." or re.escape(c) == c for c in self.key)
        automaton = None if plain else _compile(self.key, self.max_states)
        object.__setattr__(self, "plain", plain)
        object.__setattr__(self, "_automaton", automaton)
        object.__setattr__(self, "states", 0 if automaton is None else _size(automaton[0]))

    def cost(self, name: str) -> int:
        """An upper bound of the steps :meth:`matches` takes on ``name``: the key's length for a plain
        key, else one visit of each state at each position of the name."""
        return len(self.key) + 1 if self.plain else (len(name) + 1) * self.states

    def matches(self, name: str) -> bool:
        """Whether ``re.match(rf"(.*\\.)?({key})$", name)`` would match, computed without backtracking."""
        if self._automaton is None:
            return _plain_match(self.key, name)
        start, accept = self._automaton
        alive = _closure([start], name, 0)
        for at in range(len(name) + 1):
            if any(state is accept for state in alive):
                return True
            if at == len(name) or not alive:
                return False
            char = name[at]
            moved = [s.out[0] for s in alive if s.accepts is not None and s.accepts(char) and s.out[0] is not None]
            alive = _closure(moved, name, at + 1)
        return False


def _compile(key: str, max_states: int) -> tuple[_State, _State]:
    """The automaton of peft's expression around ``key``: its start and its accepting state."""
    try:
        parsed = _parser.parse(rf"(.*\.)?({key})$")
    except (re.error, RecursionError, OverflowError) as exc:
        raise PatternError("is not a valid regular expression") from exc
    if parsed.state.flags & ~_DEFAULT_FLAGS:
        raise PatternError("sets flags")
    accept = _State()
    return _Builder(max_states).sequence(list(parsed), accept), accept


def _size(start: _State) -> int:
    seen: set[int] = set()
    stack = [start]
    while stack:
        state = stack.pop()
        if id(state) not in seen:
            seen.add(id(state))
            stack.extend(s for s in state.out if s is not None)
    return len(seen)


def _plain_match(key: str, name: str) -> bool:
    """``(.*\\.)?(key)$`` for a key of plain characters and dots: the name ends with ``len(key)``
    characters that match the key (a dot any character but a line break), after nothing or after a
    dot with no line break before it (``.*`` stops at one); ``$`` also before a final line break."""
    ends = [len(name)] + ([len(name) - 1] if name.endswith("\n") else [])
    for end in ends:
        start = end - len(key)
        if start < 0:
            continue
        if all(c == k or (k == "." and c != "\n") for c, k in zip(name[start:end], key, strict=True)):
            prefix = name[:start]
            if prefix == "" or (prefix.endswith(".") and "\n" not in prefix):
                return True
    return False
