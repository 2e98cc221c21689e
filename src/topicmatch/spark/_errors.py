"""The errors of the Spark pipeline: bad input found before any work starts.

They extend topicmatch's hierarchy, so ``except TopicMatchError`` still catches everything::

    TopicMatchError
     +-- SparkPipelineError(ValueError)       the pipeline cannot run on this input
     |    +-- SubscriptionsError              the subscription table is unusable (columns, nulls, file)
     |    |    +-- InvalidSubscriptionError   ... patterns are invalid (also an InvalidPatternError)
     |    +-- MessagesError                   the messages are unusable (columns, types, paths)
     +-- InvalidPatternError                  (core)

A message whose *topic* is invalid is not an error: it goes to the quarantine with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import InvalidPatternError, TopicMatchError
from ..support.pair_files import invalid_patterns

__all__ = ["InvalidSubscriptionError", "MessagesError", "SparkPipelineError", "SubscriptionsError"]


class SparkPipelineError(TopicMatchError, ValueError):
    """The pipeline cannot run on this input; the message says what to change."""


class SubscriptionsError(SparkPipelineError):
    """The subscription table is unusable: missing columns, a null, an unreadable file."""


class MessagesError(SparkPipelineError):
    """The messages are unusable: a missing or mistyped column, an unreadable path."""


class InvalidSubscriptionError(SubscriptionsError, InvalidPatternError):
    """Subscriptions whose patterns the dialect rejects, with where each is (file and line, or row).

    Attributes: ``where`` (``"subs.tsv:12"`` or ``"row 12"``), and as for
    :class:`~topicmatch.InvalidPatternError`, ``dialect``, ``value`` (the pattern) and ``reason``,
    all of the first invalid pattern; ``others``, (where, pattern, reason) of the next ones (at
    most :data:`topicmatch.support.pair_files.LISTED` in all are kept), and ``count``, how many there are.
    The message lists those kept, the first on its first line.
    """

    def __init__(
        self,
        where: str,
        dialect: str,
        value: str,
        reason: str,
        others: Sequence[tuple[str, str, str]] = (),
        count: int = 1,
    ) -> None:
        InvalidPatternError.__init__(self, dialect, value, reason)
        self.where = where
        self.others = list(others)
        self.count = max(count, 1 + len(self.others))
        listed = [f"{where}: {self.args[0]}"]
        listed += [f"{w}: {InvalidPatternError(dialect, p, r)}" for w, p, r in self.others]
        self.args = (invalid_patterns(listed, self.count),)
