"""The result cache: hits, exact invalidation on every write, bounded size."""

from __future__ import annotations

import gc
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, Matcher, _cache, make_dialect
from topicmatch._cache import ResultCache
from topicmatch._words import pattern_matches

from .reference import MATCHES
from .strategies import PATTERNS as PATTERN_STRATEGIES
from .strategies import TOPICS as TOPIC_STRATEGIES

TOPICS = {
    "amqp": ["a.b", "a.c", "b.b", "", "a", "a.b.c", "x"],
    "mqtt": ["a/b", "a/c", "b/b", "$x/b", "a", "a/b/c", "x"],
    "nats": ["a.b", "a.c", "b.b", "a..b", "a", "a.b.c", "x"],
}
PATTERNS = {
    "amqp": ["a.b", "a.*", "#", "*.b", "a.#", "", "x"],
    "mqtt": ["a/b", "a/+", "#", "+/b", "a/#", "$x/#", "x"],
    "nats": ["a.b", "a.*", ">", "*.b", "a.>", "x", "*"],
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cache_never_serves_a_stale_result(dialect: str) -> None:
    cached = Matcher(dialect=dialect, cache_size=4)  # smaller than the topics: evictions too
    plain = Matcher("naive", dialect)
    rng = random.Random(1)
    pairs: set[tuple[str, int]] = set()
    for _ in range(400):
        pattern, subscriber = rng.choice(PATTERNS[dialect]), rng.randrange(3)
        if rng.random() < 0.5:
            cached.subscribe(pattern, subscriber)
            plain.subscribe(pattern, subscriber)
            pairs.add((pattern, subscriber))
        else:
            cached.unsubscribe(pattern, subscriber)
            plain.unsubscribe(pattern, subscriber)
            pairs.discard((pattern, subscriber))
        for topic in rng.sample(TOPICS[dialect], 3):
            expected = {s for p, s in pairs if MATCHES[dialect](p, topic)}
            assert cached.lookup(topic) == plain.lookup(topic) == expected, (pattern, topic)
        assert cached.cache_info["size"] <= 4


def test_invalidation_is_selective() -> None:
    m = Matcher(cache_size=100)
    m.subscribe("a.*", 1)
    for topic in ("a.b", "a.c", "b.b"):
        m.lookup(topic)
    assert m.cache_info["size"] == 0  # a first miss is only remembered (admission)
    for topic in ("a.b", "a.c", "b.b"):
        m.lookup(topic)
    assert m.cache_info["size"] == 3
    m.subscribe("*.b", 2)  # affects a.b and b.b only
    assert set(m._cache.entries) == {"a.c"}  # type: ignore[union-attr]
    m.lookup("a.c")
    m.lookup("a.c")
    assert "a.c" in m._cache.entries  # type: ignore[union-attr]
    m.subscribe("a.c", 3)  # a literal pattern: exactly one entry goes
    assert "a.c" not in m._cache.entries  # type: ignore[union-attr]
    assert m.lookup("a.c") == {1, 3}


def test_lookup_many_with_and_without_cache() -> None:
    for cache_size in (0, 8):
        m = Matcher(cache_size=cache_size)
        m.subscribe("a.*", 1)
        m.subscribe("#", 2)
        topics = ["a.b", "c", "a.b", "a"]
        assert m.lookup_many(topics) == [{1, 2}, {2}, {1, 2}, {2}]
        assert m.lookup_many(iter(topics)) == [m.lookup(t) for t in topics]


@given(st.data())
def test_invalidation_finds_exactly_the_matching_topics(data: st.DataObject) -> None:
    """The cache's topic-trie walk agrees with the one-pattern matcher, for every dialect."""
    dialect = data.draw(st.sampled_from(DIALECTS))
    d = make_dialect(dialect)
    topics = data.draw(st.lists(TOPIC_STRATEGIES[dialect](), max_size=20, unique=True))
    pattern = data.draw(PATTERN_STRATEGIES[dialect]())
    tokens = d.parse_pattern(pattern)
    cache = ResultCache(1000, d.dollar_rule)
    cache.walk_budget = 10**6  # exactness here; the budget has its own test
    words_of = {}
    half = len(topics) // 2
    for i, topic in enumerate(topics):
        if i == half:
            cache._rotate()  # the first half into the older generation
        words = d.parse_topic(topic)
        cache.store(topic, words, frozenset(), cache._version)
        words_of[topic] = words
    for topic in topics[: half // 2]:
        cache.promote(topic, cache._version)  # back into the current one
    expected = {t for t, w in words_of.items() if w is not None and pattern_matches(tokens, w, d.dollar_rule)}
    found = cache._matching(tokens)
    assert found is not None
    assert set(found) == expected
    assert set(cache.entries) | set(cache.older) == set(topics)
    before = len(cache)
    cache.write(tokens, lambda: None)
    assert len(cache) == before - len(expected)
    assert not expected & (set(cache.entries) | set(cache.older))
    assert len(cache._trie) == sum(w is not None for t, w in words_of.items() if t not in expected)


def test_a_lookup_that_read_the_version_during_a_commit_cannot_store() -> None:
    """A miss that read the version while a write was committing may hold the old result.

    This is the interleaving that once slipped through (the version moved before the commit
    only): a lookup reads the version mid-commit, matches the old index, and stores after
    the writer releases the lock. Its store must be refused.
    """
    cache = ResultCache(16)
    read_during_commit: list[int] = []

    def commit() -> bool:
        read_during_commit.append(cache._version)  # what a concurrent lookup reads here
        return True

    assert cache.write(make_dialect("amqp").parse_pattern("a.b"), commit)
    cache.store("a.b", ["a", "b"], frozenset({"stale"}), read_during_commit[0])
    assert "a.b" not in cache.entries
    cache.store("a.b", ["a", "b"], frozenset({"fresh"}), cache._version)
    assert cache.entries["a.b"] == {"fresh"}


def test_a_failed_commit_still_moves_the_version() -> None:
    cache = ResultCache(16)
    before = cache._version

    def commit() -> bool:
        raise RuntimeError("index refused")

    with pytest.raises(RuntimeError):
        cache.write(make_dialect("amqp").parse_pattern("a.b"), commit)
    assert cache._version > before


def test_the_cache_switches_off_while_it_does_not_pay_and_on_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "WINDOW", 64)
    monkeypatch.setattr(_cache, "FIRST_BACKOFF", 100)
    m = Matcher(cache_size=1000)
    reference = Matcher("naive")
    for matcher in (m, reference):
        matcher.subscribe("a.*", 1)
        matcher.subscribe("#.z", 2)
    topics = [f"a.t{i}" for i in range(400)]
    for topic in topics[:32]:  # each topic twice: no hit at all; the first window only fills
        assert m.lookup(topic) == m.lookup(topic) == reference.lookup(topic)  # stored on the 2nd miss
    assert m.cache_info["size"] == 32
    for topic in topics[32:63]:
        assert m.lookup(topic) == m.lookup(topic) == reference.lookup(topic)
    assert m.cache_info["size"] == 63
    m.lookup("a.last")
    m.lookup("a.last")  # the window's 64th miss: nothing saved, the cache goes off
    assert m.cache_info["size"] == 0
    for topic in topics[100:140]:  # off for 100 lookups: nothing is stored, answers stay exact
        assert m.lookup(topic) == m.lookup(topic) == reference.lookup(topic)
    assert m.cache_info["size"] == 0
    for matcher in (m, reference):  # a write while off: nothing cached can go stale
        matcher.subscribe("a.t300", 3)
    for topic in topics[140:160]:  # the last 20 lookups of the 100
        m.lookup(topic)
    for _ in range(3):  # on again: stored and served from the cache
        assert m.lookup("a.t300") == reference.lookup("a.t300") == {1, 3}
    assert "a.t300" in m._cache.entries  # type: ignore[union-attr]
    for matcher in (m, reference):
        matcher.subscribe("*.t300", 4)
    assert m.lookup("a.t300") == reference.lookup("a.t300") == {1, 3, 4}


def test_a_cache_that_hits_stays_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "WINDOW", 64)
    m = Matcher(cache_size=1000)
    m.subscribe_many((f"#.w{i}.#", i) for i in range(50))  # lookups that cost something
    topics = [".".join(f"w{(i * 7 + k) % 60}" for k in range(8)) for i in range(100)]
    for _ in range(20):  # 100 topics over and over: misses at first, hits after
        for topic in topics:
            m.lookup(topic)
    assert m.cache_info["size"] == len(set(topics))


