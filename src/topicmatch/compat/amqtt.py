"""An amqtt broker whose routing, retained messages, shared subscriptions and topic ACL run on
topicmatch.

amqtt (Python's asyncio MQTT broker) is a good broker with four matching defects, which
:class:`Broker` here fixes in its own code, the rest of amqtt unchanged:

1. **Every publish scans every subscription.** amqtt's ``_run_broadcast`` calls ``_matches`` on
   each subscription's filter for each message, and formats a debug string for each miss: 0.5
   ms per publish at 1,000 subscriptions, 50 ms at 100,000. Here a
   :class:`~topicmatch.DeliveryPlanner` plans each message with one
   :meth:`~topicmatch.Matcher.lookup`, microseconds whatever the number of subscriptions.
2. **Every SUBSCRIBE scans every retained message.** Here the retained messages are also kept
   in a :class:`~topicmatch.TopicIndex`, which walks only the branch the filter names (a broad
   filter such as ``#`` costs no more than the scan).
3. **A wildcard escapes amqtt's topic ACL.** Its ``TopicAccessControlListPlugin`` lets a client
   allowed ``sensors/+`` subscribe to ``sensors/#`` (and ``+`` to ``#``). :class:`TopicACLPlugin`
   takes the same configuration and allows a filter only if an allowed filter *covers* it
   (:meth:`Dialect.covers <topicmatch.Dialect.covers>`), or takes a Mosquitto ``acl_file``
   (:class:`~topicmatch.AccessRules`). With an ``acl_file`` and no other topic plugin, the
   planner applies each client's read rules (:class:`~topicmatch.ClientRules`, of the username
   of its latest CONNECT) to each message, with no RECEIVE check through amqtt's plugins.
4. **A client that connects is sent other clients' retained messages.** amqtt replays the
   retained messages of *every* subscription of the broker to each connecting client, one
   await per filter of the broker (87 ms per CONNECT at 100,000 filters); here only those of
   the client's own subscriptions, at O(its subscriptions) per CONNECT.

And one cost: after each SUBSCRIBE, amqtt formats its whole dict of subscriptions into a debug
line, logged or not: O(all subscriptions) per packet, most of the time of 100,000 subscriptions
arriving. Here that line names the number of filters. A SUBSCRIBE's filters (or a restored
session's, through :meth:`Broker.add_subscriptions`) join the matcher in one
:meth:`~topicmatch.Matcher.subscribe_many`.

Who receives a message, and at which QoS, is the planner's answer
(:class:`~topicmatch.DeliveryPlanner` states the rules), Mosquitto's for
MQTT 3.1.1 clients, the only ones amqtt speaks to: a client gets one copy however many of its
subscriptions match (amqtt sends one per subscription), with the QoS of the first in
Mosquitto's walk of the topic (``a/+`` before ``a/#``), not the highest; that copy has the
lower of the message's QoS (its PUBLISH's or its will's) and the subscription's (MQTT 3.1.1,
3.8.4), where amqtt sends a client's message at the subscription's QoS and a will at its own.
A message of the broker or a plugin, which has none, goes at the subscription's.

And ``$share/<group>/<filter>``, a literal filter to amqtt, is a shared subscription: each
message goes to one member of each group (round-robin by default, in Mosquitto's order; or
random, hash of the topic, EMQX's hash of the publisher's client id, or EMQX's sticky:
:class:`BrokerOptions`), passing over a member that is away (amqtt keeps a disconnected
client's subscriptions until its session ends) unless all are, except under the hash policies,
which make their one choice; a shared subscription gets no
retained messages (MQTT 5, 4.8.2). The planner's groups keep the members and the round-robin
queues, and pass over the members the broker says are away (``DeliveryPlanner(away=...)``).
As in Mosquitto, a member that already has the message by another of its subscriptions spends
its group's turn, and that group's copy is lost.

What it holds against clients that come and go:

* **Churn during a broadcast.** A message's recipients are planned (one lookup) before the
  first await, and their topic plugins' RECEIVE checks are awaited together: a client that
  subscribes, unsubscribes or leaves meanwhile changes no other delivery, and one whose
  subscription ended meanwhile is skipped, as is one whose session a CONNECT resumed under
  another username meanwhile (the check answered for the one before). (amqtt's own loop
  awaits inside its walk of the subscriptions, and stops half-way when they change under it:
  the message is lost for every subscriber after that point.)
* **Retained messages pass the RECEIVE check.** A SUBSCRIBE's retained messages are checked
  as a live message is, before any is sent.
* **A CONNECT is authenticated before it touches anything.** amqtt deletes the session of
  its client id (a clean CONNECT), or gives it the CONNECT's username, password and will (a
  resuming one), and takes over its live connection, all before it authenticates the CONNECT,
  and keeps a session marked connected for every CONNECT it refuses: a client with a wrong
  password could end another client's session, take its connection and leave a will under the
  username it claimed, or fill the broker with refused sessions. Here a CONNECT that does not
  authenticate gets CONNACK *not authorized* and changes nothing (Mosquitto authenticates
  before it looks for the old session).
* **One connection per client id, and it acts for its own user only.** amqtt gives a resumed
  session the new CONNECT's username and will before it closes the old connection, which
  meanwhile acts under that name; then the old connection's end marks the session
  disconnected and the new connection is closed too; a clean CONNECT leaves the old
  connection open, acting for the client id; and two CONNECTs of one id can interleave, the
  slower taking the session with the other's username. Here the CONNECTs of a client id are
  handled one at a time, each closing the connection it replaces, and waiting until amqtt is
  done with it, before anything changes (MQTT 3.1.1, 3.1.4-2).
* **What a client sent is never routed under another user's name.** amqtt checks a PUBLISH
  when its message loop gets to it, as whoever holds the session then: a QoS 2 PUBLISH whose
  PUBREL comes after a CONNECT resumed the session under another username, or a message left
  in the session's queue, would pass as that user's. Here each message carries the username
  of the connection it came on and is dropped if the session's user is another by then
  (Mosquitto checks a PUBLISH as it arrives, as its sender).
* **A bounded backlog of unreleased messages.** amqtt holds every QoS 2 message a client
  sends and does not release, up to 65,535 per session, and sends each a PUBREC again at every
  CONNECT that resumes the session; here at most :data:`MAX_UNRELEASED` (1,020), a later one
  answered with a PUBREC and dropped, as in Mosquitto.
* **A bounded backlog for a client that reads slowly.** amqtt starts a write of every message
  for a connected client at once, each waiting, with its message, until the client reads it:
  without end for a client that reads nothing and keeps its connection; here at most
  :data:`MAX_SENDING` (1,020) are being sent to a client at once, and later ones are dropped,
  as in Mosquitto.
* **A client is read no faster than it is answered.** amqtt reads a client's packets as they
  come, each handled by a task of its own that holds the packet until its answer is written
  and its message routed: a client that reads none of its answers, or outpaces the routing,
  had the broker hold any number of them; here the broker reads no more of a client while
  :data:`MAX_PENDING` (1,000) of its packets wait, as Mosquitto stops reading a client it
  cannot answer (by count, not bytes: each may be as large as MQTT allows, as there).
* **A will passes the PUBLISH check.** amqtt sends a client's will, and retains it, with no
  check at all; here a will is sent only if its client could PUBLISH it: a topic amqtt takes
  from a client (no wildcard, no leading ``$``) that the topic plugins allow (Mosquitto's
  ``context__send_will``: the will's WRITE check).
* **A resumed session gets only what its new user may read.** amqtt gives a persistent session
  the username of the CONNECT that resumes it, then sends the messages queued while it was
  away, and those still in flight (not acknowledged, or waiting for the socket when the last
  connection ended), unchecked; here each passes the RECEIVE check for that username first,
  and the others are dropped (Mosquitto's ``connection_check_acl``).
* **Nothing is kept of a departed client.** Wherever amqtt ends a session (a clean session's
  CONNECT replacing the old one, its session monitor ending a disconnected clean or anonymous
  session or an expired one, shutdown), and whenever a client unsubscribes, its entries go:
  in the planner and its share groups, and amqtt's list of a filter once it is empty. Its socket is
  closed even when the client closed its end first (amqtt's writer then left it to the
  garbage collector). tests/test_amqtt_churn.py counts the deliveries under churn, what
  departed clients leave in the structures, and the memory per departed client.

Use it where you use amqtt's broker::

    from topicmatch.compat.amqtt import Broker
    broker = Broker(config)          # amqtt's configuration, unchanged
    await broker.start()

or run it as amqtt's ``amqtt`` command is run, with the same options (:func:`main`)::

    python -m topicmatch.compat.amqtt -c broker.yaml

Its share policy and per-client limits (the number of subscriptions, a cost rule refusing
filters such as ``#``) are options in the configuration (:class:`BrokerOptions`); a refused
filter gets amqtt's SUBACK failure code (0x80: amqtt speaks MQTT 3.1.1, which has no other).
So is ``subscriptions_file``: the persistent sessions' subscriptions, written at shutdown
(:meth:`Broker.save_subscriptions`, a :meth:`~topicmatch.Matcher.save` file) and brought back
at the next start (:meth:`Broker.restore_subscriptions`), each client with an offline session
as amqtt's ``SessionDBPlugin`` makes one.

amqtt's own ``subscriptions`` and ``retained_messages`` stay the truth that amqtt's plugins read
and write (the persistence plugin restores retained messages into that dict): the index and
the matcher follow them. Needs amqtt 0.12 (``pip install 'topicmatch[amqtt]'``); the tests run
amqtt's own matching and ``$`` topic cases against it with real clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from topicmatch import (
    AccessRules,
    Copy,
    DeliveryPlanner,
    InvalidPatternError,
    InvalidTopicError,
    Matcher,
    ShareGroup,
    StateFileError,
    Subscription,
    TopicIndex,
    TopicMatchError,
    capture,
    make_dialect,
)

from ..support.extras import install_hint

try:
    from amqtt.adapters import ReaderAdapter
    from amqtt.broker import Broker as AmqttBroker
    from amqtt.broker import RetainedApplicationMessage
    from amqtt.contexts import Action, BaseContext
    from amqtt.errors import AMQTTError, BrokerError, MQTTError, NoDataError
    from amqtt.events import BrokerEvents
    from amqtt.mqtt.constants import QOS_0, QOS_1, QOS_2
    from amqtt.mqtt.disconnect import DisconnectPacket
    from amqtt.mqtt.protocol.broker_handler import BrokerProtocolHandler
    from amqtt.mqtt.pubcomp import PubcompPacket
    from amqtt.mqtt.pubrec import PubrecPacket
    from amqtt.plugins.base import BaseTopicPlugin
    from amqtt.session import IncomingApplicationMessage, Session
    from amqtt.utils import gen_client_id
    from transitions import MachineError
except ImportError as error:  # pragma: no cover - the extra's hint (tests/test_compat_amqtt.py)
    raise ImportError(
        f"topicmatch.compat.amqtt needs amqtt: {install_hint('amqtt')}", name=error.name
    ) from error

from ._amqtt_options import SHARE_POLICIES, BrokerOptions, Limits, options_of

__all__ = [
    "MAX_PENDING",
    "MAX_QUEUED",
    "MAX_SENDING",
    "MAX_UNRELEASED",
    "SHARE_POLICIES",
    "Broker",
    "BrokerOptions",
    "Limits",
    "TopicACLPlugin",
    "main",
]

_MQTT = make_dialect("mqtt")
_FAILED = 0x80  # amqtt's SUBACK return code of a refused subscription


def _saved_sessions(path: str | None) -> dict[str, tuple[str | None, list[tuple[str, int]]]]:
    """The sessions :meth:`Broker.save_subscriptions` wrote to ``path``: client id -> (its
    username, its (filter, QoS) pairs); {} without a path or a file there yet (a first start).
    amqtt's ``BrokerError`` for a file that is not one it wrote (the
    :class:`~topicmatch.StateFileError`'s line)."""
    try:
        return _sessions_in(path) if path is not None and os.path.exists(path) else {}
    except StateFileError as error:
        raise BrokerError(f"BrokerOptions: subscriptions_file: {error}") from error


