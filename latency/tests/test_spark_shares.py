"""Load from many hosts: the latency harness's shares as Spark tasks.

Two set-ups here: a local session, and a broker on a host of its own, a network namespace made
here with a veth pair, loaded from this one. The third, a standalone cluster of two workers on
127.0.0.1 (the command as a user runs it, its own driver), is in topicmatch's
``tests/spark/test_cluster.py``, which starts one cluster for all that runs on it.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install './latency[spark]'")

from pyspark.sql import SparkSession

from topicmatch.cli import main
from topicmatch.spark import session
from topicmatch_latency import servers
from topicmatch_latency._histograms import decode
from topicmatch_latency._load import LoadSpec
from topicmatch_latency._result import LatencyResult
from topicmatch_latency._spark_shares import run_shares_on_spark
from topicmatch_latency._systems import RoundTripFactory

pytestmark = [pytest.mark.spark, pytest.mark.latency]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local Spark with two task slots, one per share; in a run of topicmatch's tests too,
    the session their Spark tests started (which they stop)."""
    running = SparkSession.getActiveSession()
    local = session("local[2]")
    yield local
    if running is None:
        local.stop()


def test_each_task_runs_its_share_and_the_histograms_are_merged(spark: SparkSession) -> None:
    spec = LoadSpec(rate=400, duration=2.0, warmup=0.5, connections=2, processes=2)
    shares = run_shares_on_spark(spark, RoundTripFactory("matcher"), spec)
    assert len(shares) == 2
    counts = [decode(share.corrected).get_total_count() for share in shares]
    assert counts == [400, 400]  # requests 0, 2, 4... and 1, 3, 5...: half of 2 s at 400/s each
    result = LatencyResult.from_shares(shares, spec, label="spark", system="matcher", config={}, machine={})
    assert result.completed == 800
    assert result.histogram("corrected").get_total_count() == 800  # merged, not averaged
    assert result.histogram("corrected").get_max_value() == max(
        decode(share.corrected).get_max_value() for share in shares
    )


def test_a_share_that_cannot_connect_fails_every_task_at_once(spark: SparkSession) -> None:
    """No task waits at the barrier for a share that failed to set up."""
    spec = LoadSpec(rate=100, duration=1.0, warmup=0.1, connections=2, processes=2, setup_timeout=5)
    closed = servers.free_port()  # nobody listens there
    with pytest.raises(Exception, match=r"another load share could not start|Connect"):
        run_shares_on_spark(spark, RoundTripFactory("nats", port=closed, timeout=2), spec)


@pytest.fixture
def broker_host() -> Iterator[tuple[str, str]]:
    """A network namespace with one end of a veth pair (10.213.7.2), the other end here
    (10.213.7.1): (namespace, its address). Removed after, with its links."""
    name = f"tm{uuid.uuid4().hex[:8]}"
    here, there = f"{name}a", f"{name}b"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    try:
        ip("netns", "add", name)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"cannot create a network namespace (root and iproute2 needed): {error}")
    try:
        ip("link", "add", here, "type", "veth", "peer", "name", there)
        ip("link", "set", there, "netns", name)
        ip("addr", "add", "10.213.7.1/30", "dev", here)
        ip("link", "set", here, "up")
        ip("netns", "exec", name, "ip", "addr", "add", "10.213.7.2/30", "dev", there)
        ip("netns", "exec", name, "ip", "link", "set", there, "up")
        ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield name, "10.213.7.2"
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=30, check=False)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)


def test_load_here_and_the_broker_on_another_host(
    spark: SparkSession, broker_host: tuple[str, str], tmp_path: Path
) -> None:
    """The broker runs in a namespace of its own, listening only on its address there; the
    command's Spark tasks load it from here (``--broker``): every request crosses the veth pair."""
    namespace, address = broker_host
    broker = servers.NatsServer(host=address, netns=namespace)
    broker.start()
    try:
        argv = ["bench", "latency", "--system", "nats", "--broker", f"{address}:{broker.port}"]
        argv += ["--rate", "300", "--duration", "2", "--warmup", "0.5", "--connections", "2"]
        argv += ["--processes", "2", "--spark-master", "local[2]", "--out", str(tmp_path)]
        assert main(argv, stdout=io.StringIO()) == 0
        # Nothing listens on this host's loopback at that port: the requests went to the other host.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((servers.HOST, broker.port), timeout=2).close()
    finally:
        broker.stop()
    (saved,) = tmp_path.glob("nats*.json")
    result = json.loads(saved.read_text())
    assert (result["completed"], result["failed"]) == (600, 0)
    assert result["config"]["broker"] == f"{address}:{broker.port}"
    assert result["config"]["load"] == "Spark tasks on local[2]"
    assert f"--broker {address}:{broker.port}" in result["command"]


def test_a_named_broker_is_for_one_system(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "latency", "--system", "nats,redis", "--broker", "10.0.0.1:4222"]) == 2
    assert "--broker names the broker of one --system" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "latency", "--broker", "nohost"])
    assert "expected HOST:PORT, not 'nohost'" in capsys.readouterr().err
