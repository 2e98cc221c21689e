"""What a commit-log run is asked to do: systems, sizes, rate, duration and message counts.

A :class:`Plan` is made from the command's options (:meth:`Plan.make`, which fills in the
defaults and the cap on 1 MB messages), checked against the limits before anything starts
(:meth:`Plan.check`), run by :func:`._commitlog.run_plan` and quoted by the report
(:func:`._logreport.write_report`) with the command behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._limits import MiB, check_load, check_messages

__all__ = ["DEFAULT_SIZES", "Plan"]

DEFAULT_SIZES = (256, 1_024, 5_120, MiB)
#: Largest throughput run of 1 MB messages (1 GiB): 100,000 would be 98 GiB on a 24 GiB machine.
MB_MESSAGES, MB_MESSAGES_QUICK = 1_000, 100


@dataclass
class Plan:
    """Which systems, sizes, rate, duration and message counts; and the command behind them."""

    systems: list[str]
    sizes: list[int]
    rate: int
    duration: float
    warmup: float
    messages: int
    mb_messages: int
    latency: bool
    throughput: bool
    command: str

    @classmethod
    def make(
        cls,
        *,
        systems: Sequence[str],
        sizes: Sequence[int] | None,
        rate: int,
        duration: float | None,
        messages: int | None,
        quick: bool,
        latency: bool = True,
        throughput: bool = True,
        command: str = "",
    ) -> Plan:
        return cls(
            systems=list(systems),
            sizes=list(sizes or DEFAULT_SIZES),
            rate=rate,
            duration=duration if duration is not None else (5.0 if quick else 30.0),
            warmup=1.0,
            messages=messages if messages is not None else (10_000 if quick else 100_000),
            # The 1 MB cap applies to the default count; an explicit count is checked as asked.
            mb_messages=messages if messages is not None else (MB_MESSAGES_QUICK if quick else MB_MESSAGES),
            latency=latency,
            throughput=throughput,
            command=command,
        )

    def count_for(self, size: int) -> int:
        """Messages in the throughput run of ``size`` (1 MB and larger capped: :data:`MB_MESSAGES`)."""
        return min(self.messages, self.mb_messages) if size >= MiB else self.messages

    def check(self) -> None:
        """Raise :class:`._limits.LimitError` before anything starts."""
        for size in self.sizes:
            check_load(rate=self.rate, duration=self.duration, warmup=self.warmup, size=size)
            check_messages(count=self.count_for(size), size=size)
