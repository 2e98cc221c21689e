"""What a run measured, with everything needed to judge it: latency views, rate, machine.

A :class:`LatencyResult` holds three encoded HDR histograms (corrected, uncorrected and the
generator's lateness, see :mod:`._load`), the counts, the rate achieved and the generator's CPU
use, the configuration and :func:`topicmatch.bench.machine.machine_info`. It saves as JSON
(histograms in their standard encoded form) and as ``.hgrm`` files, and reports itself as a row
of the summary table. A commit log's throughput run is a :class:`ThroughputResult` (messages
and seconds at each side). :func:`format_ms` and :func:`size_name` write times and sizes as
every report does.

Honesty rules applied here, not left to the reader:

* a percentile needs at least ``1 / (1 - p)`` samples (p99.99 needs 10,000): with fewer, the
  table prints ``-`` for it and the notes say how many it would need;
* a run that did not sustain its rate says so, and says whether the load generator was the
  bottleneck (it used >= 90 % of a core) or the system under test was;
* failures and requests never sent are counted and named.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from ._hgrm import MS, write_hgrm
from ._histograms import decode, encode, merge_encoded
from ._hlog import write_hlog
from ._limits import MiB
from ._load import LoadSpec, ShareResult

__all__ = [
    "PERCENTILES",
    "VIEWS",
    "LatencyResult",
    "ThroughputResult",
    "format_ms",
    "samples_needed",
    "size_name",
    "summary_table",
]

#: The percentiles of the summary table.
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
#: The three distributions of a run, in the order they are reported.
VIEWS = ("corrected", "uncorrected", "lateness")
#: The generator counts as CPU-bound when one of its processes used this much of a core.
CPU_BOUND = 0.9
#: The rate counts as sustained when at least this fraction of it was achieved.
SUSTAINED = 0.95


def samples_needed(percentile: float) -> int:
    """Samples needed before ``percentile`` means something: ``1 / (1 - p)``.

    >>> samples_needed(99.9), samples_needed(99.9999)
    (1000, 1000000)
    """
    return round(1.0 / (1.0 - percentile / 100.0))


def format_ms(value_ns: float) -> str:
    """Nanoseconds as milliseconds with microsecond resolution.

    >>> format_ms(1_234_567), format_ms(52_000)
    ('1.235', '0.052')
    """
    return f"{value_ns / MS:,.3f}"


def size_name(size: int) -> str:
    """256B, 1KB, 5KB, 1MB (KB = 1,024 B).

    >>> size_name(5120), size_name(1048576), size_name(300)
    ('5KB', '1MB', '300B')
    """
    if size >= MiB and size % MiB == 0:
        return f"{size // MiB}MB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024}KB"
    return f"{size}B"


@dataclass
class LatencyResult:
    """One run: its distributions, counts, rate and context."""

    label: str
    system: str
    config: dict[str, Any]
    corrected: str = ""
    uncorrected: str = ""
    lateness: str = ""
    completed: int = 0
    failed: int = 0
    unsent: int = 0
    clipped: int = 0
    rate: float = 0.0
    achieved_rate: float = 0.0
    #: Highest share of a core used by one load process during the schedule.
    generator_cpu: float = 0.0
    #: Share of the whole machine's CPU time that was busy during the schedule (any process).
    machine_busy: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    command: str = ""
    #: The corrected view per interval of intended start, encoded (see :mod:`._hlog`).
    intervals: list[str] = field(default_factory=list)
    #: Their length in seconds, and the wall-clock start of the first (ns since the epoch).
    interval: float = 1.0
    start_epoch_ns: int = 0

    @property
    def full_throttle(self) -> bool:
        """A ``--rate max`` run: no schedule, each request sent as soon as the last returned."""
        return not self.rate

    @classmethod
    def from_shares(
        cls,
        shares: Sequence[ShareResult],
        spec: LoadSpec,
        *,
        label: str,
        system: str,
        config: dict[str, Any],
        machine: dict[str, Any],
        command: str = "",
    ) -> LatencyResult:
        """Merge the per-process results (encoded histograms) of one run."""
        result = cls(label=label, system=system, config=config, machine=machine, command=command)
        for view in VIEWS:
            setattr(result, view, encode(merge_encoded(getattr(share, view) for share in shares)))
        result.completed = sum(s.completed for s in shares)
        result.failed = sum(s.failed for s in shares)
        result.unsent = sum(s.unsent for s in shares)
        result.clipped = sum(s.clipped for s in shares)
        result.rate = float(spec.rate or 0)  # 0: full throttle
        result.interval = spec.interval
        longest = max((len(s.intervals) for s in shares), default=0)
        result.intervals = [
            encode(merge_encoded(s.intervals[i] for s in shares if i < len(s.intervals)))
            for i in range(longest)
        ]
        result.start_epoch_ns = min((s.measure_start_epoch_ns for s in shares), default=0)
        start = min(s.measure_start_ns for s in shares)
        end = max(s.last_done_ns for s in shares)
        result.achieved_rate = result.completed / ((end - start) / 1e9) if end > start else 0.0
        result.generator_cpu = max(
            (s.cpu_seconds / s.wall_seconds for s in shares if s.wall_seconds), default=0.0
        )
        result.machine_busy = max((s.machine_busy for s in shares), default=0.0)
        result.errors = sorted({e for s in shares for e in s.errors})
        return result

    def histogram(self, view: str = "corrected") -> HdrHistogram:
        """The decoded histogram of ``view`` (one of :data:`VIEWS`)."""
        if view not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
        encoded: str = getattr(self, view)
        return decode(encoded)

    @property
    def count(self) -> int:
        """Samples in the corrected view (completed, failed and overdue unsent requests)."""
        return int(self.histogram().get_total_count())

    @property
    def sustained(self) -> bool:
        return self.achieved_rate >= SUSTAINED * self.rate and not self.unsent and not self.failed

    def percentiles(self, view: str = "corrected") -> dict[float, int | None]:
        """Value (ns) at each of :data:`PERCENTILES`; ``None`` where there are too few samples."""
        histogram = self.histogram(view)
        count = histogram.get_total_count()
        if count == 0:
            return dict.fromkeys(PERCENTILES)
        values = histogram.get_percentile_to_value_dict(list(PERCENTILES))
        return {p: (int(values[p]) if count >= samples_needed(p) else None) for p in PERCENTILES}

    def max_ns(self, view: str = "corrected") -> int:
        return int(self.histogram(view).get_max_value())

    def notes(self) -> list[str]:
        """Sentences a reader must see next to the numbers."""
        notes = []
        if self.full_throttle:
            notes.append(
                "full throttle: each connection sent its next request as soon as the last one "
                "returned, with no schedule, so these latencies are service times at saturation "
                f"and {self.achieved_rate:,.0f}/s is the most this generator and system reached together"
            )
        if not self.sustained and self.rate:
            if self.generator_cpu >= CPU_BOUND:
                who = (
                    f"the load generator used {self.generator_cpu:.0%} of a core (CPU-bound), so this "
                    "machine could not generate the rate: the corrected latencies include the "
                    "generator's own queueing"
                )
            elif self.machine_busy >= CPU_BOUND:
                who = (
                    f"the machine's cores were {self.machine_busy:.0%} busy (load average "
                    f"{_load(self.machine)}): generator and system under test competed for CPU, so this "
                    "machine could not generate the rate"
                )
            else:
                who = (
                    f"the load generator used {self.generator_cpu:.0%} of a core and the machine was "
                    f"{self.machine_busy:.0%} busy, so the system under test did not keep up"
                )
            notes.append(
                f"rate NOT sustained: {self.achieved_rate:,.0f}/s achieved of {self.rate:,.0f}/s "
                f"requested; {who}"
            )
        if self.failed:
            notes.append(
                f"{self.failed:,} requests failed and are recorded at the moment they gave up "
                f"({'; '.join(self.errors)[:200]})"
            )
        if self.unsent:
            notes.append(f"{self.unsent:,} requests were never sent before the time bound")
        if self.clipped:
            notes.append(f"{self.clipped:,} latencies over 1 hour were recorded as 1 hour")
        count = self.count
        short = [p for p in PERCENTILES if count < samples_needed(p)]
        if count and short:
            notes.append(
                f"{count:,} samples: p{_p(short[0])} and beyond need at least "
                f"{samples_needed(short[0]):,} samples and are not reported"
            )
        return notes

    def write_hgrm(self, path: Path, view: str = "corrected") -> Path:
        """Write ``view`` as a reference-format ``.hgrm`` file (milliseconds)."""
        buffer = io.StringIO()
        write_hgrm(self.histogram(view), buffer)
        path.write_text(buffer.getvalue())
        return path

    def write_hlog(self, path: Path) -> Path:
        """Write the corrected view's interval histograms as an HdrHistogram interval log."""
        with path.open("w", encoding="ascii") as out:
            write_hlog(
                out,
                self.intervals,
                interval=self.interval,
                start_epoch_ns=self.start_epoch_ns,
                comment=f"Logged by topicmatch: {self.command or self.label}; corrected latency in ns "
                f"by interval of intended start",
            )
        return path

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> LatencyResult:
        return cls(**json.loads(text))


