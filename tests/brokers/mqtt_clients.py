"""A private Mosquitto with a config of the test's own, and small blocking MQTT v5 clients.

For the tests that need more than the shared session broker of tests/conftest.py (an
``acl_file``): the broker runs on 127.0.0.1 on a free port, from a config in the test's own
temporary directory, and is stopped by its PID. Every wait is bounded and fails the test when
exceeded.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from paho.mqtt.client import Client, MQTTMessage
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

HOST = "127.0.0.1"
WAIT = 10.0  # seconds any single wait may take


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def mosquitto(directory: Path, extra: list[str]) -> Iterator[int]:
    """A Mosquitto 2.0 listening on 127.0.0.1 (its port is yielded), with ``extra`` config
    lines; stopped by PID on exit."""
    port = free_port()
    conf = directory / "mosquitto.conf"
    # Started as root, Mosquitto drops to the 'mosquitto' user before it reads the acl_file,
    # which then cannot enter the test's private temporary directory: stay who we are.
    who = [f"user {getpass.getuser()}"] if os.geteuid() == 0 else []
    conf.write_text(
        "\n".join([f"listener {port} {HOST}", "allow_anonymous true", "persistence false", *who, *extra, ""])
    )
    log = (directory / "mosquitto.log").open("w")
    process = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log_text = (directory / "mosquitto.log").read_text()
                    raise RuntimeError(f"mosquitto did not start: {log_text}") from None
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


class Connection:
    """One MQTT v5 connection (or 3.1.1, ``mqtt5=False``) with its network loop on a thread,
    connected on return; bounded waits (:meth:`wait`) for what the callbacks record: the
    reason codes of each SUBACK and PUBACK, the UNSUBACKs. Subclasses say what a message does
    (:meth:`on_message`)."""

    def __init__(self, port: int, client_id: str, username: str | None = None, mqtt5: bool = True) -> None:
        protocol = MQTTProtocolVersion.MQTTv5 if mqtt5 else MQTTProtocolVersion.MQTTv311
        self.client = Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol)
        if username is not None:
            self.client.username_pw_set(username)
        self.acks: dict[int, int] = {}  # PUBACK reason code by message id
        self.subacks: dict[int, list[int]] = {}  # SUBACK reason codes by message id
        self.unsubacks: set[int] = set()
        self.event = threading.Condition()
        self.client.on_message = lambda _c, _u, message: self.on_message(message)
        self.client.on_publish = self._on_publish
        self.client.on_subscribe = self._on_subscribe
        self.client.on_unsubscribe = self._on_unsubscribe
        self.client.connect(HOST, port)
        self.client.loop_start()
        self.wait(self.client.is_connected, "CONNACK")

    def on_message(self, message: MQTTMessage) -> None:
        raise NotImplementedError

    def wait(self, done: Callable[[], bool], what: str) -> None:
        """Wait until ``done()``; TimeoutError naming ``what`` after WAIT seconds."""
        deadline = time.monotonic() + WAIT
        with self.event:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {what} within {WAIT} s")
                self.event.wait(min(left, 0.05))

    def _on_publish(self, _c: Client, _u: object, mid: int, reason: ReasonCode, _p: Properties) -> None:
        with self.event:
            self.acks[mid] = reason.value
            self.event.notify_all()

    def _on_subscribe(
        self, _c: Client, _u: object, mid: int, codes: list[ReasonCode], _p: Properties
    ) -> None:
        with self.event:
            self.subacks[mid] = [code.value for code in codes]
            self.event.notify_all()

    def _on_unsubscribe(self, _c: Client, _u: object, mid: int, _codes: list[ReasonCode], _p: object) -> None:
        with self.event:
            self.unsubacks.add(mid)
            self.event.notify_all()

    def unsubscribe(self, *filters: str) -> None:
        """One UNSUBSCRIBE of ``filters``, waiting for its UNSUBACK."""
        _rc, mid = self.client.unsubscribe(list(filters))
        assert mid is not None
        self.wait(lambda: mid in self.unsubacks, f"UNSUBACK of {filters}")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class V5Client(Connection):
    """A :class:`Connection` that publishes with QoS 1 and reads the PUBACK's reason code,
    subscribes, and collects the topics of what arrives."""

    def __init__(self, port: int, client_id: str, username: str | None = None, mqtt5: bool = True) -> None:
        self.received: list[str] = []
        super().__init__(port, client_id, username, mqtt5)

    def on_message(self, message: MQTTMessage) -> None:
        with self.event:
            self.received.append(message.topic)
            self.event.notify_all()

    def publish(self, topic: str, payload: bytes = b"x") -> int:
        """Publish with QoS 1; the PUBACK's reason code (below 0x80: accepted)."""
        mid = self.client.publish(topic, payload, qos=1).mid
        self.wait(lambda: mid in self.acks, f"PUBACK of {topic!r}")
        return self.acks.pop(mid)

    def subscribe(self, filter_: str) -> int:
        """Subscribe with QoS 1; the SUBACK's reason code."""
        _rc, mid = self.client.subscribe(filter_, qos=1)
        assert mid is not None
        self.wait(lambda: mid in self.subacks, f"SUBACK of {filter_!r}")
        return self.subacks.pop(mid)[0]

    def wait_for(self, topic: str) -> None:
        """Wait until a message on ``topic`` has arrived (a sentinel behind the others)."""
        self.wait(lambda: topic in self.received, f"message on {topic!r}")
