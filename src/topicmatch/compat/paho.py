"""paho-mqtt's ``MQTTMatcher`` and ``topic_matches_sub`` with Mosquitto's semantics, and its
client's per-filter callbacks on them.

Switch with one import::

    from topicmatch.compat.paho import MQTTMatcher, topic_matches_sub

and a paho ``Client``'s ``message_callback_add`` with one call, :func:`install`::

    topicmatch.compat.paho.install(client)

The interface is paho's: ``m[filter] = value`` (``None`` stores nothing, as in paho),
``m[filter]`` and ``del m[filter]`` (``KeyError`` for a filter without a value) and
``m.iter_match(topic)`` (the values of the filters that match). Where paho and Mosquitto
disagree, this follows Mosquitto (docs/conformance.md):

* ``$share/<group>/<filter>`` is a shared subscription to ``<filter>`` (paho takes
  ``$share`` as a literal first level and matches only topics that start with it);
* an invalid filter (``a/#/b``, ``a/b+``) raises :class:`~topicmatch.InvalidPatternError` and an
  invalid topic (one with ``+`` or ``#``) :class:`~topicmatch.InvalidTopicError`, where paho
  stores or matches them as plain strings.

``iter_match`` runs the default matcher's lookup (its result cache included) and yields
the values of the filters found, in no particular order (paho's is its trie's order). Speed
against paho-mqtt through this interface: ``benchmarks/paho_adapter.py``, its raw results in
docs/results/paho-adapter/results.txt, the command beside the other experiments in
docs/performance.md, section "Other experiments".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import Matcher, TopicMatchError, make_dialect

__all__ = ["MQTTMatcher", "install", "topic_matches_sub"]

_MQTT = make_dialect("mqtt")


class MQTTMatcher:
    """paho-mqtt's matcher interface (module docstring), on :class:`~topicmatch.Matcher`.

    >>> m = MQTTMatcher()
    >>> m["sensors/+/temp"] = "thermometers"
    >>> m["sensors/#"] = "everything"
    >>> sorted(m.iter_match("sensors/kitchen/temp"))
    ['everything', 'thermometers']
    """

    def __init__(self) -> None:
        # Each filter subscribes itself: a lookup gives the filters, whose values are here.
        self._matcher = Matcher[str](dialect="mqtt")
        self._values: dict[str, Any] = {}

    def __setitem__(self, key: str, value: Any) -> None:
        if value is None:  # paho stores None as no value at all
            _MQTT.parse_pattern(key)  # still refuse an invalid filter
            if key in self._values:
                del self[key]
            return
        self._matcher.subscribe(key, key)
        self._values[key] = value

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(key) from None

    def __delitem__(self, key: str) -> None:
        if key not in self._values:
            raise KeyError(key)
        self._matcher.unsubscribe(key, key)
        del self._values[key]

    def iter_match(self, topic: str) -> Iterator[Any]:
        # map over the frozenset the lookup returns: one C loop, no generator frame (on a topic
        # that matches nothing, most of the cost of a call; benchmarks/paho_adapter.py).
        return map(self._values.__getitem__, self._matcher.lookup(topic))


def topic_matches_sub(sub: str, topic: str) -> bool:
    """Whether ``topic`` matches the filter ``sub``, as Mosquitto decides
    (:meth:`topicmatch.Dialect.matches` of the ``mqtt`` dialect). Like paho's, it answers a
    bool for anything: a filter or topic Mosquitto refuses (empty, ``a/#/b``, a topic with
    ``+``) matches nothing, so False, where paho's matcher answers such input as it happens to
    (False for an empty filter, True for ``+`` against the topic ``+``).

    >>> topic_matches_sub("foo/#", "foo/bar"), topic_matches_sub("+/bar", "$SYS/bar")
    (True, False)
    >>> topic_matches_sub("", "foo"), topic_matches_sub("a/#/b", "a/x/b")
    (False, False)
    """
    try:
        return _MQTT.matches(sub, topic)
    except TopicMatchError:
        return False


class _CallbackMatcher(MQTTMatcher):
    """The matcher of a client's callbacks (:func:`install`): a topic the mqtt dialect
    refuses, which no filter matches, finds no callback (paho's network thread then calls
    ``on_message``) instead of raising there."""

    def iter_match(self, topic: str) -> Iterator[Any]:
        try:
            return super().iter_match(topic)
        except TopicMatchError:
            return iter(())


def install(client: Any) -> None:
    """Make the callbacks of a paho-mqtt ``Client`` (``message_callback_add``,
    ``@client.topic_callback``) match with Mosquitto's rules: a callback added for a shared
    subscription's ``$share/<group>/<filter>`` fires for the messages of ``<filter>`` (paho
    matches it as a literal first level ``$share``, and the callback never fires: paho issue
    #472); ``message_callback_add`` of an invalid filter (``a/#/b``) raises
    :class:`~topicmatch.InvalidPatternError`, a ``ValueError`` as paho's own refusals. The
    callbacks added before are kept (one of an invalid filter raises that error, and the
    client is left as it was); installing twice changes nothing. Lookups use
    :class:`MQTTMatcher`: O(the topic's levels), whatever the number of callbacks.

    >>> from paho.mqtt.client import Client, CallbackAPIVersion
    >>> client = Client(CallbackAPIVersion.VERSION2)
    >>> install(client)
    >>> client.message_callback_add("$share/workers/jobs/+", print)
    """
    with client._callback_mutex:  # the lock paho takes around the matcher
        current = client._on_message_filtered
        if isinstance(current, _CallbackMatcher):
            return
        matcher = _CallbackMatcher()
        for sub, callback in _paho_callbacks(current):
            matcher[sub] = callback
        client._on_message_filtered = matcher


def _paho_callbacks(matcher: Any) -> list[tuple[str, Any]]:
    """The (filter, callback) pairs held in paho's own ``MQTTMatcher`` (its trie has no public
    walk). O(the trie's nodes)."""
    pairs: list[tuple[str, Any]] = []
    stack: list[tuple[list[str], Any]] = [([], matcher._root)]
    while stack:  # bounded: each node is pushed once
        levels, node = stack.pop()
        if levels and node._content is not None:
            pairs.append(("/".join(levels), node._content))
        stack.extend(([*levels, level], child) for level, child in node._children.items())
    return pairs
