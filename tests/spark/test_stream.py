"""``route --stream``: exactly once across restarts and crashes; new subscriptions between batches."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main
from topicmatch.spark import Subscriptions
from topicmatch.spark._generate import generate
from topicmatch.spark._pipeline import RouteJob
from topicmatch.spark._stream import StreamRouter

from .helpers import expected_deliveries, pairs_of

pytestmark = pytest.mark.spark

FILE_ROWS = 1_500


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    """8 files' worth of generated messages (a few invalid), as one table."""
    path = tmp_path_factory.mktemp("stream-log")
    generate(path, 8 * FILE_ROWS, 300, seed=5, invalid_fraction=0.01)
    return pq.read_table(path / "messages")


def drop(directory: Path, table: pa.Table, index: int) -> None:
    """Add message file ``index`` whole (written beside, then renamed in: never seen half-written)."""
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory.parent / f".{directory.name}-{index}.tmp"
    pq.write_table(table.slice(index * FILE_ROWS, FILE_ROWS), temporary)
    os.replace(temporary, directory / f"m{index:02d}.parquet")


def write_subs(path: Path, pairs: list[tuple[str, str]]) -> str:
    temporary = path.with_suffix(".tmp")
    temporary.write_text("".join(f"{p}\t{s}\n" for p, s in pairs), encoding="utf-8")
    os.replace(temporary, path)
    return Subscriptions.read(path).version


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def rows_of(table: pa.Table, files: range) -> list[tuple[int, str | None]]:
    part = table.slice(files.start * FILE_ROWS, len(files) * FILE_ROWS)
    return list(zip(part.column("offset").to_pylist(), part.column("topic").to_pylist(), strict=True))


V1 = [("orders.#", "o"), ("*.*", "two"), ("#", "all")]
V2 = [("stock.#", "s"), ("*.*.*", "three")]


def stream(subs: Path, inbox: Path, out: Path, checkpoint: Path, *extra: str) -> tuple[int, str]:
    argv = ["route", "--stream", "--once", "--messages", str(inbox), "--subscriptions", str(subs)]
    argv += ["--out", str(out), "--checkpoint", str(checkpoint), *extra]
    output = io.StringIO()
    return main(argv, stdout=output), output.getvalue()


def test_restart_from_the_checkpoint_is_exactly_once(
    spark: SparkSession, log: pa.Table, tmp_path: Path
) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    write_subs(subs, V1)
    for i in range(2):
        drop(inbox, log, i)
    code, text = stream(subs, inbox, out, ckpt)
    assert code == 0
    assert f"routed {2 * FILE_ROWS:,} messages" in text
    for i in range(2, 4):
        drop(inbox, log, i)
    code, text = stream(subs, inbox, out, ckpt)
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["messages"] == 2 * FILE_ROWS  # only the new files
    assert sorted(f for b in summary["batches"] for f in b["files"]) == ["m02.parquet", "m03.parquet"]
    got = pairs_of(spark.read.parquet(str(out / "deliveries")))
    expected, invalid = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, range(4)))
    assert len(got) == len(set(got))
    assert set(got) == expected
    bad = spark.read.parquet(str(out / "quarantine")).select("offset").collect()
    assert sorted(r["offset"] for r in bad) == sorted(invalid)
    audit = [json.loads(line) for line in (ckpt / "batches.jsonl").read_text().splitlines()]
    assert sum(b["messages"] for b in audit) == 4 * FILE_ROWS


def test_a_stream_in_the_nested_layout(spark: SparkSession, log: pa.Table, tmp_path: Path) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    write_subs(subs, V1)
    drop(inbox, log, 0)
    code, text = stream(subs, inbox, out, ckpt, "--layout", "nested")
    assert code == 0
    assert "(parquet, nested: " in text
    got = {r["offset"]: r["subscribers"] for r in spark.read.parquet(str(out / "deliveries")).collect()}
    expected, _ = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, range(1)))
    assert {(offset, s) for offset, subscribers in got.items() for s in subscribers} == expected
    assert all(subscribers == sorted(set(subscribers)) for subscribers in got.values())


def test_a_crash_neither_loses_nor_duplicates(spark: SparkSession, log: pa.Table, tmp_path: Path) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    write_subs(subs, V1)
    for i in range(6):
        drop(inbox, log, i)
    argv = [
        sys.executable,
        "-m",
        "topicmatch",
        "route",
        "--stream",
        "--messages",
        str(inbox),
        "--subscriptions",
    ]
    argv += [str(subs), "--out", str(out), "--checkpoint", str(ckpt), "--max-files-per-trigger", "1"]
    # A fresh JVM at a load average of 18 took over 90 s to its first batch: the bounds are for
    # something that never happens, not for a slow start.
    argv += ["--trigger-seconds", "0.2", "--timeout", "900"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        wait_for(
            lambda: (out / "deliveries" / "_spark_metadata" / "0").exists() or process.poll() is not None,
            "batch 0",
            timeout=600,  # a guard, not a measure: a JVM starting on a loaded machine
        )
        assert process.poll() is None, errors.read_text()
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers at once
        process.wait(timeout=30)
    code, _ = stream(subs, inbox, out, ckpt)
    assert code == 0
    got = pairs_of(spark.read.parquet(str(out / "deliveries")))
    expected, _ = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, range(6)))
    assert len(got) == len(set(got)), "a delivery was written twice"
    assert set(got) == expected, "a delivery was lost"


