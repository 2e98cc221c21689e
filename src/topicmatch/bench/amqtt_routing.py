"""Experiment ``amqtt``: a real amqtt broker, stock and on topicmatch, with real clients.

Each broker runs in a process of its own on 127.0.0.1 (:mod:`.amqtt_server`: the same
configuration for both, stopped by PID) and is driven by paho-mqtt clients of this process,
MQTT 3.1.1, QoS 0:

* **Routing.** ``n`` subscriptions (1,000, 10,000, 100,000), one per device ``i``, a mix of
  literal and wildcard filters (:func:`filters`): half ``bench/d<i>/temp``, the rest
  ``bench/d<i>/+`` but one in a hundred ``bench/d<i>/#``. They are held by four receiving
  clients and sent in SUBSCRIBE packets of 500 filters. A publisher sends ``bench/d<j>/temp``
  for random ``j``, so each message matches exactly one subscription (the delivered count is
  checked against the sent count) and delivery costs the same on both brokers: what differs is
  finding the subscription. Each of ``repeat`` rounds (the brokers take turns) starts a fresh
  broker, subscribes (the client's wall time until the last SUBACK, and the broker process's CPU
  time over it), warms up, then runs two phases, each bounded in messages and seconds:
  *throughput*, with at most 64 messages in flight (delivered messages per second, from the
  first send to the last delivery, and the broker's CPU time per delivered message); *latency*,
  one message at a time (percentiles of send-to-delivery, recorded in an HDR histogram). The
  report gives the medians of the rounds and, as their A/A spread, the range of each ratio
  that the lowest and highest rounds allow.
* **SUBSCRIBE with retained messages.** 100,000 retained messages ``retained/d<i>/state``; a
  client subscribes to a narrow filter (``retained/d<i>/+``, one match) and the time to its
  retained message is measured (median of ``5 x repeat`` filters), then ``retained/#`` and the
  time until all have arrived (once: it is dominated by the deliveries, the same on both). The
  measurements start once the broker has routed the loading's last message.

The payload carries the send time (``time.monotonic_ns``, one clock for the whole machine). The
broker's CPU time (user and system, all its threads) comes from ``/proc/<pid>/stat``: it counts
what the broker did, not how long it waited for a core on a busy machine.
"""

from __future__ import annotations

import os
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

__all__ = ["broker_cpu_s", "filters", "run"]

HOST = "127.0.0.1"
BROKERS = ("stock", "topicmatch")
RECEIVERS = 4
WINDOW = 64  # messages in flight in the throughput phase
BATCH = 500  # filters per SUBSCRIBE packet
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
DRAIN = 30.0  # seconds a phase may wait for its last messages after its own time is up
HASH_EVERY = 100  # one filter in this many ends in '#'


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


def filters(n: int) -> list[str]:
    """The ``n`` filters of the routing phase, one per device ``i``: ``bench/d<i>/temp`` for even
    ``i``, ``bench/d<i>/#`` for every :data:`HASH_EVERY`-th odd ``i``, ``bench/d<i>/+`` for the
    other odd ones. The topic ``bench/d<j>/temp`` matches exactly one of them for every ``j < n``.

    >>> filters(4)
    ['bench/d0/temp', 'bench/d1/#', 'bench/d2/temp', 'bench/d3/+']
    """
    return [f"bench/d{i}/{_last_level(i)}" for i in range(n)]


def _last_level(i: int) -> str:
    if i % 2 == 0:
        return "temp"
    return "#" if i % (2 * HASH_EVERY) == 1 else "+"


def broker_cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) of process ``pid`` so far, in seconds, from
    ``/proc/<pid>/stat`` (Linux): what a process did, whatever the load on the machine.

    Raises FileNotFoundError when there is no such process (or no ``/proc``).
    """
    with open(f"/proc/{pid}/stat", encoding="ascii") as stream:
        stat = stream.read()
    # The command name, in parentheses, may hold spaces: the fields to count start after it.
    # utime and stime are fields 14 and 15 of proc(5), the 12th and 13th after the name.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def broker_process(broker: str, log: Path, ready_seconds: float = 30.0) -> Iterator[tuple[int, int]]:
    """Run :mod:`.amqtt_server` with ``broker`` on a free port; yield (port, PID); stop it by PID."""
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
            yield port, process.pid
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


def _routing(plan: Plan, repeat: int, out: Path, progress: Progress) -> dict[str, dict[int, dict[str, Any]]]:
    """Subscribing, throughput and latency of both brokers at each size, ``repeat`` rounds on
    fresh brokers (module docstring); the brokers take turns, with the same messages in a round,
    so that a change of load on the machine falls on both."""
    rounds: dict[str, dict[int, list[dict[str, Any]]]] = {b: {n: [] for n in plan.sizes} for b in BROKERS}
    for n in plan.sizes:
        for k in range(repeat):
            for broker in BROKERS:
                got = _round(broker, n, plan, out, random.Random(n * 1000 + k))
                rounds[broker][n].append(got)
                progress(
                    f"{broker} at {n:,} subscriptions, round {k + 1} of {repeat}: "
                    f"{got['msg_per_s']:,.0f} msg/s, p50 {got['latency_ms']['p50']:.2f} ms, subscribing "
                    f"{got['subscribe_s']:.1f} s ({got['subscribe_cpu_s']:.2f} s of broker CPU)"
                )
    return {b: {n: _summary(rounds[b][n]) for n in plan.sizes} for b in BROKERS}


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of one broker's rounds at ``n`` subscriptions, and the rounds."""
    return {
        "msg_per_s": statistics.median(r["msg_per_s"] for r in rounds),
        "publish_cpu_us": statistics.median(r["publish_cpu_us"] for r in rounds),
        "subscribe_s": statistics.median(r["subscribe_s"] for r in rounds),
        "subscribe_cpu_s": statistics.median(r["subscribe_cpu_s"] for r in rounds),
        "latency_ms": {
            k: statistics.median(r["latency_ms"][k] for r in rounds) for k in rounds[0]["latency_ms"]
        },
        "all_delivered": all(r["sent"] == r["delivered"] for r in rounds),
        "rounds": rounds,
    }


