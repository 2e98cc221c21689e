"""The result cache: three sightings to a hit, exact invalidation on every write, admission that
stops where it does not pay and comes back, hot topics that outlive a burst."""

from __future__ import annotations

import gc
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, InvalidTopicError, Matcher, make_dialect
from topicmatch._engine.cache import (
    ADMIT_BACKOFF,
    ADMIT_WINDOW,
    INDEX_BUDGET,
    MAX_TOPIC_CHARS,
    MAX_TOPIC_WORDS,
    QUIET_CHUNK,
    ResultCache,
)
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


def _cache(m: Matcher) -> ResultCache:
    cache = m._cache
    assert cache is not None
    return cache


def _make_hot(m: Matcher, topics: list[str]) -> None:
    """Three lookups of each topic in a row: recorded, stored in warm, promoted into hot (so each
    topic repeats within admission's window, however many topics there are)."""
    for topic in topics:
        for _ in range(3):
            m.lookup(topic)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cache_never_serves_a_stale_result(dialect: str) -> None:
    cached = Matcher(dialect=dialect, cache_size=4)  # smaller than the topics: evictions too
    plain = Matcher("naive", dialect)
    rng = random.Random(1)
    pairs: set[tuple[str, int]] = set()
    for i in range(600):
        pattern, subscriber = rng.choice(PATTERNS[dialect]), rng.randrange(3)
        if i % 3 == 0:  # lookups between writes too: topics reach hot, and writes find them there
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
    assert _cache(cached).promotions or _cache(cached).hot  # the cache did serve


def test_a_topic_is_stored_at_its_second_lookup_and_hot_from_its_third() -> None:
    m = Matcher()
    m.subscribe("a.*", 1)
    cache = _cache(m)
    assert m.lookup("a.b") == {1}
    assert not cache.hot
    assert not cache.warm
    assert m.lookup("a.b") == {1}
    assert cache.warm == {"a.b": {1}}
    assert m.lookup("a.b") == {1}
    assert cache.hot == {"a.b": {1}}
    assert not cache.warm
    assert m.lookup("a.b") == {1}  # a hit: one dict access
    assert m.cache_info["size"] == 1


def test_invalidation_drops_the_hot_topics_a_write_matches_and_all_of_warm() -> None:
    m = Matcher(cache_size=100)
    m.subscribe("a.*", 1)
    _make_hot(m, ["a.b", "a.c", "b.b"])
    cache = _cache(m)
    m.lookup("a.d")
    m.lookup("a.d")
    assert set(cache.hot) == {"a.b", "a.c", "b.b"}
    assert set(cache.warm) == {"a.d"}
    m.subscribe("*.b", 2)  # matches a.b and b.b only
    assert set(cache.hot) == {"a.c"}
    assert not cache.warm  # not indexed: every write empties it
    m.subscribe("a.c", 3)  # a literal pattern: exactly one entry goes
    assert not cache.hot
    assert m.lookup("a.c") == {1, 3}
    assert m.lookup("b.b") == {2}


def test_lookup_many_with_and_without_cache() -> None:
    for cache_size in (0, 8):
        m = Matcher(cache_size=cache_size)
        m.subscribe("a.*", 1)
        m.subscribe("#", 2)
        topics = ["a.b", "c", "a.b", "a"]
        for _ in range(4):  # through the cache's three stages, then from it
            assert m.lookup_many(topics) == [{1, 2}, {2}, {1, 2}, {2}]
        assert m.lookup_many(iter(topics)) == [m.lookup(t) for t in topics]


@given(st.data())
def test_invalidation_finds_exactly_the_matching_topics(data: st.DataObject) -> None:
    """The cache's walk of its index agrees with the one-pattern matcher, in every dialect, for
    hot topics indexed by an earlier write and for topics promoted since."""
    dialect = data.draw(st.sampled_from(DIALECTS))
    d = make_dialect(dialect)
    topics = data.draw(st.lists(TOPIC_STRATEGIES[dialect](), max_size=20, unique=True))
    pattern = data.draw(PATTERN_STRATEGIES[dialect]())
    tokens = d.parse_pattern(pattern)
    cache = ResultCache(1000, 1 << 30, d.parse_topic, d.dollar_rule)
    cache.walk_budget = 10**6  # exactness here; the budget has its own test
    half = len(topics) // 2
    for i, topic in enumerate(topics):
        if i == half:  # the first half indexed by a write of a pattern that matches none of them
            cache.write((d.parse_pattern("no.such.topic" if dialect != "mqtt" else "no/such/topic"),), list)
        cache._store(topic, None, frozenset(), cache._version)
        cache.promote(topic, cache._version)
    words_of = {t: d.parse_topic(t) for t in topics}
    expected = {t for t, w in words_of.items() if w is not None and pattern_matches(tokens, w, d.dollar_rule)}
    expected &= set(cache.hot)  # the write above may have matched a few of the first half
    survivors = set(cache.hot) - expected
    cache.write((tokens,), lambda: None)
    assert set(cache.hot) == survivors
    assert len(cache._trie) == sum(words_of[t] is not None for t in survivors)


