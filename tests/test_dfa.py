"""The default matcher's DFA: exact whatever its budget, rebuilt after every write."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, Dialect, Matcher, make_dialect
from topicmatch._dfa import DFA, LEARN_AFTER
from topicmatch._trie import QUIET_LOOKUPS, DFASettings, TrieIndex
from topicmatch._walk import step

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


def _draw_trie(data: st.DataObject) -> tuple[str, Dialect, list[tuple[str, int]], list[str], TrieIndex]:
    """A dialect, some (pattern, subscriber) pairs in a trie, and topics to look up."""
    dialect = data.draw(st.sampled_from(DIALECTS))
    d = make_dialect(dialect)
    pairs = data.draw(st.lists(st.tuples(PATTERNS[dialect](), st.integers(0, 3)), max_size=15))
    topics = data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=12))
    index = TrieIndex(d.dollar_rule, dfa=True)
    for pattern, subscriber in pairs:
        index.add(pattern, d.parse_pattern(pattern), subscriber)
    return dialect, d, pairs, topics, index


@given(st.data(), st.integers(0, 4000))
def test_dfa_with_any_budget_equals_the_reference(data: st.DataObject, budget: int) -> None:
    dialect, d, pairs, topics, index = _draw_trie(data)
    # A budget of 0 learns nothing; the DFA is told whether the trie's '#' nodes are all leaves.
    dfa = DFA(index._root, d.dollar_rule, leaves=not index._inner_hash, max_bytes=budget)
    for topic in topics * 3:  # three times: the second notes, the third reads what was learnt
        words = d.parse_topic(topic)
        expected = {s for p, s in pairs if MATCHES[dialect](p, topic)} if words is not None else set()
        if words is not None:
            assert dfa.match(words) == expected, (topic, budget)
    assert dfa.bytes <= budget + 4096  # the last charge may overshoot by one state


def test_a_dfa_serves_only_the_version_it_learnt() -> None:
    m = Matcher(cache_size=0)
    m.subscribe("a.*", 1)
    index = m._index
    assert isinstance(index, TrieIndex)
    for _ in range(QUIET_LOOKUPS + LEARN_AFTER + 1):  # the version settles, then learns a.b
        assert m.lookup("a.b") == {1}
    dfa = index._dfa
    assert dfa is not None
    assert dfa.transitions > 0
    assert dfa.version == index._version
    m.subscribe("#", 2)
    assert m.lookup("a.b") == {1, 2}  # the old DFA is not used: its version is gone
    assert dfa.version != index._version
    m.unsubscribe("a.*", 1)
    for _ in range(QUIET_LOOKUPS + LEARN_AFTER + 1):
        assert m.lookup("a.b") == {2}
    new = index._dfa
    assert new is not None
    assert new is not dfa
    assert new.version == index._version
    assert index._version % 2 == 0


def test_a_dfa_whose_version_ended_is_dropped_by_the_next_lookup() -> None:
    # A write ends the DFA's version without touching it; the first lookup after the write drops
    # it (its bytes go now, and lookups take the trie's one-frame reader until the new version
    # gets its own DFA) instead of keeping it until that next DFA.
    m = Matcher(cache_size=0)
    m.subscribe("a.*", 1)
    index = m._index
    assert isinstance(index, TrieIndex)
    for _ in range(QUIET_LOOKUPS + LEARN_AFTER + 1):
        m.lookup("a.b")
    old = index._dfa
    assert old is not None
    m.subscribe("#", 2)
    assert index._dfa is old
    assert m.lookup("a.b") == {1, 2}
    assert index._dfa is None
    for _ in range(QUIET_LOOKUPS):
        assert m.lookup("a.b") == {1, 2}
    assert index._dfa is not None  # the new version's own, once it has lasted
    assert index._dfa.version == index._version


@given(st.data())
def test_every_learnt_transition_is_one_step_of_the_trie_walk(data: st.DataObject) -> None:
    # The DFA steps with each state's fixed part and children dicts (and one "otherwise" state
    # for words no literal child has): the node set it reaches must be exactly _trie.step's.
    _, d, _, topics, index = _draw_trie(data)
    dfa = DFA(index._root, d.dollar_rule, leaves=not index._inner_hash)
    for topic in topics * 2:
        words = d.parse_topic(topic)
        if words is not None:
            dfa.match(words)
    for state in list(dfa.states.values()):
        for word, target in state.next.items():
            dollar = state.first and d.dollar_rule and word[:1] == "$"
            assert set(target.nodes) == set(step(state.nodes, word, state.nodes[0] if dollar else None))


def _distinct_matcher(probation: int) -> tuple[Matcher, TrieIndex]:
    m = Matcher(dialect="mqtt", cache_size=0)
    m.subscribe_many([("+/+/status", 1), ("fleet/#", 2), ("fleet/+/temp", 3)])
    index = m._index
    assert isinstance(index, TrieIndex)
    index.dfa_settings = DFASettings(probation=probation)
    return m, index


def test_a_dfa_on_topics_that_do_not_repeat_is_retired_dropped_and_retried_later() -> None:
    # Every topic new at its second level: nearly every lookup leaves the DFA's transitions, so
    # the DFA is retired after its probation, dropped (its bytes go at once), and the next one
    # comes four times its lookups later.
    probation = 16
    m, index = _distinct_matcher(probation)
    topics = (f"fleet/v{i}/status" for i in range(10**6))
    for _ in range(QUIET_LOOKUPS + 1):
        m.lookup(next(topics))
    dfa = index._dfa
    assert dfa is not None  # made by the lookup that found the version had lasted
    for _ in range(2 * probation):
        assert m.lookup(next(topics)) == {1, 2}
    assert dfa.retired
    m.lookup(next(topics))  # the first lookup after it walks the trie and settles
    assert index._dfa is None
    waited = 0
    while index._dfa is None:
        m.lookup(next(topics))
        waited += 1
    assert waited == QUIET_LOOKUPS + 4 * 2 * probation


def test_a_dfa_on_repeating_topics_passes_its_probation() -> None:
    probation = 16
    m, index = _distinct_matcher(probation)
    topics = [f"fleet/v{i}/status" for i in range(4)]
    for k in range(QUIET_LOOKUPS + 3 * probation):
        assert m.lookup(topics[k % 4]) == {1, 2}
    dfa = index._dfa
    assert dfa is not None
    assert not dfa.retired
    assert dfa.lookup == dfa.match  # off probation: no more counting
