"""How big should the default matcher's result cache be? Lookups/s on realistic traffic.

Usage: ``.venv/bin/python benchmarks/cache_size.py``

Realistic workload (``topicmatch._workloads.realistic``: Zipf words, 1-5 words, ~13 % wildcard
patterns), 1,000 and 10,000 subscriptions, 20,000 lookups; the default matcher with its cache off
and at several sizes; median of 5 runs after a warm-up run, as ratios to the cache-off matcher of
the same run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from topicmatch import Matcher
from topicmatch._workloads import realistic
from topicmatch.bench.timing import median, rate

SIZES = (0, 1024, 4096, 16384)


def _all(lookup: Callable[[str], object], topics: list[str]) -> None:
    for topic in topics:
        lookup(topic)


def main() -> None:
    for subscriptions in (1_000, 10_000):
        patterns, topics = realistic(subscriptions, 20_000, seed=13)
        print(f"{subscriptions:,} subscriptions, {len(set(topics)):,} distinct topics in {len(topics):,}")
        base = 0.0
        for size in SIZES:
            m = Matcher(cache_size=size)
            for i, p in enumerate(patterns):
                m.subscribe(p, i)
            r = median(rate(functools.partial(_all, m.lookup, topics), len(topics), 5))
            base = base or r
            print(f"  cache_size={size:>6}: {r:>12,.0f} lookups/s  x{r / base:.2f}")


if __name__ == "__main__":
    main()
