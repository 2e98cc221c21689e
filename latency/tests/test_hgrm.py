"""The ``.hgrm`` output against HdrHistogram's reference format (Java's outputPercentileDistribution)."""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest

from topicmatch_latency._hgrm import MS, mean_and_stddev, parse_hgrm, write_hgrm
from topicmatch_latency._histograms import new_histogram, percentile_distribution, record_many

pytestmark = pytest.mark.latency

HEADER = "       Value     Percentile TotalCount 1/(1-Percentile)"
ROW = re.compile(r"^ *\d+\.\d{3} [01]\.\d{12} +\d+ +\d+\.\d{2}$")
LAST_ROW = re.compile(r"^ *\d+\.\d{3} 1\.000000000000 +\d+$")


def _histogram(values: list[int] | np.ndarray) -> object:
    histogram = new_histogram()
    record_many(histogram, values)
    return histogram


def _text(histogram: object) -> str:
    buffer = io.StringIO()
    write_hgrm(histogram, buffer)
    return buffer.getvalue()


def java_levels(count: int, ticks: int = 5) -> list[float]:
    """The first ``count`` percentile levels of Java's PercentileIterator."""
    levels, level = [], 0.0
    for _ in range(count):
        levels.append(level)
        half = int(math.log(100.0 / (100.0 - level)) / math.log(2))
        level += 100.0 / (ticks * int(math.pow(2, half + 1)))
    return levels


def test_layout_header_rows_and_reference_footer() -> None:
    rng = np.random.default_rng(3)
    histogram = _histogram(rng.integers(50_000, 5_000_000, 10_000))
    lines = _text(histogram).splitlines()
    assert lines[0] == HEADER
    assert lines[1] == ""
    rows = lines[2:-3]
    assert all(ROW.match(line) for line in rows[:-1]), [line for line in rows if not ROW.match(line)][:3]
    assert LAST_ROW.match(rows[-1])
    # Each field has the reference's width: %12.3f, %2.12f (14 wide), %10d, %14.2f.
    for line in rows[:-1]:
        assert len(line) == 12 + 1 + 14 + 1 + 10 + 1 + 14
        assert line[12] == line[27] == line[38] == " "
        assert line[:12].strip()
        assert line[28:38].strip().isdigit()
    assert len(rows[-1]) == 12 + 1 + 14 + 1 + 10
    mean, stddev = mean_and_stddev(histogram)
    assert lines[-3] == f"#[Mean    = {mean / MS:12.3f}, StdDeviation   = {stddev / MS:12.3f}]"
    max_ms = histogram.get_max_value() / MS  # type: ignore[attr-defined]
    assert lines[-2] == f"#[Max     = {max_ms:12.3f}, Total count    = {10_000:12d}]"
    assert lines[-1] == "#[Buckets =           32, SubBuckets     =         2048]"


def test_percentile_steps_follow_the_reference_iterator() -> None:
    # Values 1..2,000 ns: each has its own counter (unit resolution below 2,048), so every
    # reporting level is reached by its own row.
    histogram = _histogram(np.arange(1, 2_001))
    rows = percentile_distribution(histogram)
    levels = java_levels(len(rows) - 1)
    assert [row.percentile for row in rows[:-1]] == [level / 100 for level in levels]
    assert [round(r.percentile, 4) for r in rows[:8]] == [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6]
    assert rows[-1].percentile == 1.0
    assert rows[-1].total_count == 2_000
    # Each row is the first counter whose cumulative share reaches its level.
    for row in rows[:-1]:
        assert row.total_count == max(1, math.ceil(row.percentile * 2_000 - 1e-9))
        assert row.value == row.total_count


def test_repeated_values_repeat_rows_like_the_reference() -> None:
    """One counter crossing several levels is reported once per level (Java does the same)."""
    rows = percentile_distribution(_histogram([1_000] * 9 + [2_000]))
    assert [r.value for r in rows[:6]] == [1_000] * 6
    assert rows[-1] == rows[-1].__class__(2_000, 1.0, 10)


def test_mean_and_stddev_use_median_equivalent_values() -> None:
    mean, stddev = mean_and_stddev(_histogram([1_000, 3_000]))
    assert mean == pytest.approx(2_000, abs=1)
    assert stddev == pytest.approx(1_000, abs=1)


def test_parse_round_trip_and_reference_sample() -> None:
    histogram = _histogram([5_000_000] * 10 + [100_000_000])
    parsed = parse_hgrm(_text(histogram))
    assert parsed.total_count == 11
    assert parsed.rows[-1][1] == 1.0
    assert parsed.max == pytest.approx(histogram.get_max_value() / MS, abs=0.0005)  # type: ignore[attr-defined]
    assert (parsed.buckets, parsed.sub_buckets) == (32, 2048)
    # A distribution as the Java reference prints it.
    sample = (
        f"{HEADER}\n\n"
        "       0.016 0.000000000000          1           1.00\n"
        "       0.180 0.500000000000       5010           2.00\n"
        "       2.367 1.000000000000      10000\n"
        "#[Mean    =        0.232, StdDeviation   =        0.204]\n"
        "#[Max     =        2.367, Total count    =        10000]\n"
        "#[Buckets =           20, SubBuckets     =         2048]\n"
    )
    reference = parse_hgrm(sample)
    assert reference.rows == [(0.016, 0.0, 1), (0.18, 0.5, 5010), (2.367, 1.0, 10000)]
    assert (reference.mean, reference.stddev, reference.total_count) == (0.232, 0.204, 10000)


def test_python_port_footer_is_rejected() -> None:
    """hdrh's own footer ("TotalCount" as a float) is not the reference's: we must not emit it."""
    footer = "#[Max     =        1.000, TotalCount     =        1.000]"
    text = f"{HEADER}\n\n       1.000 1.000000000000          1\n{footer}\n"
    with pytest.raises(ValueError, match="line 4"):
        parse_hgrm(text)
