"""Who receives a publication, and how: MQTT subscription options applied as Mosquitto 2.0 does.

A broker keeps, per client, its subscriptions with their options (:class:`Subscription`: QoS,
no-local, retain-as-published, retain handling, subscription identifier) and asks
:meth:`DeliveryPlanner.plan` for each message: the receiving clients, each once, with the
PUBLISH packets (:class:`Copy`) to send it. The rules are Mosquitto's (``src/subs.c``,
``src/database.c``, ``src/handle_subscribe.c``), as Debian 12's ``mosquitto`` 2.0.11 runs them
(it carries upstream's fix for CVE-2024-8376, which puts shared subscriptions in a tree of their
own; upstream 2.0.19 and later behave alike), and tests/brokers/test_delivery_mosquitto.py
compares them with that broker:

* **Each matching subscription of an MQTT 5 client is a copy of its own.** Mosquitto does not
  merge overlapping subscriptions for MQTT 5 clients (MQTT 5 allows both): a client subscribed
  to ``a/#`` and ``a/+`` receives two PUBLISH packets for ``a/b``, each with that
  subscription's QoS (the lower of the publication's and the subscription's), its retain flag
  (the publication's with retain-as-published, else 0) and its identifier (at most one).
* **An MQTT 3.1.1 client receives one copy**, of the first matching subscription in Mosquitto's
  walk: the normal subscriptions first, then the shared ones; within each, the topic's levels
  in order, and at each level a literal level before ``+`` before ``#`` (a ``#`` that matches the
  parent level, ``a/#`` for ``a``, comes just before ``a`` itself). Its QoS is that
  subscription's, not the highest (``a/+`` at QoS 2 wins over ``a/#`` at QoS 0). Its retain flag
  is 0: MQTT 3.1.1 has no retain-as-published.
* **Shared subscriptions** (``$share/<group>/<filter>``): one member of each group, chosen by
  :class:`~topicmatch.SharedGroups` (round-robin by default: Mosquitto's queue; or random,
  hashes of the topic or the publisher, EMQX's sticky), passing over the members the broker
  says are away (:class:`DeliveryPlanner`'s ``away``; not the hash policies, which make their
  one choice). The member's
  turn is used even when the member gets nothing: when its read access is denied, or when it is
  an MQTT 3.1.1 client that already has the message from another subscription; the message is
  then lost for that group, as in Mosquitto. No-local does not apply to shared subscriptions:
  MQTT 5 calls it a protocol error, Mosquitto accepts it and ignores it, and so does this class.
* **No-local**: a normal subscription with no-local does not receive its own client's
  publications.
* **Access**: a client given :class:`~topicmatch.ClientRules` receives only topics its
  :meth:`~topicmatch.ClientRules.may_receive` allows (Mosquitto's read check); a client without
  rules receives what a Mosquitto without ``acl_file`` delivers: every topic but those that
  start with ``$share``, whose read Mosquitto refuses every client, ``acl_file`` or not (it
  refuses a client's PUBLISH there too; a bridge can bring one in). Checking the publisher's
  write access is the broker's, before it plans.
* **A repeated SUBSCRIBE** of a filter the client holds changes its QoS and identifier only:
  Mosquitto keeps the first SUBSCRIBE's no-local and retain-as-published (MQTT 5 says the new
  options replace the old). An identifier left out removes the old one.
* **Retain handling** decides only what :meth:`DeliveryPlanner.subscribe` returns: whether the
  broker sends the matching retained messages now (0: always; 1: if the subscription is new;
  2: never; MQTT 3.1.1: always; a shared subscription: never). Those copies carry retain 1, the
  lower of the retained message's and the subscription's QoS, and the subscription's identifier.

Not modelled: a server ``max_qos`` below 2 and ``upgrade_outgoing_qos`` (Mosquitto's defaults
are assumed), message expiry, and what happens to a copy for a client that is away (a broker that
keeps sessions keeps the client here until its session ends and queues or drops the copy).

Cost: :meth:`~DeliveryPlanner.plan` is one :meth:`~topicmatch.Matcher.lookup` of the topic, then
O(k log k) for the k matching subscriptions (normal ones, and one per shared group), one
:meth:`~topicmatch.SharedGroups.choose` per group, and one read check per receiving client
(O(R x w), :class:`~topicmatch.ClientRules`). :meth:`~DeliveryPlanner.subscribe` and
:meth:`~DeliveryPlanner.unsubscribe` are a matcher change (:meth:`~DeliveryPlanner.subscribe_many`:
one for all its pairs) plus O(members) for a shared one;
:meth:`~DeliveryPlanner.disconnect` does that for each of the client's subscriptions, in one
:meth:`~topicmatch.Matcher.unsubscribe_many`. Not
thread-safe, like :class:`~topicmatch.SharedGroups`: a broker calls it from its event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, NamedTuple

from ._access import ClientRules
from ._dialects import make_dialect, plain
from ._errors import ConfigurationError, InvalidSubscriberError
from ._matcher import Matcher
from ._shared import SharedGroups, ShareGroup
from ._typevars import Count, Text

__all__ = ["Copy", "Delivery", "DeliveryPlanner", "Subscription"]

#: The largest subscription identifier (a variable byte integer, MQTT 5 3.8.2.1.2).
MAX_IDENTIFIER: Final = 268_435_455
#: Rank of a filter level in Mosquitto's walk: a literal level, then ``+``, then ``#``.
_RANKS: Final = {"+": 1, "#": 2}
_MQTT: Final = make_dialect("mqtt")


class Subscription(NamedTuple):
    """The options of one subscription (MQTT 5, 3.8.3.1): ``qos`` 0-2, ``no_local``,
    ``retain_as_published``, ``retain_handling`` 0-2 and ``identifier`` (1 to 268,435,455, or
    None). An MQTT 3.1.1 subscription has a QoS only."""

    qos: int = 0
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0
    identifier: int | None = None


#: The options of a subscription given none: QoS 0, no flags, retain handling 0, no identifier.
DEFAULT: Final = Subscription()


class Copy(NamedTuple):
    """One PUBLISH packet to send: for the subscription to ``filter`` (as subscribed, with its
    ``$share/<group>/`` prefix), with this QoS, retain flag and subscription identifier."""

    filter: str
    qos: int
    retain: bool
    identifier: int | None


class Delivery(NamedTuple):
    """What one client receives of a publication: one or more copies (MQTT 5: one per matching
    subscription; MQTT 3.1.1: one), in the order Mosquitto queues them."""

    client: str
    copies: tuple[Copy, ...]


class _Entry:
    """One subscription of one client: its options and, for a shared one, its group."""

    __slots__ = ("client", "filter", "group", "options", "ranks")

    def __init__(self, client: str, filter_: str, options: Subscription, group: ShareGroup | None) -> None:
        self.client = client
        self.filter = filter_
        self.options = options
        self.group = group
        self.ranks = _ranks(group.filter if group is not None else filter_)


def _ranks(filter_: str) -> tuple[int, ...]:
    """The filter's levels (without a ``$share/<group>/`` prefix) ranked for the walk's order."""
    return tuple(_RANKS.get(level, 0) for level in filter_.split("/"))


def _order(ranks: tuple[int, ...], levels: int) -> tuple[int, ...]:
    """Where Mosquitto's walk of a topic of ``levels`` levels meets a matching filter of these
    ranks: tuples in the walk's order compare in that order."""
    if len(ranks) > levels:  # a '#' that matches the parent: just before the parent itself
        return (*ranks[:levels], 0)
    if ranks[-1] == 2:  # a '#' met while levels remain: at its own level
        return ranks
    return (*ranks, 1)


