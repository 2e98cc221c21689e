"""DeliveryPlanner against a real Mosquitto 2.0 with MQTT 5 and MQTT 3.1.1 clients (paho).

Per seed, a private Mosquitto with a generated ``acl_file`` (read rules per user, so some copies
are refused) and clients with overlapping subscriptions: MQTT 5 ones with random QoS, no-local,
retain-as-published, retain handling and subscription identifiers, some repeated with new
options, some in ``$share`` groups; MQTT 3.1.1 ones too. The clients then publish generated
messages (random topic, QoS and retain flag; the publisher is one of them, so no-local
matters), one after the other: each waits for its acknowledgement (a QoS 0 one for a QoS 1
fence behind it from the same connection: Mosquitto routes a connection's packets in order),
so the broker routes them in the planner's order and the shared groups' turns can be compared
exactly. What each client received of each message, as a multiset of (QoS, retain flag,
subscription identifiers), must be what :meth:`DeliveryPlanner.plan` says. And, through a
bridge from a second Mosquitto, topics that start with ``$share`` (Mosquitto's own rule: no
client reads them, with or without ``acl_file``) beside others, to clients without rules.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pytest
from paho.mqtt.client import MQTTMessage
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from topicmatch import AccessRules, DeliveryPlanner, Subscription

from .mqtt_clients import V5Client, mosquitto

pytestmark = pytest.mark.brokers

SEEDS = [1, 2, 3, 4]
MESSAGES = 550  # per seed: 2,200 in all
#: (client id, username, MQTT 5?) of each seed's clients.
CLIENTS = [
    ("c0", "u1", True),
    ("c1", "u2", True),
    ("c2", None, True),
    ("c3", "u1", True),
    ("c4", "u2", True),
    ("c5", "u1", False),
    ("c6", None, False),
]
LEVELS = ["a", "b", "c"]
SHARED = ["$share/g0/a/#", "$share/g0/+/b", "$share/g1/a/#", "$share/g1/#", "$share/g2/+/+"]
#: Each client's own topic under it: fences, and the flush at the end.
CONTROL = "$ctl"

#: What a client got of one message: (message number, QoS, retain flag, identifiers).
Got = tuple[int, int, bool, tuple[int, ...]]


class OptionsClient(V5Client):
    """A V5Client of either protocol that subscribes with options and publishes with any QoS
    and retain flag, waiting for the acknowledgement, and records what each message carried."""

    def __init__(self, port: int, client_id: str, username: str | None, mqtt5: bool) -> None:
        self.client_id, self.mqtt5 = client_id, mqtt5
        self.got: list[Got] = []
        self.control: list[bytes] = []  # payloads on its control topic: fences, flushes
        super().__init__(port, client_id, username, mqtt5)
        assert self.subscribe_with(f"{CONTROL}/{client_id}", Subscription(qos=2)) < 0x80

    def on_message(self, message: MQTTMessage) -> None:
        with self.event:
            self.received.append(message.topic)
            if message.topic.startswith(CONTROL):
                self.control.append(bytes(message.payload))
            else:
                ids = getattr(message.properties, "SubscriptionIdentifier", []) if self.mqtt5 else []
                number = int(message.payload)
                self.got.append((number, message.qos, bool(message.retain), tuple(sorted(ids))))
            self.event.notify_all()

    def subscribe_with(self, filter_: str, options: Subscription) -> int:
        """One SUBSCRIBE of ``filter_`` with these options; the SUBACK's reason code."""
        if self.mqtt5:
            properties = None
            if options.identifier is not None:
                properties = Properties(PacketTypes.SUBSCRIBE)  # type: ignore[no-untyped-call]
                properties.SubscriptionIdentifier = options.identifier
            sub_options = SubscribeOptions(
                qos=options.qos,
                noLocal=options.no_local,
                retainAsPublished=options.retain_as_published,
                retainHandling=options.retain_handling,
            )
            _rc, mid = self.client.subscribe(filter_, options=sub_options, properties=properties)
        else:
            _rc, mid = self.client.subscribe(filter_, options.qos)
        assert mid is not None
        self.wait(lambda: mid in self.subacks, f"SUBACK of {filter_!r}")
        return self.subacks.pop(mid)[0]

    def publish_and_wait(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        """Publish, and return once Mosquitto has routed it (its acknowledgement, or that of a
        QoS 1 fence behind a QoS 0 message)."""
        mid = self.client.publish(topic, payload, qos=qos, retain=retain).mid
        if qos == 0:
            mid = self.client.publish(f"{CONTROL}/{self.client_id}", b"fence", qos=1).mid
        self.wait(lambda: mid in self.acks, f"acknowledgement of {topic!r}")
        self.acks.pop(mid)

    def flush(self) -> None:
        """Wait until everything queued for this client before now has arrived: a QoS 2 message
        to itself, behind the others (Mosquitto keeps a client's order)."""
        self.publish_and_wait(f"{CONTROL}/{self.client_id}", b"flush", 2, False)
        self.wait(lambda: b"flush" in self.control, "flush")


def _filter(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return "#"
    levels = [rng.choice([*LEVELS, "+", "+"]) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        levels.append("#")
    return "/".join(levels)


def _acl(rng: random.Random) -> str:
    """Read rules: user u1 reads everything, u2 and anonymous clients a random part; every
    client writes everything and reads and writes its own control topic."""
    lines = [f"topic read {_filter(rng)}" for _ in range(3)]
    lines += [f"pattern readwrite {CONTROL}/%c", "pattern write #", "user u1", "topic read #", "user u2"]
    lines += [f"topic read {_filter(rng)}" for _ in range(3)]
    return "\n".join(lines) + "\n"


def _options(rng: random.Random, mqtt5: bool, identifiers: list[int]) -> Subscription:
    if not mqtt5:
        return Subscription(qos=rng.randint(0, 2))
    identifier = None
    if rng.random() < 0.8:
        identifiers[0] += rng.randint(1, 1000)
        identifier = identifiers[0]
    return Subscription(
        qos=rng.randint(0, 2),
        no_local=rng.random() < 0.4,
        retain_as_published=rng.random() < 0.5,
        retain_handling=rng.randint(0, 2),
        identifier=identifier,
    )


def _subscriptions(rng: random.Random) -> list[tuple[str, str, Subscription]]:
    """(client, filter, options) in the order they are subscribed, some filters twice."""
    identifiers = [0]
    out: list[tuple[str, str, Subscription]] = []
    for client_id, _username, mqtt5 in CLIENTS:
        filters: list[str] = []
        for _ in range(rng.randint(2, 5)):
            filter_ = rng.choice(SHARED) if rng.random() < 0.35 else _filter(rng)
            if filters and rng.random() < 0.15:
                filter_ = rng.choice(filters)  # again, with new options
            filters.append(filter_)
            out.append((client_id, filter_, _options(rng, mqtt5, identifiers)))
    rng.shuffle(out)
    return out


def _messages(rng: random.Random) -> list[tuple[str, str, int, bool]]:
    """(publisher, topic, QoS, retain) of each message."""
    out = []
    for _ in range(MESSAGES):
        topic = "/".join(rng.choice(LEVELS) for _ in range(rng.randint(1, 3)))
        out.append((rng.choice(CLIENTS)[0], topic, rng.randint(0, 2), rng.random() < 0.3))
    return out


def _expected(
    rules: AccessRules,
    subscriptions: list[tuple[str, str, Subscription]],
    messages: list[tuple[str, str, int, bool]],
) -> dict[str, Counter[Got]]:
    planner = DeliveryPlanner()
    for client_id, username, mqtt5 in CLIENTS:
        planner.connect(client_id, mqtt5=mqtt5, rules=rules.client(username=username, client_id=client_id))
    for client_id, filter_, options in subscriptions:
        planner.subscribe(client_id, filter_, options)
    expected: dict[str, Counter[Got]] = {client_id: Counter() for client_id, _u, _m in CLIENTS}
    for number, (publisher, topic, qos, retain) in enumerate(messages):
        for delivery in planner.plan(topic, publisher=publisher, qos=qos, retain=retain):
            for copy in delivery.copies:
                ids = () if copy.identifier is None else (copy.identifier,)
                expected[delivery.client][(number, copy.qos, copy.retain, ids)] += 1
    return expected


@pytest.mark.parametrize("seed", SEEDS)
def test_deliveries_agree_with_mosquitto(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    text = _acl(rng)
    (tmp_path / "acl").write_text(text)
    subscriptions, messages = _subscriptions(rng), _messages(rng)
    expected = _expected(AccessRules(text), subscriptions, messages)
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}", "max_queued_messages 0"]) as port:
        clients = {cid: OptionsClient(port, cid, user, mqtt5) for cid, user, mqtt5 in CLIENTS}
        try:
            for client_id, filter_, options in subscriptions:
                assert clients[client_id].subscribe_with(filter_, options) < 0x80
            for number, (publisher, topic, qos, retain) in enumerate(messages):
                clients[publisher].publish_and_wait(topic, str(number).encode(), qos, retain)
            for client in clients.values():
                client.flush()
        finally:
            for client in clients.values():
                client.close()
    received = {client_id: Counter(client.got) for client_id, client in clients.items()}
    # Not trivial: many copies, of each kind the rules make.
    copies = [got for counts in expected.values() for got in counts.elements()]
    assert len(copies) > MESSAGES
    assert {qos for _n, qos, _r, _i in copies} == {0, 1, 2}
    assert any(retain for _n, _q, retain, _i in copies)
    assert any(ids for _n, _q, _r, ids in copies)
    problems = [
        f"{client_id}: ours only {sorted((expected[client_id] - got).elements())[:8]}, "
        f"mosquitto only {sorted((got - expected[client_id]).elements())[:8]}"
        for client_id, got in received.items()
        if got != expected[client_id]
    ]
    assert not problems, "\n".join([text, *map(str, subscriptions), *problems])


#: (subscriptions of one MQTT 3.1.1 client, in order, and a topic they all match), under a first
#: level ``{p}`` of each case's own: which one Mosquitto's walk meets first decides the one copy's
#: QoS. Each case runs twice, the second time with the QoS of the two subscriptions swapped, so
#: that either answer shows.
WALKS = [
    (["{p}/x/#", "{p}/x"], "{p}/x"),  # a '#' matching the parent level, and the parent
    (["{p}/x/+", "{p}/x/#"], "{p}/x/q"),  # '+' before '#'
    (["{p}/x/y/#", "{p}/x/y"], "{p}/x/y"),
    (["{p}/+/y", "{p}/x/+"], "{p}/x/y"),  # a literal level before '+'
    (["{p}/#", "{p}/x/y"], "{p}/x/y"),
    (["{p}/x/#", "$share/h/{p}/x/k/z"], "{p}/x/k/z"),  # the normal subscriptions before the shared
    (["$share/h/{p}/#", "$share/g/{p}/x/k/z"], "{p}/x/k/z"),  # shared ones in the walk's order
    (["$share/g/{p}/x/k", "$share/h/{p}/x/k"], "{p}/x/k"),  # groups of one filter: first created first
    (["$share/h/{p}/x/k", "$share/g/{p}/x/k"], "{p}/x/k"),
]


def test_an_mqtt311_client_gets_the_first_subscription_of_the_walk(tmp_path: Path) -> None:
    cases = [(filters, topic, qos) for filters, topic in WALKS for qos in ([0, 2], [2, 0])]
    planner = DeliveryPlanner()
    expected, received = {}, {}
    with mosquitto(tmp_path, ["max_queued_messages 0"]) as port:
        publisher = OptionsClient(port, "walk-publisher", None, True)
        clients = []
        try:
            for number, (filters, topic, qos) in enumerate(cases):
                client_id = prefix = f"walk{number}"
                planner.connect(client_id, mqtt5=False)
                clients.append(client := OptionsClient(port, client_id, None, False))
                for filter_, level in zip(filters, qos, strict=True):
                    planner.subscribe(client_id, filter_.format(p=prefix), Subscription(qos=level))
                    assert client.subscribe_with(filter_.format(p=prefix), Subscription(qos=level)) < 0x80
                deliveries = planner.plan(topic.format(p=prefix), publisher="walk-publisher", qos=2)
                expected[client_id] = [(number, copy.qos) for d in deliveries for copy in d.copies]
                publisher.publish_and_wait(topic.format(p=prefix), str(number).encode(), 2, False)
            for client in clients:
                client.flush()
                received[client.client_id] = [(number, qos) for number, qos, _r, _i in client.got]
        finally:
            for client in [*clients, publisher]:
                client.close()
    assert received == expected
    assert {qos for got in expected.values() for _n, qos in got} == {0, 2}


#: (remote topic, the local topic a bridge makes of it): only a bridge brings a topic that starts
#: with '$share' into Mosquitto (it refuses every client's PUBLISH there), and the local
#: subscribers of these filters then get what Mosquitto's own read rule lets through.
BRIDGED = [("r1/a", "$shared/a"), ("r2/a", "$sharex/a"), ("r3/a", "$other/a"), ("r4/a", "plain/a")]
BRIDGED_FILTERS = ["$shared/#", "$sharex/#", "$other/#", "plain/#"]


def test_a_bridged_share_topic_reaches_no_one_as_in_mosquitto(tmp_path: Path) -> None:
    # Mosquitto refuses the read of a topic starting with '$share' to every client, acl_file or
    # not (acl__check_dollar); the planner's clients without rules stand for such a Mosquitto.
    bridge = ["connection b", "cleansession true"]
    bridge += ["topic a in 1 $shared/ r1/", "topic a in 1 $sharex/ r2/", "topic a in 1 $other/ r3/"]
    bridge += ["topic a in 1 plain/ r4/", "topic # in 1 fence/ r5/"]
    (tmp_path / "remote").mkdir()
    (tmp_path / "local").mkdir()
    planner = DeliveryPlanner()
    planner.connect("sub")
    for filter_ in BRIDGED_FILTERS:
        planner.subscribe("sub", filter_)
    expected = {local for _remote, local in BRIDGED if planner.plan(local)}
    with (
        mosquitto(tmp_path / "remote", []) as remote,
        mosquitto(tmp_path / "local", [*bridge, f"address 127.0.0.1:{remote}"]) as local,
    ):
        subscriber = V5Client(local, "sub")
        publisher = V5Client(remote, "pub")
        try:
            for filter_ in [*BRIDGED_FILTERS, "fence/#"]:
                assert subscriber.subscribe(filter_) < 0x80
            for attempt in range(100):  # until the bridge is up: its fences arrive
                assert publisher.publish(f"r5/{attempt}") < 0x80
                if subscriber.received:
                    break
                time.sleep(0.1)
            for remote_topic, _local in BRIDGED:
                assert publisher.publish(remote_topic) < 0x80
            assert publisher.publish("r5/last") < 0x80
            subscriber.wait_for("fence/last")  # one bridge connection: in order
        finally:
            subscriber.close()
            publisher.close()
    received = {topic for topic in subscriber.received if not topic.startswith("fence/")}
    assert received == {"$other/a", "plain/a"}  # Mosquitto's answer, the test's control
    assert expected == received
