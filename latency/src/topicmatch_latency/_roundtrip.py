"""Round-trip requesters for the study's brokers, and for our own matcher.

A broker request publishes one message of the configured size on the connection's own topic and
returns when the broker has delivered that same message back to the connection's subscription:
one publish and one delivery through the broker, both of the configured size, as in the
study. Each connection has its own topic, so replies never cross. Payloads are random
(``os.urandom``, once per connection) and the reply's size is checked.

* NATS (nats-py, asyncio): publish, then ``next_msg`` on a subscription to the same subject.
* Redis pub/sub (redis-py, blocking): ``PUBLISH`` on one connection, the message arrives on a
  second, subscribed connection (a subscribed connection cannot publish).
* RabbitMQ (pika, AMQP 0-9-1, blocking): publish to ``amq.topic`` with the connection's routing
  key; an exclusive, auto-delete, non-durable queue bound to it is consumed with auto-ack
  (transient messages: no disk, like the study).
* MQTT (paho-mqtt against Mosquitto, blocking): QoS 0 publish and subscription, the network loop
  driven in the calling thread (no helper thread to hand the reply over); TCP_NODELAY set on the
  client socket, which paho leaves off.
* ``matcher``: one :meth:`topicmatch.Matcher.lookup` on the study's workload, in process.

Every blocking call is bounded by the requester's ``timeout``.
"""

from __future__ import annotations

import importlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._requester import AnyRequester

__all__ = [
    "REQUESTERS",
    "MatcherRequester",
    "MqttRequester",
    "NatsRequester",
    "RabbitMQRequester",
    "RedisRequester",
]


def _check(reply: bytes, size: int) -> None:
    if len(reply) != size:
        raise ValueError(f"reply of {len(reply)} B, expected {size} B")


@dataclass
class _BrokerRequester:
    """One connection to a broker: its address, the message size, the connection's number and
    the time-out of every blocking call. :meth:`_own_topic` gives the connection its topic and
    its payload."""

    host: str
    port: int
    size: int
    connection: int = 0
    timeout: float = 10.0

    def _own_topic(self, kind: str) -> None:
        """Set :attr:`topic` (this connection's alone, ``.``-separated) and :attr:`payload`."""
        self.topic = f"topicmatch.latency.{kind}.{os.getpid()}.{self.connection}.{uuid.uuid4().hex[:6]}"
        self.payload = os.urandom(self.size)


@dataclass
class NatsRequester(_BrokerRequester):
    """Publish and receive back through nats-server (asyncio)."""

    _nc: Any = field(default=None, repr=False)
    _sub: Any = field(default=None, repr=False)

    async def setup(self) -> None:
        nats = importlib.import_module("nats")
        self._own_topic("nats")
        self._nc = await nats.connect(
            f"nats://{self.host}:{self.port}",
            allow_reconnect=False,
            connect_timeout=self.timeout,
            max_outstanding_pings=10,
            pending_size=4 * 1024 * 1024 + 2 * self.size,
        )
        self._sub = await self._nc.subscribe(
            self.topic, pending_msgs_limit=1_000, pending_bytes_limit=16 * 1024 * 1024 + 4 * self.size
        )
        await self._nc.flush(timeout=self.timeout)

    async def request(self) -> None:
        await self._nc.publish(self.topic, self.payload)
        message = await self._sub.next_msg(timeout=self.timeout)
        _check(message.data, self.size)

    async def teardown(self) -> None:
        if self._nc is not None:
            await self._nc.close()


@dataclass
class RedisRequester(_BrokerRequester):
    """PUBLISH on one connection, receive on a subscribed second one (blocking)."""

    _pub: Any = field(default=None, repr=False)
    _sub: Any = field(default=None, repr=False)

    def setup(self) -> None:
        redis = importlib.import_module("redis")
        self._own_topic("redis")
        options = {"host": self.host, "port": self.port, "socket_timeout": self.timeout}
        self._pub = redis.Redis(**options, socket_connect_timeout=self.timeout)
        self._sub = redis.Redis(**options, socket_connect_timeout=self.timeout).pubsub()
        self._sub.subscribe(self.topic)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = self._sub.get_message(timeout=0.1)
            if message is not None and message["type"] == "subscribe":
                return
        raise TimeoutError("redis did not confirm the subscription")

    def request(self) -> None:
        self._pub.publish(self.topic, self.payload)
        deadline = time.monotonic() + self.timeout
        get = self._sub.get_message
        while True:
            message = get(ignore_subscribe_messages=True, timeout=max(0.0, deadline - time.monotonic()))
            if message is not None:
                _check(message["data"], self.size)
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no reply within {self.timeout} s")

    def teardown(self) -> None:
        if self._sub is not None:
            self._sub.close()
        if self._pub is not None:
            self._pub.close()


