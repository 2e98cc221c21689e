"""The optimized inverted bitmap: per-position bitmaps ANDed across the topic's words.

Following the study, position ``p`` keeps one row per literal word seen there in a pattern, and
an "other" row (patterns with ``*`` at ``p``, which accept any word). A topic's candidates are the
AND over its positions of ``row(word) | other``, with an early exit as soon as the AND is empty.
The study's "null" row (the pattern has no word at ``p``) becomes a row per pattern *length*:
the AND over positions ``0..n-1`` keeps patterns with a word at every position, and
``by_length[n]`` keeps those no longer than ``n``.

``#`` breaks the positional picture, so we extend it. Let ``f`` be the position of a pattern's
first ``#``. Before ``f`` the pattern is indexed as usual. From ``f`` on, it accepts any word at
any position and any length ``>= f``: ``open_from[p]`` holds the patterns with ``f <= p``, ORed
into every position's row and into the length check. For the common ``prefix.#`` this is exact.
A pattern with words after its first ``#`` (``a.#.b``, ``#.x.#``) is only *filtered* this way;
such patterns are flagged ``inexact`` and every candidate among them is confirmed with the
one-pattern matcher. MQTT's ``$`` rule: for a ``$`` first word, position 0 uses the literal row
alone.

Complexity: subscribe O(words + positions); lookup O(words) big-int ANDs, each O(patterns / 30)
machine words, plus O(matches); an early exit usually stops after a word or two.
Concurrency: one change of :mod:`._versions` per write (odd for all its rows).
"""

from __future__ import annotations

from collections.abc import Hashable

from ._bitmaps import BitmapIndex, bits, union_of
from ._empty import EMPTY
from ._words import HASH, Tokens, pattern_matches

__all__ = ["OptimizedBitmapIndex"]


def _first_hash(tokens: Tokens) -> int:
    for i, token in enumerate(tokens):
        if token is HASH:
            return i
    return -1


class OptimizedBitmapIndex(BitmapIndex):
    name = "optimized_bitmap"

    def __init__(self, dollar_rule: bool) -> None:
        super().__init__(dollar_rule)
        self._literal: list[dict[str, int]] = []  # per position: word -> patterns with that word
        self._other: list[int] = []  # per position: patterns with '*' there
        self._open_from: list[int] = []  # per position p: patterns whose first '#' is at <= p
        self._all_open = 0  # patterns with a '#' (open at every position past the indexed ones)
        self._by_length: dict[int, int] = {}  # patterns without '#', by number of words
        self._inexact = 0  # patterns with words after their first '#': confirm candidates

    def _grow(self, positions: int) -> None:
        while len(self._literal) < positions:
            self._literal.append({})
            self._other.append(0)
            # Every '#' pattern indexed so far has f <= the new position.
            self._open_from.append(self._all_open)

    def _set_bits(self, bit: int, tokens: Tokens) -> None:
        f = _first_hash(tokens)
        fixed = len(tokens) if f < 0 else f
        self._grow(fixed + 1)
        for p in range(fixed):
            token = tokens[p]
            if isinstance(token, str):
                row = self._literal[p]
                row[token] = row.get(token, 0) | bit
            else:  # '*': no '#' comes before position f
                self._other[p] |= bit
        if f < 0:
            self._by_length[fixed] = self._by_length.get(fixed, 0) | bit
            return
        open_from = self._open_from
        for p in range(f, len(open_from)):
            open_from[p] |= bit
        self._all_open |= bit
        if len(tokens) > f + 1:
            self._inexact |= bit

    def _clear_bits(self, bit: int, tokens: Tokens) -> None:
        keep = ~bit
        f = _first_hash(tokens)
        fixed = len(tokens) if f < 0 else f
        for p in range(fixed):
            token = tokens[p]
            if isinstance(token, str):
                row = self._literal[p]
                left = row[token] & keep
                if left:
                    row[token] = left
                else:
                    del row[token]
            else:  # '*'
                self._other[p] &= keep
        if f < 0:
            left = self._by_length[fixed] & keep
            if left:
                self._by_length[fixed] = left
            else:
                del self._by_length[fixed]
            return
        open_from = self._open_from
        for p in range(f, len(open_from)):
            open_from[p] &= keep
        self._all_open &= keep
        self._inexact &= keep

    def match(self, words: list[str]) -> frozenset[Hashable]:
        return self._read(lambda: self._match(words))

    def _match(self, words: list[str]) -> frozenset[Hashable]:
        literal, other, open_from = self._literal, self._other, self._open_from
        indexed = len(open_from)
        n = len(words)
        candidates = self._by_length.get(n, 0) | (open_from[n] if n < indexed else self._all_open)
        for p, word in enumerate(words):
            if not candidates:
                return EMPTY
            if p >= indexed:
                # Past every indexed position only '#' patterns can still match, whatever the word.
                candidates &= self._all_open
                break
            if p == 0 and self.dollar_rule and word[:1] == "$":
                candidates &= literal[0].get(word, 0)
            else:
                candidates &= literal[p].get(word, 0) | other[p] | open_from[p]
        if not candidates:
            return EMPTY
        unsure = candidates & self._inexact
        if unsure:
            tokens_of, dollar = self._tokens, self.dollar_rule
            for i in bits(unsure):
                tokens = tokens_of.get(i)
                if tokens is None or not pattern_matches(tokens, words, dollar):
                    candidates &= ~(1 << i)
        return union_of(candidates, self._subs)