def _round(broker: str, n: int, plan: Plan, out: Path, rng: random.Random) -> dict[str, Any]:
    """One round of :func:`_routing` on a fresh broker."""
    deliveries = _Deliveries()
    wanted = filters(n)
    with broker_process(broker, out / f"broker-{broker}-{n}.log", plan.setup_seconds) as (port, pid):
        receivers = [_Client(port, f"receiver{r}", deliveries, plan.setup_seconds) for r in range(RECEIVERS)]
        cpu = broker_cpu_s(pid)
        started = time.perf_counter()
        for r, receiver in enumerate(receivers):
            receiver.subscribe(wanted[r::RECEIVERS], plan.setup_seconds)
        subscribe_s = time.perf_counter() - started
        subscribe_cpu_s = broker_cpu_s(pid) - cpu
        publisher = _Client(port, "publisher", None, plan.setup_seconds)
        try:
            _flow(publisher, deliveries, rng, n, min(plan.messages, 500), plan.seconds / 2)  # warm-up
            cpu = broker_cpu_s(pid)
            rate, sent, delivered = _flow(publisher, deliveries, rng, n, plan.messages, plan.seconds)
            publish_cpu_s = broker_cpu_s(pid) - cpu
            pings = _pings(publisher, deliveries, rng, n, plan.pings, plan.ping_seconds)
        finally:
            for client in (*receivers, publisher):
                client.close()
    return {
        "msg_per_s": rate,
        "sent": sent,
        "delivered": delivered,
        "publish_cpu_s": publish_cpu_s,
        "publish_cpu_us": publish_cpu_s / max(delivered, 1) * 1e6,  # per delivered message
        "subscribe_s": subscribe_s,
        "subscribe_cpu_s": subscribe_cpu_s,
        "latency_ms": {k: v for k, v in pings.items() if k != "count"},
        "pings": int(pings["count"]),
    }


def _flow(
    publisher: _Client, deliveries: _Deliveries, rng: random.Random, n: int, messages: int, seconds: float
) -> tuple[float, int, int]:
    """Publish up to ``messages`` with at most :data:`WINDOW` in flight, for at most ``seconds``;
    (delivered per second, sent, delivered)."""
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
    return got / max(end - start, 1e-9), sent, got


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
    with broker_process(broker, out / f"broker-{broker}-retained.log", plan.setup_seconds) as (port, _pid):
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
    routing = _routing(plan, repeat, out, progress)
    retained = {b: _retained(b, plan, repeat, out, progress) for b in BROKERS}
    report.result("routing", {b: {str(n): r for n, r in rows.items()} for b, rows in routing.items()})
    report.result("retained", retained)
    _write(report, plan, routing, retained)
    return report.write()


def _delivery_note(*by_broker: dict[int, dict[str, Any]]) -> str:
    """Whether every round delivered each message sent exactly once (the check of the mix)."""
    short = [
        f"{n:,} ({r['delivered']:,} of {r['sent']:,})"
        for rows in by_broker
        for n, row in rows.items()
        for r in row["rounds"]
        if r["delivered"] != r["sent"]
    ]
    if not short:
        return "In every round each message sent was delivered once."
    return "Rounds where deliveries and sends differ: " + ", ".join(short) + "."


