"""The options of :class:`topicmatch.compat.amqtt.Broker`: the policy of its ``$share`` groups and
its per-client limits, read from the broker's own configuration.

amqtt checks its configuration strictly (a key it does not know at the top level stops the
broker), and the one place it gives a class options of its own is the ``plugins:`` section. So
the options are those of :class:`BrokerOptions`, a plugin that does nothing but carry them::

    plugins:
      topicmatch.compat.amqtt.BrokerOptions:
        share_policy: sticky        # round_robin (default), random, hash, hash_clientid, sticky
        max_subscriptions: 1000     # per client; none by default
        min_literal_levels: 1       # a wildcard filter starts with 1 literal level: no '#', '+/x'
        subscriptions_file: /var/lib/amqtt/subscriptions   # kept across restarts; none by default

amqtt loads it and checks the types; topicmatch's broker reads it when it is made and refuses
a bad value with amqtt's ``BrokerError`` (amqtt's ``amqtt`` command prints its one line). The
stock amqtt broker loads the plugin and ignores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from amqtt.errors import BrokerError  # amqtt.py, which imports this, says how to install amqtt
from amqtt.plugins.base import BasePlugin

from .. import ShareGroup

__all__ = ["SHARE_POLICIES", "BrokerOptions", "Limits", "Options", "options_of"]

#: The share policies (:class:`BrokerOptions`): :class:`~topicmatch.SharedGroups`' own.
SHARE_POLICIES = ("round_robin", "random", "hash", "hash_clientid", "sticky")


class BrokerOptions(BasePlugin):  # type: ignore[misc]
    """The options of topicmatch's amqtt broker, in amqtt's ``plugins:`` section (module
    docstring): ``share_policy``, ``max_subscriptions`` (subscriptions a client holds at once,
    plain and shared; None: no limit), ``min_literal_levels`` (:meth:`Limits.refuses`) and
    ``subscriptions_file`` (where the broker keeps its persistent sessions' subscriptions across
    a restart: :meth:`Broker.shutdown <topicmatch.compat.amqtt.Broker.shutdown>` writes it,
    the broker reads it when it is made and restores it at :meth:`Broker.start
    <topicmatch.compat.amqtt.Broker.start>`; None: not kept).

    The share policies, which choose the member of a ``$share`` group that gets a message:

    ``round_robin`` (default), ``random``, ``hash``
        :class:`~topicmatch.SharedGroups`' (``hash``: of the topic, EMQX's ``hash_topic``).
    ``hash_clientid``
        EMQX's: by a hash of the *publisher's* client id (SharedGroups' CRC-32 of that string),
        so one publisher's messages reach one member while the members stay the same.
    ``sticky``
        EMQX's: a member chosen at random, then every message to it while it is connected and
        a member; when it leaves or is away, another chosen at random, which then sticks.

    A member that is away is passed over for the next choice, unless every member is away; the
    hash policies make one choice (that member's persistent session queues the message, and
    the order per topic or publisher stays).
    """

    @dataclass
    class Config:
        share_policy: str = "round_robin"
        max_subscriptions: int | None = None
        min_literal_levels: int = 0
        subscriptions_file: str | None = None


@dataclass(frozen=True)
class Limits:
    """Per-client limits on SUBSCRIBE. A filter refused is answered with amqtt's failure code and
    changes nothing."""

    max_subscriptions: int | None = None
    min_literal_levels: int = 0

    def refuses(self, topic_filter: str) -> bool:
        """The cost rule: True for a filter with a wildcard among its first
        ``min_literal_levels`` levels (a ``$share/<group>/<filter>`` judged by its filter). With
        1: ``#``, ``+/temp`` and ``$share/g/#`` are refused, ``sensors/#`` and ``a`` are not.
        A filter with no wildcard matches one topic and is never refused. O(the levels checked).

        >>> Limits(min_literal_levels=1).refuses("#"), Limits(min_literal_levels=1).refuses("a/#")
        (True, False)
        """
        if not self.min_literal_levels:
            return False
        if topic_filter.startswith("$share/"):
            topic_filter = ShareGroup.of(topic_filter).filter
        levels = topic_filter.split("/", self.min_literal_levels)[: self.min_literal_levels]
        return any(level in ("+", "#") for level in levels)


@dataclass(frozen=True)
class Options:
    """The checked options: the share policy's name, the limits, and the subscriptions file."""

    share_policy: str
    limits: Limits
    subscriptions_file: str | None = None


def options_of(plugins: list[Any], share_policy: str | None = None) -> Options:
    """The options of the :class:`BrokerOptions` among amqtt's loaded ``plugins`` (the
    defaults without one), ``share_policy`` replacing its policy if given; amqtt's
    ``BrokerError`` for a bad value."""
    found = [plugin.config for plugin in plugins if isinstance(plugin, BrokerOptions)]
    config = found[0] if found else BrokerOptions.Config()
    policy = config.share_policy if share_policy is None else share_policy
    if policy not in SHARE_POLICIES:
        raise BrokerError(
            f"BrokerOptions: unknown share_policy {policy!r}; choose one of {', '.join(SHARE_POLICIES)}"
        )
    for name in ("max_subscriptions", "min_literal_levels"):
        value = getattr(config, name)
        if value is not None and value < 0:
            raise BrokerError(f"BrokerOptions: {name} must be 0 or more, not {value}")
    return Options(
        policy, Limits(config.max_subscriptions, config.min_literal_levels), config.subscriptions_file
    )