def _sessions_in(path: str) -> dict[str, tuple[str | None, list[tuple[str, int]]]]:
    sessions: dict[str, tuple[str | None, list[tuple[str, int]]]] = {}
    for topic_filter, subscribers in Matcher.load(path, "naive").subscriptions().items():
        for subscriber in subscribers:
            try:
                qos, username, client = json.loads(subscriber)
                if (
                    type(qos) is not int
                    or qos not in (0, 1, 2)
                    or type(client) is not str
                    or type(username) not in (str, type(None))
                ):
                    raise ValueError(subscriber)
            except (TypeError, ValueError):
                raise StateFileError(
                    f"cannot load {path}: {repr(subscriber)[:80]} is not [qos, username, client id] "
                    "as Broker.save_subscriptions writes it; nothing was loaded"
                ) from None
            sessions.setdefault(client, (username, []))[1].append((topic_filter, qos))
    return sessions


_CHECKS_AT_ONCE = 256  # topic-plugin checks awaited together (Broker._checked)
_READS_AT_ONCE = 64  # reads of a connection between two turns of the event loop, at most (_Paced)
#: The most messages queued for a persistent session that is away (Mosquitto's default
#: max_queued_messages); past it, a new message for that session is dropped, as there.
MAX_QUEUED = 1000
#: The most QoS 2 messages a client may have sent and not yet released with a PUBREL, per
#: session (Mosquitto's defaults: max_inflight_messages 20 and, past them, max_queued_messages
#: 1000). Past it, a new one gets its PUBREC and is dropped, as there.
MAX_UNRELEASED = 20 + MAX_QUEUED
#: The most messages being sent to one connected client at once (written and not yet
#: acknowledged, or waiting for its socket: a client that reads slowly, or not at all), per
#: connection (Mosquitto's defaults: max_inflight_messages 20 plus max_queued_messages 1000,
#: QoS 0 included). Past it, a new message for that client is dropped, as there.
MAX_SENDING = 20 + MAX_QUEUED
#: The most of a client's packets waiting at once (their answers for its socket, or in the
#: connection's queues for the broker's message loop); past it, the broker reads no more from
#: the client until they go down, as Mosquitto stops reading a client it cannot answer.
MAX_PENDING = MAX_QUEUED


class _RetainedMessages(dict[str, RetainedApplicationMessage]):
    """amqtt's dict of retained messages (topic -> message), with a :class:`TopicIndex` that
    follows every change made through it, by the broker or by a plugin. A topic the mqtt
    dialect rejects is kept in the dict but not indexed: no filter can match it."""

    def __init__(self) -> None:
        super().__init__()
        self.index = TopicIndex[RetainedApplicationMessage](dialect="mqtt")

    def __setitem__(self, topic: str, message: RetainedApplicationMessage) -> None:
        super().__setitem__(topic, message)
        with contextlib.suppress(InvalidTopicError):
            self.index.set(topic, message)

    def __delitem__(self, topic: str) -> None:
        super().__delitem__(topic)
        self._forget(topic)

    def _forget(self, topic: str) -> None:
        with contextlib.suppress(InvalidTopicError):
            self.index.discard(topic)

    def pop(self, topic: str, *default: Any) -> Any:
        had = topic in self
        value = super().pop(topic, *default)
        if had:
            self._forget(topic)
        return value

    def popitem(self) -> tuple[str, RetainedApplicationMessage]:
        topic, message = super().popitem()
        self._forget(topic)
        return topic, message

    def setdefault(self, topic: str, default: Any = None) -> Any:
        if topic not in self:
            self[topic] = default
        return self[topic]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for topic, message in dict(*args, **kwargs).items():
            self[topic] = message

    def clear(self) -> None:
        super().clear()
        self.index = TopicIndex[RetainedApplicationMessage](dialect="mqtt")


