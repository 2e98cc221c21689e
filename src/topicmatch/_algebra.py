"""Pattern algebra: do two patterns overlap, does one cover the other (exact, per dialect).

Both questions are about the *topics* a pattern matches, so they take the dialect's topic rules
into account, not only its wildcards:

* canonical tokens (:mod:`._words`): a literal word, ``STAR`` (exactly one word) and ``HASH``
  (zero or more words; NATS's ``>`` is ``STAR, HASH``, MQTT's ``#`` also matches the parent
  level, which is the same thing);
* which words a topic may have: any in AMQP, no ``+`` or ``#`` in MQTT (so the level that
  :mod:`._dialects` gives an MQTT shared subscription of a ``$`` filter matches nothing), no
  empty word in NATS;
* how many: AMQP has a topic of zero words (the empty routing key), MQTT and NATS do not;
* MQTT's ``$`` rule: a topic whose first level starts with ``$`` is matched by no pattern that
  starts with a wildcard.

:func:`overlaps` and :func:`covers` run the two patterns' automata side by side over the
topics, word by word, looking for a topic both match, or one that q matches and p does not; the
words that matter are the patterns' literals and one word neither names. The search is as deep
as the longest topic allowed (``max_words``), so both answers are exact for the dialect's limits
too. :func:`overlaps` pairs single positions and is polynomial; :func:`covers` must follow every
position p may be in at once, which a hostile pattern can make exponential, so it works within a
budget and raises :class:`ComplexityError` past it. :func:`overlapping_in_trie` is
:func:`overlaps` against every pattern of a trie at once. tests/test_algebra.py checks them
against a brute force over every short topic, for every pair of short patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from ._errors import ComplexityError
from ._words import HASH, STAR, Tokens

__all__ = ["COVERS_BUDGET", "TopicRules", "TrieNode", "covers", "overlapping_in_trie", "overlaps"]


@dataclass(frozen=True)
class TopicRules:
    """What a dialect allows in a topic, as far as the algebra needs it."""

    word_ok: Callable[[str], bool]  # may a topic have this word?
    empty_topic: bool  # is there a topic of zero words?
    dollar_rule: bool  # MQTT: a '$' first word is matched by no pattern starting with a wildcard
    max_words: int


def _matches_nothing(tokens: Tokens, rules: TopicRules) -> bool:
    return any(type(t) is str and not rules.word_ok(t) for t in tokens) or (
        not tokens and not rules.empty_topic
    )


def overlaps(p: Tokens, q: Tokens, rules: TopicRules) -> bool:
    """Whether some topic the dialect allows is matched by both patterns.

    :func:`_search` over pairs (a position of p, a position of q): at most len(p) x len(q) of
    them, each tried with the patterns' literals and one other word, so O(len(p) x len(q) x
    their literals) whatever the patterns.
    """
    if _matches_nothing(p, rules) or _matches_nothing(q, rules):
        return False
    done = len(p)
    return _search(p, q, rules, lambda ps, q_done: q_done and done in ps, split=True)


#: Pairs (positions of p, a position of q) that covers() may visit: the sets of positions a
#: pattern can be in are few for patterns people write, but a hostile one ('#.a.*.*.*...', every
#: '*' one more word to remember) has exponentially many. 50,000 pairs take about 0.3 s here.
COVERS_BUDGET: Final = 50_000


def covers(p: Tokens, q: Tokens, rules: TopicRules, budget: int = COVERS_BUDGET) -> bool:
    """Whether every topic the dialect allows that q matches, p matches too.

    :func:`_search` for a topic that q matches and p does not, over (the set of positions p may
    be at, a position of q). Raises :class:`ComplexityError` past ``budget`` pairs
    (:data:`COVERS_BUDGET`; tests/test_algebra.py pins it with a hostile pattern).
    """
    if _matches_nothing(q, rules):
        return True
    if _matches_nothing(p, rules):
        return False
    done = len(p)
    return not _search(p, q, rules, lambda ps, q_done: q_done and done not in ps, split=False, budget=budget)


def _search(
    p: Tokens,
    q: Tokens,
    rules: TopicRules,
    found: Callable[[frozenset[int], bool], bool],
    split: bool,
    budget: int = COVERS_BUDGET,
) -> bool:
    """Whether some topic the dialect allows makes ``found(p's positions after it, q matched
    it)`` true: :func:`_breadth_first` over (p's positions, a position of q).

    q is followed one position at a time (some path of q). p is followed one position at a time
    too when ``split`` (some path of p: :func:`overlaps`, polynomial), else as the set of all its
    positions (every path of p: :func:`covers`, within :data:`COVERS_BUDGET`).
    """
    symbols = _symbols(p, q)
    p_start = _closure(p, {0})
    p_states = [frozenset((i,)) for i in p_start] if split else [p_start]
    start = [(ps, j) for ps in p_states for j in _closure(q, {0})]
    if rules.empty_topic and any(found(ps, j == len(q)) for ps, j in start):
        return True

    def successors(p_positions: frozenset[int], j: int, depth: int) -> Iterator[tuple[frozenset[int], int]]:
        for word in _first(symbols, rules) if depth == 0 else symbols:
            after_q = _step(q, frozenset((j,)), word, depth, rules)
            if not after_q:
                continue
            after_p = _step(p, p_positions, word, depth, rules)
            for next_p in [frozenset((i,)) for i in after_p] if split else [after_p]:
                for after_j in after_q:
                    yield next_p, after_j

    return _breadth_first(
        start,
        successors,
        lambda ps, j: found(ps, j == len(q)),
        rules.max_words,
        None if split else budget,
    )


_State = TypeVar("_State", bound=Hashable)


def _breadth_first(
    start: list[tuple[_State, int]],
    successors: Callable[[_State, int, int], Iterable[tuple[_State, int]]],
    arrived: Callable[[_State, int], bool],
    max_words: int,
    budget: int | None = None,
) -> bool:
    """The one search of the algebra: states (a state of one side, a position of q), word by
    word, breadth first, as deep as the longest topic allowed; each state once. True as soon as
    ``arrived`` says so for a state reached; False when no state is left or the depth is
    reached. Past ``budget`` states (covers() only), :class:`ComplexityError`.
    """
    seen = set(start)
    layer = start
    for depth in range(max_words):
        following: list[tuple[_State, int]] = []
        for state, j in layer:
            for reached in successors(state, j, depth):
                if arrived(*reached):
                    return True
                if reached not in seen:
                    if budget is not None and len(seen) >= budget:
                        raise ComplexityError(
                            f"covers() gave up after {budget:,} steps: these patterns "
                            "can be matched in too many ways to compare exactly"
                        )
                    seen.add(reached)
                    following.append(reached)
        if not following:
            return False
        layer = following
    return False


def _symbols(p: Tokens, q: Tokens) -> list[Symbol]:
    """The words that matter: the patterns' literals and one word neither names."""
    return [*sorted({t for t in (*p, *q) if isinstance(t, str)}), _OTHER]


def _first(symbols: list[Symbol], rules: TopicRules) -> list[Symbol]:
    """The first word may also be an unnamed word starting with '$' (MQTT's rule)."""
    return [*symbols, _OTHER_DOLLAR] if rules.dollar_rule else symbols


class _Other:
    """A word no pattern names: one stands for them all (an object, so that it equals no literal)."""

    __slots__ = ("dollar",)

    def __init__(self, dollar: bool) -> None:
        self.dollar = dollar  # it starts with '$'


_OTHER, _OTHER_DOLLAR = _Other(False), _Other(True)
Symbol = str | _Other


def _closure(tokens: Tokens, positions: set[int]) -> frozenset[int]:
    """``positions`` and those a '#' lets a pattern skip to without a word."""
    out = set(positions)
    for i in sorted(positions):
        while i < len(tokens) and tokens[i] is HASH:
            i += 1
            out.add(i)
    return frozenset(out)


def _step(
    tokens: Tokens, positions: frozenset[int], word: Symbol, depth: int, rules: TopicRules
) -> frozenset[int]:
    """The positions after one more word of the topic."""
    dollar = word.dollar if isinstance(word, _Other) else word.startswith("$")
    if depth == 0 and rules.dollar_rule and dollar and tokens and type(tokens[0]) is not str:
        return frozenset()  # MQTT: a '$' first word is skipped by a pattern starting with a wildcard
    after = set()
    for i in positions:
        if i < len(tokens):
            token = tokens[i]
            if token is HASH:
                after.add(i)  # absorbs the word and stays
            elif token is STAR or token == word:
                after.add(i + 1)
    return _closure(tokens, after)


class TrieNode(Hashable, Protocol):
    """What :func:`overlapping_in_trie` reads of a node of a subscription trie (the engine's
    ``walk.Node``): a protocol, so that the algebra needs nothing of the engine, which uses it."""

    @property
    def children(self) -> Mapping[str, TrieNode]: ...
    @property
    def star(self) -> TrieNode | None: ...
    @property
    def hash(self) -> TrieNode | None: ...
    @property
    def is_hash(self) -> bool: ...
    @property
    def by_pattern(self) -> Mapping[str, object]: ...
    def patterns(self) -> Iterator[tuple[str, frozenset[Hashable]]]: ...


def overlapping_in_trie(root: TrieNode, q: Tokens, rules: TopicRules) -> list[TrieNode]:
    """The nodes of a subscription trie (:mod:`._engine.walk`) holding patterns that overlap ``q``.

    The search of :func:`overlaps` (:func:`_breadth_first`) with a trie on one side: a state is
    (a trie node, a position of q), and a word leads from a node to the nodes the trie's lookup
    walk would reach with it (its literal child, its ``*`` child, itself if it is a ``#`` node,
    and the ``#`` children of those). Where q's position holds a literal only that literal child
    is followed: a pattern with literal words visits its branch of the trie, not the trie. Every
    state reached is visited (none ends the search). Cost: at most the trie's nodes times len(q)
    states, each tried with the words it can take.
    """
    if _matches_nothing(q, rules):
        return []
    found: dict[int, TrieNode] = {}
    starts = [root] if root.hash is None else [root, root.hash]
    start = [(node, j) for node in starts for j in _closure(q, {0})]
    if rules.empty_topic:
        found.update((id(node), node) for node, j in start if j == len(q) and node.by_pattern)

    def successors(node: TrieNode, j: int, depth: int) -> Iterator[tuple[TrieNode, int]]:
        for word in _words_to_try(node, q, j, depth, rules):
            after = _step(q, frozenset((j,)), word, depth, rules)
            if after:
                for nxt in _trie_step(root, node, word, depth, rules):
                    for after_j in after:
                        yield nxt, after_j

    def arrived(node: TrieNode, j: int) -> bool:
        if j == len(q) and node.by_pattern:
            found[id(node)] = node
        return False  # collect them all

    _breadth_first(start, successors, arrived, rules.max_words)
    return list(found.values())


def _words_to_try(node: TrieNode, q: Tokens, j: int, depth: int, rules: TopicRules) -> list[Symbol]:
    """The words that can lead anywhere from (node, j): q's literal at j, or, where q has a
    wildcard there, the node's literal children and one word nobody names."""
    if j == len(q):
        return []
    token = q[j]
    if isinstance(token, str):
        return [token] if rules.word_ok(token) else []
    words: list[Symbol] = [w for w in node.children if rules.word_ok(w)]
    words.append(_OTHER)
    if depth == 0 and rules.dollar_rule:
        words.append(_OTHER_DOLLAR)
    return words


def _trie_step(root: TrieNode, node: TrieNode, word: Symbol, depth: int, rules: TopicRules) -> list[TrieNode]:
    """The trie nodes one word leads to from ``node``, as the lookup walk (:func:`._engine.walk.step`)."""
    literal = node.children.get(word) if isinstance(word, str) else None
    dollar = word.dollar if isinstance(word, _Other) else word.startswith("$")
    if depth == 0 and rules.dollar_rule and dollar:
        # MQTT: a '$' first word takes the root's literal branch only (no '+' or '#' there).
        children = [literal] if node is root else []
    else:
        children = [literal, node.star]
    out = [node] if node.is_hash and not (depth == 0 and rules.dollar_rule and dollar) else []
    for child in children:
        if child is not None:
            out.append(child)
            if child.hash is not None:
                out.append(child.hash)
    return out
