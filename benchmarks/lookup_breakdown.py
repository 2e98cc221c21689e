"""Where does an uncached lookup spend its time? Dialect parsing versus the trie walk.

Usage: ``.venv/bin/python benchmarks/lookup_breakdown.py``

On the study's throughput workload (1,000 subscriptions, 100,000 messages), times per message,
median of 5 runs: ``Matcher.lookup`` on a trie without cache, the dialect's ``parse_topic``
alone, and the index's ``match`` alone on pre-split words.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from topicmatch import Matcher
from topicmatch.bench.shapes import study_throughput


def per_message_ns(run: Callable[[], object], count: int, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) / count * 1e9)
    return statistics.median(samples)


def main() -> None:
    patterns, topics = study_throughput(100_000)
    m = Matcher("trie")
    for i, p in enumerate(patterns):
        m.subscribe(p, i)
    dialect, index = m._dialect, m._index
    words = [dialect.parse_topic(t) or [] for t in topics]
    lookup, parse, match = m.lookup, dialect.parse_topic, index.match
    total = per_message_ns(lambda: [lookup(t) for t in topics], len(topics))
    parsing = per_message_ns(lambda: [parse(t) for t in topics], len(topics))
    walking = per_message_ns(lambda: [match(w) for w in words], len(topics))
    print(
        f"lookup {total:.0f} ns; alone: parse {parsing:.0f} ns ({parsing / total:.0%} of a lookup), "
        f"match {walking:.0f} ns ({walking / total:.0%})"
    )


if __name__ == "__main__":
    main()
