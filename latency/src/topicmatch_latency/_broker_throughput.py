"""Broker throughput ("Dissecting Message Queues"): N messages of S bytes through each system,
measured at the sender and at the receiver.

One publisher process sends ``messages`` messages as fast as its client lets it, to one subject
(topic, queue, channel) that one subscriber process receives; both are separate processes
(``spawn``), the broker a third, all on 127.0.0.1. Timestamps are ``CLOCK_MONOTONIC``, which is
system-wide, so the receiver's window starts at the sender's first send:

* **sender**: messages / (last send returned, buffers flushed - first send);
* **receiver**: messages received / (last receipt - first send);
* **lost**: sent - received. Pub/sub without acknowledgements may drop (NATS cuts a slow
  consumer, ZeroMQ and NNG drop at their high-water marks); a loss is reported, never hidden.

Each side's CPU use (process time / wall time) is recorded: a side at 90 % of a core or more was
its Python client's limit, not the broker's, and the report says so. Every run is bounded: the
receiver stops at ``messages`` or after ``idle`` seconds without a message, and the whole run
after ``timeout`` seconds (its processes are then killed and the run reported as cut short).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import importlib
import json
import multiprocessing
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from topicmatch.bench.machine import machine_info

from . import servers
from ._chart import throughput_chart
from ._limits import check_messages
from ._load import STOP
from ._result import size_name
from ._sinks import SINKS, serve_sink
from ._systems import SERVERS, SystemUnavailable, running

__all__ = ["SYSTEMS", "ThroughputRun", "run_brokers", "run_throughput"]

#: name -> what one message is, for reports.
SYSTEMS: dict[str, str] = {
    "nats": "NATS core publish to one subject, one subscriber (nats-server 2.9, nats-py)",
    "redis": "Redis PUBLISH to one channel, one subscriber (Redis 7.0, redis-py, pipelined by 100)",
    "rabbitmq": "RabbitMQ publish to one transient queue, one consumer without acks (RabbitMQ 3.10, pika)",
    "mqtt": "MQTT 3.1.1 QoS 0 publish to one topic, one subscriber (Mosquitto 2.0, paho-mqtt)",
    "activemq": "STOMP 1.2 SEND to one topic, one subscriber, auto ack, non-persistent "
    "(ActiveMQ 5.17, stomp.py)",
    "zeromq": "ZeroMQ PUB/SUB over TCP, no broker (libzmq, pyzmq; high-water marks 100,000)",
    "nng": "nanomsg NNG pub0/sub0 over TCP, no broker (pynng; buffers of 8,192 messages)",
}

SUBJECT = "topicmatch.bench"
#: Messages each side may buffer in ZeroMQ before dropping (a bound on the memory it may take).
HWM = 100_000
#: NNG's socket buffers, in messages: its maximum (the default holds a few, and pub0 drops the rest).
NNG_BUFFER = 8_192
#: A client at or above this share of a core during its run was the limit.
CPU_BOUND = 0.9


@dataclass
class Side:
    """What one process measured: monotonic ns, counts, CPU use."""

    first_ns: int = 0
    last_ns: int = 0
    count: int = 0
    cpu: float = 0.0
    error: str = ""


@dataclass
class ThroughputRun:
    """One system's run."""

    system: str
    messages: int
    size: int
    sent: int = 0
    received: int = 0
    sender_rate: float = 0.0
    receiver_rate: float = 0.0
    sender_cpu: float = 0.0
    receiver_cpu: float = 0.0
    errors: list[str] = field(default_factory=list)
    command: str = ""
    alone_rate: float = 0.0  # the publisher against the no-op sink (0: not measured)
    alone_cpu: float = 0.0

    @property
    def lost(self) -> int:
        return self.sent - self.received

    def notes(self) -> list[str]:
        notes = []
        for side, cpu in (("publisher", self.sender_cpu), ("subscriber", self.receiver_cpu)):
            if cpu >= CPU_BOUND:
                notes.append(
                    f"the Python {side} used {cpu:.0%} of a core: its client was the limit, not the system"
                )
        if self.alone_rate:
            notes.append(
                f"the publisher alone (against a no-op sink) sent {self.alone_rate:,.0f}/s at "
                f"{self.alone_cpu:.0%} of a core; through the broker it sent "
                f"{self.sender_rate / self.alone_rate:.0%} of that"
            )
        if self.lost:
            notes.append(
                f"{self.lost:,} of {self.sent:,} messages were not delivered ({self.lost / self.sent:.1%})"
            )
        notes += self.errors
        return notes

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "lost": self.lost}


