"""The yardstick of the throughput targets: a plain dict trie in about 40 lines.

It is what a competent Python programmer writes in ten minutes for AMQP ``*`` (no ``#``, no
validation, no thread safety): nested dicts, a recursive walk. The issue quotes it at about
500,000 lookups per second on the throughput workload; measuring it in the same run as our
matchers turns that into a ratio, which survives a noisy machine.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["PlainTrie"]

_SUBS = ""  # the key under which a node keeps its subscribers ('' is no word of these workloads)


class PlainTrie:
    def __init__(self) -> None:
        self.root: dict[str, Any] = {}

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        node = self.root
        for word in pattern.split("."):
            node = node.setdefault(word, {})
        node.setdefault(_SUBS, set()).add(subscriber)

    def lookup(self, topic: str) -> set[Hashable]:
        out: set[Hashable] = set()
        self._walk(self.root, topic.split("."), 0, out)
        return out

    def _walk(self, node: dict[str, Any], words: list[str], i: int, out: set[Hashable]) -> None:
        if i == len(words):
            subs = node.get(_SUBS)
            if subs:
                out |= subs
            return
        child = node.get(words[i])
        if child is not None:
            self._walk(child, words, i + 1, out)
        child = node.get("*")
        if child is not None:
            self._walk(child, words, i + 1, out)