def test_a_store_is_charged_its_own_time_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache weighs what its hits save against its upkeep: a store paused by the cyclic
    # collector, or the rotation of a whole generation, charged to one window, switched a cache
    # off where it doubled the lookup rate.
    c = ResultCache(4)
    ticks = iter([0, 10**9])  # a store that took a second
    monkeypatch.setattr(_cache, "_clock", lambda: next(ticks))
    c.store("a.b", ["a", "b"], frozenset({1}), c._version)
    assert c.spent_ns == _cache.STORE_NS
    ticks = iter([0, 300])
    c.store("a.c", ["a", "c"], frozenset({1}), c._version)
    assert len(c.entries) == 2
    assert c.spent_ns == _cache.STORE_NS + 300
    # The next store rotates the generations (2 = max_size // 2): the rotation is not charged.
    ticks = iter([1_000, 1_100, 10**9, 10**9 + 250])
    c.spent_ns = 0
    c.store("a.d", ["a", "d"], frozenset({1}), c._version)
    assert set(c.older) == {"a.b", "a.c"}
    assert set(c.entries) == {"a.d"}
    assert c.spent_ns == 100 + 250


def test_a_new_cache_first_times_lookups_without_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "MEASURE", 64)  # conftest sets 0; the production setting is larger
    m = Matcher(cache_size=1000)
    m.subscribe("a.*", 1)
    for _ in range(21):  # 63 lookups of 3 topics: off, nothing stored
        for topic in ("a.x", "a.y", "a.z"):
            assert m.lookup(topic) == {1}
    assert m.cache_info["size"] == 0
    for _ in range(3):  # the 64th lookup ends the measuring; a.x misses again and is stored
        assert m.lookup("a.x") == {1}
    assert "a.x" in m._cache.entries  # type: ignore[union-attr]


