"""SharedGroups against a real Mosquitto 2.0: each message reaches exactly one member of each
``$share`` group, and round-robin picks the members in the order Mosquitto does."""

from __future__ import annotations

import time

import pytest

from topicmatch import Matcher, SharedGroups

from .mqtt_clients import WAIT, V5Client

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
END = "jobs/end"


def _ours() -> list[list[str]]:
    m, groups = Matcher[object](dialect="mqtt"), SharedGroups[str]()
    for client, filter_ in MEMBERS:
        key = groups.join(filter_, client) if filter_.startswith("$share/") else client
        m.subscribe(filter_, key)
    return [sorted(map(str, groups.deliver(t, m.lookup(t)))) for t in TOPICS]


def test_one_member_per_group_in_mosquittos_order(mosquitto: tuple[str, int]) -> None:
    port = mosquitto[1]
    clients = {}
    for client_id, filter_ in MEMBERS:
        clients[client_id] = client = V5Client(port, f"share-{client_id}")
        assert client.subscribe(filter_) < 0x80
    publisher = V5Client(port, "share-publisher")
    try:
        for topic in TOPICS:
            publisher.publish(topic)
        # The sentinel matches every filter; each group's member for it is unknown, so wait for
        # the last publication to reach the plain subscriber and one member of each group.
        publisher.publish(END)
        clients["plain"].wait_for(END)
        for group in (["w1", "w2", "w3"], ["a1", "a2"]):
            # Any member may be the one, and its copy may still be on its way: poll them all.
            deadline = time.monotonic() + WAIT
            while not any(END in clients[client_id].received for client_id in group):
                if time.monotonic() > deadline:
                    pytest.fail(f"no member of {group} received {END!r} within {WAIT} s")
                time.sleep(0.01)
        ours = _ours()
        for client_id, client in clients.items():
            expected = [t for t, recipients in zip(TOPICS, ours, strict=True) if client_id in recipients]
            assert [t for t in client.received if t != END] == expected, client_id
    finally:
        for client in [*clients.values(), publisher]:
            client.close()
