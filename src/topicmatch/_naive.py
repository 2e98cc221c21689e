"""The naive matcher: a map of pattern to subscribers, scanned on every lookup (the baseline).

Complexity: subscribe and unsubscribe O(1) (plus the subscribers of that pattern); lookup
O(patterns x words). Concurrency: the discipline of :mod:`._versions`; a write replaces one
pattern's entry (an immutable tuple) with one store, bracketed by the version, and a lookup scans
the map without a lock and keeps its result only if no write overlapped.
"""

from __future__ import annotations

from collections.abc import Hashable

from ._empty import EMPTY
from ._index import Index, Item
from ._words import Tokens, pattern_matches

__all__ = ["NaiveIndex"]


class NaiveIndex(Index):
    name = "naive"

    def __init__(self, dollar_rule: bool) -> None:
        super().__init__(dollar_rule)
        self._entries: dict[str, tuple[Tokens, frozenset[Hashable]]] = {}
        self._count = 0

    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            old = self._entries.get(pattern, (tokens, EMPTY))[1]
            if subscriber in old:
                return False
            self._version += 1  # odd before the store (._versions, rule 2)
            try:
                self._entries[pattern] = (tokens, old | {subscriber})
            finally:
                self._version += 1  # even after it
            self._count += 1
            return True

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            entry = self._entries.get(pattern)
            if entry is None or subscriber not in entry[1]:
                return False
            left = entry[1] - {subscriber}
            self._version += 1  # odd before the store
            try:
                if left:
                    self._entries[pattern] = (tokens, left)
                else:
                    del self._entries[pattern]
            finally:
                self._version += 1  # even after it
            self._count -= 1
            return True

    def match(self, words: list[str]) -> frozenset[Hashable]:
        return self._read(lambda: self._scan(words))

    def _scan(self, words: list[str]) -> frozenset[Hashable]:
        dollar = self.dollar_rule
        result: frozenset[Hashable] = EMPTY
        try:
            for tokens, subs in self._entries.values():
                if pattern_matches(tokens, words, dollar):
                    result = subs if not result else result | subs
        except RuntimeError:
            # The map changed size under the scan: a write overlapped and moved the version,
            # so _read discards this result and scans again.
            return EMPTY
        return result

    def items(self) -> list[Item]:
        with self._lock:
            return [(p, t, s) for p, (t, s) in self._entries.items()]

    def __len__(self) -> int:
        return self._count
