"""The default's memo of unions (``_walk.Unions``): exact through writes, bounded, asked only
for unions that may be big, switching itself off where it does not pay, and no work for the
cyclic collector."""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import (
    DEFAULT_CACHE_BYTES,
    DIALECTS,
    ConfigurationError,
    Matcher,
    MatcherSnapshot,
    make_dialect,
)
from topicmatch._engine.trie import TrieIndex
from topicmatch._engine.walk import (
    UNION_BACKOFF,
    UNION_MISS_SHARE,
    UNION_PAYS,
    UNION_SLOTS,
    UNION_WINDOW,
    Unions,
)

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


def _unions(m: Matcher | MatcherSnapshot) -> Unions:
    index = m._index
    assert isinstance(index, TrieIndex)
    assert index._memo is not None
    return index._memo


def _wide(subscribers: int = 100, **options: int) -> Matcher:
    """``x/+`` held by ``subscribers`` clients, so that ``x/<word>`` unites a set of that many
    with the set of ``+/<word>``: a union the memo keeps. ``options`` go to the Matcher."""
    m = Matcher(dialect="mqtt", cache_size=0, **options)  # type: ignore[arg-type, type-var]
    m.subscribe_many([("x/+", f"c{i}") for i in range(subscribers)])
    return m


@given(st.data())
def test_the_memo_equals_the_reference_through_writes(data: st.DataObject) -> None:
    # A memo that is asked for every union of two sets or more and keeps every one, and topics
    # that repeat between writes: memoised unions are served after the sets they came from
    # changed.
    dialect = data.draw(st.sampled_from(DIALECTS))
    d = make_dialect(dialect)
    topics = data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=6))
    ops = data.draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("sub"), PATTERNS[dialect](), st.integers(0, 5)),
                st.tuples(st.just("unsub"), PATTERNS[dialect](), st.integers(0, 5)),
                st.tuples(st.just("look"), st.sampled_from(topics), st.just(0)),
            ),
            max_size=40,
        )
    )
    memo = Unions(1 << 20, keep=0, gate=0)
    index = TrieIndex(d.dollar_rule, memo)
    pairs: set[tuple[str, int]] = set()
    for op, text, subscriber in ops:
        if op == "sub":
            index.add(text, d.parse_pattern(text), subscriber)
            pairs.add((text, subscriber))
        elif op == "unsub":
            index.remove(text, d.parse_pattern(text), subscriber)
            pairs.discard((text, subscriber))
        else:
            words = d.parse_topic(text)
            expected = {s for p, s in pairs if MATCHES[dialect](p, text)}
            for _ in range(2):  # the second lookup of an unchanged state is a hit
                assert (index.match(words) if words is not None else set()) == expected, (text, pairs)


def test_a_memoised_union_follows_every_write() -> None:
    m = _wide()
    m.subscribe("+/b", "solo")
    expected = {f"c{i}" for i in range(100)} | {"solo"}
    assert m.lookup("x/b") == expected
    assert m.lookup("x/b") == expected
    assert _unions(m).saved == len(expected)  # the second lookup was served by the memo
    m.subscribe("x/+", "new")
    expected |= {"new"}
    assert m.lookup("x/b") == expected
    assert m.lookup("x/b") == expected
    m.unsubscribe("x/+", "c0")  # sets of the same sizes as before, not the same sets
    m.subscribe("x/+", "c0'")
    expected = expected - {"c0"} | {"c0'"}
    assert m.lookup("x/b") == expected
    m.unsubscribe("+/b", "solo")
    assert m.lookup("x/b") == expected - {"solo"}


def test_small_unions_are_not_kept() -> None:
    m = Matcher(dialect="mqtt", cache_size=0)
    m.subscribe_many([("x/+", 1), ("+/b", 2)])
    assert m.lookup("x/b") == {1, 2}
    assert not any(_unions(m).slots)


def test_the_union_memo_keeps_within_its_byte_bound() -> None:
    # Thousands of different unions of 101 subscribers, each looked up twice (so that the memo
    # pays and stays on), against a bound of 1 MiB: what the memo keeps, traced, stays within it.
    bound = 1 << 20
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(4000)])
    unions = _unions(m)
    unions.max_bytes = bound
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(4000):
            m.lookup(f"x/w{i}")
            m.lookup(f"x/w{i}")
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert unions.governor.on  # it paid, and stayed on
    assert unions.bytes > bound // 2  # it filled up to its bound...
    assert unions.bytes <= bound  # ...by its own charge,
    assert kept <= bound  # and by what tracemalloc saw it keep.


def test_the_union_memo_adds_no_work_for_the_cyclic_collector() -> None:
    # Once its slots are taken, a store frees the entry it replaces: lookups that make and keep
    # new unions leave the collector's count of new container objects where it was. (A memo
    # that grew and was cleared when full added three per store, and collections of a large
    # trie took a third of a lookup's time under subscription churn.)
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(10 * UNION_SLOTS)])
    for i in range(8 * UNION_SLOTS):  # slots are chosen by hash: this takes nearly all
        m.lookup(f"x/w{i}")
        m.lookup(f"x/w{i}")
    gc.collect()
    gc.disable()
    try:
        start = gc.get_count()[0]
        for i in range(8 * UNION_SLOTS, 10 * UNION_SLOTS):
            m.lookup(f"x/w{i}")
            m.lookup(f"x/w{i}")
        grown = gc.get_count()[0] - start
    finally:
        gc.enable()
    assert _unions(m).governor.on
    assert grown < 50, grown


