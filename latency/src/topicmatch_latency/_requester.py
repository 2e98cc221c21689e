"""The ``Requester`` protocol: what a system under test implements to be measured.

A requester is one connection to the system. The harness calls :meth:`Requester.setup` once,
then :meth:`Requester.request` at the scheduled times (one call = one round trip, returning when
the reply is in), then :meth:`Requester.teardown`. A *factory* makes one requester per
connection, ``factory(connection_index)``; with several processes the factory is pickled to each
of them, so it should be a small picklable object (a dataclass with ``__call__``), not a closure.

Two variants with the same three methods: :class:`Requester` (blocking; several connections
run in threads) and :class:`AsyncRequester` (coroutines; several connections share one asyncio
loop). Plugging a system in takes a few lines::

    class Echo:
        def setup(self) -> None: self.sock = socket.create_connection(("127.0.0.1", 7))
        def request(self) -> None: self.sock.sendall(b"x"); self.sock.recv(1)
        def teardown(self) -> None: self.sock.close()

``request`` must give up by itself after its own time-out (raising any exception); the harness
records a failed request at the moment it gave up and carries on with the schedule.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["AnyRequester", "AsyncRequester", "Requester", "RequesterFactory", "is_async"]


@runtime_checkable
class Requester(Protocol):
    """A blocking connection: each call to :meth:`request` is one complete round trip."""

    def setup(self) -> None:
        """Connect and subscribe; called once, before the schedule starts (not timed)."""

    def request(self) -> None:
        """Send one request and return when its reply arrived; raise on error or time-out."""

    def teardown(self) -> None:
        """Disconnect; called once after the schedule, even after failures."""


@runtime_checkable
class AsyncRequester(Protocol):
    """An asyncio connection: the same three steps as coroutines."""

    async def setup(self) -> None:
        """Connect and subscribe (not timed)."""

    async def request(self) -> None:
        """One complete round trip; raise on error or time-out."""

    async def teardown(self) -> None:
        """Disconnect."""


AnyRequester = Requester | AsyncRequester

#: Makes the requester of connection ``i`` (0-based); called in the process that will use it.
RequesterFactory = Callable[[int], AnyRequester]


def is_async(requester: AnyRequester) -> bool:
    """Whether ``requester`` is an :class:`AsyncRequester` (its ``request`` is a coroutine function).

    >>> class Blocking:
    ...     def setup(self): pass
    ...     def request(self): pass
    ...     def teardown(self): pass
    >>> is_async(Blocking())
    False
    """
    return inspect.iscoroutinefunction(requester.request)
