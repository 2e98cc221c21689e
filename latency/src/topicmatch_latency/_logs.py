"""Publisher and subscriber clients of the durable logs, behind one small asyncio interface.

A :class:`LogClient` owns one stream (created on :meth:`open`, deleted on :meth:`close`), a
publisher connection and a separate subscriber connection that receives every message appended
after :meth:`open` returned. :meth:`publish` returns only when the server has acknowledged every
message of the batch (with that system's durability, see :data:`LOGS`), and pipelines the batch.

* ``jetstream``: NATS JetStream, file storage, one replica; the subscriber is a push consumer
  with no acks (deliver new) and flow control; publishes carry a reply inbox and JetStream's
  acks are counted. The study's variables, one at a time: ``jetstream-memory`` (memory
  storage), ``jetstream-r3`` (three replicas on a cluster of three servers) and
  ``jetstream-noack`` (fire-and-forget: no reply inbox, :meth:`publish` returns once the batch
  is flushed to the socket, the exception to the rule above).
* ``rabbitmq-stream``: a RabbitMQ stream over the stream protocol (:mod:`._rabbitstream`),
  subscriber at offset ``next`` with credit.
* ``redis-stream`` and ``redis-stream-fsync``: ``XADD`` pipelined, ``XREAD BLOCK`` from the
  last id seen; the AOF is on, fsynced once a second or before every reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import servers
from ._rabbitstream import StreamClient
from ._systems import running

__all__ = ["LOGS", "LogClient", "LogInfo", "log_service"]

OnMessage = Callable[[bytes], None]


@dataclass(frozen=True)
class LogInfo:
    """What a log system is, and how durable an acknowledged message is."""

    description: str
    durability: str


LOGS: dict[str, LogInfo] = {
    "jetstream": LogInfo(
        "NATS JetStream 2.9.10, file storage, 1 replica (nats-py)",
        "no fsync per write: acknowledged once written to the OS; the file store forces a sync every "
        "2 minutes (nats-server 2.9 default; `sync_interval` is configurable from 2.10)",
    ),
    "jetstream-memory": LogInfo(
        "NATS JetStream 2.9.10, memory storage, 1 replica (nats-py)",
        "none: acknowledged once held in the server's memory; lost with the process",
    ),
    "jetstream-r3": LogInfo(
        "NATS JetStream 2.9.10, file storage, 3 replicas: a cluster of 3 servers on 127.0.0.1 (nats-py)",
        "replicated: acknowledged once a majority (2 of 3) wrote it to the OS, no fsync per write",
    ),
    "jetstream-noack": LogInfo(
        "NATS JetStream 2.9.10, file storage, 1 replica, fire-and-forget: plain publishes, no reply "
        "inbox, the publisher waits for no acknowledgement (nats-py)",
        "as jetstream, but the publisher learns of nothing: a message the server refuses is lost "
        "silently; a batch counts as published once written to the socket and flushed",
    ),
    "rabbitmq-stream": LogInfo(
        "RabbitMQ 3.10.8 stream, 1 node, stream protocol (own minimal client)",
        "no fsync: confirmed once written to the OS; streams rely on replication for durability (here "
        "1 node, so none beyond the page cache)",
    ),
    "rabbitmq-stream-r3": LogInfo(
        "RabbitMQ 3.10.8 stream, 3 replicas: a cluster of 3 nodes on 127.0.0.1, stream protocol (own "
        "minimal client)",
        "replicated: confirmed once a majority (2 of 3) of the replicas wrote it to the OS, no fsync",
    ),
    "redis-stream": LogInfo(
        "Redis 7.0.15 Streams, XADD / XREAD BLOCK (redis-py asyncio)",
        "AOF on, appendfsync everysec: replies before the fsync, which runs once a second in the background",
    ),
    "redis-stream-fsync": LogInfo(
        "Redis 7.0.15 Streams, XADD / XREAD BLOCK (redis-py asyncio)",
        "AOF on, appendfsync always: the AOF is fsynced before every reply",
    ),
}


class LogClient(Protocol):
    """A stream with one publisher and one subscriber."""

    async def open(self, on_message: OnMessage) -> None: ...

    async def publish(self, payloads: Sequence[bytes]) -> None: ...

    async def close(self) -> None: ...


class _Acks:
    """Counts acknowledgements of one batch; fails fast on a server error."""

    def __init__(self, expected: int) -> None:
        self.left = expected
        self.done = asyncio.get_running_loop().create_future()
        if expected == 0:
            self.done.set_result(None)

    def ack(self, count: int = 1) -> None:
        self.left -= count
        if self.left <= 0 and not self.done.done():
            self.done.set_result(None)

    def error(self, text: str) -> None:
        if not self.done.done():
            self.done.set_exception(RuntimeError(text))


class JetStreamLog:
    """``memory``: memory storage; ``replicas``: 1 or 3 (a cluster); ``acks=False``: the
    publisher sends plain publishes and waits for no acknowledgement (fire-and-forget)."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout: float,
        *,
        memory: bool = False,
        replicas: int = 1,
        acks: bool = True,
    ) -> None:
        self.url, self.timeout = f"nats://{host}:{port}", timeout
        name = uuid.uuid4().hex[:10]
        self.stream, self.subject = f"TM{name}", f"topicmatch.log.{name}"
        self.memory, self.replicas, self.acks = memory, replicas, acks
        self._acks: _Acks | None = None
        self._pub: Any = None
        self._sub: Any = None

    async def open(self, on_message: OnMessage) -> None:
        nats = importlib.import_module("nats")
        api = importlib.import_module("nats.js.api")
        options = {
            "allow_reconnect": False,
            "connect_timeout": self.timeout,
            "pending_size": 16 * 1024 * 1024,
        }
        self._pub = await nats.connect(self.url, **options)
        self._sub = await nats.connect(self.url, **options)
        storage = api.StorageType.MEMORY if self.memory else api.StorageType.FILE
        deadline = asyncio.get_running_loop().time() + self.timeout
        # A new cluster does not answer (or answers "temporarily unavailable") until it has
        # elected its leader, about 2 s after start: short attempts until the time-out. Creating
        # a stream again with the same settings is accepted, so an attempt that timed out but
        # went through does no harm.
        attempt = min(2.0, self.timeout)
        while True:
            try:
                await self._pub.jetstream(timeout=attempt).add_stream(
                    name=self.stream, subjects=[self.subject], storage=storage, num_replicas=self.replicas
                )
                break
            except Exception:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.5)

        async def deliver(message: Any) -> None:
            on_message(message.data)

        await self._sub.jetstream(timeout=self.timeout).subscribe(
            self.subject,
            cb=deliver,
            config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, deliver_policy=api.DeliverPolicy.NEW),
            # Without flow control the server pushes 1 MB messages faster than a Python client
            # reads them, and disconnects it as a slow consumer (64 MB pending).
            flow_control=True,
            idle_heartbeat=5.0,
            pending_msgs_limit=-1,
            pending_bytes_limit=-1,
        )
        self.inbox = self._pub.new_inbox()
        await self._pub.subscribe(
            f"{self.inbox}.*", cb=self._on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1
        )
        await self._sub.flush(self.timeout)
        await self._pub.flush(self.timeout)

    async def _on_ack(self, message: Any) -> None:
        if self._acks is not None:
            if b'"error"' in message.data:
                self._acks.error(message.data.decode(errors="replace"))
            else:
                self._acks.ack()

    async def publish(self, payloads: Sequence[bytes]) -> None:
        if not self.acks:  # fire-and-forget: written to the socket and flushed, nothing more
            publish, subject = self._pub.publish, self.subject
            for payload in payloads:
                await publish(subject, payload)
            await self._pub.flush(self.timeout)
            return
        self._acks = _Acks(len(payloads))
        publish, subject, inbox = self._pub.publish, self.subject, self.inbox
        for number, payload in enumerate(payloads):
            await publish(subject, payload, reply=f"{inbox}.{number}")
        await self._pub.flush(self.timeout)
        await asyncio.wait_for(self._acks.done, self.timeout)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._pub.jetstream(timeout=self.timeout).delete_stream(self.stream)
        for connection in (self._sub, self._pub):
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()


