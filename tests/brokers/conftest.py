"""Session fixtures: each real broker is started once, on first use, and stopped at the end.

Why session scope: RabbitMQ alone takes seconds to boot; the oracles use
fresh connections (and exchanges) per call, so sharing one broker between
tests leaks nothing. A missing broker binary is a failure, not a skip: a
conformance suite that silently skips proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from topicmatch.bench.servers import (
    INSTALL_HINT,
    BrokerStartError,
    MosquittoServer,
    NatsServer,
    RabbitMQServer,
    missing_binaries,
)

Address = tuple[str, int]


def _serve(server: RabbitMQServer | MosquittoServer | NatsServer) -> Iterator[Address]:
    missing = missing_binaries(server.binary_key)
    if missing:
        pytest.fail(f"{server.name} is not installed (missing {', '.join(missing)}): {INSTALL_HINT}")
    try:
        server.start()
    except BrokerStartError as exc:
        pytest.fail(str(exc))
    try:
        yield (server.host, server.port)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[Address]:
    """(host, port) of a private RabbitMQ node (AMQP 0-9-1)."""
    yield from _serve(RabbitMQServer())


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[Address]:
    """(host, port) of a private Mosquitto broker (MQTT)."""
    yield from _serve(MosquittoServer())


@pytest.fixture(scope="session")
def nats_server() -> Iterator[Address]:
    """(host, port) of a private nats-server."""
    yield from _serve(NatsServer())
