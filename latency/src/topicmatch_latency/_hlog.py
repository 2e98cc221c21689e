"""HdrHistogram's interval log (``.hlog``): one histogram per interval of a run, so a stall shows
*when* it happened, readable by HdrHistogram's own tools (``HistogramLogProcessor``,
``HistogramLogAnalyzer``, ``hdrh.log.HistogramLogReader``).

Format 1.2, as HdrHistogram's Java ``HistogramLogWriter`` writes it: comment lines starting with
``#``, the ``StartTime`` and ``BaseTime`` (seconds since the epoch), a legend, then one line per
interval: its start (seconds after ``BaseTime``), its length (s), its maximum (ms: the values are
nanoseconds, divided by 1,000,000 as Java's default ``maxValueUnitRatio`` does) and the interval
histogram in its compressed, base64 form. The header is written here because hdrh's
``output_start_time`` fails (it calls a ``datetime`` method that does not exist).

Our intervals are intervals of *intended start*: the requests due in ``[t, t + interval)``, with
their corrected latency, so a freeze shows in the interval it began, with the whole wait of every
request it delayed (HdrHistogram's recorders log by completion instead, which puts it in the
interval the freeze ended).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from hdrh.log import HistogramLogWriter

from ._histograms import decode

__all__ = ["write_hlog"]


def write_hlog(
    out: TextIO, intervals: Sequence[str], *, interval: float, start_epoch_ns: int, comment: str = ""
) -> None:
    """Write the encoded ``intervals`` (ns values, each ``interval`` s long, the first one
    starting at ``start_epoch_ns``) as an interval log to ``out``."""
    start = start_epoch_ns / 1e9
    stamp = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    if comment:
        out.write(f"#[{' '.join(comment.split())}]\n")  # one line, whatever the comment holds
    writer = HistogramLogWriter(out)
    writer.output_log_format_version()
    out.write(f"#[StartTime: {start:.3f} (seconds since epoch), {stamp}]\n")
    out.write(f"#[BaseTime: {start:.3f} (seconds since epoch)]\n")
    writer.output_legend()
    for number, encoded in enumerate(intervals):
        histogram = decode(encoded)
        begin = number * interval
        # hdrh treats a start of 0 as "take it from the histogram": pass a tiny positive one.
        writer.output_interval_histogram(
            histogram, begin or 1e-9, begin + interval, max_value_unit_ratio=1_000_000.0
        )
