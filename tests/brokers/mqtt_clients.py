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
from collections.abc import Iterator
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


class V5Client:
    """One MQTT v5 connection (or 3.1.1, ``mqtt5=False``) with its network loop on a thread:
    publish with QoS 1 and read the PUBACK's reason code, subscribe and collect what arrives."""

    def __init__(self, port: int, client_id: str, username: str | None = None, mqtt5: bool = True) -> None:
        protocol = MQTTProtocolVersion.MQTTv5 if mqtt5 else MQTTProtocolVersion.MQTTv311
        self.client = Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol)
        if username is not None:
            self.client.username_pw_set(username)
        self.received: list[str] = []
        self._acks: dict[int, int] = {}
        self._suback: dict[int, list[int]] = {}
        self._event = threading.Condition()
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.client.on_subscribe = self._on_subscribe
        self.client.connect(HOST, port)
        self.client.loop_start()
        self._wait(self.client.is_connected, "CONNACK")

    def _wait(self, done: object, what: str) -> None:
        deadline = time.monotonic() + WAIT
        with self._event:
            while not done():  # type: ignore[operator]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {what} within {WAIT} s")
                self._event.wait(min(left, 0.05))

    def _on_message(self, _c: Client, _u: object, message: MQTTMessage) -> None:
        with self._event:
            self.received.append(message.topic)
            self._event.notify_all()

    def _on_publish(self, _c: Client, _u: object, mid: int, reason: ReasonCode, _p: Properties) -> None:
        with self._event:
            self._acks[mid] = reason.value
            self._event.notify_all()

    def _on_subscribe(
        self, _c: Client, _u: object, mid: int, codes: list[ReasonCode], _p: Properties
    ) -> None:
        with self._event:
            self._suback[mid] = [code.value for code in codes]
            self._event.notify_all()

    def publish(self, topic: str, payload: bytes = b"x") -> int:
        """Publish with QoS 1; the PUBACK's reason code (below 0x80: accepted)."""
        mid = self.client.publish(topic, payload, qos=1).mid
        self._wait(lambda: mid in self._acks, f"PUBACK of {topic!r}")
        return self._acks.pop(mid)

    def subscribe(self, filter_: str) -> int:
        """Subscribe with QoS 1; the SUBACK's reason code."""
        _rc, mid = self.client.subscribe(filter_, qos=1)
        assert mid is not None
        self._wait(lambda: mid in self._suback, f"SUBACK of {filter_!r}")
        return self._suback.pop(mid)[0]

    def wait_for(self, topic: str) -> None:
        """Wait until a message on ``topic`` has arrived (a sentinel behind the others)."""
        self._wait(lambda: topic in self.received, f"message on {topic!r}")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
