"""Fixtures of the latency tests: private brokers, started once per session and stopped by PID.

A broker that is missing fails the test with the install command (a skipped benchmark test
proves nothing), as in the conformance suite.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from topicmatch.bench import servers
from topicmatch.bench.latency._systems import SystemUnavailable, start_server


def _serve(server: servers._Server) -> Iterator[servers._Server]:
    try:
        start_server(server)
    except SystemUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nats_broker() -> Iterator[servers._Server]:
    yield from _serve(servers.NatsServer())


@pytest.fixture(scope="session")
def redis_broker() -> Iterator[servers._Server]:
    yield from _serve(servers.RedisServer())


@pytest.fixture(scope="session")
def rabbitmq_broker() -> Iterator[servers._Server]:
    yield from _serve(servers.RabbitMQServer())


@pytest.fixture(scope="session")
def mqtt_broker() -> Iterator[servers._Server]:
    yield from _serve(servers.MosquittoServer())
