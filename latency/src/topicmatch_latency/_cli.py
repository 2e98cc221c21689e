"""``topicmatch bench latency``, ``commitlog`` and ``brokers``: argument parsing only.

``topicmatch`` finds :func:`add_bench_commands` through this distribution's entry point (group
``topicmatch.bench``) and calls it at every start, so this module imports nothing heavy: NumPy,
hdrh, matplotlib and the broker clients are loaded inside the runners.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import re
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from topicmatch.bench.report import mark_quick
from topicmatch.support.commandline import UsageError, add_out, require_extra
from topicmatch.support.progress import Progress

from ._sla import Sla, highest_met, parse_rates

__all__ = ["add_bench_commands", "parse_size"]

ROUND_TRIP_SYSTEMS = ("nats", "redis", "rabbitmq", "mqtt", "matcher")
LOG_SYSTEMS = (
    "jetstream",
    "jetstream-memory",
    "jetstream-r3",
    "jetstream-noack",
    "rabbitmq-stream",
    "rabbitmq-stream-r3",
    "redis-stream",
    "redis-stream-fsync",
)
THROUGHPUT_SYSTEMS = ("nats", "redis", "rabbitmq", "mqtt", "activemq", "zeromq", "nng")
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}


def parse_size(text: str) -> int:
    """Bytes from ``256``, ``1KB``, ``5k``, ``1MB`` (KB = 1,024 B, MB = 1,048,576 B).

    >>> parse_size("1KB"), parse_size("1MB"), parse_size("256")
    (1024, 1048576, 256)
    """
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not match or match[2].lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 256, 1KB, 5KB, 1MB)")
    return int(match[1]) * _UNITS[match[2].lower()]


def _names(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)} (comma-separated)")
        return names

    return parse


def _sizes(text: str) -> list[int]:
    return [parse_size(part) for part in text.split(",")]


def _rate(text: str) -> int | None:
    """A rate in requests/s, or ``max`` (None: full throttle)."""
    if text.strip() == "max":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a rate: {text!r} (a whole number of requests/s, or max)"
        ) from None


def _add_systems(parser: argparse.ArgumentParser, allowed: tuple[str, ...]) -> None:
    """``--systems`` (or ``--system``): some of ``allowed``, comma-separated; all by default."""
    parser.add_argument(
        "--systems",
        "--system",
        dest="systems",
        metavar="SYSTEMS",
        type=_names(allowed),
        default=list(allowed),
        help=f"comma-separated, from {', '.join(allowed)} (default: all)",
    )


def _parsed(parse: Any, what: str) -> Any:
    """An argparse type from a parser that raises ValueError with its own message."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = what
    return convert