def _ratio(numerator: dict[str, Any], denominator: dict[str, Any], key: str) -> str:
    """``numerator[key] / denominator[key]`` of the medians, with the range the rounds allow:
    ``"3.1x (2.5-3.8x)"``; "n/a" where a denominator is 0 (less CPU than a clock tick)."""
    tops = [r[key] for r in numerator["rounds"]]
    bottoms = [r[key] for r in denominator["rounds"]]
    if min(bottoms) <= 0 or denominator[key] <= 0:
        return "n/a"
    median = numerator[key] / denominator[key]
    low, high = min(tops) / max(bottoms), max(tops) / min(bottoms)
    digits = 1 if low >= 10 else 2
    return f"{median:.{digits}f}x ({low:.{digits}f}-{high:.{digits}f}x)"


def _write(
    report: Report,
    plan: Plan,
    routing: dict[str, dict[int, dict[str, Any]]],
    retained: dict[str, dict[str, Any]],
) -> None:
    stock, ours = routing["stock"], routing["topicmatch"]
    report.text(
        f"Filters: a mix, one per device `i`: half `bench/d<i>/temp` (literal), the rest "
        f"`bench/d<i>/+` but one in {HASH_EVERY} `bench/d<i>/#`. Each published `bench/d<j>/temp` "
        f"matches exactly one subscription. {_delivery_note(stock, ours)}"
    )
    report.text(
        "**Publishing.** Delivered messages per second (at most 64 in flight), the broker "
        "process's CPU time per delivered message, and the latency of one message at a time "
        "(send to delivery). Medians of the rounds; in brackets, the lowest and highest ratio "
        "the rounds allow (the worst round of one broker against the best of the other): the "
        "spread between runs of the same broker."
    )
    report.table(
        [
            "subscriptions",
            "stock msg/s",
            "topicmatch msg/s",
            "msg/s, topicmatch / stock",
            "broker CPU µs per message (stock / topicmatch)",
            "CPU per message, stock / topicmatch",
            "latency p50 / p99 ms, stock",
            "latency p50 / p99 ms, topicmatch",
        ],
        [
            [
                fmt_int(n),
                fmt_int(stock[n]["msg_per_s"]),
                fmt_int(ours[n]["msg_per_s"]),
                _ratio(ours[n], stock[n], "msg_per_s"),
                f"{stock[n]['publish_cpu_us']:,.0f} / {ours[n]['publish_cpu_us']:,.0f}",
                _ratio(stock[n], ours[n], "publish_cpu_us"),
                f"{stock[n]['latency_ms']['p50']:.2f} / {stock[n]['latency_ms']['p99']:.2f}",
                f"{ours[n]['latency_ms']['p50']:.2f} / {ours[n]['latency_ms']['p99']:.2f}",
            ]
            for n in plan.sizes
        ],
    )
    report.text(
        "**Subscribing.** All `n` filters in SUBSCRIBE packets of 500, four clients one after "
        "the other: the clients' wall time until the last SUBACK, and the broker process's CPU "
        "time (user + system) over the same span, which a busy machine does not inflate. "
        "Ratios are stock / topicmatch: above 1, topicmatch is faster."
    )
    report.table(
        [
            "subscriptions",
            "wall s, stock",
            "wall s, topicmatch",
            "wall, stock / topicmatch",
            "broker CPU s, stock",
            "broker CPU s, topicmatch",
            "broker CPU, stock / topicmatch",
        ],
        [
            [
                fmt_int(n),
                f"{stock[n]['subscribe_s']:.2f}",
                f"{ours[n]['subscribe_s']:.2f}",
                _ratio(stock[n], ours[n], "subscribe_s"),
                f"{stock[n]['subscribe_cpu_s']:.2f}",
                f"{ours[n]['subscribe_cpu_s']:.2f}",
                _ratio(stock[n], ours[n], "subscribe_cpu_s"),
            ]
            for n in plan.sizes
        ],
    )
    sizes = [float(n) for n in plan.sizes]
    charted = [
        (
            "throughput",
            {b: [routing[b][n]["msg_per_s"] for n in plan.sizes] for b in BROKERS},
            "delivered messages per second",
            "amqtt broker: delivered msg/s (each message matches one subscription)",
            "Delivered messages per second, stock amqtt and amqtt on topicmatch",
        ),
        (
            "latency",
            {
                f"{b} {p}": [routing[b][n]["latency_ms"][p] for n in plan.sizes]
                for b in BROKERS
                for p in ("p50", "p99")
            },
            "latency, ms (one message at a time)",
            "amqtt broker: publish-to-delivery latency",
            "Latency percentiles of one message at a time, stock amqtt and amqtt on topicmatch",
        ),
        (
            "subscribing",
            {b: [routing[b][n]["subscribe_cpu_s"] for n in plan.sizes] for b in BROKERS},
            "broker CPU seconds to take all the filters",
            "amqtt broker: CPU time of subscribing (SUBSCRIBE packets of 500 filters)",
            "Broker CPU time to take n subscriptions, stock amqtt and amqtt on topicmatch",
        ),
    ]
    for name, series, ylabel, title, caption in charted:
        report.chart(
            name, charts.lines(sizes, series, "subscriptions", ylabel, title, logx=True, logy=True), caption
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
