"""Explicit limits on what a latency or commit-log run may ask for, checked before anything starts.

Why limits at all: every load loop here must be bounded in count and in time, and a typo such as
``--rate 3000000`` or ``--size 1G`` should fail at once with a clear message instead of
swamping a shared 2-core machine. The message-size default is NATS's own ``max_payload``
(1 MiB); the other ceilings are far above the study's configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "LimitError", "Limits", "check_load", "check_messages"]

MiB = 1024 * 1024


class LimitError(ValueError):
    """A run asked for more than the limits allow (or for something meaningless, like rate 0)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Ceilings for one run; all are inclusive.

    >>> DEFAULT_LIMITS.max_size
    1048576
    """

    #: Largest message, in bytes: NATS's default max_payload.
    max_size: int = MiB
    #: Largest request rate, per second, over all connections.
    max_rate: int = 100_000
    #: Longest measured duration plus warm-up, in seconds.
    max_duration: float = 3_600.0
    #: Most concurrent connections.
    max_connections: int = 100
    #: Most load-generating processes.
    max_processes: int = 16
    #: Most messages in one commit-log throughput run.
    max_messages: int = 1_000_000
    #: Most bytes in one commit-log throughput run (it all lands on disk and in memory).
    max_total_bytes: int = 2 * 1024 * MiB
    #: Hard ceiling for ``max_size`` itself when a caller raises it.
    size_ceiling: int = 64 * MiB


DEFAULT_LIMITS = Limits()


def check_load(
    *,
    rate: int,
    duration: float,
    warmup: float = 0.0,
    connections: int = 1,
    processes: int = 1,
    size: int = 0,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Raise :class:`LimitError` unless a fixed-rate run fits ``limits``.

    >>> check_load(rate=3000, duration=30, size=256)
    >>> check_load(rate=3000, duration=30, size=2 * MiB)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topicmatch...LimitError: message size 2097152 B is over the limit of 1048576 B (1 MiB, ...)...
    """
    if limits.max_size > limits.size_ceiling:
        raise LimitError(f"the message-size limit can be raised to {limits.size_ceiling} B at most")
    if not 1 <= rate <= limits.max_rate:
        raise LimitError(f"rate must be between 1 and {limits.max_rate:,} requests/s, not {rate:,}")
    if not duration > 0:
        raise LimitError(f"duration must be positive, not {duration}")
    if warmup < 0:
        raise LimitError(f"warm-up must not be negative, not {warmup}")
    if duration + warmup > limits.max_duration:
        raise LimitError(
            f"duration plus warm-up is {duration + warmup:g} s, over the limit of {limits.max_duration:g} s"
        )
    if not 1 <= connections <= limits.max_connections:
        raise LimitError(f"connections must be between 1 and {limits.max_connections}, not {connections}")
    if not 1 <= processes <= min(limits.max_processes, connections):
        raise LimitError(
            f"processes must be between 1 and {min(limits.max_processes, connections)} "
            f"(at most one per connection), not {processes}"
        )
    if rate < connections:
        raise LimitError(f"rate {rate}/s over {connections} connections leaves a connection idle")
    _check_size(size, limits)


def check_messages(*, count: int, size: int, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise :class:`LimitError` unless a throughput run of ``count`` messages of ``size`` fits.

    >>> check_messages(count=100_000, size=1024)
    >>> check_messages(count=100_000, size=MiB)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topicmatch...LimitError: 100,000 messages of 1048576 B is 97.7 GiB, over the limit of 2.0 GiB...
    """
    _check_size(size, limits)
    if not 1 <= count <= limits.max_messages:
        raise LimitError(f"message count must be between 1 and {limits.max_messages:,}, not {count:,}")
    if count * size > limits.max_total_bytes:
        raise LimitError(
            f"{count:,} messages of {size} B is {count * size / 1024 / MiB:.1f} GiB, over the limit of "
            f"{limits.max_total_bytes / 1024 / MiB:.1f} GiB per throughput run"
        )


def _check_size(size: int, limits: Limits) -> None:
    if size < 0:
        raise LimitError(f"message size must not be negative, not {size}")
    if size > limits.max_size:
        raise LimitError(
            f"message size {size} B is over the limit of {limits.max_size} B"
            + (" (1 MiB, NATS's default max_payload)" if limits.max_size == MiB else "")
            + f"; raise it with --max-size (at most {limits.size_ceiling} B)"
        )
