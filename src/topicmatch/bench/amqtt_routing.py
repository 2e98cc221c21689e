"""Experiment ``amqtt``: a real amqtt broker, stock and on topicmatch, with real clients.

Each broker runs in a process of its own on 127.0.0.1 (:mod:`.amqtt_server`: the same
configuration for both, stopped by PID) and is driven by paho-mqtt clients of this process,
MQTT 3.1.1, QoS 0:

* **Routing.** ``n`` subscriptions ``bench/d<i>/+`` (1,000, 10,000, 100,000), held by four
  receiving clients and sent in SUBSCRIBE packets of 500 filters; a publisher sends
  ``bench/d<j>/temp`` for random ``j``, so each message matches exactly one subscription and
  delivery costs the same on both brokers: what differs is finding the subscription. Two
  phases, each bounded in messages and seconds: *throughput*, with at most 64 messages in flight
  (delivered messages per second, from the first send to the last delivery); *latency*, one
  message at a time (percentiles of send-to-delivery, recorded in an HDR histogram). Each phase
  runs ``repeat`` times after a warm-up; the report gives the medians.
* **SUBSCRIBE with retained messages.** 100,000 retained messages ``retained/d<i>/state``; a
  client subscribes to a narrow filter (``retained/d<i>/+``, one match) and the time to its
  retained message is measured (median of ``5 x repeat`` filters), then ``retained/#`` and the
  time until all have arrived (once: it is dominated by the deliveries, the same on both). The
  measurements start once the broker has routed the loading's last message.

The payload carries the send time (``time.monotonic_ns``, one clock for the whole machine).
"""

from __future__ import annotations

import random
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import charts
from .report import Progress, Report, fmt_int

__all__ = ["run"]

HOST = "127.0.0.1"
BROKERS = ("stock", "topicmatch")
RECEIVERS = 4
WINDOW = 64  # messages in flight in the throughput phase
BATCH = 500  # filters per SUBSCRIBE packet
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
DRAIN = 30.0  # seconds a phase may wait for its last messages after its own time is up


@dataclass(frozen=True)
class Plan:
    """Sizes and bounds of one run of the experiment."""

    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    messages: int = 20_000  # per throughput run, at most
    seconds: float = 10.0  # per throughput run, at most
    pings: int = 300  # per latency run, at most
    ping_seconds: float = 8.0  # per latency run, at most
    retained: int = 100_000
    narrow: int = 5  # narrow SUBSCRIBEs per run
    setup_seconds: float = 300.0  # bound of every set-up step (subscribing, retaining)


