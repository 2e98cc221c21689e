"""DeliveryPlanner without a broker: generated sequences of connects, subscribes (with MQTT 5
options, repeated ones, shared groups), unsubscribes, disconnects and publishes against a
reference that walks Mosquitto's subscription trees as its ``sub__search`` does; the retained
messages' answer of subscribe; the errors; the cost (one lookup per publish); subscribe_many
against subscribe one by one; shared groups' members that are away, passed over.
tests/brokers/test_delivery_mosquitto.py compares the planner with a real Mosquitto."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicmatch import (
    AccessRules,
    ClientRules,
    ConfigurationError,
    Copy,
    Delivery,
    DeliveryPlanner,
    InvalidPatternError,
    InvalidSubscriberError,
    InvalidTopicError,
    Subscription,
)

CLIENTS = ["c0", "c1", "c2", "c3"]
RULES = AccessRules("topic read a/#\nuser u\ntopic read #\n")


# -- the reference: Mosquitto's two trees, walked as sub__search walks them ---------------------
@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    leaves: list[Any] = field(default_factory=list)


def _tokens(text: str) -> list[str]:
    """Mosquitto's sub__topic_tokenise: a level "" in front, unless the text starts with '$'."""
    return ([] if text.startswith("$") else [""]) + text.split("/")


def _tree(items: list[tuple[str, object]]) -> _Node:
    root = _Node()
    for filter_, leaf in items:
        node = root
        for level in _tokens(filter_):
            node = node.children.setdefault(level, _Node())
        node.leaves.append(leaf)
    return root


def _walk(node: _Node, levels: list[str], out: list[Any]) -> None:
    if levels:
        for branch in (levels[0], "+"):
            child = node.children.get(branch)
            if child is not None:
                _walk(child, levels[1:], out)
                if len(levels) == 1:
                    out.extend(child.leaves)
    child = node.children.get("#")
    if child is not None:
        out.extend(child.leaves)


@dataclass
class _Client:
    mqtt5: bool
    rules: ClientRules | None
    subs: dict[str, Subscription] = field(default_factory=dict)


class Reference:
    def __init__(self) -> None:
        self.clients: dict[str, _Client] = {}
        self.normal: list[tuple[str, str]] = []  # (client, filter) in the order subscribed
        self.groups: dict[tuple[str, str], deque[str]] = {}  # in the order created

    def connect(self, client: str, mqtt5: bool, rules: ClientRules | None) -> None:
        if client in self.clients:
            self.clients[client].mqtt5, self.clients[client].rules = mqtt5, rules
        else:
            self.clients[client] = _Client(mqtt5, rules)

    def subscribe(self, client: str, filter_: str, options: Subscription) -> bool:
        known = self.clients[client]
        old = known.subs.get(filter_)
        if old is not None:
            known.subs[filter_] = old._replace(qos=options.qos, identifier=options.identifier)
        else:
            known.subs[filter_] = options
            if filter_.startswith("$share/"):
                _share, name, inner = filter_.split("/", 2)
                self.groups.setdefault((name, inner), deque()).append(client)
            else:
                self.normal.append((client, filter_))
        if filter_.startswith("$share/"):
            return False
        return (
            not known.mqtt5 or options.retain_handling == 0 or (options.retain_handling == 1 and old is None)
        )

    def unsubscribe(self, client: str, filter_: str) -> bool:
        if self.clients[client].subs.pop(filter_, None) is None:
            return False
        if filter_.startswith("$share/"):
            _share, name, inner = filter_.split("/", 2)
            members = self.groups[(name, inner)]
            members.remove(client)
            if not members:
                del self.groups[(name, inner)]
        else:
            self.normal.remove((client, filter_))
        return True

    def disconnect(self, client: str) -> None:
        for filter_ in list(self.clients[client].subs):
            self.unsubscribe(client, filter_)
        del self.clients[client]

    def plan(self, topic: str, publisher: str, qos: int, retain: bool) -> dict[str, tuple[Copy, ...]]:
        levels = _tokens(topic)
        normal: list[Any] = []
        _walk(_tree([(f, (c, f)) for c, f in self.normal]), levels, normal)
        shared: list[Any] = []
        _walk(_tree([(f"{inner}", (name, inner)) for name, inner in self.groups]), levels, shared)
        copies: dict[str, list[Copy]] = {}

        def send(client: str, filter_: str) -> None:
            known = self.clients[client]
            if topic.startswith("$share"):
                return  # Mosquitto's own rule, acl_file or not: no client reads these
            if known.rules is not None and not known.rules.may_receive(topic):
                return
            if not known.mqtt5 and client in copies:
                return
            options = known.subs[filter_]
            copy = Copy(
                filter_, min(qos, options.qos), retain and options.retain_as_published, options.identifier
            )
            copies.setdefault(client, []).append(copy)

        for client, filter_ in normal:
            if not (self.clients[client].subs[filter_].no_local and client == publisher):
                send(client, filter_)
        for name, inner in shared:
            members = self.groups[(name, inner)]
            member = members[0]
            members.rotate(-1)  # the head to the tail
            send(member, f"$share/{name}/{inner}")
        return {client: tuple(sent) for client, sent in copies.items()}


