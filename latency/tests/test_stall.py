"""The stall self-test: a requester that freezes once for 100 ms at 1,000 requests/s.

Over 5 s (5,000 requests) the 100 requests due during the freeze wait 100, 99, ... 1 ms, so 1 %
of the requests wait more than about 50 ms and 0.1 % more than about 95 ms: the corrected view
must show p99 ~ 50 ms and p99.9 ~ 95 ms, while the uncorrected view (from the actual send)
sees one slow request and hides the rest: this is the "CTRL+Z test" that catches coordinated
omission. Both requester variants are checked, and so is a freeze of the generator itself.

The shape is checked on a virtual clock (:mod:`.virtual_time`), where the freeze is the only
stall and every latency is a count of steps: a busy machine stalls the generator on the real
clock as long as the freeze itself, and no bound can tell the two apart. On the real clock the
test checks what no load can change: the stall is charged in full, from its length ``F`` as
the requester measured it in the same run (a busy machine lengthens it, and every bound moves
with it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from virtual_time import use_virtual_clock

from topicmatch_latency import LatencyResult, LoadSpec, run_load

pytestmark = pytest.mark.latency

MS = 1_000_000
SPEC = LoadSpec(rate=1_000, duration=5.0, warmup=0.5)
#: The freeze happens 2.5 s into the measured window (request 3,000 counting the warm-up).
FREEZE_AT = 3_000


class Freezing:
    """Blocking requester: instant, except one freeze of ``freeze`` s, whose length as it
    happened (ns) it keeps in ``frozen_ns``. It reads and sleeps on ``clock``."""

    freeze = 0.1
    clock: Any = time

    def __init__(self) -> None:
        self.calls = 0
        self.frozen_ns = 0

    def setup(self) -> None:
        pass

    def request(self) -> None:
        self.calls += 1
        if self.calls == FREEZE_AT:
            began = self.clock.monotonic_ns()
            self.clock.sleep(self.freeze)
            self.frozen_ns = self.clock.monotonic_ns() - began

    def teardown(self) -> None:
        pass


class AsyncFreezing:
    """asyncio requester: the system under test stalls (other tasks keep running)."""

    clock: Any = time

    def __init__(self) -> None:
        self.calls = 0
        self.frozen_ns = 0

    async def setup(self) -> None:
        pass

    async def request(self) -> None:
        self.calls += 1
        if self.calls == FREEZE_AT:
            began = self.clock.monotonic_ns()
            await asyncio.sleep(0.1)
            self.frozen_ns = self.clock.monotonic_ns() - began

    async def teardown(self) -> None:
        pass


class FreezingLoop(AsyncFreezing):
    """A stall of the load generator itself: the whole event loop blocks for 100 ms."""

    async def request(self) -> None:
        self.calls += 1
        if self.calls == FREEZE_AT:
            began = self.clock.monotonic_ns()
            self.clock.sleep(0.1)
            self.frozen_ns = self.clock.monotonic_ns() - began


REQUESTERS = [Freezing, AsyncFreezing, FreezingLoop]


def run_frozen(requester: type, clock: Any = time, spec: LoadSpec = SPEC) -> tuple[LatencyResult, int]:
    """One run of ``spec`` with ``requester`` on ``clock``: the result, and the freeze (ns) as the
    requester measured it."""
    made = []

    def factory(_connection: int) -> Any:
        made.append(requester())
        made[-1].clock = clock
        return made[-1]

    result = run_load(factory, spec, label=requester.__name__)
    (one,) = made
    assert one.calls == spec.total_requests  # the warm-up's too: nothing skipped
    assert one.frozen_ns >= 100 * MS, one.frozen_ns  # a sleep never ends early
    return result, int(one.frozen_ns)


@pytest.mark.parametrize("requester", REQUESTERS)
def test_stall_is_charged_in_the_corrected_view_and_hidden_in_the_uncorrected(
    requester: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, frozen = run_frozen(requester, use_virtual_clock(monkeypatch))
    assert frozen == pytest.approx(100 * MS, abs=MS)
    assert result.completed == 5_000
    assert result.failed == result.unsent == 0
    corrected, uncorrected = result.percentiles("corrected"), result.percentiles("uncorrected")
    summary = (corrected, uncorrected)
    # 50 of 5,000 requests waited more than ~50 ms and 5 more than ~95 ms ...
    assert corrected[99.0] == pytest.approx(50 * MS, abs=MS), summary
    assert corrected[99.9] == pytest.approx(95 * MS, abs=MS), summary
    assert result.max_ns("corrected") == pytest.approx(100 * MS, abs=MS)
    assert (corrected[90.0] or 0) < MS, summary  # ... and the rest of the run did not wait
    # ... while the uncorrected view saw a single slow request.
    assert result.max_ns("uncorrected") == pytest.approx(100 * MS, abs=MS)
    assert (uncorrected[99.9] or 0) < MS, summary
    # p99.99 needs 10,000 samples: not reported, and the notes say why.
    assert corrected[99.99] is None
    assert any("10,000 samples" in note for note in result.notes())


def test_lateness_view_shows_the_catch_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the freeze the generator is late and catches up: nothing is skipped."""
    result, _ = run_frozen(Freezing, use_virtual_clock(monkeypatch))
    lateness = result.percentiles("lateness")
    # The requests due during the freeze were sent late by what was left of it (the frozen one
    # itself was on time: the 51st latest is the 51st request behind it) ...
    assert lateness[99.0] == pytest.approx(49 * MS, abs=MS), lateness
    # ... and then the generator was back on schedule.
    assert (lateness[90.0] or 0) < MS, lateness
    assert result.sustained
    assert result.completed == 5_000


@pytest.mark.parametrize("requester", REQUESTERS)
def test_on_the_real_clock_the_stall_is_charged_in_full(requester: type) -> None:
    """On this machine's clock: whatever else the machine adds, the frozen request waited its
    freeze ``F`` and each request due ``n`` ms after it at least ``F`` - ``n`` ms (it could not start
    before the freeze ended), in the corrected view; only the frozen request itself did, in the
    uncorrected view, and only the requests behind it were sent late."""
    result, frozen = run_frozen(requester)
    assert result.completed == 5_000
    assert result.failed == result.unsent == 0
    corrected = result.percentiles("corrected")
    summary = {"F": frozen, "corrected": corrected, "lateness": result.percentiles("lateness")}
    assert result.max_ns("corrected") >= frozen, summary
    assert (corrected[99.0] or 0) >= frozen - 50 * MS, summary  # the 51st highest of 5,000
    assert (corrected[99.9] or 0) >= frozen - 5 * MS, summary  # the 6th
    assert result.max_ns("uncorrected") >= frozen, summary
    assert (result.percentiles("lateness")[99.0] or 0) >= frozen - 51 * MS, summary
    # Latency from the intended start is never less than from the send, nor than the lateness.
    for view in ("uncorrected", "lateness"):
        other = result.percentiles(view)
        assert all((corrected[p] or 0) >= (other[p] or 0) for p in corrected), (view, summary)