def test_new_subscriptions_route_the_later_batches(
    spark: SparkSession, log: pa.Table, tmp_path: Path
) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    v1 = write_subs(subs, V1)
    drop(inbox, log, 0)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    v2 = write_subs(subs, V2)
    drop(inbox, log, 1)
    code, text = stream(subs, inbox, out, ckpt)
    assert code == 0
    assert f"version {v2}" in text
    audit = [json.loads(line) for line in (ckpt / "batches.jsonl").read_text().splitlines()]
    assert [(b["version"], b["files"]) for b in audit] == [(v1, ["m00.parquet"]), (v2, ["m01.parquet"])]
    got = set(pairs_of(spark.read.parquet(str(out / "deliveries"))))
    first, _ = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, range(1)))
    second, _ = expected_deliveries(Subscriptions.from_pairs(V2), rows_of(log, range(1, 2)))
    assert got == first | second


def test_a_running_stream_switches_version_between_batches(
    spark: SparkSession, log: pa.Table, tmp_path: Path
) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    v1 = write_subs(subs, V1)
    drop(inbox, log, 0)
    events: list[str] = []
    job = RouteJob(messages=str(inbox), subscriptions=str(subs), out=str(out))
    router = StreamRouter(spark, job, str(ckpt), trigger_seconds=0.3, poll_seconds=0.2, log=events.append)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(router.run(timeout=150)), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(router.batches) >= 1 or not thread.is_alive(), "the first batch")
        (subs.parent / "broken.tsv").write_text("a.b\n")  # not the watched file: ignored
        v2 = write_subs(subs, V2)
        wait_for(lambda: router.version == v2 or not thread.is_alive(), "the new version")
        drop(inbox, log, 1)
        wait_for(lambda: len(router.batches) >= 2 or not thread.is_alive(), "the second batch")
    finally:
        router.stop()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert results, events
    assert [(b["version"], b["files"]) for b in router.batches] == [
        (v1, ["m00.parquet"]),
        (v2, ["m01.parquet"]),
    ]
    assert any(f"version {v1} -> {v2}" in line for line in events)
    assert [v["version"] for v in results[0].versions] == [v1, v2]
    got = set(pairs_of(spark.read.parquet(str(out / "deliveries"))))
    first, _ = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, range(1)))
    second, _ = expected_deliveries(Subscriptions.from_pairs(V2), rows_of(log, range(1, 2)))
    assert got == first | second


def test_overwrite_deletes_no_checkpoint_it_did_not_write(log: pa.Table, tmp_path: Path) -> None:
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    write_subs(subs, V1)
    drop(inbox, log, 0)
    ckpt.mkdir()
    (ckpt / "notes.txt").write_text("mine")
    code, _ = stream(subs, inbox, out, ckpt, "--overwrite")
    assert code == 2
    assert (ckpt / "notes.txt").read_text() == "mine"
    (ckpt / "notes.txt").unlink()
    assert stream(subs, inbox, out, ckpt, "--overwrite")[0] == 0
    assert stream(subs, inbox, out, ckpt, "--overwrite")[0] == 0  # its own checkpoint it replaces


def test_a_malformed_json_line_arriving_later_is_quarantined_as_such(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A stream started on valid JSON files infers a schema without Spark's column for lines it
    cannot parse: a later malformed line came out as "the topic is null". Its reason now says
    what is wrong, and no internal column reaches either output."""
    subs, inbox, out, ckpt = tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    write_subs(subs, [("a.*", "x")])
    inbox.mkdir()

    def put(name: str, text: str) -> None:
        temporary = tmp_path / f".{name}"
        temporary.write_text(text)
        os.replace(temporary, inbox / name)

    put("m00.json", '{"offset": 1, "topic": "a.b"}\n')
    job = RouteJob(messages=str(inbox), subscriptions=str(subs), out=str(out))
    router = StreamRouter(
        spark, job, str(ckpt), trigger_seconds=0.3, poll_seconds=0.2, log=lambda _line: None
    )
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(router.run(timeout=150)), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(router.batches) >= 1 or not thread.is_alive(), "the first batch")
        put("m01.json", '{"offset": 2, "topic": "a.c"}\n{"offset": 3, "topic": "a.d"\n')
        wait_for(lambda: len(router.batches) >= 2 or not thread.is_alive(), "the second batch")
    finally:
        router.stop()
        thread.join(timeout=60)
    assert results
    deliveries = spark.read.parquet(str(out / "deliveries"))
    assert "_corrupt_record" not in deliveries.columns
    assert sorted(row["offset"] for row in deliveries.collect()) == [1, 2]
    quarantined = spark.read.parquet(str(out / "quarantine"))
    assert "_corrupt_record" not in quarantined.columns
    assert [row["reason"] for row in quarantined.collect()] == [
        'not valid JSON: {"offset": 3, "topic": "a.d"'
    ]