def _payload(size: int) -> bytes:
    return os.urandom(size)


# -- the two sides, one pair per system -----------------------------------------------------------
# Each runs in its own process: ``ready`` is set once it can take messages (the receiver) or is
# connected (the sender); the result goes back through ``out``.


def _timed(send: Callable[[], None], side: Side) -> None:
    cpu0, wall0 = time.process_time(), time.monotonic()
    side.first_ns = time.monotonic_ns()
    send()
    side.last_ns = time.monotonic_ns()
    wall = time.monotonic() - wall0
    side.cpu = (time.process_time() - cpu0) / wall if wall > 0 else 0.0


class _Counter:
    """The receiver's count, and its CPU use from its first message to its last.

    The wall time is the messages' span, not the time until :meth:`finish`: a receiver that
    stops on ``idle`` (messages were lost) waited that long for nothing, and counting the wait
    would understate how busy it was while messages came (its CPU during the wait, polling, is
    close to nothing and is counted).
    """

    def __init__(self, side: Side, expected: int) -> None:
        self.side, self.expected = side, expected
        self.cpu0 = 0.0
        self.first_ns = 0
        self.done = False

    def tick(self) -> None:
        self.add(1, time.monotonic_ns())

    def add(self, count: int, now: int) -> None:
        """``count`` messages came at ``now`` (monotonic ns)."""
        side = self.side
        if not side.count:
            self.cpu0, self.first_ns = time.process_time(), now
        side.count += count
        side.last_ns = now
        if side.count >= self.expected:
            self.finish()

    def finish(self) -> None:
        if not self.done:
            self.done = True
            span = (self.side.last_ns - self.first_ns) / 1e9
            if self.side.count > 1 and span > 0:
                self.side.cpu = (time.process_time() - self.cpu0) / span


def _receive(system: str, port: int, messages: int, idle: float, ready: Any, out: Any) -> None:
    """The subscriber process: receive until ``messages`` came or ``idle`` s passed without one."""
    side = Side()
    counter = _Counter(side, messages)
    try:
        _RECEIVERS[system](port, counter, idle, ready)
        counter.finish()
    except Exception as error:
        side.error = f"subscriber: {type(error).__name__}: {error}"
    ready.set()
    out.put(("subscriber", asdict(side)))


def _sink(system: str, port: int, messages: int, _idle: float, ready: Any, out: Any) -> None:
    """The no-op sink process (:mod:`._sinks`), in the subscriber's place: what the publisher
    sends with nothing behind it. It ends when the publisher closes its connection."""
    side = Side()
    counter = _Counter(side, messages)
    try:
        serve_sink(system, port, counter.add, ready)
        counter.finish()
    except Exception as error:
        side.error = f"sink: {type(error).__name__}: {error}"
    ready.set()
    out.put(("subscriber", asdict(side)))


def _send(system: str, port: int, messages: int, size: int, out: Any) -> None:
    """The publisher process: send ``messages`` messages of ``size`` random bytes, timed."""
    side = Side()
    try:
        _SENDERS[system](port, messages, _payload(size), side)
        side.count = messages
    except Exception as error:
        side.error = f"publisher: {type(error).__name__}: {error}"
    out.put(("publisher", asdict(side)))


def _idle(side: Side, last: list[Any], idle: float) -> bool:
    """True once no message came for ``idle`` seconds (``last``: count and time last seen)."""
    now = time.monotonic()
    if side.count != last[0]:
        last[0], last[1] = side.count, now
        return False
    return bool(now - last[1] > idle)