@pytest.mark.parametrize("repeating", ["cheap", "dear"])
def test_the_cache_values_its_hits_at_what_lookups_cost_without_it(
    monkeypatch: pytest.MonkeyPatch, repeating: str
) -> None:
    # Half the lookups go to 10 topics over and over (they hit), half to topics never seen
    # before; a write's invalidation costs the cache 5 us every 10 lookups. When the repeating
    # topics are the cheap ones (200 ns, against 10 us), the hits save less than that upkeep
    # and the cache must go off; when they are the dear ones, it must stay on. Valuing a hit at
    # the mean *miss* (10 us in the first case) kept the cache on in both.
    monkeypatch.setattr(_cache, "WINDOW", 64)
    monkeypatch.setattr(_cache, "MEASURE", 64)
    now = [0]
    monkeypatch.setattr(_cache, "_clock", lambda: now[0])
    cost = {"cheap": 200, "dear": 10_000}

    def parse(topic: str) -> list[str]:
        return topic.split(".")

    def match(words: list[str]) -> frozenset[int]:
        now[0] += cost[words[0]]
        return frozenset()

    cache = ResultCache(1000)
    lookup, _ = _cache.cached_lookups(cache, parse, match, lambda t: match(parse(t)))
    once = "dear" if repeating == "cheap" else "cheap"
    rng = random.Random(7)
    for i in range(3000):
        lookup(f"{repeating}.{i % 10}" if rng.random() < 0.5 else f"{once}.{i}")
        if i % 10 == 0:
            cache.spent_ns += 5_000
    assert bool(cache.entries) == (repeating == "dear")


def test_a_store_creates_nothing_the_collector_tracks() -> None:
    """Stores and rotations keep the cache invisible to CPython's cyclic collector: its index
    holds only dicts of strings and integers (topicmatch._topic_trie). A node object per word,
    as before, made eight tracked objects per store and full collections a quarter of the
    time on the unmatched row of the workload matrix."""
    cache = ResultCache(4096)
    result = frozenset({"x"})
    topics = [f"site{i % 7}/dev{i}/temp" for i in range(3000)]
    gc.collect()
    before = len(gc.get_objects())
    for topic in topics:
        cache.store(topic, topic.split("/"), result, cache._version)  # rotates at 2048
    grown = len(gc.get_objects()) - before
    assert len(cache) == len(cache._trie) == 3000
    assert grown < 10, grown  # the index's three lists and such, not one per topic
