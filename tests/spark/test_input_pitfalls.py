"""The input side of ``topicmatch route``: logs a newcomer writes by hand, and subscription files.

Each test feeds one bad input and checks the message and that no line is lost: every line of
the log ends in the deliveries or in the quarantine, and what the quarantine holds can be read
by pyarrow, not only by Spark.
"""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main
from topicmatch.spark import Subscriptions, SubscriptionsError
from topicmatch.spark._generate import generate
from topicmatch.spark._pipeline import RouteJob
from topicmatch.spark._stream import StreamRouter

pytestmark = pytest.mark.spark

NOT_JSON = "not valid JSON: "


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue()


def route(tmp_path: Path, log: Path, name: str = "out") -> Path:
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n", encoding="utf-8")
    out = tmp_path / name
    code, text = run(
        ["route", "--messages", str(log), "--subscriptions", str(subs), "--out", str(out), "--quiet"]
    )
    assert code == 0, text
    return out


def test_binary_garbage_is_quarantined_readable_by_pyarrow_with_its_bytes(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark keeps a line that is not UTF-8 as it is in its corrupt-record column, and the
    quarantine's reason then held invalid UTF-8: pyarrow refused the file. The reason is now
    valid text from which the line's bytes come back exactly."""
    garbage = b'\x00\xff\xfe{"offset": 2, "topic": "a.c"}\x80 \\x41 \xc3\xa9'
    inside = b'{"offset": 4, "topic": "a.\xff"}'  # JSON, but not UTF-8: not JSON
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b'{"offset": 1, "topic": "a.b"}\n'
        + garbage
        + b'\n{"offset": 3, "topic": "a.\xc3\xa9"}\n'
        + inside
        + b"\n"
    )
    out = route(tmp_path, log)
    quarantine = pq.read_table(out / "quarantine").to_pylist()  # raised ArrowInvalid: invalid UTF8
    assert [row["offset"] for row in quarantine] == [None, None]
    lines = []
    for row in quarantine:
        assert row["reason"].startswith(NOT_JSON)
        escaped = row["reason"].removeprefix(NOT_JSON)
        assert escaped.isascii()
        lines.append(codecs.escape_decode(escaped.encode("ascii"))[0])
    assert sorted(lines) == sorted([garbage, inside])  # nothing lost
    delivered = pq.read_table(out / "deliveries").to_pylist()
    assert sorted((row["offset"], row["topic"]) for row in delivered) == [(1, "a.b"), (3, "a.é")]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["quarantine_reasons"] == {"not_json": 2}


def test_a_carriage_return_does_not_end_a_json_line(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's JSON reader ends a line at \\r, \\n or \\r\\n: a \\r inside a line split it into
    two records, both quarantined as not valid JSON. A line now ends at \\n only (\\r\\n too: its
    \\r is JSON white space)."""
    spaced = b'{"offset": 1, "topic": "a.b",\r"payload": "p"}'  # a \r between tokens: valid JSON
    raw = b'{"offset": 2, "topic": "a.c", "payload": "p\rq"}'  # a raw \r in a string: not JSON
    log = tmp_path / "log.jsonl"
    log.write_bytes(spaced + b"\n" + raw + b'\n{"offset": 3, "topic": "a.d", "payload": "r"}\r\n')
    out = route(tmp_path, log)
    delivered = pq.read_table(out / "deliveries")
    assert delivered.column_names == ["offset", "topic", "payload", "subscriber"]  # the first line's order
    assert sorted((row["offset"], row["payload"]) for row in delivered.to_pylist()) == [(1, "p"), (3, "r")]
    quarantine = pq.read_table(out / "quarantine").to_pylist()
    assert [row["reason"] for row in quarantine] == [NOT_JSON + raw.decode()]  # the whole line, once


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        (b"\x00\x01garbage\n\xff\xfe\n\nnot json either\n", 4),
        (b'{"offset": 1, "subject": "a.b"}\n{"offset": 2}\n', 2),
    ],
)
def test_a_log_without_one_usable_json_line_says_so(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, lines: int
) -> None:
    """It said "the messages have no column 'topic' (columns: _corrupt_record)", naming
    Spark's internal column and neither the file nor what was wrong with it."""
    log = tmp_path / "log.jsonl"
    log.write_bytes(content)
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n", encoding="utf-8")
    out = tmp_path / "out"
    capsys.readouterr()
    code, text = run(["route", "--messages", str(log), "--subscriptions", str(subs), "--out", str(out)])
    err = capsys.readouterr().err
    assert (code, text) == (2, "")
    assert err.splitlines() == [
        f"topicmatch: cannot read messages {log} as json: no line is valid JSON with a 'topic' field "
        f"({lines} lines read)"
    ]
    assert not out.exists()


def test_match_and_route_read_one_subscription_file_alike(tmp_path: Path) -> None:
    """``match`` read TSV only, and refused generate's own subscriptions.parquet as "not UTF-8
    text"; both commands now read a file through one reader: the same pairs, in every format."""
    generated = generate(tmp_path / "gen", 50, 40, seed=3)
    parquet = tmp_path / "gen" / "subscriptions.parquet"
    table = pq.read_table(parquet).to_pylist()
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(row) + "\n" for row in table), encoding="utf-8")
    (tmp_path / "s.csv").write_text(
        "pattern,subscriber\n" + "".join(f"{r['pattern']},{r['subscriber']}\n" for r in table),
        encoding="utf-8",
    )
    (tmp_path / "s.tsv").write_text("".join(f"{r['pattern']}\t{r['subscriber']}\n" for r in table))
    topics = sorted(set(pq.read_table(tmp_path / "gen" / "messages").column("topic").to_pylist()))[:30]
    assert generated.subscriptions == len(table)
    for path in (parquet, tmp_path / "s.jsonl", tmp_path / "s.csv", tmp_path / "s.tsv"):
        reference = Subscriptions.read(path).matcher()
        code, text = run(["match", str(path), "--json", *topics])
        assert code in (0, 1), (path, text)
        found = {row["topic"]: row["subscribers"] for row in map(json.loads, text.splitlines())}
        for topic, subscribers in found.items():
            assert subscribers == sorted(str(s) for s in reference.lookup(topic)), (path, topic)
        assert len(found) > 20


