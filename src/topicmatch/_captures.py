"""Captures: which patterns matched a topic, and what each wildcard of each pattern bound.

A router that dispatches to handlers wants more than the subscribers of a topic: for
``sensors/+/temp`` it wants the device id the ``+`` stood for. :func:`capture` answers for one
pattern and one topic; :meth:`Matcher.captures <topicmatch.Matcher.captures>` for every pattern
of a matcher that the topic matches, with the same verdicts as ``lookup``.

**The values.** One value per wildcard of the pattern *as written*, left to right: a one-word
wildcard (``*``, MQTT's ``+``) binds a ``str``; a many-word wildcard (``#``, NATS's ``>``) binds
a ``tuple`` of words (``#`` may bind ``()``, ``>`` never does). Literal words bind nothing.

**Ambiguity.** Where a pattern can match a topic in several ways (AMQP allows ``#`` anywhere,
any number of times: ``#.a.#`` on ``a.a.a``), each ``#`` binds the fewest words that still let
the rest of the pattern match, leftmost first. So ``#.a.#`` on ``a.a.a`` binds ``()`` and
``('a', 'a')``, and ``a.#.#`` on ``a.b`` binds ``()`` and ``('b',)``. AMQP's canonical form
(``#.*`` is ``*.#``, see :mod:`._words`) does not apply here: the wildcards bind in the order the
pattern's text has them.

**Consistent with lookup.** A pattern and a topic have captures exactly when the dialect's
matching says they match: the same validation and errors, MQTT's ``$`` rule, shared
subscriptions (``$share/<group>/<filter>`` binds as ``<filter>``; a ``$`` first level of a shared
filter matches nothing), NATS's subjects with an empty token (they match nothing).

**Cost.** O(tokens x words) for one pair: a walk over (token, word) positions in which each
position is visited at most once, so no pattern, however hostile, costs more.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, NamedTuple, TypeAlias, TypeVar

from ._dialects import Dialect, make_dialect, plain
from ._typevars import Text
from ._words import HASH, STAR, Token, Tokens, pattern_matches

__all__ = ["Capture", "Value", "capture", "captures_of"]

S = TypeVar("S", bound=Hashable)

#: What one wildcard binds: a word for ``*``/``+``, the words for ``#``/``>``.
Value: TypeAlias = "str | tuple[str, ...]"

#: A dialect's name or a Dialect, checked by :func:`capture` itself (a constrained type variable,
#: so that the compiled build raises the same typed error for anything else: docs/compiled.md).
DialectArgument = TypeVar("DialectArgument", str, Dialect)

_DIALECTS: dict[str, Dialect] = {}
_START = (-1, -1)  # where the walk of _walk comes from


class Capture(NamedTuple, Generic[S]):
    """One pattern that matched a topic: the pattern, the values of its wildcards (module
    docstring) and its subscribers."""

    pattern: str
    values: tuple[Value, ...]
    subscribers: frozenset[S]


def _dialect(dialect: DialectArgument) -> Dialect:
    if isinstance(dialect, Dialect):
        return dialect
    if not isinstance(dialect, str):
        return make_dialect(dialect)  # its ConfigurationError: not a dialect's name
    found = _DIALECTS.get(dialect)
    if found is None:
        found = _DIALECTS[dialect] = make_dialect(dialect)  # ConfigurationError if unknown
    return found


def _slots(dialect: Dialect, pattern: Text) -> tuple[Tokens, bool]:
    """The pattern's tokens in the order its text has them, and whether its last two tokens are
    NATS's ``>`` (one ``STAR`` and one ``HASH`` that bind one value together).

    The dialect validates the pattern (its errors are raised here). Its tokens serve as they are
    in MQTT and NATS, whose parsers map level to token one for one (``>`` to two); AMQP's are in
    canonical form, which may reorder and merge wildcards, so they are read from the text.
    """
    tokens = dialect.parse_pattern(pattern)
    if dialect.name == "amqp":
        words = pattern.split(".") if pattern else []
        tokens = tuple([STAR if w == "*" else HASH if w == "#" else w for w in words])
        return tokens, False
    return tokens, dialect.name == "nats" and bool(tokens) and tokens[-1] is HASH


def _bind(tokens: Tokens, joined: bool, words: Sequence[str]) -> tuple[Value, ...] | None:
    """The values of ``tokens``' wildcards on ``words`` (module docstring), or None if they do not
    match."""
    came_from = _walk(tokens, words)
    return None if came_from is None else _values(tokens, joined, words, came_from)


def _walk(tokens: Tokens, words: Sequence[str]) -> dict[tuple[int, int], tuple[int, int]] | None:
    """The positions (token, word) a depth-first walk entered before it reached the end of both,
    each with the position it came from; None if it never did (no match). At a ``HASH`` the walk
    tries to stop before it tries to take one more word, so the first path to the end binds each
    ``HASH`` to the fewest words. Each position is entered once (one reached again already
    failed): at most (len(tokens) + 1) x (len(words) + 1) entries, the bound of its cost."""
    n, w = len(tokens), len(words)
    came_from: dict[tuple[int, int], tuple[int, int]] = {}
    stack: list[tuple[tuple[int, int], tuple[int, int]]] = [((0, 0), _START)]
    end = (n, w)
    while stack:
        state, parent = stack.pop()
        if state in came_from:
            continue
        came_from[state] = parent
        if state == end:
            return came_from
        i, j = state
        if i == n:
            continue
        token: Token = tokens[i]
        if token is HASH:
            if j < w:
                stack.append(((i, j + 1), state))  # take one more word: tried second
            stack.append(((i + 1, j), state))  # stop here: tried first
        elif j < w and (token is STAR or token == words[j]):
            stack.append(((i + 1, j + 1), state))
    return None


def _values(
    tokens: Tokens,
    joined: bool,
    words: Sequence[str],
    came_from: dict[tuple[int, int], tuple[int, int]],
) -> tuple[Value, ...]:
    """Read the bindings off the walk's path, from its end back to the start."""
    taken: list[list[str]] = [[] for _ in tokens]  # the words each token consumed
    state = (len(tokens), len(words))
    while True:
        parent = came_from[state]
        if parent == _START:
            break
        if state[1] == parent[1] + 1:  # the move consumed words[parent[1]] for token parent[0]
            taken[parent[0]].append(words[parent[1]])
        state = parent
    values: list[Value] = []
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if token is STAR and not (joined and i == last - 1):
            values.append(taken[i][0])
        elif token is HASH:
            got = taken[i][::-1]
            if joined:  # NATS's '>': the STAR before it took the first word
                got = taken[i - 1] + got
            values.append(tuple(got))
    return tuple(values)


