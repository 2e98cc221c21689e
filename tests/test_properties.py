"""Every algorithm equals the brute-force reference, on random patterns and topics of each dialect."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from topicmatch import ALGORITHMS, DIALECTS, BatchWalk, Matcher, MatcherSnapshot, make_dialect

from .conftest import make_matcher
from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


def _expected(dialect: str, pairs: set[tuple[str, int]], topic: str) -> set[int]:
    matches = MATCHES[dialect]
    return {s for p, s in pairs if matches(p, topic)}


def _walked(walk: BatchWalk, dialect: str, topic: str) -> set[object]:
    """The subscribers of ``topic`` by a batch walk of the default's DFA, one word at a time."""
    words = make_dialect(dialect).parse_topic(topic)
    if words is None:
        return set()
    state = walk.root
    for word in words:
        (state,) = walk.advance([state], [word])
    return set(walk.subscribers(state))


def _check_dialect(dialect: str, data: st.DataObject) -> None:
    subs = data.draw(
        st.lists(st.tuples(PATTERNS[dialect](), st.integers(0, 4)), max_size=25), label="subscriptions"
    )
    removed = data.draw(
        st.lists(st.sampled_from(subs), max_size=5) if subs else st.just([]), label="unsubscribed"
    )
    topics = data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=15), label="topics")
    # The first pairs one by one, the rest in one subscribe_many (onto what the first built).
    first = data.draw(st.integers(0, len(subs)), label="subscribed one by one")
    pairs = set(subs) - set(removed)
    for algorithm in ALGORITHMS:
        m = make_matcher(algorithm, dialect, topics)
        for pattern, subscriber in subs[:first]:
            m.subscribe(pattern, subscriber)
        assert m.subscribe_many(subs[first:]) == len(set(subs[first:]) - set(subs[:first])), algorithm
        for pattern, subscriber in removed:
            m.unsubscribe(pattern, subscriber)
        assert len(m) == len(pairs), algorithm
        walk = m.batch_walk()
        assert (walk is None) is (algorithm != "default"), algorithm
        for topic in topics:
            expected = _expected(dialect, pairs, topic)
            for _ in range(3):  # the default's result cache holds a topic from its third lookup
                assert m.lookup(topic) == expected, (algorithm, topic)
            if walk is not None:
                assert _walked(walk, dialect, topic) == expected, (algorithm, "batch walk", topic)
        assert m.lookup_many(topics) == [m.lookup(t) for t in topics], algorithm
        expected_subs: dict[str, set[int]] = {}
        for p, s in pairs:
            expected_subs.setdefault(p, set()).add(s)
        assert m.subscriptions() == expected_subs, algorithm
        assert m.patterns() == sorted(expected_subs), algorithm


@given(st.data())
def test_amqp_equals_reference(data: st.DataObject) -> None:
    _check_dialect("amqp", data)


@given(st.data())
def test_mqtt_equals_reference(data: st.DataObject) -> None:
    _check_dialect("mqtt", data)


@given(st.data())
def test_nats_equals_reference(data: st.DataObject) -> None:
    _check_dialect("nats", data)


@given(
    st.lists(st.sampled_from(["a", "b", "#", "*", ""]), max_size=8),
    st.lists(st.sampled_from(["a", "b", ""]), max_size=8),
)
def test_many_hashes_anywhere(pattern_words: list[str], topic_words: list[str]) -> None:
    """AMQP patterns dense with '#' (where backtracking bugs hide), against the reference."""
    pattern, topic = ".".join(pattern_words), ".".join(topic_words)
    expected = {1} if MATCHES["amqp"](pattern, topic) else set()
    for algorithm in ALGORITHMS:
        m = make_matcher(algorithm, "amqp", [topic])
        m.subscribe(pattern, 1)
        assert m.lookup(topic) == expected, (algorithm, pattern, topic)


