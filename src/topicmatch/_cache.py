"""A bounded cache of lookup results with exact invalidation.

Keys are topics as published (strings), values the frozensets a lookup returned. A hit is one
dict access and takes no lock. Correctness rests on two rules:

* **Exact invalidation.** Before a write commits, the entries it could change are dropped: for a
  pattern without wildcards, the one topic it matches (a single ``pop``); otherwise every cached
  topic the pattern matches (a scan of the cache with the one-pattern matcher, as NATS does on its
  sublist cache). Entries the change cannot affect stay.
* **No stale store.** A lookup that missed computes its result from the index, then stores it only
  if no write has started invalidating since the lookup began (a generation counter checked and
  stored under the cache's lock, which writers hold from the invalidation until their commit is
  visible). So a result computed from a state that a write supersedes is never cached, and a
  cached answer never contradicts a write that has happened.

Eviction: when full, the oldest quarter of the entries is dropped in one go (insertion order),
amortised O(1) per insert.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from itertools import islice

from ._words import Tokens, is_literal, pattern_matches

__all__ = ["ResultCache"]


class ResultCache:
    __slots__ = ("_lock", "entries", "generation", "max_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self.entries: dict[str, frozenset[Hashable]] = {}
        self.generation = 0
        self._lock = threading.Lock()

    def store(self, topic: str, result: frozenset[Hashable], generation: int) -> None:
        """Cache ``result`` unless a write invalidated since ``generation`` was read."""
        with self._lock:
            if self.generation != generation:
                return
            entries = self.entries
            if len(entries) >= self.max_size:
                for key in list(islice(entries, max(1, self.max_size // 4))):
                    del entries[key]
            entries[topic] = result

    def write(
        self,
        tokens: Tokens,
        commit: Callable[[], bool],
        literal_topic: Callable[[Tokens], str],
        parse: Callable[[str], list[str] | None],
        dollar_rule: bool,
    ) -> bool:
        """Drop every cached topic the pattern ``tokens`` matches, then run ``commit``.

        Both happen under the cache's lock: from the drop until the commit is visible, no lookup
        can store a result (the generation moved), and every topic the write affects misses and
        reads the index itself. So a cached answer never contradicts a write that has happened.
        """
        with self._lock:
            self.generation += 1
            entries = self.entries
            if entries:
                if is_literal(tokens):
                    entries.pop(literal_topic(tokens), None)
                else:
                    stale = []
                    for topic in entries:
                        words = parse(topic)
                        if words is not None and pattern_matches(tokens, words, dollar_rule):
                            stale.append(topic)
                    for topic in stale:
                        del entries[topic]
            return commit()

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self.entries.clear()

    def __len__(self) -> int:
        return len(self.entries)
