"""The reverse question: which stored topics does a filter match? (retained messages, subjects)

A ``Matcher`` holds patterns and is asked about topics. An MQTT broker's retained messages turn
that around: on every subscribe it must find the stored *topics* the new filter matches, and a
scan of 100k retained messages per subscribe is what EMQX and RabbitMQ users hit. ``TopicIndex``
keeps the topics in a trie of their words and walks it with the filter (:mod:`._topic_trie`,
which the result cache uses too): the walk visits the nodes on the way to the matches and those
a wildcard fans out over, never the rest of the store: a filter with literal words first costs
what its matches cost.

Same dialects, rules and errors as :class:`~topicmatch.Matcher` (a published topic is validated
as the dialect validates it; MQTT's ``$`` rule and shared subscriptions apply). Thread-safe: one
lock for writers and readers alike (a lookup copies out what it found under the lock).
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from ._dialects import make_dialect, plain
from ._topic_trie import TopicTrie

__all__ = ["TopicIndex"]

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
    over). Raises :class:`~topicmatch.InvalidTopicError` / :class:`~topicmatch.InvalidPatternError`
    as the dialect does; nothing changes then. The store adds no object per topic for CPython's
    cyclic collector to traverse but the values themselves (:mod:`._topic_trie`).
    """

    def __init__(
        self,
        dialect: str = "amqp",
        *,
        pedantic: bool = False,
        max_bytes: int | None = None,
        max_words: int | None = None,
    ) -> None:
        self._dialect = make_dialect(dialect, max_bytes=max_bytes, max_words=max_words, pedantic=pedantic)
        self._trie = TopicTrie()
        self._values: dict[str, V] = {}  # every stored topic, the unmatchable ones included
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    @property
    def last_walk(self) -> int:
        """(node, position) pairs the last :meth:`match` visited: its cost, for tests."""
        return self._trie.last_walk

    def set(self, topic: str, value: V) -> bool:
        """Store ``value`` under ``topic``; True if the topic is new (else the value is replaced)."""
        words = self._dialect.parse_topic(topic)
        topic = plain(topic)
        with self._lock:
            new = topic not in self._values
            self._values[topic] = value
            # NATS subjects with an empty token (words None) match no filter: not in the trie.
            if new and words is not None:
                self._trie.add(topic, words)
            return new

    def discard(self, topic: str) -> bool:
        """Forget ``topic``; True if it was stored. Prunes the branches it leaves empty."""
        self._dialect.parse_topic(topic)
        topic = plain(topic)
        with self._lock:
            if self._values.pop(topic, _NONE) is _NONE:
                return False
            self._trie.remove(topic)
            return True

    def get(self, topic: str, default: V | None = None) -> V | None:
        """The value stored under ``topic``, or ``default``."""
        self._dialect.parse_topic(topic)
        with self._lock:
            return self._values.get(plain(topic), default)

    def match(self, pattern: str) -> dict[str, V]:
        """``{topic: value}`` of every stored topic ``pattern`` matches (module docstring)."""
        tokens = self._dialect.parse_pattern(pattern)
        dollar = self._dialect.dollar_rule and bool(tokens) and type(tokens[0]) is not str
        with self._lock:
            values = self._values
            found = self._trie.matching(tokens, dollar)
            assert found is not None  # no budget
            return {topic: values[topic] for topic in found}
