"""``topicmatch bench all --quick`` produces a well-formed report for every experiment.

A smoke test, not a benchmark: it checks the shape of what is written (a Markdown report with a
table and its charts, raw results with the machine they ran on), never a speed.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from topicmatch.cli import main
from topicmatch.cli._bench import EXPERIMENTS

pytestmark = pytest.mark.slow


def test_bench_all_quick_writes_every_report(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["bench", "all", "--quick", "--repeat", "1", "--out", str(tmp_path)], stdout=out) == 0
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    for name in EXPERIMENTS:
        directory = tmp_path / name
        report = (directory / "report.md").read_text(encoding="utf-8")
        assert report.startswith("# "), name
        assert report.split("\n")[2].startswith("> **A quick run** (`--quick`): a smoke test"), name
        assert "\n| " in report, f"{name}: no table"
        assert "|---" in report, f"{name}: no table"
        results = json.loads((directory / "results.json").read_text(encoding="utf-8"))
        assert results["experiment"] == name
        assert results["quick"] is True
        assert {"python", "cpu", "cores", "load_average"} <= set(results["machine"])
        assert results["results"], f"{name}: no raw results"
        for chart in results["charts"]:
            png = (directory / chart).read_bytes()
            assert png.startswith(b"\x89PNG"), chart
            assert len(png) > 1000, chart
            assert f"]({chart})" in report
        assert f"{name}: {directory / 'report.md'}" in out.getvalue()
        assert f"]({name}/report.md)" in index, name
    # The workload matrix keeps each round's rates, from which its figures are medians, and lists
    # the cells under its target (or says there are none).
    workloads = (tmp_path / "workloads" / "report.md").read_text(encoding="utf-8")
    assert "\n## Cells under 0.95\n" in workloads
    rows = json.loads((tmp_path / "workloads" / "results.json").read_text(encoding="utf-8"))["results"]
    for row, got in rows.items():
        assert got["samples"]["steady"]["default"], row
        for phase, by_contender in got["samples"].items():
            for contender, rounds in by_contender.items():
                assert len(rounds) == 1, (row, phase, contender)  # --repeat 1: one round each


def test_bench_rejects_a_bad_repeat(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "throughput", "--repeat", "0", "--out", "unused"]) == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err
