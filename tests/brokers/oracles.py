"""Ask a real broker which subscriptions receive which published topics.

Why: the library claims to match exactly like RabbitMQ, Mosquitto and
nats-server. The only trustworthy reference is the brokers themselves, so
these oracles subscribe every pattern for real, publish every topic for real
and record what was delivered.

API::

    broker_matches(dialect, patterns, topics, *, address, pedantic=False) -> OracleResult

``dialect`` is "amqp" (RabbitMQ topic exchange), "mqtt" (Mosquitto) or
"nats" (nats-server); ``address`` is the broker's ``(host, port)``;
``pedantic`` only applies to "nats" (the client's CONNECT option, under
which the server also checks published subjects). Each entry of
``patterns`` is a separate subscription, even when a string repeats. The
result tells, per pattern and per topic, whether the broker accepted it (a
:data:`Verdict`), and per topic the set of pattern indices whose
subscription received it.

Exactness: every oracle waits until all deliveries are in, without sleeping
"long enough": RabbitMQ publishes with publisher confirms and the queues are
drained to their exact message counts; Mosquitto (MQTT v5, QoS 1) gets a
final sentinel publication on the subscriber's ordered stream, and NATS a
final PING/PONG behind the last MSG. All waits are bounded and
raise :class:`OracleError` when exceeded. Each call uses fresh connections
(and, for RabbitMQ, a fresh exchange and queues), never a prefix on the
topics, so nothing leaks between calls and the topics are exactly the given
strings.

Rejections are observed where the protocol lets the broker say no: invalid
MQTT filters/topics (Mosquitto disconnects or answers a failure reason code)
and NATS subjects (``-ERR``). A string the protocol cannot carry at all
(an AMQP key over 255 bytes, an empty or blank NATS subject) is never sent
and gets the verdict "unsendable".
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import random
import socket
import struct
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import nats
import nats.aio.client
import pika
from paho.mqtt.client import Client as MqttClient
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from topicmatch import InvalidPatternError, InvalidTopicError, Matcher

Dialect = Literal["amqp", "mqtt", "nats"]
DIALECTS: tuple[Dialect, ...] = ("amqp", "mqtt", "nats")

#: "accepted": the broker took it; "rejected": the broker refused it as
#: invalid; "unsendable": the protocol cannot express it, so it was never
#: sent; "forbidden": syntactically valid, but the broker's policy refuses
#: it (Mosquitto answers "not authorized" to client publications on topics
#: starting with ``$SYS`` or ``$share``), so its matches cannot be observed.
Verdict = Literal["accepted", "rejected", "unsendable", "forbidden"]

#: Upper bound for any single wait on a broker (connect, ack, deliveries).
TIMEOUT = 20.0


class OracleError(RuntimeError):
    """The broker did not answer as the protocol promises (or not in time)."""


@dataclass(frozen=True)
class OracleResult:
    """What one broker did with one batch of subscriptions and publications.

    ``matches[j]`` is the set of indices ``i`` such that subscription
    ``patterns[i]`` received ``topics[j]``. A refused pattern is never
    subscribed, and a refused topic is not published in the delivery round,
    so its set is empty; the exception is NATS, whose server may refuse a
    publication (pedantic mode) and route it all the same: what it delivered
    is kept. ``*_notes`` hold the broker's reason for each refusal.
    """

    dialect: Dialect
    pedantic: bool
    patterns: tuple[str, ...]
    topics: tuple[str, ...]
    pattern_verdicts: tuple[Verdict, ...]
    topic_verdicts: tuple[Verdict, ...]
    matches: tuple[frozenset[int], ...]
    pattern_notes: tuple[str, ...]
    topic_notes: tuple[str, ...]

    def pattern_ok(self, i: int) -> bool:
        return self.pattern_verdicts[i] == "accepted"

    def topic_ok(self, j: int) -> bool:
        return self.topic_verdicts[j] == "accepted"

    def matched(self, pattern: str, topic: str) -> bool:
        """Whether (the first subscription to) ``pattern`` received ``topic``."""
        i = self.patterns.index(pattern)
        j = self.topics.index(topic)
        return i in self.matches[j]


def broker_matches(
    dialect: str,
    patterns: Sequence[str],
    topics: Sequence[str],
    *,
    address: tuple[str, int],
    pedantic: bool = False,
) -> OracleResult:
    """Subscribe ``patterns`` and publish ``topics`` on the real broker of ``dialect``."""
    host, port = address
    if pedantic and dialect != "nats":
        raise ValueError("pedantic is a NATS connect option")
    if dialect == "amqp":
        return AmqpOracle(host, port).run(patterns, topics)
    if dialect == "mqtt":
        return MqttOracle(host, port).run(patterns, topics)
    if dialect == "nats":
        return NatsOracle(host, port, pedantic=pedantic).run(patterns, topics)
    raise ValueError(f"unknown dialect {dialect!r}; expected one of {DIALECTS}")


def _deadline(seconds: float = TIMEOUT) -> float:
    return time.monotonic() + seconds


def _result(
    dialect: Dialect,
    pedantic: bool,
    patterns: Sequence[str],
    topics: Sequence[str],
    pattern_verdicts: Sequence[tuple[Verdict, str]],
    topic_verdicts: Sequence[tuple[Verdict, str]],
    deliveries: Iterable[tuple[int, int]],
) -> OracleResult:
    """Assemble an :class:`OracleResult` from verdicts and (pattern, topic) deliveries."""
    per_topic: list[set[int]] = [set() for _ in topics]
    for i, j in deliveries:
        per_topic[j].add(i)
    return OracleResult(
        dialect=dialect,
        pedantic=pedantic,
        patterns=tuple(patterns),
        topics=tuple(topics),
        pattern_verdicts=tuple(v for v, _ in pattern_verdicts),
        topic_verdicts=tuple(v for v, _ in topic_verdicts),
        matches=tuple(frozenset(s) for s in per_topic),
        pattern_notes=tuple(n for _, n in pattern_verdicts),
        topic_notes=tuple(n for _, n in topic_verdicts),
    )


class _DeliveryLog:
    """Collects (pattern index, topic index) pairs and refuses duplicates.

    A duplicate would mean the broker delivered one publication twice to one
    subscription, which none of the three brokers should do; the oracle
    reports it instead of hiding it in a set.
    """

    def __init__(self) -> None:
        self.pairs: set[tuple[int, int]] = set()
        self.duplicates: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def add(self, i: int, j: int) -> None:
        with self.lock:
            if (i, j) in self.pairs:
                self.duplicates.append((i, j))
            self.pairs.add((i, j))

    def check(self, patterns: Sequence[str], topics: Sequence[str]) -> None:
        if self.duplicates:
            shown = ", ".join(f"{patterns[i]!r}<-{topics[j]!r}" for i, j in self.duplicates[:10])
            raise OracleError(f"broker delivered a publication twice to one subscription: {shown}")


# --------------------------------------------------------------------------
# AMQP 0-9-1: RabbitMQ topic exchange, via pika.
# --------------------------------------------------------------------------


class AmqpOracle:
    """RabbitMQ topic exchange: one exclusive queue per pattern, bound with it.

    Each call declares a fresh topic exchange (deleted afterwards) on a fresh
    connection; queues are exclusive, so they vanish with the connection.
    Topics are published as routing keys with publisher confirms, so when the
    last ``basic_publish`` returns every copy is already in its queue; the
    queues' message counts (passive declare) then say exactly how many
    deliveries to wait for, and the body (the topic's index) says which topic
    each delivery is. AMQP short strings hold at most 255 bytes: longer keys
    cannot be sent ("unsendable"). RabbitMQ refuses no binding or routing key.
    """

    MAX_KEY_BYTES = 255

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def _verdict(self, key: str) -> tuple[Verdict, str]:
        try:
            size = len(key.encode("utf-8"))
        except UnicodeEncodeError:
            return ("unsendable", "not encodable as UTF-8")
        if size > self.MAX_KEY_BYTES:
            return ("unsendable", f"AMQP shortstr holds at most 255 bytes, key has {size}")
        return ("accepted", "")

    def run(self, patterns: Sequence[str], topics: Sequence[str]) -> OracleResult:
        pattern_verdicts = [self._verdict(p) for p in patterns]
        topic_verdicts = [self._verdict(t) for t in topics]
        log = _DeliveryLog()
        params = pika.ConnectionParameters(
            host=self.host,
            port=self.port,
            connection_attempts=1,
            socket_timeout=TIMEOUT,
            blocked_connection_timeout=TIMEOUT,
            heartbeat=0,
        )
        connection = pika.BlockingConnection(params)
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            exchange = f"topicmatch.oracle.{uuid.uuid4().hex}"
            channel.exchange_declare(exchange, exchange_type="topic", durable=False, auto_delete=False)
            queues: dict[str, int] = {}
            for i, pattern in enumerate(patterns):
                if pattern_verdicts[i][0] != "accepted":
                    continue
                queue = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
                channel.queue_bind(queue, exchange, routing_key=pattern)
                queues[queue] = i
            props = pika.BasicProperties(delivery_mode=1)
            for j, topic in enumerate(topics):
                if topic_verdicts[j][0] == "accepted":
                    # Blocks until the broker confirms: the copies are queued.
                    channel.basic_publish(exchange, topic, str(j).encode(), props)
            expected = sum(channel.queue_declare(q, passive=True).method.message_count for q in queues)

            received = 0

            def consumer(i: int) -> Callable[[Any, Any, Any, bytes], None]:
                def on_message(_ch: Any, _method: Any, _props: Any, body: bytes) -> None:
                    nonlocal received
                    received += 1
                    log.add(i, int(body))

                return on_message

            for queue, i in queues.items():
                channel.basic_consume(queue, consumer(i), auto_ack=True)
            deadline = _deadline()
            while received < expected and time.monotonic() < deadline:
                connection.process_data_events(time_limit=0.05)
            if received != expected:
                raise OracleError(f"RabbitMQ: received {received} of {expected} queued deliveries in time")
            channel.exchange_delete(exchange)
        finally:
            if connection.is_open:
                connection.close()
        log.check(patterns, topics)
        return _result("amqp", False, patterns, topics, pattern_verdicts, topic_verdicts, log.pairs)


# --------------------------------------------------------------------------
# MQTT v5: Mosquitto, via paho-mqtt (deliveries) and a raw probe (verdicts).
# --------------------------------------------------------------------------


def _mqtt_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _mqtt_str(s: str) -> bytes:
    data = s.encode("utf-8")
    return struct.pack("!H", len(data)) + data


def _mqtt_packet(first_byte: int, body: bytes) -> bytes:
    return bytes([first_byte]) + _mqtt_varint(len(body)) + body


class _RawMqtt:
    """Minimal MQTT v5 client used only to learn whether Mosquitto accepts a string.

    Why not paho: paho refuses empty filters and wildcard topic names before
    sending them, and Mosquitto answers an invalid filter by disconnecting,
    which would end a paho client's batch. Here each verdict is one packet
    and its answer (SUBACK/PUBACK reason code, or a disconnect), and the
    probe reconnects after a disconnect.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client_id = f"tm-probe-{uuid.uuid4().hex[:12]}"
        # Protocol "MQTT" level 5, clean start, keep-alive 60 s, no properties.
        body = _mqtt_str("MQTT") + bytes([5, 0x02]) + struct.pack("!H", 60) + b"\x00" + _mqtt_str(client_id)
        sock.sendall(_mqtt_packet(0x10, body))
        packet = self._read(sock)
        if packet is None or packet[0] >> 4 != 2 or packet[1][1] != 0:
            sock.close()
            raise OracleError(f"Mosquitto refused the probe connection: {packet!r}")
        return sock

    @staticmethod
    def _read_exact(sock: socket.socket, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def _read(self, sock: socket.socket) -> tuple[int, bytes] | None:
        """One packet as (first byte, body), or None if the broker closed the connection."""
        try:
            head = self._read_exact(sock, 1)
            if head is None:
                return None
            length, shift = 0, 0
            for _ in range(4):
                b = self._read_exact(sock, 1)
                if b is None:
                    return None
                length += (b[0] & 0x7F) << shift
                shift += 7
                if not b[0] & 0x80:
                    break
            body = self._read_exact(sock, length)
        except ConnectionResetError:
            return None
        if body is None:
            return None
        return head[0], body

    @staticmethod
    def _reason_code(answer_type: int, body: bytes) -> int:
        """First reason code of a SUBACK or PUBACK body."""
        if answer_type == 9:
            # SUBACK: packet id (2 bytes), properties length (1 byte here) and
            # properties, then one reason code per filter.
            return body[3 + body[2]]
        # PUBACK: packet id, then a reason code, omitted when it is 0 (success).
        return body[2] if len(body) > 2 else 0

    def _ask(self, packet: bytes, answer_type: int) -> tuple[Verdict, str]:
        """Send ``packet``; accepted iff the answer of ``answer_type`` has a success code."""
        if self.sock is None:
            self.sock = self._connect()
        self.sock.sendall(packet)
        for _ in range(1000):
            reply = self._read(self.sock)
            if reply is None or reply[0] >> 4 == 14:  # closed, or DISCONNECT
                self.close()
                reason = f" (reason 0x{reply[1][0]:02X})" if reply and reply[1] else ""
                return ("rejected", f"Mosquitto disconnected the client{reason}")
            first, body = reply
            if first >> 4 != answer_type:
                continue  # e.g. a PUBLISH for an earlier probe subscription
            code = self._reason_code(answer_type, body)
            if code < 0x80:
                return ("accepted", "")
            # Mosquitto may drop the connection after a failure code; start
            # the next probe on a fresh one so it is not blamed for this one.
            self.close()
            if code == 0x87:  # Not authorized: valid, but refused by policy.
                return ("forbidden", "reason code 0x87 (not authorized)")
            return ("rejected", f"reason code 0x{code:02X}")
        raise OracleError("Mosquitto probe: no answer among 1000 packets")

    @staticmethod
    def unsendable(text: str) -> str:
        """Why ``text`` cannot be an MQTT string at all ("" if it can)."""
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            return "not encodable as UTF-8"
        return f"{size} bytes; an MQTT string holds at most 65535" if size > 65535 else ""

    def subscribe_verdict(self, topic_filter: str) -> tuple[Verdict, str]:
        if why := self.unsendable(topic_filter):
            return ("unsendable", why)
        # SUBSCRIBE: packet id 1, no properties, filter, options QoS 0.
        body = struct.pack("!H", 1) + b"\x00" + _mqtt_str(topic_filter) + b"\x00"
        return self._ask(_mqtt_packet(0x82, body), 9)

    def publish_verdict(self, topic: str) -> tuple[Verdict, str]:
        if why := self.unsendable(topic):
            return ("unsendable", why)
        # PUBLISH QoS 1: topic, packet id 1, no properties, payload.
        body = _mqtt_str(topic) + struct.pack("!H", 1) + b"\x00" + b"topicmatch-probe"
        return self._ask(_mqtt_packet(0x32, body), 4)

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.sendall(_mqtt_packet(0xE0, b""))
            self.sock.close()
            self.sock = None


class MqttOracle:
    """Mosquitto, MQTT v5, QoS 1.

    Verdicts come from :class:`_RawMqtt`: each distinct filter is subscribed
    (on a probe connection that is closed before anything is published) and
    each distinct topic is published once, before the delivery round.

    Deliveries: one paho subscriber client per *round*; round ``r`` holds the
    ``r``-th occurrence of every accepted pattern, so that no client holds a
    filter twice (MQTT would replace it) and no two live clients share a
    ``$share`` group (the broker would deliver to only one of them). Every
    subscription carries its own v5 Subscription Identifier, so a delivery
    names the subscription(s) it is for, even when a client's filters
    overlap. The publisher publishes every accepted topic at QoS 1 (payload:
    batch nonce and topic index), waits for all PUBACKs, then publishes a
    sentinel to a topic the subscriber also subscribed; Mosquitto keeps the
    per-client order, so when the sentinel arrives every earlier delivery
    has. Messages without this batch's nonce (the broker's own ``$SYS``
    messages, say) are ignored.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def run(self, patterns: Sequence[str], topics: Sequence[str]) -> OracleResult:
        probe = _RawMqtt(self.host, self.port)
        try:
            distinct_filters = {p: probe.subscribe_verdict(p) for p in dict.fromkeys(patterns)}
        finally:
            probe.close()
        try:
            distinct_topics = {t: probe.publish_verdict(t) for t in dict.fromkeys(topics)}
        finally:
            probe.close()
        pattern_verdicts = [distinct_filters[p] for p in patterns]
        topic_verdicts = [distinct_topics[t] for t in topics]

        rounds: list[dict[str, int]] = []
        seen: Counter[str] = Counter()
        for i, pattern in enumerate(patterns):
            if pattern_verdicts[i][0] != "accepted":
                continue
            r = seen[pattern]
            seen[pattern] += 1
            if r == len(rounds):
                rounds.append({})
            rounds[r][pattern] = i
        published = [j for j, v in enumerate(topic_verdicts) if v[0] == "accepted"]
        log = _DeliveryLog()
        for subscriptions in rounds:
            _MqttRound(self.host, self.port, subscriptions, topics, published, log).run()
        log.check(patterns, topics)
        return _result("mqtt", False, patterns, topics, pattern_verdicts, topic_verdicts, log.pairs)


class _MqttRound:
    """One subscriber client with distinct filters, one publisher, one sentinel."""

    def __init__(
        self,
        host: str,
        port: int,
        subscriptions: dict[str, int],
        topics: Sequence[str],
        published: Sequence[int],
        log: _DeliveryLog,
    ) -> None:
        self.host = host
        self.port = port
        self.subscriptions = subscriptions
        self.topics = topics
        self.published = published
        self.log = log
        self.nonce = uuid.uuid4().hex
        self.sentinel_topic = f"$topicmatch/sentinel/{self.nonce}"
        self.sentinel_payload = f"{self.nonce}:sentinel".encode()
        self.sentinel_seen = threading.Event()
        self.errors: list[str] = []
        # Subscription Identifier k (1-based) -> pattern index; the sentinel's
        # own subscription gets the next identifier and maps to nothing.
        self.by_id = list(subscriptions.values())

    def _client(self, role: str) -> Any:
        client = MqttClient(
            CallbackAPIVersion.VERSION2,
            client_id=f"tm-{role}-{self.nonce[:12]}",
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        connected = threading.Event()

        def on_connect(_c: Any, _u: Any, _flags: Any, reason_code: Any, _props: Any) -> None:
            if reason_code.is_failure:
                self.errors.append(f"{role} connect refused: {reason_code}")
            connected.set()

        client.on_connect = on_connect
        client.connect(self.host, self.port, keepalive=60, clean_start=True)
        client.loop_start()
        if not connected.wait(TIMEOUT) or self.errors:
            client.loop_stop()
            raise OracleError(f"Mosquitto: {role} client did not connect: {self.errors}")
        return client

    def _on_message(self, _c: Any, _u: Any, message: Any) -> None:
        payload: bytes = message.payload
        if payload == self.sentinel_payload:
            self.sentinel_seen.set()
            return
        nonce, _, index = payload.decode(errors="replace").partition(":")
        if nonce != self.nonce:
            return
        ids = getattr(message.properties, "SubscriptionIdentifier", None) or []
        for sub_id in ids:
            if 1 <= sub_id <= len(self.by_id):
                self.log.add(self.by_id[sub_id - 1], int(index))

    def run(self) -> None:
        subscriber = self._client("sub")
        publisher = None
        try:
            acks: dict[int, str] = {}
            done = threading.Event()
            expected_acks = len(self.subscriptions) + 1

            def on_subscribe(_c: Any, _u: Any, mid: int, codes: Any, _p: Any) -> None:
                acks[mid] = "; ".join(str(c) for c in codes if c.is_failure)
                if len(acks) == expected_acks:
                    done.set()

            subscriber.on_subscribe = on_subscribe
            subscriber.on_message = self._on_message
            mids: dict[int, str] = {}
            filters = [*self.subscriptions, self.sentinel_topic]
            for sub_id, topic_filter in enumerate(filters, start=1):
                props = Properties(PacketTypes.SUBSCRIBE)  # type: ignore[no-untyped-call]
                props.SubscriptionIdentifier = sub_id
                _rc, mid = subscriber.subscribe(
                    topic_filter, options=SubscribeOptions(qos=1), properties=props
                )
                mids[mid] = topic_filter
            if not done.wait(TIMEOUT):
                raise OracleError(f"Mosquitto: {len(acks)} of {expected_acks} SUBACKs in time")
            refused = {mids[m]: why for m, why in acks.items() if why}
            if refused:
                raise OracleError(f"Mosquitto refused filters the probe accepted: {refused}")

            publisher = self._client("pub")
            infos = [
                publisher.publish(self.topics[j], f"{self.nonce}:{j}".encode(), qos=1) for j in self.published
            ]
            deadline = _deadline()
            for info in infos:
                info.wait_for_publish(timeout=max(0.1, deadline - time.monotonic()))
                if not info.is_published():
                    raise OracleError("Mosquitto: a QoS 1 publication was not acknowledged in time")
            publisher.publish(self.sentinel_topic, self.sentinel_payload, qos=1)
            if not self.sentinel_seen.wait(TIMEOUT):
                raise OracleError("Mosquitto: sentinel not delivered in time")
        finally:
            for client in (publisher, subscriber):
                if client is not None:
                    client.disconnect()
                    client.loop_stop()


# --------------------------------------------------------------------------
# NATS: nats-server, via nats-py (deliveries) and a raw probe (verdicts).
# --------------------------------------------------------------------------


class _RawNats:
    """Minimal NATS text-protocol client: the oracle's prober and publisher.

    Why not nats-py here: nats-py closes its connection on any ``-ERR``
    (even those after which the server keeps the connection open, such as
    "Invalid Subject" or, in pedantic mode, "Invalid Publish Subject") and
    validates subjects itself, differently from the server. Here each
    command is followed by ``PING``: an ``-ERR`` before the ``PONG`` means
    the server refused that command, and the connection goes on. Subjects
    the text protocol cannot carry (empty, or containing whitespace) are
    "unsendable" and never written.
    """

    def __init__(self, host: str, port: int, *, pedantic: bool) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        # Each command is a small write followed by PING: without NODELAY,
        # Nagle's algorithm and delayed ACKs add ~40 ms to every verdict.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.sid = 0
        self._line()  # INFO
        # echo off: this connection never receives its own publications.
        options = json.dumps({"verbose": False, "pedantic": pedantic, "protocol": 1, "echo": False})
        self.sock.sendall(f"CONNECT {options}\r\n".encode())
        verdict = self._ping()
        if verdict[0] != "accepted":
            raise OracleError(f"nats-server refused the probe connection: {verdict[1]}")

    def _line(self) -> bytes:
        for _ in range(10_000):
            if b"\r\n" in self.buffer:
                line, _, self.buffer = self.buffer.partition(b"\r\n")
                return line
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OracleError("nats-server closed the probe connection")
            self.buffer += chunk
        raise OracleError("nats-server probe: line too long")

    def _ping(self) -> tuple[Verdict, str]:
        self.sock.sendall(b"PING\r\n")
        errors: list[str] = []
        for _ in range(10_000):
            line = self._line()
            if line == b"PONG":
                return ("rejected", "; ".join(errors)) if errors else ("accepted", "")
            if line.startswith(b"-ERR"):
                errors.append(line.decode(errors="replace"))
            elif line.startswith(b"MSG"):
                self._line()  # cannot happen (echo off, no live subscription): skip the payload
        raise OracleError("nats-server probe: no PONG")

    @staticmethod
    def sendable(subject: str) -> bool:
        return bool(subject) and not any(c in subject for c in " \t\r\n\f\v")

    def subscribe_verdict(self, subject: str) -> tuple[Verdict, str]:
        """SUB, then UNSUB at once: only the verdict is wanted here."""
        if not self.sendable(subject):
            return ("unsendable", "an empty or blank subject cannot be written in the NATS protocol")
        self.sid += 1
        self.sock.sendall(f"SUB {subject} {self.sid}\r\n".encode())
        verdict = self._ping()
        self.sock.sendall(f"UNSUB {self.sid}\r\n".encode())
        return verdict

    def publish(self, subject: str, payload: bytes) -> tuple[Verdict, str]:
        """PUB, and the server's verdict on it (the message may be routed even if refused)."""
        if not self.sendable(subject):
            return ("unsendable", "an empty or blank subject cannot be written in the NATS protocol")
        self.sock.sendall(f"PUB {subject} {len(payload)}\r\n".encode() + payload + b"\r\n")
        return self._ping()

    def close(self) -> None:
        self.sock.close()


class NatsOracle:
    """nats-server: subscriptions through nats-py, publications through :class:`_RawNats`.

    Both connections use the same ``pedantic`` option. The raw connection
    first probes each distinct pattern (SUB/PING/UNSUB). The nats-py
    connection (client-side subject validation off, so the server alone
    decides) then subscribes every accepted pattern, one subscription per
    entry, repeats included, and flushes twice (see :meth:`_deliver`). The
    raw connection publishes every sendable topic (payload: its index), each
    followed by PING: the PONG says whether the server refused it, and means
    the server has already routed it, i.e. queued its MSGs on the subscriber
    connection. A final nats-py flush then puts its PONG behind all those
    MSGs, and nats-py queues each MSG before it handles the PONG: after the
    flush, each subscription's pending queue holds exactly its deliveries.

    In pedantic mode nats-server 2.9 answers "Invalid Publish Subject" but
    still routes a subject with wildcard tokens; such deliveries are kept in
    ``matches`` (the topic's verdict is "rejected"), so tests can see it.
    """

    def __init__(self, host: str, port: int, *, pedantic: bool = False) -> None:
        self.host = host
        self.port = port
        self.pedantic = pedantic

    def run(self, patterns: Sequence[str], topics: Sequence[str]) -> OracleResult:
        log = _DeliveryLog()
        probe = _RawNats(self.host, self.port, pedantic=self.pedantic)
        try:
            distinct = {p: probe.subscribe_verdict(p) for p in dict.fromkeys(patterns)}
            pattern_verdicts = [distinct[p] for p in patterns]
            subscribed = [i for i, v in enumerate(pattern_verdicts) if v[0] == "accepted"]
            topic_verdicts = asyncio.run(
                asyncio.wait_for(self._deliver(probe, patterns, topics, subscribed, log), TIMEOUT * 3)
            )
        finally:
            probe.close()
        log.check(patterns, topics)
        return _result("nats", self.pedantic, patterns, topics, pattern_verdicts, topic_verdicts, log.pairs)

    async def _deliver(
        self,
        publisher: _RawNats,
        patterns: Sequence[str],
        topics: Sequence[str],
        subscribed: Sequence[int],
        log: _DeliveryLog,
    ) -> list[tuple[Verdict, str]]:
        errors: list[str] = []

        async def on_error(exc: Exception) -> None:
            errors.append(repr(exc))

        options: dict[str, Any] = {}
        if "skip_subject_validation" in inspect.signature(nats.aio.client.Client.connect).parameters:
            options["skip_subject_validation"] = True  # nats-py >= 2.16 checks subjects itself
        nc = await nats.connect(
            servers=[f"nats://{self.host}:{self.port}"],
            pedantic=self.pedantic,
            allow_reconnect=False,
            connect_timeout=int(TIMEOUT),
            error_cb=on_error,
            **options,
        )
        try:
            subs = [(i, await nc.subscribe(patterns[i])) for i in subscribed]
            # nats-py writes a flush's PING straight to the socket, ahead of the
            # SUBs still in its pending buffer (they follow once its flusher task
            # runs, during the first flush). Only the second PONG proves that the
            # server has registered every subscription.
            await nc.flush(timeout=int(TIMEOUT))
            await nc.flush(timeout=int(TIMEOUT))
            # The raw publisher blocks on each PONG: run it in a thread, so that
            # nats-py keeps reading its MSGs meanwhile (a subscriber that stops
            # reading would be cut off by the server as a slow consumer).
            verdicts = await asyncio.to_thread(
                lambda: [publisher.publish(topic, str(j).encode()) for j, topic in enumerate(topics)]
            )
            await nc.flush(timeout=int(TIMEOUT))
            for i, sub in subs:
                for _ in range(sub.pending_msgs):
                    msg = await sub.next_msg(timeout=TIMEOUT)
                    log.add(i, int(msg.data))
            if errors or nc.is_closed:
                raise OracleError(f"nats: connection error during the delivery round: {errors}")
        finally:
            await nc.close()
        return verdicts


# --------------------------------------------------------------------------
# The same question, asked of the library, and the comparison.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LibraryResult:
    """The library's answer, in the oracle's shape (``True`` = accepted)."""

    algorithm: str
    pattern_ok: tuple[bool, ...]
    topic_ok: tuple[bool, ...]
    matches: tuple[frozenset[int], ...]


def library_matches(
    dialect: str,
    patterns: Sequence[str],
    topics: Sequence[str],
    *,
    algorithm: str,
    pedantic: bool = False,
) -> LibraryResult:
    """Subscribe ``patterns`` (subscriber = index) and look up every topic.

    "inverted_bitmap" needs its topic space up front: it gets the topics that
    the library itself accepts (checked with the "naive" algorithm), so a
    validity disagreement shows up in the comparison, not as a crash here.
    A rejected topic gets an empty match set.
    """
    kwargs: dict[str, Any] = {"algorithm": algorithm, "dialect": dialect}
    if pedantic:
        kwargs["pedantic"] = True
    if algorithm == "inverted_bitmap":
        checker = Matcher(**{**kwargs, "algorithm": "naive"})
        space = []
        for topic in dict.fromkeys(topics):
            try:
                checker.lookup(topic)
            except InvalidTopicError:
                continue
            space.append(topic)
        kwargs["topics"] = space
    matcher = Matcher(**kwargs)
    pattern_ok = []
    for i, pattern in enumerate(patterns):
        try:
            matcher.subscribe(pattern, i)
        except InvalidPatternError:
            pattern_ok.append(False)
        else:
            pattern_ok.append(True)
    topic_ok = []
    matches = []
    for topic in topics:
        try:
            found = matcher.lookup(topic)
        except InvalidTopicError:
            topic_ok.append(False)
            matches.append(frozenset[int]())
        else:
            topic_ok.append(True)
            strangers = [x for x in found if not isinstance(x, int)]
            if strangers:
                raise AssertionError(f"lookup({topic!r}) returned never-subscribed {strangers!r}")
            matches.append(frozenset(x for x in found if isinstance(x, int)))
    return LibraryResult(algorithm, tuple(pattern_ok), tuple(topic_ok), tuple(matches))


def _never(*_args: str) -> bool:
    return False


def differences(
    oracle: OracleResult,
    library: LibraryResult,
    *,
    skip_validity: Callable[[str], bool] = _never,
    limit: int = 40,
) -> list[str]:
    """Human-readable disagreements between the broker and the library (at most ``limit``).

    Validity: the library must accept exactly what the broker accepts;
    "unsendable" counts as a rejection (the library must refuse what the
    wire cannot carry) and "forbidden" as acceptance (the broker checked the
    syntax, then refused by policy). Matches: compared for every topic the
    broker routed and the library accepted, over the patterns both accepted.
    ``skip_validity(string)`` exempts the documented validation deviations
    (each test module lists its own, with the reason), so that everything
    else is still compared.
    """
    out: list[str] = []
    name = f"{oracle.dialect}{' pedantic' if oracle.pedantic else ''} [{library.algorithm}]"

    def note(text: str) -> str:
        return f" ({text})" if text else ""

    for i, pattern in enumerate(oracle.patterns):
        broker_ok = oracle.pattern_verdicts[i] == "accepted"
        if broker_ok != library.pattern_ok[i] and not skip_validity(pattern):
            verdict = "accepted" if library.pattern_ok[i] else "rejected"
            out.append(
                f"{name}: pattern {pattern!r}: broker {oracle.pattern_verdicts[i]}"
                f"{note(oracle.pattern_notes[i])}, library {verdict}"
            )
    for j, topic in enumerate(oracle.topics):
        broker_ok = oracle.topic_verdicts[j] in ("accepted", "forbidden")
        if broker_ok != library.topic_ok[j] and not skip_validity(topic):
            verdict = "accepted" if library.topic_ok[j] else "rejected"
            out.append(
                f"{name}: topic {topic!r}: broker {oracle.topic_verdicts[j]}"
                f"{note(oracle.topic_notes[j])}, library {verdict}"
            )
    both = {i for i in range(len(oracle.patterns)) if oracle.pattern_ok(i) and library.pattern_ok[i]}
    for j, topic in enumerate(oracle.topics):
        if not (oracle.topic_ok(j) and library.topic_ok[j]):
            continue
        broker_set = oracle.matches[j] & both
        library_set = library.matches[j] & both
        out.extend(
            f"{name}: {oracle.patterns[i]!r} receives {topic!r} on the broker; library: no match"
            for i in sorted(broker_set - library_set)
        )
        out.extend(
            f"{name}: {oracle.patterns[i]!r} does not receive {topic!r} on the broker; library: match"
            for i in sorted(library_set - broker_set)
        )
        extra = library.matches[j] - set(range(len(oracle.patterns)))
        if extra:
            out.append(f"{name}: lookup({topic!r}) returned unknown subscribers {sorted(extra)}")
    if len(out) > limit:
        out = [*out[:limit], f"... and {len(out) - limit} more"]
    return out


def random_names(
    rng: random.Random,
    words: Sequence[str],
    separator: str,
    count: int,
    word_count_weights: Sequence[int] = (1, 3, 4, 3, 2, 1, 1),
) -> list[str]:
    """``count`` strings of words drawn from ``words``, joined by ``separator``.

    The number of words is 0..len(word_count_weights)-1 (0..6 by default),
    weighted toward short names: with a small alphabet (including the empty
    word and wildcards) random patterns and topics then collide often
    enough that real matches, and repeated patterns, happen.
    """
    sizes = range(len(word_count_weights))
    return [
        separator.join(rng.choices(words, k=rng.choices(sizes, weights=word_count_weights)[0]))
        for _ in range(count)
    ]
