"""What runs on a real standalone cluster (a master, two workers on 127.0.0.1): ``topicmatch
route``, which must give what local mode gives, and the latency harness's load shares.

Runs alone with ``pytest -m cluster``. Each command runs as a separate process (its own driver),
exactly as a user would start it: ``topicmatch route --master spark://127.0.0.1:PORT``. The tests
share one cluster (starting one takes about 13 s); each checks the executors of its own
applications only (:meth:`Cluster.apps`).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import topicmatch.cli.submit
from topicmatch.cli import main

from .helpers import pairs_of
from .standalone import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

_FIGURES = ("messages", "deliveries", "unmatched", "invalid", "top_subscribers")


def _env() -> dict[str, str]:
    """The environment of a command started here (read when it starts: fixtures may set some)."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("cluster"), workers=2) as started:
        yield started


def test_route_on_a_standalone_cluster_equals_local_mode(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    assert (
        main(
            [
                "generate",
                "--messages",
                "8000",
                "--subscriptions",
                "500",
                "--out",
                str(data),
                "--invalid-fraction",
                "0.005",
            ],
            stdout=io.StringIO(),
        )
        == 0
    )
    common = [
        "--messages",
        str(data / "messages"),
        "--subscriptions",
        str(data / "subscriptions.parquet"),
        "--quiet",
    ]
    assert main(["route", *common, "--out", str(tmp_path / "local")], stdout=io.StringIO()) == 0

    before = set(cluster.apps())
    command = [sys.executable, "-m", "topicmatch", "route", *common, "--out", str(tmp_path / "remote")]
    command += ["--master", cluster.url, "--conf", "spark.executor.memory=512m"]
    done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "routed 8,000 messages" in done.stdout
    (app,) = set(cluster.apps()) - before
    assert len(cluster.apps()[app]) == 2, "both workers ran executors"
    # The other documented way: spark-submit, which then decides the master.
    submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.url]
    submit += ["--conf", "spark.executor.memory=512m", topicmatch.cli.submit.__file__, "route", *common]
    done = subprocess.run(
        [*submit, "--out", str(tmp_path / "submitted")],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
    submitted = json.loads((tmp_path / "submitted" / "summary.json").read_text())
    assert {k: remote[k] for k in _FIGURES} == {k: local[k] for k in _FIGURES}
    assert {k: submitted[k] for k in _FIGURES} == {k: local[k] for k in _FIGURES}

    def rows(path: Path) -> list[tuple[object, ...]]:
        return sorted(tuple(row) for row in spark.read.parquet(str(path)).collect())

    assert rows(tmp_path / "remote" / "quarantine") == rows(tmp_path / "local" / "quarantine")
    got = sorted(pairs_of(spark.read.parquet(str(tmp_path / "remote" / "deliveries"))))
    assert got == sorted(pairs_of(spark.read.parquet(str(tmp_path / "local" / "deliveries"))))
    assert len(got) == remote["deliveries"] > 8_000


@pytest.mark.latency
def test_the_latency_shares_run_on_a_standalone_cluster(cluster: Cluster, tmp_path: Path) -> None:
    before = set(cluster.apps())
    command = [sys.executable, "-m", "topicmatch", "bench", "latency", "--system", "nats"]
    command += ["--rate", "400", "--duration", "3", "--warmup", "1", "--connections", "2"]
    command += ["--processes", "2", "--spark-master", cluster.url, "--out", str(tmp_path / "out")]
    done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (app,) = set(cluster.apps()) - before
    assert len(cluster.apps()[app]) == 2, "both workers ran a share"
    (saved,) = (tmp_path / "out").glob("nats*.json")
    result = json.loads(saved.read_text())
    assert result["completed"] == 1_200  # 3 s at 400/s, the warm-up left out
    assert result["failed"] == 0
    assert result["config"]["load"] == f"Spark tasks on {cluster.url}"
    assert f"--spark-master {cluster.url}" in result["command"]
