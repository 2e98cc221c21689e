"""The no-op sinks of `bench brokers` (the publisher alone): their parsers, and real clients."""

from __future__ import annotations

import pytest

from topicmatch_latency import _sinks
from topicmatch_latency._broker_throughput import run_throughput

pytestmark = pytest.mark.latency

PAYLOAD = b"x\r\nPING\r\n" + bytes(range(256))  # payload bytes that look like framing must not count

STREAMS = {
    "nats": (
        b'CONNECT {"verbose":false}\r\nPING\r\n'
        + (b"PUB s 265\r\n" + PAYLOAD + b"\r\n") * 3
        + b"HPUB s 12 277\r\nNATS/1.0\r\n\r\n"
        + PAYLOAD
        + b"\r\nPING\r\n",
        4,
        b"PONG\r\nPONG\r\n",
    ),
    "redis": (
        b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
        + b"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n$8\r\nredis-py\r\n"
        + (b"*3\r\n$7\r\nPUBLISH\r\n$1\r\ns\r\n$265\r\n" + PAYLOAD + b"\r\n") * 3
        + b"*1\r\n$4\r\nPING\r\n",
        3,
        b"%1\r\n$5\r\nproto\r\n:3\r\n+OK\r\n:0\r\n:0\r\n:0\r\n+PONG\r\n",
    ),
    "activemq": (
        b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00\n"
        + (
            b"SEND\ndestination:/topic/s\ncontent-length:265\n\n"
            + PAYLOAD.replace(b"\x00", b"\x01")
            + b"\x00"
        )
        + (b"SEND\ndestination:/topic/s\ncontent-length:265\n\n" + PAYLOAD + b"\x00")  # NULs in the body
        + b"SEND\ndestination:/topic/s\nreceipt:last\ncontent-length:265\n\n"
        + PAYLOAD
        + b"\x00"
        + b"DISCONNECT\nreceipt:bye\n\n\x00",
        3,
        b"CONNECTED\nversion:1.2\n\n\x00RECEIPT\nreceipt-id:last\n\n\x00RECEIPT\nreceipt-id:bye\n\n\x00",
    ),
    "mqtt": (
        b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00"  # CONNECT
        + (b"\x30\x8c\x02\x00\x01s" + PAYLOAD) * 3  # PUBLISH, remaining length 268 in two bytes
        + b"\xc0\x00\xe0\x00",  # PINGREQ, DISCONNECT
        3,
        b"\x20\x02\x00\x00\xd0\x00",
    ),
}


@pytest.mark.parametrize("system", _sinks.SINKS)
@pytest.mark.parametrize("chunk", [1, 7, 100, 10_000])
def test_a_sink_counts_publishes_and_answers_in_any_chunking(system: str, chunk: int) -> None:
    stream, publishes, answers = STREAMS[system]
    parse = _sinks._PARSERS[system][0]
    buffer, count, replies = bytearray(), 0, b""
    for start in range(0, len(stream), chunk):
        buffer += stream[start : start + chunk]
        used, seen, reply = parse(buffer)
        del buffer[:used]
        count, replies = count + seen, replies + reply
    assert (count, replies, bytes(buffer)) == (publishes, answers, b"")


@pytest.mark.parametrize("system", _sinks.SINKS)
def test_the_real_publisher_runs_against_its_sink(system: str) -> None:
    """nats-py, redis-py and paho-mqtt, unchanged, send every message to the sink."""
    run = run_throughput(system, 3_000, 1024, timeout=60, alone=True)
    assert not run.errors, run.errors
    assert run.sent == run.received == 3_000
    assert run.sender_rate > 0
    assert run.receiver_rate > 0
    with pytest.raises(ValueError, match="rabbitmq has no no-op sink"):
        run_throughput("rabbitmq", 10, 10, alone=True)
