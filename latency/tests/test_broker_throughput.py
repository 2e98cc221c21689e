"""Broker throughput (`topicmatch bench brokers`): every system on real brokers, short runs."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from topicmatch.cli import main
from topicmatch_latency import _broker_throughput
from topicmatch_latency._broker_throughput import ThroughputRun

pytestmark = pytest.mark.latency

#: Systems that deliver every message to a subscriber that keeps up (no high-water mark drops).
LOSSLESS = {"nats", "redis", "rabbitmq", "mqtt", "activemq"}


def test_every_system_delivers_and_is_reported(tmp_path: Path) -> None:
    stdout = io.StringIO()
    argv = ["bench", "brokers", "--messages", "3000", "--size", "1KB", "--idle", "3", "--out", str(tmp_path)]
    assert main(argv, stdout=stdout) == 0
    saved = json.loads((tmp_path / "results.json").read_text())
    runs = {run["system"]: run for run in saved["runs"]}
    assert set(runs) == {"nats", "redis", "rabbitmq", "mqtt", "activemq", "zeromq", "nng"}
    for system, run in runs.items():
        assert run["sent"] == 3_000, system
        assert 0 < run["received"] <= run["sent"], system
        assert run["lost"] == run["sent"] - run["received"]
        assert run["sender_rate"] > 0, system
        assert run["receiver_rate"] > 0, system
        assert not run["errors"], (system, run["errors"])
        if system in LOSSLESS:
            assert run["lost"] == 0, system
        if system in ("nats", "redis", "mqtt", "activemq"):  # the publisher alone, against its no-op sink
            assert run["alone_rate"] > 0, system
    report = (tmp_path / "report.md").read_text()
    assert "| nats |" in report
    assert "| redis-benchmark |" in report
    assert "| activemq producer |" in report
    assert "| - |" not in report.split("Native tools")[1]  # both tools gave a figure
    assert "--messages 3000" in report
    assert (tmp_path / "brokers.png").stat().st_size > 5_000


def test_the_notes_name_the_client_as_the_limit_and_the_losses() -> None:
    run = ThroughputRun("zeromq", 1_000, 1024, sent=1_000, received=900, sender_cpu=0.97, receiver_cpu=0.5)
    assert run.notes() == [
        "the Python publisher used 97% of a core: its client was the limit, not the system",
        "100 of 1,000 messages were not delivered (10.0%)",
    ]
    assert ThroughputRun("nats", 10, 1, sent=10, received=10, sender_cpu=0.5, receiver_cpu=0.5).notes() == []


def test_limits_and_names_are_checked_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "brokers", "--messages", "2000000"]) == 2
    assert "message count must be between 1 and 1,000,000" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "brokers", "--systems", "kafka"])
    assert "choose from nats, redis, rabbitmq, mqtt, activemq, zeromq, nng" in capsys.readouterr().err


def test_a_subscribers_cpu_is_over_its_messages_not_its_idle_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscriber that stops on --idle (messages were lost) waited for nothing at the end:
    its CPU use is measured over its messages' span. Counting the wait made a saturated
    subscriber (100 % of a core) read 24 %."""
    clock = {"wall": 0, "cpu": 0.0}
    monkeypatch.setattr(time, "monotonic_ns", lambda: clock["wall"])
    monkeypatch.setattr(time, "process_time", lambda: clock["cpu"])
    side = _broker_throughput.Side()
    counter = _broker_throughput._Counter(side, expected=10)
    for second in range(3):  # three messages, one a second, busy all along
        clock["wall"], clock["cpu"] = second * 10**9, float(second)
        counter.tick()
    clock["wall"], clock["cpu"] = 7 * 10**9, 2.0  # 5 s idle, no CPU
    counter.finish()
    assert side.count == 3
    assert side.cpu == pytest.approx(1.0)