def test_a_stream_reads_json_lines_by_the_same_rules(spark: SparkSession, tmp_path: Path) -> None:
    """``route --stream`` reads its files as the batch job does: a line that is not UTF-8
    quarantined as escaped text, a ``\\r`` inside a line not ending it."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    garbage = b'\xff\xfe{"offset": 2, "topic": "a.c"}'
    (inbox / "m00.json").write_bytes(b'{"offset": 1, "topic": "a.b",\r"payload": "p"}\n')
    (inbox / "m01.json").write_bytes(garbage + b'\n{"offset": 3, "topic": "a.d", "payload": "q"}\n')
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n", encoding="utf-8")
    out = tmp_path / "out"
    job = RouteJob(messages=str(inbox), subscriptions=str(subs), out=str(out))
    StreamRouter(spark, job, str(tmp_path / "ckpt"), once=True).run()
    delivered = pq.read_table(out / "deliveries").to_pylist()
    assert sorted((row["offset"], row["payload"]) for row in delivered) == [(1, "p"), (3, "q")]
    reasons = [row["reason"] for row in pq.read_table(out / "quarantine").to_pylist()]
    assert len(reasons) == 1
    assert codecs.escape_decode(reasons[0].removeprefix(NOT_JSON).encode("ascii"))[0] == garbage


def test_a_subscriber_over_64_bits_is_refused_naming_the_file(tmp_path: Path) -> None:
    """pyarrow's OverflowError came out as a traceback."""
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"pattern": "a", "subscriber": 2**70}) + "\n", encoding="utf-8")
    with pytest.raises(SubscriptionsError, match=r"s.jsonl: the integer subscribers must fit in 64 bits"):
        Subscriptions.read(path)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'1,"a.b\rc",p\n2,a.d,q\n', "1 line with a carriage return (\\r) inside"),
        ("1,a.b,p\r\u2028\n".encode(), "1 line with a carriage return (\\r) inside"),
        (b"1,a.\xff,p\n2,a.d,\xfeq\n3,a.e,r\n", "2 lines not UTF-8"),
    ],
)
def test_a_csv_log_that_spark_would_change_is_refused(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, said: str
) -> None:
    """Spark's CSV reader made U+FFFD of bytes that are not UTF-8 and ended a record at a lone
    \\r, quoted or not: a topic nobody published, a record split in two, routed without a word.
    Such a log is now refused before any work, in one line that says what to do."""
    log = tmp_path / "log.csv"
    log.write_bytes(b"offset,topic,payload\n" + body)
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n", encoding="utf-8")
    out = tmp_path / "out"
    capsys.readouterr()
    code, _ = run(["route", "--messages", str(log), "--subscriptions", str(subs), "--out", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith(f"topicmatch: cannot read messages {log} as csv: {said}")
    assert err[0].endswith("write the log as JSON lines or Parquet, which keep every byte")
    assert not out.exists()


def test_a_csv_log_with_crlf_line_ends_is_routed_whole(spark: SparkSession, tmp_path: Path) -> None:
    """A \\r that ends a line is a line break, not a carriage return inside it."""
    log = tmp_path / "log.csv"
    log.write_bytes(b"offset,topic,payload\r\n1,a.b,p\r\n2,a.c,q\r\n3,b.c,r\r\n")
    delivered = pq.read_table(route(tmp_path, log) / "deliveries").to_pylist()
    assert sorted((row["offset"], row["topic"], row["payload"]) for row in delivered) == [
        (1, "a.b", "p"),
        (2, "a.c", "q"),
    ]
