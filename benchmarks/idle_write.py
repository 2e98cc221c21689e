"""What a write costs the default while its result cache holds nothing, against no cache at all.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/idle_write.py [ROUNDS]

A long-lived default under churn holds almost nothing in its cache (``benchmarks/churn_counts.py``):
what the cache still adds there is its writes, each through :meth:`ResultCache.write` (the lock,
the version moved twice, a few tests). Here a default and a default with ``cache_size=0``, each
holding 1,000 MQTT filters, subscribe and unsubscribe one more pair, 20,000 times a round; and
``ResultCache.write`` is called alone with a commit that does nothing. Printed: the best of
ROUNDS rounds (default 7) per write, in µs: the least the machine's noise leaves in.
"""

from __future__ import annotations

import argparse
import timeit

import topicmatch
from topicmatch import Matcher

PAIRS = 20_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=7, help="rounds (default 7)")
    args = parser.parse_args()
    print(f"topicmatch {topicmatch.BUILD}, best of {args.rounds} rounds")
    for label, size in (("default", None), ("no cache", 0)):
        m: Matcher[int] = Matcher("default", "mqtt", cache_size=size)
        m.subscribe_many([(f"a/{i}/+", i) for i in range(1000)])

        def pair(m: Matcher[int] = m) -> None:
            m.subscribe("x/y/z", 1)
            m.unsubscribe("x/y/z", 1)

        best = min(timeit.repeat(pair, number=PAIRS, repeat=args.rounds)) / (2 * PAIRS) * 1e6
        print(f"  {label:9s} {best:5.2f} µs per write")
    cache = Matcher("default", "mqtt")._cache
    assert cache is not None
    tokens = (("x",),)
    best = min(timeit.repeat(lambda: cache.write(tokens, bool), number=PAIRS, repeat=args.rounds))
    print(f"  ResultCache.write with a commit that does nothing: {best / PAIRS * 1e6:5.2f} µs")


if __name__ == "__main__":
    main()
