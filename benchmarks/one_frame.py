"""What a Python frame costs a lookup of distinct topics: the trie's one-frame reader against the
facade's method calling ``match`` calling the walk, and the default with and without its result
cache in the path.

    .venv/bin/python benchmarks/one_frame.py [ROUNDS]

The matrix's *distinct-10k* data (10,000 MQTT filters, topics never looked up before). Every
matcher first looks up the same 300,000 topics, so that the default's DFA, result cache and memo
have all judged themselves (the long run of the matrix, not a matcher's early life); then ROUNDS
rounds (default 60) over the remaining topics, each round every variant on the same slice, in
rotated order. Each variant has a matcher of its own: on this row a lookup is bound by memory
reads, and a variant that walks the nodes another just walked, over the same topics, finds them
in the CPU's caches. Variants:

* ``paho``: paho-mqtt's ``MQTTMatcher``;
* ``trie``: ``Matcher("trie").lookup``, the trie's reader (parse, version, walk, one frame);
* ``trie, facade method``: a trie matcher through ``_Reader.lookup``, the method the reader
  replaces (it calls the dialect's parser, then ``match``, which calls ``walk_leaves``);
* ``trie, the union before``: a trie matcher whose walk unites the sets it found as
  ``_walk.union_of`` did before (``frozenset().union(*found)`` for any two or more sets);
* ``default``: ``Matcher().lookup`` read anew every round, as the matrix reads it (the cache,
  switched off here, has stepped out: the trie's reader);
* ``default, cache kept in the path``: the cache's own closure, kept from before it stepped out
  (while out it passes each topic to the reader: one call more);
* ``default, no cache``: ``Matcher(cache_size=0)``.

Printed: the median time per lookup, and the median over the rounds of paho's time over the
variant's and of the trie's time over the variant's (ratios of runs side by side).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from topicmatch import Matcher
from topicmatch._matcher import _Reader
from topicmatch.bench import shapes
from topicmatch.bench.contenders import _Paho

WARM = 300_000


def _union_before(found: list[frozenset[Any]]) -> frozenset[Any]:
    """``_walk.union_of`` as it was before two or three sets were united with ``|``."""
    if not found:
        return frozenset()
    if len(found) == 1:
        return found[0]
    return frozenset().union(*found)


def main(rounds: int) -> None:
    shape = shapes.distinct(10_000, 1_000_000)
    paho = _Paho()
    for pattern, subscriber in shape.pairs:
        paho.subscribe(pattern, subscriber)
    trie, other_trie, old_union = Matcher("trie", "mqtt"), Matcher("trie", "mqtt"), Matcher("trie", "mqtt")
    default, other_default = Matcher(dialect="mqtt"), Matcher(dialect="mqtt")
    bare = Matcher(dialect="mqtt", cache_size=0)
    matchers = (trie, other_trie, old_union, default, other_default, bare)
    old_union._index._union = _union_before  # type: ignore[attr-defined]
    for m in matchers:
        m.subscribe_many(shape.pairs)
    kept = other_default.lookup  # the cache's closure, before it steps out
    facade = _Reader.lookup.__get__(other_trie)  # the method, bound: what m.lookup was
    variants: dict[str, Callable[[], Callable[[str], Any]]] = {
        "paho": lambda: paho.lookup,
        "trie": lambda: trie.lookup,
        "trie, facade method": lambda: facade,
        "trie, the union before": lambda: old_union.lookup,
        "default": lambda: default.lookup,
        "default, cache kept in the path": lambda: kept,
        "default, no cache": lambda: bare.lookup,
    }
    for topic in shape.topics[:WARM]:
        for m in matchers:
            m.lookup(topic)
    if default.lookup is kept or other_default.lookup is kept:
        sys.exit("the default's cache did not step out: this script measures nothing it claims")
    rest = shape.topics[WARM:]
    per = len(rest) // rounds
    gc.collect()
    gc.freeze()
    times: dict[str, list[float]] = {v: [] for v in variants}
    names = list(variants)
    for r in range(rounds):
        topics = rest[r * per : (r + 1) * per]
        for name in names[r % len(names) :] + names[: r % len(names)]:
            lookup = variants[name]()
            start = time.perf_counter()
            for topic in topics:
                lookup(topic)
            times[name].append((time.perf_counter() - start) / per)
    print(f"distinct-10k, {rounds} rounds of {per:,} topics after {WARM:,}:")
    for name, values in times.items():
        by_paho = statistics.median(p / t for p, t in zip(times["paho"], values, strict=True))
        by_trie = statistics.median(p / t for p, t in zip(times["trie"], values, strict=True))
        print(
            f"  {name:34s} {statistics.median(values) * 1e6:6.2f} us   paho / this {by_paho:5.2f}"
            f"   trie / this {by_trie:5.2f}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
