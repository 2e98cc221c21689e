"""``route`` and ``quarantine``: lazy DataFrame transformations, the same for batch and streaming.

Both add one ``mapInArrow`` step to the plan (``route``'s exploded layout also an ``explode`` of
the subscriber lists it returns) and nothing else: no shuffle, no action, and no join but under
``route``'s split plan (:mod:`._plan`), which joins the messages with the literal subscriptions.
The subscriptions are validated on the driver when ``route`` is called (an invalid pattern stops
the job before any work) and travel to the workers inside the mapped function, as data.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

from .. import make_dialect
from ._errors import MessagesError, SparkPipelineError, SubscriptionsError
from ._plan import LITERAL_COL, PATTERN_COL, PLANS, SHARD_COL, WORD_COL, Shards, choose
from ._subscriptions import Subscriptions
from ._worker import QuarantineFunction, RouteFunction

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "LAYOUTS",
    "SubscriptionsLike",
    "as_subscriptions",
    "quarantine",
    "route",
]

#: The largest message routed by default (all its string and binary columns together): 1 MiB,
#: as NATS's default max_payload and Kafka's default message.max.bytes. A message is copied once
#: per subscriber, so the limit bounds what one message can cost; larger ones are quarantined.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20

#: ``route``'s output layouts -> the default name of the column they add: ``exploded``, one row
#: per (message, subscriber); ``nested``, one row per message with the array of its subscribers.
LAYOUTS = {"exploded": "subscriber", "nested": "subscribers"}

#: What ``route`` accepts as subscriptions.
SubscriptionsLike = Subscriptions | DataFrame | Iterable[tuple[str, Any]] | str | Path


def as_subscriptions(
    subscriptions: SubscriptionsLike, dialect: str, pedantic: bool = False, skip_invalid: bool = False
) -> Subscriptions:
    """Validate ``subscriptions`` for ``dialect``: a table, a DataFrame, a file path or pairs."""
    if isinstance(subscriptions, Subscriptions):
        if (subscriptions.dialect, subscriptions.pedantic) != (dialect, pedantic):
            raise SubscriptionsError(
                f"these subscriptions were validated for {subscriptions.dialect}"
                f"{' (pedantic)' if subscriptions.pedantic else ''}, not {dialect}"
                f"{' (pedantic)' if pedantic else ''}"
            )
        return subscriptions
    options: dict[str, Any] = {"dialect": dialect, "pedantic": pedantic, "skip_invalid": skip_invalid}
    if isinstance(subscriptions, DataFrame):
        return Subscriptions.from_dataframe(subscriptions, **options)
    if isinstance(subscriptions, str | Path):
        return Subscriptions.read(subscriptions, **options)
    return Subscriptions.from_pairs(subscriptions, **options)


def _topic_index(schema: StructType, topic_col: str, added: str) -> int:
    names = schema.names
    if topic_col not in names:
        raise MessagesError(f"the messages have no column {topic_col!r} (columns: {', '.join(names)})")
    kind = schema[topic_col].dataType
    if not isinstance(kind, StringType):
        raise MessagesError(f"the topic column {topic_col!r} must hold strings, not {kind.simpleString()}")
    if added in names:
        raise MessagesError(
            f"the messages already have a column {added!r}; choose another name for the output"
        )
    return names.index(topic_col)


def route(
    messages: DataFrame,
    subscriptions: SubscriptionsLike,
    *,
    topic_col: str = "topic",
    dialect: str = "amqp",
    pedantic: bool = False,
    subscriber_col: str | None = None,
    skip_invalid_patterns: bool = False,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    layout: str = "exploded",
    plan: str = "auto",
) -> DataFrame:
    """The deliveries: one row per (message, subscriber), the message's columns kept.

    ``subscriptions`` is a DataFrame with columns ``pattern`` and ``subscriber``, an iterable of
    (pattern, subscriber) pairs, a file path (see :meth:`Subscriptions.read`) or a
    :class:`Subscriptions`. Subscribers are strings or integers; the new column
    ``subscriber_col`` (default ``subscriber``) has their type. A subscriber appears once per
    message however many of its patterns match (``dialect`` decides what matches, exactly as
    :class:`~topicmatch.Matcher` does).

    ``layout="nested"``: one row per message that has a subscriber, with the array of its
    subscribers (sorted, distinct) in ``subscriber_col`` (default ``subscribers``); exploding
    that column gives the default layout's rows. It skips the explode, the costliest step
    after the output's writing. Messages with no subscriber are in neither layout.

    ``plan``: ``matcher`` matches every subscription in the Python workers; ``split`` joins the
    messages with the plain literal subscriptions of subscribers that have no wildcard pattern
    (an equi-join on the topic, in Spark) and matches the rest in the workers; ``shard`` splits
    and also cuts the workers' part by the first word of each pattern, each message going to
    its shard (one shuffle); ``auto`` (the default) splits from :data:`~._plan.SPLIT_FROM` such
    pairs on and shards from :data:`~._plan.SHARD_FROM` pairs left for the workers. The same
    deliveries every way (:mod:`._plan`). A streaming DataFrame is routed by the matcher
    (``split`` and ``shard`` are refused).

    Lazy, like any transformation, and the same for a streaming DataFrame. Messages whose topic
    the dialect rejects (or that exceed ``max_message_bytes``; 0 means no limit) get no
    delivery: :func:`quarantine` lists them with the reason. Cost: one ``mapInArrow`` step (and
    under the split plan a join on the topic, under the shard plan a shuffle of the messages
    too); each distinct topic is matched once per worker process.

    Raises :class:`InvalidSubscriptionError` (where and why) for an invalid pattern unless
    ``skip_invalid_patterns``, :class:`SubscriptionsError` or :class:`MessagesError` for a
    missing or mistyped column: all before any Spark work.
    """
    if layout not in LAYOUTS:
        raise MessagesError(f"unknown layout {layout!r}: choose {' or '.join(LAYOUTS)}")
    if plan not in PLANS:
        raise MessagesError(f"unknown plan {plan!r}: choose {', '.join(PLANS)}")
    if messages.isStreaming and plan in ("split", "shard"):
        raise MessagesError(f"plan {plan!r} applies to batch DataFrames; a stream is routed by the matcher")
    table = as_subscriptions(subscriptions, dialect, pedantic, skip_invalid_patterns)
    chosen = choose(table, "matcher" if messages.isStreaming else plan)
    name = subscriber_col or LAYOUTS[layout]
    return _route(
        messages,
        chosen.matcher,
        topic_col,
        name,
        max_message_bytes,
        layout=layout,
        literal=chosen.literal,
        shards=chosen.shards,
    )


def _route(
    messages: DataFrame,
    table: Subscriptions,
    topic_col: str,
    subscriber_col: str,
    max_message_bytes: int,
    stats: Any = None,
    cache_token: str = "",
    layout: str = "exploded",
    literal: pa.Table | None = None,
    observation: Any = None,
    shards: Shards | None = None,
) -> DataFrame:
    """``route`` on a validated table; ``stats`` is an accumulator (see _stats), ``cache_token``
    forces a fresh worker cache (the benchmark's cold runs). ``literal``: the split plan's joined
    pairs (:class:`~._plan.Plan`), whose deliveries ``observation`` (a Spark ``Observation``)
    counts, with the messages only they deliver: see :data:`LITERAL_FIGURES`. ``shards``: the
    shard plan's cut of ``table``, whose shards the workers match instead of the whole."""
    if max_message_bytes < 0:
        raise MessagesError(f"max_message_bytes must be >= 0 (0: no limit), not {max_message_bytes}")
    index = _topic_index(messages.schema, topic_col, subscriber_col)
    lists = ArrayType(from_arrow_type(table.subscribers.type), containsNull=False)
    key = table.version + (f"+{cache_token}" if cache_token else "")
    function = RouteFunction(
        key,
        table.dialect,
        table.pedantic,
        b"" if shards is not None else table.payload(),
        index,
        _ADDED,
        max_message_bytes,
        stats,
        keep_valid=literal is not None,
        subscribers=len(table.subscribers),
        shards=() if shards is None else tuple((f"{key}#{s.version}", s.payload()) for s in shards.tables),
    )
    added = StructField(_ADDED, lists, False)
    joined = None if literal is None else (literal, index, observation)
    sharded = None if shards is None else (shards, make_dialect(table.dialect).separator)
    return _around_arrow(messages, function, added, subscriber_col, layout, joined, sharded)


#: The name of the column added by the mapped function, before it gets its public name.
_ADDED = "_topicmatch_added"


#: What the split plan's ``observation`` counts: the deliveries of the joined literal pairs, and
#: the messages that only they deliver (the workers counted those as unmatched).
LITERAL_FIGURES = ("literal_deliveries", "literal_only_messages")


def _around_arrow(
    messages: DataFrame,
    function: Any,
    added: StructField,
    name: str,
    layout: str | None = None,
    joined: tuple[pa.Table, int, Any] | None = None,
    sharded: tuple[Shards, str] | None = None,
) -> DataFrame:
    """``messages.mapInArrow(function)`` adding one column, called ``name`` in the result.

    Spark's ``mapInArrow`` cannot resolve some column names (``meta.id``), so the columns
    cross it under positional names (``_c0``, ``_c1``...) and get their own back after it: a
    projection, which costs nothing. When the added column is a list (``layout`` given), the
    exploded layout makes it one row per element; the nested one keeps the rows whose list is
    not empty (the worker leaves out the empty ones only where they are the majority).
    ``joined`` (the split plan: the literal table, the topic's column index, an ``Observation``
    or None): a left join on the topic appends the literal pairs' subscribers to each list.
    ``sharded`` (the shard plan: the shards, the dialect's separator): each message gets the
    shard of its topic's first word as a last column, which the function reads and drops, and
    the messages are shuffled by it (:func:`_by_shard`).
    """
    check_workers(messages.sparkSession)
    names = messages.columns
    positional = [f"_c{i}" for i in range(len(names))]
    fields = [
        StructField(p, f.dataType, f.nullable, f.metadata)
        for p, f in zip(positional, messages.schema.fields, strict=True)
    ]
    frame = messages.toDF(*positional)
    if sharded is not None:
        topic_index = function.topic_index
        frame = _by_shard(frame, F.col(positional[topic_index]), *sharded)
    mapped = frame.mapInArrow(function, StructType([*fields, added]))
    lists = F.col(added.name)
    if joined is not None:
        literal, topic_index, observation = joined
        # The schema given, not inferred: Spark Connect cannot infer one from an empty table,
        # and the Arrow fields carry the nullable flags that keep the output's schema.
        table = messages.sparkSession.createDataFrame(literal, schema=from_arrow_schema(literal.schema))
        mapped = mapped.join(table, F.col(positional[topic_index]) == F.col(PATTERN_COL), "left")
        more = F.coalesce(F.col(LITERAL_COL), F.array().cast(added.dataType))
        if observation is not None:
            only = F.count(F.when((F.size(lists) == 0) & (F.size(more) > 0), True))
            mapped = mapped.observe(
                observation, F.sum(F.size(more)).alias(LITERAL_FIGURES[0]), only.alias(LITERAL_FIGURES[1])
            )
        # Disjoint: a subscriber is on one side only (see _plan), so no subscriber twice.
        lists = F.array_sort(F.concat(lists, more)) if layout == "nested" else F.concat(lists, more)
    last = F.explode(lists) if layout == "exploded" else lists
    if layout == "nested":
        mapped = mapped.where(F.size(lists) > 0)
    return mapped.select(
        *[F.col(p).alias(n) for p, n in zip(positional, names, strict=True)], last.alias(name)
    )


def _by_shard(frame: DataFrame, topic: Any, shards: Shards, separator: str) -> DataFrame:
    """``frame`` with the shard of each message (its topic's first word's, see :mod:`._plan`) as
    the last column, shuffled into ranges of (shard, topic) and sorted by shard in each
    partition: a task sees one shard, or a few next to each other, and the same topic lands in
    one task. A first word no pattern starts with gets a shard by a hash (only the patterns in
    every shard can match it); so does a null topic (invalid in every shard)."""
    spark = frame.sparkSession
    words = spark.createDataFrame(shards.words, schema=from_arrow_schema(shards.words.schema))
    first = "_topicmatch_topic_first_word"
    count = len(shards.tables)
    spread = F.pmod(F.xxhash64(F.col(first)), F.lit(count)).cast("int")
    columns = [*map(F.col, frame.columns), F.coalesce(F.col(SHARD_COL), spread).alias(SHARD_COL)]
    framed = frame.withColumn(first, F.substring_index(topic, separator, 1))
    joined = framed.join(F.broadcast(words), F.col(first) == F.col(WORD_COL), "left").select(*columns)
    partitions = max(count, int(spark.conf.get("spark.sql.shuffle.partitions") or count))
    return joined.repartitionByRange(partitions, SHARD_COL, topic).sortWithinPartitions(SHARD_COL)


def check_workers(spark: Any) -> None:
    """In local mode, fail with one line unless Spark's Python workers can import topicmatch.

    A session created from a virtual environment that is not activated runs its workers with
    the system's ``python3``: the job then failed at its first action with 60 lines of Py4J
    trace ending in ``No module named 'topicmatch'``. The workers' interpreter is asked once per
    process (a subprocess, tens of milliseconds); on a cluster, or through Spark Connect, the
    workers are on other machines and are not checked here.
    """
    try:
        context = spark.sparkContext
    except (PySparkException, AttributeError):  # Spark Connect: no SparkContext on the client
        return
    if not str(context.master).startswith("local"):
        return
    python = context.pythonExec
    if not _imports_topicmatch(python):
        raise SparkPipelineError(
            f"Spark's Python workers run {python}, which cannot import topicmatch: create the Spark "
            f"session with PYSPARK_PYTHON={sys.executable} set (or from the activated virtual environment)"
        )


@functools.cache
def _imports_topicmatch(python: str) -> bool:
    """Whether the interpreter ``python`` (a path or a command) can import topicmatch."""
    if os.path.abspath(shutil.which(python) or python) == sys.executable:
        return True  # this very interpreter (not its symlink's target: a venv is its path)
    try:
        command = [python, "-c", "import topicmatch"]
        done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def quarantine(
    messages: DataFrame,
    *,
    topic_col: str = "topic",
    dialect: str = "amqp",
    pedantic: bool = False,
    reason_col: str = "reason",
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> DataFrame:
    """The messages :func:`route` cannot deliver, with a column saying why.

    A topic the dialect rejects (``reason`` is the dialect's own words, as in
    :class:`~topicmatch.InvalidTopicError`), a null topic, or a message over
    ``max_message_bytes``. A valid topic that nobody subscribes to is not quarantined: it is
    simply unmatched. Lazy; works on streaming DataFrames too.
    """
    if max_message_bytes < 0:
        raise MessagesError(f"max_message_bytes must be >= 0 (0: no limit), not {max_message_bytes}")
    make_dialect(dialect, pedantic=pedantic)  # an unknown dialect fails here, not in a worker
    index = _topic_index(messages.schema, topic_col, reason_col)
    function = QuarantineFunction(dialect, pedantic, index, _ADDED, max_message_bytes)
    return _around_arrow(messages, function, StructField(_ADDED, StringType(), False), reason_col)
