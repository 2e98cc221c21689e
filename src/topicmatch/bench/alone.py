"""A benchmark's contender in a process of its own, so that no other contender shares its heap.

Built in one process, matchers measure the process's history as much as themselves: a walk over
100,000 MQTT filters (a pointer chase through dicts) ran 3-12 % faster for whichever of two
identical tries was built first, and the workload matrix's ratios moved by as much with the
order of the builds (CHANGELOG.md, "Performance history"). So the matrix builds every
contender in a child forked for it: the child inherits the row's data (the fork copies nothing
until it is written), builds, and then runs what the parent asks, one call at a time, until
closed. The parent keeps the row's data and the figures, never a contender.

Calls are module-level functions (a pipe carries them by name) with small arguments: ``call(fn,
*args)`` runs ``fn(contender, *args)`` in the child and returns its result, or raises an
:class:`AloneError` carrying the child's traceback. Unix only (``fork``); the benchmark process
must not hold a lock that another thread may take at the moment of the fork (none of ``topicmatch
bench``'s does: their threads end before the next experiment).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["Alone", "AloneError"]


class AloneError(RuntimeError):
    """A call failed in the contender's process, or the process died."""


def _serve(conn: Connection, make: Callable[[], tuple[Any, Any]]) -> None:
    """The child: build with ``make``, send what it says of the build, then serve calls."""
    try:
        contender, built = make()
        conn.send((True, built))
        while (call := conn.recv()) is not None:
            fn, args = call
            conn.send((True, fn(contender, *args)))
    except BaseException:  # everything goes back to the parent, which raises it
        conn.send((False, traceback.format_exc()))
    finally:
        conn.close()


class Alone:
    """``make()`` run in a forked child, which keeps the contender it returns and serves calls.

    ``make`` returns ``(contender, built)``: the child keeps the first, the parent reads the
    second as :attr:`built` (what the build measured; ``contender`` may be None, if ``built``
    says why). Use as a context manager, or :meth:`close`.
    """

    def __init__(self, make: Callable[[], tuple[Any, Any]]) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        # With fork, make is inherited, not pickled: it may be a closure over the row's data.
        self._process = context.Process(target=_serve, args=(child, make), daemon=True)
        self._process.start()
        child.close()
        self.built = self._answer()

    def _answer(self) -> Any:
        try:
            ok, value = self._conn.recv()
        except EOFError:
            self._process.join()
            raise AloneError(f"the contender's process died (exit code {self._process.exitcode})") from None
        if not ok:
            raise AloneError(f"in the contender's process:\n{value}")
        return value

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(contender, *args)``, run in the child; ``fn`` a module-level function."""
        self._conn.send((fn, args))
        return self._answer()

    def close(self) -> None:
        """End the child and wait for it (the contender's memory goes with it)."""
        if self._process.is_alive():
            with contextlib.suppress(OSError):  # it ended already (after an error)
                self._conn.send(None)
        self._conn.close()
        self._process.join()

    def __enter__(self) -> Alone:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
