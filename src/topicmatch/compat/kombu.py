"""A topic exchange for kombu's virtual transports with RabbitMQ's exact rules.

kombu's virtual transports (memory, Redis, SQS, filesystem, ...) route a topic exchange with
``kombu.transport.virtual.exchange.TopicExchange``: one regular expression per binding, tried
one after another on every publish, and rules of its own: ``#`` never matches zero words next
to a dot, so ``a.#`` does not match ``a`` (RabbitMQ delivers it), and disagrees with RabbitMQ on
about one small pattern-key pair in nine. Install this one in one line::

    import topicmatch.compat.kombu
    topicmatch.compat.kombu.install()   # every virtual transport's topic exchanges, from now on

Channels opened before :func:`install` follow it too, from their next declare, bind or
publish: a channel makes its exchange types when it opens (``Channel.exchange_types``, one
instance each), and kombu reaches them through ``Channel.typeof``, which :func:`install` wraps
so that an open channel's topic exchange is replaced when it is not of the type installed now.
Nothing is lost in the change: the bindings are the transport's (its tables), not the exchange
type's, and the new one reads them on its first publish.

Bindings then match as RabbitMQ's topic exchange matches them (the ``amqp`` dialect of
:class:`~topicmatch.Matcher`, checked against a real RabbitMQ in tests/brokers), and a publish
costs a :class:`~topicmatch.Matcher` lookup instead of a scan of the bindings.

**How it stays exact.** A transport keeps each exchange's bindings in its own table (a list in
the memory transport's state, a Redis set, ...) and hands it to :meth:`TopicExchange.lookup`.
The exchange keeps a matcher per exchange built from that table and a copy of the table; each
lookup compares the table with the copy (a C-level comparison of the same tuples: about a
millisecond at 100,000 bindings, against the tens of milliseconds of kombu's scan) and applies
the difference to the matcher when the table changed. So bindings added or removed by any
channel or process are seen on the next publish.

Errors: a binding key RabbitMQ could not carry (over 255 bytes of UTF-8) raises
:class:`~topicmatch.InvalidPatternError` when bound; such a routing key raises
:class:`~topicmatch.InvalidTopicError` when published.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topicmatch import Matcher, make_dialect

from ..support.extras import install_hint

try:
    from kombu.transport import virtual
    from kombu.transport.virtual.exchange import TopicExchange as KombuTopicExchange
except ImportError as error:  # pragma: no cover - tests/test_compat_kombu.py, without kombu
    raise ImportError(
        f"topicmatch.compat.kombu needs kombu: {install_hint('kombu')}", name=error.name
    ) from error

__all__ = ["TopicExchange", "install"]

_AMQP = make_dialect("amqp")
Binding = tuple[str, Any, str]  # (routing key, kombu's regex, queue): the transport's table rows


class _Route:
    """One exchange's matcher and the table it was built from."""

    __slots__ = ("bindings", "matcher", "table")

    def __init__(self) -> None:
        self.matcher = Matcher[str](dialect="amqp")
        self.table: list[Binding] = []
        self.bindings: set[tuple[str, str]] = set()

    def follow(self, table: list[Binding]) -> None:
        """Make the matcher hold exactly the (key, queue) pairs of ``table``. O(1) plus a
        C-level comparison when the table did not change; O(table + changes x words) when it
        did."""
        if table == self.table:
            return
        now = {(key, queue) for key, _pattern, queue in table if queue}
        added, removed = now - self.bindings, self.bindings - now
        if removed:
            self.matcher.unsubscribe_many(removed)
        if added:
            self.matcher.subscribe_many(added)
        self.bindings = now
        self.table = list(table)


class TopicExchange(KombuTopicExchange):
    """kombu's topic exchange type, routed by :class:`~topicmatch.Matcher` with RabbitMQ's rules
    (module docstring). One instance per channel, as kombu makes them.

    >>> from kombu import Connection, Exchange, Queue
    >>> kombus_own = install()
    >>> with Connection("memory://") as connection:
    ...     exchange = Exchange("doctest-events", type="topic")
    ...     queue = Queue("doctest-orders", exchange, routing_key="orders.#")
    ...     producer = connection.Producer()
    ...     producer.publish({"id": 1}, exchange=exchange, routing_key="orders", declare=[queue])
    ...     queue(connection.default_channel).get(no_ack=True).payload  # kombu's own misses it
    {'id': 1}
    >>> install(exchange_type=kombus_own) is TopicExchange  # put kombu's back
    True
    """

    type = "topic"

    def __init__(self, channel: Any) -> None:
        super().__init__(channel)  # type: ignore[no-untyped-call]
        self._routes: dict[str, _Route] = {}

    def prepare_bind(self, queue: str, exchange: str, routing_key: str, arguments: Any) -> Binding:
        """The table row of a new binding; raises :class:`~topicmatch.InvalidPatternError` for a
        binding key RabbitMQ could not carry."""
        _AMQP.parse_pattern(routing_key)
        row: Binding = super().prepare_bind(queue, exchange, routing_key, arguments)  # type: ignore[no-untyped-call]
        return row

    def lookup(self, table: list[Binding], exchange: str, routing_key: str, default: Any) -> set[str]:
        """The queues whose binding key matches ``routing_key`` as RabbitMQ matches it."""
        route = self._routes.get(exchange)
        if route is None:
            route = self._routes[exchange] = _Route()
        route.follow(table)
        return set(route.matcher.lookup(routing_key))


def install(channel: type[Any] = virtual.Channel, exchange_type: type[Any] = TopicExchange) -> type[Any]:
    """Make ``exchange_type`` (:class:`TopicExchange`) the ``topic`` exchange type of ``channel``
    (kombu's virtual ``Channel``, whose table every virtual transport's channel inherits, by
    default) and return the class it replaces: ``install(exchange_type=previous)`` puts it
    back. Channels already open follow too, from their next declare, bind or publish (module
    docstring)."""
    previous: type[Any] = channel.exchange_types["topic"]
    channel.exchange_types["topic"] = exchange_type
    virtual.Channel.typeof = _typeof  # type: ignore[method-assign]
    return previous


#: kombu's ``Channel.typeof``, which :func:`_typeof` wraps (no virtual transport overrides it).
_KOMBUS_TYPEOF: Callable[[Any, str, str], Any] = virtual.Channel.typeof


def _typeof(self: Any, exchange: str, default: str = "direct") -> Any:
    """kombu's ``Channel.typeof`` (the exchange type instance of ``exchange``), the channel's
    topic one replaced first when it is not of the class installed now: the channel opened
    before :func:`install` (or before ``install(exchange_type=previous)``)."""
    found = _KOMBUS_TYPEOF(self, exchange, default)
    installed = type(self).exchange_types.get("topic")
    if found.type == "topic" and installed is not None and type(found) is not installed:
        found = self.exchange_types["topic"] = installed(self)
    return found