class _Subscriptions(dict[str, list[tuple[Session, int]]]):
    """amqtt's dict of subscriptions (filter -> [(session, QoS)]), iterated over a copy of its
    filters: amqtt awaits inside ``for topic in self._subscriptions`` when a client connects,
    and other clients subscribing and unsubscribing meanwhile would change the dict's size
    under the loop. O(filters) per iteration, as amqtt's loop over them."""

    def __iter__(self) -> Iterator[str]:
        return iter(list(super().__iter__()))

    def __repr__(self) -> str:
        # amqtt logs repr(self._subscriptions) after every SUBSCRIBE, at debug level but
        # formatted in any case: the whole dict was O(all subscriptions) per packet.
        return f"<{len(self)} subscription filters>"


class Broker(AmqttBroker):  # type: ignore[misc]
    """amqtt's ``Broker`` with topicmatch's routing (module docstring).

    ``config``, ``loop`` and ``plugin_namespace`` are amqtt's; the share policy and the limits
    are the :class:`BrokerOptions` in its ``plugins:`` (``share_policy``, if given, replaces
    the policy there). A SUBSCRIBE to a filter the mqtt dialect rejects (``a/#/b``,
    ``$share/g``, one with a NUL) is refused with amqtt's failure code, as amqtt refuses the
    ones it checks, and so is one the limits refuse (:meth:`add_subscriptions`).
    Per publish: one :meth:`DeliveryPlanner.plan <topicmatch.DeliveryPlanner.plan>`, one
    lookup (O(the topic's words) on the matcher's DFA) and O(k log k) for its k matching
    subscriptions, plus the deliveries.
    Per client, the broker keeps one entry per subscription it holds, and nothing once its
    last subscription is gone.
    """

    #: Seconds a new connection has to send its CONNECT, then it is closed: Mosquitto's (a new
    #: connection has a keep-alive of 60 s until its CONNECT, and one and a half of them).
    connect_wait: float = 90.0

    def __init__(
        self,
        config: Any = None,
        loop: asyncio.AbstractEventLoop | None = None,
        plugin_namespace: str | None = None,
        *,
        share_policy: str | None = None,
    ) -> None:
        super().__init__(config, loop, plugin_namespace)
        self._retained_messages = _RetainedMessages()
        self._subscriptions = _Subscriptions()
        options = options_of(self.plugins_manager.plugins, share_policy)
        self.share_policy, self.limits = options.share_policy, options.limits
        self.subscriptions_file = options.subscriptions_file
        # Read now, so that a file that cannot be loaded stops the broker where amqtt's command
        # reports a bad configuration: at its construction.
        self._saved: dict[str, tuple[str | None, list[tuple[str, int]]]] | None = _saved_sessions(
            self.subscriptions_file
        )
        # amqtt turns topic filtering on for any plugins: section, topic plugin or not, and then
        # checks every topic with none to ask (True): here a check runs only when one can answer.
        topic_plugins = [
            plugin for plugin in self.plugins_manager.plugins if hasattr(plugin, "topic_filtering")
        ]
        self._topic_checks = self.plugins_manager.is_topic_filtering_enabled() and bool(topic_plugins)
        # A TopicACLPlugin with an acl_file, the only topic plugin: the planner applies its read
        # rules (ClientRules) and a live message needs no RECEIVE check through amqtt's plugins.
        only = topic_plugins[0] if len(topic_plugins) == 1 else None
        self._rules = only._rules if self._topic_checks and isinstance(only, TopicACLPlugin) else None
        self._receive_checks = self._topic_checks and self._rules is None
        # The connection of each client id whose CONNECT is being handled, until it is started
        # (_Connection.started) or has ended: one CONNECT of a client id at a time.
        self._connecting: dict[str, _Connection] = {}
        self._forget_routes()

    def _forget_routes(self) -> None:
        self._planner = DeliveryPlanner(share_policy=self.share_policy, away=self._away)
        # The session of each client the planner holds (one with a subscription).
        self._session_of: dict[str, Session] = {}

    async def start(self) -> None:
        """amqtt's start; then, with a ``subscriptions_file`` (:class:`BrokerOptions`), the
        persistent sessions it holds come back (:meth:`restore_subscriptions`). The file is
        read when the broker is made (and again at a later start of the same broker): one
        that cannot be loaded raises amqtt's ``BrokerError`` with the
        :class:`~topicmatch.StateFileError`'s line (the file and why) before the broker
        listens, and is left as it is."""
        saved = self._saved if self._saved is not None else _saved_sessions(self.subscriptions_file)
        self._saved = None
        self._forget_routes()  # amqtt's start() clears its subscriptions and retained messages
        await super().start()
        if saved:
            await self.restore_subscriptions(saved)

    async def shutdown(self) -> None:
        """With a ``subscriptions_file``, the subscriptions of the sessions amqtt keeps across a
        disconnect (clean session off) are written to it first (:meth:`save_subscriptions`);
        then amqtt's shutdown, which ends every session, also when the file cannot be written
        (its error is raised after the shutdown; the file as it was stays whole)."""
        try:
            if self.subscriptions_file is not None:
                self.save_subscriptions(self.subscriptions_file)
        finally:
            await super().shutdown()

    def save_subscriptions(self, path: str) -> int:
        """Write the subscriptions of every session with clean session off to ``path`` (a
        :meth:`Matcher.save <topicmatch.Matcher.save>` file, replaced atomically: each pair is
        the filter and, as its subscriber, the JSON text ``[qos, username, client id]``); the
        subscriptions written. O(them)."""
        matcher: Matcher[str] = Matcher(dialect="mqtt")
        pairs = []
        for client, session in self._session_of.items():
            if session.clean_session is False:
                for topic_filter, options in self._planner.subscriptions(client).items():
                    pairs.append((topic_filter, json.dumps([options.qos, session.username, client])))
        matcher.subscribe_many(pairs)
        return matcher.save(path)

    async def restore_subscriptions(self, saved: dict[str, tuple[str | None, list[tuple[str, int]]]]) -> int:
        """Bring back saved sessions (client id -> its username and (filter, QoS) pairs, as
        :meth:`save_subscriptions` wrote them): each client not connected is given an offline
        session with clean session off, as amqtt's own ``SessionDBPlugin`` restores one, and its
        filters in one :meth:`add_subscriptions`, so every check of a SUBSCRIBE runs again (a
        filter the topic plugins or the limits now refuse is not restored). A client that
        resumes its session then receives what was published for it meanwhile. The
        subscriptions restored. O(them)."""
        restored = 0
        for client, (username, filters) in saved.items():
            if client in self._sessions:
                continue
            handler, session = self.create_offline_session(client)
            session.clean_session = False
            session.username = username
            self._sessions[client] = (session, handler)
            codes = await self.add_subscriptions(filters, session)
            restored += sum(code != _FAILED for code in codes)
        return restored

    async def _authenticate(self, session: Session, listener: Any) -> bool:
        """amqtt's check of a CONNECT; a client that resumes its session (amqtt has given it
        the new CONNECT's username) takes the read rules of its new username."""
        allowed: bool = await super()._authenticate(session, listener)
        if self._rules is not None and session.client_id in self._session_of:
            self._connect(session)
        return allowed

    def _connect(self, session: Session) -> None:
        """The client in the planner: MQTT 3.1.1 (all amqtt speaks), with its read rules if the
        ACL plugin has them. A client joins the planner with its first subscription and leaves
        it with its last, or when its session ends."""
        client = session.client_id
        rules = (
            None if self._rules is None else self._rules.client(username=session.username, client_id=client)
        )
        self._planner.connect(client, mqtt5=False, rules=rules)
        self._session_of[client] = session

    async def _initialize_client_session(
        self, reader: Any, writer: Any, remote_address: str, remote_port: int
    ) -> tuple[Any, Session]:
        """amqtt 0.12's reading of a CONNECT, with one step first: the CONNECT must
        authenticate (amqtt's own check, run on the incoming session) before it may delete the
        session of its client id, resume it with its own credentials and will, take over its
        connection, or leave a session of its own; one that does not gets CONNACK *not
        authorized* and changes nothing. (amqtt checks again, on the session the CONNECT ends
        with: two checks per CONNECT.) A connection that sends no CONNECT within
        :attr:`connect_wait` seconds is closed (amqtt waits for ever). Then it waits for the
        CONNECT of its client id being handled, if any, until that one is done with the session
        (its connection started), and takes over the connection that holds the client id
        (:meth:`_take_over`): one CONNECT of a client id at a time. It does not wait for that
        connection to have sent its backlog (the messages queued for the session, its retained
        messages), which a client that reads nothing never takes: the CONNECT waited for as long
        as that client stayed, where Mosquitto's takes its connection over at once."""
        connection = _Connection.init_from_connect(reader, writer, self.plugins_manager)
        try:
            handler, client_session = await asyncio.wait_for(connection, self.connect_wait)
        except TimeoutError as exc:
            self.logger.warning(f"{remote_address}:{remote_port}: no CONNECT in {self.connect_wait} s")
            await writer.close()
            raise AMQTTError(exc) from exc
        except AMQTTError as exc:
            self.logger.warning(f"{remote_address}:{remote_port}: the first packet is no CONNECT: {exc}")
            raise AMQTTError(exc) from exc
        except MQTTError as exc:
            self.logger.warning(f"invalid connection from {remote_address}:{remote_port}")
            await writer.close()
            raise MQTTError(exc) from exc
        except NoDataError as exc:
            self.logger.error(f"no data from {remote_address}:{remote_port}: {exc}")
            raise AMQTTError(exc) from exc
        client = client_session.client_id
        if not await super()._authenticate(client_session, None):
            client_session.parent = 0
            handler.attach(client_session, reader, writer)
            await handler.mqtt_connack_authorize(False)
            await writer.close()
            raise AMQTTError(f"{client!r} not authorized: nothing changed")
        handler.username = client_session.username
        if client:  # one CONNECT of a client id at a time, and no connection of it left running
            while (earlier := self._connecting.get(client)) is not None and not earlier.started.is_set():
                await earlier.started.wait()
            self._connecting[client] = handler
            held = self._sessions.get(client)
            if held is not None and held[0].transitions.is_connected():
                try:
                    await self._take_over(held[1])
                except BaseException:
                    handler.started.set()
                    handler.running.set()
                    del self._connecting[client]
                    raise
        # From here on, amqtt's own.
        if client_session.clean_session:
            if client:
                await self._delete_session(client)
            else:
                client_session.client_id = gen_client_id()
            client_session.parent = 0
        elif client in self._sessions:
            existing, _ = self._sessions[client]
            existing.will_flag = client_session.will_flag
            existing.will_message = client_session.will_message
            existing.will_topic = client_session.will_topic
            existing.will_qos = client_session.will_qos
            existing.keep_alive = client_session.keep_alive
            existing.username = client_session.username
            existing.password = client_session.password
            client_session = existing
            client_session.parent = 1
        else:
            client_session.parent = 0
        # amqtt's wait for a packet: the keep-alive and its timeout-disconnect-delay; here one
        # and a half keep-alives (MQTT 3.1.1, 3.1.2.10; Mosquitto's keepalive*3/2), then the delay.
        delay = self.config.get("timeout-disconnect-delay", 0)
        if client_session.keep_alive > 0 and isinstance(delay, int):
            client_session.keep_alive = client_session.keep_alive * 3 // 2 + delay
        return handler, client_session

    async def _take_over(self, handler: Any) -> None:
        """Close the connection ``handler`` serves (a CONNECT of its client id has
        authenticated), as amqtt's take-over does, and wait until amqtt is done with it (its
        will, if it may send it, and the session marked disconnected) when it is a
        :class:`_Connection`: the session then changes hands with nothing of the old connection
        still running. (amqtt takes over only a connection whose session the CONNECT resumes,
        after it has given the session the new username and will, and then ends the new
        connection too; it leaves the old connection of a clean session open, still acting for
        the client id.) Its socket is closed at once (:meth:`_Connection.abort`): amqtt's
        close waits until the client has read all that is queued for it."""
        if isinstance(handler, _Connection):
            handler.abort()
        await handler.handle_connection_closed()
        await handler.stop()
        if isinstance(handler, _Connection):
            await handler.ended.wait()

    async def _handle_client_session(
        self,
        reader: Any,
        writer: Any,
        client_session: Session,
        handler: Any,
        server: Any,
        listener_name: str,
    ) -> None:
        """amqtt 0.12's life of one connection, with four changes. On connecting, the messages
        in flight that the session's user may not read are dropped before amqtt sends them
        again (:meth:`_drop_unreadable_in_flight`), and the retained
        messages of the session's own subscriptions are sent, where amqtt walks every filter
        of the broker and awaits once for each (87 ms per CONNECT at 100,000 filters; here
        O(the session's subscriptions)). A connection whose message loop stops while it is
        still connected (at a PUBLISH to a topic no client may use) is ended, where amqtt
        left it open. And the connection says when it is started, when its message loop runs
        and when it has ended (:class:`_Connection`), for the next CONNECT of its client id."""
        try:
            authenticated = await self._authenticate(client_session, self.listeners_config[listener_name])
            while True:
                try:
                    client_session.transitions.connect()
                    break
                except (MachineError, ValueError):
                    # amqtt's take-over of a connection of the session: none is left connected
                    # by _take_over, which has ended it; kept for a session marked connected.
                    if client_session.transitions.is_connected():
                        old_handler = self._sessions[client_session.client_id][1]
                        await old_handler.handle_connection_closed()
                        await old_handler.stop()
                        break
                    self.logger.warning(f"{client_session.client_id} is reconnecting too quickly: waits")
                    await asyncio.sleep(1)
            handler.attach(client_session, reader, writer)
            self._sessions[client_session.client_id] = (client_session, handler)
            await handler.mqtt_connack_authorize(authenticated)
            if not authenticated:
                await writer.close()
                return
            client = client_session.client_id
            await self.plugins_manager.fire_event(
                BrokerEvents.CLIENT_CONNECTED, client_id=client, client_session=client_session
            )
            await self._drop_unreadable_in_flight(client_session)  # before start() sends them again
            await handler.start()
            if isinstance(handler, _Connection):
                handler.started.set()  # done with the session: the next CONNECT may take it over
            await self._publish_session_retained_messages(client_session)
            routed = self._session_of.get(client) is client_session
            own = self._planner.subscriptions(client) if routed else {}
            for topic_filter in sorted(own):
                await self._publish_retained_messages_for_subscription((topic_filter, QOS_0), client_session)
            if isinstance(handler, _Connection):
                handler.running.set()
            await self._client_message_loop(client_session, handler)
            held = self._sessions.get(client)
            if client_session.transitions.is_connected() and held == (client_session, handler):
                # amqtt's loop stops at a PUBLISH to a topic no client may use and leaves the
                # connection open and read, what it sends then queued for ever: closed here, as a
                # connection ended by a protocol error (Mosquitto's; its will sent, if it may be).
                ended: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                ended.set_result(None)
                await self._handle_disconnect(client_session, handler, ended)
        finally:
            if isinstance(handler, _Connection):
                handler.started.set()
                handler.running.set()
                handler.ended.set()
                if self._connecting.get(client_session.client_id) is handler:
                    del self._connecting[client_session.client_id]

    async def _handle_message_delivery(
        self, client_session: Session, handler: Any, wait_deliver: asyncio.Future[Any]
    ) -> bool:
        """amqtt 0.12's routing of one message a client sent (its MESSAGE_RECEIVED event, its
        topic rules, the PUBLISH check, MESSAGE_BROADCAST, the broadcast and the retained copy;
        False closes the connection), with two changes. A message that came on a connection of
        another user is dropped: amqtt checks the PUBLISH here, as the session's user now, not
        on receipt (a QoS 2 message whose PUBREL comes after a CONNECT resumed the session under
        another username, or one left in the session's queue; Mosquitto checks a PUBLISH as it
        arrives, as its sender). And the message goes out with its PUBLISH's QoS, each copy at
        the lower of it and its subscription's (:meth:`_run_broadcast`), where amqtt sends every
        copy at its subscription's QoS: a QoS 0 message became QoS 1 and was queued for
        sessions that were away."""
        message = wait_deliver.result()
        client, events = client_session.client_id, self.plugins_manager
        await events.fire_event(BrokerEvents.MESSAGE_RECEIVED, client_id=client, message=message)
        if message is None:
            return True
        topic = message.topic
        if not topic or "#" in topic or "+" in topic or topic[0] == "$":
            self.logger.warning(f"{client}: PUBLISH to {topic!r}, not a topic a client may use: closing")
            return False
        if isinstance(message, _Sent) and message.username != client_session.username:
            self.logger.info(f"{client}: {topic!r} of a previous user of the session: dropped")
            return True
        if not await self._topic_filtering(client_session, topic=topic, action=Action.PUBLISH):
            self.logger.info(f"{client} not allowed to publish to {topic!r}")
            return True
        await events.fire_event(BrokerEvents.MESSAGE_BROADCAST, client_id=client, message=message)
        await self._broadcast_message(client_session, topic, message.data, message.qos)
        if message.publish_packet and message.publish_packet.retain_flag:
            await self.retain_message(client_session, topic, message.data, message.qos)
        return True

    async def _handle_disconnect(
        self, client_session: Session, handler: Any, disconnect_waiter: asyncio.Future[Any]
    ) -> None:
        """amqtt's end of a connection, with the client's will dropped unless the client may
        publish it (:meth:`_may_send_will`): amqtt sends and retains a will unchecked."""
        result = disconnect_waiter.result()
        abnormal = result is None or not isinstance(result, DisconnectPacket)
        if abnormal and client_session.will_flag and not await self._may_send_will(client_session):
            self.logger.info(f"{client_session.client_id}: will to {client_session.will_topic!r} not allowed")
            client_session.will_flag = False  # a will is sent once at most; the next CONNECT sets its own
        await super()._handle_disconnect(client_session, handler, disconnect_waiter)

    async def _may_send_will(self, session: Session) -> bool:
        """Whether ``session``'s will passes what its PUBLISH would: amqtt's rules for a client's
        topic (not empty, no ``+`` or ``#``, no leading ``$``) and the topic plugins' PUBLISH
        check (Mosquitto checks a will's topic as a PUBLISH's, and its WRITE access before it
        sends it)."""
        topic = session.will_topic
        if not isinstance(topic, str) or not topic or "+" in topic or "#" in topic or topic[0] == "$":
            return False
        (allowed,) = await self._checked([(session, topic)], Action.PUBLISH)
        return allowed

    async def _publish_session_retained_messages(self, session: Session) -> None:
        """amqtt's delivery of what was queued for a persistent session while it was away, each
        message first passing the RECEIVE check for the session's current username (a CONNECT
        that resumes the session may bring another): the others are dropped, as Mosquitto's
        ``connection_check_acl`` drops them. O(the messages queued) checks."""
        queue = session.retained_messages
        queued = [queue.get_nowait() for _ in range(queue.qsize())]
        allowed: list[bool] | None = None
        try:
            allowed = await self._checked([(session, message.topic) for message in queued], Action.RECEIVE)
        finally:  # interrupted: everything back, to be checked when the session resumes again
            later = [queue.get_nowait() for _ in range(queue.qsize())]
            kept = queued if allowed is None else [m for m, ok in zip(queued, allowed, strict=True) if ok]
            for message in [*kept, *later]:
                queue.put_nowait(message)
        await super()._publish_session_retained_messages(session)

    async def _drop_unreadable_in_flight(self, session: Session) -> None:
        """The messages amqtt is still sending to ``session`` (its ``inflight_out``: a PUBLISH
        not acknowledged yet, or still waiting for the socket when the last connection ended),
        which amqtt's handler sends again, unchecked, to the connection that resumes the
        session: each must first pass the RECEIVE check for the session's current username (a
        CONNECT that resumes the session may bring another), and the others are dropped, as
        Mosquitto's ``connection_check_acl`` drops them from its inflight messages. O(the
        messages in flight) checks, at most 65,535 (amqtt's packet ids)."""
        held = session.inflight_out
        pending = list(held.items())
        if not pending:
            return
        allowed = await self._checked([(session, message.topic) for _id, message in pending], Action.RECEIVE)
        for (packet_id, message), ok in zip(pending, allowed, strict=True):
            if not ok and held.get(packet_id) is message:  # not one sent meanwhile
                del held[packet_id]

    async def _stop_handler(self, handler: Any) -> None:
        """amqtt's stop of a connection's handler, and then its socket closed in any case.
        amqtt's ``StreamWriterAdapter.close()`` drains before it closes, and when the client
        has closed its end already (paho does right after its DISCONNECT) the drain raises
        first: the socket stayed open until the garbage collector found it, one per departed
        client."""
        writer = handler.writer
        await super()._stop_handler(handler)
        stream = getattr(writer, "_writer", None)
        if isinstance(stream, asyncio.StreamWriter):
            stream.close()

    # -- subscriptions ----------------------------------------------------------------------
    async def add_subscription(self, subscription: tuple[str, int], session: Session) -> int:
        """amqtt's entry for one subscription (its ``BrokerContext`` and plugins call it): the
        code :meth:`add_subscriptions` gives it."""
        (code,) = await self.add_subscriptions([subscription], session)
        return code

    async def add_subscriptions(
        self, subscriptions: Sequence[tuple[str, int]], session: Session
    ) -> list[int]:
        """Subscribe ``session`` to each (filter, QoS) of one SUBSCRIBE packet, or of a session
        being restored, and return their SUBACK codes in order: the QoS granted, or amqtt's
        failure code 0x80 (MQTT 3.1.1; a refused filter changes nothing) for a filter

        * the mqtt dialect rejects (amqtt's own check, and Mosquitto's rules: ``a/#/b``,
          ``$share//x``, a NUL, more than 200 ``/``), or asked with a QoS other than 0-2;
        * the cost rule refuses (:meth:`Limits.refuses`);
        * a topic plugin refuses (their SUBSCRIBE checks awaited together, as :meth:`_checked`);
        * beyond the client's ``max_subscriptions`` (the packet's earlier filters count).

        A filter the client holds already keeps its first grant (as amqtt) and answers the QoS
        asked. The new subscriptions join the planner in one
        :meth:`~topicmatch.DeliveryPlanner.subscribe_many` (one
        :meth:`~topicmatch.Matcher.subscribe_many`), after the checks and with no await between
        the bookkeeping and it: O(filters) and one change, not one per filter."""
        limits, client, planner = self.limits, session.client_id, self._planner
        valid = [
            asked in (0, 1, 2) and _valid(topic_filter) and not limits.refuses(topic_filter)
            for topic_filter, asked in subscriptions
        ]
        pairs = [
            (session, topic_filter)
            for (topic_filter, _qos), ok in zip(subscriptions, valid, strict=True)
            if ok
        ]
        allowed = iter(await self._checked(pairs, Action.SUBSCRIBE))
        max_qos = getattr(self.config, "max_qos", None)  # amqtt's cap of the QoS (no field in 0.12)
        room = (
            len(subscriptions)
            if limits.max_subscriptions is None
            else limits.max_subscriptions - planner.count(client)
        )
        codes: list[int] = []
        new: dict[str, Subscription] = {}
        for (topic_filter, asked), ok in zip(subscriptions, valid, strict=True):
            qos = min(asked, max_qos) if isinstance(max_qos, int) else asked
            if not (ok and next(allowed)):
                codes.append(_FAILED)
            elif topic_filter in new or planner.holds(client, topic_filter):
                codes.append(qos)  # amqtt keeps the first grant and answers the QoS asked
            elif room <= 0:
                codes.append(_FAILED)
            else:
                room -= 1
                codes.append(qos)
                entries = self._subscriptions.setdefault(topic_filter, [])
                if all(other.client_id != client for other, _qos in entries):
                    entries.append((session, qos))
                new[topic_filter] = Subscription(qos=qos)
        if new:
            if self._session_of.get(client) is not session:
                self._connect(session)
            planner.subscribe_many(client, new.items())
        return codes

    async def _handle_subscription(
        self, client_session: Session, handler: Any, subscribe_waiter: asyncio.Future[Any]
    ) -> None:
        """amqtt's handling of one SUBSCRIBE, its filters subscribed together
        (:meth:`add_subscriptions`); then, as amqtt, the SUBACK, and for each granted filter the
        CLIENT_SUBSCRIBED event and its retained messages (every plain one: what the planner's
        subscribe answers for an MQTT 3.1.1 client)."""
        subscriptions = subscribe_waiter.result()
        codes = await self.add_subscriptions(subscriptions.topics, client_session)
        await handler.mqtt_acknowledge_subscription(subscriptions.packet_id, codes)
        for (topic_filter, qos), code in zip(subscriptions.topics, codes, strict=True):
            if code != _FAILED:
                await self.plugins_manager.fire_event(
                    BrokerEvents.CLIENT_SUBSCRIBED,
                    client_id=client_session.client_id,
                    topic=topic_filter,
                    qos=qos,
                )
                await self._publish_retained_messages_for_subscription((topic_filter, qos), client_session)

    def _del_subscription(self, a_filter: str, session: Session) -> int:
        """amqtt's removal of one subscription, and of everything kept for it: its entry in
        the planner (which leaves its group, and a sticky group's choice of it), the client in
        the planner once it holds no subscription, amqtt's list of the filter once empty (amqtt
        keeps an empty list per filter ever unsubscribed). O(the filter's words + the group's members)."""
        deleted = self._forget(a_filter, session)
        client = session.client_id
        if self._planner.holds(client, a_filter):
            self._planner.unsubscribe(client, a_filter)
            if not self._planner.count(client):
                self._planner.disconnect(client)
                del self._session_of[client]
        return deleted

    def _forget(self, a_filter: str, session: Session) -> int:
        """amqtt's removal of one subscription, and amqtt's list of the filter once empty."""
        deleted: int = super()._del_subscription(a_filter, session)
        if not self._subscriptions.get(a_filter, True):
            del self._subscriptions[a_filter]
        return deleted

    async def _del_all_subscriptions(self, session: Session) -> None:
        """The client's own subscriptions, not a scan of the broker's (amqtt scans them all),
        and the client out of the planner (:meth:`~topicmatch.DeliveryPlanner.disconnect`: one
        :meth:`~topicmatch.Matcher.unsubscribe_many`). amqtt calls it wherever a session ends:
        a clean session's CONNECT replacing the old one (``_delete_session``), the session
        monitor ending a disconnected clean or anonymous session or an expired one, and
        shutdown (``_cleanup_session``)."""
        client = session.client_id
        if client not in self._session_of:
            return
        for a_filter in sorted(self._planner.subscriptions(client)):
            self._forget(a_filter, session)
        self._planner.disconnect(client)
        del self._session_of[client]

    def _matches(self, topic: str, a_filter: str) -> bool:
        """amqtt's one-pair check, with Mosquitto's rules (amqtt's tests call it); False for an
        invalid topic or filter."""
        return _topic_matches(a_filter, topic)

    # -- routing ---------------------------------------------------------------------------
    async def _run_broadcast(self, running_tasks: deque[asyncio.Task[Any]]) -> None:
        """amqtt's delivery of one queued message, as :meth:`DeliveryPlanner.plan
        <topicmatch.DeliveryPlanner.plan>` decides it (one lookup; module docstring: the rules).

        The recipients are chosen before the first await: clients that subscribe, unsubscribe
        or leave while the deliveries await the topic plugins change no other delivery. Their
        RECEIVE checks run together (:meth:`_checked`; none when the planner applies the ACL
        plugin's rules); a recipient whose subscription ended meanwhile is skipped
        (:meth:`_deliver`), and so is one whose session a CONNECT resumed under another
        username meanwhile (its check answered for the username before). The publisher is
        the client whose session the message comes with (its PUBLISH, or its will: Mosquitto's
        rule), None for a message of the broker or a plugin. A copy has the lower of the
        message's QoS (its PUBLISH's or its will's) and its subscription's (MQTT 3.1.1, 3.8.4);
        a message without one (the broker's or a plugin's) the subscription's."""
        broadcast = await self._broadcast_queue.get()
        topic = broadcast["topic"]
        source = broadcast.get("session")
        forced = broadcast.get("qos")
        try:
            deliveries = self._planner.plan(
                topic,
                publisher=None if source is None else source.client_id,
                qos=QOS_2 if forced is None else forced,
            )
        except TopicMatchError as error:
            self.logger.warning(f"not routed: {error}")
            return
        session_of = self._session_of
        recipients = [(d.client, d.copies[0], session_of[d.client]) for d in deliveries]
        if self._receive_checks:
            users = [session.username for _client, _copy, session in recipients]
            allowed = await self._checked(
                [(session, topic) for _client, _copy, session in recipients], Action.RECEIVE
            )
            # Each answer is for the username the session had when it was asked: a CONNECT that
            # resumed the session under another one while the checks awaited does not get it.
            allowed = [
                ok and session.username == user
                for ok, user, (_client, _copy, session) in zip(allowed, users, recipients, strict=True)
            ]
        else:
            allowed = [True] * len(recipients)
        for (client, copy, session), ok in zip(recipients, allowed, strict=True):
            if ok:
                await self._deliver(broadcast, client, copy, session, running_tasks)

    def _away(self, client: str) -> bool:
        """Whether a client the planner holds is away (amqtt keeps a disconnected client's
        subscriptions until its session ends): the share groups pass it over while another
        member is there (:class:`~topicmatch.SharedGroups`)."""
        return bool(self._session_of[client].transitions.state != "connected")

    async def _deliver(
        self,
        broadcast: dict[str, Any],
        client: str,
        copy: Copy,
        target: Session,
        running_tasks: deque[asyncio.Task[Any]],
    ) -> None:
        """One copy that passed the RECEIVE check, with amqtt's rules: queued for a persistent
        session that is away (QoS 1 and 2; at most :data:`MAX_QUEUED`, then dropped, as in
        Mosquitto), dropped for another one that is away; skipped if the copy's subscription of
        ``target`` ended since the recipients were chosen; dropped for a connected client that
        has :data:`MAX_SENDING` messages being sent to it already, as by Mosquitto (amqtt starts
        a write of every one, each waiting, with its message, until the client reads)."""
        if not self._holds(target, copy.filter):
            return  # unsubscribed, or its session ended, while the checks awaited
        qos = copy.qos
        if target.transitions.state != "connected":
            if (
                not target.clean_session
                and qos in (QOS_1, QOS_2)
                and not target.is_anonymous
                and target.retained_messages.qsize() < MAX_QUEUED
            ):
                await self._retain_broadcast_message(broadcast, qos, target)
            return
        handler = self._handler_of(target)
        if handler is None:
            return
        if isinstance(handler, _Connection) and handler.sending >= MAX_SENDING:
            return  # the client reads slower than its messages come: dropped, as by Mosquitto
        task = asyncio.ensure_future(
            handler.mqtt_publish(broadcast["topic"], broadcast["data"], qos, retain=copy.retain)
        )
        if isinstance(handler, _Connection):
            handler.count(task)
        running_tasks.append(task)

    async def _checked(self, pairs: list[tuple[Session, str]], action: Action) -> list[bool]:
        """The topic plugins' check (RECEIVE or PUBLISH of a topic, SUBSCRIBE of a filter) of each
        (session, topic) pair, at most _CHECKS_AT_ONCE of them awaited together (not one
        event-loop turn per check, nor one task per pair alive at once for a broad
        subscription); all True, without an await, when
        no topic plugin is loaded or topic filtering is off. A check that raises refuses its own
        pair (logged), not the others."""
        if not self._topic_checks:
            return [True] * len(pairs)
        allowed: list[bool] = []
        for start in range(0, len(pairs), _CHECKS_AT_ONCE):
            chunk = pairs[start : start + _CHECKS_AT_ONCE]
            checks = [self._topic_filtering(s, topic=t, action=action) for s, t in chunk]
            results = await asyncio.gather(*checks, return_exceptions=True)
            for (session, topic), result in zip(chunk, results, strict=True):
                if isinstance(result, BaseException):
                    self.logger.warning(
                        f"{action.value} check of {topic!r} for {session.client_id!r} failed: {result!r}"
                    )
                allowed.append(result is True)
        return allowed

    def _holds(self, session: Session, topic_filter: str) -> bool:
        """True if ``session`` is the planner's for its client and holds ``topic_filter``."""
        client = session.client_id
        return self._session_of.get(client) is session and self._planner.holds(client, topic_filter)

    def _handler_of(self, session: Session) -> Any:
        """The protocol handler of ``session``, or None if amqtt holds another session (or none)
        for its client id: a message is never written to a newer connection of the client."""
        held = self._sessions.get(session.client_id)
        return held[1] if held is not None and held[0] is session else None

    # -- retained messages -----------------------------------------------------------------
    async def _publish_retained_messages_for_subscription(
        self, subscription: tuple[str, int], session: Session
    ) -> None:
        """The retained messages a new subscription matches, found in the index, each one that
        passes the topic plugins' RECEIVE check (as a live message must), all checked before any
        is sent. Only for the
        session's own plain subscriptions: amqtt also calls this for every subscription of the
        broker when a client connects, and a shared subscription gets none. O(the index's
        branch the filter names + one check per message found)."""
        topic_filter, qos = subscription
        if topic_filter.startswith("$share/") or not self._holds(session, topic_filter):
            return
        found = list(self._retained_messages.index.match(topic_filter).values())
        if not found:
            return
        checks = await self._checked([(session, retained.topic) for retained in found], Action.RECEIVE)
        allowed = [retained for retained, ok in zip(found, checks, strict=True) if ok]
        handler = self._handler_of(session)
        if handler is None or not allowed or not self._holds(session, topic_filter):
            return  # nothing allowed, or the subscription or session ended while the checks awaited
        await asyncio.wait(
            [
                asyncio.ensure_future(
                    handler.mqtt_publish(
                        retained.topic, retained.data, min(qos, retained.qos or qos), retain=True
                    )
                )
                for retained in allowed
            ]
        )