# -- generated sequences ----------------------------------------------------------------------
#: Filters that overlap (several match most topics), '#' matching a parent level, '$' ones (the
#: last three; '$shared' starts with '$share', which Mosquitto lets no client read).
FILTERS = [
    "#", "+", "a", "a/#", "a/+", "+/a", "+/+", "a/a", "a/a/#", "+/#", "b/#", "$x/#", "$x/+", "$shared/#",
]  # fmt: skip
FILTER = st.one_of(
    st.sampled_from(FILTERS),
    st.builds(lambda g, f: f"$share/{g}/{f}", st.sampled_from(["g", "h"]), st.sampled_from(FILTERS[:-3])),
)
TOPIC = st.sampled_from(["a", "b", "a/a", "a/b", "b/a", "a/a/a", "$x", "$x/a", "$shared/a"])
OPTIONS = st.builds(
    Subscription,
    qos=st.integers(0, 2),
    no_local=st.booleans(),
    retain_as_published=st.booleans(),
    retain_handling=st.integers(0, 2),
    identifier=st.one_of(st.none(), st.integers(1, 5)),
)
CLIENT = st.sampled_from(CLIENTS)
CONNECT = st.tuples(st.just("connect"), CLIENT, st.booleans(), st.sampled_from([None, "u", "anon"]))
SUBSCRIBE = st.tuples(st.just("subscribe"), CLIENT, FILTER, OPTIONS)
PUBLISH = st.tuples(st.just("publish"), TOPIC, CLIENT, st.integers(0, 2), st.booleans())
#: Mostly subscribes and publishes, so that the plans have something to plan.
STEP = st.one_of(
    SUBSCRIBE,
    PUBLISH,
    SUBSCRIBE,
    PUBLISH,
    st.tuples(st.just("unsubscribe"), CLIENT, FILTER),
    st.tuples(st.just("disconnect"), CLIENT),
    CONNECT,
)


#: Every client connected first (MQTT 5 or 3.1.1, with or without rules), some subscriptions,
#: then the steps.
def _steps(connects: tuple[Any, ...], subscribes: list[Any], steps: list[Any]) -> list[Any]:
    return [
        *((step[0], client, *step[2:]) for step, client in zip(connects, CLIENTS, strict=True)),
        *subscribes,
        *steps,
    ]


STEPS = st.builds(
    _steps,
    st.tuples(*[CONNECT] * len(CLIENTS)),
    st.lists(SUBSCRIBE, min_size=3, max_size=12),
    st.lists(STEP, min_size=3, max_size=25),
)


@settings(deadline=None)
@given(STEPS)
def test_the_planner_is_the_reference(steps: list[tuple[Any, ...]]) -> None:
    planner, reference = DeliveryPlanner(), Reference()
    for step in steps:
        action, *args = step
        if action == "connect":
            client, mqtt5, user = args
            rules = (
                None
                if user is None
                else RULES.client(username=None if user == "anon" else "u", client_id=client)
            )
            planner.connect(client, mqtt5=mqtt5, rules=rules)
            reference.connect(client, mqtt5, rules)
        elif args[0] not in reference.clients and action != "publish":
            if action == "disconnect":
                assert planner.disconnect(args[0]) == 0
            else:
                with pytest.raises(ConfigurationError, match="not connected"):
                    getattr(planner, action)(*args)
        elif action == "subscribe":
            client, filter_, options = args
            if not reference.clients[client].mqtt5:
                options = Subscription(qos=options.qos)
            assert planner.subscribe(client, filter_, options) == reference.subscribe(
                client, filter_, options
            )
        elif action == "unsubscribe":
            assert planner.unsubscribe(*args) == reference.unsubscribe(*args)
        elif action == "disconnect":
            assert planner.disconnect(args[0]) == len(reference.clients[args[0]].subs)
            reference.disconnect(args[0])
        else:
            topic, publisher, qos, retain = args
            ours = planner.plan(topic, publisher=publisher, qos=qos, retain=retain)
            assert len({d.client for d in ours}) == len(ours)  # each client once
            assert dict(ours) == reference.plan(topic, publisher, qos, retain)
        for client, known in reference.clients.items():
            assert planner.subscriptions(client) == known.subs


