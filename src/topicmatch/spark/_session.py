"""The Spark session of the command line, and its progress line.

Local mode (``local[*]``) is the embedded default. ``--master spark://host:7077`` runs the same
job on a standalone cluster, and under ``spark-submit`` the master comes from spark-submit. In
local mode the driver binds to 127.0.0.1 (nothing listens on the network) and the web UI is off
unless asked for. A session already active in this process (an application or a test that
calls the command line in-process) is reused.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

from pyspark.sql import SparkSession

from ..support.commandline import counted
from ..support.progress import Progress

__all__ = ["JobProgress", "session"]


def _local(master: str) -> bool:
    return master.startswith("local")


def session(master: str | None, conf: Mapping[str, str] | None = None, ui: bool = False) -> SparkSession:
    """The session to run on: the active one, or a new one on ``master`` (default ``local[*]``)."""
    if master is not None and master.startswith("sc://"):
        # The command line counts and cleans up through the SparkContext (accumulators, the
        # status tracker, Hadoop's file system), which a Connect client does not have.
        raise RuntimeError(
            "the command line needs a classic Spark session; through Spark Connect, call "
            "topicmatch.spark.route() on the session's DataFrames (README, 'Spark Connect')"
        )
    active = SparkSession.getActiveSession()
    if active is not None:
        current = active.sparkContext.master
        if master is not None and master != current:
            raise RuntimeError(
                f"a Spark session on {current} is already running in this process; cannot use {master}"
            )
        for key, value in (conf or {}).items():
            if active.conf.isModifiable(key):  # the others were fixed when the session started
                active.conf.set(key, value)
        return active
    # The workers run this interpreter, which has topicmatch installed (on a cluster, set
    # PYSPARK_PYTHON to the workers' interpreter instead).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder: Any = SparkSession.builder.appName("topicmatch")
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not under_submit:
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    if master is not None and _local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    if "spark.driver.extraJavaOptions" not in (conf or {}) and not under_submit:
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={_log_config()}"
        )
    defaults = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",  # we print our own, with messages and deliveries
        "spark.log.level": "FATAL",  # as the log4j2 settings below: our errors are one line, last
        "spark.sql.shuffle.partitions": str(max(4, 2 * (os.cpu_count() or 1))),
        # Bigger Arrow batches: fewer per-batch overheads in the workers (docs/pipeline.md).
        "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
        # Parquet's standard timestamp rather than the deprecated INT96 (also a little cheaper).
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }

    if master is not None and _local(master):
        # Several tasks per core rather than one: the progress line counts finished tasks and
        # their messages (an accumulator reports at a task's end), and with one task per core
        # `make demo` showed "tasks 0/2, 0 messages" until the job was over. At least 16, so
        # that the count moves every sixteenth of the work where the input has the row groups
        # to split (docs/pipeline.md measures the cost: none on the demo). Local mode only: on a
        # cluster Spark's default (the cluster's parallelism) is left alone.
        defaults["spark.sql.files.minPartitionNum"] = str(local_splits())
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    with _without_incubator_warning():
        return builder.getOrCreate()  # type: ignore[no-any-return]


#: The line the JDK prints when a JVM starts with an incubator module: Spark's launcher always
#: adds ``--add-modules=jdk.incubator.vector``, and no JVM option silences the warning.
_INCUBATOR = b"WARNING: Using incubator modules:"


@contextlib.contextmanager
def _without_incubator_warning() -> Iterator[None]:
    """Start the driver JVM with its stderr on a pipe that drops :data:`_INCUBATOR`'s line and
    passes every other line on to this process's stderr (the JVM inherits file descriptor 2 when
    PySpark starts it, and keeps the pipe; this process gets its own stderr back at once). The
    forwarding thread is a daemon: it reads until the JVM exits, one line at a time."""
    sys.stderr.flush()
    reader, writer = os.pipe()
    stderr = os.dup(2)
    threading.Thread(
        target=_forward, args=(reader, stderr), name="topicmatch-jvm-stderr", daemon=True
    ).start()
    os.dup2(writer, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(stderr, 2)
        os.close(writer)


def _forward(reader: int, stderr: int) -> None:
    with os.fdopen(reader, "rb") as lines, os.fdopen(stderr, "wb", buffering=0) as out:
        for line in lines:
            if not line.startswith(_INCUBATOR):
                with contextlib.suppress(OSError):
                    out.write(line)


#: Fatal errors only, on stderr: the command prints its own progress, summary and one-line errors
#: (spark_error finds the cause in the exception), and the JVM's ERROR lines, written by its own
#: threads, used to land after that one line. The logger of PySpark's gateway, which Spark takes
#: for a shell's, at the root's level too: where the two differ Spark prints three lines at every
#: start ("Setting default log level to WARN", how to change it, "Setting Spark log level").
_LOG4J2 = """\
rootLogger.level = fatal
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = fatal
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@functools.cache
def _log_config() -> str:
    """A log4j2 file for the driver JVM, which takes a path: made once per process by mkstemp
    (a new file of this user's, mode 0600, created exclusively, so never a file or link another
    user planted in the shared temp directory) and removed when the process exits."""
    handle, path = tempfile.mkstemp(prefix="topicmatch-log4j2-", suffix=".properties")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(_LOG4J2)
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def local_splits() -> int:
    """Input splits a local job asks Spark for: four per core, at least 16."""
    return max(16, 4 * (os.cpu_count() or 1))


