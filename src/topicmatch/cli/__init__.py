"""The ``topicmatch`` command line: thin wrappers that parse arguments and call the library.

``main(argv)`` returns the exit code (0 success, 1 some topics were invalid, 2 usage or input
errors), so it is testable in-process. Errors print one line to stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

from .. import ALGORITHMS, BUILD, DIALECTS, Matcher, TopicMatchError, __version__
from ..support.commandline import UsageError, require_extra
from ..support.pair_files import (
    FORMATS_HELP,
    LISTED,
    dialect_warning,
    invalid_patterns,
    pair_format,
    read_pair_file,
    read_pairs,
)
from . import _bench, _pipeline
from ._demo import run_demo

__all__ = ["main"]


#: The algorithms ``match`` offers: all but inverted_bitmap, which needs every topic before its
#: first lookup (its topic space), where ``match`` looks topics up one by one as they come.
MATCH_ALGORITHMS = tuple(a for a in ALGORITHMS if a != "inverted_bitmap")


def _algorithm(name: str) -> str:
    """``--algorithm``'s value; inverted_bitmap refused saying why (argparse then checks the
    choices)."""
    if name == "inverted_bitmap":
        raise argparse.ArgumentTypeError(
            "inverted_bitmap needs every topic before the first lookup, and match looks them up as "
            "they come: use another algorithm (the library's Matcher takes inverted_bitmap with topics=)"
        )
    return name


def _add_matcher_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dialect", choices=DIALECTS, default="amqp", help="broker rules to follow (default: amqp)"
    )
    parser.add_argument(
        "--algorithm",
        type=_algorithm,
        choices=MATCH_ALGORITHMS,
        default="default",
        help="matching algorithm (default: default); not inverted_bitmap, which needs every topic "
        "before the first lookup, where match looks topics up as they come",
    )
    parser.add_argument(
        "--pedantic",
        action="store_true",
        help="nats only: reject subjects the server rejects in pedantic mode",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topicmatch",
        description="Fast, correct topic matching with AMQP, MQTT and NATS wildcards.",
    )
    core = "compiled core (mypyc)" if BUILD == "compiled" else "pure-Python core"
    parser.add_argument("--version", action="version", version=f"topicmatch {__version__} ({core})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    match = commands.add_parser(
        "match",
        help="print the subscribers of topics",
        description=(
            "Load subscriptions from a file and print the subscribers of each topic, given as "
            "arguments or, without arguments, one per line on standard input. The file is read as "
            "route reads it, its format from its name: "
            + FORMATS_HELP
            + ". Output: 'topic<TAB>subscribers' with the subscribers sorted and separated by "
            "spaces, a backslash, tab, newline or carriage return in a topic or a subscriber written "
            "as \\\\, \\t, \\n or \\r (so that no topic can forge a line); or one JSON object per "
            "line with --json."
        ),
    )
    match.add_argument(
        "subscriptions",
        metavar="SUBSCRIPTIONS",
        help="subscription file (format from its name, above; '-': TSV on stdin)",
    )
    match.add_argument("topics", metavar="TOPIC", nargs="*", help="topics to look up (default: read stdin)")
    _add_matcher_options(match)
    match.add_argument(
        "--json", action="store_true", help='print JSON lines: {"topic": ..., "subscribers": [...]}'
    )
    match.set_defaults(run=_run_match)

    demo = commands.add_parser(
        "demo",
        help="match generated data with every algorithm: check they agree and show their speed",
        description=(
            "Generate the study's throughput workload (1,000 three-word subscriptions, messages over "
            "them), check that every algorithm returns the same subscribers, and print each one's "
            "rate. Each algorithm runs for at most --seconds."
        ),
    )
    demo.add_argument(
        "--messages", type=int, default=100_000, help="messages per algorithm (default: 100000)"
    )
    demo.add_argument("--seconds", type=float, default=3.0, help="time bound per algorithm (default: 3)")
    demo.add_argument("--seed", type=int, default=7, help="random seed (default: 7)")
    demo.set_defaults(run=_run_demo)
    # Commands of the extras: declared here, their dependencies imported when they run.
    _pipeline.add_commands(commands)
    _bench.add_commands(commands)
    return parser


def _read_subscriptions(
    source: str, stdin: TextIO, options: argparse.Namespace, matcher: Matcher
) -> list[str]:
    """Subscribe every pair of the file ``source`` (``-``: TSV on ``stdin``), read as ``route``
    reads it (:func:`~topicmatch.support.pair_files.pair_format`); return the patterns."""
    if source == "-":
        return _subscribe(read_pairs(stdin, "<stdin>", UsageError), "<stdin>", matcher)
    fmt = pair_format(source, UsageError)
    if fmt != "parquet":
        return _subscribe(read_pair_file(source, UsageError, fmt), source, matcher)
    # Parquet needs pyarrow: the spark extra's reader (Subscriptions.read, route's), without Spark.
    require_extra("spark")
    spark = importlib.import_module("topicmatch.spark")
    try:
        table = spark.Subscriptions.read(source, dialect=options.dialect, pedantic=options.pedantic)
    except spark.SubscriptionsError as error:
        raise UsageError(str(error)) from None
    patterns = []
    for pattern, subscriber in table.pairs():
        matcher.subscribe(pattern, subscriber)
        patterns.append(pattern)
    return patterns


def _subscribe(rows: Iterable[tuple[int, str, str | int]], source: str, matcher: Matcher) -> list[str]:
    """Subscribe every (line, pattern, subscriber) of ``source``; return the patterns. A file with
    invalid patterns is one :class:`UsageError` listing them
    (:func:`~topicmatch.support.pair_files.invalid_patterns`)."""
    patterns: list[str] = []
    invalid: list[str] = []
    count = 0
    for number, pattern, subscriber in rows:
        try:
            matcher.subscribe(pattern, subscriber)
        except TopicMatchError as error:
            count += 1
            if len(invalid) < LISTED:
                invalid.append(f"{source}:{number}: {error}")
            continue
        patterns.append(pattern)
    if count:
        raise UsageError(invalid_patterns(invalid, count))
    return patterns


def _topics_from(args: Sequence[str], stdin: TextIO) -> Iterator[str]:
    if args:
        yield from args
    else:
        for line in stdin:
            yield line.rstrip("\r\n")


def _run_match(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    try:
        matcher = Matcher(options.algorithm, options.dialect, pedantic=options.pedantic)
    except TopicMatchError as error:
        raise UsageError(str(error)) from None
    source = options.subscriptions
    if source == "-" and not options.topics:
        raise UsageError("subscriptions from stdin need the topics as arguments")
    patterns = _read_subscriptions(source, stdin, options, matcher)
    if not patterns:
        print(f"topicmatch: warning: {source} holds no subscription: every topic matches nobody", file=stderr)
    warning = dialect_warning(patterns, options.dialect)
    if warning:
        print(f"topicmatch: warning: {warning}", file=stderr)
    status = 0
    for topic in _topics_from(options.topics, stdin):
        try:
            subscribers = sorted(str(s) for s in matcher.lookup(topic))
        except TopicMatchError as error:
            print(f"topicmatch: {error}", file=stderr)
            status = 1
            continue
        if options.json:
            print(json.dumps({"topic": topic, "subscribers": subscribers}, ensure_ascii=False), file=stdout)
        else:
            print(f"{_escaped(topic)}\t{' '.join(map(_escaped, subscribers))}", file=stdout)
    return status


_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _escaped(text: str) -> str:
    """``text`` as one TSV field: a backslash, tab, newline or carriage return escaped."""
    return text.translate(_ESCAPES)


def _run_demo(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    if options.messages < 1 or options.seconds <= 0:
        raise UsageError("--messages must be >= 1 and --seconds > 0")
    return run_demo(options.messages, options.seconds, options.seed, stdout, stderr)


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the command line; return the exit code."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr
    parser = _build_parser()
    # Options anywhere on the line: `match subs.tsv --json a.b` leaves `a.b` over, a topic.
    options, extra = parser.parse_known_args(argv)
    if extra:
        if options.command != "match" or any(arg.startswith("-") and arg != "-" for arg in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        options.topics = [*options.topics, *extra]
    try:
        return int(options.run(options, stdin, stdout, stderr))
    except UsageError as error:
        print(f"topicmatch: {error}", file=stderr)
        return 2
    except KeyboardInterrupt:
        print("topicmatch: interrupted", file=stderr)
        return 130
    except BrokenPipeError:
        return 0
