"""The workload matrix's arithmetic on rounds made by hand: medians, ratios round by round, and
the list of cells under the target with their rounds; the order its contenders run in; its rows'
names; a row whose contenders write among their lookups."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest

from topicmatch import Matcher
from topicmatch.bench import shapes
from topicmatch.bench.contenders import AGAIN
from topicmatch.bench.report import Progress
from topicmatch.bench.workloads import (
    FULL,
    QUICK,
    STEADY,
    Row,
    _best,
    _Held,
    _order,
    _rates_of,
    _under,
    _write_to,
    lookup_row,
    phases_of,
    rows_of,
)
from topicmatch.cli import main
from topicmatch.cli._bench import WORKLOAD_ROWS


def test_each_row_is_named_as_its_data_and_as_help_says() -> None:
    # ``--rows`` takes these names; the report and results.json name rows after their data.
    assert tuple(rows_of(FULL, 5)) == WORKLOAD_ROWS
    for name, spec in rows_of(QUICK, 1).items():
        assert spec.make().name == name


def test_an_unknown_row_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["bench", "workloads", "--rows", "zipf,zipff", "--out", str(tmp_path / "out")]
    assert main(args, stdout=io.StringIO()) == 2
    assert capsys.readouterr().err.strip() == (
        "topicmatch: no such row: zipff (the rows: " + ", ".join(WORKLOAD_ROWS) + ")"
    )
    assert not (tmp_path / "out").exists()


def _row(samples: dict[str, dict[str, list[float]]]) -> Row:
    return Row("shape", "a shape", "mqtt", samples=samples)


def test_each_contender_runs_first_in_turn_after_others_each_time() -> None:
    # A rotation put each first in turn but kept each one's predecessor: the predecessor set the
    # default's ratio to the trie by 5-8 % (docs/performance.md). The order of a turn puts each
    # first in turn, and who comes just before whom changes; the same turn, the same order.
    names = ["default", "default, no cache", "naive", "optimized_bitmap", "trie", "cstrie", "paho"]
    orders = [_order(names, k) for k in range(5 * len(names))]
    assert all(sorted(order) == sorted(names) for order in orders)
    assert [order[0] for order in orders[: len(names)]] == names
    assert orders == [_order(names, k) for k in range(5 * len(names))]
    before: dict[str, set[str]] = {name: set() for name in names}
    for order in orders:
        for earlier, later in itertools.pairwise(order):
            before[later].add(earlier)
    assert all(len(them) >= 4 for them in before.values()), before
    assert _order([], 3) == []


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


def _writing_shape(every: int) -> shapes.Shape:
    """20 AMQP patterns a.<k>, topics over them, and writes that move each to b.<k> and back, a
    thousand times over."""
    pairs = [(f"a.{k}", k) for k in range(20)]
    moves = [(f"{a}.{k}", f"{b}.{k}", k) for a, b in (("a", "b"), ("b", "a")) for k in range(20)]
    writes = [op for old, new, k in moves * 1_000 for op in ((False, old, k), (True, new, k))]
    topics = [f"{word}.{k % 20}" for k in range(2_000) for word in ("a", "b")]
    return shapes.Shape("writing", "amqp", pairs, topics, once=True, writes=writes, every=every)


def test_a_write_comes_after_every_every_lookups_and_goes_on_where_it_stopped() -> None:
    held = _Held(Matcher(dialect="amqp"), _writing_shape(every=3))
    _rates_of(held, "topics", 0, 10, (10,), 10.0)
    assert (held.written, held.since) == (3, 1)  # writes after lookups 3, 6, 9
    _rates_of(held, "topics", 10, 15, (5,), 10.0)
    assert (held.written, held.since) == (5, 0)  # and after 12 and 15
    assert held.contender.lookup("a.1") == set()  # a.0 and a.1 moved
    assert held.contender.lookup("b.1") == {1}
    assert held.contender.lookup("a.2") == set()  # its unsubscribe done, not yet its subscribe
    assert held.contender.lookup("b.2") == set()
    _write_to(held, 8)
    assert held.written == 8
    assert held.contender.lookup("a.3") == set()
    assert held.contender.lookup("b.3") == {3}


def test_contenders_that_write_among_lookups_are_checked_on_the_same_table() -> None:
    """A row whose contenders write among their lookups runs every phase, and its answers are
    checked with every contender brought to the same write (:func:`_write_to`, tested above):
    a time budget may stop each at another."""
    (row,) = lookup_row(
        _writing_shape(every=7), "", QUICK, 1, Progress("t", io.StringIO()), False, ("default", "trie", AGAIN)
    )
    assert set(row.samples) == set(phases_of(QUICK))
    assert row.notes == {}  # no contender disagreed with the trie (an algorithm would raise)
