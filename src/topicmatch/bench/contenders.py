"""The matchers ``topicmatch bench workloads`` compares, behind one small interface.

A :class:`Contender` has ``lookup(topic)``, ``subscribe(pattern, subscriber)`` and
``unsubscribe(pattern, subscriber)``. topicmatch's algorithms are :class:`~topicmatch.Matcher`
objects as they are; the peers are adapted with the calls their users make: paho-mqtt's
``MQTTMatcher`` (``m[filter] = set``, ``iter_match``; MQTT) and kombu's topic exchange (one
compiled regular expression per binding; AMQP).

Building stops at a time budget (checked between chunks of pairs), and the inverted bitmap, whose
every new pattern is matched against its whole topic space, is not built when the space times
the patterns is beyond :data:`MAX_BITMAP_PAIRS`: the report then says why a cell is empty.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

from .. import Matcher

__all__ = [
    "AGAIN",
    "ALGORITHMS",
    "MAX_BITMAP_PAIRS",
    "PEERS",
    "Contender",
    "NotBuilt",
    "build",
    "contenders_for",
]

#: topicmatch's contenders: the default (with and without its result cache) and the five algorithms.
ALGORITHMS = (
    "default",
    "default, no cache",
    "naive",
    "inverted_bitmap",
    "optimized_bitmap",
    "trie",
    "cstrie",
)
#: The A/A control: the default again, built the same way (in a process of its own, as every
#: contender is). No row runs it unless asked (benchmarks/aa_workloads.py asks).
AGAIN = "default, again"
#: The inverted bitmap is built only when topic space x patterns stays below this (about a
#: minute of matching patterns against topics at ~0.5 us a pair).
MAX_BITMAP_PAIRS = 100_000_000

_CHUNK = 10_000  # pairs per subscribe_many call while building: the budget is checked between them


class Contender(Protocol):
    def lookup(self, topic: str) -> Any: ...
    def subscribe(self, pattern: str, subscriber: Hashable) -> Any: ...
    def unsubscribe(self, pattern: str, subscriber: Hashable) -> Any: ...


class NotBuilt(Exception):
    """A contender that could not be built within its limits; the message says why."""


#: The Python peers, each with the one dialect it speaks (none speaks NATS subjects).
PEERS = {"paho": "mqtt", "kombu": "amqp"}


def contenders_for(dialect: str) -> tuple[str, ...]:
    """Every contender of a row in ``dialect``: topicmatch's, then the peer speaking it."""
    return (*ALGORITHMS, *(peer for peer, speaks in PEERS.items() if speaks == dialect))


class _Paho:
    """paho-mqtt's MQTTMatcher holding a set of subscribers per filter, as a broker would."""

    def __init__(self) -> None:
        from paho.mqtt.matcher import MQTTMatcher  # noqa: PLC0415 - optional peer

        self._m = MQTTMatcher()  # type: ignore[no-untyped-call]

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        try:
            self._m[pattern].add(subscriber)
        except KeyError:
            self._m[pattern] = {subscriber}

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> None:
        subs = self._m[pattern]
        subs.discard(subscriber)
        if not subs:
            del self._m[pattern]  # type: ignore[no-untyped-call]

    def lookup(self, topic: str) -> set[Hashable]:
        out: set[Hashable] = set()
        for subs in self._m.iter_match(topic):  # type: ignore[no-untyped-call]
            out |= subs
        return out


class _Kombu:
    """kombu's in-memory topic exchange: its table of bindings and its ``lookup``."""

    def __init__(self) -> None:
        from kombu.transport.virtual.exchange import TopicExchange  # noqa: PLC0415 - optional peer

        self._exchange = TopicExchange(None)  # type: ignore[no-untyped-call]
        self._table: list[Any] = []

    def subscribe(self, pattern: str, subscriber: Hashable) -> None:
        self._table.append(self._exchange.prepare_bind(subscriber, "bench", pattern, None))  # type: ignore[no-untyped-call]

    def unsubscribe(self, pattern: str, subscriber: Hashable) -> None:
        self._table = [b for b in self._table if not (b[0] == pattern and b[2] == subscriber)]

    def lookup(self, topic: str) -> set[Hashable]:
        return set(self._exchange.lookup(self._table, "bench", topic, None))  # type: ignore[no-untyped-call]


def build(
    name: str, dialect: str, pairs: list[tuple[str, int]], space: Callable[[], Iterable[str]], budget: float
) -> Contender:
    """Contender ``name`` holding ``pairs``; :class:`NotBuilt` past ``budget`` seconds.

    ``space`` gives the topics of the row, the inverted bitmap's topic space (asked only for it).
    """
    deadline = time.perf_counter() + budget
    if name in ("paho", "kombu"):
        peer: _Paho | _Kombu = _Paho() if name == "paho" else _Kombu()
        for k, (pattern, subscriber) in enumerate(pairs):
            peer.subscribe(pattern, subscriber)
            if k % _CHUNK == 0 and time.perf_counter() > deadline:
                raise NotBuilt(f"build over {budget:g} s")
        return peer
    options: dict[str, Any] = {}
    if name == "inverted_bitmap":
        topics = sorted(set(space()))
        patterns = len({p for p, _ in pairs})
        if len(topics) * patterns > MAX_BITMAP_PAIRS:
            raise NotBuilt(f"{len(topics):,} topics x {patterns:,} patterns to match at build")
        options["topics"] = topics
    if name == "default, no cache":
        name, options["cache_size"] = "default", 0
    if name == AGAIN:
        name = "default"
    m = Matcher(name, dialect, **options)
    for start in range(0, len(pairs), _CHUNK):
        m.subscribe_many(pairs[start : start + _CHUNK])
        if time.perf_counter() > deadline and start + _CHUNK < len(pairs):
            raise NotBuilt(f"build over {budget:g} s ({start + _CHUNK:,} of {len(pairs):,} pairs)")
    return m