# -- the rules, one by one --------------------------------------------------------------------
def _planner(mqtt5: bool = True) -> DeliveryPlanner:
    planner = DeliveryPlanner()
    for client in CLIENTS:
        planner.connect(client, mqtt5=mqtt5)
    return planner


def test_an_mqtt5_client_gets_a_copy_per_matching_subscription() -> None:
    planner = _planner()
    planner.subscribe("c0", "a/#", Subscription(qos=0, identifier=1))
    planner.subscribe("c0", "a/+", Subscription(qos=2, identifier=2, retain_as_published=True))
    planner.subscribe("c0", "$share/g/a/b", Subscription(qos=1, identifier=3))
    assert planner.plan("a/b", publisher="c1", qos=1, retain=True) == [
        Delivery("c0", (Copy("a/+", 1, True, 2), Copy("a/#", 0, False, 1), Copy("$share/g/a/b", 1, False, 3)))
    ]


def test_an_mqtt311_client_gets_the_first_of_the_walk_not_the_highest_qos() -> None:
    planner = _planner(mqtt5=False)
    planner.subscribe("c0", "a/#", Subscription(qos=0))
    planner.subscribe("c0", "a/+", Subscription(qos=2))
    assert planner.plan("a/b", qos=2, retain=True) == [Delivery("c0", (Copy("a/+", 2, False, None),))]
    planner.subscribe("c0", "a/b/#", Subscription(qos=1))  # '#' for its parent: before a/b, a/+
    assert planner.plan("a/b", qos=2) == [Delivery("c0", (Copy("a/b/#", 1, False, None),))]


def test_an_mqtt311_member_of_two_groups_of_one_filter_gets_the_older_groups_copy() -> None:
    planner = _planner(mqtt5=False)
    planner.subscribe("c0", "$share/h/a", Subscription(qos=2))
    planner.subscribe("c0", "$share/g/a", Subscription(qos=1))  # created after h
    assert planner.plan("a", qos=2) == [Delivery("c0", (Copy("$share/h/a", 2, False, None),))]
    planner.unsubscribe("c0", "$share/h/a")
    planner.subscribe("c0", "$share/h/a", Subscription(qos=2))  # h again: now after g
    assert planner.plan("a", qos=2) == [Delivery("c0", (Copy("$share/g/a", 1, False, None),))]


def test_no_local_spares_the_publisher_but_not_on_a_shared_subscription() -> None:
    planner = _planner()
    planner.subscribe("c0", "a", Subscription(no_local=True))
    planner.subscribe("c0", "$share/g/a", Subscription(no_local=True))
    assert [c.filter for d in planner.plan("a", publisher="c0") for c in d.copies] == ["$share/g/a"]
    assert [c.filter for d in planner.plan("a", publisher="c1") for c in d.copies] == ["a", "$share/g/a"]


def test_a_member_denied_or_served_already_uses_its_turn() -> None:
    planner = _planner(mqtt5=False)
    planner.connect("c0", mqtt5=False, rules=RULES.client(username=None, client_id="c0"))  # reads a/#
    for client in ("c0", "c1"):
        planner.subscribe(client, "$share/g/#", Subscription(qos=1))
    assert [d.client for d in planner.plan("b")] == []  # c0's turn; it may not read b
    assert [d.client for d in planner.plan("b")] == ["c1"]
    planner.subscribe("c0", "a", Subscription())
    # c0 has the message by its plain subscription: its turn in g is spent, and g's copy lost.
    assert planner.plan("a") == [Delivery("c0", (Copy("a", 0, False, None),))]
    assert [d.client for d in planner.plan("a")] == ["c0", "c1"]


