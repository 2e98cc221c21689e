"""What every algorithm implements, and the bookkeeping they share.

An *index* stores subscriptions already parsed by a dialect (canonical tokens, see
:mod:`topicmatch._words`) and answers lookups on a topic's words. The :class:`~topicmatch.Matcher`
facade does parsing, validation and caching; an index does only the data structure, so every
algorithm shares one data path and none re-implements the dialect rules.

Concurrency contract, shared by all indexes: ``add`` and ``remove`` may run in any number of
threads; ``match`` never waits on a lock and returns the subscribers of one linearizable state;
``items`` is a consistent copy. Every index follows the one write discipline of
:mod:`._versions`, which :class:`Index` inherits.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Hashable, Iterable
from typing import ClassVar

from ._algebra import TopicRules, overlaps
from ._versions import Versioned
from ._words import Tokens

__all__ = ["Index", "Item"]

#: One subscription pattern with its canonical tokens and its subscribers.
Item = tuple[str, Tokens, frozenset[Hashable]]


class Index(Versioned, abc.ABC):
    """Base class of the five algorithms."""

    name: ClassVar[str]

    def __init__(self, dollar_rule: bool) -> None:
        super().__init__()
        self.dollar_rule = dollar_rule

    @abc.abstractmethod
    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        """Add one (pattern, subscriber) pair; False if it was already there."""

    def add_many(self, items: Iterable[Item]) -> int:
        """Add each pattern's subscribers (one item per pattern); the number of new pairs.

        The default adds the pairs one by one; an index that can do better overrides it.
        """
        return _pair_by_pair(self.add, items)

    @abc.abstractmethod
    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        """Remove one (pattern, subscriber) pair; False if it was not there."""

    def remove_many(self, items: Iterable[Item]) -> int:
        """Remove each pattern's subscribers (one item per pattern); the number of pairs removed.

        The default removes the pairs one by one; an index that can do better overrides it.
        """
        return _pair_by_pair(self.remove, items)

    @abc.abstractmethod
    def match(self, words: list[str]) -> frozenset[Hashable]:
        """The subscribers of every pattern matching the topic's words."""

    def match_parts(self, words: list[str]) -> list[frozenset[Hashable]]:
        """Sets whose union is :meth:`match`'s result, not united (they may overlap; an empty
        list or empty sets for no match), for a caller that needs less than the union
        (``Matcher.has_interest``, ``Matcher.iter_matches``). Here the result as one set; the
        trie gives the sets its walk gathered."""
        return [self.match(words)]

    def overlapping(self, tokens: Tokens, rules: TopicRules) -> list[tuple[str, frozenset[Hashable]]]:
        """(pattern, subscribers) of every pattern that overlaps ``tokens`` (:mod:`._algebra`).

        The default scans every pattern; the trie walks only the branches the pattern reaches.
        """
        return [(pattern, subs) for pattern, other, subs in self.items() if overlaps(tokens, other, rules)]

    @abc.abstractmethod
    def items(self) -> list[Item]:
        """A consistent copy of every pattern with its tokens and subscribers."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of (pattern, subscriber) pairs."""

    def snapshot(self) -> Index:
        """A read-only copy of the current state; the default copies (O(n))."""
        return self.copy_from(self.items())

    def copy_from(self, items: Iterable[Item]) -> Index:
        """A new index of the same algorithm holding ``items``."""
        clone = self._empty_like()
        clone.add_many(items)
        return clone

    def _empty_like(self) -> Index:
        return type(self)(self.dollar_rule)


def _pair_by_pair(change: Callable[[str, Tokens, Hashable], bool], items: Iterable[Item]) -> int:
    """``change`` (an index's add or remove) on every pair of ``items``; how many changed."""
    return sum(change(pattern, tokens, subscriber) for pattern, tokens, subs in items for subscriber in subs)
