"""The Spark Connect side of ``test_connect.py``, run in a process of its own.

A process holds either a classic Spark session or a Connect one (PySpark builds its Columns for
one kind per process), and the test process already has the classic one. Usage:
``python connect_client.py sc://127.0.0.1:PORT OUT.json DIALECT=DATA_DIR ...``: for each dialect,
the generated messages and subscriptions are read through the Connect session and routed in
both layouts and quarantined; what came back is written to OUT.json by :func:`outcome`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from topicmatch.spark import quarantine, route


def outcome(messages: DataFrame, subscriptions: DataFrame, dialect: str) -> dict[str, Any]:
    """What ``route`` and ``quarantine`` return for one dialect, comparable across processes."""
    exploded = route(messages, subscriptions, dialect=dialect)
    nested = route(messages, subscriptions, dialect=dialect, layout="nested")
    bad = quarantine(messages, dialect=dialect)
    return {
        "dtypes": [list(pair) for pair in exploded.dtypes],
        "nested_dtypes": [list(pair) for pair in nested.dtypes],
        "deliveries": sorted([r["offset"], r["subscriber"]] for r in exploded.collect()),
        "nested": sorted([r["offset"], r["subscribers"]] for r in nested.collect()),
        "quarantine": sorted([r["offset"], r["reason"]] for r in bad.collect()),
    }


def main(argv: list[str]) -> int:
    url, out, *cases = argv
    spark = SparkSession.builder.remote(url).getOrCreate()
    results: dict[str, Any] = {"session": type(spark).__module__}
    for case in cases:
        dialect, _, path = case.partition("=")
        messages = spark.read.parquet(f"{path}/messages")
        subscriptions = spark.read.parquet(f"{path}/subscriptions.parquet")
        results[dialect] = outcome(messages, subscriptions, dialect)
    spark.stop()
    with open(out, "w", encoding="utf-8") as file:
        json.dump(results, file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