def test_no_client_receives_a_topic_that_starts_with_share_rules_or_not() -> None:
    # Mosquitto refuses every client the read of such a topic, with or without an acl_file
    # (acl__check_dollar), so one that reaches it (through a bridge) goes to no one.
    planner = _planner()
    reads = AccessRules("topic read #\ntopic read $shared/#\n")  # a rule granting it does not
    planner.connect("c1", rules=reads.client(username=None, client_id="c1"))
    for client in ("c0", "c1"):
        planner.subscribe(client, "$shared/#", Subscription())
        planner.subscribe(client, "$sharex/#", Subscription())
        planner.subscribe(client, "$other/#", Subscription())
    assert planner.plan("$shared/a") == planner.plan("$sharex") == []
    assert [d.client for d in planner.plan("$other/a")] == ["c0"]  # c1 may not read $other/a


def test_a_repeated_subscribe_changes_qos_and_identifier_only() -> None:
    planner = _planner()
    assert planner.subscribe("c0", "a", Subscription(qos=0, no_local=True, identifier=4, retain_handling=1))
    assert not planner.subscribe("c0", "a", Subscription(qos=2, retain_as_published=True, retain_handling=1))
    assert planner.subscriptions("c0") == {"a": Subscription(qos=2, no_local=True, retain_handling=1)}


def test_subscribe_says_when_to_send_the_retained_messages() -> None:
    planner = _planner()
    assert [planner.subscribe("c0", "a", Subscription(retain_handling=0)) for _ in range(2)] == [True, True]
    assert [planner.subscribe("c1", "a", Subscription(retain_handling=1)) for _ in range(2)] == [True, False]
    assert [planner.subscribe("c2", "a", Subscription(retain_handling=2)) for _ in range(2)] == [False, False]
    assert not planner.subscribe("c3", "$share/g/a", Subscription(retain_handling=0))
    old = _planner(mqtt5=False)
    assert [old.subscribe("c0", "a", Subscription()) for _ in range(2)] == [True, True]


def test_disconnect_leaves_the_groups_and_forgets_the_client() -> None:
    planner = _planner()
    for client in ("c0", "c1"):
        planner.subscribe(client, "$share/g/a", Subscription())
        planner.subscribe(client, "a", Subscription())
    assert planner.disconnect("c0") == 2
    assert [d.client for _ in range(3) for d in planner.plan("a")] == ["c1"] * 3
    with pytest.raises(ConfigurationError, match="not connected"):
        planner.subscriptions("c0")
    assert planner.disconnect("c1") == 2
    assert planner.plan("a") == []
    assert repr(planner) == "<DeliveryPlanner: 2 clients, 0 shared groups>"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (Subscription(qos=3), "qos"),
        (Subscription(qos=True), "qos"),
        (Subscription(retain_handling=3), "retain_handling"),
        (Subscription(identifier=0), "identifier"),
        (Subscription(identifier=268_435_456), "identifier"),
        (Subscription(no_local=1), "bools"),  # type: ignore[arg-type]
        ((1, False, False, 0, None), "a Subscription"),
    ],
)
def test_bad_options_change_nothing(options: Subscription, message: str) -> None:
    planner = _planner()
    with pytest.raises(ConfigurationError, match=message):
        planner.subscribe("c0", "a", options)
    assert planner.subscriptions("c0") == {}


def test_bad_input_is_a_typed_error_and_changes_nothing() -> None:
    planner = _planner(mqtt5=False)
    with pytest.raises(ConfigurationError, match="QoS only"):
        planner.subscribe("c0", "a", Subscription(identifier=1))
    for bad in ("a/#/b", "$share/g", "", 5):
        with pytest.raises(InvalidPatternError):
            planner.subscribe("c0", bad, Subscription())  # type: ignore[type-var]
    assert planner.subscriptions("c0") == {}
    for client in ("c0", "c1"):
        planner.subscribe(client, "$share/g/a", Subscription())
    for topic in ("a/+", "", 7):
        with pytest.raises(InvalidTopicError):
            planner.plan(topic)  # type: ignore[type-var]
    with pytest.raises(ConfigurationError, match="qos"):
        planner.plan("a", qos=3)
    with pytest.raises(ConfigurationError, match="retain"):
        planner.plan("a", retain=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidSubscriberError):
        planner.plan("a", publisher=1)  # type: ignore[type-var]
    assert [d.client for d in planner.plan("a")] == ["c0"]  # no turn was used by the failures
    with pytest.raises(ConfigurationError, match="ClientRules"):
        planner.connect("c9", rules="read #")  # type: ignore[arg-type]
    with pytest.raises(InvalidSubscriberError):
        planner.connect(9)  # type: ignore[type-var]