def _poll(one: Callable[[], bool], counter: _Counter, idle: float) -> None:
    """Receive with ``one()`` (true when it got a message) until all came or ``idle`` passed."""
    last = [0, time.monotonic()]
    while not counter.done:
        if one():
            counter.tick()
        elif _idle(counter.side, last, idle):
            break


def _wait(counter: _Counter, idle: float) -> None:
    """For clients that count in a callback: wait until all came or ``idle`` passed."""
    last = [0, time.monotonic()]
    while not counter.done and not _idle(counter.side, last, idle):
        time.sleep(0.05)


def _nats_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    nats: Any = importlib.import_module("nats")

    async def main() -> None:
        nc = await nats.connect(f"nats://{servers.HOST}:{port}", max_reconnect_attempts=0)

        async def on_message(_msg: Any) -> None:
            counter.tick()

        await nc.subscribe(SUBJECT, cb=on_message, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        ready.set()
        last = [0, time.monotonic()]
        while not counter.done and not _idle(counter.side, last, idle):
            await asyncio.sleep(0.05)
        await nc.close()

    asyncio.run(main())


def _nats_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    nats: Any = importlib.import_module("nats")

    async def main() -> None:
        nc = await nats.connect(f"nats://{servers.HOST}:{port}", max_reconnect_attempts=0)
        cpu0, wall0 = time.process_time(), time.monotonic()
        side.first_ns = time.monotonic_ns()
        publish = nc.publish
        for _ in range(messages):
            await publish(SUBJECT, payload)
        await nc.flush(timeout=120)
        side.last_ns = time.monotonic_ns()
        side.cpu = (time.process_time() - cpu0) / max(time.monotonic() - wall0, 1e-9)
        await nc.close()

    asyncio.run(main())


def _redis_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    redis: Any = importlib.import_module("redis")

    client = redis.Redis(host=servers.HOST, port=port)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(SUBJECT)
    while not pubsub.subscribed:
        pubsub.get_message(timeout=1.0)
    ready.set()
    _poll(lambda: pubsub.get_message(timeout=0.1) is not None, counter, idle)
    pubsub.close()
    client.close()


def _redis_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    redis: Any = importlib.import_module("redis")

    client = redis.Redis(host=servers.HOST, port=port)

    def send() -> None:
        pipe = client.pipeline(transaction=False)
        for i in range(messages):
            pipe.publish(SUBJECT, payload)
            if i % 100 == 99:
                pipe.execute()
        pipe.execute()

    _timed(send, side)
    client.close()


def _rabbitmq_queue(port: int) -> tuple[Any, Any]:
    """A connection and a channel on which the run's transient queue is declared (both sides)."""
    pika: Any = importlib.import_module("pika")

    connection = pika.BlockingConnection(pika.ConnectionParameters(servers.HOST, port))
    channel = connection.channel()
    channel.queue_declare(SUBJECT, auto_delete=True)
    return connection, channel


def _rabbitmq_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    connection, channel = _rabbitmq_queue(port)
    channel.basic_qos(prefetch_count=1_000)
    channel.basic_consume(SUBJECT, lambda *_: counter.tick(), auto_ack=True)
    ready.set()
    last = [0, time.monotonic()]
    while not counter.done and not _idle(counter.side, last, idle):
        connection.process_data_events(time_limit=0.1)
    connection.close()


def _rabbitmq_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    connection, channel = _rabbitmq_queue(port)

    def send() -> None:
        publish = channel.basic_publish
        for _ in range(messages):
            publish("", SUBJECT, payload)

    _timed(send, side)
    connection.close()


def _mqtt_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    mqtt: Any = importlib.import_module("paho.mqtt.client")

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"sub-{os.getpid()}")
    client.on_message = lambda *_: counter.tick()
    client.on_subscribe = lambda *_: ready.set()
    client.connect(servers.HOST, port)
    client.subscribe(SUBJECT, qos=0)
    client.loop_start()
    _wait(counter, idle)
    client.loop_stop()
    client.disconnect()


