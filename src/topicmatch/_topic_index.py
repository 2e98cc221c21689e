"""The reverse question: which stored topics does a filter match? (retained messages, subjects)

A ``Matcher`` holds patterns and is asked about topics. An MQTT broker's retained messages turn
that around: on every subscribe it must find the stored *topics* the new filter matches, and a
scan of 100k retained messages per subscribe is what EMQX and RabbitMQ users hit. ``TopicIndex``
keeps the topics in a trie of their words and walks it with the filter (:mod:`._engine.topic_trie`,
which the result cache uses too): the walk visits the nodes on the way to the matches and those
a wildcard fans out over, never the rest of the store: a filter with literal words first costs
what its matches cost. A broad filter, whose walk would reach most of the store (two or three
times the cost of testing every stored topic), is answered by such a scan once its walk has
taken a share of the store's size in steps (:data:`WALK_SHARE`); a filter of wildcards only
(``#``, ``+/+``) by counting each stored topic's words.

Same dialects, rules and errors as :class:`~topicmatch.Matcher` (a published topic is validated
as the dialect validates it; MQTT's ``$`` rule and shared subscriptions apply). Thread-safe: one
lock for writers and readers alike (a lookup copies out what it found under the lock).
"""

from __future__ import annotations

import threading
from operator import itemgetter
from typing import Final, Generic, TypeVar

from ._dialects import make_dialect, plain
from ._engine.topic_trie import TopicTrie
from ._typevars import Count, Flag, Text
from ._words import HASH, Tokens, pattern_matches

__all__ = ["WALK_FLOOR", "WALK_SHARE", "TopicIndex"]

#: :meth:`TopicIndex.match` walks the trie for at most (stored topics / WALK_SHARE + WALK_FLOOR)
#: steps, then scans every stored topic instead: so a filter that matches a few topics costs
#: what its matches cost, and a broad one (``devices/#`` over a store of devices) a sixteenth of
#: a walk of the store plus a scan, 0.6-0.95x a plain scan where its walk took 1.4-1.7x
#: (a filter of wildcards only, such as ``#``, is answered from word counts:
#: ``benchmarks/broad_filters.py``; CHANGELOG.md, "Performance history").
WALK_SHARE: Final = 16
WALK_FLOOR: Final = 64

V = TypeVar("V")
_NONE: object = object()