class _Counting:
    """Stands in for the planner's matcher or groups, counting the calls of one method."""

    def __init__(self, inner: object, method: str) -> None:
        self.inner, self.method, self.calls = inner, method, 0

    def __getattr__(self, name: str) -> object:
        if name == self.method:
            self.calls += 1
        return getattr(self.inner, name)


def test_one_lookup_per_publish_and_one_choice_per_group() -> None:
    planner = _planner()
    for n, client in enumerate(CLIENTS):
        planner.subscribe(client, "a/#", Subscription(identifier=n + 1))
        planner.subscribe(client, "+/b", Subscription())
        planner.subscribe(client, f"$share/g{n % 2}/a/b", Subscription())
    lookups = planner._matcher = _Counting(planner._matcher, "lookup")  # type: ignore[assignment]
    choices = planner._groups = _Counting(planner._groups, "choose")  # type: ignore[assignment]
    deliveries = planner.plan("a/b")
    assert (lookups.calls, choices.calls) == (1, 2)
    assert sum(len(d.copies) for d in deliveries) == 2 * len(CLIENTS) + 2


BULK = [
    ("a/#", Subscription(qos=1)),
    ("$share/g/a/+", Subscription(qos=2)),
    ("a/b", Subscription(qos=0, no_local=True)),
    ("a/#", Subscription(qos=2, identifier=9)),  # the same filter again: a repeated SUBSCRIBE
    ("$share/g/a/+", Subscription(qos=0)),
]


def test_subscribe_many_is_subscribe_of_each_pair_in_one_matcher_change() -> None:
    one_by_one, bulk = _planner(), _planner()
    answers = [one_by_one.subscribe("c0", f, o) for f, o in BULK]
    one_by_one.subscribe("c1", "$share/g/a/+", Subscription())
    changes = bulk._matcher = _Counting(bulk._matcher, "subscribe_many")  # type: ignore[assignment]
    assert bulk.subscribe_many("c0", iter(BULK)) == answers == [True, False, True, True, False]
    assert changes.calls == 1
    bulk.subscribe_many("c1", [("$share/g/a/+", Subscription())])
    assert bulk.subscriptions("c0") == one_by_one.subscriptions("c0")
    for _ in range(3):  # the groups' turns too
        assert bulk.plan("a/b", publisher="c0", qos=2) == one_by_one.plan("a/b", publisher="c0", qos=2)
    assert (bulk.count("c0"), bulk.count("c9")) == (3, 0)
    held = [bulk.holds(c, f) for c, f in [("c0", "$share/g/a/+"), ("c0", "a/+"), ("c9", "a")]]
    assert held == [True, False, False]
    removals = bulk._matcher = _Counting(changes.inner, "unsubscribe_many")  # type: ignore[assignment]
    assert bulk.disconnect("c0") == 3
    assert removals.calls == 1  # the client's routes out in one change
    assert [d.client for d in bulk.plan("a/b")] == ["c1"]


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (("a/#/b", Subscription()), InvalidPatternError),
        (("a", Subscription(qos=3)), ConfigurationError),
        (("a",), ConfigurationError),
        ("a", ConfigurationError),
    ],
)
def test_subscribe_many_with_one_bad_pair_changes_nothing(bad: Any, error: type[Exception]) -> None:
    planner = _planner()
    with pytest.raises(error):
        planner.subscribe_many("c0", [*BULK[:3], bad])
    assert (planner.subscriptions("c0"), planner.plan("a/b")) == ({}, [])


def test_members_that_are_away_are_passed_over_with_the_publisher_for_the_hash() -> None:
    away = {"c1"}
    planner = DeliveryPlanner(share_policy="round_robin", away=away.__contains__)
    for client in ("c0", "c1", "c2"):
        planner.connect(client, mqtt5=False)
    for client in ("c0", "c1", "c2"):
        planner.subscribe(client, "$share/g/a", Subscription())
    assert [planner.plan("a")[0].client for _ in range(4)] == ["c0", "c2", "c0", "c2"]
    hashed = DeliveryPlanner(share_policy="hash_clientid")
    for client in ("c0", "c1", "c2"):
        hashed.connect(client)
        hashed.subscribe(client, "$share/g/a", Subscription())
    chosen = {hashed.plan("a", publisher="p7")[0].client for _ in range(10)}
    assert len(chosen) == 1
    with pytest.raises(ConfigurationError, match="away"):
        DeliveryPlanner(away="c1")  # type: ignore[arg-type]
