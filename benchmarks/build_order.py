"""Whether the order of building decides a steady-state ratio on the distinct-100k row.

    .venv/bin/python benchmarks/build_order.py default,nocache,trie
    .venv/bin/python benchmarks/build_order.py trie,nocache,default

The workload matrix's steady state builds its contenders once and keeps them alive together;
on ``distinct-100k`` the trie came out 1.1-1.2x the default, and as much the default without
its cache, though on fresh builds (early life) they were even. This builds the listed matchers
of ``shapes.distinct(100_000, 400_000)`` in the given order (``default``, ``nocache``: the
default with ``cache_size=0``, ``trie``), then looks up 6 rounds of 20,000 topics none has seen,
alternating, and prints each one's median lookups/s (thread CPU time).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from topicmatch import Matcher
from topicmatch.bench import shapes

KINDS: dict[str, tuple[str, int | None]] = {
    "default": ("default", None),
    "nocache": ("default", 0),
    "trie": ("trie", None),
}
ROUNDS = 6
PER_ROUND = 20_000


def main(order: list[str]) -> None:
    shape = shapes.distinct(100_000, 400_000)
    built: dict[str, Matcher[Any]] = {}
    for name in order:
        algorithm, cache_size = KINDS[name]
        built[name] = Matcher(algorithm, shape.dialect, cache_size=cache_size)
        built[name].subscribe_many(shape.pairs)
    rates: dict[str, list[float]] = {name: [] for name in order}
    start = 0
    for r in range(ROUNDS):
        for name in order if r % 2 == 0 else order[::-1]:
            topics = shape.topics[start : start + PER_ROUND]
            start += PER_ROUND
            lookup = built[name].lookup
            began = time.thread_time()
            for topic in topics:
                lookup(topic)
            rates[name].append(len(topics) / (time.thread_time() - began))
    print(order, {name: round(statistics.median(values)) for name, values in rates.items()})


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(KINDS))
