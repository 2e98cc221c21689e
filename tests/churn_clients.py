"""The clients of tests/test_amqtt_churn.py, run as a process of their own so that the broker
under test has a core and the GIL to itself (in one process, the clients' network threads made
each of the broker's socket writes wait for the GIL: a fourth of the broker's time).

``python -m tests.churn_clients PORT`` connects stable subscribers (plain, and the members of one
shared group that no other client joins) and a publisher; starts churning clients that connect,
subscribe, unsubscribe and disconnect all along; publishes MESSAGES messages and a sentinel
behind them; and prints one JSON line: what each stable client received before the sentinel,
the churning clients' cycles and errors. ``python -m tests.churn_clients PORT depart FIRST
COUNT`` runs COUNT clients that subscribe and leave (:func:`depart`). Every wait is bounded
(WAIT, or for the sentinel: until every stable client has it, or no stable client has received
anything for STALL seconds, or LAST in all), so a slow machine makes the run longer, not a
failure."""

from __future__ import annotations

import json
import random
import sys
import threading
import time

from paho.mqtt.client import MQTTMessage

from tests.brokers.mqtt_clients import WAIT, Connection

LAST = 400.0  # seconds the whole load may take to reach every stable client, at most
STALL = 10.0  # seconds with no delivery to any stable client: the rest is lost
END = "end"  # the sentinel topic
STABLE = 30  # plain subscribers that stay
STABLE_SHARED = 3  # members of a shared group that stays
CHURNERS = 4
MESSAGES = 5_000
TOPICS = 10  # the load goes to load/0 .. load/9
CYCLES = 1_000  # the most connect-to-disconnect cycles of one churning client
PAUSE = 0.01  # seconds between two steps of a churning client
DEPARTING = 4  # clients of depart() at a time


class Paho(Connection):
    """One MQTT 3.1.1 connection (:class:`~tests.brokers.mqtt_clients.Connection`) that counts
    the messages received before the sentinel and subscribes with QoS 0."""

    def __init__(self, port: int, client_id: str) -> None:
        self.received = 0
        self.got_end = threading.Event()
        super().__init__(port, client_id, mqtt5=False)

    def on_message(self, message: MQTTMessage) -> None:
        if message.topic == END:
            self.got_end.set()
        elif not self.got_end.is_set():
            self.received += 1

    def subscribe(self, *filters: str) -> None:
        _rc, mid = self.client.subscribe([(f, 0) for f in filters])
        assert mid is not None
        self.wait(lambda: mid in self.subacks, f"SUBACK of {filters}")


def churn(port: int, name: str, stop: threading.Event, errors: list[str], cycles: list[int]) -> None:
    """Connect; subscribe to filters the load matches, plain and shared; unsubscribe one,
    subscribe again, unsubscribe another; disconnect (the broker keeps the session's remaining
    subscriptions until its session monitor ends it); again, until ``stop`` or CYCLES. A PAUSE
    between steps keeps the churn's own cost from starving the broker on a small machine:
    the broker's broadcast loop is busy all along, so each step still lands mid-broadcast."""
    rng = random.Random(name)
    try:
        for _ in range(CYCLES):
            if stop.wait(PAUSE):
                return
            client = Paho(port, name)
            try:
                client.subscribe("load/+", "$share/churn/load/#")
                stop.wait(PAUSE)
                client.unsubscribe("load/+")
                stop.wait(PAUSE)
                client.subscribe("load/+")
                stop.wait(PAUSE)
                client.unsubscribe(rng.choice(["load/+", "$share/churn/load/#"]))
                stop.wait(PAUSE)
            finally:
                client.close()
            cycles.append(1)
    except Exception as error:
        errors.append(f"{name}: {error!r}")


def depart(port: int, first: int, count: int) -> None:
    """Clients ``gone-<first>`` to ``gone-<first + count - 1>``, DEPARTING at a time: each
    connects, subscribes to filters of its own and filters others share, plain and shared
    (groups of its own and groups others are in), and leaves in one of three ways: it
    unsubscribes everything and disconnects; it disconnects (the broker's session monitor ends
    the session within a second); or it disconnects and connects again with a clean session,
    which ends the old one at once, then disconnects. Raises the first client's error."""
    errors: list[BaseException] = []

    def clients(start: int) -> None:
        try:
            for n in range(start, first + count, DEPARTING):
                filters = [f"m/{n}/#", "m/+", f"$share/g{n % 7}/m/#", f"$share/own{n}/m/{n}"]
                client = Paho(port, f"gone-{n}")
                client.subscribe(*filters)
                if n % 3 == 0:
                    client.unsubscribe(*filters)
                client.close()
                if n % 3 == 2:
                    Paho(port, f"gone-{n}").close()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=clients, args=(first + k,)) for k in range(DEPARTING)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # each of a client's waits is bounded by WAIT
    if errors:
        raise errors[0]


def stable_filter(n: int) -> str:
    """The filter of stable subscriber ``n``: every message (``load/#``), or one topic's, by
    name or through ``+``: each message reaches about a third of them, not all, so that the
    broker's work stays small enough for a loaded machine."""
    return ["load/#", f"load/{n % TOPICS}", f"+/{n % TOPICS}"][n % 3]


def expected(filter_: str) -> int:
    """How many of the load's messages ``filter_`` (a stable_filter) matches."""
    if filter_ == "load/#":
        return MESSAGES
    return sum(1 for n in range(MESSAGES) if n % TOPICS == int(filter_.rsplit("/", 1)[1]))


def until_delivered(clients: list[Paho]) -> bool:
    """Wait until every client has the sentinel (True), or until none has received a message
    for STALL seconds or LAST seconds have passed (False)."""
    started = changed = time.monotonic()
    seen = -1
    while not all(client.got_end.is_set() for client in clients):
        now = time.monotonic()
        received = sum(client.received + client.got_end.is_set() for client in clients)
        if received != seen:
            seen, changed = received, now
        if now - changed > STALL or now - started > LAST:
            return False
        time.sleep(0.05)
    return True


def main(argv: list[str]) -> int:
    """``PORT``: the churn run, its report on stdout; ``PORT depart FIRST COUNT``: depart()."""
    port = int(argv[0])
    if argv[1:2] == ["depart"]:
        depart(port, int(argv[2]), int(argv[3]))
        return 0
    stable = [Paho(port, f"stable-{n}") for n in range(STABLE)]
    for n, client in enumerate(stable):
        client.subscribe(stable_filter(n), END)
    shared = [Paho(port, f"member-{n}") for n in range(STABLE_SHARED)]
    for client in shared:
        client.subscribe("$share/stable/load/#", END)
    publisher = Paho(port, "publisher")
    stop, errors, cycles = threading.Event(), list[str](), list[int]()
    churners = [
        threading.Thread(target=churn, args=(port, f"churn-{n}", stop, errors, cycles))
        for n in range(CHURNERS)
    ]
    arrived = False
    try:
        for thread in churners:
            thread.start()
        for n in range(MESSAGES):
            publisher.client.publish(f"load/{n % TOPICS}", b"x", qos=1)
        publisher.client.publish(END, b"end", qos=1)
        arrived = until_delivered([*stable, *shared])
    finally:
        stop.set()
        for thread in churners:
            thread.join(WAIT * 2)
        for client in [*stable, *shared, publisher]:
            client.close()
    report = {
        "sentinel_arrived": arrived,
        "stable": [(stable_filter(n), client.received) for n, client in enumerate(stable)],
        "shared": [client.received for client in shared],
        "cycles": len(cycles),
        "errors": errors,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
