"""The trie's one count of lookups and its alarms (``TrieIndex.after``), and the result cache
that steps out of the lookup path while it is off and comes back when the trie calls."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from topicmatch import Matcher, _cache
from topicmatch._trie import QUIET_LOOKUPS, TrieIndex


def _walking(**options: int) -> tuple[Matcher, TrieIndex]:
    """A default matcher whose lookups all walk the trie: its DFA is never due."""
    m = Matcher(**options)  # type: ignore[arg-type]
    index = m._index
    assert isinstance(index, TrieIndex)
    index.dfa_settings = replace(index.dfa_settings, quiet_lookups=10**9)
    m.subscribe("a.*", 1)
    m.subscribe("#.z", 2)
    return m, index


def test_an_alarm_fires_once_after_its_count_of_lookups() -> None:
    m, index = _walking(cache_size=0)
    fired: list[int] = []
    done = [0]  # lookups made so far, read by the alarm when it fires
    assert index.after(10, lambda: fired.append(done[0]))
    while not fired and done[0] < 100:
        done[0] += 1
        assert m.lookup(f"a.t{done[0]}") == {1}
    assert fired == [10]
    for k in range(100):  # popped when it fired: never again
        m.lookup(f"a.u{k}")
    assert fired == [10]


def test_writes_and_other_alarms_do_not_move_an_alarm() -> None:
    m, index = _walking(cache_size=0)
    fired: list[tuple[str, int]] = []
    done = [0]
    index.after(30, lambda: fired.append(("late", done[0])))
    for k in range(1, 61):
        done[0] = k
        if k == 5:
            index.after(10, lambda: fired.append(("early", done[0])))
        if k % 7 == 0:
            m.subscribe(f"w.{k}", k)  # each write makes the next lookup settle
        m.lookup(f"a.t{k}")
    assert fired == [("early", 14), ("late", 30)]


def test_no_alarm_where_the_trie_counts_nothing() -> None:
    trie = Matcher("trie")._index  # no DFA to schedule: it counts nothing
    assert not trie.after(1, lambda: None)


def test_lookups_the_dfa_serves_count_too() -> None:
    m = Matcher(cache_size=0)
    m.subscribe("a.b", 1)
    index = m._index
    assert isinstance(index, TrieIndex)
    for _ in range(QUIET_LOOKUPS + 1):  # the version lasts: its DFA is made, and serves
        m.lookup("a.b")
    dfa = index._dfa
    assert dfa is not None
    fired: list[int] = []
    assert index.after(10, lambda: fired.append(1))
    for _ in range(9):
        assert m.lookup("a.b") == {1}
    assert not fired
    m.lookup("a.b")
    assert fired == [1]
    assert index._dfa is dfa  # served all along


def test_a_cache_that_does_not_pay_steps_out_and_the_trie_brings_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_cache, "WINDOW", 64)
    monkeypatch.setattr(_cache, "FIRST_BACKOFF", 256)
    m, index = _walking(cache_size=1000)
    reference = Matcher("naive")
    reference.subscribe("a.*", 1)
    reference.subscribe("#.z", 2)
    cached = m.lookup  # the cache's own lookup, kept by a caller
    topics = (f"a.t{i}" for i in itertools.count())
    for _ in range(1000):  # every topic new: no hit; after a window that fills, one that judges
        topic = next(topics)
        assert m.lookup(topic) == reference.lookup(topic)
        if m.lookup is not cached:
            break
    assert m.lookup is not cached
    assert index.front is None
    assert m.cache_info["size"] == 0
    bare = m.lookup  # what lookups are while the cache is out: the trie's reader
    out = 0
    while m.lookup is bare and out < 1000:  # the trie counts the wait, whoever looks up
        topic = next(topics)
        assert (cached if out % 2 else bare)(topic) == reference.lookup(topic)
        out += 1
    assert out == 256 - 64  # the backoff, less the last window, which the cache counts itself
    assert m.lookup is cached
    assert index.front is cached
    for _ in range(3 * 64):  # the kept reader is sent back to the cache, which stores and serves
        assert bare("a.hot") == {1}
    assert m._cache is not None
    assert "a.hot" in m._cache.entries
    m.subscribe("*.hot", 3)
    assert bare("a.hot") == cached("a.hot") == {1, 3}


def test_a_cache_steps_out_while_a_dfa_serves_and_its_lookups_bring_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_cache, "WINDOW", 64)
    monkeypatch.setattr(_cache, "FIRST_BACKOFF", 256)
    m = Matcher(cache_size=1000)
    m.subscribe("a.*", 1)
    index = m._index
    assert isinstance(index, TrieIndex)
    cached = m.lookup
    done = 0
    while m.lookup is cached and done < 1000:  # every topic new: the cache goes off
        assert m.lookup(f"a.t{done}") == {1}
        done += 1
    dfa = index._dfa
    assert dfa is not None  # made once the version lasted; it serves these lookups
    out = 0
    while m.lookup is not cached and out < 1000:
        assert m.lookup(f"a.u{out}") == {1}
        out += 1
    assert out == 256 - 64
    assert index._dfa is dfa
    assert not dfa.retired