def add_bench_commands(subparsers: Any) -> None:
    """Add the ``latency`` and ``commitlog`` experiments."""
    latency = subparsers.add_parser(
        "latency",
        help="fixed-rate round trips through a real broker: full latency distributions, corrected",
        description=(
            "Send requests at a fixed rate and measure each from its intended start (coordinated "
            "omission corrected), from its actual send (uncorrected) and the generator's lateness. "
            "The broker is started privately on 127.0.0.1 and stopped after (or --broker names a "
            "running one). Writes per run a JSON "
            "file, .hgrm files and an interval log (.corrected.hlog), the charts (latency by "
            "percentile and over time; with --sweep, latency against rate) and report.md to --out. "
            "Sizes: KB = 1,024 B, MB = 1,048,576 B."
        ),
    )
    latency.add_argument(
        "--system",
        "--systems",
        dest="system",
        metavar="SYSTEMS",
        type=_names(ROUND_TRIP_SYSTEMS),
        default=None,
        help=f"comma-separated, from {', '.join(ROUND_TRIP_SYSTEMS)} "
        "(default: nats; with --study: the four brokers)",
    )
    latency.add_argument(
        "--rate",
        type=_rate,
        default=3_000,
        help="requests/s over all connections (at most 100000), or max: full throttle, each request "
        "sent as soon as the last returned, to find saturation (default: 3000)",
    )
    latency.add_argument(
        "--sweep",
        metavar="RATES",
        type=_parsed(parse_rates, "rates"),
        default=None,
        help="latency against load: one run per rate instead of --rate, each --warmup plus "
        "--duration long, e.g. 500,1000,2000,4000,max; charts of every rate's percentiles, of "
        "latency against rate and of each interval's worst latency (not with --study)",
    )
    latency.add_argument(
        "--sla",
        type=_parsed(Sla.parse, "SLA"),
        default=None,
        help="latency targets, PERCENTILE:LIMIT separated by commas (limits in ns, us, ms or s), "
        "e.g. 99:10ms,99.99:100ms: drawn on the charts and judged for each run; with --sweep, "
        "the highest rate that meets them is reported",
    )
    latency.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="length of the interval histograms of the .hlog files (default: 1)",
    )
    latency.add_argument("--size", type=parse_size, default=256, help="message size (default: 256)")
    latency.add_argument("--duration", type=float, default=30.0, help="measured seconds (default: 30)")
    latency.add_argument(
        "--warmup", type=float, default=None, help="discarded seconds first (default: 2, 1 with --quick)"
    )
    latency.add_argument("--connections", type=int, default=1, help="concurrent connections (default: 1)")
    latency.add_argument(
        "--processes",
        type=int,
        default=1,
        help="load processes sharing them (default: 1); with --spark-master, Spark tasks",
    )
    latency.add_argument(
        "--broker",
        metavar="HOST:PORT",
        type=_address,
        default=None,
        help="use this running broker of --system instead of starting one here (a broker on "
        "another host than the load, as it should be); one system only",
    )
    latency.add_argument(
        "--spark-master",
        metavar="MASTER",
        default=None,
        help="run the load's --processes shares as the tasks of one Spark stage on this master "
        "(local[N], spark://HOST:PORT), histograms merged here; needs the spark extra, and as many "
        "free task slots as shares; the broker starts here, on 127.0.0.1, unless --broker names one",
    )
    latency.add_argument(
        "--timeout", type=float, default=10.0, help="per-request time-out in s (default: 10)"
    )
    latency.add_argument("--max-size", type=parse_size, default=None, help="raise the 1MB message-size limit")
    latency.add_argument(
        "--study",
        action="store_true",
        help="run the study's five configurations (256B@3000, 1KB@3000, 5KB@2000, 1KB@20000 over 25 "
        "connections, 1MB@100) for every --system (default systems: the four brokers)",
    )
    latency.add_argument("--quick", action="store_true", help="5 s per run instead of --duration")
    latency.add_argument(
        "--overlay",
        nargs="+",
        type=Path,
        metavar="RESULT.json",
        help="only draw these saved runs in one chart",
    )
    add_out(latency, "out/bench/latency")
    latency.set_defaults(run=_run_latency)

    commitlog = subparsers.add_parser(
        "commitlog",
        help="durable logs (JetStream, RabbitMQ streams, Redis Streams): end-to-end latency and throughput",
        description=(
            "Latency: publish random payloads at a fixed rate and measure end to end, publisher to "
            "subscriber, from each message's intended publish time. Throughput: publish N messages "
            "per size, complete only when the server acknowledged every one (jetstream-noack: once "
            "flushed), measured at the "
            "publisher and at the subscriber. Each system's durability setting is reported with it."
        ),
    )
    _add_systems(commitlog, LOG_SYSTEMS)
    commitlog.add_argument("--sizes", type=_sizes, default=None, help="default: 256,1KB,5KB,1MB")
    commitlog.add_argument("--rate", type=int, default=50, help="latency runs: messages/s (default: 50)")
    commitlog.add_argument(
        "--duration", type=float, default=None, help="latency runs: seconds (default: 30, 5 quick)"
    )
    commitlog.add_argument(
        "--messages",
        type=int,
        default=None,
        help="throughput runs: messages per size (default: 100000, 10000 quick; "
        "by default 1MB messages are capped to 1000, 100 quick)",
    )
    commitlog.add_argument("--skip-latency", action="store_true", help="only the throughput runs")
    commitlog.add_argument("--skip-throughput", action="store_true", help="only the latency runs")
    commitlog.add_argument(
        "--quick",
        action="store_true",
        help="short runs: a smoke test of 5 s of latency and 10,000 messages (100 of 1MB) per size "
        "and system, about 5 minutes for the eight systems (4.5 min on 2 cores)",
    )
    add_out(commitlog, "out/bench/commitlog")
    commitlog.set_defaults(run=_run_commitlog)

    brokers = subparsers.add_parser(
        "brokers",
        help="broker throughput: N messages through each system, at the sender and at the receiver",
        description=(
            "Send --messages messages of --size bytes from one publisher process to one subscriber "
            "process through each system (brokers started privately on 127.0.0.1 and stopped after; "
            "ZeroMQ and NNG need none) and report messages a second at the sender and at the "
            "receiver, the messages lost, and each side's CPU use: a Python client at 90 % or more of a "
            "core is the limit, not the system, and the report says so."
        ),
    )
    _add_systems(brokers, THROUGHPUT_SYSTEMS)
    brokers.add_argument(
        "--messages",
        type=int,
        default=None,
        metavar="N",
        help="messages per system, at most 1000000 and 2 GiB in all (default: 1000000; 20000 quick)",
    )
    brokers.add_argument("--size", type=parse_size, default=1024, help="message size (default: 1KB)")
    brokers.add_argument(
        "--idle",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="the subscriber stops after this long without a message (default: 5)",
    )
    brokers.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="longest run per system; a run cut short is reported so (default: 300)",
    )
    brokers.add_argument("--quick", action="store_true", help="20,000 messages per system: a smoke test")
    add_out(brokers, "out/bench/brokers")
    brokers.set_defaults(run=_run_brokers)


