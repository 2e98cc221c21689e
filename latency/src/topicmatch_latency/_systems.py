"""The systems ``topicmatch bench latency`` can measure, and how each is started.

Each system names its broker (started here, privately, on 127.0.0.1: see
:mod:`topicmatch_latency.servers`) and its requester (:mod:`._roundtrip`). :func:`serve` starts the
broker and yields a picklable :class:`RoundTripFactory`, so load processes can build their own
connections; :func:`running` holds any broker for a ``with`` block (the broker-throughput and
commit-log runs start theirs with it too). A broker that is not installed or does not start
raises :class:`SystemUnavailable` with one line saying how to install it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from . import servers
from ._requester import AnyRequester
from ._roundtrip import REQUESTERS, MatcherRequester

__all__ = ["SERVERS", "SYSTEMS", "RoundTripFactory", "SystemUnavailable", "running", "serve", "start_server"]

ServerT = TypeVar("ServerT", bound=servers._Server)

#: name -> what a request is, for reports.
SYSTEMS: dict[str, str] = {
    "nats": "NATS core publish + delivery back (nats-server 2.9, nats-py)",
    "redis": "Redis pub/sub PUBLISH + delivery back (Redis 7.0, redis-py)",
    "rabbitmq": "RabbitMQ AMQP 0-9-1 publish to amq.topic + delivery back, transient (RabbitMQ 3.10, pika)",
    "mqtt": "MQTT 3.1.1 QoS 0 publish + delivery back (Mosquitto 2.0, paho-mqtt)",
    "matcher": "one topicmatch Matcher.lookup, 1,000 study subscriptions (in process, no broker)",
}

#: The brokers started by :func:`serve`, and by ``bench brokers`` (:mod:`._broker_throughput`).
SERVERS = {
    "nats": servers.NatsServer,
    "redis": servers.RedisServer,
    "rabbitmq": servers.RabbitMQServer,
    "mqtt": servers.MosquittoServer,
    "activemq": servers.ActiveMQServer,
}


class SystemUnavailable(RuntimeError):
    """The system's broker is not installed or did not start; the message says what to do."""


@dataclass(frozen=True)
class RoundTripFactory:
    """Makes the requester of one connection; small and picklable for load processes."""

    system: str
    host: str = servers.HOST
    port: int = 0
    size: int = 256
    timeout: float = 10.0

    def __call__(self, connection: int) -> AnyRequester:
        if self.system == "matcher":
            return MatcherRequester(connection=connection)
        if self.system not in REQUESTERS:
            raise ValueError(f"unknown system {self.system!r}; choose from {', '.join(SYSTEMS)}")
        return REQUESTERS[self.system](self.host, self.port, self.size, connection, self.timeout)


def start_server(server: servers._Server) -> None:
    """Start ``server`` or raise :class:`SystemUnavailable` with the install command."""
    missing = servers.missing_binaries(server.binary_key)
    if missing:
        raise SystemUnavailable(
            f"{server.name} is not installed (missing {', '.join(missing)}): {servers.INSTALL_HINT}"
        )
    try:
        server.start()
    except servers.BrokerStartError as exc:
        first = str(exc).splitlines()[0]
        raise SystemUnavailable(f"{first}; is it installed correctly? {servers.INSTALL_HINT}") from None


@contextlib.contextmanager
def running(server: ServerT) -> Iterator[ServerT]:
    """``server`` started (as :func:`start_server`) for the ``with`` block, stopped after it."""
    start_server(server)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def serve(
    system: str, size: int, timeout: float = 10.0, broker: tuple[str, int] | None = None
) -> Iterator[RoundTripFactory]:
    """Start ``system``'s broker (none for ``matcher``) and yield the factory of its requesters;
    ``broker`` (host, port): use that running broker instead, on another host for example."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
    if broker is not None:
        yield RoundTripFactory(system, broker[0], broker[1], size, timeout)
        return
    if system == "matcher":
        yield RoundTripFactory(system, size=size, timeout=timeout)
        return
    with running(SERVERS[system]()) as server:
        yield RoundTripFactory(system, server.host, server.port, size, timeout)
