"""The mqtt dialect's level limit against a real Mosquitto: 200 '/' in a topic or a filter are
taken, 201 refused (Mosquitto's TOPIC_HIERARCHY_LIMIT; a shared filter's '$share/<group>/'
counts), and the dialect takes and refuses the same strings."""

from __future__ import annotations

import time

import pytest

from topicmatch import InvalidPatternError, InvalidTopicError, make_dialect

from .mqtt_clients import WAIT, V5Client

pytestmark = pytest.mark.brokers

MQTT = make_dialect("mqtt")


def _deep(slashes: int, prefix: str = "") -> str:
    return prefix + "a/" * (slashes - prefix.count("/")) + "a"


def _mosquitto_takes(port: int, operation: str, text: str) -> bool:
    """Whether Mosquitto answers a PUBLISH (QoS 1) or a SUBSCRIBE of ``text`` instead of
    closing the connection, as it does for a topic or a filter it refuses."""
    client = V5Client(port, f"limits-{operation}")
    dropped: list[bool] = []
    client.client.on_disconnect = lambda *_args: dropped.append(True)
    try:
        if operation == "publish":
            mid: int | None = client.client.publish(text, b"x", qos=1).mid
            answers: dict[int, object] = client.acks  # type: ignore[assignment]
        else:
            _rc, mid = client.client.subscribe(text, qos=1)
            answers = client.subacks  # type: ignore[assignment]
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if mid in answers:
                return True
            if dropped:
                return False
            time.sleep(0.01)
        raise TimeoutError(f"Mosquitto neither answered nor closed within {WAIT} s")
    finally:
        client.close()


def _dialect_takes(operation: str, text: str) -> bool:
    try:
        (MQTT.parse_topic if operation == "publish" else MQTT.parse_pattern)(text)
    except (InvalidTopicError, InvalidPatternError):
        return False
    return True


@pytest.mark.parametrize(
    ("operation", "text", "taken"),
    [
        ("publish", _deep(200), True),
        ("publish", _deep(201), False),
        ("subscribe", _deep(200), True),
        ("subscribe", _deep(201), False),
        ("subscribe", _deep(200, "$share/g/"), True),
        ("subscribe", _deep(201, "$share/g/"), False),
    ],
    ids=["topic-200", "topic-201", "filter-200", "filter-201", "shared-200", "shared-201"],
)
def test_the_level_limit_is_mosquittos(
    mosquitto: tuple[str, int], operation: str, text: str, taken: bool
) -> None:
    assert text.count("/") in (200, 201)
    assert _mosquitto_takes(mosquitto[1], operation, text) is taken
    assert _dialect_takes(operation, text) is taken
