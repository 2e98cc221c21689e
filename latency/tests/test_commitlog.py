"""Quick commit-log runs against the real logs: latency and throughput end to end, durability named."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from topicmatch_latency import servers
from topicmatch_latency._cli import LOG_SYSTEMS
from topicmatch_latency._commitlog import run_plan
from topicmatch_latency._logplan import Plan
from topicmatch_latency._logs import LOGS, JetStreamLog, RabbitStreamLog

# Also `brokers`: `make test-fast` (-m "not brokers") runs everything that needs no broker.
pytestmark = [pytest.mark.latency, pytest.mark.brokers]


def test_every_log_delivers_every_message_and_says_how_durable_it_is(tmp_path: Path) -> None:
    plan = Plan.make(
        systems=list(LOGS),
        sizes=[256, 1024 * 1024],
        rate=50,
        duration=0.6,
        messages=500,
        quick=True,
        command="topicmatch bench commitlog (test)",
    )
    plan.mb_messages = 5
    plan.warmup = 0.2
    report = run_plan(plan, tmp_path).read_text()
    for system, info in LOGS.items():
        assert info.durability in report, system
        for size in ("256B", "1MB"):
            result = json.loads((tmp_path / f"{system}-{size}.json").read_text())
            assert result["completed"] == 30, (system, size)
            assert result["failed"] == 0, (system, size)
            assert result["config"]["durability"] == info.durability
            assert (tmp_path / f"{system}-{size}.corrected.hgrm").exists()
        assert (tmp_path / f"latency-{system}.png").exists()
    throughput = json.loads((tmp_path / "throughput.json").read_text())
    assert len(throughput) == 2 * len(LOGS)
    for row in throughput:
        assert row["received"] == row["messages"], row
        assert row["publisher_rate"] > 0
        assert row["subscriber_rate"] > 0
    assert "fsync" in report
    assert (tmp_path / "throughput.png").exists()


def test_one_megabyte_throughput_is_capped_to_what_fits_the_machine() -> None:
    plan = Plan.make(systems=["jetstream"], sizes=None, rate=50, duration=None, messages=None, quick=False)
    assert plan.duration == 30.0
    assert plan.count_for(256) == 100_000
    assert plan.count_for(1024 * 1024) == 1_000
    plan.check()


def test_the_command_line_names_every_log() -> None:
    """The command line keeps its own list (it imports no client library to print its help)."""
    assert tuple(LOGS) == LOG_SYSTEMS


def test_the_replicated_logs_have_three_members_on_three_servers() -> None:
    """``jetstream-r3`` and ``rabbitmq-stream-r3`` are what they say: a stream of three replicas,
    one on each server of a cluster of three (asked of the servers themselves)."""
    nats: Any = pytest.importorskip("nats")

    with servers.NatsServer(jetstream=True, nodes=3) as cluster:

        async def jetstream() -> tuple[str | None, list[str]]:
            log = JetStreamLog(cluster.host, cluster.port, 30, replicas=3)
            await log.open(lambda _data: None)
            try:
                connection = await nats.connect(f"nats://{cluster.host}:{cluster.port}")
                info = await connection.jetstream().stream_info(log.stream)
                await connection.close()
            finally:
                await log.close()
            return info.cluster.leader, [peer.name for peer in info.cluster.replicas or []]

        leader, followers = asyncio.run(jetstream())
        assert leader is not None
        assert len({leader, *followers}) == 3

    with servers.RabbitMQServer(streams=True, nodes=3) as rabbit:

        async def stream() -> list[str]:
            log = RabbitStreamLog(rabbit.host, rabbit.stream_port, 30, replicas=3)
            await log.open(lambda _data: None)
            try:
                env = {
                    **os.environ,
                    "HOME": str(rabbit.tmpdir / "home"),
                    "ERL_EPMD_PORT": str(rabbit.epmd_port),
                    "ERL_EPMD_ADDRESS": servers.HOST,
                }
                command = [str(Path(servers.RABBITMQ_SERVER).parent / "rabbitmqctl"), "-n", rabbit.nodename]
                command += ["list_queues", "name", "members", "--formatter", "json"]
                done = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=60, check=True
                )
            finally:
                await log.close()
            (queue,) = [q for q in json.loads(done.stdout) if q["name"] == log.stream]
            members: list[str] = queue["members"]
            return members

        members = asyncio.run(stream())
        assert len(set(members)) == 3
