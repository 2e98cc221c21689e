"""A bounded cache of lookup results with exact, cheap invalidation.

Keys are topics as published (strings), values the frozensets a lookup returned. A hit is one
dict access and takes no lock.

**Exact invalidation.** Before a write commits, the cache drops exactly the entries the written
pattern matches, and nothing else. To find them without testing every entry, the cached topics
are also indexed in a small trie of their words (:class:`_TopicNode`); the written pattern walks
it like a lookup walks the subscription trie, with the roles swapped (the pattern's ``*`` visits
every child, its ``#`` every descendant). A literal pattern touches one path; ``foo.*.baz``
touches the cached topics under ``foo``; only a leading ``#`` visits everything. The walk keeps
a set of visited (node, position) pairs, so many ``#`` cost O(cached topics x pattern length) at
worst, never more.

**No stale store, no stale hit.** The drop and the commit happen under the cache's lock, the
generation moves once the commit is done, and a lookup that missed stores its result only if
the generation did not move since the lookup began (checked under the same lock). From the
drop until the commit is visible, affected topics miss and read the index itself; a result
computed from a superseded state is never stored, and a cached answer never contradicts a write
that has happened.

Admission and eviction: a topic is stored on its second miss, not its first, so that topics
seen once do not pay for a store nor push out hot ones (the "doorkeeper" of TinyLFU). When full,
the oldest quarter of the entries (insertion order) is dropped in one go, amortised O(1).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from itertools import islice
from typing import TypeVar

from ._words import HASH, STAR, Tokens

__all__ = ["ResultCache"]

_T = TypeVar("_T")


class _TopicNode:
    __slots__ = ("children", "topic")

    def __init__(self) -> None:
        self.children: dict[str, _TopicNode] = {}
        self.topic: str | None = None  # the cached topic whose words end here


class ResultCache:
    __slots__ = ("_lock", "_root", "_words", "dollar_rule", "entries", "generation", "max_size", "seen")

    def __init__(self, max_size: int, dollar_rule: bool = False) -> None:
        self.max_size = max_size
        self.dollar_rule = dollar_rule
        self.entries: dict[str, frozenset[Hashable]] = {}
        self.generation = 0
        self._lock = threading.Lock()
        self._root = _TopicNode()
        self._words: dict[str, list[str]] = {}  # cached topic -> its words (to unindex it)
        # Admission: topics that missed once. Storing costs a lock and an index update, so a
        # topic is stored only when it misses a second time; one-off topics (the long tail of
        # real traffic) then cost one dict insert instead. Bounded: cleared when full.
        self.seen: dict[str, None] = {}

    def remember(self, topic: str) -> None:
        """Note a first miss of ``topic`` (see ``seen``); the next miss will store it."""
        seen = self.seen
        if len(seen) >= self.max_size:
            seen.clear()
        seen[topic] = None

    def store(
        self, topic: str, words: list[str] | None, result: frozenset[Hashable], generation: int
    ) -> None:
        """Cache ``result`` unless a write began invalidating since ``generation`` was read.

        ``words`` None means the topic can match no pattern at all (a NATS subject with an
        empty token): it is cached but never needs invalidating, so it is not indexed.
        """
        with self._lock:
            if self.generation != generation or topic in self.entries:
                return
            entries = self.entries
            if len(entries) >= self.max_size:
                for old in list(islice(entries, max(1, self.max_size // 4))):
                    self._forget(old)
            entries[topic] = result
            if words is not None:
                node = self._root
                for word in words:
                    child = node.children.get(word)
                    if child is None:
                        child = node.children[word] = _TopicNode()
                    node = child
                node.topic = topic
                self._words[topic] = words

    def _forget(self, topic: str) -> None:
        del self.entries[topic]
        words = self._words.pop(topic, None)
        if words is None:
            return
        path = [self._root]
        for word in words:
            path.append(path[-1].children[word])
        path[-1].topic = None
        for depth in range(len(words), 0, -1):
            node = path[depth]
            if node.topic is not None or node.children:
                break
            del path[depth - 1].children[words[depth - 1]]

    def _matching(self, tokens: Tokens) -> set[str]:
        """The cached topics that ``tokens`` matches: a walk of the topic trie."""
        root, n = self._root, len(tokens)
        # MQTT: a pattern starting with a wildcard never matches a topic whose first word
        # starts with '$', so such first words are not followed.
        dollar = self.dollar_rule and bool(tokens) and type(tokens[0]) is not str

        def children(node: _TopicNode) -> list[_TopicNode]:
            if dollar and node is root:
                return [child for word, child in node.children.items() if word[:1] != "$"]
            return list(node.children.values())

        found: set[str] = set()
        seen: set[tuple[int, int]] = set()
        stack: list[tuple[_TopicNode, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i == n:
                if node.topic is not None:
                    found.add(node.topic)
                continue
            token = tokens[i]
            if token is HASH:
                # Zero more words (go on with the pattern), or one more (stay on the '#').
                for nxt in [(node, i + 1), *((child, i) for child in children(node))]:
                    key = (id(nxt[0]), nxt[1])
                    if key not in seen:
                        seen.add(key)
                        stack.append(nxt)
            elif token is STAR:
                stack.extend((child, i + 1) for child in children(node))
            else:
                child = node.children.get(token)  # type: ignore[arg-type]
                if child is not None:
                    stack.append((child, i + 1))
        return found

    def write(self, tokens: Tokens, commit: Callable[[], _T]) -> _T:
        """Drop every cached topic the pattern ``tokens`` matches, then run ``commit``.

        The generation moves *after* the commit (still under the lock): a lookup that read the
        generation at any moment before the commit became visible may have matched the old
        state, and its store must be refused. Moving it before the commit only would let a
        lookup read the new generation, then the old index, and store a stale result (found by
        tests/test_concurrency.py on CI; pinned by tests/test_cache.py).
        """
        with self._lock:
            if self.entries:
                for topic in self._matching(tokens):
                    self._forget(topic)
            try:
                return commit()
            finally:
                self.generation += 1

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self.entries.clear()
            self._words.clear()
            self._root = _TopicNode()

    def __len__(self) -> int:
        return len(self.entries)
