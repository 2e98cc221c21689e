"""topicmatch.compat.amqtt's options against a real amqtt broker on 127.0.0.1 with real amqtt
clients: the share policies EMQX adds (sticky, hash of the publisher's client id), the
per-client limits, hostile SUBSCRIBEs (10,000 filters in one packet, a 64 KB filter,
``$share//x``, a NUL), the bulk path through one ``subscribe_many``, and the command
``python -m topicmatch.compat.amqtt -c broker.yaml``. A refused filter is answered with amqtt's
SUBACK failure code 0x80 (amqtt speaks MQTT 3.1.1) and leaves the broker's state as it was.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import amqtt
import pytest
from amqtt.client import MQTTClient
from amqtt.errors import BrokerError
from amqtt.mqtt.constants import QOS_1

from topicmatch import Matcher, Subscription
from topicmatch.compat.amqtt import Broker

from .brokers.mqtt_clients import free_port
from .test_compat_amqtt import SENTINEL, WAIT, _config, received_until_sentinel, run

FAILED = 0x80
Connect = Callable[..., Awaitable[MQTTClient]]


def _options(**options: Any) -> dict[str, Any]:
    return {"topicmatch.compat.amqtt.BrokerOptions": options}


def _state(broker: Broker) -> tuple[Any, ...]:
    """Everything a SUBSCRIBE may change: amqtt's subscriptions and the broker's own."""
    amqtt_view = {f: sorted(s.client_id for s, _ in held) for f, held in broker._subscriptions.items()}
    planner = broker._planner
    return (
        amqtt_view,
        {c: planner.subscriptions(c) for c in broker._session_of},
        len(planner._matcher),
    )


async def _jobs_of(member: MQTTClient) -> list[str]:
    """The payloads a member received before the sentinel (each member is subscribed to it)."""
    got: list[str] = []
    for _ in range(1000):  # bounded: far more than any test sends
        message = await member.deliver_message(timeout_duration=WAIT)
        assert message is not None
        if message.topic == SENTINEL:
            return got
        got.append(bytes(message.data).decode())
    raise AssertionError("no sentinel")


async def _members(connect: Connect, count: int) -> list[MQTTClient]:
    members = [await connect(f"w{n}") for n in range(count)]
    for member in members:
        assert await member.subscribe([("$share/w/jobs/+", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
    return members


def test_sticky_sends_every_message_to_one_member_until_it_leaves() -> None:
    async def scenario(broker: Broker, connect: Connect) -> None:
        members = await _members(connect, 3)
        pub = await connect("pub")
        for n in range(6):
            await pub.publish(f"jobs/{n}", b"first", qos=QOS_1)
        await pub.publish(SENTINEL, b"end", qos=QOS_1)
        counts = [len(await _jobs_of(member)) for member in members]
        assert sorted(counts) == [0, 0, 6]  # round-robin would give [2, 2, 2]
        sticky = counts.index(6)
        await members[sticky].unsubscribe(["$share/w/jobs/+"])
        for n in range(6):
            await pub.publish(f"jobs/{n}", b"second", qos=QOS_1)
        await pub.publish(SENTINEL, b"end", qos=QOS_1)
        again = [len(await _jobs_of(member)) for member in members]
        assert again[sticky] == 0
        assert sorted(again) == [0, 0, 6]  # another member, which sticks

    run(scenario, Broker, _options(share_policy="sticky"))


def test_hash_clientid_keeps_each_publishers_messages_on_one_member() -> None:
    topics = [f"jobs/{n}" for n in range(12)]
    assert len({zlib.crc32(t.encode()) % 3 for t in topics}) == 3  # a hash of the topic spreads them

    async def scenario(broker: Broker, connect: Connect) -> None:
        members = await _members(connect, 3)
        publishers = [await connect(name) for name in ("p1", "p2", "p3", "p4")]
        for pub in publishers:
            for topic in topics:
                await pub.publish(topic, pub.client_id.encode(), qos=QOS_1)
        await publishers[0].publish(SENTINEL, b"end", qos=QOS_1)
        got = [await _jobs_of(member) for member in members]
        assert sum(len(jobs) for jobs in got) == len(topics) * len(publishers)
        for pub in publishers:
            holders = [n for n, jobs in enumerate(got) if pub.client_id in jobs]
            assert len(holders) == 1, f"{pub.client_id}'s messages reached members {holders}"
            assert got[holders[0]].count(pub.client_id) == len(topics)

    run(scenario, Broker, _options(share_policy="hash_clientid"))


def test_limits_refuse_costly_filters_and_filters_beyond_the_maximum() -> None:
    async def scenario(broker: Broker, connect: Connect) -> None:
        client = await connect("c")
        asked = ["a/#", "#", "+/x", "$share/g/#", "b", "c", "d"]
        codes = await client.subscribe([(f, QOS_1) for f in asked])
        assert codes == [1, FAILED, FAILED, FAILED, 1, 1, FAILED]
        before = _state(broker)
        assert await client.subscribe([("a/#", QOS_1)]) == [1]  # held already: no new one
        assert await client.subscribe([("e", QOS_1), ("#", QOS_1)]) == [FAILED, FAILED]
        assert _state(broker) == before
        await client.unsubscribe(["b"])
        assert await client.subscribe([("d", QOS_1)]) == [1]  # room again
        assert set(broker._planner.subscriptions("c")) == {"a/#", "c", "d"}

    run(scenario, Broker, _options(max_subscriptions=3, min_literal_levels=1))


def test_a_hostile_client_sending_10000_filters_in_one_subscribe() -> None:
    filters = [f"spam/{n}/+" for n in range(10_000)]

    async def scenario(broker: Broker, connect: Connect) -> None:
        hostile = await connect("hostile")
        codes = await hostile.subscribe([(f, QOS_1) for f in filters])
        assert codes == [1] * 100 + [FAILED] * 9_900
        assert broker._planner.count("hostile") == 100
        assert len(broker._planner._matcher) == 100
        assert sum(1 for f in broker.subscriptions if f.startswith("spam/")) == 100
        other = await connect("other")
        assert await other.subscribe([("spam/7/+", QOS_1), (SENTINEL, QOS_1)]) == [1, 1]
        pub = await connect("pub")
        await pub.publish("spam/7/x", b"", qos=QOS_1)
        assert await received_until_sentinel(other, pub) == ["spam/7/x"]

    run(scenario, Broker, _options(max_subscriptions=100))


class _CountingRoutes:
    """The broker's matcher, with its calls of subscribe and subscribe_many counted."""

    def __init__(self, routes: Any) -> None:
        self.routes, self.calls = routes, {"subscribe": 0, "subscribe_many": 0}

    def __getattr__(self, name: str) -> Any:
        if name in ("subscribe", "subscribe_many"):
            self.calls[name] += 1
        return getattr(self.routes, name)

    def __len__(self) -> int:
        return len(self.routes)


