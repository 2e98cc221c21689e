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
topics, word by word (:func:`_search`), looking for a topic both match, or one that q matches
and p does not; the words that matter are the patterns' literals and one word neither names.
The search is as deep as the longest topic allowed (``max_words``), so both answers are exact
for the dialect's limits too. tests/test_algebra.py checks both against a brute force over every
short topic, for every pair of short patterns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._words import HASH, STAR, Tokens

if TYPE_CHECKING:  # the trie's node: only its attributes are read here (and _walk imports us)
    from ._walk import Node

__all__ = ["TopicRules", "covers", "overlapping_in_trie", "overlaps"]


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
    """Whether some topic the dialect allows is matched by both patterns."""
    if _matches_nothing(p, rules) or _matches_nothing(q, rules):
        return False
    return _search(p, q, rules, lambda in_p, in_q: in_p and in_q)


def covers(p: Tokens, q: Tokens, rules: TopicRules) -> bool:
    """Whether every topic the dialect allows that q matches, p matches too."""
    if _matches_nothing(q, rules):
        return True
    if _matches_nothing(p, rules):
        return False
    return not _search(p, q, rules, lambda in_p, in_q: in_q and not in_p)


class _Other:
    """A word no pattern names: one stands for them all (an object, so that it equals no literal)."""

    __slots__ = ("dollar",)

    def __init__(self, dollar: bool) -> None:
        self.dollar = dollar  # it starts with '$'


_OTHER, _OTHER_DOLLAR = _Other(False), _Other(True)
Symbol = str | _Other


def _search(p: Tokens, q: Tokens, rules: TopicRules, wanted: Callable[[bool, bool], bool]) -> bool:
    """Whether some topic the dialect allows puts (p matches it, q matches it) in ``wanted``.

    A breadth-first search over the topics, word by word, of the pair (positions p may be at,
    positions q may be at): the two patterns' automata run side by side. The words that matter
    are the literals of the patterns and one word that neither names (and, under MQTT's rule,
    one such word starting with '$'), so the search is finite; it goes as deep as the longest
    topic allowed, and visits each pair of position sets once, the first time, by the shortest
    topic. Position sets of these patterns are few (a '#' keeps its own position alive, so a set
    is the positions reachable by the word runs since the last literal): about len(p) x len(q)
    pairs in practice.
    """
    symbols: list[Symbol] = [*sorted({t for t in (*p, *q) if isinstance(t, str)}), _OTHER]
    first_symbols = [*symbols, _OTHER_DOLLAR] if rules.dollar_rule else symbols
    start = (_closure(p, {0}), _closure(q, {0}))
    if rules.empty_topic and wanted(len(p) in start[0], len(q) in start[1]):
        return True
    seen = {start}
    layer = [start]
    for depth in range(rules.max_words):
        following = []
        for ps, qs in layer:
            for symbol in first_symbols if depth == 0 else symbols:
                pair = (_step(p, ps, symbol, depth, rules), _step(q, qs, symbol, depth, rules))
                if wanted(len(p) in pair[0], len(q) in pair[1]):
                    return True  # this topic of depth + 1 words (the start is no topic but AMQP's)
                if pair in seen:
                    continue
                seen.add(pair)
                following.append(pair)
        if not following:
            return False
        layer = following
    return False


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


def overlapping_in_trie(root: Node, q: Tokens, rules: TopicRules) -> list[Node]:
    """The nodes of a subscription trie (:mod:`._walk`) holding patterns that overlap ``q``.

    The search of :func:`_search` with a trie on one side: a state is (a trie node, the positions
    q may be at), and a word leads from a node to the nodes the trie's lookup walk would reach
    with it (its literal child, its ``*`` child, itself if it is a ``#`` node, and the ``#``
    children of those). From a state whose q positions admit only literals, only those literal
    children are followed: a filter with literal words visits its branch of the trie, not the
    trie. Cost: the (node, positions) pairs reached, at most the trie's nodes times the position
    sets of q.
    """
    if _matches_nothing(q, rules):
        return []
    found: dict[int, Node] = {}
    start_positions = _closure(q, {0})
    layer: list[tuple[Node, frozenset[int]]] = [(root, start_positions)]
    if root.hash is not None:
        layer.append((root.hash, start_positions))
    if rules.empty_topic and len(q) in start_positions:
        found.update((id(node), node) for node, _ in layer if node.by_pattern)
    seen = set()
    for depth in range(rules.max_words):
        following: list[tuple[Node, frozenset[int]]] = []
        for node, positions in layer:
            for word in _words_to_try(node, q, positions, depth, rules):
                after = _step(q, positions, word, depth, rules)
                if not after:
                    continue
                accepted = len(q) in after
                for nxt in _trie_step(root, node, word, depth, rules):
                    key = (id(nxt), after)
                    if accepted and nxt.by_pattern:
                        found[id(nxt)] = nxt
                    if key not in seen:
                        seen.add(key)
                        following.append((nxt, after))
        if not following:
            break
        layer = following
    return list(found.values())


def _words_to_try(
    node: Node, q: Tokens, positions: frozenset[int], depth: int, rules: TopicRules
) -> list[Symbol]:
    """The words that can lead anywhere from (node, positions): q's literals at its positions,
    and, where q has a wildcard there, the node's literal children and one word nobody names."""
    literals: set[str] = set()
    wild = False
    for i in positions:
        token = q[i] if i < len(q) else None
        if isinstance(token, str):
            literals.add(token)
        elif token is not None:
            wild = True
    words: list[Symbol] = [w for w in literals if rules.word_ok(w)]
    if wild:
        words += [w for w in node.children if w not in literals and rules.word_ok(w)]
        words.append(_OTHER)
        if depth == 0 and rules.dollar_rule:
            words.append(_OTHER_DOLLAR)
    return words


def _trie_step(root: Node, node: Node, word: Symbol, depth: int, rules: TopicRules) -> list[Node]:
    """The trie nodes one word leads to from ``node``, as the lookup walk (:func:`._walk.step`)."""
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