class _Sent(IncomingApplicationMessage):  # type: ignore[misc]
    """A message a client sent, with the username of the connection it came on."""

    __slots__ = ("username",)

    def __init__(self, username: str | None, *args: Any) -> None:
        super().__init__(*args)
        self.username = username


class _Connection(BrokerProtocolHandler):  # type: ignore[misc]
    """amqtt's handler of one client's connection, with the username of its CONNECT (the
    broker sets it) and each message it receives stamped with it (:class:`_Sent`); ``started``
    is set once amqtt's handler is started (the CONNECT done with the session), ``running``
    once the broker's message loop for it runs, each also when its life has ended, ``ended``
    once its life has ended (:meth:`Broker._take_over`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.username: str | None = None
        self.started = asyncio.Event()
        self.running = asyncio.Event()
        self.ended = asyncio.Event()
        self.sending = 0  # the broker's messages being sent to the client (Broker._deliver)
        self.writing = 0  # packets waiting to be written to the client (_send_packet)
        self._room = asyncio.Event()  # set while fewer than MAX_PENDING packets wait (pending)
        self._room.set()

    def count(self, task: asyncio.Future[Any]) -> None:
        """``task``, a message being sent to the client, counted in :attr:`sending` until it
        is done (acknowledged, timed out, or its connection ended)."""
        self.sending += 1
        task.add_done_callback(self._sent)

    def _sent(self, _task: asyncio.Future[Any]) -> None:
        self.sending -= 1

    def attach(self, session: Session, reader: Any, writer: Any) -> None:
        """amqtt's attach, the reader timed by the session's keep-alive and paused while
        :data:`MAX_PENDING` of the client's packets wait (:class:`_Paced`): amqtt times only the
        wait for a packet's first bytes, and reads on whatever waits."""
        super().attach(session, reader, writer)
        self.reader = _Paced(reader, self.keepalive_timeout, self)

    def pending(self) -> int:
        """The packets waiting: to be written to the client (answers to its packets, the
        broker's messages), and the client's own in the connection's queues for the broker's
        message loop (its messages, SUBSCRIBEs, UNSUBSCRIBEs). amqtt reads a client's packets
        as they come, each handled by a task of its own, and a client that reads nothing, its
        answers waiting for its socket, could have the broker hold any number of them."""
        session = self.session
        queued: int = 0 if session is None else session.delivered_message_queue.qsize()
        queued += self._pending_subscriptions.qsize() + self._pending_unsubscriptions.qsize()
        return self.writing + queued

    async def room(self) -> None:
        """Wait while :data:`MAX_PENDING` packets wait (:meth:`pending`): the client is read no
        further, as Mosquitto stops reading a client it cannot answer (and its keep-alive, if
        any, then ends the connection as if it were silent)."""
        while self.pending() >= MAX_PENDING:
            self._room.clear()
            await self._room.wait()

    def _freed(self) -> None:
        if not self._room.is_set() and self.pending() < MAX_PENDING:
            self._room.set()

    async def _send_packet(self, packet: Any) -> None:
        """amqtt's write of a packet, counted in :meth:`pending` while it waits."""
        self.writing += 1
        try:
            await super()._send_packet(packet)
        finally:
            self.writing -= 1
            self._freed()

    async def mqtt_deliver_next_message(self) -> Any:
        """amqtt's next message of the client for the broker's message loop; one fewer pending."""
        message = await super().mqtt_deliver_next_message()
        self._freed()
        return message

    async def get_next_pending_subscription(self) -> Any:
        subscription = await super().get_next_pending_subscription()
        self._freed()
        return subscription

    async def get_next_pending_unsubscription(self) -> Any:
        unsubscription = await super().get_next_pending_unsubscription()
        self._freed()
        return unsubscription

    async def handle_publish(self, publish_packet: Any) -> None:
        """amqtt's receipt of a PUBLISH, its message a :class:`_Sent`; a new QoS 2 one past
        :data:`MAX_UNRELEASED` gets its PUBREC and is dropped (amqtt holds every one, up to
        65,535 per session, and sends each a PUBREC again at every CONNECT that resumes it)."""
        header = publish_packet.variable_header
        if publish_packet.topic_name is None or publish_packet.data is None:
            return
        held = self.session.inflight_in
        if publish_packet.qos == QOS_2 and header.packet_id not in held and len(held) >= MAX_UNRELEASED:
            await self._send_packet(PubrecPacket.build(header.packet_id))
            return
        message = _Sent(
            self.username,
            header.packet_id if header else None,
            publish_packet.topic_name,
            publish_packet.qos,
            publish_packet.data,
            publish_packet.retain_flag,
        )
        message.publish_packet = publish_packet
        await self._handle_message_flow(message)

    async def handle_pubrel(self, pubrel: Any) -> None:
        """amqtt's receipt of a PUBREL; one of a message the session does not hold (released
        already, or dropped past :data:`MAX_UNRELEASED`) gets its PUBCOMP, as from Mosquitto
        (amqtt sends none, and the client is left waiting)."""
        if pubrel.packet_id not in self.session.inflight_in:
            await self._send_packet(PubcompPacket.build(pubrel.packet_id))
            return
        await super().handle_pubrel(pubrel)

    def handle_read_timeout(self) -> None:
        """No packet for as long as the keep-alive allows (set on the session by
        :meth:`Broker._initialize_client_session`): the connection is closed (:meth:`abort`),
        as Mosquitto closes it, and ends as one the client dropped (its will sent, if it may
        be). amqtt's handler logs it and waits on for ever."""
        self.abort()

    def abort(self) -> None:
        """Close the connection's socket now, what is still unsent dropped, as Mosquitto closes
        a client's socket. amqtt's close first waits until the client has read all that is
        queued for it (its writer's drain, without a bound): for ever for a client that reads
        nothing, its socket, its session marked connected and the broker's writes to it kept."""
        stream = getattr(self.writer, "_writer", None)
        if isinstance(stream, asyncio.StreamWriter):
            stream.transport.abort()
        elif self.writer is not None:  # a websocket: its library bounds its own close
            self._closed = asyncio.ensure_future(self.writer.close())


