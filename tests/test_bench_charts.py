"""The workload matrix's heat maps: a colour scale from the data (1 in the middle colour), every
value written, and every blank cell saying why (a row without any value, once across it)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from topicmatch.bench import charts
from topicmatch.bench.workloads import STEADY, Row, _chart


def _texts(fig: Any) -> list[str]:
    return [text.get_text() for text in fig.axes[0].texts]


def test_the_colour_scale_spans_the_data_and_blank_cells_say_why(tmp_path: Path) -> None:
    values: list[list[float | None]] = [[1.0, 0.1, 2.0], [None, None, None], [1.0, 0.5, None]]
    blanks = {
        (1, 0): "no early life",
        (1, 1): "no early life",
        (1, 2): "no early life",
        (2, 2): "speaks amqp only",
    }
    fig = charts.heatmap(["a", "b", "c"], ["x", "y", "z"], values, "t", blanks)
    image = fig.axes[0].images[0]
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((-1.0, math.log10(2.0)))
    bar = fig.axes[1]
    assert [label.get_text() for label in bar.get_yticklabels()] == ["0.10", "0.20", "0.50", "1.00", "2.00"]
    # 1 is the middle colour of the full map (yellow); 2 a pale green, not the map's darkest.
    yellow = charts._pyplot().get_cmap("RdYlGn")(0.5)
    assert image.cmap(image.norm(0.0)) == pytest.approx(yellow, abs=0.02)
    texts = _texts(fig)
    assert texts.count("no early life") == 1  # the blank row: once, across it
    assert "speaks amqp only" in texts
    assert [t for t in texts if t[0].isdigit()] == ["1.00", "0.10", "2.00", "1.00", "0.50"]  # every value
    fig.savefig(tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG")


def test_a_wide_spread_keeps_each_decade_the_same_colour_step() -> None:
    fig = charts.heatmap(["a"], ["x", "y", "z"], [[1.0, 1e-4, 1.3]], "t")
    image = fig.axes[0].images[0]
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((-4.0, math.log10(1.3)))
    labels = [label.get_text() for label in fig.axes[1].get_yticklabels()]
    assert labels == ["1/10,000", "1/1,000", "1/100", "0.10", "1.00"]


def test_the_matrix_chart_says_why_each_cell_is_blank() -> None:
    def row(name: str, dialect: str, phases: tuple[str, ...], names: tuple[str, ...]) -> Row:
        samples = {phase: {n: [100.0] for n in ("default", *names)} for phase in phases}
        return Row(name, "a shape", dialect, samples=samples)

    study = row("study", "amqp", ("first 10", STEADY), ("trie", "kombu"))
    distinct = row("distinct", "mqtt", ("first 10", STEADY), ("trie", "paho"))
    distinct.notes["inverted_bitmap"] = "not run: its topic space must be known up front"
    study.samples["first 10"]["inverted_bitmap"] = [100.0]
    repeat = row("subs repeat", "amqp", (STEADY,), ("trie", "kombu"))
    repeat.absent["first 10"] = "no early life: subs's builds, looking up again topics they have seen"
    fig = _chart([study, distinct, repeat], "first 10")
    texts = _texts(fig)
    assert "speaks mqtt only" in texts  # paho on the AMQP row
    assert "speaks amqp only" in texts  # kombu on the MQTT row
    assert "not run: its topic\nspace must be known up\nfront" in texts  # wrapped in the cell
    assert texts.count("no early life: subs's builds, looking up again topics they have seen") == 1
    assert "not run" not in texts  # every blank has its own reason
