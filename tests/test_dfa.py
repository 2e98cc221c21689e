"""The default's DFA for batch walks: exact whatever its budget, one per version of the trie."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, Dialect, Matcher, make_dialect
from topicmatch._engine.dfa import DFA
from topicmatch._engine.trie import TrieIndex
from topicmatch._engine.walk import step

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


def _draw_trie(data: st.DataObject) -> tuple[str, Dialect, list[tuple[str, int]], list[str], TrieIndex]:
    """A dialect, some (pattern, subscriber) pairs in a trie, and topics to look up."""
    dialect = data.draw(st.sampled_from(DIALECTS))
    d = make_dialect(dialect)
    pairs = data.draw(st.lists(st.tuples(PATTERNS[dialect](), st.integers(0, 3)), max_size=15))
    topics = data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=12))
    index = TrieIndex(d.dollar_rule, dfa_bytes=1 << 20)
    for pattern, subscriber in pairs:
        index.add(pattern, d.parse_pattern(pattern), subscriber)
    return dialect, d, pairs, topics, index


@given(st.data(), st.integers(0, 4000))
def test_dfa_with_any_budget_equals_the_reference(data: st.DataObject, budget: int) -> None:
    dialect, d, pairs, topics, index = _draw_trie(data)
    # A budget of 0 keeps nothing: every step is computed, none remembered.
    dfa = DFA(index._root, d.dollar_rule, index._version, budget)
    for topic in topics * 2:  # twice: the second reads what the first learnt
        words = d.parse_topic(topic)
        if words is not None:
            expected = {s for p, s in pairs if MATCHES[dialect](p, topic)}
            assert dfa.match(words) == expected, (topic, budget)
    assert dfa.bytes <= budget + 4096  # the last charge may overshoot by one state


def test_a_dfa_serves_only_the_version_it_learnt() -> None:
    m = Matcher()
    m.subscribe("a.*", 1)
    index = m._index
    assert isinstance(index, TrieIndex)
    walk = m.batch_walk()
    assert walk is not None
    assert m.batch_walk() is walk  # the same while nothing is written
    dfa = index._dfa
    assert dfa is not None
    assert dfa.version == index._version
    (state,) = walk.advance(walk.advance([walk.root], ["a"]), ["b"])
    assert walk.subscribers(state) == {1}
    assert dfa.transitions == 2
    m.subscribe("#", 2)
    assert index._dfa is None  # the write dropped it: its bytes go at once
    new = m.batch_walk()
    assert new is not None
    assert new is not walk
    assert index._dfa is not None
    assert index._dfa.version == index._version
    (state,) = new.advance(new.advance([new.root], ["a"]), ["b"])
    assert new.subscribers(state) == {1, 2}


def test_only_the_default_offers_a_batch_walk() -> None:
    for algorithm in ("naive", "optimized_bitmap", "trie", "cstrie"):
        assert Matcher(algorithm).batch_walk() is None, algorithm
    snapshot = Matcher().snapshot()
    assert snapshot.batch_walk() is not None  # a snapshot of the default has its own


@given(st.data())
def test_every_learnt_transition_is_one_step_of_the_trie_walk(data: st.DataObject) -> None:
    # The DFA steps with each state's fixed part and children dicts (and one "otherwise" state
    # for words no literal child has): the node set it reaches must be exactly _walk.step's.
    _, d, _, topics, index = _draw_trie(data)
    dfa = DFA(index._root, d.dollar_rule, index._version, 1 << 20)
    for topic in topics:
        words = d.parse_topic(topic)
        if words is not None:
            dfa.match(words)
    for state in list(dfa.states.values()):
        for word, target in state.next.items():
            dollar = state.first and d.dollar_rule and word[:1] == "$"
            assert target.nodes == set(step(state.nodes, word, dfa.trie_root if dollar else None))
