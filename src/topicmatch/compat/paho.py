"""paho-mqtt's ``MQTTMatcher`` and ``topic_matches_sub`` with Mosquitto's semantics.

Switch with one import::

    from topicmatch.compat.paho import MQTTMatcher, topic_matches_sub

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

__all__ = ["MQTTMatcher", "topic_matches_sub"]

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
