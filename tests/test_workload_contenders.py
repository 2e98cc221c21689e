"""``bench workloads`` given its contenders (what benchmarks/aa_workloads.py's A/A run asks):
every row runs those and only those, the A/A copy built as the default is."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from topicmatch.bench import workloads
from topicmatch.bench.contenders import AGAIN, build
from topicmatch.bench.report import Progress
from topicmatch.support.commandline import UsageError


def test_the_matrix_runs_the_contenders_it_is_given(tmp_path: Path) -> None:
    contenders = ("default", AGAIN, "trie")
    report = workloads.run(
        tmp_path, 1, True, Progress("workloads", io.StringIO()), {"study"}, contenders=contenders
    )
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert set(results) == {"study"}
    for row in results.values():
        for by_name in row["samples"].values():
            assert set(by_name) <= set(contenders)
        assert set(row["samples"][workloads.STEADY]) == set(contenders)
    text = report.read_text(encoding="utf-8")
    assert f"| {AGAIN} |" in text
    assert "| default, no cache |" not in text


@pytest.mark.parametrize("contenders", [("default", AGAIN), ("default", "trie", "defualt")])
def test_contenders_without_the_trie_or_unknown_are_refused_before_anything_runs(
    tmp_path: Path, contenders: tuple[str, ...]
) -> None:
    with pytest.raises(UsageError, match="the trie among them"):
        workloads.run(tmp_path / "out", 1, True, Progress("workloads", io.StringIO()), {"study"}, contenders)
    assert not (tmp_path / "out").exists()


def test_the_copy_is_the_default_built_again() -> None:
    pairs = [("a.*", 1), ("a.b", 2)]
    copy, default = (build(name, "amqp", pairs, lambda: (), 10.0) for name in (AGAIN, "default"))
    assert type(copy) is type(default)
    assert copy.lookup("a.b") == default.lookup("a.b") == {1, 2}