@dataclass
class RabbitMQRequester(_BrokerRequester):
    """Publish to amq.topic and consume from a bound exclusive queue (pika, blocking)."""

    _conn: Any = field(default=None, repr=False)
    _channel: Any = field(default=None, repr=False)
    _reply: bytes | None = field(default=None, repr=False)

    def setup(self) -> None:
        pika = importlib.import_module("pika")
        self._own_topic("amqp")  # the routing key
        parameters = pika.ConnectionParameters(
            host=self.host,
            port=self.port,
            socket_timeout=self.timeout,
            blocked_connection_timeout=self.timeout,
            connection_attempts=1,
        )
        self._conn = pika.BlockingConnection(parameters)
        self._channel = self._conn.channel()
        queue = self._channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
        self._channel.queue_bind(queue, "amq.topic", routing_key=self.topic)
        self._channel.basic_consume(queue, self._on_message, auto_ack=True)

    def _on_message(self, _channel: Any, _method: Any, _properties: Any, body: bytes) -> None:
        self._reply = body

    def request(self) -> None:
        self._reply = None
        self._channel.basic_publish("amq.topic", self.topic, self.payload)
        deadline = time.monotonic() + self.timeout
        process = self._conn.process_data_events
        while self._reply is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply within {self.timeout} s")
            process(time_limit=left)
        _check(self._reply, self.size)

    def teardown(self) -> None:
        if self._conn is not None and self._conn.is_open:
            self._conn.close()


@dataclass
class MqttRequester(_BrokerRequester):
    """QoS 0 publish and subscription on one MQTT 3.1.1 connection (paho-mqtt, blocking)."""

    _client: Any = field(default=None, repr=False)
    _reply: bytes | None = field(default=None, repr=False)
    _subscribed: bool = field(default=False, repr=False)

    def setup(self) -> None:
        mqtt = importlib.import_module("paho.mqtt.client")
        self._own_topic("mqtt")
        self.topic = self.topic.replace(".", "/")
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"tm-{uuid.uuid4().hex[:12]}")
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        client.connect(self.host, self.port, keepalive=60)
        # paho leaves Nagle's algorithm on; the other clients (and the study) turn it off.
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = client
        client.subscribe(self.topic, qos=0)
        self._loop_until(lambda: self._subscribed, "no SUBACK")

    def _on_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        self._reply = message.payload

    def _on_subscribe(self, *_args: Any) -> None:
        self._subscribed = True

    def _loop_until(self, done: Any, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        loop = self._client.loop
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what} within {self.timeout} s")
            if loop(timeout=min(left, 1.0)) != 0:
                raise ConnectionError("MQTT connection lost")

    def request(self) -> None:
        self._reply = None
        self._client.publish(self.topic, self.payload, qos=0)
        self._loop_until(lambda: self._reply is not None, "no reply")
        assert self._reply is not None
        _check(self._reply, self.size)

    def teardown(self) -> None:
        if self._client is not None:
            self._client.disconnect()


@dataclass
class MatcherRequester:
    """One lookup in a :class:`topicmatch.Matcher` holding the study's 1,000 subscriptions."""

    algorithm: str = "default"
    connection: int = 0
    seed: int = 7

    def setup(self) -> None:
        from topicmatch import Matcher  # noqa: PLC0415 - the library itself, imported where it is used
        from topicmatch.bench.shapes import study_throughput  # noqa: PLC0415

        patterns, topics = study_throughput(10_000, seed=self.seed)
        self._matcher = Matcher(self.algorithm, "amqp")
        for subscriber, pattern in enumerate(patterns):
            self._matcher.subscribe(pattern, subscriber)
        self._topics = topics
        self._next = 0

    def request(self) -> None:
        topic = self._topics[self._next]
        self._next = (self._next + 1) % len(self._topics)
        self._matcher.lookup(topic)

    def teardown(self) -> None:
        self._matcher = None  # type: ignore[assignment]


#: The broker systems' requesters: ``REQUESTERS[system](host, port, size, connection, timeout)``.
REQUESTERS: dict[str, Callable[[str, int, int, int, float], AnyRequester]] = {
    "nats": NatsRequester,
    "redis": RedisRequester,
    "rabbitmq": RabbitMQRequester,
    "mqtt": MqttRequester,
}
