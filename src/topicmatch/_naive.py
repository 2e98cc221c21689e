"""The naive matcher: a map of pattern to subscribers, scanned on every lookup (the baseline).

Complexity: subscribe and unsubscribe O(1) (plus the subscribers of that pattern); lookup
O(patterns x words). Concurrency: writers serialise on a lock and replace a pattern's entry with
a new immutable tuple. A lookup first copies the values with ``tuple(dict.values())``: CPython
runs that copy in C without releasing the GIL or calling Python code, so the copy is one atomic
read of a consistent state, and the scan works on it without any lock.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from ._index import EMPTY, Index, Item
from ._words import Tokens, pattern_matches

__all__ = ["NaiveIndex"]


class NaiveIndex(Index):
    name = "naive"

    def __init__(self, dollar_rule: bool) -> None:
        super().__init__(dollar_rule)
        self._entries: dict[str, tuple[Tokens, frozenset[Hashable]]] = {}
        self._lock = threading.Lock()
        self._count = 0

    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            old = self._entries.get(pattern, (tokens, EMPTY))[1]
            if subscriber in old:
                return False
            self._entries[pattern] = (tokens, old | {subscriber})
            self._count += 1
            return True

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            entry = self._entries.get(pattern)
            if entry is None or subscriber not in entry[1]:
                return False
            left = entry[1] - {subscriber}
            if left:
                self._entries[pattern] = (tokens, left)
            else:
                del self._entries[pattern]
            self._count -= 1
            return True

    def match(self, words: list[str]) -> frozenset[Hashable]:
        dollar = self.dollar_rule
        result: frozenset[Hashable] = EMPTY
        for tokens, subs in tuple(self._entries.values()):
            if pattern_matches(tokens, words, dollar):
                result = subs if not result else result | subs
        return result

    def items(self) -> list[Item]:
        return [(p, t, s) for p, (t, s) in tuple(self._entries.items())]

    def __len__(self) -> int:
        return self._count
