"""An amqtt broker whose routing, retained messages, shared subscriptions and topic ACL run on
topicmatch.

amqtt (Python's asyncio MQTT broker) is a good broker with four matching defects, which
:class:`Broker` here fixes in its own code, the rest of amqtt unchanged:

1. **Every publish scans every subscription.** amqtt's ``_run_broadcast`` calls ``_matches`` on
   each subscription's filter for each message, and formats a debug string for each miss: 0.5
   ms per publish at 1,000 subscriptions, 50 ms at 100,000. Here a
   :class:`~topicmatch.Matcher` (``dialect="mqtt"``) finds the subscriptions of a topic in
   microseconds, whatever their number.
2. **Every SUBSCRIBE scans every retained message.** Here the retained messages are also kept
   in a :class:`~topicmatch.TopicIndex`, which walks only the branch the filter names (a broad
   filter such as ``#`` costs no more than the scan).
3. **A wildcard escapes amqtt's topic ACL.** Its ``TopicAccessControlListPlugin`` lets a client
   allowed ``sensors/+`` subscribe to ``sensors/#`` (and ``+`` to ``#``). :class:`TopicACLPlugin`
   takes the same configuration and allows a filter only if an allowed filter *covers* it
   (:meth:`Dialect.covers <topicmatch.Dialect.covers>`), or takes a Mosquitto ``acl_file``
   (:class:`~topicmatch.AccessRules`).
4. **A client that connects is sent other clients' retained messages.** amqtt replays the
   retained messages of *every* subscription of the broker to each connecting client; here only
   those of the client's own subscriptions.

And ``$share/<group>/<filter>``, a literal filter to amqtt, is a shared subscription: each
message goes to one member of each group (:class:`~topicmatch.SharedGroups`, round-robin by
default, as Mosquitto), and a shared subscription gets no retained messages (MQTT 5, 4.8.2).

Use it where you use amqtt's broker::

    from topicmatch.compat.amqtt import Broker
    broker = Broker(config)          # amqtt's configuration, unchanged
    await broker.start()

amqtt's own ``subscriptions`` and ``retained_messages`` stay the truth that amqtt's plugins read
and write (the persistence plugin restores retained messages into that dict): the index and
the matcher follow them. Needs amqtt 0.12 (``pip install 'topicmatch[amqtt]'``); the tests run
amqtt's own matching and ``$`` topic cases against it with real clients.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from topicmatch import (
    AccessRules,
    InvalidPatternError,
    InvalidTopicError,
    Matcher,
    SharedGroups,
    ShareGroup,
    TopicIndex,
    TopicMatchError,
    capture,
    make_dialect,
)

from .._extras import install_hint

try:
    from amqtt.broker import Broker as AmqttBroker
    from amqtt.broker import RetainedApplicationMessage
    from amqtt.contexts import Action, BaseContext
    from amqtt.mqtt.constants import QOS_1, QOS_2
    from amqtt.plugins.base import BaseTopicPlugin
    from amqtt.session import Session
except ImportError as error:  # pragma: no cover - the extra's hint (tests/test_compat_amqtt.py)
    raise ImportError(
        f"topicmatch.compat.amqtt needs amqtt: {install_hint('amqtt')}", name=error.name
    ) from error

__all__ = ["Broker", "TopicACLPlugin"]

_MQTT = make_dialect("mqtt")
_FAILED = 0x80  # amqtt's SUBACK return code of a refused subscription


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


class Broker(AmqttBroker):  # type: ignore[misc]
    """amqtt's ``Broker`` with topicmatch's routing (module docstring).

    ``config``, ``loop`` and ``plugin_namespace`` are amqtt's; ``share_policy`` is the
    :class:`~topicmatch.SharedGroups` policy of ``$share`` groups (``"round_robin"``,
    ``"random"``, ``"hash"``). A SUBSCRIBE to a filter the mqtt dialect rejects (``a/#/b``,
    ``$share/g``) is refused with amqtt's failure code, as amqtt refuses the ones it checks.
    Per publish: one lookup, O(the topic's words) on the matcher's DFA, plus the deliveries.
    """

    def __init__(
        self,
        config: Any = None,
        loop: asyncio.AbstractEventLoop | None = None,
        plugin_namespace: str | None = None,
        *,
        share_policy: str = "round_robin",
    ) -> None:
        super().__init__(config, loop, plugin_namespace)
        self._retained_messages = _RetainedMessages()
        self._routes = Matcher[Hashable](dialect="mqtt")
        self._shares = SharedGroups[str](share_policy)
        # (client id, filter) -> (session, granted QoS) of each plain subscription, and each
        # client's filters, so that routing and unsubscribing never scan every subscription.
        self._granted: dict[tuple[str, str], tuple[Session, int]] = {}
        self._filters_of: dict[str, set[str]] = {}
        self._share_sessions: dict[str, Session] = {}  # client id -> session, for members

    def _forget_routes(self) -> None:
        self._routes = Matcher[Hashable](dialect="mqtt")
        self._shares = SharedGroups[str](self._shares.policy)
        self._granted.clear()
        self._filters_of.clear()
        self._share_sessions.clear()

    async def start(self) -> None:
        self._forget_routes()  # amqtt's start() clears its subscriptions and retained messages
        await super().start()

    # -- subscriptions ----------------------------------------------------------------------
    async def add_subscription(self, subscription: tuple[str, int], session: Session) -> int:
        topic_filter, _qos = subscription
        try:
            _MQTT.parse_pattern(topic_filter)
        except InvalidPatternError:
            return _FAILED
        granted: int = await super().add_subscription(subscription, session)
        if granted == _FAILED:
            return granted
        client = session.client_id
        self._filters_of.setdefault(client, set()).add(topic_filter)
        if topic_filter.startswith("$share/"):
            self._share_sessions[client] = session
            self._routes.subscribe(topic_filter, self._shares.join(topic_filter, client))
        elif (client, topic_filter) not in self._granted:  # amqtt keeps the first grant too
            self._granted[(client, topic_filter)] = (session, granted)
            self._routes.subscribe(topic_filter, (client, topic_filter))
        return granted

    def _del_subscription(self, a_filter: str, session: Session) -> int:
        deleted: int = super()._del_subscription(a_filter, session)
        client = session.client_id
        filters = self._filters_of.get(client)
        if filters is None or a_filter not in filters:
            return deleted
        filters.discard(a_filter)
        if not filters:
            del self._filters_of[client]
        if a_filter.startswith("$share/"):
            key = ShareGroup.of(a_filter)
            if self._shares.leave(a_filter, client):
                self._routes.unsubscribe(a_filter, key)
        elif self._granted.pop((client, a_filter), None) is not None:
            self._routes.unsubscribe(a_filter, (client, a_filter))
        return deleted

    async def _del_all_subscriptions(self, session: Session) -> None:
        """The client's own subscriptions, not a scan of the broker's (amqtt scans them all)."""
        for a_filter in sorted(self._filters_of.get(session.client_id, ())):
            self._del_subscription(a_filter, session)
            if not self._subscriptions.get(a_filter, True):
                del self._subscriptions[a_filter]

    def _matches(self, topic: str, a_filter: str) -> bool:
        """amqtt's one-pair check, with Mosquitto's rules (amqtt's tests call it); False for an
        invalid topic or filter."""
        return _topic_matches(a_filter, topic)

    # -- routing ---------------------------------------------------------------------------
    async def _run_broadcast(self, running_tasks: deque[asyncio.Task[Any]]) -> None:
        """amqtt's delivery of one queued message, to the subscriptions a lookup finds."""
        broadcast = await self._broadcast_queue.get()
        topic = broadcast["topic"]
        try:
            found = self._routes.lookup(topic)
        except TopicMatchError:
            self.logger.warning(f"not routed: invalid topic {topic!r}")
            return
        for subscriber in found:
            if type(subscriber) is ShareGroup:
                session = self._member_for(subscriber, topic)
                if session is None:
                    continue
                share_filter = f"$share/{subscriber.name}/{subscriber.filter}"
                qos = next((q for s, q in self._subscriptions.get(share_filter, ()) if s is session), 0)
            else:
                session, qos = self._granted[subscriber]  # type: ignore[index]
            await self._deliver(broadcast, session, qos, running_tasks)

    def _member_for(self, group: ShareGroup, topic: str) -> Session | None:
        """The member of ``group`` that gets a message on ``topic``: the policy's choice, or the
        next choices while the chosen member is away (amqtt keeps a disconnected client's
        subscriptions until its session expires); the first choice if all are away."""
        first: Session | None = None
        for _ in range(len(self._shares.members(group))):
            client = self._shares.choose(group, topic)
            if client is None:
                return None
            session = self._share_sessions[client]
            if session.transitions.state == "connected":
                return session
            first = first or session
        return first

    async def _deliver(
        self,
        broadcast: dict[str, Any],
        target: Session,
        sub_qos: int,
        running_tasks: deque[asyncio.Task[Any]],
    ) -> None:
        """One delivery, with amqtt's rules: the RECEIVE check of the topic plugins, queued for a
        persistent session that is away (QoS 1 and 2), dropped for another one that is away."""
        topic = broadcast["topic"]
        qos = broadcast.get("qos", sub_qos)
        if not await self._topic_filtering(target, topic=topic, action=Action.RECEIVE):
            return
        connected = target.transitions.state == "connected"
        if not connected:
            if not target.clean_session and qos in (QOS_1, QOS_2) and not target.is_anonymous:
                await self._retain_broadcast_message(broadcast, qos, target)
            return
        handler = self._get_handler(target)
        if handler:
            running_tasks.append(
                asyncio.ensure_future(handler.mqtt_publish(topic, broadcast["data"], qos, retain=False))
            )

    # -- retained messages -----------------------------------------------------------------
    async def _publish_retained_messages_for_subscription(
        self, subscription: tuple[str, int], session: Session
    ) -> None:
        """The retained messages a new subscription matches, found in the index. Only for the
        session's own plain subscriptions: amqtt also calls this for every subscription of the
        broker when a client connects, and a shared subscription gets none."""
        topic_filter, qos = subscription
        if (session.client_id, topic_filter) not in self._granted:
            return
        handler = self._get_handler(session)
        if not handler:
            return
        found = self._retained_messages.index.match(topic_filter)
        tasks = [
            asyncio.ensure_future(
                handler.mqtt_publish(
                    retained.topic, retained.data, min(qos, retained.qos or qos), retain=True
                )
            )
            for retained in found.values()
        ]
        if tasks:
            await asyncio.wait(tasks)


class TopicACLPlugin(BaseTopicPlugin):  # type: ignore[misc]
    """amqtt's topic ACL without the wildcard escape (module docstring, defect 3).

    Configured as amqtt's ``TopicAccessControlListPlugin`` (``acl`` or ``subscribe_acl``,
    ``publish_acl``, ``receive_acl``: username, or ``anonymous``, -> allowed filters; an action
    without a list is allowed), or with ``acl-file``, the path of a Mosquitto ``acl_file``
    (:class:`~topicmatch.AccessRules`), but not both. With lists, a topic is allowed if an
    allowed filter matches it, and a SUBSCRIBE filter if an allowed filter covers it; a
    ``$share/<group>/<filter>`` is judged by its filter.
    """

    @dataclass
    class Config:
        acl: dict[str, list[str]] | None = None  # amqtt 0.12's name of subscribe_acl
        subscribe_acl: dict[str, list[str]] | None = None
        publish_acl: dict[str, list[str]] | None = None
        receive_acl: dict[str, list[str]] | None = None
        acl_file: str | None = None

    def __init__(self, context: BaseContext) -> None:
        super().__init__(context)
        acl_file = self._get_config_option("acl-file", None)
        lists = {
            action: self._get_config_option(f"{action.value}-acl", None)
            for action in (Action.SUBSCRIBE, Action.PUBLISH, Action.RECEIVE)
        }
        if lists[Action.SUBSCRIBE] is None:
            lists[Action.SUBSCRIBE] = self._get_config_option("acl", None)
        if acl_file and any(value is not None for value in lists.values()):
            raise ValueError("TopicACLPlugin takes either acl-file or the acl lists, not both")
        self._rules = AccessRules.from_file(acl_file) if acl_file else None
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
