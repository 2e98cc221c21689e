"""Subscription files, read by one rule for ``topicmatch match`` and ``route``, and the two checks
both commands make of the patterns they read.

The format comes from the file's name (:func:`pair_format`): a directory or a name ending in
``.parquet`` is Parquet; ``.tsv`` or ``.txt`` TSV; ``.csv`` CSV; ``.json``, ``.jsonl`` or
``.ndjson`` JSON lines; a name without an ending (``subs``, a pipe such as ``/dev/stdin``) TSV;
another ending is refused. :func:`read_pair_file` reads the text formats; Parquet needs pyarrow,
which this package does not import: ``topicmatch.spark.Subscriptions.read`` reads it, for both
commands (``match`` only then imports the ``spark`` extra, which ``generate``, the writer of
such files, needs too).

The rule of the text formats:

* One (pattern, subscriber) pair per line: fields separated by a tab (TSV: a field cannot hold
  a tab, and nothing is quoted) or a comma (CSV, with CSV's double quotes around a field that
  holds a comma, a quote or a line break). Blank lines are skipped.
* A first line that has fields named ``pattern`` and ``subscriber`` is a header: it says which
  columns they are (other columns are allowed and ignored, and every line then has the header's
  number of fields). A CSV file must start with one (a CSV file's first line is a header by
  custom, and ``filter,client`` taken for a subscription would deliver to "client"); a TSV file
  may (without one a line has exactly two fields, the pattern first), but a first line naming
  one of the two columns and not the other is refused as a header that lost a name, and so is a
  first line whose every field is a usual column name (``filter<TAB>client``,
  ``Pattern<TAB>Subscriber``, ``topic<TAB>queue``: :data:`COLUMN_NAMES`): read as a pair, it
  would deliver the topic "filter" to a subscriber "client", and skipped as a header, its
  columns could be in either order. The error says what to do: name the columns
  ``pattern<TAB>subscriber``, after which such a line is read as a pair like any other.
* JSON lines: one object per line with the keys ``pattern`` (a string) and ``subscriber`` (a
  string or an integer, the same kind on every line); other keys are ignored, blank lines
  skipped. The file is read as UTF-8 and split at ``\\n`` only (a ``\\r`` is JSON white space).
* An empty subscriber, or a pattern or subscriber that starts or ends with whitespace, is an
  error: such a line would silently match nothing, or deliver to a name nobody uses. (An empty
  pattern is the dialect's to judge: AMQP's matches the empty routing key.) Every error names
  the file and the line.

The checks: :func:`invalid_patterns` writes the one error that lists a file's invalid patterns
(at most :data:`LISTED`, the rest counted); :func:`dialect_warning` notices patterns written for
another dialect than the one they are read with.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .commandline import counted

__all__ = [
    "COLUMN_NAMES",
    "FORMATS",
    "FORMATS_HELP",
    "HEADERS",
    "LISTED",
    "dialect_warning",
    "invalid_patterns",
    "pair_format",
    "read_json_pairs",
    "read_pair_file",
    "read_pairs",
]

#: The formats of a subscription file, by the name's ending (:func:`pair_format`).
FORMATS = {
    ".parquet": "parquet",
    ".tsv": "tsv",
    ".txt": "tsv",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
#: :func:`pair_format`'s rule, as the help of ``match`` and ``route`` says it.
FORMATS_HELP = (
    ".tsv or .txt, or no ending (one pattern<TAB>subscriber per line, blank lines skipped, an "
    "optional first line pattern<TAB>subscriber a header; a first line of other column names, such "
    "as 'filter<TAB>client' or 'Topic<TAB>Queue', is refused, as it would be read as a subscription: "
    "name the columns pattern<TAB>subscriber), .csv (with its header: pattern,subscriber), .json, "
    '.jsonl or .ndjson (JSON lines: {"pattern": ..., "subscriber": ...}), .parquet or a directory '
    "(columns pattern and subscriber; needs the spark extra); another ending is refused"
)


def pair_format(path: str | os.PathLike[str], error: type[Exception]) -> str:
    """The format of the subscription file at ``path``, from its name (module docstring); a
    missing file, or an ending not in :data:`FORMATS`, raises ``error``.

    >>> pair_format("/dev/stdin", ValueError)
    'tsv'
    >>> pair_format("/no/subs.xml", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: cannot read /no/subs.xml: no such file or directory
    """
    path = Path(path)
    if not path.exists():
        raise error(f"cannot read {path}: no such file or directory")
    if path.is_dir():
        return "parquet"
    suffix = path.suffix.lower()
    if not suffix:
        return "tsv"
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise error(
            f"cannot tell the format of {path}: name it with one of {known} (a directory is "
            "Parquet, a name without an ending TSV)"
        )
    return FORMATS[suffix]


def read_pair_file(
    path: str | os.PathLike[str], error: type[Exception], fmt: str | None = None
) -> list[tuple[int, str, str | int]]:
    """(line number, pattern, subscriber) of every pair of the text subscription file at
    ``path``, in format ``fmt`` (default :func:`pair_format`'s): TSV and CSV by
    :func:`read_pairs`, JSON lines by :func:`read_json_pairs`. A missing or unreadable file, one
    that is not UTF-8, a Parquet one (:func:`pair_format`) or a line that breaks the rule raises
    ``error``, naming the file. O(the file's size).
    """
    name = str(path)
    fmt = fmt or pair_format(path, error)
    if fmt == "parquet":
        raise error(f"{name} is Parquet: read it with topicmatch.spark.Subscriptions.read")
    try:
        # newline="": the readers split lines themselves (csv, and JSON at "\n" only)
        with open(path, encoding="utf-8", newline="") as handle:
            if fmt == "json":
                return list(read_json_pairs(handle, name, error))
            return list(read_pairs(handle, name, error, csv_format=fmt == "csv"))
    except OSError as failure:
        raise error(f"cannot read {name}: {failure.strerror or failure}") from None
    except UnicodeDecodeError:
        raise error(f"{name} is not UTF-8 text") from None


def read_json_pairs(
    lines: Iterable[str], source: str, error: type[Exception]
) -> Iterator[tuple[int, str, str | int]]:
    r"""(line number, pattern, subscriber) per JSON line; a line that breaks the rule raises
    ``error``. ``lines`` as a file opened with ``newline=""`` gives them: each ends at ``\n``.

    >>> lines = ['{"pattern": "a.*", "subscriber": 7, "note": 1}\n', "\n"]
    >>> list(read_json_pairs(lines, "s.jsonl", ValueError))
    [(1, 'a.*', 7)]
    >>> lines = ['{"pattern": "a", "subscriber": 1}\n', '{"pattern": "b", "subscriber": "x"}\n']
    >>> list(read_json_pairs(lines, "s.jsonl", ValueError))
    Traceback (most recent call last):
    ...
    ValueError: s.jsonl:2: the subscriber 'x' is a string where line 1's is an integer: all must be one kind
    """
    first: tuple[int, type] | None = None  # the first pair's line, and its subscriber's kind
    for number, text in enumerate(_json_lines(lines), 1):
        if not text.strip():
            continue
        where = f"{source}:{number}"
        try:
            row = json.loads(text)
        except json.JSONDecodeError as failure:
            raise error(f"{where}: not JSON: {failure.msg}") from None
        if not isinstance(row, dict) or "pattern" not in row or "subscriber" not in row:
            raise error(f"{where}: expected an object with 'pattern' and 'subscriber'")
        pattern, subscriber = row["pattern"], row["subscriber"]
        if not isinstance(pattern, str):
            raise error(f"{where}: the pattern must be a string, not {json.dumps(pattern)}")
        if isinstance(subscriber, bool) or not isinstance(subscriber, str | int):
            raise error(
                f"{where}: the subscriber must be a string or an integer, not {json.dumps(subscriber)}"
            )
        kind = type(subscriber)
        if first is None:
            first = (number, kind)
        elif kind is not first[1]:
            kinds = {str: "a string", int: "an integer"}
            raise error(
                f"{where}: the subscriber {subscriber!r} is {kinds[kind]} where line {first[0]}'s is "
                f"{kinds[first[1]]}: all must be one kind"
            )
        if isinstance(subscriber, str):
            _check_fields(where, pattern, subscriber, error)
        yield number, pattern, subscriber


def _json_lines(lines: Iterable[str]) -> Iterator[str]:
    r"""``lines`` split at ``\n`` only: a file opened with ``newline=""`` also ends a line at a
    lone ``\r``, which JSON lines do not (``\r`` is white space in JSON)."""
    pending = ""
    for chunk in lines:
        pending += chunk
        if pending.endswith("\n"):
            yield pending
            pending = ""
    if pending:
        yield pending


#: The headers a subscription file may start with, one per text format.
HEADERS = {"csv": "pattern,subscriber", "tsv": "pattern<TAB>subscriber"}

#: Column names a header of a subscription table usually has, compared with a first line's
#: fields folded to lower case without ``_``, ``-`` and spaces: a TSV file's first line made of
#: them only is refused as a header (module docstring).
COLUMN_NAMES = frozenset(
    {
        # the pattern's column
        *("pattern", "patterns", "filter", "filters", "topic", "topics", "topicfilter", "wildcard"),
        *("subject", "subjects", "key", "bindingkey", "routingkey", "binding", "bindings"),
        *("subscription", "subscriptions"),
        # the subscriber's column
        *("subscriber", "subscribers", "client", "clients", "clientid", "consumer", "consumers"),
        *("queue", "queues", "queuename", "destination", "name", "id", "user", "username"),
        *("owner", "recipient", "target", "listener"),
    }
)


def read_pairs(
    lines: Iterable[str], source: str, error: type[Exception], *, csv_format: bool = False
) -> Iterator[tuple[int, str, str]]:
    """(line number, pattern, subscriber) per pair; a line that breaks the rule raises ``error``.

    >>> list(read_pairs(["pattern\\tsubscriber\\n", "a.*\\tx\\n", "\\n", "#\\ty"], "subs.tsv", ValueError))
    [(2, 'a.*', 'x'), (4, '#', 'y')]
    >>> list(read_pairs(["subscriber,pattern,note", 'x,"a,b",hi'], "subs.csv", ValueError, csv_format=True))
    [(2, 'a,b', 'x')]
    >>> list(read_pairs(["a.b\\tx\\ty"], "subs.tsv", ValueError))
    Traceback (most recent call last):
    ...
    ValueError: subs.tsv:1: expected 2 fields (pattern<TAB>subscriber), found 3
    >>> list(read_pairs(["filter,client", "a.*,x"], "subs.csv", ValueError, csv_format=True))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: subs.csv:1: expected a header naming the columns pattern and subscriber (...), not [...]
    >>> list(read_pairs(["filter\\tclient", "a.*\\tx"], "subs.tsv", ValueError))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: subs.tsv:1: ['filter', 'client'] looks like a header, not a subscription: ...
    """
    if csv_format:
        reader = csv.reader(lines)
        layout = HEADERS["csv"]
    else:
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        layout = HEADERS["tsv"]
    width, p, s = 2, 0, 1
    first = True
    for row in reader:
        if not any(field.strip() for field in row):
            continue
        where = f"{source}:{reader.line_num}"
        if first:
            first = False
            named = {"pattern", "subscriber"} & set(row)
            if len(named) == 2:
                width, p, s = len(row), row.index("pattern"), row.index("subscriber")
                continue
            if named or csv_format:
                raise error(
                    f"{where}: expected a header naming the columns pattern and subscriber "
                    f"({HEADERS['csv']} for CSV, {HEADERS['tsv']} for TSV; other columns are "
                    f"ignored), not {row!r}"
                )
            if all(_folded(field) in COLUMN_NAMES for field in row):
                raise error(
                    f"{where}: {row!r} looks like a header, not a subscription: name the columns "
                    f"with the first line {layout} (other columns are ignored); to keep this line "
                    "as a subscription, put that header before it"
                )
        if len(row) != width:
            expected = f"{width} fields, as the header" if width != 2 else f"2 fields ({layout})"
            raise error(f"{where}: expected {expected}, found {len(row)}")
        pattern, subscriber = row[p], row[s]
        _check_fields(where, pattern, subscriber, error)
        yield reader.line_num, pattern, subscriber


def _check_fields(where: str, pattern: str, subscriber: str, error: type[Exception]) -> None:
    """Raise ``error`` for an empty subscriber, or a pattern or subscriber with whitespace around."""
    if not subscriber:
        raise error(f"{where}: the subscriber is empty")
    for what, value in (("pattern", pattern), ("subscriber", subscriber)):
        if value != value.strip():
            raise error(f"{where}: the {what} {value!r} starts or ends with whitespace")


def _folded(field: str) -> str:
    """``field`` as :data:`COLUMN_NAMES` holds names: lower case, without ``_``, ``-`` or spaces."""
    return field.casefold().replace("_", "").replace("-", "").replace(" ", "")


#: How many invalid patterns one error lists; the others are counted.
LISTED = 20


def invalid_patterns(listed: Sequence[str], total: int) -> str:
    """The one error of ``total`` invalid patterns, ``listed`` the first of them (each
    ``"file:line: reason"``, at most :data:`LISTED`): the first on the first line, then the
    others one per line, then how many more.

    >>> print(invalid_patterns(["s.tsv:2: bad 'a'", "s.tsv:5: bad 'b'"], 30))
    s.tsv:2: bad 'a'; 30 invalid patterns in all:
      s.tsv:5: bad 'b'
      ... and 28 more
    """
    if total == 1:
        return listed[0]
    lines = [f"{listed[0]}; {total:,} invalid patterns in all:", *(f"  {entry}" for entry in listed[1:])]
    if total > len(listed):
        lines.append(f"  ... and {total - len(listed):,} more")
    return "\n".join(lines)


#: Each dialect's separator and wildcards, as :func:`dialect_warning` compares them.
_LOOKS = {"amqp": (".", ("*", "#")), "mqtt": ("/", ("+", "#")), "nats": (".", ("*", ">"))}
#: How many patterns :func:`dialect_warning` looks at (the first ones): its cost is bounded.
SAMPLE = 10_000
#: The longest example pattern a warning quotes whole.
_EXAMPLE = 60


def dialect_warning(patterns: Iterable[str], dialect: str) -> str | None:
    """A warning when patterns look written for another dialect than ``dialect``. Two signs, on
    the first :data:`SAMPLE` patterns:

    * any pattern with a word that is a wildcard of the other dialect and a plain word here
      (``+`` in AMQP and NATS; ``>`` in AMQP and MQTT; ``*`` in MQTT; ``#`` in NATS), the words split
      by either dialect's separator (``sensors/+/temp`` and ``sensors.+.temp`` in AMQP): one
      such pattern is enough, as one ``orders.>`` read as AMQP silently matches only the topic
      ``orders.>``;
    * more than half of them with the other dialect's separator and not this one's (a ``/`` in
      an AMQP routing key is a plain character, so only a majority tells).

    Such patterns are valid, and match other topics than their author meant. The warning
    counts them and quotes one; None when neither sign is there. O(their total length).

    >>> print(dialect_warning(["orders.>", "stock.*", "a.b", "fx.#", "news.>"], "amqp"))
    ... # doctest: +NORMALIZE_WHITESPACE
    2 of 5 patterns look like nats patterns, not amqp ones (2 with the word '>', a wildcard
    in nats and a plain word in amqp, e.g. 'orders.>'): pass --dialect nats if they are
    >>> print(dialect_warning(["sensors/+/temp"], "nats"))
    ... # doctest: +NORMALIZE_WHITESPACE
    1 of 1 pattern looks like an mqtt pattern, not a nats one (1 with the word '+', a wildcard in
    mqtt and a plain word in nats, e.g. 'sensors/+/temp'): pass --dialect mqtt if it is
    >>> dialect_warning(["stock.*.ibm", "stock.#", "a/b"], "amqp") is None
    True
    """
    sample = list(itertools.islice(patterns, SAMPLE))
    separator, wildcards = _LOOKS[dialect]
    best: tuple[int, int] = (0, 0)
    found: list[tuple[str, list[str], list[str], set[str]]] = []
    for other, (other_separator, other_wildcards) in _LOOKS.items():
        if other == dialect:
            continue
        foreign = set(other_wildcards) - set(wildcards)
        wild: list[str] = []
        parted: list[str] = []
        words: set[str] = set()
        for pattern in sample:
            seen = foreign.intersection(pattern.split(other_separator))
            if other_separator != separator:
                seen |= foreign.intersection(pattern.split(separator))
            if seen:
                wild.append(pattern)
                words |= seen
            elif other_separator != separator and other_separator in pattern and separator not in pattern:
                parted.append(pattern)
        looks = len(wild) + len(parted)
        if not wild and 2 * looks <= len(sample):
            continue
        score = (len(wild), looks)
        if score > best:
            best, found = score, []
        if score == best:
            found.append((other, wild, parted, words))
    if not found:
        return None
    other, wild, parted, words = found[0]
    others = " or ".join(name for name, *_ in found)
    looks = len(wild) + len(parted)
    signs = []
    if wild:
        shown = " or ".join(repr(word) for word in sorted(words))
        signs.append(
            f"{len(wild):,} with the word {shown}, a wildcard in {others} and a plain word in {dialect}, "
            f"e.g. {_example(wild[0])}"
        )
    if parted:
        other_separator = _LOOKS[other][0]
        signs.append(
            f"{len(parted):,} with separator {other_separator!r} and no {separator!r}, "
            f"e.g. {_example(parted[0])}"
        )
    how = " or ".join(f"--dialect {name}" for name, *_ in found)
    if looks == 1:
        them, ours, are = f"looks like {_a(others)} pattern", f"{_a(dialect)} one", "it is"
    else:
        them, ours, are = f"look like {others} patterns", f"{dialect} ones", "they are"
    return (
        f"{looks:,} of {counted(len(sample), 'pattern')} {them}, not {ours} ({'; '.join(signs)}): "
        f"pass {how} if {are}"
    )


def _a(name: str) -> str:
    """``name`` with its article, as the name is said: an amqp, an mqtt, a nats."""
    return f"{'an' if name[0] in 'am' else 'a'} {name}"


def _example(pattern: str) -> str:
    """``pattern`` quoted, cut short past :data:`_EXAMPLE` characters."""
    return repr(pattern if len(pattern) <= _EXAMPLE else pattern[: _EXAMPLE - 3] + "...")
