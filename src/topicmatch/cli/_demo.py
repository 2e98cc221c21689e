"""``topicmatch demo``: every algorithm on the study's throughput workload, checked and timed.

Until the Spark pipeline exists this is what ``make demo`` runs. It is a demonstration, not a
benchmark: one timed pass per algorithm, no repeats (``topicmatch bench`` does it properly).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import TextIO

from .. import ALGORITHMS, Matcher
from ..bench.shapes import study_throughput
from ..support.commandline import counted

__all__ = ["run_demo"]


def run_demo(messages: int, seconds: float, seed: int, out: TextIO, err: TextIO) -> int:
    patterns, topics = study_throughput(messages, seed)
    print(
        f"topicmatch demo: {len(patterns):,} subscriptions (study workload, seed {seed}), "
        f"up to {counted(messages, 'message')} or {seconds:g} s per algorithm",
        file=out,
    )
    # The reference: the naive scan (the simplest algorithm) on each distinct topic.
    naive = Matcher("naive")
    for subscriber, pattern in enumerate(patterns):
        naive.subscribe(pattern, subscriber)
    expected: dict[str, frozenset[Hashable]] = {t: naive.lookup(t) for t in set(topics)}
    rows = []
    for algorithm in ALGORITHMS:
        extra = {"topics": sorted(set(topics))} if algorithm == "inverted_bitmap" else {}
        matcher = Matcher(algorithm, **extra)  # type: ignore[type-var]
        for subscriber, pattern in enumerate(patterns):
            matcher.subscribe(pattern, subscriber)
        results: list[frozenset[Hashable]] = []
        lookup = matcher.lookup
        deadline = time.perf_counter() + seconds
        start = time.perf_counter()
        done = 0
        # Check the clock every 1,000 lookups: bounded in count and in time.
        while done < messages and time.perf_counter() < deadline:
            chunk = topics[done : done + 1000]
            results.extend([lookup(t) for t in chunk])
            done += len(chunk)
        elapsed = time.perf_counter() - start
        agree = all(r == expected[t] for r, t in zip(results, topics, strict=False))
        rate = done / elapsed if elapsed > 0 else float("inf")
        rows.append((algorithm, done, rate, agree))
        verdict = "ok" if agree else "MISMATCH"
        print(
            f"  {algorithm:<17} {rate:>13,.0f} msg/s over {counted(done, 'message'):>16}  {verdict}", file=out
        )
    if not all(agree for *_, agree in rows):
        print("topicmatch demo: the algorithms disagree; this is a bug, please report it", file=err)
        return 1
    print("all algorithms agree on every message.", file=out)
    return 0
