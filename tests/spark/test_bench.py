"""``topicmatch bench pipeline --quick``: a smoke test (the real figures are in docs/performance.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main

pytestmark = pytest.mark.spark


def test_quick_pipeline_benchmark(spark: SparkSession, tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["bench", "pipeline", "--quick", "--out", str(tmp_path)], stdout=out) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["case"] for r in results["results"]] == ["5k x 100", "20k x 1k"]
    for result in results["results"]:
        assert result["same_deliveries"] is True
        assert result["nested_same_deliveries"] is True
        assert result["nested_median_s"] > 0
        assert result["deliveries"] > 0
        assert result["route_msg_per_s"] > 0
        assert result["naive_msg_per_s"] > 0
    report = (tmp_path / "report.md").read_text()
    assert "| 20k x 1k |" in report
    assert results["machine"]["cores"]


def test_quick_scale_benchmark(spark: SparkSession, tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["bench", "pipeline", "--scale", "--quick", "--out", str(tmp_path)], stdout=out) == 0
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    assert [(r["plan"], r["chosen"]) for r in results] == [
        ("auto", "matcher"),
        ("split", "split"),
        ("shard", "shard"),
    ]
    for result in results:
        assert result["deliveries"] == result["expected"] == 40_000  # two subscribers per message
        assert result["worker_peak_mib"] > 0
        assert result["jvm_peak_mib"] > 0
    assert results[1]["joined_literal"] == 20_000
    # 21,001 wildcard pairs over 1,000 tenants: two shards, one alarm pattern in both
    assert (results[2]["shards"], results[2]["joined_literal"]) == (2, 0)
    assert 10_000 < results[2]["largest_shard"] < 11_000
    report = (tmp_path / "report.md").read_text()
    assert "| 20k x 20k | split (split) |" in report
    assert (
        f"| tenants 20k x 20k | shard (shard) | 21,001 | 0 | 2 ({results[2]['largest_shard']:,}) |" in report
    )
