"""Where 2x paho-mqtt's ``MQTTMatcher`` stops being reachable, row by row of the workload matrix.

    .venv/bin/python benchmarks/paho_bound.py [ROUNDS] [ROW,ROW...]

On the workload matrix's ``distinct-10k`` and ``distinct-100k`` rows (10,000 and 100,000 MQTT
filters, every topic new), its ``unmatched`` row (20,000 filters, 90 % of the topics match nobody)
and the lookups of its ``churn`` row (300,000 filters, Zipf-drawn topics matching about 250
subscribers each; here without the writes, which the matrix interleaves), the time per lookup of:
paho's ``MQTTMatcher`` (``iter_match``, drained into a set); topicmatch's ``trie`` and ``default``;
and three floors of any topicmatch lookup: ``Matcher.lookup`` on a matcher with no subscriptions
(validate, split, call the index, find nothing), the dialect's topic parser alone
(``Dialect.topic_parser()``), and the one union of the subscriber sets of the patterns that
match the topic (a lookup must return one set; the patterns found beforehand by a matcher whose
subscribers are the patterns themselves);
and the trie *warm*: the same number of lookups, of the row's first 50 topics over and over
(through one more call), so that the nodes they walk stay in the CPU's caches: against ``trie``,
what reading the table from memory costs. Each round runs every variant once on the same 2,000
topics, in rotated order, on topics no variant has seen (distinct) or from the row's repeating
list; medians over ROUNDS (default 31) rounds, and the median of each round's ratio of paho's time
to the variant's (above 2: the 2x target met). ROWs: ``distinct-10k``, ``distinct-100k``,
``unmatched``, ``churn`` (all by default). With ``PYTHONPATH=OTHER/src``, it measures another
version of topicmatch. Public names only.

Figures: docs/implementation.md (a lookup on distinct-100k, and its *trie warm* line) and
``topicmatch._engine.walk.finish_leaves``; no run is committed (docs/performance.md, "Other
experiments").
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from topicmatch import Matcher, make_dialect
from topicmatch.bench import shapes
from topicmatch.bench.contenders import build

PER_ROUND = 2_000


def _gathered(trie: Matcher, topics: list[str]) -> dict[str, list[frozenset[Any]]]:
    """The subscriber sets of the patterns matching each topic (what its union is made of)."""
    table = trie.subscriptions()
    patterns: Matcher[str] = Matcher("trie", "mqtt")
    patterns.subscribe_many((pattern, pattern) for pattern in table)
    return {topic: [table[p] for p in patterns.lookup(topic)] for topic in topics}


def _variants(shape: shapes.Shape) -> dict[str, Callable[[], Callable[[str], Any]]]:
    paho = build("paho", "mqtt", shape.pairs, lambda: (), float("inf"))
    trie, default = Matcher("trie", "mqtt"), Matcher(dialect="mqtt")
    for m in (trie, default):
        m.subscribe_many(shape.pairs)
    empty = Matcher(dialect="mqtt")
    parse = make_dialect("mqtt").topic_parser()
    gathered = _gathered(trie, list(dict.fromkeys(shape.topics)))
    union = frozenset().union

    def union_only(topic: str) -> frozenset[Any]:
        return union(*gathered[topic])

    warm = itertools.cycle(list(dict.fromkeys(shape.topics))[:50])
    trie_lookup = trie.lookup

    def trie_warm(topic: str) -> frozenset[Any]:
        return trie_lookup(next(warm))

    # Each variant gives the function to call this round: a matcher's ``lookup`` is read anew,
    # as the workload matrix reads it, since the default's result cache steps out of it while
    # switched off (and back in) by rebinding it.
    return {
        "paho MQTTMatcher": lambda: paho.lookup,
        "trie": lambda: trie.lookup,
        "trie warm (50 topics repeated)": lambda: trie_warm,
        "default": lambda: default.lookup,
        "floor: lookup, no subscriptions": lambda: empty.lookup,
        "floor: parse the topic only": lambda: parse,
        "floor: the union of the sets found": lambda: union_only,
    }


def main(rounds: int, only: list[str]) -> None:
    rows: dict[str, Callable[[], shapes.Shape]] = {
        "distinct-10k": lambda: shapes.distinct(10_000, PER_ROUND * (rounds + 1)),
        "distinct-100k": lambda: shapes.distinct(100_000, PER_ROUND * (rounds + 1)),
        "unmatched": lambda: shapes.unmatched(20_000, 200_000),
        "churn": lambda: shapes.churn(300_000, 200_000, 0),  # its lookups only
    }
    for name, make in rows.items():
        if only and name not in only:
            continue
        shape = make()
        variants = _variants(shape)
        gc.collect()
        gc.freeze()
        times: dict[str, list[float]] = {v: [] for v in variants}
        for r in range(rounds + 1):
            topics = shape.topics[r * PER_ROUND % (len(shape.topics) - PER_ROUND) :][:PER_ROUND]
            order = list(variants)[r % len(variants) :] + list(variants)[: r % len(variants)]
            for v in order:
                lookup = variants[v]()
                start = time.perf_counter()
                for topic in topics:
                    lookup(topic)
                if r:  # round 0 warms up
                    times[v].append((time.perf_counter() - start) / PER_ROUND)
        print(f"{name}:" if name != "churn" else "churn (lookups only):")
        for v, values in times.items():
            ratio = statistics.median(p / t for p, t in zip(times["paho MQTTMatcher"], values, strict=True))
            print(f"  {v:34s} {statistics.median(values) * 1e6:6.2f} us   paho's time / this: {ratio:5.2f}")
        gc.unfreeze()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 31, sys.argv[2].split(",") if len(sys.argv) > 2 else [])
