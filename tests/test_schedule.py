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
    m = Matcher(cache_size=0)
    m.subscribe("a.b", 1)
    for _ in range(QUIET_LOOKUPS + 1):
        m.lookup("a.b")
    index = m._index
    assert isinstance(index, TrieIndex)
    assert index._dfa is not None  # a DFA serves: lookups do not walk, nothing would count
    assert not index.after(1, lambda: None)


def test_a_new_dfa_fires_every_alarm() -> None:
    m = Matcher(cache_size=0)
    m.subscribe("a.b", 1)
    fired: list[int] = []
    index = m._index
    assert isinstance(index, TrieIndex)
    assert index.after(10**6, lambda: fired.append(1))
    for _ in range(QUIET_LOOKUPS + 1):  # the version lasts: its DFA is made
        m.lookup("a.b")
    assert index._dfa is not None
    assert fired == [1]


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


def test_a_cache_stays_in_the_path_while_a_dfa_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    # The trie does not count lookups its DFA serves: the cache counts its wait itself.
    monkeypatch.setattr(_cache, "WINDOW", 64)
    m = Matcher(cache_size=1000)
    m.subscribe("a.*", 1)
    cached = m.lookup
    for i in range(2000):
        assert m.lookup(f"a.t{i}") == {1}
    index = m._index
    assert isinstance(index, TrieIndex)
    assert index._dfa is not None
    assert not index._dfa.retired
    assert m.lookup is cached
    assert not index._alarms
