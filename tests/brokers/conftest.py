"""The conformance suite's brokers: (host, port) of private RabbitMQ, Mosquitto and nats-server
instances, each started once per run, on first use, on 127.0.0.1, and stopped by PID at the end.

The latency harness starts them (:mod:`topicmatch_latency.testing`, which the harness's own tests
share, so a run of both suites boots each broker once); it is imported here, inside the
fixtures, so that the rest of the library's tests run without it. Without it, or without a
broker, the test fails with the install command: a skipped conformance test proves nothing.

The oracles use fresh connections (and exchanges) per call, so sharing one broker between tests
leaks nothing.
"""

from __future__ import annotations

import pytest

Address = tuple[str, int]


def _broker(config: pytest.Config, system: str) -> Address:
    try:
        from topicmatch_latency.testing import broker  # noqa: PLC0415 - only the brokers' tests need it
    except ImportError:
        pytest.fail(
            "the conformance tests' brokers are started by the latency harness, which is not "
            "installed: pip install ./latency (from a checkout of topicmatch)",
            pytrace=False,
        )
    server = broker(config, system)
    return (server.host, server.port)


@pytest.fixture(scope="session")
def rabbitmq(pytestconfig: pytest.Config) -> Address:
    """(host, port) of a private RabbitMQ node (AMQP 0-9-1)."""
    return _broker(pytestconfig, "rabbitmq")


@pytest.fixture(scope="session")
def mosquitto(pytestconfig: pytest.Config) -> Address:
    """(host, port) of a private Mosquitto broker (MQTT)."""
    return _broker(pytestconfig, "mqtt")


@pytest.fixture(scope="session")
def nats_server(pytestconfig: pytest.Config) -> Address:
    """(host, port) of a private nats-server."""
    return _broker(pytestconfig, "nats")
