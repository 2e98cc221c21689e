"""A sequence lock: writers serialise on a lock and mark the version odd while they work.

Readers never take the lock. They read the version, compute optimistically, and keep the result
only if the version was even and unchanged; otherwise a write overlapped and they retry. The
bitmap indexes use it because one of their updates touches many rows, which no single store can
publish. A reader may read a torn state mid-write (a row already updated, another not yet); that
result is always discarded, and lookups are written so that a torn read cannot raise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["SeqLock"]

T = TypeVar("T")


class SeqLock:
    __slots__ = ("_lock", "version")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 0

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._lock:
            self.version += 1
            try:
                yield
            finally:
                self.version += 1

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Exclude writers without marking a write (for consistent copies)."""
        with self._lock:
            yield

    def read(self, compute: Callable[[], T]) -> T:
        """Run ``compute`` until it ran entirely between two writes; return its result."""
        while True:
            version = self.version
            if not version & 1:
                result = compute()
                if self.version == version:
                    return result
            # A writer is mid-update: give it the GIL rather than spin.
            time.sleep(0)
