"""The conformance suite's brokers: (host, port) of the session brokers of tests/conftest.py,
which the latency tests share (each broker boots once per run).

The oracles use fresh connections (and exchanges) per call, so sharing one broker between tests
leaks nothing.
"""

from __future__ import annotations

import pytest

from topicmatch_latency import servers

Address = tuple[str, int]


@pytest.fixture(scope="session")
def rabbitmq(rabbitmq_broker: servers._Server) -> Address:
    """(host, port) of a private RabbitMQ node (AMQP 0-9-1)."""
    return (rabbitmq_broker.host, rabbitmq_broker.port)


@pytest.fixture(scope="session")
def mosquitto(mqtt_broker: servers._Server) -> Address:
    """(host, port) of a private Mosquitto broker (MQTT)."""
    return (mqtt_broker.host, mqtt_broker.port)


@pytest.fixture(scope="session")
def nats_server(nats_broker: servers._Server) -> Address:
    """(host, port) of a private nats-server."""
    return (nats_broker.host, nats_broker.port)
