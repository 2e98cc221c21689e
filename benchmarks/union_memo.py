"""The default's union memo under subscription churn, against the same matcher without it.

    .venv/bin/python benchmarks/union_memo.py [ROUNDS]
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/union_memo.py [ROUNDS]   # another version

The workload matrix's *churn* row (300,000 MQTT subscriptions, Zipf-drawn topics matching about
250 subscribers each, 10,000 subscribe/unsubscribe a second paced among the lookups), on one
default matcher per variant (result cache off, to see the walk), rounds of 1 s alternated:

* ``memo``: as shipped (``_walk.Unions``);
* ``no memo``: the walk's unions made every time (``_walk.union_of``);
* ``dict memo``: the first design, a dict of unions keyed the same way and cleared when it
  holds 4,096, which leaves new objects for CPython's cyclic collector on every store;
* paho-mqtt's ``MQTTMatcher``, the peer.

Printed per variant: the median lookups/s, the median of the rounds' ratios to paho, and the
seconds the cyclic collector ran during its rounds (``gc.callbacks``). The matcher's own code is
used as it is; only which union function its trie calls differs.

First, what the memo's thresholds rest on: the time of a hit (``Unions.of`` on sets it holds)
against uniting four disjoint sets of N subscribers in all (``union_of``), best of 5 x 20,000.
Last, one more round of the memo variant, untimed, counts the share of its unions the memo served.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

from topicmatch import Matcher, _walk
from topicmatch.bench import shapes
from topicmatch.bench.contenders import _Paho
from topicmatch.bench.workloads import FULL, WRITE_RATE

ROUND_NS = 1_000_000_000


def _dict_memo() -> Callable[[list[frozenset[Hashable]]], frozenset[Hashable]]:
    memo: dict[tuple[frozenset[Hashable], ...], frozenset[Hashable]] = {}

    def union(found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
        if len(found) < 2:
            return _walk.union_of(found)
        key = tuple(found)
        got = memo.get(key)
        if got is None:
            got = frozenset().union(*found)
            if len(got) >= _walk.UNION_MIN:
                if len(memo) >= 4096:
                    memo.clear()
                memo[key] = got
        return got

    return union


def _build(variant: str, shape: shapes.Shape) -> Any:
    if variant == "paho":
        paho = _Paho()
        for pattern, subscriber in shape.pairs:
            paho.subscribe(pattern, subscriber)
        return paho
    m = Matcher("default", "mqtt", cache_size=0)
    m.subscribe_many(shape.pairs)
    index: Any = m._index
    if variant == "no memo":
        index._union = _walk.union_of
    elif variant == "dict memo":
        index._union = _dict_memo()
    return m


def probe_against_union() -> None:
    for n in (8, 16, 32, 64, 128, 256):
        found: list[frozenset[Hashable]] = [
            frozenset(range(k * 10_000, k * 10_000 + n // 4)) for k in range(4)
        ]
        memo = _walk.Unions(1 << 25)
        memo.of(found)  # kept when n >= UNION_MIN; a hit from now on
        times = {}
        for name, union in (("union", _walk.union_of), ("memo", memo.of)):
            call = partial(union, found)
            times[name] = min(timeit.repeat(call, number=20_000, repeat=5)) / 20_000
        kept = "hit" if n >= _walk.UNION_MIN else "not kept: a union"
        print(f"N={n:4d}: union {times['union'] * 1e9:5.0f} ns, memo ({kept}) {times['memo'] * 1e9:5.0f} ns")


def _round(matcher: Any, shape: shapes.Shape, w: int) -> tuple[int, int, float]:
    """One round of ROUND_NS: lookups of the row's topics with its writes paced among them,
    starting at write ``w``; the lookups made, the next write, the seconds taken."""
    topics, writes, clock = shape.topics, shape.writes, time.perf_counter_ns
    interval = 1_000_000_000 // WRITE_RATE
    lookup, subscribe, unsubscribe = matcher.lookup, matcher.subscribe, matcher.unsubscribe
    start = clock()
    end, next_write, position, looked = start + ROUND_NS, start, 0, 0
    while True:
        now = clock()
        if now >= end:
            break
        if now >= next_write:
            adding, pattern, subscriber = writes[w]
            (subscribe if adding else unsubscribe)(pattern, subscriber)
            w, next_write = w + 1, next_write + interval
            continue
        for topic in topics[position : position + 16]:
            lookup(topic)
        looked += 16
        position = (position + 16) % len(topics)
    return looked, w, (clock() - start) / 1e9


def _served(matcher: Any, shape: shapes.Shape, w: int) -> float:
    """One more round, untimed, counting the share of the unions of two sets or more that the
    memo served (a hit adds to its ``saved``; a judgement that resets it in the same call is
    counted a miss: one call in 1,024 at most)."""
    unions: _walk.Unions = matcher._index._memo
    of, counts = unions.of, [0, 0]

    def counted(found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
        before = unions.saved
        result = of(found)
        if len(found) > 1 and unions.governor.on:
            counts[0] += 1
            counts[1] += unions.saved > before
        return result

    matcher._index._union = counted
    _round(matcher, shape, w)
    matcher._index._union = of
    return counts[1] / max(counts[0], 1)


def main(rounds: int) -> None:
    probe_against_union()
    shape = shapes.churn(FULL.churn, FULL.lookups, int(WRITE_RATE * (rounds + 2) * 4 * 1.2))
    variants = ("memo", "no memo", "dict memo", "paho")
    built = {v: _build(v, shape) for v in variants}
    done = dict.fromkeys(variants, 0)  # writes applied so far, per variant
    rates: dict[str, list[float]] = {v: [] for v in variants}
    collector: dict[str, float] = dict.fromkeys(variants, 0.0)
    current: list[str] = []
    started: list[float] = []

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif current and started:
            collector[current[0]] += time.perf_counter() - started[0]

    gc.callbacks.append(timed)
    for r in range(rounds + 1):  # round 0 warms up
        for v in variants:
            current[:] = [v]
            looked, done[v], seconds = _round(built[v], shape, done[v])
            current.clear()
            if r:
                rates[v].append(looked / seconds)
            else:
                collector[v] = 0.0
    gc.callbacks.remove(timed)
    for v in variants:
        ratio = statistics.median(a / b for a, b in zip(rates[v], rates["paho"], strict=True))
        print(
            f"{v:10s} {statistics.median(rates[v]):9,.0f} lookups/s   ÷ paho {ratio:4.2f}"
            f"   collector {collector[v]:5.2f} s in {rounds} rounds"
        )
    share = _served(built["memo"], shape, done["memo"])
    print(f"memo: {share:.0%} of the unions of two sets or more served by it (one more round, untimed)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
