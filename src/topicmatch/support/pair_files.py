"""Subscription files as text, TSV or CSV, read by one rule (``topicmatch match`` and ``route``),
and the two checks both commands make of the patterns they read.

The rule, for both formats:

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
from collections.abc import Iterable, Iterator, Sequence

from .commandline import counted

__all__ = ["COLUMN_NAMES", "HEADERS", "LISTED", "dialect_warning", "invalid_patterns", "read_pairs"]

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
        if not subscriber:
            raise error(f"{where}: the subscriber is empty")
        for what, value in (("pattern", pattern), ("subscriber", subscriber)):
            if value != value.strip():
                raise error(f"{where}: the {what} {value!r} starts or ends with whitespace")
        yield reader.line_num, pattern, subscriber


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
      (``+`` in AMQP; ``>`` in AMQP and MQTT; ``*`` in MQTT; ``#`` in NATS), the words split
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
    them = f"looks like a {others} pattern" if looks == 1 else f"look like {others} patterns"
    return (
        f"{looks:,} of {counted(len(sample), 'pattern')} {them}, not {dialect} ones ({'; '.join(signs)}): "
        f"pass {how} if they are"
    )


def _example(pattern: str) -> str:
    """``pattern`` quoted, cut short past :data:`_EXAMPLE` characters."""
    return repr(pattern if len(pattern) <= _EXAMPLE else pattern[: _EXAMPLE - 3] + "...")
