"""The reverse question: which stored topics does a filter match? (retained messages, subjects)

A ``Matcher`` holds patterns and is asked about topics. An MQTT broker's retained messages turn
that around: on every subscribe it must find the stored *topics* the new filter matches, and a
scan of 100k retained messages per subscribe is what EMQX and RabbitMQ users hit. ``TopicIndex``
keeps the topics in a trie of their words and walks it with the filter: a literal follows one
child, ``*`` every child of the nodes reached, ``#`` every node below them. The walk visits the
nodes on the way to the matches and those a wildcard fans out over, never the rest of the
store: a filter with literal words first costs what its matches cost.

Same dialects, rules and errors as :class:`~topicmatch.Matcher` (a published topic is validated
as the dialect validates it; MQTT's ``$`` rule and shared subscriptions apply). Thread-safe: one
lock for writers and readers alike (a lookup copies out what it found under the lock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

from ._dialects import make_dialect, plain
from ._words import HASH, STAR, Tokens

__all__ = ["TopicIndex"]

V = TypeVar("V")
_NONE: object = object()


class _Node:
    __slots__ = ("children", "topic", "value")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.topic: str | None = None  # the stored topic ending here
        self.value: object = _NONE


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
    as the dialect does; nothing changes then.
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
        self._root = _Node()
        self._unmatchable: dict[str, V] = {}  # NATS subjects with an empty token: matched by nothing
        self._count = 0
        self._lock = threading.Lock()
        self.last_walk = 0  # (node, position) pairs the last match visited: its cost, for tests

    def __len__(self) -> int:
        return self._count + len(self._unmatchable)

    def set(self, topic: str, value: V) -> bool:
        """Store ``value`` under ``topic``; True if the topic is new (else the value is replaced)."""
        words = self._dialect.parse_topic(topic)
        topic = plain(topic)
        with self._lock:
            if words is None:
                new = topic not in self._unmatchable
                self._unmatchable[topic] = value
                return new
            node = self._root
            for word in words:
                child = node.children.get(word)
                if child is None:
                    child = node.children[word] = _Node()
                node = child
            new = node.value is _NONE
            node.topic, node.value = topic, value
            self._count += new
            return new

    def discard(self, topic: str) -> bool:
        """Forget ``topic``; True if it was stored. Prunes the branches it leaves empty."""
        words = self._dialect.parse_topic(topic)
        with self._lock:
            if words is None:
                return self._unmatchable.pop(plain(topic), _NONE) is not _NONE
            path = [self._root]
            for word in words:
                child = path[-1].children.get(word)
                if child is None:
                    return False
                path.append(child)
            node = path[-1]
            if node.value is _NONE:
                return False
            node.topic, node.value = None, _NONE
            self._count -= 1
            for depth in range(len(words), 0, -1):
                node = path[depth]
                if node.children or node.value is not _NONE:
                    break
                del path[depth - 1].children[words[depth - 1]]
            return True

    def get(self, topic: str, default: V | None = None) -> V | None:
        """The value stored under ``topic``, or ``default``."""
        words = self._dialect.parse_topic(topic)
        with self._lock:
            if words is None:
                return self._unmatchable.get(plain(topic), default)
            node: _Node | None = self._root
            for word in words:
                node = node.children.get(word) if node is not None else None
            if node is None or node.value is _NONE:
                return default
            return node.value  # type: ignore[return-value]

    def match(self, pattern: str) -> dict[str, V]:
        """``{topic: value}`` of every stored topic ``pattern`` matches (module docstring)."""
        tokens = self._dialect.parse_pattern(pattern)
        dollar = self._dialect.dollar_rule and bool(tokens) and type(tokens[0]) is not str
        out: dict[str, V] = {}
        with self._lock:
            for node in self._walk(tokens, dollar):
                out[node.topic] = node.value  # type: ignore[index, assignment]
        return out

    def _walk(self, tokens: Tokens, dollar: bool) -> Iterator[_Node]:
        """The nodes holding a topic that ``tokens`` match: a walk over (node, position) pairs,
        each visited once (a '#' followed by more tokens could reach a pair twice)."""
        n = len(tokens)
        # Only a '#' followed by more tokens can reach a pair twice; otherwise every pair is
        # reached by one path, and the walk keeps no set (a filter matching most of the store
        # would pay for one entry per node).
        seen: set[tuple[int, int]] | None = set() if HASH in tokens[:-1] else None
        walked = 0
        stack = [(self._root, 0)]
        while stack:
            node, i = stack.pop()
            if seen is not None:
                key = (id(node), i)
                if key in seen:
                    continue
                seen.add(key)
            walked += 1
            if i == n:
                if node.value is not _NONE:
                    yield node
                continue
            token = tokens[i]
            children = node.children.items()
            if dollar and node is self._root:  # MQTT: a wildcard never matches a '$' first level
                children = [(w, c) for w, c in children if not w.startswith("$")]  # type: ignore[assignment]
            if token is HASH:
                stack.append((node, i + 1))  # zero words
                stack.extend((child, i) for _word, child in children)  # one more word, still '#'
            elif token is STAR:
                stack.extend((child, i + 1) for _word, child in children)
            else:
                child = node.children.get(token)
                if child is not None:
                    stack.append((child, i + 1))
        self.last_walk = walked