@dataclass
class ThroughputResult:
    """A commit log's throughput run: messages/s at the publisher (all acknowledged) and the subscriber."""

    system: str
    size: int
    messages: int
    publisher_seconds: float
    subscriber_seconds: float
    received: int
    durability: str
    machine: dict[str, object] = field(default_factory=dict)

    @property
    def publisher_rate(self) -> float:
        return self.messages / self.publisher_seconds if self.publisher_seconds else 0.0

    @property
    def subscriber_rate(self) -> float:
        return self.received / self.subscriber_seconds if self.subscriber_seconds else 0.0


def _load(machine: dict[str, Any]) -> str:
    load = machine.get("load_average") or ["?"]
    return str(load[0])


def _p(percentile: float) -> str:
    return f"{percentile:g}"


def summary_table(results: Sequence[LatencyResult], views: Sequence[str] = VIEWS) -> str:
    """A Markdown table: one row per run and view, values in ms, ``-`` where samples are too few."""
    head = ["run", "view", *(f"p{_p(p)}" for p in PERCENTILES), "max", "count", "achieved rate"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for result in results:
        for view in views:
            values = result.percentiles(view)
            cells = [format_ms(v) if v is not None else "-" for v in values.values()]
            rate = f"{result.achieved_rate:,.0f}/s of {result.rate:,.0f}/s" if result.rate else ""
            if result.full_throttle:
                rate = f"{result.achieved_rate:,.0f}/s (full throttle)"
            if result.rate and not result.sustained:
                rate += " (NOT sustained)"
            lines.append(
                "| "
                + " | ".join(
                    [
                        result.label,
                        view,
                        *cells,
                        format_ms(result.max_ns(view)),
                        f"{result.histogram(view).get_total_count():,}",
                        rate if view == views[0] else "",
                    ]
                )
                + " |"
            )
    return "\n".join(lines)
