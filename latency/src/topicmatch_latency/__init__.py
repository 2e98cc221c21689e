"""The latency harness: fixed-rate load, coordinated omission handled right, HDR histograms.

Measure any system by implementing a :class:`Requester` (or :class:`AsyncRequester`) and a
factory of them, one per connection; :func:`run_load` sends requests at a fixed rate, records
raw nanosecond timestamps and returns a :class:`LatencyResult` with three distributions:

* corrected: from each request's intended start (``start + i / rate``), stalls charged in full;
* uncorrected: from the actual send, what a naive benchmark reports;
* lateness: how far behind schedule the load generator itself was.

Example (a requester that does nothing; NumPy and hdrh are needed, the ``bench`` extra)::

    >>> from topicmatch_latency import LoadSpec, run_load
    >>> class Nothing:
    ...     def setup(self): pass
    ...     def request(self): pass
    ...     def teardown(self): pass
    >>> result = run_load(lambda connection: Nothing(), LoadSpec(rate=1000, duration=0.2, warmup=0.1))
    >>> result.completed
    200

The broker requesters, the study's configurations, the commit-log benchmark, the ``.hgrm``
writer and the nines chart live in the private modules; ``topicmatch bench latency`` and
``topicmatch bench commitlog`` drive them (latency/docs/latency.md explains the method).
Importing this package is cheap: the names below are loaded on first use, so ``topicmatch
--help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._limits import LimitError, Limits
    from ._load import LoadSpec
    from ._requester import AsyncRequester, Requester, RequesterFactory
    from ._result import LatencyResult
    from ._run import run_load

__all__ = [
    "AsyncRequester",
    "LatencyResult",
    "LimitError",
    "Limits",
    "LoadSpec",
    "Requester",
    "RequesterFactory",
    "run_load",
]

_HOMES = {
    "AsyncRequester": "_requester",
    "Requester": "_requester",
    "RequesterFactory": "_requester",
    "LimitError": "_limits",
    "Limits": "_limits",
    "LoadSpec": "_load",
    "LatencyResult": "_result",
    "run_load": "_run",
}


def __getattr__(name: str) -> Any:
    """Load public names lazily (PEP 562): NumPy and hdrh are imported only when used."""
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
