"""Every cost of the default engine bounded, on the hostile inputs that once blew it up.

Bounds are pinned by counting (steps of a walk, bytes traced by tracemalloc, the structure a
write leaves), not by timing, except the bulk build of many patterns on one node, whose test
compares two sizes in one run (a ratio, taken as the best of several runs).
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from typing import Any

import pytest

from topicmatch import ConfigurationError, Matcher, make_dialect
from topicmatch._engine import cache as _cache
from topicmatch._engine import walk as _walk
from topicmatch._engine.cache import INDEX_BUDGET, MAX_TOPIC_WORDS, WALK_STEPS
from topicmatch._engine.dfa import DFA
from topicmatch._engine.walk import SMALL, materialize
from topicmatch.bench import shapes

HOSTILE = "#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b"


def _fill_cache(m: Matcher, topics: list[str]) -> None:
    """Make ``topics`` hot (three lookups each) and indexed (a write that matches none of them
    indexes at most INDEX_BUDGET topics promoted since the last write: a batch at a time)."""
    for start in range(0, len(topics), INDEX_BUDGET):
        batch = topics[start : start + INDEX_BUDGET]
        for topic in batch:
            for _ in range(3):
                m.lookup(topic)
        m.subscribe("no.such.pattern.at.all", "indexer")


def test_a_write_walks_a_bounded_part_of_a_full_cache() -> None:
    # The longest topics the cache keeps, as many as it holds, sharing words so that the '#'s
    # of the pattern have every path to try: the walk gives up within its budget and empties
    # the cache instead, and the answers stay exact.
    m = Matcher()
    rng = random.Random(1)
    topics = [".".join(rng.choice("ab") for _ in range(MAX_TOPIC_WORDS)) for _ in range(3000)]
    _fill_cache(m, list(dict.fromkeys(topics)))
    assert m.cache_info["size"] > 1000
    tokens = m._dialect.parse_pattern(HOSTILE)
    m.subscribe(HOSTILE, "x")
    cache = m._cache
    assert cache is not None
    assert cache.last_walk <= WALK_STEPS * (len(tokens) + 1)
    assert m.cache_info["size"] == 0  # over budget: emptied rather than walked
    expected = Matcher("naive")
    expected.subscribe(HOSTILE, "x")
    for topic in topics[:50]:
        assert m.lookup(topic) == expected.lookup(topic)


def test_the_cache_keeps_within_its_byte_bound() -> None:
    """What the result cache keeps, traced, stays under ``max_bytes``: entries, results, the
    index of its hot topics, through generations emptied whole (the charge errs high)."""
    budget = 2 * 1024 * 1024
    d = make_dialect("mqtt")
    cache = _cache.ResultCache(10**7, budget, d.parse_topic)  # bounded by bytes alone
    rng = random.Random(4)
    topics = [f"site{rng.randrange(50)}/dev{i}/t{rng.randrange(9)}" for i in range(60_000)]
    results = [frozenset((i,)) for i in range(len(topics))]  # small and distinct: the index counts
    index = d.parse_pattern("no/such/topic")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        peak = most = 0
        for i, topic in enumerate(topics):
            cache._store(topic, None, results[i], cache._version)
            if i % 2:
                cache.promote(topic, cache._version)
            if i % 500 == 0:
                cache.write((index,), list)  # indexes the hot topics promoted since
                peak = max(peak, tracemalloc.get_traced_memory()[0] - before)
                most = max(most, len(cache))
    finally:
        tracemalloc.stop()
    assert cache.bytes <= budget
    assert most >= 2000  # many topics at once...
    assert peak > budget // 2  # ...up to near the bound...
    assert peak <= budget, (peak, cache.bytes)  # ...and no more


def test_the_admission_record_keeps_hashes_not_topics() -> None:
    """The record of topics seen once, full at the default size: under 5 MB (4.7 MB documented)
    and not the topics themselves (they are freed once looked up)."""
    cache = _cache.ResultCache(65536, 1 << 25, make_dialect("mqtt").parse_topic)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(65536):
            cache.admit(f"site{i % 50}/device-{i:08d}/temperature", None, frozenset(), cache._version)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache.seen) == 65536
    assert len(cache) == 0  # first misses: remembered, not stored
    assert grown < 5_000_000, grown


def test_long_topics_are_not_cached() -> None:
    # The case: 4,096 distinct 120-word topics, each looked up twice, then the pattern.
    m = Matcher()
    rng = random.Random(2)
    _fill_cache(m, [".".join(rng.choice("abq") for _ in range(120)) for _ in range(4096)])
    assert m.cache_info["size"] == 0
    m.subscribe(HOSTILE, "x")
    m.subscribe("#.q", "y")
    assert m._cache is not None
    assert m._cache.last_walk == 0


def test_a_literal_write_walks_its_own_path_only() -> None:
    m = Matcher()
    _fill_cache(m, [f"a.b{i}.c" for i in range(2000)])
    m.subscribe("a.b7.c", 1)
    assert m._cache is not None
    assert m._cache.last_walk <= 4
    assert m.cache_info["size"] == 1999


def test_a_write_indexes_a_bounded_number_of_new_hot_topics() -> None:
    # Topics promoted since the last write are indexed by the next one, at most INDEX_BUDGET of
    # them: with more, the write empties hot instead (what it costs stays bounded).
    m = Matcher()
    cache = m._cache
    assert cache is not None
    for i in range(INDEX_BUDGET + 1):
        for _ in range(3):
            m.lookup(f"a.b{i}")
    assert len(cache.hot) == INDEX_BUDGET + 1
    assert len(cache._trie) == 0
    m.subscribe("x", 1)
    assert not cache.hot
    assert len(cache._trie) == 0
    for i in range(INDEX_BUDGET):
        for _ in range(3):
            m.lookup(f"a.c{i}")
    m.subscribe("y", 1)
    assert len(cache.hot) == len(cache._trie) == INDEX_BUDGET


def test_dfa_memory_stays_within_its_byte_bound() -> None:
    # Wide states: patterns '#.w<i>.#' keep a node alive per word seen, and random 50-word topics
    # reach ever new sets of them. Every byte the DFA keeps is charged to its budget.
    m = Matcher(cache_size=0)
    m.subscribe_many((f"#.w{i}.#", i) for i in range(200))
    index = m._index
    budget = 2 * 1024 * 1024
    rng = random.Random(3)
    topics = [[f"w{rng.randrange(400)}" for _ in range(50)] for _ in range(400)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        dfa = DFA(index._root, False, 0, budget)  # type: ignore[attr-defined]
        for words in topics:  # advance_many learns every transition at once (as the Spark workers do)
            state = dfa.root
            for word in words:
                (state,) = dfa.advance_many([state], [word])
            dfa.subscribers(state)
        for words in topics * 2:
            dfa.match(words)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert dfa.bytes >= budget  # the workload fills the budget...
    assert grown <= dfa.bytes  # ...and everything kept was charged
    assert dfa.bytes <= budget + 64 * 1024  # the last charge overshoots by at most one state


def test_the_dfa_bound_is_a_third_of_cache_bytes() -> None:
    budget = 1024 * 1024
    rng = random.Random(4)
    topics = [".".join(f"w{rng.randrange(400)}" for _ in range(50)) for _ in range(300)]
    m = Matcher(cache_size=0, cache_bytes=3 * budget)
    m.subscribe_many((f"#.w{i}.#", i) for i in range(200))
    walk = m.batch_walk()
    assert walk is not None
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for topic in topics:
            state = walk.root
            for word in topic.split("."):
                (state,) = walk.advance([state], [word])
            walk.subscribers(state)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    dfa = m._index._dfa  # type: ignore[attr-defined]
    assert dfa is not None
    assert dfa.max_bytes == budget
    assert dfa.bytes >= budget  # the workload fills the budget...
    assert grown <= 1.1 * budget  # ...and what the DFA keeps stays within it (its charge errs high)
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ConfigurationError, match="cache_bytes"):
            Matcher(cache_bytes=bad)  # type: ignore[type-var]


def test_equal_words_share_one_string_in_the_trie() -> None:
    # Each pattern's words come from its own split; the nodes keep one string per word (the
    # dicts' keys stay in the CPU's cache on a walk, and memory holds each word once).
    m = Matcher("trie", "mqtt")
    m.subscribe_many(
        (f"{site}/floor{f}/room{r}", 0) for site in ("north", "south") for f in range(5) for r in range(5)
    )
    keys: dict[str, set[int]] = {}
    stack = [m._index._root]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        for word, child in node.children.items():
            keys.setdefault(word, set()).add(id(word))
            stack.append(child)
    assert len(keys) == 2 + 5 + 5
    assert all(len(ids) == 1 for ids in keys.values()), keys


def test_nodes_without_patterns_or_children_share_one_read_only_table() -> None:
    m = Matcher("trie", "mqtt")
    m.subscribe_many([("a/b/c", 1), ("a/+/d", 2), ("a/b", 3)])
    root = m._index._root  # type: ignore[attr-defined]
    a = root.children["a"]
    inner = [root, a, a.star]
    assert all(node.by_pattern is _walk.NO_PATTERNS for node in inner)
    assert a.children["b"].by_pattern == {"a/b": {3}}  # a table of its own once it has one
    leaves = [a.children["b"].children["c"], a.star.children["d"]]
    assert all(node.children is _walk.NO_CHILDREN for node in leaves)
    for shared in (_walk.NO_PATTERNS, _walk.NO_CHILDREN):
        with pytest.raises(TypeError):
            shared["x"] = frozenset((1,))  # a writer's mistake cannot spread
        with pytest.raises(TypeError):
            shared.setdefault("x", frozenset((1,)))
        with pytest.raises(TypeError):
            shared.update(x=frozenset((1,)))
    m.unsubscribe("a/b/c", 1)  # 'b' is a leaf again: its table goes
    assert a.children["b"].children is _walk.NO_CHILDREN
    m.unsubscribe("a/b", 3)
    assert not _walk.NO_PATTERNS
    assert not _walk.NO_CHILDREN


def test_the_trie_takes_a_bounded_number_of_bytes_per_subscription() -> None:
    """The matrix's distinct-topics table (10,000 MQTT filters of 5 words), traced: 1,002 bytes
    a subscription at commit 1183297; 1,314 before it, when every node had a dict of children
    and a dict of patterns of its own and its own copy of each word (the realistic tables of
    ``topicmatch bench memory``: docs/performance.md, "Memory")."""
    shape = shapes.distinct(10_000, 1)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        m = Matcher("trie", "mqtt")
        m.subscribe_many(shape.pairs)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(m) == 10_000
    assert grown / 10_000 < 1_100, grown / 10_000


def _shared(count: int, group: str) -> list[tuple[str, int]]:
    """MQTT shared subscriptions of ``count`` distinct groups: all end on one node ('sensors/#')."""
    return [(f"$share/{group}{i}/sensors/#", i) for i in range(count)]


def test_cstrie_subscribe_many_on_one_node_is_one_cas() -> None:
    # The cstrie groups a bulk call's patterns by the node they end on: one C-node and one CAS
    # for them all, O(pairs). One CAS per pattern copied the node's patterns each time: O(k^2),
    # 5.1x the time for 4x the pairs. Every publishing CAS moves the version by two: counted,
    # 16,000 patterns take one, as 4,000 do, where one by one they take one each.
    m = Matcher("cstrie", "mqtt")
    index: Any = m._index
    for count, group in ((4_000, "a"), (16_000, "b")):
        before = index._version
        assert m.subscribe_many(_shared(count, group)) == count
        assert index._version - before == 2
    before = index._version
    for pattern, subscriber in _shared(10, "c"):
        m.subscribe(pattern, subscriber)
    assert index._version - before == 2 * 10
    assert m.lookup("sensors/x") == frozenset(range(16_000))


def test_trie_subscribe_many_on_one_node_unites_nothing() -> None:
    # The trie adds a bulk call's patterns one by one, each in O(its subscribers): the node's
    # patterns are one dict, changed in place, and a big node's union waits for a lookup
    # (tests/test_bounds.py::test_a_subscribe_on_a_big_node_does_not_rebuild_its_union), so no
    # pattern copies what the ones before it added.
    m = Matcher("trie", "mqtt")
    m.subscribe_many(_shared(4_000, "a"))
    node = m._index._root.children["sensors"].hash  # type: ignore[attr-defined]
    patterns = node.by_pattern
    m.subscribe_many(_shared(16_000, "b"))
    assert node.by_pattern is patterns  # changed in place, never copied
    assert len(patterns) == 20_000
    assert node.subs is None  # no union made
    assert node.big is not None
    assert node.big.view is None
    assert m.lookup("sensors/x") == frozenset(range(16_000))


def test_a_subscribe_on_a_big_node_does_not_rebuild_its_union() -> None:
    m = Matcher(cache_size=0, dialect="mqtt")
    m.subscribe_many((f"$share/g{i}/sensors/#", i) for i in range(4 * SMALL))
    node = m._index._root.children["sensors"].hash  # type: ignore[attr-defined]
    m.lookup("sensors/x")
    big = node.big
    assert big is not None
    assert big.view is not None  # the union the lookup made, kept under the node's stamp
    m.subscribe("$share/new/sensors/#", "late")
    assert node.subs is None
    assert node.big is big
    assert big.view[0] is not big.stamp
    assert "late" in m.lookup("sensors/x")
    assert materialize(node) == set(range(4 * SMALL)) | {"late"}
    m.unsubscribe("$share/new/sensors/#", "late")
    for i in range(4 * SMALL - 3):  # shrinking below SMALL makes it eager again
        m.unsubscribe(f"$share/g{i}/sensors/#", i)
    assert node.subs == {4 * SMALL - 3, 4 * SMALL - 2, 4 * SMALL - 1}
    assert node.big is None


def _nodes_of_generation(root: _walk.Node, gen: object) -> list[_walk.Node]:
    """Every node below ``root`` (itself included) that generation ``gen`` made: a write's copies."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.gen is gen:
            out.append(node)
        stack.extend(node.children.values())
        stack.extend(child for child in (node.star, node.hash) if child is not None)
    return out


