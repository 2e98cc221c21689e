"""A minimal asyncio client for RabbitMQ's stream protocol (the ``rabbitmq_stream`` plugin).

Why our own: the project's ``bench`` extra has no stream-protocol client, and AMQP 0-9-1 access
to a stream goes through the queue machinery instead of the log. The commit-log benchmark only
needs: connect (peer properties, SASL PLAIN, tune, open), create and delete a stream, declare a
publisher, publish with confirms, subscribe with credit and read delivered chunks.

Wire format (all big-endian): ``uint32 size``, ``uint16 key``, ``uint16 version`` (1), then the
command's fields; responses set the key's top bit and start with ``uint32 correlation id`` and
``uint16 response code`` (1 = OK). Strings are ``uint16`` length + UTF-8, byte blobs ``int32``
length + bytes, arrays ``int32`` count + items. A ``Deliver`` carries one Osiris chunk: a
48-byte header (entry count, record count, first offset, CRC, data length, ...) then entries,
each ``uint32`` size + data for a simple entry (sub-batches, top bit set, are not produced by
this client and are rejected).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from collections.abc import Callable, Mapping, Sequence

__all__ = ["StreamClient", "StreamError"]

DECLARE_PUBLISHER, PUBLISH, PUBLISH_CONFIRM, PUBLISH_ERROR = 1, 2, 3, 4
SUBSCRIBE, DELIVER, CREDIT = 7, 8, 9
CREATE, DELETE, METADATA_UPDATE = 13, 14, 16
PEER_PROPERTIES, SASL_HANDSHAKE, SASL_AUTHENTICATE, TUNE, OPEN, CLOSE, HEARTBEAT = 17, 18, 19, 20, 21, 22, 23
RESPONSE = 0x8000
OK = 1
OFFSET_NEXT = 3
_CHUNK_HEADER = struct.Struct(">bbHIqQQiIII")  # 48 bytes, after the subscription id


class StreamError(RuntimeError):
    """The server refused a command (its response code is in the message) or closed."""


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def _frame(key: int, body: bytes) -> bytes:
    return struct.pack(">IHH", len(body) + 4, key, 1) + body


class StreamClient:
    """One connection; commands are coroutines, deliveries and confirms arrive on callbacks.

    ``on_confirm(ids)`` gets the publishing ids the server confirmed; ``on_message(data)`` gets
    each delivered message, in log order.
    """

    def __init__(self, host: str, port: int, *, timeout: float = 10.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.frame_max = 0
        self.on_confirm: Callable[[Sequence[int]], None] = lambda _ids: None
        self.on_error: Callable[[str], None] = lambda _text: None
        self.on_message: Callable[[bytes], None] = lambda _data: None
        self._correlation = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[bytes]] = {}
        self._tuned: asyncio.Future[None] | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed_reason = ""

    async def connect(self, user: str = "guest", password: str = "guest") -> None:
        """Open the connection: peer properties, SASL PLAIN, tune, open the vhost ``/``."""
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), self.timeout
        )
        self._tuned = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._read_frames())
        await self._call(PEER_PROPERTIES, struct.pack(">i", 1) + _string("product") + _string("topicmatch"))
        await self._call(SASL_HANDSHAKE, b"")
        await self._call(SASL_AUTHENTICATE, _string("PLAIN") + self._blob(f"\0{user}\0{password}".encode()))
        await asyncio.wait_for(self._tuned, self.timeout)
        await self._call(OPEN, _string("/"))

    @staticmethod
    def _blob(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data

    async def create(self, stream: str, arguments: Mapping[str, str] | None = None) -> None:
        """Create ``stream`` with ``arguments`` (``x-initial-cluster-size``, ...)."""
        pairs = list((arguments or {}).items())
        body = _string(stream) + struct.pack(">i", len(pairs))
        body += b"".join(_string(key) + _string(value) for key, value in pairs)
        await self._call(CREATE, body)

    async def delete(self, stream: str) -> None:
        await self._call(DELETE, _string(stream))

    async def declare_publisher(self, publisher: int, stream: str) -> None:
        await self._call(DECLARE_PUBLISHER, struct.pack(">B", publisher) + _string("") + _string(stream))

    async def subscribe(self, subscription: int, stream: str, credit: int = 10) -> None:
        """Deliver messages appended from now on (offset ``next``) to :attr:`on_message`."""
        body = struct.pack(">B", subscription) + _string(stream) + struct.pack(">HHi", OFFSET_NEXT, credit, 0)
        await self._call(SUBSCRIBE, body)

    def publish(self, publisher: int, messages: Sequence[tuple[int, bytes]]) -> None:
        """Send ``(publishing id, data)`` pairs in one frame; confirms come to :attr:`on_confirm`."""
        parts = [struct.pack(">Bi", publisher, len(messages))]
        for publishing_id, data in messages:
            parts.append(struct.pack(">Qi", publishing_id, len(data)))
            parts.append(data)
        self._write(_frame(PUBLISH, b"".join(parts)))

    async def drain(self) -> None:
        """Wait until the socket buffer has room (flow control for large publishes)."""
        if self._writer is not None:
            await self._writer.drain()

    async def close(self) -> None:
        if self._writer is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._call(CLOSE, struct.pack(">H", OK) + _string("bye")), 2)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._writer = None

    def _write(self, data: bytes) -> None:
        if self._writer is None or self._closed_reason:
            raise StreamError(f"connection closed: {self._closed_reason or 'not connected'}")
        self._writer.write(data)

    async def _call(self, key: int, body: bytes) -> bytes:
        correlation = next(self._correlation)
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._waiting[correlation] = future
        self._write(_frame(key, struct.pack(">I", correlation) + body))
        try:
            answer = await asyncio.wait_for(future, self.timeout)
        finally:
            self._waiting.pop(correlation, None)
        (code,) = struct.unpack_from(">H", answer)
        if code != OK:
            raise StreamError(f"command {key} refused with response code {code}")
        return answer[2:]

    async def _read_frames(self) -> None:
        assert self._reader is not None
        read = self._reader.readexactly
        try:
            while True:
                (size,) = struct.unpack(">I", await read(4))
                frame = await read(size)
                self._dispatch(frame)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self._fail(f"connection lost: {exc!r}")
        except Exception as exc:
            self._fail(f"bad frame: {exc!r}")
            raise

    def _fail(self, reason: str) -> None:
        self._closed_reason = reason
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(StreamError(reason))
        self.on_error(reason)

    def _dispatch(self, frame: bytes) -> None:
        key, _version = struct.unpack_from(">HH", frame)
        if key & RESPONSE and key != RESPONSE | CREDIT:
            (correlation,) = struct.unpack_from(">I", frame, 4)
            future = self._waiting.get(correlation)
            if future is not None and not future.done():
                future.set_result(frame[8:])
        elif key == DELIVER:
            self._deliver(frame)
        elif key == PUBLISH_CONFIRM:
            (count,) = struct.unpack_from(">i", frame, 5)
            self.on_confirm(struct.unpack_from(f">{count}Q", frame, 9))
        elif key == PUBLISH_ERROR:
            self.on_error(f"publish error frame: {frame[4:40].hex()}")
        elif key == TUNE:
            frame_max, heartbeat = struct.unpack_from(">II", frame, 4)
            self.frame_max = frame_max
            self._write(_frame(TUNE, struct.pack(">II", frame_max, heartbeat)))
            if self._tuned is not None and not self._tuned.done():
                self._tuned.set_result(None)
        elif key == HEARTBEAT:
            self._write(_frame(HEARTBEAT, b""))
        elif key == CLOSE:
            (correlation,) = struct.unpack_from(">I", frame, 4)
            self._write(struct.pack(">IHHIH", 10, RESPONSE | CLOSE, 1, correlation, OK))
            self._fail("closed by the server")
        elif key == RESPONSE | CREDIT:
            self.on_error(f"credit refused: {frame[4:].hex()}")
        # METADATA_UPDATE and anything else: nothing to do for a benchmark.

    def _deliver(self, frame: bytes) -> None:
        subscription = frame[4]
        (_magic, chunk_type, entries, _records, _ts, _epoch, _first, _crc, length, _trailer, _reserved) = (
            _CHUNK_HEADER.unpack_from(frame, 5)
        )
        position = 5 + _CHUNK_HEADER.size
        end = position + length
        if chunk_type == 0:  # user data; tracking and snapshot chunks carry no messages
            for _ in range(entries):
                (header,) = struct.unpack_from(">I", frame, position)
                if header & 0x80000000:
                    raise StreamError("sub-batch entries are not supported")
                position += 4
                self.on_message(frame[position : position + header])
                position += header
            if position != end:
                raise StreamError("chunk length does not match its entries")
        self._write(_frame(CREDIT, struct.pack(">BH", subscription, 1)))