@contextlib.contextmanager
def _stop_on_sigterm(stop: Any) -> Iterator[None]:
    """On SIGTERM (``timeout``, ``kill``) end the load loops early (``stop.set()``); the run then
    unwinds normally and stops its brokers instead of orphaning them, and the command reports
    the interruption. The event is cleared for the next in-process run."""

    def interrupt(_signum: int, _frame: Any) -> None:
        stop.set()

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
        if stop.is_set():
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop.clear()


@contextlib.contextmanager
def _usage_errors() -> Iterator[None]:
    """A limit exceeded, a broker missing or a run that failed (a connection refused, a load
    process or a server that failed): one line and exit code 2, not a traceback."""
    limits, systems = _heavy("_limits"), _heavy("_systems")
    try:
        yield
    except (limits.LimitError, systems.SystemUnavailable) as error:
        raise UsageError(str(error)) from None
    except (OSError, RuntimeError) as error:
        raise UsageError(f"the run failed: {type(error).__name__}: {error}") from None


def _address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port)."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    return host, int(port)


def _heavy_spark_session(master: str) -> Any:
    """A classic Spark session on ``master`` for the load shares, without its web UI. Its barrier
    stage's wait for all shares is bounded (Spark's default is a year): ten minutes, far beyond
    any share's set-up (``LoadSpec.setup_timeout``, 60 s). A failed task is not retried: a retry
    of a barrier stage runs the whole load again, and the run is reported as failed instead."""
    spark = importlib.import_module("topicmatch.spark")
    conf = {"spark.ui.enabled": "false", "spark.barrier.sync.timeout": "600s", "spark.task.maxFailures": "1"}
    try:
        return spark.session(master, conf)
    except RuntimeError as error:
        raise UsageError(str(error)) from None


def _heavy(module: str) -> Any:
    """Import a module of this package (in a runner: ``topicmatch --help`` stays fast)."""
    return importlib.import_module(f"topicmatch_latency.{module}")