@pytest.mark.parametrize("algorithm", ["default", "trie"])
def test_a_snapshot_copies_nothing_and_a_write_after_it_copies_its_path_once(algorithm: str) -> None:
    m = Matcher(algorithm)
    m.subscribe_many((f"s.{i}.*.x", i) for i in range(20_000))
    index = m._index
    snap = m.snapshot()
    assert snap._index._root is index._root  # type: ignore[attr-defined]  # shared, not copied
    gen = index._gen  # type: ignore[attr-defined]  # the generation writes make from now on
    assert _nodes_of_generation(index._root, gen) == []  # type: ignore[attr-defined]
    # The first write copies the nodes on its path (root, s, 7, *, x: its words + 1) with
    # their dicts of literal children; the next writes on that path copy nothing.
    m.subscribe("s.7.*.x", "new")
    copies = _nodes_of_generation(index._root, gen)  # type: ignore[attr-defined]
    assert sorted(len(node.children) for node in copies) == [0, 0, 1, 1, 20_000]
    m.subscribe("s.7.*.x", "newer")
    m.unsubscribe("s.7.*.x", "new")
    assert len(_nodes_of_generation(index._root, gen)) == 5  # type: ignore[attr-defined]
    assert snap.lookup("s.7.a.x") == {7}
    assert m.lookup("s.7.a.x") == {7, "newer"}
    assert len(snap) == 20_000
    assert len(m) == 20_001