def _mqtt_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    mqtt: Any = importlib.import_module("paho.mqtt.client")

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"pub-{os.getpid()}")
    client.max_queued_messages_set(0)
    client.connect(servers.HOST, port)
    client.loop_start()

    def send() -> None:
        info = None
        for _ in range(messages):
            info = client.publish(SUBJECT, payload, qos=0)
        if info is not None:
            info.wait_for_publish(timeout=120)  # written to the socket: the queue is empty

    _timed(send, side)
    client.loop_stop()
    client.disconnect()


def _activemq_connection(port: int, listener: Any) -> Any:
    stomp: Any = importlib.import_module("stomp")

    connection = stomp.Connection12([(servers.HOST, port)], heartbeats=(0, 0), auto_content_length=True)
    connection.set_listener("count", listener)
    connection.connect(wait=True)
    return connection


def _activemq_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    stomp: Any = importlib.import_module("stomp")

    class Listener(stomp.ConnectionListener):  # type: ignore[misc]
        def on_message(self, _frame: Any) -> None:
            counter.tick()

        def on_receipt(self, _frame: Any) -> None:
            ready.set()  # the subscription is in place

    connection = _activemq_connection(port, Listener())
    connection.subscribe(f"/topic/{SUBJECT}", id="1", ack="auto", headers={"receipt": "subscribed"})
    _wait(counter, idle)
    connection.disconnect()


def _activemq_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    stomp: Any = importlib.import_module("stomp")
    done = threading.Event()

    class Listener(stomp.ConnectionListener):  # type: ignore[misc]
        def on_receipt(self, _frame: Any) -> None:
            done.set()

    connection = _activemq_connection(port, Listener())
    destination = f"/topic/{SUBJECT}"

    def send() -> None:
        publish = connection.send
        for _ in range(messages - 1):
            publish(destination, payload)
        # The broker answers the last one's receipt after it handled every frame before it.
        publish(destination, payload, headers={"receipt": "last"})
        if not done.wait(120):
            raise TimeoutError("no receipt for the last message within 120 s")

    _timed(send, side)
    connection.disconnect()


def _zeromq_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    zmq: Any = importlib.import_module("zmq")

    context = zmq.Context()
    sock = context.socket(zmq.SUB)
    sock.setsockopt(zmq.RCVHWM, HWM)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.bind(f"tcp://{servers.HOST}:{port}")
    ready.set()

    def one() -> bool:
        if not sock.poll(100):
            return False
        sock.recv()
        return True

    _poll(one, counter, idle)
    sock.close(linger=0)
    context.term()


def _zeromq_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    zmq: Any = importlib.import_module("zmq")

    context = zmq.Context()
    sock = context.socket(zmq.PUB)
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.connect(f"tcp://{servers.HOST}:{port}")
    time.sleep(0.5)  # the subscriber's subscription arrives after the connection: no slow joiner

    def send() -> None:
        for _ in range(messages):
            sock.send(payload)

    _timed(send, side)
    sock.close(linger=10_000)  # what is still queued goes out before close returns
    context.term()


def _nng_receive(port: int, counter: _Counter, idle: float, ready: Any) -> None:
    pynng: Any = importlib.import_module("pynng")

    with pynng.Sub0(listen=f"tcp://{servers.HOST}:{port}", topics=b"", recv_timeout=100) as sock:
        sock.recv_buffer_size = NNG_BUFFER
        ready.set()

        def one() -> bool:
            try:
                sock.recv()
            except pynng.Timeout:
                return False
            return True

        _poll(one, counter, idle)


def _nng_send(port: int, messages: int, payload: bytes, side: Side) -> None:
    pynng: Any = importlib.import_module("pynng")

    with pynng.Pub0(dial=f"tcp://{servers.HOST}:{port}") as sock:
        sock.send_buffer_size = NNG_BUFFER
        time.sleep(0.5)  # connected before the first message

        def send() -> None:
            for _ in range(messages):
                sock.send(payload)

        _timed(send, side)
        time.sleep(0.2)  # let the last messages leave before the socket closes