class _Client:
    __slots__ = ("mqtt5", "rules", "subscriptions")

    def __init__(self, mqtt5: bool, rules: ClientRules | None) -> None:
        self.mqtt5 = mqtt5
        self.rules = rules
        self.subscriptions: dict[str, _Entry] = {}


#: Which clients are away (:class:`DeliveryPlanner`'s ``away``): true for a client whose
#: session lives on while it is disconnected, passed over by the share groups' choice.
Away = Callable[[str], bool]


class DeliveryPlanner:
    """The clients, their subscriptions with MQTT 5 options, and the plan of each publication
    (module docstring: the rules, Mosquitto's, and the cost).

    ``share_policy`` and ``seed`` are :class:`~topicmatch.SharedGroups`'. ``away``, if given,
    tells which clients are away: :meth:`SharedGroups.choose <topicmatch.SharedGroups.choose>`
    passes over them while a member of the group is there, except under the hash policies,
    which make their one choice (it is called with each member it considers, O(members) per
    group).

    >>> planner = DeliveryPlanner()
    >>> for client in ("sensor", "ui", "w1", "w2"):
    ...     planner.connect(client)
    >>> planner.subscribe("ui", "home/#", Subscription(qos=1, identifier=7))
    True
    >>> planner.subscribe("ui", "home/+/temp", Subscription(qos=2, retain_as_published=True))
    True
    >>> planner.subscribe("sensor", "home/#", Subscription(qos=2, no_local=True))
    True
    >>> for worker in ("w1", "w2"):
    ...     planner.subscribe(worker, "$share/log/home/#", Subscription(qos=1))
    False
    False
    >>> for delivery in planner.plan("home/hall/temp", publisher="sensor", qos=1, retain=True):
    ...     print(delivery.client, [tuple(copy) for copy in delivery.copies])
    ui [('home/+/temp', 1, True, None), ('home/#', 1, False, 7)]
    w1 [('$share/log/home/#', 1, False, None)]
    >>> [d.client for d in planner.plan("home/hall/temp", publisher="sensor", qos=1)]
    ['ui', 'w2']
    """

    def __init__(
        self, *, share_policy: Text = "round_robin", seed: Count | None = None, away: Away | None = None
    ) -> None:
        if away is not None and not callable(away):
            raise ConfigurationError(f"away must be callable or None, not {type(away).__name__}")
        self._groups = SharedGroups[str](share_policy, seed=seed)
        self._away = away
        self._matcher = Matcher[_Entry | ShareGroup](dialect="mqtt")
        self._clients: dict[str, _Client] = {}
        # Per group: a number from a counter (Mosquitto walks the groups of one filter in the
        # order they were created: uthash's order) and its filter's ranks.
        self._created: dict[ShareGroup, tuple[int, tuple[int, ...]]] = {}
        self._serial = 0

    def __repr__(self) -> str:
        return f"<DeliveryPlanner: {len(self._clients)} clients, {len(self._groups)} shared groups>"

    def connect(self, client: Text, *, mqtt5: bool = True, rules: ClientRules | None = None) -> None:
        """Register ``client`` (its client id), an MQTT 5 client or (``mqtt5=False``) an MQTT
        3.1.1 one, with the access ``rules`` its messages pass (None: every topic but those
        starting with ``$share``, as Mosquitto). A client already known keeps its subscriptions
        (a resumed session) and takes the new settings. O(1).
        :class:`~topicmatch.ConfigurationError` for arguments of the wrong type."""
        _check_client(client)
        if not isinstance(mqtt5, bool):
            raise ConfigurationError(f"mqtt5 must be a bool, not {mqtt5!r}")
        if rules is not None and not isinstance(rules, ClientRules):
            raise ConfigurationError(f"rules must be ClientRules or None, not {type(rules).__name__}")
        known = self._clients.get(client)
        if known is None:
            self._clients[client] = _Client(mqtt5, rules)
        else:
            known.mqtt5, known.rules = mqtt5, rules

    def disconnect(self, client: Text) -> int:
        """End the client's session: forget it and every subscription it held (it leaves its
        shared groups); the number of subscriptions removed, 0 for an unknown client."""
        _check_client(client)
        known = self._clients.pop(client, None)
        if known is None:
            return 0
        routes = [self._leave(entry) for entry in known.subscriptions.values()]
        self._matcher.unsubscribe_many([route for route in routes if route is not None])
        return len(known.subscriptions)

    def subscribe(self, client: Text, filter_: Text, options: Subscription = DEFAULT) -> bool:
        """Add (or change, module docstring) the client's subscription to ``filter_`` (mqtt
        dialect; ``$share/<group>/<filter>`` joins a shared group); True if the broker sends the
        matching retained messages now, by the retain handling. Raises
        :class:`~topicmatch.ConfigurationError` for an unknown client or bad options (MQTT 5's
        own to an MQTT 3.1.1 client) and :class:`~topicmatch.InvalidPatternError` for a filter
        the mqtt dialect rejects, before anything changes."""
        (send,) = self.subscribe_many(client, [(filter_, options)])
        return send

    def subscribe_many(self, client: Text, subscriptions: Iterable[tuple[Text, Subscription]]) -> list[bool]:
        """:meth:`subscribe` of each (filter, options) pair in order (one SUBSCRIBE packet, or a
        restored session), the new ones joining the matcher in one
        :meth:`~topicmatch.Matcher.subscribe_many`; each pair's answer, in order. A filter given
        twice is a repeated SUBSCRIBE the second time. Every pair is checked first: the errors of
        :meth:`subscribe` (a bad filter's names its position), and nothing changes. O(pairs)
        plus the matcher's change.

        >>> planner = DeliveryPlanner()
        >>> planner.connect("c", mqtt5=False)
        >>> planner.subscribe_many("c", [("a/#", Subscription(qos=1)), ("$share/g/a", Subscription())])
        [True, False]
        """
        known = self._known(client)
        pairs = list(subscriptions)
        checked: list[tuple[str, Subscription]] = []
        for position, pair in enumerate(pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise ConfigurationError(f"subscription {position} is not a (filter, options) pair: {pair!r}")
            filter_, options = pair
            _check_options(options, known.mqtt5)
            filter_ = plain(filter_)
            _MQTT.parse_pattern(filter_)  # raises for a bad filter, before any change
            checked.append((filter_, options))
        routes: list[tuple[str, _Entry | ShareGroup]] = []
        answers: list[bool] = []
        for filter_, options in checked:
            group = ShareGroup.of(filter_) if filter_.startswith("$share/") else None
            entry = known.subscriptions.get(filter_)
            new = entry is None
            if entry is None:
                entry = _Entry(client, filter_, options, group)
                if group is None:
                    routes.append((filter_, entry))
                else:
                    if group not in self._created:
                        self._serial += 1
                        self._created[group] = (self._serial, entry.ranks)
                    routes.append((filter_, group))
                    self._groups.join(filter_, client)
                known.subscriptions[filter_] = entry
            else:
                # Mosquitto's sub__add_leaf: a repeated subscription takes the new QoS and
                # identifier and keeps its first no-local and retain-as-published.
                entry.options = entry.options._replace(qos=options.qos, identifier=options.identifier)
            if group is not None:
                answers.append(False)
            elif not known.mqtt5:
                answers.append(True)
            else:
                answers.append(options.retain_handling == 0 or (options.retain_handling == 1 and new))
        self._matcher.subscribe_many(routes)
        return answers

    def unsubscribe(self, client: Text, filter_: Text) -> bool:
        """Remove the client's subscription to ``filter_``; True if it had one."""
        entry = self._known(client).subscriptions.get(filter_)
        if entry is None:
            return False
        route = self._leave(entry)
        if route is not None:
            self._matcher.unsubscribe(*route)
        del self._clients[entry.client].subscriptions[entry.filter]
        return True

    def holds(self, client: Text, filter_: Text) -> bool:
        """True if ``client`` is connected and holds a subscription to ``filter_`` (as
        subscribed): a broker that awaits between :meth:`plan` and sending checks that the
        copy's subscription is still there. O(1)."""
        _check_client(client)
        known = self._clients.get(client)
        return known is not None and filter_ in known.subscriptions

    def count(self, client: Text) -> int:
        """The number of subscriptions ``client`` holds; 0 for a client not connected. O(1)."""
        _check_client(client)
        known = self._clients.get(client)
        return 0 if known is None else len(known.subscriptions)

    def subscriptions(self, client: Text) -> dict[str, Subscription]:
        """The client's subscriptions: filter -> options (as Mosquitto keeps them)."""
        return {f: entry.options for f, entry in self._known(client).subscriptions.items()}

    def plan(
        self, topic: Text, *, publisher: Text | None = None, qos: int = 0, retain: bool = False
    ) -> list[Delivery]:
        """The deliveries of a message on ``topic`` published by client ``publisher`` (None: by
        the broker itself) with ``qos`` and the ``retain`` flag: each receiving client once, in
        the order Mosquitto first queues to it (module docstring: the rules). Moves each matching
        shared group's turn. Raises :class:`~topicmatch.InvalidTopicError` for a topic the mqtt
        dialect rejects and :class:`~topicmatch.ConfigurationError` for a bad QoS, retain flag
        or publisher, before any turn moves."""
        if type(qos) is not int or not 0 <= qos <= 2:
            raise ConfigurationError(f"qos must be 0, 1 or 2, not {qos!r}")
        if not isinstance(retain, bool):
            raise ConfigurationError(f"retain must be a bool, not {retain!r}")
        if publisher is not None:
            _check_client(publisher)
        found = self._matcher.lookup(topic)
        levels = topic.count("/") + 1
        normal: list[tuple[tuple[int, ...], str, _Entry]] = []
        shared: list[tuple[tuple[int, ...], int, ShareGroup]] = []
        for item in found:
            if type(item) is ShareGroup:
                serial, ranks = self._created[item]
                shared.append((_order(ranks, levels), serial, item))
            else:
                entry: _Entry = item  # type: ignore[assignment]
                normal.append((_order(entry.ranks, levels), entry.client, entry))
        normal.sort(key=_first_two)
        shared.sort(key=_first_two)
        copies: dict[str, list[Copy]] = {}
        allowed: dict[str, bool] = {}
        for _place, client, entry in normal:
            if entry.options.no_local and client == publisher:
                continue
            self._send(entry, topic, qos, retain, copies, allowed)
        groups, away = self._groups, self._away
        for _place, _created, group in shared:
            member = groups.choose(group, topic, publisher, away)
            if member is not None:
                chosen = self._clients[member].subscriptions[f"$share/{group.name}/{group.filter}"]
                self._send(chosen, topic, qos, retain, copies, allowed)
        return [Delivery(client, tuple(sent)) for client, sent in copies.items()]

    def _send(
        self,
        entry: _Entry,
        topic: str,
        qos: int,
        retain: bool,
        copies: dict[str, list[Copy]],
        allowed: dict[str, bool],
    ) -> None:
        """Mosquitto's subs__send and db__message_insert: the read check, then the copy (an
        MQTT 3.1.1 client's first only)."""
        client = entry.client
        known = self._clients[client]
        may = allowed.get(client)
        if may is None:
            rules = known.rules
            # Without rules, Mosquitto's own read rule still holds (acl__check_dollar in its
            # security.c, before any acl_file): no client reads a topic starting with '$share'.
            may = not topic.startswith("$share") if rules is None else rules.may_receive(topic)
            allowed[client] = may
        if not may:
            return
        sent = copies.get(client)
        if sent is None:
            sent = copies[client] = []
        elif not known.mqtt5:
            return
        options = entry.options
        sent.append(
            Copy(
                entry.filter,
                min(qos, options.qos),
                retain and options.retain_as_published,
                options.identifier,
            )
        )

    def _known(self, client: Text) -> _Client:
        _check_client(client)
        known = self._clients.get(client)
        if known is None:
            raise ConfigurationError(f"client {client!r} is not connected: connect() it first")
        return known

    def _leave(self, entry: _Entry) -> tuple[str, _Entry | ShareGroup] | None:
        """Take the subscription out of its shared group, if any; the route to take out of the
        matcher: its own, or its group's once the group is empty, else None."""
        group = entry.group
        if group is None:
            return (entry.filter, entry)
        if self._groups.leave(entry.filter, entry.client):
            del self._created[group]
            return (entry.filter, group)
        return None


def _first_two(item: tuple[tuple[int, ...], object, object]) -> tuple[tuple[int, ...], object]:
    return item[0], item[1]


def _check_client(client: object) -> None:
    if not isinstance(client, str):
        raise InvalidSubscriberError(f"a client id is a str, not {type(client).__name__}")


def _check_options(options: object, mqtt5: bool) -> None:
    if not isinstance(options, Subscription):
        raise ConfigurationError(f"options must be a Subscription, not {type(options).__name__}")
    if type(options.qos) is not int or not 0 <= options.qos <= 2:
        raise ConfigurationError(f"a subscription's qos is 0, 1 or 2, not {options.qos!r}")
    if type(options.retain_handling) is not int or not 0 <= options.retain_handling <= 2:
        raise ConfigurationError(f"retain_handling is 0, 1 or 2, not {options.retain_handling!r}")
    if not (isinstance(options.no_local, bool) and isinstance(options.retain_as_published, bool)):
        raise ConfigurationError("no_local and retain_as_published are bools")
    identifier = options.identifier
    if identifier is not None and (type(identifier) is not int or not 1 <= identifier <= MAX_IDENTIFIER):
        raise ConfigurationError(
            f"a subscription identifier is 1 to {MAX_IDENTIFIER:,} or None, not {identifier!r}"
        )
    if not mqtt5 and options != Subscription(qos=options.qos):
        raise ConfigurationError("an MQTT 3.1.1 subscription has a QoS only (no MQTT 5 options)")
