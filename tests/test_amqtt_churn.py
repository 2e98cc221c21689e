"""topicmatch.compat.amqtt.Broker against hostile clients: churn during broadcasts, and clients
that leave.

Both tests run the broker on this process's event loop and their real paho-mqtt clients in a
process of their own (tests/churn_clients.py), so that the broker has a core to itself and what
this process allocates is the broker's. The churn test: stable subscribers count what they
receive while a few clients subscribe, unsubscribe, disconnect and reconnect all along, and a
final sentinel behind the load closes each count. The departure test: clients subscribe and
leave, every way a session ends, and the broker's structures and tracemalloc's count of its
memory are compared before and after. Every wait is bounded; nothing is timed."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

from amqtt.broker import Broker as AmqttBroker
from amqtt.client import MQTTClient
from amqtt.mqtt.constants import QOS_1

from tests import churn_clients
from tests.brokers.mqtt_clients import HOST, WAIT, free_port
from topicmatch.compat.amqtt import Broker

ROOT = Path(__file__).resolve().parents[1]


def _config(port: int, plugins: dict[str, Any]) -> dict[str, Any]:
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"{HOST}:{port}"}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}, **plugins},
    }


def _acl_plugin(directory: Path) -> dict[str, Any]:
    """TopicACLPlugin on, with a Mosquitto acl_file that allows every client everything: every
    delivery then awaits the plugin's RECEIVE check, the await a churning client slips into."""
    acl = directory / "acl"
    acl.write_text("pattern readwrite #\n")
    return {"topicmatch.compat.amqtt.TopicACLPlugin": {"acl_file": str(acl)}}


def test_churn_during_broadcasts_loses_no_delivery_to_a_stable_subscriber(tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        port = free_port()
        broker = Broker(_config(port, _acl_plugin(tmp_path)))
        await broker.start()
        try:
            clients = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.churn_clients",
                str(port),
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
            )
            try:
                # A guard against a hang, far beyond the child's own bounds (LAST and its waits).
                out, _ = await asyncio.wait_for(clients.communicate(), churn_clients.LAST * 2 + WAIT * 20)
            finally:
                if clients.returncode is None:
                    clients.kill()
                    await clients.wait()
            assert clients.returncode == 0
            report: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
            return report
        finally:
            await broker.shutdown()

    report = asyncio.run(main())
    assert report["errors"] == []
    assert report["cycles"] >= churn_clients.CHURNERS  # the churn happened
    assert report["sentinel_arrived"]  # the sentinel is a broadcast too, and could be lost
    stable = [(filter_, churn_clients.expected(filter_), got) for filter_, got in report["stable"]]
    lost = sum(want - got for _filter, want, got in stable)
    total = sum(want for _filter, want, _got in stable)
    assert lost == 0, f"{lost} of {total} deliveries lost; (filter, expected, received): {stable}"
    messages = churn_clients.MESSAGES
    assert sum(report["shared"]) == messages, f"the stable shared group got {report['shared']} of {messages}"


DEPARTED = 100  # clients per round of the departure test


async def _depart(port: int, first: int, count: int) -> None:
    """Run ``count`` departing clients (tests/churn_clients.py's depart) in a process of their
    own, so that what this process allocates is the broker's. Bounded so that it cannot hang, by
    far more than it takes on a busy machine: each of its own waits is bounded by WAIT."""
    clients = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.churn_clients", str(port), "depart", str(first), str(count), cwd=ROOT
    )
    try:
        assert await asyncio.wait_for(clients.wait(), WAIT * 30) == 0
    finally:
        if clients.returncode is None:
            clients.kill()
            await clients.wait()


async def _until_sessions(broker: Broker, count: int) -> None:
    """Wait until the broker holds ``count`` sessions (amqtt's session monitor ends a
    disconnected clean session within a second or so); fail once their number has come no
    closer for WAIT seconds, or after WAIT * 30 in all."""
    loop = asyncio.get_running_loop()
    started = changed = loop.time()
    closest = abs(len(broker.sessions) - count)
    while len(broker.sessions) != count:
        now = loop.time()
        if now - changed > WAIT or now - started > WAIT * 30:
            raise AssertionError(
                f"{len(broker.sessions)} sessions left, not {count}: {sorted(broker.sessions)}"
            )
        await asyncio.sleep(0.05)
        if abs(len(broker.sessions) - count) < closest:
            closest, changed = abs(len(broker.sessions) - count), loop.time()


def _held(broker: Broker, own: set[str]) -> dict[str, int]:
    """The number of entries of each sized structure the subclass adds to amqtt's broker (and
    of its DeliveryPlanner's and the planner's share groups' own), and of amqtt's dicts of
    sessions and subscriptions."""
    held = {name: len(value) for name in sorted(own) if hasattr(value := getattr(broker, name), "__len__")}
    planner = broker._planner
    held |= {f"_planner.{name}": len(getattr(planner, name)) for name in ("_clients", "_created", "_matcher")}
    groups = planner._groups
    held |= {f"_planner._groups.{name}": len(getattr(groups, name)) for name in ("_members", "_next")}
    return held | {"_sessions": len(broker._sessions), "_subscriptions": len(broker._subscriptions)}


def test_departed_clients_leave_nothing_in_the_broker() -> None:
    """Clients that subscribe (plain and $share) and leave, each way a session ends, leave no
    entry in the broker's structures nor in its share groups, and the broker's memory does not
    grow with their number: after DEPARTED clients have come and gone, tracemalloc's growth over
    DEPARTED more is less than a kilobyte a client (a kept Session alone is 24 KB)."""

    async def main() -> tuple[dict[str, int], dict[str, int], list[int]]:
        port = free_port()
        broker = Broker(_config(port, {}))
        own = set(vars(broker)) - set(vars(AmqttBroker(_config(free_port(), {}))))
        await broker.start()
        stay = MQTTClient(client_id="stay", config={"auto_reconnect": False})
        try:
            await stay.connect(f"mqtt://{HOST}:{port}/")
            await stay.subscribe([("m/+", QOS_1), ("$share/g1/m/#", QOS_1)])
            before = _held(broker, own)
            await _depart(port, 0, DEPARTED)  # warms up what grows once (caches, free lists)
            await _until_sessions(broker, 1)
            gc.collect()
            tracemalloc.start()
            try:
                sizes = [tracemalloc.get_traced_memory()[0]]
                for round_ in (1, 2):
                    await _depart(port, round_ * DEPARTED, DEPARTED)
                    await _until_sessions(broker, 1)
                    gc.collect()
                    sizes.append(tracemalloc.get_traced_memory()[0])
            finally:
                tracemalloc.stop()
            return before, _held(broker, own), sizes
        finally:
            await stay.disconnect()
            await broker.shutdown()

    before, after, (start, after_n, after_2n) = asyncio.run(main())
    assert after == before
    # the client that stays: its two routes (m/+ and its group's), its session
    assert (before["_planner._matcher"], before["_session_of"], before["_sessions"]) == (2, 1, 1)
    # The first traced round still allocates what grows once (about 1 KB a client); the second
    # grows by 0-350 bytes a client from run to run, where one kept Session costs 24 KB.
    per_client = (after_2n - after_n) / DEPARTED
    assert per_client < 1024, (
        f"{per_client:.0f} bytes per departed client (traced: {start}, {after_n}, {after_2n})"
    )