def test_a_lookup_that_read_the_version_during_a_commit_cannot_store_or_promote() -> None:
    """A miss that read the version while a write was committing may hold the old result.

    This is the interleaving that once slipped through (the version moved before the commit
    only): a lookup reads the version mid-commit, matches the old index, and stores after
    the writer releases the lock. Its store, and a promotion read the same way, must be refused.
    """
    d = make_dialect("amqp")
    cache = ResultCache(16, 1 << 20, d.parse_topic)
    read_during_commit: list[int] = []

    def commit() -> bool:
        read_during_commit.append(cache._version)  # what a concurrent lookup reads here
        return True

    assert cache.write((d.parse_pattern("a.b"),), commit)
    cache._store("a.b", None, frozenset({"stale"}), read_during_commit[0])
    assert "a.b" not in cache.warm
    cache._store("a.b", None, frozenset({"fresh"}), cache._version)
    assert cache.warm["a.b"] == {"fresh"}
    assert cache.write((d.parse_pattern("x"),), commit)  # empties warm
    cache._store("a.b", None, frozenset({"fresh"}), cache._version)
    cache.promote("a.b", read_during_commit[1])
    assert "a.b" not in cache.hot
    cache.promote("a.b", cache._version)
    assert cache.hot["a.b"] == {"fresh"}


def test_a_failed_commit_still_moves_the_version() -> None:
    d = make_dialect("amqp")
    cache = ResultCache(16, 1 << 20, d.parse_topic)
    before = cache._version

    def commit() -> bool:
        raise RuntimeError("index refused")

    with pytest.raises(RuntimeError):
        cache.write((d.parse_pattern("a.b"),), commit)
    assert cache._version > before


def test_admission_stops_on_topics_seen_once_and_comes_back_after_its_backoff() -> None:
    m = Matcher()
    m.subscribe("a.*", 1)
    cache = _cache(m)
    topics = (f"a.t{i}" for i in range(10**6))
    for _ in range(ADMIT_WINDOW):  # nothing repeats: nothing stored, so the stores did not pay
        assert m.lookup(next(topics)) == {1}
    assert not cache.admission.on
    recorded = len(cache.seen)
    assert recorded == ADMIT_WINDOW
    # Nothing is cached: the wait is counted in quiet, one per miss, a chunk at a time.
    assert (cache.quiet, cache.admission.left) == (QUIET_CHUNK - 1, 1)
    for _ in range(ADMIT_BACKOFF - 1):  # off: a lookup records nothing
        assert m.lookup(next(topics)) == {1}
    assert len(cache.seen) == recorded
    assert (cache.quiet, cache.admission.left) == (0, 1)
    assert not cache.admission.on
    m.lookup(next(topics))  # the wait is over
    assert cache.admission.on
    m.lookup("a.again")
    m.lookup("a.again")
    assert "a.again" in cache.warm


def test_a_wait_has_its_misses_whether_quiet_counts_them_or_not() -> None:
    # A store that lands in warm during a quiet wait (a reader that read admission on before
    # the wait began, done here by hand) hands the rest of the wait back to the governor: warm
    # is probed again, and the wait still ends after exactly ADMIT_BACKOFF misses.
    m = Matcher()
    m.subscribe("a.*", 1)
    cache = _cache(m)
    topics = (f"a.t{i}" for i in range(10**6))
    for _ in range(ADMIT_WINDOW):
        m.lookup(next(topics))
    assert not cache.admission.on
    for _ in range(3 * QUIET_CHUNK + 7):
        m.lookup(next(topics))
    assert cache.quiet > 0
    cache._store("a.late", None, frozenset({1}), cache._version)
    waited = 3 * QUIET_CHUNK + 7
    for _ in range(QUIET_CHUNK):  # the chunk under way ends: from then on, misses probe warm
        m.lookup(next(topics))
    waited += QUIET_CHUNK
    assert m.lookup("a.late") == {1}  # a hit in warm, promoted, while admission still waits
    assert "a.late" in cache.hot
    assert (cache.quiet, cache.admission.on) == (0, False)
    while not cache.admission.on:
        m.lookup(next(topics))
        waited += 1
        assert waited <= ADMIT_BACKOFF
    assert waited == ADMIT_BACKOFF


