"""The inputs that once made one write or the memory of the default matcher blow up, timed.

    .venv/bin/python benchmarks/hostile_inputs.py            # this checkout
    PYTHONPATH=OTHER/src python benchmarks/hostile_inputs.py # another checkout (a "before")

Through the public API only, so that any version of topicmatch runs it. Each case prints one
line; tests/test_bounds.py pins the same bounds by counting rather than timing.

1. A write while the result cache is full of long topics: 4,096 distinct 120-word topics, each
   looked up three times (the cache makes a topic hot at its third lookup, and the next write
   indexes the hot topics promoted since the last one, up to its budget) under subscriptions
   that make them costly to look up, then one subscribe of a pattern with many ``#`` (and of
   ``#.q``); the same with 16-word topics (the longest the cache keeps). Each line says how
   many topics were cached at the time of the write.
2. Memory of wide lookups: 200 subscriptions ``#.w<i>.#`` and topics of 50 random words, looked
   up twice each, and their batch walk through the DFA; the growth of traced memory.
3. Many patterns on one trie node (MQTT shared subscriptions with distinct groups):
   ``subscribe_many`` of 4k, 8k and 16k pairs on the trie and the cstrie, and single subscribes
   onto a node that holds 16k patterns.

Figures: none committed (docs/performance.md, "Other experiments"); docs/implementation.md
cites it, and CHANGELOG.md ("Performance history") has what it measured before the bounds.
"""

from __future__ import annotations

import random
import sys
import time
import tracemalloc

from topicmatch import Matcher

HOSTILE = "#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b"


def _write_after_filling(words: int) -> None:
    rng = random.Random(1)
    topics = list(dict.fromkeys(".".join(rng.choice("abq") for _ in range(words)) for _ in range(4096)))
    for pattern in (HOSTILE, "#.q"):
        m = Matcher()
        # Subscriptions that make these topics costly to look up: what a cache is for.
        m.subscribe_many((f"#.{x}.#.{y}.#", 0) for x in "abq" for y in "abq")
        for first in range(0, len(topics), 1024):
            for _ in range(3):  # recorded, stored, promoted
                for topic in topics[first : first + 1024]:
                    m.lookup(topic)
            m.subscribe("no.such.topic", 2)  # indexes the hot topics promoted since the last write
        cached = m.cache_info["size"]
        start = time.perf_counter()
        m.subscribe(pattern, 1)
        elapsed = time.perf_counter() - start
        print(
            f"write after {len(topics):,} {words}-word topics ({cached:,} cached): {pattern[:12]:12s} "
            f"{elapsed * 1e3:10.2f} ms",
            flush=True,
        )


def _dfa_memory(topics: int) -> None:
    m = Matcher()
    m.subscribe_many((f"#.w{i}.#", i) for i in range(200))
    rng = random.Random(3)
    words = [".".join(f"w{rng.randrange(400)}" for _ in range(50)) for _ in range(topics)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    for topic in words * 2:
        m.lookup(topic)
    walk = m.batch_walk()
    assert walk is not None
    for topic in words:
        state = walk.root
        for word in topic.split("."):
            (state,) = walk.advance([state], [word])
        walk.subscribers(state)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    elapsed = time.perf_counter() - start
    print(f"after {topics:,} 50-word topics x 2 and a batch walk: {grown / 1e6:8.1f} MB ({elapsed:.1f} s)")


def _one_node(k: int, algorithm: str = "trie") -> float:
    best = float("inf")
    for _ in range(3):
        m = Matcher(algorithm, "mqtt")
        pairs = [(f"$share/g{i}/sensors/#", i) for i in range(k)]
        start = time.perf_counter()
        m.subscribe_many(pairs)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"topicmatch from {sys.modules['topicmatch'].__file__}")
    _write_after_filling(120)
    _write_after_filling(16)
    _dfa_memory(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000)
    for algorithm in ("trie", "cstrie"):
        for k in (4_000, 8_000, 16_000):
            took = _one_node(k, algorithm) * 1e3
            print(f"{algorithm} subscribe_many of {k:,} pairs on one node: {took:10.1f} ms", flush=True)
    m = Matcher("trie", "mqtt")
    m.subscribe_many((f"$share/g{i}/sensors/#", i) for i in range(16_000))
    start = time.perf_counter()
    for i in range(1_000):
        m.subscribe(f"$share/h{i}/sensors/#", i)
    print(f"one subscribe onto a node of 16,000 patterns: {(time.perf_counter() - start) * 1e3:.3f} us")


if __name__ == "__main__":
    main()
