"""One rule for the parts of the default engine that may not pay: count, judge, back off.

The default's result cache admits topics and its union memo keeps unions; each costs something
on every use and saves only on traffic that repeats. Each has a :class:`Governor`, which says
whether it is *on*. Its user counts *trials* (the cache: lookups that missed it; the memo: the
unions it is asked for) by decrementing ``left``, and calls :meth:`expire` when ``left`` reaches
zero. While on, that ends a *window*: the governor asks the part's own test (``pays``, from the
part's own counts) and stays on, or turns *off* for ``backoff`` trials. At the end of that wait it
turns on for another window. The backoff doubles at every window that fails, up to
``max_backoff``, and returns to its first value at one that passes.

Everything here is a count: the same sequence of calls takes the same path on any machine, busy
or quiet, and a test drives a governor to any state by making calls. The users count inline
(``g.left -= 1`` and a test of it: no call per trial, which on the lookup path of a topic seen
once would cost more than the trial). Readers share a governor without a lock: a count lost to a
race moves a window's end by a trial, never makes a result wrong, since the parts it governs are
caches whose entries are right whether they are used or not.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Governor"]


class Governor:
    """Whether a part is on, from counts of its trials: a window, a test, a capped backoff.

    >>> results = iter([False, False])
    >>> g = Governor(window=2, first_backoff=3, max_backoff=4, pays=lambda: next(results))
    >>> def trial() -> None:
    ...     g.left -= 1
    ...     if g.left <= 0:
    ...         g.expire()
    >>> trial(); trial(); g.on       # the window of two trials ended and did not pay
    False
    >>> for _ in range(3): trial()   # the wait of 3
    >>> g.on, g.backoff
    (True, 4)
    >>> trial(); trial(); g.on, g.left   # failed again: off for 4 (the cap)
    (False, 4)

    O(1) per call but for ``pays``.
    """

    __slots__ = ("backoff", "first_backoff", "left", "max_backoff", "on", "pays", "window")

    def __init__(self, window: int, first_backoff: int, max_backoff: int, pays: Callable[[], bool]) -> None:
        if not (window > 0 and 0 < first_backoff <= max_backoff):
            raise ValueError("a governor needs 0 < window and 0 < first_backoff <= max_backoff")
        self.window = window
        self.first_backoff = first_backoff
        self.max_backoff = max_backoff
        self.pays = pays  # the part's test of the window just ended (it resets its own counts)
        self.on = True
        self.left = window  # trials left in this window (on) or in the wait (off)
        self.backoff = first_backoff  # the next wait, should a window fail

    def expire(self) -> None:
        """``left`` ran out: judge the window that ended (on), or end the wait (off)."""
        if not self.on:
            self.on = True
            self.left = self.window
        elif self.pays():
            self.backoff = self.first_backoff
            self.left = self.window
        else:
            self.on = False
            self.left = self.backoff
            self.backoff = min(2 * self.backoff, self.max_backoff)