class RabbitStreamLog:
    """``replicas``: the stream's initial cluster size (3 on a 3-node cluster)."""

    def __init__(self, host: str, port: int, timeout: float, *, replicas: int = 1) -> None:
        self.stream = f"topicmatch-{uuid.uuid4().hex[:10]}"
        self.replicas = replicas
        self._pub = StreamClient(host, port, timeout=timeout)
        self._sub = StreamClient(host, port, timeout=timeout)
        self.timeout = timeout
        self._next_id = 0
        self._acks: _Acks | None = None

    async def open(self, on_message: OnMessage) -> None:
        await self._pub.connect()
        await self._sub.connect()
        await self._pub.create(self.stream, {"x-initial-cluster-size": str(self.replicas)})
        self._sub.on_message = on_message
        await self._sub.subscribe(1, self.stream, credit=10)
        self._pub.on_confirm = lambda ids: self._acks.ack(len(ids)) if self._acks else None
        self._pub.on_error = lambda text: self._acks.error(text) if self._acks else None
        await self._pub.declare_publisher(1, self.stream)

    async def publish(self, payloads: Sequence[bytes]) -> None:
        self._acks = _Acks(len(payloads))
        limit = max(1, self._pub.frame_max - 64)
        batch: list[tuple[int, bytes]] = []
        size = 0
        for payload in payloads:
            if batch and size + len(payload) + 12 > limit:
                self._pub.publish(1, batch)
                batch, size = [], 0
            batch.append((self._next_id, payload))
            self._next_id += 1
            size += len(payload) + 12
        self._pub.publish(1, batch)
        await self._pub.drain()
        await asyncio.wait_for(self._acks.done, self.timeout)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._pub.delete(self.stream)
        await self._sub.close()
        await self._pub.close()