def capture(
    pattern: Text,
    topic: Text,
    # A str default of a variable constrained to str or Dialect: mypy wants it valid for both.
    dialect: DialectArgument = "amqp",  # type: ignore[assignment]
) -> tuple[Value, ...] | None:
    """The values the wildcards of ``pattern`` bind in ``topic``, or None if it does not match.

    ``dialect`` is a name (default limits) or a :class:`~topicmatch.Dialect`. Raises
    :class:`~topicmatch.InvalidPatternError` / :class:`~topicmatch.InvalidTopicError` as the
    dialect does, :class:`~topicmatch.ConfigurationError` for an unknown dialect. O(tokens x
    words).

    >>> capture("sensors/+/temp", "sensors/kitchen/temp", "mqtt")
    ('kitchen',)
    >>> capture("orders.*.>", "orders.eu.paid.card", "nats")
    ('eu', ('paid', 'card'))
    >>> capture("a.#.c", "a.c"), capture("a.*", "b.x")
    (((),), None)
    """
    rules = _dialect(dialect)
    pattern = plain(pattern)
    tokens, joined = _slots(rules, pattern)
    words = rules.parse_topic(topic)
    if words is None:
        return None
    # The dialect's own verdict decides ($ rule, shared '$' filters); the walk only binds.
    if not pattern_matches(rules.parse_pattern(pattern), words, rules.dollar_rule):
        return None
    return _bind(tokens, joined, words)


def captures_of(
    dialect: Dialect,
    topic: str,
    subscribers: Iterable[S],
    patterns_of: Callable[[S], list[str]],
) -> list[Capture[S]]:
    """Every pattern among the patterns of ``subscribers`` (a lookup's result) that ``topic``
    matches, with its values and those of the subscribers that hold it, sorted by pattern.

    A pattern matches ``topic`` only if all its subscribers are in the lookup's result, so the
    patterns of the result's subscribers include every matching one. O(the patterns of those
    subscribers x tokens x words).
    """
    words = dialect.parse_topic(topic)
    if words is None:
        return []
    found: dict[str, tuple[tuple[Value, ...], set[S]]] = {}
    misses: set[str] = set()
    for subscriber in subscribers:
        for pattern in patterns_of(subscriber):
            if pattern in misses:
                continue
            entry = found.get(pattern)
            if entry is None:
                if not pattern_matches(dialect.parse_pattern(pattern), words, dialect.dollar_rule):
                    misses.add(pattern)
                    continue
                tokens, joined = _slots(dialect, pattern)
                values = _bind(tokens, joined, words)
                assert values is not None  # the pattern matches, so the walk finds a binding
                entry = found[pattern] = (values, set())
            entry[1].add(subscriber)
    return [Capture(pattern, values, frozenset(subs)) for pattern, (values, subs) in sorted(found.items())]
