"""The runners of ``topicmatch generate`` and ``route``.

:mod:`topicmatch.cli` declares the commands and imports this module (the spark layer's one
module for the command line) only when one of them runs, once the ``spark`` extra is known to be
installed, so PySpark is imported at the top here and nowhere at start-up. Each runner takes
the parsed options and the output streams and returns the exit code; bad input raises
:class:`topicmatch.support.commandline.UsageError`.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
from typing import TextIO

from pyspark.errors import PySparkException

from .. import TopicMatchError
from ..support.commandline import UsageError, counted
from ..support.pair_files import dialect_warning
from ..support.progress import Progress
from ._generate import generate
from ._io import parse_since, spark_error
from ._pipeline import RouteJob, already_exists, run_batch
from ._session import session
from ._stream import StreamRouter

__all__ = ["run_generate", "run_route"]


def run_generate(options: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``topicmatch generate``: write the data, with a progress bar on stderr."""
    try:
        result = generate(
            options.out,
            options.messages,
            options.subscriptions,
            dialect=options.dialect,
            payload_bytes=options.payload_bytes,
            seed=options.seed,
            invalid_fraction=options.invalid_fraction,
            progress=functools.partial(Progress("generate", stderr).count, unit="messages"),
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot write {options.out}: {error.strerror or error}") from None
    print(
        f"wrote {counted(result.messages, 'message')} in {counted(result.files, 'file')} to "
        f"{result.messages_path}\n"
        f"wrote {counted(result.subscriptions, 'subscription')} "
        f"({counted(result.subscribers, 'subscriber')}) to {result.subscriptions_path}",
        file=stdout,
    )
    return 0


def _conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UsageError(f"--conf {pair!r}: expected KEY=VALUE")
        conf[key.strip()] = value.strip()
    return conf


def _local(path: str) -> bool:
    """A path on this machine's file system (no ``scheme://``; ``file:`` counts as local)."""
    return "://" not in path or path.startswith("file:")


def _check_before_spark(job: RouteJob, stream: bool) -> None:
    """What fails without a JVM: Java itself, a missing local message path, a local output that
    is there already without --overwrite (the JVM took 20-35 s to say so)."""
    if (
        "PYSPARK_GATEWAY_PORT" not in os.environ
        and not os.environ.get("JAVA_HOME")
        and not shutil.which("java")
    ):
        raise UsageError(
            "Spark needs Java 17: install it (Debian: apt-get install openjdk-17-jre-headless) "
            "or set JAVA_HOME"
        )
    messages = job.messages.removeprefix("file:")
    if _local(job.messages) and not os.path.exists(messages):
        raise UsageError(f"cannot read messages {job.messages}: no such file or directory")
    if not stream and not job.overwrite and _local(job.out):
        for path in job.outputs:  # clear_outputs' first rule, checked again once Spark runs
            if os.path.exists(path.removeprefix("file:")):
                raise UsageError(already_exists(path))


def run_route(options: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``topicmatch route``: batch or stream; the summary on stdout, progress on stderr."""
    if options.stream and not options.checkpoint:
        raise UsageError("--stream needs --checkpoint DIR (where the stream remembers what it has done)")
    if not options.stream and (options.once or options.checkpoint or options.timeout is not None):
        raise UsageError("--checkpoint, --once and --timeout apply to --stream only")
    if options.max_message_bytes < 0 or options.top < 0:
        raise UsageError("--max-message-bytes and --top must be >= 0")
    if options.pedantic and options.dialect != "nats":
        raise UsageError("--pedantic applies to --dialect nats only")
    if options.trigger_seconds <= 0 or (options.timeout is not None and options.timeout <= 0):
        raise UsageError("--trigger-seconds and --timeout must be > 0")
    if options.max_files_per_trigger is not None and options.max_files_per_trigger < 1:
        raise UsageError("--max-files-per-trigger must be >= 1")
    if options.stream and options.plan in ("split", "shard"):
        raise UsageError(f"--plan {options.plan} applies to batch jobs only; a stream matches in the workers")
    if options.layout == "nested" and options.format == "csv":
        raise UsageError(
            "--layout nested writes an array column, which CSV cannot hold: use --format parquet or json"
        )
    if options.layout == "nested" and options.partition_by:
        raise UsageError(
            "--partition-by subscriber needs --layout exploded (nested rows hold many subscribers)"
        )
    conf = _conf(options.conf)
    try:
        job = RouteJob(
            messages=options.messages,
            subscriptions=options.subscriptions,
            out=options.out,
            format=options.format,
            layout=options.layout,
            plan=options.plan,  # a stream refuses split and shard above; it routes by the matcher
            messages_format=options.messages_format,
            dialect=options.dialect,
            pedantic=options.pedantic,
            topic_col=options.topic_column,
            partition_by=options.partition_by,
            from_offset=options.from_offset,
            since=parse_since(options.since) if options.since else None,
            skip_invalid_patterns=options.skip_invalid_patterns,
            max_message_bytes=options.max_message_bytes,
            overwrite=options.overwrite,
            top=options.top,
        )
        # Check what can be checked before starting a JVM: each of these fails in a second.
        _check_before_spark(job, stream=options.stream)
        table = job.load_subscriptions()
        if not len(table):
            print(
                f"topicmatch: warning: {job.subscriptions} holds no subscription: every message "
                "will be unmatched",
                file=stderr,
            )
        warning = dialect_warning(table.patterns, job.dialect)
        if warning:
            print(f"topicmatch: warning: {warning}", file=stderr)
        for where, pattern, reason in table.skipped[:10]:
            print(f"topicmatch: skipped {where}: {pattern!r}: {reason}", file=stderr)
        if len(table.skipped) > 10:
            print(
                f"topicmatch: ... and {counted(len(table.skipped) - 10, 'more invalid pattern')} skipped",
                file=stderr,
            )
        try:
            spark = session(options.master, conf, ui=options.ui)
        except (PySparkException, RuntimeError) as error:
            raise UsageError(f"cannot start Spark: {spark_error(error)}") from None
        if options.stream:
            router = StreamRouter(
                spark,
                job,
                options.checkpoint,
                once=options.once,
                trigger_seconds=options.trigger_seconds,
                max_files_per_trigger=options.max_files_per_trigger,
                log=lambda line: print(line, file=stderr, flush=True),
            )
            summary = router.run(timeout=options.timeout)
        else:
            summary = run_batch(spark, job, stderr, progress=not options.quiet, table=table)
    except TopicMatchError as error:
        raise UsageError(str(error)) from None
    print(summary.text(), file=stdout)
    return 0
