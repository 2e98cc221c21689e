"""TopicIndex.match on broad filters against a plain scan of the stored topics.

    .venv/bin/python benchmarks/broad_filters.py [STORED] [ROUNDS]

STORED topics (default 100,000) shaped as in benchmarks/topic_index.py: 90 % device states
``devices/d<i>/state``, 10 % ``site/<s>/room<r>/<temp|hum>``. For each filter, from ``#`` (the
whole store) to one literal topic, the median of ROUNDS (default 5) of ``TopicIndex.match`` and
of a plain scan: the filter split once, then every stored topic split and compared level by
level (``+``, ``#``, MQTT's ``$`` rule) in one dict comprehension, the cheapest correct scan a
broker can write in Python. Both answers are compared. The ratio is index / scan: at most about
1 for every filter is the target.

Figures: README.md (``TopicIndex``) and ``topicmatch._topic_index``; no run is committed
(docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from topicmatch import TopicIndex


def plain_match(levels: list[str]) -> Callable[[str], bool]:
    """A one-filter MQTT matcher over topic text: the scan's test."""
    last = len(levels) - 1
    hash_last = levels[-1] == "#"
    wild_first = levels[0] in ("+", "#")

    def matches(topic: str) -> bool:
        if wild_first and topic[:1] == "$":
            return False
        words = topic.split("/")
        if hash_last:
            if len(words) < last:
                return False
        elif len(words) != len(levels):
            return False
        for i in range(last if hash_last else len(levels)):
            if levels[i] != "+" and levels[i] != words[i]:
                return False
        return True

    return matches


def main(stored: int, rounds: int) -> None:
    topics = [f"devices/d{i}/state" for i in range(stored * 9 // 10)]
    topics += [f"site/{i % 500}/room{i // 500}/{('temp', 'hum')[i % 2]}" for i in range(stored - len(topics))]
    index = TopicIndex[int](dialect="mqtt")
    store: dict[str, int] = {}
    for i, topic in enumerate(topics):
        index.set(topic, i)
        store[topic] = i
    print(f"{len(index):,} stored topics; medians of {rounds}")
    print("| filter | matches | `TopicIndex.match` | plain scan | index / scan |")
    print("|---|---:|---:|---:|---:|")
    filters = [
        "#",
        "+/#",
        "+/+/state",
        "devices/#",
        "devices/+/state",
        "site/#",
        "site/+/room3/temp",
        "devices/d4242/+",
    ]
    for pattern in filters:
        test = plain_match(pattern.split("/"))
        walked, scanned = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            found = index.match(pattern)
            walked.append(time.perf_counter() - start)
            start = time.perf_counter()
            expected = {t: v for t, v in store.items() if test(t)}
            scanned.append(time.perf_counter() - start)
            assert found == expected, pattern
        w, s = statistics.median(walked), statistics.median(scanned)
        print(
            f"| `{pattern}` | {len(found):,} | {w * 1e3:,.2f} ms | {s * 1e3:,.2f} ms | {w / s:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