class _SubscriptionMachine(RuleBasedStateMachine):
    """Random subscribe/subscribe_many/unsubscribe/lookup sequences on every algorithm at once,
    against a model."""

    dialect = "amqp"
    small: int | None = None  # the trie's ``small``, if not its own

    def __init__(self) -> None:
        super().__init__()
        self.pairs: set[tuple[str, int]] = set()
        self.matchers: dict[str, Matcher] = {}
        # Snapshots taken, with the model's pairs of their instant: later writes must not show.
        self.snapshots: list[tuple[frozenset[tuple[str, int]], dict[str, MatcherSnapshot]]] = []

    @initialize(space=st.lists(st.just(None), max_size=0))
    def make(self, space: list[None]) -> None:
        # A fixed topic space for the inverted bitmap: the lookups below draw from it.
        self.space = sorted(set(_SPACE[self.dialect]))
        for algorithm in ALGORITHMS:
            self.matchers[algorithm] = make_matcher(algorithm, self.dialect, self.space)
        if self.small is not None:  # every node with more pairs is big (its union made by readers)
            for m in self.matchers.values():
                if m.algorithm in ("trie", "default"):
                    m._index.small = self.small  # type: ignore[attr-defined]

    @rule(data=st.data(), subscriber=st.integers(0, 3))
    def subscribe(self, data: st.DataObject, subscriber: int) -> None:
        pattern = data.draw(PATTERNS[self.dialect]())
        new = (pattern, subscriber) not in self.pairs
        self.pairs.add((pattern, subscriber))
        for algorithm, m in self.matchers.items():
            assert m.subscribe(pattern, subscriber) is new, algorithm

    @rule(data=st.data())
    def subscribe_many(self, data: st.DataObject) -> None:
        # New patterns and ones already subscribed (their nodes exist), with repeated pairs.
        known = sorted({p for p, _ in self.pairs})
        patterns = st.one_of(PATTERNS[self.dialect](), *([st.sampled_from(known)] if known else []))
        batch = data.draw(st.lists(st.tuples(patterns, st.integers(0, 3)), max_size=8))
        new = len(set(batch) - self.pairs)
        self.pairs.update(batch)
        for algorithm, m in self.matchers.items():
            assert m.subscribe_many(batch) == new, algorithm

    @rule(data=st.data())
    def unsubscribe(self, data: st.DataObject) -> None:
        if not self.pairs:
            return
        pattern, subscriber = data.draw(st.sampled_from(sorted(self.pairs)))
        self.pairs.discard((pattern, subscriber))
        for algorithm, m in self.matchers.items():
            assert m.unsubscribe(pattern, subscriber) is True, algorithm
            assert m.unsubscribe(pattern, subscriber) is False, algorithm

    @rule(data=st.data())
    def unsubscribe_many(self, data: st.DataObject) -> None:
        known = sorted(self.pairs)
        pairs = st.one_of(
            st.tuples(PATTERNS[self.dialect](), st.integers(0, 3)),
            *([st.sampled_from(known)] if known else []),
        )
        batch = data.draw(st.lists(pairs, max_size=6))
        gone = len(set(batch) & self.pairs)
        self.pairs.difference_update(batch)
        for algorithm, m in self.matchers.items():
            assert m.unsubscribe_many(batch) == gone, algorithm

    @rule(subscriber=st.integers(0, 3))
    def unsubscribe_all(self, subscriber: int) -> None:
        mine = {(p, s) for p, s in self.pairs if s == subscriber}
        self.pairs -= mine
        for algorithm, m in self.matchers.items():
            assert m.unsubscribe_all(subscriber) == len(mine), algorithm

    @rule(data=st.data())
    def lookup(self, data: st.DataObject) -> None:
        topic = data.draw(st.sampled_from(self.space))
        expected = _expected(self.dialect, self.pairs, topic)
        for algorithm, m in self.matchers.items():
            assert m.lookup(topic) == expected, (algorithm, topic)
            walk = m.batch_walk()
            if walk is not None:
                assert _walked(walk, self.dialect, topic) == expected, (algorithm, "batch walk", topic)

    @rule()
    def snapshot(self) -> None:
        self.snapshots.append((frozenset(self.pairs), {a: m.snapshot() for a, m in self.matchers.items()}))

    @invariant()
    def sizes_agree(self) -> None:
        for algorithm, m in self.matchers.items():
            assert len(m) == len(self.pairs), algorithm

    @invariant()
    def patterns_of_agree(self) -> None:
        for subscriber in range(4):
            expected = sorted(p for p, s in self.pairs if s == subscriber)
            for algorithm, m in self.matchers.items():
                assert m.patterns_of(subscriber) == expected, algorithm

    @rule(data=st.data())
    def check_snapshot(self, data: st.DataObject) -> None:
        if not self.snapshots:
            return
        pairs, snaps = data.draw(st.sampled_from(self.snapshots))
        topic = data.draw(st.sampled_from(self.space))
        expected: dict[str, set[int]] = {}
        for pattern, subscriber in pairs:
            expected.setdefault(pattern, set()).add(subscriber)
        for algorithm, snap in snaps.items():
            assert snap.lookup(topic) == _expected(self.dialect, set(pairs), topic), algorithm
            assert snap.subscriptions() == expected, algorithm
            assert len(snap) == len(pairs), algorithm


_SPACE = {
    "amqp": ["", "a", "b", "a.b", "a..b", "a.b.cd", "#", "*", "a.*", "$x.a", ".", "a.b.a.b"],
    "mqtt": ["a", "b", "a/b", "a//b", "a/b/cd", "$x/a", "$SYS/b", "/", "*", "a/b/a/b"],
    "nats": ["a", "b", "a.b", "a.b.cd", "$x.a", "*", ">", "a.*", "a*.b", "a..b", "a.b.a.b"],
}


class AmqpMachine(_SubscriptionMachine):
    dialect = "amqp"


class MqttMachine(_SubscriptionMachine):
    dialect = "mqtt"


class NatsMachine(_SubscriptionMachine):
    dialect = "nats"


class BigNodesMachine(_SubscriptionMachine):
    """Every node with two pairs or more is *big* (its union made lazily by the readers)."""

    dialect = "mqtt"
    small = 1


TestAmqpStateful = AmqpMachine.TestCase
TestMqttStateful = MqttMachine.TestCase
TestNatsStateful = NatsMachine.TestCase
TestBigNodesStateful = BigNodesMachine.TestCase
for _case in (TestAmqpStateful, TestMqttStateful, TestNatsStateful, TestBigNodesStateful):
    _case.settings = settings(_case.settings, stateful_step_count=30)
del _case  # else pytest collects the loop's last class a second time


def test_dialects_listed() -> None:
    assert set(DIALECTS) == set(MATCHES) == set(PATTERNS)
    assert "default" in ALGORITHMS
    assert Matcher().algorithm == "default"
