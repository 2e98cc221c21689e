"""One local Spark for the whole test run, and the data the Spark tests share.

The session is created once (one JVM per run): UI off, two cores, two shuffle partitions, small
Arrow batches (so that several batches per task exercise the worker's cross-batch cache), and
everything bound to 127.0.0.1. The command line, called in-process by the tests, reuses it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install 'topicmatch[spark]'")

from pyspark.sql import SparkSession

from topicmatch.spark._generate import generate

#: Rows per Arrow batch in the tests: small, so every task sees many batches.
ARROW_BATCH = 700


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("topicmatch-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per dialect: 6,000 generated messages (0.5 % invalid) and 400 subscriptions."""
    out = {}
    for dialect in ("amqp", "mqtt", "nats"):
        path = tmp_path_factory.mktemp(f"gen-{dialect}")
        generate(path, 6_000, 400, dialect=dialect, seed=11, invalid_fraction=0.005, rows_per_file=2_000)
        out[dialect] = path
    return out
