"""Compare settings of the default engine on the workload shapes, alternated in one process.

The settings behind the default matcher (when a trie version gets its DFA, when the DFA learns a
transition, the result cache on or off) were chosen with this script: each variant is a matcher,
all are built on the same data, then measured round after round in rotated order (a noisy
machine slows them alike), every round on topics none has looked up before when the shape is
*once*. Reported per variant: the median and the minimum over the rounds of the time per lookup,
and the median over the rounds of the trie's time divided by the variant's (a ratio of two runs
that were next to each other in time: this machine's speed drifts by 2x over seconds).

    .venv/bin/python benchmarks/default_engine.py distinct,zipf,unmatched,study,churn,subs \\
        "trie;default;default,cache=0;default,cache=0,quiet=0,learn=1" 15

A variant is an algorithm and options: ``cache=N`` (result cache size), ``quiet=N`` (lookups a trie
version lasts before it gets a DFA), ``learn=N`` (times a transition is taken before the DFA learns
it), ``probation=N`` (lookups that teach a new DFA, and as many that judge it), ``dfa=0`` (no DFA
at all), ``bytes=N`` (the DFA's byte budget), ``walk=N`` (the result cache's invalidation steps per
token of a written pattern), ``memo=0`` (no union memo: the walk unites its sets every time).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from topicmatch import Matcher, _walk
from topicmatch._trie import TrieIndex
from topicmatch.bench import shapes
from topicmatch.bench.contenders import _Paho

ROWS: dict[str, Callable[[], shapes.Shape]] = {
    "distinct": lambda: shapes.distinct(10_000, 200_000),
    "distinct100k": lambda: shapes.distinct(100_000, 400_000),
    "zipf": lambda: shapes.zipf(20_000, 1_000_000),
    "unmatched": lambda: shapes.unmatched(20_000, 1_000_000),
    "study": lambda: shapes.study(100_000),
    "churn": lambda: shapes.churn(300_000, 400_000, 40_000),
    "subs": lambda: shapes.million(100_000, 100_000),
    "fanout": lambda: shapes.fanout(100_000, 10, 100_000),
}
PER_ROUND = (
    2_000  # lookups per variant and round: short, so that a round's variants share the machine's state
)
WRITE_EVERY = 20  # churn: one subscribe or unsubscribe every this many lookups


def _variant(spec: str, shape: shapes.Shape) -> Any:
    name, *options = spec.split(",")
    if name == "paho":
        paho = _Paho()
        for pattern, subscriber in shape.pairs:
            paho.subscribe(pattern, subscriber)
        return paho
    settings = dict(option.split("=") for option in options)
    cache = int(settings.pop("cache")) if "cache" in settings else None
    m = Matcher(name, shape.dialect, cache_size=cache)
    for start in range(0, len(shape.pairs), 10_000):
        m.subscribe_many(shape.pairs[start : start + 10_000])
    if "walk" in settings:
        assert m._cache is not None, "walk= needs a result cache"
        m._cache.walk_budget = int(settings.pop("walk"))
    if not settings:
        return m
    index = m._index
    assert isinstance(index, TrieIndex), "memo=, dfa= and the DFA's settings are the default's"
    if settings.pop("memo", "1") == "0":
        index._union = _walk.union_of
    if "dfa" in settings:
        index._use_dfa = bool(int(settings.pop("dfa")))
    fields = {
        "quiet": "quiet_lookups",
        "learn": "learn_after",
        "probation": "probation",
        "bytes": "max_bytes",
    }
    index.dfa_settings = replace(index.dfa_settings, **{fields[k]: int(v) for k, v in settings.items()})
    return m


def _round(matcher: Any, topics: list[str], writes: list[tuple[bool, str, int]]) -> float:
    lookup = matcher.lookup
    start = time.perf_counter()
    if writes:
        for k, topic in enumerate(topics):
            if k % WRITE_EVERY == 0 and writes:
                adding, pattern, subscriber = writes.pop()
                (matcher.subscribe if adding else matcher.unsubscribe)(pattern, subscriber)
            lookup(topic)
    else:
        for topic in topics:
            lookup(topic)
    return (time.perf_counter() - start) / len(topics)


def main(rows: list[str], specs: list[str], rounds: int) -> None:
    for row in rows:
        shape = ROWS[row]()
        built = {spec: _variant(spec, shape) for spec in specs}
        writes = {spec: list(reversed(shape.writes)) for spec in specs}
        gc.collect()
        gc.freeze()  # what was built is never collected: collections need not walk it
        times: dict[str, list[float]] = {spec: [] for spec in specs}
        for r in range(rounds + 1):
            # Consecutive slices: a once shape never repeats a topic; a repeated shape's draws go
            # on through its whole list, so that its working set is the shape's, not one slice's.
            start = r * PER_ROUND % max(1, len(shape.topics) - PER_ROUND)
            topics = shape.topics[start : start + PER_ROUND]
            order = specs[r % len(specs) :] + specs[: r % len(specs)]
            for spec in order:
                elapsed = _round(built[spec], topics, writes[spec])
                if r:  # round 0 warms up
                    times[spec].append(elapsed)
        print(f"{row} ({shape.dialect}, {len(shape.pairs):,} pairs, {'once' if shape.once else 'repeated'}):")
        for spec in specs:
            med, low = statistics.median(times[spec]), min(times[spec])
            ratio = ""
            if "trie" in times:  # the median of the rounds' ratios: each round's pair ran side by side
                paired = statistics.median(t / v for t, v in zip(times["trie"], times[spec], strict=True))
                ratio = f"  x{paired:.2f} vs trie"
            print(f"  {spec:40s} median {med * 1e6:7.2f} us  min {low * 1e6:7.2f} us{ratio}", flush=True)
        del built
        gc.unfreeze()


if __name__ == "__main__":
    main(sys.argv[1].split(","), sys.argv[2].split(";"), int(sys.argv[3]) if len(sys.argv) > 3 else 9)