def test_a_write_that_leaves_nothing_cached_hands_the_wait_to_quiet() -> None:
    # Under churn, writes empty warm while admission waits: the write hands the rest of the wait
    # to quiet, as the end of a window does when nothing is cached, and the wait still ends after
    # exactly ADMIT_BACKOFF misses.
    m = Matcher()
    m.subscribe("a.*", 1)
    cache = _cache(m)
    topics = (f"a.t{i}" for i in range(10**6))
    for window in range(2):  # each stores a topic seen twice, never promoted: the second fails
        m.lookup(f"a.twice{window}")
        m.lookup(f"a.twice{window}")
        for _ in range(ADMIT_WINDOW - 2):
            m.lookup(next(topics))
    assert not cache.admission.on
    assert cache.warm  # the wait began with topics in warm: its misses probe it
    waited = 0
    for _ in range(10):
        m.lookup(next(topics))
        waited += 1
    assert cache.quiet == 0
    m.subscribe("b.c", 2)  # empties warm: nothing is cached
    assert not cache.warm
    assert cache.quiet > 0
    while not cache.admission.on:
        m.lookup(next(topics))
        waited += 1
        assert waited <= ADMIT_BACKOFF
    assert waited == ADMIT_BACKOFF


def test_a_bulk_write_is_one_change_that_forgets_what_each_pattern_matches() -> None:
    m = Matcher()
    m.subscribe_many([("a.*", 1), ("b.*", 2)])
    cache = _cache(m)
    _make_hot(m, ["a.x", "b.y", "c.z"])
    before = cache._version
    m.subscribe_many([("a.x", 3), ("b.#", 4)])
    assert cache._version == before + 2  # one change for the whole call, not one per pattern
    assert "c.z" in cache.hot  # no pattern of the write matches it
    assert "a.x" not in cache.hot
    assert "b.y" not in cache.hot
    assert m.lookup("a.x") == {1, 3}
    assert m.lookup("b.y") == {2, 4}


