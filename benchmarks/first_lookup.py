"""First lookups of the default matcher: one union per DFA state against a chain of ``|``.

Usage: ``.venv/bin/python benchmarks/first_lookup.py [SUBSCRIPTIONS]`` (default 100,000)

A topic's first lookup builds the DFA's final state and its subscriber set, the union of the
sets of every trie node alive at the end. That union used to be a chain ``a | b | c ...``,
which copies what came before at every step (quadratic in the number of nodes); it is now one
``frozenset().union(*sets)``. This script times first lookups of 3,000 realistic topics
(``topicmatch.bench.shapes.realistic``, as ``topicmatch bench scaling``) both ways, alternating
the two in each of 5 rounds on fresh matchers, and prints the medians and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Hashable

from topicmatch import Matcher
from topicmatch._dfa import DFA
from topicmatch._index import EMPTY
from topicmatch.bench.shapes import realistic


def chained_match(self: DFA, words: list[str]) -> frozenset[Hashable]:
    """DFA.match as it was: the final union as a chain of ``|``."""
    state = self.root
    for word in words:
        nxt = state.next.get(word)
        state = self._step(state, word) if nxt is None else nxt
    subs = state.subs
    if subs is None:
        result: frozenset[Hashable] = EMPTY
        for node in state.nodes:
            if node.subs:
                result = node.subs if not result else result | node.subs
        subs = state.subs = result
    return subs


def first_pass_us(patterns: list[str], topics: list[str]) -> float:
    m = Matcher(cache_size=0)
    for i, pattern in enumerate(patterns):
        m.subscribe(pattern, i)
    start = time.perf_counter()
    for topic in topics:
        m.lookup(topic)
    return (time.perf_counter() - start) / len(topics) * 1e6


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    patterns, topics = realistic(size, 3_000, seed=5)
    one_union = DFA.match
    times: dict[str, list[float]] = {"one union": [], "chain of |": []}
    for _ in range(5):
        for name, match in (("one union", one_union), ("chain of |", chained_match)):
            DFA.match = match  # type: ignore[method-assign]
            times[name].append(first_pass_us(patterns, topics))
    DFA.match = one_union  # type: ignore[method-assign]
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:12s} {value:8.1f} us per first lookup ({size:,} subscriptions)")
    print(f"chain / one union: {medians['chain of |'] / medians['one union']:.2f}x")


if __name__ == "__main__":
    main()
