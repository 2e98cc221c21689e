"""HDR histograms: vectorised loading equals HdrHistogram's own recording, and merging works."""

from __future__ import annotations

import numpy as np
import pytest

from topicmatch_latency import LoadSpec, run_load
from topicmatch_latency._histograms import (
    HIGHEST_NS,
    decode,
    encode,
    merge_encoded,
    new_histogram,
    percentile_distribution,
    record_many,
)

pytestmark = pytest.mark.latency


def _edge_values() -> list[int]:
    values = [0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 10**6, 10**9, HIGHEST_NS]
    values += [2**k + d for k in range(11, 41) for d in (-1, 0, 1)]
    return values


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorised_loading_equals_record_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.concatenate(
        [
            rng.integers(0, 5_000, 2_000),
            rng.lognormal(12, 3, 20_000).astype(np.int64) % HIGHEST_NS,
            _edge_values(),
        ]
    )
    fast, slow = new_histogram(), new_histogram()
    assert record_many(fast, values) == 0
    for value in values:
        assert slow.record_value(int(value))
    assert fast.equals(slow)
    assert fast.get_total_count() == slow.get_total_count() == len(values)
    assert fast.get_max_value() == slow.get_max_value()
    assert fast.get_min_value() == slow.get_min_value()
    for percentile in (50, 90, 99, 99.9, 99.99, 100):
        assert fast.get_value_at_percentile(percentile) == slow.get_value_at_percentile(percentile)


def test_out_of_range_values_are_clipped_and_counted_not_dropped() -> None:
    histogram = new_histogram()
    assert record_many(histogram, [-5, HIGHEST_NS + 1, 10]) == 1
    assert histogram.get_total_count() == 3
    assert histogram.get_min_value() == 0


def test_encoded_merge_equals_recording_everything_in_one() -> None:
    rng = np.random.default_rng(7)
    parts = [rng.integers(1, 10**8, 5_000) for _ in range(3)]
    encoded = []
    for part in parts:
        histogram = new_histogram()
        record_many(histogram, part)
        encoded.append(encode(histogram))
    whole = new_histogram()
    record_many(whole, np.concatenate(parts))
    merged = merge_encoded(encoded)
    assert merged.equals(whole)
    assert percentile_distribution(merged) == percentile_distribution(whole)


def test_empty_histograms_encode_to_nothing_and_merge() -> None:
    assert encode(new_histogram()) == ""
    assert decode("").get_total_count() == 0
    assert merge_encoded(["", ""]).get_total_count() == 0


class Instant:
    """Picklable (module level) so load processes can build it."""

    def setup(self) -> None:
        pass

    def request(self) -> None:
        pass

    def teardown(self) -> None:
        pass


def make_instant(_connection: int) -> Instant:
    return Instant()


def test_histograms_of_several_processes_merge_into_one_result() -> None:
    spec = LoadSpec(rate=2_000, duration=0.5, warmup=0.2, connections=4, processes=2)
    result = run_load(make_instant, spec)
    # Every measured request of both processes is in the merged histograms, once.
    assert result.completed == 1_000
    for view in ("corrected", "uncorrected", "lateness"):
        assert result.histogram(view).get_total_count() == 1_000
