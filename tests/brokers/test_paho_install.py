"""topicmatch.compat.paho.install against a real Mosquitto on 127.0.0.1 with real paho clients:
a callback added for a shared subscription fires (paho's own never does: paho issue #472),
callbacks added before the install are kept, and a message no callback matches still reaches
``on_message``. A stock paho client beside it, on the same broker and messages, is the control."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from paho.mqtt.client import Client, MQTTMessage
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from topicmatch.compat.paho import install

from .mqtt_clients import HOST, WAIT, mosquitto

pytestmark = pytest.mark.brokers


class _Receiver:
    """A paho MQTT v5 client that records which handler got each message: a per-filter
    callback (by its filter) or ``on_message``."""

    def __init__(self, port: int, client_id: str, installed: bool) -> None:
        self.client = Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=MQTTProtocolVersion.MQTTv5
        )
        self.got: list[tuple[str, str]] = []  # (handler, topic)
        self.cond = threading.Condition()
        self.client.on_message = self._handler("on_message")
        self.client.message_callback_add("before/+", self._handler("before/+"))  # added before install
        if installed:
            install(self.client)
            install(self.client)  # twice changes nothing
        self.client.message_callback_add("$share/workers/jobs/+", self._handler("$share/workers/jobs/+"))
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *_args: subscribed.set()
        self.client.connect(HOST, port)
        self.client.loop_start()
        self.client.subscribe([("$share/workers/jobs/+", 1), ("before/+", 1), ("other", 1)])
        assert subscribed.wait(WAIT), "no SUBACK"

    def _handler(self, name: str) -> Any:
        def handle(_client: Client, _userdata: object, message: MQTTMessage) -> None:
            with self.cond:
                self.got.append((name, message.topic))
                self.cond.notify_all()

        return handle

    def wait_for(self, count: int) -> list[tuple[str, str]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.got) >= count, WAIT), f"got only {self.got}"
            return sorted(self.got)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def test_install_makes_shared_subscription_callbacks_fire(tmp_path: Path) -> None:
    with mosquitto(tmp_path, []) as port:
        ours, stock = _Receiver(port, "installed", True), _Receiver(port, "stock", False)
        publisher = Client(
            CallbackAPIVersion.VERSION2, client_id="publisher", protocol=MQTTProtocolVersion.MQTTv5
        )
        publisher.connect(HOST, port)
        publisher.loop_start()
        try:
            # Both receivers are members of the group 'workers': Mosquitto sends each of the two
            # jobs to one of them, in turn, so each gets one.
            for topic in ("jobs/1", "jobs/2", "before/x", "other"):
                publisher.publish(topic, b"x", qos=1).wait_for_publish(WAIT)
            got_ours, got_stock = ours.wait_for(3), stock.wait_for(3)
        finally:
            publisher.disconnect()
            publisher.loop_stop()
            ours.close()
            stock.close()
    # Mosquitto gives each member one of the two jobs; where it arrives, the handler differs.
    (job_ours,) = [topic for _name, topic in got_ours if topic.startswith("jobs/")]
    (job_stock,) = [topic for _name, topic in got_stock if topic.startswith("jobs/")]
    assert got_ours == sorted(
        [("$share/workers/jobs/+", job_ours), ("before/+", "before/x"), ("on_message", "other")]
    )
    # paho's own: the $share callback never fires, the job falls through to on_message.
    assert got_stock == sorted([("on_message", job_stock), ("before/+", "before/x"), ("on_message", "other")])


def test_install_refuses_an_invalid_filter_as_paho_refuses_bad_input() -> None:
    client = Client(CallbackAPIVersion.VERSION2)
    install(client)
    with pytest.raises(ValueError, match="a/#/b"):
        client.message_callback_add("a/#/b", print)
    client.message_callback_add("a/+/b", print)
    client.message_callback_remove("a/+/b")
    client.message_callback_remove("never/added")  # as paho: no error
