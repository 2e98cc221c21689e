"""How close ``lookup_many`` of the cached default comes to what CPython can do at all.

    .venv/bin/python benchmarks/lookup_many.py [ROUNDS]

On the study's throughput workload (1,000 subscriptions, 100,000 messages over 1,000 topics), once
the cache holds every topic, the rates of: ``lookup`` called in a loop; ``lookup_many`` on the whole
list; and two floors that no Python matcher can beat, a plain dict of the answers read with
``list(map(d.__getitem__, topics))`` (one C loop, no Python code per topic) and with a list
comprehension (one bytecode loop). Medians of ROUNDS (default 15) alternated rounds.

Figures: none committed (docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from topicmatch import Matcher
from topicmatch.bench.shapes import study_throughput


def main(rounds: int) -> None:
    patterns, topics = study_throughput(100_000)
    m = Matcher()
    m.subscribe_many((p, i) for i, p in enumerate(patterns))
    for _ in range(3):  # every topic cached (stored on its second miss)
        m.lookup_many(topics)
    answers = {t: m.lookup(t) for t in set(topics)}
    lookup, get = m.lookup, answers.get

    def loop() -> Any:
        return [lookup(t) for t in topics]

    def floor_comprehension() -> Any:
        return [get(t) for t in topics]

    variants: dict[str, Callable[[], Any]] = {
        "lookup in a loop": loop,
        "lookup_many": lambda: m.lookup_many(topics),
        "floor: dict, list comprehension": floor_comprehension,
        "floor: dict, one C loop": lambda: list(map(answers.__getitem__, topics)),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        for name in list(variants)[r % len(variants) :] + list(variants)[: r % len(variants)]:
            start = time.perf_counter()
            variants[name]()
            rates[name].append(len(topics) / (time.perf_counter() - start))
    for name, values in rates.items():
        print(f"{name:34s} {statistics.median(values) / 1e6:6.1f} M lookups/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
