"""Routing figures counted in the workers and summed on the driver by a Spark accumulator.

The workers already hold, per batch, the codes and fan-out that the summary needs, so counting
there costs a few NumPy operations per batch instead of another pass over the deliveries. Each
task adds one :class:`Counts` per (streaming batch id, subscriptions version) key: batch jobs use
the batch id ``None``, and a stream's summary can say exactly which version routed which batch.
Spark applies the accumulator updates of a job's final stage once per successful task, so the
figures are exact for the one-stage jobs the command line runs.

Accumulators need a SparkContext (not Spark Connect); :func:`~topicmatch.spark.route` itself
does not use them, only the command line does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pyspark.accumulators import AccumulatorParam

__all__ = ["Counts", "Key", "StatsParam", "tied_after", "top_subscribers"]

#: (streaming batch id or None, subscriptions version)
Key = tuple[int | None, str]


class Counts:
    """Messages in, deliveries out, unmatched and invalid messages, deliveries per subscriber id."""

    __slots__ = ("deliveries", "invalid", "messages", "per_subscriber", "unmatched")

    def __init__(self, subscribers: int) -> None:
        self.messages = 0
        self.deliveries = 0
        self.unmatched = 0
        self.invalid = 0
        self.per_subscriber: np.ndarray[Any, np.dtype[np.int64]] = np.zeros(subscribers, dtype=np.int64)

    def add_batch(self, messages: int, deliveries: int, unmatched: int, invalid: int) -> None:
        self.messages += messages
        self.deliveries += deliveries
        self.unmatched += unmatched
        self.invalid += invalid

    def add_subscribers(self, ids: np.ndarray[Any, Any], weights: np.ndarray[Any, Any]) -> None:
        """Add ``weights[i]`` deliveries to subscriber ``ids[i]`` (ids may repeat)."""
        np.add.at(self.per_subscriber, ids, weights)

    def merge(self, other: Counts) -> None:
        self.add_batch(other.messages, other.deliveries, other.unmatched, other.invalid)
        if len(other.per_subscriber) > len(self.per_subscriber):
            self.per_subscriber.resize(len(other.per_subscriber), refcheck=False)
        self.per_subscriber[: len(other.per_subscriber)] += other.per_subscriber

    def as_dict(self) -> dict[str, int]:
        return {
            "messages": self.messages,
            "deliveries": self.deliveries,
            "unmatched": self.unmatched,
            "invalid": self.invalid,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent from every task to the driver: only the subscribers that received something.
        (nonzero,) = np.nonzero(self.per_subscriber)
        state = (self.messages, self.deliveries, self.unmatched, self.invalid)
        return (_restore, (len(self.per_subscriber), state, nonzero, self.per_subscriber[nonzero]))

    def __repr__(self) -> str:
        return f"Counts({self.as_dict()})"


def _restore(size: int, state: tuple[int, int, int, int], ids: Any, values: Any) -> Counts:
    counts = Counts(size)
    counts.add_batch(*state)
    counts.per_subscriber[ids] = values
    return counts


class StatsParam(AccumulatorParam[dict[Key, Counts]]):
    """Sums ``{key: Counts}`` dictionaries key by key."""

    def zero(self, value: dict[Key, Counts]) -> dict[Key, Counts]:
        return {}

    def addInPlace(self, value1: dict[Key, Counts], value2: dict[Key, Counts]) -> dict[Key, Counts]:
        for key, counts in value2.items():
            mine = value1.get(key)
            if mine is None:
                value1[key] = counts
            else:
                mine.merge(counts)
        return value1


def top_subscribers(counts: Counts, subscribers: list[Any], limit: int = 10) -> list[tuple[Any, int]]:
    """The ``limit`` subscribers with the most deliveries, most first (ties: the smaller subscriber first)."""
    per = counts.per_subscriber
    if not len(per):
        return []
    limit = min(limit, len(per))
    best = np.argpartition(-per, limit - 1)[:limit] if limit < len(per) else np.arange(len(per))
    best = best[np.lexsort((best, -per[best]))]
    return [(subscribers[i], int(per[i])) for i in best.tolist() if per[i] > 0]


def tied_after(counts: Counts, top: list[tuple[Any, int]]) -> int:
    """How many subscribers left out of ``top`` (:func:`top_subscribers`) have as many
    deliveries as its last one: a tie the cut went through. O(subscribers)."""
    if not top:
        return 0
    last = top[-1][1]
    shown = sum(1 for _, count in top if count == last)
    return int(np.count_nonzero(counts.per_subscriber == last)) - shown
