"""``route`` and ``quarantine`` on DataFrames of a Spark Connect session equal local mode.

A real Connect server from the installed PySpark distribution (:mod:`.connect_server`) on
127.0.0.1, stopped by PID; the client in a process of its own (:mod:`.connect_client`), which
routes the generated data of every dialect through ``SparkSession.builder.remote(...)``. The
same calls on this process's local session must give the same rows, columns and types.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main

from .connect_client import outcome
from .connect_server import ConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.connect]


def test_route_through_spark_connect_equals_local_mode(
    spark: SparkSession, generated: dict[str, Path], tmp_path: Path
) -> None:
    pytest.importorskip(
        "grpc", reason="the connect extra is not installed: pip install 'topicmatch[connect]'"
    )
    out = tmp_path / "connect.json"
    cases = [f"{dialect}={path}" for dialect, path in generated.items()]
    client = [sys.executable, str(Path(__file__).with_name("connect_client.py"))]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE")}
    with ConnectServer(tmp_path / "server") as server:
        done = subprocess.run(
            [*client, server.url, str(out), *cases],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    remote = json.loads(out.read_text(encoding="utf-8"))
    assert remote["session"].startswith("pyspark.sql.connect")  # it was Connect, not a local fallback
    for dialect, path in generated.items():
        messages = spark.read.parquet(str(path / "messages"))
        local = outcome(messages, spark.read.parquet(str(path / "subscriptions.parquet")), dialect)
        local = json.loads(json.dumps(local))  # as the client's went: lists, not tuples
        assert len(local["deliveries"]) > len(local["nested"]) > 1000, dialect
        assert local["quarantine"], dialect
        assert remote[dialect] == local, dialect


def test_the_command_line_points_connect_users_to_route(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``topicmatch route --master sc://...``: one line saying what works instead, no JVM."""
    (tmp_path / "subs.tsv").write_text("a.*\tx\n", encoding="utf-8")
    (tmp_path / "messages").mkdir()
    argv = ["route", "--messages", str(tmp_path / "messages"), "--subscriptions", str(tmp_path / "subs.tsv")]
    code = main([*argv, "--out", str(tmp_path / "out"), "--master", "sc://127.0.0.1:1"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "topicmatch: cannot start Spark: the command line needs a classic Spark session; through Spark "
        "Connect, call topicmatch.spark.route() on the session's DataFrames (README, 'Spark Connect')"
    )