class _Paced(ReaderAdapter):  # type: ignore[misc]
    """A connection's reader that reads nothing while ``connection`` has :data:`MAX_PENDING`
    packets waiting (:meth:`_Connection.room`), and whose read raises :class:`TimeoutError`
    once ``wait`` seconds (its keep-alive's time; None: no keep-alive) pass with no byte of it
    arriving: the rest of a packet is waited for as long as a packet is (Mosquitto closes a
    client that sends nothing for that long; amqtt waited for the rest of a packet for ever).
    The connection's handler takes the timeout as it takes a keep-alive's
    (:meth:`_Connection.handle_read_timeout`). A read whose bytes are there already (the
    stream's buffer, where readable) sets no timer; on a websocket, where no stream is, each
    read is timed whole. It lets the event loop turn every ``_READS_AT_ONCE`` reads, so that
    what it has read counts as pending: at most :data:`MAX_PENDING` and the packets of that many
    reads wait."""

    def __init__(self, reader: Any, wait: float | None, connection: _Connection) -> None:
        self._reader, self._wait, self._connection = reader, wait, connection
        self._reads = 0
        stream = getattr(reader, "_reader", None)  # amqtt's StreamReaderAdapter's stream
        self._stream = stream if isinstance(stream, asyncio.StreamReader) else None

    async def read(self, n: int = -1) -> bytes:
        self._reads += 1
        if not self._reads % _READS_AT_ONCE:
            # amqtt's reader does not yield while the bytes are there: the tasks of the packets
            # it has read start (and count as pending) only once it does.
            await asyncio.sleep(0)
        if self._connection.pending() >= MAX_PENDING:
            await self._connection.room()
        stream = self._stream
        if stream is None or n < 0:
            async with asyncio.timeout(self._wait):
                data: bytes = await self._reader.read(n)
            return data
        if len(getattr(stream, "_buffer", b"")) >= n:
            return await stream.readexactly(n)
        parts: list[bytes] = []
        left = n
        while left > 0:
            async with asyncio.timeout(self._wait):
                chunk = await stream.read(left)
            if not chunk:
                raise asyncio.IncompleteReadError(b"".join(parts), n)
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def feed_eof(self) -> None:
        self._reader.feed_eof()


