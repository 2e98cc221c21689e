"""topicmatch: fast, correct topic matching for messaging systems.

Given subscription patterns with wildcards (``forex.*``, ``stock.#``, ``sensors/+/temp``,
``orders.>``), find every subscriber of a published topic, with the exact rules of RabbitMQ
(``amqp``), Mosquitto (``mqtt``) or nats-server (``nats``).

>>> from topicmatch import Matcher
>>> m = Matcher()
>>> m.subscribe("stock.#", "alice"), m.subscribe("stock.*.ibm", "bob")
(True, True)
>>> sorted(m.lookup("stock.nyse.ibm"))
['alice', 'bob']
"""

# First: it decides whether the core's modules below are imported compiled or as Python source.
from ._build import BUILD  # isort: skip
from ._access import AccessRules, ClientRules
from ._captures import Capture, capture
from ._collector import collector_paused
from ._delivery import Copy, Delivery, DeliveryPlanner, Subscription
from ._dialects import DIALECTS, Dialect, make_dialect
from ._engine.dfa import BatchWalk
from ._errors import (
    ComplexityError,
    ConfigurationError,
    InvalidPairError,
    InvalidPatternError,
    InvalidRuleError,
    InvalidSubscriberError,
    InvalidTopicError,
    InvalidWalkError,
    StateFileError,
    TopicMatchError,
    UnknownTopicError,
)
from ._matcher import ALGORITHMS, DEFAULT_CACHE_BYTES, DEFAULT_CACHE_SIZE, Matcher, MatcherSnapshot
from ._shared import SharedGroups, ShareGroup
from ._templates import Route, Router, Template
from ._topic_index import TopicIndex
from ._words import Wildcard

__all__ = [
    "ALGORITHMS",
    "BUILD",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_CACHE_SIZE",
    "DIALECTS",
    "AccessRules",
    "BatchWalk",
    "Capture",
    "ClientRules",
    "ComplexityError",
    "ConfigurationError",
    "Copy",
    "Delivery",
    "DeliveryPlanner",
    "Dialect",
    "InvalidPairError",
    "InvalidPatternError",
    "InvalidRuleError",
    "InvalidSubscriberError",
    "InvalidTopicError",
    "InvalidWalkError",
    "Matcher",
    "MatcherSnapshot",
    "Route",
    "Router",
    "ShareGroup",
    "SharedGroups",
    "StateFileError",
    "Subscription",
    "Template",
    "TopicIndex",
    "TopicMatchError",
    "UnknownTopicError",
    "Wildcard",
    "capture",
    "collector_paused",
    "make_dialect",
]

__version__ = "0.1.0"

# Show the public names in tracebacks and reprs (topicmatch.InvalidPatternError, not the private
# module it is defined in): every class of __all__, the one list of the public names.
for _name in __all__:
    if isinstance(globals()[_name], type):
        globals()[_name].__module__ = __name__
del _name
