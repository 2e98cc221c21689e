"""topicmatch.compat.amqtt: a real amqtt broker on 127.0.0.1 with real amqtt clients; amqtt's
own matching and '$' topic cases, the four defects fixed, shared subscriptions, the ACL plugin.

Each test runs its own event loop (asyncio.run) with a broker on a free port. A message that
must *not* arrive is checked with a sentinel published after it on the same path, never with a
sleep: the client's messages arrive in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from amqtt.broker import Broker as AmqttBroker
from amqtt.broker import RetainedApplicationMessage
from amqtt.client import MQTTClient
from amqtt.contexts import Action
from amqtt.mqtt.constants import QOS_0, QOS_1
from amqtt.plugins.base import BaseAuthPlugin, BaseTopicPlugin

from tests.brokers.mqtt_clients import free_port
from topicmatch.compat.amqtt import MAX_PENDING, MAX_QUEUED, MAX_SENDING, MAX_UNRELEASED, Broker

WAIT = 10.0
SENTINEL = "zz/sentinel"

#: amqtt's own matching cases (its tests/test_broker.py): (filter, topic, matches?)
AMQTT_MATCHING = [
    *[("sport/tennis/player1/#", t, False) for t in ["sport/tennis", "sport/tennis/"]],
    *[
        ("sport/tennis/player1/#", t, True)
        for t in [
            "sport/tennis/player1",
            "sport/tennis/player1/",
            "sport/tennis/player1/ranking",
            "sport/tennis/player1/score/wimbledon",
        ]
    ],
    *[
        ("sport/tennis/+", t, False)
        for t in ["sport/tennis", "sport/tennis/player1/", "sport/tennis/player1/ranking"]
    ],
    *[("sport/tennis/+", t, True) for t in ["sport/tennis/", "sport/tennis/player1", "sport/tennis/player2"]],
]


def _config(port: int, plugins: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
        "plugins": {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
            **(plugins or {}),
        },
    }


def run(
    scenario: Callable[[Any, Callable[..., Awaitable[MQTTClient]]], Awaitable[None]],
    broker_class: type = Broker,
    plugins: dict[str, Any] | None = None,
) -> None:
    """Start a broker of ``broker_class`` on a free port, run ``scenario(broker, connect)``,
    disconnect every client, shut the broker down; bounded in time."""

    async def main() -> None:
        port = free_port()
        broker = broker_class(_config(port, plugins))
        await broker.start()
        clients: list[MQTTClient] = []

        async def connect(client_id: str, username: str | None = None, clean: bool = True) -> MQTTClient:
            client = MQTTClient(client_id=client_id, config={"auto_reconnect": False})
            who = f"{username}@" if username else ""
            await client.connect(f"mqtt://{who}127.0.0.1:{port}/", cleansession=clean)
            clients.append(client)
            return client

        try:
            await asyncio.wait_for(scenario(broker, connect), WAIT * 3)
        finally:
            for client in clients:
                if client.session is not None and client.session.transitions.is_connected():
                    await client.disconnect()
            await broker.shutdown()

    asyncio.run(main())


async def received_until_sentinel(client: MQTTClient, publisher: MQTTClient) -> list[str]:
    """The topics ``client`` receives before the sentinel that ``publisher`` then sends (the
    client must be subscribed to it)."""
    await publisher.publish(SENTINEL, b"end", qos=QOS_1)
    topics: list[str] = []
    while True:
        message = await client.deliver_message(timeout_duration=WAIT)
        assert message is not None
        if message.topic == SENTINEL:
            return topics
        topics.append(message.topic)


@pytest.mark.parametrize(("filter_", "topic", "matches"), AMQTT_MATCHING)
def test_amqtts_matching_cases_through_the_broker(filter_: str, topic: str, matches: bool) -> None:
    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        assert broker._matches(topic, filter_) is matches  # amqtt's tests call this
        sub = await connect("sub")
        assert await sub.subscribe([(filter_, QOS_1), (SENTINEL, QOS_1)]) == [QOS_1, QOS_1]
        pub = await connect("pub")
        await pub.publish(topic, b"x", qos=QOS_1)
        assert (await received_until_sentinel(sub, pub) == [topic]) is matches

    run(scenario)


def test_dollar_topics_as_amqtt_tests_them() -> None:
    """amqtt's '$' cases: a client cannot publish to '$MY'; '#' and '+/broker/...' do not
    receive the broker's '$SYS' topics; '$SYS/#' does."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        wild = await connect("wild")
        filters = ["#", "+/broker/#", "+/broker/time", "+/broker/clients/#", "+/broker/+/maximum"]
        await wild.subscribe([(f, QOS_0) for f in filters])
        dollar = await connect("dollar")
        await dollar.subscribe([("$SYS/#", QOS_0), (SENTINEL, QOS_0)])
        pub = await connect("pub")
        await pub.publish("$MY", b"blocked", qos=QOS_1)  # amqtt closes the connection
        await broker.internal_message_broadcast("$SYS/broker/time", b"now")
        await broker.internal_message_broadcast("$SYS/broker/clients/maximum", b"3")
        other = await connect("other")
        got = await received_until_sentinel(wild, other)
        assert got == []  # nothing before the sentinel, which '#' matches
        assert sorted(await received_until_sentinel(dollar, other)) == [
            "$SYS/broker/clients/maximum",
            "$SYS/broker/time",
        ]

    run(scenario)


def test_retained_messages_by_filter_and_cleared() -> None:
    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        pub = await connect("pub")
        for topic in ("home/kitchen/temp", "home/hall/temp", "home/hall/light", "office/temp"):
            await pub.publish(topic, topic.encode(), qos=QOS_1, retain=True)
        await pub.publish("home/hall/light", b"", qos=QOS_1, retain=True)  # clears it
        # as amqtt's persistence plugin restores them, straight into the dict
        broker.retained_messages["plugin/restored"] = RetainedApplicationMessage(
            None, "plugin/restored", b"r", 1
        )
        assert sorted(broker.retained_messages.index.match("#")) == sorted(broker.retained_messages)
        sub = await connect("sub")
        await sub.subscribe([("home/+/temp", QOS_1)])
        await sub.subscribe([("+/restored", QOS_1), (SENTINEL, QOS_1)])
        got = await received_until_sentinel(sub, pub)
        assert sorted(got) == ["home/hall/temp", "home/kitchen/temp", "plugin/restored"]
        everything = await connect("everything")
        await everything.subscribe([("#", QOS_1)])
        got = await received_until_sentinel(everything, pub)
        assert sorted(got) == ["home/hall/temp", "home/kitchen/temp", "office/temp", "plugin/restored"]

    run(scenario)