def test_one_subscribe_packet_joins_the_matcher_in_one_subscribe_many() -> None:
    async def scenario(broker: Broker, connect: Connect) -> None:
        counting = _CountingRoutes(broker._planner._matcher)
        broker._planner._matcher = counting  # type: ignore[assignment]
        client = await connect("bulk")
        filters = [(f"bulk/{n}/#", QOS_1) for n in range(10_000)] + [("$share/g/bulk/+", QOS_1)]
        assert await client.subscribe(filters) == [1] * len(filters)
        assert counting.calls == {"subscribe": 0, "subscribe_many": 1}
        assert len(counting) == len(filters)

    run(scenario)


def test_hostile_filters_are_refused_and_change_nothing() -> None:
    long_filter = "a" * 65_535  # the longest MQTT string: a valid one-level filter

    async def scenario(broker: Broker, connect: Connect) -> None:
        client = await connect("c")
        assert await client.subscribe([(SENTINEL, QOS_1)]) == [1]
        before = _state(broker)
        hostile = ["$share//x", "a/\x00", "a/#/b", "$share/g", "x+/y"]
        assert await client.subscribe([(f, QOS_1) for f in hostile]) == [FAILED] * len(hostile)
        assert _state(broker) == before
        assert await client.subscribe([(long_filter, QOS_1)]) == [1]
        pub = await connect("pub")
        await pub.publish(long_filter, b"", qos=QOS_1)
        assert await received_until_sentinel(client, pub) == [long_filter]

    run(scenario)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"share_policy": "nope"}, "unknown share_policy 'nope'; choose one of round_robin, random"),
        ({"max_subscriptions": -1}, "max_subscriptions must be 0 or more, not -1"),
    ],
)
def test_a_bad_option_stops_the_broker_with_one_line(options: dict[str, Any], message: str) -> None:
    async def make() -> None:
        Broker(_config(free_port(), _options(**options)))

    with pytest.raises(BrokerError, match=message):
        asyncio.run(make())


# -- the command --------------------------------------------------------------------------------
BROKER_YAML = """\
listeners:
  default:
    type: tcp
    bind: 127.0.0.1:{port}
plugins:
  amqtt.plugins.authentication.AnonymousAuthPlugin:
    allow_anonymous: true
  topicmatch.compat.amqtt.BrokerOptions:
    share_policy: {policy}
  topicmatch.compat.amqtt.TopicACLPlugin:
    subscribe_acl:
      anonymous: ["sensors/+", "$share/g/+"]
"""


