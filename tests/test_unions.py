"""The default's memo of unions (``_walk.Unions``): exact through writes, bounded, switching
itself off where it does not pay, and no work for the cyclic collector."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, ConfigurationError, Matcher, MatcherSnapshot, _walk
from topicmatch._trie import TrieIndex
from topicmatch._walk import UNION_SLOTS, UNION_WINDOW, Unions

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


def _unions(m: Matcher | MatcherSnapshot) -> Unions:
    index = m._index
    assert isinstance(index, TrieIndex)
    assert index._unions is not None
    return index._unions


def _wide(subscribers: int = 100, **options: int) -> Matcher:
    """``x/+`` held by ``subscribers`` clients, so that ``x/<word>`` unites a set of that many
    with the set of ``+/<word>``: a union the memo keeps. ``options`` go to the Matcher."""
    m = Matcher(dialect="mqtt", cache_size=0, **options)  # type: ignore[arg-type]
    m.subscribe_many([("x/+", f"c{i}") for i in range(subscribers)])
    index = m._index
    assert isinstance(index, TrieIndex)
    index._use_dfa = False  # a DFA would serve the repeated lookups: these tests are the walk's
    return m


@given(st.data())
def test_the_memo_equals_the_reference_through_writes(data: st.DataObject) -> None:
    # Every union of two sets or more goes through the memo here (UNION_MIN 0), and topics
    # repeat between writes, so memoised unions are served after the sets they came from changed.
    dialect = data.draw(st.sampled_from(DIALECTS))
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
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_walk, "UNION_MIN", 0)
        m = Matcher(dialect=dialect, cache_size=0)
        pairs: set[tuple[str, int]] = set()
        for op, text, subscriber in ops:
            if op == "sub":
                m.subscribe(text, subscriber)
                pairs.add((text, subscriber))
            elif op == "unsub":
                m.unsubscribe(text, subscriber)
                pairs.discard((text, subscriber))
            else:
                expected = {s for p, s in pairs if MATCHES[dialect](p, text)}
                for _ in range(2):  # the second lookup of an unchanged state is a hit
                    assert m.lookup(text) == expected, (text, sorted(pairs))


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
    assert not unions.off  # it paid, and stayed on
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
    assert not _unions(m).off
    assert grown < 50, grown


def test_the_memo_switches_itself_off_where_topics_do_not_repeat() -> None:
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(2 * UNION_WINDOW)])
    for i in range(UNION_WINDOW):  # each topic once: nothing to reuse
        m.lookup(f"x/w{i}")
    unions = _unions(m)
    assert unions.off > 0
    assert not any(unions.slots)
    assert unions.bytes == 0
    off = unions.off
    m.lookup(f"x/w{UNION_WINDOW}")
    assert unions.off == off - 1  # counted down, not probed


def test_the_memo_steps_out_of_the_walk_and_the_trie_brings_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the trie counts its lookups (the default's trie), a memo that switched
    # itself off is not even called: the walks unite with union_of until the trie's count of
    # the wait is over. A snapshot made meanwhile goes through the memo, which counts for it.
    monkeypatch.setattr(_walk, "UNION_BACKOFF", 100)  # read when the memo is made
    m = Matcher(dialect="mqtt", cache_size=0)
    index = m._index
    assert isinstance(index, TrieIndex)
    index.dfa_settings = replace(index.dfa_settings, quiet_lookups=10**9)  # lookups walk
    m.subscribe_many([("x/+", f"c{i}") for i in range(100)])
    m.subscribe_many([(f"+/w{i}", i) for i in range(2 * UNION_WINDOW)])
    unions = _unions(m)
    for i in range(UNION_WINDOW):  # each topic once: nothing to reuse
        m.lookup(f"x/w{i}")
    assert index._union is _walk.union_of
    assert unions.off == 100
    snapshot = m.snapshot()
    assert snapshot._index._union == unions.of  # type: ignore[attr-defined]
    for i in range(98):  # the lookup that judged counts as the first of the wait
        assert m.lookup(f"x/w{UNION_WINDOW + i}") == {f"c{k}" for k in range(100)} | {UNION_WINDOW + i}
    assert index._union is _walk.union_of
    assert unions.off == 100  # not counted down by the walks: they do not call it
    m.lookup("x/w0")
    assert index._union == unions.of
    assert unions.off == 0


def test_the_memo_stays_on_where_topics_repeat() -> None:
    m = _wide()
    m.subscribe_many([(f"+/w{i}", i) for i in range(8)])
    for k in range(3 * UNION_WINDOW):
        m.lookup(f"x/w{k % 8}")
    assert _unions(m).off == 0


def test_a_snapshot_shares_the_memo() -> None:
    m = _wide()
    assert _unions(m.snapshot()) is _unions(m)


def test_readers_sharing_the_memo_see_only_states_that_existed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A writer swaps one subscriber of x/+ for another and back, so that the sets a lookup of
    # x/b unites keep their sizes and change their contents; readers share the memo meanwhile.
    # Every union they get must be one of the states (a memo keyed by anything less than
    # the sets themselves serves the other state's union). Bounded: 2,000 swaps, 120 s. No
    # judgement during the test: the memo stays on and counts every hit.
    monkeypatch.setattr(_walk, "UNION_WINDOW", 10**9)
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


def test_the_memo_bound_is_set_through_the_matcher() -> None:
    assert _unions(Matcher()).max_bytes == _walk.UNION_BYTES
    assert _unions(Matcher(union_bytes=1 << 20)).max_bytes == 1 << 20
    m = _wide()
    m.subscribe("+/b", "solo")
    nothing = _wide(union_bytes=0)
    nothing.subscribe("+/b", "solo")
    for _ in range(3):
        assert nothing.lookup("x/b") == m.lookup("x/b")
    assert not any(_unions(nothing).slots)  # 0 keeps nothing
    assert any(_unions(m).slots)
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ConfigurationError, match="union_bytes"):
            Matcher(union_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="union_bytes"):
        Matcher("trie", union_bytes=1 << 20)
