"""``route`` and ``quarantine`` against the pure-Python Matcher, for every dialect."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from topicmatch import Matcher
from topicmatch.spark import (
    InvalidSubscriptionError,
    MessagesError,
    SparkPipelineError,
    Subscriptions,
    SubscriptionsError,
    quarantine,
    route,
)
from topicmatch.spark._plan import LITERAL_COL, SPLIT_FROM, choose
from topicmatch.spark._route import LAYOUTS, _route

from .helpers import expected_deliveries, pairs_of

pytestmark = pytest.mark.spark

SEP = {"amqp": ".", "mqtt": "/", "nats": "."}
STAR = {"amqp": "*", "mqtt": "+", "nats": "*"}
TAIL = {"amqp": "#", "mqtt": "#", "nats": ">"}
WHEN = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _edge_pairs(dialect: str) -> list[tuple[str, str]]:
    """Duplicates, overlapping patterns of one subscriber, a pattern matching nothing."""
    sep, star, tail = SEP[dialect], STAR[dialect], TAIL[dialect]
    return [
        (f"orders{sep}{tail}", "dup"),
        (f"orders{sep}{star}", "dup"),
        (f"orders{sep}{tail}", "dup"),  # the same pair twice
        (f"{star}{sep}{star}", "dup"),
        (f"never{sep}seen{sep}topic", "nobody-home"),
    ]


def _messages(spark: SparkSession, path: Path, dialect: str) -> DataFrame:
    frame = spark.read.parquet(str(path / "messages"))
    sep = SEP[dialect]
    extra = [
        (10_000_000, WHEN, f"zzz{sep}unknown", "unmatched"),
        (10_000_001, WHEN, None, "null topic"),
        (10_000_002, WHEN, "", "empty topic"),
        (10_000_003, WHEN, f"orders{sep}x", "dup's topic"),
    ]
    return frame.unionByName(spark.createDataFrame(extra, frame.schema))


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_route_equals_the_matcher(spark: SparkSession, generated: dict[str, Path], dialect: str) -> None:
    path = generated[dialect]
    base = pq.read_table(path / "subscriptions.parquet").to_pylist()
    pairs = [(r["pattern"], r["subscriber"]) for r in base] + _edge_pairs(dialect)
    table = Subscriptions.from_pairs(pairs, dialect=dialect)
    messages = _messages(spark, path, dialect)
    rows = [(r["offset"], r["topic"]) for r in messages.select("offset", "topic").collect()]
    expected, invalid = expected_deliveries(table, rows)

    deliveries = route(messages, pairs, dialect=dialect)
    got = pairs_of(deliveries)
    assert len(got) == len(set(got)), "a subscriber got a message twice"
    assert set(got) == expected
    # The workload covers what it should: fan-out, unmatched, invalid, dedup of overlapping patterns.
    offsets = {offset for offset, _ in got}
    assert len(got) > 2 * len(rows)
    assert any(o not in offsets and o not in invalid for o, _ in rows)
    assert len(invalid) >= 15
    assert (10_000_003, "dup") in expected
    assert not any(s == "nobody-home" for _, s in got)

    bad = {r["offset"]: r["reason"] for r in quarantine(messages, dialect=dialect).collect()}
    assert set(bad) == invalid
    assert bad[10_000_001] == "the topic is null"


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_the_nested_layout_is_the_exploded_one_grouped(
    spark: SparkSession, generated: dict[str, Path], dialect: str
) -> None:
    path = generated[dialect]
    base = pq.read_table(path / "subscriptions.parquet").to_pylist()
    # Subscribers whose first appearance is not their sorted order, and one beyond ASCII.
    pairs = [
        ("#" if dialect != "nats" else ">", "\u00e9t\u00e9"),
        *[(r["pattern"], r["subscriber"]) for r in base],
    ]
    pairs += [*_edge_pairs(dialect), ("#" if dialect != "nats" else ">", "Zed")]
    messages = _messages(spark, path, dialect)
    rows = [(r["offset"], r["topic"]) for r in messages.select("offset", "topic").collect()]
    expected, _ = expected_deliveries(Subscriptions.from_pairs(pairs, dialect=dialect), rows)
    by_message: dict[int, list[Any]] = {}
    for offset, subscriber in expected:
        by_message.setdefault(offset, []).append(subscriber)

    nested = route(messages, pairs, dialect=dialect, layout="nested")
    assert nested.columns == [*messages.columns, "subscribers"]
    assert dict(nested.dtypes)["subscribers"] == "array<string>"
    got = [(r["offset"], r["subscribers"]) for r in nested.select("offset", "subscribers").collect()]
    assert len(got) == len({offset for offset, _ in got}), "a message came out twice"
    assert dict(got) == {offset: sorted(subscribers) for offset, subscribers in by_message.items()}
    assert any(len(subscribers) > 2 for _, subscribers in got)


def test_the_nested_layout_of_integer_subscribers_and_bad_layouts(spark: SparkSession) -> None:
    messages = spark.createDataFrame([(1, "a.b"), (2, "a.c"), (3, "x")], "offset long, topic string")
    subs = [("a.b", 9), ("#", 10), ("a.*", 7), ("a.#", 9)]
    nested = route(messages, subs, layout="nested", subscriber_col="to")
    assert sorted(tuple(r) for r in nested.collect()) == [
        (1, "a.b", [7, 9, 10]),
        (2, "a.c", [7, 9, 10]),
        (3, "x", [10]),
    ]
    assert dict(nested.dtypes)["to"] == "array<bigint>"
    # A message without subscribers has no row, also when most messages do have some (the
    # worker then keeps its empty list).
    assert sorted(tuple(r) for r in route(messages, [("a.*", 7)], layout="nested").collect()) == [
        (1, "a.b", [7]),
        (2, "a.c", [7]),
    ]
    with pytest.raises(MessagesError, match="unknown layout 'flat': choose exploded or nested"):
        route(messages, subs, layout="flat")


def _split_table(spark: SparkSession, path: Path, dialect: str) -> list[tuple[str, Any]]:
    """The generated subscriptions, plus literal subscribers of the kinds the split plan must
    tell apart: devices with only plain literal patterns (joined), one with a wildcard too (kept
    in the matcher), a literal that is not plain (kept in the matcher), duplicated pairs."""
    base = pq.read_table(path / "subscriptions.parquet").to_pylist()
    pairs: list[tuple[str, Any]] = [(r["pattern"], r["subscriber"]) for r in base]
    topics = [r["topic"] for r in spark.read.parquet(str(path / "messages")).limit(400).collect()]
    sep, star = SEP[dialect], STAR[dialect]
    for i, topic in enumerate(topics):
        if topic and len(topic) < 60 and re.fullmatch(rf"[\w-]+(?:{re.escape(sep)}[\w-]+)*", topic):
            pairs.append((topic, f"device-{i % 150}"))
            pairs.append((topic, f"device-{i % 150}"))
    pairs += [(topics[0], "both"), (f"{star}{sep}x", "both"), (f"orders{sep}x", "plain-but-also-wild")]
    pairs += [
        (f"orders{sep}{star}", "plain-but-also-wild"),
        ("a b" if dialect == "amqp" else f"z{sep}$x", "odd"),
    ]
    return pairs


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_the_split_plan_gives_the_matchers_deliveries(
    spark: SparkSession, generated: dict[str, Path], dialect: str
) -> None:
    pairs = _split_table(spark, generated[dialect], dialect)
    table = Subscriptions.from_pairs(pairs, dialect=dialect)
    plan = choose(table, "split")
    assert plan.name == "split"
    assert plan.literal is not None
    assert plan.literal_pairs > 200
    assert plan.literal_pairs + len(plan.matcher) == len(pairs)  # every row on one side
    joined = {s for subscribers in plan.literal.column(LITERAL_COL).to_pylist() for s in subscribers}
    assert not {"both", "plain-but-also-wild", "odd"} & joined
    messages = _messages(spark, generated[dialect], dialect)
    for layout in ("exploded", "nested"):
        got, schemas = {}, {}
        for name in ("matcher", "split"):
            # a small limit, so that some messages whose topic a device subscribes are too big
            frame = route(messages, table, dialect=dialect, layout=layout, plan=name, max_message_bytes=140)
            got[name] = sorted(tuple(r) for r in frame.collect())
            schemas[name] = frame.schema  # nullable flags included: outputs of both must concatenate
        assert got["split"] == got["matcher"], layout
        assert schemas["split"] == schemas["matcher"], layout
        assert len(got["split"]) > 1000
    assert choose(table, "auto").name == "matcher"  # below SPLIT_FROM


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_the_shard_plan_gives_the_matchers_deliveries(
    spark: SparkSession, generated: dict[str, Path], dialect: str
) -> None:
    """Shards of 80 pairs (so that the generated table is cut in several), every
    message shuffled to its topic's shard: the matcher plan's deliveries, in both layouts.
    (``route`` chooses with the shipped sizes; the plan of small shards goes to the function
    that it calls with its choice.)"""
    pairs = _split_table(spark, generated[dialect], dialect)
    sep = SEP[dialect]
    pairs += [("", "empty")] if dialect == "amqp" else []  # zero words: matches the empty key only
    pairs += [(f"$share/g/orders{sep}+", "shared")] if dialect == "mqtt" else []
    table = Subscriptions.from_pairs(pairs, dialect=dialect)
    plan = choose(table, "shard", shard_pairs=80)
    assert plan.name == "shard"
    assert plan.shards is not None
    assert plan.literal is not None
    assert len(plan.shards.tables) >= 3
    assert plan.shards.common > 0  # patterns that start with a wildcard, in every shard
    assert plan.literal_pairs + len(plan.matcher) == len(pairs)
    messages = _messages(spark, generated[dialect], dialect)
    if dialect == "amqp":
        messages = messages.unionByName(
            spark.createDataFrame([(10**9, "")], "offset long, topic string"), allowMissingColumns=True
        )
    for layout in ("exploded", "nested"):
        got = {}
        frames = {
            "matcher": route(
                messages, table, dialect=dialect, layout=layout, plan="matcher", max_message_bytes=140
            ),
            "shard": _route(
                messages,
                plan.matcher,
                "topic",
                LAYOUTS[layout],
                140,
                layout=layout,
                literal=plan.literal,
                shards=plan.shards,
            ),
        }
        for name, frame in frames.items():
            got[name] = (sorted(tuple(r) for r in frame.collect()), frame.schema)
        assert got["shard"] == got["matcher"], layout
        assert len(got["shard"][0]) > 1000
    assert choose(table, "auto").name == "matcher"  # below SHARD_FROM
    assert choose(table, "auto", shard_from=len(plan.matcher)).name == "shard"


def test_a_stream_is_routed_by_the_matcher(spark: SparkSession, tmp_path: Path) -> None:
    spark.createDataFrame([(1, "a.b")], "offset long, topic string").write.parquet(str(tmp_path / "in"))
    stream = spark.readStream.schema("offset long, topic string").parquet(str(tmp_path / "in"))
    for plan in ("split", "shard"):
        with pytest.raises(MessagesError, match=f"plan '{plan}' applies to batch DataFrames"):
            route(stream, [("a.b", "x")], plan=plan)
    with pytest.raises(MessagesError, match="unknown plan 'fast'"):
        route(stream, [("a.b", "x")], plan="fast")
    assert route(stream, [("a.b", "x")]).isStreaming  # auto routes a stream (by the matcher)


def test_a_forced_split_with_nothing_to_join_is_the_matcher(spark: SparkSession) -> None:
    messages = spark.createDataFrame([(1, "a.b"), (2, "c")], "offset long, topic string")
    plan = choose(Subscriptions.from_pairs([("a.*", "x")]), "split")
    assert (plan.name, plan.literal, plan.literal_pairs) == ("split", None, 0)
    assert [tuple(r) for r in route(messages, [("a.*", "x")], plan="split").collect()] == [(1, "a.b", "x")]


def test_auto_splits_large_literal_tables() -> None:
    pairs = [(f"devices.d{i}.cmd", f"d{i}") for i in range(SPLIT_FROM)] + [("devices.*.cmd", "ops")]
    plan = choose(Subscriptions.from_pairs(pairs), "auto")
    assert (plan.name, plan.literal_pairs, len(plan.matcher)) == ("split", SPLIT_FROM, 1)
    assert plan.matcher.subscribers.to_pylist() == ["ops"]  # only what the workers need
    fewer = choose(Subscriptions.from_pairs(pairs[1:]), "auto")
    assert (fewer.name, len(fewer.matcher)) == ("matcher", SPLIT_FROM)


def test_message_columns_are_kept(spark: SparkSession, generated: dict[str, Path]) -> None:
    messages = spark.read.parquet(str(generated["amqp"] / "messages")).limit(500)
    deliveries = route(messages, [("#", "all"), ("orders.#", "o")])  # the lone '#': every valid message
    assert deliveries.where("subscriber = 'all'").count() == messages.where("length(topic) < 256").count()
    assert deliveries.columns == [*messages.columns, "subscriber"]
    original = {r["offset"]: r.asDict() for r in messages.collect()}
    for row in deliveries.collect():
        values = row.asDict()
        assert values.pop("subscriber") in {"all", "o"}
        assert values == original[values["offset"]]


def test_empty_input_and_empty_subscriptions(spark: SparkSession) -> None:
    schema = "offset long, topic string"
    empty = spark.createDataFrame([], schema)
    assert route(empty, [("#", "a")]).count() == 0
    assert route(empty, [("#", "a")]).columns == ["offset", "topic", "subscriber"]
    some = spark.createDataFrame([(1, "a.b"), (2, "c")], schema)
    assert route(some, []).count() == 0
    assert quarantine(empty).count() == 0


def test_integer_subscribers_and_a_dataframe_of_subscriptions(spark: SparkSession) -> None:
    messages = spark.createDataFrame([(1, "a.b"), (2, "a.c"), (3, "x")], "offset long, topic string")
    subs = spark.createDataFrame([("a.*", 7), ("a.b", 9), ("#", 1)], "pattern string, subscriber long")
    got = sorted(pairs_of(route(messages, subs)))
    assert got == [(1, 1), (1, 7), (1, 9), (2, 1), (2, 7), (3, 1)]
    assert dict(route(messages, subs).dtypes)["subscriber"] == "bigint"


def test_transform_and_custom_columns(spark: SparkSession) -> None:
    messages = spark.createDataFrame([(1, "sensors/k/temp")], "offset long, subject string")
    got = messages.transform(
        lambda df: route(
            df, [("sensors/+/temp", "t")], topic_col="subject", dialect="mqtt", subscriber_col="to"
        )
    )
    assert [tuple(r) for r in got.collect()] == [(1, "sensors/k/temp", "t")]


def test_column_names_with_dots(spark: SparkSession) -> None:
    schema = StructType([StructField("meta.id", LongType()), StructField("topic", StringType())])
    messages = spark.createDataFrame([(1, "a.b")], schema)
    got = route(messages, [("a.*", "s")])
    assert got.columns == ["meta.id", "topic", "subscriber"]
    assert [tuple(r) for r in got.collect()] == [(1, "a.b", "s")]


def test_oversized_messages_are_quarantined(spark: SparkSession) -> None:
    rows = [(1, "a", "x" * 50), (2, "a", "x" * 5_000)]
    messages = spark.createDataFrame(rows, "offset long, topic string, payload string")
    assert pairs_of(route(messages, [("a", "s")], max_message_bytes=1_000)) == [(1, "s")]
    (bad,) = quarantine(messages, max_message_bytes=1_000).collect()
    assert bad["offset"] == 2
    assert "5,009 bytes; the limit is 1,000" in bad["reason"]
    assert len(pairs_of(route(messages, [("a", "s")], max_message_bytes=0))) == 2


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (
            [("ok", "x"), ("sensors/#/x", "y")],
            "pair 2: invalid mqtt pattern 'sensors/#/x': '#' must be the last level",
        ),
        ([("a", None)], "pair 1: the subscriber is null"),
        ([("a", "x"), ("b", 2)], "subscribers must all be strings or all integers"),
    ],
)
def test_bad_subscriptions_stop_before_any_work(
    spark: SparkSession, pairs: list[tuple[str, Any]], message: str
) -> None:
    messages = spark.createDataFrame([(1, "a")], "offset long, topic string")
    with pytest.raises(SubscriptionsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        route(messages, pairs, dialect="mqtt")


def test_invalid_pattern_error_and_skipping(spark: SparkSession, tmp_path: Path) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("a/+\tx\n\nb/#/c\ty\nc/#\tz\n", encoding="utf-8")
    messages = spark.createDataFrame([(1, "a/q"), (2, "c/d")], "offset long, topic string")
    with pytest.raises(InvalidSubscriptionError) as info:
        route(messages, str(subs), dialect="mqtt")
    assert str(info.value).startswith(f"{subs}:3: invalid mqtt pattern 'b/#/c'")
    assert info.value.where == f"{subs}:3"
    table = Subscriptions.read(subs, dialect="mqtt", skip_invalid=True)
    assert table.skipped == [(f"{subs}:3", "b/#/c", "'#' must be the last level")]
    assert sorted(pairs_of(route(messages, table, dialect="mqtt"))) == [(1, "x"), (2, "z")]


def test_subscription_files_of_every_format(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("pattern,subscriber\na.*,x\n\nb.#,y\n", encoding="utf-8")
    (tmp_path / "s.jsonl").write_text(
        '{"pattern": "a.*", "subscriber": 1}\n{"pattern": "b.#", "subscriber": 2}\n'
    )
    (tmp_path / "bad.csv").write_text("pattern,subscriber\na.*,x\nb/#/c,y\n", encoding="utf-8")
    assert Subscriptions.read(tmp_path / "s.csv").matcher().lookup("b.c") == frozenset({"y"})
    assert Subscriptions.read(tmp_path / "s.jsonl").matcher().lookup("a.q") == frozenset({1})
    assert len(Subscriptions.read(tmp_path / "bad.csv", dialect="amqp")) == 2  # 'b/#/c' is one AMQP word
    with pytest.raises(InvalidSubscriptionError, match=r"bad.csv:3: invalid mqtt pattern 'b/#/c'"):
        Subscriptions.read(tmp_path / "bad.csv", dialect="mqtt")
    (tmp_path / "s.xml").write_text("<subscriptions/>", encoding="utf-8")
    with pytest.raises(SubscriptionsError, match="cannot tell the format"):
        Subscriptions.read(tmp_path / "s.xml")
    with pytest.raises(SubscriptionsError, match="no such file"):
        Subscriptions.read(tmp_path / "missing.parquet")


def test_versions_follow_the_content() -> None:
    one = Subscriptions.from_pairs([("a", "x"), ("b", "y")])
    assert one.version == Subscriptions.from_pairs([("a", "x"), ("b", "y")]).version
    assert one.version != Subscriptions.from_pairs([("a", "x"), ("b", "z")]).version
    assert one.version != Subscriptions.from_pairs([("a", "x"), ("b", "y")], dialect="nats").version


def test_bad_messages(spark: SparkSession) -> None:
    messages = spark.createDataFrame([(1, 5)], "offset long, topic long")
    with pytest.raises(MessagesError, match="the topic column 'topic' must hold strings, not bigint"):
        route(messages, [("a", "x")])
    with pytest.raises(MessagesError, match=r"no column 'subject' \(columns: offset, topic\)"):
        route(messages, [("a", "x")], topic_col="subject")
    clash = spark.createDataFrame([(1, "a", "s")], "offset long, topic string, subscriber string")
    with pytest.raises(MessagesError, match="already have a column 'subscriber'"):
        route(clash, [("a", "x")])


def test_the_reference_matcher_is_the_core_one() -> None:
    table = Subscriptions.from_pairs([("a.*", "x")])
    assert isinstance(table.matcher(), Matcher)


def test_workers_that_cannot_import_topicmatch_fail_in_one_line(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session made from a virtual environment that is not activated runs its workers with the
    system's python3; the first action then failed with 60 lines of Py4J trace. Now route()
    and quarantine() say so at once, in one line, with the fix."""
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexit 1\n")  # an interpreter without topicmatch, as far as we can tell
    python.chmod(0o755)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(python))
    frame = spark.createDataFrame([("a.b",)], "topic string")
    calls: list[Callable[[], DataFrame]] = [lambda: route(frame, [("a.*", "x")]), lambda: quarantine(frame)]
    for call in calls:
        with pytest.raises(SparkPipelineError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"Spark's Python workers run {python}, which cannot import topicmatch")
        assert "PYSPARK_PYTHON=" in message
        assert "\n" not in message
