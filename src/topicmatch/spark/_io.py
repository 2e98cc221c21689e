"""Reading the message log and writing the outputs, with one clear line for every bad input.

Spark reports a missing path, a missing column or files whose schemas disagree as long JVM
stack traces, sometimes only once the job runs. Everything here checks what it can up front
(the path exists, the columns are there with usable types, the output format can hold the
columns) and turns whatever Spark still raises into a :class:`MessagesError` with the first
line of Spark's own message.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped, unused-ignore]
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DateType,
    IntegralType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..support.commandline import counted
from ._errors import MessagesError

__all__ = [
    "CORRUPT",
    "MESSAGE_FORMATS",
    "OUTPUT_FORMATS",
    "READ_OPTIONS",
    "SPARK_ERRORS",
    "FileSystem",
    "check_output_format",
    "detect_format",
    "escaped_line",
    "load_with_schema",
    "parse_since",
    "read_messages",
    "select_messages",
    "spark_error",
    "write",
    "writer_options",
]

MESSAGE_FORMATS = ("parquet", "json", "csv")
OUTPUT_FORMATS = ("parquet", "json", "csv")
_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".csv": "csv"}


#: What Spark raises: its own errors, and Java exceptions PySpark does not translate.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("JVM stacktrace", "at ", "Traceback")):
            return re.sub(r"\s*SQLSTATE: \w+\.?$", "", line)[:500]
    return ""


def spark_error(error: BaseException) -> str:
    """The most telling line of a Spark, Py4J or Python-worker error, without any stack trace.

    A failed job wraps the real error in "Job aborted due to stage failure"; the first cause
    that says something else is the one worth printing.
    """
    java = getattr(error, "java_exception", None)
    if java is None:
        return _first_line(str(error)) or type(error).__name__
    lines: list[str] = []
    while java is not None and len(lines) < 20:
        message = _first_line(str(java.getMessage() or ""))
        if message:
            lines.append(message)
        java = java.getCause()
    for line in lines:
        if not line.startswith("Job aborted due to stage failure"):
            return line
    return lines[0] if lines else type(error).__name__


#: Names Spark writes in an output directory: data files, markers, checksums, partitions.
_OUTPUT_NAME = re.compile(r"part-.*|_SUCCESS|_spark_metadata|_temporary|\..*\.crc|[^=]+=.*")
#: The streaming queries of ``route --stream``, each with its checkpoint under the checkpoint
#: directory, and the files the stream keeps beside them.
_STREAM_QUERIES = frozenset({"deliveries", "quarantine"})
_CHECKPOINT_FILES = frozenset(
    {"batches.jsonl", ".batches.jsonl.crc", "batches.jsonl.tmp", ".batches.jsonl.tmp.crc"}
)
#: What Structured Streaming keeps in one query's checkpoint.
_QUERY_CHECKPOINT = frozenset({"metadata", ".metadata.crc", "offsets", "commits", "sources", "state"})
#: The temporary file Spark writes a query's ``metadata`` to before renaming it (and its
#: checksum): what a kill as the query starts leaves, maybe alone, in its checkpoint.
_METADATA_TEMPORARY = re.compile(r"\.\.?metadata\.[0-9a-f-]+\.tmp(\.crc)?")


class FileSystem:
    """Hadoop's file system through the JVM: the same calls for local paths, HDFS or S3."""

    def __init__(self, spark: SparkSession) -> None:
        context: Any = spark.sparkContext
        self._jvm = context._jvm
        self._gateway = context._gateway
        self._conf = context._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        jpath = self._jvm.org.apache.hadoop.fs.Path(path)
        return jpath.getFileSystem(self._conf), jpath

    def exists(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath))

    def is_dir(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath) and fs.getFileStatus(jpath).isDirectory())

    def delete(self, path: str) -> None:
        fs, jpath = self._fs(path)
        fs.delete(jpath, True)

    def foreign(self, path: str, kind: str) -> str | None:
        """What in ``path`` this tool did not write (a name inside it, or the path itself), or
        None when ``path`` is absent or holds only what a job writes there: ``kind`` ``output``
        (a directory of Spark's data files), ``summary`` (the summary file) or ``checkpoint``
        (the streaming queries' checkpoints). A path is deleted only after this said None."""
        if not self.exists(path):
            return None
        if kind == "summary":
            text = "" if self.is_dir(path) else self.read_text(path)
            try:
                summary = json.loads(text or "")
            except ValueError:
                summary = None
            return None if isinstance(summary, dict) and "mode" in summary else path
        if not self.is_dir(path):
            return path
        if kind == "output":
            return self._foreign_in(path, _OUTPUT_NAME, depth=8)
        for name in self.names(path):  # a checkpoint: one directory per query, and the batch log
            inner = f"{path}/{name}"
            if name in _STREAM_QUERIES and self.is_dir(inner):
                names = self.names(inner)
                spark = [n for n in names if not _METADATA_TEMPORARY.fullmatch(n)]
                odd = [n for n in spark if n not in _QUERY_CHECKPOINT]
                if odd:
                    return f"{inner}/{odd[0]}"
                if spark and "metadata" not in spark:  # a query's checkpoint starts with it
                    return inner
            elif name not in _CHECKPOINT_FILES:
                return inner
        return None

    def _foreign_in(self, path: str, allowed: re.Pattern[str], depth: int) -> str | None:
        for name in self.names(path):
            inner = f"{path}/{name}"
            if not allowed.fullmatch(name):
                return inner
            if "=" in name and depth > 0 and self.is_dir(inner):  # a partition's directory
                odd = self._foreign_in(inner, allowed, depth - 1)
                if odd is not None:
                    return odd
        return None

    def data_bytes(self, path: str) -> int:
        """The bytes of data at ``path``: its own size for a file; for a directory, the sizes of
        the files in it and in its partition directories, not counting hidden or ``_`` files
        (checksums, markers)."""
        fs, jpath = self._fs(path)
        status = fs.getFileStatus(jpath)
        if not status.isDirectory():
            return int(status.getLen())
        total = 0
        for child in fs.listStatus(jpath):
            name = str(child.getPath().getName())
            if name.startswith(("_", ".")):
                continue
            total += (
                self.data_bytes(f"{path.rstrip('/')}/{name}") if child.isDirectory() else int(child.getLen())
            )
        return total

    def names(self, path: str) -> list[str]:
        """The names in a directory (sorted), or [] when it does not exist."""
        fs, jpath = self._fs(path)
        if not fs.exists(jpath):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(jpath))

    def read_text(self, path: str) -> str | None:
        fs, jpath = self._fs(path)
        if not fs.exists(jpath):
            return None
        stream = fs.open(jpath)
        try:
            scanner = self._jvm.java.util.Scanner(stream, "UTF-8").useDelimiter("\\A")
            return str(scanner.next()) if scanner.hasNext() else ""
        finally:
            stream.close()

    def write_text(self, path: str, text: str) -> None:
        """Write a small file whole: to a temporary name, then renamed over the old one in one step.

        A kill at any point leaves the old file or the new one, whole, never neither: deleting
        the old one first (as this did) left neither for a moment, and a kill then lost the
        stream's audit trail. On the local file system the file is written without Hadoop's
        checksum file beside it, which a second rename would have to move (a kill between the
        two would leave a checksum that no longer matches, and every later read would fail);
        a checksum left by an earlier write is removed before the rename. Elsewhere (HDFS) the
        rename replaces the old file atomically.
        """
        fs, jpath = self._fs(path)
        hadoop = self._jvm.org.apache.hadoop.fs
        checksummed = self._jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem")
        raw = fs.getRawFileSystem() if checksummed.isInstance(fs) else None
        temporary = hadoop.Path(path + ".tmp")
        stream = (fs if raw is None else raw).create(temporary, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if raw is not None:
            checksum = fs.getChecksumFile(jpath)
            if raw.exists(checksum):
                raw.delete(checksum, False)
            if not raw.rename(temporary, jpath):  # rename(2): replaces the old file at once
                raise OSError(f"cannot rename {path}.tmp to {path}")
            return
        options = self._gateway.new_array(hadoop.Options.Rename, 1)
        options[0] = hadoop.Options.Rename.OVERWRITE
        hadoop.FileContext.getFileContext(jpath.toUri(), self._conf).rename(temporary, jpath, options)


def detect_format(fs: FileSystem, path: str, requested: str = "auto") -> str:
    """``requested`` unless ``auto``: then from the path's ending or its data files' (default Parquet)."""
    if requested != "auto":
        return requested
    for name in [path, *(fs.names(path) if fs.is_dir(path) else [])]:
        for suffix, fmt in _SUFFIXES.items():
            if name.lower().endswith(suffix) or name.lower().endswith(suffix + ".gz"):
                return fmt
    return "parquet"


#: Where a JSON line ends: at ``\n`` only (a ``\r\n`` line is read whole, its ``\r`` being
#: JSON white space). Spark's default also ends a line at a lone ``\r``, which split a line
#: holding one into two records, both quarantined as not valid JSON. A ``\r`` is then part of
#: its line: white space between tokens; inside a string, a control character that JSON
#: requires escaped (RFC 8259), so the line is quarantined, whole, as not valid JSON.
_JSON_LINES = {"lineSep": "\n"}
#: How a text log's types are inferred (one extra pass over it): CSV has no types at all, and
#: JSON none for times. A column whose every value is a timestamp becomes one in both, as it
#: is in a Parquet log.
_INFER = {"csv": {"header": "true", "inferSchema": "true"}, "json": {"inferTimestamp": "true", **_JSON_LINES}}


def read_messages(
    spark: SparkSession, path: str, fmt: str = "auto", topic_col: str = "topic"
) -> tuple[DataFrame, str]:
    """The messages at ``path`` (a file or a directory of files) and the format they were read in.

    The same log gives the same columns whatever its format: a text log (CSV, JSON) is read
    with the schema of :func:`_text_schema`, so its columns come in the file's order, integers
    as ``bigint`` and timestamps as ``timestamp``, as in the Parquet that ``generate`` writes.
    CSV: an empty topic is the empty topic (CSV has no null: Spark's null there is an empty
    field, which for AMQP is the valid zero-word key). JSON: lines end at ``\\n`` only
    (:data:`_JSON_LINES`); a log of which no line is valid JSON with the topic field is refused
    with one :class:`MessagesError` naming the file and how many lines it has, rather than read
    as a table of Spark's corrupt-record column alone.
    """
    fs = FileSystem(spark)
    if not fs.exists(path):
        raise MessagesError(f"cannot read messages {path}: no such file or directory")
    fmt = detect_format(fs, path, fmt)
    if fs.data_bytes(path) == 0:
        # Nothing to read (a quiet hour: an empty file, or a directory of none): zero messages,
        # in the columns of the message log `generate` writes (payload included), rather than
        # Spark's failure to infer a schema. The command says it found none (run_batch).
        empty = StructType(
            [
                StructField("offset", LongType()),
                StructField("timestamp", TimestampType()),
                StructField(topic_col, StringType()),
                StructField("payload", StringType()),
            ]
        )
        return spark.createDataFrame([], empty), fmt
    try:
        if fmt == "csv":
            _check_csv_bytes(spark, path)
        if fmt in _INFER:
            inferred = spark.read.format(fmt).options(**_INFER[fmt]).load(path).schema
            if fmt == "json" and topic_col not in inferred.names:
                lines = counted(_text_lines(spark, path).count(), "line")
                raise MessagesError(
                    f"cannot read messages {path} as json: no line is valid JSON with a "
                    f"{topic_col!r} field ({lines} read)"
                )
            schema = _text_schema(inferred, topic_col, _first_keys(spark, path) if fmt == "json" else [])
            frame = load_with_schema(spark.read, fmt, schema, path, topic_col)
        else:
            frame = spark.read.format(fmt).load(path)
    except SPARK_ERRORS as error:
        raise MessagesError(f"cannot read messages {path} as {fmt}: {spark_error(error)}") from None
    if not frame.columns:
        raise MessagesError(f"cannot read messages {path} as {fmt}: no columns (empty or not {fmt})")
    return frame, fmt


#: Options of a file read with its schema, a log or a written output (CSV's header names the
#: columns, it is not a row; a JSON line ends at ``\n`` only, :data:`_JSON_LINES`).
READ_OPTIONS = {"csv": {"header": "true"}, "json": _JSON_LINES}
#: Spark's column for a JSON line it cannot parse (its PERMISSIVE mode adds it to a log that has
#: one): always last in a text log's schema; _pipeline keeps it out of the outputs.
CORRUPT = "_corrupt_record"


def _text_schema(inferred: StructType, topic_col: str, order: list[str]) -> StructType:
    """The schema a text log is read with: ``inferred``, with the topic as text whatever it
    looks like (inference made ``1.5``, a valid AMQP key, a number), every integer type as
    ``bigint`` (CSV infers ``int`` for small numbers, JSON ``bigint``), and the columns named
    in ``order`` first, in that order (JSON's inference sorts them by name; ``order`` is the
    first line's keys); the others, then Spark's corrupt-record column, after them. The
    positions of a CSV log's columns are kept (``order`` is empty): Spark reads CSV by position.
    """
    fields = []
    for field in inferred.fields:
        if field.name == topic_col:
            field = StructField(field.name, StringType(), field.nullable)
        elif isinstance(field.dataType, IntegralType):
            field = StructField(field.name, LongType(), field.nullable)
        fields.append(field)
    rank = {name: i for i, name in enumerate(order)}
    fields.sort(key=lambda f: (f.name == CORRUPT, rank.get(f.name, len(rank))))  # stable otherwise
    return StructType(fields)


def _check_csv_bytes(spark: SparkSession, path: str) -> None:
    r"""Refuse a CSV log that Spark's CSV reader would change without a word: it decodes each
    line as UTF-8, bytes that are not becoming U+FFFD (a topic that was never published), and
    ends a record at a lone ``\r`` too, quoted or not (the rest of the line a record of its
    own, its fields in the wrong columns). One pass over the file's lines, split at ``\n``
    (Spark's text reader keeps their bytes), counting both; a ``\r`` that ends a line
    (``\r\n``) is a line break. :class:`MessagesError` names the counts, one offending line
    (escaped as :func:`escaped_line` writes it) and what to do: JSON lines and Parquet keep
    every byte (a JSON line holding either is quarantined, not changed)."""
    line = F.col("value")
    broken = ~F.is_valid_utf8(line)
    # \z, not $: Java's $ also matches before a final line terminator (U+2028, U+0085...), so
    # "\r\u2028" at a line's end would pass with its \r, which Spark's CSV reader splits at.
    inner_cr = F.instr(F.regexp_replace(line, "\\r\\z", ""), "\r") > 0
    marked = _text_lines(spark, path).select(broken.alias("broken"), inner_cr.alias("cr"), line)
    counts = marked.agg(F.count_if("broken").alias("broken"), F.count_if("cr").alias("cr")).first()
    assert counts is not None
    not_utf8, carriage = int(counts["broken"]), int(counts["cr"])
    if not (not_utf8 or carriage):
        return
    first = marked.where(F.col("broken") | F.col("cr")).select(escaped_line(line)).first()
    what = []
    if not_utf8:
        what.append(f"{counted(not_utf8, 'line')} not UTF-8")
    if carriage:
        what.append(f"{counted(carriage, 'line')} with a carriage return (\\r) inside")
    shown = "" if first is None else str(first[0])
    example = f"; e.g. {shown[:60] + '...' if len(shown) > 60 else shown}" if shown else ""
    raise MessagesError(
        f"cannot read messages {path} as csv: {' and '.join(what)}, which Spark's CSV reader would "
        f"change (bytes to U+FFFD) or split into two records{example}; write the log as JSON lines "
        "or Parquet, which keep every byte"
    )


def _text_lines(spark: SparkSession, path: str) -> DataFrame:
    """The lines of the text log at ``path``, split at ``\\n`` only (:data:`_JSON_LINES`), their
    bytes as they are."""
    return spark.read.options(**_JSON_LINES).text(path)


def _first_keys(spark: SparkSession, path: str) -> list[str]:
    """The keys of the first JSON object at ``path``, in their order (none if it is not one)."""
    first = _text_lines(spark, path).where(F.length(F.trim("value")) > 0).limit(1).collect()
    try:
        value = json.loads(first[0][0]) if first else None
    except ValueError:
        return []
    return list(value) if isinstance(value, dict) else []


def load_with_schema(reader: Any, fmt: str, schema: StructType, path: str, topic_col: str) -> DataFrame:
    """The log at ``path`` read with ``schema`` by ``reader`` (``spark.read`` or
    ``spark.readStream``: batch and stream read a log the same way), a CSV log's empty topic
    fields as the empty topic (CSV has no null: Spark's null there is an empty field), and a
    JSON line that is not UTF-8 as :func:`escaped_line` writes it in :data:`CORRUPT`."""
    frame: DataFrame = reader.format(fmt).options(**READ_OPTIONS.get(fmt, {})).schema(schema).load(path)
    if CORRUPT in frame.columns:
        line = F.col(CORRUPT)
        frame = frame.withColumn(
            CORRUPT, F.when(line.isNull() | F.is_valid_utf8(line), line).otherwise(escaped_line(line))
        )
    if fmt != "csv" or topic_col not in frame.columns:
        return frame
    # when/otherwise rather than coalesce: the column stays nullable, as it is in a Parquet or
    # JSON log, so the outputs of one log have one schema whatever its format.
    topic = F.col(topic_col)
    return frame.withColumn(topic_col, F.when(topic.isNull(), F.lit("")).otherwise(topic))


def escaped_line(line: Column) -> Column:
    r"""A line that is not UTF-8 as ASCII text from which its bytes come back exactly: each byte
    of printable ASCII but the backslash as itself, every other byte (the backslash, control
    characters, anything above 127) as ``\xNN``, two lower-case hex digits.

    Spark keeps such a line as it is in its corrupt-record column, and written out, the
    quarantine's ``reason`` then held bytes that are not UTF-8: Spark read the file back, but
    pyarrow and pandas refused it. Escaped, the reason is text every reader takes, and Python
    gives the line's bytes back with ``codecs.escape_decode(text)[0]`` (the quarantine shows a
    line's first characters only: an escape can be cut there). Only lines that are not UTF-8
    are escaped (:func:`load_with_schema`): such a line is never JSON, which is UTF-8 (RFC
    8259); a UTF-8 line Spark could not parse is shown as it is. One hex pair per byte: the
    cost is the line's length, on these lines only.

    >>> import codecs
    >>> codecs.escape_decode(rb"\xff{\x5cx41}")[0]
    b'\xff{\\x41}'
    """
    pairs = F.regexp_extract_all(F.hex(line.cast("binary")), F.lit("(..)"), 1)

    def shown(pair: Column) -> Column:
        code = F.conv(pair, 16, 10).cast("int")
        plain = code.between(32, 126) & (pair != F.lit("5C"))
        return F.when(plain, F.char(code)).otherwise(F.concat(F.lit("\\x"), F.lower(pair)))

    return F.array_join(F.transform(pairs, shown), "")


def stream_schema(spark: SparkSession, path: str, fmt: str, topic_col: str = "topic") -> StructType:
    """The schema a file stream over ``path`` uses: that of the files already there."""
    frame, _ = read_messages(spark, path, fmt, topic_col)
    return frame.schema


def parse_since(text: str) -> dt.datetime:
    """An ISO 8601 date or timestamp; without a zone it is UTC.

    >>> parse_since("2024-01-01T10:00:00+01:00").isoformat()
    '2024-01-01T09:00:00+00:00'
    """
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise MessagesError(
            f"--since {text!r}: expected an ISO 8601 time such as 2024-01-01T10:00:00Z"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def select_messages(
    frame: DataFrame, from_offset: int | None = None, since: dt.datetime | None = None
) -> DataFrame:
    """Keep the messages at or after an offset (column ``offset``) or a time (column ``timestamp``)."""
    schema = frame.schema
    if from_offset is not None:
        if "offset" not in schema.names:
            raise MessagesError(f"--from-offset needs a column 'offset' (columns: {', '.join(schema.names)})")
        if not isinstance(schema["offset"].dataType, IntegralType):
            held = schema["offset"].dataType.simpleString()
            raise MessagesError(f"--from-offset needs integer offsets; the column 'offset' holds {held}")
        frame = frame.where(F.col("offset") >= F.lit(from_offset))
    if since is not None:
        if "timestamp" not in schema.names:
            raise MessagesError(f"--since needs a column 'timestamp' (columns: {', '.join(schema.names)})")
        kind = schema["timestamp"].dataType
        if not isinstance(kind, TimestampType | TimestampNTZType | DateType | StringType):
            raise MessagesError(
                f"--since needs timestamps; the column 'timestamp' holds {kind.simpleString()}"
            )
        column = (
            F.col("timestamp") if isinstance(kind, TimestampType) else F.col("timestamp").cast("timestamp")
        )
        frame = frame.where(column >= F.lit(since))
    return frame


def check_output_format(schema: StructType, fmt: str) -> None:
    """CSV holds only flat, non-binary columns: say so before any work rather than after."""
    if fmt != "csv":
        return
    for field in schema.fields:
        if isinstance(field.dataType, BinaryType | ArrayType | MapType | StructType):
            raise MessagesError(
                f"CSV cannot hold the column {field.name!r} ({field.dataType.simpleString()}); "
                "use --format parquet or json"
            )


def writer_options(fmt: str) -> dict[str, str]:
    """The options of every output the pipeline writes, batch or stream.

    CSV gets a header. Parquet goes without dictionary encoding: the columns of a delivery
    table are mostly unique per message (offset, timestamp, topic, payload), and the dictionary
    cost the JVM about a quarter more CPU on the benchmark (docs/pipeline.md, *Parquet output*).
    Timestamps are written as Parquet's standard TIMESTAMP_MICROS by the session (see
    _session), not the deprecated INT96.
    """
    if fmt == "csv":
        return {"header": "true"}
    if fmt == "parquet":
        return {"parquet.enable.dictionary": "false"}
    return {}


def write(frame: DataFrame, path: str, fmt: str, partition_by: str | None = None) -> None:
    """Write ``frame`` to ``path`` (replacing it). With ``partition_by``, one directory per value,
    each written by one task (a shuffle by that column first, so a value is one file, not one
    file per task)."""
    writer_frame = frame.repartition(partition_by) if partition_by else frame
    writer = writer_frame.write.mode("overwrite").format(fmt).options(**writer_options(fmt))
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer.save(path)