class TopicIndex(Generic[V]):
    """Concrete topics with a value each, looked up by filter.

    >>> retained = TopicIndex[str](dialect="mqtt")
    >>> retained.set("home/kitchen/temp", "21.5"), retained.set("home/hall/temp", "19.0")
    (True, True)
    >>> sorted(retained.match("home/+/temp").items())
    [('home/hall/temp', '19.0'), ('home/kitchen/temp', '21.5')]
    >>> retained.match("$SYS/#"), len(retained)
    ({}, 2)

    ``set`` and ``discard`` cost O(words); ``match`` O(the nodes the filter's walk reaches: the
    matches, their ancestors below the filter's last literal, and the children a ``*`` fans out
    over), but never more than a walk of 1/:data:`WALK_SHARE` of the store and one scan of it
    (a broad filter is scanned; one of wildcards only is decided by word counts). Raises
    :class:`~topicmatch.InvalidTopicError` / :class:`~topicmatch.InvalidPatternError` as the
    dialect does; nothing changes then. The store adds no object per topic for CPython's
    cyclic collector to traverse but the values themselves (:mod:`._engine.topic_trie`).
    """

    def __init__(
        self,
        dialect: Text = "amqp",
        *,
        pedantic: Flag = False,
        max_bytes: Count | None = None,
        max_words: Count | None = None,
    ) -> None:
        self._dialect = make_dialect(dialect, max_bytes=max_bytes, max_words=max_words, pedantic=pedantic)
        self._trie = TopicTrie()
        self._values: dict[str, V] = {}  # every stored topic, the unmatchable ones included
        self._unmatchable: set[str] = set()  # those whose words are None: not in the trie
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    @property
    def last_walk(self) -> int:
        """(node, position) pairs the last :meth:`match` visited: its cost, for tests."""
        return self._trie.last_walk

    def set(self, topic: Text, value: V) -> bool:
        """Store ``value`` under ``topic``; True if the topic is new (else the value is replaced)."""
        words = self._dialect.parse_topic(topic)
        topic = plain(topic)
        with self._lock:
            new = topic not in self._values
            self._values[topic] = value
            # NATS subjects with an empty token (words None) match no filter: not in the trie.
            if new:
                if words is None:
                    self._unmatchable.add(topic)
                else:
                    self._trie.add(topic, words)
            return new

    def discard(self, topic: Text) -> bool:
        """Forget ``topic``; True if it was stored. Prunes the branches it leaves empty."""
        self._dialect.parse_topic(topic)
        topic = plain(topic)
        with self._lock:
            if self._values.pop(topic, _NONE) is _NONE:
                return False
            self._trie.remove(topic)
            self._unmatchable.discard(topic)
            return True

    def get(self, topic: Text, default: V | None = None) -> V | None:
        """The value stored under ``topic``, or ``default``."""
        self._dialect.parse_topic(topic)
        with self._lock:
            return self._values.get(plain(topic), default)

    def match(self, pattern: Text) -> dict[str, V]:
        """``{topic: value}`` of every stored topic ``pattern`` matches (module docstring)."""
        tokens = self._dialect.parse_pattern(pattern)
        dollar = self._dialect.dollar_rule and bool(tokens) and type(tokens[0]) is not str
        if all(type(token) is not str for token in tokens):
            return self._by_length(tokens, dollar)
        with self._lock:
            values, trie = self._values, self._trie
            found = trie.matching(tokens, dollar, len(values) // WALK_SHARE + WALK_FLOOR)
            if found is not None:
                return {topic: values[topic] for topic in found}
            # A broad filter: its walk would reach much of the store, one node and often two
            # (node, position) pairs per stored topic, each about as dear as a test of one
            # topic against the filter. Scan the stored topics instead.
            return self._scan(tokens, dollar)

    def _scan(self, tokens: Tokens, dollar: bool) -> dict[str, V]:
        """Every stored topic tested against the filter (a stored topic's text is its words
        joined); self._lock held. O(stored topics x words).

        A filter whose only ``#`` is its last token (every MQTT and NATS filter) matches the
        topics of a fixed number of words (or at least that many) whose words at its literal
        positions are its literals: one split, one length check and one ``itemgetter`` per
        topic, 0.6x the time of the general test, :func:`._words.pattern_matches`, which the
        other filters get (``benchmarks/broad_filters.py``).
        """
        sep, items = self._dialect.separator, self._values.items()
        anything = not dollar  # else: no topic whose first word starts with '$'
        if HASH in tokens[:-1]:
            rule = self._dialect.dollar_rule
            found = {t: v for t, v in items if pattern_matches(tokens, t.split(sep) if t else [], rule)}
        else:
            low = len(tokens) - (tokens[-1] is HASH)
            high = low if tokens[-1] is not HASH else self._dialect.max_words
            positions = [i for i, token in enumerate(tokens) if type(token) is str]
            pick = itemgetter(*positions)  # one position: the word itself, not a tuple
            wanted = pick(tokens)
            found = {
                t: v
                for t, v in items
                if (anything or t[:1] != "$") and low <= len(w := t.split(sep)) <= high and pick(w) == wanted
            }
            if "" in found and not pattern_matches(tokens, [], False):
                del found[""]  # AMQP's empty topic has no word, not one empty word
        return self._matchable(found)

    def _by_length(self, tokens: Tokens, dollar: bool) -> dict[str, V]:
        """:meth:`match` of a filter of wildcards only (``#``, ``+/+``, ``*.#``): it matches
        every topic of the right number of words (exactly the number of ``*``, or at least
        with a ``#``), so a count of separators decides, without a walk. O(stored topics)."""
        wants = len(tokens) - (1 if tokens and tokens[-1] is HASH else 0)
        exact = not tokens or tokens[-1] is not HASH
        sep, anything = self._dialect.separator, not dollar  # dollar: no '$' first word
        with self._lock:
            items = self._values.items()
            if exact:
                found = {
                    t: v
                    for t, v in items
                    if (anything or t[:1] != "$") and (t.count(sep) + 1 if t else 0) == wants
                }
            elif wants:
                found = {
                    t: v
                    for t, v in items
                    if (anything or t[:1] != "$") and (t.count(sep) + 1 if t else 0) >= wants
                }
            else:
                found = dict(items) if anything else {t: v for t, v in items if t[:1] != "$"}
            return self._matchable(found)

    def _matchable(self, found: dict[str, V]) -> dict[str, V]:
        """``found`` without the stored topics that match nothing (NATS subjects with an empty
        token, which a scan's test would not know); self._lock held."""
        for topic in self._unmatchable:
            found.pop(topic, None)
        return found
