# kombu ships type information but leaves most of its functions unannotated.
# mypy: disable-error-code="no-untyped-call"
"""topicmatch.compat.kombu: RabbitMQ's topic rules in kombu's virtual transports, end to end on
kombu's in-memory transport, on the RabbitMQ conformance cases recorded in tests/brokers."""

from __future__ import annotations

import itertools
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from kombu.connection import Connection
from kombu.entity import Exchange, Queue
from kombu.transport import virtual
from kombu.transport.virtual.exchange import TopicExchange as KombuTopicExchange

from topicmatch import InvalidPatternError, InvalidTopicError
from topicmatch.compat.kombu import TopicExchange, install

from .brokers.test_conformance_amqp import EDGE_CASES
from .reference import amqp_matches


@pytest.fixture
def installed() -> Iterator[None]:
    previous = install()
    try:
        yield
    finally:
        install(exchange_type=previous)


def _route_for_real(bindings: list[str], keys: list[str]) -> dict[str, set[str]]:
    """Bind one queue per binding key on a fresh topic exchange of kombu's memory transport,
    publish one message per routing key, and read back which keys each binding's queue got."""
    tag = uuid.uuid4().hex
    exchange = Exchange(f"x-{tag}", type="topic")
    queues = [Queue(f"q{n}-{tag}", exchange, routing_key=key) for n, key in enumerate(bindings)]
    got: dict[str, set[str]] = {key: set() for key in bindings}
    with Connection("memory://") as connection:
        channel = connection.default_channel
        for queue in queues:
            queue(channel).declare()
        producer = connection.Producer(channel)
        for key in keys:
            producer.publish({"key": key}, exchange=exchange, routing_key=key)
        for key, queue in zip(bindings, queues, strict=True):
            bound = queue(channel)
            while (message := bound.get(no_ack=True)) is not None:
                got[key].add(message.payload["key"])
    return got


def test_the_recorded_rabbitmq_cases_end_to_end(installed: None) -> None:
    bindings = list(dict.fromkeys(p for p, _, _ in EDGE_CASES))
    keys = list(dict.fromkeys(t for _, t, _ in EDGE_CASES))
    got = _route_for_real(bindings, keys)
    for binding, key, delivered in EDGE_CASES:
        assert (key in got[binding]) is delivered, (binding, key)


def test_kombus_own_exchange_gets_some_of_them_wrong() -> None:
    """The same run without install(): kombu's regex exchange, which the module replaces."""
    assert virtual.Channel.exchange_types["topic"] is KombuTopicExchange
    bindings = list(dict.fromkeys(p for p, _, _ in EDGE_CASES))
    keys = list(dict.fromkeys(t for _, t, _ in EDGE_CASES))
    got = _route_for_real(bindings, keys)
    wrong = [(b, k) for b, k, delivered in EDGE_CASES if (k in got[b]) is not delivered]
    assert ("a.#", "a") in wrong


def test_small_grid_equals_rabbitmqs_rules() -> None:
    """Every pair over a small alphabet: ours equals the rules the conformance suite checks
    against RabbitMQ; kombu's own exchange disagrees on some."""
    words = ["a", "b", "*", "#"]
    patterns = ["", *(".".join(p) for n in range(1, 4) for p in itertools.product(words, repeat=n))]
    keys = ["", *(".".join(k) for n in range(1, 4) for k in itertools.product(["a", "b"], repeat=n))]
    table = [(p, None, f"q{n}") for n, p in enumerate(patterns)]
    ours = TopicExchange(channel=None)
    theirs = KombuTopicExchange(channel=None)
    their_table = [(p, theirs.key_to_pattern(p), q) for p, _, q in table]
    disagreements = 0
    for key in keys:
        expected = {q for p, _, q in table if amqp_matches(p, key)}
        assert ours.lookup(table, "grid", key, None) == expected, key
        disagreements += theirs.lookup(their_table, "grid", key, None) != expected
    assert disagreements > 0


def test_bindings_added_and_removed_are_seen_on_the_next_publish() -> None:
    exchange = TopicExchange(channel=None)
    table: list[tuple[str, object, str]] = [("a.#", None, "q1")]
    assert exchange.lookup(table, "x", "a", None) == {"q1"}
    table.append(("*.b", None, "q2"))  # as the memory transport appends to its list
    assert exchange.lookup(table, "x", "a.b", None) == {"q1", "q2"}
    table[:] = [row for row in table if row[2] != "q1"]  # as kombu's queue_unbind does
    assert exchange.lookup(table, "x", "a.b", None) == {"q2"}
    assert exchange.lookup(list(reversed(table)), "x", "c.b", None) == {"q2"}  # a new list object


def test_keys_rabbitmq_cannot_carry(installed: None) -> None:
    exchange = TopicExchange(channel=None)
    with pytest.raises(InvalidPatternError):
        exchange.prepare_bind("q", "x", "k" * 256, {})
    with pytest.raises(InvalidTopicError):
        exchange.lookup([], "x", "k" * 256, None)


def test_install_applies_to_a_channel_already_open() -> None:
    """A channel opened before install() follows it from its next publish, with the bindings it
    made before (nothing lost); install(exchange_type=previous) puts kombu's rules back on it."""
    assert virtual.Channel.exchange_types["topic"] is KombuTopicExchange
    tag = uuid.uuid4().hex
    exchange = Exchange(f"x-{tag}", type="topic")
    orders = Queue(f"orders-{tag}", exchange, routing_key="orders.#")
    with Connection("memory://") as connection:
        channel = connection.default_channel
        orders(channel).declare()  # bound under kombu's rules
        producer = connection.Producer(channel)

        def delivered(key: str, queue: Queue = orders) -> list[str]:
            producer.publish({"key": key}, exchange=exchange, routing_key=key)
            bound = queue(channel)
            got = []
            while (message := bound.get(no_ack=True)) is not None:
                got.append(message.payload["key"])
            return got

        assert delivered("orders") == []  # kombu's own: 'orders.#' misses 'orders'
        previous = install()
        try:
            assert delivered("orders") == ["orders"]  # RabbitMQ's rules, on the binding made before
            assert delivered("orders.new.eu") == ["orders.new.eu"]
            assert isinstance(channel.typeof(exchange.name), TopicExchange)
            later = Queue(f"later-{tag}", exchange, routing_key="*.paid")
            later(channel).declare()  # bound after install, beside the one before
            assert delivered("orders.paid", later) == ["orders.paid"]
            assert delivered("x") == ["orders.paid"]  # both bindings delivered it, once each
        finally:
            assert install(exchange_type=previous) is TopicExchange
        assert delivered("orders") == []  # kombu's rules back on the same open channel
        assert type(channel.typeof(exchange.name)) is KombuTopicExchange


def test_without_kombu_the_import_names_the_install_command() -> None:
    code = (
        "import sys; sys.modules['kombu'] = None\n"
        "try:\n    import topicmatch.compat.kombu\n"
        "except ImportError as error:\n    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "topicmatch.compat.kombu needs kombu: pip install 'topicmatch[kombu]'\n"