def serve(config: Path, port: int) -> subprocess.Popen[str]:
    """``python -m topicmatch.compat.amqtt -c config``, once it accepts connections on ``port``;
    with Ctrl-C's default action, as in a terminal, even where this process ignores it (a job
    started in the background by a shell without job control: it would wait and be killed)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "topicmatch.compat.amqtt", "-c", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - one call, no lock
    )
    deadline = time.monotonic() + WAIT * 6
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(process)
                raise AssertionError(f"the broker did not start: {process.communicate()[0]}") from None
            time.sleep(0.1)


def stop(process: subprocess.Popen[str]) -> str:
    """Stop the command as a user does (Ctrl-C: amqtt's command shuts the broker down), by PID."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(WAIT * 3)
        except subprocess.TimeoutExpired:
            process.kill()
    out, _ = process.communicate()
    return out


async def shared_and_acl(port: int) -> tuple[list[int], list[str]]:
    """SUBSCRIBE codes of filters the ACL allows and refuses, and what a shared subscriber
    receives: only topicmatch's broker delivers a $share subscription's messages."""
    client, pub = MQTTClient(client_id="c"), MQTTClient(client_id="p")
    await client.connect(f"mqtt://127.0.0.1:{port}/")
    await pub.connect(f"mqtt://127.0.0.1:{port}/")
    try:
        codes = await client.subscribe([("sensors/+", QOS_1), ("sensors/#", QOS_1), ("$share/g/t", QOS_1)])
        await pub.publish("t", b"", qos=QOS_1)
        message = await client.deliver_message(timeout_duration=WAIT)
        return codes, [message.topic] if message is not None else []
    finally:
        await client.disconnect()
        await pub.disconnect()


def test_the_command_runs_topicmatchs_broker_from_a_yaml_file(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "broker.yaml"
    config.write_text(BROKER_YAML.format(port=port, policy="sticky"))
    process = serve(config, port)
    try:
        codes, got = asyncio.run(asyncio.wait_for(shared_and_acl(port), WAIT * 3))
    finally:
        stop(process)
    assert codes == [1, FAILED, 1]  # TopicACLPlugin: sensors/+ does not cover sensors/#
    assert got == ["t"]


def test_the_command_takes_amqtts_options_and_says_why_it_cannot_start(tmp_path: Path) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "topicmatch.compat.amqtt", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (version.returncode, version.stdout.strip()) == (0, amqtt.__version__)
    config = tmp_path / "broker.yaml"
    config.write_text(BROKER_YAML.format(port=free_port(), policy="nope"))
    failed = subprocess.run(
        [sys.executable, "-m", "topicmatch.compat.amqtt", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert failed.returncode == 1
    assert "Broker failed to start: BrokerOptions: unknown share_policy 'nope'" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_persistent_sessions_subscriptions_come_back_after_a_restart(tmp_path: Path) -> None:
    """With ``subscriptions_file``, a shutdown writes the subscriptions of the sessions that
    outlive a disconnect (clean session off), and the next start brings them back: a message
    published while the client is away reaches it when it resumes its session. A clean
    session's subscriptions are not kept; a file that is not one the broker wrote stops the
    start, and is left as it was."""
    saved = tmp_path / "subscriptions"
    plugins = _options(subscriptions_file=str(saved))

    async def main() -> None:
        port = free_port()
        first = Broker(_config(port, plugins))
        await first.start()
        keeper = MQTTClient(client_id="keeper", config={"auto_reconnect": False})
        await keeper.connect(f"mqtt://alice@127.0.0.1:{port}/", cleansession=False)
        assert await keeper.subscribe([("a/+", QOS_1), ("b/#", 0)]) == [QOS_1, 0]
        passer = MQTTClient(client_id="passer", config={"auto_reconnect": False})
        await passer.connect(f"mqtt://127.0.0.1:{port}/", cleansession=True)
        assert await passer.subscribe([("a/+", QOS_1)]) == [QOS_1]
        await keeper.disconnect()
        await passer.disconnect()
        await first.shutdown()
        kept = Matcher.load(saved).subscriptions()
        assert kept == {"a/+": {'[1, "alice", "keeper"]'}, "b/#": {'[0, "alice", "keeper"]'}}

        second = Broker(_config(port, plugins))
        await second.start()
        try:
            assert second._planner.subscriptions("keeper") == {
                "a/+": Subscription(qos=QOS_1),
                "b/#": Subscription(qos=0),
            }
            assert "passer" not in second._session_of
            assert second._session_of["keeper"].username == "alice"  # for the checks it passed again
            # A restored session is a persistent one: the next shutdown keeps it again.
            second.save_subscriptions(str(tmp_path / "again"))
            assert Matcher.load(tmp_path / "again").subscriptions() == kept
            publisher = MQTTClient(client_id="pub", config={"auto_reconnect": False})
            await publisher.connect(f"mqtt://127.0.0.1:{port}/")
            await publisher.publish("a/x", b"while away", qos=QOS_1)
            await publisher.disconnect()
            back = MQTTClient(client_id="keeper", config={"auto_reconnect": False})
            await back.connect(f"mqtt://alice@127.0.0.1:{port}/", cleansession=False)
            message = await back.deliver_message(timeout_duration=WAIT)
            assert message is not None
            assert (message.topic, bytes(message.data)) == ("a/x", b"while away")
            await back.disconnect()
        finally:
            await second.shutdown()

        saved.write_bytes(b"not a subscriptions file")
        with pytest.raises(BrokerError, match=r"subscriptions_file: cannot load .* nothing was loaded"):
            Broker(_config(port, plugins))
        assert saved.read_bytes() == b"not a subscriptions file"

    asyncio.run(asyncio.wait_for(main(), WAIT * 6))
