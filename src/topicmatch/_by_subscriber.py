"""The patterns of each subscriber: what lets a matcher drop a client in O(its subscriptions).

A broker removes every subscription of a client when it disconnects; without this index that
means a scan of every subscription. Kept by :class:`~topicmatch.Matcher` beside its index,
under its writers' lock, for every algorithm.

Memory: one dict entry per subscriber, whose value is the pattern itself while the subscriber
has one (the common case of a literal per device: no container at all) and a dict of patterns
(used as an ordered set) from the second on: a dict of 20 keys takes about half the bytes of a
set of 20 (compact entries against a sparse hash table). The pattern strings and subscribers are
the ones the index holds, not copies. Measured by ``benchmarks/broker_api.py``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["BySubscriber"]


class BySubscriber:
    """subscriber -> its patterns (a str for one, a dict of them for more). Not thread-safe by
    itself: the matcher's writers' lock guards it."""

    __slots__ = ("_patterns",)

    def __init__(self) -> None:
        self._patterns: dict[Hashable, str | dict[str, None]] = {}

    def add(self, subscriber: Hashable, pattern: str) -> None:
        """Record the pair (no change if it is recorded). O(1)."""
        patterns = self._patterns
        old = patterns.get(subscriber)
        if old is None:
            patterns[subscriber] = pattern
        elif type(old) is str:
            if old != pattern:
                patterns[subscriber] = {old: None, pattern: None}
        else:
            old[pattern] = None  # type: ignore[index]

    def add_each(self, subscribers: Iterable[Hashable], pattern: str) -> None:
        """Record each subscriber's pair with ``pattern``: :meth:`add` for each, in one call
        (Matcher.load adds a million this way). O(subscribers)."""
        for subscriber in subscribers:
            self.add(subscriber, pattern)

    def discard(self, subscriber: Hashable, pattern: str) -> None:
        """Forget the pair (no change if it is not recorded). O(1)."""
        patterns = self._patterns
        old = patterns.get(subscriber)
        if old is None:
            return
        if type(old) is str:
            if old == pattern:
                del patterns[subscriber]
            return
        old.pop(pattern, None)  # type: ignore[union-attr]
        if len(old) == 1:  # a dict holds two patterns or more
            patterns[subscriber] = next(iter(old))

    def of(self, subscriber: Hashable) -> list[str]:
        """The subscriber's patterns, sorted. O(its patterns)."""
        old = self._patterns.get(subscriber)
        if old is None:
            return []
        return [old] if type(old) is str else sorted(old)
