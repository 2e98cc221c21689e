"""The ``.hgrm`` percentile-distribution file, byte for byte as HdrHistogram's reference writes it.

Other tools read this format: the HdrHistogram plotter (``plotFiles.html``), HistogramLogAnalyzer
and wrk2-style scripts. It is what ``AbstractHistogram.outputPercentileDistribution`` prints
(Java, the reference implementation)::

           Value     Percentile TotalCount 1/(1-Percentile)

           0.052 0.000000000000          1           1.00
           ...
         100.139 1.000000000000       5000
    #[Mean    =        0.561, StdDeviation   =        4.851]
    #[Max     =      100.139, Total count    =         5000]
    #[Buckets =           32, SubBuckets     =         2048]

Rows use ``%12.{digits}f %2.12f %10d %14.2f`` (the last row, at 100 %, has no fourth column);
the footer uses ``Total count`` with an integer, and the mean and standard deviation are
scaled like the values. The Python port (``hdrh``) writes a different footer (``TotalCount``
printed as a float, an unscaled standard deviation) and steps its percentiles differently, so
this module writes the file itself, from :func:`._histograms.percentile_distribution`.
Values are nanoseconds in the histogram and milliseconds in the file (scaling ratio 10**6), the
unit the plotter expects.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TextIO

from hdrh.histogram import HdrHistogram
from numpy import ctypeslib, flatnonzero

from ._histograms import SIGNIFICANT_DIGITS, percentile_distribution

__all__ = ["MS", "Hgrm", "mean_and_stddev", "parse_hgrm", "write_hgrm"]

#: Scaling ratio from the histogram's nanoseconds to the file's milliseconds.
MS = 1_000_000.0


def mean_and_stddev(histogram: HdrHistogram) -> tuple[float, float]:
    """Mean and standard deviation (ns) as the reference computes them: each counter counts as
    the median of its value range. Only for the footer: latency is never normal.
    """
    total = histogram.get_total_count()
    if total == 0:
        return 0.0, 0.0
    counts = ctypeslib.as_array(histogram.counts)
    medians: list[tuple[float, int]] = []
    for index in flatnonzero(counts):
        lowest = histogram.get_value_from_index(int(index))
        size = histogram.get_highest_equivalent_value(lowest) - lowest + 1
        medians.append((float(lowest + (size >> 1)), int(counts[index])))
    mean = sum(value * count for value, count in medians) / total
    deviation = sum((value - mean) * (value - mean) * count for value, count in medians)
    return mean, math.sqrt(deviation / total)


def write_hgrm(
    histogram: HdrHistogram, out: TextIO, *, scaling: float = MS, ticks_per_half_distance: int = 5
) -> None:
    """Write the percentile distribution of ``histogram`` in the reference ``.hgrm`` format."""
    digits = SIGNIFICANT_DIGITS
    # The reference's printf formats are kept verbatim, so the output matches it byte for byte.
    header = ("Value", "Percentile", "TotalCount", "1/(1-Percentile)")
    out.write("%12s %14s %10s %14s\n\n" % header)  # noqa: UP031
    row_format = f"%12.{digits}f %2.12f %10d %14.2f\n"
    last_format = f"%12.{digits}f %2.12f %10d\n"
    for row in percentile_distribution(histogram, ticks_per_half_distance):
        if row.percentile != 1.0:
            inverse = 1.0 / (1.0 - row.percentile)
            out.write(row_format % (row.value / scaling, row.percentile, row.total_count, inverse))
        else:
            out.write(last_format % (row.value / scaling, row.percentile, row.total_count))
    mean, stddev = mean_and_stddev(histogram)
    out.write(
        f"#[Mean    = %12.{digits}f, StdDeviation   = %12.{digits}f]\n" % (mean / scaling, stddev / scaling)
    )
    out.write(
        f"#[Max     = %12.{digits}f, Total count    = %12d]\n"
        % (histogram.get_max_value() / scaling, histogram.get_total_count())
    )
    buckets = (histogram.bucket_count, histogram.sub_bucket_count)
    out.write("#[Buckets = %12d, SubBuckets     = %12d]\n" % buckets)  # noqa: UP031


@dataclass
class Hgrm:
    """A parsed ``.hgrm`` file: rows of (value, percentile 0-1, total count) and the footer."""

    rows: list[tuple[float, float, int]] = field(default_factory=list)
    mean: float = 0.0
    stddev: float = 0.0
    max: float = 0.0
    total_count: int = 0
    buckets: int = 0
    sub_buckets: int = 0


_ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)\s+(\d+)(?:\s+([0-9.]+|inf|Infinity))?\s*$")
_MEAN = re.compile(r"^#\[Mean    = +([0-9.]+), StdDeviation   = +([0-9.]+)\]$")
_MAX = re.compile(r"^#\[Max     = +([0-9.]+), Total count    = +(\d+)\]$")
_BUCKETS = re.compile(r"^#\[Buckets = +(\d+), SubBuckets     = +(\d+)\]$")


def parse_hgrm(text: str) -> Hgrm:
    """Read a percentile distribution written by any HdrHistogram port (values as written).

    Raises ValueError on a line that is neither header, row nor reference footer.
    """
    result = Hgrm()
    lines = text.splitlines()
    if not lines or lines[0].split() != ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]:
        raise ValueError("not an .hgrm file: the header line is missing")
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        if match := _ROW.match(line):
            result.rows.append((float(match[1]), float(match[2]), int(match[3])))
        elif match := _MEAN.match(line):
            result.mean, result.stddev = float(match[1]), float(match[2])
        elif match := _MAX.match(line):
            result.max, result.total_count = float(match[1]), int(match[2])
        elif match := _BUCKETS.match(line):
            result.buckets, result.sub_buckets = int(match[1]), int(match[2])
        else:
            raise ValueError(f"line {number} is not in the .hgrm format: {line!r}")
    return result
