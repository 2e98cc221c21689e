"""The worker's level-by-level walk of many topics against the Matcher, one topic at a time."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import PATTERNS, TOPICS
from topicmatch import InvalidTopicError, Matcher
from topicmatch._dialects import make_dialect
from topicmatch._engine.trie import TrieIndex
from topicmatch.spark import Subscriptions
from topicmatch.spark._levels import LevelWalker
from topicmatch.spark._worker import Compiled

from .helpers import trie_of

pytestmark = pytest.mark.spark

#: Characters a topic may hold, ordinary and not: separators, wildcards, '$', space, tab,
#: NUL and a non-ASCII letter (Arrow strings are UTF-8: no lone surrogates).
_CHARS = "ab-_9./ $*#+>\t\x00é"


def _odd_topics() -> st.SearchStrategy[str]:
    return st.text(alphabet=_CHARS, max_size=12)


def _topics(dialect: str) -> st.SearchStrategy[list[str | None]]:
    one = st.one_of(TOPICS[dialect](), _odd_topics(), st.none())
    return st.lists(one, max_size=25)


def _expected(table: Subscriptions, topics: list[str | None]) -> list[Any]:
    """Per topic: the set of subscriber values, or the reason it is invalid."""
    matcher = Matcher("naive", table.dialect, pedantic=table.pedantic, cache_size=0)
    values = table.subscribers.to_pylist()
    for pattern, sid in zip(table.patterns, table.subscriber_ids.tolist(), strict=True):
        matcher.subscribe(pattern, values[sid])
    out: list[Any] = []
    for topic in topics:
        if topic is None:
            out.append("the topic is null")
            continue
        try:
            out.append(set(matcher.lookup(topic)))
        except InvalidTopicError as error:
            out.append(error.reason)
    return out


def _got(table: Subscriptions, compiled: Compiled, topics: list[str | None]) -> list[Any]:
    ids, reasons = compiled.entries(pa.array(topics, pa.string()))
    values = table.subscribers.to_pylist()
    return [
        reason if reason is not None else {values[i] for i in found.tolist()}
        for found, reason in zip(ids, reasons, strict=True)
    ]


DIALECTS = [("amqp", False), ("mqtt", False), ("nats", False), ("nats", True)]


def drawn_table(data: st.DataObject, dialect: str, pedantic: bool) -> tuple[Subscriptions, Compiled]:
    """Up to 12 drawn subscriptions of ``dialect`` (three subscribers), as a table and a worker's
    compiled matcher of it."""
    pairs = data.draw(st.lists(st.tuples(PATTERNS[dialect](), st.sampled_from("xyz")), max_size=12))
    table = Subscriptions.from_pairs(pairs, dialect=dialect, pedantic=pedantic, skip_invalid=True)
    return table, Compiled(dialect, pedantic, table.payload())


@pytest.mark.parametrize(("dialect", "pedantic"), DIALECTS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_entries_equal_one_lookup_per_topic(dialect: str, pedantic: bool, data: st.DataObject) -> None:
    table, compiled = drawn_table(data, dialect, pedantic)
    for _ in range(2):  # the second batch walks a DFA that learnt from the first
        topics = data.draw(_topics(dialect))
        assert _got(table, compiled, topics) == _expected(table, topics)


@pytest.mark.parametrize(("dialect", "pedantic"), DIALECTS)
@settings(max_examples=200, deadline=None)
@given(topics=st.lists(st.one_of(_odd_topics(), st.text(alphabet="ab./-_", max_size=40)), max_size=20))
def test_a_plain_topic_is_valid_and_its_words_are_its_split(
    dialect: str, pedantic: bool, topics: list[str]
) -> None:
    rules = make_dialect(dialect, pedantic=pedantic, max_bytes=80, max_words=4)
    dfa = TrieIndex(rules.dollar_rule, dfa_bytes=1 << 20).stable_dfa()
    assert dfa is not None
    walker = LevelWalker(rules, dfa.batch_walk())
    for topic, plain in zip(topics, walker.plain(pa.array(topics, pa.string())).tolist(), strict=True):
        if plain:
            assert rules.parse_topic(topic) == topic.split(rules.separator)


def test_limits_send_topics_to_the_exact_path() -> None:
    table = Subscriptions.from_pairs([(">", "x")], dialect="nats")
    compiled = Compiled("nats", False, table.payload())
    too_many = ".".join(["w"] * 1025)
    too_long = "w" * 5000
    got = _got(table, compiled, [too_many, too_long, "w." * 10 + "w", "w" * 1024])
    assert got[:2] == ["has 1025 words; the limit is 1024", "is 5000 bytes of UTF-8; the limit is 4096"]
    assert got[2:] == [{"x"}, {"x"}]


def test_a_full_dfa_still_gives_exact_results() -> None:
    pairs = [("a.*", "x"), ("*.b", "y"), ("a.#", "z"), ("c", "x")]
    table = Subscriptions.from_pairs(pairs)
    compiled = Compiled("amqp", False, table.payload())
    dfa = trie_of(compiled.matcher).stable_dfa()
    assert dfa is not None
    dfa.max_bytes = 2
    topics: list[str | None] = ["a.b", "a.c", "q.b", "c", "a", "a.b.c", "c.c", "a.b"]
    for _ in range(3):
        assert _got(table, compiled, topics) == _expected(table, topics)
