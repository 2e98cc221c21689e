"""Route a log of messages to subscribers on Spark: batch and streaming, locally or on a cluster.

>>> from topicmatch.spark import route                                      # doctest: +SKIP
>>> deliveries = route(messages_df, [("stock.#", "alice")], dialect="amqp")  # doctest: +SKIP

:func:`route` is an ordinary lazy transformation (usable with ``df.transform``) giving one row
per (message, subscriber) with the message's columns kept; :func:`quarantine` gives the messages
whose topic the dialect rejects, with the reason. Both match inside the Python workers with
``mapInArrow`` (docs/pipeline.md explains how). The command line is ``topicmatch generate`` and
``topicmatch route`` (their runners: :mod:`topicmatch.spark.commands`); the benchmark
``topicmatch bench pipeline``. :func:`session` is the session those commands run on (the active
one, or a local one bound to 127.0.0.1 with the log level of docs/pipeline.md).

Needs the ``spark`` extra (PySpark, pyarrow, pandas, numpy): importing this package without them
raises an ImportError naming ``pip install 'topicmatch[spark]'``, whatever was imported before
(the command line declares its commands in :mod:`topicmatch.cli` and imports this package only
when one of them runs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..support.extras import install_hint, missing

if TYPE_CHECKING:  # the names, for type checkers; at run time they load on first use
    from ._errors import InvalidSubscriptionError, MessagesError, SparkPipelineError, SubscriptionsError
    from ._route import quarantine, route
    from ._session import session
    from ._subscriptions import Subscriptions

__all__ = [
    "InvalidSubscriptionError",
    "MessagesError",
    "SparkPipelineError",
    "Subscriptions",
    "SubscriptionsError",
    "quarantine",
    "route",
    "session",
]

#: public name -> private module defining it
_EXPORTS = {
    "route": "._route",
    "quarantine": "._route",
    "Subscriptions": "._subscriptions",
    "session": "._session",
    "InvalidSubscriptionError": "._errors",
    "MessagesError": "._errors",
    "SparkPipelineError": "._errors",
    "SubscriptionsError": "._errors",
}


_missing = missing("spark")
if _missing:
    raise ImportError(f"topicmatch.spark needs {', '.join(_missing)}: {install_hint('spark')}")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