def _run_latency(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    study = _heavy("_study")
    limits_module = _heavy("_limits")
    result_module = _heavy("_result")
    out: Path = options.out
    if options.overlay:
        results = []
        for path in options.overlay:
            try:
                results.append(result_module.LatencyResult.from_json(path.read_text()))
            except (OSError, ValueError, TypeError) as error:
                raise UsageError(f"cannot read {path}: {error}") from None
        report = study.write_outputs(results, out, "Overlay of saved runs")
        print(result_module.summary_table(results, ["corrected"]), file=stdout)
        print(f"report: {report}", file=stdout)
        return 0
    limits = (
        limits_module.Limits()
        if options.max_size is None
        else limits_module.Limits(max_size=options.max_size)
    )
    duration = 5.0 if options.quick else options.duration
    warmup = options.warmup if options.warmup is not None else (1.0 if options.quick else 2.0)
    if options.study and options.sweep:
        raise UsageError("--study and --sweep are two different runs: choose one")
    if options.study:
        configs = study.STUDY
        systems = options.system or ["nats", "redis", "rabbitmq", "mqtt"]
        title = "Round-trip latency: the study's configurations"
    else:
        rates = options.sweep or [options.rate]
        configs = tuple(
            study.configuration(options.size, rate, options.connections, options.processes) for rate in rates
        )
        systems = options.system or ["nats"]
        title = "Latency against load" if options.sweep else "Round-trip latency"
    placement: dict[str, Any] = {}  # where the load and the broker run
    if options.broker is not None:
        if len(systems) != 1 or systems[0] == "matcher":
            raise UsageError("--broker names the broker of one --system (nats, redis, rabbitmq or mqtt)")
        placement["broker"] = options.broker
    if options.spark_master is not None:
        require_extra("spark")
        spark = _heavy_spark_session(options.spark_master)
        placement["shares"] = functools.partial(_heavy("_spark_shares").run_shares_on_spark, spark)
        placement["spark_master"] = options.spark_master
    with _usage_errors(), _stop_on_sigterm(_heavy("_load").STOP):
        results = study.run_study(
            systems,
            configs,
            duration=duration,
            warmup=warmup,
            timeout=options.timeout,
            limits=limits,
            interval=options.interval,
            progress=Progress("latency", stderr),
            **placement,
        )
    report = study.write_outputs(results, out, title, sla=options.sla, sweep=bool(options.sweep))
    if options.quick:
        mark_quick(report, "latency/docs/latency.md")
    print(result_module.summary_table(results), file=stdout)
    for result in results:
        for note in result.notes():
            print(f"note: {result.label}: {note}", file=stdout)
    if options.sla:
        if options.sweep:
            for system in systems:
                best, _ = highest_met([r for r in results if r.system == system], options.sla)
                verdict = f"{best.rate:,.0f}/s" if best else "none"
                print(
                    f"highest rate meeting the SLA ({options.sla.text()}), {system}: {verdict}", file=stdout
                )
        else:
            for result in results:
                print(
                    f"SLA {options.sla.text()}: {result.label}: {options.sla.judge(result).cell()}",
                    file=stdout,
                )
    print(f"report: {report}", file=stdout)
    return 0


def _commitlog_command(options: argparse.Namespace) -> str:
    """The command line that reproduces a commit-log run, from its options."""
    argv = ["topicmatch", "bench", "commitlog"]
    if options.quick:
        argv.append("--quick")
    if options.systems != list(LOG_SYSTEMS):
        argv += ["--systems", ",".join(options.systems)]
    if options.sizes is not None:
        argv += ["--sizes", ",".join(str(size) for size in options.sizes)]
    for name in ("rate", "duration", "messages"):
        value = getattr(options, name)
        if value is not None and not (name == "rate" and value == 50):
            argv += [f"--{name}", f"{value:g}" if isinstance(value, float) else str(value)]
    argv += ["--skip-latency"] * options.skip_latency + ["--skip-throughput"] * options.skip_throughput
    return shlex.join(argv)


def _run_commitlog(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    plan = _heavy("_logplan").Plan.make(
        systems=options.systems,
        sizes=options.sizes,
        rate=options.rate,
        duration=options.duration,
        messages=options.messages,
        quick=options.quick,
        latency=not options.skip_latency,
        throughput=not options.skip_throughput,
        command=_commitlog_command(options),
    )
    with _usage_errors():
        with _stop_on_sigterm(_heavy("_load").STOP):
            plan.check()
            report = _heavy("_commitlog").run_plan(plan, options.out, Progress("commitlog", stderr))
        if options.quick:
            mark_quick(report, "latency/docs/latency.md")
    print(report.read_text(), file=stdout)
    print(f"report: {report}", file=stdout)
    return 0


def _run_brokers(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    throughput = _heavy("_broker_throughput")
    messages = options.messages if options.messages is not None else (20_000 if options.quick else 1_000_000)
    argv = ["topicmatch", "bench", "brokers", "--messages", str(messages), "--size", str(options.size)]
    if options.systems != list(THROUGHPUT_SYSTEMS):
        argv += ["--systems", ",".join(options.systems)]
    if not options.idle > 0 or not options.timeout > 0:
        raise UsageError("--idle and --timeout must be positive")
    with _usage_errors(), _stop_on_sigterm(_heavy("_load").STOP):
        report = throughput.run_brokers(
            options.systems,
            messages,
            options.size,
            options.out,
            command=shlex.join(argv),
            idle=options.idle,
            timeout=options.timeout,
            progress=Progress("brokers", stderr),
        )
    if options.quick:
        mark_quick(report, "latency/docs/latency.md")
    print(report.read_text(), file=stdout)
    print(f"report: {report}", file=stdout)
    return 0
