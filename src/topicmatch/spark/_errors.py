"""The errors of the Spark pipeline: bad input found before any work starts.

They extend topicmatch's hierarchy, so ``except TopicMatchError`` still catches everything::

    TopicMatchError
     +-- SparkPipelineError(ValueError)       the pipeline cannot run on this input
     |    +-- SubscriptionsError              the subscription table is unusable (columns, nulls, file)
     |    |    +-- InvalidSubscriptionError   ... one pattern is invalid (also an InvalidPatternError)
     |    +-- MessagesError                   the messages are unusable (columns, types, paths)
     +-- InvalidPatternError                  (core)

A message whose *topic* is invalid is not an error: it goes to the quarantine with its reason.
"""

from __future__ import annotations

from .. import InvalidPatternError, TopicMatchError

__all__ = ["InvalidSubscriptionError", "MessagesError", "SparkPipelineError", "SubscriptionsError"]


class SparkPipelineError(TopicMatchError, ValueError):
    """The pipeline cannot run on this input; the message says what to change."""


class SubscriptionsError(SparkPipelineError):
    """The subscription table is unusable: missing columns, a null, an unreadable file."""


class MessagesError(SparkPipelineError):
    """The messages are unusable: a missing or mistyped column, an unreadable path."""


class InvalidSubscriptionError(SubscriptionsError, InvalidPatternError):
    """A subscription whose pattern the dialect rejects, with where it is (file and line, or row).

    Attributes: ``where`` (``"subs.tsv:12"`` or ``"row 12"``), and as for
    :class:`~topicmatch.InvalidPatternError`, ``dialect``, ``value`` (the pattern) and ``reason``.
    """

    def __init__(self, where: str, dialect: str, value: str, reason: str) -> None:
        InvalidPatternError.__init__(self, dialect, value, reason)
        self.where = where
        self.args = (f"{where}: {self.args[0]}",)
