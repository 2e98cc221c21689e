"""No-op sinks: just enough of a broker's protocol to take a publisher's messages and drop them.

``bench brokers`` runs each Python publisher against its system's sink as well as against the
broker. The sender's rate against the sink is what the client can send with nothing behind it
(the study's "measure the client alone"): a broker run whose sender rate comes close to it was
capped by the client, not the broker. Each sink is one process serving one connection on
127.0.0.1 with asyncio; it parses the framing only (never the messages), counts the publishes,
answers what a publisher waits for and nothing else:

* NATS: ``INFO`` on connect, ``PONG`` to ``PING`` (``flush`` waits for it); ``PUB``/``HPUB`` counted.
* Redis (RESP): ``:0`` to each ``PUBLISH`` (redis-py's pipeline reads one reply per command),
  the asked protocol to ``HELLO`` (redis-py 8 asks for RESP3 on connect), ``+PONG`` to
  ``PING``, ``+OK`` to anything else (the client's ``CLIENT SETINFO``).
* MQTT 3.1.1: ``CONNACK`` to ``CONNECT``, ``PINGRESP`` to ``PINGREQ``; ``PUBLISH`` counted.
* STOMP 1.2 (ActiveMQ): ``CONNECTED`` to ``CONNECT``, a ``RECEIPT`` to every frame that asks for
  one; ``SEND`` counted.

Bounded: one connection, ended when the client closes it; the caller kills the process after
its own timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from . import servers

__all__ = ["SINKS", "serve_sink"]

#: The systems with a sink (RabbitMQ's AMQP 0-9-1 handshake, queue declaration and channel
#: flow are a protocol of their own: it has none; ZeroMQ and NNG have no broker to stand in for).
SINKS = ("nats", "redis", "mqtt", "activemq")

_READ = 1 << 16
#: Parses what is in ``buffer``; returns (bytes consumed, publishes seen, what to reply).
Parser = Callable[[bytearray], tuple[int, int, bytes]]

_NATS_INFO = (
    b'INFO {"server_id":"topicmatch-sink","server_name":"sink","version":"2.9.0","proto":1,'
    b'"host":"127.0.0.1","port":0,"headers":true,"max_payload":1048576}\r\n'
)


def _nats(buffer: bytearray) -> tuple[int, int, bytes]:
    pos, count, reply = 0, 0, b""
    while True:
        eol = buffer.find(b"\r\n", pos)
        if eol < 0:
            return pos, count, reply
        line = bytes(buffer[pos:eol])
        if line.startswith((b"PUB ", b"HPUB ")):
            end = eol + 2 + int(line.rsplit(b" ", 1)[1]) + 2  # the last field is the total size
            if end > len(buffer):
                return pos, count, reply  # the payload is not all here yet
            count += 1
            pos = end
            continue
        if line == b"PING":
            reply += b"PONG\r\n"
        pos = eol + 2  # CONNECT, PONG and the rest: nothing to do


def _redis(buffer: bytearray) -> tuple[int, int, bytes]:
    pos, count, reply = 0, 0, b""
    n = len(buffer)
    while pos < n:
        eol = buffer.find(b"\r\n", pos)
        if eol < 0:
            break
        if buffer[pos : pos + 1] != b"*":  # an inline command (redis-cli's PING)
            reply += b"+OK\r\n"
            pos = eol + 2
            continue
        at, words = eol + 2, []
        for i in range(int(buffer[pos + 1 : eol])):
            end_of_line = buffer.find(b"\r\n", at)
            if end_of_line < 0:
                return pos, count, reply
            size = int(buffer[at + 1 : end_of_line])
            if end_of_line + 2 + size + 2 > n:
                return pos, count, reply
            if i < 2:  # the command's name, and HELLO's protocol version
                words.append(bytes(buffer[end_of_line + 2 : end_of_line + 2 + size]).upper())
            at = end_of_line + 2 + size + 2
        name = words[0] if words else b""
        if name == b"PUBLISH":
            count += 1
            reply += b":0\r\n"
        elif name == b"HELLO":  # the protocol asked for, as a RESP3 map (sent only to ask for 3)
            reply += b"%1\r\n$5\r\nproto\r\n:" + (words[1] if len(words) > 1 else b"3") + b"\r\n"
        else:
            reply += b"+PONG\r\n" if name == b"PING" else b"+OK\r\n"
        pos = at
    return pos, count, reply


def _stomp(buffer: bytearray) -> tuple[int, int, bytes]:
    pos, count, reply = 0, 0, b""
    n = len(buffer)
    while pos < n:
        while pos < n and buffer[pos] in b"\r\n":  # heart-beats between frames
            pos += 1
        end = buffer.find(b"\n\n", pos)
        if end < 0:
            break
        head = bytes(buffer[pos:end]).split(b"\n")
        headers = dict(line.split(b":", 1) for line in head[1:] if b":" in line)
        length = headers.get(b"content-length")
        # The body runs to content-length when given (it may hold NULs), else to the first NUL.
        stop = end + 2 + int(length) if length is not None else buffer.find(b"\x00", end + 2)
        if stop < 0 or stop >= n:
            break
        command = head[0].strip()
        if command in (b"CONNECT", b"STOMP"):
            reply += b"CONNECTED\nversion:1.2\n\n\x00"
        elif command == b"SEND":
            count += 1
        receipt = headers.get(b"receipt")
        if receipt is not None:
            reply += b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00"
        pos = stop + 1
    return pos, count, reply


def _mqtt(buffer: bytearray) -> tuple[int, int, bytes]:
    pos, count, reply = 0, 0, b""
    n = len(buffer)
    while pos + 2 <= n:
        kind = buffer[pos] >> 4
        length, shift, at = 0, 0, pos + 1
        while True:  # the remaining length: a variable-length integer of 1-4 bytes
            if at >= n:
                return pos, count, reply
            byte = buffer[at]
            length |= (byte & 0x7F) << shift
            at += 1
            if not byte & 0x80:
                break
            shift += 7
        if at + length > n:
            break
        if kind == 1:  # CONNECT
            reply += b"\x20\x02\x00\x00"
        elif kind == 3:  # PUBLISH (QoS 0: nothing to acknowledge)
            count += 1
        elif kind == 12:  # PINGREQ
            reply += b"\xd0\x00"
        pos = at + length
    return pos, count, reply


_PARSERS: dict[str, tuple[Parser, bytes]] = {
    "activemq": (_stomp, b""),
    "nats": (_nats, _NATS_INFO),
    "redis": (_redis, b""),
    "mqtt": (_mqtt, b""),
}


def serve_sink(system: str, port: int, counted: Callable[[int, int], None], ready: Any) -> None:
    """Serve ``system``'s sink on 127.0.0.1:``port`` for one connection, until the client closes
    it; ``counted(publishes, now_ns)`` after each read that held publishes; ``ready.set()`` once
    listening."""
    parse, greeting = _PARSERS[system]

    async def main() -> None:
        done = asyncio.Event()

        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if greeting:
                writer.write(greeting)
            buffer = bytearray()
            try:
                while chunk := await reader.read(_READ):
                    buffer += chunk
                    used, count, reply = parse(buffer)
                    del buffer[:used]
                    if count:
                        counted(count, time.monotonic_ns())
                    if reply:
                        writer.write(reply)
                        await writer.drain()
            finally:
                writer.close()
                done.set()

        server = await asyncio.start_server(one, servers.HOST, port)
        ready.set()
        async with server:
            await done.wait()

    asyncio.run(main())