FULL = Plan()
QUICK = Plan(
    sizes=(100, 1_000), messages=400, seconds=2.0, pings=30, ping_seconds=1.5, retained=1_000, narrow=2
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def broker_process(broker: str, log: Path, ready_seconds: float = 30.0) -> Iterator[int]:
    """Run :mod:`.amqtt_server` with ``broker`` on a free port (yielded) and stop it by PID."""
    port = _free_port()
    with log.open("w") as stream:
        process = subprocess.Popen(
            [sys.executable, "-m", "topicmatch.bench.amqtt_server", "--broker", broker, "--port", str(port)],
            stdout=stream,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + ready_seconds
            while True:
                try:
                    socket.create_connection((HOST, port), timeout=1).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the {broker} amqtt broker did not start: see {log}") from None
                    time.sleep(0.05)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:  # a broker buried under a backlog
                process.kill()
                process.wait()


@dataclass
class _Deliveries:
    """What the receiving clients saw, shared with their network threads."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    count: int = 0
    last: float = 0.0
    latencies_us: list[int] = field(default_factory=list)
    topics: set[str] = field(default_factory=set)
    keep_topics: bool = False

    def on_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        now = time.monotonic_ns()
        payload = message.payload
        with self.cond:
            if len(payload) >= 8:
                self.latencies_us.append(max(1, (now - struct.unpack("!q", payload[:8])[0]) // 1000))
            if self.keep_topics:
                self.topics.add(message.topic)
            self.count += 1
            self.last = time.perf_counter()
            self.cond.notify_all()

    def wait(self, done: Any, deadline: float) -> bool:
        """Wait until ``done()`` (called under the lock) or the deadline; whether it is done."""
        with self.cond:
            while not done():
                left = deadline - time.perf_counter()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.1))
            return True


class _Client:
    """A paho-mqtt client (MQTT 3.1.1) with its network loop on a thread."""

    def __init__(self, port: int, client_id: str, deliveries: _Deliveries | None, seconds: float) -> None:
        from paho.mqtt.client import Client  # noqa: PLC0415 - the bench extra
        from paho.mqtt.enums import CallbackAPIVersion  # noqa: PLC0415

        self.client = Client(CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.max_queued_messages_set(0)
        self._acks = threading.Condition()
        self._subacks = 0
        self._pubacks: set[int] = set()
        self._connected = False
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_publish = self._on_publish
        if deliveries is not None:
            self.client.on_message = deliveries.on_message
        self.client.connect(HOST, port, keepalive=600)
        self.client.loop_start()
        self._wait(lambda: self._connected, seconds, "CONNACK")

    def _on_connect(self, *_args: Any) -> None:
        with self._acks:
            self._connected = True
            self._acks.notify_all()

    def _on_subscribe(self, *_args: Any) -> None:
        with self._acks:
            self._subacks += 1
            self._acks.notify_all()

    def _on_publish(self, _client: Any, _userdata: Any, mid: int, *_args: Any) -> None:
        with self._acks:
            self._pubacks.add(mid)
            self._acks.notify_all()

    def _wait(self, done: Any, seconds: float, what: str) -> None:
        deadline = time.perf_counter() + seconds
        with self._acks:
            while not done():
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError(f"no {what} within {seconds:.0f} s")
                self._acks.wait(min(left, 0.1))

    def subscribe(self, filters: list[str], seconds: float) -> None:
        """Subscribe to ``filters`` in SUBSCRIBE packets of :data:`BATCH`; wait for every SUBACK."""
        with self._acks:
            target = self._subacks
        for start in range(0, len(filters), BATCH):
            self.client.subscribe([(f, 0) for f in filters[start : start + BATCH]])
            target += 1
        self._wait(lambda: self._subacks >= target, seconds, "SUBACK")

    def publish(self, topic: str, retain: bool = False) -> None:
        self.client.publish(topic, struct.pack("!q", time.monotonic_ns()), qos=0, retain=retain)

    def publish_acked(self, topic: str, seconds: float) -> None:
        """Publish with QoS 1 and wait for the PUBACK: the broker has handled everything this
        client sent before it."""
        mid = self.client.publish(topic, struct.pack("!q", time.monotonic_ns()), qos=1, retain=True).mid
        self._wait(lambda: mid in self._pubacks, seconds, "PUBACK")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _percentiles(latencies_us: list[int]) -> dict[str, float]:
    from hdrh.histogram import HdrHistogram  # noqa: PLC0415 - the bench extra

    histogram = HdrHistogram(1, 600_000_000, 3)
    for value in latencies_us:
        histogram.record_value(value)
    return {f"p{p:g}": histogram.get_value_at_percentile(p) / 1000 for p in PERCENTILES}  # ms


def _routing(broker: str, n: int, plan: Plan, repeat: int, out: Path, progress: Progress) -> dict[str, Any]:
    """Throughput and latency of one broker at ``n`` subscriptions (module docstring)."""
    rng = random.Random(n)
    deliveries = _Deliveries()
    with broker_process(broker, out / f"broker-{broker}-{n}.log") as port:
        receivers = [_Client(port, f"receiver{r}", deliveries, plan.setup_seconds) for r in range(RECEIVERS)]
        started = time.perf_counter()
        for r, receiver in enumerate(receivers):
            receiver.subscribe([f"bench/d{i}/+" for i in range(r, n, RECEIVERS)], plan.setup_seconds)
        subscribe_s = time.perf_counter() - started
        publisher = _Client(port, "publisher", None, plan.setup_seconds)
        try:
            _flow(publisher, deliveries, rng, n, min(plan.messages, 500), plan.seconds / 2)  # warm-up
            rates, delivered, pings = [], [], []
            for _ in range(repeat):
                rate, count = _flow(publisher, deliveries, rng, n, plan.messages, plan.seconds)
                rates.append(rate)
                delivered.append(count)
                pings.append(_pings(publisher, deliveries, rng, n, plan.pings, plan.ping_seconds))
        finally:
            for client in (*receivers, publisher):
                client.close()
    result: dict[str, Any] = {
        "msg_per_s": statistics.median(rates),
        "rates": rates,
        "delivered": delivered,
        "subscribe_s": subscribe_s,
        "latency_ms": {k: statistics.median(p[k] for p in pings) for k in pings[0] if k != "count"},
        "pings": [int(p["count"]) for p in pings],
    }
    progress(
        f"{broker} at {n:,} subscriptions: {result['msg_per_s']:,.0f} msg/s, p50 "
        f"{result['latency_ms']['p50']:.2f} ms"
    )
    return result


def _flow(
    publisher: _Client, deliveries: _Deliveries, rng: random.Random, n: int, messages: int, seconds: float
) -> tuple[float, int]:
    """Publish up to ``messages`` with at most :data:`WINDOW` in flight, for at most ``seconds``;
    (delivered per second, delivered)."""
    with deliveries.cond:
        base = deliveries.count
    start = time.perf_counter()
    deadline = start + seconds
    sent = 0
    while sent < messages:
        if not deliveries.wait(lambda s=sent: s - (deliveries.count - base) < WINDOW, deadline):
            break
        publisher.publish(f"bench/d{rng.randrange(n)}/temp")
        sent += 1
    # Wait for the messages still in flight (at most WINDOW): the next phase must start from an
    # idle broker. Bounded: WINDOW messages at the rate measured, at most DRAIN seconds.
    deliveries.wait(lambda: deliveries.count - base >= sent, max(deadline, time.perf_counter()) + DRAIN)
    with deliveries.cond:
        got = deliveries.count - base
        end = deliveries.last if got else time.perf_counter()
    return got / max(end - start, 1e-9), got


def _pings(
    publisher: _Client, deliveries: _Deliveries, rng: random.Random, n: int, pings: int, seconds: float
) -> dict[str, float]:
    """One message at a time, up to ``pings`` or ``seconds``: latency percentiles in ms (and
    ``count``)."""
    with deliveries.cond:
        deliveries.latencies_us = []
        base = deliveries.count
    deadline = time.perf_counter() + seconds
    for k in range(pings):
        publisher.publish(f"bench/d{rng.randrange(n)}/temp")
        if not deliveries.wait(lambda k=k: deliveries.count - base > k, deadline):
            break
    with deliveries.cond:
        latencies = list(deliveries.latencies_us)
    return {**_percentiles(latencies), "count": float(len(latencies))}


def _retained(broker: str, plan: Plan, repeat: int, out: Path, progress: Progress) -> dict[str, Any]:
    """SUBSCRIBE with ``plan.retained`` retained messages: narrow filters, then everything."""
    rng = random.Random(3)
    deliveries = _Deliveries(keep_topics=True)
    with broker_process(broker, out / f"broker-{broker}-retained.log") as port:
        loader = _Client(port, "loader", None, plan.setup_seconds)
        started = time.perf_counter()
        for i in range(plan.retained):
            loader.publish(f"retained/d{i}/state", retain=True)
        loader.publish_acked("retained/last/state", plan.setup_seconds)
        load_s = time.perf_counter() - started
        client = _Client(port, "subscriber", deliveries, plan.setup_seconds)
        narrow = []
        try:
            # amqtt acknowledges a PUBLISH before its broadcast task has handled it: wait until
            # a message sent after the others has been routed, so that no backlog of the loading
            # runs into the measurements.
            client.subscribe(["retained/sync"], plan.setup_seconds)
            loader.publish("retained/sync")
            if not deliveries.wait(
                lambda: "retained/sync" in deliveries.topics, time.perf_counter() + plan.setup_seconds
            ):
                raise TimeoutError("the broker did not route the loading's last message")
            for i in rng.sample(range(plan.retained), plan.narrow * repeat):
                topic = f"retained/d{i}/state"
                start = time.perf_counter()
                client.client.subscribe(f"retained/d{i}/+", 0)
                if not deliveries.wait(lambda t=topic: t in deliveries.topics, start + plan.setup_seconds):
                    raise TimeoutError(f"the retained message of {topic} did not arrive")
                narrow.append(time.perf_counter() - start)
            # A client of its own, counting distinct topics: stock amqtt also sends a client that
            # connects the retained messages of the other client's subscriptions.
            all_of_them = _Deliveries(keep_topics=True)
            everything = _Client(port, "everything", all_of_them, plan.setup_seconds)
            try:
                start = time.perf_counter()
                everything.client.subscribe("retained/#", 0)
                total = plan.retained + 1
                complete = all_of_them.wait(
                    lambda: len(all_of_them.topics) >= total, start + plan.setup_seconds
                )
                broad = time.perf_counter() - start
            finally:
                everything.close()
        finally:
            client.close()
            loader.close()
    result = {
        "load_s": load_s,
        "narrow_ms": statistics.median(narrow) * 1000,
        "narrow_all_ms": [t * 1000 for t in narrow],
        "hash_s": broad,
        "hash_complete": complete,
    }
    progress(
        f"{broker} with {plan.retained:,} retained: SUBSCRIBE narrow {result['narrow_ms']:.2f} ms, "
        f"'#' {broad:.2f} s"
    )
    return result


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    """Run the experiment (module docstring); write ``report.md``, charts and ``results.json``."""
    plan = QUICK if quick else FULL
    report = Report(
        "amqtt",
        out,
        "A real amqtt broker, stock and on topicmatch",
        {
            "sizes": plan.sizes,
            "repeat": repeat,
            "messages per throughput run": plan.messages,
            "seconds per throughput run": plan.seconds,
            "window": WINDOW,
            "pings per latency run": plan.pings,
            "retained": plan.retained,
            "receivers": RECEIVERS,
        },
    )
    routing = {b: {n: _routing(b, n, plan, repeat, out, progress) for n in plan.sizes} for b in BROKERS}
    retained = {b: _retained(b, plan, repeat, out, progress) for b in BROKERS}
    report.result("routing", {b: {str(n): r for n, r in rows.items()} for b, rows in routing.items()})
    report.result("retained", retained)
    _write(report, plan, routing, retained)
    return report.write()


def _write(
    report: Report,
    plan: Plan,
    routing: dict[str, dict[int, dict[str, Any]]],
    retained: dict[str, dict[str, Any]],
) -> None:
    stock, ours = routing["stock"], routing["topicmatch"]
    report.text(
        "Delivered messages per second (throughput runs, at most 64 in flight) and the latency of "
        "one message at a time (send to delivery), medians of the runs. Each message matches one "
        "subscription; the ratio is topicmatch / stock."
    )
    rows = []
    for n in plan.sizes:
        s, o = stock[n], ours[n]
        rows.append(
            [
                fmt_int(n),
                fmt_int(s["msg_per_s"]),
                fmt_int(o["msg_per_s"]),
                f"{o['msg_per_s'] / s['msg_per_s']:.1f}x",
                f"{s['latency_ms']['p50']:.2f} / {s['latency_ms']['p99']:.2f}",
                f"{o['latency_ms']['p50']:.2f} / {o['latency_ms']['p99']:.2f}",
                f"{s['subscribe_s']:.1f} / {o['subscribe_s']:.1f}",
            ]
        )
    report.table(
        [
            "subscriptions",
            "stock msg/s",
            "topicmatch msg/s",
            "ratio",
            "stock p50 / p99 ms",
            "topicmatch p50 / p99 ms",
            "subscribing s (stock / topicmatch)",
        ],
        rows,
    )
    sizes = [float(n) for n in plan.sizes]
    report.chart(
        "throughput",
        charts.lines(
            sizes,
            {b: [routing[b][n]["msg_per_s"] for n in plan.sizes] for b in BROKERS},
            "subscriptions",
            "delivered messages per second",
            "amqtt broker: delivered msg/s (each message matches one subscription)",
            logx=True,
            logy=True,
        ),
        "Delivered messages per second, stock amqtt and amqtt on topicmatch",
    )
    report.chart(
        "latency",
        charts.lines(
            sizes,
            {
                f"{b} {p}": [routing[b][n]["latency_ms"][p] for n in plan.sizes]
                for b in BROKERS
                for p in ("p50", "p99")
            },
            "subscriptions",
            "latency, ms (one message at a time)",
            "amqtt broker: publish-to-delivery latency",
            logx=True,
            logy=True,
        ),
        "Latency percentiles of one message at a time, stock amqtt and amqtt on topicmatch",
    )
    s, o = retained["stock"], retained["topicmatch"]
    report.text(
        f"SUBSCRIBE with {plan.retained:,} retained messages: time from the SUBSCRIBE to the "
        "arrival of the retained messages it matches (narrow: one match, median of the filters; "
        "'#': every message, once)."
    )
    report.table(
        ["filter", "stock", "topicmatch", "ratio (stock / topicmatch)"],
        [
            [
                "retained/d<i>/+ (1 match)",
                f"{s['narrow_ms']:.2f} ms",
                f"{o['narrow_ms']:.2f} ms",
                f"{s['narrow_ms'] / o['narrow_ms']:.0f}x",
            ],
            [
                f"retained/# ({plan.retained + 1:,} matches)",
                f"{s['hash_s']:.2f} s",
                f"{o['hash_s']:.2f} s",
                f"{s['hash_s'] / o['hash_s']:.2f}x",
            ],
        ],
    )
