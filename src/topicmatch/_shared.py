"""Shared subscriptions: each message goes to exactly one member of each ``$share`` group.

MQTT 5's shared subscription ``$share/<group>/<filter>`` is one subscription with many members:
a message that matches ``<filter>`` goes to one member of the group, not to each (MQTT 5,
4.8.2). The group is named by both parts: ``$share/g/a/+`` and ``$share/g/a/#`` are two shared
subscriptions, and a message matching both goes to one member of each.

A :class:`~topicmatch.Matcher` (``dialect="mqtt"``) matches a shared filter as its ``<filter>``;
it does not know the members. :class:`SharedGroups` keeps them: subscribe the group's key
(:class:`ShareGroup`, what :meth:`SharedGroups.join` returns) in the matcher, once per group,
and resolve each key a lookup returns to one member with :meth:`SharedGroups.choose`, or the
whole lookup with :meth:`SharedGroups.deliver`.

The policies, fixed per instance:

``round_robin`` (default)
    Mosquitto's order (its ``src/subs.c``, 2.0): the members stand in a queue; each message
    goes to the member at its head, which then moves to its tail. A member that joins goes to
    the tail, so it waits for everyone already there (not its place in the order of joining);
    one that leaves drops out and the others keep their order; one that leaves and joins again
    goes to the tail; one that joins twice keeps its place. A group that empties is forgotten,
    and one created again starts a new queue. tests/brokers/test_shared_mosquitto.py compares
    it with a real Mosquitto over generated join, leave and rejoin sequences between messages.
``random``
    uniformly at random, from ``random.Random(seed)``.
``hash``
    by a hash of the topic (CRC-32 of its UTF-8): one topic always reaches the same member
    while the members stay the same, so messages on one topic stay in order.
``hash_clientid``
    by a hash of the publisher's client id (EMQX's ``hash_clientid``; ``""`` for a message of
    the broker's own): one publisher's messages stay on one member, in order.
``sticky``
    EMQX's: a member chosen at random receives every message until it leaves (or is passed
    over, below); then another is chosen at random.

A broker that keeps a member that is away (a disconnected client whose session lives on)
passes ``away`` to :meth:`~SharedGroups.choose`: such members are passed over while another
is there (round-robin takes the next in the queue, random and sticky choose among the others;
the hash policies make their one choice), and if all are away, the choice is made as if none
were.

Cost: :meth:`~SharedGroups.join` O(members of the group) (a member joins at most once),
:meth:`~SharedGroups.leave` O(members of the group), :meth:`~SharedGroups.choose` O(1) (plus
the topic's or the client id's length for the hash policies), O(members) with ``away``.
Memory: one list per group with a member, one entry per member, one index per round-robin
group whose next member is not the first of its list, one member per sticky group that has
chosen; a group that empties leaves nothing. Not thread-safe: a broker calls it from its one event
loop, or holds its own lock around it.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Hashable, Iterable
from typing import Final, Generic, NamedTuple, TypeVar

from ._dialects import make_dialect, plain
from ._errors import ConfigurationError, InvalidPatternError, InvalidSubscriberError, InvalidTopicError
from ._typevars import Count, Text

__all__ = ["POLICIES", "ShareGroup", "SharedGroups"]

C = TypeVar("C", bound=Hashable)
S = TypeVar("S", bound=Hashable)

POLICIES: Final = ("round_robin", "random", "hash", "hash_clientid", "sticky")
_MQTT: Final = make_dialect("mqtt")


class ShareGroup(NamedTuple):
    """The key of one shared subscription: its group name and its filter."""

    name: str
    filter: str

    @classmethod
    def of(cls, shared_filter: Text) -> ShareGroup:
        """The key of ``$share/<name>/<filter>``; :class:`~topicmatch.InvalidPatternError` for
        a filter the mqtt dialect rejects or one that is not shared.

        >>> ShareGroup.of("$share/workers/jobs/+")
        ShareGroup(name='workers', filter='jobs/+')
        """
        shared_filter = plain(shared_filter)
        _MQTT.parse_pattern(shared_filter)
        if not shared_filter.startswith("$share/"):
            raise InvalidPatternError(
                "mqtt", shared_filter, "not a shared subscription ($share/<group>/<filter>)"
            )
        _share, name, filter_ = shared_filter.split("/", 2)
        return cls(name, filter_)


#: A group's key, checked by the method that takes it: a ShareGroup to type checkers, and a
#: constrained type variable so that the compiled build raises the same typed error for anything
#: else (docs/compiled.md; both constraints are ShareGroup: a constrained type variable takes two).
Key = TypeVar("Key", ShareGroup, ShareGroup)


class SharedGroups(Generic[C]):
    """The members of each shared subscription, and the choice of one per message.

    >>> from topicmatch import Matcher
    >>> m, groups = Matcher(dialect="mqtt"), SharedGroups[str]()
    >>> for client in ("w1", "w2"):
    ...     _ = m.subscribe("$share/workers/jobs/+", groups.join("$share/workers/jobs/+", client))
    >>> _ = m.subscribe("jobs/#", "auditor")
    >>> [sorted(groups.deliver("jobs/1", m.lookup("jobs/1"))) for _ in range(3)]
    [['auditor', 'w1'], ['auditor', 'w2'], ['auditor', 'w1']]
    """

    def __init__(self, policy: Text = "round_robin", *, seed: Count | None = None) -> None:
        if policy not in POLICIES:
            raise ConfigurationError(f"unknown share policy {policy!r}; choose one of {', '.join(POLICIES)}")
        _check_seed(seed)
        self.policy = policy
        # Each group's members, a circular queue that starts at _next[group] (0 if absent, and
        # never kept as 0): the member there is chosen next, the one before it was chosen last.
        # Only round_robin moves it, so for the other policies a list is in the order of joining.
        self._members: dict[ShareGroup, list[C]] = {}
        self._next: dict[ShareGroup, int] = {}
        self._sticky: dict[ShareGroup, C] = {}  # sticky: each group's chosen member
        self._random = random.Random(seed)

    def __len__(self) -> int:
        """The number of groups with at least one member."""
        return len(self._members)

    def join(self, shared_filter: Text, member: C) -> ShareGroup:
        """Add ``member`` to the group of ``shared_filter`` (``$share/<name>/<filter>``) and
        return the group's key, to subscribe in the matcher under ``shared_filter``. The new
        member's turn comes after every member already there (round-robin: the tail of the
        queue, as Mosquitto). Joining twice changes nothing, not even the member's place.
        O(members). Raises :class:`~topicmatch.InvalidPatternError` (see
        :meth:`ShareGroup.of`).

        >>> groups = SharedGroups[str]()
        >>> key = groups.join("$share/g/jobs", "a")
        >>> key = groups.join("$share/g/jobs", "b")
        >>> groups.choose(key, "jobs")
        'a'
        >>> key = groups.join("$share/g/jobs", "c")  # after b, and after a, who just had its turn
        >>> [groups.choose(key, "jobs") for _ in range(4)]
        ['b', 'a', 'c', 'b']
        """
        key = ShareGroup.of(shared_filter)
        members = self._members.setdefault(key, [])
        if member not in members:
            turn = self._next.get(key, 0)
            if turn:
                members.insert(turn, member)  # just before the next member: the queue's tail
                self._next[key] = turn + 1
            else:
                members.append(member)
        return key

    def leave(self, shared_filter: Text, member: C) -> bool:
        """Remove ``member`` from the group, the others keeping their order and turns; True if
        the group is now empty (the caller then unsubscribes the key from its matcher), and then
        nothing of the group is kept. O(members)."""
        key = ShareGroup.of(shared_filter)
        members = self._members.get(key)
        if members is None or member not in members:
            return key not in self._members
        index = members.index(member)
        turn = self._next.get(key, 0)
        del members[index]
        if self._sticky.get(key) == member:
            del self._sticky[key]
        if not members:
            del self._members[key]
            self._next.pop(key, None)
            return True
        if index < turn:
            turn -= 1  # the members after it moved down one place
        self._turn(key, turn % len(members))
        return False

    def _turn(self, key: ShareGroup, turn: int) -> None:
        """Set the index of the group's next member; none is kept for 0, the list's start."""
        if turn:
            self._next[key] = turn
        else:
            self._next.pop(key, None)

    def members(self, key: Key) -> list[C]:
        """The members of a group in the order of their turns: round-robin's next member first;
        for the other policies, the order they joined. Empty for an unknown group. O(members)."""
        _check_key(key)
        members = self._members.get(key, [])
        turn = self._next.get(key, 0)
        return members[turn:] + members[:turn]

    def choose(
        self, key: Key, topic: Text, publisher: Text | None = None, away: Callable[[C], bool] | None = None
    ) -> C | None:
        """The member of group ``key`` that receives a message on ``topic`` from the client
        ``publisher`` (None: the broker's own), by the policy, passing over the members for
        which ``away`` is true while another is there (module docstring); None if the group has
        no member. Raises :class:`~topicmatch.InvalidSubscriberError` for a key that is not a
        :class:`ShareGroup`, :class:`~topicmatch.InvalidTopicError` for a topic that is not a
        str, :class:`~topicmatch.ConfigurationError` for a publisher that is not a str or
        None, or an ``away`` that is not callable."""
        _check_key(key)
        _check_topic(topic)
        _check_chooser(publisher, away)
        members = self._members.get(key)
        if not members:
            return None
        policy = self.policy
        if policy == "round_robin":
            turn = self._next.get(key, 0)
            count = len(members)
            if away is not None:
                for step in range(count):  # the first in the queue that is there
                    if not away(members[(turn + step) % count]):
                        turn = (turn + step) % count
                        break
            self._turn(key, (turn + 1) % count)
            return members[turn]
        if policy == "hash":
            return members[zlib.crc32(topic.encode("utf-8")) % len(members)]
        if policy == "hash_clientid":
            return members[zlib.crc32((publisher or "").encode("utf-8")) % len(members)]
        there = members if away is None else [m for m in members if not away(m)] or members
        if policy == "sticky":
            held = self._sticky.get(key)
            if held is not None and held in there:
                return held
            chosen = self._sticky[key] = self._random.choice(there)
            return chosen
        return self._random.choice(there)

    def deliver(
        self, topic: Text, subscribers: Iterable[S | ShareGroup], publisher: Text | None = None
    ) -> list[S | C]:
        """A lookup's result with each group key replaced by the member chosen for ``topic``
        (from ``publisher``, as :meth:`choose` takes it): the recipients of the message, each
        plain subscriber and one member per group. Raises what :meth:`choose` raises, and
        :class:`~topicmatch.InvalidSubscriberError` if ``subscribers`` is not iterable."""
        _check_topic(topic)
        _check_chooser(publisher, None)
        try:
            found = iter(subscribers)
        except TypeError:
            raise InvalidSubscriberError(
                "deliver takes a lookup's result (an iterable of subscribers), "
                f"not {type(subscribers).__name__}"
            ) from None
        out: list[S | C] = []
        for subscriber in found:
            if type(subscriber) is ShareGroup:
                chosen = self.choose(subscriber, topic, publisher)
                if chosen is not None:
                    out.append(chosen)
            else:
                out.append(subscriber)  # type: ignore[arg-type]
        return out


def _check_key(key: object) -> None:
    if type(key) is not ShareGroup:
        raise InvalidSubscriberError(
            f"a share group's key is a ShareGroup (SharedGroups.join returns it), not {type(key).__name__}"
        )


def _check_topic(topic: object) -> None:
    if not isinstance(topic, str):
        raise InvalidTopicError("mqtt", repr(topic), f"must be a str, not {type(topic).__name__}")


def _check_chooser(publisher: object, away: object) -> None:
    if not (publisher is None or isinstance(publisher, str)):
        raise ConfigurationError(
            f"publisher must be a client id (a str) or None, not {type(publisher).__name__}"
        )
    if not (away is None or callable(away)):
        raise ConfigurationError(f"away must be callable or None, not {type(away).__name__}")


def _check_seed(seed: object) -> None:
    if not (seed is None or (isinstance(seed, int) and not isinstance(seed, bool))):
        raise ConfigurationError(f"seed must be an int or None, not {seed!r}")
