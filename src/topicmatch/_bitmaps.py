"""Bit-set helpers shared by the two bitmap indexes.

Bitmaps are plain Python ints: bit ``i`` stands for the pattern with id ``i``. CPython's big ints
make AND/OR of a thousand-bit set a single C loop over 30-bit digits, with no dependency.
Pattern ids are reused after removal so the ints stay as short as the number of live patterns.
"""

from __future__ import annotations

import abc
import heapq
from collections.abc import Hashable, Iterator

from ._empty import EMPTY
from ._index import Index, Item
from ._words import Tokens

__all__ = ["BitmapIndex", "IdAllocator", "bits", "union_of"]


def bits(x: int) -> Iterator[int]:
    """The indexes of the set bits of ``x``, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def union_of(x: int, subs_by_id: dict[int, frozenset[Hashable]]) -> frozenset[Hashable]:
    """Union of the subscriber sets of the patterns in bitmap ``x``."""
    result: frozenset[Hashable] = EMPTY
    get = subs_by_id.get
    for i in bits(x):
        subs = get(i, EMPTY)  # .get: a torn read mid-write must not raise (the reader retries: ._versions)
        result = subs if not result else result | subs
    return result


class IdAllocator:
    """Small integer ids, lowest free first, so bitmaps stay short."""

    __slots__ = ("_free", "_next")

    def __init__(self) -> None:
        self._free: list[int] = []
        self._next = 0

    def take(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        self._next += 1
        return self._next - 1

    def give_back(self, i: int) -> None:
        heapq.heappush(self._free, i)


class BitmapIndex(Index):
    """Bookkeeping shared by the bitmap indexes: one id per pattern, its tokens and subscribers.

        A pattern enters the bitmaps when it gets its first subscriber and leaves them with its last;
        in between, subscribe and unsubscribe only replace its subscriber set. Subclasses implement
        ``_set_bits`` and ``_clear_bits``, called within one change of :mod:`._versions`: a change
    touches many rows, so the version is odd for all of it.
    """

    def __init__(self, dollar_rule: bool) -> None:
        super().__init__(dollar_rule)
        self._ids: dict[str, int] = {}
        self._ids_alloc = IdAllocator()
        self._tokens: dict[int, Tokens] = {}
        self._subs: dict[int, frozenset[Hashable]] = {}
        self._count = 0

    @abc.abstractmethod
    def _set_bits(self, bit: int, tokens: Tokens) -> None: ...

    @abc.abstractmethod
    def _clear_bits(self, bit: int, tokens: Tokens) -> None: ...

    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            i = self._ids.get(pattern)
            if i is not None and subscriber in self._subs[i]:
                return False
            self._version += 1  # odd before the first store (._versions, rule 2)
            try:
                if i is None:
                    i = self._ids_alloc.take()
                    self._ids[pattern] = i
                    self._tokens[i] = tokens
                    # Subscribers first, bits last: a reader can never see a bit without its set.
                    self._subs[i] = frozenset((subscriber,))
                    self._set_bits(1 << i, tokens)
                else:
                    self._subs[i] = self._subs[i] | {subscriber}
                self._count += 1
            finally:
                self._version += 1  # even after the last
            return True

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            i = self._ids.get(pattern)
            if i is None or subscriber not in self._subs[i]:
                return False
            left = self._subs[i] - {subscriber}
            self._version += 1  # odd before the first store
            try:
                if left:
                    self._subs[i] = left
                else:
                    self._clear_bits(1 << i, tokens)
                    del self._ids[pattern], self._tokens[i], self._subs[i]
                    self._ids_alloc.give_back(i)
                self._count -= 1
            finally:
                self._version += 1  # even after the last
            return True

    def items(self) -> list[Item]:
        with self._lock:
            return [(p, self._tokens[i], self._subs[i]) for p, i in self._ids.items()]

    def __len__(self) -> int:
        return self._count