_RECEIVERS: dict[str, Callable[[int, _Counter, float, Any], None]] = {
    "nats": _nats_receive,
    "redis": _redis_receive,
    "rabbitmq": _rabbitmq_receive,
    "mqtt": _mqtt_receive,
    "activemq": _activemq_receive,
    "zeromq": _zeromq_receive,
    "nng": _nng_receive,
}
_SENDERS: dict[str, Callable[[int, int, bytes, Side], None]] = {
    "nats": _nats_send,
    "redis": _redis_send,
    "rabbitmq": _rabbitmq_send,
    "mqtt": _mqtt_send,
    "activemq": _activemq_send,
    "zeromq": _zeromq_send,
    "nng": _nng_send,
}


# -- the run ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _endpoint(system: str, alone: bool = False) -> Iterator[int]:
    """The port to use: a started broker's, or a free one for the brokerless systems and for a
    sink (``alone``)."""
    if alone or system in ("zeromq", "nng"):
        yield servers.free_port()
        return
    with running(SERVERS[system]()) as server:
        yield server.port


@dataclass
class NativeRun:
    """A broker's own benchmark tool's figure."""

    tool: str
    rate: float = 0.0
    command: str = ""
    error: str = ""


def _native(
    run: NativeRun,
    server: Any,
    commands: Callable[[], tuple[list[str], list[str]]],
    rate: Callable[[str], float],
    timeout: float,
    settle: float,
) -> NativeRun:
    """Run a broker's own tool against ``server``, started here and stopped after:
    ``commands()`` (called once the server is up: its ports are known) gives a native
    subscriber's argv, started first with ``settle`` s to subscribe, and the tool's argv, whose
    output ``rate`` reads (0: no figure)."""
    with running(server):
        listener, tool = commands()
        subscriber = subprocess.Popen(listener, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(settle)  # subscribed before the first message
            done = subprocess.run(tool, capture_output=True, text=True, timeout=timeout, check=False)
            run.rate = rate(done.stdout)
            if not run.rate:
                said = (done.stderr or done.stdout).strip().splitlines()
                run.error = f"no figure: {said[-1] if said else 'no output'}"
        except subprocess.TimeoutExpired:
            run.error = f"cut short after {timeout:g} s"
        finally:
            subscriber.kill()
            subscriber.wait(5)
    return run


def redis_benchmark(messages: int, size: int, timeout: float = 300.0) -> NativeRun:
    """``redis-benchmark`` (Debian's redis-tools) sending ``messages`` PUBLISH of ``size`` bytes
    on one connection, pipelined by 100 as our Python publisher is, to a private Redis with one
    ``redis-cli`` subscriber on the channel: the broker's pub/sub with native clients."""
    run = NativeRun("redis-benchmark")
    tool, cli = shutil.which("redis-benchmark"), shutil.which("redis-cli")
    if tool is None or cli is None:
        run.error = "redis-benchmark or redis-cli missing: apt-get install redis-tools"
        return run
    run.command = f"redis-benchmark -c 1 -P 100 -n {messages} --csv PUBLISH {SUBJECT} <{size} bytes>"
    server = SERVERS["redis"]()

    def commands() -> tuple[list[str], list[str]]:
        target = ["-h", servers.HOST, "-p", str(server.port)]
        publish = ["-c", "1", "-P", "100", "-n", str(messages), "--csv", "PUBLISH", SUBJECT, "x" * size]
        return [cli, *target, "SUBSCRIBE", SUBJECT], [tool, *target, *publish]

    return _native(run, server, commands, _csv_rate, timeout, settle=0.5)


def activemq_producer(messages: int, size: int, timeout: float = 300.0) -> NativeRun:
    """ActiveMQ's own demo ``producer`` (in Debian's package: ``activemq.jar producer``) sending
    ``messages`` non-persistent messages of ``size`` bytes to a topic over OpenWire, with its own
    ``consumer`` subscribed, to a private ActiveMQ: the broker with its native Java clients. The
    rate is the producer's count over the elapsed time it reports (its JVM's start left out)."""
    run = NativeRun("activemq producer")
    run.command = (
        f"activemq producer --destination topic://{SUBJECT} --messageCount {messages} "
        f"--messageSize {size} --persistent false"
    )
    server = servers.ActiveMQServer()

    def commands() -> tuple[list[str], list[str]]:
        conf = server.tmpdir / "conf"
        (conf / "tool.properties").write_text(  # the producer reports its figures at INFO
            "log4j.rootLogger=INFO, out\nlog4j.appender.out=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.out.layout.ConversionPattern=%m%n\n"
        )

        def java(log4j: str, *task: str) -> list[str]:
            return [
                shutil.which("java") or "java",
                f"-Dlog4j.configuration=file:{conf / log4j}",
                "-Dactivemq.home=/usr/share/activemq",
                f"-Dactivemq.base={server.tmpdir}",
                "-jar",
                servers.ACTIVEMQ_JAR,
                *task,
                "--brokerUrl",
                f"tcp://{servers.HOST}:{server.openwire_port}",
                "--destination",
                f"topic://{SUBJECT}",
                "--messageCount",
                str(messages),
            ]

        # The consumer at WARN (the instance's own log4j file): not a line per message.
        producer = java("tool.properties", "producer", "--messageSize", str(size), "--persistent", "false")
        return java("log4j.properties", "consumer"), producer

    return _native(run, server, commands, _producer_rate, timeout, settle=3.0)


def _producer_rate(text: str) -> float:
    """Messages a second of ActiveMQ's demo producer: its count over its elapsed milliseconds."""
    produced = re.search(r"Produced: (\d+) messages", text)
    elapsed = re.search(r"Elapsed time in milli second : (\d+)", text)
    if produced is None or elapsed is None or not int(elapsed.group(1)):
        return 0.0
    return int(produced.group(1)) / (int(elapsed.group(1)) / 1000)


def _csv_rate(text: str) -> float:
    """The requests a second of ``redis-benchmark --csv``'s output (header, then one row)."""
    for row in csv.reader(text.splitlines()[1:]):
        with contextlib.suppress(IndexError, ValueError):
            return float(row[1])
    return 0.0


def run_throughput(
    system: str,
    messages: int,
    size: int,
    *,
    idle: float = 5.0,
    timeout: float = 300.0,
    command: str = "",
    alone: bool = False,
) -> ThroughputRun:
    """One system's run (module docstring). Raises :class:`SystemUnavailable` for a broker that
    is not installed; a run cut short by ``timeout`` is returned with what it measured.
    ``alone``: the publisher against the system's no-op sink (:data:`~._sinks.SINKS`) instead
    of the broker and a subscriber."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
    if alone and system not in SINKS:
        raise ValueError(f"{system} has no no-op sink; those that have: {', '.join(SINKS)}")
    context = multiprocessing.get_context("spawn")
    run = ThroughputRun(system, messages, size, command=command)
    got: dict[str, Side] = {}
    with _endpoint(system, alone) as port:
        ready, results = context.Event(), context.Queue()
        receiver = _sink if alone else _receive
        processes = [context.Process(target=receiver, args=(system, port, messages, idle, ready, results))]
        processes[0].start()
        try:
            started = time.monotonic()
            while not ready.wait(0.2):
                if not processes[0].is_alive() or time.monotonic() - started > 60:
                    raise SystemUnavailable(f"{system}: the subscriber process did not get ready")
            processes.append(context.Process(target=_send, args=(system, port, messages, size, results)))
            processes[1].start()
            deadline = time.monotonic() + timeout
            while len(got) < 2:
                role, fields = results.get(timeout=max(0.1, deadline - time.monotonic()))
                got[role] = Side(**fields)
        except queue.Empty:
            run.errors.append(f"cut short after {timeout:g} s")
        finally:
            for process in processes:
                process.join(5)
                if process.is_alive():
                    process.kill()
                    process.join(5)
    publisher, subscriber = got.get("publisher", Side()), got.get("subscriber", Side())
    run.errors += [s.error for s in (publisher, subscriber) if s.error]
    run.sent, run.received = publisher.count, subscriber.count
    if publisher.last_ns > publisher.first_ns:
        run.sender_rate = publisher.count / ((publisher.last_ns - publisher.first_ns) / 1e9)
    if subscriber.count and subscriber.last_ns > publisher.first_ns:
        run.receiver_rate = subscriber.count / ((subscriber.last_ns - publisher.first_ns) / 1e9)
    run.sender_cpu, run.receiver_cpu = publisher.cpu, subscriber.cpu
    return run


def run_brokers(
    systems: Sequence[str],
    messages: int,
    size: int,
    out: Path,
    *,
    command: str,
    idle: float = 5.0,
    timeout: float = 300.0,
    progress: Callable[[str], None] = lambda _line: None,
) -> Path:
    """Every system in turn; writes ``results.json``, ``report.md`` and ``brokers.png`` to
    ``out`` and returns the report."""
    check_messages(count=messages, size=size)
    machine = machine_info()
    runs = []
    for system in systems:
        if STOP.is_set():
            raise KeyboardInterrupt
        progress(f"{system}: {messages:,} messages of {size_name(size)}")
        run = run_throughput(system, messages, size, idle=idle, timeout=timeout, command=command)
        progress(f"  sender {run.sender_rate:,.0f}/s, receiver {run.receiver_rate:,.0f}/s, lost {run.lost:,}")
        if system in SINKS:
            alone = run_throughput(system, messages, size, idle=idle, timeout=timeout, alone=True)
            run.alone_rate, run.alone_cpu = alone.sender_rate, alone.sender_cpu
            run.errors += [f"against the no-op sink: {error}" for error in alone.errors]
            progress(f"  the publisher alone, against a no-op sink: {alone.sender_rate:,.0f}/s")
        runs.append(run)
    native = []
    for system, tool in (("redis", redis_benchmark), ("activemq", activemq_producer)):
        if system in systems:
            progress(f"{system}'s own tool: {messages:,} messages of {size_name(size)}")
            native.append(tool(messages, size))
            progress(f"  {native[-1].rate:,.0f}/s" if native[-1].rate else f"  {native[-1].error}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"machine": machine, "runs": [r.as_dict() for r in runs]}, indent=1)
    )
    chart = throughput_chart(
        [
            (
                r.system,
                r.sender_rate,
                r.receiver_rate,
                f"{r.lost / r.sent:.0%} lost" if r.lost else "",
                r.alone_rate,
            )
            for r in runs
        ],
        out / "brokers.png",
        f"Broker throughput: {messages:,} messages of {size_name(size)}, one publisher, one subscriber",
    )
    lines = [
        f"# Broker throughput: {messages:,} messages of {size_name(size)}",
        "",
        f"Command: `{command}`",
        "",
        "| system | sender msg/s | receiver msg/s | received | lost | publisher CPU | subscriber CPU"
        " | publisher alone msg/s | what |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        by_itself = f"{r.alone_rate:,.0f}" if r.alone_rate else "-"
        lines.append(
            f"| {r.system} | {r.sender_rate:,.0f} | {r.receiver_rate:,.0f} | {r.received:,} | {r.lost:,} | "
            f"{r.sender_cpu:.0%} | {r.receiver_cpu:.0%} | {by_itself} | {SYSTEMS[r.system]} |"
        )
    lines += [
        "",
        "*Publisher alone*: the same Python publisher against a no-op sink that speaks just enough "
        "of the protocol to take the messages and drop them (one process, on 127.0.0.1): what the "
        f"client can send with nothing behind it. Sinks exist for {', '.join(SINKS)}.",
        "",
    ]
    for r in runs:
        lines.extend(f"* {r.system}: {note}" for note in r.notes())
    if native:
        lines += [
            "",
            "Native tools, beside the Python clients (the broker's own benchmark where Debian ships one):",
            "",
        ]
        lines += ["| tool | msg/s | command |", "|---|---:|---|"]
        lines += [
            f"| {n.tool} | {n.rate:,.0f} | `{n.command}` |" if n.rate else f"| {n.tool} | - | {n.error} |"
            for n in native
        ]
    lines += ["", f"![{chart.stem}]({chart.name})", ""]
    lines.append("Machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()))
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