def test_admission_stops_on_topics_seen_twice() -> None:
    # Each topic twice: every second lookup stores, and nothing is ever looked up a third time.
    # The first window's stores are given the next window to come back; they do not.
    m = Matcher()
    m.subscribe("a.*", 1)
    cache = _cache(m)
    for i in range(ADMIT_WINDOW // 2):
        m.lookup(f"a.t{i}")
        m.lookup(f"a.t{i}")
    assert cache.admission.on
    for i in range(ADMIT_WINDOW // 2, ADMIT_WINDOW):
        m.lookup(f"a.t{i}")
        m.lookup(f"a.t{i}")
    assert not cache.admission.on
    assert not cache.hot


def test_admission_stays_on_while_its_stores_come_back() -> None:
    # New topics keep arriving, each looked up three times close together: every window has
    # stores, and promotions of what it stored.
    m = Matcher()
    m.subscribe_many([("a.*", 1), ("#.z", 2)])
    cache = _cache(m)
    for block in range(3 * ADMIT_WINDOW // 100):
        topics = [f"a.b{block}t{i}" for i in range(50)]
        for _ in range(3):
            for topic in topics:
                assert m.lookup(topic) == {1}
        for i in range(50):  # and as many seen once
            m.lookup(f"a.once{block}.{i}")
        assert cache.admission.on, block
    assert cache.admission.backoff == ADMIT_BACKOFF  # no window failed


def test_hot_topics_are_served_through_a_burst_of_new_ones() -> None:
    # A broker's mix: hot subjects, a burst of subjects never seen (several windows: admission
    # goes off), the hot ones again. The burst stores nothing, so the hot topics are still in
    # the cache, and served from it at once after the burst.
    m = Matcher(dialect="nats")
    m.subscribe_many([("svc.*.req", 1), ("svc.>", 2)])
    cache = _cache(m)
    hot = [f"svc.h{i}.req" for i in range(1000)]
    _make_hot(m, hot)
    assert set(cache.hot) == set(hot)
    for i in range(4 * ADMIT_WINDOW):
        assert m.lookup(f"svc.new{i}.req") == {1, 2}
    assert not cache.admission.on
    assert cache.quiet == 0  # hot holds topics: every miss probes it
    assert set(cache.hot) == set(hot)
    walked = cache.admission.left
    for topic in hot:
        assert m.lookup(topic) == {1, 2}
    assert cache.admission.left == walked  # no miss: every one was a hit


class _Topic(str):
    pass


def test_long_topics_and_str_subclasses_are_never_stored() -> None:
    """Recorded like any miss (the record tests nothing), refused by the store: a topic longer
    than the limits, and a str subclass, which may hash or compare unlike its value."""
    m = Matcher("default", "mqtt")  # an AMQP topic cannot pass 255 bytes: no topic too long
    m.subscribe("#", 1)
    cache = _cache(m)
    refused = ["/".join(["w"] * (MAX_TOPIC_WORDS + 1)), "x" * (MAX_TOPIC_CHARS + 1), _Topic("a/b")]
    for _ in range(5):
        for topic in refused:
            assert m.lookup(topic) == {1}
    assert len(cache) == 0
    at_the_limits = ["/".join(["w"] * MAX_TOPIC_WORDS), "x" * MAX_TOPIC_CHARS, "a/b"]
    _make_hot(m, at_the_limits)
    assert set(cache.hot) == set(at_the_limits)


def test_a_burst_of_topics_seen_twice_leaves_hot_alone() -> None:
    m = Matcher(cache_size=512)  # warm holds 256: the burst fills and empties it
    m.subscribe("a.*", 1)
    cache = _cache(m)
    hot = [f"a.h{i}" for i in range(100)]
    _make_hot(m, hot)
    for i in range(1000):
        m.lookup(f"a.twice{i}")
        m.lookup(f"a.twice{i}")
    assert set(cache.hot) == set(hot)
    assert len(cache.warm) <= 256


def test_a_full_hot_generation_becomes_warm_and_a_full_warm_one_goes() -> None:
    m = Matcher(cache_size=8)  # 4 hot, 4 warm
    m.subscribe("a.*", 1)
    cache = _cache(m)
    first = [f"a.{i}" for i in range(4)]
    _make_hot(m, first)
    assert set(cache.hot) == set(first)
    _make_hot(m, ["a.next"])  # its promotion finds hot full: hot becomes warm
    assert set(cache.hot) == {"a.next"}
    assert set(cache.warm) == set(first)
    assert m.lookup("a.0") == {1}  # still hot: back by one promotion
    assert set(cache.hot) == {"a.next", "a.0"}
    for i in range(4):
        m.lookup(f"a.w{i}")
        m.lookup(f"a.w{i}")  # stored; a.w0 fills warm, and a.w1 finds it full: it starts over
    assert set(cache.warm) == {"a.w1", "a.w2", "a.w3"}


def test_a_write_indexes_the_topics_promoted_since_the_last_write_within_a_budget() -> None:
    m = Matcher(dialect="mqtt")
    m.subscribe("a/+", 1)
    cache = _cache(m)
    _make_hot(m, [f"a/{i}" for i in range(10)])
    assert len(cache._trie) == 0  # promotion indexes nothing: traffic without writes pays nothing
    m.subscribe("a/3", 2)
    assert len(cache._trie) == 9
    assert "a/3" not in cache.hot
    _make_hot(m, [f"b/{i}" for i in range(INDEX_BUDGET + 1)])
    assert len(cache.hot) == 9 + INDEX_BUDGET + 1
    m.subscribe("c/d", 3)  # more than the budget to index: hot is emptied instead
    assert not cache.hot
    assert len(cache._trie) == 0
    assert m.lookup("a/5") == {1}


def test_results_shared_by_many_topics_are_charged_once() -> None:
    # A fan-out: every topic's result is the one set of one node (1 MB). Charged once per
    # generation (the warm one keeps its charge until it is emptied), a thousand topics fit.
    m = Matcher(dialect="mqtt", cache_bytes=24 * 1024 * 1024)  # the result cache gets a third
    m.subscribe_many(("fleet/+/status", i) for i in range(20_000))
    topics = [f"fleet/v{i}/status" for i in range(1000)]
    _make_hot(m, topics)
    cache = _cache(m)
    assert set(cache.hot) == set(topics)
    assert cache.bytes < 3 * 1024 * 1024


def test_stores_promotions_and_indexing_create_nothing_the_collector_tracks() -> None:
    """The cache stays invisible to CPython's cyclic collector: its index holds only dicts of
    strings and integers (topicmatch._engine.topic_trie), and its bookkeeping dicts ints. A node
    object per word, as before, made eight tracked objects per store and full collections a
    quarter of the time on the unmatched row of the workload matrix."""
    m = Matcher(dialect="mqtt")
    m.subscribe("site0/+/temp", 1)
    topics = [f"site{i % 7}/dev{i}/temp" for i in range(1000)]
    for topic in topics:
        m.lookup(topic)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(2):  # stored, then promoted
        for topic in topics:
            m.lookup(topic)
    m.subscribe("other/x", 2)  # indexes the thousand
    grown = len(gc.get_objects()) - before
    cache = _cache(m)
    assert len(cache.hot) == len(cache._trie) == 1000
    assert grown < 10, grown  # the index's lists and such, not one per topic


@pytest.mark.parametrize("stage", ["empty", "warm", "hot"])
def test_an_unhashable_topic_gets_the_typed_error_whatever_the_cache_holds(stage: str) -> None:
    # Each generation is probed only when it holds something: the dialect's error must come
    # whichever probe meets the unhashable topic first, or none.
    m = Matcher()
    m.subscribe("a.*", 1)
    for _ in range({"empty": 0, "warm": 2, "hot": 3}[stage]):
        m.lookup("a.b")
    with pytest.raises(InvalidTopicError, match="must be a str"):
        m.lookup(["a", "b"])  # type: ignore[type-var]
