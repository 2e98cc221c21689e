"""``topicmatch route --stream``: the same route as Structured Streaming over a directory of files.

Two streaming queries read the directory: one routes and writes the deliveries, one writes the
quarantine. Each writes with Spark's file sink and its own checkpoint (``CHECKPOINT/deliveries``,
``CHECKPOINT/quarantine``): the sink commits each micro-batch's files in its ``_spark_metadata``
log, and after a crash the query replays the uncommitted batch from the offsets in the
checkpoint: processing is at least once, and each batch is committed to the output once, so the
output read with Spark (which follows the log) holds every delivery once. Directory listings
that ignore the log can see an uncommitted attempt's files (docs/pipeline.md says precisely).

Subscriptions change between micro-batches: the driver polls the subscriptions file; when it
has changed and stayed unchanged for one poll (a half-written file is never loaded), it loads
and validates the new version, stops the routing query (a batch in flight is cancelled and
replayed; the sink never commits it twice) and starts it again from the same checkpoint with
the new version. A new version that does not validate is reported and ignored: the stream goes
on with the old one. Each task tags its figures with the micro-batch id and the version it
used (see :mod:`._stats`), so the summary says which version routed each batch; the records
also go to ``CHECKPOINT/batches.jsonl``, the stream's audit trail across restarts.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StringType, StructField, StructType

from .. import TopicMatchError
from ..support.commandline import counted
from ._errors import MessagesError, SparkPipelineError
from ._io import (
    CORRUPT,
    SPARK_ERRORS,
    FileSystem,
    check_output_format,
    detect_format,
    load_with_schema,
    select_messages,
    spark_error,
    stream_schema,
    writer_options,
)
from ._pipeline import RouteJob, clear_outputs, reasons_in_output
from ._plan import choose
from ._stats import Counts, StatsParam, top_subscribers
from ._subscriptions import Subscriptions, fingerprint
from ._summary import Summary

__all__ = ["StreamRouter"]

_FIGURES = ("messages", "deliveries", "unmatched", "invalid")
#: The entries of a file sink's log (``_spark_metadata``): one per committed batch, compacted
#: every few batches. Anything else there (Spark's temporary ``.N.<uuid>.tmp``) commits nothing.
_SINK_LOG_ENTRY = re.compile(r"[0-9]+(\.compact)?")
#: The temporary files of a query's logs in its checkpoint (``offsets``, ``commits``): Spark
#: writes each entry ``N`` to ``.N.<uuid>.tmp`` (its checksum ``..N.<uuid>.tmp.crc``) and renames
#: it; a kill before the rename leaves them. Reading the log skips them, but a query whose
#: ``offsets`` holds no entry yet refuses to start unless ``offsets`` and ``commits`` are empty
#: (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): a kill as the first batch was being planned
#: made every restart fail.
_LOG_TEMPORARY = re.compile(r"\.\.?[0-9]+\.[0-9a-f-]+\.tmp(\.crc)?")
_QUERY_LOGS = ("offsets", "commits")


def _committed(fs: FileSystem, path: str) -> bool:
    """Whether the output directory ``path`` holds anything but an empty file sink log: a
    committed batch, data files, or anything not written by a stream."""
    if fs.names(path) != ["_spark_metadata"]:
        return True
    return any(_SINK_LOG_ENTRY.fullmatch(name) for name in fs.names(f"{path}/_spark_metadata"))


class StreamRouter:
    """Route a directory of message files as a stream; :meth:`run` blocks, :meth:`stop` ends it.

    ``once``: process the files present (``availableNow``) and return. Otherwise run until
    :meth:`stop`, ``timeout`` or an error, with a micro-batch every ``trigger_seconds``.
    ``log`` receives one line per event (batch done, subscriptions changed).
    """

    def __init__(
        self,
        spark: SparkSession,
        job: RouteJob,
        checkpoint: str,
        *,
        once: bool = False,
        trigger_seconds: float = 2.0,
        max_files_per_trigger: int | None = None,
        poll_seconds: float = 0.5,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.spark = spark
        self.job = job
        self.checkpoint = checkpoint.rstrip("/")
        self.once = once
        self.trigger_seconds = trigger_seconds
        self.max_files_per_trigger = max_files_per_trigger
        self.poll_seconds = poll_seconds
        self.log = log
        self.batches: list[dict[str, Any]] = []
        self.table: Subscriptions | None = None
        self._fs = FileSystem(spark)
        self._stop = threading.Event()
        self._seen: set[int] = set()
        self._stats: Any = None
        self._totals: dict[str, tuple[list[Any], Counts]] = {}  # version -> (subscribers, counts)
        self._versions: dict[str, dict[str, Any]] = {}
        #: the quarantined messages of this run by reason, counted when the run ends
        self._reasons: dict[str, int] = {}

    @property
    def version(self) -> str | None:
        """The subscriptions version routing now."""
        return self.table.version if self.table is not None else None

    def stop(self) -> None:
        """Ask :meth:`run` to stop after the current poll (thread-safe)."""
        self._stop.set()

    # -- setting up ----------------------------------------------------------------------
    def _source(self) -> DataFrame:
        job, fs = self.job, self._fs
        if not fs.is_dir(job.messages):
            raise MessagesError(
                f"--stream reads a directory of message files; {job.messages} is not a directory"
            )
        fmt = detect_format(fs, job.messages, job.messages_format)
        schema = stream_schema(self.spark, job.messages, fmt, job.topic_col)
        if fmt == "json" and CORRUPT not in schema.fieldNames():
            # The files there at the start were all valid JSON, so the inferred schema has no
            # column for a line Spark cannot parse; with it, a later such line is quarantined
            # as not valid JSON (RouteJob.quarantine_of) rather than as a null topic.
            schema = StructType([*schema.fields, StructField(CORRUPT, StringType())])
        reader = self.spark.readStream
        if self.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", self.max_files_per_trigger)
        frame = load_with_schema(reader, fmt, schema, job.messages, job.topic_col)
        return select_messages(frame, job.from_offset, job.since)

    def _start(self, frame: DataFrame, path: str, name: str) -> StreamingQuery:
        writer: Any = frame.writeStream.format(self.job.format).queryName(f"topicmatch-{name}")
        writer = writer.option("path", path).option("checkpointLocation", f"{self.checkpoint}/{name}")
        writer = writer.options(**writer_options(self.job.format))
        if self.job.partition_by and name == "deliveries":
            writer = writer.partitionBy(self.job.partition_by)
        if self.once:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{self.trigger_seconds} seconds")
        return writer.start()  # type: ignore[no-any-return]

    def _prepare_outputs(self) -> None:
        job, fs = self.job, self._fs
        if job.overwrite:
            # The checkpoint first: killed before the outputs go, the restart finds outputs
            # without a checkpoint and says so; the other way round, it went on from the old
            # checkpoint, taking the deleted batches for done.
            outputs = {self.checkpoint: "checkpoint", **job.outputs}
            clear_outputs(fs, outputs, overwrite=True)
            for path in outputs:
                fs.delete(path)  # checked by clear_outputs: written by this tool
            return
        for name, path in (("deliveries", job.deliveries_path), ("quarantine", job.quarantine_path)):
            if not fs.exists(path) or fs.exists(f"{self.checkpoint}/{name}"):
                continue
            if not _committed(fs, path):
                # Spark's file sink makes its log when the query is created, before the query
                # writes its checkpoint: a stream killed in between left this empty log, and
                # nothing can have been committed without a checkpoint. Nothing to lose.
                self.log(f"stream: {path} holds no committed batch (a stream stopped as it started)")
                continue
            raise SparkPipelineError(
                f"{path} exists but {self.checkpoint} holds no checkpoint for it; "
                "pass the checkpoint it was written with, or --overwrite to start again"
            )
        self._remove_temporaries()

    def _remove_temporaries(self) -> None:
        """Delete what a killed run left half-written in the queries' logs (:data:`_LOG_TEMPORARY`):
        never part of the log, and in the way of a query that has not planned a batch yet. The
        checkpoint belongs to this stream alone, so no other run is writing them."""
        fs, removed = self._fs, 0
        for name in ("deliveries", "quarantine"):
            for log in _QUERY_LOGS:
                directory = f"{self.checkpoint}/{name}/{log}"
                for entry in fs.names(directory):
                    if _LOG_TEMPORARY.fullmatch(entry):
                        fs.delete(f"{directory}/{entry}")
                        removed += 1
        if removed:
            self.log(f"stream: removed {removed} temporary file(s) a stopped run left in {self.checkpoint}")

    # -- running -------------------------------------------------------------------------
    def run(self, timeout: float | None = None) -> Summary:
        """Stream until done (``once``), stopped, or ``timeout`` seconds; return the summary."""
        start = time.perf_counter()
        deadline = start + timeout if timeout else None
        table = self.table = self.job.load_subscriptions()
        self._note_version(table)
        watched = fingerprint(self.job.subscriptions)
        pending: Any = None
        self._prepare_outputs()
        source = self._source()
        self._stats = self.spark.sparkContext.accumulator({}, StatsParam())
        job = self.job
        queries: list[StreamingQuery] = []
        try:
            bad = job.quarantine_of(source)
            check_output_format(bad.schema, job.format)
            # What earlier runs quarantined, which this run's summary does not count.
            earlier = self._reasons_written(bad.schema)
            queries.append(self._start(bad, job.quarantine_path, "quarantine"))
            while True:
                routed = job.deliveries_of(source, choose(table, "matcher"), self._stats)
                check_output_format(routed.schema, job.format)
                query = self._start(routed, job.deliveries_path, "deliveries")
                queries.append(query)
                self.log(f"stream: routing {job.messages} with subscriptions version {table.version}")
                switch: Subscriptions | None = None
                while switch is None:
                    # PySpark takes float seconds (it waits int(timeout * 1000) ms); its hint says int.
                    finished = query.awaitTermination(self.poll_seconds)  # type: ignore[arg-type]
                    self._collect(query, table, start)
                    if finished:
                        break
                    if self._stop.is_set() or (deadline is not None and time.perf_counter() > deadline):
                        break
                    current = fingerprint(self.job.subscriptions)
                    if current != watched:
                        if current == pending:  # unchanged for one poll: finished writing
                            watched, pending = current, None
                            switch = self._reload(table)
                        else:
                            pending = current
                if query.isActive:
                    query.stop()
                    self._collect(query, table, start)
                queries.remove(query)
                if switch is None:
                    break
                table = self.table = switch
                self._note_version(table)
            quarantine_query = queries.pop()
            if self.once:
                left = None if deadline is None else max(1.0, deadline - time.perf_counter())
                quarantine_query.awaitTermination(left)  # type: ignore[arg-type]
            quarantine_query.stop()
            if any(counts.invalid for _, counts in self._totals.values()):
                now = self._reasons_written(bad.schema)
                self._reasons = {
                    reason: count - earlier.get(reason, 0)
                    for reason, count in now.items()
                    if count > earlier.get(reason, 0)
                }
        except SPARK_ERRORS as error:
            raise SparkPipelineError(f"stream failed: {spark_error(error)}") from None
        except KeyboardInterrupt:  # the usual way to end a stream: keep what it did on record
            self._fs.write_text(job.summary_path, self._summary(start).to_json())
            raise
        finally:
            for leftover in queries:
                leftover.stop()
        summary = self._summary(start)
        self._fs.write_text(job.summary_path, summary.to_json())
        return summary

    def _reasons_written(self, schema: StructType) -> dict[str, int]:
        """The quarantine's messages by reason, counted as batch mode counts them, in what the
        sink has committed (none where there is no output, or its sink log holds no batch yet)."""
        path = self.job.quarantine_path
        if not self._fs.exists(path) or not _committed(self._fs, path):
            return {}
        return reasons_in_output(self.spark, schema, self.job)

    def _reload(self, table: Subscriptions) -> Subscriptions | None:
        try:
            new = self.job.load_subscriptions()
        except TopicMatchError as error:
            self.log(
                f"stream: {self.job.subscriptions} changed but is unusable ({error}); "
                f"still on {table.version}"
            )
            return None
        if new.version == table.version:
            return None
        rows = counted(len(new), "row")
        self.log(f"stream: subscriptions changed, version {table.version} -> {new.version} ({rows})")
        return new

    def _note_version(self, table: Subscriptions) -> None:
        self._versions.setdefault(table.version, {**table.describe(), "batches": []})
        self._totals.setdefault(
            table.version, (table.subscribers.to_pylist(), Counts(len(table.subscribers)))
        )

    def _collect(self, query: StreamingQuery, table: Subscriptions, start: float) -> None:
        """Record every micro-batch the query finished since the last call."""
        for progress in query.recentProgress:
            batch = int(progress["batchId"])
            rows = int(progress["numInputRows"])
            key = (batch, table.version)
            counts = self._stats.value.pop(key, None)
            if batch in self._seen or (counts is None and rows == 0):
                continue
            self._seen.add(batch)
            record: dict[str, Any] = {"batch": batch, "version": table.version}
            if counts is None:  # the sink had committed it before a restart: nothing ran again
                record.update(messages=0, deliveries=0, unmatched=0, invalid=0, replayed=True)
            else:
                record.update(counts.as_dict())
                self._totals[table.version][1].merge(counts)
            record["files"] = self._batch_files(batch)
            self.batches.append(record)
            self._versions[table.version]["batches"].append(batch)
            self._append_audit(record)
            messages = counted(record["messages"], "message")
            deliveries = counted(record["deliveries"], "delivery", "deliveries")
            self.log(
                f"stream: batch {batch} (version {table.version}): {messages} -> "
                f"{deliveries}, {record['invalid']:,} invalid"
            )
            self._fs.write_text(self.job.summary_path, self._summary(start).to_json())

    def _batch_files(self, batch: int) -> list[str]:
        """The message files of a micro-batch, from the checkpoint: the file source's log
        entries that the batch's offsets cover.

        The source logs a batch's files (``sources/0/J``) before the query logs the batch
        (``offsets/N``, whose ``logOffset`` is J), and the two ids are equal until a kill
        falls between the two writes: the restart's batch then takes that entry and a new
        one (``logOffset`` J+1), and from then on batch N covers the entries after batch
        N-1's ``logOffset`` up to its own, which is what is read here (the entry of the same
        id only when the offsets log cannot tell)."""
        root = f"{self.checkpoint}/deliveries"
        end = self._log_offset(f"{root}/offsets/{batch}")
        start = self._log_offset(f"{root}/offsets/{batch - 1}") if batch else -1
        entries = range(batch, batch + 1) if end is None or start is None else range(start + 1, end + 1)
        return sorted(name for entry in entries for name in self._source_files(f"{root}/sources/0", entry))

    def _log_offset(self, path: str) -> int | None:
        """The file source's ``logOffset`` in an offsets log entry (its last line), or None."""
        text = self._fs.read_text(path)
        try:
            offset = json.loads(text.splitlines()[-1])["logOffset"] if text else None
        except (ValueError, KeyError, TypeError):
            return None
        return offset if isinstance(offset, int) else None

    def _source_files(self, log_dir: str, entry: int) -> list[str]:
        """The names of the files the file source logged as its batch ``entry``."""
        for name in (str(entry), f"{entry}.compact"):
            text = self._fs.read_text(f"{log_dir}/{name}")
            if text is None:
                continue
            files = []
            for line in text.splitlines()[1:]:  # the first line is the log's version
                try:
                    logged = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if logged.get("batchId") == entry:
                    files.append(str(logged["path"]).rsplit("/", 1)[-1])
            return files
        return []

    def _append_audit(self, record: dict[str, Any]) -> None:
        path = f"{self.checkpoint}/batches.jsonl"
        previous = self._fs.read_text(path) or ""
        self._fs.write_text(path, previous + json.dumps(record, default=str) + "\n")

    def _summary(self, start: float) -> Summary:
        assert self.table is not None
        job = self.job
        # Subscriber ids differ between versions: add up by subscriber value.
        volume: dict[Any, int] = {}
        for values, counts in self._totals.values():
            for subscriber, count in top_subscribers(counts, values, len(values)):
                volume[subscriber] = volume.get(subscriber, 0) + count
        top = sorted(volume.items(), key=lambda item: -item[1])[: job.top]
        figures = {name: sum(getattr(c, name) for _, c in self._totals.values()) for name in _FIGURES}
        return Summary(
            mode="stream",
            dialect=job.dialect,
            subscriptions=self.table.describe(),
            quarantine_reasons=dict(self._reasons),
            top_subscribers=top,
            elapsed_seconds=time.perf_counter() - start,
            output={
                "deliveries": job.deliveries_path,
                "quarantine": job.quarantine_path,
                "format": job.format,
                "layout": job.layout,
                "partition_by": job.partition_by,
                "summary": job.summary_path,
                "checkpoint": self.checkpoint,
            },
            filters=job.filters(),
            batches=list(self.batches),
            versions=list(self._versions.values()),
            **figures,
        )