def _others_retained(broker_class: type) -> list[str]:
    """What a newly connected client receives before its first subscription's messages, when
    another client holds a subscription that matches a retained message."""
    out: list[str] = []

    async def scenario(broker: Any, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        holder = await connect("holder")
        await holder.subscribe([("private/#", QOS_1)])
        await holder.publish("private/diary", b"secret", qos=QOS_1, retain=True)
        newcomer = await connect("newcomer")
        await newcomer.subscribe([(SENTINEL, QOS_1)])
        out.extend(await received_until_sentinel(newcomer, holder))

    run(scenario, broker_class)
    return out


def test_a_new_client_gets_no_retained_message_of_other_clients_subscriptions() -> None:
    assert _others_retained(AmqttBroker) == ["private/diary"]  # amqtt's defect
    assert _others_retained(Broker) == []


def test_shared_subscriptions_deliver_to_one_member_of_each_group() -> None:
    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        members = [await connect(f"w{n}") for n in range(3)]
        for member in members:
            assert await member.subscribe([("$share/workers/jobs/+", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        plain = await connect("plain")
        await plain.subscribe([("jobs/+", QOS_1), (SENTINEL, QOS_1)])
        pub = await connect("pub")
        for n in range(9):
            await pub.publish(f"jobs/{n}", b"job", qos=QOS_1)
        assert len(await received_until_sentinel(plain, pub)) == 9
        counts = []
        for member in members:
            got = []
            while True:  # the sentinel reached every member (not shared), after its jobs
                message = await member.deliver_message(timeout_duration=WAIT)
                assert message is not None
                if message.topic == SENTINEL:
                    break
                got.append(message.topic)
            counts.append(len(got))
        assert counts == [3, 3, 3]  # round-robin: each job once, to one member
        await members[0].unsubscribe(["$share/workers/jobs/+"])
        await members[1].disconnect()
        await pub.publish("jobs/last", b"job", qos=QOS_1)
        message = await members[2].deliver_message(timeout_duration=WAIT)
        assert message is not None
        assert message.topic == "jobs/last"

    run(scenario)


def test_unsubscribe_and_disconnect_leave_no_route() -> None:
    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        a = await connect("a")
        await a.subscribe([("x/#", QOS_1), ("y/+", QOS_1), ("$share/g/z", QOS_1)])
        b = await connect("b")
        await b.subscribe([("x/#", QOS_1), (SENTINEL, QOS_1)])
        assert len(broker._planner._matcher) == 5
        await a.unsubscribe(["y/+"])
        assert len(broker._planner._matcher) == 4
        # amqtt keeps a disconnected session's subscriptions until its session monitor ends the
        # session (within a second or so, for a clean one), or until the client comes back
        # with a clean session: either way, its routes are gone once it is back.
        await a.disconnect()
        pub = await connect("pub")
        await pub.publish("x/1", b"", qos=QOS_1)
        assert await received_until_sentinel(b, pub) == ["x/1"]
        await connect("a")
        assert len(broker._planner._matcher) == 2
        assert "x/#" in broker.subscriptions

    run(scenario)


ACL = {"acl": {"u": ["sensors/+", "+"], "anonymous": ["public/#"]}}


def _subscribe_codes(plugin: str) -> list[int]:
    codes: list[int] = []

    async def scenario(broker: Any, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        client = await connect("c", username="u")
        for filter_ in ("sensors/+", "sensors/kitchen", "sensors/#", "+", "#"):
            codes.extend(await client.subscribe([(filter_, QOS_1)]))

    run(scenario, Broker, {plugin: ACL})
    return codes


@pytest.mark.filterwarnings("ignore:The 'acl' option is deprecated:DeprecationWarning")
def test_the_acl_plugin_lets_no_wildcard_escape() -> None:
    stock = _subscribe_codes("amqtt.plugins.topic_checking.TopicAccessControlListPlugin")
    assert stock == [1, 1, 1, 1, 1]  # amqtt's plugin allows sensors/# and # too
    ours = _subscribe_codes("topicmatch.compat.amqtt.TopicACLPlugin")
    assert ours == [1, 1, 0x80, 1, 0x80]


RECEIVE_ACL = {"subscribe_acl": {"anonymous": ["#"]}, "receive_acl": {"anonymous": ["public/#", "zz/#"]}}


def test_retained_messages_replayed_pass_the_receive_check() -> None:
    """A SUBSCRIBE's retained messages are checked as live messages are: a client allowed to
    subscribe to '#' but to receive only public/# is replayed no private/ message."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        pub = await connect("pub")
        for topic in ("public/news", "private/diary", "public/weather"):
            await pub.publish(topic, topic.encode(), qos=QOS_1, retain=True)
        sub = await connect("sub")
        assert await sub.subscribe([("#", QOS_1)]) == [QOS_1]
        got: list[str] = []
        while not {"public/news", "public/weather"} <= set(got):  # the replay, whatever its order
            message = await sub.deliver_message(timeout_duration=WAIT)
            assert message is not None
            got.append(message.topic)
        await pub.publish("private/live", b"", qos=QOS_1)
        await pub.publish("public/live", b"", qos=QOS_1)
        got.extend(await received_until_sentinel(sub, pub))
        assert sorted(got) == ["public/live", "public/news", "public/weather"]

    run(scenario, Broker, {"topicmatch.compat.amqtt.TopicACLPlugin": RECEIVE_ACL})


@pytest.mark.parametrize(("version", "codes"), [("2.0", [1, 0x80]), ("2.1", [0x80, 1])])
def test_the_acl_plugin_takes_a_mosquitto_acl_file_and_its_version(
    tmp_path: Path, version: str, codes: list[int]
) -> None:
    """``acl_file`` and ``acl_version`` as amqtt's plugins section spells them: Mosquitto 2.0
    substitutes %c inside a level, 2.1 only a whole level (docs/conformance.md)."""
    acl = tmp_path / "acl"
    acl.write_text("pattern read dev-%c/#\n")
    got: list[int] = []

    async def scenario(broker: Any, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        client = await connect("c1")
        for filter_ in ("dev-c1/#", "dev-%c/#"):
            got.extend(await client.subscribe([(filter_, QOS_1)]))

    plugin = {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl), "acl_version": version}}
    run(scenario, Broker, plugin)
    assert got == codes


def test_an_acl_file_reads_by_the_username_of_the_latest_connect(tmp_path: Path) -> None:
    """With an acl_file the planner applies each client's read rules (no RECEIVE check through
    amqtt's plugins): a client that resumes its session under another username reads by it."""
    acl = tmp_path / "acl"
    acl.write_text("topic read public/#\ntopic read zz/#\ntopic write #\nuser u\ntopic readwrite #\n")

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        assert not broker._receive_checks
        as_u = await connect("c", username="u", clean=False)
        assert await as_u.subscribe([("+/news", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        pub = await connect("pub")
        await pub.publish("private/news", b"", qos=QOS_1)
        assert await received_until_sentinel(as_u, pub) == ["private/news"]
        await as_u.disconnect()
        anonymous = await connect("c", clean=False)  # the same session, no username
        for topic in ("private/news", "public/news"):
            await pub.publish(topic, b"", qos=QOS_1)
        assert await received_until_sentinel(anonymous, pub) == ["public/news"]

    run(scenario, Broker, {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}})


def test_a_resumed_session_is_sent_only_what_its_new_user_may_read(tmp_path: Path) -> None:
    """A message queued for a persistent session while it was away is sent, when a CONNECT
    resumes the session, only if the username of that CONNECT may read it (Mosquitto's
    connection_check_acl): another account that knows the client id gets only what it may read
    of the backlog."""
    acl = tmp_path / "acl"
    acl.write_text(
        "user pub\ntopic write #\nuser alice\ntopic read secret/#\ntopic read zz/#\n"
        "user bob\ntopic read zz/#\n"
    )

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        alice = await connect("c", username="alice", clean=False)
        assert await alice.subscribe([("secret/#", QOS_1), ("zz/x", QOS_1), (SENTINEL, QOS_1)]) == [1, 1, 1]
        await alice.disconnect()
        pub = await connect("pub", username="pub")
        for topic in ("secret/plan", "zz/x"):  # queued for the session that is away
            await pub.publish(topic, b"", qos=QOS_1)
        session = broker._sessions["c"][0]
        await _until(lambda: session.retained_messages.qsize() == 2)
        bob = await connect("c", username="bob", clean=False)  # alice's session, bob's account
        assert await received_until_sentinel(bob, pub) == ["zz/x"]

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    authentication = {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}}
    acl_plugin = {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}}
    run(scenario, Broker, {**authentication, **acl_plugin})


async def _until(condition: Callable[[], bool]) -> None:
    """Wait, a turn of the event loop at a time and at most WAIT seconds, until ``condition()``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not condition():
        assert loop.time() < deadline, "the broker did not get there"
        await asyncio.sleep(0.01)


async def _raw_connect(
    port: int,
    client_id: str,
    username: str,
    will_topic: str,
    *,
    password: str = "",
    clean: bool = True,
    keep_alive: int = 60,
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw MQTT 3.1.1 CONNECT with a retained QoS 1 will (and a password if given): its
    CONNACK and the connection, which the caller drops without a DISCONNECT (the broker then
    sends the will)."""

    def string(text: str) -> bytes:
        data = text.encode()
        return len(data).to_bytes(2, "big") + data

    flags = 0x80 | 0x20 | (1 << 3) | 0x04  # username, will retain, will QoS 1, will
    flags |= (0x40 if password else 0) | (0x02 if clean else 0)
    body = string("MQTT") + bytes([4, flags]) + keep_alive.to_bytes(2, "big")
    body += string(client_id) + string(will_topic) + string("gone") + string(username)
    body += string(password) if password else b""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(bytes([0x10, len(body)]) + body)  # the body is under 128 bytes
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(4), WAIT), reader, writer


def _port(broker: Broker) -> int:
    return int(broker.config["listeners"]["default"]["bind"].rsplit(":", 1)[1])


def test_a_will_is_sent_only_if_its_client_may_publish_it(tmp_path: Path) -> None:
    """amqtt sends and retains a will with no check; here a will goes out only where its client
    could PUBLISH it (Mosquitto's WRITE check of a will): a guest's will into a command topic
    is dropped, and so is one to a $ topic, while an allowed will is delivered and retained."""
    acl = tmp_path / "acl"
    acl.write_text(
        "user guest\ntopic read public/#\nuser ok\ntopic write devices/ok\ntopic write $x/ok\n"
        "user admin\ntopic readwrite #\ntopic readwrite $x/#\n"
    )

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        port = _port(broker)
        admin = await connect("admin", username="admin")
        assert await admin.subscribe([("devices/#", QOS_1), ("$x/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1, 1]
        wills = [("guest", "devices/lock/cmd"), ("ok", "$x/ok"), ("ok", "devices/ok")]
        for number, (username, topic) in enumerate(wills):
            connack, _, writer = await _raw_connect(port, f"w{number}", username, topic)
            assert connack == b"\x20\x02\x00\x00"
            writer.transport.abort()  # no DISCONNECT: the broker sends the will, if it may
            session = broker._sessions[f"w{number}"][0]
            await _until(lambda: session.transitions.state != "connected")  # noqa: B023
        assert await received_until_sentinel(admin, admin) == ["devices/ok"]
        assert sorted(broker._retained_messages) == ["devices/ok"]

    run(scenario, Broker, {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}})


def _copies_of_overlapping_subscriptions(broker_class: type) -> list[tuple[str, int]]:
    """What a client subscribed to a/+ at QoS 0 and a/# at QoS 2 receives of one publish on a/b
    at QoS 2: (topic, QoS) of each PUBLISH before the sentinel."""
    got: list[tuple[str, int]] = []

    async def scenario(broker: Any, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        client = await connect("c")
        assert await client.subscribe([("a/#", 2), ("a/+", QOS_0), (SENTINEL, 2)]) == [2, 0, 2]
        pub = await connect("pub")
        await pub.publish("a/b", b"x", qos=2)
        await pub.publish(SENTINEL, b"end", qos=2)  # QoS 2 as the copy at QoS 2: in its order
        for _ in range(10):  # bounded: two copies at most
            message = await client.deliver_message(timeout_duration=WAIT)
            assert message is not None
            if message.topic == SENTINEL:
                return
            got.append((message.topic, message.qos))
        raise AssertionError(f"no sentinel after {got}")

    run(scenario, broker_class)
    return got


def test_an_mqtt311_client_gets_one_copy_of_its_first_matching_subscription_as_mosquitto() -> None:
    # Mosquitto (DeliveryPlanner, tests/brokers/test_delivery_mosquitto.py): one copy to an MQTT
    # 3.1.1 client, with the QoS of the first subscription of its walk (a/+ before a/#), not the
    # highest. Stock amqtt sends one copy per matching subscription.
    assert sorted(_copies_of_overlapping_subscriptions(AmqttBroker)) == [("a/b", 0), ("a/b", 2)]
    assert _copies_of_overlapping_subscriptions(Broker) == [("a/b", 0)]


class PasswordAuth(BaseAuthPlugin):  # type: ignore[misc]
    """An authentication plugin of fixed passwords (amqtt's FileAuthPlugin needs a hash file)."""

    PASSWORDS: ClassVar[dict[str, str]] = {"admin": "a", "victim": "v"}

    async def authenticate(self, *, session: Any) -> bool:
        return session.username is not None and self.PASSWORDS.get(session.username) == session.password


@pytest.mark.parametrize(("client_id", "clean"), [("v1", False), ("v1", True), ("fresh", False)])
def test_a_connect_that_fails_to_authenticate_changes_nothing(
    tmp_path: Path, client_id: str, clean: bool
) -> None:
    """A CONNECT claiming another username with a wrong password and carrying a will is
    refused before it touches anything: named with a connected client's id, amqtt would end
    that session (clean) or give it the claimed username and the will and take over its
    connection, the will then going out as that username's; with an id of its own, amqtt would
    keep a session for it, marked connected, for ever."""
    acl = tmp_path / "acl"
    acl.write_text("user admin\ntopic readwrite #\nuser victim\ntopic readwrite victim/#\ntopic read zz/#\n")

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        admin = await connect("adm", username="admin:a")
        assert await admin.subscribe([("devices/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        victim = await connect("v1", username="victim:v", clean=False)
        assert await victim.subscribe([("victim/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        held = broker._sessions["v1"][0]
        connack, _, writer = await _raw_connect(
            _port(broker), client_id, "admin", "devices/lock/cmd", password="wrong", clean=clean
        )
        writer.transport.abort()
        assert connack[3] == 0x05  # not authorized
        assert set(broker._sessions) == {"adm", "v1"}
        assert broker._sessions["v1"][0] is held
        assert (held.username, held.will_flag, held.transitions.state) == ("victim", False, "connected")
        await admin.publish("victim/x", b"", qos=QOS_1)
        assert await received_until_sentinel(victim, admin) == ["victim/x"]
        assert await received_until_sentinel(admin, admin) == []  # no will went out

    plugins = {
        "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False},
        "tests.test_compat_amqtt.PasswordAuth": {},
        "topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)},
    }
    run(scenario, Broker, plugins)


def _packet(kind: int, body: bytes) -> bytes:
    """An MQTT packet of a body under 128 bytes."""
    return bytes([kind, len(body)]) + body


def _name(text: str) -> bytes:
    return len(text.encode()).to_bytes(2, "big") + text.encode()


def test_what_a_client_sent_is_not_routed_under_the_name_of_a_user_who_resumes_its_session(
    tmp_path: Path,
) -> None:
    """amqtt checks a PUBLISH when it routes it, as the session's user then: mallory's QoS 2
    PUBLISH to a topic she may not write, its PUBREL never sent, would be routed as admin's
    once admin's client resumes her session and answers the PUBREC that amqtt sends it again.
    Here a message is routed only as the user of the connection it came on (Mosquitto checks a
    PUBLISH as it arrives)."""
    acl = tmp_path / "acl"
    acl.write_text("user admin\ntopic readwrite #\nuser mallory\ntopic read public/#\n")

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        watcher = await connect("watch", username="admin")
        assert await watcher.subscribe([("admin/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        connack, reader, writer = await _raw_connect(_port(broker), "shared", "mallory", "zz/w", clean=False)
        assert connack == b"\x20\x02\x00\x00"
        writer.write(_packet(0x34, _name("admin/cmd") + (77).to_bytes(2, "big") + b"open"))  # QoS 2, id 77
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(4), WAIT) == b"\x50\x02\x00\x4d"  # PUBREC
        writer.transport.abort()  # no PUBREL
        session = broker._sessions["shared"][0]
        await _until(lambda: session.transitions.state != "connected")
        connack, reader, writer = await _raw_connect(_port(broker), "shared", "admin", "zz/w", clean=False)
        assert connack == b"\x20\x02\x01\x00"  # the session resumed
        assert await asyncio.wait_for(reader.readexactly(4), WAIT) == b"\x50\x02\x00\x4d"  # PUBREC again
        writer.write(_packet(0x62, (77).to_bytes(2, "big")))  # admin's client answers: PUBREL
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(4), WAIT) == b"\x70\x02\x00\x4d"  # PUBCOMP
        assert await received_until_sentinel(watcher, watcher) == []  # mallory's message not routed
        writer.transport.abort()

    run(scenario, Broker, {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}})


def test_a_client_that_connects_again_while_connected_keeps_the_new_connection() -> None:
    """A CONNECT that resumes the session of a connected client id closes the old connection
    and keeps the new one (MQTT 3.1.1, 3.1.4-2). amqtt's take-over ended both: the old
    connection's end marked the session disconnected under the new one, which was then closed."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        port = _port(broker)
        connack, old, old_writer = await _raw_connect(port, "dev", "u", "zz/w", clean=False)
        assert connack == b"\x20\x02\x00\x00"
        connack, reader, writer = await _raw_connect(port, "dev", "u", "zz/w", clean=False)
        assert connack == b"\x20\x02\x01\x00"
        assert await asyncio.wait_for(old.read(), WAIT) == b""  # the old connection closed
        writer.write(_packet(0x82, (1).to_bytes(2, "big") + _name("dev/#") + b"\x01"))  # SUBSCRIBE
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(5), WAIT) == b"\x90\x03\x00\x01\x01"  # SUBACK
        pub = await connect("pub")
        await pub.publish("dev/x", b"hi", qos=QOS_0)
        publish = await asyncio.wait_for(reader.readexactly(2), WAIT)
        assert publish[0] >> 4 == 3  # the message, on the new connection
        assert broker._sessions["dev"][0].transitions.state == "connected"
        writer.transport.abort()
        old_writer.transport.abort()

    run(scenario, Broker)


def test_a_clean_connect_closes_the_old_connection_of_its_client_id() -> None:
    """A clean CONNECT with a client id in use ends the old session and closes its connection
    (MQTT 3.1.1, 3.1.4-2). amqtt left that connection open: its next SUBSCRIBE took the client
    id's routes from the new connection's session, and its filters stayed after both left."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        port = _port(broker)
        connack, old, old_writer = await _raw_connect(port, "dev", "u", "zz/w")
        assert connack == b"\x20\x02\x00\x00"
        new = await connect("dev")
        assert await new.subscribe([("dev/#", QOS_1)]) == [QOS_1]
        assert await asyncio.wait_for(old.read(), WAIT) == b""  # the old connection closed
        pub = await connect("pub")
        await pub.publish("dev/x", b"hi", qos=QOS_1)
        message = await new.deliver_message(timeout_duration=WAIT)
        assert message is not None
        assert message.topic == "dev/x"
        old_writer.transport.abort()

    run(scenario, Broker)


class GatedAuth(BaseAuthPlugin):  # type: ignore[misc]
    """Any username, but the second check of mallory's first CONNECT (amqtt's own, after the
    broker's) waits at ``gate``: a slow authentication, during which another CONNECT comes."""

    gate: ClassVar[asyncio.Event]
    arrived: ClassVar[asyncio.Event]
    calls: ClassVar[list[str]]

    async def authenticate(self, *, session: Any) -> bool:
        self.calls.append(session.username)
        if session.username == "mallory" and self.calls.count("mallory") == 2:
            self.arrived.set()
            await self.gate.wait()
        return True


def test_two_connects_of_one_client_id_are_handled_one_after_the_other(tmp_path: Path) -> None:
    """While mallory's CONNECT to a session waits for its authentication, admin's CONNECT to the
    same session goes on: amqtt gave the session admin's username, and then mallory's
    connection took the session over, with admin's name and rights. Here the second CONNECT of a
    client id waits for the first to be attached, then takes it over: the connection left is
    the one whose user the session has, and mallory's connection is closed."""
    acl = tmp_path / "acl"
    acl.write_text("user admin\ntopic readwrite #\nuser mallory\ntopic read public/#\n")

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        GatedAuth.gate, GatedAuth.arrived, GatedAuth.calls = asyncio.Event(), asyncio.Event(), ["-"]
        port = _port(broker)
        _, _, writer = await _raw_connect(port, "shared", "someone", "zz/w", clean=False)
        writer.transport.abort()
        await _until(lambda: broker._sessions["shared"][0].transitions.state == "disconnected")
        mallory = asyncio.ensure_future(_raw_connect(port, "shared", "mallory", "zz/w", clean=False))
        await asyncio.wait_for(GatedAuth.arrived.wait(), WAIT)
        admin = asyncio.ensure_future(_raw_connect(port, "shared", "admin", "zz/w", clean=False))
        await _until(lambda: GatedAuth.calls.count("admin") >= 1)
        GatedAuth.gate.set()
        (_, m_reader, m_writer), (_, _, a_writer) = await mallory, await admin
        session, handler = broker._sessions["shared"]
        await _until(lambda: session.transitions.state == "connected")
        assert (session.username, handler.username) == ("admin", "admin")
        m_writer.write(_packet(0x82, (1).to_bytes(2, "big") + _name("admin/#") + b"\x01"))
        with contextlib.suppress(ConnectionError):
            await m_writer.drain()
        answer = await asyncio.wait_for(m_reader.read(), WAIT)
        assert b"\x90\x03\x00\x01\x01" not in answer  # no SUBACK granting admin/# to mallory
        a_writer.transport.abort()
        m_writer.transport.abort()

    plugins = {
        "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
        "tests.test_compat_amqtt.GatedAuth": {},
        "topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)},
    }
    run(scenario, Broker, plugins)


def test_a_persistent_session_that_is_away_queues_at_most_max_queued_messages() -> None:
    """amqtt queues every message for a persistent session that is away, without end; here at
    most MAX_QUEUED (Mosquitto's max_queued_messages), the later ones dropped, as there."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        away = await connect("away", username="u", clean=False)
        assert await away.subscribe([("load/#", QOS_1)]) == [QOS_1]
        await away.disconnect()
        pub = await connect("pub", username="pub")
        watcher = await connect("watch", username="w")
        assert await watcher.subscribe([(SENTINEL, QOS_1)]) == [QOS_1]
        for n in range(MAX_QUEUED + 5):
            await pub.publish(f"load/{n}", b"x", qos=QOS_1)
        assert await received_until_sentinel(watcher, pub) == []  # every load message routed
        assert broker._sessions["away"][0].retained_messages.qsize() == MAX_QUEUED

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    run(scenario, Broker, {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}})


class _CountingReplays(Broker):
    """The broker, counting its retained replays: (client id, filter) of each."""

    replays: ClassVar[list[tuple[str, str]]] = []

    async def _publish_retained_messages_for_subscription(
        self, subscription: tuple[str, int], session: Any
    ) -> None:
        self.replays.append((session.client_id, subscription[0]))
        await super()._publish_retained_messages_for_subscription(subscription, session)


def test_a_connect_replays_the_retained_messages_of_its_own_subscriptions_only() -> None:
    """amqtt walks every filter of the broker at each CONNECT, one await each (87 ms at
    100,000 filters: a client that reconnects in a loop stalls everyone); here a CONNECT costs
    one replay per subscription of its own session, and still gets their retained messages."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        many = await connect("many")
        assert await many.subscribe([(f"load/{n}", QOS_0) for n in range(300)]) == [QOS_0] * 300
        dev = await connect("dev", username="u", clean=False)
        assert await dev.subscribe([("dev/a", QOS_1), ("dev/b", QOS_1)]) == [QOS_1, QOS_1]
        await many.publish("dev/a", b"kept", qos=QOS_1, retain=True)
        await dev.disconnect()
        _CountingReplays.replays.clear()
        again = await connect("dev", username="u", clean=False)
        await asyncio.wait_for(broker._sessions["dev"][1].running.wait(), WAIT)  # the replays are done
        assert sorted(_CountingReplays.replays) == [("dev", "dev/a"), ("dev", "dev/b")]
        message = await again.deliver_message(timeout_duration=WAIT)
        assert message is not None
        assert (message.topic, message.data) == ("dev/a", bytearray(b"kept"))

    run(scenario, _CountingReplays)


def test_a_client_silent_for_one_and_a_half_keep_alives_is_disconnected_and_its_will_sent() -> None:
    """MQTT 3.1.1 (3.1.2.10) and Mosquitto: no packet for one and a half keep-alives, and the
    broker closes the connection and sends the will. amqtt logs the timeout and waits on: a
    client that vanished without a FIN (a dead link) held its session and its will for ever."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        watcher = await connect("watch")
        assert await watcher.subscribe([("wills/#", QOS_1)]) == [QOS_1]
        connack, reader, writer = await _raw_connect(_port(broker), "idle", "u", "wills/idle", keep_alive=1)
        assert connack == b"\x20\x02\x00\x00"
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed by the broker
        will = await watcher.deliver_message(timeout_duration=WAIT)
        assert will is not None
        assert will.topic == "wills/idle"
        writer.transport.abort()

    run(scenario, Broker)


class _QuickConnect(Broker):
    connect_wait = 0.5


def test_a_connection_that_sends_no_connect_is_closed() -> None:
    """amqtt waits for ever for a new connection's CONNECT (one socket and one connection slot
    per idle connection, without end); here it has Broker.connect_wait seconds (Mosquitto: 90),
    shortened for the test."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(broker))
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed by the broker
        writer.transport.abort()

    run(scenario, _QuickConnect)


def test_a_copy_has_the_lower_of_the_publish_qos_and_the_subscription_qos() -> None:
    """MQTT 3.1.1 (3.8.4) and Mosquitto: a message published at QoS 0 reaches a QoS 1
    subscription at QoS 0, and is not queued for its persistent session while it is away (QoS 0
    messages are not kept for an absent client). amqtt sent it at QoS 1 and queued it."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        here = await connect("here", username="h")
        away = await connect("away", username="u", clean=False)
        for client in (here, away):
            assert await client.subscribe([("t/#", QOS_1)]) == [QOS_1]
        await away.disconnect()
        pub = await connect("pub", username="p")
        await pub.publish("t/zero", b"0", qos=QOS_0)
        await pub.publish("t/one", b"1", qos=QOS_1)
        got = []
        for _ in range(2):
            message = await here.deliver_message(timeout_duration=WAIT)
            assert message is not None
            got.append((message.topic, message.qos))
        assert got == [("t/zero", QOS_0), ("t/one", QOS_1)]
        queued = broker._sessions["away"][0].retained_messages
        assert [queued.get_nowait().topic for _ in range(queued.qsize())] == ["t/one"]

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    run(scenario, Broker, {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}})


def test_a_publish_to_a_topic_no_client_may_use_ends_the_connection() -> None:
    """amqtt's message loop stops at a PUBLISH to a ``$`` topic (or one with a wildcard) and
    leaves the connection open, marked connected, its later packets read and queued for ever;
    here the connection is ended, as one with a protocol error (Mosquitto closes it)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        connack, reader, writer = await _raw_connect(_port(broker), "z", "u", "zz/w")
        assert connack == b"\x20\x02\x00\x00"
        writer.write(_packet(0x30, _name("$x/y") + b"x"))  # PUBLISH, QoS 0
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed by the broker
        session = broker._sessions["z"][0]
        await _until(lambda: session.transitions.state == "disconnected")
        writer.transport.abort()

    run(scenario, Broker)


def test_a_client_holds_at_most_max_unreleased_qos2_messages_unreleased() -> None:
    """amqtt holds every QoS 2 message a client sends and does not release (up to 65,535 per
    session, each sent a PUBREC again at every CONNECT that resumes it); here at most
    MAX_UNRELEASED, a later one answered with a PUBREC and dropped, and its PUBREL with a
    PUBCOMP, as by Mosquitto. The ones held are delivered once released."""
    sent = MAX_UNRELEASED + 5

    def acks(kind: int, data: bytes) -> list[bytes]:  # the packet ids of 4-byte acks, in any order
        assert all(data[i : i + 2] == bytes([kind, 2]) for i in range(0, len(data), 4))
        return sorted(data[i + 2 : i + 4] for i in range(0, len(data), 4))

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        watcher = await connect("watch")
        assert await watcher.subscribe([("load/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        connack, reader, writer = await _raw_connect(_port(broker), "z", "u", "zz/w")
        try:
            assert connack == b"\x20\x02\x00\x00"
            ids = [n.to_bytes(2, "big") for n in range(1, sent + 1)]
            writer.write(
                b"".join(_packet(0x34, _name(f"load/{n}") + id_ + b"x") for n, id_ in enumerate(ids, 1))
            )
            await writer.drain()
            pubrecs = await asyncio.wait_for(reader.readexactly(4 * sent), WAIT)
            assert acks(0x50, pubrecs) == ids  # every one answered
            assert len(broker._sessions["z"][0].inflight_in) == MAX_UNRELEASED
            writer.write(b"".join(_packet(0x62, id_) for id_ in ids))  # PUBREL of each
            await writer.drain()
            pubcomps = await asyncio.wait_for(reader.readexactly(4 * sent), WAIT)
            assert acks(0x70, pubcomps) == ids
            writer.write(_packet(0x30, _name(SENTINEL) + b"end"))  # after the released ones, in order
            await writer.drain()
            topics = []
            while (
                message := await watcher.deliver_message(timeout_duration=WAIT)
            ) and message.topic != SENTINEL:
                topics.append(message.topic)
            assert sorted(topics) == sorted(f"load/{n}" for n in range(1, MAX_UNRELEASED + 1))
        finally:
            writer.transport.abort()

    run(scenario, Broker)


def _reads_nothing(broker: Broker, client_id: str, writer: asyncio.StreamWriter) -> None:
    """The raw client of ``writer`` (client id ``client_id``) reads nothing more, and the
    broker's socket to it buffers little: what the broker sends it next soon waits for the
    socket (amqtt's writes block)."""
    transport = writer.transport
    assert isinstance(transport, asyncio.Transport)
    transport.pause_reading()
    transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    handler = broker._sessions[client_id][1]
    handler.writer._writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)


@pytest.mark.parametrize(("username", "resent"), [("bob", False), ("alice", True)])
def test_a_resumed_session_is_sent_again_only_the_messages_in_flight_its_new_user_may_read(
    tmp_path: Path, username: str, resent: bool
) -> None:
    """amqtt sends a session's messages in flight (its inflight_out: a PUBLISH not yet
    acknowledged, or still waiting for the socket) again, unchecked, to the connection that
    resumes the session: alice's connection dropped while the broker's writes to her waited,
    and bob, resuming her session, was sent her secret messages. Here each passes the RECEIVE
    check for the new username first (Mosquitto's connection_check_acl drops them from its
    inflight messages); alice herself gets them again."""
    acl = tmp_path / "acl"
    acl.write_text(
        "user pub\ntopic write #\nuser alice\ntopic read secret/#\ntopic read zz/#\n"
        "user bob\ntopic read zz/#\n"
    )

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        connack, reader, writer = await _raw_connect(_port(broker), "c", "alice", "zz/w", clean=False)
        assert connack == b"\x20\x02\x00\x00"
        filters = _name("secret/#") + b"\x01" + _name(SENTINEL) + b"\x01"
        writer.write(_packet(0x82, (1).to_bytes(2, "big") + filters))  # SUBSCRIBE
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(6), WAIT) == b"\x90\x04\x00\x01\x01\x01"
        session = broker._sessions["c"][0]
        _reads_nothing(broker, "c", writer)
        pub = await connect("pub", username="pub")
        for n in range(20):
            await pub.publish(f"secret/{n}", b"s" * 65536, qos=QOS_1)
        writer.transport.abort()  # alice's connection drops, the broker's writes to her waiting
        await _until(lambda: session.transitions.state == "disconnected")
        in_flight = [message.topic for message in session.inflight_out.values()]
        assert in_flight  # what amqtt sends again to the next connection of the session
        client = await connect("c", username=username, clean=False)
        assert await received_until_sentinel(client, pub) == (in_flight if resent else [])

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    authentication = {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}}
    acl_plugin = {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}}
    run(scenario, Broker, {**authentication, **acl_plugin})


class GatedReceive(BaseTopicPlugin):  # type: ignore[misc]
    """A topic plugin that lets only alice receive ``secret/`` topics, and answers alice's
    check of one only once ``gate`` is set: a slow check (a plugin asking a server), during
    which a CONNECT comes."""

    gate: ClassVar[asyncio.Event]
    arrived: ClassVar[asyncio.Event]

    async def topic_filtering(
        self, *, session: Any = None, topic: str | None = None, action: Action | None = None
    ) -> bool:
        if action != Action.RECEIVE or topic is None or not topic.startswith("secret/"):
            return True
        user = session.username
        if user == "alice":
            self.arrived.set()
            await self.gate.wait()
        return bool(user == "alice")


def test_a_receive_check_answers_for_the_user_it_asked_about() -> None:
    """A message's RECEIVE checks are awaited before it is sent: a CONNECT that resumed alice's
    session as bob while alice's check was pending got the message alice may read, on bob's
    connection. Here a recipient whose session changed user while its check awaited is skipped
    (Mosquitto checks and sends in one step)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        GatedReceive.gate, GatedReceive.arrived = asyncio.Event(), asyncio.Event()
        assert broker._receive_checks
        alice = await connect("c", username="alice", clean=False)
        assert await alice.subscribe([("secret/#", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        await alice.disconnect()
        pub = await connect("pub", username="pub")
        await pub.publish("secret/plan", b"", qos=QOS_1)
        await asyncio.wait_for(GatedReceive.arrived.wait(), WAIT)  # checked as alice's
        bob = await connect("c", username="bob", clean=False)  # alice's session, bob's account
        GatedReceive.gate.set()
        assert await received_until_sentinel(bob, pub) == []

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    authentication = {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}}
    run(scenario, Broker, {**authentication, "tests.test_compat_amqtt.GatedReceive": {}})


async def _stop_reading_under_load(
    broker: Broker, connect: Callable[..., Awaitable[MQTTClient]], client_id: str, **options: Any
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw client (``_raw_connect``'s, with ``options``) subscribed to ``load/#`` that stops
    reading, and messages for it enough that the broker's writes to it wait for the socket."""
    will = f"wills/{client_id}"
    connack, reader, writer = await _raw_connect(_port(broker), client_id, "u", will, **options)
    assert connack[3] == 0
    writer.write(_packet(0x82, (1).to_bytes(2, "big") + _name("load/#") + b"\x00"))  # SUBSCRIBE
    await writer.drain()
    assert await asyncio.wait_for(reader.readexactly(5), WAIT) == b"\x90\x03\x00\x01\x00"
    _reads_nothing(broker, client_id, writer)
    pub = await connect(f"pub-{client_id}")
    for n in range(10):
        await pub.publish(f"load/{n}", b"s" * 65536, qos=QOS_0)
    transport = broker._sessions[client_id][1].writer._writer.transport
    await _until(lambda: transport.get_write_buffer_size() > 65536)  # its writes wait (drain)
    return reader, writer


def test_a_client_that_reads_nothing_is_disconnected_by_its_keep_alive() -> None:
    """A client silent for one and a half keep-alives is closed, and its will sent, even when
    it reads nothing of what the broker sends it. amqtt's close first waits until the client
    has read all that is queued for it: such a client kept its connection, its session and its
    will for ever. Here the socket is closed at once, what is unsent dropped (Mosquitto closes
    it)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        watcher = await connect("watch")
        assert await watcher.subscribe([("wills/#", QOS_1)]) == [QOS_1]
        _, writer = await _stop_reading_under_load(broker, connect, "idle", keep_alive=1)
        will = await watcher.deliver_message(timeout_duration=WAIT)
        assert will is not None
        assert will.topic == "wills/idle"
        writer.transport.abort()

    run(scenario, Broker)


def test_a_connect_that_takes_over_a_connection_that_reads_nothing_closes_its_socket() -> None:
    """A CONNECT of a client id whose connection reads nothing closes that connection's socket.
    amqtt's close waits until the client has read all that is queued for it: the old socket,
    and the broker's writes to it waiting, stayed for as long as the client kept it open."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        _, writer = await _stop_reading_under_load(broker, connect, "dev", clean=False)
        old = broker._sessions["dev"][1].writer._writer.get_extra_info("socket")
        await connect("dev", username="u", clean=False)
        assert broker._sessions["dev"][0].transitions.state == "connected"
        await _until(lambda: old.fileno() == -1)  # closed by the broker
        writer.transport.abort()

    run(scenario, Broker)


def test_a_client_that_stops_in_the_middle_of_a_packet_is_disconnected_by_its_keep_alive() -> None:
    """amqtt times the keep-alive on the wait for a packet's first bytes only, then waits for
    the rest of the packet for ever: a client that sent the start of a PUBLISH and nothing more
    (its link lost in the middle of a large one) kept its connection and its session, its will
    never sent. Here a packet's next bytes are waited for as long as the keep-alive allows
    between packets, as Mosquitto (it closes a client that sends nothing for that long)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        watcher = await connect("watch")
        assert await watcher.subscribe([("wills/#", QOS_1)]) == [QOS_1]
        connack, reader, writer = await _raw_connect(_port(broker), "stall", "u", "wills/stall", keep_alive=1)
        assert connack == b"\x20\x02\x00\x00"
        writer.write(bytes([0x30, 0xC8, 0x01]) + _name("stall/x") + b"start")  # 200 bytes announced
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed by the broker
        will = await watcher.deliver_message(timeout_duration=WAIT)
        assert will is not None
        assert will.topic == "wills/stall"
        writer.transport.abort()

    run(scenario, Broker)


def test_a_client_that_reads_nothing_is_sent_at_most_max_sending_messages_at_once() -> None:
    """amqtt starts a write of every message for a connected client at once, each then waiting
    for its socket while the client reads nothing: one waiting write, holding its message, per
    message, for as long as the client keeps its connection (for ever with no keep-alive, or
    pinging), the broker's memory growing with every message it subscribed to. Here at most
    MAX_SENDING messages are being sent to a client at once, later ones dropped, as Mosquitto
    drops them (max_inflight_messages plus max_queued_messages)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        _, writer = await _stop_reading_under_load(broker, connect, "slow", keep_alive=0)
        watcher = await connect("watch")
        assert await watcher.subscribe([(SENTINEL, QOS_0)]) == [QOS_0]
        pub = await connect("pub")
        for n in range(MAX_SENDING + 100):
            await pub.publish(f"load/{n}", b"x", qos=QOS_0)
        assert await received_until_sentinel(watcher, pub) == []  # all of them routed by now
        assert sum(not task.done() for task in broker._tasks_queue) <= MAX_SENDING
        writer.transport.abort()

    run(scenario, Broker)


def test_a_connect_is_not_held_up_by_a_connection_that_reads_nothing_of_its_backlog() -> None:
    """A CONNECT of a client id waits for the CONNECT before it to be done with the session,
    not for that connection to have read its backlog: mallory resumed alice's session, with 20
    MB queued for it, read nothing and sent no keep-alive, and alice's next CONNECT waited for
    as long as mallory's connection stayed (Mosquitto's CONNECT takes it over at once)."""

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        alice = await connect("c", username="alice", clean=False)
        assert await alice.subscribe([("load/#", QOS_1)]) == [QOS_1]
        await alice.disconnect()
        pub = await connect("pub", username="pub")
        for n in range(20):
            await pub.publish(f"load/{n}", b"s" * (1 << 20), qos=QOS_1)
        session = broker._sessions["c"][0]
        await _until(lambda: session.retained_messages.qsize() == 20)
        connack, _, writer = await _raw_connect(
            _port(broker), "c", "mallory", "zz/w", clean=False, keep_alive=0
        )
        assert connack == b"\x20\x02\x01\x00"
        _reads_nothing(broker, "c", writer)
        await asyncio.wait_for(connect("c", username="alice", clean=False), WAIT)
        assert broker._sessions["c"][0].username == "alice"
        writer.transport.abort()

    # Not anonymous: amqtt queues nothing for an anonymous session that is away.
    run(scenario, Broker, {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": False}})


def test_a_client_that_reads_nothing_is_read_from_no_further_than_max_pending_packets() -> None:
    """amqtt reads a client's packets as fast as they come, each handled by a task of its own:
    a client that reads nothing (so that the broker's answers wait for its socket) and keeps
    sending QoS 1 PUBLISHes left one task per PUBLISH waiting to send its PUBACK, holding the
    message (3,000 of 100 KB: 190 MB). Here the broker reads no more of a client while
    MAX_PENDING of its packets wait (for its socket, or in its queues), as Mosquitto stops
    reading a client whose answers it cannot send."""

    def waiting() -> int:
        names = (getattr(task.get_coro(), "__qualname__", "") for task in asyncio.all_tasks())
        return sum(name.endswith(".handle_publish") for name in names)

    async def scenario(broker: Broker, connect: Callable[..., Awaitable[MQTTClient]]) -> None:
        _, writer = await _stop_reading_under_load(broker, connect, "flood", keep_alive=0)
        packets = MAX_PENDING + 500
        writer.write(
            b"".join(_packet(0x32, _name("nobody") + (n + 1).to_bytes(2, "big")) for n in range(packets))
        )
        await _until(lambda: waiting() >= MAX_PENDING // 2)
        await asyncio.sleep(0.5)  # time enough to read all the others (0.1 s without the bound)
        assert waiting() <= MAX_PENDING + 64  # and the packets of 64 reads, at most
        writer.transport.abort()

    run(scenario, Broker)
