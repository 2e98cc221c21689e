"""``bench sweep``: its shapes are a pure function of the seed and cover the space of parameters,
their data are what the parameters say, a quick run writes a well-formed report, results and
chart, and a bad option is one line of error. No time is asserted: counts only."""

from __future__ import annotations

import collections
import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from topicmatch import Matcher
from topicmatch.bench.contenders import AGAIN
from topicmatch.bench.sweep import Params, drawn, made
from topicmatch.cli import main

DRAWS = 200


def test_the_same_seed_draws_the_same_shapes_and_another_seed_others() -> None:
    first = [drawn(11, i) for i in range(DRAWS)]
    assert first == [drawn(11, i) for i in range(DRAWS)]
    assert len(set(first)) == DRAWS
    assert sum(a != b for a, b in zip(first, [drawn(12, i) for i in range(DRAWS)], strict=True)) == DRAWS
    assert [drawn(11, i) for i in (150, 3)] == [first[150], first[3]]  # whatever was drawn before


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_draws_cover_every_dialect_and_both_ends_of_every_range(seed: int) -> None:
    shapes = [drawn(seed, i) for i in range(DRAWS)]
    dialects = collections.Counter(s.dialect for s in shapes)
    assert set(dialects) == {"amqp", "mqtt", "nats"}
    assert min(dialects.values()) >= 40  # a third each: 67 expected

    def count(test: Callable[[Params], bool]) -> int:
        return sum(1 for s in shapes if test(s))

    for s in shapes:  # every value in its range
        assert 1_000 <= s.subscriptions <= 1_000_000
        assert 0 <= s.one <= 0.6
        assert 0 <= s.many <= 0.3
        assert 1 <= s.fanout <= 1_000
        assert 2 <= s.depth <= 8
        assert 10 <= s.vocabulary <= 10_000
        assert 0 <= s.repeats <= 0.95
        assert 0 <= s.unmatched <= 0.9
        assert s.writes == 0 or 1e-4 <= s.writes <= 0.1
    # Both ends of each range, each expected 10 to 60 times in 200 draws.
    assert count(lambda s: s.subscriptions < 2_000) >= 5
    assert count(lambda s: s.subscriptions > 500_000) >= 5
    assert count(lambda s: s.one == 0) >= 20
    assert count(lambda s: s.one > 0.5) >= 5
    assert count(lambda s: s.many == 0) >= 20
    assert count(lambda s: s.many > 0.25) >= 5
    assert count(lambda s: s.fanout <= 2) >= 5
    assert count(lambda s: s.fanout >= 500) >= 5
    assert count(lambda s: s.depth == 2) >= 10
    assert count(lambda s: s.depth == 8) >= 10
    assert count(lambda s: s.vocabulary < 20) >= 5
    assert count(lambda s: s.vocabulary > 5_000) >= 5
    assert count(lambda s: s.repeats < 0.05) >= 2
    assert count(lambda s: s.repeats > 0.9) >= 2
    assert count(lambda s: s.unmatched == 0) >= 20
    assert count(lambda s: s.unmatched > 0.8) >= 5
    assert count(lambda s: s.every == 0) >= 40
    assert count(lambda s: 0 < s.every <= 20) >= 3
    assert count(lambda s: s.every >= 5_000) >= 3


@pytest.mark.parametrize("index", range(6))
def test_a_shapes_data_are_what_its_parameters_say(index: int) -> None:
    params = replace(drawn(5, index), subscriptions=2_000)
    shape = made(params, "s", 5, 6_000, 100)
    assert shape == made(params, "s", 5, 6_000, 100)  # from the seed and the name alone
    assert (shape.dialect, len(shape.pairs), len(shape.topics)) == (params.dialect, 2_000, 6_000)
    assert len({pattern for pattern, _ in shape.pairs}) <= params.patterns
    separator = "/" if params.dialect == "mqtt" else "."
    assert all(len(topic.split(separator)) <= params.depth for topic in shape.topics)
    matcher = Matcher(dialect=params.dialect)
    matcher.subscribe_many(shape.pairs)
    for topic in set(shape.topics[:500]):  # a "u" first word is no pattern's: nobody's topic
        assert bool(matcher.lookup(topic)) == (not topic.startswith("u")), topic
    unmatched = sum(topic.startswith("u") for topic in shape.topics) / len(shape.topics)
    assert abs(unmatched - params.unmatched) < 0.05
    repeated = 1 - len(set(shape.topics)) / len(shape.topics)
    assert repeated >= params.repeats - 0.05  # more where the table has few topics to make
    assert shape.once
    assert shape.every == params.every
    if params.every:
        assert len(shape.writes) >= 100
        assert [adding for adding, _, _ in shape.writes[:4]] == [False, True, False, True]
    else:
        assert shape.writes == []


