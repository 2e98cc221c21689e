"""The summary a person reads: numbers and plurals that read right, reasons and ties said."""

from __future__ import annotations

import io
import json
import os
import time
import types
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main
from topicmatch.spark._session import JobProgress
from topicmatch.spark._stats import Counts, tied_after, top_subscribers
from topicmatch.spark._summary import Summary

SUBSCRIPTIONS = {"version": "v1", "source": "subs.tsv", "subscriptions": 3, "subscribers": 3}


def _summary(**figures: object) -> Summary:
    return Summary(mode="batch", dialect="amqp", subscriptions=SUBSCRIPTIONS, **figures)  # type: ignore[arg-type]


def test_one_of_a_thing_is_singular_and_a_slow_small_job_has_a_rate() -> None:
    text = _summary(messages=1, deliveries=1, elapsed_seconds=6.7).text()
    assert text.startswith("routed 1 message -> 1 delivery (1.00 per message) in 6.7 s: 0.15 msg/s, ")
    assert "0 msg/s" not in text


def test_each_quarantine_reason_is_named_with_its_count() -> None:
    text = _summary(
        messages=10,
        invalid=6,
        quarantine_reasons={"invalid_topic": 3, "null_topic": 1, "too_big": 2},
        output={"quarantine": "out/quarantine"},
    ).text()
    assert (
        "  quarantined        6 messages: 3 invalid topics, 1 null topic, 2 too big -> out/quarantine" in text
    )


@pytest.mark.spark
def test_a_stream_names_each_quarantine_reason_of_its_run(spark: SparkSession, tmp_path: Path) -> None:
    """The streaming summary said "quarantined 2 messages" without the reasons batch mode gives.
    A restart counts the reasons of its own run, as it counts its messages (not the quarantine
    an earlier run wrote)."""
    subs, inbox, out = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out"
    subs.write_text("a/+\tx\n", encoding="utf-8")
    inbox.mkdir()
    argv = ["route", "--stream", "--once", "--dialect", "mqtt", "--messages", str(inbox)]
    argv += ["--subscriptions", str(subs), "--out", str(out), "--checkpoint", str(tmp_path / "ckpt")]

    def run(name: str, lines: list[str]) -> tuple[str, dict[str, object]]:
        (tmp_path / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp_path / name, inbox / name)  # whole, never seen half-written
        output = io.StringIO()
        assert main([*argv, "--quiet"], stdout=output) == 0
        return output.getvalue(), json.loads((out / "summary.json").read_text())

    where = f"-> {out / 'quarantine'}"
    first = ['{"offset": 1, "topic": "a/b"}', '{"offset": 2, "topic": "a/+"}', '{"offset": 3, "topic": null}']
    text, summary = run("m00.json", first)
    assert f"  quarantined        2 messages: 1 invalid topic, 1 null topic {where}" in text
    assert summary["quarantine_reasons"] == {"invalid_topic": 1, "null_topic": 1}
    text, summary = run("m01.json", ['{"offset": 4, "topic": "#"}', '{"offset": 5, "topic": "a/c"'])
    assert summary["messages"] == 2
    assert f"  quarantined        2 messages: 1 invalid topic, 1 not valid JSON {where}" in text
    assert summary["quarantine_reasons"] == {"invalid_topic": 1, "not_json": 1}


def test_ties_in_the_top_subscribers_are_said() -> None:
    top = [("a", 9), ("b", 5), ("c", 5)]
    text = _summary(top_subscribers=top, top_tied=7).text()
    assert "  top subscribers    a 9; b, c 5 each; 7 more subscribers with 5 (ties listed by name)" in text
    assert "top subscribers    a 9; b 5\n" in _summary(top_subscribers=top[:2]).text() + "\n"


def test_the_tie_at_the_cut_is_counted() -> None:
    counts = Counts(6)
    counts.add_subscribers(np.arange(6), np.array([9, 5, 5, 5, 5, 1]))
    top = top_subscribers(counts, list("abcdef"), 3)
    assert top == [("a", 9), ("b", 5), ("c", 5)]
    assert tied_after(counts, top) == 2  # d and e have 5 too
    assert tied_after(counts, top_subscribers(counts, list("abcdef"), 6)) == 0


def test_a_run_with_nothing_to_route_has_no_rates() -> None:
    text = _summary(elapsed_seconds=2.2).text()
    assert text.startswith("routed 0 messages -> 0 deliveries in 2.2 s\n")
    assert "subscriptions      3 (3 subscribers)" in text


class _Stage:
    def __init__(self, done: int) -> None:
        self.numCompletedTasks, self.numActiveTasks, self.numTasks = done, 1, 2


class _Tracker:
    """A status tracker whose one stage finishes a task at each poll (then stays at 2 of 2)."""

    def __init__(self) -> None:
        self.polls = 0

    def getActiveStageIds(self) -> list[int]:
        return [0]

    def getStageInfo(self, stage_id: int) -> _Stage:
        self.polls += 1
        return _Stage(min(self.polls - 1, 2))


def test_the_progress_of_a_small_job_moves_as_its_tasks_end() -> None:
    """Off a terminal, a line as each task ends, not only every ``every`` seconds."""
    tracker = _Tracker()
    spark = types.SimpleNamespace(sparkContext=types.SimpleNamespace(statusTracker=lambda: tracker))
    stream = io.StringIO()
    with JobProgress(spark, "routing", lambda: (0, 0), stream, every=60.0):  # type: ignore[arg-type]
        deadline = time.monotonic() + 10
        while tracker.polls < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines[:3]] == [
        "routing: tasks 0/2 done",
        "routing: tasks 1/2 done",
        "routing: tasks 2/2 done",
    ]


def _line(tasks: tuple[int, int, int], routed: tuple[int, int] | Exception) -> str:
    """The progress line of fabricated status: ``tasks`` (done, running, total) and the figures
    the statistics accumulator holds (or the error reading it raises)."""

    def figures() -> tuple[int, int]:
        if isinstance(routed, Exception):
            raise routed
        return routed

    spark = types.SimpleNamespace(sparkContext=types.SimpleNamespace(statusTracker=lambda: None))
    return JobProgress(spark, "routing", figures, io.StringIO()).line(tasks)  # type: ignore[arg-type]


def test_the_progress_line_says_messages_are_counted_as_tasks_end() -> None:
    """16 tasks on 2 cores, none ended: the accumulator has heard from no task, so the line
    said "0 messages -> 0 deliveries so far" while both cores were routing."""
    assert _line((0, 2, 16), (0, 0)) == "tasks 0/16 done, 2 running; messages counted as tasks end"
    assert _line((3, 2, 16), (24_576, 1_000)) == (
        "tasks 3/16 done, 2 running; 24,576 messages -> 1,000 deliveries in the tasks done"
    )
    assert _line((1, 1, 16), (0, 0)) == (
        "tasks 1/16 done, 1 running; 0 messages -> 0 deliveries in the tasks done"
    )
    # Between jobs no stage is active: the figures of the tasks that ended stand alone.
    assert _line((0, 0, 0), (5, 1)) == "5 messages -> 1 delivery in the tasks done"
    assert _line((0, 0, 0), (0, 0)) == "messages counted as tasks end"
    # The accumulator changed while it was read: no invented zeros.
    assert _line((2, 2, 16), RuntimeError("dictionary changed size")) == (
        "tasks 2/16 done, 2 running; messages counted as tasks end"
    )
