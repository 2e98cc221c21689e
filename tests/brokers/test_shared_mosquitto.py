"""SharedGroups against a real Mosquitto 2.0: each message reaches exactly one member of each
``$share`` group, and round-robin picks the members in the order Mosquitto does, also when
members join, leave and join again between messages (generated, seeded sequences).

Each step waits for the broker's acknowledgement (SUBACK, UNSUBACK, PUBACK: Mosquitto routes a
QoS 1 message before it acknowledges it), so the steps reach it in their order; what a client
received is read behind a flush, a message only it subscribes to.
"""

from __future__ import annotations

import random

import pytest

from topicmatch import Matcher, SharedGroups, ShareGroup

from .mqtt_clients import V5Client

pytestmark = pytest.mark.brokers

#: (client id, filter) in the order they subscribe.
MEMBERS = [
    ("w1", "$share/workers/jobs/+"),
    ("w2", "$share/workers/jobs/+"),
    ("w3", "$share/workers/jobs/+"),
    ("a1", "$share/audit/jobs/#"),
    ("a2", "$share/audit/jobs/#"),
    ("plain", "jobs/+"),
]
TOPICS = [f"jobs/{n % 4}" for n in range(30)] + ["jobs/x/deep", "other"]


def _ours() -> list[list[str]]:
    m, groups = Matcher[object](dialect="mqtt"), SharedGroups[str]()
    for client, filter_ in MEMBERS:
        key = groups.join(filter_, client) if filter_.startswith("$share/") else client
        m.subscribe(filter_, key)
    return [sorted(map(str, groups.deliver(t, m.lookup(t)))) for t in TOPICS]


def test_one_member_per_group_in_mosquittos_order(mosquitto: tuple[str, int]) -> None:
    """Read behind each client's own flush: a sentinel that one member of a group received said
    nothing of the copies still on their way to the other (a1 missed its last message under
    load)."""
    port = mosquitto[1]
    clients: dict[str, Member] = {}
    publisher = V5Client(port, "share-publisher")
    try:
        for client_id, filter_ in MEMBERS:
            clients[client_id] = client = Member(port, f"share-{client_id}")
            assert client.subscribe(filter_) < 0x80
        for topic in TOPICS:
            publisher.publish(topic)
        ours = _ours()
        for client_id, client in clients.items():
            expected = [t for t, recipients in zip(TOPICS, ours, strict=True) if client_id in recipients]
            assert client.flush(publisher) == expected, client_id
    finally:
        for each in [*clients.values(), publisher]:
            each.close()


class Member(V5Client):
    """A V5Client that can also flush: publish a topic only it subscribes to and wait for it,
    so that everything queued for it before has arrived (Mosquitto delivers a client's messages
    in order)."""

    def __init__(self, port: int, client_id: str) -> None:
        self.client_id = client_id
        super().__init__(port, client_id)
        self._flushes = 0
        assert self.subscribe(f"flush/{client_id}/#") < 0x80

    def flush(self, publisher: V5Client) -> list[str]:
        """What the client received so far, but its flushes."""
        self._flushes += 1
        topic = f"flush/{self.client_id}/{self._flushes}"
        publisher.publish(topic)
        self.wait_for(topic)
        return [t for t in self.received if not t.startswith("flush/")]


#: A generated step: ("join", client, filter), ("leave", client, filter), ("drop", client, "")
#: (a disconnect: the clean session ends, leaving each group it was in), ("publish", "", topic).
Step = tuple[str, str, str]


def _steps(seed: int, count: int) -> tuple[list[str], list[str], list[Step]]:
    """Clients, topics and ``count`` steps, seeded: joins (some of a member already in the group,
    some of a client that left it before), leaves, drops, and publishes between them."""
    space = f"rr{seed}"
    clients = [f"{space}-c{n}" for n in range(5)]
    filters = [f"$share/ga/{space}/+", f"$share/gb/{space}/#"]
    topics = [f"{space}/1", f"{space}/2", f"{space}/x/deep"]  # the last: group gb's only
    rng = random.Random(seed)
    joined: dict[str, set[str]] = {client: set() for client in clients}
    steps: list[Step] = []
    for _ in range(count):
        client, roll = rng.choice(clients), rng.random()
        if roll < 0.3:
            filter_ = rng.choice(filters)
            joined[client].add(filter_)
            steps.append(("join", client, filter_))
        elif roll < 0.45 and joined[client]:
            filter_ = rng.choice(sorted(joined[client]))
            joined[client].discard(filter_)
            steps.append(("leave", client, filter_))
        elif roll < 0.5 and joined[client]:
            joined[client].clear()
            steps.append(("drop", client, ""))
        else:
            steps.append(("publish", "", rng.choice(topics)))
    return clients, topics, steps


def _expected(clients: list[str], steps: list[Step]) -> dict[str, list[str]]:
    """What each client receives by SharedGroups, used as a broker uses it."""
    m, groups = Matcher[ShareGroup](dialect="mqtt"), SharedGroups[str]()
    joined: dict[str, set[str]] = {client: set() for client in clients}
    got: dict[str, list[str]] = {client: [] for client in clients}
    for action, client, text in steps:
        if action == "join":
            m.subscribe(text, groups.join(text, client))
            joined[client].add(text)
        elif action == "publish":
            for member in groups.deliver(text, m.lookup(text)):
                got[member].append(text)
        else:
            for filter_ in [text] if action == "leave" else sorted(joined[client]):
                joined[client].discard(filter_)
                if groups.leave(filter_, client):
                    m.unsubscribe(filter_, ShareGroup.of(filter_))
    return got


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_round_robin_follows_mosquitto_through_joins_leaves_and_rejoins(
    mosquitto: tuple[str, int], seed: int
) -> None:
    clients, _topics, steps = _steps(seed, 120)
    expected = _expected(clients, steps)
    port = mosquitto[1]
    publisher = V5Client(port, f"rr{seed}-publisher")
    members = {client: Member(port, client) for client in clients}
    received: dict[str, list[str]] = {client: [] for client in clients}
    try:
        for action, client, text in steps:
            if action == "join":
                assert members[client].subscribe(text) < 0x80
            elif action == "leave":
                members[client].unsubscribe(text)
            elif action == "drop":
                received[client] += members[client].flush(publisher)
                members[client].close()
                members[client] = Member(port, client)
            else:
                assert publisher.publish(text) < 0x80
        for client, member in members.items():
            received[client] += member.flush(publisher)
    finally:
        for connection in [*members.values(), publisher]:
            connection.close()
    assert sum(map(len, expected.values())) > 40  # the groups had members most of the time
    assert received == expected
