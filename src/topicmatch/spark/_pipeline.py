"""The batch job of ``topicmatch route``: read, route, write the deliveries and the quarantine.

One Spark job writes the deliveries; the figures of the summary are counted in the workers on
the way (see :mod:`._stats`), so there is no second pass over the data. (Under the split plan,
:mod:`._plan`, a Spark ``Observation`` counts the join's deliveries on the way too, and the top
subscribers take one read of the written output's subscriber column.) Only when some messages
were invalid does a second, cheap job write them to the quarantine (it validates each distinct
topic once and keeps only the bad rows).

Outputs, under ``--out``: ``deliveries/`` (one row per message and subscriber, or with the nested
layout one per message with its subscribers), ``quarantine/``
(invalid messages and the reason, when there are any) and ``summary.json``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import dataclass
from typing import Any, TextIO

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ._errors import SparkPipelineError
from ._io import (
    CORRUPT,
    READ_OPTIONS,
    SPARK_ERRORS,
    FileSystem,
    check_output_format,
    read_messages,
    select_messages,
    spark_error,
    write,
)
from ._plan import Plan, choose
from ._route import DEFAULT_MAX_MESSAGE_BYTES, LAYOUTS, LITERAL_FIGURES, _route, quarantine
from ._session import JobProgress
from ._stats import Counts, StatsParam, tied_after, top_subscribers
from ._subscriptions import Subscriptions
from ._summary import REASONS, Summary
from ._worker import NULL_REASON

__all__ = ["RouteJob", "already_exists", "run_batch"]


#: How much of a JSON line Spark could not parse (:data:`CORRUPT`) a quarantine reason shows.
MAX_SHOWN = 200
#: The start of the quarantine reason of such a line.
NOT_JSON = "not valid JSON: "


@dataclass
class RouteJob:
    """Everything ``topicmatch route`` was asked to do."""

    messages: str
    subscriptions: str
    out: str
    format: str = "parquet"
    layout: str = "exploded"
    plan: str = "auto"
    messages_format: str = "auto"
    dialect: str = "amqp"
    pedantic: bool = False
    topic_col: str = "topic"
    partition_by: str | None = None
    from_offset: int | None = None
    since: dt.datetime | None = None
    skip_invalid_patterns: bool = False
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    overwrite: bool = False
    top: int = 10

    @property
    def deliveries_path(self) -> str:
        return self.out.rstrip("/") + "/deliveries"

    @property
    def quarantine_path(self) -> str:
        return self.out.rstrip("/") + "/quarantine"

    @property
    def summary_path(self) -> str:
        return self.out.rstrip("/") + "/summary.json"

    @property
    def outputs(self) -> dict[str, str]:
        """What the job writes under ``out``: path -> kind (:meth:`FileSystem.foreign`). The one
        list that :func:`clear_outputs`, the stream's preparation and the checks the command
        makes before Spark starts all use."""
        return {self.deliveries_path: "output", self.quarantine_path: "output", self.summary_path: "summary"}

    def deliveries_of(
        self, messages: DataFrame, plan: Plan, stats: Any, observation: Observation | None = None
    ) -> DataFrame:
        """The deliveries of ``messages`` (batch or stream alike) by ``plan``, without Spark's
        column of unparsable JSON lines (:data:`CORRUPT`): the output has the same columns
        whether the log was clean or not."""
        column = LAYOUTS[self.layout]
        routed = _route(
            messages,
            plan.matcher,
            self.topic_col,
            column,
            self.max_message_bytes,
            stats=stats,
            layout=self.layout,
            literal=plan.literal,
            observation=observation,
        )
        return routed.drop(CORRUPT) if CORRUPT in routed.columns else routed

    def quarantine_of(self, messages: DataFrame) -> DataFrame:
        """The messages this job cannot deliver, with the reason (batch or stream alike).

        A JSON line Spark could not parse comes as a row of nulls with the line in
        :data:`CORRUPT`: its reason says so and shows the line's start (not "the topic is
        null"), and the column itself is not in the output.
        """
        bad = quarantine(
            messages,
            topic_col=self.topic_col,
            dialect=self.dialect,
            pedantic=self.pedantic,
            max_message_bytes=self.max_message_bytes,
        )
        if CORRUPT not in bad.columns:
            return bad
        line = F.col(CORRUPT)
        reason = F.concat(F.lit(NOT_JSON), F.substring(line, 1, MAX_SHOWN))
        return bad.withColumn("reason", F.when(line.isNotNull(), reason).otherwise(F.col("reason"))).drop(
            CORRUPT
        )

    def load_subscriptions(self) -> Subscriptions:
        return Subscriptions.read(
            self.subscriptions,
            dialect=self.dialect,
            pedantic=self.pedantic,
            skip_invalid=self.skip_invalid_patterns,
        )

    def nothing_routed(self) -> str:
        """Why a run routed no message: what the user should look at."""
        if self.filters():
            wanted = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in self.filters().items())
            return f"no message of {self.messages} is at or after {wanted}: the outputs are empty"
        return f"{self.messages} holds no message (an empty file, or no file): the outputs are empty"

    def filters(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.from_offset is not None:
            out["from_offset"] = self.from_offset
        if self.since is not None:
            out["since"] = self.since.isoformat()
        return out


def _routed(stats: Any) -> tuple[int, int]:
    values = list(stats.value.values())
    return sum(c.messages for c in values), sum(c.deliveries for c in values)


def _top_in_output(
    spark: SparkSession, deliveries: DataFrame, job: RouteJob
) -> tuple[list[tuple[Any, int]], int]:
    """The ``job.top`` subscribers with the most deliveries, most first (ties: the smaller
    subscriber first), and how many more tie with the last (:func:`~._stats.tied_after`),
    counted in the written output: under the split plan the join's deliveries are nowhere else
    (one more read of the output's subscriber column)."""
    reader = (
        spark.read.schema(deliveries.schema).format(job.format).options(**READ_OPTIONS.get(job.format, {}))
    )
    written = reader.load(job.deliveries_path)
    column = F.col(LAYOUTS[job.layout])
    subscribers = written.select((F.explode(column) if job.layout == "nested" else column).alias("s"))
    per = subscribers.groupBy("s").count()
    ranked = per.orderBy(F.desc("count"), F.asc("s")).limit(job.top)
    top = [(row["s"], int(row["count"])) for row in ranked.collect()]
    if not top:
        return top, 0
    last = top[-1][1]
    return top, per.where(F.col("count") == last).count() - sum(1 for _, n in top if n == last)


def reasons_in_output(spark: SparkSession, schema: Any, job: RouteJob) -> dict[str, int]:
    """The quarantined messages by kind of reason (:data:`~._summary.REASONS`), counted in the
    written quarantine (one read of its reason column: the messages Spark could not parse as
    JSON are told apart there, not in the workers)."""
    reader = spark.read.schema(schema).format(job.format).options(**READ_OPTIONS.get(job.format, {}))
    reason = F.col("reason")
    kind = (
        F.when(reason.startswith(NOT_JSON), "not_json")
        .when(reason == NULL_REASON, "null_topic")
        .when(reason.endswith("(max_message_bytes)"), "too_big")
        .otherwise("invalid_topic")
    )
    rows = reader.load(job.quarantine_path).groupBy(kind.alias("kind")).count().collect()
    found = {row["kind"]: int(row["count"]) for row in rows}
    return {key: found[key] for key in REASONS if found.get(key)}


def already_exists(path: str) -> str:
    """The error of an output that is there already, without ``--overwrite``."""
    return f"{path} already exists; pass --overwrite to replace it"


def clear_outputs(fs: FileSystem, paths: dict[str, str], overwrite: bool) -> None:
    """Refuse, before anything is deleted, to replace an output without ``--overwrite`` or one
    that holds something this tool did not write (``paths``: path -> kind, see
    :meth:`FileSystem.foreign`). The caller then deletes the paths."""
    existing = [path for path in paths if fs.exists(path)]
    if existing and not overwrite:
        raise SparkPipelineError(already_exists(existing[0]))
    for path, kind in paths.items():
        odd = fs.foreign(path, kind)
        if odd is not None:
            raise SparkPipelineError(
                f"{odd} was not written by topicmatch; --overwrite replaces only what it wrote: "
                f"move it away or choose another output"
            )


def run_batch(
    spark: SparkSession, job: RouteJob, err: TextIO, progress: bool = True, table: Subscriptions | None = None
) -> Summary:
    """Run the batch job; return its summary (also written to ``job.summary_path``).

    ``table``: the subscriptions if already loaded (else they are read from ``job``).
    """
    start = time.perf_counter()
    if table is None:
        table = job.load_subscriptions()  # an invalid pattern stops everything here, before any work
    fs = FileSystem(spark)
    frame, _ = read_messages(spark, job.messages, job.messages_format, job.topic_col)
    frame = select_messages(frame, job.from_offset, job.since)
    outputs = job.outputs
    clear_outputs(fs, outputs, job.overwrite)
    stats = spark.sparkContext.accumulator({}, StatsParam())
    plan = choose(table, job.plan)
    observation = Observation("topicmatch-literal") if plan.literal is not None else None
    deliveries = job.deliveries_of(frame, plan, stats, observation)
    check_output_format(deliveries.schema, job.format)
    for stale in outputs:
        fs.delete(stale)  # checked by clear_outputs: written by this tool, and --overwrite given
    try:
        with (
            JobProgress(spark, "routing", lambda: _routed(stats), err)
            if progress
            else contextlib.nullcontext()
        ):
            write(deliveries, job.deliveries_path, job.format, job.partition_by)
        counts: Counts = stats.value.get((None, plan.matcher.version)) or Counts(
            len(plan.matcher.subscribers)
        )
        top = top_subscribers(counts, plan.matcher.subscribers.to_pylist(), job.top)
        tied = tied_after(counts, top)
        if observation is not None:  # the split plan: add what the join delivered
            figures = observation.get
            counts.deliveries += int(figures.get(LITERAL_FIGURES[0]) or 0)
            counts.unmatched -= int(figures.get(LITERAL_FIGURES[1]) or 0)
            top, tied = _top_in_output(spark, deliveries, job) if job.top else ([], 0)
        reasons: dict[str, int] = {}
        if counts.invalid:
            bad = job.quarantine_of(frame)
            write(bad, job.quarantine_path, job.format)
            reasons = reasons_in_output(spark, bad.schema, job)
    except SPARK_ERRORS as error:
        for partial in (job.deliveries_path, job.quarantine_path):  # half-written: of no use to anyone
            fs.delete(partial)
        raise SparkPipelineError(f"routing failed: {spark_error(error)}") from None
    summary = Summary(
        mode="batch",
        dialect=job.dialect,
        subscriptions={**table.describe(), **plan.describe()},
        messages=counts.messages,
        deliveries=counts.deliveries,
        unmatched=counts.unmatched,
        invalid=counts.invalid,
        quarantine_reasons=reasons,
        top_subscribers=top,
        top_tied=tied,
        elapsed_seconds=time.perf_counter() - start,
        output={
            "deliveries": job.deliveries_path,
            "quarantine": job.quarantine_path if counts.invalid else None,
            "format": job.format,
            "layout": job.layout,
            "partition_by": job.partition_by,
            "summary": job.summary_path,
        },
        filters=job.filters(),
    )
    fs.write_text(job.summary_path, summary.to_json())
    if not summary.messages:
        print(f"topicmatch: warning: {job.nothing_routed()}", file=err)
    return summary
