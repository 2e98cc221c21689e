"""Counts in messages read as a person writes them: "1 message", "1 run", "1 core", never
"1 messages" (topicmatch.support.commandline.counted, used by every message that counts)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from topicmatch.bench import report as report_module
from topicmatch.bench.machine import machine_info
from topicmatch.bench.report import Report
from topicmatch.cli import main


def test_the_demo_counts_one_message_in_the_singular() -> None:
    out = io.StringIO()
    assert main(["demo", "--messages", "1", "--seconds", "0.5"], stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert "up to 1 message or 0.5 s per algorithm" in lines[0]
    algorithms = [line for line in lines[1:] if line.startswith("  ")]
    assert len(algorithms) == 6
    assert all(line.endswith("msg/s over        1 message  ok") for line in algorithms), algorithms
    assert "messages" not in out.getvalue()


def test_a_report_on_one_core_says_one_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    machine = machine_info()
    monkeypatch.setattr(report_module, "machine_info", lambda: {**machine, "cores": 1})
    text = Report("x", tmp_path, "A title", {"repeat": 1}).write().read_text(encoding="utf-8")
    assert ", 1 core, load average" in text


@pytest.mark.slow
def test_one_run_is_one_run(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["bench", "operations", "--quick", "--repeat", "1", "--out", str(tmp_path)], stdout=out) == 0
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Median of the per-run medians over 1 run;" in text


def test_a_route_summary_counts_one_in_the_singular() -> None:
    """The pipeline's summary ("in 1 shards", "1 invalid patterns skipped" before)."""
    pytest.importorskip("pyspark")
    from topicmatch.spark._summary import Summary  # noqa: PLC0415 - only with the spark extra

    subscriptions = {
        "subscriptions": 1,
        "subscribers": 1,
        "version": "v1",
        "source": "subs.tsv",
        "skipped": ["a/#/b"],
        "plan": "shard",
        "joined_literal": 1,
        "matched_in_workers": 1,
        "shards": 1,
        "largest_shard": 1,
        "in_every_shard": 0,
    }
    summary = Summary(mode="batch", dialect="mqtt", subscriptions=subscriptions, messages=1, deliveries=1)
    summary.batches.append(
        {"batch": 0, "version": "v1", "messages": 1, "deliveries": 1, "unmatched": 0, "invalid": 0}
    )
    text = summary.text()
    for one in (
        "1 invalid pattern skipped",
        "1 literal subscription joined",
        "in 1 shard by",
        "1 message -> 1 delivery",
    ):
        assert one in text, text
    assert "1 shards" not in text
    assert "1 invalid patterns" not in text
