"""``topicmatch generate`` and ``topicmatch route``: the pipeline's command line.

Loaded at start-up by :mod:`topicmatch.cli` to add its commands, so it imports nothing heavy:
a command first checks that the ``spark`` extra is installed (:func:`topicmatch.support.commandline.require`
names the install command otherwise), then loads its runner from :mod:`topicmatch.spark.commands`.
Every bad input ends as one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, TextIO

from .. import DIALECTS
from ..support.commandline import require_extra
from ..support.pair_files import FORMATS_HELP

__all__ = ["add_commands"]

_MASTER_HELP = (
    "Spark master: local[*] (the default: every core of this machine), local[N], or a cluster such as "
    "spark://host:7077; under spark-submit, the master given to spark-submit"
)


def add_commands(commands: Any) -> None:
    """Add ``generate`` and ``route`` to the ``topicmatch`` command line."""
    generate = commands.add_parser(
        "generate",
        help="write a realistic synthetic message log and subscription table (Parquet)",
        description=(
            "Write DIR/messages/part-NNNNN.parquet (offset, timestamp, topic, payload) and "
            "DIR/subscriptions.parquet (pattern, subscriber): topics of 1-5 Zipf-distributed words with "
            "some hot topics, patterns with single- and multi-word wildcards. Deterministic for a seed."
        ),
    )
    generate.add_argument("--messages", type=int, required=True, metavar="N", help="number of messages")
    generate.add_argument(
        "--subscriptions", type=int, required=True, metavar="M", help="number of subscriptions"
    )
    generate.add_argument("--out", required=True, metavar="DIR", help="output directory (created if needed)")
    generate.add_argument(
        "--payload-bytes",
        type=int,
        default=100,
        metavar="B",
        help="payload size of each message (default: 100)",
    )
    generate.add_argument("--seed", type=int, default=7, metavar="S", help="random seed (default: 7)")
    generate.add_argument(
        "--dialect", choices=DIALECTS, default="amqp", help="separator and wildcards to use (default: amqp)"
    )
    generate.add_argument(
        "--invalid-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="fraction of topics made invalid for the dialect, to exercise the quarantine (default: 0)",
    )
    generate.set_defaults(run=_runner("run_generate"))

    route = commands.add_parser(
        "route",
        help="route a message log to subscribers on Spark (batch or streaming)",
        description=(
            "Read messages (Parquet, JSON or CSV files) and subscriptions (pattern, subscriber), and "
            "write one row per (message, subscriber) to OUT/deliveries (with --layout nested, one row "
            "per message with the array of its subscribers), invalid messages with the reason "
            "to OUT/quarantine, and the summary to OUT/summary.json. Runs in local mode by default; the "
            "same command runs on a cluster with --master spark://host:7077 or under spark-submit."
        ),
    )
    route.add_argument("--messages", required=True, metavar="PATH", help="message file or directory of files")
    route.add_argument(
        "--subscriptions",
        required=True,
        metavar="PATH",
        help="subscriptions (as match reads them), the format from the name: " + FORMATS_HELP,
    )
    route.add_argument("--out", required=True, metavar="DIR", help="output directory")
    route.add_argument(
        "--format",
        choices=("parquet", "json", "csv"),
        default="parquet",
        help="output format (default: parquet)",
    )
    route.add_argument(
        "--layout",
        choices=("exploded", "nested"),
        default="exploded",
        help="exploded: one row per (message, subscriber), in column subscriber; nested: one row per "
        "message with its subscribers, sorted, in the array column subscribers (parquet or json "
        "only, no --partition-by) (default: exploded)",
    )
    route.add_argument(
        "--plan",
        choices=("auto", "matcher", "split", "shard"),
        default="auto",
        help="matcher: every subscription in the Python workers' matcher; split: the literal "
        "subscriptions of subscribers without wildcards joined on the topic by Spark, the rest in the "
        "workers (batch only); shard: split, and the workers' part cut into shards by the first word "
        "of each pattern, the messages shuffled to their shard (batch only); auto: split from "
        "100,000 such subscriptions on, shard from 1,000,000 left for the workers, in shards of "
        "about 500,000 (default: auto)",
    )
    route.add_argument(
        "--messages-format",
        choices=("auto", "parquet", "json", "csv"),
        default="auto",
        help="input format (default: from the file names, else parquet)",
    )
    route.add_argument(
        "--dialect", choices=DIALECTS, default="amqp", help="broker rules to follow (default: amqp)"
    )
    route.add_argument(
        "--pedantic", action="store_true", help="nats only: reject what the server rejects in pedantic mode"
    )
    route.add_argument("--master", default=None, help=_MASTER_HELP)
    route.add_argument(
        "--partition-by", choices=("subscriber",), default=None, help="one output directory per subscriber"
    )
    since = route.add_mutually_exclusive_group()
    since.add_argument("--from-offset", type=int, metavar="N", help="only messages whose offset is >= N")
    since.add_argument(
        "--since",
        metavar="TIMESTAMP",
        help="only messages at or after this ISO 8601 time (UTC unless a zone is given)",
    )
    route.add_argument(
        "--topic-column", default="topic", metavar="NAME", help="column of the topic (default: topic)"
    )
    route.add_argument(
        "--skip-invalid-patterns",
        action="store_true",
        help="leave invalid patterns out and list them in the summary (default: stop before any work)",
    )
    route.add_argument(
        "--max-message-bytes",
        type=int,
        default=1 << 20,
        metavar="B",
        help="larger messages (all string and binary columns) are quarantined; 0: no limit "
        "(default: 1048576)",
    )
    route.add_argument("--overwrite", action="store_true", help="replace an existing output (and checkpoint)")
    route.add_argument(
        "--top", type=int, default=10, metavar="N", help="top subscribers in the summary (default: 10)"
    )
    route.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    route.add_argument("--ui", action="store_true", help="turn the Spark web UI on")
    route.add_argument("--quiet", action="store_true", help="no progress line")
    stream = route.add_argument_group("streaming")
    stream.add_argument(
        "--stream",
        action="store_true",
        help="Structured Streaming over the directory --messages: restartable, each micro-batch committed "
        "to the output once (read it with Spark; docs/pipeline.md)",
    )
    stream.add_argument("--checkpoint", metavar="DIR", help="checkpoint directory (required with --stream)")
    stream.add_argument("--once", action="store_true", help="process the files present, then stop")
    stream.add_argument(
        "--trigger-seconds",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds between micro-batches (default: 2)",
    )
    stream.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        metavar="N",
        help="at most N new files per micro-batch",
    )
    stream.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="stop the stream after S seconds (default: never)",
    )
    route.set_defaults(run=_runner("run_route"))


def _runner(name: str) -> Any:
    """A runner that checks the extra is installed, then loads the real one from
    :mod:`topicmatch.spark.commands`."""

    def run(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
        require_extra("spark")
        commands = importlib.import_module("topicmatch.spark.commands")
        return int(getattr(commands, name)(options, stdout, stderr))

    return run
