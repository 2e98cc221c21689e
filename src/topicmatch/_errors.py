"""The exceptions topicmatch raises.

Every error the library raises on purpose derives from :class:`TopicMatchError`, so one ``except``
clause catches them all::

    TopicMatchError(Exception)
     +-- InvalidPatternError(ValueError)    a subscription pattern the dialect rejects
     +-- InvalidTopicError(ValueError)      a published topic the dialect rejects
     +-- UnknownTopicError(LookupError)     inverted_bitmap: topic outside the declared topic space
     +-- InvalidSubscriberError(TypeError)  a subscriber that is not hashable
     +-- InvalidPairError(TypeError)        subscribe_many/unsubscribe_many: not (pattern, subscriber) pairs
     +-- InvalidWalkError(TypeError)        BatchWalk: not its states, words that are not str
     +-- ComplexityError(ValueError)        Dialect.covers: patterns too hostile to compare within its budget
     +-- ConfigurationError(ValueError)     unknown algorithm or dialect, bad limit, misused option
     +-- InvalidRuleError(ValueError)       AccessRules: a line of an acl_file Mosquitto would not load
     +-- StateFileError(ValueError)         Matcher.load: a file that is not one Matcher.save wrote, whole

The value errors also derive from :class:`ValueError` so that code written against plain Python
conventions keeps working. A failed call leaves the matcher's state exactly as it was.
"""

from __future__ import annotations

__all__ = [
    "ComplexityError",
    "ConfigurationError",
    "InvalidPairError",
    "InvalidPatternError",
    "InvalidRuleError",
    "InvalidSubscriberError",
    "InvalidTopicError",
    "InvalidWalkError",
    "StateFileError",
    "TopicMatchError",
    "UnknownTopicError",
]


def shortened(text: str) -> str:
    """``text`` cut to 80 characters for a one-line message."""
    return text if len(text) <= 80 else text[:77] + "..."


class TopicMatchError(Exception):
    """Base class of every error raised by topicmatch."""


class _InputError(TopicMatchError, ValueError):
    """An input string rejected by a dialect; carries the dialect, the value and the reason."""

    kind = "input"

    def __init__(self, dialect: str, value: str, reason: str) -> None:
        self.dialect = dialect
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {dialect} {self.kind} {shortened(value)!r}: {reason}")


class InvalidPatternError(_InputError):
    """A subscription pattern that the dialect (and its broker) rejects.

    Attributes: ``dialect`` (``"amqp"``, ``"mqtt"`` or ``"nats"``), ``value`` (the pattern) and
    ``reason`` (what is wrong, in words).
    """

    kind = "pattern"


class InvalidTopicError(_InputError):
    """A published topic that the dialect (and its broker) rejects.

    Attributes: ``dialect``, ``value`` (the topic) and ``reason``.
    """

    kind = "topic"


class UnknownTopicError(TopicMatchError, LookupError):
    """A lookup on the inverted bitmap of a topic outside its declared topic space.

    The inverted bitmap precomputes one bitmap per topic, so it must know the topics up front;
    extend the space with ``Matcher.extend_topic_space``.
    """

    def __init__(self, topic: str) -> None:
        self.topic = topic
        super().__init__(
            f"topic {topic!r} is not in the inverted bitmap's topic space; "
            "add it with Matcher.extend_topic_space()"
        )


class ConfigurationError(TopicMatchError, ValueError):
    """An unknown algorithm or dialect name, an impossible limit, or an option misused."""


class InvalidSubscriberError(TopicMatchError, TypeError):
    """A subscriber that cannot be stored: subscribers must be hashable."""


class InvalidPairError(TopicMatchError, TypeError):
    """``subscribe_many`` or ``unsubscribe_many`` given something other than an iterable of
    (pattern, subscriber) pairs: not iterable, one string, a mapping, or an element that is not
    a pair."""


class InvalidWalkError(TopicMatchError, TypeError):
    """A :class:`~topicmatch.BatchWalk` given what it does not walk: ``advance`` given something
    other than two sequences of the same length, states of this walk and words (str);
    ``subscribers`` given something other than one of its states."""


class ComplexityError(TopicMatchError, ValueError):
    """A question whose exact answer would take more steps than the library allows itself:
    ``Dialect.covers`` on patterns that can be matched in exponentially many ways (its budget is
    ``topicmatch._algebra.COVERS_BUDGET``)."""


class InvalidRuleError(TopicMatchError, ValueError):
    """A line of an access-rules text (:class:`~topicmatch.AccessRules`) that Mosquitto would not
    load: an unknown keyword, a missing username or filter, an invalid filter. Attributes:
    ``line`` (its number, from 1), ``text`` and ``reason``."""

    def __init__(self, line: int, text: str, reason: str) -> None:
        self.line = line
        self.text = text
        self.reason = reason
        super().__init__(f"access rules, line {line}: {reason}: {shortened(text.strip())!r}")


class StateFileError(TopicMatchError, ValueError):
    """A file :meth:`Matcher.load <topicmatch.Matcher.load>` refuses, having loaded nothing: not
    one :meth:`Matcher.save <topicmatch.Matcher.save>` wrote (another kind of file, another
    format version), truncated, damaged or changed since (its checksum or counts disagree), or
    one it cannot read; also :meth:`~topicmatch.Matcher.save` given a subscriber the file cannot
    hold, and either given a path that is not a str or an ``os.PathLike`` of one. The message
    names the file and the reason, on one line."""