class TopicACLPlugin(BaseTopicPlugin):  # type: ignore[misc]
    """amqtt's topic ACL without the wildcard escape (module docstring, defect 3).

    Configured as amqtt's ``TopicAccessControlListPlugin`` (``acl`` or ``subscribe_acl``,
    ``publish_acl``, ``receive_acl``: username, or ``anonymous``, -> allowed filters; an action
    without a list is allowed), or with ``acl_file``, the path of a Mosquitto ``acl_file``
    (:class:`~topicmatch.AccessRules`), but not both; ``acl_version`` is the Mosquitto version
    whose ``%c``/``%u`` substitution the file follows (``"2.0"``, the default, or ``"2.1"``).
    These are the names in amqtt 0.12's ``plugins:`` section; its older ``topic-check`` section
    spells them with ``-`` (``acl-file``, ``subscribe-acl``, ``acl-version``). With lists, a
    topic is allowed if an allowed filter matches it, and a SUBSCRIBE filter if an allowed
    filter covers it; a ``$share/<group>/<filter>`` is judged by its filter.
    """

    @dataclass
    class Config:
        acl: dict[str, list[str]] | None = None  # amqtt 0.12's name of subscribe_acl
        subscribe_acl: dict[str, list[str]] | None = None
        publish_acl: dict[str, list[str]] | None = None
        receive_acl: dict[str, list[str]] | None = None
        acl_file: str | None = None
        acl_version: str = "2.0"

    def __init__(self, context: BaseContext) -> None:
        super().__init__(context)
        acl_file = self._get_config_option("acl-file", None)
        version = self._get_config_option("acl-version", "2.0")
        lists = {
            action: self._get_config_option(f"{action.value}-acl", None)
            for action in (Action.SUBSCRIBE, Action.PUBLISH, Action.RECEIVE)
        }
        if lists[Action.SUBSCRIBE] is None:
            lists[Action.SUBSCRIBE] = self._get_config_option("acl", None)
        if acl_file and any(value is not None for value in lists.values()):
            raise ValueError("TopicACLPlugin takes either acl_file or the acl lists, not both")
        self._rules = AccessRules.from_file(acl_file, version=version) if acl_file else None
        self._lists: dict[Action, dict[str, list[str]] | None] = lists
        for allowed in lists.values():
            for filters in (allowed or {}).values():
                for filter_ in filters:
                    _MQTT.parse_pattern(filter_)  # InvalidPatternError now, not at a client's call

    async def topic_filtering(
        self, *, session: Session | None = None, topic: str | None = None, action: Action | None = None
    ) -> bool | None:
        if not topic or session is None or action is None:
            return False
        try:
            return self._allowed(session, topic, action)
        except TopicMatchError:
            return False  # an invalid topic or filter is refused

    def _allowed(self, session: Session, topic: str, action: Action) -> bool:
        if action == Action.SUBSCRIBE and topic.startswith("$share/"):
            topic = ShareGroup.of(topic).filter
        if self._rules is not None:
            user, client = session.username, session.client_id or ""
            if action == Action.SUBSCRIBE:
                return self._rules.may_subscribe(topic, username=user, client_id=client)
            if action == Action.PUBLISH:
                return self._rules.may_publish(topic, username=user, client_id=client)
            return self._rules.may_receive(topic, username=user, client_id=client)
        acl = self._lists.get(action)
        if acl is None:
            return True
        allowed: Iterable[str] = acl.get(session.username or "anonymous", ())
        if action == Action.SUBSCRIBE:
            return any(_covers(filter_, topic) for filter_ in allowed)
        return any(_topic_matches(filter_, topic) for filter_ in allowed)


