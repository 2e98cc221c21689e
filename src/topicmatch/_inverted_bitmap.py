"""The inverted bitmap: one bitmap of subscriptions per topic of a topic space known up front.

As in the study, this shifts all the matching work to the write path: subscribing evaluates the
pattern against every topic of the space and sets its bit in each matching topic's row, so a
lookup is one dict access plus reading the set bits. Topics outside the space raise
:class:`~topicmatch.UnknownTopicError`; ``extend`` adds topics (each new row is computed against
every pattern). ``#`` needs nothing special here: rows are computed with the exact one-pattern
matcher, so every wildcard, anywhere, is handled by the write path.

Complexity: subscribe O(topics x words) for a new pattern; lookup O(1) plus the matches;
memory O(topics x patterns) bits. Concurrency: one change of :mod:`._versions` per write (odd
for all its rows).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from ._bitmaps import BitmapIndex, union_of
from ._errors import UnknownTopicError
from ._index import Index
from ._words import Tokens, pattern_matches

__all__ = ["InvertedBitmapIndex"]


class InvertedBitmapIndex(BitmapIndex):
    name = "inverted_bitmap"

    def __init__(self, dollar_rule: bool, topic_space: Iterable[tuple[str, list[str]]] = ()) -> None:
        super().__init__(dollar_rule)
        # topic words (as a tuple) -> bitmap of the patterns that match it
        self._rows: dict[tuple[str, ...], int] = {}
        self._names: dict[tuple[str, ...], str] = {}
        self.extend(topic_space)

    def extend(self, topics: Iterable[tuple[str, list[str]]]) -> int:
        """Add (topic, words) pairs to the topic space; return how many were new."""
        new = [(t, tuple(w)) for t, w in topics]
        added = 0
        with self._lock:
            self._version += 1  # odd before the first store (._versions, rule 2)
            try:
                dollar = self.dollar_rule
                for name, key in new:
                    if key in self._rows:
                        continue
                    row = 0
                    for i, tokens in self._tokens.items():
                        if pattern_matches(tokens, key, dollar):
                            row |= 1 << i
                    self._rows[key] = row
                    self._names[key] = name
                    added += 1
            finally:
                self._version += 1  # even after the last
        return added

    def _set_bits(self, bit: int, tokens: Tokens) -> None:
        rows, dollar = self._rows, self.dollar_rule
        for key, row in rows.items():
            if pattern_matches(tokens, key, dollar):
                rows[key] = row | bit

    def _clear_bits(self, bit: int, tokens: Tokens) -> None:
        rows, keep = self._rows, ~bit
        for key, row in rows.items():
            if row & bit:
                rows[key] = row & keep

    def match(self, words: list[str]) -> frozenset[Hashable]:
        key = tuple(words)
        rows, subs = self._rows, self._subs

        def compute() -> frozenset[Hashable] | None:
            row = rows.get(key)
            return None if row is None else union_of(row, subs)

        result = self._read(compute)
        if result is None:
            # The Matcher re-raises this with the topic as the user wrote it.
            raise UnknownTopicError(".".join(words))
        return result

    def _empty_like(self) -> Index:
        return InvertedBitmapIndex(self.dollar_rule, ((n, list(k)) for k, n in self._names.items()))