def test_a_shape_is_one_line() -> None:
    line = Params("nats", 1_234, 0.2, 0.1, 3, 4, 50, 0.9, 0.0, 0.0).line()
    assert "\n" not in line
    assert line.startswith("nats, 1,234 subscriptions (411 patterns x 3), 20 % with *, 10 % with >")
    assert line.endswith("90 % repeats, 0 % unmatched, no writes")


#: A seed whose first three shapes take each dialect, one of them with writes (checked below).
SEED = 14


def test_a_quick_run_writes_a_report_results_and_a_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = [drawn(SEED, i) for i in range(3)]
    assert {s.dialect for s in shapes} == {"amqp", "mqtt", "nats"}
    assert any(s.every for s in shapes)
    assert not all(s.every for s in shapes)
    out = io.StringIO()
    argv = ["bench", "sweep", "--quick", "--shapes", "3", "--seed", str(SEED), "--out", str(tmp_path)]
    assert main(argv, stdout=out) == 0
    assert out.getvalue() == f"sweep: {tmp_path / 'report.md'}\n"
    assert f"seed {SEED}, 3 shapes" in capsys.readouterr().err.splitlines()[0]
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# The sweep")
    assert report.split("\n")[2].startswith("> **A quick run** (`--quick`)")
    assert f"Seed **{SEED}**: `topicmatch bench sweep --seed {SEED} --shapes 3 --quick`" in report
    for heading in ("## Summary", "## Shapes where half or more of the lookups repeat", "## Every shape"):
        assert f"\n{heading}\n" in report
    tables = [block for block in report.split("\n\n") if block.startswith("| ")]
    assert len(tables) >= 3
    for table in tables:  # every line of a table has the header's cells (no stray "|")
        assert len({line.count("|") for line in table.strip().splitlines()}) == 1, table
    for index, params in enumerate(replace(s, subscriptions=min(s.subscriptions, 5_000)) for s in shapes):
        assert f"| s{index:02d} | {params.line()} |" in report
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert (results["experiment"], results["quick"], results["params"]["seed"]) == ("sweep", True, SEED)
    assert list(results["results"]) == ["s00", "s01", "s02"]
    for got in results["results"].values():
        assert set(got["samples"]) == {"first 1,000", "first 6,000", "steady"}
        for by_contender in got["samples"].values():
            assert set(by_contender) == {"default", "trie", AGAIN}
            assert all(len(rounds) == 1 for rounds in by_contender.values())  # --quick: one round
        assert 0 <= got["repeated"] <= 1
    assert results["charts"] == ["sweep.png"]
    png = (tmp_path / "sweep.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert len(png) > 10_000
    assert "](sweep.png)" in report


@pytest.mark.parametrize(
    ("option", "error"),
    [
        (["--bogus"], "topicmatch: error: unrecognized arguments: --bogus"),
        (["--shapes", "x"], "topicmatch bench sweep: error: argument --shapes: invalid int value: 'x'"),
        (
            ["--seed", "y"],
            "topicmatch bench sweep: error: argument --seed: invalid int value: 'y'",
        ),
    ],
)
def test_an_unknown_or_malformed_option_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], error: str
) -> None:
    """argparse's: the command's usage, then one line saying what is wrong; nothing runs."""
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "sweep", "--quick", *option, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == error
    assert err.startswith("usage: topicmatch")
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("count", ["0", "-3"])
def test_too_few_shapes_is_one_line_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str
) -> None:
    assert main(["bench", "sweep", "--quick", "--shapes", count, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"topicmatch: --shapes must be at least 1, not {count}\n"
    assert not (tmp_path / "out").exists()
