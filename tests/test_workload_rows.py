"""The workload matrix's arithmetic on rounds made by hand: medians, ratios round by round, and
the list of cells under the target with their rounds."""

from __future__ import annotations

import pytest

from topicmatch.bench.workloads import STEADY, Row, _best, _under


def _row(samples: dict[str, dict[str, list[float]]]) -> Row:
    return Row("shape", "a shape", "mqtt", samples=samples)


def test_rates_and_ratios_are_medians_of_the_rounds() -> None:
    row = _row({STEADY: {"default": [90.0, 100.0, 300.0], "trie": [100.0, 100.0, 100.0]}})
    assert row.rates == {STEADY: {"default": 100.0, "trie": 100.0}}
    # Ratios are taken round by round (0.9, 1.0, 3.0), then their median.
    assert row.round_ratios(STEADY, "trie") == [0.9, 1.0, 3.0]
    assert row.ratio(STEADY, "trie") == 1.0
    assert row.paired[STEADY]["trie"] == 1.0
    assert row.ratio(STEADY, "cstrie") is None
    assert row.ratio("first 10", "trie") is None


def test_a_round_without_lookups_has_no_ratio() -> None:
    # Churn: a contender whose round went all on writes has a rate of 0 there.
    row = _row({STEADY: {"default": [10.0, 10.0, 10.0], "naive": [0.0, 5.0, 20.0]}})
    assert row.round_ratios(STEADY, "naive") == [2.0, 0.5]
    assert row.ratio(STEADY, "naive") == pytest.approx(1.25)


def test_under_lists_each_cell_below_the_target_with_its_rounds() -> None:
    row = _row(
        {
            "first 10": {
                "default": [90.0, 96.0, 93.0],
                "trie": [100.0, 100.0, 100.0],
                "naive": [10.0, 10.0, 10.0],
                "default, no cache": [90.0, 90.0, 90.0],
            },
            STEADY: {
                "default": [96.0, 94.0, 99.0],
                "trie": [100.0, 100.0, 100.0],
                "default, no cache": [100.0, 100.0, 120.0],
            },
        }
    )
    assert _best(row, "first 10") == "trie"  # the one the default fares worst against
    headers, table = _under([row], ["first 10", STEADY])
    assert headers[-1] == "rounds at or above"
    assert table == [
        ["shape", "first 10", "trie", "0.93", "0.90, 0.93, 0.96", "1 of 3"],
        ["shape", STEADY, "default, no cache", "0.94", "0.82, 0.94, 0.96", "1 of 3"],
    ]
    # Not listed: the steady cell against the trie (0.96) and the first against no cache (1.03).
