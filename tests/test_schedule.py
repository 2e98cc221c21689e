"""The trie's one count of lookups and its alarms (``TrieIndex.after``)."""

from __future__ import annotations

from dataclasses import replace

from topicmatch import Matcher
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