def test_the_memo_switches_itself_off_where_topics_do_not_repeat_and_comes_back() -> None:
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(UNION_WINDOW + UNION_BACKOFF + 2)])
    unions = _unions(m)
    governor = unions.governor
    for i in range(UNION_WINDOW):  # each topic once: nothing to reuse
        m.lookup(f"x/w{i}")
    assert not governor.on
    assert not any(unions.slots)
    assert unions.bytes == 0
    for i in range(UNION_WINDOW, UNION_WINDOW + UNION_BACKOFF - 1):  # counted down, not probed
        assert m.lookup(f"x/w{i}") == {f"c{k}" for k in range(100)} | {i}
    assert not governor.on
    assert not any(unions.slots)
    m.lookup("x/w0")  # the wait is over: probed again, and kept
    assert governor.on
    assert any(unions.slots)


def test_the_memo_switches_itself_off_where_big_unions_rarely_come_again() -> None:
    # Unions of 2,001 subscribers, one topic in 64 a repeat: the hits save more than UNION_PAYS
    # insertions per probe, but not also one in UNION_MISS_SHARE of what the misses united
    # (the million-subscription table's first lookups: subs-1M in docs/performance.md).
    m = _wide(subscribers=2000)
    m.subscribe_many([(f"+/w{i}", i) for i in range(UNION_WINDOW)])
    unions = _unions(m)
    for i in range(UNION_WINDOW - 1):
        m.lookup("x/w0" if i % 64 == 0 else f"x/w{i}")
    assert unions.governor.on
    assert unions.saved >= UNION_PAYS * UNION_WINDOW  # enough by the hits alone
    assert unions.saved < UNION_PAYS * UNION_WINDOW + unions.missed // UNION_MISS_SHARE
    m.lookup(f"x/w{UNION_WINDOW - 1}")  # the window's last probe: judged
    assert not unions.governor.on
    assert not any(unions.slots)


def test_small_unions_do_not_ask_the_memo() -> None:
    # A few small sets (most lookups of most tables): united at once, no probe, no count.
    m = Matcher(dialect="mqtt", cache_size=0)
    m.subscribe_many([("x/+", 1), ("+/b", 2), ("x/#", 3)])
    governor = _unions(m).governor
    left = governor.left
    for _ in range(10):
        assert m.lookup("x/b") == {1, 2, 3}
    assert governor.left == left


def test_the_memo_stays_on_where_topics_repeat() -> None:
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(8)])
    for k in range(3 * UNION_WINDOW):
        m.lookup(f"x/w{k % 8}")
    assert _unions(m).governor.on
    assert _unions(m).governor.backoff == UNION_BACKOFF  # no window failed


def test_a_snapshot_shares_the_memo() -> None:
    m = _wide()
    assert _unions(m.snapshot()) is _unions(m)


def test_readers_sharing_the_memo_see_only_states_that_existed() -> None:
    # A writer swaps one subscriber of x/+ for another and back, so that the sets a lookup of
    # x/b unites keep their sizes and change their contents; readers share the memo meanwhile.
    # Every union they get must be one of the states (a memo keyed by anything less than
    # the sets themselves serves the other state's union). Bounded: 2,000 swaps, 120 s. The
    # readers' hits keep the memo on.
    m = _wide()
    m.subscribe("+/b", "solo")
    base = {f"c{i}" for i in range(1, 100)} | {"solo"}
    states = {frozenset(base | {"c0"}), frozenset(base), frozenset(base | {"c0'"})}  # between: base
    stop = threading.Event()
    seen: set[frozenset[object]] = set()
    errors: list[BaseException] = []
    together = threading.Barrier(3, timeout=60)  # no thread runs alone through its part

    def writer() -> None:
        try:
            together.wait()
            for _ in range(1_000):
                m.unsubscribe("x/+", "c0")
                m.subscribe("x/+", "c0'")
                m.unsubscribe("x/+", "c0'")
                m.subscribe("x/+", "c0")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            stop.set()

    def reader() -> None:
        try:
            together.wait()
            while not stop.is_set():
                seen.add(m.lookup("x/b"))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=f) for f in (writer, reader, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread did not finish"
    assert not errors
    assert _unions(m).saved > 0  # the readers were served by the memo
    assert seen <= states, [sorted(map(str, s - frozenset(base))) for s in seen - states]


def test_the_memo_bound_is_a_third_of_cache_bytes() -> None:
    assert _unions(Matcher()).max_bytes == DEFAULT_CACHE_BYTES // 3
    assert _unions(Matcher(cache_bytes=3 << 20)).max_bytes == 1 << 20
    m = _wide()
    m.subscribe("+/b", "solo")
    nothing = _wide(cache_bytes=0)
    nothing.subscribe("+/b", "solo")
    for _ in range(3):
        assert nothing.lookup("x/b") == m.lookup("x/b")
    assert not any(_unions(nothing).slots)  # 0 keeps nothing
    assert any(_unions(m).slots)
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ConfigurationError, match="cache_bytes"):
            Matcher(cache_bytes=bad)  # type: ignore[type-var]
    with pytest.raises(ConfigurationError, match="cache_bytes"):
        Matcher("trie", cache_bytes=1 << 20)
