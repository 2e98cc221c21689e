"""Helpers of the Spark tests: the pure-Python reference of what ``route`` must return, and the
default matcher's trie."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from topicmatch import Matcher
from topicmatch._engine.trie import TrieIndex
from topicmatch.spark import Subscriptions


def expected_deliveries(
    table: Subscriptions, rows: list[tuple[int, str | None]]
) -> tuple[set[tuple[int, Any]], set[int]]:
    """(offset, subscriber) per the pure-Python Matcher, and the offsets whose topic is invalid."""
    matcher = table.matcher()
    deliveries: set[tuple[int, Any]] = set()
    invalid: set[int] = set()
    for offset, topic in rows:
        if topic is None:
            invalid.add(offset)
            continue
        try:
            found = matcher.lookup(topic)
        except ValueError:
            invalid.add(offset)
            continue
        deliveries.update((offset, subscriber) for subscriber in found)
    return deliveries, invalid


def pairs_of(frame: DataFrame) -> list[tuple[int, Any]]:
    """(offset, subscriber) of every delivery row, duplicates kept."""
    return [(row["offset"], row["subscriber"]) for row in frame.select("offset", "subscriber").collect()]


def trie_of(matcher: Matcher) -> TrieIndex:
    """The default's trie, which offers the DFA of batch walks (``stable_dfa``)."""
    index = matcher._index
    assert isinstance(index, TrieIndex)
    return index
