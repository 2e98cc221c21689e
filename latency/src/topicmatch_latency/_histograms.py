"""HDR histograms of nanosecond latencies: vectorised loading, encoded merging, percentiles.

The hot path records raw ``int`` timestamps only (an ``array('q')`` append costs about 30 ns);
they are turned into latencies and loaded here, after the run. ``hdrh.HdrHistogram.record_value``
costs about 2 µs a value in pure Python, i.e. over a second for the 600,000 values of a
20,000/s run of 30 s, so :func:`record_many` computes the bucket index of every value with
NumPy (the same arithmetic as HdrHistogram's ``countsArrayIndex``), counts them with
``bincount`` and adds the counts straight into the histogram's counts array: about 20 ns a
value. ``latency/tests/test_histograms.py`` checks it against ``record_value`` value by
value.

Histograms travel between processes in HdrHistogram's standard encoded form (compressed V2,
base64), which other HdrHistogram tools decode too, and are merged with :func:`merge_encoded`.

Range: 1 ns to 1 hour at 3 significant digits (every value within 0.1 %), 33,792 counters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

__all__ = [
    "HIGHEST_NS",
    "DistributionRow",
    "decode",
    "encode",
    "merge_encoded",
    "new_histogram",
    "percentile_distribution",
    "record_many",
    "value_at",
]

LOWEST_NS = 1
HIGHEST_NS = 3_600 * 1_000_000_000
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    """An empty histogram for nanosecond values from 1 ns to 1 hour, 3 significant digits."""
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)


def record_many(histogram: HdrHistogram, values: np.ndarray | Sequence[int]) -> int:
    """Add every value (ns) to ``histogram``; return how many were clipped to the range.

    Negative values count as 0 and values over 1 hour as 1 hour (and are counted as clipped),
    so nothing is silently dropped. Runtime: O(n) in NumPy plus O(counters).

    >>> h = new_histogram()
    >>> record_many(h, [1_000, 2_000, 3_000])
    0
    >>> h.get_total_count(), h.get_value_at_percentile(50)
    (3, 2000)
    """
    array = np.asarray(values, dtype=np.int64)
    if array.size == 0:
        return 0
    clipped = int(np.count_nonzero(array > HIGHEST_NS))
    array = np.clip(array, 0, HIGHEST_NS)
    sub_bucket_mask = np.int64(histogram.sub_bucket_mask)
    unit = histogram.unit_magnitude
    half_magnitude = histogram.sub_bucket_half_count_magnitude
    # bit_length(v | mask): exact through float64 because every value is below 2**53.
    _, bit_length = np.frexp((array | sub_bucket_mask).astype(np.float64))
    bucket = bit_length.astype(np.int64) - unit - (half_magnitude + 1)
    sub_bucket = array >> (bucket + unit)
    index = ((bucket + 1) << half_magnitude) + sub_bucket - histogram.sub_bucket_half_count
    counts = np.bincount(index, minlength=histogram.counts_len).astype(np.uint64)
    if counts.size > histogram.counts_len:  # pragma: no cover - ruled out by the clip above
        raise ValueError("value out of the histogram's range")
    target = np.ctypeslib.as_array(histogram.counts)
    target += counts
    histogram.total_count += int(array.size)
    histogram.min_value = min(histogram.min_value, int(array.min()))
    histogram.max_value = max(histogram.max_value, int(array.max()))
    return clipped


def encode(histogram: HdrHistogram) -> str:
    """The standard compressed, base64 encoding (readable by every HdrHistogram port)."""
    if histogram.get_total_count() == 0:
        return ""
    encoded: bytes = histogram.encode()
    return encoded.decode("ascii")


def decode(encoded: str) -> HdrHistogram:
    """Inverse of :func:`encode` (``""`` is the empty histogram)."""
    if not encoded:
        return new_histogram()
    histogram: HdrHistogram = HdrHistogram.decode(encoded.encode("ascii"))
    return histogram


def merge_encoded(encoded: Iterable[str]) -> HdrHistogram:
    """One histogram holding every count of the encoded histograms (from several processes).

    >>> a, b = new_histogram(), new_histogram()
    >>> _ = record_many(a, [10, 20]); _ = record_many(b, [30])
    >>> merge_encoded([encode(a), encode(b)]).get_total_count()
    3
    """
    merged = new_histogram()
    for item in encoded:
        if item:
            merged.add(decode(item))
    return merged


def value_at(histogram: HdrHistogram, percentile: float) -> int:
    """The value (ns) at ``percentile`` (0-100), HdrHistogram's definition; 0 when empty."""
    if histogram.get_total_count() == 0:
        return 0
    return int(histogram.get_value_at_percentile(percentile))


@dataclass(frozen=True, slots=True)
class DistributionRow:
    """One line of a percentile distribution: value (ns), percentile (0-1), count up to it."""

    value: int
    percentile: float
    total_count: int


def _recorded(histogram: HdrHistogram) -> Iterator[tuple[int, int]]:
    """(highest equivalent value, count) of every non-empty counter, in value order."""
    counts = np.ctypeslib.as_array(histogram.counts)
    for index in np.flatnonzero(counts):
        value = histogram.get_value_from_index(int(index))
        yield int(histogram.get_highest_equivalent_value(value)), int(counts[index])


def percentile_distribution(
    histogram: HdrHistogram, ticks_per_half_distance: int = 5
) -> list[DistributionRow]:
    """The rows of HdrHistogram's ``outputPercentileDistribution``, computed as the reference does.

    Follows the Java ``PercentileIterator``: the step between reported percentiles is
    ``100 / (ticks * 2**(floor(log2(100 / (100 - level))) + 1))``, so there are ``ticks`` rows in
    each half of the remaining distance to 100 %; a counter is reported once per level it
    crosses (so one value can repeat); and a last row at exactly 100 % closes the table.
    Runtime: O(counters + rows).
    """
    total = histogram.get_total_count()
    rows: list[DistributionRow] = []
    if total == 0:
        return rows
    level = 0.0
    running = 0
    recorded = list(_recorded(histogram))
    for position, (value, count) in enumerate(recorded):
        running += count
        last = position == len(recorded) - 1
        while 100.0 * running / total >= level:
            rows.append(DistributionRow(value, level / 100.0, running))
            half_distances = int(math.log(100.0 / (100.0 - level)) / math.log(2))
            level += 100.0 / (ticks_per_half_distance * int(math.pow(2, half_distances + 1)))
            if last:
                break
        if last:
            rows.append(DistributionRow(value, 1.0, running))
    return rows