def _valid(topic_filter: str) -> bool:
    try:
        _MQTT.parse_pattern(topic_filter)
    except InvalidPatternError:
        return False
    return True


def _covers(allowed: str, requested: str) -> bool:
    try:
        return _MQTT.covers(allowed, requested)
    except TopicMatchError:
        return False


def _topic_matches(allowed: str, topic: str) -> bool:
    try:
        return capture(allowed, topic, _MQTT) is not None
    except TopicMatchError:
        return False


def main(argv: list[str] | None = None) -> int:
    """``python -m topicmatch.compat.amqtt``: amqtt's own ``amqtt`` command, its options and
    their parsing (``-c`` the configuration file, ``-d`` debug messages, ``--version``),
    running this module's :class:`Broker`. Returns the command's exit code."""
    from amqtt.scripts import broker_script  # noqa: PLC0415 - typer, only for the command

    stock = broker_script.Broker
    broker_script.Broker = Broker  # the command makes its broker by this module-level name
    try:
        broker_script.app(args=argv, prog_name="python -m topicmatch.compat.amqtt")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    finally:
        broker_script.Broker = stock
    return 0


if __name__ == "__main__":
    # The module under its own name, not as __main__: a configuration names its plugins
    # topicmatch.compat.amqtt.<class>, and that import must give the classes the broker uses.
    from topicmatch.compat.amqtt import main as _main

    raise SystemExit(_main())