class JobProgress:
    """A background thread reporting the running job: tasks done and running, messages routed.

    ``routed()`` returns (messages, deliveries) of the tasks that ended (from the statistics
    accumulator, which hears from a task when it ends, not while it runs). Printed through
    :class:`topicmatch.support.progress.Progress`: on a terminal the line is rewritten in place
    twice a second (its seconds move even while one long task runs); otherwise a line as soon
    as the job has started, then whenever a task finished (at most one a second) and at least
    every ``every`` seconds, so that a small job too shows its tasks as they end.
    """

    def __init__(
        self,
        spark: SparkSession,
        label: str,
        routed: Callable[[], tuple[int, int]],
        stream: TextIO,
        every: float = 10.0,
    ) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._routed = routed
        self._progress = Progress(label, stream)
        self._every = every
        self._counted: tuple[int, int] | None = None  # what routed() last returned
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="topicmatch-progress", daemon=True)

    def __enter__(self) -> JobProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._progress.done()

    def tasks(self) -> tuple[int, int, int]:
        """(done, running, total) tasks of the active stages."""
        done = running = total = 0
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                running += info.numActiveTasks
                total += info.numTasks
        return done, running, total

    def line(self, tasks: tuple[int, int, int] | None = None) -> str:
        """What is known now: the active stages' tasks (done of all, running), then the messages
        and deliveries of the tasks that ended, or, while none has reported (the first tasks
        are still running), that they are counted as tasks end rather than "0 messages".

        ``tasks``: (done, running, total), as :meth:`tasks` gives; read from Spark if None.
        """
        done, running, total = self.tasks() if tasks is None else tasks
        with contextlib.suppress(RuntimeError):  # changed while read: keep the last reading
            self._counted = self._routed()
        parts = [f"tasks {done}/{total} done, {running} running"] if total else []
        if self._counted is None or not (done or any(self._counted)):
            parts.append("messages counted as tasks end")
        else:
            messages, deliveries = self._counted
            parts.append(
                f"{counted(messages, 'message')} -> {counted(deliveries, 'delivery', 'deliveries')} "
                "in the tasks done"
            )
        return "; ".join(parts)

    def _run(self) -> None:
        tty = self._progress.tty
        last_time, last_done = time.perf_counter(), -1
        while not self._stop.wait(0.5 if tty else 1.0):
            tasks = self.tasks()
            moved = tasks[2] > 0 and tasks[0] != last_done  # started, or a task ended
            if tty or moved or time.perf_counter() - last_time >= self._every:
                last_time, last_done = time.perf_counter(), tasks[0]
                self._progress.status(self.line(tasks))
