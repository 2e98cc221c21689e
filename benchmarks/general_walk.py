"""The trie's general walk (a table with an inner ``#``) with and without ``step`` inlined.

    .venv/bin/python benchmarks/general_walk.py [ROUNDS]

10,000 AMQP patterns (2-5 words over 20, 15 % ``*``, 5 % trailing ``#``, 3 % with a ``#``
inserted inside, so every lookup takes ``walk_general``), 3,000 topics of 2-6 words, looked up
through ``Matcher("trie", cache_size=0)``. Variants, alternated round by round: ``called``
(as shipped: ``finish_general`` calls ``_walk.step`` per word) and ``inline`` (the loop of
``step`` written out in ``finish_general``, as it was before). Printed: the median µs per
lookup of each and their ratio. Behind the figure in ``_walk.finish_general``'s docstring.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Hashable, Iterable

from topicmatch import Matcher, _walk
from topicmatch._index import EMPTY
from topicmatch._walk import Node, Union, subs_of, union_of


def inline(alive: dict[Node, None], words: Iterable[str], union: Union = union_of) -> frozenset[Hashable]:
    """``finish_general`` with ``step`` inlined (the version before)."""
    for word in words:
        nxt: dict[Node, None] = {}
        for node in alive:
            if node.is_hash:
                nxt[node] = None
            child = node.children.get(word)
            if child is not None:
                nxt[child] = None
                if child.hash is not None:
                    nxt[child.hash] = None
            child = node.star
            if child is not None:
                nxt[child] = None
                if child.hash is not None:
                    nxt[child.hash] = None
        if not nxt:
            return EMPTY
        alive = nxt
    return union([subs_of(node) for node in alive if node.subs is None or node.subs])


def main(rounds: int) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(20)]
    patterns: set[str] = set()
    while len(patterns) < 10_000:
        pattern = [rng.choice(words) if rng.random() > 0.15 else "*" for _ in range(rng.randint(2, 5))]
        if rng.random() < 0.05:
            pattern[-1] = "#"
        if rng.random() < 0.03:
            pattern.insert(rng.randrange(len(pattern)), "#")
        patterns.add(".".join(pattern))
    topics = [".".join(rng.choice(words) for _ in range(rng.randint(2, 6))) for _ in range(3_000)]
    m = Matcher("trie", cache_size=0)
    m.subscribe_many((p, i) for i, p in enumerate(patterns))
    called = _walk.finish_general
    expected = [m.lookup(t) for t in topics]
    _walk.finish_general = inline
    assert [m.lookup(t) for t in topics] == expected
    times: dict[str, list[float]] = {"called": [], "inline": []}
    for r in range(rounds):
        order = [("called", called), ("inline", inline)]
        for name, walk in order if r % 2 == 0 else order[::-1]:
            _walk.finish_general = walk
            start = time.perf_counter()
            for topic in topics:
                m.lookup(topic)
            times[name].append((time.perf_counter() - start) / len(topics) * 1e6)
    _walk.finish_general = called
    a, b = statistics.median(times["inline"]), statistics.median(times["called"])
    print(f"inline {a:.2f} us, called {b:.2f} us per lookup, called / inline {b / a:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
