"""A matcher's early life: the default with and without its result cache, run after run.

    .venv/bin/python benchmarks/early_life.py [RUNS]

The workload of ``topicmatch bench peers`` (``topicmatch.bench.shapes.realistic``: 1,000 AMQP
patterns, the same 20,000 topics, ~15,600 distinct, read RUNS times, default 8). Two fresh default
matchers, one with its cache and one without, built first, then measured one after the other
(the order alternates between two repetitions of the whole); printed: each run's lookups/s, and at
the end each matcher's DFA (states, transitions) and the rate of one more run of each. Shows
how long the DFA learns and where the cache's first judgement costs.
"""

from __future__ import annotations

import gc
import sys
import time

from topicmatch import Matcher
from topicmatch.bench.shapes import realistic


def main(runs: int) -> None:
    patterns, topics = realistic(1_000, 20_000, seed=13)
    for order in (("cache", "no cache"), ("no cache", "cache")):
        matchers = {}
        for label in order:
            m = Matcher(cache_size=None if label == "cache" else 0)
            m.subscribe_many((p, i) for i, p in enumerate(patterns))
            matchers[label] = m
        for label, m in matchers.items():
            gc.collect()
            rates = []
            for _ in range(runs):
                start = time.perf_counter()
                for topic in topics:
                    m.lookup(topic)
                rates.append(len(topics) / (time.perf_counter() - start))
            dfa = m._index._dfa  # type: ignore[attr-defined]
            states = f"{len(dfa.states):,} states, {dfa.transitions:,} transitions" if dfa else "no DFA"
            runs_text = " ".join(f"{r / 1000:5.0f}k" for r in rates)
            print(f"{label:9s} {runs_text}   DFA: {states}", flush=True)
        last = {}
        for label, m in matchers.items():
            start = time.perf_counter()
            for topic in topics:
                m.lookup(topic)
            last[label] = len(topics) / (time.perf_counter() - start)
        print("one more run: " + ", ".join(f"{label} {rate:,.0f}/s" for label, rate in last.items()) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
