"""TopicIndex (stored topics looked up by filter) against a scan of the stored topics.

    .venv/bin/python benchmarks/topic_index.py [STORED] [ROUNDS]

An MQTT broker's retained messages: STORED topics (default 1,000,000): 90 % device states
``devices/d<i>/state``, 10 % ``site/<s>/room<r>/<temp|hum>``. For each filter a new subscriber
could send, the time of ``TopicIndex.match`` and of the scan it replaces (every stored topic
tested against the filter: a one-subscription ``Matcher`` per filter, ``lookup`` per topic,
which is what a broker without an index does), medians of ROUNDS (default 3; the scan once per
filter, it takes seconds). Both answers are compared. Also the time of one full collection of
CPython's cyclic collector with the store alive: what the store adds to every such collection of
the program holding it.

    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/topic_index.py    # another version

Figures: README.md (``TopicIndex.match`` against a scan of 1,000,000 retained topics); no run
is committed (docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

from topicmatch import Matcher, TopicIndex


def main(stored: int, rounds: int) -> None:
    topics = [f"devices/d{i}/state" for i in range(stored * 9 // 10)]
    topics += [f"site/{i % 500}/room{i // 500}/{('temp', 'hum')[i % 2]}" for i in range(stored - len(topics))]
    index = TopicIndex[int](dialect="mqtt")
    start = time.perf_counter()
    for i, topic in enumerate(topics):
        index.set(topic, i)
    print(f"{len(index):,} stored topics, built in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    gc.collect()  # what the store adds to every full collection of the program holding it
    print(f"a full collection with the store alive: {(time.perf_counter() - start) * 1e3:.0f} ms", flush=True)
    filters = ["devices/d4242/state", "devices/d4242/+", "site/17/#", "site/+/room3/temp", "+/+/state"]
    for pattern in filters:
        runs = []
        for _ in range(rounds):
            start = time.perf_counter()
            found = index.match(pattern)
            runs.append(time.perf_counter() - start)
        walked = index.last_walk
        one = Matcher("trie", "mqtt")
        one.subscribe(pattern, 1)
        start = time.perf_counter()
        scanned = {t for t in topics if one.lookup(t)}
        scan = time.perf_counter() - start
        assert scanned == set(found), pattern
        median = statistics.median(runs)
        print(
            f"{pattern:22s} {len(found):>9,} matches  index {median * 1e3:10.3f} ms ({walked:,} pairs walked)"
            f"  scan {scan * 1e3:10.1f} ms  ({scan / median:,.0f}x)",
            flush=True,
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
