"""The default matcher's DFA: exact whatever its budget, rebuilt after every write."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, Dialect, Matcher, make_dialect
from topicmatch._dfa import DFA
from topicmatch._trie import TrieIndex, step

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


@given(st.data(), st.integers(0, 6))
def test_dfa_with_any_budget_equals_the_reference(data: st.DataObject, budget: int) -> None:
    dialect, d, pairs, topics, index = _draw_trie(data)
    dfa = DFA(index._root, d.dollar_rule, step, max_transitions=budget)  # a budget of 0 learns nothing
    for topic in topics * 2:  # twice: the second pass reads what the first one learned
        words = d.parse_topic(topic)
        expected = {s for p, s in pairs if MATCHES[dialect](p, topic)} if words is not None else set()
        if words is not None:
            assert dfa.match(words) == expected, (topic, budget)
    assert dfa.transitions <= budget


def test_every_write_replaces_the_dfa() -> None:
    m = Matcher(cache_size=0)
    m.subscribe("a.*", 1)
    assert m.lookup("a.b") == {1}
    dfa = m._index._dfa  # type: ignore[attr-defined]
    assert dfa.transitions > 0
    m.subscribe("#", 2)
    assert m._index._dfa is not dfa  # type: ignore[attr-defined]
    assert m.lookup("a.b") == {1, 2}
    m.unsubscribe("a.*", 1)
    assert m.lookup("a.b") == {2}
    assert m._index._version % 2 == 0  # type: ignore[attr-defined]


@given(st.data())
def test_every_learnt_transition_is_one_step_of_the_trie_walk(data: st.DataObject) -> None:
    # The DFA steps with each state's fixed part and children dicts (and one "otherwise" state
    # for words no literal child has): the node set it reaches must be exactly _trie.step's.
    _, d, _, topics, index = _draw_trie(data)
    dfa = DFA(index._root, d.dollar_rule, step)
    for topic in topics:
        words = d.parse_topic(topic)
        if words is not None:
            dfa.match(words)
    for state in list(dfa.states.values()):
        for word, target in state.next.items():
            dollar = state.first and d.dollar_rule and word[:1] == "$"
            assert set(target.nodes) == set(step(state.nodes, word, state.nodes[0] if dollar else None))