class RedisStreamLog:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.key = f"topicmatch:log:{uuid.uuid4().hex[:10]}"
        self._pub: Any = None
        self._sub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._stopping = False

    async def open(self, on_message: OnMessage) -> None:
        aioredis = importlib.import_module("redis.asyncio")
        self._pub = aioredis.Redis(host=self.host, port=self.port, socket_connect_timeout=self.timeout)
        self._sub = aioredis.Redis(host=self.host, port=self.port, socket_connect_timeout=self.timeout)
        # A marker entry gives the subscriber an exact id to read after: no race with "$".
        marker = await self._pub.xadd(self.key, {"m": b""})
        self._reader = asyncio.create_task(self._read(marker, on_message))

    async def _read(self, last: Any, on_message: OnMessage) -> None:
        xread, key = self._sub.xread, self.key
        while not self._stopping:
            answer = await xread({key: last}, count=1_000, block=500)
            for _key, entries in answer:
                for entry_id, fields in entries:
                    last = entry_id
                    on_message(fields[b"d"])

    async def publish(self, payloads: Sequence[bytes]) -> None:
        pipe = self._pub.pipeline(transaction=False)
        for payload in payloads:
            pipe.xadd(self.key, {"d": payload})
        await asyncio.wait_for(pipe.execute(), self.timeout)

    async def close(self) -> None:
        # Cancelling redis-py in the middle of XREAD BLOCK can hang: let the block time out instead.
        self._stopping = True
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=2)
            if not self._reader.done():
                self._reader.cancel()
        with contextlib.suppress(Exception):
            await self._pub.delete(self.key)
        for connection in (self._sub, self._pub):
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.aclose()


@contextlib.contextmanager
def log_service(system: str, timeout: float = 30.0) -> Iterator[Callable[[], LogClient]]:
    """Start ``system``'s broker privately and yield a factory of fresh :class:`LogClient` s."""
    server: servers._Server
    jetstream: dict[str, dict[str, Any]] = {  # the JetStream logs: their JetStreamLog options
        "jetstream": {},
        "jetstream-memory": {"memory": True},
        "jetstream-r3": {"replicas": 3},
        "jetstream-noack": {"acks": False},
    }
    if system in jetstream:
        server = servers.NatsServer(jetstream=True, nodes=jetstream[system].get("replicas", 1))
    elif system in ("rabbitmq-stream", "rabbitmq-stream-r3"):
        server = servers.RabbitMQServer(streams=True, nodes=3 if system.endswith("-r3") else 1)
    elif system == "redis-stream":
        server = servers.RedisServer(appendfsync="everysec")
    elif system == "redis-stream-fsync":
        server = servers.RedisServer(appendfsync="always")
    else:
        raise ValueError(f"unknown log {system!r}; choose from {', '.join(LOGS)}")
    with running(server):
        if isinstance(server, servers.RabbitMQServer):
            port = server.stream_port
            replicas = server.nodes
            yield lambda: RabbitStreamLog(server.host, port, timeout, replicas=replicas)
        elif isinstance(server, servers.NatsServer):
            yield lambda: JetStreamLog(server.host, server.port, timeout, **jetstream[system])
        else:
            yield lambda: RedisStreamLog(server.host, server.port, timeout)
