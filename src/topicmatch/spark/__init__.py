"""Route a log of messages to subscribers on Spark: batch and streaming, locally or on a cluster.

>>> from topicmatch.spark import route                                      # doctest: +SKIP
>>> deliveries = route(messages_df, [("stock.#", "alice")], dialect="amqp")  # doctest: +SKIP

:func:`route` is an ordinary lazy transformation (usable with ``df.transform``) giving one row
per (message, subscriber) with the message's columns kept; :func:`quarantine` gives the messages
whose topic the dialect rejects, with the reason. Both match inside the Python workers with
``mapInArrow`` (docs/pipeline.md explains how). The command line is ``topicmatch generate`` and
``topicmatch route``; the benchmark ``topicmatch bench pipeline``.

Needs the ``spark`` extra (PySpark, pyarrow, numpy): importing this package without them raises
an ImportError naming ``pip install 'topicmatch[spark]'``. One exception: the command line loads
this package's command modules at start-up to list their commands, and they import PySpark only
when a command runs, so while ``topicmatch.cli`` is loaded the check waits for the first use of a
name from this package.
"""

from __future__ import annotations

import importlib
import sys
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers; at run time they load on first use
    from ._errors import InvalidSubscriptionError, MessagesError, SparkPipelineError, SubscriptionsError
    from ._route import quarantine, route
    from ._subscriptions import Subscriptions

__all__ = [
    "InvalidSubscriptionError",
    "MessagesError",
    "SparkPipelineError",
    "Subscriptions",
    "SubscriptionsError",
    "quarantine",
    "route",
]

INSTALL_HINT = "pip install 'topicmatch[spark]'"

#: public name -> private module defining it
_EXPORTS = {
    "route": "._route",
    "quarantine": "._route",
    "Subscriptions": "._subscriptions",
    "InvalidSubscriptionError": "._errors",
    "MessagesError": "._errors",
    "SparkPipelineError": "._errors",
    "SubscriptionsError": "._errors",
}


def _missing() -> list[str]:
    return [name for name in ("pyspark", "pyarrow", "numpy") if find_spec(name) is None]


def _require() -> None:
    missing = _missing()
    if missing:
        raise ImportError(f"topicmatch.spark needs {', '.join(missing)}: {INSTALL_HINT}")


if "topicmatch.cli" not in sys.modules:
    _require()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _require()
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
